#include "core/server/idempotency_store.h"

#include <QCryptographicHash>
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

qint64 IdempotencyStore::sizeOf(const Hit &hit) {
    qint64 n = hit.body.size();
    for (const auto &h : hit.headers)
        n += h.first.size() + h.second.size();
    return n;
}

void IdempotencyStore::erase(QHash<QString, Entry>::iterator it) {
    if (it->hit.state == State::Completed)
        m_keptBytes -= sizeOf(it->hit);
    m_entries.erase(it);
}

void IdempotencyStore::expire() {
    const qint64 now = m_clock.nowMs();
    for (auto it = m_entries.begin(); it != m_entries.end();) {
        if (it->hit.state == State::Completed && now - it->atMs > kRetentionMs) {
            m_keptBytes -= sizeOf(it->hit);
            it = m_entries.erase(it);
        } else {
            ++it;
        }
    }
}

void IdempotencyStore::setBounds(qint64 maxTotalBytes, qint64 maxAnswerBytes) {
    m_maxTotalBytes = std::max<qint64>(0, maxTotalBytes);
    m_maxAnswerBytes = std::max<qint64>(0, maxAnswerBytes);
    fitTotal();
}

void IdempotencyStore::fitTotal() {
    // Rare (the bound is far above a normal day's answers): a scan for the oldest is enough.
    while (m_keptBytes > m_maxTotalBytes) {
        auto oldest = m_entries.end();
        for (auto it = m_entries.begin(); it != m_entries.end(); ++it)
            if (it->hit.state == State::Completed && (oldest == m_entries.end() || it->atMs < oldest->atMs))
                oldest = it;
        if (oldest == m_entries.end())
            return;
        erase(oldest);
    }
}

IdempotencyStore::Hit IdempotencyStore::begin(const QString &tenant, const QByteArray &key, const QString &route,
                                              const QByteArray &requestBody) {
    expire();
    const QString k = keyOf(tenant, key);
    if (auto it = m_entries.constFind(k); it != m_entries.cend())
        return it->hit;
    if (m_entries.size() >= kMaxEntries)
        return {}; // full: serve without idempotency rather than refuse
    Entry e;
    e.hit.state = State::InFlight;
    e.requestDigest = digestOf(route, requestBody);
    e.atMs = m_clock.nowMs();
    m_entries.insert(k, e);
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

void IdempotencyStore::complete(const QString &tenant, const QByteArray &key, int status,
                                const http::HeaderList &headers, const QByteArray &body) {
    auto it = m_entries.find(keyOf(tenant, key));
    if (it == m_entries.end() || it->hit.state == State::Completed)
        return;
    Hit hit{State::Completed, status, headers, body};
    const qint64 size = sizeOf(hit);
    if (size > m_maxAnswerBytes || size > m_maxTotalBytes) {
        m_entries.erase(it); // too long to keep: the key is let go, a retry runs again
        return;
    }
    it->hit = std::move(hit);
    it->atMs = m_clock.nowMs();
    m_keptBytes += size;
    fitTotal();
}

void IdempotencyStore::abandon(const QString &tenant, const QByteArray &key) {
    auto it = m_entries.find(keyOf(tenant, key));
    if (it != m_entries.end() && it->hit.state == State::InFlight)
        erase(it);
}

} // namespace sw::server
