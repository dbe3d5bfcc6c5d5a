#include "core/wire/tool_id_pairing.h"

#include "core/wire/tool_call_id.h"

namespace sw::wire {

QString ToolIdPairing::call(const QString &id, const QString &valid) {
    const QString unique = uniqueToolId(valid, m_taken, m_maxLength, m_nextSuffix);
    m_taken.insert(unique);
    m_latest.insert(id, unique);
    m_unanswered[id].append(unique);
    return unique;
}

QString ToolIdPairing::result(const QString &id, const QString &valid) {
    const auto calls = m_unanswered.find(id);
    if (calls != m_unanswered.end() && !calls->isEmpty())
        return calls->takeFirst();
    return m_latest.value(id, valid);
}

QString NineCharToolIds::alias(const QString &id) {
    if (const auto known = m_alias.constFind(id); known != m_alias.constEnd())
        return *known;
    QString out = id;
    for (int attempt = 0; !isNineCharToolId(out) || m_taken.contains(out); ++attempt)
        out = nineCharToolId(id, attempt);
    m_taken.insert(out);
    m_alias.insert(id, out);
    return out;
}

} // namespace sw::wire
