#include "core/upstream/http_types.h"

namespace sw::upstream {

QUrl joinUrl(const QString &baseUrl, const QString &path) {
    QString base = baseUrl;
    while (base.endsWith(QLatin1Char('/')))
        base.chop(1);
    return QUrl(base + path);
}

QString hostKeyOf(const QUrl &url) {
    const QString scheme = url.scheme().toLower();
    return scheme + QLatin1String("://") + url.host().toLower() + QLatin1Char(':') +
           QString::number(url.port(scheme == QLatin1String("https") ? 443 : 80));
}

const char *transportErrorName(TransportError e) {
    switch (e) {
    case TransportError::None:
        return "none";
    case TransportError::Refused:
        return "connection refused";
    case TransportError::HostNotFound:
        return "host not found";
    case TransportError::Tls:
        return "tls handshake failed";
    case TransportError::Reset:
        return "connection reset";
    case TransportError::Timeout:
        return "timeout";
    case TransportError::Aborted:
        return "aborted";
    case TransportError::Protocol:
        return "malformed response";
    case TransportError::TooLarge:
        return "response over size limit";
    case TransportError::Other:
        return "network error";
    }
    return "network error";
}

} // namespace sw::upstream
