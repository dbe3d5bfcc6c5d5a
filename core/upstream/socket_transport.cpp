#include "core/upstream/socket_transport.h"

#include "core/http/socket_read.h"
#include "core/upstream/socket_upstream_call.h"

#include <QEvent>
#include <QHostInfo>
#include <QNetworkProxy>
#include <QSocketNotifier>
#include <QSslConfiguration>
#include <QSslSocket>
#include <QTcpSocket>
#include <QTimer>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace sw::upstream {

// Asks an HTTP proxy for a tunnel to an https:// provider (`CONNECT host:port`) once the connection
// to the proxy is up; on its 2xx answer the TLS handshake starts over the tunnel, verified against
// the provider's name (and sent it as SNI), as if the provider had been connected to directly. A
// child of the link, gone once the tunnel is made or refused; while it lives, the link hands the
// connection's signals to it instead of to the call.
class ProxyTunnel final : public QObject {
public:
    // An answer to CONNECT is a status line and a few fields; a proxy that sends more is not one.
    static constexpr qsizetype kMaxAnswerBytes = 16 * 1024;

    ProxyTunnel(SocketLink *link, const QString &host, quint16 port, const QByteArray &authorization)
        : QObject(link), m_link(link), m_host(host), m_port(port), m_authorization(authorization) {
        link->m_tunnel = this;
    }

    void begin() {
        const QByteArray authority =
            (m_host.contains(QLatin1Char(':')) ? '[' + m_host.toUtf8() + ']' : m_host.toUtf8()) + ':' +
            QByteArray::number(m_port);
        QByteArray request = "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n";
        if (!m_authorization.isEmpty())
            request += "Proxy-Authorization: " + m_authorization + "\r\n";
        request += "\r\n";
        m_link->socket()->write(request);
    }

    void onReadyRead() {
        m_answer += m_link->socket()->readAll();
        const qsizetype end = m_answer.indexOf("\r\n\r\n");
        if (end < 0) {
            if (m_answer.size() > kMaxAnswerBytes)
                fail(TransportError::TooLarge, QStringLiteral("its answer to CONNECT is over 16 KiB"));
            return;
        }
        // "HTTP/1.1 200 Connection established"
        const QByteArray line = m_answer.left(m_answer.indexOf("\r\n"));
        bool ok = false;
        const int status = line.startsWith("HTTP/1.") ? line.mid(9, 3).toInt(&ok) : 0;
        if (!ok || line.size() < 12 || (line.size() > 12 && line.at(12) != ' '))
            return fail(TransportError::Protocol, QStringLiteral("its answer to CONNECT is not HTTP"));
        if (status < 200 || status > 299) {
            // The proxy's reason phrase reaches the client's error and the log: its first 64
            // characters, printable ASCII only (a bare LF or a page of text stays out of both).
            QByteArray reason = line.mid(13).trimmed().left(64);
            for (char &c : reason)
                if (uchar(c) < 0x20 || uchar(c) > 0x7e)
                    c = '?';
            return fail(status >= 500 ? TransportError::Other : TransportError::Refused,
                        QStringLiteral("refused the tunnel to %1:%2 with %3%4")
                            .arg(m_host)
                            .arg(m_port)
                            .arg(QString::number(status) +
                                     (reason.isEmpty() ? QString() : QLatin1Char(' ') + QString::fromLatin1(reason)),
                                 proxyRefusalHint(status, !m_authorization.isEmpty())));
        }
        if (end + 4 != m_answer.size()) // the provider speaks only after our TLS hello
            return fail(TransportError::Protocol, QStringLiteral("it sent bytes after its answer to CONNECT"));
        SocketLink *link = m_link;
        link->m_tunnel = nullptr;
        link->m_reachingProxy = false;
        deleteLater();
        auto *ssl = static_cast<QSslSocket *>(link->socket());
        ssl->setPeerVerifyName(m_host);
        ssl->startClientEncryption(); // SocketLink::onConnected on `encrypted`
    }

    void onError(QAbstractSocket::SocketError error) {
        if (error == QAbstractSocket::RemoteHostClosedError)
            return onDisconnected();
        fail(SocketUpstreamCall::errorFor(error), m_link->socket()->errorString());
    }

    void onDisconnected() {
        if (m_link->socket()->bytesAvailable() > 0) {
            onReadyRead();
            if (m_link->m_tunnel != this)
                return; // answered
        }
        fail(TransportError::Reset, QStringLiteral("it closed the connection before answering CONNECT"));
    }

private:
    void fail(TransportError error, const QString &message) {
        SocketLink *link = m_link;
        link->m_tunnel = nullptr;
        deleteLater();
        link->raceLost(error, message);
    }

    SocketLink *m_link;
    QString m_host;
    quint16 m_port;
    QByteArray m_authorization;
    QByteArray m_answer;
};

ProxyTunnel *SocketLink::tunnel() const {
    return static_cast<ProxyTunnel *>(m_tunnel.data());
}

SocketTransport::SocketTransport(QObject *parent)
    : QObject(parent), m_proxyEnvironment(ProxySettings::fromEnvironment()) {
    // Said once, at start: a proxy variable that cannot be read leaves its URLs direct.
    for (const QString &problem : m_proxyEnvironment.problems())
        qWarning("%s", qPrintable(problem));
}

SocketTransport::~SocketTransport() {
    // Idle sockets are children, deleted after this body; a socket closing then must not reach the pool.
    for (const auto &list : std::as_const(m_idle))
        for (SocketLink *link : list)
            link->release();
}

UpstreamCall *SocketTransport::start(const HttpRequest &request, QObject *parent) {
    return new SocketUpstreamCall(this, request, parent);
}

int SocketTransport::idleConnections() const {
    int n = 0;
    for (const auto &list : m_idle)
        n += int(list.size());
    return n;
}

SocketLink::SocketLink(QAbstractSocket *socket)
    : QObject(socket), m_socket(socket), m_reuseWithinMs(SocketTransport::kIdleReuseMs) {
    if (auto *ssl = qobject_cast<QSslSocket *>(socket)) {
        connect(ssl, &QSslSocket::encrypted, this, &SocketLink::onConnected);
        // A TLS connection through a proxy is plain until the tunnel is made: the proxy is asked for it then.
        connect(ssl, &QAbstractSocket::connected, this, [this] {
            if (m_tunnel)
                onConnected();
        });
    } else
        connect(socket, &QAbstractSocket::connected, this, &SocketLink::onConnected);
    connect(socket, &QAbstractSocket::readyRead, this, &SocketLink::onReadyRead);
    connect(socket, &QAbstractSocket::errorOccurred, this, &SocketLink::onError);
    connect(socket, &QAbstractSocket::disconnected, this, &SocketLink::onDisconnected);
}

void SocketLink::holdByCall(SocketUpstreamCall *call) {
    m_call = call;
    m_idleIn = nullptr;
    watchReadNotifier();
}

void SocketLink::watchReadNotifier() {
    // Qt's socket engine, a child of the socket, makes its read notifier once the connection is up.
    // A TLS socket reads ciphertext that only it can decrypt: Qt's path, always.
    if (m_readNotifier || m_socket->state() != QAbstractSocket::ConnectedState || qobject_cast<QSslSocket *>(m_socket))
        return;
    const qintptr fd = m_socket->socketDescriptor();
    for (QSocketNotifier *n : m_socket->findChildren<QSocketNotifier *>())
        if (n->type() == QSocketNotifier::Read && n->socket() == fd) {
            m_readNotifier = n;
            n->installEventFilter(this);
            return;
        }
}

bool SocketLink::eventFilter(QObject *watched, QEvent *event) {
    // Taken here only while a call holds the connection and reads it now (not paused, nothing in
    // Qt's buffer); the end of the connection, an error, an idle connection and a drain go to Qt.
    if (watched == m_readNotifier && event->type() == QEvent::SockAct && m_call)
        return m_call->readDirect();
    return false;
}

void SocketLink::holdIdle(SocketTransport *transport) {
    m_call = nullptr;
    m_idleIn = transport;
}

void SocketLink::noteKeepAlive(const http::HeaderList &responseHeaders) {
    m_reuseWithinMs = SocketTransport::kIdleReuseMs;
    const QByteArray hint = http::headerValue(responseHeaders, "keep-alive");
    if (hint.isEmpty())
        return;
    for (const QByteArray &part : hint.split(',')) {
        const QByteArray item = part.trimmed();
        if (!item.toLower().startsWith("timeout="))
            continue;
        bool ok = false;
        const qint64 seconds = item.mid(8).trimmed().toLongLong(&ok);
        if (!ok || seconds < 0)
            return;
        // A second's margin for the request's way to the server, half the time for a short one.
        const qint64 serverMs = std::min<qint64>(seconds, 24 * 3600) * 1000;
        m_reuseWithinMs = std::min(SocketTransport::kIdleReuseMs, std::max(serverMs - 1000, serverMs / 2));
        return;
    }
}

void SocketLink::release() {
    m_call = nullptr;
    m_idleIn = nullptr;
    // A call that ended while its connection was still being made (its connect timeout, an abort)
    // ends the race too: no address goes on trying for nobody.
    if (QObject *race = m_race.data()) {
        m_race = nullptr;
        race->deleteLater();
    }
    if (QObject *tunnel = m_tunnel.data()) {
        m_tunnel = nullptr;
        tunnel->deleteLater();
    }
}

void SocketLink::onConnected() {
    if (m_tunnel)
        return tunnel()->begin(); // the proxy is reached: the tunnel is asked for
    m_reachingProxy = false;      // reached: an http:// request goes to the proxy itself
    watchReadNotifier();
    if (m_call)
        m_call->sendRequest();
}

void SocketLink::onReadyRead() {
    if (m_tunnel)
        tunnel()->onReadyRead();
    else if (m_call)
        m_call->onReadyRead();
    else if (m_idleIn)
        m_idleIn->dropIdle(this); // an idle connection that hears anything (stray bytes) is useless
}

void SocketLink::raceLost(TransportError error, const QString &message) {
    if (m_call)
        m_call->connectFailed(error, message);
}

void SocketLink::onError(QAbstractSocket::SocketError error) {
    if (m_tunnel)
        tunnel()->onError(error);
    else if (m_call)
        m_call->onSocketError(error);
}

void SocketLink::onDisconnected() {
    if (m_tunnel)
        tunnel()->onDisconnected();
    else if (m_call)
        m_call->onDisconnected();
    else if (m_idleIn)
        m_idleIn->dropIdle(this); // the server closed it
}

namespace {

// Whether the peer has already ended an idle connection whose news the event loop has not handled
// yet: an end (FIN) or reset waiting in the kernel, or, on a plain connection, stray bytes. A request
// sent on it would die at once, and could only be retried on the guess that nobody read it.
bool peerGone(QAbstractSocket *socket) {
    const qintptr fd = socket->socketDescriptor();
    if (fd < 0)
        return false;
    char c;
    const ssize_t n = ::recv(int(fd), &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) // a TLS connection's bytes may be a session ticket that its socket has not read yet
        return !qobject_cast<QSslSocket *>(socket);
    return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

} // namespace

bool SocketTransport::idleTooLong(const SocketLink *link) const {
    return clock().nowMs() - link->m_idleSinceMs > link->m_reuseWithinMs;
}

SocketLink *SocketTransport::takeIdle(const QString &hostKey, QObject *owner) {
    auto it = m_idle.find(hostKey);
    while (it != m_idle.end() && !it->isEmpty()) {
        SocketLink *link = it->takeLast(); // most recently used: least likely to have timed out
        QAbstractSocket *s = link->socket();
        link->release();
        if (s->state() == QAbstractSocket::ConnectedState && s->bytesAvailable() == 0 && !idleTooLong(link) &&
            !peerGone(s)) {
            s->setParent(owner);
            return link;
        }
        s->abort();
        s->deleteLater();
    }
    return nullptr;
}

void SocketTransport::setExtraCaCertificates(const CaTable &table) {
    if (table == m_extraCa)
        return;
    m_extraCa = table;
    // A pooled TLS connection was verified under the old table: a CA taken out of it (no longer
    // trusted) must not go on serving until the server closes the connection.
    closeIdle(true);
}

void SocketTransport::closeIdle(bool httpsOnly) {
    for (auto it = m_idle.begin(); it != m_idle.end(); ++it) {
        if (httpsOnly && !it.key().startsWith(QLatin1String("https:")))
            continue;
        for (SocketLink *link : std::as_const(*it)) {
            QAbstractSocket *s = link->socket();
            link->release();
            s->abort();
            s->deleteLater();
        }
        it->clear();
    }
}

// Connects a socket to a host name's addresses as RFC 8305 asks (SocketTransport::kNextAddressAfterMs):
// each address on a descriptor of its own, started when the one before failed or after the stagger,
// the first connected handed to the socket (setSocketDescriptor), the others closed. A child of the
// socket: aborting the socket ends the race, and its descriptors with it. `startTls`: the TLS
// handshake with `host` starts on the won connection (not on one to a proxy, which is asked for a
// tunnel first).
class AddressRace final : public QObject {
public:
    AddressRace(SocketLink *link, const QString &host, quint16 port, bool startTls, SocketTransport &transport)
        : QObject(link->socket()), m_link(link), m_host(host), m_port(port), m_startTls(startTls),
          m_clock(transport.clock()) {
        link->m_race = this;
        if (transport.m_resolver) {
            // Said from the loop, as the system's lookup is.
            m_addresses = transport.m_resolver(host);
            m_timer = m_clock.schedule(0, [this] {
                m_timer = 0;
                onAddresses(m_addresses.isEmpty() ? QStringLiteral("no address") : QString());
            });
        } else {
            m_lookupId = QHostInfo::lookupHost(host, this, [this](const QHostInfo &info) {
                m_lookupId = -1;
                m_addresses = info.addresses();
                onAddresses(info.error() == QHostInfo::NoError ? QString() : info.errorString());
            });
        }
    }
    ~AddressRace() override {
        if (m_lookupId >= 0)
            QHostInfo::abortHostLookup(m_lookupId);
        if (m_timer)
            m_clock.cancel(m_timer);
        for (const Pending &p : m_pending) {
            delete p.notifier;
            ::close(p.fd);
        }
    }
    Q_DISABLE_COPY_MOVE(AddressRace)

private:
    struct Pending {
        int fd;
        QSocketNotifier *notifier;
        QHostAddress address;
    };

    void onAddresses(const QString &lookupError) {
        if (ended())
            return;
        if (m_addresses.isEmpty()) {
            // A lookup that could not open what it reads (/etc/hosts, a socket to the resolver) for
            // want of a descriptor: the gateway's own shortage (probe V2 F4).
            if (SocketUpstreamCall::outOfDescriptors())
                return lose(TransportError::Local, QString());
            return lose(TransportError::HostNotFound,
                        lookupError.isEmpty() || lookupError == QLatin1String("Host not found")
                            ? QStringLiteral("Host %1 not found").arg(m_host)
                            : QStringLiteral("Host %1 not found: %2").arg(m_host, lookupError));
        }
        // RFC 8305 section 4: the families alternate, the resolver's first one first.
        QList<QHostAddress> first, other;
        const auto family = m_addresses.first().protocol();
        for (const QHostAddress &a : std::as_const(m_addresses))
            (a.protocol() == family ? first : other).append(a);
        m_addresses.clear();
        for (qsizetype i = 0; i < std::max(first.size(), other.size()); ++i) {
            if (i < first.size())
                m_addresses.append(first[i]);
            if (i < other.size())
                m_addresses.append(other[i]);
        }
        startNext();
    }

    void startNext() {
        if (m_timer)
            m_clock.cancel(std::exchange(m_timer, 0));
        while (m_next < m_addresses.size()) {
            const QHostAddress address = m_addresses[m_next++];
            sockaddr_storage sa{};
            socklen_t len = 0;
            if (!toSockaddr(address, m_port, sa, len))
                continue;
            const int fd = ::socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (fd < 0) {
                if (errno == EMFILE || errno == ENFILE)
                    return lose(TransportError::Local, QString());
                m_lastError = errno;
                continue;
            }
            if (::connect(fd, reinterpret_cast<const sockaddr *>(&sa), len) == 0)
                return win(fd);
            if (errno != EINPROGRESS) {
                m_lastError = errno;
                ::close(fd);
                continue; // refused or unreachable at once: the next address now
            }
            auto *notifier = new QSocketNotifier(fd, QSocketNotifier::Write, this);
            connect(notifier, &QSocketNotifier::activated, this, [this, fd] { onWritable(fd); });
            m_pending.append({fd, notifier, address});
            if (m_next < m_addresses.size())
                m_timer = m_clock.schedule(SocketTransport::kNextAddressAfterMs, [this] {
                    m_timer = 0;
                    if (!ended())
                        startNext();
                });
            return;
        }
        if (m_pending.isEmpty())
            lose(m_lastError == ECONNREFUSED ? TransportError::Refused
                 : m_lastError == ETIMEDOUT  ? TransportError::Timeout
                                             : TransportError::Other,
                 QStringLiteral("no connection to %1 (%2 address%3: %4)")
                     .arg(m_host)
                     .arg(m_addresses.size())
                     .arg(m_addresses.size() == 1 ? QString() : QStringLiteral("es"))
                     .arg(m_lastError ? QString::fromLocal8Bit(::strerror(m_lastError))
                                      : QStringLiteral("none of them of a family this host speaks")));
    }

    bool ended() const { return m_link->m_race.data() != this; } // its call let go (SocketLink::release)

    void onWritable(int fd) {
        if (ended())
            return;
        int error = 0;
        socklen_t len = sizeof error;
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0)
            error = errno;
        if (error == 0)
            return win(fd);
        m_lastError = error;
        for (qsizetype i = 0; i < m_pending.size(); ++i)
            if (m_pending[i].fd == fd) {
                retire(m_pending[i].notifier);
                ::close(fd);
                m_pending.removeAt(i);
                break;
            }
        startNext(); // a failed address hands on at once
    }

    // A notifier may be the one whose signal runs now: disabled, and deleted from the loop.
    static void retire(QSocketNotifier *notifier) {
        notifier->setEnabled(false);
        notifier->deleteLater();
    }

    void win(int fd) {
        for (const Pending &p : std::as_const(m_pending)) {
            retire(p.notifier);
            if (p.fd != fd)
                ::close(p.fd);
        }
        m_pending.clear();
        const int on = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        QAbstractSocket *socket = m_link->socket();
        SocketLink *link = m_link;
        const QString host = m_host;
        const bool startTls = m_startTls;
        deleteLater();
        link->m_race = nullptr;
        if (!socket->setSocketDescriptor(fd, QAbstractSocket::ConnectedState, QIODevice::ReadWrite)) {
            ::close(fd); // Qt leaves a descriptor it could not take open
            return link->raceLost(TransportError::Other, socket->errorString());
        }
        http::useSmallReadChunks(socket);
        if (auto *ssl = qobject_cast<QSslSocket *>(socket))
            for (QTcpSocket *plain : ssl->findChildren<QTcpSocket *>(Qt::FindDirectChildrenOnly))
                http::useSmallReadChunks(plain);
        if (startTls) {
            auto *ssl = static_cast<QSslSocket *>(socket);
            // The name, not the address, is what the certificate must name and what SNI sends.
            ssl->setPeerVerifyName(host);
            ssl->startClientEncryption(); // SocketLink::onConnected on `encrypted`
        } else {
            link->onConnected();
        }
    }

    void lose(TransportError error, const QString &message) {
        SocketLink *link = m_link;
        link->m_race = nullptr;
        deleteLater();
        link->raceLost(error, message);
    }

    static bool toSockaddr(const QHostAddress &address, quint16 port, sockaddr_storage &sa, socklen_t &len) {
        if (address.protocol() == QAbstractSocket::IPv4Protocol) {
            auto *in = reinterpret_cast<sockaddr_in *>(&sa);
            in->sin_family = AF_INET;
            in->sin_port = htons(port);
            in->sin_addr.s_addr = htonl(address.toIPv4Address());
            len = sizeof(sockaddr_in);
            return true;
        }
        if (address.protocol() == QAbstractSocket::IPv6Protocol) {
            auto *in6 = reinterpret_cast<sockaddr_in6 *>(&sa);
            in6->sin6_family = AF_INET6;
            in6->sin6_port = htons(port);
            const Q_IPV6ADDR bytes = address.toIPv6Address();
            std::memcpy(&in6->sin6_addr, bytes.c, sizeof bytes.c);
            in6->sin6_scope_id = address.scopeId().toUInt();
            len = sizeof(sockaddr_in6);
            return true;
        }
        return false;
    }

    SocketLink *m_link;
    QString m_host;
    quint16 m_port;
    bool m_startTls;
    util::Clock &m_clock;
    int m_lookupId = -1;
    util::Clock::TimerId m_timer = 0;
    QList<QHostAddress> m_addresses;
    qsizetype m_next = 0;
    QList<Pending> m_pending;
    int m_lastError = 0;
};

SocketLink *SocketTransport::open(const QUrl &url, const QString &trust, const std::optional<ProxyServer> &proxy,
                                  QObject *owner) {
    ++m_opened;
    const bool tls = url.scheme().compare(QLatin1String("https"), Qt::CaseInsensitive) == 0;
    QAbstractSocket *s = nullptr;
    if (tls) {
        auto *ssl = new QSslSocket(owner);
        QSslConfiguration conf = ssl->sslConfiguration();
        conf.setAllowedNextProtocols({QSslConfiguration::NextProtocolHttp1_1});
        if (const auto ca = trust.isEmpty() ? QList<QSslCertificate>() : m_extraCa.value(trust); !ca.isEmpty())
            conf.addCaCertificates(ca); // in addition to the system store
        ssl->setSslConfiguration(conf);
        s = ssl;
    } else {
        s = new QTcpSocket(owner);
    }
    // Qt's own proxy support (the application proxy, the system's) is not used: a proxy is ours to
    // choose (proxyFor), and an address race connects raw descriptors that Qt's proxy engines never see.
    s->setProxy(QNetworkProxy::NoProxy);
    // Nagle off as soon as the socket exists; set again on connect (Qt applies options to a live descriptor).
    // Connected before the link, so it runs before the request is written.
    connect(s, &QAbstractSocket::connected, s, [s] { s->setSocketOption(QAbstractSocket::LowDelayOption, 1); });
    auto *link = new SocketLink(s);
    const quint16 port = quint16(url.port(tls ? 443 : 80));
    // Through a proxy, the connection is made to the proxy; an https:// provider's TLS starts once
    // the proxy has made the tunnel (ProxyTunnel).
    const QString host = proxy ? proxy->host : url.host();
    const quint16 hostPort = proxy ? proxy->port : port;
    const bool startTls = tls && !proxy;
    if (proxy) {
        link->m_reachingProxy = true;
        if (tls)
            new ProxyTunnel(link, url.host(), port, proxy->authorization);
    }
    if (QHostAddress literal; !literal.setAddress(host)) {
        new AddressRace(link, host, hostPort, startTls, *this); // opens the device when it wins
        return link;
    }
    if (startTls)
        static_cast<QSslSocket *>(s)->connectToHostEncrypted(host, hostPort);
    else
        s->connectToHost(host, hostPort);
    // A pooled or streaming upstream connection holds at most a small read block between reads
    // (core/http/socket_read.h); connectToHost() has opened the device. A TLS socket reads the
    // encrypted bytes through a plain socket of its own (a child QTcpSocket), which keeps its
    // own block: both get the small one.
    http::useSmallReadChunks(s);
    if (tls)
        for (QTcpSocket *plain : s->findChildren<QTcpSocket *>(Qt::FindDirectChildrenOnly))
            http::useSmallReadChunks(plain);
    return link;
}

void SocketTransport::setProxies(const ProxyTable &table) {
    QHash<QString, std::optional<ProxyServer>> overrides;
    for (auto it = table.begin(); it != table.end(); ++it)
        overrides.insert(it.key(), it.value() == kNoProxy ? std::nullopt : parseProxyUrl(it.value()));
    if (overrides == m_proxyOverrides)
        return;
    m_proxyOverrides = std::move(overrides);
    m_proxyRoutes.clear();
    // An idle connection was made through the old choice (pooled per proxy): closed rather than kept
    // for a request that no longer goes that way.
    closeIdle(false);
}

void SocketTransport::setProxyEnvironment(const ProxySettings &settings) {
    m_proxyEnvironment = settings;
    m_proxyRoutes.clear();
    closeIdle(false);
}

std::optional<ProxyServer> SocketTransport::proxyFor(const QString &hostKey, const QUrl &url) {
    if (!m_proxyEnvironment.any() && m_proxyOverrides.isEmpty())
        return std::nullopt;
    auto it = m_proxyRoutes.constFind(hostKey);
    if (it == m_proxyRoutes.constEnd()) {
        const auto own = m_proxyOverrides.constFind(hostKey);
        it =
            m_proxyRoutes.insert(hostKey, own != m_proxyOverrides.constEnd() ? *own : m_proxyEnvironment.proxyFor(url));
    }
    return *it;
}

void SocketTransport::giveBack(const QString &hostKey, SocketLink *link) {
    QAbstractSocket *socket = link->socket();
    auto &list = m_idle[hostKey];
    if (list.size() >= m_maxIdlePerHost || socket->state() != QAbstractSocket::ConnectedState) {
        link->release();
        socket->abort();
        socket->deleteLater();
        return;
    }
    socket->setParent(this);
    socket->setReadBufferSize(0);
    // The oldest first: those idle too long are closed now rather than held until the host is asked again.
    while (!list.isEmpty() && idleTooLong(list.first())) {
        SocketLink *old = list.takeFirst();
        old->release();
        old->socket()->abort();
        old->socket()->deleteLater();
    }
    link->m_idleSinceMs = clock().nowMs();
    list.append(link);
    link->holdIdle(this);
}

void SocketTransport::dropIdle(SocketLink *link) {
    for (auto &list : m_idle)
        if (list.removeOne(link))
            break;
    link->release();
    QAbstractSocket *socket = link->socket();
    socket->abort();
    socket->deleteLater();
}

} // namespace sw::upstream

namespace sw::upstream {

namespace {

// Acknowledge what was read at once instead of after the delayed-ACK timer (Linux: 40 ms
// or more on a connection in interactive mode). A server that writes the body's end in a
// small segment of its own, with Nagle on (the default), holds it back until the previous
// segment is acknowledged: without this, that end arrives 40 ms later, at the edge of
// the drain's window, and the connection is lost for nothing.
void ackNow(QAbstractSocket *socket) {
#ifdef TCP_QUICKACK
    const int on = 1;
    const auto fd = socket->socketDescriptor();
    if (fd >= 0)
        ::setsockopt(int(fd), IPPROTO_TCP, TCP_QUICKACK, &on, sizeof on);
#else
    Q_UNUSED(socket);
#endif
}

} // namespace

void SocketTransport::drain(const QString &hostKey, SocketLink *link, const Http1ResponseParser &parser) {
    ++m_draining;
    link->release(); // the drain listens by itself below
    QAbstractSocket *socket = link->socket();
    // State shared by the handlers below; the timer is the socket's child, so it goes with it.
    struct Drain {
        Http1ResponseParser parser;
        qint64 bytes = 0;
        bool over = false;
    };
    auto state = std::make_shared<Drain>(Drain{parser, 0, false});
    socket->setReadBufferSize(0);
    ackNow(socket);
    auto *timer = new QTimer(socket);
    timer->setSingleShot(true);
    auto end = [this, hostKey, link, socket, state, timer](bool reusable) {
        if (state->over)
            return;
        state->over = true;
        --m_draining;
        timer->stop();
        timer->deleteLater();
        socket->disconnect(this);
        if (reusable) {
            giveBack(hostKey, link);
            return;
        }
        socket->abort();
        socket->deleteLater();
    };
    auto read = [socket, state, end] {
        // waitForReadyRead in the timer below emits readyRead itself: a drain that ended (and
        // aborted the socket) there is not read again (Qt's "device not open", once a connection).
        if (state->over)
            return;
        const QByteArray bytes = socket->readAll();
        state->bytes += bytes.size();
        state->parser.feed(bytes); // the body is discarded: nobody listens any more
        const auto st = state->parser.state();
        if (st == Http1ResponseParser::State::Done)
            end(state->parser.keepAlive() && state->parser.leftover().isEmpty());
        else if (st == Http1ResponseParser::State::Error || state->bytes > kDrainBytes)
            end(false);
    };
    socket->setParent(this);
    connect(timer, &QTimer::timeout, this, [socket, state, end, read] {
        // The end may be in the kernel's buffer with its notification not yet handled
        // (timers can run first in a busy loop iteration): look once more without blocking.
        if (socket->waitForReadyRead(0))
            read();
        if (!state->over)
            end(false);
    });
    connect(socket, &QAbstractSocket::readyRead, this, read);
    connect(socket, &QAbstractSocket::disconnected, this, [end] { end(false); });
    connect(socket, &QAbstractSocket::errorOccurred, this, [end] { end(false); });
    timer->start(kDrainMs);
    if (socket->bytesAvailable() > 0)
        read();
}

} // namespace sw::upstream
