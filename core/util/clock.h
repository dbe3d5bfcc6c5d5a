#pragma once
// Time seam: marks, budgets, deadlines and keepalives read time and schedule
// through a Clock so unit tests drive them with a fake one, never with sleeps.

#include <QtGlobal>
#include <functional>

namespace sw::util {

class Clock {
public:
    using TimerId = quint64;
    virtual ~Clock() = default;
    // Steady milliseconds that count the time the machine slept: deadlines set before a suspend
    // are over after it when the sleep outlasted them.
    virtual qint64 nowMs() const = 0;
    // Wall time, ms since the epoch: calendar periods (budgets) and the ledger's daily prune read it here.
    virtual qint64 epochMs() const;
    // Calls `callback` once after `delayMs` on the calling thread's event loop.
    virtual TimerId schedule(qint64 delayMs, std::function<void()> callback) = 0;
    virtual void cancel(TimerId id) = 0; // no-op for a fired or unknown id
};

// Real time, QTimer-based. One per thread that schedules.
Clock &systemClock();

} // namespace sw::util
