#include "core/model/event_accumulator.h"

#include <QJsonDocument>
#include <QStringList>

#include <utility>

namespace sw::model {

QJsonObject parseToolArguments(const QString &json) {
    if (json.trimmed().isEmpty())
        return {};
    const QJsonDocument doc = QJsonDocument::fromJson(json.toUtf8());
    return doc.isObject() ? doc.object() : QJsonObject();
}

namespace {

bool isJsonSpace(QChar c) {
    return c == u' ' || c == u'\t' || c == u'\n' || c == u'\r';
}

// The index after the closing quote of the string whose opening quote is at `at`; -1 when the
// text ends inside it.
qsizetype stringEnd(const QString &s, qsizetype at) {
    for (qsizetype i = at + 1; i < s.size(); ++i) {
        if (s[i] == u'\\')
            ++i;
        else if (s[i] == u'"')
            return i + 1;
    }
    return -1;
}

// The string the text ends inside (its opening quote at `at`), closed; an escape cut in its
// middle is left out.
QString closedString(const QString &s, qsizetype at) {
    qsizetype end = s.size();
    for (qsizetype i = at + 1; i < s.size(); ++i) {
        if (s[i] != u'\\')
            continue;
        const qsizetype length = i + 1 < s.size() && s[i + 1] == u'u' ? 6 : 2;
        if (i + length > s.size()) {
            end = i;
            break;
        }
        i += length - 1;
    }
    return s.mid(at, end - at) + u'"';
}

QString closers(const QString &open) {
    QString out;
    for (qsizetype i = open.size() - 1; i >= 0; --i)
        out += open[i] == u'{' ? u'}' : u']';
    return out;
}

// Texts that close `json` where it was cut, the longest first: the value the text ends inside
// (a string or a number), then the longest prefix that ends after a whole value.
QStringList closings(const QString &json) {
    enum class Expect { Value, Key, Colon, CommaOrClose };
    QString open; // the '{' and '[' not yet closed
    Expect expect = Expect::Value;
    // Where the last whole value (or an opening bracket) ended. The brackets open there are the
    // ones open at the end: each push and pop moves this mark, so the closing text is built once,
    // at the end (built at each mark, a text nested N deep cost N^2: seconds for 100 KB).
    qsizetype lastWhole = 0;
    const auto afterWholeValue = [&]() { return json.left(lastWhole) + closers(open); };
    auto afterValue = [&](qsizetype end) {
        expect = Expect::CommaOrClose;
        lastWhole = end;
    };
    const qsizetype n = json.size();
    for (qsizetype i = 0; i < n;) {
        const QChar c = json[i];
        if (isJsonSpace(c)) {
            ++i;
            continue;
        }
        const QChar top = open.isEmpty() ? QChar() : open.back();
        switch (expect) {
        case Expect::Colon:
            if (c != u':')
                return {};
            expect = Expect::Value;
            ++i;
            continue;
        case Expect::CommaOrClose:
            if (open.isEmpty())
                return {}; // a whole value, then more: not a cut text
            if (c == u',') {
                expect = top == u'{' ? Expect::Key : Expect::Value;
                ++i;
            } else if (c == (top == u'{' ? u'}' : u']')) {
                open.chop(1);
                afterValue(++i);
            } else {
                return {};
            }
            continue;
        case Expect::Key:
            if (c == u'}') {
                open.chop(1);
                afterValue(++i);
                continue;
            }
            if (c != u'"')
                return {};
            i = stringEnd(json, i);
            if (i < 0) // cut inside a name: the member is left out
                return {afterWholeValue()};
            expect = Expect::Colon;
            continue;
        case Expect::Value:
            break;
        }
        if (c == u'{' || c == u'[') {
            open += c;
            expect = c == u'{' ? Expect::Key : Expect::Value;
            lastWhole = ++i;
        } else if (c == u']' && top == u'[') {
            open.chop(1);
            afterValue(++i);
        } else if (c == u'"') {
            const qsizetype end = stringEnd(json, i);
            if (end < 0)
                return {json.left(i) + closedString(json, i) + closers(open), afterWholeValue()};
            afterValue(i = end);
        } else {
            qsizetype end = i;
            while (end < n && !isJsonSpace(json[end]) && json[end] != u',' && json[end] != u']' && json[end] != u'}')
                ++end;
            if (end == n) // a number or literal the text ends in: kept when it reads whole
                return {json + closers(open), afterWholeValue()};
            afterValue(i = end);
        }
    }
    return {afterWholeValue()};
}

} // namespace

QJsonObject parseStreamedToolArguments(const QString &json) {
    QJsonParseError error;
    const QJsonDocument whole = QJsonDocument::fromJson(json.toUtf8(), &error);
    if (error.error == QJsonParseError::NoError || json.trimmed().isEmpty())
        return whole.isObject() ? whole.object() : QJsonObject();
    for (const QString &closed : closings(json)) {
        const QJsonDocument doc = QJsonDocument::fromJson(closed.toUtf8());
        if (doc.isObject())
            return doc.object();
    }
    return {};
}

QString ToolArgumentsGate::pass(const QString &fragment) {
    if (m_state != State::Undecided)
        return m_state == State::Object ? fragment : QString();
    // Only the new fragment is read, and the white space before the first character is dropped,
    // not kept: it means nothing to the input the SDK builds. Kept and read again from its start
    // on every fragment, an upstream's endless white space cost time quadratic in its length on
    // the engine thread and memory no bound counted (probe X2 F3: 6 MB took 7 s; 60 MB a stream).
    for (qsizetype i = 0; i < fragment.size(); ++i) {
        if (isJsonSpace(fragment[i]))
            continue;
        m_state = fragment[i] == u'{' ? State::Object : State::Held;
        return m_state == State::Object ? fragment.mid(i) : QString();
    }
    return {};
}

ContentBlock &EventAccumulator::blockFor(int contentIndex, BlockType type) {
    auto it = m_positionByIndex.constFind(contentIndex);
    if (it != m_positionByIndex.constEnd())
        return m_message.content[*it];
    // A delta without its start still lands in a block of the right type.
    ContentBlock block;
    block.type = type;
    m_positionByIndex.insert(contentIndex, m_message.content.size());
    m_message.content.append(block);
    return m_message.content.last();
}

void EventAccumulator::add(const StreamEvent &event) {
    switch (event.type) {
    case EventType::Start:
        if (!event.responseId.isEmpty())
            m_message.responseId = event.responseId;
        break;
    case EventType::TextStart:
    case EventType::ThinkingStart:
    case EventType::ToolCallStart: {
        const BlockType type = event.type == EventType::TextStart       ? BlockType::Text
                               : event.type == EventType::ThinkingStart ? BlockType::Thinking
                                                                        : BlockType::ToolCall;
        ContentBlock &b = blockFor(event.contentIndex, type);
        b = event.block;
        b.type = type;
        break;
    }
    case EventType::TextDelta:
        blockFor(event.contentIndex, BlockType::Text).text += event.delta;
        break;
    case EventType::ThinkingDelta:
        blockFor(event.contentIndex, BlockType::Thinking).text += event.delta;
        break;
    case EventType::ToolCallDelta:
        if (m_keepsToolDeltas)
            blockFor(event.contentIndex, BlockType::ToolCall).argumentsJson += event.delta;
        else
            blockFor(event.contentIndex, BlockType::ToolCall); // the call's place, in delta order
        break;
    case EventType::TextEnd:
    case EventType::ThinkingEnd:
    case EventType::ToolCallEnd: {
        const BlockType type = event.type == EventType::TextEnd       ? BlockType::Text
                               : event.type == EventType::ThinkingEnd ? BlockType::Thinking
                                                                      : BlockType::ToolCall;
        ContentBlock &b = blockFor(event.contentIndex, type);
        const ContentBlock streamed = b;
        b = event.block;
        b.type = type;
        // An end event that carries less than was streamed keeps the streamed text.
        if (b.text.isEmpty())
            b.text = streamed.text;
        if (b.argumentsJson.isEmpty())
            b.argumentsJson = streamed.argumentsJson;
        if (b.toolCallId.isEmpty())
            b.toolCallId = streamed.toolCallId;
        if (b.toolName.isEmpty())
            b.toolName = streamed.toolName;
        if (b.itemId.isEmpty())
            b.itemId = streamed.itemId;
        // Parsed once: a producer that does not keep deltas here parsed its End's text already.
        if (type == BlockType::ToolCall && b.arguments.isEmpty() && m_keepsToolDeltas)
            b.arguments = parseToolArguments(b.argumentsJson);
        break;
    }
    case EventType::Image: {
        ContentBlock &b = blockFor(event.contentIndex, BlockType::Image);
        b = event.block;
        b.type = BlockType::Image;
        break;
    }
    case EventType::Done:
        m_message.stopReason = event.reason;
        m_message.usage = event.usage;
        m_message.stopSequence = event.stopSequence;
        m_message.errorMessage = event.errorMessage; // a refusal's reason, in words
        m_message.native = event.native;
        m_message.nativeUsageJson = event.nativeUsageJson;
        finalizeToolCalls();
        m_finished = true;
        break;
    case EventType::Error:
        m_message.stopReason = event.reason == StopReason::Aborted ? StopReason::Aborted : StopReason::Error;
        m_message.errorMessage = event.errorMessage;
        m_message.errorStatus = event.errorStatus;
        if (!event.usage.isZero())
            m_message.usage = event.usage;
        finalizeToolCalls();
        m_finished = true;
        break;
    }
}

void EventAccumulator::addAll(const QList<StreamEvent> &events) {
    for (const StreamEvent &e : events)
        add(e);
}

void EventAccumulator::finalizeToolCalls() {
    if (!m_keepsToolDeltas)
        return; // every call ended with its text parsed (CanonicalStreamBuilder closes them before Done)
    for (ContentBlock &b : m_message.content)
        if (b.type == BlockType::ToolCall && b.arguments.isEmpty())
            b.arguments = parseToolArguments(b.argumentsJson);
}

AssistantMessage EventAccumulator::takeMessage() {
    AssistantMessage m = std::move(m_message);
    m_message = {};
    m_positionByIndex.clear();
    m_finished = false; // the setting stays
    return m;
}

} // namespace sw::model
