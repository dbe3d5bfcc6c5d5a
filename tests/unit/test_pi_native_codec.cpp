#include "core/formats/pi_native_codec.h"
#include "wire_fixtures.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QtTest>

using namespace sw::model;
using namespace sw::formats;
using sw::test::readTestData;
using sw::test::sampleAssistantStream;

namespace {
EncodeInfo info() {
    EncodeInfo i;
    i.responseId = QStringLiteral("req_1");
    i.model = QStringLiteral("sonnet");
    i.createdSecs = 1764400000;
    i.upstreamApi = QStringLiteral("anthropic-messages");
    i.upstreamProvider = QStringLiteral("anthropic");
    return i;
}
QJsonObject json(const QByteArray &b) {
    return QJsonDocument::fromJson(b).object();
}
} // namespace

class TestPiNativeCodec : public QObject {
    Q_OBJECT
private slots:
    void decodesStreamProxyBodyWithModelObject();
    void aSignatureAnotherApiMadeReachesTheProxyTaggedAndComesBackAsItsMakers();
    void modelIdAndStreamFalse();
    void decodeRejectsBadBodies_data();
    void decodeRejectsBadBodies();
    void streamIsAssistantMessageEventsEndedByDone();
    void errorAfterHeadersEndsWithTheErrorEvent();
    void nonStreamingAnswerIsMessage();
    void usageCarriesTheConfiguredCost();
    void abortedTurnsAreLeftOutAndUnansweredCallsGetAnErrorResult();
    void aResultAnswersOneCallOfItsIdOnly();
};

void TestPiNativeCodec::decodesStreamProxyBodyWithModelObject() {
    GatewayError err;
    const auto req = PiNativeCodec().decode(readTestData(QStringLiteral("pi_request_stream_proxy.json")), &err);
    QVERIFY2(req, qPrintable(err.message));
    QCOMPARE(req->model, QStringLiteral("sonnet")); // the Model object's id routes
    QVERIFY(req->stream);                           // pi native streams by default
    QCOMPARE(req->context.systemPrompt, QStringLiteral("You are a weather assistant."));
    QCOMPARE(req->options.reasoning, QStringLiteral("medium"));
    QCOMPARE(req->options.maxTokens, std::optional<int>(4096));
    QCOMPARE(*req->options.temperature, 0.2);
    const auto &m = req->context.messages;
    QCOMPARE(m.size(), 3);
    QCOMPARE(m[0].content[1].type, BlockType::Image);
    QCOMPARE(m[0].content[1].data, QByteArray("iVBORw0KGgo="));
    QCOMPARE(m[1].api, QStringLiteral("anthropic-messages")); // pi says which API made the turn
    QCOMPARE(m[1].content[0].signature, QStringLiteral("sig-abc"));
    QCOMPARE(m[1].content[2].toolCallId, QStringLiteral("toolu_01"));
    QCOMPARE(m[2].role, Role::ToolResult);
    QCOMPARE(m[2].toolName, QStringLiteral("get_weather"));
    QCOMPARE(req->context.tools.size(), 1);
}

// pi's stream proxy files an answer under its own Model's api: a thinking signature Gemini made
// after a failover, sent raw, came back as Anthropic's and was refused there on every later turn
// (probe X3 F3). It goes tagged with its maker, and decodes as the maker's.
void TestPiNativeCodec::aSignatureAnotherApiMadeReachesTheProxyTaggedAndComesBackAsItsMakers() {
    GatewayError err;
    const auto proxied = PiNativeCodec().decode(readTestData(QStringLiteral("pi_request_stream_proxy.json")), &err);
    QVERIFY2(proxied, qPrintable(err.message));
    QCOMPARE(PiNativeCodec::proxyModelApi(*proxied), QStringLiteral("anthropic-messages"));
    const auto byId = PiNativeCodec().decode(R"({"modelId":"sonnet","context":{"messages":[]}})", &err);
    QVERIFY(byId);
    QVERIFY(PiNativeCodec::proxyModelApi(*byId).isEmpty());

    const auto thinkingEnd = [](const EncodeInfo &i) {
        auto encoder = PiNativeCodec().makeStreamEncoder(i);
        for (const auto &e : sw::test::splitSse([&] {
                 QByteArray sse;
                 for (const auto &ev : sampleAssistantStream())
                     sse += encoder->encode(ev);
                 return sse;
             }()))
            if (e.data != "[DONE]" && json(e.data).value("type").toString() == QStringLiteral("thinking_end"))
                return json(e.data).value("contentSignature").toString();
        return QString();
    };
    EncodeInfo fromGemini = info();
    fromGemini.upstreamApi = QStringLiteral("google-generative-ai");
    fromGemini.clientApi = QStringLiteral("anthropic-messages");
    const QString tagged = thinkingEnd(fromGemini);
    QCOMPARE(tagged, QStringLiteral("swsig1.google-generative-ai.sig-abc"));
    // The API the proxy files it under made it, or a client that is told the answer's api: raw.
    EncodeInfo fromAnthropic = info();
    fromAnthropic.clientApi = QStringLiteral("anthropic-messages");
    QCOMPARE(thinkingEnd(fromAnthropic), QStringLiteral("sig-abc"));
    fromGemini.clientApi.clear();
    QCOMPARE(thinkingEnd(fromGemini), QStringLiteral("sig-abc"));

    // Sent back in a turn the proxy files as Anthropic's: Gemini's signature, not Anthropic's.
    const QByteArray body = R"({"model":{"id":"sonnet","api":"anthropic-messages","provider":"anthropic"},)"
                            R"("context":{"messages":[{"role":"user","content":"hi"},)"
                            R"({"role":"assistant","api":"anthropic-messages","provider":"anthropic","model":"sonnet",)"
                            R"("content":[{"type":"thinking","thinking":"t","thinkingSignature":")" +
                            tagged.toUtf8() +
                            R"("},{"type":"text","text":"ok"}],"stopReason":"stop"},)"
                            R"({"role":"user","content":"again"}]}})";
    const auto back = PiNativeCodec().decode(body, &err);
    QVERIFY2(back, qPrintable(err.message));
    const ContentBlock &thinking = back->context.messages[1].content[0];
    QCOMPARE(thinking.signature, QStringLiteral("sig-abc"));
    QCOMPARE(thinking.signatureApi, QStringLiteral("google-generative-ai"));
    QVERIFY(!thinking.redacted);
}

void TestPiNativeCodec::modelIdAndStreamFalse() {
    const auto req = PiNativeCodec().decode(
        R"({"modelId":"demo","model":"ignored","stream":false,"context":{"messages":[{"role":"user","content":"hi"}]}})",
        nullptr);
    QVERIFY(req);
    QCOMPARE(req->model, QStringLiteral("demo"));
    QVERIFY(!req->stream);
}

void TestPiNativeCodec::decodeRejectsBadBodies_data() {
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<QString>("field");
    QTest::newRow("not json") << QByteArray("[") << "JSON";
    QTest::newRow("no model") << QByteArray(R"({"context":{"messages":[]}})") << "modelId";
    QTest::newRow("no context") << QByteArray(R"({"modelId":"m"})") << "context";
    QTest::newRow("bad role") << QByteArray(R"({"modelId":"m","context":{"messages":[{"role":"system"}]}})")
                              << "context.messages[0].role";
}

void TestPiNativeCodec::decodeRejectsBadBodies() {
    QFETCH(QByteArray, body);
    QFETCH(QString, field);
    GatewayError err;
    QVERIFY(!PiNativeCodec().decode(body, &err));
    QCOMPARE(err.status, 400);
    QVERIFY2(err.message.contains(field), qPrintable(err.message));
    const QJsonObject e = json(PiNativeCodec().encodeError(err)).value("error").toObject();
    QCOMPARE(e.value("type").toString(), QStringLiteral("invalid_request_error"));
    QCOMPARE(e.value("message").toString(), err.message);
}

void TestPiNativeCodec::streamIsAssistantMessageEventsEndedByDone() {
    auto encoder = PiNativeCodec().makeStreamEncoder(info());
    QByteArray sse;
    for (const auto &e : sampleAssistantStream())
        sse += encoder->encode(e);
    QVERIFY(sse.endsWith("data: [DONE]\n\n"));
    QList<QJsonObject> events;
    for (const auto &e : sw::test::splitSse(sse)) {
        QVERIFY(e.event.isEmpty()); // data-only frames
        if (e.data != "[DONE]")
            events << json(e.data);
    }
    QStringList types;
    for (const auto &o : events)
        types << o.value("type").toString();
    QCOMPARE(types, QStringList({"start", "thinking_start", "thinking_delta", "thinking_end", "text_start",
                                 "text_delta", "text_delta", "text_end", "toolcall_start", "toolcall_delta",
                                 "toolcall_delta", "toolcall_end", "done"}));
    QCOMPARE(events[0].value("partial").toObject().value("role").toString(), QStringLiteral("assistant"));
    QCOMPARE(events[3].value("content").toString(), QStringLiteral("Weather needs a lookup."));
    QCOMPARE(events[3].value("contentSignature").toString(), QStringLiteral("sig-abc"));
    QCOMPARE(events[5].value("contentIndex").toInt(), 1);
    QCOMPARE(events[7].value("content").toString(), QStringLiteral("Checking now."));
    QCOMPARE(events[8].value("id").toString(), QStringLiteral("call_1"));
    QCOMPARE(events[8].value("toolName").toString(), QStringLiteral("get_weather"));
    const QJsonObject call = events[11].value("toolCall").toObject();
    QCOMPARE(call.value("type").toString(), QStringLiteral("toolCall"));
    QCOMPARE(call.value("arguments").toObject().value("location").toString(), QStringLiteral("Paris"));
    const QJsonObject done = events.last();
    QCOMPARE(done.value("reason").toString(), QStringLiteral("toolUse"));
    const QJsonObject message = done.value("message").toObject();
    QCOMPARE(message.value("stopReason").toString(), QStringLiteral("toolUse"));
    QCOMPARE(message.value("api").toString(), QStringLiteral("anthropic-messages"));
    QCOMPARE(message.value("content").toArray().size(), 3);
    QCOMPARE(message.value("content").toArray()[0].toObject().value("thinkingSignature").toString(),
             QStringLiteral("sig-abc"));
    const QJsonObject usage = message.value("usage").toObject();
    QCOMPARE(usage.value("input").toInt(), 472);
    QCOMPARE(usage.value("cacheRead").toInt(), 2048);
    QCOMPARE(usage.value("output").toInt(), 89);
    QCOMPARE(usage.value("totalTokens").toInt(), 472 + 2048 + 89);
}

void TestPiNativeCodec::errorAfterHeadersEndsWithTheErrorEvent() {
    auto encoder = PiNativeCodec().makeStreamEncoder(info());
    const auto events = sampleAssistantStream();
    QByteArray sse = encoder->encode(events[0]); // one statement each: the order of + operands is unspecified
    sse += encoder->encode(events[4]);
    sse += encoder->encode(events[5]);
    sse += encoder->encodeError(GatewayError::make(529, ErrorCategory::Overloaded, QStringLiteral("Overloaded")));
    sse += encoder->encode(events.last()); // nothing after the failure
    // The error event ends the stream: [DONE] would read as a finished answer.
    QCOMPARE(sse.count("[DONE]"), 0);
    const auto frames = sw::test::splitSse(sse);
    const QJsonObject error = json(frames.last().data);
    QCOMPARE(error.value("type").toString(), QStringLiteral("error"));
    QCOMPARE(error.value("reason").toString(), QStringLiteral("error"));
    const QJsonObject partial = error.value("error").toObject();
    QCOMPARE(partial.value("stopReason").toString(), QStringLiteral("error"));
    QCOMPARE(partial.value("errorMessage").toString(), QStringLiteral("Overloaded"));
    QCOMPARE(partial.value("content").toArray()[0].toObject().value("text").toString(), QStringLiteral("Checking "));
}

void TestPiNativeCodec::nonStreamingAnswerIsMessage() {
    AssistantMessage m;
    m.content << ContentBlock::makeText(QStringLiteral("Hi."));
    m.usage.input = 3;
    m.usage.output = 1;
    m.api = QStringLiteral("google-generative-ai");
    const QJsonObject message = json(PiNativeCodec().encodeResponse(m, info())).value("message").toObject();
    QCOMPARE(message.value("role").toString(), QStringLiteral("assistant"));
    QCOMPARE(message.value("api").toString(), QStringLiteral("google-generative-ai"));
    QCOMPARE(message.value("stopReason").toString(), QStringLiteral("stop"));
    QCOMPARE(message.value("content").toArray()[0].toObject().value("text").toString(), QStringLiteral("Hi."));
    QCOMPARE(message.value("usage").toObject().value("totalTokens").toInt(), 4);
}

void TestPiNativeCodec::usageCarriesTheConfiguredCost() {
    // pi shows usage.cost as the turn's cost: it said 0 while the ledger priced the same row. At
    // $3 / $15 per million tokens, 1000 in (and 200 read from cache) and 500 out cost
    // $0.0036 + $0.0075, in the JSON answer and on the stream's done event.
    EncodeInfo priced = info();
    priced.costInput = 3;
    priced.costOutput = 15;
    priced.costCacheRead = 3; // a model without a cache price: its input price (config::ModelConfig::cacheReadPrice)
    AssistantMessage m;
    m.content << ContentBlock::makeText(QStringLiteral("Hi."));
    m.usage.input = 1000;
    m.usage.cacheRead = 200;
    m.usage.output = 500;
    const auto checkCost = [](const QJsonObject &usage) {
        const QJsonObject cost = usage.value("cost").toObject();
        QCOMPARE(cost.value("input").toDouble(), 0.003);
        QCOMPARE(cost.value("cacheRead").toDouble(), 0.0006);
        QCOMPARE(cost.value("output").toDouble(), 0.0075);
        QVERIFY(qFuzzyCompare(cost.value("total").toDouble(), 0.0111));
    };
    checkCost(json(PiNativeCodec().encodeResponse(m, priced)).value("message").toObject().value("usage").toObject());

    auto encoder = PiNativeCodec().makeStreamEncoder(priced);
    StreamEvent done;
    done.type = EventType::Done;
    done.usage = m.usage;
    QJsonObject doneEvent;
    for (const auto &e : sw::test::splitSse(encoder->encode(done)))
        if (json(e.data).value("type").toString() == QLatin1String("done"))
            doneEvent = json(e.data);
    checkCost(doneEvent.value("usage").toObject());
    checkCost(doneEvent.value("message").toObject().value("usage").toObject());
    // A model without prices costs nothing.
    QCOMPARE(json(PiNativeCodec().encodeResponse(m, info()))
                 .value("message")
                 .toObject()
                 .value("usage")
                 .toObject()
                 .value("cost")
                 .toObject()
                 .value("total")
                 .toDouble(),
             0.0);
}

QTEST_GUILESS_MAIN(TestPiNativeCodec)
#include "test_pi_native_codec.moc"

void TestPiNativeCodec::aResultAnswersOneCallOfItsIdOnly() {
    // Two calls of one answer under one id (DeepSeek, GLM, Kimi), of which the user let one run: its
    // result answered both, and the other went up with no result, which Chat and Messages refuse
    // ("tool_call_ids did not have response messages"). It gets the error result an unanswered call
    // gets, and the adapters pair each with its own call by occurrence (probe JV M4).
    GatewayError err;
    const auto ok = PiNativeCodec().decode(R"({"modelId":"m","context":{"messages":[
        {"role":"user","content":"weather, and read a.txt"},
        {"role":"assistant","stopReason":"toolUse","content":[
            {"type":"toolCall","id":"call_0","name":"get_weather","arguments":{}},
            {"type":"toolCall","id":"call_0","name":"read_file","arguments":{}}]},
        {"role":"toolResult","toolCallId":"call_0","toolName":"get_weather","content":[{"type":"text","text":"rain"}]},
        {"role":"user","content":"never mind the file"}
    ]}})",
                                           &err);
    QVERIFY2(ok, qPrintable(err.message));
    const auto &m = ok->context.messages;
    QCOMPARE(m.size(), 5);
    QCOMPARE(m[2].content[0].text, QStringLiteral("rain"));
    QCOMPARE(m[3].role, Role::ToolResult);
    QCOMPARE(m[3].toolCallId, QStringLiteral("call_0"));
    QCOMPARE(m[3].toolName, QStringLiteral("read_file"));
    QVERIFY(m[3].isError);
    QCOMPARE(m[4].role, Role::User);
}

void TestPiNativeCodec::abortedTurnsAreLeftOutAndUnansweredCallsGetAnErrorResult() {
    // pi keeps an aborted or failed turn in its context and leaves it to each provider to drop
    // (pi-ai's transformMessages), and the same for a call the user interrupted. Forwarded as
    // they were, the next provider refused the request: a tool call without its result, or
    // reasoning without the item that follows it, and no failover gets past a 400. The aborted
    // turn here was cut while pi made a call (no name yet): it is dropped, not refused.
    GatewayError err;
    const auto ok = PiNativeCodec().decode(R"({"modelId":"m","context":{"messages":[
        {"role":"user","content":"weather in Oslo?"},
        {"role":"assistant","stopReason":"aborted","content":[{"type":"thinking","thinking":"let me"},
            {"type":"toolCall","id":"t1","name":"","arguments":{}}]},
        {"role":"user","content":"try again"},
        {"role":"assistant","stopReason":"error","content":[{"type":"text","text":"half an ans"}]},
        {"role":"assistant","stopReason":"toolUse","content":[
            {"type":"toolCall","id":"t2","name":"get_weather","arguments":{"city":"Oslo"}},
            {"type":"toolCall","id":"t3","name":"get_time","arguments":{"city":"Oslo"}}]},
        {"role":"toolResult","toolCallId":"t2","toolName":"get_weather","content":[{"type":"text","text":"rain"}]},
        {"role":"user","content":"never mind the time"},
        {"role":"assistant","stopReason":"toolUse","content":[
            {"type":"toolCall","id":"t4","name":"get_time","arguments":{}}]}
    ]}})",
                                           &err);
    QVERIFY2(ok, qPrintable(err.message));
    const auto &m = ok->context.messages;
    QStringList shape;
    for (const Message &msg : m)
        shape << (msg.role == Role::User        ? QStringLiteral("user")
                  : msg.role == Role::Assistant ? QStringLiteral("assistant")
                                                : QStringLiteral("result:") + msg.toolCallId);
    QCOMPARE(shape,
             QStringList({"user", "user", "assistant", "result:t2", "result:t3", "user", "assistant", "result:t4"}));
    QCOMPARE(m[2].content.size(), 2); // the kept turn's two calls; the aborted t1 is nowhere
    QVERIFY(!m[3].isError);
    QCOMPARE(m[3].content[0].text, QStringLiteral("rain"));
    for (int i : {4, 7}) {
        QVERIFY(m[i].isError);
        QCOMPARE(m[i].content[0].text, QStringLiteral("No result provided"));
    }
    QCOMPARE(m[4].toolName, QStringLiteral("get_time"));
}
