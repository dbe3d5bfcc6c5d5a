#include "upstream/qt_upstream_call.h"

#include <QNetworkRequest>

namespace sw::upstream {

QtUpstreamCall::QtUpstreamCall(QNetworkReply *reply, std::function<void()> release, QObject *parent)
    : UpstreamCall(parent), m_reply(reply), m_release(std::move(release)) {
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
    if (m_reply) {
        // Disconnect first: QNetworkReply::abort() emits finished() synchronously.
        m_reply->disconnect(this);
        m_reply->abort(); // closes the socket now; the connection is not reused
    }
    detach();
    Q_EMIT finished(TransportResult{TransportError::Aborted, QStringLiteral("aborted")});
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

void QtUpstreamCall::onReadyRead() {
    if (m_done || !m_reply)
        return;
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
    const bool gotStatus = m_reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).isValid();
    const QNetworkReply::NetworkError error = m_reply->error();
    const TransportResult result = resultFor(error, gotStatus, m_reply->errorString());
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
        // Our own abort() never reaches here (it disconnects first); the other
        // source of a cancel in Qt 6.4 is a transfer timeout.
        return make(TransportError::Timeout);
    default:
        break;
    }
    // Content (2xx..) and server (4xx..) error codes are Qt's view of an HTTP
    // error status: the response arrived complete, so the transport succeeded.
    const int code = int(error);
    // Qt also reports a 400 as ProtocolInvalidOperationError: once a status line
    // arrived, the HTTP layer worked and the status speaks for itself.
    if (gotHttpStatus && code >= int(E::ContentAccessDenied) && code <= int(E::UnknownServerError) &&
        error != E::ProtocolFailure && error != E::ProtocolUnknownError)
        return {};
    return make(TransportError::Other);
}

} // namespace sw::upstream
