#pragma once
// The listener's checks on a complete request's head, before any routing: the Host
// must name this loopback listener (DNS rebinding), a browser Origin must be
// this listener itself, and a POST body must be JSON. Pure functions, so every
// rule is unit-tested without sockets.

#include "core/http/headers.h"

#include <QHostAddress>
#include <optional>

namespace sw::server {

struct ListenerIdentity {
    QHostAddress host; // the bound address
    quint16 port = 0;
};

struct Rejection {
    int status = 0;            // 400, 403, 413, 415, 431, 408, 503
    QByteArray errorType;      // the error.type of the JSON body
    QString message;           // says what to change; never echoes a header value
    int retryAfterSeconds = 0; // sent as Retry-After when positive
};

class RequestGuard {
public:
    // Host: the listener's own loopback address or "localhost", with or without the
    // listener's port. A non-loopback listener (tenants required) accepts any Host.
    static std::optional<Rejection> checkHost(const ListenerIdentity &listener, const QByteArray &host);
    // Origin: absent, or http://<an allowed host>[:port] of this listener. "null" and
    // every other site are cross-site.
    static std::optional<Rejection> checkOrigin(const ListenerIdentity &listener, const QByteArray &origin);
    // POST/PUT/PATCH: a body, or any Content-Type, must be application/json (+ parameters).
    static std::optional<Rejection> checkContentType(const QByteArray &method, const QByteArray &contentType,
                                                     qint64 bodySize);
    // A request body is taken as sent: any Content-Encoding but identity (gzip, br, zstd) is a 415
    // that says so, not a 400 "not valid JSON" about bytes the client never wrote.
    static std::optional<Rejection> checkContentEncoding(const QByteArray &contentEncoding);
    // Every header value is free of control bytes (CR, LF, NUL and the rest of C0, and DEL;
    // a horizontal tab is allowed, RFC 9110 5.5): such a value would be forwarded upstream or
    // echoed raw. Returns a message naming the first offending header (never its value).
    static std::optional<QString> controlByteProblem(const http::HeaderList &headers);
    // Host, Origin, Content-Type and Content-Encoding, in that order.
    static std::optional<Rejection> check(const ListenerIdentity &listener, const QByteArray &method,
                                          const http::HeaderList &headers, qint64 bodySize);
    // A complete HTTP/1.1 response carrying {"type":"error","error":{"type","message"}} (readable
    // by OpenAI and Anthropic clients alike) and Connection: close.
    // `body`, when given, is the error in the client's own format (a chat route's codec).
    static QByteArray responseBytes(const Rejection &rejection, const QByteArray &body = {});
    static QByteArray body(const Rejection &rejection);
};

} // namespace sw::server
