#pragma once
#include "core/http/headers.h"

#include <QHostAddress>
#include <QUrlQuery>

namespace sw::server {

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

    QByteArray header(QByteArrayView name) const { return http::headerValue(headers, name); }
};

} // namespace sw::server
