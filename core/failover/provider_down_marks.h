#pragma once
// The provider-down mark (docs/failover.md, "Marks"). Per tenant, in memory, one table per process.
// Lives on the engine thread; not thread-safe by design.

#include "core/failover/candidate_ref.h"
#include "core/failover/upstream_failure.h"
#include "core/util/clock.h"

#include <QHash>
#include <QList>
#include <optional>

namespace sw::failover {

struct MarkInfo {
    QString tenant;
    QString provider;
    QString baseUrl;
    QString model; // empty for a transport mark (covers every model on the base URL)
    FailureKind kind = FailureKind::ServerError;
    int strikes = 0;
    qint64 expiresAtMs = 0; // clock time
    qint64 struckAtMs = 0;  // clock time of the last strike: older attempts add none
    // This process's order of the last strike (ProviderDownMarks::sequence), or of its arrival from
    // another replica: an attempt begun before it adds none, even in the same millisecond.
    quint64 struckSeq = 0;
    qint64 ttlMs = 0;
    std::optional<qint64> retryAfterMs;
    QString lastError;
    QString setBy; // the replica that set it, when shared through Redis; empty = this process
};

struct MarkFilter {
    QString tenant, provider, baseUrl, model; // empty = any
    bool exactModel = false;                  // one mark: the model must match as given, "" = only the transport mark
    bool matches(const MarkInfo &m) const;
    static MarkFilter exactly(const MarkInfo &m) { return {m.tenant, m.provider, m.baseUrl, m.model, true}; }
};

// Told of every mark this process sets and every clear it makes (not of state
// applied from elsewhere), so a shared store can pass them on.
class MarkObserver {
public:
    virtual ~MarkObserver() = default;
    virtual void markSet(const MarkInfo &mark, const UpstreamFailure &failure,
                         std::optional<qint64> attemptStartedAtMs) = 0;
    virtual void marksCleared(const QList<MarkInfo> &removed) = 0;
};

class ProviderDownMarks {
public:
    static constexpr qint64 kServerErrorBaseMs = 20000;
    static constexpr qint64 kRateLimitedBaseMs = 30000;
    static constexpr qint64 kCapMs = 300000;
    static constexpr qint64 kStrikeResetMs = 300000;
    // Entries one tenant may have. A client names the models it asks for (provider/anything), so
    // marks keyed by model would otherwise grow with what a peer sends: past the bound the
    // tenant's entry that expires first makes room (no other tenant's ever does).
    static constexpr int kMaxEntriesPerTenant = 512;

    explicit ProviderDownMarks(util::Clock &clock);

    // Sets or extends a tenant's mark for transport, server_error or rate_limited;
    // ignores other kinds. Returns the time the mark now has left in ms, or 0.
    // A mark is never shortened (expiry = max(current, now + TTL)), and a failure of an
    // attempt that started at or before the last strike adds none: parallel requests failing
    // on one blip are one strike (attemptStartedAtMs unknown = a new strike).
    // `attemptStartSeq`: sequence() when the attempt began, which orders it against strikes exactly
    // (two in one millisecond too); without it the millisecond clock does, a tie counting as before.
    qint64 mark(const QString &tenant, const CandidateRef &candidate, const UpstreamFailure &failure,
                std::optional<qint64> attemptStartedAtMs = std::nullopt,
                std::optional<quint64> attemptStartSeq = std::nullopt);
    // How many strikes this table has made or taken in so far: read when an attempt begins.
    quint64 sequence() const { return m_sequence; }
    // The candidate answered an attempt that started after the last strike of a mark covering it
    // (its base URL's transport mark, its model's mark): the outage is over, and the mark goes with
    // its strikes (the failures were consecutive no more). Tells the observer, as a clear does.
    // Returns how many marks went.
    int answered(const QString &tenant, const CandidateRef &candidate, qint64 attemptStartedAtMs);
    // True if an unexpired mark of this tenant covers (provider, baseUrl) or (provider, baseUrl, model).
    bool isDown(const QString &tenant, const CandidateRef &candidate) const;
    // Time until no mark covers this candidate any more (0 when none does).
    qint64 remainingMs(const QString &tenant, const CandidateRef &candidate) const;
    // The live mark covering the candidate (its base URL's transport mark, or its model's) that
    // lasts longest: the one remainingMs() counts down.
    std::optional<MarkInfo> covering(const QString &tenant, const CandidateRef &candidate) const;

    QList<MarkInfo> active() const;      // unexpired marks
    int clear(const MarkFilter &filter); // clears matching active marks; returns how many
    qint64 now() const { return m_clock.nowMs(); }

    void setObserver(MarkObserver *observer) { m_observer = observer; }
    // State learned from another replica: replaces the entry with the same key. No observer call.
    void apply(const MarkInfo &mark);
    // Clears like clear(), without telling the observer (the clear came from elsewhere).
    int applyClear(const MarkFilter &filter);

private:
    // The four names a mark is kept under. Compared and hashed field by field: a lookup
    // (several per request and candidate) copies four shared strings, never builds one.
    struct Key {
        QString tenant, provider, baseUrl, model;
        bool operator==(const Key &o) const = default;
        friend size_t qHash(const Key &k, size_t seed = 0) noexcept {
            return qHashMulti(seed, k.tenant, k.provider, k.baseUrl, k.model);
        }
    };
    static Key keyFor(const QString &tenant, const QString &provider, const QString &baseUrl, const QString &model) {
        return {tenant, provider, baseUrl, model};
    }
    int clearEntries(const MarkFilter &filter, QList<MarkInfo> *removed);
    // Before a new entry of `tenant`: at kMaxEntriesPerTenant, drops the one that expires first.
    // Returns it when it was still active (the caller tells the observer).
    std::optional<MarkInfo> makeRoomFor(const QString &tenant);
    util::Clock &m_clock;
    MarkObserver *m_observer = nullptr;
    // Expired entries are kept (for strike history) until they are over kStrikeResetMs old.
    QHash<Key, MarkInfo> m_entries;
    quint64 m_sequence = 0; // strikes made or taken in, in order (MarkInfo::struckSeq)
};

} // namespace sw::failover
