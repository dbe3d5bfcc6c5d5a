#include "signal_wait.h"

#include <QAbstractEventDispatcher>
#include <QThread>
#include <QTimer>

namespace sw::test {

bool waitUntil(const std::function<bool()> &condition, int timeoutMs) {
    QDeadlineTimer deadline(timeoutMs);
    // QCoreApplication::processEvents(flags, ms) drops WaitForMoreEvents (Qt 6.4), so calling
    // it in a loop spins a core: under `ctest -j2` that is the core the process under test
    // needed. Block in the thread's dispatcher instead; a 10 ms tick bounds each wait, for
    // conditions that change without an event on this thread (another thread, a child process).
    QAbstractEventDispatcher *dispatcher = QThread::currentThread()->eventDispatcher();
    QTimer tick;
    tick.setTimerType(Qt::PreciseTimer);
    tick.start(10);
    while (!condition()) {
        if (deadline.hasExpired()) {
            // What arrived while the last wait ran out (a stalled machine runs it late).
            QCoreApplication::processEvents();
            return condition();
        }
        if (dispatcher)
            dispatcher->processEvents(QEventLoop::AllEvents | QEventLoop::WaitForMoreEvents);
        else
            QThread::msleep(1);
        // Then whatever follows at once, for up to 10 ms, before the condition is asked again
        // (a condition may be costly: one that re-parses all it has read grows quadratic if
        // it runs after every single socket read).
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
    }
    return true;
}

} // namespace sw::test
