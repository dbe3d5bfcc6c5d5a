#include "core/upstream/qt_upstream_call.h"

#include "core/http/socket_write.h"

#include <QNetworkRequest>
#include <QTimer>

#include <memory>

namespace sw::upstream {

QtUpstreamCall::QtUpstreamCall(QNetworkReply *reply, std::function<void()> release, QObject *parent, int lingerMs)
    : UpstreamCall(parent), m_reply(reply), m_release(std::move(release)), m_lingerMs(lingerMs) {
    connect(reply, &QNetworkReply::metaDataChanged, this, &QtUpstreamCall::onMetaDataChanged);
    connect(reply, &QNetworkReply::readyRead, this, &QtUpstreamCall::onReadyRead);
    connect(reply, &QNetworkReply::finished, this, &QtUpstreamCall::onFinished);
}

QtUpstreamCall::~QtUpstreamCall() {
    // Deleted while running (e.g. with its parent): close the connection, say nothing.
    if (m_reply && !m_done) {
        m_reply->disconnect(this);
        m_reply->abort();
    }
    m_done = true;
    detach();
}

void QtUpstreamCall::abort() {
    if (m_done)
        return;
    m_done = true;
    if (m_reply && m_started && m_lingerMs > 0 && !m_reply->isFinished()) {
        lingerThenClose();
    } else if (m_reply) {
        // Disconnect first: QNetworkReply::abort() emits finished() synchronously.
        m_reply->disconnect(this);
        m_reply->abort(); // closes the socket now; the connection is not reused
    }
    detach();
    Q_EMIT finished(TransportResult{TransportError::Aborted, QStringLiteral("aborted")});
}

void QtUpstreamCall::lingerThenClose() {
    // A caller often stops at the last event it needs, a moment before the body's own
    // end arrives; QNAM's abort() would then close a connection that was about to be
    // reusable. Let the reply run on, unheard, for a short and bounded while: if it
    // ends, QNAM keeps the connection; past the bound it is aborted as before. The
    // manager slot is held until then.
    QNetworkReply *reply = m_reply;
    m_reply = nullptr;
    reply->disconnect(this);
    reply->setReadBufferSize(0);
    struct Linger {
        std::function<void()> release;
        qint64 bytes = 0;
        bool over = false;
    };
    auto state = std::make_shared<Linger>();
    state->release = std::move(m_release);
    m_release = nullptr;
    auto end = [reply, state] {
        if (state->over)
            return;
        state->over = true;
        if (!reply->isFinished())
            reply->abort(); // emits finished synchronously: `over` keeps this from running twice
        reply->deleteLater();
        if (state->release)
            std::exchange(state->release, nullptr)();
    };
    QObject::connect(reply, &QNetworkReply::finished, reply, end);
    QObject::connect(reply, &QNetworkReply::readyRead, reply, [reply, state, end] {
        state->bytes += reply->readAll().size(); // discarded: nobody listens any more
        if (state->bytes > kLingerBytes)
            end();
    });
    QTimer::singleShot(m_lingerMs, reply, end);
    if (reply->bytesAvailable() > 0)
        state->bytes += reply->readAll().size();
}

void QtUpstreamCall::announceResponse() {
    if (m_started || !m_reply)
        return;
    const QVariant status = m_reply->attribute(QNetworkRequest::HttpStatusCodeAttribute);
    if (!status.isValid())
        return; // metadata without a status line (should not happen for HTTP)
    m_started = true;
    Q_EMIT responseStarted(status.toInt(), m_reply->rawHeaderPairs());
}

void QtUpstreamCall::onMetaDataChanged() {
    if (m_done)
        return;
    announceResponse();
}

void QtUpstreamCall::setReadPaused(bool paused) {
    if (m_done || paused == m_paused || !m_reply)
        return;
    m_paused = paused;
    // A read buffer limit makes QNAM stop handing the reply more than that while the
    // caller does not read. (Qt 6.4's HTTP/2 keeps granting stream window as frames
    // arrive, so on an h2 connection the bytes still arrive, only not into the caller.)
    // Unlimited again before reading, so Qt's emitted-bytes count starts over at the
    // next pause.
    //
    // The bound is not the configuration's: QNAM's HTTP thread reads on until this
    // limit reaches it, and it counts only what it hands over after that, so a
    // flooding upstream can put tens of MiB into memory on a busy machine (measured
    // with two copies of test_qt_transport side by side: 27 MiB flooded, RSS +14 MiB).
    // Measured alternatives, both worse: a limit set before the response starts
    // (from the request body's hand-over) holds any flood, but Qt 6.4 then closes a
    // kept-alive connection after many short replies (4 of 5 sequential calls opened
    // a new connection, that is a new TLS handshake per request); a limit set at
    // requestSent holds nothing. The production transport, SocketTransport (http and
    // https), reads its own sockets and is bounded (default_transport.h).
    m_reply->setReadBufferSize(paused ? kPausedReadBuffer : 0);
    if (!paused) // queued: the caller is not re-entered from inside its own setReadPaused(false)
        QMetaObject::invokeMethod(this, &QtUpstreamCall::resumeReading, Qt::QueuedConnection);
}

void QtUpstreamCall::resumeReading() {
    if (m_done || m_paused || !m_reply)
        return;
    onReadyRead();
    if (!m_done && !m_paused && m_finishedWhilePaused) {
        m_finishedWhilePaused = false;
        onFinished();
    }
}

void QtUpstreamCall::onReadyRead() {
    if (m_done || !m_reply)
        return;
    if (m_paused) {
        announceResponse(); // the head is not body: a paused caller may still learn the status
        return;
    }
    // Every frame the client gets from this read leaves in one write when this returns.
    const http::WriteBatch batch;
    announceResponse();
    if (m_done || !m_reply)
        return; // aborted from a responseStarted slot
    const QByteArray chunk = m_reply->readAll();
    if (!chunk.isEmpty())
        Q_EMIT bodyData(chunk);
}

void QtUpstreamCall::onFinished() {
    if (m_done || !m_reply)
        return;
    if (m_paused) {
        m_finishedWhilePaused = true;
        return;
    }
    const bool gotStatus = m_reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).isValid();
    const QNetworkReply::NetworkError error = m_reply->error();
    const TransportResult result = resultFor(error, gotStatus, m_reply->errorString());
    const http::WriteBatch batch; // the last frames and the answer's end leave in one write
    if (result.error == TransportError::None || m_started) {
        // Headers and any body left over come before finished, for error statuses too.
        announceResponse();
        if (m_done || !m_reply)
            return; // aborted from a responseStarted slot
        const QByteArray rest = m_reply->readAll();
        if (!rest.isEmpty())
            Q_EMIT bodyData(rest);
        if (m_done)
            return; // aborted from a bodyData slot
    }
    m_done = true;
    detach();
    Q_EMIT finished(result);
}

void QtUpstreamCall::detach() {
    if (m_reply) {
        m_reply->disconnect(this);
        m_reply->deleteLater();
        m_reply = nullptr;
    }
    if (m_release) {
        auto release = std::move(m_release);
        m_release = nullptr;
        release();
    }
}

TransportResult QtUpstreamCall::resultFor(QNetworkReply::NetworkError error, bool gotHttpStatus,
                                          const QString &message) {
    using E = QNetworkReply::NetworkError;
    auto make = [&](TransportError e) {
        return TransportResult{e, message.isEmpty() ? QString::fromLatin1(transportErrorName(e)) : message};
    };
    switch (error) {
    case E::NoError:
        return {};
    case E::ConnectionRefusedError:
    case E::ProxyConnectionRefusedError:
        return make(TransportError::Refused);
    case E::HostNotFoundError:
    case E::ProxyNotFoundError:
        return make(TransportError::HostNotFound);
    case E::SslHandshakeFailedError:
        return make(TransportError::Tls);
    case E::RemoteHostClosedError:
    case E::ProxyConnectionClosedError:
        // QNAM reports a body cut short this way too; a complete response ends with NoError.
        return make(TransportError::Reset);
    case E::TimeoutError:
    case E::ProxyTimeoutError:
        return make(TransportError::Timeout);
    case E::OperationCanceledError:
        // Our own abort() never reaches here (it disconnects first), so a cancel is
        // Qt's own: in Qt 6.4, a transfer timeout. Never Aborted, which would read
        // as the caller having gone.
        return make(TransportError::Timeout);
    case E::TemporaryNetworkFailureError:
    case E::NetworkSessionFailedError:
        return make(TransportError::Reset);
    default:
        break;
    }
    // Content (2xx..) and server (4xx..) error codes are Qt's view of an HTTP
    // error status: the response arrived complete, so the transport succeeded.
    const int code = int(error);
    if (error == E::ProtocolFailure || (!gotHttpStatus && error == E::ProtocolInvalidOperationError))
        return make(TransportError::Protocol); // bytes Qt could not read as an HTTP response
    // Qt also reports a 400 as ProtocolInvalidOperationError: once a status line
    // arrived, the HTTP layer worked and the status speaks for itself.
    if (gotHttpStatus && code >= int(E::ContentAccessDenied) && code <= int(E::UnknownServerError) &&
        error != E::ProtocolFailure && error != E::ProtocolUnknownError)
        return {};
    return make(TransportError::Other);
}

} // namespace sw::upstream

namespace sw::upstream {

bool QtUpstreamCall::hasUnreadBytes() const {
    return m_reply && m_reply->bytesAvailable() > 0; // what Qt read and has not handed on
}

} // namespace sw::upstream
