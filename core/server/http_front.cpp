#include "core/server/http_front.h"
#include "core/formats/inbound_codec.h"
#include "core/http/socket_write.h"
#include "core/server/connection_guard.h"
#include "core/server/http_exchange.h"
#include "core/wire/api.h"

#include <QHttpServerRequest>
#include <QHttpServerResponder>

namespace sw::server {

HttpFront::HttpFront(Handler handler, QObject *parent) : QAbstractHttpServer(parent), m_handler(std::move(handler)) {}

namespace {
QByteArray methodName(QHttpServerRequest::Method m) {
    switch (m) {
    case QHttpServerRequest::Method::Get:
        return "GET";
    case QHttpServerRequest::Method::Put:
        return "PUT";
    case QHttpServerRequest::Method::Delete:
        return "DELETE";
    case QHttpServerRequest::Method::Post:
        return "POST";
    case QHttpServerRequest::Method::Head:
        return "HEAD";
    case QHttpServerRequest::Method::Options:
        return "OPTIONS";
    case QHttpServerRequest::Method::Patch:
        return "PATCH";
    case QHttpServerRequest::Method::Connect:
        return "CONNECT";
    case QHttpServerRequest::Method::Trace:
        return "TRACE";
    default:
        return "UNKNOWN";
    }
}
} // namespace

namespace {
// A chat route's client gets the error in its own format (its SDK reads that shape); any other
// path the listener's own.
Answer answerOf(const InboundRequest &in, const Rejection &rejection) {
    const auto api = wire::apiOfChatRoute(in.path);
    return {rejection.status,
            {{"Content-Type", "application/json"}},
            api ? formats::codecFor(*api).encodeError(model::GatewayError::make(
                      rejection.status, model::GatewayError::categoryForStatus(rejection.status), rejection.message))
                : RequestGuard::body(rejection)};
}
} // namespace

std::optional<Answer> HttpFront::listenerRefusal(const ListenerIdentity &listener, const InboundRequest &request,
                                                 qint64 bodyBytes) {
    if (const std::optional<Rejection> rejection =
            RequestGuard::check(listener, request.method, request.headers, bodyBytes))
        return answerOf(request, *rejection);
    return std::nullopt;
}

bool HttpFront::handleRequest(const QHttpServerRequest &request, QTcpSocket *socket) {
    InboundRequest in;
    in.method = methodName(request.method());
    auto *guard = ConnectionGuard::of(socket);
    // The guard keeps the fields of a head it shortened for Qt's parser (ConnectionGuard::setHandsOverHeads),
    // and its path when that is a plain one (no query then).
    if (!guard || !guard->takeHeaders(&in.headers, &in.path))
        in.headers = request.headers();
    if (guard)
        in.key = guard->takeKey(); // looked up on the head, once
    if (in.path.isEmpty()) {
        in.path = request.url().path();
        in.query = request.query();
    }
    in.body = request.body();
    in.peer = request.remoteAddress();
    if (socket)
        in.peerPort = socket->peerPort();
    // A request Qt parsed after an answer that ended the connection (it may still be sending):
    // its own answer could never be sent, so it does not run. The guard drops such bytes first.
    if (socket && socket->state() != QAbstractSocket::ConnectedState)
        return true;
    auto *exchange = new HttpExchange(makeResponder(request, socket), socket);
    exchange->setHeadRequest(in.method == "HEAD");
    if (guard) {
        exchange->setConnectionEnd(guard->closeAfterAnswer(), guard->http10());
        guard->requestDispatched(); // no connection timers while this answer is pending
        connect(exchange, &QObject::destroyed, guard, &ConnectionGuard::responseDone);
    }
    std::optional<Answer> refusal = listenerRefusal(m_listener, in, in.body.size());
    if (!refusal && in.body.size() > m_limits.maxBodyBytes) // the guard counts first; this is the backstop
        refusal = answerOf(in, {413, "request_too_large", QStringLiteral("request body is over limits.maxBodyBytes")});
    if (refusal) {
        Q_EMIT refused(refusal->status);
        exchange->respond(refusal->status, refusal->headers, refusal->body);
        exchange->deleteLater();
        return true;
    }
    // What the handler writes to its client (a stream's header block) leaves when it returns, after the
    // request it sent upstream: the upstream starts one client write sooner.
    const http::WriteBatch batch;
    m_handler(std::move(in), exchange);
    return true;
}

void HttpFront::missingHandler(const QHttpServerRequest &, QTcpSocket *) {
    // Unreachable: handleRequest takes every request.
}

} // namespace sw::server
