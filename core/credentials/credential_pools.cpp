#include "credentials/credential_pools.h"

#include <QPointer>
#include <QSet>

namespace sw::credentials {

CredentialPools::CredentialPools(SecretStore *store, util::Clock &clock) : m_store(store), m_clock(clock) {}

bool CredentialPools::exhausted(const QString &provider, int index) const
{
    const auto it = m_exhaustedUntil.constFind(slotKey(provider, index));
    return it != m_exhaustedUntil.cend() && *it > m_clock.nowMs();
}

bool CredentialPools::hasUsable(const QString &provider, const QStringList &refs, bool callerHasAuth) const
{
    if (refs.isEmpty())
        return true;
    for (int i = 0; i < refs.size(); ++i) {
        if (exhausted(provider, i))
            continue;
        const QString &ref = refs[i];
        if (ref.startsWith(QLatin1String("env:")) && qEnvironmentVariableIsEmpty(qPrintable(ref.mid(4))))
            continue;
        if (ref == QLatin1String("passthrough") && !callerHasAuth)
            continue;
        return true;
    }
    return false;
}

void CredentialPools::acquire(const QString &provider, const QStringList &refs, const QByteArray &callerAuth,
                              int startIndex, QObject *context, std::function<void(const AcquireResult &)> done)
{
    if (refs.isEmpty()) {
        AcquireResult r;
        r.lease = {provider, -1};
        ++m_inFlight[slotKey(provider, -1)];
        done(r);
        return;
    }
    for (int i = std::max(0, startIndex); i < refs.size(); ++i) {
        if (exhausted(provider, i))
            continue;
        const QString &ref = refs[i];
        AcquireResult r;
        r.lease = {provider, i};
        if (ref == QLatin1String("passthrough")) {
            if (callerAuth.isEmpty())
                continue;
            r.secret = callerAuth;
            r.passthrough = true;
        } else if (ref.startsWith(QLatin1String("env:"))) {
            r.secret = qgetenv(qPrintable(ref.mid(4)));
            if (r.secret.isEmpty())
                continue;
        } else if (ref.startsWith(QLatin1String("keychain:"))) {
            const QString name = ref.mid(9);
            if (auto it = m_cache.constFind(name); it != m_cache.cend()) {
                r.secret = *it;
            } else if (!m_store) {
                AcquireResult err;
                err.kind = AcquireResult::Kind::StoreError;
                err.error = QStringLiteral("no keychain available for credential \"%1\"").arg(name);
                done(err);
                return;
            } else {
                QPointer<QObject> guard(context);
                m_store->read(name, context, [this, guard, provider, refs, callerAuth, i, name, context,
                                              done](const SecretResult &res) {
                    if (!guard)
                        return;
                    if (res.ok && !res.secret.isEmpty()) {
                        m_cache.insert(name, res.secret);
                        acquire(provider, refs, callerAuth, i, context, done); // now served from the cache
                    } else if (res.notFound) {
                        acquire(provider, refs, callerAuth, i + 1, context, done);
                    } else {
                        AcquireResult err;
                        err.kind = AcquireResult::Kind::StoreError;
                        err.error = QStringLiteral("keychain read of \"%1\" failed: %2").arg(name, res.error);
                        done(err);
                    }
                });
                return;
            }
        } else {
            continue;
        }
        ++m_inFlight[slotKey(provider, i)];
        done(r);
        return;
    }
    AcquireResult none;
    none.kind = AcquireResult::Kind::NoCredential;
    none.error = QStringLiteral("no usable credential for provider \"%1\"").arg(provider);
    done(none);
}

void CredentialPools::prewarm(const QStringList &refs, QObject *context,
                              std::function<void(const QString &, const SecretResult &)> onProblem)
{
    m_cache.clear();
    const quint64 generation = ++m_prewarmGeneration;
    if (!m_store)
        return;
    QSet<QString> names;
    for (const QString &ref : refs)
        if (ref.startsWith(QLatin1String("keychain:")))
            names.insert(ref.mid(9));
    for (const QString &name : std::as_const(names)) {
        m_store->read(name, context, [this, name, generation, onProblem](const SecretResult &res) {
            if (generation != m_prewarmGeneration)
                return;
            if (res.ok && !res.secret.isEmpty())
                m_cache.insert(name, res.secret);
            else if (onProblem)
                onProblem(name, res);
        });
    }
}

void CredentialPools::release(const Lease &lease)
{
    if (!lease.valid())
        return;
    auto it = m_inFlight.find(slotKey(lease.provider, lease.index));
    if (it != m_inFlight.end() && --*it <= 0)
        m_inFlight.erase(it);
}

void CredentialPools::markExhausted(const Lease &lease, qint64 forMs)
{
    if (lease.index >= 0)
        m_exhaustedUntil.insert(slotKey(lease.provider, lease.index), m_clock.nowMs() + forMs);
}

int CredentialPools::inFlight(const QString &provider, int index) const
{
    return m_inFlight.value(slotKey(provider, index));
}

int CredentialPools::totalInFlight() const
{
    int n = 0;
    for (int v : m_inFlight)
        n += v;
    return n;
}

} // namespace sw::credentials
