#pragma once
// An event dispatcher for one thread on Linux's epoll, for the engine thread.
//
// Qt's own UNIX dispatcher builds a pollfd array of every registered socket and hands it to
// ppoll on every loop turn, then walks it: with c client connections and their upstream
// connections, each event costs O(c) in the kernel and in Qt. Here the kernel keeps the interest
// list and reports only the ready sockets. Measured on the engine (docs/performance.md, "Fifth
// round"): engine CPU per request at 64 connections about a sixth lower, two system calls fewer
// per request, the same at one connection.
//
// Same semantics as QEventDispatcherUNIX (Qt 6.4), which it replaces on the engine thread:
// - level-triggered: a socket with unread bytes is reported on every turn, as poll reports it;
//   read notifiers fire on readable, hang-up and error; write notifiers on writable, hang-up and
//   error; exception notifiers on priority data, hang-up and error;
// - notifiers made ready by one wait are activated in order, and one that is disabled or
//   deleted by an earlier activation in the same turn is not activated;
// - timers are Qt's own QTimerInfoList (the one QEventDispatcherUNIX uses), so Coarse, Precise and
//   VeryCoarse timers round and fire exactly as there; the wait takes a timespec (epoll_pwait2);
// - posted events are sent first on every turn, and the thread never blocks while one waits.
// Differences, all invisible to Qt's sockets and timers:
// - notifier changes reach the kernel once per turn, just before the wait (a notifier disabled and
//   enabled again while events are handled costs no system call); a socket left with no enabled
//   notifier is removed at once, before its descriptor can be closed and its number reused;
// - a descriptor epoll cannot watch (a regular file) is reported ready on every turn, as poll does;
// - an event posted by the dispatcher's own thread outside the wait does not write the wake-up
//   eventfd: the next turn sends it before it could block (one write and one read less per request).
//
// Private Qt API: QTimerInfoList and QThreadData (Debian's qt6-base-private-dev, as for the
// dispatcher it replaces).

#include <QAbstractEventDispatcher>
#include <QHash>
#include <QList>

#include <atomic>
#include <memory>
#include <vector>

class QSocketNotifier;

namespace sw::util {

class EpollDispatcher final : public QAbstractEventDispatcher {
    Q_OBJECT
public:
    explicit EpollDispatcher(QObject *parent = nullptr);
    ~EpollDispatcher() override;

    bool processEvents(QEventLoop::ProcessEventsFlags flags) override;

    void registerSocketNotifier(QSocketNotifier *notifier) override;
    void unregisterSocketNotifier(QSocketNotifier *notifier) override;

    void registerTimer(int timerId, qint64 interval, Qt::TimerType timerType, QObject *object) override;
    bool unregisterTimer(int timerId) override;
    bool unregisterTimers(QObject *object) override;
    QList<TimerInfo> registeredTimers(QObject *object) const override;
    int remainingTime(int timerId) override;

    void wakeUp() override;
    void interrupt() override;

    // System calls made so far on the interest list (epoll_ctl) and on the wake-up eventfd
    // (writes), for tests and benchmarks.
    quint64 interestChanges() const { return m_interestChanges; }
    quint64 wakeUpWrites() const { return m_wakeUpWrites.load(std::memory_order_relaxed); }

private:
    struct Watch {
        QSocketNotifier *notifiers[3] = {nullptr, nullptr, nullptr}; // by QSocketNotifier::Type
        quint32 inKernel = 0;     // the epoll events the kernel has for this descriptor
        bool queued = false;      // in m_changed
        bool unwatchable = false; // epoll refused it (EPERM: a regular file): ready on every turn
        quint32 wanted() const;
        bool empty() const { return !notifiers[0] && !notifiers[1] && !notifiers[2]; }
    };

    void applyChanges();
    void markPending(int fd, quint32 events);
    int activateNotifiers();
    bool ownThreadOutsideWait() const;

    struct Private;
    std::unique_ptr<Private> d;
    int m_epoll = -1;
    int m_wakeFd = -1;
    QHash<int, Watch> m_watches;
    std::vector<int> m_changed;         // descriptors whose notifiers changed this turn
    QList<QSocketNotifier *> m_pending; // ready, in activation order
    std::vector<int> m_unwatchable;     // descriptors epoll refused (regular files)
    std::atomic<int> m_wakeUps{0};      // 1 while a wake-up is written and not yet read
    std::atomic<bool> m_interrupt{false};
    std::atomic<bool> m_mayBlock{false};     // from aboutToBlock until the wait returns
    std::atomic<void *> m_threadId{nullptr}; // the thread that runs processEvents
    quint64 m_interestChanges = 0;
    std::atomic<quint64> m_wakeUpWrites{0};
};

} // namespace sw::util
