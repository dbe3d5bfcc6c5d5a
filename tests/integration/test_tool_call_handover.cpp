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

} // namespace

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
        QCOMPARE(second, (QStringList{"call_0_2", "call_1_3", "call_1_4"}));
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
        QCOMPARE(idsOf(r), (QStringList{"call_0_3", "call_1_5", "call_1_6"}));
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
