#pragma once
// The listening socket of the HTTP front: every accepted connection gets a
// ConnectionGuard before Qt's HTTP server sees it, and connections over
// limits.maxConnections are answered 503 and closed.

#include "core/config/config.h"

#include <QTcpServer>
#include <memory>

namespace sw::util {
class ByteBudget;
}

namespace sw::server {

class GuardedTcpServer final : public QTcpServer {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(GuardedTcpServer)
public:
    // `httpServer` is the QAbstractHttpServer this server is bound to. Request bodies are taken from
    // `bytesInFlight` (limits.maxBodyBytesInFlight), which the engine shares with the upstream layer.
    GuardedTcpServer(const config::LimitsConfig &limits, std::shared_ptr<util::ByteBudget> bytesInFlight,
                     QObject *httpServer, QObject *parent = nullptr);
    ~GuardedTcpServer() override;
    // New connections use the new limits; open ones keep theirs.
    void setLimits(const config::LimitsConfig &limits);
    int openConnections() const { return m_open; }
    static constexpr int kMinListenBacklog = 1024;

protected:
    void incomingConnection(qintptr handle) override;

private:
    config::LimitsConfig m_limits;
    QObject *m_httpServer;
    int m_open = 0;
    std::shared_ptr<util::ByteBudget> m_bytesInFlight;
};

} // namespace sw::server
