#include "core/model/block_sequencer.h"
#include "core/model/event_accumulator.h"
#include "wire_fixtures.h"

#include <QtTest>

using namespace sw::model;
using sw::test::makeEvent;

class TestEventAccumulator : public QObject {
    Q_OBJECT
private slots:
    void sequencerStreamsOneBlockAtATime();
    void foldsTextThinkingAndToolCallInOrder();
    void deltaWithoutStartStillBuildsBlock();
    void errorKeepsPartialContentAndMessage();
    void unparseableToolArgumentsBecomeEmptyObject();
};

void TestEventAccumulator::foldsTextThinkingAndToolCallInOrder() {
    EventAccumulator acc;
    acc.add(makeEvent(EventType::Start));
    acc.add(makeEvent(EventType::ThinkingStart, 0));
    acc.add(makeEvent(EventType::ThinkingDelta, 0, QStringLiteral("Let me ")));
    acc.add(makeEvent(EventType::ThinkingDelta, 0, QStringLiteral("think.")));
    StreamEvent thinkingEnd = makeEvent(EventType::ThinkingEnd, 0);
    thinkingEnd.block.type = BlockType::Thinking;
    thinkingEnd.block.text = QStringLiteral("Let me think.");
    thinkingEnd.block.signature = QStringLiteral("sig-1");
    acc.add(thinkingEnd);
    acc.add(makeEvent(EventType::TextStart, 1));
    acc.add(makeEvent(EventType::TextDelta, 1, QStringLiteral("Hello")));
    acc.add(makeEvent(EventType::TextDelta, 1, QStringLiteral(", world")));
    acc.add(makeEvent(EventType::TextEnd, 1));
    StreamEvent toolStart = makeEvent(EventType::ToolCallStart, 2);
    toolStart.block.toolCallId = QStringLiteral("call_1");
    toolStart.block.toolName = QStringLiteral("get_weather");
    acc.add(toolStart);
    acc.add(makeEvent(EventType::ToolCallDelta, 2, QStringLiteral("{\"city\":")));
    acc.add(makeEvent(EventType::ToolCallDelta, 2, QStringLiteral("\"Paris\"}")));
    QVERIFY(!acc.isFinished());
    StreamEvent done = makeEvent(EventType::Done);
    done.reason = StopReason::ToolUse;
    done.usage.input = 10;
    done.usage.output = 20;
    done.usage.cacheRead = 5;
    acc.add(done);

    QVERIFY(acc.isFinished());
    const AssistantMessage m = acc.takeMessage();
    QCOMPARE(m.content.size(), 3);
    QCOMPARE(m.content[0].type, BlockType::Thinking);
    QCOMPARE(m.content[0].text, QStringLiteral("Let me think."));
    QCOMPARE(m.content[0].signature, QStringLiteral("sig-1"));
    QCOMPARE(m.content[1].type, BlockType::Text);
    QCOMPARE(m.content[1].text, QStringLiteral("Hello, world"));
    QCOMPARE(m.content[2].type, BlockType::ToolCall);
    QCOMPARE(m.content[2].toolCallId, QStringLiteral("call_1"));
    QCOMPARE(m.content[2].toolName, QStringLiteral("get_weather"));
    // Arguments were never given whole: they are parsed from the streamed text at the end.
    QCOMPARE(m.content[2].arguments.value(QStringLiteral("city")).toString(), QStringLiteral("Paris"));
    QCOMPARE(m.stopReason, StopReason::ToolUse);
    QCOMPARE(m.usage.totalTokens(), 35);
}

void TestEventAccumulator::deltaWithoutStartStillBuildsBlock() {
    EventAccumulator acc;
    acc.add(makeEvent(EventType::TextDelta, 0, QStringLiteral("a")));
    acc.add(makeEvent(EventType::TextDelta, 0, QStringLiteral("b")));
    acc.add(makeEvent(EventType::Done));
    QCOMPARE(acc.message().content.size(), 1);
    QCOMPARE(acc.message().content[0].text, QStringLiteral("ab"));
}

void TestEventAccumulator::errorKeepsPartialContentAndMessage() {
    EventAccumulator acc;
    acc.add(makeEvent(EventType::TextStart, 0));
    acc.add(makeEvent(EventType::TextDelta, 0, QStringLiteral("partial")));
    StreamEvent err = makeEvent(EventType::Error);
    err.reason = StopReason::Error;
    err.errorMessage = QStringLiteral("Anthropic stream error (overloaded_error): Overloaded");
    err.errorStatus = 529;
    acc.add(err);
    const AssistantMessage &m = acc.message();
    QVERIFY(acc.isFinished());
    QCOMPARE(m.stopReason, StopReason::Error);
    QCOMPARE(m.errorMessage, err.errorMessage);
    QCOMPARE(m.errorStatus, std::optional<int>(529));
    QCOMPARE(m.content.value(0).text, QStringLiteral("partial"));
}

void TestEventAccumulator::unparseableToolArgumentsBecomeEmptyObject() {
    EventAccumulator acc;
    acc.add(makeEvent(EventType::ToolCallStart, 0));
    acc.add(makeEvent(EventType::ToolCallDelta, 0, QStringLiteral("{\"cut")));
    acc.add(makeEvent(EventType::Done));
    QCOMPARE(acc.message().content[0].argumentsJson, QStringLiteral("{\"cut"));
    QVERIFY(acc.message().content[0].arguments.isEmpty());
}

void TestEventAccumulator::sequencerStreamsOneBlockAtATime() {
    auto ev = [](EventType t, int index, const QString &delta = {}) {
        StreamEvent e;
        e.type = t;
        e.contentIndex = index;
        e.delta = delta;
        return e;
    };
    BlockSequencer seq;
    QList<StreamEvent> out =
        seq.feed({ev(EventType::Start, -1), ev(EventType::ToolCallStart, 0), ev(EventType::ToolCallStart, 1),
                  ev(EventType::ToolCallDelta, 0, "a"), ev(EventType::ToolCallDelta, 1, "b")});
    // Block 0 is live; block 1 waits.
    QCOMPARE(out.size(), 3);
    QCOMPARE(out[2].delta, QStringLiteral("a"));
    out = seq.feed({ev(EventType::ToolCallDelta, 0, "c"), ev(EventType::ToolCallEnd, 0)});
    // Block 0 ends: block 1's start and delta follow at once, then it is live.
    QCOMPARE(out.size(), 4);
    QCOMPARE(out[2].type, EventType::ToolCallStart);
    QCOMPARE(out[2].contentIndex, 1);
    QCOMPARE(out[3].delta, QStringLiteral("b"));
    out = seq.feed({ev(EventType::ToolCallDelta, 1, "d")});
    QCOMPARE(out.size(), 1);
    // A block still waiting when the stream ends is released before Done.
    out = seq.feed({ev(EventType::TextStart, 2), ev(EventType::TextDelta, 2, "t"), ev(EventType::Done, -1)});
    QCOMPARE(out.size(), 3);
    QCOMPARE(out[1].delta, QStringLiteral("t"));
    QCOMPARE(out[2].type, EventType::Done);
}

QTEST_GUILESS_MAIN(TestEventAccumulator)
#include "test_event_accumulator.moc"
