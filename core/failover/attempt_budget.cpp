#include "core/failover/attempt_budget.h"

#include <algorithm>

namespace sw::failover {

AttemptBudget::AttemptBudget(util::Clock &clock, std::optional<qint64> endsAtMs, std::function<void()> onExpire)
    : m_clock(clock), m_onExpire(std::move(onExpire)) {
    if (!endsAtMs)
        return;
    m_endsAtMs = *endsAtMs;
    m_timer = m_clock.schedule(std::max<qint64>(0, *endsAtMs - m_clock.nowMs()), [this]() {
        m_timer = 0;
        m_timedOut = true;
        if (m_onExpire)
            m_onExpire();
    });
}

AttemptBudget::~AttemptBudget() {
    disarm();
}

void AttemptBudget::disarm() {
    if (m_timer != 0) {
        m_clock.cancel(m_timer);
        m_timer = 0;
    }
}

void AttemptBudget::observe(const model::StreamEvent &event) {
    // A try's error is not the attempt's: a retry may follow, and the budget covers it (probe N3
    // H1). The attempt's own end settles it (AttemptLoop::endAttempt).
    if (event.isMeaningful() || event.type == model::EventType::Done)
        disarm();
}

void AttemptBudget::settle() {
    disarm();
}

} // namespace sw::failover
