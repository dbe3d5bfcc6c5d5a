#pragma once
#include <QByteArray>
#include <QList>
#include <QPair>
#include <QUrl>

namespace sw::upstream {

using HeaderList = QList<QPair<QByteArray, QByteArray>>;

QByteArray headerValue(const HeaderList &headers, QByteArrayView name); // case-insensitive, first match
// A provider's baseUrl (trailing slashes ignored) followed by an API path.
QUrl joinUrl(const QString &baseUrl, const QString &path);

struct HttpRequest {
    QByteArray method = "POST";
    QUrl url;
    HeaderList headers;
    QByteArray body;
};

// Connection-level causes, kept distinct so the classifier and logs can tell them apart.
enum class TransportError { None, Refused, HostNotFound, Tls, Reset, Timeout, Aborted, Other };
const char *transportErrorName(TransportError e);

struct TransportResult {
    TransportError error = TransportError::None;
    QString message; // human-readable, e.g. "connection refused"
};

} // namespace sw::upstream
