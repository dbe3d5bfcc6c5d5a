#include "core/failover/provider_down_marks.h"

#include <algorithm>

namespace sw::failover {

bool MarkFilter::matches(const MarkInfo &m) const {
    return (tenant.isEmpty() || tenant == m.tenant) && (provider.isEmpty() || provider == m.provider) &&
           (baseUrl.isEmpty() || baseUrl == m.baseUrl) &&
           (exactModel ? model == m.model : model.isEmpty() || model == m.model);
}

ProviderDownMarks::ProviderDownMarks(util::Clock &clock) : m_clock(clock) {}

qint64 ProviderDownMarks::mark(const QString &tenant, const CandidateRef &c, const UpstreamFailure &failure,
                               std::optional<qint64> attemptStartedAtMs, std::optional<quint64> attemptStartSeq) {
    if (failure.kind != FailureKind::Transport && failure.kind != FailureKind::ServerError &&
        failure.kind != FailureKind::RateLimited)
        return 0;
    const qint64 now = m_clock.nowMs();
    // Drop history that can no longer affect strikes.
    for (auto it = m_entries.begin(); it != m_entries.end();) {
        if (now - it->expiresAtMs > kStrikeResetMs)
            it = m_entries.erase(it);
        else
            ++it;
    }
    const QString model = failure.kind == FailureKind::Transport ? QString() : c.modelId;
    const Key key = keyFor(tenant, c.provider, c.baseUrl, model);
    if (!m_entries.contains(key))
        if (const auto evicted = makeRoomFor(tenant); evicted && m_observer)
            m_observer->marksCleared({*evicted});
    MarkInfo &m = m_entries[key];
    m.tenant = tenant;
    m.provider = c.provider;
    m.baseUrl = c.baseUrl;
    m.model = model;
    m.kind = failure.kind;
    // SPEC 5: the TTL doubles per consecutive failure, and a failure of an attempt that started
    // at or before the last strike adds none (parallel requests failing on one blip are one
    // strike). Ordered by the table's sequence when the attempt's is known: a retry that began a
    // moment after the strike, in the same millisecond, is not the same blip (probe G4 2).
    const bool sameBlip = m.strikes > 0 && (attemptStartSeq && m.struckSeq > 0
                                                ? *attemptStartSeq < m.struckSeq
                                                : attemptStartedAtMs && *attemptStartedAtMs <= m.struckAtMs);
    // Nor does a failure of an attempt that began while this mark was live: the candidate was tried
    // in spite of it (a lone candidate, or the first of a chain whose candidates are all marked),
    // and failing says what the mark says. Counted, a burst of 50 requests to a chain of two down
    // candidates took both marks to 300 s in milliseconds, and every client was told Retry-After:
    // 300 (probe H4 1). The TTL doubles when the candidate fails again after its mark ran out.
    // One that ends after the mark ran out is a failure after it (HV 4: else the candidate, failing,
    // was left unmarked).
    const bool duringMark =
        m.strikes > 0 && attemptStartedAtMs && *attemptStartedAtMs < m.expiresAtMs && now < m.expiresAtMs;
    const bool strikes = !sameBlip && !duringMark;
    if (strikes) {
        // One ladder for the candidate, whichever of its marks fails: a provider whose outages
        // alternate between refused connections (its host's mark) and 5xx answers (its model's)
        // climbed each ladder at half speed, 20, 20, 40, 40 s (probe W2 F2). The other mark's
        // strikes are still within the strike-reset window here (pruned above otherwise).
        // - A model's mark counts its host's strikes: the whole provider was down. In the host mark's
        //   blip, or for a try made while it stood, its count and no step more.
        // - The host's mark covers every model there, so it counts a model's strikes only when it
        //   struck in this run itself and the model's count came from it (at most one step past
        //   it), outside that model's blip: one model's 503s, then the first refused connection,
        //   is the host's own next strike (20 s, or 40 s after a refusal of its own).
        const bool hostMark = model.isEmpty();
        const Key other = keyFor(tenant, c.provider, c.baseUrl, hostMark ? c.modelId : QString());
        const auto it = other != key ? m_entries.constFind(other) : m_entries.cend();
        // (A model's own run, then the host's first refusal: the model's count went past what the
        // host's could have given it, and the host keeps its own.) A rate limit says the host
        // answered: neither takes the other's count.
        const bool counts = it != m_entries.cend() && it->strikes > 0 && failure.kind != FailureKind::RateLimited &&
                            it->kind != FailureKind::RateLimited &&
                            (!hostMark || (m.strikes > 0 && it->strikes <= m.strikes + 1));
        if (counts) {
            const bool itsBlip = attemptStartSeq && it->struckSeq > 0
                                     ? *attemptStartSeq < it->struckSeq
                                     : attemptStartedAtMs && *attemptStartedAtMs <= it->struckAtMs;
            const bool whileItStood =
                attemptStartedAtMs && *attemptStartedAtMs < it->expiresAtMs && now < it->expiresAtMs;
            if (!itsBlip && !whileItStood)
                m.strikes = std::max(m.strikes, it->strikes) + 1;
            else if (hostMark)
                m.strikes += 1;
            else
                m.strikes = std::max(m.strikes + 1, it->strikes);
        } else {
            m.strikes += 1;
        }
        m.struckAtMs = now;
        m.struckSeq = ++m_sequence;
    }
    const qint64 base = failure.kind == FailureKind::RateLimited ? kRateLimitedBaseMs : kServerErrorBaseMs;
    qint64 ttl = base;
    for (int i = 1; i < m.strikes && ttl < kCapMs; ++i)
        ttl *= 2;
    ttl = std::min(ttl, kCapMs);
    if (failure.retryAfterMs)
        ttl = std::max(ttl, std::min(*failure.retryAfterMs, kCapMs));
    // A later, plainer failure never shortens a mark. One while the mark was live lengthens it only
    // by its own Retry-After: the mark runs out as set, and the next failure doubles it.
    if (strikes || sameBlip)
        m.expiresAtMs = std::max(m.expiresAtMs, now + ttl);
    else if (failure.retryAfterMs)
        m.expiresAtMs = std::max(m.expiresAtMs, now + std::min(*failure.retryAfterMs, kCapMs));
    m.ttlMs = m.expiresAtMs - now;
    if (failure.retryAfterMs || m.ttlMs == ttl)
        m.retryAfterMs = failure.retryAfterMs;
    m.lastError = failure.message.left(500);
    m.setBy.clear();
    if (m_observer)
        m_observer->markSet(m, failure, attemptStartedAtMs);
    return m.expiresAtMs - now;
}

int ProviderDownMarks::answered(const QString &tenant, const CandidateRef &c, qint64 attemptStartedAtMs) {
    if (m_entries.isEmpty())
        return 0; // the usual case: nothing is down
    QList<MarkInfo> removed;
    for (const QString &model : {QString(), c.modelId}) {
        const auto it = m_entries.find(keyFor(tenant, c.provider, c.baseUrl, model));
        if (it != m_entries.end() && it->struckAtMs < attemptStartedAtMs) {
            removed.append(*it);
            m_entries.erase(it);
        }
    }
    if (m_observer && !removed.isEmpty())
        m_observer->marksCleared(removed);
    return int(removed.size());
}

bool ProviderDownMarks::isDown(const QString &tenant, const CandidateRef &c) const {
    return remainingMs(tenant, c) > 0;
}

qint64 ProviderDownMarks::remainingMs(const QString &tenant, const CandidateRef &c) const {
    if (m_entries.isEmpty())
        return 0; // the usual case: nothing is down
    const qint64 now = m_clock.nowMs();
    qint64 best = 0;
    for (const QString &model : {QString(), c.modelId}) {
        auto it = m_entries.constFind(keyFor(tenant, c.provider, c.baseUrl, model));
        if (it != m_entries.cend() && it->expiresAtMs > now) {
            best = std::max(best, it->expiresAtMs - now); // down until every covering mark expired
        }
    }
    return best;
}

std::optional<MarkInfo> ProviderDownMarks::covering(const QString &tenant, const CandidateRef &c) const {
    const qint64 now = m_clock.nowMs();
    const MarkInfo *best = nullptr;
    for (const QString &model : {QString(), c.modelId}) {
        auto it = m_entries.constFind(keyFor(tenant, c.provider, c.baseUrl, model));
        if (it != m_entries.cend() && it->expiresAtMs > now && (!best || it->expiresAtMs > best->expiresAtMs))
            best = &*it;
    }
    return best ? std::optional<MarkInfo>(*best) : std::nullopt;
}

QList<MarkInfo> ProviderDownMarks::active() const {
    const qint64 now = m_clock.nowMs();
    QList<MarkInfo> out;
    for (const MarkInfo &m : m_entries)
        if (m.expiresAtMs > now)
            out.append(m);
    std::sort(out.begin(), out.end(), [](const MarkInfo &a, const MarkInfo &b) {
        return std::tie(a.tenant, a.provider, a.model) < std::tie(b.tenant, b.provider, b.model);
    });
    return out;
}

void ProviderDownMarks::apply(const MarkInfo &mark) {
    const Key key = keyFor(mark.tenant, mark.provider, mark.baseUrl, mark.model);
    if (!m_entries.contains(key))
        makeRoomFor(mark.tenant); // another replica's bound is the same one
    MarkInfo &m = m_entries[key] = mark;
    // Known here from now: an attempt that began before it did not know it.
    m.struckSeq = ++m_sequence;
}

std::optional<MarkInfo> ProviderDownMarks::makeRoomFor(const QString &tenant) {
    int count = 0;
    auto first = m_entries.end();
    for (auto it = m_entries.begin(); it != m_entries.end(); ++it) {
        if (it->tenant != tenant)
            continue;
        ++count;
        if (first == m_entries.end() || it->expiresAtMs < first->expiresAtMs)
            first = it;
    }
    if (count < kMaxEntriesPerTenant || first == m_entries.end())
        return std::nullopt;
    const MarkInfo evicted = *first;
    m_entries.erase(first);
    if (evicted.expiresAtMs > m_clock.nowMs())
        return evicted;
    return std::nullopt;
}

int ProviderDownMarks::applyClear(const MarkFilter &filter) {
    return clearEntries(filter, nullptr);
}

int ProviderDownMarks::clear(const MarkFilter &filter) {
    QList<MarkInfo> removed;
    const int n = clearEntries(filter, &removed);
    if (m_observer && !removed.isEmpty())
        m_observer->marksCleared(removed);
    return n;
}

int ProviderDownMarks::clearEntries(const MarkFilter &filter, QList<MarkInfo> *removed) {
    const qint64 now = m_clock.nowMs();
    int n = 0;
    for (auto it = m_entries.begin(); it != m_entries.end();) {
        if (filter.matches(*it)) {
            if (it->expiresAtMs > now)
                ++n;
            if (removed)
                removed->append(*it);
            // A cleared mark also forgets its strikes: the user said the provider is back.
            it = m_entries.erase(it);
        } else {
            ++it;
        }
    }
    return n;
}

} // namespace sw::failover
