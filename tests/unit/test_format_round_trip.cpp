// Upstream SSE of one API -> canonical events -> the other format's client SSE.
#include "core/formats/inbound_codec.h"
#include "core/model/event_accumulator.h"
#include "core/upstream/upstream_adapter.h"
#include "wire_fixtures.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

using namespace sw::model;
using namespace sw::formats;
using namespace sw::upstream;
using sw::test::readTestData;
namespace wire = sw::wire;

namespace {
QByteArray relay(const QString &upstreamApi, const QByteArray &upstreamSse, wire::Api client, const EncodeInfo &info) {
    const UpstreamAdapter *adapter = adapterFor(upstreamApi);
    if (!adapter)
        return {};
    auto decoder = adapter->makeDecoder(Target{});
    auto encoder = codecFor(client).makeStreamEncoder(info);
    QByteArray out;
    for (const StreamEvent &e : sw::test::decodeTranscript(*decoder, upstreamSse))
        out += encoder->encode(e);
    return out;
}
EncodeInfo info(const char *id) {
    EncodeInfo i;
    i.responseId = QString::fromLatin1(id);
    i.model = QStringLiteral("sonnet");
    i.createdSecs = 1764400000;
    i.includeUsage = true;
    return i;
}
} // namespace

class TestFormatRoundTrip : public QObject {
    Q_OBJECT
private slots:
    void anthropicUpstreamToOpenAIClient();
    void openAIUpstreamToAnthropicClient();
    void anthropicOverloadReachesOpenAIClientAsError();
    void openAICutStreamReachesAnthropicClientAsError();
    void nonStreamingAnswerFromAnthropicUpstreamForOpenAIClient();
    void googleSignatureCarrierBlockIsClosedForAnthropicClient();
    void everyCutOfATranscriptEndsWithExactlyOneTerminal_data();
    void everyCutOfATranscriptEndsWithExactlyOneTerminal();
    void aFinalFailureSaysSoInBandToTheGatewayInFront_data();
    void aFinalFailureSaysSoInBandToTheGatewayInFront();
};

void TestFormatRoundTrip::anthropicUpstreamToOpenAIClient() {
    const QByteArray out =
        relay(QStringLiteral("anthropic-messages"), readTestData(QStringLiteral("anthropic_upstream_full.sse")),
              wire::Api::OpenAICompletions, info("chatcmpl-rt"));
    const QString diff =
        sw::test::sseDifference(out, readTestData(QStringLiteral("roundtrip_anthropic_to_openai.sse")));
    QVERIFY2(diff.isEmpty(), qPrintable(diff));
}

void TestFormatRoundTrip::openAIUpstreamToAnthropicClient() {
    const QByteArray out =
        relay(QStringLiteral("openai-completions"), readTestData(QStringLiteral("openai_upstream_full.sse")),
              wire::Api::AnthropicMessages, info("msg_rt"));
    const QString diff =
        sw::test::sseDifference(out, readTestData(QStringLiteral("roundtrip_openai_to_anthropic.sse")));
    QVERIFY2(diff.isEmpty(), qPrintable(diff));
}

void TestFormatRoundTrip::anthropicOverloadReachesOpenAIClientAsError() {
    const QByteArray out =
        relay(QStringLiteral("anthropic-messages"), readTestData(QStringLiteral("anthropic_upstream_overloaded.sse")),
              wire::Api::OpenAICompletions, info("chatcmpl-x"));
    QVERIFY(out.contains("\"content\":\"Hel\""));
    QVERIFY(!out.contains("[DONE]"));
    const QByteArray last = out.mid(out.lastIndexOf("data: ") + 6).trimmed();
    const QJsonObject err = QJsonDocument::fromJson(last).object().value(QStringLiteral("error")).toObject();
    QCOMPARE(err.value(QStringLiteral("message")).toString(),
             QStringLiteral("Anthropic stream error (overloaded_error): Overloaded"));
    QCOMPARE(err.value(QStringLiteral("type")).toString(), QStringLiteral("server_error"));
}

void TestFormatRoundTrip::openAICutStreamReachesAnthropicClientAsError() {
    const QByteArray out =
        relay(QStringLiteral("openai-completions"), readTestData(QStringLiteral("openai_upstream_cut.sse")),
              wire::Api::AnthropicMessages, info("msg_x"));
    QVERIFY(out.contains("\"text\":\"Half an ans\""));
    QVERIFY(!out.contains("message_stop"));
    QVERIFY(out.contains("event: error\ndata: {"));
    QVERIFY(out.contains("stream ended before completion"));
}

void TestFormatRoundTrip::nonStreamingAnswerFromAnthropicUpstreamForOpenAIClient() {
    // A stream:false client: the upstream stream is folded and answered as one chat.completion.
    auto decoder = adapterFor(QStringLiteral("anthropic-messages"))->makeDecoder(Target{});
    EventAccumulator acc;
    acc.addAll(sw::test::decodeTranscript(*decoder, readTestData(QStringLiteral("anthropic_upstream_full.sse"))));
    const QJsonObject o = QJsonDocument::fromJson(
                              codecFor(wire::Api::OpenAICompletions).encodeResponse(acc.message(), info("chatcmpl-ns")))
                              .object();
    const QJsonObject choice = o.value(QStringLiteral("choices")).toArray().at(0).toObject();
    QCOMPARE(choice.value(QStringLiteral("finish_reason")).toString(), QStringLiteral("tool_calls"));
    const QJsonObject msg = choice.value(QStringLiteral("message")).toObject();
    QCOMPARE(msg.value(QStringLiteral("content")).toString(), QStringLiteral("Let me check that for you."));
    const QJsonObject fn =
        msg.value(QStringLiteral("tool_calls")).toArray().at(0).toObject().value(QStringLiteral("function")).toObject();
    const QJsonObject args =
        QJsonDocument::fromJson(fn.value(QStringLiteral("arguments")).toString().toUtf8()).object();
    QCOMPARE(args.value(QStringLiteral("location")).toString(), QStringLiteral("Paris, France"));
    QCOMPARE(o.value(QStringLiteral("usage")).toObject().value(QStringLiteral("completion_tokens")).toInt(), 89);
    QCOMPARE(o.value(QStringLiteral("usage")).toObject().value(QStringLiteral("prompt_tokens")).toInt(), 2520);
}

void TestFormatRoundTrip::googleSignatureCarrierBlockIsClosedForAnthropicClient() {
    // A Google function call's thoughtSignature rides to an Anthropic client in an empty thinking
    // block of its own before the tool_use. The SDK's stream reader (and Claude Code) requires
    // every content_block_start to get its content_block_stop before the next block starts.
    EncodeInfo fromGoogle = info("msg_g");
    fromGoogle.upstreamApi = QStringLiteral("google-generative-ai");
    const QByteArray out =
        relay(QStringLiteral("google-generative-ai"), readTestData(QStringLiteral("google_upstream_full.sse")),
              wire::Api::AnthropicMessages, fromGoogle);
    QVERIFY(out.contains("\"signature_delta\""));
    int open = -1;
    int started = 0;
    QStringList shape;
    for (const SseEvent &e : sw::test::splitSse(out)) {
        const QJsonObject o = QJsonDocument::fromJson(e.data).object();
        const QString type = o.value(QStringLiteral("type")).toString();
        const int index = o.value(QStringLiteral("index")).toInt(-1);
        if (type == QLatin1String("content_block_start")) {
            QVERIFY2(open < 0, qPrintable(QStringLiteral("block %1 starts while %2 is open").arg(index).arg(open)));
            QCOMPARE(index, started++);
            open = index;
            shape << QStringLiteral("start %1 %2")
                         .arg(index)
                         .arg(o.value(QStringLiteral("content_block"))
                                  .toObject()
                                  .value(QStringLiteral("type"))
                                  .toString());
        } else if (type == QLatin1String("content_block_delta")) {
            QCOMPARE(index, open);
        } else if (type == QLatin1String("content_block_stop")) {
            QCOMPARE(index, open);
            open = -1;
            shape << QStringLiteral("stop %1").arg(index);
        } else if (type == QLatin1String("message_stop")) {
            QVERIFY2(open < 0, qPrintable(QStringLiteral("message_stop with block %1 open").arg(open)));
        }
    }
    QCOMPARE(shape.join(QStringLiteral(", ")),
             QStringLiteral("start 0 thinking, stop 0, start 1 text, stop 1, start 2 thinking, stop 2, "
                            "start 3 tool_use, stop 3"));
    QVERIFY2(out.contains("event: message_stop"), out.constData());
}

void TestFormatRoundTrip::everyCutOfATranscriptEndsWithExactlyOneTerminal_data() {
    QTest::addColumn<QString>("api");
    QTest::addColumn<QString>("file");
    QTest::newRow("anthropic") << "anthropic-messages"
                               << "anthropic_upstream_full.sse";
    QTest::newRow("openai") << "openai-completions"
                            << "openai_upstream_full.sse";
}

void TestFormatRoundTrip::everyCutOfATranscriptEndsWithExactlyOneTerminal() {
    // Whatever point the connection drops at, the client gets one ending: never none, never two.
    QFETCH(QString, api);
    QFETCH(QString, file);
    const QList<SseEvent> all = sw::test::splitSse(readTestData(file));
    QVERIFY(all.size() > 5);
    for (qsizetype cut = 0; cut <= all.size(); ++cut) {
        auto decoder = adapterFor(api)->makeDecoder(Target{});
        QList<StreamEvent> events;
        for (qsizetype i = 0; i < cut; ++i)
            events += decoder->feed(all[i]);
        events += decoder->finish();
        events += decoder->finish();
        int terminals = 0;
        for (const StreamEvent &e : events)
            terminals += e.type == EventType::Done || e.type == EventType::Error;
        QVERIFY2(terminals == 1,
                 qPrintable(QStringLiteral("cut after %1 events: %2 terminals").arg(cut).arg(terminals)));
        if (cut == all.size())
            QCOMPARE(events.last().type, EventType::Done);
        // Both sides of the relay survive it: the encoded stream ends in exactly one terminator.
        auto encoder = codecFor(wire::Api::AnthropicMessages).makeStreamEncoder(info("msg_cut"));
        QByteArray out;
        for (const StreamEvent &e : events)
            out += encoder->encode(e);
        QCOMPARE(out.count("event: message_stop") + out.count("event: error"), 1);
    }
    // Garbage between events is ignored, not fatal.
    auto decoder = adapterFor(api)->makeDecoder(Target{});
    SseEvent junk;
    junk.data = "{not json";
    for (const StreamEvent &e : decoder->feed(junk))
        QVERIFY(e.type != EventType::Done && e.type != EventType::Error);
}

QTEST_GUILESS_MAIN(TestFormatRoundTrip)
#include "test_format_round_trip.moc"

// A Switchman's stream head is out before its upstreams answer, so its final failure (every candidate
// walked, the last one retried) goes in band. The gateway in front reads "should_retry": false from
// it in each API a Switchman serves and is asked in, as it reads x-should-retry from an error head,
// and does not walk that chain again (probe AB1 F2). A failure not final says nothing of the kind.
void TestFormatRoundTrip::aFinalFailureSaysSoInBandToTheGatewayInFront_data() {
    QTest::addColumn<wire::Api>("api");
    QTest::addColumn<bool>("saidFinal");
    for (const wire::Api api : {wire::Api::OpenAICompletions, wire::Api::AnthropicMessages, wire::Api::OpenAIResponses})
        for (const bool saidFinal : {true, false})
            QTest::addRow("%s, %s", qPrintable(wire::apiName(api)), saidFinal ? "final" : "not final")
                << api << saidFinal;
}

void TestFormatRoundTrip::aFinalFailureSaysSoInBandToTheGatewayInFront() {
    QFETCH(wire::Api, api);
    QFETCH(bool, saidFinal);
    auto encoder = codecFor(api).makeStreamEncoder(info("id-final"));
    QByteArray sse = encoder->encode(StreamEvent{});
    GatewayError error = GatewayError::make(503, ErrorCategory::Overloaded, QStringLiteral("every candidate is down"));
    if (saidFinal)
        error.shouldRetry = false;
    sse += encoder->encodeError(error);
    const UpstreamAdapter *adapter = adapterFor(wire::apiName(api));
    QVERIFY(adapter);
    auto decoder = adapter->makeDecoder(Target{});
    const QList<StreamEvent> events = sw::test::decodeTranscript(*decoder, sse);
    QVERIFY(!events.isEmpty());
    QCOMPARE(events.last().type, EventType::Error);
    QVERIFY2(!events.last().errorType.isEmpty(), "typed: the loop reads its own words (inBandUpstreamError)");
    QCOMPARE(events.last().errorFinal, saidFinal);
}
