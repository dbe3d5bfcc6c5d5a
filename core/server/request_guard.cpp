#include "core/server/request_guard.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QUrl>
#include <algorithm>

#include <array>
#include <charconv>

namespace sw::server {

namespace {
// "127.0.0.1:4141" -> ("127.0.0.1", "4141"); "[::1]:4141" -> ("::1", "4141"); no port -> empty port.
bool splitHostPort(QByteArrayView text, QByteArrayView *host, QByteArrayView *port) {
    if (text.startsWith('[')) {
        const qsizetype close = text.indexOf(']');
        if (close < 0)
            return false;
        *host = text.sliced(1, close - 1);
        const QByteArrayView rest = text.sliced(close + 1);
        if (rest.isEmpty())
            return true;
        if (!rest.startsWith(':'))
            return false;
        *port = rest.sliced(1);
        return true;
    }
    const qsizetype colon = text.indexOf(':');
    if (colon < 0) {
        *host = text;
        return true;
    }
    if (text.indexOf(':', colon + 1) >= 0)
        return false; // a bare IPv6 literal is not a valid Host
    *host = text.first(colon);
    *port = text.sliced(colon + 1);
    return true;
}

// `value` written in decimal: digits only, no leading zero, no sign (as a Host header writes a port).
QByteArrayView decimal(quint32 value, std::array<char, 10> &buffer) {
    const auto end = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value).ptr;
    return QByteArrayView(buffer.data(), end - buffer.data());
}

// An IPv4 address as the dotted quad Qt and every client write it ("127.0.0.1").
QByteArrayView dottedQuad(quint32 address, std::array<char, 16> &buffer) {
    char *out = buffer.data();
    for (int shift = 24; shift >= 0; shift -= 8) {
        out = std::to_chars(out, buffer.data() + buffer.size(), (address >> shift) & 0xff).ptr;
        if (shift > 0)
            *out++ = '.';
    }
    return QByteArrayView(buffer.data(), out - buffer.data());
}

bool hostNamesListener(const ListenerIdentity &listener, QByteArrayView hostText, bool portRequired) {
    // Runs on every request: views of the header, no copies. Only a host that is not the
    // listener's own address, as written above, is parsed as an address.
    QByteArrayView host;
    QByteArrayView port;
    if (!splitHostPort(hostText.trimmed(), &host, &port) || host.isEmpty())
        return false;
    std::array<char, 10> portText;
    if (!port.isEmpty() && port != decimal(listener.port, portText))
        return false;
    if (port.isEmpty() && portRequired && listener.port != 80)
        return false;
    if (host.compare("localhost", Qt::CaseInsensitive) == 0 || host.compare("localhost.", Qt::CaseInsensitive) == 0)
        return true;
    if (listener.host.protocol() == QAbstractSocket::IPv4Protocol) {
        std::array<char, 16> own;
        if (host == dottedQuad(listener.host.toIPv4Address(), own))
            return true;
    }
    // QHostAddress reads past spaces ("127.0.0.1 :8080"); a Host with one is not a host (RFC 9110 7.2).
    if (std::any_of(host.begin(), host.end(), [](char c) { return uchar(c) <= 0x20 || uchar(c) >= 0x7f; }))
        return false;
    const QHostAddress address(QString::fromLatin1(host).toLower());
    return !address.isNull() && address.isEqual(listener.host, QHostAddress::TolerantConversion);
}

// A header name fit to quote in a message: Qt's parser is lenient about names too.
QString printableName(const QByteArray &name) {
    for (const char c : name)
        if (c <= 0x20 || c >= 0x7f)
            return QStringLiteral("(a header with an invalid name)");
    return QString::fromLatin1(name).toLower();
}

Rejection make(int status, const char *type, const QString &message) {
    return {status, QByteArray(type), message};
}

const char *reasonPhrase(int status) {
    switch (status) {
    case 400:
        return "Bad Request";
    case 403:
        return "Forbidden";
    case 408:
        return "Request Timeout";
    case 413:
        return "Payload Too Large";
    case 415:
        return "Unsupported Media Type";
    case 431:
        return "Request Header Fields Too Large";
    case 503:
        return "Service Unavailable";
    default:
        return "Error";
    }
}
} // namespace

std::optional<Rejection> RequestGuard::checkHost(const ListenerIdentity &listener, const QByteArray &host) {
    if (!listener.host.isLoopback())
        return std::nullopt; // reachable from the network only with tenant keys
    if (host.isEmpty())
        // RFC 9112 3.2: a request without Host is malformed (400), not forbidden.
        return make(400, "invalid_request_error", QStringLiteral("a Host header naming this gateway is required"));
    if (!hostNamesListener(listener, host, false))
        return make(403, "permission_error",
                    QStringLiteral("Host does not name this gateway (use 127.0.0.1 or localhost); requests through "
                                   "other host names are refused to stop DNS rebinding"));
    return std::nullopt;
}

std::optional<Rejection> RequestGuard::checkOrigin(const ListenerIdentity &listener, const QByteArray &origin) {
    if (origin.isEmpty())
        return std::nullopt; // not a browser, or a same-origin GET
    const QUrl url(QString::fromLatin1(origin.trimmed()), QUrl::StrictMode);
    const bool sameOrigin =
        url.isValid() && url.scheme() == QLatin1String("http") && url.path().isEmpty() &&
        url.port() == int(listener.port) &&
        hostNamesListener(listener,
                          (url.host().contains(QLatin1Char(':')) ? QByteArray("[") + url.host().toLatin1() + ']'
                                                                 : url.host().toLatin1()),
                          false);
    if (!sameOrigin)
        return make(403, "permission_error",
                    QStringLiteral("cross-site requests are refused: this gateway holds your provider keys"));
    return std::nullopt;
}

std::optional<Rejection> RequestGuard::checkContentType(const QByteArray &method, const QByteArray &contentType,
                                                        qint64 bodySize) {
    if (method != "POST" && method != "PUT" && method != "PATCH")
        return std::nullopt;
    if (contentType.isEmpty() && bodySize == 0)
        return std::nullopt; // e.g. POST /admin/reload
    const QByteArrayView type(contentType);
    const qsizetype semicolon = type.indexOf(';');
    const QByteArrayView mediaType = (semicolon < 0 ? type : type.first(semicolon)).trimmed();
    if (mediaType.compare("application/json", Qt::CaseInsensitive) != 0)
        return make(415, "invalid_request_error",
                    QStringLiteral("request bodies must be JSON: send Content-Type: application/json"));
    return std::nullopt;
}

std::optional<Rejection> RequestGuard::checkContentEncoding(const QByteArray &contentEncoding) {
    const QByteArrayView coding = QByteArrayView(contentEncoding).trimmed();
    if (coding.isEmpty() || coding.compare("identity", Qt::CaseInsensitive) == 0)
        return std::nullopt;
    return make(415, "invalid_request_error",
                QStringLiteral("compressed request bodies are not accepted: send the JSON without a Content-Encoding"));
}

std::optional<Rejection> RequestGuard::check(const ListenerIdentity &listener, const QByteArray &method,
                                             const http::HeaderList &headers, qint64 bodySize) {
    if (auto r = checkHost(listener, http::headerValue(headers, "host")))
        return r;
    if (auto r = checkOrigin(listener, http::headerValue(headers, "origin")))
        return r;
    if (auto r = checkContentType(method, http::headerValue(headers, "content-type"), bodySize))
        return r;
    return checkContentEncoding(http::headerValue(headers, "content-encoding"));
}

std::optional<QString> RequestGuard::controlByteProblem(const http::HeaderList &headers) {
    for (const auto &[name, value] : headers) {
        for (const char ch : value) {
            const auto c = static_cast<unsigned char>(ch);
            if ((c < 0x20 && c != '\t') || c == 0x7f)
                return QStringLiteral("header %1 contains a control character (CR, LF, NUL or another control "
                                      "byte); remove it")
                    .arg(printableName(name));
        }
    }
    return std::nullopt;
}

QByteArray RequestGuard::body(const Rejection &rejection) {
    const QJsonObject error{{QStringLiteral("type"), QString::fromLatin1(rejection.errorType)},
                            {QStringLiteral("message"), rejection.message}};
    return QJsonDocument(
               QJsonObject{{QStringLiteral("type"), QStringLiteral("error")}, {QStringLiteral("error"), error}})
        .toJson(QJsonDocument::Compact);
}

QByteArray RequestGuard::responseBytes(const Rejection &rejection, const QByteArray &formatted) {
    const QByteArray payload = formatted.isEmpty() ? body(rejection) : formatted;
    QByteArray out = "HTTP/1.1 " + QByteArray::number(rejection.status) + ' ' + reasonPhrase(rejection.status) + "\r\n";
    if (rejection.retryAfterSeconds > 0)
        out += "Retry-After: " + QByteArray::number(rejection.retryAfterSeconds) + "\r\n";
    out +=
        "Content-Type: application/json\r\nConnection: close\r\nContent-Length: " + QByteArray::number(payload.size()) +
        "\r\n\r\n";
    out += payload;
    return out;
}

} // namespace sw::server
