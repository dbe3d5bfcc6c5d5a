#pragma once
// Per-provider credential pools: which credential a try uses (a lease), and what a
// provider's refusal does to it (parked or rejected, then the next one). Engine thread only.

#include "core/credentials/park_policy.h"
#include "core/credentials/secret_store.h"
#include "core/util/clock.h"

#include <QHash>
#include <QMap>
#include <QObject>
#include <QSet>
#include <QStringList>
#include <memory>

namespace sw::credentials {

struct Lease {
    QString provider;
    int index = -1; // position in the provider's credentials list; -1 = no credential needed
    bool valid() const { return !provider.isEmpty(); }
};

struct AcquireResult {
    enum class Kind { Ok, NoCredential, StoreError } kind = Kind::Ok;
    QByteArray secret; // empty when the provider needs none
    bool passthrough = false;
    Lease lease;
    QString error;
};

// Each credential of a pool (provider + position + reference) is ok, parked (until a time,
// with a reason), rejected (a 401: until its secret changes), missing (its environment
// variable is not set, or the keychain has no such entry: until it is there) or unavailable
// (a keychain: reference whose last read failed because the store could not be reached or
// was locked, and no secret of it is cached: its lastError says why; until a read works).
enum class CredentialHealth { Ok, Parked, Rejected, Missing, Unavailable };
QString credentialHealthName(CredentialHealth health); // ok, parked, rejected, missing, unavailable
// An env:VAR reference whose variable is unset or empty: nothing to send.
bool isUnsetEnvRef(const QString &ref);

// One row of GET /admin/credentials and of the GUI's Credentials table. Never a secret.
// Every credential of a pool that could come back by waiting is set aside after a usage or rate
// limit: the soonest back, and what set it aside. (CredentialPools::waitFor)
struct PoolWait {
    qint64 remainingMs = 0;
    ParkReason reason = ParkReason::None;
    int status = 0;
    QString lastError; // redacted; empty when the words came from another tenant's request
};

struct CredentialStatus {
    QString provider;
    QString ref; // as configured: keychain:NAME, env:VAR, passthrough
    int position = 0;
    CredentialHealth state = CredentialHealth::Ok;
    ParkReason reason = ParkReason::None;
    int status = 0;                    // the HTTP status that parked or rejected it; 0 = none
    std::optional<qint64> remainingMs; // parked only
    qint64 parkedForMs = 0;            // the whole parking time (for a draining bar)
    QString lastError;                 // redacted
    int leases = 0;

    bool operator==(const CredentialStatus &) const = default;
};

// Which credentials DELETE /admin/credentials (or "Retry now") clears: empty fields match any.
struct CredentialFilter {
    QString provider;
    QString ref;
    bool matches(const QString &provider, const QString &ref) const;
};

class CredentialPools {
public:
    static constexpr qint64 kDefaultExhaustedMs = 3600 * 1000; // usage limits reset slowly
    // A refused keychain credential that a request or the admin window looks at is read again from
    // the store at most this often, until a new secret is there.
    static constexpr qint64 kRereadRefusedMs = 250;
    // A re-read that has not answered in this long (a hung Secret Service) no longer stops the next.
    static constexpr qint64 kRereadStaleMs = 60 * 1000;
    // How long a request waits for a keychain read. A Secret Service answers in milliseconds, but a
    // locked keyring waits for its unlock prompt (gcr-prompter, KWallet's "open wallet") for as long
    // as nobody answers it, and a hung daemon for D-Bus's timeouts: a read not answered by then is a
    // failed store call (setup_error: the pool's next key, then the next candidate; SPEC 5). The
    // read goes on, and later requests pass the key over until it answers (probe AA4 F1).
    static constexpr qint64 kKeychainReadTimeoutMs = 5000;

    CredentialPools(SecretStore *store, util::Clock &clock);
    ~CredentialPools();
    Q_DISABLE_COPY_MOVE(CredentialPools)

    // Side-effect free: could acquire() find a credential for this provider now, at or after `from`?
    bool hasUsable(const QString &provider, const QStringList &refs, bool callerHasAuth, int from = 0) const;
    // Why none of `refs` can be used now, as a client and an operator read it: the first key's
    // refusal, parking or absence, for the error that ends the request.
    // The provider's words are named only to the tenant whose request drew them (CredentialFailure::tenant).
    QString whyNoneUsable(const QString &provider, const QStringList &refs, const QString &tenant = {}) const;
    // None usable, and some only set aside for a while after a usage or rate limit: when the first
    // is back. Nothing when one is usable now, or when none will come back by waiting (refused,
    // missing, no caller key to pass through).
    std::optional<PoolWait> waitFor(const QString &provider, const QStringList &refs, bool callerHasAuth,
                                    const QString &tenant = {}) const;
    // Resolves the first usable credential at or after `startIndex`, reading the keychain
    // asynchronously when needed (cached after the first read; one read of a name at a time, which
    // every request that needs it waits for, at most kKeychainReadTimeoutMs from its start). A key
    // whose read outlasted that is passed over at once while the read goes on. `callerAuth` is the
    // caller's own key for a passthrough reference.
    void acquire(const QString &provider, const QStringList &refs, const QByteArray &callerAuth, int startIndex,
                 QObject *context, std::function<void(const AcquireResult &)> done);
    void release(const Lease &lease);
    // 401, non-cap 403 or usage limit: rotate away from this credential until `forMs` passed.
    // Kept for callers that know no more than that; park()/reject()/recordFailure() say why.
    void markExhausted(const Lease &lease, qint64 forMs = kDefaultExhaustedMs);

    // Parks the credential for `durationMs` (a later park never shortens an earlier one).
    // `tenant`: whose request drew `lastError`'s words (recordFailure), empty when no tenant's.
    void park(const Lease &lease, ParkReason reason, int status, qint64 durationMs, const QString &lastError,
              const QString &tenant = {});
    // A 401: out until its secret changes (credentialChanged, a new pool, a keychain read that differs).
    // A keychain: credential refused by a 401 or a non-cap 403 (recordFailure) is read again from
    // the store, in the background: at the refusal, then whenever it is passed over (at most every
    // kRereadRefusedMs). A secret stored meanwhile (`switchman credential set`) replaces the cached
    // one at once and the credential is back in use.
    void reject(const Lease &lease, int status, const QString &lastError, const QString &tenant = {});
    // The failover loop's one call after a failure blamed on the credential: judges reject or park, and
    // for how long (park_policy.h), then records it. Passthrough credentials are the caller's: ignored.
    CredentialVerdict recordFailure(const Lease &lease, const CredentialFailure &failure, const ParkDefaults &defaults);

    // The pools as configured (provider -> references in order). A pool that changed loses its states:
    // its positions may now mean other secrets.
    void configure(const QMap<QString, QStringList> &pools);
    // Every configured credential with its state, providers sorted, positions in order.
    QList<CredentialStatus> states() const;
    int parkedCount() const; // parked or rejected now
    // Clears parking and rejection of the matching credentials; also forgets their cached keychain
    // secrets so the next use reads the keychain again. Returns how many had a state.
    int clear(const CredentialFilter &filter);
    // A new secret was stored for `ref` (credential set, the GUI's Set key…): its state goes at once.
    int credentialChanged(const QString &ref);
    // Told whenever a state appears or goes (engine thread), so observers can refresh.
    void setChangedCallback(std::function<void()> callback) { m_changed = std::move(callback); }
    int inFlight(const QString &provider, int index) const;

    // A 403 saying the key's project cannot reach `model` ("does not have access to model") is a
    // verdict on that model for that key alone: nothing is set aside, but later requests for the model
    // start past the key for kOutOfReachMs, instead of paying its refusal again on every request.
    static constexpr qint64 kOutOfReachMs = 10 * 60 * 1000;
    static constexpr int kMaxOutOfReach = 512; // model ids can be a tenant's words: the table is bounded
    // `forMs`: how long (a quota of one model used up: its stated delay, at most kOutOfReachMs).
    void noteOutOfReach(const QString &provider, int index, const QString &model, qint64 forMs = kOutOfReachMs);
    // The first position at or after `from` whose key is not known to be out of reach of `model`; -1
    // when there is none.
    int firstInReach(const QString &provider, const QStringList &refs, const QString &model, int from) const;
    int outOfReachCount() const { return int(m_outOfReach.size()); }
    int totalInFlight() const;
    void forgetCached(const QString &name) { m_cache.remove(name); }
    // Reads every keychain: reference of `refs` into the cache in the background, so
    // requests rarely wait on D-Bus. A secret read replaces the cached one (a reload picks up a
    // new secret) and a definite "no such entry" drops it; a read that fails or never answers (a
    // keyring locked since) leaves the working copy in use, as a refused reload leaves the running
    // configuration (probe AA4 F3). A key no longer configured is forgotten. Failures are left for
    // acquire() to report in words.
    // `onProblem` hears of each name the keychain could not give (missing entry or no
    // Secret Service), so a headless start says so instead of failing later, silently; never
    // once `context` is gone, nor for a prewarm a newer one replaced.
    void prewarm(const QStringList &refs, QObject *context,
                 std::function<void(const QString &name, const SecretResult &result)> onProblem = {});
    bool isCached(const QString &name) const { return m_cache.contains(name); }
    bool isReading(const QString &name) const { return m_reads.contains(name); } // a keychain read in flight
    void setStore(SecretStore *store) { m_store = store; }

private:
    void acquireAfterStoreError(const QString &provider, const QStringList &refs, const QByteArray &callerAuth,
                                int index, QObject *context, const std::function<void(const AcquireResult &)> &done,
                                const AcquireResult &storeError);
    struct SlotState {
        QString ref;
        CredentialHealth health = CredentialHealth::Ok;
        ParkReason reason = ParkReason::None;
        int status = 0;
        qint64 untilMs = 0; // parked: engine clock
        qint64 parkedForMs = 0;
        QString lastError;
        QString lastErrorTenant; // whose request drew lastError's words (empty: no tenant's)
        QByteArray fingerprint;  // rejected: sha256 of the secret that was refused, when known
    };
    QString slotKey(const QString &provider, int index) const { return provider + QChar(0) + QString::number(index); }
    bool exhausted(const QString &provider, int index) const;
    bool usable(const QString &provider, const QStringList &refs, int index, bool callerHasAuth) const;
    QString refAt(const QString &provider, int index) const;
    // One keychain read of a name at a time. `done` hears its answer; a waiter that gives up (a
    // request) hears nullptr instead once the read is kKeychainReadTimeoutMs old.
    struct ReadWaiter {
        bool givesUp = false;
        std::function<void(const SecretResult *)> done;
    };
    struct PendingRead {
        qint64 startedMs = 0;
        util::Clock::TimerId timer = 0; // fires at the bound
        bool overdue = false;           // the bound passed and it has not answered
        bool forRequest = false;        // a request asked: its answer is cached whatever the configuration
        QList<ReadWaiter> waiters;
    };
    void readKeychain(const QString &name, ReadWaiter waiter);
    void onKeychainAnswer(const QString &name, const SecretResult &result);
    void onReadOverdue(const QString &name);
    // A keychain: reference with no secret cached whose read outlasted its bound: passed over.
    bool awaitsOverdueRead(const QString &ref) const;
    QString unansweredRead(const QString &name) const; // why, in words
    bool configuresKeychain(const QString &name) const;
    QByteArray currentFingerprint(const QString &ref) const; // empty when the secret is not known now
    QList<QByteArray> knownSecrets(const QString &ref) const;
    void dropExpired();
    void notifyChanged();
    SecretStore *m_store;
    util::Clock &m_clock;
    QHash<QString, SlotState> m_states; // slotKey -> state (ok slots are absent)
    QMap<QString, QStringList> m_pools;
    std::function<void()> m_changed;
    QHash<QString, int> m_inFlight;
    struct OutOfReach {
        QString ref; // the key's reference when it was refused: a changed pool position is another key
        qint64 untilMs = 0;
    };
    QHash<QString, OutOfReach> m_outOfReach;                // slotKey + '\0' + model id -> until when (engine clock)
    QHash<QString, QByteArray> m_cache;                     // keychain name -> secret (memory only)
    QSet<QString> m_keychainMissing;                        // keychain names the store said it does not hold
    void noteKeychainRead(const QString &name, bool found); // keeps m_keychainMissing, says when it changed
    // Keeps m_keychainMissing and m_keychainError from any read's answer; says when they changed.
    void noteKeychainResult(const QString &name, const SecretResult &result);
    QHash<QString, QString> m_keychainError; // keychain names whose last read failed (store unreachable): why
    // After a refusal of the secret with sha256 `refused`: read `name` again; a different secret replaces it.
    void rereadAfterRefusal(const QString &name, const QByteArray &refused);
    QHash<QString, qint64> m_rereading;     // keychain name -> when its re-read after a refusal began
    QHash<QString, qint64> m_lastReread;    // keychain name -> when it was last read again (engine clock)
    std::unique_ptr<QObject> m_readContext; // the store's answers to re-reads come through it
    quint64 m_prewarmGeneration = 0;        // only the newest prewarm reports problems
    QSet<QString> m_prewarmNames;           // the keychain names the newest prewarm read
    QHash<QString, PendingRead> m_reads;    // keychain name -> its read in flight
};

} // namespace sw::credentials
