#include "core/server/chat_admission.h"

#include "core/failover/candidate_policy.h"
#include "core/failover/candidate_resolver.h"
#include "core/formats/decode_prologue.h"
#include "core/server/gateway_auth.h"
#include "core/server/idempotency_store.h"
#include "core/telemetry/budget_tracker.h"
#include "core/wire/client_body.h"
#include "core/wire/rapid_json.h"

#include <algorithm>
#include <cmath>

namespace sw::server {

using model::ErrorCategory;
using model::GatewayError;

namespace {
Refusal invalid(int status, const QString &message, const QString &reason = QStringLiteral("invalid_request")) {
    return {GatewayError::make(status, ErrorCategory::InvalidRequest, message), reason};
}

GatewayError retryLater(int status, ErrorCategory category, const QString &message, qint64 afterMs) {
    auto error = GatewayError::make(status, category, message);
    error.retryAfterMs = afterMs;
    return error;
}

Refusal budgetRefusal(const telemetry::BudgetTracker::Refusal &refusal) {
    auto error = GatewayError::make(429, ErrorCategory::RateLimit, refusal.message);
    error.retryAfterMs = refusal.retryAfterS * 1000;
    const bool inFlight = refusal.kind == telemetry::BudgetTracker::Refusal::Kind::InFlight;
    // Requests in flight end in seconds: a client that retries after Retry-After is admitted, or
    // then told the budget is reached. A spent budget resets in hours: an SDK would sleep that long,
    // twice, before the app heard.
    error.shouldRetry = inFlight;
    error.budget = inFlight ? QByteArrayLiteral("in-flight") : QByteArrayLiteral("exceeded");
    return Refusal{error, inFlight ? QStringLiteral("budget_in_flight") : QStringLiteral("budget")};
}
} // namespace

std::optional<QString> ChatAdmission::idempotencyKeyProblem(const QByteArray &key) {
    if (key.size() > formats::kMaxIdentifierBytes)
        return QStringLiteral("Idempotency-Key is longer than %1 bytes").arg(formats::kMaxIdentifierBytes);
    for (const char c : key)
        if (c < 0x20 || c > 0x7e)
            return QStringLiteral("Idempotency-Key may only contain printable ASCII characters");
    return std::nullopt;
}

QString ChatAdmission::requestedModel(wire::Api api, const QByteArray &body) {
    GatewayError ignored;
    // The decode's prologue only: the body parsed, its model names checked (one that may not be
    // stored or echoed leaves this empty); no message of it is built.
    const auto begun = formats::beginDecode(api, body, &ignored, /*requireModel=*/false);
    if (!begun || !begun->json)
        return {};
    const wire::rj::Value *o = begun->json->object();
    const wire::rj::Value *model = wire::rj::member(o, "model");
    if (api != wire::Api::Pi)
        return wire::rj::toString(model); // pi's modelId is no other route's (probe T3 F3)
    QString name = wire::rj::toString(wire::rj::member(o, "modelId"));
    if (name.isEmpty())
        name = wire::rj::toString(wire::rj::asObject(model) ? wire::rj::member(model, "id") : model);
    return name;
}

std::optional<GatewayError> ChatAdmission::unroutableModel(const config::Config &config, const QString &model,
                                                           const QString &tenant) {
    const auto resolution = failover::CandidateResolver::resolve(config, model, tenant);
    if (resolution && mayReachAny(config, tenant, *resolution))
        return std::nullopt;
    return unroutableModelError(config, model, tenant);
}

bool ChatAdmission::mayReachAny(const config::Config &config, const QString &tenant,
                                const failover::Resolution &resolution) {
    // A model none of whose providers the tenant may use is, to that tenant, a model that does not
    // exist: the same 404 as an unknown name, so the answer does not tell it the model is there
    // (its /v1/models leaves such models out too).
    return std::any_of(resolution.chain.cbegin(), resolution.chain.cend(), [&](const failover::Candidate &c) {
        return failover::CandidatePolicy::tenantMayUse(config, tenant, c.provider);
    });
}

GatewayError ChatAdmission::unroutableModelError(const config::Config &config, const QString &model,
                                                 const QString &tenant) {
    const QStringList providers = failover::CandidateResolver::providersOfBareId(config, model, tenant);
    return GatewayError::make(
        404, ErrorCategory::NotFound,
        providers.size() > 1
            ? QStringLiteral("model \"%1\" is configured on several providers (%2): name one as provider/%1, "
                             "or put them in a route")
                  .arg(model, providers.join(QStringLiteral(", ")))
            : QStringLiteral("model \"%1\" is not a route, alias, provider/model selector or configured model")
                  .arg(model));
}

std::optional<Refusal> ChatAdmission::check(const Gates &gates, const InboundRequest &request, const QString &tenant) {
    if (gates.auth)
        if (const auto problem = gates.auth->gatewayKeyInProviderSlot(request))
            return invalid(400, *problem);
    const QByteArray idempotencyKey = request.header("idempotency-key");
    bool replay = false; // a completed twin's answer is given back: it costs nothing, whatever the budget says
    if (!idempotencyKey.isEmpty()) {
        if (const auto problem = idempotencyKeyProblem(idempotencyKey))
            return invalid(400, *problem);
        const QByteArray owned =
            IdempotencyStore::ownedKey(idempotencyKey, gates.auth ? gates.auth->providerKey(request) : QByteArray());
        if (gates.idempotency && gates.idempotency->usedForOtherRequest(tenant, owned, request.path, request.body))
            return invalid(
                422,
                QStringLiteral("Idempotency-Key \"%1\" was already used for a different request (another body or "
                               "route); use a new key for a new request (the same body on the same route with the "
                               "same key replays the first answer)")
                    .arg(QString::fromLatin1(idempotencyKey)),
                QStringLiteral("idempotency_conflict"));
        if (gates.idempotency && gates.idempotency->inFlight(tenant, owned))
            return Refusal{retryLater(409, ErrorCategory::Conflict,
                                      QStringLiteral("a request with this Idempotency-Key is in flight; "
                                                     "retry once it has been answered"),
                                      1000),
                           QStringLiteral("idempotency_in_flight")};
        replay = gates.idempotency && gates.idempotency->completed(tenant, owned);
    }
    if (gates.paused)
        return Refusal{retryLater(503, ErrorCategory::Overloaded,
                                  QStringLiteral("Switchman is paused; resume it from the tray"), 5000),
                       QStringLiteral("paused")};
    // A paid answer kept under its Idempotency-Key is given back at the budget too: the client that
    // lost it on the way gets what it paid for, not a 429 (probe K3 3).
    if (gates.budgets && !replay) {
        if (const auto refusal = gates.budgets->refusal(tenant))
            return budgetRefusal(*refusal);
        // The ledger could not be read at start: this tenant's spend is unknown, so its budget cannot
        // be enforced. Refused rather than served on a budget counted from $0 (tenants without one
        // are served).
        if (const auto why = gates.budgets->unavailable(tenant))
            return Refusal{GatewayError::make(503, ErrorCategory::Overloaded, *why),
                           QStringLiteral("budget_unavailable")};
    }
    return std::nullopt;
}

double ChatAdmission::costEstimate(const config::Config &config, const QString &tenant,
                                   const failover::Resolution &resolution, const model::ChatRequest &request,
                                   qint64 bodyBytes) {
    const double inputTokens = double((std::max<qint64>(0, bodyBytes) + 3) / 4);
    // Chat's n: each choice is an answer of its own, billed as one (it passes to a Chat upstream on
    // a stream). Reserved as one, n: 50 spent forty times a tenant's budget (probe T3 F2). OpenAI
    // takes at most 128.
    const qint64 choices =
        request.sourceApi == wire::Api::OpenAICompletions
            ? std::clamp<qint64>(wire::rj::toInt(wire::rj::member(wire::clientBody(request), "n"), 1), 1, 128)
            : 1;
    double dearest = 0;
    for (const auto &c : resolution.chain) {
        if (failover::CandidatePolicy::ineligibleReason(config, tenant, resolution, c))
            continue;
        qint64 output = request.options.maxTokens && *request.options.maxTokens > 0 ? *request.options.maxTokens
                                                                                    : kMaxReservedOutputTokens;
        if (c.model.maxTokens && *c.model.maxTokens > 0)
            output = std::min<qint64>(output, *c.model.maxTokens);
        output = std::min(output, kMaxReservedOutputTokens);
        const double cost =
            (inputTokens * c.model.costInput + double(output) * double(choices) * c.model.costOutput) / 1e6;
        if (std::isfinite(cost))
            dearest = std::max(dearest, cost);
    }
    return dearest;
}

std::optional<Refusal> ChatAdmission::reserveBudget(telemetry::BudgetTracker &budgets, const QString &tenant,
                                                    double estimateUsd, telemetry::BudgetTracker::ReservationId *id) {
    if (const auto refusal = budgets.reserve(tenant, estimateUsd, id))
        return budgetRefusal(*refusal);
    return std::nullopt;
}

std::optional<Refusal> ChatAdmission::renewBudget(telemetry::BudgetTracker &budgets,
                                                  telemetry::BudgetTracker::ReservationId id, double estimateUsd) {
    if (const auto refusal = budgets.renew(id, estimateUsd))
        return budgetRefusal(*refusal);
    return std::nullopt;
}

} // namespace sw::server
