#include "core/util/epoll_dispatcher.h"

#include <QCoreApplication>
#include <QSocketNotifier>
#include <QThread>
#include <QtCore/private/qobject_p.h>
#include <QtCore/private/qthread_p.h>
#include <QtCore/private/qtimerinfo_unix_p.h>

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace sw::util {

namespace {

constexpr int kMaxEvents = 256; // per wait; more ready descriptors are reported by the next wait

// What each notifier type is activated by, as Qt's poll-based dispatcher does (POLLHUP and POLLERR
// wake every type). The kernel reports EPOLLHUP and EPOLLERR whether asked for or not.
constexpr quint32 kActivatedBy[3] = {
    EPOLLIN | EPOLLHUP | EPOLLERR,  // QSocketNotifier::Read
    EPOLLOUT | EPOLLHUP | EPOLLERR, // QSocketNotifier::Write
    EPOLLPRI | EPOLLHUP | EPOLLERR, // QSocketNotifier::Exception
};
constexpr quint32 kAsked[3] = {EPOLLIN, EPOLLOUT, EPOLLPRI};

const char *typeName(int type) {
    static const char *const names[] = {"Read", "Write", "Exception"};
    return type >= 0 && type < 3 ? names[type] : "?";
}

// epoll_pwait2 takes the timers' timespec as it is (Linux 5.11); an older kernel gets
// epoll_wait with the wait rounded up to a millisecond, so a timer never fires early.
int waitFor(int epoll, epoll_event *events, const timespec *timeout) {
    static std::atomic<bool> noPwait2{false};
    if (!noPwait2.load(std::memory_order_relaxed)) {
        const int n = ::epoll_pwait2(epoll, events, kMaxEvents, timeout, nullptr);
        if (n >= 0 || errno != ENOSYS)
            return n;
        noPwait2.store(true, std::memory_order_relaxed);
    }
    int ms = -1;
    if (timeout) {
        const qint64 ns = qint64(timeout->tv_sec) * 1000000000 + timeout->tv_nsec;
        ms = int(std::min<qint64>((ns + 999999) / 1000000, std::numeric_limits<int>::max()));
    }
    return ::epoll_wait(epoll, events, kMaxEvents, ms);
}

} // namespace

struct EpollDispatcher::Private {
    QTimerInfoList timers;
    ~Private() { qDeleteAll(timers); }
};

quint32 EpollDispatcher::Watch::wanted() const {
    quint32 events = 0;
    for (int type = 0; type < 3; ++type)
        if (notifiers[type])
            events |= kAsked[type];
    return events;
}

EpollDispatcher::EpollDispatcher(QObject *parent) : QAbstractEventDispatcher(parent), d(new Private) {
    m_epoll = ::epoll_create1(EPOLL_CLOEXEC);
    m_wakeFd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (m_epoll < 0 || m_wakeFd < 0)
        qFatal("EpollDispatcher: cannot create its epoll instance or eventfd: %s", std::strerror(errno));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = m_wakeFd;
    if (::epoll_ctl(m_epoll, EPOLL_CTL_ADD, m_wakeFd, &ev) != 0)
        qFatal("EpollDispatcher: cannot watch its eventfd: %s", std::strerror(errno));
}

EpollDispatcher::~EpollDispatcher() {
    ::close(m_wakeFd);
    ::close(m_epoll);
}

// ---- socket notifiers ------------------------------------------------------------------------

void EpollDispatcher::registerSocketNotifier(QSocketNotifier *notifier) {
    Q_ASSERT(notifier);
    const int fd = int(notifier->socket());
    const int type = notifier->type();
#ifndef QT_NO_DEBUG // Qt's dispatcher checks the thread in debug builds only; so does this one
    if (notifier->thread() != thread() || thread() != QThread::currentThread()) {
        qWarning("QSocketNotifier: socket notifiers cannot be enabled from another thread");
        return;
    }
#endif
    Watch &w = m_watches[fd];
    if (w.notifiers[type] && w.notifiers[type] != notifier)
        qWarning("EpollDispatcher: multiple socket notifiers for socket %d and type %s", fd, typeName(type));
    w.notifiers[type] = notifier;
    if (!w.queued) {
        w.queued = true;
        m_changed.push_back(fd);
    }
}

void EpollDispatcher::unregisterSocketNotifier(QSocketNotifier *notifier) {
    Q_ASSERT(notifier);
    const int fd = int(notifier->socket());
    const int type = notifier->type();
#ifndef QT_NO_DEBUG
    if (notifier->thread() != thread() || thread() != QThread::currentThread()) {
        qWarning("QSocketNotifier: socket notifier (fd %d) cannot be disabled from another thread", fd);
        return;
    }
#endif
    m_pending.removeOne(notifier); // not activated in this turn any more
    const auto it = m_watches.find(fd);
    if (it == m_watches.end() || it->notifiers[type] == nullptr)
        return;
    if (it->notifiers[type] != notifier) {
        qWarning("EpollDispatcher: multiple socket notifiers for socket %d and type %s", fd, typeName(type));
        return;
    }
    it->notifiers[type] = nullptr;
    if (!it->empty()) {
        if (!it->queued) {
            it->queued = true;
            m_changed.push_back(fd);
        }
        return;
    }
    // No notifier left: out of the kernel's list now, while the descriptor is still open. Its
    // owner may close it next, and a new socket may get the same number before the next wait.
    if (it->inKernel != 0) {
        ::epoll_ctl(m_epoll, EPOLL_CTL_DEL, fd, nullptr); // EBADF or ENOENT: already gone with a close
        ++m_interestChanges;
    }
    if (it->unwatchable)
        m_unwatchable.erase(std::remove(m_unwatchable.begin(), m_unwatchable.end(), fd), m_unwatchable.end());
    m_watches.erase(it); // a queued change for it is skipped in applyChanges
}

void EpollDispatcher::applyChanges() {
    QList<QSocketNotifier *> invalid;
    for (const int fd : m_changed) {
        const auto it = m_watches.find(fd);
        if (it == m_watches.end())
            continue;
        Watch &w = *it;
        w.queued = false;
        const quint32 wanted = w.wanted();
        if (w.unwatchable || wanted == w.inKernel)
            continue;
        epoll_event ev{};
        ev.events = wanted;
        ev.data.fd = fd;
        int op = w.inKernel == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
        int rc = ::epoll_ctl(m_epoll, op, fd, &ev);
        ++m_interestChanges;
        if (rc != 0 && (errno == ENOENT || errno == EEXIST)) {
            // ENOENT: closed and reopened under the same number while a notifier stayed registered
            // (the close took it out of the kernel's list); EEXIST: the reverse.
            op = op == EPOLL_CTL_ADD ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
            rc = ::epoll_ctl(m_epoll, op, fd, &ev);
            ++m_interestChanges;
        }
        if (rc == 0) {
            w.inKernel = wanted;
        } else if (errno == EPERM) {
            // A regular file or directory: poll reports it readable and writable on every turn.
            w.unwatchable = true;
            m_unwatchable.push_back(fd);
        } else {
            // As Qt's dispatcher does with POLLNVAL: warn and disable (after the loop: disabling
            // changes m_watches).
            const int why = errno;
            for (int type = 0; type < 3; ++type)
                if (w.notifiers[type]) {
                    qWarning("QSocketNotifier: Invalid socket %d with type %s, disabling... (%s)", fd, typeName(type),
                             std::strerror(why));
                    invalid << w.notifiers[type];
                }
        }
    }
    m_changed.clear();
    for (QSocketNotifier *notifier : std::as_const(invalid))
        notifier->setEnabled(false);
}

void EpollDispatcher::markPending(int fd, quint32 events) {
    const auto it = m_watches.constFind(fd);
    if (it == m_watches.cend())
        return;
    for (int type = 0; type < 3; ++type) {
        QSocketNotifier *notifier = it->notifiers[type];
        if (notifier && (events & kActivatedBy[type]) && !m_pending.contains(notifier))
            m_pending << notifier;
    }
}

int EpollDispatcher::activateNotifiers() {
    int activated = 0;
    QEvent event(QEvent::SockAct);
    while (!m_pending.isEmpty()) {
        QSocketNotifier *notifier = m_pending.takeFirst();
        QCoreApplication::sendEvent(notifier, &event);
        ++activated;
    }
    return activated;
}

// ---- timers (Qt's own list, as QEventDispatcherUNIX keeps it) ---------------------------------

// The argument and thread checks are Qt's, and like Qt's they run in debug builds only.
void EpollDispatcher::registerTimer(int timerId, qint64 interval, Qt::TimerType timerType, QObject *object) {
#ifndef QT_NO_DEBUG
    if (timerId < 1 || interval < 0 || !object) {
        qWarning("EpollDispatcher::registerTimer: invalid arguments");
        return;
    }
    if (object->thread() != thread() || thread() != QThread::currentThread()) {
        qWarning("EpollDispatcher::registerTimer: timers cannot be started from another thread");
        return;
    }
#endif
    d->timers.registerTimer(timerId, interval, timerType, object);
}

bool EpollDispatcher::unregisterTimer(int timerId) {
#ifndef QT_NO_DEBUG
    if (timerId < 1 || thread() != QThread::currentThread()) {
        qWarning("EpollDispatcher::unregisterTimer: invalid argument or another thread");
        return false;
    }
#endif
    return d->timers.unregisterTimer(timerId);
}

bool EpollDispatcher::unregisterTimers(QObject *object) {
#ifndef QT_NO_DEBUG
    if (!object || object->thread() != thread() || thread() != QThread::currentThread()) {
        qWarning("EpollDispatcher::unregisterTimers: invalid argument or another thread");
        return false;
    }
#endif
    return d->timers.unregisterTimers(object);
}

QList<QAbstractEventDispatcher::TimerInfo> EpollDispatcher::registeredTimers(QObject *object) const {
    if (!object)
        return {};
    return d->timers.registeredTimers(object);
}

int EpollDispatcher::remainingTime(int timerId) {
    return timerId < 1 ? -1 : d->timers.timerRemainingTime(timerId);
}

// ---- waking and the loop turn ----------------------------------------------------------------

bool EpollDispatcher::ownThreadOutsideWait() const {
    return QThread::currentThreadId() == m_threadId.load(std::memory_order_relaxed) &&
           !m_mayBlock.load(std::memory_order_relaxed);
}

void EpollDispatcher::wakeUp() {
    // The dispatcher's own thread is not waiting, and the next turn sends every posted event
    // before it may wait (QThreadData::canWait is false from the post on).
    if (ownThreadOutsideWait())
        return;
    int expected = 0;
    if (m_wakeUps.compare_exchange_strong(expected, 1, std::memory_order_acquire)) {
        const eventfd_t one = 1;
        while (::eventfd_write(m_wakeFd, one) != 0 && errno == EINTR) {
        }
        m_wakeUpWrites.fetch_add(1, std::memory_order_relaxed);
    }
}

void EpollDispatcher::interrupt() {
    m_interrupt.store(true, std::memory_order_relaxed);
    int expected = 0;
    if (m_wakeUps.compare_exchange_strong(expected, 1, std::memory_order_acquire)) {
        const eventfd_t one = 1;
        while (::eventfd_write(m_wakeFd, one) != 0 && errno == EINTR) {
        }
        m_wakeUpWrites.fetch_add(1, std::memory_order_relaxed);
    }
}

bool EpollDispatcher::processEvents(QEventLoop::ProcessEventsFlags flags) {
    m_threadId.store(QThread::currentThreadId(), std::memory_order_relaxed);
    m_interrupt.store(false, std::memory_order_relaxed);
    emit awake();
    QCoreApplication::sendPostedEvents();

    const bool includeTimers = !(flags & QEventLoop::X11ExcludeTimers);
    const bool includeNotifiers = !(flags & QEventLoop::ExcludeSocketNotifiers);
    QThreadData *data = QObjectPrivate::get(this)->threadData.loadRelaxed();
    // From here a post by this thread (an aboutToBlock handler's) writes the eventfd again.
    m_mayBlock.store(true, std::memory_order_relaxed);
    const bool canWait = data->canWaitLocked() && !m_interrupt.load(std::memory_order_relaxed) &&
                         (flags & QEventLoop::WaitForMoreEvents);
    if (canWait)
        emit aboutToBlock();
    if (m_interrupt.load(std::memory_order_relaxed)) {
        m_mayBlock.store(false, std::memory_order_relaxed);
        return false;
    }

    if (includeNotifiers)
        applyChanges(); // may find descriptors epoll cannot watch
    timespec wait{0, 0};
    const timespec *timeout = nullptr;
    if (!canWait || (includeTimers && d->timers.timerWait(wait)))
        timeout = &wait;
    if (includeNotifiers && !m_unwatchable.empty())
        timeout = &(wait = timespec{0, 0}); // they are ready now

    int nevents = 0;
    epoll_event events[kMaxEvents];
    int ready = 0;
    if (includeNotifiers) {
        ready = waitFor(m_epoll, events, timeout);
    } else {
        // The sockets stay in the kernel's list; wait on the eventfd alone, as Qt's dispatcher
        // leaves them out of its poll.
        pollfd wake{m_wakeFd, POLLIN, 0};
        ready = ::ppoll(&wake, 1, timeout, nullptr);
        if (ready > 0) {
            events[0].events = EPOLLIN;
            events[0].data.fd = m_wakeFd;
            ready = 1;
        }
    }
    m_mayBlock.store(false, std::memory_order_relaxed);
    if (ready < 0 && errno != EINTR)
        qWarning("EpollDispatcher: wait failed: %s", std::strerror(errno));

    for (int i = 0; i < ready; ++i) {
        const int fd = events[i].data.fd;
        if (fd == m_wakeFd) {
            eventfd_t value = 0;
            ::eventfd_read(m_wakeFd, &value);
            m_wakeUps.store(0, std::memory_order_release);
            ++nevents;
        } else {
            markPending(fd, events[i].events);
        }
    }
    if (includeNotifiers) {
        for (const int fd : m_unwatchable)
            markPending(fd, EPOLLIN | EPOLLOUT);
        nevents += activateNotifiers();
    }
    if (includeTimers)
        nevents += d->timers.activateTimers();
    return nevents > 0;
}

} // namespace sw::util
