#include "core/server/guarded_tcp_server.h"

#include "core/http/socket_read.h"
#include "core/server/connection_guard.h"
#include "core/server/http_front.h"
#include "core/util/byte_budget.h"

#include <QPointer>
#include <QTcpSocket>
#include <algorithm>

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

GuardedTcpServer::~GuardedTcpServer() = default;

void GuardedTcpServer::setLimits(const config::LimitsConfig &limits) {
    m_limits = limits;
}

void GuardedTcpServer::incomingConnection(qintptr handle) {
    auto *socket = new GuardedSocket(this);
    if (!socket->setSocketDescriptor(handle)) {
        delete socket;
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
    addPendingConnection(socket);
}

} // namespace sw::server
