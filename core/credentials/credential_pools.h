#pragma once
// Per-provider credential pools (SPEC 5: resolveGatewayApiKey,
// refreshGatewayApiKeyAfterAuthError, leases). Engine thread only.

#include "credentials/credential_store.h"
#include "util/clock.h"

#include <QHash>
#include <QStringList>

namespace sw::credentials {

struct Lease {
    QString provider;
    int index = -1;   // position in the provider's credentials list; -1 = no credential needed
    bool valid() const { return !provider.isEmpty(); }
};

struct AcquireResult {
    enum class Kind { Ok, NoCredential, StoreError } kind = Kind::Ok;
    QByteArray secret;    // empty when the provider needs none
    bool passthrough = false;
    Lease lease;
    QString error;
};

class CredentialPools {
public:
    static constexpr qint64 kDefaultExhaustedMs = 3600 * 1000; // usage limits reset slowly

    CredentialPools(SecretStore *store, util::Clock &clock);

    // Side-effect free: could acquire() find a credential for this provider now?
    bool hasUsable(const QString &provider, const QStringList &refs, bool callerHasAuth) const;
    // Resolves the first usable credential at or after `startIndex`, reading the keychain
    // asynchronously when needed (cached after the first read). `callerAuth` is the
    // caller's own key for a passthrough reference.
    void acquire(const QString &provider, const QStringList &refs, const QByteArray &callerAuth, int startIndex,
                 QObject *context, std::function<void(const AcquireResult &)> done);
    void release(const Lease &lease);
    // 401, non-cap 403 or usage limit: rotate away from this credential until `forMs` passed.
    void markExhausted(const Lease &lease, qint64 forMs = kDefaultExhaustedMs);
    int inFlight(const QString &provider, int index) const;
    int totalInFlight() const;
    void forgetCached(const QString &name) { m_cache.remove(name); }
    // Reads every keychain: reference of `refs` into the cache in the background, so
    // requests rarely wait on D-Bus. Replaces the cache (a reload picks up a new secret);
    // failures are left for acquire() to report in words.
    // `onProblem` hears of each name the keychain could not give (missing entry or no
    // Secret Service), so a headless start says so instead of failing later, silently.
    void prewarm(const QStringList &refs, QObject *context,
                 std::function<void(const QString &name, const SecretResult &result)> onProblem = {});
    bool isCached(const QString &name) const { return m_cache.contains(name); }
    void setStore(SecretStore *store) { m_store = store; }

private:
    QString slotKey(const QString &provider, int index) const { return provider + QChar(0) + QString::number(index); }
    bool exhausted(const QString &provider, int index) const;
    SecretStore *m_store;
    util::Clock &m_clock;
    QHash<QString, qint64> m_exhaustedUntil;
    QHash<QString, int> m_inFlight;
    QHash<QString, QByteArray> m_cache; // keychain name -> secret (memory only)
    quint64 m_prewarmGeneration = 0;    // a newer prewarm wins over answers of an older one
};

} // namespace sw::credentials
