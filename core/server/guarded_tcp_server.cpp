#include "core/server/guarded_tcp_server.h"

#include "core/http/socket_read.h"
#include "core/server/connection_guard.h"
#include "core/server/http_front.h"
#include "core/server/request_guard.h"
#include "core/util/byte_budget.h"

#include <QEvent>
#include <QPointer>
#include <QSocketNotifier>
#include <QTcpSocket>
#include <QTimer>
#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <utility>

namespace sw::server {

GuardedTcpServer::GuardedTcpServer(const config::LimitsConfig &limits, std::shared_ptr<util::ByteBudget> bytesInFlight,
                                   QObject *httpServer, QObject *parent)
    : QTcpServer(parent), m_limits(limits), m_httpServer(httpServer), m_bytesInFlight(std::move(bytesInFlight)) {
    // Qt's default backlog of 50 overflows when a client opens hundreds of connections at once
    // (an agent fanning out, a load test): the kernel then drops the handshake's last ACK and the
    // client waits a SYN-ACK retransmit (1 s, then 3 s) before its request is even read. The
    // queue holds a burst of up to maxConnections (the kernel caps it at net.core.somaxconn);
    // past maxConnections a connection is still accepted and answered 503 at once.
    setListenBacklogSize(std::max(kMinListenBacklog, m_limits.maxConnections));
}

GuardedTcpServer::~GuardedTcpServer() {
    if (m_spare >= 0)
        ::close(m_spare);
}

bool GuardedTcpServer::listen(const QHostAddress &address, quint16 port) {
    if (!QTcpServer::listen(address, port))
        return false;
    // Qt's accept loop meets a failing accept(2) (EMFILE: the process is out of descriptors) by
    // trying again on the next poll: the listener stays readable, the loop spun a whole core and new
    // clients waited unanswered in the backlog (probe V2 F4). Qt's read notifier for the listener is
    // kept (one notifier a socket: the engine's dispatcher takes no second), and its activations are
    // taken here before Qt's handler sees them.
    const qintptr fd = socketDescriptor();
    for (QSocketNotifier *n : findChildren<QSocketNotifier *>())
        if (n->type() == QSocketNotifier::Read && n->socket() == fd) {
            m_acceptNotifier = n;
            n->installEventFilter(this);
            break;
        }
    openSpare();
    return true;
}

bool GuardedTcpServer::eventFilter(QObject *watched, QEvent *event) {
    if (watched == m_acceptNotifier && event->type() == QEvent::SockAct) {
        acceptPending();
        return true;
    }
    return QTcpServer::eventFilter(watched, event);
}

void GuardedTcpServer::openSpare() {
    if (m_spare < 0)
        m_spare = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

void GuardedTcpServer::acceptPending() {
    const int listener = int(socketDescriptor());
    // A bounded batch: a flood of connections cannot hold the loop from the requests already open.
    for (int i = 0; i < 64 && listener >= 0; ++i) {
        const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
            QPointer<GuardedTcpServer> self(this);
            incomingConnection(fd);
            if (!self)
                return;
            Q_EMIT newConnection();
            if (!self || !isListening())
                return;
            continue;
        }
        switch (errno) {
        case EINTR:
        case ECONNABORTED: // the client left while it waited in the backlog
            continue;
        case EAGAIN:
#if EAGAIN != EWOULDBLOCK
        case EWOULDBLOCK:
#endif
            return;
        case EMFILE:
        case ENFILE:
            // accept(2) wants a descriptor before it looks for a connection: this says nothing of
            // one waiting. Shed while there are some; none left, the listener is no longer readable.
            if (m_spare < 0)
                return restAccepting();
            if (!shedOneConnection())
                return;
            continue;
        default: // ENOBUFS, ENOMEM, a network error of the pending connection: not on every poll
            return restAccepting();
        }
    }
}

bool GuardedTcpServer::shedOneConnection() {
    // The spare descriptor makes room for one connection, which is told the gateway is overloaded
    // and closed at once: the client gets an answer it can retry on, not a hang in the backlog, and
    // the listener is no longer readable for it.
    if (m_spare < 0)
        return false;
    ::close(m_spare);
    m_spare = -1;
    const int fd = ::accept4(socketDescriptor(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    const bool shed = fd >= 0;
    if (shed) {
        const QByteArray answer = RequestGuard::responseBytes(
            {503, "overloaded_error",
             QStringLiteral("the gateway is out of file descriptors (its open-files limit); retry shortly"), 1});
        (void)::send(fd, answer.constData(), size_t(answer.size()), MSG_NOSIGNAL | MSG_DONTWAIT);
        // What the client sent is read first (a bounded amount): closing on unread bytes would reset the
        // connection, and a reset may reach the client before the answer it has not read yet.
        char sink[16384];
        for (int n = 0; n < 4 && ::recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; ++n) {
        }
        ::shutdown(fd, SHUT_WR);
        ::close(fd);
        Q_EMIT refused(503);
        ++m_shedUnsaid;
        if (!m_shedSaid.isValid() || m_shedSaid.elapsed() >= kShedLogEveryMs) {
            m_shedSaid.start();
            Q_EMIT descriptorsExhausted(std::exchange(m_shedUnsaid, 0));
        }
    }
    openSpare();
    return shed;
}

void GuardedTcpServer::restAccepting() {
    if (m_resting)
        return;
    m_resting = true;
    QTcpServer::pauseAccepting();
    QTimer::singleShot(kAcceptRestMs, this, [this] {
        m_resting = false;
        if (isListening())
            QTcpServer::resumeAccepting();
        openSpare();
    });
}

void GuardedTcpServer::sayConnectionLimit() {
    // A capacity problem the operator must see: the first refusal is said at once, the rest of a
    // burst in one line per window, and the window's last ones when it ends, not only if another comes.
    if (m_overLimitUnsaid == 0)
        return;
    if (!m_overLimitSaid.isValid() || m_overLimitSaid.elapsed() >= kShedLogEveryMs) {
        m_overLimitSaid.start();
        Q_EMIT connectionLimitReached(std::exchange(m_overLimitUnsaid, 0), m_limits.maxConnections);
        return;
    }
    if (std::exchange(m_overLimitSayPending, true))
        return;
    QTimer::singleShot(kShedLogEveryMs - m_overLimitSaid.elapsed(), this, [this] {
        m_overLimitSayPending = false;
        sayConnectionLimit();
    });
}

void GuardedTcpServer::setLimits(const config::LimitsConfig &limits) {
    m_limits = limits;
}

void GuardedTcpServer::incomingConnection(qintptr handle) {
    auto *socket = new GuardedSocket(this);
    if (!socket->setSocketDescriptor(handle)) {
        // Qt leaves a descriptor it could not take open: closed here, or each such failure would
        // hold one until the process ends.
        delete socket;
        ::close(static_cast<int>(handle));
        return;
    }
    // Nagle off once per connection: an answer's last segment must not wait for the client's ACK.
    socket->setSocketOption(QAbstractSocket::LowDelayOption, 1);
    // An idle kept-alive connection holds at most a small read block (core/http/socket_read.h).
    http::useSmallReadChunks(socket);
    if (m_open >= m_limits.maxConnections) {
        // Not handed to the HTTP server: answered here and closed.
        auto *guard = new ConnectionGuard(socket, m_limits, nullptr, {});
        guard->reject({503, "overloaded_error",
                       QStringLiteral("too many open connections (limits.maxConnections = %1); retry shortly")
                           .arg(m_limits.maxConnections)});
        Q_EMIT refused(503);
        ++m_overLimitUnsaid;
        sayConnectionLimit();
        return;
    }
    ++m_open;
    QPointer<GuardedTcpServer> self(this);
    auto *guard = new ConnectionGuard(socket, m_limits, m_httpServer, [self]() {
        if (self)
            --self->m_open;
    });
    // HttpFront takes a request's fields from the guard, which then gives Qt's parser a short head,
    // and judges each request on its head (the gateway key) before its body is read.
    if (auto *front = qobject_cast<HttpFront *>(m_httpServer)) {
        guard->setHandsOverHeads(true);
        guard->setHeadJudge([front = QPointer<HttpFront>(front)](const RequestHead &head) {
            return front ? front->judgeHead(head) : HeadVerdict{};
        });
    }
    guard->setBodyBudget(m_bytesInFlight);
    guard->setOnReject([self](int status) {
        if (self)
            Q_EMIT self->refused(status);
    });
    addPendingConnection(socket);
}

} // namespace sw::server
