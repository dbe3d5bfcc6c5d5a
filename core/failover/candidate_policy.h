#pragma once
// Which candidates a request may use at all: the tenant's
// providers and regions, a price when the tenant has a spend budget, and the
// route's cost ceiling priced against the first candidate the tenant may use.
// Pure; the loop reports a reason as a skipped row.

#include "core/failover/candidate_resolver.h"
#include "core/model/chat_request.h"

namespace sw::failover {

class CandidatePolicy {
public:
    // The reason `candidate` is not eligible for `tenant` on this resolution, or nullopt.
    static std::optional<QString> ineligibleReason(const config::Config &config, const QString &tenant,
                                                   const Resolution &resolution, const Candidate &candidate);
    // True when `reason` (from ineligibleReason) is the cost ceiling: the client is told so.
    static bool isCostCeiling(const QString &reason);
    // True when `reason` is a model with no price for a tenant with a spend budget.
    static bool isUnpriced(const QString &reason);
    // The tenant's `providers` and `regions` let its requests reach this provider.
    static bool tenantMayUse(const config::Config &config, const QString &tenant,
                             const config::ProviderConfig &provider);

    // A request this candidate can never serve (embedding model,
    // image input, OpenAI file references, unknown API). The first candidate fails with
    // it as it would without failover; a follower is skipped.
    static std::optional<QString> precheckRejection(const Candidate &candidate, const model::ChatRequest &request);
    // The adapter cannot serve this request as asked (a field with no mapping to its API,
    // e.g. previous_response_id to anything but a Responses upstream): the candidate is
    // skipped like a precheck; with none left the client gets a 400 naming the field.
    static std::optional<QString> incompatibility(const Candidate &candidate, const model::ChatRequest &request);
};

} // namespace sw::failover
