#include "core/server/idempotency_store.h"

#include <QCryptographicHash>

namespace sw::server {

namespace {
QString keyOf(const QString &tenant, const QByteArray &key) {
    return tenant + QChar(0) + QString::fromUtf8(key);
}

QByteArray digestOf(const QByteArray &body) {
    return QCryptographicHash::hash(body, QCryptographicHash::Sha256);
}
} // namespace

void IdempotencyStore::expire() {
    const qint64 now = m_clock.nowMs();
    for (auto it = m_entries.begin(); it != m_entries.end();) {
        if (it->hit.state == State::Completed && now - it->atMs > kRetentionMs)
            it = m_entries.erase(it);
        else
            ++it;
    }
}

IdempotencyStore::Hit IdempotencyStore::begin(const QString &tenant, const QByteArray &key,
                                              const QByteArray &requestBody) {
    expire();
    const QString k = keyOf(tenant, key);
    if (auto it = m_entries.constFind(k); it != m_entries.cend())
        return it->hit;
    if (m_entries.size() >= kMaxEntries)
        return {}; // full: serve without idempotency rather than refuse
    Entry e;
    e.hit.state = State::InFlight;
    e.bodyDigest = digestOf(requestBody);
    e.atMs = m_clock.nowMs();
    m_entries.insert(k, e);
    return {};
}

bool IdempotencyStore::usedWithOtherBody(const QString &tenant, const QByteArray &key, const QByteArray &requestBody) {
    expire();
    const auto it = m_entries.constFind(keyOf(tenant, key));
    return it != m_entries.cend() && it->bodyDigest != digestOf(requestBody);
}

bool IdempotencyStore::inFlight(const QString &tenant, const QByteArray &key) const {
    const auto it = m_entries.constFind(keyOf(tenant, key));
    return it != m_entries.cend() && it->hit.state == State::InFlight;
}

void IdempotencyStore::complete(const QString &tenant, const QByteArray &key, int status,
                                const http::HeaderList &headers, const QByteArray &body) {
    auto it = m_entries.find(keyOf(tenant, key));
    if (it == m_entries.end())
        return;
    it->hit = {State::Completed, status, headers, body};
    it->atMs = m_clock.nowMs();
}

void IdempotencyStore::abandon(const QString &tenant, const QByteArray &key) {
    auto it = m_entries.find(keyOf(tenant, key));
    if (it != m_entries.end() && it->hit.state == State::InFlight)
        m_entries.erase(it);
}

} // namespace sw::server
