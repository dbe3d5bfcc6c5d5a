#include "core/server/router.h"

#include "core/failover/candidate_policy.h"
#include "core/failover/provider_down_marks.h"
#include "core/http/head_parser.h"
#include "core/server/admin_api.h"
#include "core/server/chat_admission.h"
#include "core/server/chat_request.h"
#include "core/server/client_stream.h"
#include "core/server/engine_control.h"
#include "core/server/gateway_auth.h"
#include "core/server/http_exchange.h"
#include "core/server/http_front.h"
#include "core/server/request_guard.h"
#include "core/telemetry/attempt_reporter.h"
#include "core/telemetry/budget_tracker.h"
#include "core/telemetry/telemetry.h"
#include "core/wire/echoed_identifier.h"

#include <QCryptographicHash>
#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QUrl>
#include <algorithm>
#include <charconv>

namespace sw::server {

using model::ErrorCategory;
using model::GatewayError;

namespace {

const QLatin1String kModelPathPrefix("/v1/models/");

bool isModelPath(const QString &path) {
    return path.startsWith(kModelPathPrefix);
}

// Anthropic's SDKs (and Claude Code) send anthropic-version on every call, OpenAI's never do. x-api-key is no
// sign: the gateway takes it from any client.
bool anthropicClient(const InboundRequest &request) {
    return !request.header("anthropic-version").isEmpty();
}

// The methods a known path answers (the Allow header of a 405); empty for a path no route has.
// /admin/ paths are not here: the admin API answers each of its own.
QByteArray allowedMethods(const QString &path) {
    if (wire::apiOfChatRoute(path) || path == QLatin1String("/v1/messages/count_tokens"))
        return "POST";
    if (path == QLatin1String("/") || path == QLatin1String("/healthz") || path == QLatin1String("/v1/models") ||
        path == QLatin1String("/metrics") || isModelPath(path))
        return "GET, HEAD";
    return {};
}

bool allows(const QByteArray &allowed, const QByteArray &method) {
    for (const QByteArray &m : allowed.split(','))
        if (m.trimmed() == method)
            return true;
    return false;
}

void answerJson(HttpExchange *exchange, int status, const QByteArray &body, const http::HeaderList &extra = {}) {
    http::HeaderList headers{{"Content-Type", "application/json"}};
    headers += extra;
    exchange->respond(status, headers, body);
    exchange->deleteLater();
}

QString prometheusLabel(QString value) {
    value.replace(QLatin1Char('\\'), QLatin1String("\\\\")).replace(QLatin1Char('"'), QLatin1String("\\\""));
    return value.replace(QLatin1Char('\n'), QLatin1String("\\n"));
}

const QString kUnknownKey = QStringLiteral("missing or unknown gateway key");

} // namespace

Router::Router(EngineContext &ctx, EngineControl &engine, telemetry::BudgetTracker *budgets, QByteArray requestIdPrefix,
               QObject *parent)
    : QObject(parent), m_ctx(ctx), m_engine(engine), m_budgets(budgets), m_admin(new AdminApi(engine, this)),
      m_requestIds(std::move(requestIdPrefix)),
      m_createdSecs(ctx.clock ? ctx.clock->epochMs() / 1000 : QDateTime::currentSecsSinceEpoch()) {}

Router::~Router() {
    closeRequests();
}

void Router::closeRequests() {
    qDeleteAll(findChildren<ChatRequest *>(Qt::FindDirectChildrenOnly));
}

void Router::shutDownRequests(const GatewayError &error) {
    for (ChatRequest *request : findChildren<ChatRequest *>(Qt::FindDirectChildrenOnly))
        request->shutDown(error);
}

namespace {
// A target whose path may be one of those that need no key or an admin key (/, /healthz,
// /metrics, /admin/...): any but /v1/... (percent escapes cannot make "/v1/" anything else).
bool mayBeOutsideV1(QByteArrayView target) {
    return !target.startsWith("/v1/");
}

Answer jsonAnswer(int status, QByteArray body, const http::HeaderList &extra = {}) {
    Answer answer{status, {{"Content-Type", "application/json"}}, std::move(body)};
    answer.headers += extra;
    return answer;
}

// An error off the chat routes: {"type":"error","error":{"type","message"}}, which OpenAI and Anthropic clients
// both read.
Answer errorAnswer(int status, const char *type, const QString &message, const http::HeaderList &extra = {}) {
    return jsonAnswer(status, RequestGuard::body({status, QByteArray(type), message}), extra);
}

Answer chatError(wire::Api api, int status, ErrorCategory category, const QString &message) {
    return jsonAnswer(status, formats::codecFor(api).encodeError(GatewayError::make(status, category, message)));
}

// 508 Loop Detected in the route's format (a chat route's own, else the listener's). The SDKs retry a
// 5xx on their own; x-should-retry tells them a loop does not go away by asking again.
Answer loopAnswer(std::optional<wire::Api> chat, const QString &message) {
    const http::HeaderList noRetry{{"x-should-retry", "false"}};
    if (!chat)
        return errorAnswer(508, "api_error", message, noRetry);
    Answer answer = chatError(*chat, 508, ErrorCategory::ServerError, message);
    answer.headers += noRetry;
    return answer;
}
} // namespace

std::optional<QString> Router::loopProblem(const http::HeadParser &fields) const {
    HopMarker::Reading reading;
    QByteArrayView name;
    QByteArrayView value;
    for (qsizetype pos = 0; fields.nextField(pos, name, value);)
        if (http::sameName(name, "via"))
            m_ctx.hops.read(value, reading);
    return m_ctx.hops.loopProblem(reading);
}

std::optional<QString> Router::loopProblem(const http::HeaderList &headers) const {
    HopMarker::Reading reading;
    for (const auto &h : headers)
        if (http::sameName(h.first, "via"))
            m_ctx.hops.read(h.second, reading);
    return m_ctx.hops.loopProblem(reading);
}

HeadVerdict Router::judgeHead(const RequestHead &head, const ListenerIdentity &listener) const {
    HeadVerdict verdict;
    // A request that came round a loop (its Via holds this engine's entry) is answered first, on
    // every path and for every caller: any other answer would send it round again.
    if (head.fields)
        if (const auto loop = loopProblem(*head.fields)) {
            verdict.answer = loopAnswer(wire::apiOfChatRoute(head.request().path), *loop);
            return verdict;
        }
    verdict.key.done = true;
    verdict.key.config = m_ctx.config;
    verdict.key.caller = GatewayAuth(m_ctx.config->tenants).authenticate(head);
    const std::optional<Caller> &caller = verdict.key.caller;
    // A head alone holds nothing while it is answered, and a known caller's body is read as
    // before (no tenants: every caller is the admin "local"); an admin may use every path.
    if (!head.hasBody || (caller && (caller->admin || !mayBeOutsideV1(head.target))))
        return verdict;
    // No key, an unknown one, or a tenant's key where it may need an admin's: no route reads such
    // a request's body, so the answer its head decides is sent now, the one the whole request
    // would get, and the body is never taken.
    InboundRequest request = head.request();
    verdict.answer = HttpFront::listenerRefusal(listener, request, head.bodyBytes);
    if (verdict.answer && m_ctx.telemetry)
        m_ctx.telemetry->countRefusal(verdict.answer->status); // a foreign Host or Origin: never dispatched
    if (!verdict.answer) {
        request.key = verdict.key;
        std::optional<Caller> routed;
        verdict.answer = answerBeforeRoutes(request, wire::apiOfChatRoute(request.path), &routed);
    }
    if (verdict.answer && verdict.answer->status == 401 && m_ctx.telemetry)
        m_ctx.telemetry->countRefusal(401); // counted only, as in dispatch()
    return verdict;
}

std::optional<Answer> Router::answerBeforeRoutes(const InboundRequest &req, std::optional<wire::Api> chat,
                                                 std::optional<Caller> *routedCaller) const {
    const QString &path = req.path;
    const bool isChat = chat.has_value();
    // A request that came round a loop; judged on the head already when the listener looked the
    // key up there (judgeHead).
    if (!req.key.done)
        if (const auto loop = loopProblem(req.headers))
            return loopAnswer(chat, *loop);
    // Header values go upstream (anthropic-beta, a passthrough key, ...) and into logs. One with a
    // control byte never gets here: the connection's guard refuses such a head, in the route's error
    // format, and closes the connection (ConnectionGuard::onHeadComplete); a chunked body's trailer
    // fields, the only others, are refused there too.

    const bool admin = path.startsWith(QLatin1String("/admin/"));
    if (!admin) {
        const QByteArray allowed = allowedMethods(path);
        if (allowed.isEmpty())
            return errorAnswer(404, "not_found_error",
                               QStringLiteral("no route for %1 %2").arg(QString::fromLatin1(req.method), path));
        if (!allows(allowed, req.method)) {
            const QString message = QStringLiteral("%1 takes %2").arg(path, QString::fromLatin1(allowed));
            if (isChat) {
                Answer answer = chatError(*chat, 405, ErrorCategory::InvalidRequest, message);
                answer.headers.append({"Allow", allowed});
                return answer;
            }
            return errorAnswer(405, "invalid_request_error", message, {{"Allow", allowed}});
        }
    }

    if (path == QLatin1String("/healthz") || path == QLatin1String("/")) {
        const EngineControl::HealthNote config = m_engine.configHealth();
        const EngineControl::HealthNote usage = m_engine.usageHealth();
        QJsonObject health{
            {QStringLiteral("status"), m_draining ? QStringLiteral("shutting down") : QStringLiteral("ok")},
            {QStringLiteral("marks"), m_engine.marksStoreDescription()},
            {QStringLiteral("config"), config.state},
            {QStringLiteral("usage"), usage.state}};
        if (!config.error.isEmpty() || !usage.error.isEmpty()) {
            // The reasons name files and may quote the configuration: for an admin key, as the admin
            // API gives them (anyone, with no tenants configured: the listener is loopback-only then).
            const std::optional<Caller> who = req.key.done && req.key.config == m_ctx.config
                                                  ? req.key.caller
                                                  : GatewayAuth(m_ctx.config->tenants).authenticate(req);
            if (who && who->admin) {
                if (!config.error.isEmpty())
                    health.insert(QStringLiteral("configError"), config.error);
                if (!usage.error.isEmpty())
                    health.insert(QStringLiteral("usageError"), usage.error);
            }
        }
        return jsonAnswer(m_draining ? 503 : 200, QJsonDocument(health).toJson(QJsonDocument::Compact));
    }

    if (isChat && m_draining) {
        // The listener is closed: a client that kept its connection is told to come back (a
        // restarted gateway, or another replica), and the connection ends with the answer.
        Answer answer = jsonAnswer(
            503,
            formats::codecFor(*chat).encodeError(GatewayError::make(
                503, ErrorCategory::Overloaded, QStringLiteral("Switchman is shutting down; retry shortly"))),
            {{"Retry-After", "1"}});
        answer.endConnection = true;
        return answer;
    }

    // The key as the listener looked it up on the head, unless the tenants may have changed since.
    std::optional<Caller> &caller = *routedCaller;
    if (req.key.done && req.key.config == m_ctx.config)
        caller = req.key.caller;
    else
        caller = GatewayAuth(m_ctx.config->tenants).authenticate(req);
    if (isChat) {
        if (!caller)
            return chatError(*chat, 401, ErrorCategory::Authentication, kUnknownKey);
        return std::nullopt;
    }
    if (path == QLatin1String("/v1/messages/count_tokens")) {
        if (!caller)
            return chatError(wire::Api::AnthropicMessages, 401, ErrorCategory::Authentication, kUnknownKey);
        return std::nullopt;
    }
    if (path == QLatin1String("/v1/models") || isModelPath(path)) {
        if (!caller)
            return errorAnswer(401, "authentication_error", kUnknownKey);
        return std::nullopt;
    }
    // Metrics and the admin API need an admin tenant's key: a known tenant without admin rights
    // gets 403, an unknown caller 401.
    if (!caller || !caller->admin)
        return errorAnswer(caller ? 403 : 401, caller ? "permission_error" : "authentication_error",
                           QStringLiteral("admin key required"));
    return std::nullopt;
}

void Router::dispatch(InboundRequest &&req, HttpExchange *exchange) {
    std::optional<Caller> caller;
    const std::optional<wire::Api> chat = wire::apiOfChatRoute(req.path);
    // HEAD is GET without the body (RFC 9110 9.3.2), which HttpFront told the exchange to leave
    // out; a chat route takes POST only, and the event feed would never end.
    if (req.method == "HEAD" && !chat && req.path != QLatin1String("/admin/events"))
        req.method = "GET";
    if (std::optional<Answer> answer = answerBeforeRoutes(req, chat, &caller)) {
        // No key, or one no tenant holds: counted, never recorded (a keyless peer must not fill
        // the bounded attempts and log with lines of its own making).
        if (answer->status == 401 && m_ctx.telemetry)
            m_ctx.telemetry->countRefusal(401);
        if (answer->endConnection)
            exchange->endConnectionAfterAnswer();
        exchange->respond(answer->status, answer->headers, answer->body);
        exchange->deleteLater();
        return;
    }
    // A route answers, for the caller named.
    const QString &path = req.path;
    if (chat)
        return dispatchChat(*chat, std::move(req), exchange, caller->tenant);
    if (path == QLatin1String("/v1/messages/count_tokens"))
        return countTokens(req, exchange, caller->tenant);
    if (isModelPath(path))
        return getModel(req, exchange, caller->tenant);
    if (path == QLatin1String("/v1/models"))
        return listModels(req, exchange, caller->tenant);
    if (path == QLatin1String("/metrics"))
        return metrics(exchange);
    m_admin->handle(req, exchange);
    // An exchange the admin API keeps (an event feed, a usage query) has moved under it.
    if (exchange->parent() != m_admin)
        exchange->deleteLater();
}

void Router::dispatchChat(wire::Api format, InboundRequest &&req, HttpExchange *exchange, const QString &tenant) {
    const GatewayAuth auth(m_ctx.config->tenants);
    ChatAdmission::Gates gates;
    gates.auth = &auth;
    gates.idempotency = m_ctx.idempotency;
    gates.budgets = m_budgets;
    gates.paused = m_engine.paused();
    QString requestId = m_requestIds.next();
    if (const auto refusal = ChatAdmission::check(gates, req, tenant)) {
        // The request is the tenant's, and did not get through: the window, /admin/attempts and
        // the log say so under the id the client was given.
        if (m_ctx.telemetry)
            telemetry::recordRefusal(*m_ctx.telemetry,
                                     {requestId, tenant, ChatAdmission::requestedModel(format, req.body),
                                      formats::formatName(format), req.peer.toString()},
                                     refusal->error.status, refusal->reason, refusal->error.message,
                                     m_ctx.clock ? m_ctx.clock->nowMs() : QDateTime::currentMSecsSinceEpoch());
        return answerJson(exchange, refusal->error.status, formats::codecFor(format).encodeError(refusal->error),
                          requestIdHeaders(format, requestId) + errorHintHeaders(refusal->error));
    }
    auto *request = new ChatRequest(m_ctx, format, std::move(req), exchange, tenant, std::move(requestId), this);
    ++m_active;
    connect(request, &ChatRequest::done, this, [this]() {
        --m_active;
        Q_EMIT requestEnded();
    });
    request->start();
}

void Router::countTokens(const InboundRequest &req, HttpExchange *exchange, const QString &tenant) {
    // Answered here, never forwarded: Claude Code calls it to decide when to compact its context, and a
    // forwarded call fails for subscription tokens. An estimate of 4 characters a token is enough for that.
    // The body is read as /v1/messages reads it (count_tokens bodies carry no max_tokens, which the
    // decoder does not need), so a body the decoder's guards refuse is refused before any tree of it
    // is built: parsed into Qt's tree first, 31 MB of tiny values held 470 MB (probe X2-F6).
    const auto &codec = formats::codecFor(wire::Api::AnthropicMessages);
    GatewayError error;
    const auto parsed = codec.decode(req.body, &error);
    if (!parsed)
        return answerJson(exchange, 400, codec.encodeError(error));
    if (const auto unroutable = ChatAdmission::unroutableModel(*m_ctx.config, parsed->model, tenant))
        return answerJson(exchange, 404, codec.encodeError(*unroutable));
    qint64 chars = parsed->context.systemPrompt.size();
    for (const auto &m : parsed->context.messages)
        for (const auto &b : m.content)
            chars += b.text.size() + b.argumentsJson.size() + (b.type == model::BlockType::Image ? 6000 : 0) +
                     (b.type == model::BlockType::Document ? b.data.size() / 4 : 0);
    for (const auto &t : parsed->context.tools)
        chars +=
            t.name.size() + t.description.size() + QJsonDocument(t.parameters).toJson(QJsonDocument::Compact).size();
    const qint64 tokens = std::max<qint64>(1, (chars + 3) / 4);
    answerJson(exchange, 200, QByteArrayLiteral("{\"input_tokens\":") + QByteArray::number(tokens) + '}');
}

QList<Router::ListedModel> Router::modelsFor(const QString &tenant) const {
    // A tenant limited to some providers (or regions) sees only what it may reach: the other
    // tenants' models and routes are not its business.
    const config::Config &config = *m_ctx.config;
    const auto reachable = [&config, &tenant](const QString &modelKey) {
        const auto provider = config.providers.constFind(modelKey.section(QLatin1Char('/'), 0, 0));
        return provider != config.providers.cend() &&
               failover::CandidatePolicy::tenantMayUse(config, tenant, *provider);
    };
    QList<ListedModel> out;
    for (const auto &r : config.routes)
        if (std::any_of(r.candidates.cbegin(), r.candidates.cend(), reachable))
            out.append({r.name, QStringLiteral("route")});
    for (const auto &m : config.models)
        if (reachable(m.key()))
            out.append({m.key(), QStringLiteral("model")});
    return out;
}

namespace {
// OpenAI's model object, and Anthropic's ModelInfo (created_at is RFC 3339).
QJsonObject openAIModel(const QString &id, const QString &kind, qint64 createdSecs) {
    return {{QStringLiteral("id"), id},
            {QStringLiteral("object"), QStringLiteral("model")},
            {QStringLiteral("created"), createdSecs},
            {QStringLiteral("owned_by"), QStringLiteral("switchman")},
            {QStringLiteral("switchman_kind"), kind}};
}

QJsonObject anthropicModel(const QString &id, qint64 createdSecs) {
    return {{QStringLiteral("type"), QStringLiteral("model")},
            {QStringLiteral("id"), id},
            {QStringLiteral("display_name"), id},
            {QStringLiteral("created_at"), QDateTime::fromSecsSinceEpoch(createdSecs, Qt::UTC).toString(Qt::ISODate)}};
}
} // namespace

void Router::listModels(const InboundRequest &req, HttpExchange *exchange, const QString &tenant) {
    const QList<ListedModel> models = modelsFor(tenant);
    const bool anthropic = anthropicClient(req);
    QJsonArray data;
    for (const ListedModel &m : models)
        data.append(anthropic ? anthropicModel(m.id, m_createdSecs) : openAIModel(m.id, m.kind, m_createdSecs));
    // Anthropic's list is paged; this one is a single page, so has_more is false.
    const QJsonObject list =
        anthropic ? QJsonObject{{QStringLiteral("data"), data},
                                {QStringLiteral("has_more"), false},
                                {QStringLiteral("first_id"), models.isEmpty() ? QJsonValue() : models.first().id},
                                {QStringLiteral("last_id"), models.isEmpty() ? QJsonValue() : models.last().id}}
                  : QJsonObject{{QStringLiteral("object"), QStringLiteral("list")}, {QStringLiteral("data"), data}};
    answerJson(exchange, 200, QJsonDocument(list).toJson(QJsonDocument::Compact));
}

void Router::getModel(const InboundRequest &req, HttpExchange *exchange, const QString &tenant) {
    // The id is the rest of the path: "provider/model" arrives as two segments, or as one with %2F
    // (which the URL parser leaves encoded).
    const QString id = QUrl::fromPercentEncoding(req.path.mid(kModelPathPrefix.size()).toUtf8());
    const bool anthropic = anthropicClient(req);
    for (const ListedModel &m : modelsFor(tenant))
        if (m.id == id)
            return answerJson(exchange, 200,
                              QJsonDocument(anthropic ? anthropicModel(m.id, m_createdSecs)
                                                      : openAIModel(m.id, m.kind, m_createdSecs))
                                  .toJson(QJsonDocument::Compact));
    // An id is quoted back only when it may be echoed (no control character, at most 256 bytes).
    const QByteArray idBytes = id.toUtf8();
    const QString named = wire::isEchoableIdentifier({idBytes.constData(), size_t(idBytes.size())})
                              ? QStringLiteral("model \"%1\"").arg(id)
                              : QStringLiteral("this model");
    const auto &codec = formats::codecFor(anthropic ? wire::Api::AnthropicMessages : wire::Api::OpenAICompletions);
    answerJson(exchange, 404,
               codec.encodeError(GatewayError::make(
                   404, ErrorCategory::NotFound,
                   QStringLiteral("%1 is not a route or configured model this key may use").arg(named))));
}

void Router::metrics(HttpExchange *exchange) {
    // Marks are counted per tenant, named by a short hash: tenant names stay out of a scrape.
    QHash<QString, int> marks;
    for (const auto &m : m_ctx.marks->active()) {
        const QByteArray th = QCryptographicHash::hash(m.tenant.toUtf8(), QCryptographicHash::Sha256).toHex().left(12);
        ++marks[QString::fromLatin1(th) + QChar(0x1f) + failover::failureKindName(m.kind)];
    }
    QString text = m_ctx.telemetry->metricsText(marks);
    text += QStringLiteral("# HELP switchman_marks_store_up 1 when the marks store is reachable "
                           "(always 1 for memory)\n# TYPE switchman_marks_store_up gauge\n"
                           "switchman_marks_store_up %1\n")
                .arg(m_engine.marksStoreUp() ? 1 : 0);
    if (m_budgets) {
        QString spend = QStringLiteral("# HELP switchman_tenant_spend_usd Cost of a tenant's usage in its current "
                                       "budget period (tenants with a budget).\n# TYPE switchman_tenant_spend_usd "
                                       "gauge\n");
        QString budget = QStringLiteral("# HELP switchman_tenant_budget_usd A tenant's spend budget per period.\n"
                                        "# TYPE switchman_tenant_budget_usd gauge\n");
        for (const auto &s : m_budgets->states()) {
            spend += QStringLiteral("switchman_tenant_spend_usd{tenant=\"%1\"} %2\n")
                         .arg(prometheusLabel(s.tenant))
                         .arg(s.spent, 0, 'g', 12);
            budget += QStringLiteral("switchman_tenant_budget_usd{tenant=\"%1\"} %2\n")
                          .arg(prometheusLabel(s.tenant))
                          .arg(s.usd, 0, 'g', 12);
        }
        text += spend + budget;
    }
    exchange->respond(200, {{"Content-Type", "text/plain; version=0.0.4"}}, text.toUtf8());
    exchange->deleteLater();
}

} // namespace sw::server
