#include "core/server/request_head.h"

#include "core/http/head_parser.h"
#include "core/server/http_exchange.h"

#include <QUrl>

namespace sw::server {

InboundRequest RequestHead::request() const {
    InboundRequest in;
    in.method = method.toByteArray();
    // What HttpFront takes from Qt's server for a target that is not a plain path: the URL's
    // decoded path (an absolute-form target's own path, a query left out).
    in.path = QUrl::fromEncoded(target.toByteArray()).path();
    if (fields)
        in.headers = fields->headers();
    return in;
}

QByteArray Answer::closingResponse(bool headRequest) const {
    return HttpExchange::closingResponse(status, headers, body, headRequest);
}

} // namespace sw::server
