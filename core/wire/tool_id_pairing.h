#pragma once
// A conversation's tool call ids made unique as its turns are read in order, and each result given
// the id of the call it answers (formats/translation_rules.md, "Tool call ids"). Some servers give
// two calls of one answer one id (DeepSeek, GLM, Kimi's "grep:3"), or every turn's call the same one
// ("call_0"): Messages refuses a repeated tool_use id, OpenAI a repeated tool_call_id ("Duplicate
// value for 'tool_call_id'") or call_id. A call keeps its id when no earlier call took it; a repeat
// gets the next free one of the same scheme (wire::uniqueToolId: "call_0_2", "call_0_3"). A result
// takes the first call of its id in the latest calling turn that no result has taken yet, so two
// calls under one id are answered in order, one result each; one that no call of that turn answers
// takes the latest call of its id.

#include <QHash>
#include <QSet>
#include <QString>
#include <QStringList>

#include <algorithm>

namespace sw::wire {

class ToolIdPairing final {
public:
    // `maxLength`: the longest id the API takes (a unique id keeps within it).
    explicit ToolIdPairing(qsizetype maxLength) : m_maxLength(maxLength) {}

    // A turn with calls begins: the calls of earlier turns are no longer answered by occurrence.
    void beginCallingTurn() { m_unanswered.clear(); }
    // The id a call named `id` goes by. `valid` is `id` as the API accepts it (Messages' pattern);
    // a unique id is made from it.
    QString call(const QString &id, const QString &valid);
    QString call(const QString &id) { return call(id, id); }
    // The id a result naming `id` goes by: its call's.
    QString result(const QString &id, const QString &valid);
    QString result(const QString &id) { return result(id, id); }

private:
    qsizetype m_maxLength;
    QSet<QString> m_taken;
    QHash<QString, QString> m_latest;         // each id as sent, its latest call's id as it goes
    QHash<QString, QStringList> m_unanswered; // the latest calling turn's calls by their id as sent, in order
    QHash<QString, int> m_nextSuffix;         // m_taken only grows: each search goes on where it stopped
};

// Each tool call id of one request as a server that takes only nine characters of [a-zA-Z0-9]
// names it (Mistral's API, and Mistral's chat templates behind vLLM or llama.cpp: "Tool call id was
// toolu_01AAA but must be a-z, A-Z, 0-9, with a length of 9."). An id already of that form keeps
// it; any other becomes wire::nineCharToolId of it, the same for the same id in a call and its
// result, and in every later request of the conversation. Two ids are never given one: the later
// takes the next hash (an alias another id of the request holds, or an id of that form the request
// holds as it is), so the pairing the history already has (ToolIdPairing) is kept.
class NineCharToolIds final {
public:
    QString alias(const QString &id);

private:
    QHash<QString, QString> m_alias; // each id as sent, the id it goes by
    QSet<QString> m_taken;
};

// Whether any of `ids` repeats: the quick look before a request pays for ToolIdPairing. Sorts `ids`.
template <typename Ids> bool sortedIdsRepeat(Ids &ids) {
    std::sort(ids.begin(), ids.end());
    return std::adjacent_find(ids.begin(), ids.end()) != ids.end();
}

} // namespace sw::wire
