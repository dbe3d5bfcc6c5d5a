#include "failover/commit_hold.h"

namespace sw::failover {

CommitHold::Step CommitHold::feed(const model::StreamEvent &event)
{
    Step step;
    switch (m_state) {
    case State::Committed:
        step.release.append(event);
        return step;
    case State::Failed:
        return step; // nothing follows a failure
    case State::Holding:
        break;
    }
    if (event.type == model::EventType::Error) {
        m_state = State::Failed;
        m_failure = event;
        m_held.clear();
        step.justFailed = true;
        return step;
    }
    m_held.append(event);
    if (event.isMeaningful() || event.type == model::EventType::Done) {
        m_state = State::Committed;
        step.release = std::move(m_held);
        m_held.clear();
        step.justCommitted = true;
    }
    return step;
}

} // namespace sw::failover
