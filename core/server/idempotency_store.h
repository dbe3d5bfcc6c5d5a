#pragma once
// Idempotency-Key: a completed twin (same tenant and key, within 24 h) is
// answered from the stored result; a twin in flight gets 409. A key reused with
// a different body is a client bug, not a retry: it is refused (422), never
// answered with the other request's result.
// What is kept is bounded by configuration, never by clients: an answer longer than
// the per-answer bound is not kept (its key is let go, so a retry runs again), and
// past the total the oldest kept answers of the tenant keeping the most bytes are let
// go first. Each tenant holds at most its share of keys (limits.maxIdempotencyKeysPerTenant):
// a new key past it lets that tenant's oldest completed key go. One tenant's keys never
// take another's: a gateway-wide table of 10 000 keys that, once full, served every
// tenant without idempotency let one tenant's 10 000 keys make another's retry run (and
// be billed) twice.

#include "core/http/headers.h"
#include "core/util/clock.h"

#include <QHash>

#include <functional>
#include <map>

namespace sw::server {

class IdempotencyStore {
public:
    static constexpr qint64 kRetentionMs = 24LL * 3600 * 1000;
    static constexpr int kDefaultMaxKeysPerTenant = 10000;
    enum class State { New, InFlight, Completed };
    struct Hit {
        State state = State::New;
        int status = 0;
        http::HeaderList headers;
        QByteArray body;
    };

    explicit IdempotencyStore(util::Clock &clock) : m_clock(clock) {}
    // The Idempotency-Key as the store holds it: a caller that sends its own provider key (the
    // passthrough key) owns its Idempotency-Keys with that key, so two callers of one tenant (two
    // people signed in to their own accounts behind one gateway key, or two local processes on a
    // tenant-less gateway) never replay each other's answers by picking the same Idempotency-Key.
    // Only a digest of the provider key is kept.
    static QByteArray ownedKey(const QByteArray &idempotencyKey, QByteArrayView callerProviderKey);
    // limits.maxReplayBytes and limits.maxHoldBytes; a smaller total lets the oldest go now.
    void setBounds(qint64 maxTotalBytes, qint64 maxAnswerBytes);
    qint64 keptBytes() const { return m_keptBytes; }
    // limits.maxIdempotencyKeysPerTenant: the keys (in flight or completed) one tenant holds at once.
    void setMaxKeysPerTenant(int maxKeys);
    int keysHeld(const QString &tenant) const;
    // A completed answer as it outlives this process (the usage ledger's file): kept across a
    // restart, and read by the replicas sharing the file (adopt()).
    struct Kept {
        QString tenant;
        QByteArray key;
        QByteArray requestDigest;
        qint64 atEpochMs = 0;
        Hit hit;
        bool dropped = false; // the store let the key go (expired, evicted, its tenant's share)
    };
    // Told of each answer kept and each kept answer let go, on the engine thread.
    void setJournal(std::function<void(Kept)> journal) { m_journal = std::move(journal); }
    // An answer an earlier run of this gateway, or a replica, kept: answered from here like one
    // completed here, within the same bounds. A key this store already holds keeps its entry.
    // Nothing is told to the journal (it came from there).
    void adopt(Kept kept);
    static QByteArray encodeHeaders(const http::HeaderList &headers);
    static http::HeaderList decodeHeaders(const QByteArray &encoded);

    // New: the caller owns the key until complete() or abandon().
    // `route` is the path the request came on: the same body sent to another route is another
    // request (its answer is in another format), never a replay of the first.
    Hit begin(const QString &tenant, const QByteArray &key, const QString &route, const QByteArray &requestBody);
    void complete(const QString &tenant, const QByteArray &key, int status, const http::HeaderList &headers,
                  const QByteArray &body);
    void abandon(const QString &tenant, const QByteArray &key); // forget an in-flight entry that did not complete
    // True when `key` is held (in flight or completed) for a request on another route or whose
    // body differs from `requestBody`, byte for byte: the front answers 422 before begin() would replay.
    bool usedForOtherRequest(const QString &tenant, const QByteArray &key, const QString &route,
                             const QByteArray &requestBody);
    // True while a twin holding `key` has not completed: the front answers 409 before a request starts.
    bool inFlight(const QString &tenant, const QByteArray &key) const;
    // True when a completed answer is held for `key`: a retry gets it back (begin()), at no cost.
    bool completed(const QString &tenant, const QByteArray &key) const;

private:
    struct Entry {
        Hit hit;
        QByteArray requestDigest; // SHA-256 of the route and request body that took the key
        qint64 atMs = 0;
        QString tenant;
        QByteArray key;  // as given to begin() (m_entries' key also names the tenant)
        quint64 seq = 0; // order taken: the tenant's oldest key has the lowest
    };
    // One tenant's keys, oldest first, and the bytes of its completed answers.
    struct TenantKeys {
        std::map<quint64, QString> bySeq; // seq -> the entry's key in m_entries
        qint64 keptBytes = 0;
    };
    void expire();
    QHash<QString, Entry>::iterator erase(QHash<QString, Entry>::iterator it);
    // Lets `tenant`'s oldest completed key go; false when all it holds are in flight.
    bool evictOldestOf(const QString &tenant);
    void fitTotal();
    static qint64 sizeOf(const Hit &hit);
    void journal(const Entry &e, bool dropped) const;
    util::Clock &m_clock;
    std::function<void(Kept)> m_journal;
    QHash<QString, Entry> m_entries;
    QHash<QString, TenantKeys> m_tenants;
    quint64 m_nextSeq = 0;
    int m_maxKeysPerTenant = kDefaultMaxKeysPerTenant;
    qint64 m_maxTotalBytes = 64LL * 1024 * 1024;
    qint64 m_maxAnswerBytes = 8LL * 1024 * 1024;
    qint64 m_keptBytes = 0; // headers and bodies of the completed entries
};

} // namespace sw::server
