#pragma once
// What upstream servers have said of themselves that every later request should heed, learned
// once per process on the engine thread: a Chat server in DeepSeek's thinking mode that refused
// a tool-call turn without its reasoning_content (FailureClassifier::asksForReasoningBack) gets
// it on every later request, instead of a 400 and a second try on every turn of a conversation;
// a server with Mistral's chat template (a loopback vLLM) that refused a tool call id not of nine
// characters of [a-zA-Z0-9] gets every id so from then on. Those are a model's rules (its chat
// template's), kept per base URL and model: a router serves many models, and what one said sent
// to another was refused by it until the process ended (probe S2 F3). An OpenAI server that
// refused a reasoning summary (an organisation not verified) is asked for none from then on: the
// organisation's rule, per base URL. One that would not stream a model (an organisation not
// verified for o3 or gpt-5) is asked for that model's answers whole, per base URL and model. Keyed by the configured
// base URL, so bounded by the configuration; the per-model sets by kMaxModelTraits too (a direct `provider/<any id>`
// names models the client chooses).

#include <QSet>
#include <QString>

namespace sw::upstream {

class ServerTraits {
public:
    static constexpr qsizetype kMaxModelTraits = 4096;

    bool asksForReasoningBack(const QString &baseUrl, const QString &model) const {
        return !m_reasoningBack.isEmpty() && m_reasoningBack.contains(key(baseUrl, model));
    }
    void learnAsksForReasoningBack(const QString &baseUrl, const QString &model) {
        learn(m_reasoningBack, key(baseUrl, model));
    }
    bool refusesReasoningSummary(const QString &baseUrl) const { return m_noSummary.contains(baseUrl); }
    void learnRefusesReasoningSummary(const QString &baseUrl) { m_noSummary.insert(baseUrl); }
    bool refusesToStream(const QString &baseUrl, const QString &model) const {
        return !m_noStream.isEmpty() && m_noStream.contains(key(baseUrl, model));
    }
    void learnRefusesToStream(const QString &baseUrl, const QString &model) { learn(m_noStream, key(baseUrl, model)); }
    bool takesOnlyNineCharToolIds(const QString &baseUrl, const QString &model) const {
        return !m_nineCharIds.isEmpty() && m_nineCharIds.contains(key(baseUrl, model));
    }
    void learnTakesOnlyNineCharToolIds(const QString &baseUrl, const QString &model) {
        learn(m_nineCharIds, key(baseUrl, model));
    }

private:
    static QString key(const QString &baseUrl, const QString &model) { return baseUrl + QChar(0x1f) + model; }
    static void learn(QSet<QString> &set, QString k) {
        if (set.size() < kMaxModelTraits)
            set.insert(std::move(k));
    }

    QSet<QString> m_reasoningBack; // base URL, U+001F, model id
    QSet<QString> m_noSummary;     // base URL
    QSet<QString> m_nineCharIds;   // base URL, U+001F, model id
    QSet<QString> m_noStream;      // base URL, U+001F, model id
};

} // namespace sw::upstream
