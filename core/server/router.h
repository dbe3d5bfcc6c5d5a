#pragma once
// Every request the listener passed its guards reaches dispatch(). The routes:
//
//   GET|HEAD /, /healthz              no key   liveness, where marks live, the configuration and ledger state
//   POST /v1/chat/completions         tenant   a chat request (OpenAI Chat Completions)
//   POST /v1/messages                 tenant   a chat request (Anthropic Messages)
//   POST /v1/responses                tenant   a chat request (OpenAI Responses)
//   POST /v1/pi/stream                tenant   a chat request (pi's native stream)
//   POST /v1/messages/count_tokens    tenant   a local estimate, never forwarded
//   GET  /v1/models                   tenant   the configured routes and models
//   GET  /v1/models/{id}              tenant   one of them (an id may hold '/', sent raw or as %2F)
//   GET  /metrics                     admin    Prometheus text
//   any  /admin/...                   admin    the admin API (AdminApi)
//
// The models routes answer in OpenAI's shape, or in Anthropic's when the client sends
// anthropic-version (as Anthropic's SDKs and Claude Code do).
//
// Errors on a chat route are written in that route's own format; elsewhere in
// one JSON shape both OpenAI and Anthropic clients read. A known path asked with
// another method is 405 with Allow; an unknown path is 404. Keys are checked by
// GatewayAuth, once, on the request's head (judgeHead): a request with a body that
// its key does not admit is answered before any of that body is read. A chat
// request then passes ChatAdmission before it starts.

#include "core/model/gateway_error.h"
#include "core/server/engine_context.h"
#include "core/server/inbound_request.h"
#include "core/server/request_guard.h"
#include "core/server/request_head.h"
#include "core/server/request_ids.h"

#include <QObject>

namespace sw::telemetry {
class BudgetTracker;
}
namespace sw::http {
class HeadParser;
}

namespace sw::server {

class AdminApi;
class EngineControl;
class HttpExchange;

class Router final : public QObject {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(Router)
public:
    // `budgets` may be null (no budget gate, no budget metrics). Request ids are "req_" + `requestIdPrefix` +
    // 13 unguessable characters (RequestIds): the prefix tells this process's ids from another replica's.
    Router(EngineContext &ctx, EngineControl &engine, telemetry::BudgetTracker *budgets, QByteArray requestIdPrefix,
           QObject *parent = nullptr);
    ~Router() override;

    // Answers the request, now or (a chat request, an admin feed or usage query) later; owns the exchange.
    void dispatch(InboundRequest &&request, HttpExchange *exchange);
    // On a request's head, before a byte of its body is read (HttpFront::judgeHead): looks the
    // gateway key up (once: dispatch() takes the lookup from InboundRequest::key), and answers
    // now a request with a body that no route would read, for a caller without a key, with an
    // unknown one, or without admin rights where an admin's key is needed. That answer is the one
    // the whole request would get (listener refusals first, then those of answerBeforeRoutes).
    // Any request, with a body or not, whose Via says it came round a loop is answered 508 first
    // (HopMarker): no upstream is touched for it.
    HeadVerdict judgeHead(const RequestHead &head, const ListenerIdentity &listener) const;

    int activeRequests() const { return m_active; }
    AdminApi &admin() const { return *m_admin; }
    // Ends every chat request in flight at once (the engine is going away).
    void closeRequests();
    // Shutting down (Engine::requestShutdown): a chat request that arrives on a connection still
    // open is refused with 503 and Retry-After in its format, and /healthz answers 503.
    void setDraining(bool draining) { m_draining = draining; }
    bool draining() const { return m_draining; }
    // Ends every chat request in flight with `error`, as its format ends a cut (in band once its
    // stream is open, else whole), billed (ChatRequest::shutDown).
    void shutDownRequests(const model::GatewayError &error);

Q_SIGNALS:
    void requestEnded(); // a chat request in flight ended (activeRequests() went down)

private:
    // Every answer that needs no route, in this order: a request that came round a loop (508,
    // unless judged on its head), a header value with a control byte (400), an unknown path
    // (404) or method (405), /healthz, a chat request while draining (503), a missing or unknown
    // key (401), a tenant without admin rights on /metrics or /admin/ (403).
    // nullopt: a route answers, for `*caller`. `chat`: the chat route's API (wire::apiOfChatRoute).
    std::optional<Answer> answerBeforeRoutes(const InboundRequest &request, std::optional<wire::Api> chat,
                                             std::optional<Caller> *caller) const;
    // What the request's Via fields say of a loop (HopMarker), from the head or the whole request.
    std::optional<QString> loopProblem(const http::HeadParser &fields) const;
    std::optional<QString> loopProblem(const http::HeaderList &headers) const;
    void dispatchChat(wire::Api format, InboundRequest &&request, HttpExchange *exchange, const QString &tenant);
    void countTokens(const InboundRequest &request, HttpExchange *exchange, const QString &tenant);
    struct ListedModel {
        QString id;
        QString kind; // "route" or "model"
    };
    QList<ListedModel> modelsFor(const QString &tenant) const; // what this tenant may reach
    void listModels(const InboundRequest &request, HttpExchange *exchange, const QString &tenant);
    void getModel(const InboundRequest &request, HttpExchange *exchange, const QString &tenant);
    void metrics(HttpExchange *exchange);

    EngineContext &m_ctx;
    EngineControl &m_engine;
    telemetry::BudgetTracker *m_budgets = nullptr;
    AdminApi *m_admin = nullptr;
    RequestIds m_requestIds;
    qint64 m_createdSecs = 0; // when this router started (Unix seconds): the models' `created`
    int m_active = 0;
    bool m_draining = false;
};

} // namespace sw::server
