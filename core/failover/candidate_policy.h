#pragma once
// Which candidates a request may use at all (SPEC 5, seed 003): the tenant's
// providers and regions, and the route's cost ceiling priced against the first
// candidate the tenant may use. Pure; the loop reports a reason as a skipped row.

#include "failover/candidate_resolver.h"

namespace sw::failover {

class CandidatePolicy {
public:
    // The reason `candidate` is not eligible for `tenant` on this resolution, or nullopt.
    static std::optional<QString> ineligibleReason(const config::Config &config, const QString &tenant,
                                                   const Resolution &resolution, const Candidate &candidate);
    // True when `reason` (from ineligibleReason) is the cost ceiling: the client is told so.
    static bool isCostCeiling(const QString &reason);
};

} // namespace sw::failover
