// How a tool call reaches each client when the upstream's call is odd: arguments that are JSON
// but not an object, a call the upstream's max_tokens cut, and the words of an in-band error.
// The real engine on loopback in front of fake upstreams replaying scripted streams.

#include "gateway_fixture.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QtTest>

using namespace sw;
using namespace sw::test;

namespace {

QList<QJsonObject> sseObjects(const QByteArray &sse) {
    QList<QJsonObject> out;
    for (const QByteArray &line : sse.split('\n')) {
        if (!line.startsWith("data:"))
            continue;
        const QJsonDocument doc = QJsonDocument::fromJson(line.mid(5).trimmed());
        if (doc.isObject())
            out.append(doc.object());
    }
    return out;
}

QList<QJsonObject> ofType(const QByteArray &sse, const char *type) {
    QList<QJsonObject> out;
    for (const QJsonObject &o : sseObjects(sse))
        if (o.value("type").toString() == QLatin1String(type))
            out.append(o);
    return out;
}

QByteArray chatChunk(const QJsonObject &delta, const QJsonValue &finish = QJsonValue::Null) {
    const QJsonObject chunk{
        {"id", "chatcmpl-T1"},
        {"object", "chat.completion.chunk"},
        {"created", 1741570300},
        {"model", "gpt-b"},
        {"choices", QJsonArray{QJsonObject{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
    return "data: " + QJsonDocument(chunk).toJson(QJsonDocument::Compact) + "\n\n";
}

QJsonObject callDelta(int index, const QString &arguments, const QString &id = {}) {
    QJsonObject function{{"arguments", arguments}};
    QJsonObject call{{"index", index}, {"function", function}};
    if (!id.isEmpty()) {
        call.insert("id", id);
        call.insert("type", "function");
        function.insert("name", "get_weather");
        call.insert("function", function);
    }
    return QJsonObject{{"tool_calls", QJsonArray{call}}};
}

// A Chat stream with two calls: the first's arguments in `fragments`, the second an object whose
// first fragment starts with white space.
QByteArray chatTwoCalls(const QStringList &fragments) {
    QByteArray sse = chatChunk(QJsonObject{{"role", "assistant"}, {"content", QJsonValue::Null}});
    sse += chatChunk(callDelta(0, QString(), "call_odd"));
    for (const QString &f : fragments)
        sse += chatChunk(callDelta(0, f));
    sse += chatChunk(callDelta(1, QString(), "call_obj"));
    sse += chatChunk(callDelta(1, " \n{\"city\": "));
    sse += chatChunk(callDelta(1, "\"Rome\"}"));
    sse += chatChunk(QJsonObject{}, "tool_calls");
    return sse + "data: [DONE]\n\n";
}

// A text answer then a call, then a text the cap cut: what Codex reads as the model's last words.
const char *kAnthropicTextCut = "event: message_start\n"
                                "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_cut2\",\"type\":"
                                "\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-a\","
                                "\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":11,"
                                "\"output_tokens\":1}}}\n\n"
                                "event: content_block_start\n"
                                "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":"
                                "\"text\",\"text\":\"\"}}\n\n"
                                "event: content_block_delta\n"
                                "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
                                "\"text_delta\",\"text\":\"Checking.\"}}\n\n"
                                "event: content_block_stop\n"
                                "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
                                "event: content_block_start\n"
                                "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":"
                                "\"text\",\"text\":\"\"}}\n\n"
                                "event: content_block_delta\n"
                                "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":"
                                "\"text_delta\",\"text\":\"The capital of France is\"}}\n\n"
                                "event: content_block_stop\n"
                                "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
                                "event: message_delta\n"
                                "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\","
                                "\"stop_sequence\":null},\"usage\":{\"output_tokens\":9}}\n\n"
                                "event: message_stop\n"
                                "data: {\"type\":\"message_stop\"}\n\n";

const char *kAnthropicCut = "event: message_start\n"
                            "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_cut1\",\"type\":\"message\","
                            "\"role\":\"assistant\",\"content\":[],\"model\":\"claude-a\",\"stop_reason\":null,"
                            "\"stop_sequence\":null,\"usage\":{\"input_tokens\":11,\"output_tokens\":1}}}\n\n"
                            "event: content_block_start\n"
                            "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":"
                            "\"tool_use\",\"id\":\"toolu_cut1\",\"name\":\"get_weather\",\"input\":{}}}\n\n"
                            "event: content_block_delta\n"
                            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
                            "\"input_json_delta\",\"partial_json\":\"{\\\"city\\\": \\\"Pa\"}}\n\n"
                            "event: content_block_delta\n"
                            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
                            "\"input_json_delta\",\"partial_json\":\"r\"}}\n\n"
                            "event: content_block_stop\n"
                            "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
                            "event: message_delta\n"
                            "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\","
                            "\"stop_sequence\":null},\"usage\":{\"output_tokens\":20}}\n\n"
                            "event: message_stop\n"
                            "data: {\"type\":\"message_stop\"}\n\n";

QJsonObject piBody(const QString &model, bool stream) {
    return {{"model", model},
            {"stream", stream},
            {"context", QJsonObject{{"messages", QJsonArray{QJsonObject{
                                                     {"role", "user"}, {"content", "weather?"}, {"timestamp", 0}}}}}}};
}

QJsonObject responsesBody(const QString &model, bool stream) {
    return {{"model", model}, {"input", "weather?"}, {"stream", stream}};
}

QJsonObject piDone(const QByteArray &sse) {
    const QList<QJsonObject> done = ofType(sse, "done");
    return done.isEmpty() ? QJsonObject() : done.last().value("message").toObject();
}

QJsonArray piCalls(const QJsonObject &message) {
    QJsonArray calls;
    for (const QJsonValue &b : message.value("content").toArray())
        if (b.toObject().value("type").toString() == QLatin1String("toolCall"))
            calls.append(b);
    return calls;
}

// A Chat stream whose one call is named `name`, with arguments {"path": "a.txt"}.
QByteArray chatCallNamed(const QString &name) {
    QByteArray sse = chatChunk(QJsonObject{{"role", "assistant"}, {"content", QJsonValue::Null}});
    const QJsonObject function{{"name", name}, {"arguments", "{\"path\": \"a.txt\"}"}};
    sse += chatChunk(QJsonObject{
        {"tool_calls",
         QJsonArray{QJsonObject{{"index", 0}, {"id", "call_n1"}, {"type", "function"}, {"function", function}}}}});
    sse += chatChunk(QJsonObject{}, "tool_calls");
    return sse + "data: [DONE]\n\n";
}

// The tool names a Chat request carries: its definitions', then its history's calls.
QStringList chatToolNames(const QByteArray &body) {
    const QJsonObject o = QJsonDocument::fromJson(body).object();
    QStringList names;
    for (const QJsonValue &t : o.value("tools").toArray())
        names << t.toObject().value("function").toObject().value("name").toString();
    for (const QJsonValue &m : o.value("messages").toArray())
        for (const QJsonValue &c : m.toObject().value("tool_calls").toArray())
            names << c.toObject().value("function").toObject().value("name").toString();
    return names;
}

// How a server that names its tool calls by none says so.
enum class Unnamed { ChatEmptyId, ChatNoId, ResponsesEmptyCallId, ResponsesNoCallId, AnthropicEmptyId, AnthropicNoId };

// Two parallel calls, get_weather {"city": "Paris"} and read_file {"path": "a.txt"}, from a server
// that gives them no id: a Chat one (`"id": ""` or none; Gemini's OpenAI-compatible endpoint, LM
// Studio, older llama.cpp) or a Responses one (`"call_id": ""` or none). With `sharedId`, the
// server of an `…EmptyId` kind gives both calls that one id instead (DeepSeek, GLM, Kimi).
QByteArray unnamedCalls(Unnamed how, const QString &sharedId = {}) {
    const QList<QPair<QString, QString>> calls{{"get_weather", "{\"city\": \"Paris\"}"},
                                               {"read_file", "{\"path\": \"a.txt\"}"}};
    if (how == Unnamed::ChatEmptyId || how == Unnamed::ChatNoId) {
        QByteArray sse = chatChunk(QJsonObject{{"role", "assistant"}, {"content", QJsonValue::Null}});
        for (int i = 0; i < calls.size(); ++i) {
            QJsonObject open{{"index", i},
                             {"type", "function"},
                             {"function", QJsonObject{{"name", calls[i].first}, {"arguments", ""}}}};
            if (how == Unnamed::ChatEmptyId)
                open.insert("id", sharedId);
            sse += chatChunk(QJsonObject{{"tool_calls", QJsonArray{open}}});
            QJsonObject more{{"index", i}, {"function", QJsonObject{{"arguments", calls[i].second}}}};
            if (how == Unnamed::ChatEmptyId)
                more.insert("id", sharedId); // LM Studio repeats it
            sse += chatChunk(QJsonObject{{"tool_calls", QJsonArray{more}}});
        }
        sse += chatChunk(QJsonObject{}, "tool_calls");
        return sse + "data: [DONE]\n\n";
    }
    const auto frame = [](const char *type, QJsonObject data) {
        data.insert("type", type);
        return QByteArray("event: ") + type + "\ndata: " + QJsonDocument(data).toJson(QJsonDocument::Compact) + "\n\n";
    };
    if (how == Unnamed::AnthropicEmptyId || how == Unnamed::AnthropicNoId) { // an Anthropic-compatible server
        QByteArray sse =
            frame("message_start",
                  {{"message", QJsonObject{{"id", "msg_u1"},
                                           {"type", "message"},
                                           {"role", "assistant"},
                                           {"model", "claude-a"},
                                           {"content", QJsonArray{}},
                                           {"usage", QJsonObject{{"input_tokens", 10}, {"output_tokens", 1}}}}}});
        for (int i = 0; i < calls.size(); ++i) {
            QJsonObject block{{"type", "tool_use"}, {"name", calls[i].first}, {"input", QJsonObject{}}};
            if (how == Unnamed::AnthropicEmptyId)
                block.insert("id", sharedId);
            sse += frame("content_block_start", {{"index", i}, {"content_block", block}});
            sse += frame("content_block_delta",
                         {{"index", i},
                          {"delta", QJsonObject{{"type", "input_json_delta"}, {"partial_json", calls[i].second}}}});
            sse += frame("content_block_stop", {{"index", i}});
        }
        sse += frame("message_delta", {{"delta", QJsonObject{{"stop_reason", "tool_use"}}},
                                       {"usage", QJsonObject{{"output_tokens", 20}}}});
        return sse + frame("message_stop", {});
    }
    int sequence = 0;
    const auto event = [&](const char *type, QJsonObject data) {
        data.insert("type", type);
        data.insert("sequence_number", sequence++);
        return QByteArray("event: ") + type + "\ndata: " + QJsonDocument(data).toJson(QJsonDocument::Compact) + "\n\n";
    };
    const QJsonObject response{
        {"id", "resp_u1"}, {"object", "response"}, {"model", "resp-d"}, {"status", "in_progress"}};
    QByteArray sse = event("response.created", QJsonObject{{"response", response}});
    QJsonArray output;
    for (int i = 0; i < calls.size(); ++i) {
        QJsonObject item{{"id", QStringLiteral("fc_u%1").arg(i)},
                         {"type", "function_call"},
                         {"name", calls[i].first},
                         {"arguments", ""},
                         {"status", "in_progress"}};
        if (how == Unnamed::ResponsesEmptyCallId)
            item.insert("call_id", sharedId);
        sse += event("response.output_item.added", QJsonObject{{"output_index", i}, {"item", item}});
        sse += event("response.function_call_arguments.delta",
                     QJsonObject{{"item_id", item["id"]}, {"output_index", i}, {"delta", calls[i].second}});
        item.insert("arguments", calls[i].second);
        item.insert("status", "completed");
        sse += event("response.output_item.done", QJsonObject{{"output_index", i}, {"item", item}});
        output.append(item);
    }
    QJsonObject completed = response;
    completed.insert("status", "completed");
    completed.insert("output", output);
    completed.insert("usage", QJsonObject{{"input_tokens", 10}, {"output_tokens", 20}, {"total_tokens", 30}});
    return sse + event("response.completed", QJsonObject{{"response", completed}});
}

// What each tool returns, for the client's next turn.
QString resultOf(const QString &name) {
    return name == QLatin1String("get_weather") ? QStringLiteral("sunny") : QStringLiteral("notes");
}

struct ClientCall {
    QString id;
    QString name;
    QJsonObject item; // as the client keeps it: a Responses output item, a pi toolCall, a Chat tool call
};

// The calls of a client's answer as its SDK keeps them; a call whose id the stream tells twice
// differently, or only in part, says so in its id.
QList<ClientCall> clientCalls(const QString &client, bool stream, const HttpResult &r) {
    QList<ClientCall> out;
    if (client == QLatin1String("responses")) {
        QHash<int, QString> added;
        for (const QJsonObject &o : ofType(r.body, "response.output_item.added"))
            added.insert(o["output_index"].toInt(), o["item"]["call_id"].toString());
        QJsonArray items;
        if (stream) {
            for (const QJsonObject &o : ofType(r.body, "response.output_item.done")) {
                QJsonObject item = o["item"].toObject();
                if (added.value(o["output_index"].toInt()) != item["call_id"].toString())
                    item.insert("call_id", "added " + added.value(o["output_index"].toInt()) + " != done " +
                                               item["call_id"].toString());
                items.append(item);
            }
            const QList<QJsonObject> completed = ofType(r.body, "response.completed");
            if (completed.isEmpty() || completed[0]["response"]["output"].toArray() != items)
                return {{"response.completed differs from the items", {}, {}}};
        } else {
            items = r.json().value("output").toArray();
        }
        for (const QJsonValue &v : items)
            if (v["type"].toString() == QLatin1String("function_call"))
                out.append({v["call_id"].toString(), v["name"].toString(), v.toObject()});
    } else if (client == QLatin1String("anthropic")) {
        const QJsonArray content =
            stream ? [&] {
                QJsonArray blocks;
                for (const QJsonObject &o : ofType(r.body, "content_block_start"))
                    blocks.append(o["content_block"]);
                return blocks;
            }()
                   : r.json().value("content").toArray();
        for (const QJsonValue &b : content)
            if (b["type"].toString() == QLatin1String("tool_use"))
                out.append({b["id"].toString(), b["name"].toString(), b.toObject()});
    } else if (client == QLatin1String("pi")) {
        const QJsonObject message = stream ? piDone(r.body) : r.json().value("message").toObject();
        for (const QJsonValue &c : piCalls(message))
            out.append({c["id"].toString(), c["name"].toString(), c.toObject()});
    } else if (stream) { // Chat: the openai SDK joins each call's fields across chunks
        QMap<int, QJsonObject> calls;
        for (const QJsonObject &o : sseObjects(r.body))
            for (const QJsonValue &c : o["choices"][0]["delta"]["tool_calls"].toArray()) {
                QJsonObject &call = calls[c["index"].toInt()];
                call.insert("type", "function");
                call.insert("id", call["id"].toString() + c["id"].toString());
                QJsonObject function = call["function"].toObject();
                function.insert("name", function["name"].toString() + c["function"]["name"].toString());
                function.insert("arguments", function["arguments"].toString() + c["function"]["arguments"].toString());
                call.insert("function", function);
            }
        for (const QJsonObject &c : calls)
            out.append({c["id"].toString(), c["function"]["name"].toString(), c});
    } else {
        for (const QJsonValue &c : r.json()["choices"][0]["message"]["tool_calls"].toArray())
            out.append({c["id"].toString(), c["function"]["name"].toString(), c.toObject()});
    }
    return out;
}

// The client's question, then its next turn: the answer's calls, and their results, the
// read_file one first (a client sends them as its tools finish), or in the calls' order.
QJsonObject nextTurn(const QString &client, const QString &model, const QList<ClientCall> &calls,
                     bool inCallOrder = false) {
    QList<ClientCall> finished = calls;
    if (!inCallOrder)
        std::reverse(finished.begin(), finished.end());
    if (calls.isEmpty())
        return client == QLatin1String("responses")   ? responsesBody(model, false)
               : client == QLatin1String("anthropic") ? GatewayFixture::anthropicBody(model, "weather?", false)
               : client == QLatin1String("pi")        ? piBody(model, false)
                                                      : GatewayFixture::openaiBody(model, "weather?", false);
    if (client == QLatin1String("responses")) {
        QJsonArray input{QJsonObject{{"role", "user"}, {"content", "weather?"}}};
        for (const ClientCall &c : calls)
            input.append(c.item);
        for (const ClientCall &c : finished)
            input.append(
                QJsonObject{{"type", "function_call_output"}, {"call_id", c.id}, {"output", resultOf(c.name)}});
        return {{"model", model}, {"input", input}};
    }
    if (client == QLatin1String("anthropic")) {
        QJsonArray uses, results;
        for (const ClientCall &c : calls) {
            QJsonObject use = c.item;
            use.insert("input", QJsonObject()); // what the stream's deltas said is not what is tested
            uses.append(use);
        }
        for (const ClientCall &c : finished)
            results.append(QJsonObject{{"type", "tool_result"}, {"tool_use_id", c.id}, {"content", resultOf(c.name)}});
        QJsonObject body = GatewayFixture::anthropicBody(model, "weather?", false);
        QJsonArray messages = body["messages"].toArray();
        messages.append(QJsonObject{{"role", "assistant"}, {"content", uses}});
        messages.append(QJsonObject{{"role", "user"}, {"content", results}});
        body.insert("messages", messages);
        return body;
    }
    if (client == QLatin1String("pi")) {
        QJsonObject body = piBody(model, false);
        QJsonObject context = body["context"].toObject();
        QJsonArray messages = context["messages"].toArray();
        QJsonArray content;
        for (const ClientCall &c : calls)
            content.append(c.item);
        messages.append(QJsonObject{{"role", "assistant"},
                                    {"content", content},
                                    {"api", "openai-completions"},
                                    {"provider", "pb"},
                                    {"model", "gpt-b"},
                                    {"stopReason", "toolUse"},
                                    {"timestamp", 0}});
        for (const ClientCall &c : finished)
            messages.append(
                QJsonObject{{"role", "toolResult"},
                            {"toolCallId", c.id},
                            {"toolName", c.name},
                            {"content", QJsonArray{QJsonObject{{"type", "text"}, {"text", resultOf(c.name)}}}},
                            {"isError", false},
                            {"timestamp", 0}});
        context.insert("messages", messages);
        body.insert("context", context);
        return body;
    }
    QJsonObject body = GatewayFixture::openaiBody(model, "weather?", false);
    QJsonArray messages = body["messages"].toArray();
    QJsonArray toolCalls;
    for (const ClientCall &c : calls)
        toolCalls.append(c.item);
    messages.append(QJsonObject{{"role", "assistant"}, {"content", QJsonValue::Null}, {"tool_calls", toolCalls}});
    for (const ClientCall &c : finished)
        messages.append(QJsonObject{{"role", "tool"}, {"tool_call_id", c.id}, {"content", resultOf(c.name)}});
    body.insert("messages", messages);
    return body;
}

QString pathOf(const QString &client) {
    return client == QLatin1String("responses")   ? QStringLiteral("/v1/responses")
           : client == QLatin1String("anthropic") ? QStringLiteral("/v1/messages")
           : client == QLatin1String("pi")        ? QStringLiteral("/v1/pi/stream")
                                                  : QStringLiteral("/v1/chat/completions");
}

// A tool result's text in any API's shape: a string, text parts, Gemini's {output}.
QString resultText(const QJsonValue &v) {
    if (v.isString())
        return v.toString();
    if (v.isObject())
        return v["output"].toString();
    QString text;
    for (const QJsonValue &part : v.toArray())
        text += part["text"].toString();
    return text;
}

// How the calls of the history an upstream got pair with their results, in the calls' order:
// "name=result" when exactly one result answers the call (by its id; Gemini: by position, under
// the call's name), else what is wrong.
QStringList pairsSent(const QString &api, const QByteArray &body) {
    const QJsonObject o = QJsonDocument::fromJson(body).object();
    QList<QPair<QString, QString>> calls;   // id, name
    QList<QPair<QString, QString>> results; // id, text
    if (api == QLatin1String("google-generative-ai")) {
        QStringList names;
        for (const QJsonValue &turn : o["contents"].toArray())
            for (const QJsonValue &part : turn["parts"].toArray()) {
                if (part.toObject().contains("functionCall"))
                    names << part["functionCall"]["name"].toString();
                if (part.toObject().contains("functionResponse")) {
                    const QString name = part["functionResponse"]["name"].toString();
                    const QString id = QString::number(results.size());
                    results.append({id, name + '=' + resultText(part["functionResponse"]["response"])});
                }
            }
        QStringList out;
        for (qsizetype i = 0; i < names.size(); ++i) {
            const QString answer = i < results.size() ? results[i].second : QStringLiteral("none");
            out << (answer.startsWith(names[i] + '=') ? answer : names[i] + QStringLiteral(" answered by ") + answer);
        }
        return out;
    }
    if (api == QLatin1String("anthropic-messages")) {
        for (const QJsonValue &m : o["messages"].toArray())
            for (const QJsonValue &b : m["content"].toArray()) {
                if (b["type"].toString() == QLatin1String("tool_use"))
                    calls.append({b["id"].toString(), b["name"].toString()});
                if (b["type"].toString() == QLatin1String("tool_result"))
                    results.append({b["tool_use_id"].toString(), resultText(b["content"])});
            }
    } else if (api == QLatin1String("openai-responses")) {
        for (const QJsonValue &item : o["input"].toArray()) {
            if (item["type"].toString() == QLatin1String("function_call"))
                calls.append({item["call_id"].toString(), item["name"].toString()});
            if (item["type"].toString() == QLatin1String("function_call_output"))
                results.append({item["call_id"].toString(), resultText(item["output"])});
        }
    } else {
        for (const QJsonValue &m : o["messages"].toArray()) {
            for (const QJsonValue &c : m["tool_calls"].toArray())
                calls.append({c["id"].toString(), c["function"]["name"].toString()});
            if (m["role"].toString() == QLatin1String("tool"))
                results.append({m["tool_call_id"].toString(), resultText(m["content"])});
        }
    }
    QStringList out;
    for (const auto &[id, name] : calls) {
        QStringList answers;
        for (const auto &[resultId, text] : results)
            if (resultId == id)
                answers << text;
        out << (id.isEmpty()          ? name + QStringLiteral(" has no id")
                : answers.size() == 1 ? name + '=' + answers[0]
                                      : name + QStringLiteral(" answered by [") + answers.join(',') + ']');
    }
    return out;
}

const std::pair<const char *, const char *> kUpstreams[] = {{"pa/claude-a", "anthropic-messages"},
                                                            {"pb/gpt-b", "openai-completions"},
                                                            {"pd/resp-d", "openai-responses"},
                                                            {"pe/gemini-e", "google-generative-ai"}};

} // namespace

Q_DECLARE_METATYPE(Unnamed)

class TestToolCallHandover : public QObject {
    Q_OBJECT

    GatewayFixture *m_gw = nullptr;

private Q_SLOTS:
    void init() {
        m_gw = new GatewayFixture;
        m_gw->start();
    }
    void cleanup() {
        delete m_gw;
        m_gw = nullptr;
    }

    void nonObjectArgumentsAreAnEmptyInput_data() {
        QTest::addColumn<QStringList>("fragments");
        QTest::newRow("array") << QStringList{"[\"Par", "is\", 2]"};
        QTest::newRow("string after white space") << QStringList{" ", "\"x\""};
        QTest::newRow("number") << QStringList{"42"};
    }
    // A Chat server's call whose arguments are JSON but not an object: the Anthropic SDK builds
    // `input` from the input_json_delta fragments, and Anthropic refuses a tool_use whose input
    // is not an object in the next turn. The stream says what the JSON answer says ({}), and a
    // call whose arguments are an object still streams as it comes.
    void nonObjectArgumentsAreAnEmptyInput() {
        QFETCH(QStringList, fragments);
        m_gw->openaiB.setRawReply(chatTwoCalls(fragments));

        const QJsonObject json =
            m_gw->post("/v1/messages", GatewayFixture::anthropicBody("pb/gpt-b", "weather?", false)).json();
        const QJsonArray content = json.value("content").toArray();
        QCOMPARE(content.size(), 2);
        QCOMPARE(content[0].toObject().value("input").toObject(), QJsonObject());
        QCOMPARE(content[1].toObject().value("input").toObject(), QJsonObject({{"city", "Rome"}}));

        const HttpResult r = m_gw->post("/v1/messages", GatewayFixture::anthropicBody("pb/gpt-b", "weather?", true));
        QCOMPARE(r.status, 200);
        // What the SDK builds: the start's input, replaced by the deltas' text when there is any.
        QList<QJsonValue> inputs;
        QStringList partial;
        for (const QJsonObject &o : sseObjects(r.body)) {
            const QString type = o.value("type").toString();
            if (type == QLatin1String("content_block_start")) {
                inputs.append(o.value("content_block").toObject().value("input"));
                partial.append(QString());
            } else if (type == QLatin1String("content_block_delta")) {
                partial.last() += o.value("delta").toObject().value("partial_json").toString();
            }
        }
        QCOMPARE(inputs.size(), 2);
        for (int i = 0; i < 2; ++i)
            if (!partial[i].isEmpty())
                inputs[i] = QJsonDocument::fromJson(partial[i].toUtf8()).object();
        QVERIFY2(partial[0].isEmpty(), qPrintable(partial[0])); // never a fragment of the non-object
        QCOMPARE(inputs[0].toObject(), QJsonObject());
        QVERIFY(inputs[0].isObject());
        QCOMPARE(inputs[1].toObject(), QJsonObject({{"city", "Rome"}}));
        QVERIFY2(r.body.contains("\"stop_reason\":\"tool_use\""), r.body.constData());

        // pi: its stream proxy builds the call from toolcall_delta too; the done message agrees.
        const HttpResult pi = m_gw->post("/v1/pi/stream", piBody("pb/gpt-b", true));
        QCOMPARE(pi.status, 200);
        QString piPartial;
        for (const QJsonObject &d : ofType(pi.body, "toolcall_delta"))
            if (d.value("contentIndex").toInt() == 0)
                piPartial += d.value("delta").toString();
        QVERIFY2(piPartial.isEmpty(), qPrintable(piPartial));
        const QJsonArray calls = piCalls(piDone(pi.body));
        QCOMPARE(calls.size(), 2);
        QCOMPARE(calls[0].toObject().value("arguments").toObject(), QJsonObject());
        QCOMPARE(calls[1].toObject().value("arguments").toObject(), QJsonObject({{"city", "Rome"}}));
    }

    // A call the upstream's max_tokens cut: Responses says the call item is `incomplete` (in
    // output_item.done and in the response) and the response incomplete/max_output_tokens, in
    // the stream and the JSON answer; pi gets the arguments as far as they arrived, as pi-ai's
    // own providers give them.
    void callCutByMaxTokens() {
        m_gw->anthropicA.setRawReply(kAnthropicCut);

        const HttpResult r = m_gw->post("/v1/responses", responsesBody("pa/claude-a", true));
        QCOMPARE(r.status, 200);
        const QList<QJsonObject> done = ofType(r.body, "response.output_item.done");
        QCOMPARE(done.size(), 1);
        const QJsonObject item = done[0].value("item").toObject();
        QCOMPARE(item.value("type").toString(), QStringLiteral("function_call"));
        QCOMPARE(item.value("status").toString(), QStringLiteral("incomplete"));
        QCOMPARE(item.value("arguments").toString(), QStringLiteral("{\"city\": \"Par"));
        const QList<QJsonObject> incomplete = ofType(r.body, "response.incomplete");
        QCOMPARE(incomplete.size(), 1);
        const QJsonObject response = incomplete[0].value("response").toObject();
        QCOMPARE(response.value("status").toString(), QStringLiteral("incomplete"));
        QCOMPARE(response.value("incomplete_details").toObject().value("reason").toString(),
                 QStringLiteral("max_output_tokens"));
        QCOMPARE(response.value("output").toArray()[0].toObject().value("status").toString(),
                 QStringLiteral("incomplete"));
        // Sequence numbers still rise by one: the held frame took its number when it went.
        int expected = 0;
        for (const QJsonObject &o : sseObjects(r.body))
            QCOMPARE(o.value("sequence_number").toInt(-1), expected++);

        const QJsonObject json = m_gw->post("/v1/responses", responsesBody("pa/claude-a", false)).json();
        QCOMPARE(json.value("status").toString(), QStringLiteral("incomplete"));
        QCOMPARE(json.value("output").toArray()[0].toObject().value("status").toString(), QStringLiteral("incomplete"));

        const QJsonObject cut{{"city", "Par"}};
        const HttpResult pi = m_gw->post("/v1/pi/stream", piBody("pa/claude-a", true));
        QCOMPARE(pi.status, 200);
        const QList<QJsonObject> end = ofType(pi.body, "toolcall_end");
        QCOMPARE(end.size(), 1);
        QCOMPARE(end[0].value("toolCall").toObject().value("arguments").toObject(), cut);
        const QJsonObject message = piDone(pi.body);
        QCOMPARE(message.value("stopReason").toString(), QStringLiteral("length"));
        QCOMPARE(piCalls(message)[0].toObject().value("arguments").toObject(), cut);
        const QJsonObject piJson = m_gw->post("/v1/pi/stream", piBody("pa/claude-a", false)).json();
        QCOMPARE(piCalls(piJson.value("message").toObject())[0].toObject().value("arguments").toObject(), cut);
    }

    // A message the cap cut is `incomplete` too, as the Responses API marks it (Codex tells a cut
    // answer from a finished one by it); the message before it, which was whole, stays `completed`.
    void textCutByMaxTokens() {
        m_gw->anthropicA.setRawReply(kAnthropicTextCut);
        const HttpResult r = m_gw->post("/v1/responses", responsesBody("pa/claude-a", true));
        QCOMPARE(r.status, 200);
        const QList<QJsonObject> done = ofType(r.body, "response.output_item.done");
        QCOMPARE(done.size(), 2);
        QCOMPARE(done[0].value("item").toObject().value("status").toString(), QStringLiteral("completed"));
        const QJsonObject cut = done[1].value("item").toObject();
        QCOMPARE(cut.value("type").toString(), QStringLiteral("message"));
        QCOMPARE(cut.value("status").toString(), QStringLiteral("incomplete"));
        QCOMPARE(cut.value("content").toArray()[0].toObject().value("text").toString(),
                 QStringLiteral("The capital of France is"));
        const QList<QJsonObject> incomplete = ofType(r.body, "response.incomplete");
        QCOMPARE(incomplete.size(), 1);
        const QJsonArray output = incomplete[0].value("response").toObject().value("output").toArray();
        QCOMPARE(output.size(), 2);
        QCOMPARE(output[0].toObject().value("status").toString(), QStringLiteral("completed"));
        QCOMPARE(output[1].toObject().value("status").toString(), QStringLiteral("incomplete"));
        int expected = 0;
        for (const QJsonObject &o : sseObjects(r.body))
            QCOMPARE(o.value("sequence_number").toInt(-1), expected++);

        const QJsonObject json = m_gw->post("/v1/responses", responsesBody("pa/claude-a", false)).json();
        QCOMPARE(json.value("status").toString(), QStringLiteral("incomplete"));
        const QJsonArray items = json.value("output").toArray();
        QCOMPARE(items.size(), 2);
        QCOMPARE(items[0].toObject().value("status").toString(), QStringLiteral("completed"));
        QCOMPARE(items[1].toObject().value("status").toString(), QStringLiteral("incomplete"));
    }

    // A whole call before a clean tool_use stop stays `completed`, and a call followed by more
    // content is `completed` at once, before the next item starts.
    void wholeCallsStayCompleted() {
        m_gw->openaiB.setRawReply(chatTwoCalls({"{\"city\": \"Paris\"}"}));
        const HttpResult r = m_gw->post("/v1/responses", responsesBody("pb/gpt-b", true));
        QCOMPARE(r.status, 200);
        const QList<QJsonObject> done = ofType(r.body, "response.output_item.done");
        QCOMPARE(done.size(), 2);
        for (const QJsonObject &d : done)
            QCOMPARE(d.value("item").toObject().value("status").toString(), QStringLiteral("completed"));
        QCOMPARE(ofType(r.body, "response.completed").size(), 1);
        const QJsonObject json = m_gw->post("/v1/responses", responsesBody("pb/gpt-b", false)).json();
        for (const QJsonValue &item : json.value("output").toArray())
            QCOMPARE(item.toObject().value("status").toString(), QStringLiteral("completed"));
    }

    // A tool name the client's API takes and the next candidate's refuses (pi takes `files.read`;
    // Messages takes 128 characters, Chat 64): after the first candidate's 503 the Chat server is
    // told a valid name (a 400 there would end the failover), the same in the definitions and the
    // history, and the same as on the request before; it calls the tool by that name, and the
    // client is told the call by the name it gave, streamed or whole.
    void toolNamesSurviveAFailoverToAnotherApi_data() {
        QTest::addColumn<QString>("client");
        QTest::addColumn<QString>("name");
        QTest::addColumn<bool>("stream");
        const QString longName = QStringLiteral("mcp__workspace_filesystem_server__") + QString(60, QLatin1Char('r'));
        for (bool stream : {true, false}) {
            QTest::addRow("pi, dotted, %s", stream ? "stream" : "json")
                << QStringLiteral("pi") << QStringLiteral("files.read") << stream;
            QTest::addRow("messages, 94 characters, %s", stream ? "stream" : "json")
                << QStringLiteral("messages") << longName << stream;
        }
    }
    void toolNamesSurviveAFailoverToAnotherApi() {
        QFETCH(QString, client);
        QFETCH(QString, name);
        QFETCH(bool, stream);
        const bool pi = client == QLatin1String("pi");
        const QJsonObject schema{{"type", "object"},
                                 {"properties", QJsonObject{{"path", QJsonObject{{"type", "string"}}}}}};
        // The request of a client that called the tool once and sends its result.
        const auto request = [&](const QString &model) {
            QJsonObject body;
            if (pi) {
                body = piBody(model, stream);
                QJsonObject context = body.value("context").toObject();
                QJsonArray messages = context.value("messages").toArray();
                messages.append(
                    QJsonObject{{"role", "assistant"},
                                {"content", QJsonArray{QJsonObject{{"type", "toolCall"},
                                                                   {"id", "call_0"},
                                                                   {"name", name},
                                                                   {"arguments", QJsonObject{{"path", "b.txt"}}}}}},
                                {"api", "openai-completions"},
                                {"provider", "pb"},
                                {"model", "gpt-b"},
                                {"stopReason", "toolUse"},
                                {"timestamp", 0}});
                messages.append(QJsonObject{{"role", "toolResult"},
                                            {"toolCallId", "call_0"},
                                            {"toolName", name},
                                            {"content", QJsonArray{QJsonObject{{"type", "text"}, {"text", "bee"}}}},
                                            {"isError", false},
                                            {"timestamp", 0}});
                context.insert("messages", messages);
                context.insert("tools", QJsonArray{QJsonObject{
                                            {"name", name}, {"description", "Reads a file"}, {"parameters", schema}}});
                body.insert("context", context);
            } else {
                body = GatewayFixture::anthropicBody(model, QStringLiteral("read b.txt"), stream);
                QJsonArray messages = body.value("messages").toArray();
                messages.append(
                    QJsonObject{{"role", "assistant"},
                                {"content", QJsonArray{QJsonObject{{"type", "tool_use"},
                                                                   {"id", "toolu_0"},
                                                                   {"name", name},
                                                                   {"input", QJsonObject{{"path", "b.txt"}}}}}}});
                messages.append(QJsonObject{
                    {"role", "user"},
                    {"content", QJsonArray{QJsonObject{
                                    {"type", "tool_result"}, {"tool_use_id", "toolu_0"}, {"content", "bee"}}}}});
                body.insert("messages", messages);
                body.insert("tools", QJsonArray{QJsonObject{
                                         {"name", name}, {"description", "Reads a file"}, {"input_schema", schema}}});
            }
            return body;
        };
        const QString path = pi ? QStringLiteral("/v1/pi/stream") : QStringLiteral("/v1/messages");

        // The Chat server's name for the tool, on a request that goes to it alone.
        QCOMPARE(m_gw->post(path, request(QStringLiteral("pb/gpt-b"))).status, 200);
        QCOMPARE(m_gw->openaiB.requests().size(), 1);
        const QStringList first = chatToolNames(m_gw->openaiB.requests().last().body);
        QCOMPARE(first.size(), 2);
        const QString alias = first[0];
        QCOMPARE(first[1], alias);
        const QRegularExpression valid(QStringLiteral("^[a-zA-Z0-9_-]{1,64}$"));
        QVERIFY2(valid.match(alias).hasMatch(), qPrintable(alias));
        if (pi)
            QCOMPARE(alias, QStringLiteral("files_read"));
        else
            QVERIFY2(alias.size() == 64 && alias.startsWith(name.left(55)), qPrintable(alias));

        // The failover: Messages answers 503, the Chat server calls the tool by the name it was told.
        demo::Fault unavailable;
        unavailable.kind = demo::Fault::Status;
        unavailable.status = 503;
        m_gw->anthropicA.setFault(unavailable);
        m_gw->openaiB.setRawReply(chatCallNamed(alias));
        const HttpResult r = m_gw->post(path, request(QStringLiteral("chain")));
        QCOMPARE(r.status, 200);
        QCOMPARE(m_gw->anthropicA.requests().size(), 1); // the 503
        QCOMPARE(m_gw->openaiB.requests().size(), 2);
        QCOMPARE(chatToolNames(m_gw->openaiB.requests().last().body), first);
        QVERIFY2(!r.body.contains(alias.toUtf8()), r.body.constData()); // the client never sees the alias

        QStringList called;
        if (pi) {
            const QJsonObject message = stream ? piDone(r.body) : r.json().value("message").toObject();
            for (const QJsonValue &c : piCalls(message))
                called << c.toObject().value("name").toString();
            if (stream) {
                const QList<QJsonObject> ends = ofType(r.body, "toolcall_end");
                QCOMPARE(ends.size(), 1);
                QCOMPARE(ends[0].value("toolCall").toObject().value("name").toString(), name);
            }
        } else if (stream) {
            for (const QJsonObject &o : ofType(r.body, "content_block_start"))
                if (o.value("content_block").toObject().value("type").toString() == QLatin1String("tool_use"))
                    called << o.value("content_block").toObject().value("name").toString();
        } else {
            for (const QJsonValue &b : r.json().value("content").toArray())
                if (b.toObject().value("type").toString() == QLatin1String("tool_use"))
                    called << b.toObject().value("name").toString();
        }
        QCOMPARE(called, QStringList{name});
    }

    // A Chat server that names every turn's calls call_0, call_1 (xAI's did): an Anthropic client
    // is never given an id its conversation already holds, nor one twice in an answer, because
    // Messages never does that and Claude Code loops when it happens (probe A2 2). The history it
    // sends back with the new ids goes up as it is, and the next turn's repeats get the next number.
    void repeatedCallIdsReachAnAnthropicClientAsNewOnes_data() {
        QTest::addColumn<bool>("stream");
        QTest::newRow("stream") << true;
        QTest::newRow("json") << false;
    }
    void repeatedCallIdsReachAnAnthropicClientAsNewOnes() {
        QFETCH(bool, stream);
        const QJsonObject function{{"name", "get_weather"}, {"arguments", "{}"}};
        const auto call = [&](int index, const char *id) {
            return QJsonObject{{"index", index}, {"id", id}, {"type", "function"}, {"function", function}};
        };
        QByteArray sse = chatChunk(QJsonObject{{"role", "assistant"}, {"content", QJsonValue::Null}});
        sse += chatChunk(QJsonObject{{"tool_calls", QJsonArray{call(0, "call_0")}}});
        sse += chatChunk(QJsonObject{{"tool_calls", QJsonArray{call(1, "call_1")}}});
        sse += chatChunk(QJsonObject{{"tool_calls", QJsonArray{call(2, "call_1")}}}); // twice in one answer
        sse += chatChunk(QJsonObject{}, "tool_calls");
        m_gw->openaiB.setRawReply(sse + "data: [DONE]\n\n");

        // The ids the client was given, in order.
        const auto idsOf = [&](const HttpResult &r) {
            QStringList ids;
            if (stream) {
                for (const QJsonObject &o : ofType(r.body, "content_block_start"))
                    if (o.value("content_block").toObject().value("type").toString() == QLatin1String("tool_use"))
                        ids << o.value("content_block").toObject().value("id").toString();
            } else {
                for (const QJsonValue &b : r.json().value("content").toArray())
                    if (b.toObject().value("type").toString() == QLatin1String("tool_use"))
                        ids << b.toObject().value("id").toString();
            }
            return ids;
        };
        QJsonObject body =
            GatewayFixture::anthropicBody(QStringLiteral("pb/gpt-b"), QStringLiteral("weather?"), stream);
        QJsonArray messages = body.value("messages").toArray();
        const auto addTurn = [&](const QStringList &ids) {
            QJsonArray uses, results;
            for (const QString &id : ids) {
                uses.append(
                    QJsonObject{{"type", "tool_use"}, {"id", id}, {"name", "get_weather"}, {"input", QJsonObject()}});
                results.append(QJsonObject{{"type", "tool_result"}, {"tool_use_id", id}, {"content", "sunny"}});
            }
            messages.append(QJsonObject{{"role", "assistant"}, {"content", uses}});
            messages.append(QJsonObject{{"role", "user"}, {"content", results}});
            body.insert("messages", messages);
        };

        HttpResult r = m_gw->post("/v1/messages", body);
        QCOMPARE(r.status, 200);
        QStringList first = idsOf(r);
        QCOMPARE(first, (QStringList{"call_0", "call_1", "call_1_2"}));

        addTurn(first);
        r = m_gw->post("/v1/messages", body);
        QCOMPARE(r.status, 200);
        const QStringList second = idsOf(r);
        // The answer's second call_1 comes from the decoder as call_1_2 (every client is told that),
        // which the history holds: call_1_2_2.
        QCOMPARE(second, (QStringList{"call_0_2", "call_1_3", "call_1_2_2"}));
        // The history went up with the ids the client was given, its results paired with them.
        const QJsonArray sent =
            QJsonDocument::fromJson(m_gw->openaiB.requests().last().body).object().value("messages").toArray();
        QStringList sentIds, resultIds;
        for (const QJsonValue &m : sent) {
            for (const QJsonValue &c : m.toObject().value("tool_calls").toArray())
                sentIds << c.toObject().value("id").toString();
            if (m.toObject().value("role").toString() == QLatin1String("tool"))
                resultIds << m.toObject().value("tool_call_id").toString();
        }
        QCOMPARE(sentIds, first);
        QCOMPARE(resultIds, first);

        addTurn(second);
        r = m_gw->post("/v1/messages", body);
        QCOMPARE(idsOf(r), (QStringList{"call_0_3", "call_1_4", "call_1_2_3"}));
    }

    // A server that names its calls by none (`"id": ""` or no id from an OpenAI-compatible Chat
    // server: Gemini's endpoint, LM Studio, older llama.cpp; `"call_id": ""` from a Responses one):
    // every client is told an id of its own for each call, in the stream and the JSON answer alike,
    // and its next turn, whichever API answers it, pairs each result with its call. Before, a
    // Responses or pi client's next turn was refused (`function_call needs call_id and name`), an
    // Anthropic client got `toolu_missing` twice and Gemini was handed the weather as read_file's
    // output, and Responses got `call_id: ""`, which OpenAI refuses (probe B2 1).
    void callsAServerNamedByNonePairInEveryNextTurn_data() {
        QTest::addColumn<Unnamed>("how");
        QTest::addColumn<QString>("client");
        QTest::addColumn<bool>("stream");
        const std::pair<Unnamed, const char *> servers[] = {{Unnamed::ChatEmptyId, "chat id \"\""},
                                                            {Unnamed::ChatNoId, "chat no id"},
                                                            {Unnamed::ResponsesEmptyCallId, "responses call_id \"\""},
                                                            {Unnamed::ResponsesNoCallId, "responses no call_id"},
                                                            {Unnamed::AnthropicEmptyId, "anthropic id \"\""},
                                                            {Unnamed::AnthropicNoId, "anthropic no id"}};
        for (const auto &[how, server] : servers)
            for (const char *client : {"responses", "anthropic", "pi", "chat"})
                for (bool stream : {true, false})
                    QTest::addRow("%s, %s client, %s", server, client, stream ? "stream" : "json")
                        << how << QString::fromLatin1(client) << stream;
    }
    void callsAServerNamedByNonePairInEveryNextTurn() {
        QFETCH(Unnamed, how);
        QFETCH(QString, client);
        QFETCH(bool, stream);
        const bool chatServer = how == Unnamed::ChatEmptyId || how == Unnamed::ChatNoId;
        const bool anthropicServer = how == Unnamed::AnthropicEmptyId || how == Unnamed::AnthropicNoId;
        demo::FakeUpstream &server = chatServer ? m_gw->openaiB : anthropicServer ? m_gw->anthropicA : m_gw->responsesD;
        server.setRawReply(unnamedCalls(how));
        const QString model = chatServer        ? QStringLiteral("pb/gpt-b")
                              : anthropicServer ? QStringLiteral("pa/claude-a")
                                                : QStringLiteral("pd/resp-d");
        QJsonObject first = nextTurn(client, model, {});
        first.insert("stream", stream);
        if (client == QLatin1String("chat") && stream)
            first.insert("stream_options", QJsonObject{{"include_usage", true}});
        const HttpResult r = m_gw->post(pathOf(client), first);
        QVERIFY2(r.status == 200, r.body.constData());

        const QList<ClientCall> calls = clientCalls(client, stream, r);
        QCOMPARE(calls.size(), 2);
        QCOMPARE(calls[0].name, QStringLiteral("get_weather"));
        QCOMPARE(calls[1].name, QStringLiteral("read_file"));
        const QRegularExpression valid(QStringLiteral("^call_[0-9a-f]{24}$")); // any API takes it
        for (const ClientCall &c : calls) {
            const QString callId = client == QLatin1String("pi") ? c.id.section('|', 0, 0) : c.id;
            QVERIFY2(valid.match(callId).hasMatch(), qPrintable(c.id));
        }
        QVERIFY2(calls[0].id != calls[1].id, qPrintable(calls[0].id));

        // The next turn, answered by each API in turn.
        server.setRawReply({});
        for (const auto &[upstream, api] : kUpstreams) {
            const HttpResult next = m_gw->post(pathOf(client), nextTurn(client, QString::fromLatin1(upstream), calls));
            QVERIFY2(next.status == 200, qPrintable(QString::fromLatin1(upstream) + ": " + next.body));
            demo::FakeUpstream &fake = QByteArray(upstream).startsWith("pa/")   ? m_gw->anthropicA
                                       : QByteArray(upstream).startsWith("pb/") ? m_gw->openaiB
                                       : QByteArray(upstream).startsWith("pd/") ? m_gw->responsesD
                                                                                : m_gw->googleE;
            QCOMPARE(pairsSent(QString::fromLatin1(api), fake.requests().last().body),
                     (QStringList{"get_weather=sunny", "read_file=notes"}));
        }
    }

    // DeepSeek, GLM (Chat) and Kimi's Anthropic-compatible endpoint give two parallel calls one id
    // ("call_0", "grep:3"), and so may a Responses shim in front of them. Every client is told the
    // second by an id of its own, in the stream and the JSON answer alike, and its next turn pairs
    // each result with its call whichever API answers. Before, a Chat, Responses or pi client was
    // told the one id twice, and its next turn reached an OpenAI server with two tool messages under
    // one tool_call_id, which it refuses (probe JV M4).
    void callsOfOneAnswerUnderOneIdPairInEveryNextTurn_data() {
        QTest::addColumn<Unnamed>("how");
        QTest::addColumn<QString>("sharedId");
        QTest::addColumn<QString>("client");
        QTest::addColumn<bool>("stream");
        const std::tuple<Unnamed, const char *, const char *> servers[] = {
            {Unnamed::ChatEmptyId, "call_0", "chat"},
            {Unnamed::AnthropicEmptyId, "grep:3", "anthropic"},
            {Unnamed::ResponsesEmptyCallId, "call_0", "responses"}};
        for (const auto &[how, id, server] : servers)
            for (const char *client : {"responses", "anthropic", "pi", "chat"})
                for (bool stream : {true, false})
                    QTest::addRow("%s server, %s client, %s", server, client, stream ? "stream" : "json")
                        << how << QString::fromLatin1(id) << QString::fromLatin1(client) << stream;
    }
    void callsOfOneAnswerUnderOneIdPairInEveryNextTurn() {
        QFETCH(Unnamed, how);
        QFETCH(QString, sharedId);
        QFETCH(QString, client);
        QFETCH(bool, stream);
        const bool chatServer = how == Unnamed::ChatEmptyId;
        const bool anthropicServer = how == Unnamed::AnthropicEmptyId;
        demo::FakeUpstream &server = chatServer ? m_gw->openaiB : anthropicServer ? m_gw->anthropicA : m_gw->responsesD;
        server.setRawReply(unnamedCalls(how, sharedId));
        const QString model = chatServer        ? QStringLiteral("pb/gpt-b")
                              : anthropicServer ? QStringLiteral("pa/claude-a")
                                                : QStringLiteral("pd/resp-d");
        QJsonObject first = nextTurn(client, model, {});
        first.insert("stream", stream);
        if (client == QLatin1String("chat") && stream)
            first.insert("stream_options", QJsonObject{{"include_usage", true}});
        const HttpResult r = m_gw->post(pathOf(client), first);
        QVERIFY2(r.status == 200, r.body.constData());

        const QList<ClientCall> calls = clientCalls(client, stream, r);
        QCOMPARE(calls.size(), 2);
        QCOMPARE(calls[0].name, QStringLiteral("get_weather"));
        QCOMPARE(calls[1].name, QStringLiteral("read_file"));
        QVERIFY2(calls[0].id != calls[1].id, qPrintable(calls[0].id));

        // The next turn, answered by each API in turn.
        server.setRawReply({});
        for (const auto &[upstream, api] : kUpstreams) {
            const HttpResult next = m_gw->post(pathOf(client), nextTurn(client, QString::fromLatin1(upstream), calls));
            QVERIFY2(next.status == 200, qPrintable(QString::fromLatin1(upstream) + ": " + next.body));
            demo::FakeUpstream &fake = QByteArray(upstream).startsWith("pa/")   ? m_gw->anthropicA
                                       : QByteArray(upstream).startsWith("pb/") ? m_gw->openaiB
                                       : QByteArray(upstream).startsWith("pd/") ? m_gw->responsesD
                                                                                : m_gw->googleE;
            QCOMPARE(pairsSent(QString::fromLatin1(api), fake.requests().last().body),
                     (QStringList{"get_weather=sunny", "read_file=notes"}));
        }
    }

    // A history that already holds one id twice (a client told so before, or one that talked to such
    // a server directly) and answers both calls in their order: each API is sent each call under an id
    // of its own and each result under its call's. To an OpenAI Chat server the two tool messages went
    // under one tool_call_id, which it refuses with a 400 that ends the failover (probe JV M4).
    void aHistoryWithOneIdTwicePairsOnEveryApi_data() {
        QTest::addColumn<QString>("client");
        QTest::addColumn<QString>("id");
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("api");
        for (const char *client : {"responses", "anthropic", "pi", "chat"})
            for (const auto &[model, api] : kUpstreams)
                QTest::addRow("%s client to %s", client, api)
                    << QString::fromLatin1(client)
                    << (QLatin1String(client) == QLatin1String("anthropic") ? QStringLiteral("grep:3")
                                                                            : QStringLiteral("call_0"))
                    << QString::fromLatin1(model) << QString::fromLatin1(api);
    }
    void aHistoryWithOneIdTwicePairsOnEveryApi() {
        QFETCH(QString, client);
        QFETCH(QString, id);
        QFETCH(QString, model);
        QFETCH(QString, api);
        const QList<QPair<QString, QJsonObject>> made{{"get_weather", QJsonObject{{"city", "Paris"}}},
                                                      {"read_file", QJsonObject{{"path", "a.txt"}}}};
        QList<ClientCall> calls;
        for (const auto &[name, arguments] : made) {
            const QString text = QString::fromUtf8(QJsonDocument(arguments).toJson(QJsonDocument::Compact));
            QJsonObject item;
            if (client == QLatin1String("responses"))
                item = {{"type", "function_call"}, {"call_id", id}, {"name", name}, {"arguments", text}};
            else if (client == QLatin1String("anthropic"))
                item = {{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", arguments}};
            else if (client == QLatin1String("pi"))
                item = {{"type", "toolCall"}, {"id", id}, {"name", name}, {"arguments", arguments}};
            else
                item = {
                    {"id", id}, {"type", "function"}, {"function", QJsonObject{{"name", name}, {"arguments", text}}}};
            calls.append({id, name, item});
        }
        const HttpResult r = m_gw->post(pathOf(client), nextTurn(client, model, calls, /*inCallOrder=*/true));
        QVERIFY2(r.status == 200, r.body.constData());
        demo::FakeUpstream &fake = model.startsWith("pa/")   ? m_gw->anthropicA
                                   : model.startsWith("pb/") ? m_gw->openaiB
                                   : model.startsWith("pd/") ? m_gw->responsesD
                                                             : m_gw->googleE;
        QCOMPARE(pairsSent(api, fake.requests().last().body), (QStringList{"get_weather=sunny", "read_file=notes"}));
    }

    // A Chat client's history that names its calls by none: the deprecated `functions` API
    // (`function_call`, `role: "function"`), or tool calls of a server that gave no id, kept as
    // they came. Each call goes to every API with an id, and each result with its call's: a
    // result pairs with the first unanswered call of its name in the turn before it. Responses got
    // `call_id: ""` before, which OpenAI refuses (probe B2 5).
    void aChatHistoryWithoutIdsPairsOnEveryApi_data() {
        QTest::addColumn<QString>("history");
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("api");
        for (const char *history : {"legacy functions", "tool calls without ids"})
            for (const auto &[model, api] : kUpstreams)
                QTest::addRow("%s to %s", history, api)
                    << QString::fromLatin1(history) << QString::fromLatin1(model) << QString::fromLatin1(api);
    }
    void aChatHistoryWithoutIdsPairsOnEveryApi() {
        QFETCH(QString, history);
        QFETCH(QString, model);
        QFETCH(QString, api);
        const bool legacy = history == QLatin1String("legacy functions");
        const auto call = [&](const char *name, const char *arguments) {
            const QJsonObject function{{"name", name}, {"arguments", arguments}};
            if (legacy)
                return QJsonObject{{"role", "assistant"}, {"content", QJsonValue::Null}, {"function_call", function}};
            return QJsonObject{
                {"role", "assistant"},
                {"content", QJsonValue::Null},
                {"tool_calls", QJsonArray{QJsonObject{{"id", ""}, {"type", "function"}, {"function", function}}}}};
        };
        const auto result = [&](const char *name, const char *text) {
            if (legacy)
                return QJsonObject{{"role", "function"}, {"name", name}, {"content", text}};
            return QJsonObject{{"role", "tool"}, {"tool_call_id", ""}, {"content", text}};
        };
        QJsonArray messages{QJsonObject{{"role", "user"}, {"content", "weather in Paris and Rome, then read a.txt"}},
                            call("get_weather", "{\"city\":\"Paris\"}"), result("get_weather", "sunny, 21C"),
                            call("get_weather", "{\"city\":\"Rome\"}"), result("get_weather", "rain, 15C")};
        // Then two parallel calls, answered in the calls' order (a Chat server ties them so).
        const QJsonObject function{{"name", "read_file"}, {"arguments", "{\"path\":\"a.txt\"}"}};
        const QJsonObject weather{{"name", "get_weather"}, {"arguments", "{\"city\":\"Oslo\"}"}};
        if (!legacy) {
            messages.append(QJsonObject{
                {"role", "assistant"},
                {"content", QJsonValue::Null},
                {"tool_calls", QJsonArray{QJsonObject{{"type", "function"}, {"function", weather}},
                                          QJsonObject{{"id", ""}, {"type", "function"}, {"function", function}}}}});
            messages.append(result("get_weather", "snow, -3C"));
            messages.append(result("read_file", "notes"));
        }
        const QJsonObject tool{
            {"name", "get_weather"},
            {"parameters",
             QJsonObject{{"type", "object"}, {"properties", QJsonObject{{"city", QJsonObject{{"type", "string"}}}}}}}};
        QJsonObject body{{"model", model}, {"messages", messages}};
        if (legacy)
            body.insert("functions", QJsonArray{tool});
        else
            body.insert("tools", QJsonArray{QJsonObject{{"type", "function"}, {"function", tool}}});
        const HttpResult r = m_gw->post("/v1/chat/completions", body);
        QVERIFY2(r.status == 200, r.body.constData());
        demo::FakeUpstream &fake = model.startsWith("pa/")   ? m_gw->anthropicA
                                   : model.startsWith("pb/") ? m_gw->openaiB
                                   : model.startsWith("pd/") ? m_gw->responsesD
                                                             : m_gw->googleE;
        const QByteArray sent = fake.requests().last().body;
        if (api == QLatin1String("openai-completions")) {
            // A same-API request goes as the client wrote it: that server gave the empty ids.
            QCOMPARE(QJsonDocument::fromJson(sent).object().value("messages").toArray(), messages);
            return;
        }
        QStringList expected{"get_weather=sunny, 21C", "get_weather=rain, 15C"};
        if (!legacy)
            expected << "get_weather=snow, -3C"
                     << "read_file=notes";
        QCOMPARE(pairsSent(api, sent), expected);
    }

    // A Responses history whose calls name no call_id (a server gave none and the client kept them, or
    // a gateway passed them on before it made ids up): it ended in this gateway's own 400, "function_call
    // needs call_id and name", so the conversation could not go on. Each call gets an id from its place
    // and each output the id of its call, for every upstream API.
    void aResponsesHistoryWithoutCallIdsPairsOnEveryApi_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("api");
        for (const auto &[model, api] : kUpstreams)
            if (QLatin1String(api) != QLatin1String("openai-responses")) // same API: sent as written
                QTest::addRow("%s", api) << QString::fromLatin1(model) << QString::fromLatin1(api);
    }
    void aResponsesHistoryWithoutCallIdsPairsOnEveryApi() {
        QFETCH(QString, model);
        QFETCH(QString, api);
        const auto call = [](const char *name, const char *city) {
            return QJsonObject{{"type", "function_call"},
                               {"call_id", ""},
                               {"name", name},
                               {"arguments", QStringLiteral("{\"city\":\"%1\"}").arg(QLatin1String(city))}};
        };
        const auto output = [](const char *text) {
            return QJsonObject{{"type", "function_call_output"}, {"call_id", ""}, {"output", text}};
        };
        const QJsonArray input{
            QJsonObject{{"role", "user"}, {"content", "weather in Paris, then time in Rome, Oslo's weather"}},
            call("get_weather", "Paris"),
            output("sunny, 21C"),
            call("get_time", "Rome"),
            call("get_weather", "Oslo"), // two parallel calls, answered in order
            output("10:00"),
            output("snow, -3C")};
        const auto tool = [](const char *name) {
            return QJsonObject{
                {"type", "function"},
                {"name", name},
                {"parameters", QJsonObject{{"type", "object"},
                                           {"properties", QJsonObject{{"city", QJsonObject{{"type", "string"}}}}}}}};
        };
        const QJsonObject body{
            {"model", model}, {"input", input}, {"tools", QJsonArray{tool("get_weather"), tool("get_time")}}};
        const HttpResult r = m_gw->post("/v1/responses", body);
        QVERIFY2(r.status == 200, r.body.constData());
        demo::FakeUpstream &fake = model.startsWith("pa/")   ? m_gw->anthropicA
                                   : model.startsWith("pb/") ? m_gw->openaiB
                                                             : m_gw->googleE;
        QCOMPARE(pairsSent(api, fake.requests().last().body),
                 (QStringList{"get_weather=sunny, 21C", "get_time=10:00", "get_weather=snow, -3C"}));
    }

    // A server that sends the same text as its error's code and message: a Chat client reads it
    // once, whether the error ends the attempt before any content (the gateway's own error) or
    // cuts a converted stream after it.
    void inBandErrorSaysEachThingOnce_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QByteArray>("sse");
        QTest::newRow("chat, before content")
            << QStringLiteral("pb/gpt-b")
            << QByteArray("data: {\"error\":{\"message\":\"upstream_overloaded\",\"type\":\"server_error\","
                          "\"code\":\"upstream_overloaded\"}}\n\n");
        QTest::newRow("responses, after content")
            << QStringLiteral("pd/resp-d")
            << QByteArray("event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,"
                          "\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[]}}\n\n"
                          "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\","
                          "\"sequence_number\":1,\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":"
                          "\"message\",\"role\":\"assistant\",\"content\":[]}}\n\n"
                          "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\","
                          "\"sequence_number\":2,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,"
                          "\"delta\":\"Half an ans\"}\n\n"
                          "event: error\ndata: {\"type\":\"error\",\"sequence_number\":3,\"code\":"
                          "\"upstream_overloaded\",\"message\":\"upstream_overloaded\"}\n\n");
    }
    void inBandErrorSaysEachThingOnce() {
        QFETCH(QString, model);
        QFETCH(QByteArray, sse);
        m_gw->openaiB.setRawReply(sse);
        m_gw->responsesD.setRawReply(sse);
        const HttpResult r = m_gw->post("/v1/chat/completions", GatewayFixture::openaiBody(model, "hi", true));
        QString message = r.json().value("error").toObject().value("message").toString();
        for (const QJsonObject &o : sseObjects(r.body))
            if (o.contains("error"))
                message = o.value("error").toObject().value("message").toString();
        QVERIFY2(message.contains(QLatin1String("stream error")), r.body.constData());
        QVERIFY2(message.count(QStringLiteral("upstream_overloaded")) == 1, qPrintable(message));
    }

    // A call whose arguments are longer than the decoders parse at its end (1.5 MB, over
    // CanonicalStreamBuilder::kMaxParsedArgumentsChars): its text reaches a Chat and a Responses
    // client as it came, and an Anthropic and a pi client get it as the object it is, streamed
    // or whole. (One 60 MB call cost 0.97 GB and a 14 s stall of the engine thread while it was
    // parsed and copied at its end: docs/performance.md.)
    void aCallTooLongToParseAtItsEndReachesEveryClientWhole() {
        QString text;
        while (text.size() < 1536 * 1024)
            text += QStringLiteral("line %1: \"quoted\", caf\u00e9, a\\backslash\n").arg(text.size());
        const QJsonObject arguments{{"path", "notes.txt"}, {"content", text}, {"lines", 12345}};
        const QString argumentsText = QString::fromUtf8(QJsonDocument(arguments).toJson(QJsonDocument::Compact));
        QVERIFY(argumentsText.size() > 1024 * 1024);
        QByteArray sse = chatChunk(QJsonObject{{"role", "assistant"}, {"content", QJsonValue::Null}});
        sse += chatChunk(callDelta(0, QString(), "call_long"));
        for (qsizetype at = 0; at < argumentsText.size(); at += 16 * 1024)
            sse += chatChunk(callDelta(0, argumentsText.mid(at, 16 * 1024)));
        sse += chatChunk(callDelta(1, QString(), "call_short"));
        sse += chatChunk(callDelta(1, "{\"city\": \"Rome\"}"));
        sse += chatChunk(QJsonObject{}, "tool_calls");
        m_gw->openaiB.setRawReply(sse + "data: [DONE]\n\n");

        const HttpResult chat =
            m_gw->post("/v1/chat/completions", GatewayFixture::openaiBody("pb/gpt-b", "write it", false), {}, 60000);
        QCOMPARE(chat.status, 200);
        const QJsonArray chatCalls = chat.json()["choices"][0]["message"]["tool_calls"].toArray();
        QCOMPARE(chatCalls.size(), 2);
        QVERIFY(chatCalls[0]["function"]["arguments"].toString() == argumentsText); // the text as it came
        QCOMPARE(chatCalls[1]["function"]["arguments"].toString(), QStringLiteral("{\"city\": \"Rome\"}"));

        const HttpResult anthropic =
            m_gw->post("/v1/messages", GatewayFixture::anthropicBody("pb/gpt-b", "write it", false), {}, 60000);
        QCOMPARE(anthropic.status, 200);
        const QJsonArray content = anthropic.json().value("content").toArray();
        QCOMPARE(content.size(), 2);
        QVERIFY(content[0]["input"].toObject() == arguments);
        QCOMPARE(content[1]["input"].toObject(), QJsonObject({{"city", "Rome"}}));

        const HttpResult responses = m_gw->post("/v1/responses", responsesBody("pb/gpt-b", false), {}, 60000);
        QCOMPARE(responses.status, 200);
        QStringList responsesArguments;
        for (const QJsonValue &item : responses.json().value("output").toArray())
            if (item["type"].toString() == QLatin1String("function_call"))
                responsesArguments.append(item["arguments"].toString());
        QCOMPARE(responsesArguments.size(), 2);
        QVERIFY(QJsonDocument::fromJson(responsesArguments[0].toUtf8()).object() == arguments);

        const HttpResult streamed =
            m_gw->post("/v1/messages", GatewayFixture::anthropicBody("pb/gpt-b", "write it", true), {}, 60000);
        QCOMPARE(streamed.status, 200);
        QString partial;
        for (const QJsonObject &o : ofType(streamed.body, "content_block_delta"))
            if (o.value("index").toInt() == 0)
                partial += o["delta"]["partial_json"].toString();
        QVERIFY(QJsonDocument::fromJson(partial.toUtf8()).object() == arguments);

        const HttpResult pi = m_gw->post("/v1/pi/stream", piBody("pb/gpt-b", true), {}, 60000);
        QCOMPARE(pi.status, 200);
        const QJsonArray calls = piCalls(piDone(pi.body));
        QCOMPARE(calls.size(), 2);
        QVERIFY(calls[0].toObject().value("arguments").toObject() == arguments);
    }
};

QTEST_GUILESS_MAIN(TestToolCallHandover)
#include "test_tool_call_handover.moc"
