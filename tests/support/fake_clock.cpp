#include "fake_clock.h"

namespace sw::test {

util::Clock::TimerId FakeClock::schedule(qint64 delayMs, std::function<void()> callback) {
    const TimerId id = ++m_next;
    m_timers.insert(id, {m_now + std::max<qint64>(0, delayMs), std::move(callback)});
    return id;
}

void FakeClock::cancel(TimerId id) {
    m_timers.remove(id);
}

void FakeClock::advance(qint64 ms) {
    const qint64 target = m_now + ms;
    for (;;) {
        auto next = m_timers.end();
        for (auto it = m_timers.begin(); it != m_timers.end(); ++it)
            if (it->due <= target && (next == m_timers.end() || it->due < next->due))
                next = it;
        if (next == m_timers.end())
            break;
        m_now = next->due;
        auto cb = std::move(next->callback);
        m_timers.erase(next);
        cb();
    }
    m_now = target;
}

} // namespace sw::test
