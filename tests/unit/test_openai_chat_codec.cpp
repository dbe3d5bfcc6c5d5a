#include "core/formats/decode_prologue.h"
#include "core/formats/openai_chat_codec.h"
#include "core/upstream/anthropic_adapter.h"
#include "core/wire/client_body.h"
#include "wire_fixtures.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QtTest>

using namespace sw::model;
using namespace sw::formats;
using sw::test::makeEvent;
using sw::test::readTestData;

namespace {
EncodeInfo info(bool includeUsage) {
    EncodeInfo i;
    i.responseId = QStringLiteral("chatcmpl-sw1");
    i.model = QStringLiteral("sonnet");
    i.createdSecs = 1764400000;
    i.includeUsage = includeUsage;
    return i;
}
QJsonObject json(const QByteArray &b) {
    return QJsonDocument::fromJson(b).object();
}
} // namespace

class TestOpenAIChatCodec : public QObject {
    Q_OBJECT
private slots:
    void decodesSdkRequest();
    void decodeRejectsBadBodies_data();
    void decodeRejectsBadBodies();
    void legacyFunctionsAndMaxTokens();
    void hugeMaxTokensIsClamped();
    void openRoutersReasoningObjectIsRead();
    void encodesFullStreamLikeGolden();
    void withoutIncludeUsageNoUsageChunk();
    void inBandErrorHasNoDone();
    void toolCallWithoutArgumentsGetsEmptyObject();
    void errorBodyPerCategory_data();
    void errorBodyPerCategory();
    void encodesNonStreamingResponse();
    void customToolsDecodeAndTheirCallsEncodeAsCustom();
    void aCustomCallInTheHistoryKeepsItsNameAndInput();
    void anAssistantRefusalInTheHistoryIsKept();
    void anAudioAnswerInTheHistoryIsItsTranscript();
    void aSpeakersNameGoesInFrontOfWhatTheySaid();
    void anImagesTypeIsWhatItsBytesSay();
    void aConversationOfTooManyPartsIsRefusedBeforeItIsBuilt();
    void aBodyOfTinyValuesIsRefusedBeforeItIsBuilt();
    void stopSequencesPastTheLimitAreRefused();
    void anotherApisLongToolIdFitsChat();
    void resultsTakeTheirCallsNameByOneLookup();
};

void TestOpenAIChatCodec::decodesSdkRequest() {
    OpenAIChatCodec codec;
    GatewayError err;
    const auto req = codec.decode(readTestData(QStringLiteral("openai_chat_request_sdk.json")), &err);
    QVERIFY2(req, qPrintable(err.message));
    QCOMPARE(req->model, QStringLiteral("sonnet"));
    QVERIFY(req->stream);
    QVERIFY(req->includeUsage);
    // system and developer both feed the system prompt, in order.
    QCOMPARE(req->context.systemPrompt, QStringLiteral("You are a weather assistant.\n\nAnswer in one sentence."));
    const auto &msgs = req->context.messages;
    QCOMPARE(msgs.size(), 4);
    QCOMPARE(msgs[0].role, Role::User);
    QCOMPARE(msgs[0].content.size(), 3);
    QCOMPARE(msgs[0].content[1].type, BlockType::Image);
    QCOMPARE(msgs[0].content[1].mimeType, QStringLiteral("image/png"));
    QVERIFY(msgs[0].content[1].data.startsWith("iVBORw0KGgo"));
    QVERIFY(msgs[0].content[1].url.isEmpty());
    QCOMPARE(msgs[0].content[2].url, QStringLiteral("https://upload.wikimedia.org/wikipedia/commons/4/4b/Paris.jpg"));
    QCOMPARE(msgs[1].role, Role::Assistant);
    QCOMPARE(msgs[1].api, QStringLiteral("openai-completions"));
    QCOMPARE(msgs[1].content.size(), 1);
    QCOMPARE(msgs[1].content[0].toolName, QStringLiteral("get_weather"));
    QCOMPARE(msgs[1].content[0].arguments.value(QStringLiteral("location")).toString(),
             QStringLiteral("Paris, France"));
    QCOMPARE(msgs[2].role, Role::ToolResult);
    QCOMPARE(msgs[2].toolCallId, QStringLiteral("call_DdmO9pD3xa9XTPNJ32zg2hcA"));
    QCOMPARE(msgs[2].toolName, QStringLiteral("get_weather")); // looked up from the call
    QCOMPARE(msgs[2].content[0].text, QString::fromUtf8("18°C and sunny"));
    QCOMPARE(msgs[3].content[0].text, QStringLiteral("Thanks! And tomorrow?"));
    QCOMPARE(req->context.tools.size(), 1);
    QCOMPARE(req->context.tools[0].parameters.value(QStringLiteral("required")).toArray().size(), 1);
    // Both caps (1024 and the deprecated max_tokens' 99): the smaller is the request's. A server
    // that reads max_tokens alone would be held to it, not the budget's 1024 (probe T3 F4).
    QCOMPARE(req->options.maxTokens, std::optional<int>(99));
    QCOMPARE(req->options.temperature, std::optional<double>(0.2));
    QCOMPARE(req->options.topP, std::optional<double>(0.9));
    QCOMPARE(req->options.stop, QStringList{QStringLiteral("\n\nUser:")});
    QCOMPARE(req->options.reasoning, QStringLiteral("low"));
    QCOMPARE(req->options.toolChoice, QStringLiteral("auto"));
    // Unknown fields survive for passthrough.
    QCOMPARE(sw::wire::clientBodyQt(*req).value(QStringLiteral("seed")).toInt(), 42);
    QCOMPARE(sw::wire::clientBodyQt(*req).value(QStringLiteral("parallel_tool_calls")).toBool(true), false);
}

void TestOpenAIChatCodec::decodeRejectsBadBodies_data() {
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<QString>("field");
    QTest::newRow("not json") << QByteArray("{\"model\": ") << QStringLiteral("JSON");
    QTest::newRow("array body") << QByteArray("[]") << QStringLiteral("JSON object");
    QTest::newRow("no model") << QByteArray(R"({"messages":[]})") << QStringLiteral("model");
    QTest::newRow("model not string") << QByteArray(R"({"model":3,"messages":[]})") << QStringLiteral("model");
    QTest::newRow("no messages") << QByteArray(R"({"model":"m"})") << QStringLiteral("messages");
    QTest::newRow("messages object") << QByteArray(R"({"model":"m","messages":{}})") << QStringLiteral("messages");
    QTest::newRow("message not object") << QByteArray(R"({"model":"m","messages":["hi"]})")
                                        << QStringLiteral("messages[0]");
    QTest::newRow("no role") << QByteArray(R"({"model":"m","messages":[{"content":"hi"}]})")
                             << QStringLiteral("messages[0].role");
    QTest::newRow("bad role") << QByteArray(R"({"model":"m","messages":[{"role":"robot","content":"hi"}]})")
                              << QStringLiteral("messages[0].role");
    QTest::newRow("content number") << QByteArray(R"({"model":"m","messages":[{"role":"user","content":5}]})")
                                    << QStringLiteral("messages[0].content");
    QTest::newRow("temperature string") << QByteArray(R"({"model":"m","messages":[],"temperature":"hot"})")
                                        << QStringLiteral("temperature");
    QTest::newRow("stream string") << QByteArray(R"({"model":"m","messages":[],"stream":"yes"})")
                                   << QStringLiteral("stream");
    QTest::newRow("tools object") << QByteArray(R"({"model":"m","messages":[],"tools":{}})") << QStringLiteral("tools");
}

void TestOpenAIChatCodec::decodeRejectsBadBodies() {
    QFETCH(QByteArray, body);
    QFETCH(QString, field);
    GatewayError err;
    QVERIFY(!OpenAIChatCodec().decode(body, &err));
    QCOMPARE(err.status, 400);
    QCOMPARE(err.category, ErrorCategory::InvalidRequest);
    QVERIFY2(err.message.contains(field), qPrintable(err.message));
}

void TestOpenAIChatCodec::legacyFunctionsAndMaxTokens() {
    const QByteArray body = R"({"model":"m","max_tokens":50,"messages":[{"role":"user","content":"hi"},
        {"role":"assistant","content":"ok","reasoning_content":"hmm"}],
        "functions":[{"name":"f","parameters":{"type":"object"}}],
        "tool_choice":{"type":"function","function":{"name":"f"}}})";
    const auto req = OpenAIChatCodec().decode(body, nullptr);
    QVERIFY(req);
    QVERIFY(!req->stream);
    QCOMPARE(req->options.maxTokens, std::optional<int>(50));
    QCOMPARE(req->context.tools.size(), 1);
    QCOMPARE(req->options.toolChoice, QStringLiteral("f"));
    QCOMPARE(req->context.messages[1].content[0].type, BlockType::Thinking);
    QCOMPARE(req->context.messages[1].content[1].text, QStringLiteral("ok"));
    // The legacy function_call forces (or forbids) a call of "functions" as tool_choice does.
    const QByteArray legacy = R"({"model":"m","messages":[{"role":"user","content":"hi"}],
        "functions":[{"name":"f","parameters":{"type":"object"}}],"function_call":)";
    QCOMPARE(OpenAIChatCodec().decode(legacy + R"({"name":"f"}})", nullptr)->options.toolChoice, QStringLiteral("f"));
    QCOMPARE(OpenAIChatCodec().decode(legacy + R"("none"})", nullptr)->options.toolChoice, QStringLiteral("none"));
    QCOMPARE(OpenAIChatCodec().decode(legacy + R"({"name":"f"},"tool_choice":"auto"})", nullptr)->options.toolChoice,
             QStringLiteral("auto"));
}

void TestOpenAIChatCodec::hugeMaxTokensIsClamped() {
    const auto req = OpenAIChatCodec().decode(R"({"model":"m","messages":[],"max_tokens":1e300})", nullptr);
    QVERIFY(req);
    QCOMPARE(req->options.maxTokens, std::optional<int>(2147483647));
}

// Probe L1 2: OpenRouter's unified reasoning object, of which only `effort` was read: a budget or
// `enabled` turned no reasoning on after a failover to another API.
void TestOpenAIChatCodec::openRoutersReasoningObjectIsRead() {
    const auto options = [](const char *extra) {
        const auto req = OpenAIChatCodec().decode(
            R"({"model":"m","messages":[{"role":"user","content":"hi"}],)" + QByteArray(extra) + "}", nullptr);
        return req ? req->options : Options{};
    };
    QCOMPARE(options(R"("reasoning":{"max_tokens":3000})").thinkingBudget, std::optional<int>(3000));
    QCOMPARE(options(R"("reasoning":{"max_tokens":3000})").reasoning, QString());
    QCOMPARE(options(R"("reasoning":{"enabled":true})").reasoning, QStringLiteral("medium")); // the default effort
    QCOMPARE(options(R"("reasoning":{"enabled":true,"effort":"low"})").reasoning, QStringLiteral("low"));
    QCOMPARE(options(R"("reasoning":{"enabled":false})").reasoning, QStringLiteral("none"));
    QCOMPARE(options(R"("reasoning":{"enabled":false,"max_tokens":3000})").thinkingBudget, std::nullopt);
    QCOMPARE(options(R"("reasoning":{"effort":"none"})").reasoning, QStringLiteral("none"));
    QCOMPARE(options(R"("reasoning":{"max_tokens":0})").thinkingBudget, std::nullopt);
    // reasoning_effort, OpenAI's own field, wins.
    const Options both = options(R"("reasoning_effort":"high","reasoning":{"max_tokens":3000})");
    QCOMPARE(both.reasoning, QStringLiteral("high"));
    QCOMPARE(both.thinkingBudget, std::nullopt);

    // exclude: the model thinks as asked, and the client is not sent the thinking.
    const auto excluded = OpenAIChatCodec().decode(
        R"({"model":"m","messages":[{"role":"user","content":"hi"}],"reasoning":{"effort":"low","exclude":true}})",
        nullptr);
    QVERIFY(excluded);
    QVERIFY(excluded->hideReasoning);
    QCOMPARE(excluded->options.reasoning, QStringLiteral("low"));
    EncodeInfo hidden = info(false);
    hidden.hideReasoning = excluded->hideReasoning;
    AssistantMessage m;
    ContentBlock thinking;
    thinking.type = BlockType::Thinking;
    thinking.text = QStringLiteral("hmm");
    m.content << thinking << ContentBlock::makeText(QStringLiteral("Sunny."));
    const QJsonObject message =
        json(OpenAIChatCodec().encodeResponse(m, hidden))["choices"][0].toObject()["message"].toObject();
    QVERIFY(!message.contains(QStringLiteral("reasoning_content")));
    QCOMPARE(message.value(QStringLiteral("content")).toString(), QStringLiteral("Sunny."));
    auto enc = OpenAIChatCodec().makeStreamEncoder(hidden);
    QByteArray out = enc->encode(makeEvent(EventType::Start));
    out += enc->encode(makeEvent(EventType::ThinkingDelta, 0, QStringLiteral("hmm")));
    out += enc->encode(makeEvent(EventType::TextDelta, 1, QStringLiteral("Sunny.")));
    QVERIFY2(!out.contains("reasoning_content") && !out.contains("hmm") && out.contains("Sunny."), out.constData());
    QVERIFY(!OpenAIChatCodec()
                 .decode(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"reasoning":{"effort":"low"}})",
                         nullptr)
                 ->hideReasoning);
}

void TestOpenAIChatCodec::encodesFullStreamLikeGolden() {
    auto enc = OpenAIChatCodec().makeStreamEncoder(info(true));
    QByteArray out;
    for (const StreamEvent &e : sw::test::sampleAssistantStream())
        out += enc->encode(e);
    const QString diff = sw::test::sseDifference(out, readTestData(QStringLiteral("openai_chat_stream_golden.sse")));
    QVERIFY2(diff.isEmpty(), qPrintable(diff + QStringLiteral("\n") + QString::fromUtf8(out)));
    QVERIFY(out.endsWith("data: [DONE]\n\n"));
    // Nothing after the terminator, whatever arrives.
    QVERIFY(enc->encode(makeEvent(EventType::TextDelta, 5, QStringLiteral("late"))).isEmpty());
}

void TestOpenAIChatCodec::withoutIncludeUsageNoUsageChunk() {
    auto enc = OpenAIChatCodec().makeStreamEncoder(info(false));
    QByteArray out;
    for (const StreamEvent &e : sw::test::sampleAssistantStream())
        out += enc->encode(e);
    QVERIFY(!out.contains("\"usage\""));
    QVERIFY(out.contains("\"finish_reason\":\"tool_calls\""));
    QVERIFY(out.endsWith("data: [DONE]\n\n"));
}

void TestOpenAIChatCodec::inBandErrorHasNoDone() {
    auto enc = OpenAIChatCodec().makeStreamEncoder(info(true));
    QByteArray out = enc->encode(makeEvent(EventType::Start));
    out += enc->encode(makeEvent(EventType::TextDelta, 0, QStringLiteral("Hel")));
    out += enc->encodeError(GatewayError::make(529, ErrorCategory::Overloaded, QStringLiteral("upstream overloaded")));
    out += enc->encode(makeEvent(EventType::Done)); // a late Done must not add [DONE]
    QVERIFY(!out.contains("[DONE]"));
    const QByteArray last = out.mid(out.lastIndexOf("data: "));
    QVERIFY(last.endsWith("\n\n"));
    const QJsonObject e = json(last.mid(6).trimmed()).value(QStringLiteral("error")).toObject();
    QCOMPARE(e.value(QStringLiteral("message")).toString(), QStringLiteral("upstream overloaded"));
    QCOMPARE(e.value(QStringLiteral("type")).toString(), QStringLiteral("server_error"));

    // An Error event from the upstream takes the same shape.
    auto enc2 = OpenAIChatCodec().makeStreamEncoder(info(true));
    StreamEvent ev = makeEvent(EventType::Error);
    ev.errorMessage = QStringLiteral("rate limited");
    ev.errorStatus = 429;
    const QByteArray out2 = enc2->encode(ev);
    QVERIFY(out2.startsWith("data: {\"error\":"));
    QCOMPARE(
        json(out2.mid(6).trimmed()).value(QStringLiteral("error")).toObject().value(QStringLiteral("type")).toString(),
        QStringLiteral("rate_limit_error"));
}

void TestOpenAIChatCodec::toolCallWithoutArgumentsGetsEmptyObject() {
    auto enc = OpenAIChatCodec().makeStreamEncoder(info(false));
    StreamEvent start = makeEvent(EventType::ToolCallStart, 0);
    start.block.toolCallId = QStringLiteral("toolu_1");
    start.block.toolName = QStringLiteral("list_files");
    StreamEvent end = start;
    end.type = EventType::ToolCallEnd;
    QByteArray out = enc->encode(start);
    out += enc->encode(end);
    StreamEvent done = makeEvent(EventType::Done);
    done.reason = StopReason::ToolUse;
    out += enc->encode(done);
    QString arguments;
    for (const auto &e : sw::test::splitSse(out)) {
        const QJsonArray choices = json(e.data).value(QStringLiteral("choices")).toArray();
        for (const QJsonValue &c : choices[0]
                                       .toObject()
                                       .value(QStringLiteral("delta"))
                                       .toObject()
                                       .value(QStringLiteral("tool_calls"))
                                       .toArray())
            arguments +=
                c.toObject().value(QStringLiteral("function")).toObject().value(QStringLiteral("arguments")).toString();
    }
    QVERIFY2(arguments == QStringLiteral("{}"), out.constData());
}

void TestOpenAIChatCodec::errorBodyPerCategory_data() {
    QTest::addColumn<int>("category");
    QTest::addColumn<QString>("type");
    QTest::addColumn<QString>("code");
    QTest::newRow("400") << int(ErrorCategory::InvalidRequest) << "invalid_request_error"
                         << "invalid_request";
    QTest::newRow("401") << int(ErrorCategory::Authentication) << "authentication_error"
                         << "invalid_api_key";
    QTest::newRow("403") << int(ErrorCategory::Permission) << "permission_error"
                         << "permission_denied";
    QTest::newRow("404") << int(ErrorCategory::NotFound) << "not_found_error"
                         << "not_found";
    QTest::newRow("409") << int(ErrorCategory::Conflict) << "invalid_request_error"
                         << "conflict";
    QTest::newRow("413") << int(ErrorCategory::PayloadTooLarge) << "invalid_request_error"
                         << "request_too_large";
    QTest::newRow("415") << int(ErrorCategory::UnsupportedMedia) << "invalid_request_error"
                         << "unsupported_media_type";
    QTest::newRow("429") << int(ErrorCategory::RateLimit) << "rate_limit_error"
                         << "rate_limit_exceeded";
    QTest::newRow("500") << int(ErrorCategory::ServerError) << "server_error"
                         << "server_error";
    QTest::newRow("503") << int(ErrorCategory::Overloaded) << "server_error"
                         << "overloaded";
    QTest::newRow("504") << int(ErrorCategory::Timeout) << "server_error"
                         << "timeout";
}

void TestOpenAIChatCodec::errorBodyPerCategory() {
    QFETCH(int, category);
    QFETCH(QString, type);
    QFETCH(QString, code);
    const QByteArray body = OpenAIChatCodec().encodeError(
        GatewayError::make(400, ErrorCategory(category), QStringLiteral("something went wrong")));
    const QJsonObject e = json(body).value(QStringLiteral("error")).toObject();
    QCOMPARE(e.value(QStringLiteral("message")).toString(), QStringLiteral("something went wrong"));
    QCOMPARE(e.value(QStringLiteral("type")).toString(), type);
    QCOMPARE(e.value(QStringLiteral("code")).toString(), code);
    QVERIFY(e.contains(QStringLiteral("param")));
}

void TestOpenAIChatCodec::encodesNonStreamingResponse() {
    AssistantMessage m;
    ContentBlock thinking;
    thinking.type = BlockType::Thinking;
    thinking.text = QStringLiteral("hmm");
    m.content << thinking << ContentBlock::makeText(QStringLiteral("It is sunny."));
    ContentBlock call;
    call.type = BlockType::ToolCall;
    call.toolCallId = QStringLiteral("call_9");
    call.toolName = QStringLiteral("get_time");
    call.arguments = QJsonObject{{QStringLiteral("tz"), QStringLiteral("UTC")}};
    m.content << call;
    m.stopReason = StopReason::ToolUse;
    m.usage.input = 100;
    m.usage.cacheRead = 20;
    m.usage.output = 7;
    m.usage.reasoning = 3; // of the output: a Gemini or Responses upstream said how much was reasoning
    const QJsonObject o = json(OpenAIChatCodec().encodeResponse(m, info(false)));
    QCOMPARE(o.value(QStringLiteral("object")).toString(), QStringLiteral("chat.completion"));
    QCOMPARE(o.value(QStringLiteral("id")).toString(), QStringLiteral("chatcmpl-sw1"));
    QCOMPARE(o.value(QStringLiteral("model")).toString(), QStringLiteral("sonnet"));
    const QJsonObject choice = o.value(QStringLiteral("choices")).toArray().at(0).toObject();
    QCOMPARE(choice.value(QStringLiteral("finish_reason")).toString(), QStringLiteral("tool_calls"));
    const QJsonObject msg = choice.value(QStringLiteral("message")).toObject();
    QCOMPARE(msg.value(QStringLiteral("content")).toString(), QStringLiteral("It is sunny."));
    QCOMPARE(msg.value(QStringLiteral("reasoning_content")).toString(), QStringLiteral("hmm"));
    const QJsonObject fn =
        msg.value(QStringLiteral("tool_calls")).toArray().at(0).toObject().value(QStringLiteral("function")).toObject();
    QCOMPARE(fn.value(QStringLiteral("name")).toString(), QStringLiteral("get_time"));
    QCOMPARE(json(fn.value(QStringLiteral("arguments")).toString().toUtf8()).value(QStringLiteral("tz")).toString(),
             QStringLiteral("UTC"));
    const QJsonObject usage = o.value(QStringLiteral("usage")).toObject();
    QCOMPARE(usage.value(QStringLiteral("prompt_tokens")).toInt(), 120);
    QCOMPARE(usage.value(QStringLiteral("completion_tokens")).toInt(), 7);
    QCOMPARE(usage.value(QStringLiteral("total_tokens")).toInt(), 127);
    QCOMPARE(
        usage.value(QStringLiteral("prompt_tokens_details")).toObject().value(QStringLiteral("cached_tokens")).toInt(),
        20);
    QCOMPARE(usage.value(QStringLiteral("completion_tokens_details"))
                 .toObject()
                 .value(QStringLiteral("reasoning_tokens"))
                 .toInt(),
             3);
}

void TestOpenAIChatCodec::customToolsDecodeAndTheirCallsEncodeAsCustom() {
    const QByteArray body = R"({"model":"m","messages":[{"role":"user","content":"edit"}],"parallel_tool_calls":false,
      "response_format":{"type":"json_schema","json_schema":{"name":"r","strict":true,"schema":{"type":"object"}}},
      "tools":[{"type":"custom","custom":{"name":"apply_patch","description":"Edit files.",
        "format":{"type":"grammar","grammar":{"syntax":"lark","definition":"start: PATCH"}}}}]})";
    GatewayError error;
    const auto req = OpenAIChatCodec().decode(body, &error);
    QVERIFY(req);
    QCOMPARE(req->customToolNames(), QStringList{"apply_patch"});
    QCOMPARE(req->context.tools[0].format.value("definition").toString(), QStringLiteral("start: PATCH"));
    QCOMPARE(req->options.parallelToolCalls, std::optional<bool>(false));
    QCOMPARE(req->options.outputFormat.type, QStringLiteral("json_schema"));
    QCOMPARE(req->options.outputFormat.name, QStringLiteral("r"));

    EncodeInfo i = info(false);
    i.customTools = req->customToolNames();
    auto enc = OpenAIChatCodec().makeStreamEncoder(i);
    StreamEvent start = makeEvent(EventType::ToolCallStart, 0);
    start.block.toolCallId = QStringLiteral("toolu_1");
    start.block.toolName = QStringLiteral("apply_patch");
    StreamEvent delta = makeEvent(EventType::ToolCallDelta, 0);
    delta.delta = QStringLiteral(R"({"input":"*** Begin Patch\n"})");
    StreamEvent end = start;
    end.type = EventType::ToolCallEnd;
    QByteArray out = enc->encode(start);
    out += enc->encode(delta);
    out += enc->encode(end);
    QJsonObject custom;
    for (const auto &e : sw::test::splitSse(out))
        for (const QJsonValue &c : json(e.data)
                                       .value(QStringLiteral("choices"))
                                       .toArray()[0]
                                       .toObject()
                                       .value(QStringLiteral("delta"))
                                       .toObject()
                                       .value(QStringLiteral("tool_calls"))
                                       .toArray())
            custom = c.toObject();
    QCOMPARE(custom.value("type").toString(), QStringLiteral("custom"));
    QCOMPARE(custom.value("custom").toObject().value("input").toString(), QStringLiteral("*** Begin Patch\n"));

    AssistantMessage m;
    ContentBlock call = start.block;
    call.type = BlockType::ToolCall;
    call.argumentsJson = delta.delta;
    m.content << call;
    m.stopReason = StopReason::ToolUse;
    const QJsonObject whole = json(OpenAIChatCodec().encodeResponse(m, i))
                                  .value("choices")
                                  .toArray()[0]
                                  .toObject()
                                  .value("message")
                                  .toObject()
                                  .value("tool_calls")
                                  .toArray()[0]
                                  .toObject();
    QCOMPARE(whole.value("custom").toObject().value("name").toString(), QStringLiteral("apply_patch"));
    QCOMPARE(whole.value("custom").toObject().value("input").toString(), QStringLiteral("*** Begin Patch\n"));
}

void TestOpenAIChatCodec::aCustomCallInTheHistoryKeepsItsNameAndInput() {
    // The next turn of a Chat client whose custom tool was called (openai-node
    // ChatCompletionMessageCustomToolCall, the shape this gateway writes back): the call has
    // `custom: {name, input}` and no `function`. It was read through `function`, so another API got a
    // call with no name and no input, and refused the turn.
    const QByteArray body = R"({"model":"m","messages":[{"role":"user","content":"edit"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"toolu_01P","type":"custom",
        "custom":{"name":"apply_patch","input":"*** Begin Patch\n*** End Patch\n"}}]},
      {"role":"tool","tool_call_id":"toolu_01P","content":"Done!"}],
      "tools":[{"type":"custom","custom":{"name":"apply_patch","description":"Edit files."}}]})";
    GatewayError error;
    const auto req = OpenAIChatCodec().decode(body, &error);
    QVERIFY2(req, qPrintable(error.message));
    const ContentBlock call = req->context.messages[1].content[0];
    QCOMPARE(call.type, BlockType::ToolCall);
    QVERIFY(call.custom);
    QCOMPARE(call.toolName, QStringLiteral("apply_patch"));
    QCOMPARE(call.toolCallId, QStringLiteral("toolu_01P"));
    QCOMPARE(call.arguments.value("input").toString(), QStringLiteral("*** Begin Patch\n*** End Patch\n"));
    QCOMPARE(req->context.messages[2].toolName, QStringLiteral("apply_patch"));

    // What Claude is sent: the call by its name, the patch as the {input} the tool was declared with.
    const QJsonArray messages =
        sw::upstream::AnthropicAdapter::buildBody(sw::test::spokenIn(*req, sw::wire::Api::OpenAICompletions), "claude")
            .value("messages")
            .toArray();
    const QJsonObject toolUse = messages[1].toObject().value("content").toArray()[0].toObject();
    QCOMPARE(toolUse.value("type").toString(), QStringLiteral("tool_use"));
    QCOMPARE(toolUse.value("name").toString(), QStringLiteral("apply_patch"));
    QCOMPARE(toolUse.value("input").toObject().value("input").toString(),
             QStringLiteral("*** Begin Patch\n*** End Patch\n"));

    // A custom call without a name is refused where it is, as the Responses codec refuses one.
    GatewayError nameless;
    QVERIFY(!OpenAIChatCodec().decode(R"({"model":"m","messages":[{"role":"user","content":"edit"},
      {"role":"assistant","tool_calls":[{"id":"c1","type":"custom","custom":{"input":"x"}}]}]})",
                                      &nameless));
    QVERIFY2(nameless.message.contains(QLatin1String("messages[1].tool_calls[0].custom.name")),
             qPrintable(nameless.message));
}

void TestOpenAIChatCodec::anAssistantRefusalInTheHistoryIsKept() {
    // {"role":"assistant","content":null,"refusal":"..."}: the turn in which the model refused. It
    // was dropped, so another API's model got the two user turns around it as one and never knew
    // it had refused.
    const auto req =
        OpenAIChatCodec().decode(R"({"model":"m","messages":[{"role":"user","content":"bad"},)"
                                 R"({"role":"assistant","content":null,"refusal":"I can't help with that."},)"
                                 R"({"role":"user","content":"ok then good"}]})",
                                 nullptr);
    QVERIFY(req);
    const auto &msgs = req->context.messages;
    QCOMPARE(msgs.size(), 3);
    QCOMPARE(msgs[1].role, Role::Assistant);
    QCOMPARE(msgs[1].content.size(), 1);
    QCOMPARE(msgs[1].content[0].text, QStringLiteral("I can't help with that."));
    // Text and refusal both, as this gateway's own answer writes them: the text, then the refusal.
    const auto both = OpenAIChatCodec().decode(R"({"model":"m","messages":[{"role":"user","content":"x"},)"
                                               R"({"role":"assistant","content":"Sorry. ","refusal":"No."}]})",
                                               nullptr);
    QVERIFY(both);
    QCOMPARE(both->context.messages[1].content[0].text, QStringLiteral("Sorry. No."));
}

void TestOpenAIChatCodec::anAudioAnswerInTheHistoryIsItsTranscript() {
    // Probe Y3-F1: a voice app's history holds the model's audio answer as the openai SDK keeps it,
    // {content: null, audio: {id, data, expires_at, transcript}}. The turn was read as empty and left
    // out, so after a failover another API's model was asked about a joke it never told.
    const QByteArray body =
        R"({"model":"m","messages":[{"role":"user","content":"Tell me a joke."},)"
        R"({"role":"assistant","content":null,"refusal":null,"audio":{"id":"audio_abc","data":"UklGRg==",)"
        R"("expires_at":1999999999,"transcript":"Why did the scarecrow win an award?"}},)"
        R"({"role":"user","content":"Explain the joke you just told."}]})";
    const auto req = OpenAIChatCodec().decode(body, nullptr);
    QVERIFY(req);
    const auto &msgs = req->context.messages;
    QCOMPARE(msgs.size(), 3);
    QCOMPARE(msgs[1].role, Role::Assistant);
    QCOMPARE(msgs[1].content.size(), 1);
    QCOMPARE(msgs[1].content[0].type, BlockType::Text);
    QCOMPARE(msgs[1].content[0].text, QStringLiteral("Why did the scarecrow win an award?"));
    // Beside a call: the words, then the call.
    const auto called = OpenAIChatCodec().decode(
        R"({"model":"m","messages":[{"role":"user","content":"weather?"},)"
        R"({"role":"assistant","content":null,"audio":{"id":"audio_1","transcript":"Let me look."},)"
        R"("tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{}"}}]}]})",
        nullptr);
    QVERIFY(called);
    QCOMPARE(called->context.messages[1].content.size(), 2);
    QCOMPARE(called->context.messages[1].content[0].text, QStringLiteral("Let me look."));
    QCOMPARE(called->context.messages[1].content[1].type, BlockType::ToolCall);
    // The turn's own words, where the client wrote them, stay what the turn says; audio null is no answer.
    const auto worded = OpenAIChatCodec().decode(
        R"({"model":"m","messages":[{"role":"user","content":"x"},)"
        R"({"role":"assistant","content":"Heard it.","audio":{"id":"audio_2","transcript":"Heard it."}},)"
        R"({"role":"assistant","content":"Plain.","audio":null}]})",
        nullptr);
    QVERIFY(worded);
    QCOMPARE(worded->context.messages[1].content[0].text, QStringLiteral("Heard it."));
    QCOMPARE(worded->context.messages[2].content[0].text, QStringLiteral("Plain."));
}

void TestOpenAIChatCodec::aSpeakersNameGoesInFrontOfWhatTheySaid() {
    // Two users in one conversation, told apart by `name`: no other API has the field, and without it
    // "who proposed Monday?" could not be answered after a conversion.
    const auto req = OpenAIChatCodec().decode(
        R"({"model":"m","messages":[{"role":"user","name":"alice","content":"I propose Friday"},)"
        R"({"role":"user","name":"bob","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]},)"
        R"({"role":"assistant","name":"planner","content":"Noted."},)"
        R"({"role":"user","name":"alice","content":"who proposed Monday?"}]})",
        nullptr);
    QVERIFY(req);
    const auto &msgs = req->context.messages;
    QCOMPARE(msgs.size(), 4);
    QCOMPARE(msgs[0].content[0].text, QStringLiteral("alice: I propose Friday"));
    QCOMPARE(msgs[1].content.size(), 2); // a turn with no text gets one naming its speaker
    QCOMPARE(msgs[1].content[0].text, QStringLiteral("bob:"));
    QCOMPARE(msgs[1].content[1].type, BlockType::Image);
    QCOMPARE(msgs[2].content[0].text, QStringLiteral("planner: Noted."));
    QCOMPARE(msgs[3].content[0].text, QStringLiteral("alice: who proposed Monday?"));
}

void TestOpenAIChatCodec::anImagesTypeIsWhatItsBytesSay() {
    // A JPEG in a data:image/png URI: OpenAI reads the bytes and takes it, Messages refuses the
    // request (400 "the image appears to be a image/jpeg image") on every later turn that carries it.
    const auto typeOf = [](const char *uri) {
        const QByteArray body = QByteArray(R"({"model":"m","messages":[{"role":"user","content":[)"
                                           R"({"type":"image_url","image_url":{"url":")") +
                                uri + R"("}}]}]})";
        const auto req = OpenAIChatCodec().decode(body, nullptr);
        return req ? req->context.messages[0].content[0].mimeType : QStringLiteral("(refused)");
    };
    QCOMPARE(typeOf("data:image/png;base64,/9j/4AAQSkZJRgABAQA="), QStringLiteral("image/jpeg"));
    QCOMPARE(typeOf("data:image/jpeg;base64,iVBORw0KGgoAAAANSUhEUg=="), QStringLiteral("image/png"));
    QCOMPARE(typeOf("data:image/png;base64,UklGRhAAAABXRUJQVlA4IA=="), QStringLiteral("image/webp"));
    QCOMPARE(typeOf("data:image/png;base64,iVBORw0KGgoAAAANSUhEUg=="), QStringLiteral("image/png"));
    // Bytes of no known image keep the declared type.
    QCOMPARE(typeOf("data:image/heic;base64,AAAAAAAAAAAAAAAA"), QStringLiteral("image/heic"));
}

void TestOpenAIChatCodec::aConversationOfTooManyPartsIsRefusedBeforeItIsBuilt() {
    // A million one-character messages (32 MB) held 1.2 GB once decoded: the count is bounded first.
    // (Messages of one character each are refused sooner, as a body of tiny values: these say more.)
    const auto bodyOf = [](int messages) {
        const QByteArray message = R"({"role":"user","content":")" + QByteArray(80, 'x') + R"("})";
        QByteArray body = R"({"model":"m","messages":[)";
        body.reserve(messages * (message.size() + 1) + 64);
        for (int i = 0; i < messages; ++i)
            body += i ? "," + message : message;
        return body + "]}";
    };
    GatewayError error;
    QVERIFY(!OpenAIChatCodec().decode(bodyOf(100001), &error));
    QCOMPARE(error.status, 400);
    QVERIFY2(error.message.contains(QStringLiteral("more than 100000 messages")), qPrintable(error.message));
    QVERIFY(OpenAIChatCodec().decode(bodyOf(50000), &error));
}

void TestOpenAIChatCodec::aBodyOfTinyValuesIsRefusedBeforeItIsBuilt() {
    // 30 MB of "1," in a field nobody bounds (metadata) held 1.27 GB: each value is 16 bytes or
    // more of tree, and the parser's stack doubles (probe X). A body may hold a sixteenth of its
    // bytes in values (keys included), plus 100 000: refused before the tree is built, also when
    // a byte that is not UTF-8 sends the text to Qt's parser.
    const auto bodyOf = [](int values, const QByteArray &text) {
        QByteArray body = R"({"model":"m","messages":[{"role":"user","content":")" + text + R"("}],"metadata":{"x":[)";
        body.reserve(body.size() + 2 * values + 8);
        for (int i = 0; i < values; ++i)
            body += i ? ",1" : "1";
        return body + "]}}";
    };
    for (const bool bom : {false, true})
        for (const QByteArray &text : {QByteArray("hi"), QByteArray("caf\xe9")}) {
            GatewayError error;
            QVERIFY(!OpenAIChatCodec().decode((bom ? QByteArray("\xef\xbb\xbf") : QByteArray()) + bodyOf(3000000, text),
                                              &error));
            QCOMPARE(error.status, 400);
            QVERIFY2(error.message.contains(QStringLiteral("JSON values")), qPrintable(error.message));
        }
    // What a real body holds passes: long text beside 200 000 values, a twentieth of the bytes.
    GatewayError error;
    QVERIFY2(OpenAIChatCodec().decode(bodyOf(200000, QByteArray(40 * 200000, 'x')), &error), qPrintable(error.message));
    // And a sixteenth is the bound: the same values beside a fifth as much text are refused.
    QVERIFY(!OpenAIChatCodec().decode(bodyOf(200000, QByteArray(4 * 200000, 'x')), &error));
}

void TestOpenAIChatCodec::stopSequencesPastTheLimitAreRefused() {
    // The stop sequences an upstream cannot take (Chat takes 4) the gateway matches in the answer
    // itself: a million of them held the engine thread for seconds (probe X2-F2). Up to
    // kStopSequenceLimit they are taken; past it, in number or in bytes, the request is a 400 in
    // OpenAI's shape that names the limit.
    const auto bodyOf = [](const QJsonValue &stop) {
        return QJsonDocument(QJsonObject{{"model", "m"},
                                         {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "hi"}}}},
                                         {"stop", stop}})
            .toJson(QJsonDocument::Compact);
    };
    const auto stops = [](qsizetype count, qsizetype bytes) {
        QJsonArray out;
        for (qsizetype i = 0; i < count; ++i)
            out.append(QString::number(i).leftJustified(bytes, QLatin1Char('x')));
        return out;
    };
    const qsizetype most = kStopSequenceLimit.count;
    const qsizetype each = kStopSequenceLimit.bytes / most;
    GatewayError error;
    const auto atTheLimit = OpenAIChatCodec().decode(bodyOf(stops(most, each)), &error);
    QVERIFY2(atTheLimit, qPrintable(error.message));
    QCOMPARE(atTheLimit->options.stop.size(), most);
    const auto oneString =
        OpenAIChatCodec().decode(bodyOf(QString(kStopSequenceLimit.bytes, QLatin1Char('x'))), &error);
    QVERIFY2(oneString, qPrintable(error.message));
    QCOMPARE(oneString->options.stop, QStringList{QString(kStopSequenceLimit.bytes, QLatin1Char('x'))});
    for (const QJsonValue &stop :
         {QJsonValue(stops(most + 1, 1)), QJsonValue(stops(most, each + 1)), QJsonValue(stops(100000, 1)),
          QJsonValue(QString(kStopSequenceLimit.bytes + 1, QLatin1Char('x')))}) {
        GatewayError refused;
        QVERIFY(!OpenAIChatCodec().decode(bodyOf(stop), &refused));
        QCOMPARE(refused.status, 400);
        const QJsonObject e = json(OpenAIChatCodec().encodeError(refused)).value(QStringLiteral("error")).toObject();
        QCOMPARE(e.value(QStringLiteral("type")).toString(), QStringLiteral("invalid_request_error"));
        const QString message = e.value(QStringLiteral("message")).toString();
        QVERIFY2(message.startsWith(QStringLiteral("stop: ")) &&
                     message.contains(QStringLiteral("at most %1 of %2 bytes").arg(most).arg(kStopSequenceLimit.bytes)),
                 qPrintable(message));
    }
}

void TestOpenAIChatCodec::anotherApisLongToolIdFitsChat() {
    // A call id another API made (64 characters, Anthropic's limit) would come back from the
    // client in its next turn and be refused by an OpenAI server (40 at most). The client gets it
    // bounded, the same in the stream and in the JSON answer, so its call and result still pair.
    const QString longId = QStringLiteral("toolu_") + QString(58, QLatin1Char('L'));
    AssistantMessage m;
    m.content << ContentBlock();
    const QList<StreamEvent> stream = sw::test::sampleAssistantStream(longId, &m.content[0]);
    auto enc = OpenAIChatCodec().makeStreamEncoder(info(false));
    QByteArray out;
    for (const StreamEvent &e : stream)
        out += enc->encode(e);
    const QString sent = json(OpenAIChatCodec().encodeResponse(m, info(false)))
                             .value("choices")
                             .toArray()[0]
                             .toObject()
                             .value("message")
                             .toObject()
                             .value("tool_calls")
                             .toArray()[0]
                             .toObject()
                             .value("id")
                             .toString();
    QVERIFY2(sent.size() <= 40 && sent.startsWith(QLatin1String("toolu_LLL")), qPrintable(sent));
    QVERIFY2(out.contains("\"id\":\"" + sent.toUtf8() + "\""), out.constData());
    QVERIFY(!out.contains(longId.toUtf8()));
    // A short id passes as it is.
    auto plain = OpenAIChatCodec().makeStreamEncoder(info(false));
    QByteArray plainOut;
    for (const StreamEvent &e : sw::test::sampleAssistantStream())
        plainOut += plain->encode(e);
    QVERIFY(plainOut.contains("\"id\":\"call_1\""));
}

void TestOpenAIChatCodec::resultsTakeTheirCallsNameByOneLookup() {
    // A `tool` message names only the call's id; its name (which Gemini's functionResponse needs) is the
    // latest call's of that id. Thousands of calls of one id ("call_0") were looked up by a scan back
    // over the history per result: 16 000 froze the engine thread for 3.3 s (probe D2).
    const int calls = 20000;
    QJsonArray toolCalls;
    for (int i = 0; i < calls; ++i)
        toolCalls.append(
            QJsonObject{{"id", "call_0"},
                        {"type", "function"},
                        {"function", QJsonObject{{"name", i + 1 == calls ? "last" : "f"}, {"arguments", "{}"}}}});
    QJsonArray messages{QJsonObject{{"role", "user"}, {"content", "go"}},
                        QJsonObject{{"role", "assistant"}, {"content", QJsonValue::Null}, {"tool_calls", toolCalls}}};
    for (int i = 0; i < calls; ++i)
        messages.append(QJsonObject{{"role", "tool"}, {"tool_call_id", "call_0"}, {"content", QString(100, u'w')}});
    sw::model::GatewayError err;
    const auto req = OpenAIChatCodec().decode(
        QJsonDocument(QJsonObject{{"model", "m"}, {"messages", messages}}).toJson(QJsonDocument::Compact), &err);
    QVERIFY2(req, qPrintable(err.message));
    QCOMPARE(req->context.messages.size(), 2 + calls);
    // The latest call of the id names it, as the scan back found it: the turn's last block.
    QCOMPARE(req->context.messages.last().toolName, QStringLiteral("last"));
    QCOMPARE(req->context.messages.at(2).toolName, QStringLiteral("last"));
}

QTEST_GUILESS_MAIN(TestOpenAIChatCodec)
#include "test_openai_chat_codec.moc"
