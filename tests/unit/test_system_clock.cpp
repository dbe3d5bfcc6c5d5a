// core/util/system_clock: the real clock behind every engine timer (deadlines, keepalives,
// marks). One per thread; it must be gone, with its QTimer, before QThread::wait() returns.
#include "core/util/clock.h"

#include <QThread>
#include <QtTest>

#include <atomic>
#include <memory>

#include <time.h>

class TestSystemClock : public QObject {
    Q_OBJECT
private slots:
    void firesOnItsThreadAndCancelStopsIt();
    void readsTheClockThatCountsSleep();
    void aThreadsClockIsGoneBeforeWaitReturns();
};

void TestSystemClock::firesOnItsThreadAndCancelStopsIt() {
    sw::util::Clock &clock = sw::util::systemClock();
    QList<int> fired;
    const auto cancelled = clock.schedule(0, [&fired] { fired << 1; });
    clock.schedule(0, [&fired] { fired << 2; });
    clock.schedule(0, [&fired] { fired << 3; });
    clock.cancel(cancelled);
    QVERIFY(QTest::qWaitFor([&fired] { return fired.size() == 2; }, 5000));
    QCOMPARE(fired, (QList<int>{2, 3}));
    QCOMPARE(&sw::util::systemClock(), &clock); // the same clock for the same thread
}

void TestSystemClock::readsTheClockThatCountsSleep() {
    // Parks and marks end on this clock: it is CLOCK_BOOTTIME, which runs on while the machine is
    // suspended, not the monotonic clock, which stands still (probe AA1 F1). On a host that never
    // slept the two read alike, so this checks only the source (against the old per-thread elapsed
    // time); tests/app/test_machine_sleep shows the binary after a sleep.
    const auto bootMs = [] {
        timespec ts{};
        ::clock_gettime(CLOCK_BOOTTIME, &ts);
        return qint64(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
    };
    const qint64 before = bootMs();
    const qint64 now = sw::util::systemClock().nowMs();
    const qint64 after = bootMs();
    QVERIFY2(before <= now && now <= after,
             qPrintable(QStringLiteral("%1 <= %2 <= %3").arg(before).arg(now).arg(after)));
}

void TestSystemClock::aThreadsClockIsGoneBeforeWaitReturns() {
    // A callback still pending when the thread ends is destroyed with the clock. Its captured
    // guard marks the moment, slowly: a clock destroyed after wait() returned (as a C++
    // thread_local is, while main() may already tear Qt's globals down) would not have marked it
    // when wait() returns.
    struct Guard {
        explicit Guard(std::atomic<bool> *g) : gone(g) {}
        Q_DISABLE_COPY_MOVE(Guard)
        std::atomic<bool> *gone;
        ~Guard() {
            QThread::msleep(100);
            gone->store(true);
        }
    };
    std::atomic<bool> gone{false};
    QThread *thread = QThread::create([&gone] {
        sw::util::Clock &clock = sw::util::systemClock();
        auto guard = std::make_shared<Guard>(&gone);
        clock.schedule(3600 * 1000, [guard] {}); // an hour away: pending when the thread ends
    });
    thread->start();
    QVERIFY(thread->wait(10000));
    QVERIFY(gone.load());
    delete thread;
}

QTEST_GUILESS_MAIN(TestSystemClock)
#include "test_system_clock.moc"
