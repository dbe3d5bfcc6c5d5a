#include "core/upstream/socket_transport.h"

#include "core/upstream/socket_upstream_call.h"

#include <QNetworkProxy>
#include <QSslConfiguration>
#include <QSslSocket>
#include <QTcpSocket>
#include <QTimer>

#include <memory>

namespace sw::upstream {

SocketTransport::SocketTransport(QObject *parent) : QObject(parent) {}

SocketTransport::~SocketTransport() = default; // idle sockets are children

UpstreamCall *SocketTransport::start(const HttpRequest &request, QObject *parent) {
    return new SocketUpstreamCall(this, request, parent);
}

int SocketTransport::idleConnections() const {
    int n = 0;
    for (const auto &list : m_idle)
        n += int(list.size());
    return n;
}

QAbstractSocket *SocketTransport::takeIdle(const QString &hostKey, QObject *owner) {
    auto it = m_idle.find(hostKey);
    while (it != m_idle.end() && !it->isEmpty()) {
        QAbstractSocket *s = it->takeLast(); // most recently used: least likely to have timed out
        s->disconnect(this);
        if (s->state() == QAbstractSocket::ConnectedState && s->bytesAvailable() == 0) {
            s->setParent(owner);
            return s;
        }
        s->abort();
        s->deleteLater();
    }
    return nullptr;
}

QAbstractSocket *SocketTransport::open(const QUrl &url, QObject *owner) {
    ++m_opened;
    const bool tls = url.scheme().compare(QLatin1String("https"), Qt::CaseInsensitive) == 0;
    QAbstractSocket *s = nullptr;
    if (tls) {
        auto *ssl = new QSslSocket(owner);
        QSslConfiguration conf = ssl->sslConfiguration();
        conf.setAllowedNextProtocols({QSslConfiguration::NextProtocolHttp1_1});
        if (const auto ca = m_extraCa.value(hostKeyOf(url)); !ca.isEmpty())
            conf.addCaCertificates(ca); // in addition to the system store
        ssl->setSslConfiguration(conf);
        s = ssl;
    } else {
        s = new QTcpSocket(owner);
    }
    s->setProxy(QNetworkProxy::NoProxy); // the gateway talks to providers directly
    // Nagle off as soon as the socket exists; set again on connect (Qt applies options to a live descriptor).
    connect(s, &QAbstractSocket::connected, s, [s] { s->setSocketOption(QAbstractSocket::LowDelayOption, 1); });
    const quint16 port = quint16(url.port(tls ? 443 : 80));
    if (tls)
        static_cast<QSslSocket *>(s)->connectToHostEncrypted(url.host(), port);
    else
        s->connectToHost(url.host(), port);
    return s;
}

void SocketTransport::giveBack(const QString &hostKey, QAbstractSocket *socket) {
    auto &list = m_idle[hostKey];
    if (list.size() >= m_maxIdlePerHost || socket->state() != QAbstractSocket::ConnectedState) {
        socket->abort();
        socket->deleteLater();
        return;
    }
    socket->setParent(this);
    socket->setReadBufferSize(0);
    list.append(socket);
    // An idle connection that hears anything (the server closing it, or stray bytes) is useless.
    connect(socket, &QAbstractSocket::disconnected, this, [this, socket] { dropIdle(socket); });
    connect(socket, &QAbstractSocket::readyRead, this, [this, socket] { dropIdle(socket); });
}

void SocketTransport::dropIdle(QAbstractSocket *socket) {
    for (auto &list : m_idle)
        if (list.removeOne(socket))
            break;
    socket->disconnect(this);
    socket->abort();
    socket->deleteLater();
}

} // namespace sw::upstream

namespace sw::upstream {

void SocketTransport::drain(const QString &hostKey, QAbstractSocket *socket, const Http1ResponseParser &parser) {
    ++m_draining;
    // State shared by the handlers below; the timer is the socket's child, so it goes with it.
    struct Drain {
        Http1ResponseParser parser;
        qint64 bytes = 0;
        bool over = false;
    };
    auto state = std::make_shared<Drain>(Drain{parser, 0, false});
    socket->setReadBufferSize(0);
    auto *timer = new QTimer(socket);
    timer->setSingleShot(true);
    auto end = [this, hostKey, socket, state, timer](bool reusable) {
        if (state->over)
            return;
        state->over = true;
        --m_draining;
        timer->stop();
        timer->deleteLater();
        socket->disconnect(this);
        if (reusable) {
            giveBack(hostKey, socket);
            return;
        }
        socket->abort();
        socket->deleteLater();
    };
    auto read = [socket, state, end] {
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
