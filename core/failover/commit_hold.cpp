#include "core/failover/commit_hold.h"

namespace sw::failover {

namespace {
bool isEmptyDelta(const model::StreamEvent &e) {
    switch (e.type) {
    case model::EventType::TextDelta:
    case model::EventType::ThinkingDelta:
    case model::EventType::ToolCallDelta:
        return e.delta.isEmpty();
    default:
        return false;
    }
}
} // namespace

CommitHold::Step CommitHold::feed(const model::StreamEvent &event, qint64 bytes) {
    Step step;
    m_lastHeld = false;
    switch (m_state) {
    case State::Committed:
        step.passThrough = true;
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
    if (isEmptyDelta(event))
        return step; // carries nothing a client could miss: never kept for replay
    m_held.append(event);
    m_heldBytes += bytes;
    m_lastHeld = true;
    if (event.isMeaningful() || event.type == model::EventType::Done) {
        m_state = State::Committed;
        step.release = std::move(m_held);
        m_held.clear();
        m_heldBytes = 0;
        step.justCommitted = true;
    }
    return step;
}

} // namespace sw::failover
