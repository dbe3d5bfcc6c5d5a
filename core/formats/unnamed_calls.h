#pragma once

#include "core/wire/tool_call_id.h"

#include <QHash>
#include <QList>
#include <QString>

#include <utility>

namespace sw::formats {

// The calls a history names by no id (Chat's legacy `function_call`; a call of a server that gave
// none, kept as it came, in a Chat or a Responses history) and their results, which name none either. Each such call
// gets an id made from its place (wire::historyToolCallId, the same every turn), and a result without an id takes one
// of the latest calling turn's such calls not yet answered: the first of its name (a `function` message names its
// function), else the first. A result past them all pairs with the latest call of its name. Every target then gets
// pairs it takes: Responses refuses an empty call_id, and Anthropic and Gemini paired such results by order or name
// alone.
class UnnamedCalls final {
public:
    // An assistant turn with calls begins: the earlier turn's unanswered calls are no one's now.
    void beginTurn() {
        m_turn.clear();
        m_byName.clear();
        m_next = 0;
    }
    // The id of the call at (`message`, `call`) of the history: `given`, or one made up.
    QString callId(const QString &given, qsizetype message, qsizetype call, const QString &name) {
        QString id = given;
        if (id.isEmpty()) {
            id = wire::historyToolCallId(message, call);
            m_byName[name].append(m_turn.size());
            m_turn.append(Call{id, name});
        }
        m_latestByName.insert(name, id);
        m_nameById.insert(id, name);
        return id;
    }
    // The name of the latest call with this id, of any turn so far (a Chat `tool` message names only
    // the id): one lookup, where a scan back over the history for each result cost N² for N calls of
    // one id ("call_0", probe D2: 16 000 of them froze the engine thread for 3.3 s).
    QString nameOf(const QString &id) const { return m_nameById.value(id); }
    // The id of a result that names no call, and the call's name; empty when no call fits.
    std::pair<QString, QString> resultId(const QString &name) {
        qsizetype at = -1;
        if (!name.isEmpty()) {
            QList<qsizetype> &ofName = m_byName[name];
            while (!ofName.isEmpty() && m_turn[ofName.first()].answered)
                ofName.removeFirst();
            if (!ofName.isEmpty())
                at = ofName.takeFirst();
        }
        if (at < 0) {
            while (m_next < m_turn.size() && m_turn[m_next].answered)
                ++m_next;
            if (m_next < m_turn.size() && (name.isEmpty() || m_turn[m_next].name == name))
                at = m_next;
        }
        if (at >= 0) {
            m_turn[at].answered = true;
            return {m_turn[at].id, m_turn[at].name};
        }
        return {m_latestByName.value(name), name};
    }

private:
    struct Call {
        QString id;
        QString name;
        bool answered = false;
    };
    QList<Call> m_turn;                        // the latest calling turn's calls without an id
    QHash<QString, QList<qsizetype>> m_byName; // their places in m_turn, by name, first first
    qsizetype m_next = 0;                      // m_turn's first call that may be unanswered
    QHash<QString, QString> m_latestByName;    // the latest call of each name, any turn
    QHash<QString, QString> m_nameById;        // the latest call's name for each id, any turn
};

} // namespace sw::formats
