#include "core/failover/candidate_resolver.h"

#include "core/failover/candidate_policy.h"

#include "core/util/glob_pattern.h"

#include <algorithm>
#include <limits>

namespace sw::failover {

namespace {
std::optional<Candidate> candidateFor(const config::Config &config, const QString &key) {
    const auto model = config.models.constFind(key);
    if (model == config.models.cend())
        return std::nullopt;
    const auto provider = config.providers.constFind(model->provider);
    if (provider == config.providers.cend())
        return std::nullopt;
    return Candidate{*model, *provider};
}

Resolution fromRoute(const config::Config &config, const config::RouteConfig &route, const QString &requested) {
    Resolution r;
    r.requested = requested;
    r.routeName = route.name;
    r.maxCostMultiplier = route.maxFallbackCostMultiplier;
    for (const QString &key : route.candidates)
        if (auto c = candidateFor(config, key))
            r.chain.append(*c);
    return r;
}
} // namespace

std::optional<Resolution> CandidateResolver::resolve(const config::Config &config, const QString &model,
                                                     const QString &tenant) {
    if (model.isEmpty())
        return std::nullopt;
    if (auto it = config.routes.constFind(model); it != config.routes.cend())
        return fromRoute(config, *it, model);
    // The most specific matching alias (util::GlobPattern::specificity): routes are kept by name, so
    // "first in the file" was "first by name", and the README's recipe (a route `haiku` with
    // `claude-haiku-*` beside the starter `claude` with `claude-*`) sent haiku requests to `claude`
    // (probe K1 1). Equal ones cannot match the same model in two routes (the config refuses them).
    const config::RouteConfig *best = nullptr;
    int bestScore = std::numeric_limits<int>::min(); // "*" fixes nothing and scores below 0: still a match
    for (const auto &route : config.routes)
        for (const QString &alias : route.aliases) {
            const util::GlobPattern glob(alias);
            if (const int score = glob.specificity(); score > bestScore && glob.matches(model)) {
                best = &route;
                bestScore = score;
            }
        }
    if (best)
        return fromRoute(config, *best, model);
    const qsizetype slash = model.indexOf(QLatin1Char('/'));
    if (slash > 0) {
        const QString providerId = model.left(slash);
        const auto provider = config.providers.constFind(providerId);
        if (provider != config.providers.cend()) {
            Resolution r;
            r.requested = model;
            r.direct = true;
            if (auto c = candidateFor(config, model)) {
                r.chain.append(*c);
            } else {
                // A provider's model that the config does not list: default capabilities.
                config::ModelConfig m;
                m.provider = providerId;
                m.id = model.mid(slash + 1);
                r.chain.append(Candidate{m, *provider});
            }
            return r;
        }
    }
    std::optional<Candidate> unique;
    for (const auto &m : config.models) {
        if (m.id != model)
            continue;
        auto c = candidateFor(config, m.key());
        if (!c || !CandidatePolicy::tenantMayUse(config, tenant, c->provider))
            continue;
        if (unique)
            return std::nullopt; // ambiguous bare id
        unique = std::move(c);
    }
    if (unique) {
        Resolution r;
        r.requested = model;
        r.direct = true;
        r.chain.append(*unique);
        return r;
    }
    return std::nullopt;
}

QStringList CandidateResolver::providersOfBareId(const config::Config &config, const QString &model,
                                                 const QString &tenant) {
    QStringList providers;
    for (const auto &m : config.models) {
        if (m.id != model)
            continue;
        const auto provider = config.providers.constFind(m.provider);
        if (provider != config.providers.cend() && CandidatePolicy::tenantMayUse(config, tenant, *provider))
            providers.append(m.provider);
    }
    providers.sort();
    return providers;
}

CandidateResolver::Pick CandidateResolver::pick(const Resolution &r, const TriedCandidates &tried, const State &state,
                                                QList<Skip> *skipped) {
    Pick deferred;
    const qsizetype ownSkipsFrom = skipped ? skipped->size() : 0;
    const auto isFirstOfChain = [&r](const Candidate &c) {
        return r.chain.size() == 1 || c.ref().key() == r.chain.first().ref().key();
    };
    for (const Candidate &c : r.chain) {
        if (tried.contains(c))
            continue;
        if (state.ineligible) {
            if (auto why = state.ineligible(c)) {
                if (skipped)
                    skipped->append({c, *why});
                continue;
            }
        }
        if (state.hasCredential && !state.hasCredential(c)) {
            // Not a follower: trying it could only replace the real upstream error with ours.
            if (skipped) {
                QString why = state.whyNoCredential ? state.whyNoCredential(c) : QString();
                if (why.isEmpty())
                    why = QStringLiteral("no usable credential for provider \"%1\"").arg(c.provider.id);
                skipped->append({c, why, true});
            }
            continue;
        }
        // A candidate this request's content cannot go to is passed over where it stands, so a marked
        // one is never reported passed over for a follower that was then skipped (probe IV 2). The
        // chain's first, asked first, alone fails its precheck as it would without failover.
        std::optional<QString> rejection = state.precheck ? state.precheck(c) : std::nullopt;
        if (rejection && (!tried.isEmpty() || !isFirstOfChain(c))) {
            if (skipped)
                skipped->append({c, *rejection, false, false, true});
            continue;
        }
        if (state.cannotTake) {
            if (auto why = state.cannotTake(c)) {
                if (skipped)
                    skipped->append({c, *why, false, false, true});
                continue;
            }
        }
        const bool single = r.chain.size() == 1;
        const bool marked = !single && state.isMarked && state.isMarked(c);
        if (!marked)
            return {c, rejection}; // the marked ones before it were passed over: they are in `skipped`
        if (!deferred.candidate)
            deferred = {c, rejection};
        if (skipped) // nothing is appended while no mark exists: the healthy path allocates nothing
            skipped->append({c, {}, false, true});
    }
    // No unmarked candidate left: the first marked one is asked, and none was passed over for a mark.
    if (deferred.candidate && skipped)
        skipped->erase(
            std::remove_if(skipped->begin() + ownSkipsFrom, skipped->end(), [](const Skip &s) { return s.marked; }),
            skipped->end());
    return deferred;
}

} // namespace sw::failover
