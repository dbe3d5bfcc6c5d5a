#pragma once
// Folds a canonical event stream into the finished AssistantMessage. Used to
// answer non-streaming requests and by tests to compare streams by content.

#include "core/model/chat.h"

#include <QHash>

namespace sw::model {

class EventAccumulator final {
public:
    void add(const StreamEvent &event);
    void addAll(const QList<StreamEvent> &events);
    // false: a tool call's argument deltas are not kept here, for a producer whose ToolCallEnd
    // carries the whole argument text (upstream::CanonicalStreamBuilder, every upstream decoder):
    // a second copy of arguments tens of MB long, held until the end, is what the answer costs
    // twice otherwise. A call that never ends (an Error) then has no argument text.
    void setKeepsToolDeltas(bool keeps) { m_keepsToolDeltas = keeps; }
    // True after Done or Error.
    bool isFinished() const { return m_finished; }
    const AssistantMessage &message() const { return m_message; }
    AssistantMessage takeMessage();

private:
    ContentBlock &blockFor(int contentIndex, BlockType type);
    void finalizeToolCalls();

    AssistantMessage m_message;
    QHash<int, qsizetype> m_positionByIndex; // contentIndex -> position in m_message.content
    bool m_finished = false;
    bool m_keepsToolDeltas = true;
};

// Parses tool-call argument text; {} for empty or unparseable text, and for JSON that is not
// an object (an array, a string, a number): a call's input is an object in every API, and
// Anthropic refuses a replayed tool_use whose input is not one.
QJsonObject parseToolArguments(const QString &json);

// The same, for text an upstream cut (max_tokens inside the call): the object as far as it
// arrived, as pi-ai's parseStreamingJson reads it. A string cut inside is closed, a member
// whose value had not begun is left out: `{"city": "Par` is {"city": "Par"}. Whole text reads
// as parseToolArguments reads it.
QJsonObject parseStreamedToolArguments(const QString &json);

// parseToolArguments' rule for arguments that reach a client in fragments (Anthropic
// `input_json_delta`, pi `toolcall_delta`), where the SDK builds the input from the fragments:
// text that starts with '{' passes as it comes; any other text (an array, a string, a number)
// is held and never sent, so the call ends as the JSON answer says it, with the input {} of
// its start. Decided on the first character that is not white space; the white space before it
// is dropped, so nothing is kept while undecided. One gate per call.
class ToolArgumentsGate final {
public:
    // The text to send for this fragment: empty while undecided or held.
    QString pass(const QString &fragment);
    bool held() const { return m_state == State::Held; }

private:
    enum class State { Undecided, Object, Held };
    State m_state = State::Undecided;
};

} // namespace sw::model
