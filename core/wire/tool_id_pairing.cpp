#include "core/wire/tool_id_pairing.h"

#include "core/wire/tool_call_id.h"

namespace sw::wire {

QString ToolIdPairing::call(const QString &id, const QString &valid) {
    const QString unique = uniqueToolId(valid, m_taken, m_maxLength, &m_nextSuffix);
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

} // namespace sw::wire
