#include "core/util/clock.h"

#include <QDateTime>
#include <QHash>
#include <QThreadStorage>
#include <QTimer>

#include <algorithm>
#include <limits>
#include <map>

#include <time.h>

namespace sw::util {

qint64 Clock::epochMs() const {
    return QDateTime::currentMSecsSinceEpoch();
}

namespace {

// One QTimer per thread, armed for the earliest due callback. Every request
// schedules a deadline and often a budget and a keepalive, and most are
// cancelled long before they fire: a map insert and erase is far cheaper than
// creating and registering a QTimer each time.
class SystemClock final : public Clock {
public:
    SystemClock() {
        m_timer.setSingleShot(true);
        m_timer.setTimerType(Qt::PreciseTimer);
        QObject::connect(&m_timer, &QTimer::timeout, &m_timer, [this]() { fireDue(); });
    }

    // CLOCK_BOOTTIME, not CLOCK_MONOTONIC (QElapsedTimer's): both are steady and untouched by wall-clock
    // changes, but the monotonic clock stands still while the machine is suspended. A laptop that
    // slept through a parked key's stated reset time, or a mark's five minutes, must find them over
    // on waking, not counted again in awake time (probe AA1 F1). One clock for every thread, too.
    qint64 nowMs() const override {
        timespec ts{};
        ::clock_gettime(CLOCK_BOOTTIME, &ts);
        return qint64(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
    }

    TimerId schedule(qint64 delayMs, std::function<void()> callback) override {
        const TimerId id = ++m_next;
        const qint64 due = nowMs() + std::max<qint64>(0, delayMs);
        const auto it = m_byDue.emplace(due, id);
        m_pending.insert(id, {it, std::move(callback)});
        if (it == m_byDue.begin())
            arm();
        return id;
    }

    void cancel(TimerId id) override {
        const auto it = m_pending.find(id);
        if (it == m_pending.end())
            return;
        m_byDue.erase(it->where);
        m_pending.erase(it);
        // The QTimer may now fire early; fireDue() then re-arms for the next one.
    }

private:
    struct Pending {
        std::multimap<qint64, TimerId>::iterator where;
        std::function<void()> callback;
    };

    void arm() {
        if (m_byDue.empty()) {
            m_timer.stop();
            return;
        }
        // Qt counts the wait on the monotonic clock: armed before a sleep, the timer fires that much
        // awake time later, and fireDue() then fires everything the sleep made due.
        const qint64 wait = std::max<qint64>(0, m_byDue.begin()->first - nowMs());
        m_timer.start(int(std::min<qint64>(wait, std::numeric_limits<int>::max())));
    }

    void fireDue() {
        const qint64 now = nowMs();
        while (!m_byDue.empty() && m_byDue.begin()->first <= now) {
            const TimerId id = m_byDue.begin()->second;
            m_byDue.erase(m_byDue.begin());
            auto callback = std::move(m_pending[id].callback);
            m_pending.remove(id);
            callback(); // may schedule or cancel others
        }
        arm();
    }

    QTimer m_timer;
    std::multimap<qint64, TimerId> m_byDue;
    QHash<TimerId, Pending> m_pending;
    TimerId m_next = 0;
};

} // namespace

Clock &systemClock() {
    // Timers belong to the thread that schedules them, so each thread gets its own. In a
    // QThreadStorage, not a C++ thread_local: QThread destroys its storage on the thread while
    // the thread's event dispatcher still exists and before wait() returns, where a thread_local
    // (and its QTimer, whose destructor gives its id back to Qt's global free list) would be
    // destroyed after wait() returned, while main() may already be tearing Qt's globals down.
    static QThreadStorage<SystemClock *> clocks;
    if (!clocks.hasLocalData())
        clocks.setLocalData(new SystemClock);
    return *clocks.localData();
}

} // namespace sw::util
