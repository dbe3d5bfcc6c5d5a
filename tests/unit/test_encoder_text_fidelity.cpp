// Whatever text a model produces reaches the client unchanged: every client format's
// stream and answer, read back by a reader of that format, gives the same text, thinking
// and tool arguments, and no text can end an SSE frame or the stream early.
#include "core/formats/inbound_codec.h"
#include "core/model/event_accumulator.h"
#include "core/upstream/upstream_adapter.h"
#include "core/wire/api.h"
#include "wire_fixtures.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

using namespace sw::model;
using namespace sw::formats;
namespace wire = sw::wire;
using sw::test::makeEvent;

namespace {

// Characters an encoder must escape or pass as UTF-8, and text that looks like SSE framing.
QString hostileText() {
    return QString::fromUtf16(u"quote \" backslash \\ slash / nul ") + QChar(0) +
           QString::fromUtf16(u" controls \u0001\u001f\t tab\r\nnew line\n\ndata: [DONE]\n\nevent: message_stop\n"
                              u" separators \u2028\u2029 astral \U0001F600 cjk \u4e2d\u6587 </script> \u00e9");
}

QJsonObject hostileArguments() {
    return QJsonObject{{QStringLiteral("query"), hostileText()}, {QStringLiteral("n"), 3}};
}

QList<StreamEvent> hostileStream() {
    QList<StreamEvent> s;
    s << makeEvent(EventType::Start);
    StreamEvent ts = makeEvent(EventType::ThinkingStart, 0);
    ts.block.type = BlockType::Thinking;
    s << ts << makeEvent(EventType::ThinkingDelta, 0, hostileText());
    StreamEvent te = makeEvent(EventType::ThinkingEnd, 0);
    te.block.type = BlockType::Thinking;
    te.block.text = hostileText();
    te.block.signature = QStringLiteral("sig");
    s << te << makeEvent(EventType::TextStart, 1);
    const QString text = hostileText();
    for (qsizetype i = 0; i < text.size(); i += 7) // deltas that split escapes and pairs anywhere
        s << makeEvent(EventType::TextDelta, 1, text.mid(i, 7));
    StreamEvent textEnd = makeEvent(EventType::TextEnd, 1);
    textEnd.block.text = text;
    s << textEnd;
    StreamEvent call = makeEvent(EventType::ToolCallStart, 2);
    call.block.type = BlockType::ToolCall;
    call.block.toolCallId = QStringLiteral("call_1");
    call.block.toolName = QStringLiteral("search");
    const QString args = QString::fromUtf8(QJsonDocument(hostileArguments()).toJson(QJsonDocument::Compact));
    s << call << makeEvent(EventType::ToolCallDelta, 2, args);
    StreamEvent callEnd = call;
    callEnd.type = EventType::ToolCallEnd;
    callEnd.block.argumentsJson = args;
    callEnd.block.arguments = hostileArguments();
    s << callEnd;
    StreamEvent done = makeEvent(EventType::Done);
    done.reason = StopReason::ToolUse;
    done.usage.input = 5;
    done.usage.output = 7;
    s << done;
    return s;
}

EncodeInfo info() {
    EncodeInfo i;
    i.responseId = QStringLiteral("resp_1");
    i.model = QString::fromUtf16(u"m\u00f6del \"q\"");
    i.createdSecs = 1764400000;
    i.upstreamApi = QStringLiteral("google-generative-ai"); // another API: the encoders write every field
    return i;
}

QByteArray encodeStream(wire::Api api) {
    auto encoder = codecFor(api).makeStreamEncoder(info());
    QByteArray out;
    for (const StreamEvent &e : hostileStream())
        out += encoder->encode(e);
    return out;
}

QString textOf(const AssistantMessage &m, BlockType type) {
    QString out;
    for (const ContentBlock &b : m.content)
        if (b.type == type)
            out += b.text;
    return out;
}

} // namespace

class TestEncoderTextFidelity : public QObject {
    Q_OBJECT
private slots:
    void streamReadsBackUnchanged_data();
    void streamReadsBackUnchanged();
    void everyFrameIsOneJsonDataLine_data();
    void everyFrameIsOneJsonDataLine();
    void answersCarryTheTextUnchanged();
};

void TestEncoderTextFidelity::streamReadsBackUnchanged_data() {
    QTest::addColumn<int>("api");
    QTest::newRow("openai-chat") << int(wire::Api::OpenAICompletions);
    QTest::newRow("anthropic-messages") << int(wire::Api::AnthropicMessages);
    QTest::newRow("openai-responses") << int(wire::Api::OpenAIResponses);
}

void TestEncoderTextFidelity::streamReadsBackUnchanged() {
    // The client format's own reader (the gateway's upstream decoder for that API) sees what the model said.
    QFETCH(int, api);
    const auto clientApi = wire::Api(api);
    const QByteArray sse = encodeStream(clientApi);
    const auto *adapter = sw::upstream::adapterFor(QString(wire::apiName(clientApi)));
    QVERIFY(adapter);
    sw::upstream::Target target;
    target.api = QString(wire::apiName(clientApi));
    auto decoder = adapter->makeDecoder(target);
    EventAccumulator acc;
    acc.addAll(sw::test::decodeTranscript(*decoder, sse));
    QVERIFY(acc.isFinished());
    const AssistantMessage m = acc.message();
    QCOMPARE(m.stopReason, StopReason::ToolUse);
    QCOMPARE(textOf(m, BlockType::Text), hostileText());
    QCOMPARE(textOf(m, BlockType::Thinking), hostileText());
    bool sawCall = false;
    for (const ContentBlock &b : m.content) {
        if (b.type != BlockType::ToolCall)
            continue;
        sawCall = true;
        QCOMPARE(b.toolName, QStringLiteral("search"));
        QCOMPARE(b.arguments, hostileArguments());
    }
    QVERIFY(sawCall);
}

void TestEncoderTextFidelity::everyFrameIsOneJsonDataLine_data() {
    QTest::addColumn<int>("api");
    QTest::newRow("openai-chat") << int(wire::Api::OpenAICompletions);
    QTest::newRow("anthropic-messages") << int(wire::Api::AnthropicMessages);
    QTest::newRow("openai-responses") << int(wire::Api::OpenAIResponses);
    QTest::newRow("pi") << int(wire::Api::Pi);
}

void TestEncoderTextFidelity::everyFrameIsOneJsonDataLine() {
    QFETCH(int, api);
    const QByteArray sse = encodeStream(wire::Api(api));
    QVERIFY(sse.endsWith("\n\n"));
    int frames = 0;
    int done = 0;
    for (const QByteArray &frame : sse.split('\n')) {
        if (frame.isEmpty() || frame.startsWith("event: "))
            continue;
        QVERIFY2(frame.startsWith("data: "), frame.constData());
        if (frame == "data: [DONE]") {
            ++done;
            continue;
        }
        QJsonParseError error{};
        QJsonDocument::fromJson(frame.mid(6), &error);
        QVERIFY2(error.error == QJsonParseError::NoError, frame.left(200).constData());
        ++frames;
    }
    QVERIFY(frames > 10);
    // The text's own "data: [DONE]" never became a frame: only the real end (chat, pi) has one.
    QCOMPARE(done, wire::Api(api) == wire::Api::OpenAICompletions || wire::Api(api) == wire::Api::Pi ? 1 : 0);
}

void TestEncoderTextFidelity::answersCarryTheTextUnchanged() {
    EventAccumulator acc;
    acc.addAll(hostileStream());
    const AssistantMessage m = acc.message();
    auto parse = [](const QByteArray &json) {
        QJsonParseError error{};
        const QJsonObject o = QJsonDocument::fromJson(json, &error).object();
        if (error.error != QJsonParseError::NoError)
            qWarning("invalid JSON: %s", json.left(200).constData());
        return o;
    };
    const QJsonObject chat = parse(codecFor(wire::Api::OpenAICompletions).encodeResponse(m, info()));
    const QJsonObject chatMessage = chat.value("choices").toArray().at(0).toObject().value("message").toObject();
    QCOMPARE(chat.value("model").toString(), info().model);
    QCOMPARE(chatMessage.value("content").toString(), hostileText());
    QCOMPARE(chatMessage.value("reasoning_content").toString(), hostileText());
    const QString chatArgs = chatMessage.value("tool_calls")
                                 .toArray()
                                 .at(0)
                                 .toObject()
                                 .value("function")
                                 .toObject()
                                 .value("arguments")
                                 .toString();
    QCOMPARE(QJsonDocument::fromJson(chatArgs.toUtf8()).object(), hostileArguments());

    const QJsonObject anthropic = parse(codecFor(wire::Api::AnthropicMessages).encodeResponse(m, info()));
    const QJsonArray blocks = anthropic.value("content").toArray();
    QCOMPARE(blocks.at(0).toObject().value("thinking").toString(), hostileText());
    QCOMPARE(blocks.at(1).toObject().value("text").toString(), hostileText());
    QCOMPARE(blocks.at(2).toObject().value("input").toObject(), hostileArguments());

    const QJsonObject responses = parse(codecFor(wire::Api::OpenAIResponses).encodeResponse(m, info()));
    QCOMPARE(responses.value("output_text").toString(), hostileText());
    const QJsonArray output = responses.value("output").toArray();
    QCOMPARE(output.at(0).toObject().value("summary").toArray().at(0).toObject().value("text").toString(),
             hostileText());
    QCOMPARE(QJsonDocument::fromJson(output.at(2).toObject().value("arguments").toString().toUtf8()).object(),
             hostileArguments());

    const QJsonObject pi = parse(codecFor(wire::Api::Pi).encodeResponse(m, info()));
    const QJsonArray piContent = pi.value("message").toObject().value("content").toArray();
    QCOMPARE(piContent.at(0).toObject().value("thinking").toString(), hostileText());
    QCOMPARE(piContent.at(1).toObject().value("text").toString(), hostileText());
    QCOMPARE(piContent.at(2).toObject().value("arguments").toObject(), hostileArguments());
}

QTEST_GUILESS_MAIN(TestEncoderTextFidelity)
#include "test_encoder_text_fidelity.moc"
