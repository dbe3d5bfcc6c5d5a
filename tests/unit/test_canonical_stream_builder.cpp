#include "core/upstream/anthropic_adapter.h"
#include "core/upstream/canonical_stream_builder.h"
#include "core/upstream/openai_completions_adapter.h"
#include "core/upstream/openai_responses_adapter.h"
#include "wire_fixtures.h"

#include <QtTest>

using namespace sw::model;
using namespace sw::upstream;
namespace wire = sw::wire;

class TestCanonicalStreamBuilder : public QObject {
    Q_OBJECT
private slots:
    void startComesOnceAndFirst();
    void blocksAreNumberedInStartOrderAndEndCarriesTheWholeBlock();
    void closeAllEndsBlocksInKeyOrder();
    void manyBlocksOpenAtOnceKeepTheirOwnText();
    void nothingFollowsTheTerminalEvent();
    void unfinishedBodyFailsOnce();
    void sequencedReleasesInterleavedBlocksOneAtATime();
    void anAnswerOfMoreBlocksThanTheBoundFails();
    void heldEventsOfLaterBlocksAreBounded();
    void aBuilderThatKeepsNoTextStillStreamsIt();
    void skipKeepsNoNativeAnswer();
    void nativeIsKeptOnlyForANonStreamingClientOfTheSameApi();
};

namespace {
QList<EventType> types(const QList<StreamEvent> &events) {
    QList<EventType> out;
    for (const StreamEvent &e : events)
        out << e.type;
    return out;
}
} // namespace

void TestCanonicalStreamBuilder::startComesOnceAndFirst() {
    CanonicalStreamBuilder b;
    b.usage().input = 7;
    b.open(3, BlockType::Text); // a block before any start: the start comes first anyway
    b.start(QStringLiteral("resp_1"));
    const QList<StreamEvent> out = b.take();
    QCOMPARE(types(out), (QList<EventType>{EventType::Start, EventType::TextStart}));
    QCOMPARE(out[0].usage.input, qint64(7));
    QVERIFY(b.started());
}

void TestCanonicalStreamBuilder::blocksAreNumberedInStartOrderAndEndCarriesTheWholeBlock() {
    CanonicalStreamBuilder b;
    b.start();
    b.open(9, BlockType::Thinking);
    ContentBlock call;
    call.type = BlockType::ToolCall;
    call.toolName = QStringLiteral("get_weather");
    b.open(2, call);
    b.append(9, QStringLiteral("hm"));
    b.append(2, QStringLiteral("{\"city\":"));
    b.append(2, QStringLiteral("\"Paris\"}"));
    b.append(2, QString());              // an empty delta says nothing
    b.append(5, QStringLiteral("lost")); // no block open under 5
    b.close(2);
    const QList<StreamEvent> out = b.take();
    QCOMPARE(types(out), (QList<EventType>{EventType::Start, EventType::ThinkingStart, EventType::ToolCallStart,
                                           EventType::ThinkingDelta, EventType::ToolCallDelta, EventType::ToolCallDelta,
                                           EventType::ToolCallEnd}));
    QCOMPARE(out[1].contentIndex, 0);
    QCOMPARE(out[2].contentIndex, 1);
    const StreamEvent &end = out.last();
    QCOMPARE(end.contentIndex, 1);
    QCOMPARE(end.block.toolName, QStringLiteral("get_weather"));
    QCOMPARE(end.block.argumentsJson, QStringLiteral("{\"city\":\"Paris\"}"));
    QCOMPARE(end.block.arguments.value(QLatin1String("city")).toString(), QStringLiteral("Paris"));
    QVERIFY(b.find(9));
    QVERIFY(!b.find(2));
}

void TestCanonicalStreamBuilder::closeAllEndsBlocksInKeyOrder() {
    CanonicalStreamBuilder b;
    b.open(4, BlockType::Text);
    b.open(1, BlockType::Text);
    b.open(std::numeric_limits<int>::min(), BlockType::Thinking);
    b.take();
    b.done(StopReason::Stop);
    const QList<StreamEvent> out = b.take();
    QCOMPARE(types(out),
             (QList<EventType>{EventType::ThinkingEnd, EventType::TextEnd, EventType::TextEnd, EventType::Done}));
    QCOMPARE(out[1].contentIndex, 1); // key 1 was opened second
    QCOMPARE(out[2].contentIndex, 0);
}

void TestCanonicalStreamBuilder::manyBlocksOpenAtOnceKeepTheirOwnText() {
    // Five parallel tool calls, more than the builder keeps inline, opened out of key order
    // and fed interleaved; one closes early and its key opens a new block.
    CanonicalStreamBuilder b;
    for (int key : {3, 0, 4, 1, 2}) {
        ContentBlock call;
        call.type = BlockType::ToolCall;
        call.toolName = QStringLiteral("tool%1").arg(key);
        b.open(key, call);
    }
    for (int round = 0; round < 2; ++round)
        for (int key : {0, 1, 2, 3, 4})
            b.append(key, QString::number(key));
    b.close(1);
    b.open(1, BlockType::Text);
    b.append(1, QStringLiteral("after"));
    b.take();
    b.closeAll();
    const QList<StreamEvent> out = b.take();
    QCOMPARE(out.size(), 5);
    const int keys[] = {0, 1, 2, 3, 4};
    for (int i = 0; i < 5; ++i) {
        const int key = keys[i];
        if (key == 1) {
            QCOMPARE(out[i].type, EventType::TextEnd);
            QCOMPARE(out[i].block.text, QStringLiteral("after"));
            QCOMPARE(out[i].contentIndex, 5);
            continue;
        }
        QCOMPARE(out[i].type, EventType::ToolCallEnd);
        QCOMPARE(out[i].block.toolName, QStringLiteral("tool%1").arg(key));
        QCOMPARE(out[i].block.argumentsJson, QString::number(key) + QString::number(key));
    }
    QCOMPARE(out[0].contentIndex, 1); // key 0 was opened second
}

void TestCanonicalStreamBuilder::nothingFollowsTheTerminalEvent() {
    CanonicalStreamBuilder b;
    b.open(0, BlockType::Text);
    b.append(0, QStringLiteral("partial"));
    b.usage().output = 3;
    b.fail(QStringLiteral("overloaded"), QStringLiteral("overloaded_error"), 529);
    b.append(0, QStringLiteral("more"));
    b.done(StopReason::Stop);
    b.endOfBody();
    const QList<StreamEvent> out = b.take();
    // An error ends a broken answer: its open block gets no End.
    QCOMPARE(types(out),
             (QList<EventType>{EventType::Start, EventType::TextStart, EventType::TextDelta, EventType::Error}));
    QCOMPARE(out.last().errorStatus, std::optional<int>(529));
    QCOMPARE(out.last().errorType, QStringLiteral("overloaded_error"));
    QCOMPARE(out.last().usage.output, qint64(3));
    QVERIFY(b.finished());
}

void TestCanonicalStreamBuilder::unfinishedBodyFailsOnce() {
    CanonicalStreamBuilder b;
    b.start();
    b.endOfBody();
    b.endOfBody();
    const QList<StreamEvent> out = b.take();
    QCOMPARE(types(out), (QList<EventType>{EventType::Start, EventType::Error}));
    QCOMPARE(out.last().errorMessage, QStringLiteral("stream ended before completion"));
    QCOMPARE(out.last().reason, StopReason::Error);
}

void TestCanonicalStreamBuilder::sequencedReleasesInterleavedBlocksOneAtATime() {
    CanonicalStreamBuilder b(/*sequenced=*/true);
    b.open(0, BlockType::ToolCall);
    b.open(1, BlockType::ToolCall);
    b.append(1, QStringLiteral("{}"));
    b.append(0, QStringLiteral("{}"));
    QCOMPARE(types(b.take()), (QList<EventType>{EventType::Start, EventType::ToolCallStart, EventType::ToolCallDelta}));
    b.done(StopReason::ToolUse);
    const QList<StreamEvent> out = b.take();
    QCOMPARE(types(out), (QList<EventType>{EventType::ToolCallEnd, EventType::ToolCallStart, EventType::ToolCallDelta,
                                           EventType::ToolCallEnd, EventType::Done}));
    QCOMPARE(out[0].contentIndex, 0);
    QCOMPARE(out[1].contentIndex, 1);
}

void TestCanonicalStreamBuilder::anAnswerOfMoreBlocksThanTheBoundFails() {
    // Tool calls opened in descending key order and never closed (the worst order for a sorted
    // array): the one past kMaxContentBlocks fails the stream as unreadable (502, fails over
    // before commit), nothing after it is said, and what the sequencer held is not released.
    for (bool sequenced : {false, true}) {
        CanonicalStreamBuilder b(sequenced);
        int starts = 0;
        QList<StreamEvent> all;
        for (int key = 100000; key > 100000 - CanonicalStreamBuilder::kMaxContentBlocks - 10; --key) {
            b.open(key, BlockType::ToolCall);
            b.append(key, QStringLiteral("{}"));
        }
        b.done(StopReason::ToolUse);
        all = b.take();
        for (const StreamEvent &e : std::as_const(all))
            starts += e.type == EventType::ToolCallStart;
        QCOMPARE(b.blockCount(), CanonicalStreamBuilder::kMaxContentBlocks);
        QCOMPARE(all.last().type, EventType::Error);
        QCOMPARE(all.last().errorStatus, std::optional<int>(502));
        QCOMPARE(all.last().errorType, QStringLiteral("invalid_response"));
        QVERIFY2(all.last().errorMessage.contains(QStringLiteral("more than 4096 content blocks")),
                 qPrintable(all.last().errorMessage));
        QCOMPARE(starts, sequenced ? 1 : CanonicalStreamBuilder::kMaxContentBlocks);
        QVERIFY(b.finished());
        QVERIFY(b.take().isEmpty());
    }
    // At the bound exactly, the answer is whole.
    CanonicalStreamBuilder ok(/*sequenced=*/true);
    for (int key = 0; key < CanonicalStreamBuilder::kMaxContentBlocks; ++key)
        ok.open(key, BlockType::ToolCall);
    ok.done(StopReason::ToolUse);
    const QList<StreamEvent> out = ok.take();
    QCOMPARE(out.last().type, EventType::Done);
    QCOMPARE(out.size(), 2 + 2 * CanonicalStreamBuilder::kMaxContentBlocks);
}

void TestCanonicalStreamBuilder::heldEventsOfLaterBlocksAreBounded() {
    // Tool call 0 stays open while tool call 1 streams: 1's events wait behind it, out of the
    // client's queue. Past kMaxSequencedHoldBytes the stream fails and the held events go.
    CanonicalStreamBuilder b(/*sequenced=*/true);
    b.open(0, BlockType::ToolCall);
    b.open(1, BlockType::ToolCall);
    QCOMPARE(types(b.take()), (QList<EventType>{EventType::Start, EventType::ToolCallStart}));
    const QString piece(64 * 1024, QLatin1Char('a'));
    QList<StreamEvent> out;
    int rounds = 0;
    while (!b.finished() && rounds < 1000) {
        b.append(1, piece);
        out = b.take();
        ++rounds;
        if (!b.finished())
            QVERIFY(out.isEmpty());
    }
    QVERIFY(b.finished());
    // 64 Ki characters weigh 128 KiB (and each event a little): failed once past 8 MiB, not before.
    QCOMPARE(rounds, 64);
    QCOMPARE(types(out), (QList<EventType>{EventType::Error}));
    QCOMPARE(out.last().errorStatus, std::optional<int>(502));
}

void TestCanonicalStreamBuilder::aBuilderThatKeepsNoTextStillStreamsIt() {
    // An Anthropic or Chat streaming client never needs a block whole: its deltas go out and are
    // not kept, a tool call's arguments as much as text (a 60 MB call held 120 MB a stream).
    CanonicalStreamBuilder b;
    b.setKeepsText(false);
    b.open(0, BlockType::Text);
    QVERIFY(!b.hasText(0));
    b.append(0, QStringLiteral("hello "));
    b.append(0, QStringLiteral("world"));
    QVERIFY(b.hasText(0));
    QCOMPARE(b.find(0)->text, QString());
    b.open(1, BlockType::ToolCall);
    b.append(1, QStringLiteral("{\"a\":1}"));
    b.done(StopReason::ToolUse);
    const QList<StreamEvent> out = b.take();
    QCOMPARE(types(out), (QList<EventType>{EventType::Start, EventType::TextStart, EventType::TextDelta,
                                           EventType::TextDelta, EventType::ToolCallStart, EventType::ToolCallDelta,
                                           EventType::TextEnd, EventType::ToolCallEnd, EventType::Done}));
    QCOMPARE(out[2].delta + out[3].delta, QStringLiteral("hello world"));
    QCOMPARE(out[6].block.text, QString());
    QCOMPARE(out[5].delta, QStringLiteral("{\"a\":1}"));
    QCOMPARE(out[7].block.argumentsJson, QString());
    QVERIFY(out[7].block.arguments.isEmpty());
}

void TestCanonicalStreamBuilder::skipKeepsNoNativeAnswer() {
    // The same Anthropic stream, decoded for a client that gets the native answer and for
    // one that does not: the canonical events are the same, only the native body differs.
    const QByteArray sse =
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\","
        "\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":5}}}\n\n"
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
        "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
        "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
        "\"usage\":{\"output_tokens\":2}}\n\n"
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    auto keep = AnthropicAdapter().makeDecoder(Target(), NativeBody::Keep);
    auto skip = AnthropicAdapter().makeDecoder(Target(), NativeBody::Skip);
    const QList<StreamEvent> kept = sw::test::decodeTranscript(*keep, sse);
    const QList<StreamEvent> skipped = sw::test::decodeTranscript(*skip, sse);
    QCOMPARE(types(kept), types(skipped));
    QCOMPARE(kept.last().type, EventType::Done);
    QCOMPARE(kept.last().native.value(QLatin1String("id")).toString(), QStringLiteral("msg_1"));
    QCOMPARE(kept.last().native.value(QLatin1String("content")).toArray().at(0).toObject().value(QLatin1String("text")),
             QJsonValue(QStringLiteral("Hi")));
    QVERIFY(skipped.last().native.isEmpty());
    QCOMPARE(skipped.last().usage.output, qint64(2));
}

void TestCanonicalStreamBuilder::nativeIsKeptOnlyForANonStreamingClientOfTheSameApi() {
    ChatRequest request;
    request.sourceApi = wire::Api::OpenAIResponses;
    request.stream = false;
    QCOMPARE(OpenAIResponsesAdapter().nativeBodyFor(request), NativeBody::Keep);
    QCOMPARE(OpenAICompletionsAdapter().nativeBodyFor(request), NativeBody::Skip); // another API's shape
    request.stream = true;
    QCOMPARE(OpenAIResponsesAdapter().nativeBodyFor(request), NativeBody::Skip); // it streams its own events
}

QTEST_GUILESS_MAIN(TestCanonicalStreamBuilder)
#include "test_canonical_stream_builder.moc"
