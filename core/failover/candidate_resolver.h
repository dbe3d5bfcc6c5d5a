#pragma once
// Route resolution (a model string to its chain of candidates) and the failover
// resolver (the next candidate not yet tried): pure functions of the chain, policy,
// marks, credential state and the tried set.

#include "core/config/config.h"
#include "core/failover/candidate_ref.h"

#include <QSet>
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
};

class CandidateResolver {
public:
    // model string → resolution, or nullopt (404 not_found).
    static std::optional<Resolution> resolve(const config::Config &config, const QString &model);

    struct State {
        std::function<bool(const Candidate &)> isMarked;
        std::function<bool(const Candidate &)> hasCredential;
        std::function<std::optional<QString>(const Candidate &)> ineligible; // policy: reason when ineligible
    };
    // The candidate to try after `tried` (candidate keys), or nullopt when none is left.
    // Unmarked candidates first, in chain order; a marked one only when no unmarked one
    // is left. A candidate with no usable credential is never returned (nor is it a
    // follower): it is reported in `skipped`. A single-candidate chain never consults
    // its mark.
    static std::optional<Candidate> next(const Resolution &r, const QSet<QString> &tried, const State &state,
                                         QList<Skip> *skipped = nullptr);
};

} // namespace sw::failover
