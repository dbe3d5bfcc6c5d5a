#include "core/formats/openai_responses_codec.h"
#include "core/wire/reasoning_item.h"
#include "wire_fixtures.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QtTest>

using namespace sw::model;
using namespace sw::formats;
using sw::test::sampleAssistantStream;
namespace wire = sw::wire;

namespace {
EncodeInfo info() {
    EncodeInfo i;
    i.responseId = QStringLiteral("resp_sw1");
    i.model = QStringLiteral("sonnet");
    i.createdSecs = 1764400000;
    return i;
}
QJsonObject json(const QByteArray &b) {
    return QJsonDocument::fromJson(b).object();
}
struct Frame {
    QString event;
    QJsonObject data;
};
QList<Frame> frames(const QByteArray &sse) {
    QList<Frame> out;
    for (const auto &e : sw::test::splitSse(sse))
        out << Frame{QString::fromUtf8(e.event), json(e.data)};
    return out;
}
} // namespace

class TestOpenAIResponsesCodec : public QObject {
    Q_OBJECT
private slots:
    void anotherApisLongCallIdFitsResponses();
    void decodesItemsInstructionsToolsAndReasoning();
    void decodesStringInput();
    void outputsAreNamedByTheLatestCallOfTheirId();
    void decodeRejectsBadBodies_data();
    void decodeRejectsBadBodies();
    void streamFollowsTheReferenceEventOrder();
    void failureIsErrorThenResponseFailedNeverCompleted();
    void aFailureAfterPassthroughNamesTheUpstreamsResponse();
    void lengthEndsWithResponseIncomplete();
    void nonStreamingResponseObject();
    void reasoningSignatureSurvivesOnlyAsResponsesItem();
    void customToolCallsGoBackAsCustomItems();
    void aCutCustomCallsInputIsItsTextSoFar();
};

void TestOpenAIResponsesCodec::decodesItemsInstructionsToolsAndReasoning() {
    const QByteArray body = R"({
      "model": "gpt-5", "instructions": "Be brief.", "stream": true, "max_output_tokens": 500,
      "reasoning": {"effort": "high", "summary": "auto"}, "store": false, "include": ["reasoning.encrypted_content"],
      "tools": [{"type": "function", "name": "get_weather", "description": "Weather", "parameters": {"type": "object"}},
                {"type": "web_search"}],
      "tool_choice": {"type": "function", "name": "get_weather"},
      "input": [
        {"role": "developer", "content": "Use metric units."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather?"},
          {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Need data."}], "encrypted_content": "gAAA"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": "{\"location\":\"Paris\"}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}
      ]})";
    GatewayError err;
    const auto req = OpenAIResponsesCodec().decode(body, &err);
    QVERIFY2(req, qPrintable(err.message));
    QCOMPARE(req->model, QStringLiteral("gpt-5"));
    QVERIFY(req->stream);
    QCOMPARE(req->context.systemPrompt, QStringLiteral("Be brief.\n\nUse metric units."));
    QCOMPARE(req->options.maxTokens, std::optional<int>(500));
    QCOMPARE(req->options.reasoning, QStringLiteral("high"));
    QCOMPARE(req->options.toolChoice, QStringLiteral("get_weather"));
    QCOMPARE(req->context.tools.size(), 1); // built-in tools stay in raw for passthrough
    const auto &m = req->context.messages;
    QCOMPARE(m.size(), 3);
    QCOMPARE(m[0].role, Role::User);
    QCOMPARE(m[0].content[1].type, BlockType::Image);
    QCOMPARE(m[0].content[1].mimeType, QStringLiteral("image/png"));
    // reasoning + message + function_call: one assistant turn, as the Responses API produced it.
    QCOMPARE(m[1].role, Role::Assistant);
    QCOMPARE(m[1].api, QStringLiteral("openai-responses"));
    QCOMPARE(m[1].content.size(), 3);
    QCOMPARE(m[1].content[0].type, BlockType::Thinking);
    QCOMPARE(m[1].content[0].text, QStringLiteral("Need data."));
    QCOMPARE(json(m[1].content[0].signature.toUtf8()).value("encrypted_content").toString(), QStringLiteral("gAAA"));
    QCOMPARE(m[1].content[2].toolCallId, QStringLiteral("call_1"));
    QCOMPARE(m[1].content[2].arguments.value("location").toString(), QStringLiteral("Paris"));
    QCOMPARE(m[2].role, Role::ToolResult);
    QCOMPARE(m[2].toolName, QStringLiteral("get_weather"));
    QCOMPARE(m[2].content[0].text, QStringLiteral("sunny"));
}

// Each output is named by the latest call of its id, of any turn; one whose call the history does
// not hold (previous_response_id keeps it on the server) has no name. Each output searched the
// history back for its call: 99 000 such outputs held the engine 36 s (probe Z6 F1); one lookup now.
void TestOpenAIResponsesCodec::outputsAreNamedByTheLatestCallOfTheirId() {
    constexpr int kCalls = 8000;
    QJsonArray input{
        QJsonObject{{"type", "function_call"}, {"call_id", "call_1"}, {"name", "first"}, {"arguments", "{}"}},
        QJsonObject{{"type", "function_call_output"}, {"call_id", "call_1"}, {"output", "a"}},
        QJsonObject{{"type", "function_call"}, {"call_id", "call_1"}, {"name", "again"}, {"arguments", "{}"}},
        QJsonObject{{"type", "function_call_output"}, {"call_id", "call_1"}, {"output", "b"}}};
    for (int i = 0; i < kCalls; ++i)
        input.append(QJsonObject{{"type", "function_call"},
                                 {"call_id", QStringLiteral("call_p%1").arg(i)},
                                 {"name", QStringLiteral("tool_%1").arg(i)},
                                 {"arguments", "{}"}});
    for (int i = 0; i < kCalls; ++i) {
        input.append(QJsonObject{
            {"type", "function_call_output"}, {"call_id", QStringLiteral("call_p%1").arg(i)}, {"output", "ok"}});
        input.append(QJsonObject{
            {"type", "function_call_output"}, {"call_id", QStringLiteral("call_stored%1").arg(i)}, {"output", "ok"}});
    }
    const QJsonObject body{{"model", "m"}, {"previous_response_id", "resp_1"}, {"input", input}};
    GatewayError err;
    const auto req = OpenAIResponsesCodec().decode(QJsonDocument(body).toJson(QJsonDocument::Compact), &err);
    QVERIFY2(req, qPrintable(err.message));
    const auto &m = req->context.messages;
    QCOMPARE(m.size(), 4 + 1 + 2 * kCalls);
    QCOMPARE(m[1].toolName, QStringLiteral("first"));
    QCOMPARE(m[3].toolName, QStringLiteral("again"));
    QCOMPARE(m[4].content.size(), kCalls); // the parallel calls: one turn
    for (int i = 0; i < kCalls; ++i) {
        const Message &answered = m[5 + 2 * i];
        QCOMPARE(answered.toolCallId, QStringLiteral("call_p%1").arg(i));
        QCOMPARE(answered.toolName, QStringLiteral("tool_%1").arg(i));
        QVERIFY(m[6 + 2 * i].toolName.isEmpty());
    }
}

void TestOpenAIResponsesCodec::decodesStringInput() {
    const auto req = OpenAIResponsesCodec().decode(R"({"model":"m","input":"hi"})", nullptr);
    QVERIFY(req);
    QVERIFY(!req->stream);
    QCOMPARE(req->context.messages.size(), 1);
    QCOMPARE(req->context.messages[0].content[0].text, QStringLiteral("hi"));
}

void TestOpenAIResponsesCodec::decodeRejectsBadBodies_data() {
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<QString>("field");
    QTest::newRow("not json") << QByteArray("{\"model\":") << "JSON";
    QTest::newRow("no model") << QByteArray(R"({"input":"hi"})") << "model";
    QTest::newRow("input number") << QByteArray(R"({"model":"m","input":3})") << "input";
    // A call without a call_id gets one from its place (UnnamedCalls); one without a name, or an output
    // that names no call when none is unanswered, is still refused.
    QTest::newRow("call without name") << QByteArray(
                                              R"({"model":"m","input":[{"type":"function_call","call_id":"c1"}]})")
                                       << "input[0]";
    QTest::newRow("output of no call") << QByteArray(
                                              R"({"model":"m","input":[{"type":"function_call_output","output":"x"}]})")
                                       << "input[0]";
    QTest::newRow("stream string") << QByteArray(R"({"model":"m","input":"hi","stream":"yes"})") << "stream";
}

void TestOpenAIResponsesCodec::decodeRejectsBadBodies() {
    QFETCH(QByteArray, body);
    QFETCH(QString, field);
    GatewayError err;
    QVERIFY(!OpenAIResponsesCodec().decode(body, &err));
    QCOMPARE(err.status, 400);
    QVERIFY2(err.message.contains(field), qPrintable(err.message));
    const QJsonObject e = json(OpenAIResponsesCodec().encodeError(err)).value("error").toObject();
    QCOMPARE(e.value("type").toString(), QStringLiteral("invalid_request_error"));
    QCOMPARE(e.value("message").toString(), err.message);
}

void TestOpenAIResponsesCodec::streamFollowsTheReferenceEventOrder() {
    auto encoder = OpenAIResponsesCodec().makeStreamEncoder(info());
    QByteArray sse;
    for (const auto &e : sampleAssistantStream())
        sse += encoder->encode(e);
    const QList<Frame> f = frames(sse);
    QStringList names;
    for (int i = 0; i < f.size(); ++i) {
        names << f[i].event;
        QCOMPARE(f[i].data.value("type").toString(), f[i].event);
        QCOMPARE(f[i].data.value("sequence_number").toInt(-1), i); // 0, 1, 2, ... without gaps
    }
    // The order of the public Responses streaming reference: reasoning item, message item, function call.
    const QStringList expected{"response.created",
                               "response.in_progress",
                               "response.output_item.added",
                               "response.reasoning_summary_part.added",
                               "response.reasoning_summary_text.delta",
                               "response.reasoning_summary_text.done",
                               "response.reasoning_summary_part.done",
                               "response.output_item.done",
                               "response.output_item.added",
                               "response.content_part.added",
                               "response.output_text.delta",
                               "response.output_text.delta",
                               "response.output_text.done",
                               "response.content_part.done",
                               "response.output_item.done",
                               "response.output_item.added",
                               "response.function_call_arguments.delta",
                               "response.function_call_arguments.delta",
                               "response.function_call_arguments.done",
                               "response.output_item.done",
                               "response.completed"};
    QCOMPARE(names, expected);
    QCOMPARE(f[2].data.value("item").toObject().value("type").toString(), QStringLiteral("reasoning"));
    QCOMPARE(f[10].data.value("delta").toString(), QStringLiteral("Checking "));
    QCOMPARE(f[10].data.value("output_index").toInt(), 1);
    QCOMPARE(f[12].data.value("text").toString(), QStringLiteral("Checking now."));
    const QJsonObject call = f[19].data.value("item").toObject();
    QCOMPARE(call.value("call_id").toString(), QStringLiteral("call_1"));
    QCOMPARE(call.value("name").toString(), QStringLiteral("get_weather"));
    QCOMPARE(call.value("arguments").toString(), QStringLiteral("{\"location\":\"Paris\"}"));
    const QJsonObject done = f.last().data.value("response").toObject();
    QCOMPARE(done.value("status").toString(), QStringLiteral("completed"));
    QCOMPARE(done.value("id").toString(), QStringLiteral("resp_sw1"));
    QCOMPARE(done.value("output").toArray().size(), 3);
    const QJsonObject usage = done.value("usage").toObject();
    QCOMPARE(usage.value("input_tokens").toInt(), 472 + 2048); // Responses counts cached input in input_tokens
    QCOMPARE(usage.value("input_tokens_details").toObject().value("cached_tokens").toInt(), 2048);
    QCOMPARE(usage.value("output_tokens").toInt(), 89);
    QCOMPARE(usage.value("total_tokens").toInt(), 472 + 2048 + 89);
}

void TestOpenAIResponsesCodec::failureIsErrorThenResponseFailedNeverCompleted() {
    auto encoder = OpenAIResponsesCodec().makeStreamEncoder(info());
    QByteArray sse;
    const auto events = sampleAssistantStream();
    for (int i = 0; i < 6; ++i)
        sse += encoder->encode(events[i]);
    StreamEvent error = sw::test::makeEvent(EventType::Error);
    error.errorMessage = QStringLiteral("Overloaded");
    error.errorStatus = 529;
    sse += encoder->encode(error);
    sse += encoder->encode(events.last()); // nothing may follow the failure
    const QList<Frame> f = frames(sse);
    QCOMPARE(f[f.size() - 2].event, QStringLiteral("error"));
    QCOMPARE(f[f.size() - 2].data.value("message").toString(), QStringLiteral("Overloaded"));
    QCOMPARE(f.last().event, QStringLiteral("response.failed"));
    QCOMPARE(f.last().data.value("response").toObject().value("status").toString(), QStringLiteral("failed"));
    QVERIFY(!sse.contains("response.completed"));
    QCOMPARE(f.last().data.value("sequence_number").toInt(), f.size() - 1);
}

void TestOpenAIResponsesCodec::aFailureAfterPassthroughNamesTheUpstreamsResponse() {
    // The upstream's frames went out as they were; the gateway's response.failed after a cut
    // continues that response (its id, the next sequence number), whether the upstream writes
    // compact JSON or puts a space after each colon.
    for (
        const QByteArray &created :
        {QByteArray(
             R"({"type":"response.created","sequence_number":0,"response":{"id":"resp_up1","status":"in_progress"}})"),
         QByteArray(
             R"({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_up1", "status": "in_progress"}})")}) {
        auto encoder = OpenAIResponsesCodec().makeStreamEncoder(info());
        encoder->followPassthrough("event: response.created\ndata: " + created + "\n\n");
        const QByteArray sse = encoder->encodeError(
            sw::model::GatewayError::make(502, sw::model::ErrorCategory::ServerError, QStringLiteral("cut")));
        const QList<Frame> f = frames(sse);
        QCOMPARE(f.last().event, QStringLiteral("response.failed"));
        QCOMPARE(f.last().data.value("response").toObject().value("id").toString(), QStringLiteral("resp_up1"));
        QVERIFY2(!sse.contains("response.created"), sse.constData());
        QCOMPARE(f.first().data.value("sequence_number").toInt(), 1);
    }
}

void TestOpenAIResponsesCodec::lengthEndsWithResponseIncomplete() {
    auto encoder = OpenAIResponsesCodec().makeStreamEncoder(info());
    StreamEvent done = sw::test::makeEvent(EventType::Done);
    done.reason = StopReason::Length;
    QByteArray sse = encoder->encode(sw::test::makeEvent(EventType::Start));
    sse += encoder->encode(done);
    const QList<Frame> f = frames(sse);
    QCOMPARE(f.last().event, QStringLiteral("response.incomplete"));
    QCOMPARE(
        f.last().data.value("response").toObject().value("incomplete_details").toObject().value("reason").toString(),
        QStringLiteral("max_output_tokens"));
}

void TestOpenAIResponsesCodec::nonStreamingResponseObject() {
    AssistantMessage m;
    m.content << ContentBlock::makeText(QStringLiteral("Hi."));
    ContentBlock call;
    call.type = BlockType::ToolCall;
    call.toolCallId = QStringLiteral("call_9");
    call.toolName = QStringLiteral("f");
    call.arguments = QJsonObject{{"a", 1}};
    m.content << call;
    m.stopReason = StopReason::ToolUse;
    m.usage.input = 10;
    m.usage.output = 5;
    m.usage.reasoning = 2; // a Chat or Gemini upstream's reasoning count (it read 0 before)
    const QJsonObject r = json(OpenAIResponsesCodec().encodeResponse(m, info()));
    QCOMPARE(r.value("object").toString(), QStringLiteral("response"));
    QCOMPARE(r.value("status").toString(), QStringLiteral("completed"));
    QCOMPARE(r.value("output_text").toString(), QStringLiteral("Hi."));
    const QJsonArray out = r.value("output").toArray();
    QCOMPARE(out.size(), 2);
    QCOMPARE(out[0].toObject().value("content").toArray()[0].toObject().value("type").toString(),
             QStringLiteral("output_text"));
    QCOMPARE(out[1].toObject().value("arguments").toString(), QStringLiteral("{\"a\":1}"));
    QCOMPARE(r.value("usage").toObject().value("total_tokens").toInt(), 15);
    QCOMPARE(r.value("usage").toObject().value("output_tokens_details").toObject().value("reasoning_tokens").toInt(),
             2);
}

void TestOpenAIResponsesCodec::reasoningSignatureSurvivesOnlyAsResponsesItem() {
    ContentBlock fromAnthropic;
    fromAnthropic.type = BlockType::Thinking;
    fromAnthropic.text = QStringLiteral("hm");
    fromAnthropic.signature = QStringLiteral("sig-abc");
    QVERIFY(!wire::responsesReasoningItem(fromAnthropic, QStringLiteral("rs_x")).contains("encrypted_content"));
    ContentBlock fromResponses = fromAnthropic;
    fromResponses.signature =
        QStringLiteral(R"({"type":"reasoning","id":"rs_7","summary":[],"encrypted_content":"gAAA"})");
    const QJsonObject item = wire::responsesReasoningItem(fromResponses, QStringLiteral("rs_x"));
    QCOMPARE(item.value("id").toString(), QStringLiteral("rs_7"));
    QCOMPARE(item.value("encrypted_content").toString(), QStringLiteral("gAAA"));
}

void TestOpenAIResponsesCodec::customToolCallsGoBackAsCustomItems() {
    // Codex declared apply_patch as a custom tool; another API answered with a function
    // call whose one argument is the patch. Codex must get its own custom_tool_call item.
    const QByteArray body = R"({"model":"m","input":[
        {"type":"message","role":"user","content":"fix it"},
        {"type":"custom_tool_call","id":"ctc_1","call_id":"call_1","name":"apply_patch","input":"*** Begin Patch\n*** End Patch\n"},
        {"type":"custom_tool_call_output","call_id":"call_1","output":"Done!"}],
      "tools":[{"type":"custom","name":"apply_patch","description":"Edit files.",
                "format":{"type":"grammar","syntax":"lark","definition":"start: \"*** Begin Patch\""}}]})";
    GatewayError error;
    const auto req = OpenAIResponsesCodec().decode(body, &error);
    QVERIFY(req);
    QCOMPARE(req->customToolNames(), QStringList{"apply_patch"});
    QCOMPARE(req->context.tools[0].parameters, customToolParameters());
    QVERIFY(customToolDescription(req->context.tools[0]).contains(QLatin1String("lark grammar")));
    const ContentBlock call = req->context.messages[1].content[0];
    QVERIFY(call.custom);
    QCOMPARE(call.arguments.value("input").toString(), QStringLiteral("*** Begin Patch\n*** End Patch\n"));
    QCOMPARE(req->context.messages[2].role, Role::ToolResult);
    QCOMPARE(req->context.messages[2].toolName, QStringLiteral("apply_patch"));

    EncodeInfo i = info();
    i.upstreamApi = QStringLiteral("anthropic-messages");
    i.customTools = req->customToolNames();
    ContentBlock answer;
    answer.type = BlockType::ToolCall;
    answer.toolCallId = QStringLiteral("toolu_01");
    answer.toolName = QStringLiteral("apply_patch");
    const QString patch = QStringLiteral("*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n");
    const QString args = QString::fromUtf8(QJsonDocument(QJsonObject{{"input", patch}}).toJson(QJsonDocument::Compact));

    auto encoder = OpenAIResponsesCodec().makeStreamEncoder(i);
    QByteArray sse;
    StreamEvent e;
    e.type = EventType::Start;
    sse += encoder->encode(e);
    e.type = EventType::ToolCallStart;
    e.contentIndex = 0;
    e.block = answer;
    sse += encoder->encode(e);
    for (const QString &piece : {args.left(10), args.mid(10)}) { // the JSON streams in pieces
        e.type = EventType::ToolCallDelta;
        e.delta = piece;
        sse += encoder->encode(e);
    }
    e.type = EventType::ToolCallEnd;
    e.delta.clear();
    sse += encoder->encode(e);
    e.type = EventType::Done;
    e.reason = StopReason::ToolUse;
    sse += encoder->encode(e);
    QStringList events;
    QJsonObject done;
    for (const Frame &f : frames(sse)) {
        events << f.event;
        if (f.event == QLatin1String("response.custom_tool_call_input.done"))
            QCOMPARE(f.data.value("input").toString(), patch);
        if (f.event == QLatin1String("response.completed"))
            done = f.data.value("response").toObject().value("output").toArray()[0].toObject();
    }
    QVERIFY2(!events.contains(QLatin1String("response.function_call_arguments.delta")), qPrintable(events.join(',')));
    QVERIFY(events.contains(QLatin1String("response.custom_tool_call_input.delta")));
    QCOMPARE(done.value("type").toString(), QStringLiteral("custom_tool_call"));
    QCOMPARE(done.value("call_id").toString(), QStringLiteral("toolu_01"));
    QCOMPARE(done.value("input").toString(), patch);

    AssistantMessage m;
    answer.argumentsJson = args;
    m.content << answer;
    m.stopReason = StopReason::ToolUse;
    const QJsonObject item = json(OpenAIResponsesCodec().encodeResponse(m, i)).value("output").toArray()[0].toObject();
    QCOMPARE(item.value("type").toString(), QStringLiteral("custom_tool_call"));
    QCOMPARE(item.value("input").toString(), patch);
}

void TestOpenAIResponsesCodec::anotherApisLongCallIdFitsResponses() {
    // A call id over Responses' 64 characters (another API's, or a server's without a limit) would
    // be refused by OpenAI when the client sends its call back: the client gets it bounded, the
    // same in every event of the stream and in the JSON answer.
    const QString longId = QStringLiteral("call_") + QString(150, QLatin1Char('N'));
    AssistantMessage m;
    m.content << ContentBlock();
    const QList<StreamEvent> stream = sw::test::sampleAssistantStream(longId, &m.content[0]);
    auto encoder = OpenAIResponsesCodec().makeStreamEncoder(info());
    QByteArray out;
    for (const StreamEvent &e : stream)
        out += encoder->encode(e);
    QVERIFY(!out.contains(longId.toUtf8()));
    QString sent;
    for (const QJsonValue &item : json(OpenAIResponsesCodec().encodeResponse(m, info())).value("output").toArray())
        if (item.toObject().value("type").toString() == QStringLiteral("function_call"))
            sent = item.toObject().value("call_id").toString();
    QVERIFY2(sent.size() <= 64 && sent.startsWith(QLatin1String("call_NNN")), qPrintable(sent));
    QVERIFY2(out.contains("\"call_id\":\"" + sent.toUtf8() + "\""), out.constData());
}

void TestOpenAIResponsesCodec::aCutCustomCallsInputIsItsTextSoFar() {
    // Codex's apply_patch answered by another API is the carrier {"input": "…"}; cut by the output cap the
    // carrier never closes, and the client got its escaped JSON as the patch (probe D1 3).
    ContentBlock call;
    call.type = BlockType::ToolCall;
    call.toolName = QStringLiteral("apply_patch");
    call.argumentsJson = QStringLiteral("{\"input\": \"*** Begin Patch\\n*** Add File: a.py\\n+def b(");
    QCOMPARE(OpenAIResponsesCodec::customInput(call), QStringLiteral("*** Begin Patch\n*** Add File: a.py\n+def b("));
    call.argumentsJson = QStringLiteral("{\"input\": \"*** Begin Patch\\n\"}"); // whole: as before
    QCOMPARE(OpenAIResponsesCodec::customInput(call), QStringLiteral("*** Begin Patch\n"));
}

QTEST_GUILESS_MAIN(TestOpenAIResponsesCodec)
#include "test_openai_responses_codec.moc"
