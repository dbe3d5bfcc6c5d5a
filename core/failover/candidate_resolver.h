#pragma once
// Route resolution (a model string to its chain of candidates) and the failover
// resolver (the next candidate not yet tried): pure functions of the chain, policy,
// marks, credential state and the tried set.

#include "core/config/config.h"
#include "core/failover/candidate_ref.h"

#include <QVarLengthArray>
#include <functional>
#include <optional>

namespace sw::failover {

struct Candidate {
    config::ModelConfig model;
    config::ProviderConfig provider;
    CandidateRef ref() const { return {provider.id, model.id, provider.baseUrl}; }
    QString name() const { return model.key(); }
};

struct Resolution {
    QString requested;      // the client's model string
    QString routeName;      // empty for a direct selector / bare id
    bool direct = false;    // a provider/id selector: exactly one candidate, never a follower
    QList<Candidate> chain; // in route order (before policy)
    std::optional<double> maxCostMultiplier;
};

struct Skip {
    Candidate candidate;
    QString reason;            // ineligible for tenant, over cost ceiling, no usable credential, ...
    bool noCredential = false; // passed over for want of a usable credential (credential_exhausted)
    // Passed over for its provider-down mark, an unmarked one after it asked instead: not tried, yet
    // still in the chain (asked when no unmarked one is left). The reason is the caller's to write
    // (the resolver does not know the mark's kind or time left).
    bool marked = false;
    // Passed over because this request's content cannot go to it (a precheck such as an image to a
    // text-only model, or a field its API cannot honour): skipped where it stands in the chain, so it
    // is never the candidate asked instead of a marked one.
    bool cannotTake = false;
};

// The candidates one request has tried or passed over. One candidate is another's equal when
// provider, model id and base URL all match (what CandidateRef::key() joins). A request
// tries one or two candidates of a short chain, and the resolver asks after every one of
// them: a few entries compared in place cost less than a hash set, which allocates its
// table on the first insert and needs a key string built for every lookup.
class TriedCandidates {
public:
    bool contains(const Candidate &c) const {
        for (const CandidateRef &t : m_tried)
            if (t.provider == c.provider.id && t.modelId == c.model.id && t.baseUrl == c.provider.baseUrl)
                return true;
        return false;
    }
    void insert(const Candidate &c) {
        if (!contains(c))
            m_tried.append(c.ref());
    }
    bool isEmpty() const { return m_tried.isEmpty(); }
    qsizetype size() const { return m_tried.size(); }

private:
    QVarLengthArray<CandidateRef, 2> m_tried;
};

class CandidateResolver {
public:
    // model string → resolution, or nullopt (404 not_found). A bare model id is looked up among
    // the providers `tenant` may use (CandidatePolicy::tenantMayUse): one of them having it is not
    // ambiguous because a provider the tenant may not use has it too.
    static std::optional<Resolution> resolve(const config::Config &config, const QString &model,
                                             const QString &tenant = {});
    // The providers `tenant` may use whose configured models have `model` as their bare id, in
    // name order: more than one is why a bare id did not resolve, and the client is told which
    // to choose from (never a provider that is not its own).
    static QStringList providersOfBareId(const config::Config &config, const QString &model,
                                         const QString &tenant = {});

    struct State {
        std::function<bool(const Candidate &)> isMarked;
        std::function<bool(const Candidate &)> hasCredential;
        std::function<QString(const Candidate &)> whyNoCredential;           // the skip's reason; empty: unknown
        std::function<std::optional<QString>(const Candidate &)> ineligible; // policy: reason when ineligible
        // This request's content, as the candidate's API and model take it: why it cannot go there.
        // `precheck`: what the model's own limits refuse (an image to a text-only model, a context
        // too large); `cannotTake`: what the API cannot carry at all.
        std::function<std::optional<QString>(const Candidate &)> precheck;
        std::function<std::optional<QString>(const Candidate &)> cannotTake;
    };
    struct Pick {
        std::optional<Candidate> candidate;
        // The chain's first candidate, asked before any other, fails this request's precheck: not an
        // outage to hide but the client's request to fix, so it is not passed over: the client gets
        // this, as without failover (a 400). Any other candidate that fails it is passed over.
        std::optional<QString> rejection;
    };
    // The candidate to try after `tried`, or nullopt when none is left.
    // Unmarked candidates first, in chain order; a marked one only when no unmarked one
    // is left. A candidate with no usable credential is never returned (nor is it a
    // follower): it is reported in `skipped`. So is a marked candidate an unmarked one after
    // it is returned instead of (Skip::marked): a reroute is never silent. When only marked
    // ones are left, the first of them is returned and none is reported. A single-candidate
    // chain never consults its mark. One that cannot take the request (State::cannotTake, or
    // State::precheck but for Pick::rejection's case) is reported where it stands and is never
    // returned, marked or not.
    static Pick pick(const Resolution &r, const TriedCandidates &tried, const State &state,
                     QList<Skip> *skipped = nullptr);
    // pick()'s candidate, whether or not its precheck failed.
    static std::optional<Candidate> next(const Resolution &r, const TriedCandidates &tried, const State &state,
                                         QList<Skip> *skipped = nullptr) {
        return pick(r, tried, state, skipped).candidate;
    }
};

} // namespace sw::failover
