#pragma once
// The attempt budget (docs/failover.md). Armed just before the upstream call when a
// follower exists; lifted by the first meaningful event; disarmed by done or by the
// attempt settling. A try's error does not disarm it: the attempt's retries run inside
// it. Only a timer that fired before all of those counts.

#include "core/model/chat.h"
#include "core/util/clock.h"

#include <functional>

namespace sw::failover {

class AttemptBudget {
public:
    // endsAtMs in clock time; nullopt = no budget (never fires). onExpire aborts the attempt.
    AttemptBudget(util::Clock &clock, std::optional<qint64> endsAtMs, std::function<void()> onExpire);
    ~AttemptBudget();
    Q_DISABLE_COPY_MOVE(AttemptBudget)

    void observe(const model::StreamEvent &event);
    void settle();
    bool timedOut() const { return m_timedOut; }
    bool armed() const { return m_timer != 0; }
    // When it fires, while armed; nullopt once lifted, settled or fired (or never armed).
    std::optional<qint64> endsAtMs() const { return armed() ? std::optional(m_endsAtMs) : std::nullopt; }

private:
    void disarm();
    util::Clock &m_clock;
    std::function<void()> m_onExpire;
    util::Clock::TimerId m_timer = 0;
    qint64 m_endsAtMs = 0;
    bool m_timedOut = false;
};

} // namespace sw::failover
