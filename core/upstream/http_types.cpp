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

UrlParts urlParts(const QUrl &url) {
    struct Kept {
        QUrl url;
        UrlParts parts;
    };
    thread_local std::array<Kept, 8> recent;
    thread_local size_t next = 0;
    const auto data = const_cast<QUrl &>(url).data_ptr();
    for (Kept &k : recent)
        if (data && k.url.data_ptr() == data)
            return k.parts;
    UrlParts parts;
    parts.hostKey = hostKeyOf(url);
    parts.target = url.path(QUrl::FullyEncoded).toLatin1();
    if (parts.target.isEmpty())
        parts.target = "/";
    if (url.hasQuery())
        parts.target += '?' + url.query(QUrl::FullyEncoded).toLatin1();
    const bool tls = url.scheme().compare(QLatin1String("https"), Qt::CaseInsensitive) == 0;
    const int port = url.port(-1);
    // An IPv6 literal goes in brackets, as in the URL (RFC 9110 7.2); QUrl::host drops them.
    const QByteArray host = url.host(QUrl::FullyEncoded).toLatin1();
    parts.hostField = host.contains(':') ? '[' + host + ']' : host;
    if (port != -1 && port != (tls ? 443 : 80))
        parts.hostField += ':' + QByteArray::number(port);
    if (data) {
        recent[next] = {url, parts};
        next = (next + 1) % recent.size();
    }
    return parts;
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
    case TransportError::Local:
        return "out of local resources";
    case TransportError::Other:
        return "network error";
    }
    return "network error";
}

} // namespace sw::upstream
