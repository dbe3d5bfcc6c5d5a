#pragma once
// What upstream servers have said of themselves that every later request should heed, learned
// once per process on the engine thread: a Chat server in DeepSeek's thinking mode that refused
// a tool-call turn without its reasoning_content (FailureClassifier::asksForReasoningBack) gets
// it on every later request, instead of a 400 and a second try on every turn of a conversation.
// An OpenAI server that refused a reasoning summary (an organisation not verified) is asked for
// none from then on. A server with Mistral's chat template (a loopback vLLM) that refused a tool call
// id not of nine characters of [a-zA-Z0-9] gets every id so from then on. Keyed by the configured base URL, so bounded
// by the configuration.

#include <QSet>
#include <QString>

namespace sw::upstream {

class ServerTraits {
public:
    bool asksForReasoningBack(const QString &baseUrl) const { return m_reasoningBack.contains(baseUrl); }
    void learnAsksForReasoningBack(const QString &baseUrl) { m_reasoningBack.insert(baseUrl); }
    bool refusesReasoningSummary(const QString &baseUrl) const { return m_noSummary.contains(baseUrl); }
    void learnRefusesReasoningSummary(const QString &baseUrl) { m_noSummary.insert(baseUrl); }
    bool takesOnlyNineCharToolIds(const QString &baseUrl) const { return m_nineCharIds.contains(baseUrl); }
    void learnTakesOnlyNineCharToolIds(const QString &baseUrl) { m_nineCharIds.insert(baseUrl); }

private:
    QSet<QString> m_reasoningBack;
    QSet<QString> m_noSummary;
    QSet<QString> m_nineCharIds;
};

} // namespace sw::upstream
