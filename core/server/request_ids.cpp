#include "core/server/request_ids.h"

#include <QRandomGenerator>

namespace sw::server {

namespace {

quint64 mix(quint64 x) {
    // SplitMix64's finaliser: every input bit reaches every output bit.
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

} // namespace

RequestIds::RequestIds(QByteArray prefix) : m_prefix(std::move(prefix)) {
    QRandomGenerator::system()->generate(m_keys.begin(), m_keys.end());
}

QString RequestIds::next() {
    // Four Feistel rounds over the two 32-bit halves: a permutation, whatever the round function.
    quint64 x = ++m_counter;
    quint32 left = quint32(x >> 32), right = quint32(x);
    for (const quint64 key : m_keys) {
        const quint32 f = quint32(mix(right ^ key) >> 16);
        const quint32 next = left ^ f;
        left = right;
        right = next;
    }
    x = (quint64(left) << 32) | right;
    static constexpr char kDigits[] = "0123456789abcdefghijklmnopqrstuv";
    constexpr qsizetype kChars = 13; // 13 × 5 bits ≥ 64
    QString id(4 + m_prefix.size() + kChars, Qt::Uninitialized);
    QChar *out = id.data();
    for (const char c : {'r', 'e', 'q', '_'})
        *out++ = QLatin1Char(c);
    for (const char c : m_prefix)
        *out++ = QLatin1Char(c);
    for (qsizetype i = kChars - 1; i >= 0; --i) {
        out[i] = QLatin1Char(kDigits[x & 31]);
        x >>= 5;
    }
    return id;
}

http::HeaderList requestIdHeaders(wire::Api format, const QString &id) {
    const QByteArray value = id.toLatin1();
    http::HeaderList headers{{QByteArrayLiteral("x-switchman-request-id"), value}};
    if (format == wire::Api::AnthropicMessages)
        headers.append({QByteArrayLiteral("request-id"), value});
    else if (format == wire::Api::OpenAICompletions || format == wire::Api::OpenAIResponses)
        headers.append({QByteArrayLiteral("x-request-id"), value});
    return headers;
}

} // namespace sw::server
