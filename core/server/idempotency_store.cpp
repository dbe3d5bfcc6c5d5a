#include "core/server/idempotency_store.h"

#include <QCryptographicHash>
#include <QDataStream>
#include <QIODevice>
#include <algorithm>

namespace sw::server {

namespace {
QString keyOf(const QString &tenant, const QByteArray &key) {
    return tenant + QChar(0) + QString::fromUtf8(key);
}

QByteArray digestOf(const QString &route, const QByteArray &body) {
    QCryptographicHash hash(QCryptographicHash::Sha256);
    hash.addData(route.toUtf8());
    hash.addData(QByteArrayView("\0", 1));
    hash.addData(body);
    return hash.result();
}
} // namespace

QByteArray IdempotencyStore::ownedKey(const QByteArray &idempotencyKey, QByteArrayView callerProviderKey) {
    if (callerProviderKey.isEmpty())
        return idempotencyKey;
    // Not printable ASCII (the header's rule): no Idempotency-Key a client sends can spell it.
    return idempotencyKey + '\0' +
           QCryptographicHash::hash(callerProviderKey, QCryptographicHash::Sha256).toHex().left(32);
}

qint64 IdempotencyStore::sizeOf(const Hit &hit) {
    qint64 n = hit.body.size();
    for (const auto &h : hit.headers)
        n += h.first.size() + h.second.size();
    return n;
}

QByteArray IdempotencyStore::encodeHeaders(const http::HeaderList &headers) {
    QByteArray out;
    QDataStream stream(&out, QIODevice::WriteOnly);
    stream.setVersion(QDataStream::Qt_6_0);
    stream << qint32(headers.size());
    for (const auto &[name, value] : headers)
        stream << name << value;
    return out;
}

http::HeaderList IdempotencyStore::decodeHeaders(const QByteArray &encoded) {
    http::HeaderList headers;
    QDataStream stream(encoded);
    stream.setVersion(QDataStream::Qt_6_0);
    qint32 n = 0;
    stream >> n;
    for (qint32 i = 0; i < n && stream.status() == QDataStream::Ok; ++i) {
        QByteArray name, value;
        stream >> name >> value;
        if (stream.status() == QDataStream::Ok)
            headers.append({name, value});
    }
    return headers;
}

void IdempotencyStore::journal(const Entry &e, bool dropped) const {
    if (!m_journal || e.hit.state != State::Completed)
        return;
    Kept k;
    k.tenant = e.tenant;
    k.key = e.key;
    k.dropped = dropped;
    if (!dropped) {
        k.requestDigest = e.requestDigest;
        k.atEpochMs = m_clock.epochMs() - (m_clock.nowMs() - e.atMs);
        k.hit = e.hit;
    }
    m_journal(std::move(k));
}

void IdempotencyStore::adopt(Kept kept) {
    if (kept.dropped || kept.hit.status <= 0)
        return;
    const qint64 age = std::max<qint64>(0, m_clock.epochMs() - kept.atEpochMs);
    if (age > kRetentionMs)
        return;
    const QString k = keyOf(kept.tenant, kept.key);
    if (m_entries.contains(k))
        return;
    kept.hit.state = State::Completed;
    const qint64 size = sizeOf(kept.hit);
    if (size > m_maxAnswerBytes || size > m_maxTotalBytes)
        return;
    if (keysHeld(kept.tenant) >= m_maxKeysPerTenant && !evictOldestOf(kept.tenant))
        return;
    Entry e;
    e.hit = std::move(kept.hit);
    e.requestDigest = std::move(kept.requestDigest);
    e.atMs = m_clock.nowMs() - age;
    e.tenant = kept.tenant;
    e.key = kept.key;
    e.seq = m_nextSeq++;
    auto &t = m_tenants[kept.tenant];
    t.bySeq.emplace(e.seq, k);
    t.keptBytes += size;
    m_keptBytes += size;
    m_entries.insert(k, std::move(e));
    fitTotal();
}

QHash<QString, IdempotencyStore::Entry>::iterator IdempotencyStore::erase(QHash<QString, Entry>::iterator it) {
    journal(*it, true);
    const auto t = m_tenants.find(it->tenant);
    if (t != m_tenants.end()) {
        if (it->hit.state == State::Completed)
            t->keptBytes -= sizeOf(it->hit);
        t->bySeq.erase(it->seq);
        if (t->bySeq.empty())
            m_tenants.erase(t);
    }
    if (it->hit.state == State::Completed)
        m_keptBytes -= sizeOf(it->hit);
    return m_entries.erase(it);
}

void IdempotencyStore::expire() {
    const qint64 now = m_clock.nowMs();
    for (auto it = m_entries.begin(); it != m_entries.end();) {
        if (it->hit.state == State::Completed && now - it->atMs > kRetentionMs)
            it = erase(it);
        else
            ++it;
    }
}

void IdempotencyStore::setBounds(qint64 maxTotalBytes, qint64 maxAnswerBytes) {
    m_maxTotalBytes = std::max<qint64>(0, maxTotalBytes);
    m_maxAnswerBytes = std::max<qint64>(0, maxAnswerBytes);
    fitTotal();
}

void IdempotencyStore::setMaxKeysPerTenant(int maxKeys) {
    m_maxKeysPerTenant = std::max(1, maxKeys);
    // A smaller share lets each tenant's oldest completed keys go now.
    const QStringList tenants = m_tenants.keys();
    for (const QString &tenant : tenants)
        while (keysHeld(tenant) > m_maxKeysPerTenant && evictOldestOf(tenant)) {
        }
}

int IdempotencyStore::keysHeld(const QString &tenant) const {
    const auto t = m_tenants.constFind(tenant);
    return t == m_tenants.cend() ? 0 : int(t->bySeq.size());
}

bool IdempotencyStore::evictOldestOf(const QString &tenant) {
    const auto t = m_tenants.find(tenant);
    if (t == m_tenants.end())
        return false;
    // In-flight keys are skipped: they guard a request still running (409 to its twin). Only as
    // many as the tenant's requests in flight precede its oldest completed one.
    for (const auto &[seq, key] : t->bySeq) {
        const auto it = m_entries.find(key);
        if (it != m_entries.end() && it->hit.state == State::Completed) {
            erase(it);
            return true;
        }
    }
    return false;
}

void IdempotencyStore::fitTotal() {
    // Past the total, the tenant keeping the most bytes gives up its oldest answer: one tenant's
    // answers never push out another's while it keeps more than they do.
    while (m_keptBytes > m_maxTotalBytes) {
        QString biggest;
        qint64 most = 0;
        for (auto t = m_tenants.cbegin(); t != m_tenants.cend(); ++t)
            if (t->keptBytes > most) {
                most = t->keptBytes;
                biggest = t.key();
            }
        if (most == 0 || !evictOldestOf(biggest))
            return;
    }
}

IdempotencyStore::Hit IdempotencyStore::begin(const QString &tenant, const QByteArray &key, const QString &route,
                                              const QByteArray &requestBody) {
    expire();
    const QString k = keyOf(tenant, key);
    if (auto it = m_entries.constFind(k); it != m_entries.cend())
        return it->hit;
    // At its share, the tenant's own oldest completed key makes room. Only when every key it holds
    // is in flight is this request served without idempotency: that tenant's alone, never another's.
    if (keysHeld(tenant) >= m_maxKeysPerTenant && !evictOldestOf(tenant))
        return {};
    Entry e;
    e.hit.state = State::InFlight;
    e.requestDigest = digestOf(route, requestBody);
    e.atMs = m_clock.nowMs();
    e.tenant = tenant;
    e.key = key;
    e.seq = m_nextSeq++;
    m_tenants[tenant].bySeq.emplace(e.seq, k);
    m_entries.insert(k, std::move(e));
    return {};
}

bool IdempotencyStore::usedForOtherRequest(const QString &tenant, const QByteArray &key, const QString &route,
                                           const QByteArray &requestBody) {
    expire();
    const auto it = m_entries.constFind(keyOf(tenant, key));
    return it != m_entries.cend() && it->requestDigest != digestOf(route, requestBody);
}

bool IdempotencyStore::inFlight(const QString &tenant, const QByteArray &key) const {
    const auto it = m_entries.constFind(keyOf(tenant, key));
    return it != m_entries.cend() && it->hit.state == State::InFlight;
}

bool IdempotencyStore::completed(const QString &tenant, const QByteArray &key) const {
    const auto it = m_entries.constFind(keyOf(tenant, key));
    return it != m_entries.cend() && it->hit.state == State::Completed;
}

void IdempotencyStore::complete(const QString &tenant, const QByteArray &key, int status,
                                const http::HeaderList &headers, const QByteArray &body) {
    auto it = m_entries.find(keyOf(tenant, key));
    if (it == m_entries.end() || it->hit.state == State::Completed)
        return;
    Hit hit{State::Completed, status, headers, body};
    const qint64 size = sizeOf(hit);
    if (size > m_maxAnswerBytes || size > m_maxTotalBytes) {
        erase(it); // too long to keep: the key is let go, a retry runs again
        return;
    }
    it->hit = std::move(hit);
    it->atMs = m_clock.nowMs();
    m_keptBytes += size;
    m_tenants[it->tenant].keptBytes += size;
    journal(*it, false);
    fitTotal();
}

void IdempotencyStore::abandon(const QString &tenant, const QByteArray &key) {
    auto it = m_entries.find(keyOf(tenant, key));
    if (it != m_entries.end() && it->hit.state == State::InFlight)
        erase(it);
}

} // namespace sw::server
