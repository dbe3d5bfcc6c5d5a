#pragma once
// The upstream transport seam: starts HTTP calls and reports their progress.
// The Qt implementation (qt_transport) is the production one; tests may swap it.

#include "core/upstream/http_types.h"

#include <QHash>
#include <QList>
#include <QObject>
#include <QSslCertificate>

namespace sw::upstream {

class UpstreamCall : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;
    // Ends the exchange at once: finished(Aborted) follows synchronously, and no
    // other signal after it. The connection is closed at once, except when the
    // response has started with a self-delimited body: then the transport reads
    // on, unheard, for at most ~50 ms / 64 KiB, and keeps the connection if the
    // body ends within that (a caller that stops at its last event costs no
    // reconnect); otherwise it closes it then.
    virtual void abort() = 0;
    // Backpressure: while paused, no bodyData is emitted and the connection is not
    // read beyond a small bounded buffer, so TCP flow control slows the upstream
    // instead of our memory growing. Resuming delivers what was held, in order,
    // then the rest. A failure or end noticed while paused is reported after the
    // held bytes, on resume. Both real transports implement it.
    virtual void setReadPaused(bool paused) { Q_UNUSED(paused); }
    // Bytes of the answer wait to be read, in the transport's buffer or the connection's: the
    // upstream sent them, whatever the loop has heard of them yet.
    virtual bool hasUnreadBytes() const { return false; }

Q_SIGNALS:
    void responseStarted(int status, const sw::upstream::HeaderList &headers);
    void bodyData(const QByteArray &chunk); // incremental, arbitrary boundaries
    void finished(const sw::upstream::TransportResult &result);
};

class Transport {
public:
    virtual ~Transport() = default;
    // The call is parented to `parent` (the caller deletes it, or it dies with parent).
    virtual UpstreamCall *start(const HttpRequest &request, QObject *parent) = 0;
    // CA certificates trusted in addition to the system store, per CA bundle path
    // (providers.NAME.caFile, what HttpRequest::trust names); replaces the whole table, and idle
    // connections verified under the old one are closed. Calls already running keep the trust they
    // started with.
    using CaTable = QHash<QString, QList<QSslCertificate>>;
    virtual void setExtraCaCertificates(const CaTable &table) { Q_UNUSED(table); }
    // failover.connectTimeoutMs: a connection (TLS handshake included) not made in this long fails the
    // call as TransportError::Timeout. Calls already connecting keep the bound they started with.
    virtual void setConnectTimeoutMs(int ms) { Q_UNUSED(ms); }
    // providers.NAME.proxy, per host key (hostKeyOf the provider's base URL): a proxy URL, or "none"
    // for a direct connection; a host not in the table goes as the environment's proxy variables say
    // (proxy_settings.h). Replaces the whole table; idle connections made under the old one are closed.
    using ProxyTable = QHash<QString, QString>;
    virtual void setProxies(const ProxyTable &table) { Q_UNUSED(table); }
};

} // namespace sw::upstream
