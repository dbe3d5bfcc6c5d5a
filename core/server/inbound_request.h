#pragma once
#include "core/http/headers.h"

#include <QHostAddress>
#include <QUrlQuery>
#include <memory>
#include <optional>

namespace sw::config {
struct Config;
}

namespace sw::server {

// Who is calling: the tenant a gateway key names (GatewayAuth).
struct Caller {
    QString tenant;
    bool admin = false;
};

// The gateway key as the listener looked it up on the request's head (Router::judgeHead, from
// ConnectionGuard::onHeadComplete), before any byte of the body was read: the router takes it
// instead of looking the key up again, unless the configuration has been replaced since.
struct KeyLookup {
    bool done = false;
    std::optional<Caller> caller;                 // nullopt: no key, or one no tenant holds
    std::shared_ptr<const config::Config> config; // the configuration whose tenants were asked
};

// A copy of what the gateway needs from an HTTP request, so nothing outside
// http_front sees QHttpServerRequest (whose API changes in 6.5 and 6.8).
struct InboundRequest {
    QByteArray method; // GET, POST, DELETE, HEAD, OPTIONS, ...
    QString path;      // without the query string
    QUrlQuery query;
    http::HeaderList headers;
    QByteArray body;
    QHostAddress peer;
    quint16 peerPort = 0;
    KeyLookup key; // done when the listener looked the key up on the head

    QByteArray header(QByteArrayView name) const { return http::headerValue(headers, name); }
};

} // namespace sw::server
