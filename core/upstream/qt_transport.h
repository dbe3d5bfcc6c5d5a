#pragma once
// Production Transport on QNetworkAccessManager.
//
// Qt 6.4 gives one manager at most 6 HTTP/1.1 connections per host and no way
// to raise it, and a call waits for a free connection. The gateway must hold
// hundreds of streams to one upstream, so calls are spread over a pool of
// managers: each new call goes to a manager with fewer than
// maxCallsPerHostPerManager() active calls to that host; when all are full, a
// new manager is created.
//
// Nagle: QNAM does not expose the socket, so TCP_NODELAY cannot be set on its
// connections (Qt 6.4's HTTP channel leaves it off). Requests are written
// header block then body; on loopback this is not delayed in practice.

#include "core/upstream/transport.h"

#include <QHash>
#include <QList>
#include <QObject>

class QNetworkAccessManager;

namespace sw::upstream {

class QtTransport final : public QObject, public Transport {
    Q_OBJECT
public:
    explicit QtTransport(QObject *parent = nullptr);
    ~QtTransport() override;
    Q_DISABLE_COPY_MOVE(QtTransport)

    UpstreamCall *start(const HttpRequest &request, QObject *parent) override;
    void setExtraCaCertificates(const CaTable &table) override;

    // 6 = Qt 6.4's per-host connection limit of one manager.
    int maxCallsPerHostPerManager() const { return m_maxPerManager; }
    void setMaxCallsPerHostPerManager(int n) { m_maxPerManager = n > 0 ? n : 1; }
    int managerCount() const { return int(m_pool.size()); }
    int activeCalls() const { return m_activeCalls; }

private:
    struct PooledManager {
        QNetworkAccessManager *manager = nullptr;
        QHash<QString, int> activeByHost; // key: scheme://host:port
        QString trust;                    // the CA bundle its connections were verified with (HttpRequest::trust)
    };
    // A manager keeps its connections for any request to the host: one per trust, so a request
    // without a provider's CA never rides a connection that CA verified.
    PooledManager &managerFor(const QString &hostKey, const QString &trust);
    void release(QNetworkAccessManager *manager, const QString &hostKey);

    QList<PooledManager> m_pool;
    CaTable m_extraCa;
    int m_maxPerManager = 6;
    int m_activeCalls = 0;
};

} // namespace sw::upstream
