#include "core/server/chat_request.h"

#include "core/failover/attempt_loop.h"
#include "core/failover/candidate_policy.h"
#include "core/failover/provider_down_marks.h"
#include "core/server/chat_admission.h"
#include "core/server/client_stream.h"
#include "core/server/gateway_auth.h"
#include "core/server/http_exchange.h"
#include "core/server/idempotency_store.h"
#include "core/server/request_ids.h"
#include "core/telemetry/attempt_reporter.h"
#include "core/telemetry/telemetry.h"
#include "core/util/clock.h"

#include <QDateTime>

namespace sw::server {

using model::ErrorCategory;
using model::GatewayError;

namespace {
// The client's address as text, for the request's log line and attempts. Every request from one
// machine has the same address: the last one's text is kept (QHostAddress::toString was 1 k
// instructions a request).
QString peerText(const QHostAddress &peer) {
    thread_local QHostAddress last;
    thread_local QString lastText;
    if (peer != last || lastText.isNull()) {
        last = peer;
        lastText = peer.toString();
    }
    return lastText;
}

// How long a client without a stream waits, when it says so: the OpenAI and Anthropic SDKs (and every
// SDK Stainless generates) send their timeout in X-Stainless-Timeout, in seconds. A client that leaves
// before the attempt budget fires (half the deadline, 60 s by default) never saw the fallback: its
// SDK asked again, the stalled candidate got every retry (probe R1 1). The request's deadline is
// brought inside that wait, less kClientWaitMarginMs for the answer to travel; a stream's headers
// stop the SDK's clock, so a stream keeps the configured deadline. A budget cut on the client's
// clock marks nothing (LoopSettings::ownDeadlineMs): one client's impatience is no outage for its
// tenant (probe S2 F2). Waits under kLeastClientWaitMs are not heeded.
constexpr qint64 kClientWaitMarginMs = 250;
constexpr qint64 kLeastClientWaitMs = 2000;
std::optional<qint64> clientWaitMs(const http::HeaderList &headers) {
    for (const auto &h : headers) {
        if (!http::sameName(h.first, "x-stainless-timeout"))
            continue;
        const QByteArray v = h.second.trimmed();
        if (v.isEmpty() || v.size() > 12 ||
            !std::all_of(v.begin(), v.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; }))
            return std::nullopt;
        bool ok = false;
        const double seconds = v.toDouble(&ok);
        if (!ok || seconds * 1000 < kLeastClientWaitMs)
            return std::nullopt;
        return qint64(seconds * 1000);
    }
    return std::nullopt;
}
} // namespace

ChatRequest::ChatRequest(EngineContext &ctx, wire::Api format, InboundRequest &&request, HttpExchange *exchange,
                         QString tenant, QString requestId, QObject *parent)
    : QObject(parent), m_ctx(ctx), m_config(ctx.config), m_format(format), m_request(std::move(request)),
      m_exchange(exchange), m_tenant(std::move(tenant)), m_requestId(std::move(requestId)) {
    if (m_exchange)
        m_exchange->setParent(this);
}

ChatRequest::~ChatRequest() {
    m_loop.reset(); // aborts what is still in flight, before the runner goes
    releaseBudget();
}

void ChatRequest::start() {
    m_startMs = m_ctx.clock->nowMs();
    m_ctx.telemetry->requestStarted();
    formats::EncodeInfo info;
    info.responseId = m_requestId;
    info.createdSecs = QDateTime::currentSecsSinceEpoch();
    m_client = std::make_unique<ClientStream>(
        m_exchange, m_format, info, requestIdHeaders(m_format, m_requestId),
        [this](int status, const http::HeaderList &headers, const QByteArray &body) {
            if (m_ctx.idempotency && !m_idempotencyKey.isEmpty())
                m_ctx.idempotency->complete(m_tenant, m_idempotencyKey, status, headers, body);
        });

    GatewayError error;
    auto parsed = formats::codecFor(m_format).decode(m_request.body, &error);
    if (!parsed) {
        recordRefusal(error.status, QStringLiteral("invalid_request"), error.message,
                      ChatAdmission::requestedModel(m_format, m_request.body));
        m_client->respondError(error);
        return finish();
    }
    m_parsed = std::move(*parsed);
    m_client->setRequest(m_parsed);

    auto resolution = failover::CandidateResolver::resolve(*m_config, m_parsed.model, m_tenant);
    if (!resolution || !ChatAdmission::mayReachAny(*m_config, m_tenant, *resolution)) {
        // The 404 count_tokens gives for the same name (one text for both).
        const GatewayError unroutable = ChatAdmission::unroutableModelError(*m_config, m_parsed.model, m_tenant);
        recordRefusal(unroutable.status, QStringLiteral("unknown_model"), unroutable.message, m_parsed.model);
        m_client->respondError(unroutable);
        return finish();
    }
    // A completed twin's answer first: a replay costs nothing, so the budget does not refuse it (probe
    // K3 3). A budget refusal after the key was taken never becomes its stored answer: only a 200 is
    // kept (ClientStream's `answered`), and finish() lets the key go.
    if (!checkIdempotency() || !reserveBudget(*resolution))
        return finish();

    AttemptRunnerSetup setup;
    setup.config = m_config;
    setup.request = &m_parsed;
    setup.callerAuth = callerAuth();
    if (!setup.callerAuth.isEmpty())
        for (const failover::Candidate &c : resolution->chain)
            if (c.provider.credentials.contains(QLatin1String("passthrough")) &&
                failover::CandidatePolicy::tenantMayUse(*m_config, m_tenant, c.provider)) {
                setup.callerAuthProvider = c.provider.id;
                setup.callerAuthBaseUrl = c.provider.baseUrl;
                break;
            }
    setup.tenant = m_tenant;
    if (m_reservation)
        setup.outputCap = int(ChatAdmission::kMaxReservedOutputTokens);
    QByteArray clientVia; // the client's Via fields, joined in order (RFC 9110 5.3)
    for (const auto &h : m_request.headers) {
        if (http::sameName(h.first, "anthropic-beta") || http::sameName(h.first, "anthropic-version") ||
            http::sameName(h.first, "openai-beta"))
            setup.forwardHeaders.append(h);
        else if (http::sameName(h.first, "via"))
            clientVia += (clientVia.isEmpty() ? QByteArray() : QByteArrayLiteral(", ")) + h.second;
    }
    setup.via = m_ctx.hops.viaUpstream(clientVia);
    AttemptRunnerHandle upstreamSide = m_ctx.makeAttemptRunner(std::move(setup), this);
    m_runner = upstreamSide.runner;
    m_reporter = std::make_unique<telemetry::AttemptReporter>(
        *m_ctx.telemetry,
        telemetry::RequestFacts{m_requestId, m_tenant, m_parsed.model, formats::formatName(m_format),
                                peerText(m_request.peer)},
        m_ctx.marksChanged);
    // Each usage row is spend as it is recorded (Engine counts it): the reservation shrinks by it, so
    // the request is not counted twice while it finishes.
    m_reporter->setCostRecorded([this](double cost) {
        if (m_budgets)
            m_budgets->consume(m_reservation, cost);
    });

    failover::LoopSettings settings;
    settings.tenant = m_tenant;
    settings.requestId = m_requestId;
    settings.requestedModel = m_parsed.model;
    settings.stream = m_parsed.stream;
    settings.failoverEnabled = m_config->failover.enabled;
    settings.deadlineMs = m_config->failover.deadlineMs;
    if (const auto wait = m_parsed.stream ? std::nullopt : clientWaitMs(m_request.headers);
        wait && *wait - kClientWaitMarginMs < settings.deadlineMs) {
        settings.ownDeadlineMs = settings.deadlineMs;
        settings.deadlineMs = *wait - kClientWaitMarginMs;
    }
    settings.keepaliveMs = m_config->failover.keepaliveMs;
    settings.upstreamIdleTimeoutMs = m_config->failover.upstreamIdleTimeoutMs;
    settings.maxRetryDelayMs = m_config->failover.maxRetryDelayMs;
    settings.maxHoldBytes = m_config->limits.maxHoldBytes;
    settings.inputTokensEstimate = (m_request.body.size() + 3) / 4;
    failover::AttemptLoop::Deps deps;
    deps.clock = m_ctx.clock;
    deps.marks = m_ctx.marks;
    deps.runner = m_runner;
    deps.observer = m_reporter.get();
    deps.client = m_client.get();
    deps.config = m_config;
    if (m_reservation)
        deps.admitAnotherTry = [this]() -> std::optional<model::GatewayError> {
            if (!m_budgets)
                return std::nullopt;
            // The request's record ends with this error (the attempt loop's), not as a refusal too.
            const auto refusal = ChatAdmission::renewBudget(*m_budgets, m_reservation, m_estimateUsd);
            return refusal ? std::optional(refusal->error) : std::nullopt;
        };
    m_loop = std::make_unique<failover::AttemptLoop>(deps, settings, std::move(*resolution), m_parsed,
                                                     [this]() { finish(); });
    upstreamSide.attach(m_loop.get());
    if (m_exchange) {
        connect(m_exchange, &HttpExchange::clientGone, this, [this]() { m_loop->onClientGone(); });
        connect(m_exchange, &HttpExchange::drained, this, [this]() { m_loop->onClientDrained(); });
    }
    m_loop->start();
}

bool ChatRequest::reserveBudget(const failover::Resolution &resolution) {
    m_budgets = m_ctx.budgets;
    // A tenant without a budget reserves nothing: no estimate on its request path.
    const auto tenant = m_config->tenants.constFind(m_tenant);
    if (!m_budgets || tenant == m_config->tenants.cend() || !tenant->budget)
        return true;
    const double estimate =
        ChatAdmission::costEstimate(*m_config, m_tenant, resolution, m_parsed, m_request.body.size());
    const auto refusal = ChatAdmission::reserveBudget(*m_budgets, m_tenant, estimate, &m_reservation);
    m_estimateUsd = estimate;
    if (!refusal)
        return true;
    recordRefusal(refusal->error.status, refusal->reason, refusal->error.message, m_parsed.model);
    m_client->respondError(refusal->error);
    return false;
}

void ChatRequest::recordRefusal(int status, const QString &reason, const QString &message, const QString &model) {
    telemetry::recordRefusal(*m_ctx.telemetry,
                             {m_requestId, m_tenant, model, formats::formatName(m_format), peerText(m_request.peer)},
                             status, reason, message, m_ctx.clock->nowMs());
}

void ChatRequest::releaseBudget() {
    if (m_budgets && m_reservation)
        m_budgets->release(std::exchange(m_reservation, 0));
}

bool ChatRequest::checkIdempotency() {
    if (!m_ctx.idempotency)
        return true;
    const QByteArray header = m_request.header("idempotency-key");
    if (header.isEmpty())
        return true;
    const QByteArray key = IdempotencyStore::ownedKey(header, callerAuth());
    // A twin in flight was answered 409 at admission (ChatAdmission), in this same turn.
    const auto hit = m_ctx.idempotency->begin(m_tenant, key, m_request.path, m_request.body);
    if (hit.state == IdempotencyStore::State::Completed) {
        if (m_exchange) {
            auto headers = hit.headers;
            headers.emplace_back("x-switchman-idempotent-replay", "true");
            m_exchange->respond(hit.status, headers, hit.body);
        }
        return false;
    }
    if (hit.state == IdempotencyStore::State::InFlight)
        return true; // not reached (see above); served without the key rather than refused
    m_idempotencyKey = key;
    if (m_parsed.stream) // a streamed answer is kept too: a retry is one billable interaction
        m_client->keepStreams(m_config->limits.maxHoldBytes);
    return true;
}

QByteArray ChatRequest::callerAuth() const {
    return GatewayAuth(m_config->tenants).providerKey(m_request);
}

void ChatRequest::finish() {
    if (m_finished)
        return;
    m_finished = true;
    releaseBudget(); // whatever it cost is counted by now (its usage rows), or it cost nothing
    if (m_ctx.idempotency && !m_idempotencyKey.isEmpty())
        m_ctx.idempotency->abandon(m_tenant, m_idempotencyKey); // no-op once completed
    m_ctx.telemetry->requestFinished(m_ctx.clock->nowMs() - m_startMs);
    Q_EMIT done();
    deleteLater();
}

} // namespace sw::server
