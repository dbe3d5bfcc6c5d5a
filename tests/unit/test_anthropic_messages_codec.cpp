#include "core/formats/anthropic_messages_codec.h"
#include "core/formats/decode_prologue.h"
#include "core/wire/client_body.h"
#include "core/wire/tool_call_id.h"
#include "wire_fixtures.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QtTest>

using namespace sw::model;
using namespace sw::formats;
using sw::test::makeEvent;
using sw::test::readTestData;

namespace {
EncodeInfo info() {
    EncodeInfo i;
    i.responseId = QStringLiteral("msg_sw1");
    i.model = QStringLiteral("sonnet");
    i.createdSecs = 1764400000;
    return i;
}
QJsonObject json(const QByteArray &b) {
    return QJsonDocument::fromJson(b).object();
}
} // namespace

class TestAnthropicMessagesCodec : public QObject {
    Q_OBJECT
private slots:
    void foreignSignaturesAreTaggedAndComeBackWithTheirMaker();
    void adaptiveThinkingAsksForReasoningElsewhere();
    void decodesClaudeCodeRequest();
    void decodesStringContentAndToolChoice();
    void aSystemMessagesToolChangeIsKeptForPassthrough();
    void decodeRejectsBadBodies_data();
    void decodeRejectsBadBodies();
    void stopSequencesPastTheLimitAreRefused();
    void aWholeNumberedCountIsTaken();
    void anOverlongToolDescriptionIsNoContextOverflow_data();
    void anOverlongToolDescriptionIsNoContextOverflow();
    void encodesFullStreamLikeGolden();
    void redactedThinkingAndLateStart();
    void inBandErrorHasNoMessageStop();
    void errorBodyPerCategory_data();
    void errorBodyPerCategory();
    void encodesNonStreamingResponse();
    void namesTheStopSequenceOnlyForAPlainStop();
    void anotherApisToolIdIsMadeValidForTheNextTurn();
    void idsThatBecomeOneInMessagesCharactersAreRenamedInLinearTime();
};

void TestAnthropicMessagesCodec::decodesClaudeCodeRequest() {
    GatewayError err;
    const auto req =
        AnthropicMessagesCodec().decode(readTestData(QStringLiteral("anthropic_request_claude_code.json")), &err);
    QVERIFY2(req, qPrintable(err.message));
    QCOMPARE(req->model, QStringLiteral("claude-sonnet-4-5-20250929"));
    QVERIFY(req->stream);
    QVERIFY(req->context.systemPrompt.startsWith(QStringLiteral("You are Claude Code")));
    QVERIFY(req->context.systemPrompt.endsWith(QStringLiteral("before editing them.")));
    const auto &msgs = req->context.messages;
    // user, assistant, tool result, user "Go ahead.", assistant, tool result
    QCOMPARE(msgs.size(), 6);
    QCOMPARE(msgs[0].role, Role::User);
    QCOMPARE(msgs[0].content.size(), 3);
    QCOMPARE(msgs[0].content[2].type, BlockType::Image);
    QCOMPARE(msgs[0].content[2].mimeType, QStringLiteral("image/jpeg"));
    QCOMPARE(msgs[1].role, Role::Assistant);
    QCOMPARE(msgs[1].api, QStringLiteral("anthropic-messages"));
    QCOMPARE(msgs[1].content.size(), 4);
    QCOMPARE(msgs[1].content[0].type, BlockType::Thinking);
    QCOMPARE(msgs[1].content[0].signature, QStringLiteral("EqQBCkYIBBgCKkDsig"));
    QVERIFY(msgs[1].content[1].redacted);
    QVERIFY(msgs[1].content[1].signature.startsWith(QStringLiteral("EmwKAhgB")));
    QCOMPARE(msgs[1].content[3].type, BlockType::ToolCall);
    QCOMPARE(msgs[1].content[3].arguments.value(QStringLiteral("file_path")).toString(),
             QStringLiteral("/repo/foo.cpp"));
    // The tool result comes before the text that shared its user turn.
    QCOMPARE(msgs[2].role, Role::ToolResult);
    QCOMPARE(msgs[2].toolCallId, QStringLiteral("toolu_01A09q90qw90lq917835lq9"));
    QCOMPARE(msgs[2].toolName, QStringLiteral("Read"));
    QCOMPARE(msgs[2].content[0].text, QStringLiteral("int main() { return 1; }"));
    QCOMPARE(msgs[3].role, Role::User);
    QCOMPARE(msgs[3].content[0].text, QStringLiteral("Go ahead."));
    QCOMPARE(msgs[5].role, Role::ToolResult);
    QVERIFY(msgs[5].isError);
    QCOMPARE(msgs[5].content[0].text, QStringLiteral("exit code 8"));
    // Server tools are not function tools; they stay in raw for passthrough.
    QCOMPARE(req->context.tools.size(), 2);
    QCOMPARE(req->context.tools[1].name, QStringLiteral("Bash"));
    QCOMPARE(req->options.thinkingBudget, std::optional<int>(10000));
    QCOMPARE(req->options.maxTokens, std::optional<int>(32000));
    QCOMPARE(req->options.toolChoice, QStringLiteral("auto"));
    QCOMPARE(sw::wire::clientBodyQt(*req)
                 .value(QStringLiteral("metadata"))
                 .toObject()
                 .value(QStringLiteral("user_id"))
                 .toString(),
             QStringLiteral("user_2f1c_account__session_9a7b"));
    QVERIFY(sw::wire::clientBodyQt(*req)
                .value(QStringLiteral("system"))
                .toArray()
                .at(1)
                .toObject()
                .contains(QStringLiteral("cache_control")));
}

void TestAnthropicMessagesCodec::decodesStringContentAndToolChoice() {
    const QByteArray body = R"({"model":"claude-haiku-4-5","max_tokens":256,"system":"Be brief.",
        "messages":[{"role":"user","content":"Hello"},{"role":"assistant","content":"Hi"}],
        "tools":[{"name":"t","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"t"},
        "stop_sequences":["END"],"top_p":0.5})";
    const auto req = AnthropicMessagesCodec().decode(body, nullptr);
    QVERIFY(req);
    QVERIFY(!req->stream);
    QCOMPARE(req->context.systemPrompt, QStringLiteral("Be brief."));
    QCOMPARE(req->context.messages[0].content[0].text, QStringLiteral("Hello"));
    QCOMPARE(req->context.messages[1].content[0].text, QStringLiteral("Hi"));
    QCOMPARE(req->options.toolChoice, QStringLiteral("t"));
    QCOMPARE(req->options.stop, QStringList{QStringLiteral("END")});
    QCOMPARE(req->options.topP, std::optional<double>(0.5));
    const auto any = AnthropicMessagesCodec().decode(
        R"({"model":"m","messages":[],"tools":[{"name":"t","input_schema":{}}],"tool_choice":{"type":"any"}})",
        nullptr);
    QCOMPARE(any->options.toolChoice, QStringLiteral("required"));
}

// Probe AB3-F2: a system message between the turns may carry tool changes beside its words
// (tool_addition, tool_removal: LangChain and the Vercel AI SDK send them). The decoder refused the body
// with its own 400 ("a system message holds text blocks only"), on a route of Messages alone too. Its
// words join the system prompt; the tool change stays in the client's body, for passthrough.
void TestAnthropicMessagesCodec::aSystemMessagesToolChangeIsKeptForPassthrough() {
    GatewayError err;
    const auto req = AnthropicMessagesCodec().decode(
        R"({"model":"m","max_tokens":8,"system":"Be brief.","messages":[{"role":"user","content":"hi"},)"
        R"({"role":"system","content":[{"type":"tool_removal","tool":{"type":"tool_reference","name":"a"}},)"
        R"({"type":"text","text":"Tool a is gone."},{"type":"text","text":"Use b."}]}]})",
        &err);
    QVERIFY2(req, qPrintable(err.message));
    QCOMPARE(req->context.systemPrompt, QStringLiteral("Be brief.\n\nTool a is gone.\n\nUse b."));
    QCOMPARE(req->context.messages.size(), 1);
}

void TestAnthropicMessagesCodec::decodeRejectsBadBodies_data() {
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<QString>("field");
    QTest::newRow("not json") << QByteArray("{\"model\"") << QStringLiteral("JSON");
    QTest::newRow("no model") << QByteArray(R"({"max_tokens":1,"messages":[]})") << QStringLiteral("model");
    QTest::newRow("no messages") << QByteArray(R"({"model":"m","max_tokens":1})") << QStringLiteral("messages");
    QTest::newRow("messages string") << QByteArray(R"({"model":"m","messages":"hi"})") << QStringLiteral("messages");
    QTest::newRow("system number") << QByteArray(R"({"model":"m","messages":[],"system":1})")
                                   << QStringLiteral("system");
    QTest::newRow("role tool") << QByteArray(R"({"model":"m","messages":[{"role":"tool","content":"x"}]})")
                               << QStringLiteral("messages[0].role");
    QTest::newRow("content number") << QByteArray(R"({"model":"m","messages":[{"role":"user","content":1}]})")
                                    << QStringLiteral("messages[0].content");
    QTest::newRow("image without data")
        << QByteArray(
               R"({"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png"}}]}]})")
        << QStringLiteral("messages[0].content[0].source.data");
    QTest::newRow("tool_result without id")
        << QByteArray(R"({"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]})")
        << QStringLiteral("tool_use_id");
    QTest::newRow("system message block without type")
        << QByteArray(R"({"model":"m","messages":[{"role":"system","content":[{"text":"x"}]}]})")
        << QStringLiteral("messages[0].content[0].type");
    QTest::newRow("max_tokens string") << QByteArray(R"({"model":"m","messages":[],"max_tokens":"many"})")
                                       << QStringLiteral("max_tokens");
    // Counts that are no int: read as one they became 0, and a converted request asked for no tokens.
    QTest::newRow("max_tokens fraction") << QByteArray(R"({"model":"m","messages":[],"max_tokens":64.7})")
                                         << QStringLiteral("max_tokens: must be an integer");
    QTest::newRow("max_tokens past int") << QByteArray(R"({"model":"m","messages":[],"max_tokens":3000000000})")
                                         << QStringLiteral("max_tokens: must be an integer");
    QTest::newRow("max_tokens 1e30") << QByteArray(R"({"model":"m","messages":[],"max_tokens":1e30})")
                                     << QStringLiteral("max_tokens: must be an integer");
    QTest::newRow("max_tokens 0") << QByteArray(R"({"model":"m","messages":[],"max_tokens":0})")
                                  << QStringLiteral("max_tokens: must be an integer from 1");
    QTest::newRow("max_tokens negative") << QByteArray(R"({"model":"m","messages":[],"max_tokens":-5})")
                                         << QStringLiteral("max_tokens: must be an integer from 1");
    QTest::newRow("top_k fraction") << QByteArray(R"({"model":"m","messages":[],"max_tokens":8,"top_k":2.5})")
                                    << QStringLiteral("top_k: must be an integer");
    QTest::newRow("budget_tokens 1e30")
        << QByteArray(
               R"({"model":"m","messages":[],"max_tokens":8,"thinking":{"type":"enabled","budget_tokens":1e30}})")
        << QStringLiteral("thinking.budget_tokens: must be an integer");
}

void TestAnthropicMessagesCodec::decodeRejectsBadBodies() {
    QFETCH(QByteArray, body);
    QFETCH(QString, field);
    GatewayError err;
    QVERIFY(!AnthropicMessagesCodec().decode(body, &err));
    QCOMPARE(err.status, 400);
    QCOMPARE(err.category, ErrorCategory::InvalidRequest);
    QVERIFY2(err.message.contains(field), qPrintable(err.message));
    // The client sees it in Anthropic's shape.
    QCOMPARE(json(AnthropicMessagesCodec().encodeError(err))
                 .value(QStringLiteral("error"))
                 .toObject()
                 .value(QStringLiteral("type"))
                 .toString(),
             QStringLiteral("invalid_request_error"));
}

void TestAnthropicMessagesCodec::stopSequencesPastTheLimitAreRefused() {
    // The stop sequences an upstream cannot take (Chat takes 4, Gemini 5) the gateway matches in
    // the answer itself: a million of them held the engine thread for seconds (probe X2-F2). Up to
    // kStopSequenceLimit they are taken; past it, in number or in bytes, the request is a 400 in
    // Anthropic's shape that names the limit.
    const auto bodyOf = [](const QJsonArray &stops) {
        return QJsonDocument(QJsonObject{{"model", "m"},
                                         {"max_tokens", 8},
                                         {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "hi"}}}},
                                         {"stop_sequences", stops}})
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
    const auto atTheLimit = AnthropicMessagesCodec().decode(bodyOf(stops(most, each)), &error);
    QVERIFY2(atTheLimit, qPrintable(error.message));
    QCOMPARE(atTheLimit->options.stop.size(), most);
    QCOMPARE(atTheLimit->options.stop.last(), QString::number(most - 1).leftJustified(each, QLatin1Char('x')));
    for (const QJsonArray &refusedStops : {stops(most + 1, 1), stops(most, each + 1), stops(100000, 1)}) {
        GatewayError refused;
        QVERIFY(!AnthropicMessagesCodec().decode(bodyOf(refusedStops), &refused));
        QCOMPARE(refused.status, 400);
        const QJsonObject e = json(AnthropicMessagesCodec().encodeError(refused));
        QCOMPARE(e.value(QStringLiteral("type")).toString(), QStringLiteral("error"));
        const QJsonObject inner = e.value(QStringLiteral("error")).toObject();
        QCOMPARE(inner.value(QStringLiteral("type")).toString(), QStringLiteral("invalid_request_error"));
        const QString message = inner.value(QStringLiteral("message")).toString();
        QVERIFY2(message.startsWith(QStringLiteral("stop_sequences: ")) &&
                     message.contains(QStringLiteral("at most %1 of %2 bytes").arg(most).arg(kStopSequenceLimit.bytes)),
                 qPrintable(message));
    }
}

void TestAnthropicMessagesCodec::aWholeNumberedCountIsTaken() {
    // 64.0 is a whole number (Anthropic's own API takes it); the largest int is kept as it is.
    const auto req = AnthropicMessagesCodec().decode(
        R"({"model":"m","messages":[],"max_tokens":64.0,"top_k":0,"thinking":{"type":"enabled","budget_tokens":2e3}})",
        nullptr);
    QVERIFY(req);
    QCOMPARE(req->options.maxTokens, std::optional<int>(64));
    QCOMPARE(req->options.topK, std::optional<int>(0));
    QCOMPARE(req->options.thinkingBudget, std::optional<int>(2000));
    const auto most =
        AnthropicMessagesCodec().decode(R"({"model":"m","messages":[],"max_tokens":2147483647})", nullptr);
    QVERIFY(most);
    QCOMPARE(most->options.maxTokens, std::optional<int>(2147483647));
}

void TestAnthropicMessagesCodec::anOverlongToolDescriptionIsNoContextOverflow_data() {
    QTest::addColumn<QString>("param");
    QTest::addColumn<bool>("contextLength");
    QTest::newRow("a tool's description") << QStringLiteral("tools[0].function.description") << false;
    QTest::newRow("a call id in the history") << QStringLiteral("messages[2].tool_calls[0].id") << true;
    QTest::newRow("no param") << QString() << false;
    QTest::newRow("a turn's text") << QStringLiteral("messages[3].content") << true;
    QTest::newRow("Responses input") << QStringLiteral("input[5].content[0].text") << true;
    QTest::newRow("messages") << QStringLiteral("messages") << true;
    QTest::newRow("instructions") << QStringLiteral("instructions") << false;
}

void TestAnthropicMessagesCodec::anOverlongToolDescriptionIsNoContextOverflow() {
    // OpenAI's string_above_max_length names any string over its field's limit. Claude Code
    // compacts its conversation when it reads "prompt is too long": that helps only when the
    // field is the conversation, never for a tool's description.
    QFETCH(QString, param);
    QFETCH(bool, contextLength);
    GatewayError e = GatewayError::make(400, ErrorCategory::InvalidRequest,
                                        QStringLiteral("Invalid 'x': string too long. Expected a string with maximum "
                                                       "length 1024, but got a string with length 2256 instead."));
    e.upstreamApi = QStringLiteral("openai-completions");
    e.code = QStringLiteral("string_above_max_length");
    e.providerType = QStringLiteral("invalid_request_error");
    e.param = param;
    QCOMPARE(e.portable() == GatewayError::Portable::ContextLength, contextLength);
    const QJsonObject error = json(AnthropicMessagesCodec().encodeError(e)).value(QStringLiteral("error")).toObject();
    QCOMPARE(error.value(QStringLiteral("type")).toString(), QStringLiteral("invalid_request_error"));
    QCOMPARE(error.value(QStringLiteral("message")).toString().startsWith(QLatin1String("prompt is too long")),
             contextLength);
}

void TestAnthropicMessagesCodec::encodesFullStreamLikeGolden() {
    auto enc = AnthropicMessagesCodec().makeStreamEncoder(info());
    QByteArray out;
    for (const StreamEvent &e : sw::test::sampleAssistantStream())
        out += enc->encode(e);
    const QString diff = sw::test::sseDifference(out, readTestData(QStringLiteral("anthropic_stream_golden.sse")));
    QVERIFY2(diff.isEmpty(), qPrintable(diff + QStringLiteral("\n") + QString::fromUtf8(out)));
}

void TestAnthropicMessagesCodec::redactedThinkingAndLateStart() {
    // No Start and no TextStart: the encoder still opens the message and a block.
    auto enc = AnthropicMessagesCodec().makeStreamEncoder(info());
    StreamEvent redacted = makeEvent(EventType::ThinkingStart, 0);
    redacted.block.type = BlockType::Thinking;
    redacted.block.redacted = true;
    redacted.block.signature = QStringLiteral("opaque");
    QByteArray out = enc->encode(redacted);
    StreamEvent redactedEnd = redacted;
    redactedEnd.type = EventType::ThinkingEnd;
    out += enc->encode(redactedEnd);
    out += enc->encode(makeEvent(EventType::TextDelta, 1, QStringLiteral("Hi")));
    out += enc->encode(makeEvent(EventType::Done));
    const QList<sw::upstream::SseEvent> events = sw::test::splitSse(out);
    QStringList names;
    for (const auto &e : events)
        names << QString::fromUtf8(e.event);
    QCOMPARE(names, (QStringList{"message_start", "content_block_start", "content_block_stop", "content_block_start",
                                 "content_block_delta", "content_block_stop", "message_delta", "message_stop"}));
    const QJsonObject block = json(events[1].data).value(QStringLiteral("content_block")).toObject();
    QCOMPARE(block.value(QStringLiteral("type")).toString(), QStringLiteral("redacted_thinking"));
    QCOMPARE(block.value(QStringLiteral("data")).toString(), QStringLiteral("opaque"));
    QCOMPARE(json(events[3].data).value(QStringLiteral("index")).toInt(), 1);
    QVERIFY(!out.contains("signature_delta")); // redacted data is not a signature
    QCOMPARE(
        json(events[6].data).value(QStringLiteral("delta")).toObject().value(QStringLiteral("stop_reason")).toString(),
        QStringLiteral("end_turn"));
}

void TestAnthropicMessagesCodec::inBandErrorHasNoMessageStop() {
    auto enc = AnthropicMessagesCodec().makeStreamEncoder(info());
    QByteArray out = enc->encode(makeEvent(EventType::Start));
    out += enc->encode(makeEvent(EventType::TextStart, 0));
    out += enc->encode(makeEvent(EventType::TextDelta, 0, QStringLiteral("Hel")));
    StreamEvent err = makeEvent(EventType::Error);
    err.errorMessage = QStringLiteral("Anthropic stream error (overloaded_error): Overloaded");
    err.errorStatus = 529;
    out += enc->encode(err);
    out += enc->encode(makeEvent(EventType::Done));
    QVERIFY(!out.contains("message_stop"));
    const QByteArray tail = out.mid(out.lastIndexOf("event: "));
    QVERIFY(tail.startsWith("event: error\ndata: "));
    QVERIFY(tail.endsWith("}\n\n"));
    const QJsonObject body = json(tail.mid(tail.indexOf("data: ") + 6).trimmed());
    QCOMPARE(body.value(QStringLiteral("type")).toString(), QStringLiteral("error"));
    QCOMPARE(body.value(QStringLiteral("error")).toObject().value(QStringLiteral("type")).toString(),
             QStringLiteral("overloaded_error"));
    QCOMPARE(body.value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString(),
             err.errorMessage);
}

void TestAnthropicMessagesCodec::errorBodyPerCategory_data() {
    QTest::addColumn<int>("category");
    QTest::addColumn<QString>("type");
    QTest::newRow("400") << int(ErrorCategory::InvalidRequest) << "invalid_request_error";
    QTest::newRow("401") << int(ErrorCategory::Authentication) << "authentication_error";
    QTest::newRow("403") << int(ErrorCategory::Permission) << "permission_error";
    QTest::newRow("404") << int(ErrorCategory::NotFound) << "not_found_error";
    QTest::newRow("409") << int(ErrorCategory::Conflict) << "invalid_request_error";
    QTest::newRow("413") << int(ErrorCategory::PayloadTooLarge) << "request_too_large";
    QTest::newRow("415") << int(ErrorCategory::UnsupportedMedia) << "invalid_request_error";
    QTest::newRow("429") << int(ErrorCategory::RateLimit) << "rate_limit_error";
    QTest::newRow("500") << int(ErrorCategory::ServerError) << "api_error";
    QTest::newRow("529") << int(ErrorCategory::Overloaded) << "overloaded_error";
    QTest::newRow("504") << int(ErrorCategory::Timeout) << "api_error";
}

void TestAnthropicMessagesCodec::errorBodyPerCategory() {
    QFETCH(int, category);
    QFETCH(QString, type);
    const QJsonObject o = json(AnthropicMessagesCodec().encodeError(
        GatewayError::make(500, ErrorCategory(category), QStringLiteral("no candidate could answer"))));
    QCOMPARE(o.value(QStringLiteral("type")).toString(), QStringLiteral("error"));
    QCOMPARE(o.value(QStringLiteral("error")).toObject().value(QStringLiteral("type")).toString(), type);
    QCOMPARE(o.value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString(),
             QStringLiteral("no candidate could answer"));
}

void TestAnthropicMessagesCodec::encodesNonStreamingResponse() {
    AssistantMessage m;
    ContentBlock thinking;
    thinking.type = BlockType::Thinking;
    thinking.text = QStringLiteral("hmm");
    thinking.signature = QStringLiteral("sig");
    ContentBlock call;
    call.type = BlockType::ToolCall;
    call.toolCallId = QStringLiteral("toolu_1");
    call.toolName = QStringLiteral("Read");
    call.arguments = QJsonObject{{QStringLiteral("file_path"), QStringLiteral("/a")}};
    m.content << thinking << ContentBlock::makeText(QStringLiteral("Reading.")) << call;
    m.stopReason = StopReason::ToolUse;
    m.usage.input = 30;
    m.usage.cacheWrite = 100;
    m.usage.output = 12;
    const QJsonObject o = json(AnthropicMessagesCodec().encodeResponse(m, info()));
    QCOMPARE(o.value(QStringLiteral("type")).toString(), QStringLiteral("message"));
    QCOMPARE(o.value(QStringLiteral("id")).toString(), QStringLiteral("msg_sw1"));
    QCOMPARE(o.value(QStringLiteral("stop_reason")).toString(), QStringLiteral("tool_use"));
    const QJsonArray content = o.value(QStringLiteral("content")).toArray();
    QCOMPARE(content.size(), 3);
    QCOMPARE(content[0].toObject().value(QStringLiteral("signature")).toString(), QStringLiteral("sig"));
    QCOMPARE(content[1].toObject().value(QStringLiteral("text")).toString(), QStringLiteral("Reading."));
    QCOMPARE(
        content[2].toObject().value(QStringLiteral("input")).toObject().value(QStringLiteral("file_path")).toString(),
        QStringLiteral("/a"));
    const QJsonObject usage = o.value(QStringLiteral("usage")).toObject();
    QCOMPARE(usage.value(QStringLiteral("input_tokens")).toInt(), 30);
    QCOMPARE(usage.value(QStringLiteral("cache_creation_input_tokens")).toInt(), 100);
    QCOMPARE(usage.value(QStringLiteral("output_tokens")).toInt(), 12);
}

// The stop sequence the gateway cut at is named with stop_reason "stop_sequence", streamed and not;
// any other end keeps its own reason and a null stop_sequence.
void TestAnthropicMessagesCodec::namesTheStopSequenceOnlyForAPlainStop() {
    for (const StopReason reason : {StopReason::Stop, StopReason::Length, StopReason::ToolUse}) {
        const bool named = reason == StopReason::Stop;
        AssistantMessage m;
        m.content << ContentBlock::makeText(QStringLiteral("one, two"));
        m.stopReason = reason;
        m.stopSequence = QStringLiteral("\n\nHuman:");
        const QJsonObject o = json(AnthropicMessagesCodec().encodeResponse(m, info()));
        QCOMPARE(o.value(QStringLiteral("stop_reason")).toString(),
                 named ? QStringLiteral("stop_sequence") : QString(AnthropicMessagesCodec::stopReasonName(reason)));
        QCOMPARE(o.value(QStringLiteral("stop_sequence")),
                 named ? QJsonValue(QStringLiteral("\n\nHuman:")) : QJsonValue(QJsonValue::Null));

        auto enc = AnthropicMessagesCodec().makeStreamEncoder(info());
        StreamEvent done = makeEvent(EventType::Done);
        done.reason = reason;
        done.stopSequence = m.stopSequence;
        QByteArray out = enc->encode(makeEvent(EventType::TextDelta, 0, QStringLiteral("one")));
        out += enc->encode(done);
        QJsonObject delta;
        for (const auto &e : sw::test::splitSse(out))
            if (e.event == "message_delta")
                delta = json(e.data).value(QStringLiteral("delta")).toObject();
        QCOMPARE(delta.value(QStringLiteral("stop_reason")), o.value(QStringLiteral("stop_reason")));
        QCOMPARE(delta.value(QStringLiteral("stop_sequence")), o.value(QStringLiteral("stop_sequence")));
    }
}

void TestAnthropicMessagesCodec::anotherApisToolIdIsMadeValidForTheNextTurn() {
    // A Chat server of the Kimi kind names its calls "functions.get_weather:0". Told as it is, an
    // Anthropic client would send it back to whichever candidate answers the next turn, and
    // Anthropic refuses a tool_use id outside ^[a-zA-Z0-9_-]{1,64}$ with a 400 (no failover):
    // the conversation could not go on. The JSON answer and the stream say the same valid id.
    const QString foreign = QStringLiteral("functions.get_weather:0");
    const QString valid = QStringLiteral("functions_get_weather_0");
    AssistantMessage m;
    ContentBlock call;
    call.type = BlockType::ToolCall;
    call.toolCallId = foreign;
    call.toolName = QStringLiteral("get_weather");
    m.content << call;
    m.stopReason = StopReason::ToolUse;
    const QJsonObject o = json(AnthropicMessagesCodec().encodeResponse(m, info()));
    QCOMPARE(o.value(QStringLiteral("content")).toArray().at(0).toObject().value(QStringLiteral("id")).toString(),
             valid);

    auto enc = AnthropicMessagesCodec().makeStreamEncoder(info());
    StreamEvent start = makeEvent(EventType::ToolCallStart, 0);
    start.block = call;
    QString streamed;
    for (const auto &e : sw::test::splitSse(enc->encode(start)))
        if (e.event == "content_block_start")
            streamed =
                json(e.data).value(QStringLiteral("content_block")).toObject().value(QStringLiteral("id")).toString();
    QCOMPARE(streamed, valid);

    // Anthropic's own ids are told as they are.
    call.toolCallId = QStringLiteral("toolu_01A09q90qw90lq917835lq9");
    start.block = call;
    const QByteArray own = AnthropicMessagesCodec().makeStreamEncoder(info())->encode(start);
    QVERIFY2(own.contains("\"id\":\"toolu_01A09q90qw90lq917835lq9\""), own.constData());
}

void TestAnthropicMessagesCodec::foreignSignaturesAreTaggedAndComeBackWithTheirMaker() {
    // An answer made by a Responses upstream (after a failover): its reasoning item is the
    // signature. Claude Code stores the block and sends it back on the next turn.
    AssistantMessage m;
    ContentBlock thinking;
    thinking.type = BlockType::Thinking;
    thinking.text = QStringLiteral("Plan the edit.");
    thinking.signature = QStringLiteral(R"({"type":"reasoning","id":"rs_1","encrypted_content":"gAAA"})");
    ContentBlock call;
    call.type = BlockType::ToolCall;
    call.toolCallId = QStringLiteral("call_1");
    call.toolName = QStringLiteral("Edit");
    m.content << thinking << call;
    m.stopReason = StopReason::ToolUse;
    EncodeInfo info;
    info.responseId = QStringLiteral("msg_1");
    info.upstreamApi = QStringLiteral("openai-responses");
    const QJsonObject answer = QJsonDocument::fromJson(AnthropicMessagesCodec().encodeResponse(m, info)).object();
    const QString signature = answer.value("content").toArray()[0].toObject().value("signature").toString();
    QVERIFY2(signature.startsWith(QLatin1String("swsig1.openai-responses.")), qPrintable(signature));

    // From Anthropic itself, the signature is untouched.
    ContentBlock own = thinking;
    own.signature = QStringLiteral("EqQBCkYI");
    QCOMPARE(AnthropicMessagesCodec::signatureFor(own, QStringLiteral("anthropic-messages")),
             QStringLiteral("EqQBCkYI"));

    // A Google function call's thoughtSignature rides in an empty thinking block before the tool_use.
    ContentBlock gcall = call;
    gcall.signature = QStringLiteral("CiQB0e2K");
    AssistantMessage g;
    g.content << gcall;
    info.upstreamApi = QStringLiteral("google-generative-ai");
    const QJsonArray gContent =
        QJsonDocument::fromJson(AnthropicMessagesCodec().encodeResponse(g, info)).object().value("content").toArray();
    QCOMPARE(gContent.size(), 2);
    QCOMPARE(gContent[0].toObject().value("type").toString(), QStringLiteral("thinking"));

    // The next request: each block comes back knowing its maker; the carrier becomes the call's signature.
    QJsonArray history{answer.value("content").toArray()[0], gContent[0], gContent[1]};
    const QJsonObject body{{"model", "m"},
                           {"max_tokens", 100},
                           {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "go"}},
                                                   QJsonObject{{"role", "assistant"}, {"content", history}}}}};
    const auto req = AnthropicMessagesCodec().decode(QJsonDocument(body).toJson(), nullptr);
    QVERIFY(req);
    const Message &turn = req->context.messages[1];
    QCOMPARE(turn.content.size(), 2);
    QCOMPARE(turn.content[0].signatureApi, QStringLiteral("openai-responses"));
    QCOMPARE(turn.content[0].signature, thinking.signature);
    QCOMPARE(turn.content[1].type, BlockType::ToolCall);
    QCOMPARE(turn.content[1].signature, QStringLiteral("CiQB0e2K"));
    QCOMPARE(turn.content[1].signatureApi, QStringLiteral("google-generative-ai"));
}

// Adaptive thinking with no effort named thinks at Anthropic's default effort (high). It reached
// Chat, Responses and Gemini as "no reasoning asked" (probe Z3 5): no summary, nothing to replay.
void TestAnthropicMessagesCodec::adaptiveThinkingAsksForReasoningElsewhere() {
    const auto reasoningOf = [](const QJsonObject &extra) {
        QJsonObject body{{"model", "m"},
                         {"max_tokens", 100},
                         {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "hi"}}}}};
        for (auto it = extra.begin(); it != extra.end(); ++it)
            body.insert(it.key(), it.value());
        const auto req = AnthropicMessagesCodec().decode(QJsonDocument(body).toJson(QJsonDocument::Compact), nullptr);
        return req ? req->options.reasoning : QStringLiteral("(refused)");
    };
    QCOMPARE(reasoningOf({{"thinking", QJsonObject{{"type", "adaptive"}}}}), QStringLiteral("high"));
    QCOMPARE(reasoningOf(
                 {{"thinking", QJsonObject{{"type", "adaptive"}}}, {"output_config", QJsonObject{{"effort", "low"}}}}),
             QStringLiteral("low"));
    QCOMPARE(reasoningOf({}), QString());
    // With thinking off, effort says how much Claude writes, not how hard it thinks: no reasoning
    // is asked of another API (probe G2 8: gpt-5.1 started thinking, Gemini showed thoughts).
    const QJsonObject lowEffort{{"effort", "low"}};
    QCOMPARE(reasoningOf({{"thinking", QJsonObject{{"type", "disabled"}}}, {"output_config", lowEffort}}), QString());
    QCOMPARE(reasoningOf({{"output_config", lowEffort}}), QString());
    QCOMPARE(reasoningOf({{"thinking", QJsonObject{{"type", "enabled"}, {"budget_tokens", 2048}}},
                          {"output_config", lowEffort}}),
             QStringLiteral("low"));
}

// Ids unique where another API made them can be one in Messages' characters: "c" and a CJK
// character each, as thousands of a Chat server's calls of one answer were named, are all "c_".
// Each renamed call's search for a free name began at "c__2": 4 000 of them cost seconds of the
// engine thread, streamed or not (probe Y2 F2). Each is still told a name of its own, the same as
// before, and costs a lookup or two.
void TestAnthropicMessagesCodec::idsThatBecomeOneInMessagesCharactersAreRenamedInLinearTime() {
    constexpr int kCalls = 3000;
    AssistantMessage m;
    for (int i = 0; i < kCalls; ++i) {
        ContentBlock call;
        call.type = BlockType::ToolCall;
        call.toolCallId = QStringLiteral("c") + QChar(0x4E00 + i);
        call.toolName = QStringLiteral("f");
        m.content << call;
    }
    m.stopReason = StopReason::ToolUse;

    qint64 lookups = sw::wire::uniqueToolIdLookups();
    QStringList answered;
    for (const QJsonValue block : json(AnthropicMessagesCodec().encodeResponse(m, info())).value("content").toArray())
        answered << block.toObject().value("id").toString();
    const qint64 answerLookups = sw::wire::uniqueToolIdLookups() - lookups;

    lookups = sw::wire::uniqueToolIdLookups();
    auto enc = AnthropicMessagesCodec().makeStreamEncoder(info());
    QByteArray sse = enc->encode(makeEvent(EventType::Start));
    for (int i = 0; i < kCalls; ++i) {
        StreamEvent start = makeEvent(EventType::ToolCallStart, i);
        start.block = m.content[i];
        StreamEvent end = makeEvent(EventType::ToolCallEnd, i);
        end.block = m.content[i];
        sse += enc->encode(start) + enc->encode(end);
    }
    const qint64 streamLookups = sw::wire::uniqueToolIdLookups() - lookups;
    QStringList streamed;
    for (const auto &e : sw::test::splitSse(sse))
        if (e.event == "content_block_start")
            streamed << json(e.data).value("content_block").toObject().value("id").toString();

    for (const QStringList &told : {answered, streamed}) {
        QCOMPARE(told.size(), kCalls);
        QCOMPARE(told.first(), QStringLiteral("c_"));
        for (int i = 1; i < kCalls; ++i)
            QCOMPARE(told[i], QStringLiteral("c__%1").arg(i + 1));
    }
    // Each was about kCalls² / 2.
    QVERIFY2(answerLookups <= 3 * kCalls, qPrintable(QString::number(answerLookups)));
    QVERIFY2(streamLookups <= 3 * kCalls, qPrintable(QString::number(streamLookups)));
}

QTEST_GUILESS_MAIN(TestAnthropicMessagesCodec)
#include "test_anthropic_messages_codec.moc"
