#include "core/upstream/socket_upstream_call.h"

#include "core/http/socket_write.h"
#include "core/upstream/socket_transport.h"

#include <QSslSocket>
#include <QTimer>

#include <cerrno>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <utility>

namespace sw::upstream {

SocketUpstreamCall::SocketUpstreamCall(SocketTransport *transport, const HttpRequest &request, QObject *parent)
    : UpstreamCall(parent), m_transport(transport), m_request(request), m_urlParts(urlParts(request.url)),
      m_poolKey(request.trust.isEmpty() ? m_urlParts.hostKey : m_urlParts.hostKey + QLatin1Char('\n') + request.trust),
      m_parser(request.method == "HEAD") {
    if (transport) {
        m_proxy = transport->proxyFor(m_urlParts.hostKey, request.url);
        // A connection through a proxy is no connection straight to the host, nor through another
        // proxy (or the same one as another user).
        if (m_proxy)
            m_poolKey +=
                QLatin1Char('\n') + m_proxy->name() + QLatin1Char('\n') + QString::fromLatin1(m_proxy->authorization);
        m_absoluteForm = m_proxy && !m_urlParts.hostKey.startsWith(QLatin1String("https:"));
    }
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
    m_clock = &m_transport->clock();
    SocketLink *link = allowReuse ? m_transport->takeIdle(m_poolKey, this) : nullptr;
    m_reused = link != nullptr;
    if (!link) {
        link = m_transport->open(m_request.url, m_request.trust, m_proxy, this);
        const int limit = m_transport->connectTimeoutMs();
        m_connectTimer = m_clock->schedule(limit, [this, limit] {
            m_connectTimer = 0;
            if (m_done || !m_socket || m_sent)
                return;
            // Connected, yet not encrypted: the server took the connection and never finished the
            // handshake (the place to look is its TLS, not the network).
            const auto *tls = qobject_cast<QSslSocket *>(m_socket);
            const bool handshaking = tls && tls->state() == QAbstractSocket::ConnectedState && !tls->isEncrypted() &&
                                     !m_link->reachingProxy();
            complete({TransportError::Timeout,
                      (handshaking               ? QStringLiteral("TLS handshake with %1 not completed within %2 ms")
                       : m_link->reachingProxy() ? QStringLiteral("no connection to %1 through it within %2 ms")
                                                 : QStringLiteral("no connection to %1 within %2 ms"))
                          .arg(m_urlParts.hostKey)
                          .arg(limit)},
                     false);
        });
    }
    attach(link);
    if (m_reused)
        sendRequest();
    else if (m_socket->state() == QAbstractSocket::UnconnectedState && !link->racing()) {
        // Said from the loop: begin() runs in the constructor, before anyone hears `finished`.
        cancelConnectTimer();
        m_connectTimer = m_clock->schedule(0, [this] {
            m_connectTimer = 0;
            failedToOpen();
        });
    }
}

void SocketUpstreamCall::failedToOpen() {
    if (m_done || !m_socket)
        return;
    // connectToHost() to an address failed at once, before this call held the link, so its error
    // signal reached nobody: the try waited out the connect timeout and marked the host
    // (probe V2 F4). A process out of descriptors is the gateway's own trouble, not the host's.
    const QAbstractSocket::SocketError error = m_socket->error();
    if (error == QAbstractSocket::SocketResourceError || outOfDescriptors())
        return failForWantOfDescriptors();
    complete({errorFor(error), m_socket->errorString()}, false);
}

void SocketUpstreamCall::connectFailed(TransportError error, const QString &message) {
    if (m_done || !m_socket)
        return;
    if (error == TransportError::Local)
        return failForWantOfDescriptors();
    complete({error, message}, false);
}

bool SocketUpstreamCall::outOfDescriptors() {
    // Qt's error does not always say it (a lookup that could not open /etc/hosts is "host not
    // found"): a socket of our own, made and closed, does.
    const int probe = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe >= 0) {
        ::close(probe);
        return false;
    }
    return errno == EMFILE || errno == ENFILE;
}

void SocketUpstreamCall::failForWantOfDescriptors() {
    complete({TransportError::Local,
              QStringLiteral("the gateway is out of file descriptors (its open-files limit): no connection to %1")
                  .arg(m_urlParts.hostKey)},
             false);
}

void SocketUpstreamCall::attach(SocketLink *link) {
    m_link = link;
    m_socket = link->socket();
    m_gotBytes = false;
    m_sent = false;
    m_socket->setReadBufferSize(kReadBuffer);
    // The connection's signals reach this call through its link (connected once per connection).
    link->holdByCall(this);
}

void SocketUpstreamCall::sendRequest() {
    if (m_sent || !m_socket)
        return;
    m_sent = true;
    cancelConnectTimer();
    m_sentAtMs = m_clock->nowMs();
    // A small body goes in the head's buffer, so that the request leaves in one write; a large one is
    // handed to the socket by reference (below), never copied.
    const bool bodyInline = m_request.body.size() <= kInlineBodyBytes;
    // Sized once for the whole head (and an inline body): appends below never reallocate.
    qsizetype size = m_request.method.size() + m_urlParts.target.size() + m_urlParts.hostField.size() + 96 +
                     (bodyInline ? m_request.body.size() : 0);
    if (m_absoluteForm)
        size += m_urlParts.hostField.size() + m_proxy->authorization.size() + 32;
    for (const auto &h : m_request.headers)
        size += h.first.size() + h.second.size() + 4;
    QByteArray head;
    head.reserve(size + 128);
    head.append(m_request.method).append(' ');
    if (m_absoluteForm) // RFC 9112 3.2.2: a request to a proxy names the whole URL
        head.append("http://").append(m_urlParts.hostField);
    head.append(m_urlParts.target).append(" HTTP/1.1\r\n");
    bool hasHost = false;
    for (const auto &h : m_request.headers) {
        // Framing and content coding are ours to decide.
        if (http::sameName(h.first, "content-length") || http::sameName(h.first, "transfer-encoding") ||
            http::sameName(h.first, "connection") || http::sameName(h.first, "accept-encoding"))
            continue;
        hasHost |= http::sameName(h.first, "host");
        head.append(h.first).append(": ").append(h.second).append("\r\n");
    }
    if (!hasHost)
        head.append("Host: ").append(m_urlParts.hostField).append("\r\n");
    if (m_absoluteForm && !m_proxy->authorization.isEmpty())
        head.append("Proxy-Authorization: ").append(m_proxy->authorization).append("\r\n");
    // No header would mean any coding is acceptable (RFC 9110 12.5.3); the parser decodes none.
    head.append("Accept-Encoding: identity\r\n");
    if (!m_request.body.isEmpty() || (m_request.method != "GET" && m_request.method != "HEAD"))
        head.append("Content-Length: ").append(QByteArray::number(m_request.body.size())).append("\r\n");
    head.append("\r\n");
    if (bodyInline) {
        m_bodyOffset = m_request.body.size();
        head.append(m_request.body);
        // One write, head and body together, straight to the kernel on a plain connection: the upstream starts on
        // it one poll round earlier than after Qt's buffer, and no write buffer is kept for the connection's life.
        http::writeThrough(m_socket, head, true); // TLS: flushed now, as before
        if (m_socket && m_socket->bytesToWrite() > 0)
            keepSpareDescriptor(); // the kernel did not take it all: Qt writes the rest later
        return;
    }
    // A large body: what the kernel does not take at once would be copied into Qt's write buffer, a second
    // copy of a body of up to limits.maxBodyBytes per request. Qt's buffer keeps a QByteArray it is given
    // whole by reference, so the body is shared with the request instead.
    http::writeThrough(m_socket, head, false);
    if (auto *ssl = qobject_cast<QSslSocket *>(m_socket)) {
        // Qt's TLS socket copies every write and encrypts all it holds at once: in slices, as the
        // ciphertext leaves, it holds about two of them instead of the body twice over.
        m_bodyOffset = 0;
        m_slicing = true;
        connect(ssl, &QSslSocket::encryptedBytesWritten, this, [this, ssl] {
            if (ssl == m_socket)
                sendBodySlices();
        });
        sendBodySlices();
        return;
    }
    m_bodyOffset = m_request.body.size();
    keepSpareDescriptor(); // before Qt writes (flush() below may already fail)
    m_socket->write(m_request.body);
    m_socket->flush();
}

void SocketUpstreamCall::sendBodySlices() {
    auto *ssl = static_cast<QSslSocket *>(m_socket);
    if (m_started || m_done)
        return; // answered before the whole body went (a 413 from its head): the rest is not wanted
    if (bytesWaiting()) {
        // The upstream sent something while we write: an early answer (413 or 400 from the head), then a
        // reset as it closes on the body it did not read. Written into, the reset would make Qt drop the
        // connection with the answer still unread (a TLS connection's kernel bytes are ciphertext only its
        // socket can read). Qt reads them on this loop turn; the slices go on after it unless they were
        // an answer (a TLS 1.3 session ticket is not).
        if (!m_sliceResumeQueued) {
            m_sliceResumeQueued = true;
            QTimer::singleShot(0, this, [this] {
                m_sliceResumeQueued = false;
                if (m_slicing && m_socket)
                    sendBodySlices();
            });
        }
        return;
    }
    while (!bodySent() && ssl->bytesToWrite() + ssl->encryptedBytesToWrite() < kTlsBodySlice) {
        const qsizetype n = std::min(kTlsBodySlice, m_request.body.size() - m_bodyOffset);
        ssl->write(m_request.body.constData() + m_bodyOffset, n);
        m_bodyOffset += n;
    }
    // No flush() here: called from encryptedBytesWritten, the bytes it would send go out inside that
    // signal's emission, and Qt tells nobody of them (it does not emit bytesWritten within itself), so
    // the next slice would wait forever. The socket's own flush runs on the next loop turn.
    if (bodySent() && std::exchange(m_slicing, false))
        QObject::disconnect(ssl, nullptr, this, nullptr); // the link holds the connection's other signals
}

bool SocketUpstreamCall::bytesWaiting() const {
    const qintptr fd = m_socket ? m_socket->socketDescriptor() : -1;
    int n = 0;
    return fd >= 0 && ::ioctl(int(fd), FIONREAD, &n) == 0 && n > 0;
}

void SocketUpstreamCall::onReadyRead() {
    if (m_done || !m_socket || m_paused)
        return; // paused: the bytes wait in the socket's bounded buffer
    consume(m_socket->readAll());
}

bool SocketUpstreamCall::readDirect() {
    if (m_done || !m_socket || m_paused || m_socket->bytesAvailable() > 0 ||
        m_socket->state() != QAbstractSocket::ConnectedState)
        return false;
    const qintptr fd = m_socket->socketDescriptor();
    if (fd < 0)
        return false;
    // Nothing to read after all: heard again when there is. The end (0) stays for Qt's read; an
    // error taken by this read leaves the connection reset, which Qt's read reports as the end.
    const ssize_t n = receive(int(fd));
    return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

ssize_t SocketUpstreamCall::receive(int fd) {
    // One block for the engine thread's reads; consume() copies out what it keeps. A read made from
    // inside consume() (none is today) would get a block of its own.
    thread_local QByteArray block;
    thread_local bool inUse = false;
    QByteArray own;
    QByteArray &buffer = inUse ? own : block;
    if (buffer.size() < kReadBuffer)
        buffer.resize(kReadBuffer);
    const bool outermost = !std::exchange(inUse, true);
    ssize_t n;
    do {
        n = ::recv(fd, buffer.data(), size_t(kReadBuffer), MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    const int readErrno = errno;
    if (n > 0)
        consume(QByteArrayView(buffer.constData(), n));
    if (outermost)
        inUse = false;
    errno = readErrno;
    return n;
}

void SocketUpstreamCall::setReadPaused(bool paused) {
    if (m_done || paused == m_paused)
        return;
    m_paused = paused; // the socket's buffer stays bounded (kReadBuffer): paused, nothing more is read
    if (!paused)       // queued: the caller is not re-entered from inside its own setReadPaused(false)
        QMetaObject::invokeMethod(this, &SocketUpstreamCall::resumeReading, Qt::QueuedConnection);
}

void SocketUpstreamCall::resumeReading() {
    if (m_done || m_paused)
        return;
    if (!m_heldBody.isEmpty()) {
        Q_EMIT bodyData(std::exchange(m_heldBody, {}));
        if (m_done || m_paused)
            return;
    }
    if (std::exchange(m_heldDone, false)) {
        complete({}, false); // the socket was released when the response ended
        return;
    }
    if (!m_socket)
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
    // Every frame the client gets from these bytes leaves in one write when this returns.
    const http::WriteBatch batch;
    const Http1ResponseParser::Output out = m_parser.feed(bytes);
    if (m_parser.state() == Http1ResponseParser::State::Error) {
        if ((out.headComplete || m_parser.answered()) && !m_started) {
            // The head was whole before the body broke in the same read: its status is the
            // upstream's answer (a 503 with a broken chunk is a 503), heard before the break. So is
            // a head whose own words make the answer unreadable (a compressed 2xx): the server
            // answered, and the attempt hears its status before the failure.
            m_started = true;
            Q_EMIT responseStarted(m_parser.status(), m_parser.headers());
            if (m_done)
                return;
        }
        complete({errorFor(m_parser.failure()), QStringLiteral("bad HTTP response: ") + m_parser.errorString()}, false);
        return;
    }
    if (out.done) {
        // The response is whole: the connection goes back to the pool before anyone
        // hears of it, so a caller that stops at the last event it needs (and aborts
        // or deletes the call from that slot) does not cost a new connection.
        releaseSocket(m_parser.keepAlive() && m_parser.leftover().isEmpty());
    }
    if (out.headComplete && !m_started && m_reused && m_parser.status() == 408 && !m_parser.keepAlive() &&
        withinStaleWindow()) {
        // The server's idle timer (408, Connection: close) fired as we reused its connection: it
        // answered no request of ours, as a plain close at that moment would say. Sent again on a
        // fresh connection, once, not failed over and marked as a server error.
        releaseSocket(false);
        m_parser = Http1ResponseParser(m_request.method == "HEAD");
        begin(false);
        return;
    }
    if (out.headComplete && !m_started && m_absoluteForm && m_parser.status() == 407) {
        // The proxy's refusal, not the provider's answer: a transport failure named as the proxy's.
        complete({TransportError::Refused, QStringLiteral("%1 refused the request to %2 with 407%3")
                                               .arg(m_proxy->name(), m_urlParts.hostKey,
                                                    proxyRefusalHint(407, !m_proxy->authorization.isEmpty()))},
                 false);
        return;
    }
    if (out.headComplete && !m_started) {
        m_started = true;
        Q_EMIT responseStarted(m_parser.status(), m_parser.headers());
        if (m_done)
            return; // aborted from a responseStarted slot
        if (m_paused) {
            // Paused from that slot: nothing more is heard until the resume, including what
            // arrived in the same read as the head.
            m_heldBody = out.body;
            m_heldDone = out.done;
            return;
        }
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
    // A connection that never came up, for want of a descriptor (its name's lookup, or its socket,
    // after the lookup): the gateway's own shortage, not the host's (probe V2 F4, by a host name).
    if (!m_sent && !m_reused &&
        (error == QAbstractSocket::SocketResourceError || error == QAbstractSocket::HostNotFoundError ||
         error == QAbstractSocket::UnknownSocketError) &&
        outOfDescriptors())
        return failForWantOfDescriptors();
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
    readLeftover();
    if (m_done)
        return;
    if (m_parser.finishOnClose()) {
        complete({}, false);
        return;
    }
    if (m_started && m_parser.status() >= 400 && requestUnwritten()) {
        // An early answer (413 to a body it would not read, 400) whose body the upstream cut as it
        // reset the connection we were still writing on: the upstream answered; its status is the
        // outcome, not a transport failure of the base URL.
        complete({}, false);
        return;
    }
    connectionLost(TransportError::Reset, QStringLiteral("connection closed by upstream"));
}

bool SocketUpstreamCall::withinStaleWindow() const {
    return !m_sent || requestUnwritten() || m_clock->nowMs() - m_sentAtMs <= kStaleRetryMs;
}

bool SocketUpstreamCall::requestUnwritten() const {
    if (!m_socket)
        return false;
    if (!bodySent() || m_socket->bytesToWrite() > 0)
        return true;
    const auto *ssl = qobject_cast<const QSslSocket *>(m_socket);
    return ssl && ssl->encryptedBytesToWrite() > 0;
}

void SocketUpstreamCall::keepSpareDescriptor() {
    if (m_spareFd >= 0 || !m_socket || qobject_cast<QSslSocket *>(m_socket))
        return; // a TLS connection's kernel bytes are ciphertext that only its socket can read
    const qintptr fd = m_socket->socketDescriptor();
    if (fd >= 0)
        m_spareFd = ::fcntl(int(fd), F_DUPFD_CLOEXEC, 0);
}

void SocketUpstreamCall::closeSpareDescriptor() {
    if (m_spareFd >= 0)
        ::close(std::exchange(m_spareFd, -1));
}

void SocketUpstreamCall::readLeftover() {
    if (m_spareFd < 0)
        return;
    qint64 total = 0;
    while (!m_done && m_socket && total < kLeftoverBytes) {
        const ssize_t n = receive(m_spareFd);
        if (n <= 0)
            break; // the end, the reset, or nothing more yet
        total += n;
    }
}

void SocketUpstreamCall::cancelConnectTimer() {
    if (m_connectTimer && m_clock)
        m_clock->cancel(std::exchange(m_connectTimer, 0));
}

void SocketUpstreamCall::connectionLost(TransportError error, const QString &message) {
    // The server dropped an idle keep-alive connection as we reused it: it died while the request was
    // still being written, or at once after (kStaleRetryMs). Later, the server had the request and may
    // have worked on it: not re-sent.
    if (m_reused && !m_gotBytes && withinStaleWindow() &&
        (error == TransportError::Reset || error == TransportError::Other)) {
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
    TransportResult said = result;
    // No connection to the proxy, or no tunnel through it: the proxy's failure, named so that the
    // user looks there and not at the provider.
    if (m_link && m_link->reachingProxy() && result.error != TransportError::None &&
        result.error != TransportError::Local)
        said.message = m_proxy->name() + QStringLiteral(": ") + result.message;
    releaseSocket(reusable && result.error == TransportError::None);
    Q_EMIT finished(said);
}

void SocketUpstreamCall::releaseSocket(bool reusable) {
    cancelConnectTimer();
    closeSpareDescriptor(); // before the socket closes: the upstream must see the connection go now
    if (!m_socket)
        return;
    QAbstractSocket *s = m_socket;
    SocketLink *link = m_link;
    m_socket = nullptr;
    m_link = nullptr;
    link->release();
    if (std::exchange(m_slicing, false))
        QObject::disconnect(s, nullptr, this, nullptr); // the slices' connection; the link holds the rest
    // An answer that came before the whole body was sent (an early error) leaves the connection
    // mid-request: the server would read the rest as the next one.
    // Queued request bytes count too: the kernel may not have taken the whole body yet.
    reusable = reusable && bodySent() && s->bytesToWrite() == 0;
    if (reusable && m_transport) {
        link->noteKeepAlive(m_parser.headers());
        m_transport->giveBack(m_poolKey, link);
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
    if (s && m_transport && m_started && bodySent() && m_parser.state() == Http1ResponseParser::State::Body &&
        m_parser.selfDelimited() && m_parser.keepAlive() && !m_closedWhilePaused && !m_errorWhilePaused) {
        // A caller often stops at the last event it needs, a moment before the body's
        // own end (the chunked terminator) arrives: let the transport read that end for
        // a short, bounded while and keep the connection, instead of reconnecting for
        // the next request. A body that goes on is closed when the bound is reached.
        SocketLink *link = m_link;
        closeSpareDescriptor();
        m_socket = nullptr;
        m_link = nullptr;
        link->noteKeepAlive(m_parser.headers());
        m_transport->drain(m_poolKey, link, m_parser);
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

namespace sw::upstream {

bool SocketUpstreamCall::hasUnreadBytes() const {
    if (!m_socket)
        return false;
    if (m_socket->bytesAvailable() > 0)
        return true;
    int queued = 0;
    const qintptr fd = m_socket->socketDescriptor();
    return fd >= 0 && ::ioctl(int(fd), FIONREAD, &queued) == 0 && queued > 0;
}

} // namespace sw::upstream
