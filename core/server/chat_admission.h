#pragma once
// Whether an authenticated chat request may start. Decided before a ChatRequest
// exists, so a refusal here reaches no upstream and starts no failover. The
// checks run in this order and the first refusal wins:
//   400  a gateway key in a header that is forwarded to the provider
//        (GatewayAuth::gatewayKeyInProviderSlot)
//   400  an Idempotency-Key that is not short printable ASCII: it is stored for
//        a day and quoted in answers
//   422  an Idempotency-Key this tenant already used with a different body: a
//        replay would answer some other request
//   409  an Idempotency-Key whose twin (same body) is still in flight
//        (Retry-After: 1, so an SDK that retries a 409 waits for the twin's answer)
//   503  the gateway is paused (Retry-After: 5)
//   429  the tenant reached its spend budget (Retry-After: the period's reset;
//        x-switchman-budget: exceeded)
// Once the request is parsed and its candidates known, ChatRequest reserves its
// cost estimate (reserveBudget):
//   429  the tenant's requests in flight would carry its spend past the budget
//        (Retry-After: BudgetTracker::kInFlightRetryAfterS; x-switchman-budget: in-flight)
// The router encodes the error in the client's own format and adds the request's
// x-switchman-request-id, as on every chat answer, and records the refusal
// (telemetry::recordRefusal: a "refused" row in the attempts, a log line) under `reason`.

#include "core/config/config.h"
#include "core/http/headers.h"
#include "core/model/chat_request.h"
#include "core/model/gateway_error.h"
#include "core/server/inbound_request.h"
#include "core/telemetry/budget_tracker.h"

#include <optional>

namespace sw::failover {
struct Resolution;
}

namespace sw::server {

class GatewayAuth;
class IdempotencyStore;

struct Refusal {
    // Its hints to the client's SDK (Retry-After, x-should-retry, x-switchman-budget) are on the
    // error, and written from it (errorHintHeaders).
    model::GatewayError error;
    // The refusal's kind for its record and log line: invalid_request, idempotency_conflict,
    // idempotency_in_flight, paused, budget, budget_in_flight, budget_unavailable.
    QString reason;
};

class ChatAdmission {
public:
    struct Gates {
        const GatewayAuth *auth = nullptr;
        IdempotencyStore *idempotency = nullptr;     // null: no Idempotency-Key handling
        telemetry::BudgetTracker *budgets = nullptr; // null: no budgets
        bool paused = false;
    };

    static std::optional<Refusal> check(const Gates &gates, const InboundRequest &request, const QString &tenant);

    // The most output tokens a request of a tenant with a budget is reserved for, and so the most its
    // own maximum may ask of any try (UpstreamAttemptSetup::outputCap): a cap of 128 k would hold a
    // small budget whole for one request. A request that names no maximum is reserved for this many
    // (probe K3 1: with 4096 reserved, a burst of answers of 30 000 tokens spent 6x the budget); it
    // is not sent, since a model of a smaller context refuses it (probe JV M2).
    static constexpr qint64 kMaxReservedOutputTokens = 32768;
    // What the request may cost at most, in USD, for the budget's reservation: its input at about
    // four body bytes a token, its output at its max_tokens (or kMaxReservedOutputTokens; capped by
    // it and the model's own maxTokens), priced at the dearest candidate the tenant may use (a
    // failover may land on any). Unpriced candidates are not eligible for a tenant with a budget,
    // and free ones cost 0.
    static double costEstimate(const config::Config &config, const QString &tenant,
                               const failover::Resolution &resolution, const model::ChatRequest &request,
                               qint64 bodyBytes);
    // Reserves `estimateUsd` against the tenant's budget (BudgetTracker::reserve): the 429 when
    // the requests in flight (or spend) leave no room for it.
    static std::optional<Refusal> reserveBudget(telemetry::BudgetTracker &budgets, const QString &tenant,
                                                double estimateUsd, telemetry::BudgetTracker::ReservationId *id);
    // Before a request tries again after a try that cost: its estimate held again
    // (BudgetTracker::renew), or the same refusal as at admission.
    static std::optional<Refusal> renewBudget(telemetry::BudgetTracker &budgets,
                                              telemetry::BudgetTracker::ReservationId id, double estimateUsd);

    // The model a refused request's body names ("model", pi's "modelId" or "model.id"), for its
    // record; empty when it names none that may be stored. Parses the body: for refusals only.
    static QString requestedModel(wire::Api api, const QByteArray &body);

    // The Idempotency-Key header's shape: nullopt when absent or acceptable.
    static std::optional<QString> idempotencyKeyProblem(const QByteArray &key);

    // The 404 for a `model` no route, alias, selector or configured model resolves to (nullopt when one
    // does): what a chat route answers, and count_tokens with it, so a client learns of a bad model name
    // before it sends the message. A model whose providers `tenant` may not use is unknown to it.
    static std::optional<model::GatewayError> unroutableModel(const config::Config &config, const QString &model,
                                                              const QString &tenant);
    // Some candidate of `resolution` is at a provider `tenant` may use (its providers and regions).
    static bool mayReachAny(const config::Config &config, const QString &tenant,
                            const failover::Resolution &resolution);
    // That 404, for a caller that already resolved `model` and found no candidate.
    static model::GatewayError unroutableModelError(const config::Config &config, const QString &model,
                                                    const QString &tenant);
};

} // namespace sw::server
