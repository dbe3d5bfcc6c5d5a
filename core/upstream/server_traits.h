#pragma once
// What upstream servers have said of themselves that every later request should heed, learned
// once per process on the engine thread: a Chat server in DeepSeek's thinking mode that refused
// a tool-call turn without its reasoning_content (FailureClassifier::asksForReasoningBack) gets
// it on every later request, instead of a 400 and a second try on every turn of a conversation;
// a server with Mistral's chat template (a loopback vLLM) that refused a tool call id not of nine
// characters of [a-zA-Z0-9] gets every id so from then on. Those are a model's rules (its chat
// template's), kept per base URL and model: a router serves many models, and what one said sent
// to another was refused by it until the process ended (probe S2 F3). An OpenAI organisation not
// verified is refused reasoning summaries, and the streams of some models (o3, gpt-5): a key that
// was refused a summary is asked for none from then on, and one refused a model's stream is asked
// for that model's answers whole. Those are the organisation's rules, so they are kept per credential:
// the base URL and a digest of the key (never the key itself). Kept per base URL, one tenant's own
// passthrough key, or one key of a pool, took streaming and summaries from every other key there
// until the process ended (probe AC2 F2); a caller's own key now teaches nothing of anyone else's.
// The model traits are keyed by the configured base URL, so bounded by the configuration; every set
// by kMaxModelTraits too (a direct `provider/<any id>` names models the client chooses, and a caller
// names its own keys). A full set learns nothing more: a request then meets the refusal and its
// second try, as before anything was learned.

#include <QByteArray>
#include <QCryptographicHash>
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
    // `credential`: the key sent (Target::credential), the caller's own one included.
    bool refusesReasoningSummary(const QString &baseUrl, const QByteArray &credential) const {
        return !m_noSummary.isEmpty() && m_noSummary.contains(credentialKey(baseUrl, credential));
    }
    void learnRefusesReasoningSummary(const QString &baseUrl, const QByteArray &credential) {
        learn(m_noSummary, credentialKey(baseUrl, credential));
    }
    bool refusesToStream(const QString &baseUrl, const QByteArray &credential, const QString &model) const {
        return !m_noStream.isEmpty() && m_noStream.contains(key(credentialKey(baseUrl, credential), model));
    }
    void learnRefusesToStream(const QString &baseUrl, const QByteArray &credential, const QString &model) {
        learn(m_noStream, key(credentialKey(baseUrl, credential), model));
    }
    bool takesOnlyNineCharToolIds(const QString &baseUrl, const QString &model) const {
        return !m_nineCharIds.isEmpty() && m_nineCharIds.contains(key(baseUrl, model));
    }
    void learnTakesOnlyNineCharToolIds(const QString &baseUrl, const QString &model) {
        learn(m_nineCharIds, key(baseUrl, model));
    }

private:
    static QString key(const QString &baseUrl, const QString &model) { return baseUrl + QChar(0x1f) + model; }
    static QString credentialKey(const QString &baseUrl, const QByteArray &credential) {
        return key(baseUrl, QString::fromLatin1(QCryptographicHash::hash(credential, QCryptographicHash::Sha256)
                                                    .toBase64(QByteArray::OmitTrailingEquals)));
    }
    static void learn(QSet<QString> &set, QString k) {
        if (set.size() < kMaxModelTraits)
            set.insert(std::move(k));
    }

    QSet<QString> m_reasoningBack; // base URL, U+001F, model id
    QSet<QString> m_noSummary;     // base URL, U+001F, the key's SHA-256
    QSet<QString> m_nineCharIds;   // base URL, U+001F, model id
    QSet<QString> m_noStream;      // base URL, U+001F, the key's SHA-256, U+001F, model id
};

} // namespace sw::upstream
