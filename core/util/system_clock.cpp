#include "util/clock.h"

#include <QElapsedTimer>
#include <QHash>
#include <QTimer>

#include <algorithm>
#include <limits>

namespace sw::util {
namespace {

class SystemClock final : public Clock {
public:
    SystemClock() { m_elapsed.start(); }
    ~SystemClock() override { qDeleteAll(m_timers); }

    qint64 nowMs() const override { return m_elapsed.elapsed(); }

    TimerId schedule(qint64 delayMs, std::function<void()> callback) override
    {
        const TimerId id = ++m_next;
        auto *timer = new QTimer;
        timer->setSingleShot(true);
        timer->setTimerType(Qt::PreciseTimer);
        QObject::connect(timer, &QTimer::timeout, timer, [this, id, cb = std::move(callback)]() {
            if (QTimer *t = m_timers.take(id))
                t->deleteLater();
            cb();
        });
        m_timers.insert(id, timer);
        timer->start(int(std::clamp<qint64>(delayMs, 0, std::numeric_limits<int>::max())));
        return id;
    }

    void cancel(TimerId id) override
    {
        if (QTimer *t = m_timers.take(id)) {
            t->stop();
            t->deleteLater();
        }
    }

private:
    QElapsedTimer m_elapsed;
    QHash<TimerId, QTimer *> m_timers;
    TimerId m_next = 0;
};

} // namespace

Clock &systemClock()
{
    // Timers belong to the thread that schedules them, so each thread gets its own.
    thread_local SystemClock clock;
    return clock;
}

} // namespace sw::util
