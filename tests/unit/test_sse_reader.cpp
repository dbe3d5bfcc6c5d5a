// SseReader: the events a client of an upstream stream sees must not depend on
// how TCP happened to split the bytes.
#include "core/upstream/sse_reader.h"
#include "core/wire/sse.h"

#include <QRandomGenerator>
#include <QTest>

#ifdef SWITCHMAN_MIMALLOC
#include <mimalloc.h>
#endif

using sw::upstream::SseEvent;
using sw::upstream::SseReader;

namespace {

using Events = QList<SseEvent>;

QByteArray describe(const Events &events) {
    QByteArray s;
    for (const auto &e : events)
        s += "[event=" + e.event + " data=" + e.data + "]\n";
    return s;
}

// The bytes of the blocks live in this thread's heap (mimalloc's, which every allocation in the
// process goes to), or -1 in a build without it (a sanitizer's).
qint64 liveHeapBytes() {
#ifdef SWITCHMAN_MIMALLOC
    qint64 bytes = 0;
    mi_heap_visit_blocks(
        mi_heap_get_default(), true,
        [](const mi_heap_t *, const mi_heap_area_t *, void *block, size_t size, void *sum) {
            if (block)
                *static_cast<qint64 *>(sum) += qint64(size);
            return true;
        },
        &bytes);
    return bytes;
#else
    return -1;
#endif
}

Events feedInPieces(const QByteArray &transcript, const QList<qsizetype> &cuts) {
    SseReader reader;
    Events out;
    qsizetype pos = 0;
    for (qsizetype cut : cuts) {
        out += reader.feed(QByteArrayView(transcript).sliced(pos, cut - pos));
        pos = cut;
    }
    out += reader.feed(QByteArrayView(transcript).sliced(pos));
    out += reader.finish();
    return out;
}

} // namespace

class TestSseReader : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void aFrameWrittenFromTextIsOneEventWhateverTheTextHolds() {
        // Text with line breaks (a mark message, say) must not end the frame or start a new event.
        const QByteArray text = "{\"a\":1}\nevent: evil\r\ndata: injected\r\rtail";
        const Events events =
            feedInPieces(sw::wire::sseFrameOfText(text, "marks") + sw::wire::sseFrameOfText("{}"), {});
        QCOMPARE(events.size(), 2);
        QCOMPARE(events[0].event, QByteArray("marks"));
        QCOMPARE(events[0].data, QByteArray("{\"a\":1}\nevent: evil\ndata: injected\n\ntail"));
        QCOMPARE(events[1].event, QByteArray());
        QCOMPARE(events[1].data, QByteArray("{}"));
    }
    void sameEventsForAnySplit_data();
    void sameEventsForAnySplit();
    void crlfSplitAcrossChunksIsOneLineEnd();
    void eventsAreDeliveredAsSoonAsTheirBlankLineArrives();
    void finishDispatchesUnterminatedEvent();
    void finishWithoutPendingDataDispatchesNothing();
    void lineWithNoEndOverflowsAtTheEventLimit();
    void eventOfManyLinesOverflowsAtTheEventLimit();
    void largeEventUnderTheLimitIsWhole();
    void anIdLineIsNotKept();
    void heldBytesCountsWhatTheReaderKeepsBetweenFeeds();
};

void TestSseReader::sameEventsForAnySplit_data() {
    QTest::addColumn<QByteArray>("transcript");
    QTest::addColumn<QByteArray>("expected"); // describe() of the events

    QTest::newRow("anthropic with CRLF and ping")
        << QByteArray("event: message_start\r\ndata: {\"type\":\"message_start\"}\r\n\r\n"
                      "event: ping\r\ndata: {\"type\":\"ping\"}\r\n\r\n"
                      "event: content_block_delta\r\ndata: {\"delta\":{\"text\":\"Hi\"}}\r\n\r\n"
                      "event: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n\r\n")
        << QByteArray("[event=message_start data={\"type\":\"message_start\"}]\n"
                      "[event=ping data={\"type\":\"ping\"}]\n"
                      "[event=content_block_delta data={\"delta\":{\"text\":\"Hi\"}}]\n"
                      "[event=message_stop data={\"type\":\"message_stop\"}]\n");
    QTest::newRow("openai data-only ending in DONE")
        << QByteArray("data: {\"choices\":[]}\n\ndata: [DONE]\n\n")
        << QByteArray("[event= data={\"choices\":[]}]\n[event= data=[DONE]]\n");
    QTest::newRow("comments skipped") << QByteArray(": keepalive\n\n:another\ndata: x\n: inside\n\n")
                                      << QByteArray("[event= data=x]\n");
    QTest::newRow("multi-line data joined with LF")
        << QByteArray("data: line one\ndata: line two\ndata:\ndata: four\n\n")
        << QByteArray("[event= data=line one\nline two\n\nfour]\n");
    QTest::newRow("data without the leading space, only one space removed")
        << QByteArray("data:tight\n\ndata:  two spaces\n\n")
        << QByteArray("[event= data=tight]\n[event= data= two spaces]\n");
    QTest::newRow("event without data is not dispatched and does not leak its type")
        << QByteArray("event: orphan\n\ndata: after\n\n") << QByteArray("[event= data=after]\n");
    QTest::newRow("bare CR line ends") << QByteArray("event: e\rdata: a\r\rdata: b\r\r")
                                       << QByteArray("[event=e data=a]\n[event= data=b]\n");
    QTest::newRow("mixed line ends") << QByteArray("data: a\r\n\ndata: b\n\r\ndata: c\r\r\n")
                                     << QByteArray("[event= data=a]\n[event= data=b]\n[event= data=c]\n");
    QTest::newRow("id, retry and unknown fields ignored, field without colon")
        << QByteArray("id: 7\nretry: 100\nfoo: bar\ndata: a\n\ndata\n\n")
        << QByteArray("[event= data=a]\n[event= data=]\n");
    QTest::newRow("leading BOM stripped") << QByteArray("\xEF\xBB\xBF"
                                                        "data: x\n\n")
                                          << QByteArray("[event= data=x]\n");
    QTest::newRow("empty data line is an event with empty data")
        << QByteArray("data:\n\n") << QByteArray("[event= data=]\n");
}

void TestSseReader::sameEventsForAnySplit() {
    QFETCH(QByteArray, transcript);
    QFETCH(QByteArray, expected);

    QCOMPARE(describe(feedInPieces(transcript, {})), expected);

    QList<qsizetype> everyByte;
    for (qsizetype i = 1; i < transcript.size(); ++i)
        everyByte.append(i);
    QCOMPARE(describe(feedInPieces(transcript, everyByte)), expected);

    QRandomGenerator rng(0x5eed);
    for (int round = 0; round < 300; ++round) {
        QList<qsizetype> cuts;
        for (qsizetype i = 1; i < transcript.size(); ++i)
            if (rng.bounded(4) == 0)
                cuts.append(i);
        const QByteArray got = describe(feedInPieces(transcript, cuts));
        if (got != expected) {
            QByteArray where;
            for (auto c : cuts)
                where += QByteArray::number(c) + ' ';
            QFAIL(qPrintable("split at " + where + "\n got " + got));
        }
    }
}

void TestSseReader::crlfSplitAcrossChunksIsOneLineEnd() {
    SseReader reader;
    // If the LF after a chunk-final CR counted as a second line end, "data: a"
    // would be dispatched early and "data: b" would become a separate event.
    QVERIFY(reader.feed("data: a\r").isEmpty());
    QVERIFY(reader.feed("\ndata: b\r").isEmpty());
    const Events events = reader.feed("\n\r\n");
    QCOMPARE(events.size(), 1);
    QCOMPARE(events.front().data, QByteArray("a\nb"));
}

void TestSseReader::eventsAreDeliveredAsSoonAsTheirBlankLineArrives() {
    SseReader reader;
    QVERIFY(reader.feed("data: first\n").isEmpty());
    Events events = reader.feed("\ndata: sec");
    QCOMPARE(events.size(), 1);
    QCOMPARE(events.front().data, QByteArray("first"));
    events = reader.feed("ond\n\n");
    QCOMPARE(events.size(), 1);
    QCOMPARE(events.front().data, QByteArray("second"));
}

void TestSseReader::finishDispatchesUnterminatedEvent() {
    SseReader reader;
    QVERIFY(reader.feed("event: last\ndata: tail").isEmpty());
    const Events events = reader.finish();
    QCOMPARE(events.size(), 1);
    QCOMPARE(events.front().event, QByteArray("last"));
    QCOMPARE(events.front().data, QByteArray("tail"));
}

void TestSseReader::finishWithoutPendingDataDispatchesNothing() {
    SseReader reader;
    QCOMPARE(reader.feed("data: a\n\nevent: only\n").size(), 1);
    QVERIFY(reader.finish().isEmpty());
}

void TestSseReader::lineWithNoEndOverflowsAtTheEventLimit() {
    SseReader reader;
    QCOMPARE(reader.feed("data: before\n\ndata: ").size(), 1);
    const QByteArray piece(64 * 1024, 'a');
    qsizetype fed = 0;
    while (!reader.overflowed() && fed < 4 * SseReader::kMaxEventBytes) {
        QVERIFY(reader.feed(piece).isEmpty());
        fed += piece.size();
    }
    QVERIFY(reader.overflowed());
    QVERIFY2(fed <= SseReader::kMaxEventBytes + piece.size(), qPrintable(QString::number(fed)));
    // Overflowed is final: even a proper end delivers nothing of the oversized event.
    QVERIFY(reader.feed("\n\ndata: after\n\n").isEmpty());
    QVERIFY(reader.finish().isEmpty());
}

void TestSseReader::eventOfManyLinesOverflowsAtTheEventLimit() {
    SseReader reader;
    const QByteArray line = "data: " + QByteArray(1018, 'b') + "\n"; // 1 KiB a line, never a blank one
    qsizetype fed = 0;
    while (!reader.overflowed() && fed < 4 * SseReader::kMaxEventBytes) {
        QVERIFY(reader.feed(line.repeated(64)).isEmpty());
        fed += 64 * line.size();
    }
    QVERIFY(reader.overflowed());
    // The limit counts the data (each line's "data: " prefix is not held), so allow for the prefixes.
    QVERIFY2(fed <= SseReader::kMaxEventBytes / 1019 * line.size() + 64 * line.size(),
             qPrintable(QString::number(fed)));
}

void TestSseReader::largeEventUnderTheLimitIsWhole() {
    SseReader reader;
    const QByteArray big(SseReader::kMaxEventBytes - 1024, 'c');
    Events events;
    for (qsizetype pos = 0; pos < big.size(); pos += 100000)
        events += reader.feed(pos == 0 ? "data: " + big.mid(pos, 100000) : big.mid(pos, 100000));
    events += reader.feed("\n\n");
    QVERIFY(!reader.overflowed());
    QCOMPARE(events.size(), 1);
    QCOMPARE(events.front().data.size(), big.size());
}

void TestSseReader::anIdLineIsNotKept() {
    // WHATWG keeps the last event id for the rest of the stream, but nothing in the gateway reads
    // it: one id line of nearly 8 MiB was held for as long as its stream went on, outside the event
    // bound, 8 MiB a stream (probe AA2 F1). Now an id costs nothing once its line has ended.
    if (liveHeapBytes() < 0)
        QSKIP("built without mimalloc: no count of the live heap");
    const QByteArray piece(64 * 1024, 'i');
    SseReader reader;
    Events events;
    const qint64 before = liveHeapBytes();
    events += reader.feed("data: a\n\nid: ");
    for (qsizetype fed = 0; fed + piece.size() < SseReader::kMaxEventBytes - 1024; fed += piece.size())
        events += reader.feed(piece);
    events += reader.feed("\ndata: b\n\ndata: c\n\n");
    QVERIFY(!reader.overflowed());
    QCOMPARE(events.size(), 3);
    QCOMPARE(events.back().data, QByteArray("c"));
    const qint64 held = liveHeapBytes() - before;
    QVERIFY2(held < 64 * 1024, qPrintable(QStringLiteral("%1 bytes held after the id line").arg(held)));
}

void TestSseReader::heldBytesCountsWhatTheReaderKeepsBetweenFeeds() {
    // What the upstream layer charges to limits.maxBodyBytesInFlight while an event is still
    // arriving: its data and type so far and an unfinished line, a comment's too; nothing once it ends.
    SseReader reader;
    QVERIFY(reader.feed("event: e\ndata: abc\ndata: de").isEmpty());
    QCOMPARE(reader.heldBytes(), qsizetype(1 + 3 + 8)); // "e", "abc", "data: de"
    const QByteArray comment = ": a comment not yet ended";
    QCOMPARE(reader.feed("f\n\n" + comment).size(), 1);
    QCOMPARE(reader.heldBytes(), comment.size());
    QVERIFY(reader.feed("\n").isEmpty());
    QCOMPARE(reader.heldBytes(), qsizetype(0));
}

QTEST_APPLESS_MAIN(TestSseReader)
#include "test_sse_reader.moc"
