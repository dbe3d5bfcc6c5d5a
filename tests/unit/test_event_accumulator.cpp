#include "core/model/block_sequencer.h"
#include "core/model/event_accumulator.h"
#include "wire_fixtures.h"

#include <QJsonDocument>
#include <QtTest>

using namespace sw::model;
using sw::test::makeEvent;

class TestEventAccumulator : public QObject {
    Q_OBJECT
private slots:
    void sequencerStreamsOneBlockAtATime();
    void sequencerOrdersEveryInterleaving();
    void foldsTextThinkingAndToolCallInOrder();
    void deltaWithoutStartStillBuildsBlock();
    void errorKeepsPartialContentAndMessage();
    void unparseableToolArgumentsBecomeEmptyObject();
    void streamedToolArgumentsKeepWhatArrived_data();
    void streamedToolArgumentsKeepWhatArrived();
    void argumentsGatePassesObjectsOnly();
    void argumentsGateKeepsNoLeadingWhiteSpace();
    void deeplyNestedCutArgumentsAreReadInOnePass();
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

void TestEventAccumulator::sequencerOrdersEveryInterleaving() {
    // Random interleavings of up to four blocks (starts in index order, as upstreams number
    // them), fed in random batches: the client gets the blocks whole, in start order, every
    // event once, and a block's events as soon as every block before it has ended (the first
    // streams live; the next goes live when it ends), never before.
    QRandomGenerator rng(20261201);
    for (int round = 0; round < 3000; ++round) {
        const int blocks = 1 + int(rng.bounded(4));
        QList<QList<StreamEvent>> perBlock(blocks);
        for (int b = 0; b < blocks; ++b) {
            perBlock[b] << makeEvent(EventType::ToolCallStart, b);
            const int deltas = int(rng.bounded(4));
            for (int d = 0; d < deltas; ++d)
                perBlock[b] << makeEvent(EventType::ToolCallDelta, b, QStringLiteral("%1.%2").arg(b).arg(d));
            perBlock[b] << makeEvent(EventType::ToolCallEnd, b);
        }
        QList<StreamEvent> stream{makeEvent(EventType::Start)};
        QList<int> next(blocks, 0);
        int started = 0;
        for (;;) {
            QList<int> ready; // a block may go on once started; the next one may start
            for (int b = 0; b < started; ++b)
                if (next[b] < perBlock[b].size())
                    ready << b;
            if (started < blocks)
                ready << started;
            if (ready.isEmpty())
                break;
            const int b = ready[int(rng.bounded(ready.size()))];
            started = std::max(started, b + 1);
            stream << perBlock[b][next[b]++];
        }
        stream << makeEvent(EventType::Done);

        BlockSequencer seq;
        QList<StreamEvent> out;
        for (qsizetype i = 0; i < stream.size();) {
            const qsizetype n = std::min<qsizetype>(1 + rng.bounded(4), stream.size() - i);
            out += seq.feed(stream.mid(i, n));
            i += n;
            // After this batch: block b's events fed so far are all out once blocks 0..b-1 have
            // ended (or Done came), and none of them before.
            QList<int> fed(blocks, 0), shown(blocks, 0);
            QList<bool> ended(blocks, false);
            bool done = false;
            for (qsizetype k = 0; k < i; ++k) {
                const StreamEvent &e = stream[k];
                done |= e.type == EventType::Done;
                if (e.contentIndex >= 0) {
                    ++fed[e.contentIndex];
                    ended[e.contentIndex] |= e.type == EventType::ToolCallEnd;
                }
            }
            for (const StreamEvent &e : std::as_const(out))
                if (e.contentIndex >= 0)
                    ++shown[e.contentIndex];
            bool before = true; // every block before this one has ended
            for (int b = 0; b < blocks; ++b) {
                QVERIFY2(shown[b] == (before || done ? fed[b] : 0),
                         qPrintable(QStringLiteral("round %1, after %2 events: block %3 shows %4 of %5")
                                        .arg(round)
                                        .arg(i)
                                        .arg(b)
                                        .arg(shown[b])
                                        .arg(fed[b])));
                before &= ended[b];
            }
        }
        QList<StreamEvent> expected{makeEvent(EventType::Start)};
        for (const auto &b : perBlock)
            expected += b;
        expected << makeEvent(EventType::Done);
        QCOMPARE(out.size(), expected.size());
        for (qsizetype k = 0; k < out.size(); ++k) {
            QCOMPARE(out[k].type, expected[k].type);
            QCOMPARE(out[k].contentIndex, expected[k].contentIndex);
            QCOMPARE(out[k].delta, expected[k].delta);
        }
    }
}

void TestEventAccumulator::streamedToolArgumentsKeepWhatArrived_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("expected"); // compact JSON of the object
    QTest::newRow("whole") << "{\"a\": [1, {\"b\": null}]}"
                           << "{\"a\":[1,{\"b\":null}]}";
    QTest::newRow("whole, not an object") << "[\"Paris\", 2]"
                                          << "{}";
    QTest::newRow("empty") << " "
                           << "{}";
    QTest::newRow("cut in a string value") << "{\"city\": \"Par"
                                           << "{\"city\":\"Par\"}";
    QTest::newRow("cut in an escape") << "{\"q\": \"a\\"
                                      << "{\"q\":\"a\"}";
    QTest::newRow("cut in a unicode escape") << "{\"q\": \"a\\u00e"
                                             << "{\"q\":\"a\"}";
    QTest::newRow("cut in a name") << "{\"city\": \"Paris\", \"da"
                                   << "{\"city\":\"Paris\"}";
    QTest::newRow("cut after a colon") << "{\"city\": \"Paris\", \"days\": "
                                       << "{\"city\":\"Paris\"}";
    QTest::newRow("cut after a comma") << "{\"a\": 1,"
                                       << "{\"a\":1}";
    QTest::newRow("cut in a number") << "{\"a\": 12"
                                     << "{\"a\":12}";
    QTest::newRow("cut in a literal") << "{\"a\": 1, \"b\": tr"
                                      << "{\"a\":1}";
    QTest::newRow("cut in nested arrays") << "{\"a\": [[1, 2], [3"
                                          << "{\"a\":[[1,2],[3]]}";
    QTest::newRow("cut in a nested object") << "{\"a\": {\"b\": \"c\", \"d\": {\"e\""
                                            << "{\"a\":{\"b\":\"c\",\"d\":{}}}";
    QTest::newRow("cut array at the top") << "[1, 2"
                                          << "{}";
    QTest::newRow("garbage after a whole object") << "{\"a\": 1} x"
                                                  << "{}";
    QTest::newRow("not JSON") << "{a: 1"
                              << "{}";
}

void TestEventAccumulator::streamedToolArgumentsKeepWhatArrived() {
    QFETCH(QString, text);
    QFETCH(QString, expected);
    const QJsonObject got = parseStreamedToolArguments(text);
    QCOMPARE(QString::fromUtf8(QJsonDocument(got).toJson(QJsonDocument::Compact)), expected);
}

void TestEventAccumulator::argumentsGatePassesObjectsOnly() {
    ToolArgumentsGate object;
    QCOMPARE(object.pass(QStringLiteral(" \n")), QString());
    QCOMPARE(object.pass(QStringLiteral(" {\"a\"")), QStringLiteral("{\"a\""));
    QCOMPARE(object.pass(QStringLiteral(": [1]}")), QStringLiteral(": [1]}"));
    QVERIFY(!object.held());
    for (const char *first : {"[\"Paris\", ", "\"x", "42", "null", "x"}) {
        ToolArgumentsGate other;
        QCOMPARE(other.pass(QStringLiteral(" ")), QString());
        QCOMPARE(other.pass(QString::fromUtf8(first)), QString());
        QCOMPARE(other.pass(QStringLiteral("{\"a\": 1}")), QString());
        QVERIFY(other.held());
    }
}

void TestEventAccumulator::argumentsGateKeepsNoLeadingWhiteSpace() {
    // Probe X2 F3: an upstream streaming a call's arguments as endless white space. The gate kept
    // all of it, outside every bound, and read it again from its start on every fragment (10 MB of
    // it is 50 G characters read that way). It keeps none now: what follows goes out alone.
    ToolArgumentsGate gate;
    const QString spaces(1000, u' ');
    for (int i = 0; i < 10000; ++i)
        QCOMPARE(gate.pass(spaces), QString());
    QVERIFY(!gate.held());
    QCOMPARE(gate.pass(QStringLiteral("\t\r\n {\"city\": ")), QStringLiteral("{\"city\": "));
    QCOMPARE(gate.pass(QStringLiteral("   \"Paris\"}")), QStringLiteral("   \"Paris\"}"));
    ToolArgumentsGate other;
    QCOMPARE(other.pass(spaces), QString());
    QCOMPARE(other.pass(QStringLiteral("  [1]")), QString());
    QVERIFY(other.held());
}

QTEST_GUILESS_MAIN(TestEventAccumulator)

// A model (or a page an agent read, through it) can emit arguments nested far deeper than any
// JSON reader takes. Reading them as cut must cost one pass over the text: the closing text was
// rebuilt at every bracket, N^2 in the depth, and a 200 KB call held the engine thread (every
// tenant's requests) for 75 s on the pi route. 400 000 levels would take most of an hour that
// way; in one pass it is a blink (ctest's 300 s bound is what fails the old way).
void TestEventAccumulator::deeplyNestedCutArgumentsAreReadInOnePass() {
    const qsizetype depth = 400000;
    const QString cut = QStringLiteral("{\"a\":") + QString(depth, u'[') + QStringLiteral("1,");
    QCOMPARE(sw::model::parseStreamedToolArguments(cut), QJsonObject()); // deeper than JSON readers go
    QString closedDeep =
        QStringLiteral("{\"a\":") + QString(depth, u'[') + QString(depth, u']') + QStringLiteral(",\"b");
    QCOMPARE(sw::model::parseStreamedToolArguments(closedDeep), QJsonObject());
    // Shallow enough to read: the same rules as before.
    const QString shallow = QStringLiteral("{\"a\":") + QString(20, u'[') + QStringLiteral("1,");
    QJsonValue expected = QJsonArray{1};
    for (int i = 1; i < 20; ++i)
        expected = QJsonArray{expected};
    QCOMPARE(sw::model::parseStreamedToolArguments(shallow), QJsonObject({{"a", expected}}));
}

#include "test_event_accumulator.moc"
