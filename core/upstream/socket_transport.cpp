#include "core/upstream/socket_transport.h"

#include "core/http/socket_read.h"
#include "core/upstream/socket_upstream_call.h"

#include <QEvent>
#include <QNetworkProxy>
#include <QSocketNotifier>
#include <QSslConfiguration>
#include <QSslSocket>
#include <QTcpSocket>
#include <QTimer>

#include <algorithm>
#include <cerrno>
#include <memory>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

namespace sw::upstream {

SocketTransport::SocketTransport(QObject *parent) : QObject(parent) {}

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
    if (auto *ssl = qobject_cast<QSslSocket *>(socket))
        connect(ssl, &QSslSocket::encrypted, this, &SocketLink::onConnected);
    else
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
}

void SocketLink::onConnected() {
    watchReadNotifier();
    if (m_call)
        m_call->sendRequest();
}

void SocketLink::onReadyRead() {
    if (m_call)
        m_call->onReadyRead();
    else if (m_idleIn)
        m_idleIn->dropIdle(this); // an idle connection that hears anything (stray bytes) is useless
}

void SocketLink::onError(QAbstractSocket::SocketError error) {
    if (m_call)
        m_call->onSocketError(error);
}

void SocketLink::onDisconnected() {
    if (m_call)
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
    const util::Clock &c = clock();
    const qint64 idle = std::max(c.nowMs() - link->m_idleSinceMs, c.epochMs() - link->m_idleSinceEpochMs);
    return idle > link->m_reuseWithinMs;
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
    for (auto it = m_idle.begin(); it != m_idle.end(); ++it) {
        if (!it.key().startsWith(QLatin1String("https:")))
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

SocketLink *SocketTransport::open(const QUrl &url, const QString &trust, QObject *owner) {
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
    s->setProxy(QNetworkProxy::NoProxy); // the gateway talks to providers directly
    // Nagle off as soon as the socket exists; set again on connect (Qt applies options to a live descriptor).
    // Connected before the link, so it runs before the request is written.
    connect(s, &QAbstractSocket::connected, s, [s] { s->setSocketOption(QAbstractSocket::LowDelayOption, 1); });
    auto *link = new SocketLink(s);
    const quint16 port = quint16(url.port(tls ? 443 : 80));
    if (tls)
        static_cast<QSslSocket *>(s)->connectToHostEncrypted(url.host(), port);
    else
        s->connectToHost(url.host(), port);
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
    link->m_idleSinceEpochMs = clock().epochMs();
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
