#pragma once
#include "core/util/clock.h"

#include <QMap>

namespace sw::test {

// A clock that moves only when the test says so; due callbacks fire in time order.
class FakeClock final : public util::Clock {
public:
    qint64 nowMs() const override { return m_now; }
    // Wall time moves with nowMs(); setEpochMs() puts "now" at a chosen calendar moment.
    qint64 epochMs() const override { return m_epochBase + m_now; }
    void setEpochMs(qint64 epochMs) { m_epochBase = epochMs - m_now; }
    TimerId schedule(qint64 delayMs, std::function<void()> callback) override;
    void cancel(TimerId id) override;
    void advance(qint64 ms);
    int pendingTimers() const { return int(m_timers.size()); }

private:
    struct Pending {
        qint64 due;
        std::function<void()> callback;
    };
    qint64 m_now = 1'000'000;
    qint64 m_epochBase = 1'767'225'600'000 - 1'000'000; // 2026-01-01T00:00:00Z at the start
    TimerId m_next = 0;
    QMap<TimerId, Pending> m_timers;
};

} // namespace sw::test
