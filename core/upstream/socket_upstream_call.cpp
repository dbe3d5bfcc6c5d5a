#include "core/upstream/socket_upstream_call.h"

#include "core/upstream/socket_transport.h"

#include <QSslSocket>

namespace sw::upstream {

SocketUpstreamCall::SocketUpstreamCall(SocketTransport *transport, const HttpRequest &request, QObject *parent)
    : UpstreamCall(parent), m_transport(transport), m_request(request),
      m_hostKey(SocketTransport::hostKeyOf(request.url)), m_parser(request.method == "HEAD") {
    begin(true);
}

SocketUpstreamCall::~SocketUpstreamCall() {
    m_done = true;
    releaseSocket(false); // a running exchange dies with its connection
}

void SocketUpstreamCall::begin(bool allowReuse) {
    if (!m_transport) {
        complete({TransportError::Other, QStringLiteral("transport gone")}, false);
        return;
    }
    QAbstractSocket *socket = allowReuse ? m_transport->takeIdle(m_hostKey, this) : nullptr;
    m_reused = socket != nullptr;
    if (!socket)
        socket = m_transport->open(m_request.url, this);
    attach(socket);
    if (m_reused)
        sendRequest();
}

void SocketUpstreamCall::attach(QAbstractSocket *socket) {
    m_socket = socket;
    m_gotBytes = false;
    m_sent = false;
    socket->setReadBufferSize(m_paused ? kPausedReadBuffer : 0);
    if (auto *ssl = qobject_cast<QSslSocket *>(socket))
        connect(ssl, &QSslSocket::encrypted, this, &SocketUpstreamCall::sendRequest);
    else
        connect(socket, &QAbstractSocket::connected, this, &SocketUpstreamCall::sendRequest);
    connect(socket, &QAbstractSocket::readyRead, this, &SocketUpstreamCall::onReadyRead);
    connect(socket, &QAbstractSocket::errorOccurred, this, &SocketUpstreamCall::onSocketError);
    connect(socket, &QAbstractSocket::disconnected, this, &SocketUpstreamCall::onDisconnected);
}

void SocketUpstreamCall::sendRequest() {
    if (m_sent || !m_socket)
        return;
    m_sent = true;
    const QUrl &url = m_request.url;
    QByteArray target = url.path(QUrl::FullyEncoded).toLatin1();
    if (target.isEmpty())
        target = "/";
    if (url.hasQuery())
        target += '?' + url.query(QUrl::FullyEncoded).toLatin1();
    QByteArray head;
    head.reserve(256 + m_request.body.size());
    head += m_request.method + ' ' + target + " HTTP/1.1\r\n";
    bool hasHost = false;
    for (const auto &h : m_request.headers) {
        const QByteArray name = h.first.toLower();
        // Framing is ours to decide.
        if (name == "content-length" || name == "transfer-encoding" || name == "connection")
            continue;
        hasHost |= name == "host";
        head += h.first + ": " + h.second + "\r\n";
    }
    if (!hasHost) {
        const bool tls = url.scheme().compare(QLatin1String("https"), Qt::CaseInsensitive) == 0;
        const int port = url.port(-1);
        head += "Host: " + url.host(QUrl::FullyEncoded).toLatin1();
        if (port != -1 && port != (tls ? 443 : 80))
            head += ':' + QByteArray::number(port);
        head += "\r\n";
    }
    if (!m_request.body.isEmpty() || (m_request.method != "GET" && m_request.method != "HEAD"))
        head += "Content-Length: " + QByteArray::number(m_request.body.size()) + "\r\n";
    head += "\r\n";
    head += m_request.body;
    m_socket->write(head); // one write: head and body leave in as few segments as possible
    // Sent now rather than on the event loop's next turn: the upstream starts on it one poll round earlier.
    m_socket->flush();
}

void SocketUpstreamCall::onReadyRead() {
    if (m_done || !m_socket || m_paused)
        return; // paused: the bytes wait in the socket's bounded buffer
    consume(m_socket->readAll());
}

void SocketUpstreamCall::setReadPaused(bool paused) {
    if (m_done || paused == m_paused)
        return;
    m_paused = paused;
    if (m_socket)
        m_socket->setReadBufferSize(paused ? kPausedReadBuffer : 0);
    if (!paused) // queued: the caller is not re-entered from inside its own setReadPaused(false)
        QMetaObject::invokeMethod(this, &SocketUpstreamCall::resumeReading, Qt::QueuedConnection);
}

void SocketUpstreamCall::resumeReading() {
    if (m_done || m_paused || !m_socket)
        return;
    if (m_socket->bytesAvailable() > 0)
        onReadyRead();
    if (m_done || m_paused)
        return;
    if (m_errorWhilePaused) {
        const auto error = *m_errorWhilePaused;
        m_errorWhilePaused.reset();
        onSocketError(error);
    } else if (m_closedWhilePaused) {
        m_closedWhilePaused = false;
        onDisconnected();
    }
}

void SocketUpstreamCall::consume(QByteArrayView bytes) {
    if (bytes.isEmpty())
        return;
    m_gotBytes = true;
    const Http1ResponseParser::Output out = m_parser.feed(bytes);
    if (m_parser.state() == Http1ResponseParser::State::Error) {
        complete({errorFor(m_parser.failure()), QStringLiteral("bad HTTP response: ") + m_parser.errorString()}, false);
        return;
    }
    if (out.done) {
        // The response is whole: the connection goes back to the pool before anyone
        // hears of it, so a caller that stops at the last event it needs (and aborts
        // or deletes the call from that slot) does not cost a new connection.
        releaseSocket(m_parser.keepAlive() && m_parser.leftover().isEmpty());
    }
    if (out.headComplete && !m_started) {
        m_started = true;
        Q_EMIT responseStarted(m_parser.status(), m_parser.headers());
        if (m_done)
            return; // aborted from a responseStarted slot
    }
    if (!out.body.isEmpty()) {
        Q_EMIT bodyData(out.body);
        if (m_done)
            return;
    }
    if (out.done)
        complete({}, false); // the socket is already released
}

void SocketUpstreamCall::onSocketError(QAbstractSocket::SocketError error) {
    if (m_done || !m_socket)
        return;
    if (m_paused) {
        if (!m_errorWhilePaused)
            m_errorWhilePaused = error;
        return;
    }
    if (error == QAbstractSocket::RemoteHostClosedError) {
        onDisconnected();
        return;
    }
    connectionLost(errorFor(error), m_socket->errorString());
}

void SocketUpstreamCall::onDisconnected() {
    if (m_done || !m_socket)
        return;
    if (m_paused) {
        m_closedWhilePaused = true;
        return;
    }
    consume(m_socket->readAll()); // bytes that arrived with the FIN
    if (m_done)
        return;
    if (m_parser.finishOnClose()) {
        complete({}, false);
        return;
    }
    connectionLost(TransportError::Reset, QStringLiteral("connection closed by upstream"));
}

void SocketUpstreamCall::connectionLost(TransportError error, const QString &message) {
    if (m_reused && !m_gotBytes && (error == TransportError::Reset || error == TransportError::Other)) {
        // The server dropped an idle keep-alive connection as we reused it.
        releaseSocket(false);
        begin(false);
        return;
    }
    complete({error, message}, false);
}

void SocketUpstreamCall::complete(const TransportResult &result, bool reusable) {
    if (m_done)
        return;
    m_done = true;
    releaseSocket(reusable && result.error == TransportError::None);
    Q_EMIT finished(result);
}

void SocketUpstreamCall::releaseSocket(bool reusable) {
    if (!m_socket)
        return;
    QAbstractSocket *s = m_socket;
    m_socket = nullptr;
    s->disconnect(this);
    if (reusable && m_transport) {
        m_transport->giveBack(m_hostKey, s);
        return;
    }
    s->abort(); // closes at once; the upstream sees the connection go
    s->deleteLater();
}

void SocketUpstreamCall::abort() {
    if (m_done)
        return;
    m_done = true;
    QAbstractSocket *s = m_socket;
    if (s && m_transport && m_started && m_parser.state() == Http1ResponseParser::State::Body &&
        m_parser.selfDelimited() && m_parser.keepAlive() && !m_closedWhilePaused && !m_errorWhilePaused) {
        // A caller often stops at the last event it needs, a moment before the body's
        // own end (the chunked terminator) arrives: let the transport read that end for
        // a short, bounded while and keep the connection, instead of reconnecting for
        // the next request. A body that goes on is closed when the bound is reached.
        m_socket = nullptr;
        s->disconnect(this);
        m_transport->drain(m_hostKey, s, m_parser);
    } else {
        releaseSocket(false);
    }
    Q_EMIT finished(TransportResult{TransportError::Aborted, QStringLiteral("aborted")});
}

TransportError SocketUpstreamCall::errorFor(QAbstractSocket::SocketError error) {
    switch (error) {
    case QAbstractSocket::ConnectionRefusedError:
        return TransportError::Refused;
    case QAbstractSocket::HostNotFoundError:
        return TransportError::HostNotFound;
    case QAbstractSocket::SslHandshakeFailedError:
    case QAbstractSocket::SslInternalError:
    case QAbstractSocket::SslInvalidUserDataError:
        return TransportError::Tls;
    case QAbstractSocket::RemoteHostClosedError:
        return TransportError::Reset;
    case QAbstractSocket::SocketTimeoutError:
        return TransportError::Timeout;
    default:
        return TransportError::Other;
    }
}

TransportError SocketUpstreamCall::errorFor(Http1ResponseParser::Failure failure) {
    return failure == Http1ResponseParser::Failure::TooLarge ? TransportError::TooLarge : TransportError::Protocol;
}

} // namespace sw::upstream
