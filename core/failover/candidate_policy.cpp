#include "core/failover/candidate_policy.h"

#include "core/upstream/upstream_adapter.h"

namespace sw::failover {

namespace {
const QLatin1String kCeiling("over the route's cost ceiling");
const QLatin1String kUnpriced("no price for a tenant with a spend budget");

std::optional<QString> tenantReason(const config::Config &config, const QString &tenant,
                                    const config::ProviderConfig &provider) {
    const auto t = config.tenants.constFind(tenant);
    if (t == config.tenants.cend())
        return std::nullopt;
    if (!t->providers.isEmpty() && !t->providers.contains(provider.id))
        return QStringLiteral("provider not allowed for tenant");
    if (!t->regions.isEmpty() && !t->regions.contains(provider.region))
        return QStringLiteral("region not allowed for tenant");
    return std::nullopt;
}

std::optional<QString> tenantReason(const config::Config &config, const QString &tenant, const Candidate &c) {
    if (auto why = tenantReason(config, tenant, c.provider))
        return why;
    // A budget counts each row's cost: a model with no price (not in `models`, as "provider/any-id"
    // resolves, or no `cost`) would cost 0 and let a budgeted tenant spend without limit.
    const auto t = config.tenants.constFind(tenant);
    if (t != config.tenants.cend() && t->budget && !c.model.freeOfCharge && c.model.costInput <= 0 &&
        c.model.costOutput <= 0)
        return QStringLiteral("%1: %2 has no price in models (cost) and tenant \"%3\" has a spend budget")
            .arg(kUnpriced, c.name(), tenant);
    return std::nullopt;
}
} // namespace

bool CandidatePolicy::tenantMayUse(const config::Config &config, const QString &tenant,
                                   const config::ProviderConfig &provider) {
    return !tenantReason(config, tenant, provider);
}

std::optional<QString> CandidatePolicy::ineligibleReason(const config::Config &config, const QString &tenant,
                                                         const Resolution &resolution, const Candidate &c) {
    if (auto why = tenantReason(config, tenant, c))
        return why;
    if (!resolution.maxCostMultiplier)
        return std::nullopt;
    // The cost ceiling is priced against the first candidate this tenant may use.
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

bool CandidatePolicy::isCostCeiling(const QString &reason) {
    return reason.startsWith(kCeiling);
}

bool CandidatePolicy::isUnpriced(const QString &reason) {
    return reason.startsWith(kUnpriced);
}

std::optional<QString> CandidatePolicy::precheckRejection(const Candidate &c, const model::ChatRequest &request) {
    if (c.model.kind == QLatin1String("embedding"))
        return QStringLiteral("%1 is an embedding model and cannot answer chat requests").arg(c.name());
    bool hasImage = false;
    bool hasFile = false;
    bool hasFileId = false;
    for (const auto &m : request.context.messages)
        for (const auto &b : m.content)
            if (b.isAttachment()) {
                (b.type == model::BlockType::Image ? hasImage : hasFile) = true;
                if (b.url.startsWith(QLatin1String("file-")))
                    hasFileId = true;
            }
    if (hasImage && !c.model.input.contains(QLatin1String("image")))
        return QStringLiteral("%1 does not accept image input").arg(c.name());
    // Providers read a PDF's pages as images: a text-only model cannot take one.
    if (hasFile && !c.model.input.contains(QLatin1String("image")))
        return QStringLiteral("%1 does not accept file input (it takes no images, which PDF pages are read as)")
            .arg(c.name());
    if (hasFileId && request.sourceApi == wire::Api::OpenAIResponses &&
        !wire::isApi(c.provider.api, wire::Api::OpenAIResponses))
        return QStringLiteral("%1 cannot read OpenAI file references").arg(c.name());
    if (!upstream::adapterFor(c.provider.api))
        return QStringLiteral("%1 uses an unsupported upstream API \"%2\"").arg(c.name(), c.provider.api);
    return std::nullopt;
}

std::optional<QString> CandidatePolicy::incompatibility(const Candidate &c, const model::ChatRequest &request) {
    const upstream::UpstreamAdapter *adapter = upstream::adapterFor(c.provider.api);
    if (!adapter)
        return std::nullopt; // precheckRejection's business
    if (auto why = adapter->incompatibility(request, c.model.id))
        return QStringLiteral("%1 cannot serve this request: %2").arg(c.name(), *why);
    return std::nullopt;
}

} // namespace sw::failover
