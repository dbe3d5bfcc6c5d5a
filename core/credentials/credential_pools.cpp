#include "core/credentials/credential_pools.h"

#include <QCryptographicHash>
#include <QDateTime>
#include <QPointer>
#include <QSet>

#include <algorithm>

namespace sw::credentials {

QString credentialHealthName(CredentialHealth health) {
    switch (health) {
    case CredentialHealth::Parked:
        return QStringLiteral("parked");
    case CredentialHealth::Rejected:
        return QStringLiteral("rejected");
    case CredentialHealth::Missing:
        return QStringLiteral("missing");
    case CredentialHealth::Unavailable:
        return QStringLiteral("unavailable");
    case CredentialHealth::Ok:
        break;
    }
    return QStringLiteral("ok");
}

namespace {
// An env: reference's secret as it goes into a header: without the whitespace around it (a key
// read from a file saved with CRLF line ends keeps its CR through `KEY=$(cat key.txt)`). Keychain
// secrets are trimmed as they enter the cache.
QByteArray envSecret(const QString &ref) {
    return qgetenv(qPrintable(ref.mid(4))).trimmed();
}

// Why a secret cannot go into a header, or empty: a control character inside it (a line break
// pasted with the key) would end the header line there and send what follows as header lines
// of its own (probe V2 F1). Never echoed.
QString unfitForAHeader(const QString &ref, const QByteArray &secret) {
    for (const char c : secret)
        if (uchar(c) < 0x20 || uchar(c) == 0x7f)
            return QStringLiteral("the secret of %1 holds a line break or another control character, which no "
                                  "header may carry; store it again as one line")
                .arg(ref);
    return {};
}
} // namespace

bool isUnsetEnvRef(const QString &ref) {
    return ref.startsWith(QLatin1String("env:")) && envSecret(ref).isEmpty();
}

bool CredentialFilter::matches(const QString &p, const QString &r) const {
    return (provider.isEmpty() || provider == p) && (ref.isEmpty() || ref == r);
}

CredentialPools::CredentialPools(SecretStore *store, util::Clock &clock)
    : m_store(store), m_clock(clock), m_readContext(std::make_unique<QObject>()) {}

CredentialPools::~CredentialPools() {
    m_readContext.reset(); // the store's answers still to come go nowhere
    for (const PendingRead &read : std::as_const(m_reads))
        if (read.timer)
            m_clock.cancel(read.timer);
}

bool CredentialPools::exhausted(const QString &provider, int index) const {
    const auto it = m_states.constFind(slotKey(provider, index));
    if (it == m_states.cend())
        return false;
    const bool refused = it->health == CredentialHealth::Rejected ||
                         (it->health == CredentialHealth::Parked && it->reason == ParkReason::Auth);
    if (refused && it->ref.startsWith(QLatin1String("keychain:")) && !it->fingerprint.isEmpty()) {
        // Passed over because the provider refused its secret: the keychain may hold a new one by
        // now (`credential set` after the refusal). A look at it (a request, the admin window)
        // reads the store again in the background, at most every kRereadRefusedMs; the pools are
        // one thread's, and the answer comes back later on it.
        auto *self = const_cast<CredentialPools *>(this);
        const QString name = it->ref.mid(9);
        const qint64 now = m_clock.nowMs();
        if (const auto last = m_lastReread.constFind(name);
            last == m_lastReread.cend() || now - *last >= kRereadRefusedMs)
            self->rereadAfterRefusal(name, it->fingerprint);
    }
    if (it->health == CredentialHealth::Parked)
        return it->untilMs > m_clock.nowMs();
    if (it->health == CredentialHealth::Rejected) {
        // The refused secret is known and the one in reach now differs: someone fixed it.
        const QByteArray now = currentFingerprint(it->ref);
        return it->fingerprint.isEmpty() || now.isEmpty() || now == it->fingerprint;
    }
    return false;
}

QString CredentialPools::refAt(const QString &provider, int index) const {
    return m_pools.value(provider).value(index);
}

QByteArray CredentialPools::currentFingerprint(const QString &ref) const {
    QByteArray secret;
    if (ref.startsWith(QLatin1String("env:")))
        secret = envSecret(ref);
    else if (ref.startsWith(QLatin1String("keychain:")))
        secret = m_cache.value(ref.mid(9));
    if (secret.isEmpty())
        return {};
    return QCryptographicHash::hash(secret, QCryptographicHash::Sha256);
}

QList<QByteArray> CredentialPools::knownSecrets(const QString &ref) const {
    QList<QByteArray> out;
    if (ref.startsWith(QLatin1String("env:")))
        out << envSecret(ref);
    else if (ref.startsWith(QLatin1String("keychain:")))
        out << m_cache.value(ref.mid(9));
    // Every secret in reach, not only this one's: an error may quote another key of the pool.
    for (const QByteArray &s : m_cache)
        out << s;
    return out;
}

void CredentialPools::notifyChanged() {
    if (m_changed)
        m_changed();
}

void CredentialPools::dropExpired() {
    const qint64 now = m_clock.nowMs();
    m_states.removeIf(
        [now](const auto &it) { return it.value().health == CredentialHealth::Parked && it.value().untilMs <= now; });
}

void CredentialPools::park(const Lease &lease, ParkReason reason, int status, qint64 durationMs,
                           const QString &lastError, const QString &tenant) {
    if (lease.index < 0)
        return;
    const QString ref = refAt(lease.provider, lease.index);
    if (ref == QLatin1String("passthrough"))
        return; // the caller's own key is the caller's business, never the pool's
    SlotState &s = m_states[slotKey(lease.provider, lease.index)];
    const qint64 until = m_clock.nowMs() + std::max<qint64>(0, durationMs);
    if (s.health == CredentialHealth::Rejected ||
        (s.health == CredentialHealth::Parked && s.untilMs > until && s.untilMs > m_clock.nowMs()))
        return; // a later failure never shortens the sentence, nor turns a rejection into a timer
    s.ref = ref;
    s.health = CredentialHealth::Parked;
    s.reason = reason;
    s.status = status;
    s.untilMs = until;
    s.parkedForMs = std::max<qint64>(0, durationMs);
    s.lastError = redactCredentialError(lastError, knownSecrets(ref));
    s.lastErrorTenant = tenant;
    s.fingerprint.clear();
    notifyChanged();
}

void CredentialPools::reject(const Lease &lease, int status, const QString &lastError, const QString &tenant) {
    if (lease.index < 0)
        return;
    const QString ref = refAt(lease.provider, lease.index);
    if (ref == QLatin1String("passthrough"))
        return;
    SlotState &s = m_states[slotKey(lease.provider, lease.index)];
    s.ref = ref;
    s.health = CredentialHealth::Rejected;
    s.reason = ParkReason::Auth;
    s.status = status;
    s.untilMs = 0;
    s.parkedForMs = 0;
    s.lastError = redactCredentialError(lastError, knownSecrets(ref));
    s.lastErrorTenant = tenant;
    s.fingerprint = currentFingerprint(ref);
    notifyChanged();
}

CredentialVerdict CredentialPools::recordFailure(const Lease &lease, const CredentialFailure &failure,
                                                 const ParkDefaults &defaults) {
    const CredentialVerdict v = judgeCredentialFailure(failure, defaults, QDateTime::currentMSecsSinceEpoch());
    const QString ref = lease.index >= 0 ? refAt(lease.provider, lease.index) : QString();
    const QByteArray refused = currentFingerprint(ref); // what was sent, as far as the cache knows
    if (v.reject)
        reject(lease, failure.status.value_or(0), failure.message, failure.tenant);
    else
        park(lease, v.reason, failure.status.value_or(0), v.durationMs, failure.message, failure.tenant);
    if (v.reason == ParkReason::Auth && !v.reject)
        if (auto st = m_states.find(slotKey(lease.provider, lease.index));
            st != m_states.end() && st->fingerprint.isEmpty())
            st->fingerprint = refused; // the secret refused, so a new one can be told from it
    // The key may have been replaced in the keychain since it was cached (`credential set` while
    // running): read it once more; a new one is used at once, not after a restart or a retry.
    if ((v.reject || v.reason == ParkReason::Auth) && ref.startsWith(QLatin1String("keychain:")) && !refused.isEmpty())
        rereadAfterRefusal(ref.mid(9), refused);
    return v;
}

void CredentialPools::rereadAfterRefusal(const QString &name, const QByteArray &refused) {
    if (!m_store)
        return;
    // One re-read at a time: a burst of refusals of the same key reads it once. One that has not
    // answered in kRereadStaleMs (a hung Secret Service) no longer holds the next back, so a key
    // stored once the keychain works again is still found.
    if (const auto it = m_rereading.constFind(name); it != m_rereading.cend() && m_clock.nowMs() - *it < kRereadStaleMs)
        return;
    const qint64 started = m_clock.nowMs();
    m_rereading.insert(name, started);
    m_lastReread.insert(name, started);
    const auto onAnswer = [this, name, refused, started](const SecretResult &res) {
        if (m_rereading.value(name) == started)
            m_rereading.remove(name);
        if (!res.ok || res.secret.isEmpty())
            return;
        if (QCryptographicHash::hash(res.secret.trimmed(), QCryptographicHash::Sha256) == refused)
            return; // the same secret: it stays refused
        m_cache.insert(name, res.secret.trimmed());
        const QString ref = QLatin1String("keychain:") + name;
        const qsizetype dropped = m_states.removeIf([&ref](const auto &it) {
            return it.value().ref == ref &&
                   (it.value().health == CredentialHealth::Rejected ||
                    (it.value().health == CredentialHealth::Parked && it.value().reason == ParkReason::Auth));
        });
        if (dropped > 0)
            notifyChanged();
    };
    if (const auto out = m_reads.constFind(name); out != m_reads.cend() && !out->overdue) {
        // A read of the name is already out (start-up, a reload, a request): its answer is as new
        // as another read's would be, and a locked keyring is not asked twice. One past its bound
        // may never answer: then the re-read asks again itself.
        ReadWaiter waiter;
        waiter.done = [onAnswer](const SecretResult *res) {
            if (res)
                onAnswer(*res);
        };
        return readKeychain(name, std::move(waiter));
    }
    // Otherwise its own read, not a shared one: nothing waits on it, and a request must not pass a
    // working cached key over while it waits (the shared read's bound). Off the request path: the
    // keychain answers through D-Bus, later, on this thread.
    m_store->read(name, m_readContext.get(), [this, name, onAnswer](const SecretResult &res) {
        noteKeychainResult(name, res);
        onAnswer(res);
    });
}

void CredentialPools::configure(const QMap<QString, QStringList> &pools) {
    bool changed = false;
    for (auto it = m_states.begin(); it != m_states.end();) {
        const QString provider = it.key().section(QChar(0), 0, 0);
        if (pools.value(provider) != m_pools.value(provider) || !pools.contains(provider)) {
            it = m_states.erase(it);
            changed = true;
        } else {
            ++it;
        }
    }
    for (auto it = m_outOfReach.begin(); it != m_outOfReach.end();) {
        const QString provider = it.key().section(QChar(0), 0, 0);
        const int index = it.key().section(QChar(0), 1, 1).toInt();
        if (pools.value(provider).value(index) != it->ref)
            it = m_outOfReach.erase(it);
        else
            ++it;
    }
    m_pools = pools;
    if (changed)
        notifyChanged();
}

void CredentialPools::noteOutOfReach(const QString &provider, int index, const QString &model, qint64 forMs) {
    const QString ref = refAt(provider, index);
    if (ref.isEmpty() || model.isEmpty())
        return;
    const qint64 now = m_clock.nowMs();
    if (m_outOfReach.size() >= kMaxOutOfReach) {
        m_outOfReach.removeIf([now](const auto &e) { return e.value().untilMs <= now; });
        if (m_outOfReach.size() >= kMaxOutOfReach)
            m_outOfReach.clear(); // forgetting costs a refusal per key again, never a wrong answer
    }
    m_outOfReach.insert(slotKey(provider, index) + QChar(0) + model,
                        OutOfReach{ref, now + std::clamp<qint64>(forMs, 0, kOutOfReachMs)});
}

int CredentialPools::firstInReach(const QString &provider, const QStringList &refs, const QString &model,
                                  int from) const {
    from = std::max(0, from);
    if (m_outOfReach.isEmpty()) // the usual case: no key is known out of any model's reach
        return from < refs.size() ? from : -1;
    const qint64 now = m_clock.nowMs();
    for (int i = from; i < refs.size(); ++i) {
        const auto it = m_outOfReach.constFind(slotKey(provider, i) + QChar(0) + model);
        if (it == m_outOfReach.cend() || it->untilMs <= now || it->ref != refs[i])
            return i;
    }
    return -1;
}

QList<CredentialStatus> CredentialPools::states() const {
    QList<CredentialStatus> out;
    const qint64 now = m_clock.nowMs();
    for (auto it = m_pools.cbegin(); it != m_pools.cend(); ++it) {
        for (int i = 0; i < it->size(); ++i) {
            CredentialStatus row;
            row.provider = it.key();
            row.ref = it->at(i);
            row.position = i;
            row.leases = inFlight(it.key(), i);
            const auto st = m_states.constFind(slotKey(it.key(), i));
            if (st != m_states.cend() && st->ref == row.ref && exhausted(it.key(), i)) {
                row.state = st->health;
                row.reason = st->reason;
                row.status = st->status;
                row.lastError = st->lastError;
                if (st->health == CredentialHealth::Parked) {
                    row.remainingMs = st->untilMs - now;
                    row.parkedForMs = st->parkedForMs;
                }
            } else if (isUnsetEnvRef(row.ref)) {
                // Skipped by every request: said here, not shown as "ok".
                row.state = CredentialHealth::Missing;
                row.lastError = QStringLiteral("the environment variable %1 is not set").arg(row.ref.mid(4));
            } else if (awaitsOverdueRead(row.ref)) {
                // Requests pass it over while the read waits (a locked keyring's unlock prompt, a hung
                // Secret Service): said here and in the log, not shown as "ok" (probe AA4 F1).
                row.state = CredentialHealth::Unavailable;
                row.lastError = unansweredRead(row.ref.mid(9));
            } else if (row.ref.startsWith(QLatin1String("keychain:")) && m_keychainMissing.contains(row.ref.mid(9))) {
                row.state = CredentialHealth::Missing;
                row.lastError = QStringLiteral("not in the keychain: store it with `switchman credential set %1`")
                                    .arg(row.ref.mid(9));
            } else if (row.ref.startsWith(QLatin1String("keychain:")) && !m_cache.contains(row.ref.mid(9)) &&
                       m_keychainError.contains(row.ref.mid(9))) {
                // Requests cannot read it (they fail over with setup_error): not shown as "ok".
                row.state = CredentialHealth::Unavailable;
                row.lastError = m_keychainError.value(row.ref.mid(9));
            }
            out << row;
        }
    }
    return out;
}

int CredentialPools::parkedCount() const {
    int n = 0;
    for (const auto &row : states())
        n += row.state != CredentialHealth::Ok;
    return n;
}

int CredentialPools::clear(const CredentialFilter &filter) {
    dropExpired();
    int n = 0;
    for (auto it = m_states.begin(); it != m_states.end();) {
        const QString provider = it.key().section(QChar(0), 0, 0);
        if (filter.matches(provider, it->ref)) {
            it = m_states.erase(it);
            ++n;
        } else {
            ++it;
        }
    }
    m_outOfReach.removeIf(
        [&](const auto &e) { return filter.matches(e.key().section(QChar(0), 0, 0), e.value().ref); });
    // "Retry now" after fixing the key in the keychain by other means: read it again.
    for (auto it = m_pools.cbegin(); it != m_pools.cend(); ++it)
        for (const QString &ref : *it)
            if (filter.matches(it.key(), ref) && ref.startsWith(QLatin1String("keychain:")))
                m_cache.remove(ref.mid(9));
    if (n > 0)
        notifyChanged();
    return n;
}

int CredentialPools::credentialChanged(const QString &ref) {
    CredentialFilter f;
    f.ref = ref;
    return clear(f);
}

bool CredentialPools::usable(const QString &provider, const QStringList &refs, int index, bool callerHasAuth) const {
    const QString &ref = refs[index];
    return !exhausted(provider, index) && !isUnsetEnvRef(ref) && !awaitsOverdueRead(ref) &&
           (callerHasAuth || ref != QLatin1String("passthrough"));
}

bool CredentialPools::hasUsable(const QString &provider, const QStringList &refs, bool callerHasAuth, int from) const {
    if (refs.isEmpty())
        return true;
    for (int i = std::max(0, from); i < refs.size(); ++i)
        if (usable(provider, refs, i, callerHasAuth))
            return true;
    return false;
}

std::optional<PoolWait> CredentialPools::waitFor(const QString &provider, const QStringList &refs, bool callerHasAuth,
                                                 const QString &tenant) const {
    const qint64 now = m_clock.nowMs();
    std::optional<PoolWait> soonest;
    for (int i = 0; i < refs.size(); ++i) {
        if (usable(provider, refs, i, callerHasAuth))
            return std::nullopt;
        const auto it = m_states.constFind(slotKey(provider, i));
        if (it == m_states.cend() || it->health != CredentialHealth::Parked || it->untilMs <= now ||
            (it->reason != ParkReason::UsageLimit && it->reason != ParkReason::RateLimit &&
             it->reason != ParkReason::Forbidden))
            continue;
        if (!soonest || it->untilMs - now < soonest->remainingMs)
            soonest =
                PoolWait{it->untilMs - now, it->reason, it->status,
                         it->lastErrorTenant.isEmpty() || it->lastErrorTenant == tenant ? it->lastError : QString()};
    }
    return soonest;
}

void CredentialPools::acquire(const QString &provider, const QStringList &refs, const QByteArray &callerAuth,
                              int startIndex, QObject *context, std::function<void(const AcquireResult &)> done) {
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
        if (auto st = m_states.find(slotKey(provider, i));
            st != m_states.end() && st->health == CredentialHealth::Rejected) {
            m_states.erase(st); // usable again although rejected: its secret changed
            notifyChanged();
        }
        AcquireResult r;
        r.lease = {provider, i};
        if (ref == QLatin1String("passthrough")) {
            if (callerAuth.isEmpty())
                continue;
            r.secret = callerAuth;
            r.passthrough = true;
        } else if (ref.startsWith(QLatin1String("env:"))) {
            r.secret = envSecret(ref);
            if (r.secret.isEmpty())
                continue;
        } else if (ref.startsWith(QLatin1String("keychain:"))) {
            const QString name = ref.mid(9);
            if (auto it = m_cache.constFind(name); it != m_cache.cend()) {
                r.secret = *it;
            } else if (!m_store || awaitsOverdueRead(ref)) {
                // No keychain, or its read of this name outlasted the bound: waiting again would hold
                // this request too; the pool's next key, or the next candidate, answers instead.
                AcquireResult err;
                err.kind = AcquireResult::Kind::StoreError;
                err.error = m_store ? unansweredRead(name)
                                    : QStringLiteral("no keychain available for credential \"%1\"").arg(name);
                return acquireAfterStoreError(provider, refs, callerAuth, i, context, done, err);
            } else {
                QPointer<QObject> guard(context);
                ReadWaiter waiter;
                waiter.givesUp = true;
                waiter.done = [this, guard, provider, refs, callerAuth, i, name, context,
                               done](const SecretResult *res) {
                    if (!guard)
                        return;
                    if (res && res->ok && !res->secret.isEmpty()) {
                        acquire(provider, refs, callerAuth, i, context, done); // now served from the cache
                    } else if (res && res->notFound) {
                        acquire(provider, refs, callerAuth, i + 1, context, done);
                    } else {
                        AcquireResult err;
                        err.kind = AcquireResult::Kind::StoreError;
                        err.error = res ? QStringLiteral("keychain read of \"%1\" failed: %2").arg(name, res->error)
                                        : unansweredRead(name);
                        acquireAfterStoreError(provider, refs, callerAuth, i, context, done, err);
                    }
                };
                return readKeychain(name, std::move(waiter));
            }
        } else {
            continue;
        }
        if (!r.passthrough) {
            if (const QString why = unfitForAHeader(ref, r.secret); !why.isEmpty()) {
                reject({provider, i}, 0, why, {}); // until its secret changes
                continue;
            }
        }
        ++m_inFlight[slotKey(provider, i)];
        done(r);
        return;
    }
    AcquireResult none;
    none.kind = AcquireResult::Kind::NoCredential;
    none.error = whyNoneUsable(provider, refs);
    done(none);
}

void CredentialPools::acquireAfterStoreError(const QString &provider, const QStringList &refs,
                                             const QByteArray &callerAuth, int index, QObject *context,
                                             const std::function<void(const AcquireResult &)> &done,
                                             const AcquireResult &storeError) {
    // A keychain that cannot be read (no Secret Service, a locked keyring) keeps the pool's other
    // references working: the provider's env: key answered nothing while the keychain was named first
    // (probe K4 1; SPEC 7). With no other key, the keychain's error is what the client reads.
    acquire(provider, refs, callerAuth, index + 1, context, [done, storeError](const AcquireResult &r) {
        done(r.kind == AcquireResult::Kind::NoCredential ? storeError : r);
    });
}

QString CredentialPools::whyNoneUsable(const QString &provider, const QStringList &refs, const QString &tenant) const {
    const qint64 now = m_clock.nowMs();
    for (int i = 0; i < refs.size(); ++i) {
        const auto it = m_states.constFind(slotKey(provider, i));
        if (it == m_states.cend())
            continue;
        // The provider's words may quote the request that drew them: another tenant reads the status
        // and the reason alone (probe G3 2).
        const QString words =
            it->lastErrorTenant.isEmpty() || it->lastErrorTenant == tenant ? it->lastError : QString();
        const QString error = words.isEmpty() ? QString() : QStringLiteral(": ") + words;
        if (it->health == CredentialHealth::Rejected && it->status == 0) // refused here, not by the provider
            return QStringLiteral("provider \"%1\" cannot use its key %2%3").arg(provider, refs[i], error);
        if (it->health == CredentialHealth::Rejected)
            return QStringLiteral("provider \"%1\" refused its key %2 (HTTP %3%4); store a new secret for it")
                .arg(provider, refs[i])
                .arg(it->status)
                .arg(error);
        if (it->health == CredentialHealth::Parked && it->untilMs > now)
            return QStringLiteral("provider \"%1\" has its key %2 set aside for another %3 s (%4, HTTP %5%6)")
                .arg(provider, refs[i])
                .arg((it->untilMs - now + 999) / 1000)
                .arg(parkReasonName(it->reason))
                .arg(it->status)
                .arg(error);
    }
    for (const QString &ref : refs)
        if (ref.startsWith(QLatin1String("env:")) && envSecret(ref).isEmpty())
            return QStringLiteral("provider \"%1\" names %2, which is not set in Switchman's environment")
                .arg(provider, ref);
    for (const QString &ref : refs)
        if (awaitsOverdueRead(ref))
            return QStringLiteral("provider \"%1\" cannot use its key %2 yet: %3")
                .arg(provider, ref, unansweredRead(ref.mid(9)));
    return QStringLiteral("provider \"%1\" has no key to use (its credentials: %2)").arg(provider, refs.join(u", "));
}

void CredentialPools::noteKeychainResult(const QString &name, const SecretResult &result) {
    const bool answered = (result.ok && !result.secret.isEmpty()) || result.notFound;
    bool changed = false;
    if (answered)
        changed = m_keychainError.remove(name) > 0;
    else if (m_keychainError.value(name) != result.error || !m_keychainError.contains(name)) {
        m_keychainError.insert(name, result.error.isEmpty() ? QStringLiteral("the keychain could not be read")
                                                            : result.error);
        changed = true;
    }
    if (answered) {
        noteKeychainRead(name, result.ok && !result.secret.isEmpty()); // says so itself when it changed
        if (changed)
            notifyChanged();
    } else if (changed) {
        notifyChanged();
    }
}

void CredentialPools::noteKeychainRead(const QString &name, bool found) {
    if (found != m_keychainMissing.contains(name))
        return; // nothing new
    if (found)
        m_keychainMissing.remove(name);
    else
        m_keychainMissing.insert(name);
    notifyChanged();
}

void CredentialPools::prewarm(const QStringList &refs, QObject *context,
                              std::function<void(const QString &, const SecretResult &)> onProblem) {
    const quint64 generation = ++m_prewarmGeneration;
    m_prewarmNames.clear();
    for (const QString &ref : refs)
        if (ref.startsWith(QLatin1String("keychain:")))
            m_prewarmNames.insert(ref.mid(9));
    // The cached secrets stay until a read answers otherwise: a reload that changed nothing threw
    // away working keys, and with the keyring locked since, took their providers out of service
    // (probe AA4 F3). Only a key no longer configured goes.
    m_cache.removeIf([this](const auto &it) { return !configuresKeychain(it.key()); });
    if (!m_store)
        return;
    for (const QString &name : std::as_const(m_prewarmNames)) {
        ReadWaiter waiter;
        waiter.done = [this, name, generation, guard = QPointer<QObject>(context), onProblem](const SecretResult *res) {
            if (!guard || generation != m_prewarmGeneration || !onProblem || (res->ok && !res->secret.isEmpty()))
                return;
            onProblem(name, *res); // before the state's own line (noteKeychainResult): it names the way out
        };
        readKeychain(name, std::move(waiter));
    }
}

bool CredentialPools::configuresKeychain(const QString &name) const {
    if (m_prewarmNames.contains(name))
        return true;
    const QString ref = QLatin1String("keychain:") + name;
    for (const QStringList &refs : m_pools)
        if (refs.contains(ref))
            return true;
    return false;
}

void CredentialPools::readKeychain(const QString &name, ReadWaiter waiter) {
    // Every reader of a name shares one read: the keychain runs its jobs one after another, so a
    // second read would only queue behind the first.
    auto it = m_reads.find(name);
    const bool start = it == m_reads.end();
    if (start) {
        it = m_reads.insert(name, PendingRead{});
        it->startedMs = m_clock.nowMs();
        it->timer = m_clock.schedule(kKeychainReadTimeoutMs, [this, name]() { onReadOverdue(name); });
    }
    it->forRequest = it->forRequest || waiter.givesUp;
    it->waiters.append(std::move(waiter));
    if (start) // last: a store may answer inside the call
        m_store->read(name, m_readContext.get(),
                      [this, name](const SecretResult &res) { onKeychainAnswer(name, res); });
}

void CredentialPools::onReadOverdue(const QString &name) {
    auto it = m_reads.find(name);
    if (it == m_reads.end())
        return;
    it->timer = 0;
    it->overdue = true;
    QList<ReadWaiter> gaveUp;
    QList<ReadWaiter> stay;
    for (ReadWaiter &w : it->waiters)
        (w.givesUp ? gaveUp : stay).append(std::move(w));
    it->waiters = std::move(stay);
    notifyChanged(); // "unavailable" in the admin API and the log, while it waits
    for (const ReadWaiter &w : std::as_const(gaveUp))
        w.done(nullptr);
}

void CredentialPools::onKeychainAnswer(const QString &name, const SecretResult &result) {
    const auto it = m_reads.find(name);
    if (it == m_reads.end())
        return;
    const PendingRead read = *it;
    m_reads.erase(it);
    if (read.timer)
        m_clock.cancel(read.timer);
    if (result.ok && !result.secret.isEmpty()) {
        if (read.forRequest || configuresKeychain(name)) {
            const QByteArray secret = result.secret.trimmed();
            m_cache.insert(name, secret);
            // A rejected keychain credential whose secret now reads differently was fixed.
            const QByteArray fp = QCryptographicHash::hash(secret, QCryptographicHash::Sha256);
            if (m_states.removeIf([&](const auto &st) {
                    return st.value().health == CredentialHealth::Rejected &&
                           st.value().ref == QLatin1String("keychain:") + name && !st.value().fingerprint.isEmpty() &&
                           st.value().fingerprint != fp;
                }) > 0)
                notifyChanged();
        }
    } else if (result.notFound) {
        m_cache.remove(name); // the store works and holds no such entry: the cached copy is gone too
    }
    // A read that failed (locked, no Secret Service) leaves a working copy in use.
    for (const ReadWaiter &w : read.waiters)
        w.done(&result);
    noteKeychainResult(name, result);
    if (read.overdue)
        notifyChanged(); // no longer waiting: its row says what the answer was
}

bool CredentialPools::awaitsOverdueRead(const QString &ref) const {
    if (!ref.startsWith(QLatin1String("keychain:")))
        return false;
    const QString name = ref.mid(9);
    const auto it = m_reads.constFind(name);
    return it != m_reads.cend() && it->overdue && !m_cache.contains(name);
}

QString CredentialPools::unansweredRead(const QString &name) const {
    const qint64 waitedMs = m_clock.nowMs() - m_reads.value(name).startedMs;
    return QStringLiteral("the keychain has not answered a read of \"%1\" for %2 s: a locked keyring waits for "
                          "its unlock prompt, or the Secret Service is not answering; its answer is used when it "
                          "comes")
        .arg(name)
        .arg(waitedMs / 1000);
}

void CredentialPools::release(const Lease &lease) {
    if (!lease.valid())
        return;
    auto it = m_inFlight.find(slotKey(lease.provider, lease.index));
    if (it != m_inFlight.end() && --*it <= 0)
        m_inFlight.erase(it);
}

void CredentialPools::markExhausted(const Lease &lease, qint64 forMs) {
    park(lease, ParkReason::UsageLimit, 0, forMs, {});
}

int CredentialPools::inFlight(const QString &provider, int index) const {
    return m_inFlight.value(slotKey(provider, index));
}

int CredentialPools::totalInFlight() const {
    int n = 0;
    for (int v : m_inFlight)
        n += v;
    return n;
}

} // namespace sw::credentials
