#pragma once
#include "core/http/headers.h"

#include <QByteArray>
#include <QHash>
#include <QList>
#include <QPair>
#include <QString>
#include <QUrl>

namespace sw::upstream {

// Header fields are core/http's; named here too for the adapters and transports that speak of them.
using http::HeaderList;
using http::headerValue;

// A provider's baseUrl (trailing slashes ignored) followed by an API path.
QUrl joinUrl(const QString &baseUrl, const QString &path);
// "scheme://host:port" with the scheme's default port filled in: what a connection is pooled and trusted by.
QString hostKeyOf(const QUrl &url);

// What an HTTP/1.1 request to `url` is written with, worked out once per URL (see urlParts).
struct UrlParts {
    QString hostKey;      // hostKeyOf(url)
    QByteArray target;    // the request target: the encoded path ("/" when empty), and "?query" when it has one
    QByteArray hostField; // the Host field's value: an IPv6 literal in brackets, the port unless the scheme's default
};
// The parts of `url`. The socket transport writes every request with these; reading them from QUrl
// was 4 k instructions a request. The last few URLs are kept per thread, found by their shared
// data (a cached copy keeps it alive, so the same data is the same URL); joinUrl hands out such
// shared copies.
UrlParts urlParts(const QUrl &url);

struct HttpRequest {
    QByteArray method = "POST";
    QUrl url;
    HeaderList headers;
    QByteArray body;
    // A converted request's tool aliases, the upstream's name → the client's (tool_names.h): the
    // calls in its answer go back to the client by these. Empty when no name was aliased.
    QHash<QString, QString> toolNameOriginals;
    // The provider's own CA bundle (providers.NAME.caFile, its path; empty: the system store alone):
    // what verifies this request's TLS connection. Connections are pooled per host and trust, so a
    // provider without the bundle never rides a connection another provider's bundle verified.
    QString trust;
};

// Connection-level causes, kept distinct so the classifier and logs can tell them apart.
// Every value but None and Aborted is the upstream's (or the network's) failure;
// Aborted means only that the caller itself called UpstreamCall::abort().
enum class TransportError {
    None,
    Refused,      // nothing listens at the address
    HostNotFound, // DNS gave no address
    Tls,          // handshake or certificate failure
    Reset,        // the connection was reset or closed before the response ended
    Timeout,      // connect or transfer timed out, or Qt canceled the transfer on its own
    Aborted,      // the caller's own abort(); nothing else
    Protocol,     // the bytes are not an HTTP response we can read
    TooLarge,     // a head, line or event over its limit: the upstream is not allowed to grow our memory
    Local,        // the gateway's own resources ran out (no descriptor for a socket): not the upstream's doing
    Other,
};
const char *transportErrorName(TransportError e);

struct TransportResult {
    TransportError error = TransportError::None;
    QString message; // human-readable, e.g. "connection refused"
};

} // namespace sw::upstream
