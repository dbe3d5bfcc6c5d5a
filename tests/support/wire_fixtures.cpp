#include "wire_fixtures.h"

#include <QFile>
#include <QJsonDocument>

#include <QJsonObject>

namespace sw::test {

QByteArray readFileBytes(const QString &path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return f.readAll();
}

QString runWord(const char *prefix, int i) {
    return QString::asprintf("%s%06d", prefix, i);
}

void appendRoleRuns(model::ChatRequest &request, int users, int answers) {
    for (int i = 0; i < users + answers; ++i) {
        model::Message m;
        m.role = i < users ? model::Role::User : model::Role::Assistant;
        m.content << model::ContentBlock::makeText(i < users ? runWord("u", i) : runWord("a", i - users));
        request.context.messages << m;
    }
}

QString runOutOfPlace(const QJsonArray &parts, const char *prefix) {
    for (qsizetype i = 0; i < parts.size(); ++i)
        if (parts[i].toObject().value(QStringLiteral("text")).toString() != runWord(prefix, int(i)))
            return QStringLiteral("part %1").arg(i);
    return {};
}

QByteArray anthropicStrictSchemas(bool noteRequired) {
    const QByteArray required = noteRequired ? R"(["city","note"])" : R"(["city"])";
    const QByteArray schema = R"({"type":"object","properties":{"city":{"type":"string"},"note":{"type":"string"}},)"
                              R"("required":)" +
                              required + R"(,"additionalProperties":false})";
    return R"({"model":"m","max_tokens":100,"messages":[{"role":"user","content":"Paris weather as JSON"}],)"
           R"("output_config":{"format":{"type":"json_schema","schema":)" +
           schema + R"(}},"tools":[{"name":"get_weather","input_schema":)" + schema + R"(,"strict":true}]})";
}

QList<upstream::SseEvent> splitSse(const QByteArray &text) {
    QList<upstream::SseEvent> out;
    const QList<QByteArray> frames = text.split('\n');
    upstream::SseEvent current;
    bool has = false;
    for (const QByteArray &line : frames) {
        if (line.isEmpty()) {
            if (has)
                out << current;
            current = {};
            has = false;
        } else if (line.startsWith("event:")) {
            current.event = line.mid(6).trimmed();
            has = true;
        } else if (line.startsWith("data:")) {
            QByteArray d = line.mid(5);
            if (d.startsWith(' '))
                d.remove(0, 1);
            current.data = current.data.isEmpty() ? d : current.data + '\n' + d;
            has = true;
        }
    }
    if (has)
        out << current;
    return out;
}

QList<model::StreamEvent> decodeTranscript(upstream::StreamDecoder &decoder, const QByteArray &sse) {
    QList<model::StreamEvent> out;
    for (const upstream::SseEvent &e : splitSse(sse))
        out += decoder.feed(e);
    out += decoder.finish();
    return out;
}

LastFrame feedLastFrame(upstream::StreamDecoder &decoder, const QByteArray &sse) {
    const QList<upstream::SseEvent> events = splitSse(sse);
    LastFrame out;
    for (const upstream::SseEvent &e : events) {
        out.events = decoder.feed(e);
        out.unreadable = decoder.lastWasUnreadable();
    }
    return out;
}

QList<QByteArray> unechoableToolCallNames() {
    return {QByteArrayLiteral(R"(get_weather\u001b[2J\u001b]0;owned\u0007)"),
            QByteArrayLiteral(R"(call_\u0000\u0007x)"),
            QByteArrayLiteral(R"(get\r\nweather)"),
            QByteArrayLiteral(R"(get_\u202erehtaew)"),
            QByteArray("get_\xe2\x80\xaerehtaew"),
            QByteArrayLiteral(R"(get\u2066weather)"),
            QByteArray(300, 'a')};
}

QString unechoableToolCallProblem(const LastFrame &f, bool relayable) {
    if (relayable && !f.unreadable)
        return QStringLiteral("the frame would be relayed to a same-API client");
    if (f.events.size() != 1)
        return QStringLiteral("%1 events, not the one error").arg(f.events.size());
    const model::StreamEvent &e = f.events.first();
    if (e.type != model::EventType::Error || e.errorStatus != std::optional<int>(502) ||
        e.errorType != QLatin1String("invalid_response") || e.errorMessage != QLatin1String(kUnechoableToolCallMessage))
        return QStringLiteral("not the 502 invalid_response for a tool call's name: %1 %2")
            .arg(e.errorType, e.errorMessage);
    return {};
}

QString sseDifference(const QByteArray &actual, const QByteArray &expected) {
    if (!actual.endsWith("\n\n"))
        return QStringLiteral("output does not end with a blank line: ") + QString::fromUtf8(actual.right(80));
    QList<QByteArray> a = actual.split('\n');
    QList<QByteArray> e = expected.split('\n');
    for (qsizetype i = 0; i < qMax(a.size(), e.size()); ++i) {
        const QByteArray al = a.value(i);
        const QByteArray el = e.value(i);
        if (al == el)
            continue;
        if (al.startsWith("data: {") && el.startsWith("data: {")) {
            const QJsonDocument ad = QJsonDocument::fromJson(al.mid(6));
            const QJsonDocument ed = QJsonDocument::fromJson(el.mid(6));
            if (!ad.isNull() && ad == ed)
                continue;
        }
        return QStringLiteral("line %1 differs\n  actual:   %2\n  expected: %3")
            .arg(i + 1)
            .arg(QString::fromUtf8(al), QString::fromUtf8(el));
    }
    return {};
}

model::StreamEvent makeEvent(model::EventType type, int contentIndex, const QString &delta) {
    model::StreamEvent e;
    e.type = type;
    e.contentIndex = contentIndex;
    e.delta = delta;
    return e;
}

QList<model::StreamEvent> sampleAssistantStream() {
    using namespace sw::model;
    QList<StreamEvent> s;
    StreamEvent start = makeEvent(EventType::Start);
    start.usage.input = 472;
    start.usage.cacheRead = 2048;
    s << start;
    StreamEvent ts = makeEvent(EventType::ThinkingStart, 0);
    ts.block.type = BlockType::Thinking;
    s << ts << makeEvent(EventType::ThinkingDelta, 0, QStringLiteral("Weather needs a lookup."));
    StreamEvent te = makeEvent(EventType::ThinkingEnd, 0);
    te.block.type = BlockType::Thinking;
    te.block.text = QStringLiteral("Weather needs a lookup.");
    te.block.signature = QStringLiteral("sig-abc");
    s << te;
    s << makeEvent(EventType::TextStart, 1) << makeEvent(EventType::TextDelta, 1, QStringLiteral("Checking "))
      << makeEvent(EventType::TextDelta, 1, QStringLiteral("now."));
    StreamEvent textEnd = makeEvent(EventType::TextEnd, 1);
    textEnd.block.text = QStringLiteral("Checking now.");
    s << textEnd;
    StreamEvent call = makeEvent(EventType::ToolCallStart, 2);
    call.block.type = BlockType::ToolCall;
    call.block.toolCallId = QStringLiteral("call_1");
    call.block.toolName = QStringLiteral("get_weather");
    s << call << makeEvent(EventType::ToolCallDelta, 2, QStringLiteral("{\"location\":"))
      << makeEvent(EventType::ToolCallDelta, 2, QStringLiteral("\"Paris\"}"));
    StreamEvent callEnd = call;
    callEnd.type = EventType::ToolCallEnd;
    callEnd.block.argumentsJson = QStringLiteral("{\"location\":\"Paris\"}");
    callEnd.block.arguments = QJsonObject{{QStringLiteral("location"), QStringLiteral("Paris")}};
    s << callEnd;
    StreamEvent done = makeEvent(EventType::Done);
    done.reason = StopReason::ToolUse;
    done.usage.input = 472;
    done.usage.cacheRead = 2048;
    done.usage.output = 89;
    s << done;
    return s;
}

QList<model::StreamEvent> sampleAssistantStream(const QString &toolCallId, model::ContentBlock *callBlock) {
    QList<model::StreamEvent> stream = sampleAssistantStream();
    for (model::StreamEvent &e : stream)
        if (e.block.type == model::BlockType::ToolCall) {
            e.block.toolCallId = toolCallId;
            if (e.type == model::EventType::ToolCallEnd && callBlock)
                *callBlock = e.block;
        }
    return stream;
}

} // namespace sw::test
