#pragma once
// A request as the listener knows it once its head is read and before any byte of its body is
// taken (ConnectionGuard::onHeadComplete), and what is decided on it there: the gateway key is
// looked up once, and a request whose answer its body cannot change (no key, an unknown one, a
// tenant without admin rights on an admin path) is answered at once and its connection closed,
// so that a peer without a key holds none of limits.maxBodyBytesInFlight.

#include "core/http/headers.h"
#include "core/server/inbound_request.h"

#include <QByteArrayView>

namespace sw::http {
class HeadParser;
}

namespace sw::server {

struct RequestHead {
    QByteArrayView method;
    QByteArrayView target;                    // as sent: origin-form, absolute-form or "*"
    bool hasBody = false;                     // a Content-Length over 0, or a chunked body
    qint64 bodyBytes = 0;                     // the Content-Length; 1 for a chunked body, whose size is not known yet
    const http::HeadParser *fields = nullptr; // the head's fields, as the guard parsed them

    // The head as a request without a body: method, path (as Qt's server reads the target:
    // percent escapes decoded, an absolute-form target's path) and fields.
    InboundRequest request() const;
};

// An answer whole: status, fields and body.
struct Answer {
    int status = 0;
    http::HeaderList headers;
    QByteArray body;
    bool endConnection = false; // the connection ends with it

    // As bytes on the wire, with Content-Length and "Connection: close"; without the body for HEAD.
    QByteArray closingResponse(bool headRequest) const;
};

struct HeadVerdict {
    KeyLookup key;                // handed to the request's handler with the request (InboundRequest::key)
    std::optional<Answer> answer; // set: sent at once, and the connection closed with the body unread
};

} // namespace sw::server
