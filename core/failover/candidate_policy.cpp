#include "failover/candidate_policy.h"

namespace sw::failover {

namespace {
const QLatin1String kCeiling("over the route's cost ceiling");

std::optional<QString> tenantReason(const config::Config &config, const QString &tenant, const Candidate &c)
{
    const auto t = config.tenants.constFind(tenant);
    if (t == config.tenants.cend())
        return std::nullopt;
    if (!t->providers.isEmpty() && !t->providers.contains(c.provider.id))
        return QStringLiteral("provider not allowed for tenant");
    if (!t->regions.isEmpty() && !t->regions.contains(c.provider.region))
        return QStringLiteral("region not allowed for tenant");
    return std::nullopt;
}
} // namespace

std::optional<QString> CandidatePolicy::ineligibleReason(const config::Config &config, const QString &tenant,
                                                         const Resolution &resolution, const Candidate &c)
{
    if (auto why = tenantReason(config, tenant, c))
        return why;
    if (!resolution.maxCostMultiplier)
        return std::nullopt;
    // seed 003: priced against the first candidate this tenant may use.
    for (const auto &first : resolution.chain) {
        if (tenantReason(config, tenant, first))
            continue;
        const double base = first.model.costInput + first.model.costOutput;
        const double mine = c.model.costInput + c.model.costOutput;
        if (base > 0 && mine > base * *resolution.maxCostMultiplier)
            return QStringLiteral("%1 (%2x)").arg(kCeiling).arg(*resolution.maxCostMultiplier);
        break;
    }
    return std::nullopt;
}

bool CandidatePolicy::isCostCeiling(const QString &reason)
{
    return reason.startsWith(kCeiling);
}

} // namespace sw::failover
