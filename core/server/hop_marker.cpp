#include "core/server/hop_marker.h"

#include <QRandomGenerator>

namespace sw::server {

namespace {
constexpr QByteArrayView kPrefix("switchman-");

bool space(char c) {
    return c == ' ' || c == '\t';
}

// One Via element, "received-protocol RWS received-by [RWS comment]": its received-by.
QByteArrayView receivedBy(QByteArrayView element) {
    element = element.trimmed();
    qsizetype at = 0;
    while (at < element.size() && !space(element[at]))
        ++at; // the protocol
    while (at < element.size() && space(element[at]))
        ++at;
    qsizetype end = at;
    while (end < element.size() && !space(element[end]) && element[end] != '(')
        ++end;
    return element.sliced(at, end - at);
}
} // namespace

HopMarker::HopMarker() : HopMarker(QByteArray::number(QRandomGenerator::global()->generate64(), 36)) {}

HopMarker::HopMarker(QByteArray token)
    : m_name(kPrefix.toByteArray() + token), m_entry(QByteArrayLiteral("1.1 ") + m_name) {}

QByteArray HopMarker::viaUpstream(const QByteArray &clientVia) const {
    if (clientVia.isEmpty())
        return m_entry;
    return clientVia + ", " + m_entry;
}

void HopMarker::read(QByteArrayView value, Reading &reading) const {
    // A list of elements split at every comma, a comment's too (RFC 9110 5.6.5 lets "(…)" hold
    // one): a comment then can only add an element, never hide one. A comment-aware reading
    // would let a client's unclosed "(" swallow every entry forwarded after it, this one's too.
    for (qsizetype start = 0; start <= value.size();) {
        qsizetype comma = value.indexOf(',', start);
        if (comma < 0)
            comma = value.size();
        const QByteArrayView by = receivedBy(value.sliced(start, comma - start));
        if (by.size() > kPrefix.size() && by.first(kPrefix.size()).compare(kPrefix, Qt::CaseInsensitive) == 0) {
            ++reading.switchmanHops;
            reading.ownEntry |= by.compare(m_name, Qt::CaseInsensitive) == 0;
        }
        start = comma + 1;
    }
}

std::optional<QString> HopMarker::loopProblem(const Reading &reading) const {
    if (reading.ownEntry)
        return QStringLiteral("loop detected: this request has already passed through this Switchman (Via: %1), so "
                              "a provider's baseUrl leads back to the gateway itself, directly or through another "
                              "gateway; point each provider at the real upstream")
            .arg(QString::fromLatin1(m_name));
    if (reading.switchmanHops > kMaxSwitchmanHops)
        return QStringLiteral("loop detected: this request has already passed through %1 Switchman gateways (Via), "
                              "more than %2; their providers' baseUrls lead round a ring of gateways")
            .arg(reading.switchmanHops)
            .arg(kMaxSwitchmanHops);
    return std::nullopt;
}

} // namespace sw::server
