// The full protocol matrix: each of the four inbound formats answered by each of
// the four upstream APIs (fake upstreams speaking the real wire formats), streaming
// and not, for text, thinking, a tool call round trip, an image, usage and stop
// reason; same-API passthrough; and every format's error shapes.

#include "gateway_fixture.h"
#include "wire_fixtures.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QtTest>

using namespace sw;
using namespace sw::test;

namespace {

enum class Format { Chat, Anthropic, Responses, Pi };

const char *kPng = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

QString pathOf(Format f) {
    switch (f) {
    case Format::Chat:
        return QStringLiteral("/v1/chat/completions");
    case Format::Anthropic:
        return QStringLiteral("/v1/messages");
    case Format::Responses:
        return QStringLiteral("/v1/responses");
    case Format::Pi:
        return QStringLiteral("/v1/pi/stream");
    }
    return {};
}

QJsonObject weatherSchema() {
    return QJsonObject{{"type", "object"},
                       {"properties", QJsonObject{{"location", QJsonObject{{"type", "string"}}}}},
                       {"required", QJsonArray{"location"}}};
}

// What a request asks for, independent of its wire format.
struct Ask {
    QString model;
    bool stream = false;
    QString text = QStringLiteral("hello matrix");
    bool reasoning = false;
    bool tools = false;
    bool image = false;
    // Tool round trip, second request: the call the first answer made and its result.
    QString callId = {}, callName = {}, callArgs = {}, toolOutput = {};
};

QJsonObject requestBody(Format f, const Ask &a) {
    const bool followUp = !a.callId.isEmpty();
    QJsonObject o;
    switch (f) {
    case Format::Chat: {
        QJsonValue content = a.text;
        if (a.image)
            content = QJsonArray{
                QJsonObject{{"type", "text"}, {"text", a.text}},
                QJsonObject{{"type", "image_url"},
                            {"image_url", QJsonObject{{"url", QStringLiteral("data:image/png;base64,") + kPng}}}}};
        QJsonArray messages{QJsonObject{{"role", "user"}, {"content", content}}};
        if (followUp) {
            messages.append(QJsonObject{
                {"role", "assistant"},
                {"content", QJsonValue()},
                {"tool_calls",
                 QJsonArray{QJsonObject{{"id", a.callId},
                                        {"type", "function"},
                                        {"function", QJsonObject{{"name", a.callName}, {"arguments", a.callArgs}}}}}}});
            messages.append(QJsonObject{{"role", "tool"}, {"tool_call_id", a.callId}, {"content", a.toolOutput}});
        }
        o = {{"model", a.model}, {"messages", messages}, {"stream", a.stream}};
        if (a.stream)
            o.insert("stream_options", QJsonObject{{"include_usage", true}});
        if (a.reasoning)
            o.insert("reasoning_effort", "low");
        if (a.tools)
            o.insert("tools", QJsonArray{QJsonObject{{"type", "function"},
                                                     {"function", QJsonObject{{"name", "get_weather"},
                                                                              {"parameters", weatherSchema()}}}}});
        break;
    }
    case Format::Anthropic: {
        QJsonValue content = a.text;
        if (a.image)
            content = QJsonArray{
                QJsonObject{{"type", "text"}, {"text", a.text}},
                QJsonObject{{"type", "image"},
                            {"source", QJsonObject{{"type", "base64"}, {"media_type", "image/png"}, {"data", kPng}}}}};
        QJsonArray messages{QJsonObject{{"role", "user"}, {"content", content}}};
        if (followUp) {
            messages.append(QJsonObject{
                {"role", "assistant"},
                {"content",
                 QJsonArray{QJsonObject{{"type", "tool_use"},
                                        {"id", a.callId},
                                        {"name", a.callName},
                                        {"input", QJsonDocument::fromJson(a.callArgs.toUtf8()).object()}}}}});
            messages.append(QJsonObject{
                {"role", "user"},
                {"content", QJsonArray{QJsonObject{
                                {"type", "tool_result"}, {"tool_use_id", a.callId}, {"content", a.toolOutput}}}}});
        }
        o = {{"model", a.model}, {"max_tokens", 256}, {"messages", messages}, {"stream", a.stream}};
        if (a.reasoning) {
            o.insert("thinking", QJsonObject{{"type", "enabled"}, {"budget_tokens", 2048}});
            o.insert("max_tokens", 4096);
        }
        if (a.tools)
            o.insert("tools", QJsonArray{QJsonObject{{"name", "get_weather"}, {"input_schema", weatherSchema()}}});
        break;
    }
    case Format::Responses: {
        QJsonValue input = a.text;
        if (a.image || followUp) {
            QJsonArray content{QJsonObject{{"type", "input_text"}, {"text", a.text}}};
            if (a.image)
                content.append(QJsonObject{{"type", "input_image"},
                                           {"image_url", QStringLiteral("data:image/png;base64,") + kPng}});
            QJsonArray items{QJsonObject{{"role", "user"}, {"content", content}}};
            if (followUp) {
                items.append(QJsonObject{
                    {"type", "function_call"}, {"call_id", a.callId}, {"name", a.callName}, {"arguments", a.callArgs}});
                items.append(
                    QJsonObject{{"type", "function_call_output"}, {"call_id", a.callId}, {"output", a.toolOutput}});
            }
            input = items;
        }
        o = {{"model", a.model}, {"input", input}, {"stream", a.stream}};
        if (a.reasoning)
            o.insert("reasoning", QJsonObject{{"effort", "low"}, {"summary", "auto"}});
        if (a.tools)
            o.insert("tools", QJsonArray{QJsonObject{
                                  {"type", "function"}, {"name", "get_weather"}, {"parameters", weatherSchema()}}});
        break;
    }
    case Format::Pi: {
        QJsonValue content = a.text;
        if (a.image)
            content = QJsonArray{QJsonObject{{"type", "text"}, {"text", a.text}},
                                 QJsonObject{{"type", "image"}, {"data", kPng}, {"mimeType", "image/png"}}};
        QJsonArray messages{QJsonObject{{"role", "user"}, {"content", content}, {"timestamp", 1}}};
        if (followUp) {
            messages.append(QJsonObject{
                {"role", "assistant"},
                {"api", "openai-completions"},
                {"content",
                 QJsonArray{QJsonObject{{"type", "toolCall"},
                                        {"id", a.callId},
                                        {"name", a.callName},
                                        {"arguments", QJsonDocument::fromJson(a.callArgs.toUtf8()).object()}}}},
                {"stopReason", "toolUse"}});
            messages.append(QJsonObject{{"role", "toolResult"},
                                        {"toolCallId", a.callId},
                                        {"toolName", a.callName},
                                        {"content", QJsonArray{QJsonObject{{"type", "text"}, {"text", a.toolOutput}}}},
                                        {"isError", false}});
        }
        QJsonObject context{{"systemPrompt", "be brief"}, {"messages", messages}};
        if (a.tools)
            context.insert("tools",
                           QJsonArray{QJsonObject{
                               {"name", "get_weather"}, {"description", "weather"}, {"parameters", weatherSchema()}}});
        o = {{"model", a.model}, {"context", context}, {"stream", a.stream}};
        if (a.reasoning)
            o.insert("options", QJsonObject{{"reasoning", "low"}});
        break;
    }
    }
    return o;
}

// What a client of any format ends up with.
struct Answer {
    QString text;
    QString thinking;
    QString toolId, toolName;
    QJsonObject toolArgs;
    QString stop;     // canonical: stop, length, toolUse, error
    qint64 input = 0; // prompt tokens as the format reports them
    qint64 output = 0;
    QString error;          // the in-band error's type / code, or the error body's
    bool cleanEnd = false;  // the format's success terminator arrived
    bool failedEnd = false; // the format's failure terminator arrived (responses: response.failed; pi: error)
    QString problem;        // a protocol violation seen while parsing
    QString errorMessage;   // pi: the errorMessage a failed (or refused) answer says
};

struct Sse {
    QByteArray event;
    QByteArray data;
};

QList<Sse> sseEvents(const QByteArray &body) {
    QList<Sse> out;
    Sse cur;
    for (const QByteArray &raw : body.split('\n')) {
        const QByteArray line = raw.endsWith('\r') ? raw.chopped(1) : raw;
        if (line.isEmpty()) {
            if (!cur.data.isEmpty() || !cur.event.isEmpty())
                out << cur;
            cur = {};
        } else if (line.startsWith("event:")) {
            cur.event = line.mid(6).trimmed();
        } else if (line.startsWith("data:")) {
            cur.data += line.mid(5).trimmed();
        }
    }
    if (!cur.data.isEmpty())
        out << cur;
    return out;
}

Answer parseStream(Format f, const QByteArray &body) {
    Answer a;
    QString toolArgs;
    int lastSequence = -1;
    bool sawDone = false;
    for (const Sse &e : sseEvents(body)) {
        if (e.data == "[DONE]") {
            sawDone = true;
            if (f == Format::Chat && a.stop.isEmpty())
                a.problem = QStringLiteral("[DONE] without a finish_reason");
            continue;
        }
        if (sawDone)
            a.problem = QStringLiteral("data after [DONE]");
        const QJsonObject o = QJsonDocument::fromJson(e.data).object();
        const QString type = o.value("type").toString();
        switch (f) {
        case Format::Chat: {
            if (o.contains("error")) {
                a.error = o.value("error").toObject().value("type").toString();
                break;
            }
            if (o.value("usage").isObject()) {
                a.input = o.value("usage").toObject().value("prompt_tokens").toInteger();
                a.output = o.value("usage").toObject().value("completion_tokens").toInteger();
            }
            for (const QJsonValue &c : o.value("choices").toArray()) {
                const QJsonObject d = c.toObject().value("delta").toObject();
                a.text += d.value("content").toString();
                a.thinking += d.value("reasoning_content").toString();
                for (const QJsonValue &tc : d.value("tool_calls").toArray()) {
                    const QJsonObject t = tc.toObject();
                    if (t.contains("id"))
                        a.toolId = t.value("id").toString();
                    const QJsonObject fn = t.value("function").toObject();
                    if (fn.contains("name"))
                        a.toolName = fn.value("name").toString();
                    toolArgs += fn.value("arguments").toString();
                }
                const QString finish = c.toObject().value("finish_reason").toString();
                if (!finish.isEmpty())
                    a.stop = finish == "tool_calls" ? "toolUse" : finish == "content_filter" ? "refusal" : finish;
            }
            break;
        }
        case Format::Anthropic: {
            if (e.event != type.toUtf8())
                a.problem = QStringLiteral("event line %1 != type %2").arg(QString::fromUtf8(e.event), type);
            if (type == "error")
                a.error = o.value("error").toObject().value("type").toString();
            else if (type == "message_start")
                a.input = o.value("message").toObject().value("usage").toObject().value("input_tokens").toInteger();
            else if (type == "content_block_start" && o.value("content_block").toObject().value("type") == "tool_use") {
                a.toolId = o.value("content_block").toObject().value("id").toString();
                a.toolName = o.value("content_block").toObject().value("name").toString();
            } else if (type == "content_block_delta") {
                const QJsonObject d = o.value("delta").toObject();
                a.text += d.value("text").toString();
                a.thinking += d.value("thinking").toString();
                toolArgs += d.value("partial_json").toString();
            } else if (type == "message_delta") {
                // Converted answers know the input count only at the end; clients update from here.
                const qint64 in = o.value("usage").toObject().value("input_tokens").toInteger();
                if (in > 0)
                    a.input = in;
                const QString stop = o.value("delta").toObject().value("stop_reason").toString();
                a.stop = stop == "end_turn"     ? "stop"
                         : stop == "tool_use"   ? "toolUse"
                         : stop == "max_tokens" ? "length"
                                                : stop;
                a.output = o.value("usage").toObject().value("output_tokens").toInteger();
            } else if (type == "message_stop") {
                a.cleanEnd = true;
            }
            break;
        }
        case Format::Responses: {
            const int seq = o.value("sequence_number").toInt(-1);
            if (seq <= lastSequence)
                a.problem = QStringLiteral("sequence_number %1 after %2").arg(seq).arg(lastSequence);
            lastSequence = seq;
            if (e.event != type.toUtf8())
                a.problem = QStringLiteral("event line %1 != type %2").arg(QString::fromUtf8(e.event), type);
            if (a.failedEnd || a.cleanEnd)
                a.problem = QStringLiteral("%1 after the terminal event").arg(type);
            if (type == "response.output_text.delta")
                a.text += o.value("delta").toString();
            else if (type == "response.reasoning_summary_text.delta")
                a.thinking += o.value("delta").toString();
            else if (type == "response.function_call_arguments.delta")
                toolArgs += o.value("delta").toString();
            else if (type == "response.output_item.done" &&
                     o.value("item").toObject().value("type") == "function_call") {
                a.toolId = o.value("item").toObject().value("call_id").toString();
                a.toolName = o.value("item").toObject().value("name").toString();
                if (o.value("item").toObject().value("arguments").toString() != toolArgs)
                    a.problem = QStringLiteral("function_call item arguments differ from the streamed deltas");
            } else if (type == "error") {
                a.error = o.value("code").toString();
            } else if (type == "response.failed") {
                a.failedEnd = true;
            } else if (type == "response.completed" || type == "response.incomplete") {
                const QJsonObject r = o.value("response").toObject();
                a.cleanEnd = true;
                a.input = r.value("usage").toObject().value("input_tokens").toInteger();
                a.output = r.value("usage").toObject().value("output_tokens").toInteger();
                bool calls = false;
                for (const QJsonValue &item : r.value("output").toArray())
                    calls |= item.toObject().value("type") == "function_call";
                const QString why = r.value("incomplete_details").toObject().value("reason").toString();
                a.stop = why == "content_filter"         ? "refusal"
                         : type == "response.incomplete" ? "length"
                         : calls                         ? "toolUse"
                                                         : "stop";
            }
            break;
        }
        case Format::Pi: {
            if (type == "text_delta")
                a.text += o.value("delta").toString();
            else if (type == "thinking_delta")
                a.thinking += o.value("delta").toString();
            else if (type == "toolcall_end") {
                const QJsonObject call = o.value("toolCall").toObject();
                a.toolId = call.value("id").toString();
                a.toolName = call.value("name").toString();
                a.toolArgs = call.value("arguments").toObject();
            } else if (type == "done") {
                a.stop = o.value("reason").toString();
                const QJsonObject usage = o.value("message").toObject().value("usage").toObject();
                a.input = usage.value("input").toInteger();
                a.output = usage.value("output").toInteger();
                if (o.value("message").toObject().value("role") != "assistant")
                    a.problem = QStringLiteral("done.message is not an assistant message");
            } else if (type == "error") {
                a.error = o.value("reason").toString();
                a.errorMessage = o.value("errorMessage").toString();
                a.failedEnd = true;
                if (o.value("error").toObject().value("errorMessage") != a.errorMessage)
                    a.problem = QStringLiteral("error.error.errorMessage is not the event's errorMessage");
                if (o.value("error").toObject().value("stopReason") != "error")
                    a.problem = QStringLiteral("error.error.stopReason is not error");
            }
            if (type != "start" && type != "done" && type != "error" && !o.contains("contentIndex"))
                a.problem = QStringLiteral("%1 without contentIndex").arg(type);
            break;
        }
        }
    }
    if (f == Format::Chat || f == Format::Pi)
        a.cleanEnd = sawDone && a.error.isEmpty();
    // pi: a finished answer ends with [DONE]; a failed one with its error event, no [DONE].
    if (f == Format::Pi && !a.failedEnd && !sawDone)
        a.problem = QStringLiteral("pi stream not ended by [DONE]");
    if (f == Format::Pi && a.failedEnd && sawDone)
        a.problem = QStringLiteral("pi stream sent [DONE] after its error event");
    if (a.toolArgs.isEmpty() && !toolArgs.isEmpty())
        a.toolArgs = QJsonDocument::fromJson(toolArgs.toUtf8()).object();
    return a;
}

Answer parseJson(Format f, const QJsonObject &o) {
    Answer a;
    a.cleanEnd = true;
    switch (f) {
    case Format::Chat: {
        const QJsonObject choice = o.value("choices").toArray().at(0).toObject();
        const QJsonObject m = choice.value("message").toObject();
        a.text = m.value("content").toString();
        a.thinking = m.value("reasoning_content").toString();
        const QJsonObject call = m.value("tool_calls").toArray().at(0).toObject();
        a.toolId = call.value("id").toString();
        a.toolName = call.value("function").toObject().value("name").toString();
        a.toolArgs =
            QJsonDocument::fromJson(call.value("function").toObject().value("arguments").toString().toUtf8()).object();
        const QString finish = choice.value("finish_reason").toString();
        a.stop = finish == "tool_calls" ? "toolUse" : finish == "content_filter" ? "refusal" : finish;
        a.input = o.value("usage").toObject().value("prompt_tokens").toInteger();
        a.output = o.value("usage").toObject().value("completion_tokens").toInteger();
        break;
    }
    case Format::Anthropic: {
        for (const QJsonValue &v : o.value("content").toArray()) {
            const QJsonObject b = v.toObject();
            if (b.value("type") == "text")
                a.text += b.value("text").toString();
            else if (b.value("type") == "thinking")
                a.thinking += b.value("thinking").toString();
            else if (b.value("type") == "tool_use") {
                a.toolId = b.value("id").toString();
                a.toolName = b.value("name").toString();
                a.toolArgs = b.value("input").toObject();
            }
        }
        const QString stop = o.value("stop_reason").toString();
        a.stop = stop == "end_turn" ? "stop" : stop == "tool_use" ? "toolUse" : stop == "max_tokens" ? "length" : stop;
        a.input = o.value("usage").toObject().value("input_tokens").toInteger();
        a.output = o.value("usage").toObject().value("output_tokens").toInteger();
        break;
    }
    case Format::Responses: {
        bool calls = false;
        for (const QJsonValue &v : o.value("output").toArray()) {
            const QJsonObject item = v.toObject();
            if (item.value("type") == "message")
                for (const QJsonValue &p : item.value("content").toArray())
                    a.text += p.toObject().value("text").toString();
            else if (item.value("type") == "reasoning")
                for (const QJsonValue &s : item.value("summary").toArray())
                    a.thinking += s.toObject().value("text").toString();
            else if (item.value("type") == "function_call") {
                calls = true;
                a.toolId = item.value("call_id").toString();
                a.toolName = item.value("name").toString();
                a.toolArgs = QJsonDocument::fromJson(item.value("arguments").toString().toUtf8()).object();
            }
        }
        const QString status = o.value("status").toString();
        const QString why = o.value("incomplete_details").toObject().value("reason").toString();
        a.stop = why == "content_filter"  ? "refusal"
                 : status == "incomplete" ? "length"
                 : status == "completed"  ? (calls ? "toolUse" : "stop")
                                          : status;
        a.input = o.value("usage").toObject().value("input_tokens").toInteger();
        a.output = o.value("usage").toObject().value("output_tokens").toInteger();
        if (o.value("object") != "response")
            a.problem = QStringLiteral("object is not response");
        break;
    }
    case Format::Pi: {
        const QJsonObject m = o.value("message").toObject();
        for (const QJsonValue &v : m.value("content").toArray()) {
            const QJsonObject b = v.toObject();
            if (b.value("type") == "text")
                a.text += b.value("text").toString();
            else if (b.value("type") == "thinking")
                a.thinking += b.value("thinking").toString();
            else if (b.value("type") == "toolCall") {
                a.toolId = b.value("id").toString();
                a.toolName = b.value("name").toString();
                a.toolArgs = b.value("arguments").toObject();
            }
        }
        a.stop = m.value("stopReason").toString();
        a.errorMessage = m.value("errorMessage").toString();
        a.input = m.value("usage").toObject().value("input").toInteger();
        a.output = m.value("usage").toObject().value("output").toInteger();
        break;
    }
    }
    return a;
}

struct Call {
    QString id, name;
    QJsonObject args;
    bool operator==(const Call &o) const { return id == o.id && name == o.name && args == o.args; }
};

// Every tool call a client of the format assembles, in order, the way its SDK does
// (Chat by delta index, Anthropic by block index, Responses from the finished items).
QList<Call> toolCallsOf(Format f, bool stream, const QByteArray &body) {
    QList<Call> calls;
    auto args = [](const QString &json) { return QJsonDocument::fromJson(json.toUtf8()).object(); };
    if (!stream) {
        const QJsonObject o = QJsonDocument::fromJson(body).object();
        switch (f) {
        case Format::Chat:
            for (const QJsonValue &v : o.value("choices")
                                           .toArray()
                                           .at(0)
                                           .toObject()
                                           .value("message")
                                           .toObject()
                                           .value("tool_calls")
                                           .toArray()) {
                const QJsonObject fn = v.toObject().value("function").toObject();
                calls << Call{v.toObject().value("id").toString(), fn.value("name").toString(),
                              args(fn.value("arguments").toString())};
            }
            break;
        case Format::Anthropic:
            for (const QJsonValue &v : o.value("content").toArray())
                if (v.toObject().value("type") == "tool_use")
                    calls << Call{v.toObject().value("id").toString(), v.toObject().value("name").toString(),
                                  v.toObject().value("input").toObject()};
            break;
        case Format::Responses:
            for (const QJsonValue &v : o.value("output").toArray())
                if (v.toObject().value("type") == "function_call")
                    calls << Call{v.toObject().value("call_id").toString(), v.toObject().value("name").toString(),
                                  args(v.toObject().value("arguments").toString())};
            break;
        case Format::Pi:
            for (const QJsonValue &v : o.value("message").toObject().value("content").toArray())
                if (v.toObject().value("type") == "toolCall")
                    calls << Call{v.toObject().value("id").toString(), v.toObject().value("name").toString(),
                                  v.toObject().value("arguments").toObject()};
            break;
        }
        return calls;
    }
    QMap<int, Call> byIndex;
    QMap<int, QString> argText;
    for (const Sse &e : sseEvents(body)) {
        const QJsonObject o = QJsonDocument::fromJson(e.data).object();
        const QString type = o.value("type").toString();
        if (f == Format::Chat) {
            for (const QJsonValue &tc : o.value("choices")
                                            .toArray()
                                            .at(0)
                                            .toObject()
                                            .value("delta")
                                            .toObject()
                                            .value("tool_calls")
                                            .toArray()) {
                const int i = tc.toObject().value("index").toInt();
                const QJsonObject fn = tc.toObject().value("function").toObject();
                if (tc.toObject().contains("id"))
                    byIndex[i].id = tc.toObject().value("id").toString();
                if (fn.contains("name"))
                    byIndex[i].name = fn.value("name").toString();
                argText[i] += fn.value("arguments").toString();
            }
        } else if (f == Format::Anthropic) {
            const int i = o.value("index").toInt();
            if (type == "content_block_start" && o.value("content_block").toObject().value("type") == "tool_use")
                byIndex[i] = Call{o.value("content_block").toObject().value("id").toString(),
                                  o.value("content_block").toObject().value("name").toString(),
                                  {}};
            else if (type == "content_block_delta" && byIndex.contains(i))
                argText[i] += o.value("delta").toObject().value("partial_json").toString();
        } else if (f == Format::Responses) {
            const QJsonObject item = o.value("item").toObject();
            if (type == "response.output_item.done" && item.value("type") == "function_call")
                calls << Call{item.value("call_id").toString(), item.value("name").toString(),
                              args(item.value("arguments").toString())};
        } else if (type == "toolcall_end") {
            const QJsonObject c = o.value("toolCall").toObject();
            calls << Call{c.value("id").toString(), c.value("name").toString(), c.value("arguments").toObject()};
        }
    }
    for (auto it = byIndex.begin(); it != byIndex.end(); ++it) {
        it->args = args(argText.value(it.key()));
        calls << *it;
    }
    return calls;
}

// The assistant content an Anthropic SDK assembles from a stream (what Claude Code stores
// and sends back on the next turn).
QJsonArray anthropicContentFromStream(const QByteArray &body) {
    QMap<int, QJsonObject> blocks;
    QMap<int, QString> json;
    for (const Sse &e : sseEvents(body)) {
        const QJsonObject o = QJsonDocument::fromJson(e.data).object();
        const QString type = o.value("type").toString();
        const int i = o.value("index").toInt();
        if (type == "content_block_start") {
            blocks[i] = o.value("content_block").toObject();
        } else if (type == "content_block_delta") {
            const QJsonObject d = o.value("delta").toObject();
            QJsonObject &b = blocks[i];
            const QString dt = d.value("type").toString();
            if (dt == "text_delta")
                b.insert("text", b.value("text").toString() + d.value("text").toString());
            else if (dt == "thinking_delta")
                b.insert("thinking", b.value("thinking").toString() + d.value("thinking").toString());
            else if (dt == "signature_delta")
                b.insert("signature", b.value("signature").toString() + d.value("signature").toString());
            else if (dt == "input_json_delta")
                json[i] += d.value("partial_json").toString();
        }
    }
    QJsonArray out;
    for (auto it = blocks.begin(); it != blocks.end(); ++it) {
        QJsonObject b = *it;
        if (b.value("type") == "tool_use")
            b.insert("input", QJsonDocument::fromJson(json.value(it.key()).toUtf8()).object());
        if (b.value("type") == "thinking" && !b.contains("signature"))
            b.insert("signature", QString()); // the SDK's block always has the field
        out.append(b);
    }
    return out;
}

// The user turn answering every tool_use of an assistant turn.
QJsonObject toolResultsFor(const QJsonArray &assistant, const QString &output) {
    QJsonArray results;
    for (const QJsonValue &v : assistant)
        if (v.toObject().value("type") == "tool_use")
            results.append(
                QJsonObject{{"type", "tool_result"}, {"tool_use_id", v.toObject().value("id")}, {"content", output}});
    return QJsonObject{{"role", "user"}, {"content", results}};
}

struct Upstream {
    const char *model;
    const char *api;
};
const Upstream kUpstreams[] = {{"pa/claude-a", "anthropic-messages"},
                               {"pb/gpt-b", "openai-completions"},
                               {"pd/resp-d", "openai-responses"},
                               {"pe/gemini-e", "google-generative-ai"}};
const std::pair<Format, const char *> kFormats[] = {
    {Format::Chat, "chat"}, {Format::Anthropic, "anthropic"}, {Format::Responses, "responses"}, {Format::Pi, "pi"}};

// The error body's type / code in each format's own shape, or "" when the shape is wrong.
QString errorTypeOf(Format f, const QJsonObject &o) {
    const QJsonObject e = o.value("error").toObject();
    switch (f) {
    case Format::Chat:
    case Format::Responses:
        return e.contains("message") && e.contains("code") ? e.value("type").toString() : QString();
    case Format::Anthropic:
        return o.value("type") == "error" && e.contains("message") ? e.value("type").toString() : QString();
    case Format::Pi:
        return e.contains("message") ? e.value("type").toString() : QString();
    }
    return {};
}

} // namespace

Q_DECLARE_METATYPE(Format)

class TestProtocolMatrix : public QObject {
    Q_OBJECT

private:
    GatewayFixture *m_gw = nullptr;
    QByteArray m_lastRaw; // the last answer, printed when a test fails

    demo::FakeUpstream &fakeFor(const QString &model) {
        if (model.startsWith("pa/"))
            return m_gw->anthropicA;
        if (model.startsWith("pb/"))
            return m_gw->openaiB;
        if (model.startsWith("pd/"))
            return m_gw->responsesD;
        return m_gw->googleE;
    }

    Answer ask(Format f, const Ask &a, int *status = nullptr, QByteArray *raw = nullptr) {
        const HttpResult r = m_gw->post(pathOf(f), requestBody(f, a));
        m_lastRaw = r.body;
        if (status)
            *status = r.status;
        if (raw)
            *raw = r.body;
        if (r.status != 200) {
            Answer bad;
            bad.problem = QStringLiteral("HTTP %1: %2").arg(r.status).arg(QString::fromUtf8(r.body.left(400)));
            return bad;
        }
        return a.stream ? parseStream(f, r.body) : parseJson(f, r.json());
    }

    static void addMatrixRows() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<QString>("model");
        QTest::addColumn<bool>("stream");
        addMatrixRowsInto();
    }
    static void addMatrixRowsInto() {
        for (const auto &[format, name] : kFormats)
            for (const Upstream &u : kUpstreams)
                for (bool stream : {false, true})
                    QTest::addRow("%s<-%s %s", name, u.api, stream ? "stream" : "json")
                        << format << QString::fromLatin1(u.model) << stream;
    }

private Q_SLOTS:
    void init() {
        m_gw = new GatewayFixture;
        m_gw->start();
    }
    void cleanup() {
        if (QTest::currentTestFailed())
            qWarning("last answer:\n%s", m_lastRaw.constData());
        delete m_gw;
        m_gw = nullptr;
    }

    void plainTextUsageAndStopReason_data() { addMatrixRows(); }
    void plainTextUsageAndStopReason() {
        QFETCH(Format, format);
        QFETCH(QString, model);
        QFETCH(bool, stream);
        const Answer a = ask(format, Ask{model, stream});
        QVERIFY2(a.problem.isEmpty(), qPrintable(a.problem));
        QVERIFY(a.cleanEnd);
        QCOMPARE(a.text, QStringLiteral("Hello from %1. You said: hello matrix").arg(model));
        QCOMPARE(a.stop, QStringLiteral("stop"));
        QVERIFY2(a.input > 0, "input tokens reported");
        QCOMPARE(a.output, qint64(a.text.split(QLatin1Char(' ')).size())); // the demo brain counts words
        QVERIFY(a.thinking.isEmpty());
    }

    void thinking_data() { addMatrixRows(); }
    void thinking() {
        QFETCH(Format, format);
        QFETCH(QString, model);
        QFETCH(bool, stream);
        Ask ask_{model, stream};
        ask_.reasoning = true;
        const Answer a = ask(format, ask_);
        QVERIFY2(a.problem.isEmpty(), qPrintable(a.problem));
        // The request's reasoning wish reached the upstream in its own dialect, and its
        // thinking came back in the client's.
        QCOMPARE(a.thinking, QStringLiteral("Thinking about the request."));
        QVERIFY(a.text.contains(QStringLiteral("You said: hello matrix")));
        QCOMPARE(a.stop, QStringLiteral("stop"));
    }

    void toolCallRoundTrip_data() { addMatrixRows(); }
    void toolCallRoundTrip() {
        QFETCH(Format, format);
        QFETCH(QString, model);
        QFETCH(bool, stream);
        Ask first{model, stream, QStringLiteral("use the tool please")};
        first.tools = true;
        const Answer call = ask(format, first);
        QVERIFY2(call.problem.isEmpty(), qPrintable(call.problem));
        QCOMPARE(call.stop, QStringLiteral("toolUse"));
        QCOMPARE(call.toolName, QStringLiteral("get_weather"));
        QCOMPARE(call.toolArgs, QJsonObject({{"location", "demo"}}));
        QVERIFY(!call.toolId.isEmpty());

        Ask second = first;
        second.callId = call.toolId;
        second.callName = call.toolName;
        second.callArgs = QString::fromUtf8(QJsonDocument(call.toolArgs).toJson(QJsonDocument::Compact));
        second.toolOutput = QStringLiteral("sunny, 21 C");
        const Answer answer = ask(format, second);
        QVERIFY2(answer.problem.isEmpty(), qPrintable(answer.problem));
        QCOMPARE(answer.text, QStringLiteral("Tool result received: sunny, 21 C"));
        QCOMPARE(answer.stop, QStringLiteral("stop"));
        // The upstream saw the call and its result, tied by one id, in its own format.
        const QByteArray upstreamBody = fakeFor(model).requests().last().body;
        QVERIFY2(upstreamBody.contains("sunny, 21 C"), upstreamBody.constData());
        // Google ties results to calls by name, not id. pi names a Responses call "call_id|item_id",
        // as pi-ai does; the call_id is what ties the two.
        if (!model.startsWith("pe/"))
            QVERIFY2(upstreamBody.count(call.toolId.section(QLatin1Char('|'), 0, 0).toUtf8()) >= 2,
                     upstreamBody.constData());
    }

    void imageInput_data() { addMatrixRows(); }
    void imageInput() {
        QFETCH(Format, format);
        QFETCH(QString, model);
        QFETCH(bool, stream);
        Ask a{model, stream, QStringLiteral("describe this")};
        a.image = true;
        const Answer answer = ask(format, a);
        QVERIFY2(answer.problem.isEmpty(), qPrintable(answer.problem));
        QVERIFY(answer.text.endsWith(QStringLiteral("You said: describe this")));
        const demo::RecordedRequest sent = fakeFor(model).requests().last();
        QVERIFY2(sent.body.contains(kPng), sent.body.constData());
        QVERIFY2(sent.body.contains("image/png"), sent.body.constData());
    }

    void inBandStreamError_data() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<QString>("model");
        for (const auto &[format, name] : kFormats)
            for (const Upstream &u : kUpstreams)
                QTest::addRow("%s<-%s", name, u.api) << format << QString::fromLatin1(u.model);
    }
    void inBandStreamError() {
        QFETCH(Format, format);
        QFETCH(QString, model);
        demo::Fault fault;
        fault.kind = demo::Fault::InBandErrorAfterContent;
        fakeFor(model).pushFault(fault);
        QByteArray raw;
        int status = 0;
        const HttpResult r = m_gw->post(pathOf(format), requestBody(format, Ask{model, true}));
        status = r.status;
        raw = r.body;
        QCOMPARE(status, 200); // committed: headers and content were out
        const Answer a = parseStream(format, raw);
        QVERIFY2(a.problem.isEmpty(), qPrintable(a.problem + QLatin1Char('\n') + QString::fromUtf8(raw)));
        QVERIFY2(!a.text.isEmpty(), "content before the error reached the client");
        QVERIFY2(!a.error.isEmpty(), raw.constData());
        QVERIFY2(!a.cleanEnd, "no success terminator after a failure");
        if (format == Format::Responses || format == Format::Pi)
            QVERIFY2(a.failedEnd, raw.constData());
        if (format == Format::Pi) // the error event is the end: [DONE] would read as a finished answer
            QVERIFY2(!raw.contains("data: [DONE]"), raw.constData());
    }

    void refusalIsAnAnswerNotAnOutage_data() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<QString>("model");
        QTest::addColumn<bool>("stream");
        addMatrixRowsInto();
    }
    void refusalIsAnAnswerNotAnOutage() {
        QFETCH(Format, format);
        QFETCH(QString, model);
        QFETCH(bool, stream);
        // A route whose first candidate refuses and whose follower (pc) would answer:
        // a refusal is the model's answer, so the follower is never asked and nothing is marked.
        delete m_gw;
        m_gw = new GatewayFixture;
        config::RouteConfig route;
        route.name = QStringLiteral("refuse");
        route.candidates = {model, QStringLiteral("pc/claude-c")};
        m_gw->config.routes.insert(route.name, route);
        m_gw->start();
        const QString fixture = model.startsWith("pa/")   ? QStringLiteral("anthropic_upstream_refusal.sse")
                                : model.startsWith("pb/") ? QStringLiteral("openai_upstream_content_filter.sse")
                                : model.startsWith("pd/") ? QStringLiteral("responses_upstream_content_filter.sse")
                                                          : QStringLiteral("google_upstream_safety.sse");
        fakeFor(model).setRawReply(sw::test::readTestData(fixture));
        int status = 0;
        QByteArray raw;
        const Answer a = ask(format, Ask{QStringLiteral("refuse"), stream}, &status, &raw);
        QCOMPARE(status, 200);
        QVERIFY2(a.problem.isEmpty(), qPrintable(a.problem));
        QCOMPARE(a.text, QStringLiteral("I can't help with that."));
        if (format == Format::Pi) {
            // pi has no refusal reason: as pi-ai itself ends an Anthropic refusal, a Chat
            // content_filter or a Google SAFETY, the answer is an error that says why (a pi agent
            // took "stop" for a finished turn), its content kept.
            const QString why =
                model.startsWith("pa/")   ? QStringLiteral("Anthropic refused the answer (stop_reason refusal)")
                : model.startsWith("pb/") ? QStringLiteral("The provider's filter stopped the answer (finish_reason "
                                                           "content_filter)")
                : model.startsWith("pd/") ? QStringLiteral("OpenAI's filter stopped the answer "
                                                           "(incomplete_details.reason content_filter)")
                                          : QStringLiteral("Google blocked the answer (finishReason SAFETY)");
            QCOMPARE(a.errorMessage, why);
            if (stream) {
                QVERIFY(a.failedEnd);
                QCOMPARE(a.error, QStringLiteral("error"));
                QVERIFY2(!raw.contains("data: [DONE]"), raw.constData());
            } else {
                QCOMPARE(a.stop, QStringLiteral("error"));
            }
        } else {
            QVERIFY2(a.error.isEmpty(), qPrintable(a.error));
            QVERIFY(a.cleanEnd);
            // Chat content_filter, Anthropic refusal, Responses incomplete/content_filter.
            QCOMPARE(a.stop, QStringLiteral("refusal"));
        }
        QCOMPARE(fakeFor(model).requests().size(), 1);
        QCOMPARE(m_gw->anthropicC.requests().size(), 0);
        QVERIFY(m_gw->engine().marks().isEmpty());
    }

    void piRefusalSaysTheRefusalOrWhatBlockedIt_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QByteArray>("upstream");
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("errorMessage");
        // Gemini's safety block with no parts: the probe's pi client saw an empty, successful answer.
        QTest::newRow("gemini SAFETY, no parts")
            << QStringLiteral("pe/gemini-e")
            << QByteArray("data: {\"candidates\":[{\"finishReason\":\"SAFETY\",\"index\":0,\"safetyRatings\":"
                          "[{\"category\":\"HARM_CATEGORY_DANGEROUS_CONTENT\",\"probability\":\"HIGH\",\"blocked\":"
                          "true}]}],\"usageMetadata\":{\"promptTokenCount\":31,\"totalTokenCount\":31}}\n\n")
            << QString() << QStringLiteral("Google blocked the answer (finishReason SAFETY)");
        QTest::newRow("gemini blocked prompt")
            << QStringLiteral("pe/gemini-e")
            << QByteArray("data: {\"promptFeedback\":{\"blockReason\":\"PROHIBITED_CONTENT\"},\"usageMetadata\":"
                          "{\"promptTokenCount\":31,\"totalTokenCount\":31}}\n\n")
            << QString() << QStringLiteral("Google blocked the prompt (blockReason PROHIBITED_CONTENT)");
        // OpenAI's own refusal (delta.refusal, finish_reason stop): its words are the errorMessage.
        QTest::newRow("chat delta.refusal")
            << QStringLiteral("pb/gpt-b")
            << QByteArray("data: {\"id\":\"chatcmpl-R\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":"
                          "\"gpt-4.1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"refusal\":"
                          "\"I won't do that.\"},\"finish_reason\":null}]}\n\n"
                          "data: {\"id\":\"chatcmpl-R\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":"
                          "\"gpt-4.1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],"
                          "\"usage\":{\"prompt_tokens\":31,\"completion_tokens\":5,\"total_tokens\":36}}\n\n"
                          "data: [DONE]\n\n")
            << QStringLiteral("I won't do that.") << QStringLiteral("I won't do that.");
    }
    void piRefusalSaysTheRefusalOrWhatBlockedIt() {
        QFETCH(QString, model);
        QFETCH(QByteArray, upstream);
        QFETCH(QString, text);
        QFETCH(QString, errorMessage);
        for (const bool stream : {true, false}) {
            fakeFor(model).setRawReply(upstream);
            QByteArray raw;
            int status = 0;
            const Answer a = ask(Format::Pi, Ask{model, stream}, &status, &raw);
            QCOMPARE(status, 200);
            QVERIFY2(a.problem.isEmpty(), qPrintable(a.problem));
            QCOMPARE(a.text, text);
            QCOMPARE(a.errorMessage, errorMessage);
            if (stream) {
                QVERIFY(a.failedEnd);
                QCOMPARE(a.error, QStringLiteral("error"));
                QVERIFY2(!raw.contains("\"type\":\"done\""), raw.constData());
            } else {
                QCOMPARE(a.stop, QStringLiteral("error"));
            }
        }
        // Still an answer: one upstream request each, nothing marked.
        QCOMPARE(fakeFor(model).requests().size(), 2);
        QVERIFY(m_gw->engine().marks().isEmpty());
    }

    void piStreamProxyHistorySendsRedactedThinkingBackRedacted() {
        // pi's streamProxy rebuilds the message from the events: a thinking block from its deltas and
        // thinking_end's contentSignature, with no redacted flag. A redacted_thinking payload that came
        // raw went back as a thinking block signed with it, and Anthropic refused every such turn.
        const QByteArray payload = "EmwKAhgBEgyRedactedPayloadAaBbCc==";
        m_gw->anthropicA.setRawReply(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_r\",\"type\":"
            "\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-a\",\"stop_reason\":null,"
            "\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n"
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":"
            "{\"type\":\"redacted_thinking\",\"data\":\"" +
            payload +
            "\"}}\n\n"
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":"
            "{\"type\":\"text\",\"text\":\"\"}}\n\n"
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":"
            "{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n"
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
            "\"usage\":{\"output_tokens\":5}}\n\n"
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
        Ask ask{QStringLiteral("pa/claude-a"), true};
        ask.reasoning = true;
        QJsonObject body = requestBody(Format::Pi, ask);
        const HttpResult r = m_gw->post(pathOf(Format::Pi), body);
        m_lastRaw = r.body;
        QCOMPARE(r.status, 200);
        // streamProxy's processProxyEvent, for the blocks this answer has.
        QMap<int, QJsonObject> blocks;
        QJsonObject doneMessage;
        for (const Sse &e : sseEvents(r.body)) {
            const QJsonObject o = QJsonDocument::fromJson(e.data).object();
            const QString type = o.value("type").toString();
            const int i = o.value("contentIndex").toInt();
            if (type == "thinking_start")
                blocks[i] = QJsonObject{{"type", "thinking"}, {"thinking", ""}};
            else if (type == "thinking_delta")
                blocks[i]["thinking"] = blocks[i]["thinking"].toString() + o.value("delta").toString();
            else if (type == "thinking_end")
                blocks[i]["thinkingSignature"] = o.value("contentSignature");
            else if (type == "text_start")
                blocks[i] = QJsonObject{{"type", "text"}, {"text", ""}};
            else if (type == "text_delta")
                blocks[i]["text"] = blocks[i]["text"].toString() + o.value("delta").toString();
            else if (type == "done")
                doneMessage = o.value("message").toObject();
        }
        QCOMPARE(blocks.size(), 2);
        // done.message keeps it as pi-ai does: the raw payload, flagged redacted.
        const QJsonObject stored = doneMessage.value("content").toArray().at(0).toObject();
        QCOMPARE(stored.value("thinkingSignature").toString(), QString::fromLatin1(payload));
        QCOMPARE(stored.value("redacted").toBool(), true);

        QJsonArray content;
        for (const QJsonObject &b : std::as_const(blocks))
            content.append(b);
        QJsonObject context = body.value("context").toObject();
        QJsonArray messages = context.value("messages").toArray();
        messages.append(QJsonObject{{"role", "assistant"},
                                    {"content", content},
                                    {"api", "anthropic-messages"},
                                    {"provider", "switchman"},
                                    {"model", "pa/claude-a"},
                                    {"stopReason", "stop"}});
        messages.append(QJsonObject{{"role", "user"}, {"content", "and again"}});
        context.insert("messages", messages);
        body.insert("context", context);
        body.insert("stream", false);
        m_gw->anthropicA.setRawReply({});
        const HttpResult next = m_gw->post(pathOf(Format::Pi), body);
        QCOMPARE(next.status, 200);
        const QJsonObject sent = QJsonDocument::fromJson(m_gw->anthropicA.requests().last().body).object();
        const QJsonArray turn = sent.value("messages").toArray().at(1).toObject().value("content").toArray();
        QVERIFY2(!turn.isEmpty(), QJsonDocument(sent).toJson().constData());
        QCOMPARE(turn.at(0).toObject(),
                 (QJsonObject{{"type", "redacted_thinking"}, {"data", QString::fromLatin1(payload)}}));
    }

    void piOptionsReachTheUpstreamOrAreNamed() {
        // pi's streamProxy sends topP, presencePenalty and repetitionPenalty beside pi-ai's own
        // options; they went nowhere and nothing said so.
        QJsonObject body = requestBody(Format::Pi, Ask{QStringLiteral("pb/gpt-b"), false});
        body.insert("options", QJsonObject{{"temperature", 0.5},
                                           {"topP", 0.2},
                                           {"presencePenalty", 1.5},
                                           {"repetitionPenalty", 1.3},
                                           {"anthropicFineGrainedToolStreaming", true},
                                           {"maxTokens", 100},
                                           {"sessionId", "s-1"},
                                           {"cacheRetention", "short"}});
        const HttpResult json = m_gw->post(pathOf(Format::Pi), body);
        m_lastRaw = json.body;
        QCOMPARE(json.status, 200);
        const QJsonObject sent = QJsonDocument::fromJson(m_gw->openaiB.requests().last().body).object();
        QCOMPARE(sent.value("top_p").toDouble(), 0.2);
        QCOMPARE(sent.value("presence_penalty").toDouble(), 1.5);
        QCOMPARE(sent.value("temperature").toDouble(), 0.5);
        // No API has a repetition penalty: named, and only it (pi-ai's own settings are the gateway's).
        QCOMPARE(json.header("x-switchman-dropped"), QByteArray("options.repetitionPenalty"));
        body.insert("stream", true);
        const HttpResult streamed = m_gw->post(pathOf(Format::Pi), body);
        QVERIFY2(streamed.body.left(300).contains(" dropped=options.repetitionPenalty\n"),
                 streamed.body.left(300).constData());

        // Anthropic takes top_p (alone: Claude refuses it beside a temperature).
        QJsonObject toClaude = requestBody(Format::Pi, Ask{QStringLiteral("pa/claude-a"), false});
        toClaude.insert("options", QJsonObject{{"topP", 0.3}});
        const HttpResult claude = m_gw->post(pathOf(Format::Pi), toClaude);
        QCOMPARE(claude.status, 200);
        QCOMPARE(QJsonDocument::fromJson(m_gw->anthropicA.requests().last().body).object().value("top_p").toDouble(),
                 0.3);
        QVERIFY(claude.header("x-switchman-dropped").isEmpty());
    }

    void interleavedToolCallDeltasReachEveryFormatWhole_data() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<QString>("model");
        QTest::addColumn<bool>("stream");
        for (const auto &[format, name] : kFormats)
            for (const char *model : {"pb/gpt-b", "pd/resp-d"})
                for (bool stream : {false, true})
                    QTest::addRow("%s<-%s %s", name, model, stream ? "stream" : "json")
                        << format << QString::fromLatin1(model) << stream;
    }
    void interleavedToolCallDeltasReachEveryFormatWhole() {
        QFETCH(Format, format);
        QFETCH(QString, model);
        QFETCH(bool, stream);
        // Two parallel calls whose argument deltas alternate (vLLM: index 0, 1, 0, 1; Responses: output_index).
        const bool chat = model.startsWith("pb/");
        fakeFor(model).setRawReply(
            sw::test::readTestData(chat ? QStringLiteral("openai_upstream_interleaved_tools.sse")
                                        : QStringLiteral("responses_upstream_interleaved_tools.sse")));
        Ask a{model, stream, QStringLiteral("weather and time")};
        a.tools = true;
        int status = 0;
        QByteArray raw;
        const Answer answer = ask(format, a, &status, &raw);
        QCOMPARE(status, 200);
        QVERIFY2(answer.problem.isEmpty() || answer.problem.contains("arguments differ"), qPrintable(answer.problem));
        const QList<Call> calls = toolCallsOf(format, stream, raw);
        QCOMPARE(calls.size(), 2);
        // pi-ai keeps a Responses call's item id after a bar; the others get the call_id.
        const bool pi = format == Format::Pi && !chat;
        QCOMPARE(calls[0].id, chat ? QStringLiteral("chatcmpl-tool-a1")
                                   : (pi ? QStringLiteral("call_a|fc_a") : QStringLiteral("call_a")));
        QCOMPARE(calls[0].name, QStringLiteral("get_weather"));
        QCOMPARE(calls[0].args, QJsonObject({{"location", "Paris"}}));
        QCOMPARE(calls[1].id, chat ? QStringLiteral("chatcmpl-tool-b2")
                                   : (pi ? QStringLiteral("call_b|fc_b") : QStringLiteral("call_b")));
        QCOMPARE(calls[1].name, QStringLiteral("get_time"));
        QCOMPARE(calls[1].args, QJsonObject({{"zone", "CET"}}));
        QCOMPARE(answer.stop, QStringLiteral("toolUse"));
    }

    void claudeCodeSessionSurvivesAFailoverAndComesBack() {
        // Turn 1 on Anthropic (signed thinking + a tool call), turn 2 fails over to an
        // OpenAI-style upstream (its own reasoning + calls), turn 3 is back on Anthropic.
        m_gw->anthropicA.setRawReply(sw::test::readTestData(QStringLiteral("anthropic_upstream_full.sse")));
        m_gw->openaiB.setRawReply(sw::test::readTestData(QStringLiteral("openai_upstream_full.sse")));
        QJsonArray messages{QJsonObject{{"role", "user"}, {"content", "Weather in Paris?"}}};
        auto turn = [&]() {
            const QJsonObject body{
                {"model", "chain"},
                {"max_tokens", 8000},
                {"stream", true},
                {"thinking", QJsonObject{{"type", "enabled"}, {"budget_tokens", 2048}}},
                {"tools",
                 QJsonArray{QJsonObject{{"name", "get_weather"}, {"input_schema", weatherSchema()}},
                            QJsonObject{{"name", "get_time"}, {"input_schema", QJsonObject{{"type", "object"}}}}}},
                {"messages", messages}};
            const HttpResult r = m_gw->post(QStringLiteral("/v1/messages?beta=true"), body);
            m_lastRaw = r.body;
            return r;
        };
        const HttpResult first = turn();
        QCOMPARE(first.status, 200);
        const QJsonArray one = anthropicContentFromStream(first.body);
        QCOMPARE(one[0].toObject().value("type").toString(), QStringLiteral("thinking"));
        const QString anthropicSignature = one[0].toObject().value("signature").toString();
        QVERIFY(anthropicSignature.startsWith("EqQB"));
        messages.append(QJsonObject{{"role", "assistant"}, {"content", one}});
        messages.append(toolResultsFor(one, QStringLiteral("sunny, 21 C")));

        demo::Fault overloaded;
        overloaded.kind = demo::Fault::Status;
        overloaded.status = 529;
        m_gw->anthropicA.pushFault(overloaded);
        const HttpResult second = turn();
        QCOMPARE(second.status, 200);
        QCOMPARE(m_gw->openaiB.requests().size(), 1);
        const QByteArray toOpenAI = m_gw->openaiB.requests().last().body;
        QVERIFY2(!toOpenAI.contains(anthropicSignature.toUtf8()), toOpenAI.constData());
        QVERIFY2(!toOpenAI.contains("The user wants the weather"), toOpenAI.constData()); // never as text
        const QJsonArray two = anthropicContentFromStream(second.body);
        QCOMPARE(two[0].toObject().value("type").toString(), QStringLiteral("thinking"));
        QCOMPARE(two[0].toObject().value("thinking").toString(), QStringLiteral("Weather needs a lookup."));
        // The OpenAI-made reasoning reaches Claude Code marked as not Anthropic's.
        QVERIFY(two[0].toObject().value("signature").toString().startsWith("swsig1.openai-completions."));
        messages.append(QJsonObject{{"role", "assistant"}, {"content", two}});
        messages.append(toolResultsFor(two, QStringLiteral("done")));

        QCOMPARE(m_gw->del(QStringLiteral("/admin/marks?provider=pa")).status, 200);
        const int before = int(m_gw->anthropicA.requests().size());
        const HttpResult third = turn();
        QCOMPARE(third.status, 200);
        QCOMPARE(int(m_gw->anthropicA.requests().size()), before + 1);
        const QJsonObject sent = QJsonDocument::fromJson(m_gw->anthropicA.requests().last().body).object();
        const QByteArray sentText = QJsonDocument(sent).toJson();
        // Anthropic gets its own signed thinking back, nothing it did not sign, and no reasoning as text.
        QVERIFY(sentText.contains(anthropicSignature.toUtf8()));
        QVERIFY2(!sentText.contains("swsig1"), sentText.constData());
        QVERIFY2(!sentText.contains("Weather needs a lookup."), sentText.constData());
        // Its last assistant turn came from elsewhere: this turn goes with thinking off, as Messages requires.
        QCOMPARE(sent.value("thinking").toObject().value("type").toString(), QStringLiteral("disabled"));
        const QJsonArray sentMessages = sent.value("messages").toArray();
        QCOMPARE(sentMessages[3].toObject().value("content").toArray()[0].toObject().value("type").toString(),
                 QStringLiteral("text"));
    }

    void contextOverflowKeepsItsMeaningInEveryFormat_data() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("fixture");
        // Each provider's real "context too long" body: Codex and the SDKs detect OpenAI's code,
        // Claude Code Anthropic's phrase; either must survive, same API or across formats.
        for (const auto &[format, name] : kFormats)
            for (const Upstream &u : kUpstreams) {
                const QString model = QString::fromLatin1(u.model);
                QTest::addRow("%s<-%s", name, u.api)
                    << format << model
                    << (model.startsWith("pa/")   ? QStringLiteral("errors/anthropic_prompt_too_long.json")
                        : model.startsWith("pe/") ? QStringLiteral("errors/google_input_token_count.json")
                                                  : QStringLiteral("errors/openai_context_length_exceeded.json"));
            }
        // A compatible server that says it in words, its status as the code (probe V1 F2).
        for (const auto &[format, name] : kFormats)
            QTest::addRow("%s<-vllm", name)
                << format << QStringLiteral("pb/gpt-b") << QStringLiteral("errors/vllm_maximum_context_length.json");
    }
    void contextOverflowKeepsItsMeaningInEveryFormat() {
        QFETCH(Format, format);
        QFETCH(QString, model);
        QFETCH(QString, fixture);
        demo::Fault fault;
        fault.kind = demo::Fault::Status;
        fault.status = 400;
        fault.body = sw::test::readTestData(fixture);
        fakeFor(model).pushFault(fault);
        const HttpResult r = m_gw->post(pathOf(format), requestBody(format, Ask{model, false}));
        m_lastRaw = r.body;
        QCOMPARE(r.status, 400);
        const QJsonObject e = r.json().value("error").toObject();
        switch (format) {
        case Format::Chat:
        case Format::Responses:
            QCOMPARE(e.value("code").toString(), QStringLiteral("context_length_exceeded"));
            QCOMPARE(e.value("type").toString(), QStringLiteral("invalid_request_error"));
            QCOMPARE(e.value("param").toString(), QStringLiteral("messages"));
            break;
        case Format::Anthropic:
            QCOMPARE(e.value("type").toString(), QStringLiteral("invalid_request_error"));
            QVERIFY2(e.value("message").toString().contains("prompt is too long"), r.body.constData());
            break;
        case Format::Pi:
            QVERIFY2(e.value("message").toString().contains("token"), r.body.constData());
            break;
        }
    }

    void sameApiJsonAnswersKeepUpstreamIds() {
        // A streaming passthrough shows the upstream's ids; a JSON answer must too, or a
        // following previous_response_id names nothing real.
        m_gw->responsesD.setRawReply(sw::test::readTestData(QStringLiteral("responses_upstream_full.sse")));
        const HttpResult r =
            m_gw->post(pathOf(Format::Responses), requestBody(Format::Responses, Ask{"pd/resp-d", false}));
        QCOMPARE(r.status, 200);
        const QJsonObject o = r.json();
        QCOMPARE(o.value("id").toString(), QStringLiteral("resp_01"));
        QStringList ids;
        for (const QJsonValue &item : o.value("output").toArray())
            ids << item.toObject().value("id").toString();
        QCOMPARE(ids, (QStringList{"rs_01", "msg_01", "fc_01"}));

        m_gw->anthropicA.setRawReply(sw::test::readTestData(QStringLiteral("anthropic_upstream_full.sse")));
        const HttpResult a =
            m_gw->post(pathOf(Format::Anthropic), requestBody(Format::Anthropic, Ask{"pa/claude-a", false}));
        QCOMPARE(a.json().value("id").toString(), QStringLiteral("msg_01XFDUDYJgAACzvnptvVoYEL"));
        m_gw->openaiB.setRawReply(sw::test::readTestData(QStringLiteral("openai_upstream_full.sse")));
        const HttpResult c = m_gw->post(pathOf(Format::Chat), requestBody(Format::Chat, Ask{"pb/gpt-b", false}));
        QCOMPARE(c.json().value("id").toString(), QStringLiteral("chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG"));
        // Across APIs the gateway's own id stays: an upstream id means nothing to another API.
        const HttpResult x =
            m_gw->post(pathOf(Format::Responses), requestBody(Format::Responses, Ask{"pa/claude-a", false}));
        QVERIFY(!x.json().value("id").toString().startsWith("msg_01XF"));
    }

    void fieldsWithoutATranslationMakeTheCandidateIncompatible() {
        // previous_response_id: only a Responses upstream holds that state. Elsewhere the
        // client would get 200 with its earlier context gone; it gets a 400 naming the field.
        QJsonObject continued = requestBody(Format::Responses, Ask{"pa/claude-a", false});
        continued.insert("previous_response_id", "resp_earlier");
        const HttpResult refused = m_gw->post(pathOf(Format::Responses), continued);
        QCOMPARE(refused.status, 400);
        QVERIFY2(refused.body.contains("previous_response_id"), refused.body.constData());
        QCOMPARE(m_gw->anthropicA.requests().size(), 0);
        continued.insert("model", "pd/resp-d");
        QCOMPARE(m_gw->post(pathOf(Format::Responses), continued).status, 200);
        QCOMPARE(QJsonDocument::fromJson(m_gw->responsesD.requests().last().body)
                     .object()
                     .value("previous_response_id")
                     .toString(),
                 QStringLiteral("resp_earlier"));

        // A follower that cannot continue it is skipped, never asked.
        delete m_gw;
        m_gw = new GatewayFixture;
        config::RouteConfig route;
        route.name = QStringLiteral("codex");
        route.candidates = {QStringLiteral("pd/resp-d"), QStringLiteral("pa/claude-a")};
        m_gw->config.routes.insert(route.name, route);
        m_gw->start();
        demo::Fault down;
        down.kind = demo::Fault::Status;
        down.status = 503;
        m_gw->responsesD.pushFault(down);
        continued.insert("model", "codex");
        const HttpResult failed = m_gw->post(pathOf(Format::Responses), continued);
        QVERIFY(failed.status >= 500);
        QCOMPARE(m_gw->anthropicA.requests().size(), 0);

        // Structured output is mapped: Chat response_format -> Messages output_config.format,
        // Responses text.format, Gemini responseMimeType + responseJsonSchema.
        QJsonObject schema = requestBody(Format::Chat, Ask{"pa/claude-a", false});
        schema.insert(
            "response_format",
            QJsonObject{{"type", "json_schema"},
                        {"json_schema", QJsonObject{{"name", "w"}, {"strict", true}, {"schema", weatherSchema()}}}});
        QCOMPARE(m_gw->post(pathOf(Format::Chat), schema).status, 200);
        const QJsonObject toClaude = QJsonDocument::fromJson(m_gw->anthropicA.requests().last().body).object();
        QJsonObject closed = weatherSchema(); // as Messages' structured outputs require
        closed.insert("additionalProperties", false);
        QCOMPARE(toClaude.value("output_config").toObject().value("format").toObject().value("schema").toObject(),
                 closed);
        schema.insert("model", "pd/resp-d");
        QCOMPARE(m_gw->post(pathOf(Format::Chat), schema).status, 200);
        const QJsonObject toResponses = QJsonDocument::fromJson(m_gw->responsesD.requests().last().body).object();
        const QJsonObject textFormat = toResponses.value("text").toObject().value("format").toObject();
        QCOMPARE(textFormat.value("type").toString(), QStringLiteral("json_schema"));
        QCOMPARE(textFormat.value("name").toString(), QStringLiteral("w"));
        QCOMPARE(textFormat.value("strict").toBool(), true);
        QCOMPARE(textFormat.value("schema").toObject(), weatherSchema());
        schema.insert("model", "pe/gemini-e");
        QCOMPARE(m_gw->post(pathOf(Format::Chat), schema).status, 200);
        const QJsonObject toGemini = QJsonDocument::fromJson(m_gw->googleE.requests().last().body).object();
        const QJsonObject generation = toGemini.value("generationConfig").toObject();
        QCOMPARE(generation.value("responseMimeType").toString(), QStringLiteral("application/json"));
        QCOMPARE(generation.value("responseJsonSchema").toObject(), weatherSchema());
        schema.insert("model", "pb/gpt-b"); // the same API keeps it as sent
        QCOMPARE(m_gw->post(pathOf(Format::Chat), schema).status, 200);
        QVERIFY(m_gw->openaiB.requests().last().body.contains("json_schema"));
        // JSON without a schema has no Messages equivalent: never prose in its place.
        const qsizetype claudeAsked = m_gw->anthropicA.requests().size();
        schema.insert("model", "pa/claude-a");
        schema.insert("response_format", QJsonObject{{"type", "json_object"}});
        const HttpResult noSchema = m_gw->post(pathOf(Format::Chat), schema);
        QCOMPARE(noSchema.status, 400);
        QVERIFY2(noSchema.body.contains("response_format"), noSchema.body.constData());
        QCOMPARE(m_gw->anthropicA.requests().size(), claudeAsked);
    }

    void errorShapes_data() {
        QTest::addColumn<Format>("format");
        for (const auto &[format, name] : kFormats)
            QTest::addRow("%s", name) << format;
    }
    void errorShapes() {
        QFETCH(Format, format);
        // Bad JSON: 400 in the format's shape, no upstream contacted.
        const HttpResult bad = m_gw->postRaw(pathOf(format), "{\"model\": \"pa/claude-a\", ");
        QCOMPARE(bad.status, 400);
        QCOMPARE(errorTypeOf(format, bad.json()), QStringLiteral("invalid_request_error"));
        // Unknown model: 404.
        const HttpResult unknown =
            m_gw->post(pathOf(format), requestBody(format, Ask{QStringLiteral("nobody/none"), false}));
        QCOMPARE(unknown.status, 404);
        QCOMPARE(errorTypeOf(format, unknown.json()), QStringLiteral("not_found_error"));
        for (const auto *fake : {&m_gw->anthropicA, &m_gw->openaiB, &m_gw->responsesD, &m_gw->googleE})
            QCOMPARE(fake->requests().size(), 0);
        // Upstream 4xx and 5xx on a single candidate: the status and the message come through.
        for (int upstreamStatus : {400, 500}) {
            for (const Upstream &u : kUpstreams) {
                demo::Fault fault;
                fault.kind = demo::Fault::Status;
                fault.status = upstreamStatus;
                fakeFor(QString::fromLatin1(u.model)).setFault(fault);
                const HttpResult r =
                    m_gw->post(pathOf(format), requestBody(format, Ask{QString::fromLatin1(u.model), false}));
                fakeFor(QString::fromLatin1(u.model)).clearFault();
                QVERIFY2(r.status >= 400, qPrintable(QStringLiteral("%1 -> %2").arg(u.api).arg(r.status)));
                if (upstreamStatus == 400)
                    QCOMPARE(r.status, 400);
                else
                    QVERIFY2(r.status >= 500, qPrintable(QString::number(r.status)));
                QVERIFY2(!errorTypeOf(format, r.json()).isEmpty(), r.body.constData());
                QVERIFY2(r.body.contains("demo upstream answered"), r.body.constData());
            }
        }
    }

    void passthroughKeepsUnknownFieldsAndHeaders_data() {
        QTest::addColumn<Format>("format");
        QTest::addColumn<QString>("model");
        QTest::addColumn<QByteArray>("header");
        QTest::addRow("anthropic") << Format::Anthropic << QStringLiteral("pa/claude-a")
                                   << QByteArray("anthropic-beta");
        QTest::addRow("chat") << Format::Chat << QStringLiteral("pb/gpt-b") << QByteArray("OpenAI-Beta");
        QTest::addRow("responses") << Format::Responses << QStringLiteral("pd/resp-d") << QByteArray("OpenAI-Beta");
    }
    void passthroughKeepsUnknownFieldsAndHeaders() {
        QFETCH(Format, format);
        QFETCH(QString, model);
        QFETCH(QByteArray, header);
        for (bool stream : {false, true}) {
            QJsonObject body = requestBody(format, Ask{model, stream});
            body.insert("metadata", QJsonObject{{"user_id", "u-42"}});
            body.insert("x_future_field", QJsonObject{{"keep", true}});
            const QList<QPair<QByteArray, QByteArray>> headers{{header, "future-feature-2099-01-01"},
                                                               {"anthropic-version", "2023-06-01"}};
            const HttpResult r = m_gw->post(pathOf(format), body, headers);
            QCOMPARE(r.status, 200);
            const demo::RecordedRequest sent = fakeFor(model).requests().last();
            const QJsonObject upstream = QJsonDocument::fromJson(sent.body).object();
            QCOMPARE(upstream.value("metadata"), body.value("metadata"));
            QCOMPARE(upstream.value("x_future_field"), body.value("x_future_field"));
            QCOMPARE(upstream.value("model").toString(), model.section('/', 1)); // only model replaced
            QCOMPARE(upstream.value("stream").toBool(), true);
            QCOMPARE(sent.header(header), QByteArray("future-feature-2099-01-01"));
            if (format == Format::Anthropic)
                QCOMPARE(sent.header("anthropic-version"), QByteArray("2023-06-01"));
        }
    }

    void convertedRequestsDropBetaHeaders() {
        const QList<QPair<QByteArray, QByteArray>> headers{{"anthropic-beta", "future-feature-2099-01-01"},
                                                           {"OpenAI-Beta", "assistants=v2"}};
        for (const Upstream &u : kUpstreams) {
            const QString model = QString::fromLatin1(u.model);
            QCOMPARE(m_gw->post(pathOf(Format::Pi), requestBody(Format::Pi, Ask{model, false}), headers).status, 200);
            const demo::RecordedRequest sent = fakeFor(model).requests().last();
            QVERIFY(sent.header("anthropic-beta").isEmpty());
            QVERIFY(sent.header("openai-beta").isEmpty());
        }
    }

    void routesAcceptQueryStrings() {
        // Claude Code posts to /v1/messages?beta=true.
        const HttpResult r = m_gw->post(QStringLiteral("/v1/messages?beta=true"),
                                        requestBody(Format::Anthropic, Ask{QStringLiteral("pa/claude-a"), true}));
        QCOMPARE(r.status, 200);
        QVERIFY(parseStream(Format::Anthropic, r.body).cleanEnd);
        const HttpResult pi = m_gw->post(QStringLiteral("/v1/responses?foo=1"),
                                         requestBody(Format::Responses, Ask{QStringLiteral("pe/gemini-e"), false}));
        QCOMPARE(pi.status, 200);
    }

    void signaturesReturnOnlyToTheirOwnApi_data() {
        QTest::addColumn<QString>("producedBy"); // the API that made the assistant turn (pi records it)
        QTest::addColumn<QString>("signature");
        QTest::addColumn<QString>("model"); // the upstream the next turn goes to
        QTest::addColumn<bool>("kept");
        const QString responsesItem =
            QStringLiteral(R"({"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"ENC-1"})");
        for (const Upstream &u : kUpstreams) {
            const QString model = QString::fromLatin1(u.model);
            QTest::addRow("anthropic sig -> %s", u.api)
                << "anthropic-messages"
                << "SIG-ANTHROPIC" << model << (QLatin1String(u.api) == "anthropic-messages");
            QTest::addRow("google sig -> %s", u.api)
                << "google-generative-ai"
                << "SIG-GOOGLE" << model << (QLatin1String(u.api) == "google-generative-ai");
            QTest::addRow("responses item -> %s", u.api)
                << "openai-responses" << responsesItem << model << (QLatin1String(u.api) == "openai-responses");
        }
    }
    void signaturesReturnOnlyToTheirOwnApi() {
        QFETCH(QString, producedBy);
        QFETCH(QString, signature);
        QFETCH(QString, model);
        QFETCH(bool, kept);
        QJsonObject body = requestBody(Format::Pi, Ask{model, false});
        QJsonObject context = body.value("context").toObject();
        QJsonArray messages = context.value("messages").toArray();
        messages.append(QJsonObject{
            {"role", "assistant"},
            {"api", producedBy},
            {"content",
             QJsonArray{
                 QJsonObject{{"type", "thinking"}, {"thinking", "Earlier musing."}, {"thinkingSignature", signature}},
                 QJsonObject{{"type", "text"}, {"text", "Earlier answer."}}}}});
        messages.append(QJsonObject{{"role", "user"}, {"content", "and now?"}});
        context.insert("messages", messages);
        body.insert("context", context);
        QCOMPARE(m_gw->post(pathOf(Format::Pi), body).status, 200); // the upstream accepted the converted history
        const QByteArray sent = fakeFor(model).requests().last().body;
        const QByteArray marker = producedBy == "openai-responses" ? QByteArray("ENC-1") : signature.toUtf8();
        QCOMPARE(sent.contains(marker), kept);
        // Reasoning goes back only to the API that made it; elsewhere it is dropped, never replayed as text.
        QVERIFY2(sent.contains("Earlier musing.") == kept, sent.constData());
    }

    void countTokensIsAnsweredLocally() {
        QJsonObject body = requestBody(Format::Anthropic, Ask{QStringLiteral("pa/claude-a"), false});
        body.remove("max_tokens"); // count_tokens bodies carry none
        const HttpResult small = m_gw->post(QStringLiteral("/v1/messages/count_tokens"), body);
        QCOMPARE(small.status, 200);
        const qint64 few = small.json().value("input_tokens").toInteger();
        QVERIFY(few > 0);
        body.insert("system", QString(4000, QLatin1Char('x')));
        const qint64 many = m_gw->post(QStringLiteral("/v1/messages/count_tokens?beta=true"), body)
                                .json()
                                .value("input_tokens")
                                .toInteger();
        QVERIFY2(many >= few + 900, qPrintable(QStringLiteral("%1 vs %2").arg(many).arg(few))); // ~4 chars a token
        QCOMPARE(m_gw->anthropicA.requests().size(), 0);                                        // never forwarded
    }

    void modelsListsRoutesAndModelsInOpenAIShape() {
        const HttpResult r = m_gw->get(QStringLiteral("/v1/models"));
        QCOMPARE(r.status, 200);
        const QJsonObject list = r.json();
        QCOMPARE(list.value("object").toString(), QStringLiteral("list"));
        QStringList ids;
        for (const QJsonValue &m : list.value("data").toArray()) {
            QCOMPARE(m.toObject().value("object").toString(), QStringLiteral("model"));
            ids << m.toObject().value("id").toString();
        }
        for (const char *id : {"chain", "pa/claude-a", "pb/gpt-b", "pd/resp-d", "pe/gemini-e"})
            QVERIFY2(ids.contains(QLatin1String(id)), qPrintable(ids.join(',')));
        // Each is there by its id too (OpenAI's models.retrieve), a provider/model id included.
        const HttpResult one = m_gw->get(QStringLiteral("/v1/models/pa/claude-a"));
        QCOMPARE(one.status, 200);
        QCOMPARE(one.json().value("id").toString(), QStringLiteral("pa/claude-a"));
        QVERIFY(one.json().value("created").toInteger() > 1'600'000'000); // when the gateway started, not 0
    }

    void piAcceptsModelObjectAndDefaultsToStreaming() {
        // pi's streamProxy sends the whole Model object and no stream flag.
        QJsonObject body = requestBody(Format::Pi, Ask{QStringLiteral("pb/gpt-b"), false});
        body.remove("stream");
        body.insert("model", QJsonObject{{"id", "pb/gpt-b"},
                                         {"name", "GPT B"},
                                         {"api", "openai-completions"},
                                         {"provider", "switchman"},
                                         {"baseUrl", m_gw->baseUrl()},
                                         {"reasoning", false},
                                         {"input", QJsonArray{"text"}}});
        const HttpResult r = m_gw->post(pathOf(Format::Pi), body);
        QCOMPARE(r.status, 200);
        QVERIFY(r.header("content-type").startsWith("text/event-stream"));
        const Answer a = parseStream(Format::Pi, r.body);
        QVERIFY2(a.problem.isEmpty(), qPrintable(a.problem));
        QVERIFY(a.text.contains(QStringLiteral("You said: hello matrix")));
        // The answer names the API that produced it, so pi keeps signatures on the next turn.
        QVERIFY2(r.body.contains("\"api\":\"openai-completions\""), r.body.constData());
    }
};

QTEST_GUILESS_MAIN(TestProtocolMatrix)
#include "test_protocol_matrix.moc"
