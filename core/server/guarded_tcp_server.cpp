#include "server/guarded_tcp_server.h"

#include "server/connection_guard.h"

#include <QPointer>
#include <QTcpSocket>

namespace sw::server {

GuardedTcpServer::GuardedTcpServer(const config::LimitsConfig &limits, QObject *httpServer, QObject *parent)
    : QTcpServer(parent), m_limits(limits), m_httpServer(httpServer)
{
}

void GuardedTcpServer::incomingConnection(qintptr handle)
{
    auto *socket = new QTcpSocket(this);
    if (!socket->setSocketDescriptor(handle)) {
        delete socket;
        return;
    }
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
    new ConnectionGuard(socket, m_limits, m_httpServer, [self]() {
        if (self)
            --self->m_open;
    });
    addPendingConnection(socket);
}

} // namespace sw::server
