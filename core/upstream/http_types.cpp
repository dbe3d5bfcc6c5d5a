#include "core/upstream/http_types.h"

#include <array>

namespace sw::upstream {

QUrl joinUrl(const QString &baseUrl, const QString &path) {
    // Every request to a provider joins the same few base URLs and paths, and parsing the URL
    // was 4 k instructions of each request: the last few joins are kept per thread (QUrl is
    // shared, so a hit copies a pointer). Bounded: eight entries, the oldest replaced.
    struct Joined {
        QString base;
        QString path;
        QUrl url;
    };
    thread_local std::array<Joined, 8> recent;
    thread_local size_t next = 0;
    for (const Joined &j : recent)
        if (!j.url.isEmpty() && j.path == path && j.base == baseUrl)
            return j.url;
    QString base = baseUrl;
    while (base.endsWith(QLatin1Char('/')))
        base.chop(1);
    QUrl url(base + path);
    recent[next] = {baseUrl, path, url};
    next = (next + 1) % recent.size();
    return url;
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
