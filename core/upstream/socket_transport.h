#pragma once
// An HTTP/1.1 transport on QTcpSocket / QSslSocket, an alternative to
// QtTransport for when the upstream leg must be cheap: no per-host connection
// cap, no helper thread per manager, TCP_NODELAY on every connection, and a
// request sent on a fresh connection is never silently re-sent (QNAM re-sends
// a POST whose connection was reset). HTTP/2 is not spoken; HTTPS uses HTTP/1.1.
//
// Keep-alive: a connection whose response ended cleanly goes back to an idle
// pool per scheme://host:port. A pooled connection whose peer has already closed
// it (an end or reset waiting in the kernel) is not reused. A request on a reused
// connection that dies before any response byte, while the request was still
// being written or within SocketUpstreamCall::kStaleRetryMs of it, is retried
// once on a fresh one (the server timed the idle connection out as we sent);
// dying later, the server may have read and processed it: a transport failure,
// never re-sent. A connection idle longer than kIdleReuseMs, or than the server's own
// `Keep-Alive: timeout=` less a margin, is closed instead of reused: a NAT or firewall that forgot
// it, or a laptop that slept, drops what is sent on it without a word, and the request would hang
// until the attempt's budget blamed the model (probe X1 F2).
//
// A connection (and TLS handshake) that does not complete within
// kConnectTimeoutMs fails the call as TransportError::Timeout.
//
// A forward proxy (proxy_settings.h: the environment's variables, or providers.NAME.proxy): the
// connection is made to the proxy; an https:// provider is reached through a CONNECT tunnel, with TLS
// verified against the provider's name over it, and an http:// one by requests in absolute form
// (`POST http://host:port/path`). Connections are pooled per proxy too. A failure before the proxy
// has let the connection through (no connection to it, a refused CONNECT) is named as the proxy's.

#include "core/upstream/http1_response_parser.h"
#include "core/upstream/proxy_settings.h"
#include "core/upstream/transport.h"
#include "core/util/clock.h"

#include <QAbstractSocket>
#include <QHash>
#include <QHostAddress>
#include <QList>
#include <QObject>
#include <QPointer>
#include <functional>

namespace sw::upstream {

class SocketUpstreamCall;
class SocketTransport;
class AddressRace;
class ProxyTunnel;

// One upstream connection for its whole life, a child of its socket. The socket's signals are
// connected to it once, when the connection is opened, and it hands them to whoever holds the
// connection now: the call running on it, the idle pool, or nobody (a drain listens by itself).
// Handing a kept-alive connection from call to pool to call then costs no QObject::connect or
// disconnect per request.
class SocketLink final : public QObject {
public:
    explicit SocketLink(QAbstractSocket *socket);
    QAbstractSocket *socket() const { return m_socket; }
    void holdByCall(SocketUpstreamCall *call);
    void holdIdle(SocketTransport *transport);
    void release(); // nobody hears the socket until the next hold
    // The response's `Keep-Alive: timeout=N` hint: the connection is reused within N s less a
    // margin, and never past SocketTransport::kIdleReuseMs.
    void noteKeepAlive(const http::HeaderList &responseHeaders);
    // A connection to a host name being made by racing its addresses (AddressRace, in the .cpp):
    // the socket is not open yet, and not failed.
    bool racing() const { return !m_race.isNull(); }
    // The connection is still being made to a proxy, or its tunnel asked for: a failure now is the proxy's.
    bool reachingProxy() const { return m_reachingProxy; }
    qint64 reuseWithinMs() const { return m_reuseWithinMs; }

protected:
    // A plain connection's read notifications reach the call that holds it before Qt's socket
    // (SocketUpstreamCall::readDirect): Qt asks the kernel how much is readable before every read
    // (ioctl FIONREAD), a system call per upstream read that the call does not need.
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    void onConnected();
    void onReadyRead();
    void onError(QAbstractSocket::SocketError error);
    void onDisconnected();
    void watchReadNotifier();
    void raceLost(TransportError error, const QString &message); // every address failed, or the tunnel
    ProxyTunnel *tunnel() const;

    QAbstractSocket *m_socket;
    SocketUpstreamCall *m_call = nullptr;
    SocketTransport *m_idleIn = nullptr;
    QPointer<QObject> m_readNotifier; // Qt's, of a plain connection, once found
    QPointer<QObject> m_race;         // while the host name's addresses race
    QPointer<QObject> m_tunnel;       // ProxyTunnel, while a proxy is asked for a tunnel (CONNECT)
    bool m_reachingProxy = false;
    qint64 m_reuseWithinMs;
    // When it went idle. The clock counts the time the machine slept: a NAT forgets the flow then too.
    qint64 m_idleSinceMs = 0;
    friend class SocketTransport;
    friend class AddressRace;
    friend class ProxyTunnel;
};

class SocketTransport final : public QObject, public Transport {
    Q_OBJECT
public:
    explicit SocketTransport(QObject *parent = nullptr);
    ~SocketTransport() override;
    Q_DISABLE_COPY_MOVE(SocketTransport)

    UpstreamCall *start(const HttpRequest &request, QObject *parent) override;
    void setExtraCaCertificates(const CaTable &table) override;
    void setProxies(const ProxyTable &table) override;
    // What the environment says, read once when the transport is made; a test's own in its place.
    void setProxyEnvironment(const ProxySettings &settings);
    // The proxy a request to `url` (whose host key is `hostKey`) goes through; nullopt: direct.
    std::optional<ProxyServer> proxyFor(const QString &hostKey, const QUrl &url);

    int idleConnections() const;
    int connectionsOpened() const { return m_opened; }
    int drainingConnections() const { return m_draining; }

    // An aborted call's connection is read to the end of its response for at most
    // this long and this many bytes, then pooled; past either bound it is closed.
    static constexpr int kDrainMs = 50;
    static constexpr qint64 kDrainBytes = 64 * 1024;
    void setMaxIdlePerHost(int n) { m_maxIdlePerHost = n; }
    // A pooled connection idle longer than this is closed, not reused. Mainstream clients reuse for
    // 4 to 5 s (undici, httpx) up to 90 s (Go); middleboxes forget idle flows after minutes to an
    // hour, and a server that closes first usually says so (a FIN, or its Keep-Alive hint). 15 s
    // keeps an agent's run of requests on one connection and leaves no forgotten flow in use.
    static constexpr qint64 kIdleReuseMs = 15'000;
    // A TCP connect plus, for https, the TLS handshake, must complete within this long, or the call
    // ends as TransportError::Timeout (the base URL's failure) instead of waiting on a host that drops
    // our SYNs (a full accept queue, a firewall) until the idle limit blames the model. Ten seconds
    // covers a slow handshake across the world and the kernel's first SYN retransmissions (1 s, 3 s).
    // failover.connectTimeoutMs sets it (Transport::setConnectTimeoutMs).
    static constexpr int kConnectTimeoutMs = 10000;
    void setConnectTimeoutMs(int ms) override { m_connectTimeoutMs = ms; }
    int connectTimeoutMs() const { return m_connectTimeoutMs; }
    // Time for connect timeouts and the stale-connection retry window; the system clock unless set.
    void setClock(util::Clock *clock) { m_clock = clock; }
    util::Clock &clock() const { return m_clock ? *m_clock : util::systemClock(); }

    static QString hostKeyOf(const QUrl &url) { return upstream::hostKeyOf(url); }

    // A host name's addresses are tried as RFC 8305 (Happy Eyeballs) asks: the next one starts when
    // the one before fails, or has not connected within this long, and the first connected wins.
    // Qt's own connectToHost tries one address at a time and leaves a silent one only after 30 s, so
    // a provider whose first address drops SYNs (IPv6 broken on the way, one dead node of a
    // round-robin name) was never reached past it within the connect timeout (probe X1 F1). curl,
    // Node and httpx start the next address after 250 ms too. An address literal is connected to as
    // before.
    static constexpr int kNextAddressAfterMs = 250;
    // Test seam: a host name's addresses, in place of the system's lookup (an empty list: not found).
    using Resolver = std::function<QList<QHostAddress>(const QString &host)>;
    void setResolver(Resolver resolver) { m_resolver = std::move(resolver); }

private:
    friend class SocketUpstreamCall;
    friend class SocketLink;
    friend class AddressRace;
    friend class ProxyTunnel;
    // A connected idle connection for the host, its socket reparented to `owner`; nullptr if none.
    SocketLink *takeIdle(const QString &hostKey, QObject *owner);
    SocketLink *open(const QUrl &url, const QString &trust, const std::optional<ProxyServer> &proxy, QObject *owner);
    void closeIdle(bool httpsOnly);
    void giveBack(const QString &hostKey, SocketLink *link);
    void dropIdle(SocketLink *link);
    bool idleTooLong(const SocketLink *link) const;
    // Takes an aborted call's connection, mid-body with `parser`'s state.
    void drain(const QString &hostKey, SocketLink *link, const Http1ResponseParser &parser);

    QHash<QString, QList<SocketLink *>> m_idle;
    int m_maxIdlePerHost = 256;
    int m_connectTimeoutMs = kConnectTimeoutMs;
    util::Clock *m_clock = nullptr;
    int m_opened = 0;
    int m_draining = 0;
    CaTable m_extraCa;
    Resolver m_resolver;
    ProxySettings m_proxyEnvironment;
    QHash<QString, std::optional<ProxyServer>> m_proxyOverrides; // providers.NAME.proxy by host key
    QHash<QString, std::optional<ProxyServer>> m_proxyRoutes;    // proxyFor's answers, by host key
};

} // namespace sw::upstream
