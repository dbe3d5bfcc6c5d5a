#pragma once
// What upstream servers have said of themselves that every later request should heed, learned
// once per process on the engine thread: a Chat server in DeepSeek's thinking mode that refused
// a tool-call turn without its reasoning_content (FailureClassifier::asksForReasoningBack) gets
// it on every later request, instead of a 400 and a second try on every turn of a conversation.
// Keyed by the configured base URL, so bounded by the configuration.

#include <QSet>
#include <QString>

namespace sw::upstream {

class ServerTraits {
public:
    bool asksForReasoningBack(const QString &baseUrl) const { return m_reasoningBack.contains(baseUrl); }
    void learnAsksForReasoningBack(const QString &baseUrl) { m_reasoningBack.insert(baseUrl); }

private:
    QSet<QString> m_reasoningBack;
};

} // namespace sw::upstream
