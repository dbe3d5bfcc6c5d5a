// A same-API stream passes the upstream's frames through, under the event line of the type the
// gateway read each frame as: the data's own "type". An event line the data contradicts
// (`event: error` over a text delta made the Anthropic SDK throw on an answer the gateway
// billed as a success), one with control bytes, or any on a Chat stream (which has none: the
// openai SDK hands unknown names over unparsed) never reaches the client as sent (probe A3 3).
#include "gateway_fixture.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QTest>

using namespace sw;
using namespace sw::test;

namespace {

QByteArray frame(const QByteArray &eventLine, const QJsonObject &data) {
    return (eventLine.isNull() ? QByteArray() : "event: " + eventLine + "\n") +
           "data: " + QJsonDocument(data).toJson(QJsonDocument::Compact) + "\n\n";
}

QByteArray anthropicStream(const QByteArray &deltaEvent) {
    const QJsonObject message{{"id", "msg_1"},
                              {"type", "message"},
                              {"role", "assistant"},
                              {"model", "claude-a"},
                              {"content", QJsonArray{}},
                              {"stop_reason", QJsonValue()},
                              {"usage", QJsonObject{{"input_tokens", 3}, {"output_tokens", 1}}}};
    return frame("message_start", {{"type", "message_start"}, {"message", message}}) +
           frame("content_block_start", {{"type", "content_block_start"},
                                         {"index", 0},
                                         {"content_block", QJsonObject{{"type", "text"}, {"text", ""}}}}) +
           frame(deltaEvent, {{"type", "content_block_delta"},
                              {"index", 0},
                              {"delta", QJsonObject{{"type", "text_delta"}, {"text", "hello"}}}}) +
           frame({}, {{"type", "content_block_stop"}, {"index", 0}}) + // no event line at all
           frame("message_delta", {{"type", "message_delta"},
                                   {"delta", QJsonObject{{"stop_reason", "end_turn"}}},
                                   {"usage", QJsonObject{{"output_tokens", 2}}}}) +
           frame("message_stop", {{"type", "message_stop"}});
}

// The event lines of an SSE body, in order ("" for a frame without one).
QList<QByteArray> eventLines(const QByteArray &body) {
    QList<QByteArray> lines;
    const QList<QByteArray> frames = body.split('\n');
    QByteArray pending;
    bool named = false;
    for (const QByteArray &line : frames) {
        if (line.startsWith("event: ")) {
            pending = line.mid(7);
            named = true;
        } else if (line.startsWith("data: ")) {
            lines << (named ? pending : QByteArray(""));
            named = false;
        }
    }
    return lines;
}

} // namespace

class TestPassthroughEventNames : public QObject {
    Q_OBJECT
private slots:
    void anAnthropicFrameGoesUnderItsOwnType_data() {
        QTest::addColumn<QByteArray>("deltaEvent");
        QTest::addRow("error over a text delta") << QByteArray("error");
        QTest::addRow("control bytes") << QByteArray("content_block_delta\x01\x7f");
        QTest::addRow("a long name") << QByteArray(4096, 'x');
        QTest::addRow("as Anthropic sends it") << QByteArray("content_block_delta");
    }
    void anAnthropicFrameGoesUnderItsOwnType() {
        QFETCH(QByteArray, deltaEvent);
        GatewayFixture gw;
        gw.anthropicA.setRawReply(anthropicStream(deltaEvent));
        gw.start();
        const HttpResult r =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), true));
        QCOMPARE(r.status, 200);
        QCOMPARE(eventLines(r.body), (QList<QByteArray>{"message_start", "content_block_start", "content_block_delta",
                                                        "content_block_stop", "message_delta", "message_stop"}));
        QVERIFY2(r.body.contains("\"text\":\"hello\""), r.body.constData());
    }

    void aChatStreamHasNoEventLines() {
        GatewayFixture gw;
        const auto chunk = [](const QJsonObject &delta, const QJsonValue &finish) {
            return QJsonObject{
                {"id", "c"},
                {"object", "chat.completion.chunk"},
                {"model", "gpt-b"},
                {"choices", QJsonArray{QJsonObject{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
        };
        gw.openaiB.setRawReply(frame("thread.message.delta", chunk({{"role", "assistant"}, {"content", "hi"}}, {})) +
                               frame("error", chunk({{"content", " there"}}, {})) +
                               frame({}, chunk({}, QStringLiteral("stop"))) + "data: [DONE]\n\n");
        gw.start();
        const HttpResult r = gw.post(QStringLiteral("/v1/chat/completions"),
                                     GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("x"), true));
        QCOMPARE(r.status, 200);
        QVERIFY2(!r.body.contains("event:"), r.body.constData());
        QVERIFY2(r.body.contains("\"content\":\"hi\"") && r.body.contains("\"content\":\" there\""),
                 r.body.constData());
        QVERIFY2(r.body.contains("data: [DONE]"), r.body.constData());
    }
};

QTEST_GUILESS_MAIN(TestPassthroughEventNames)
#include "test_passthrough_event_names.moc"
