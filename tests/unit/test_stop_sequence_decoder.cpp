// StopSequenceDecoder: the gateway's own stop sequences for an API without the field (Responses).
// The answer ends where a stop sequence first appears, however the upstream's deltas split it,
// and everything after is dropped; text without one passes whole.

#include "core/upstream/stop_sequence_decoder.h"
#include "wire_fixtures.h"

#include <QRandomGenerator>
#include <QtTest>

using namespace sw::model;
using namespace sw::upstream;
using sw::test::makeEvent;

namespace {

// An upstream decoder that yields one scripted batch of events per SSE event fed.
class ScriptedDecoder final : public StreamDecoder {
public:
    explicit ScriptedDecoder(QList<QList<StreamEvent>> batches) : m_batches(std::move(batches)) {}
    QList<StreamEvent> feed(const SseEvent &) override {
        return m_batches.isEmpty() ? QList<StreamEvent>() : m_batches.takeFirst();
    }
    QList<StreamEvent> finish() override { return m_finish; }
    QList<StreamEvent> m_finish;

private:
    QList<QList<StreamEvent>> m_batches;
};

// A text answer streamed in the given deltas: start, text start, one batch per
// delta, text end with the whole text, then Done with usage 10 in / 7 out.
QList<QList<StreamEvent>> textAnswer(const QStringList &deltas) {
    StreamEvent start = makeEvent(EventType::Start); // no usage: Responses reports it only at the end
    QList<QList<StreamEvent>> batches{{start, makeEvent(EventType::TextStart, 0)}};
    for (const QString &d : deltas)
        batches << QList<StreamEvent>{makeEvent(EventType::TextDelta, 0, d)};
    StreamEvent end = makeEvent(EventType::TextEnd, 0);
    end.block.text = deltas.join(QString());
    StreamEvent done = makeEvent(EventType::Done);
    done.usage.input = 10;
    done.usage.output = 7;
    batches << QList<StreamEvent>{end, done};
    return batches;
}

struct Run {
    QStringList deltas; // each delta passed on
    QString streamed;   // the deltas' text, in order
    QString endText;    // the TextEnd block's text
    int dones = 0;
    StopReason reason = StopReason::Error;
    QString stopSequence; // the sequence Done names
    Usage usage;
    int eventsAfterDone = 0;
};

constexpr qint64 kInputEstimate = 25; // what the caller estimates from the request it sent

Run run(const QStringList &deltas, const QStringList &stops) {
    const auto batches = textAnswer(deltas);
    StopSequenceDecoder decoder(std::make_unique<ScriptedDecoder>(batches), stops, kInputEstimate);
    Run r;
    QList<StreamEvent> all;
    for (qsizetype i = 0; i < batches.size(); ++i)
        all << decoder.feed(SseEvent{});
    all << decoder.finish();
    for (const StreamEvent &e : all) {
        if (r.dones > 0) {
            ++r.eventsAfterDone;
            continue;
        }
        if (e.type == EventType::TextDelta) {
            r.streamed += e.delta;
            r.deltas << e.delta;
        } else if (e.type == EventType::TextEnd)
            r.endText = e.block.text;
        else if (e.type == EventType::Done) {
            ++r.dones;
            r.reason = e.reason;
            r.stopSequence = e.stopSequence;
            r.usage = e.usage;
        }
    }
    return r;
}

} // namespace

class TestStopSequenceDecoder : public QObject {
    Q_OBJECT
private slots:
    void endsAtTheFirstStopSequence_data() {
        QTest::addColumn<QStringList>("deltas");
        QTest::addColumn<QStringList>("stops");
        QTest::addColumn<QString>("answer");
        QTest::addColumn<QString>("matched"); // "": the answer ended on its own
        QTest::addRow("inside one delta") << QStringList{"Hello\n\nUser: more"} << QStringList{"\n\nUser:"} << "Hello"
                                          << "\n\nUser:";
        QTest::addRow("split over three deltas")
            << QStringList{"Hello\n", "\nUs", "er: more", " and more"} << QStringList{"\n\nUser:"} << "Hello"
            << "\n\nUser:";
        QTest::addRow("the earliest of several") << QStringList{"one, two; three"} << QStringList{";", ","} << "one"
                                                 << ",";
        // The one that completes first, as a model stops, however the text was split.
        QTest::addRow("two at the same place") << QStringList{"abc d"} << QStringList{"abc", "ab"} << ""
                                               << "ab";
        QTest::addRow("one inside another, one delta") << QStringList{"xabcdy"} << QStringList{"abcd", "bc"} << "xa"
                                                       << "bc";
        QTest::addRow("one inside another, split") << QStringList{"xabc", "dy"} << QStringList{"abcd", "bc"} << "xa"
                                                   << "bc";
        QTest::addRow("two ending at one place") << QStringList{"xab", "cy"} << QStringList{"bc", "abc"} << "x"
                                                 << "abc";
        QTest::addRow("at the very start") << QStringList{"END", " of it"} << QStringList{"END"} << ""
                                           << "END";
        QTest::addRow("a prefix that does not finish")
            << QStringList{"a\n\nUs", "e this"} << QStringList{"\n\nUser:"} << "a\n\nUse this"
            << "";
        QTest::addRow("none") << QStringList{"plain ", "text"} << QStringList{"STOP"} << "plain text"
                              << "";
        QTest::addRow("non-ASCII") << QStringList{"größer ", "→ STOP", "x"} << QStringList{"→ STOP"} << "größer "
                                   << "→ STOP";
        QTest::addRow("an emoji on the cut")
            << QStringList{"Great job! 🎉", " more"} << QStringList{"\n\n"} << "Great job! 🎉 more"
            << "";
    }
    void endsAtTheFirstStopSequence() {
        QFETCH(QStringList, deltas);
        QFETCH(QStringList, stops);
        QFETCH(QString, answer);
        QFETCH(QString, matched);
        const bool stopped = !matched.isEmpty();
        const Run r = run(deltas, stops);
        QCOMPARE(r.streamed, answer);
        QCOMPARE(r.endText, answer); // the block's whole text is what the client was streamed
        QCOMPARE(r.dones, 1);
        QCOMPARE(r.reason, StopReason::Stop);
        QCOMPARE(r.stopSequence, matched); // which one, for an API that names it (Messages)
        QCOMPARE(r.eventsAfterDone, 0);
        // Cut short before the upstream reported usage (Responses reports it only at the end), the
        // answer carries an estimate: the caller's for the input, four characters a token for
        // what the model produced up to the cut (the delta that held the sequence included), so a
        // stop sequence is no way around a budget. Else the upstream's own usage.
        qint64 produced = 0;
        QString sofar;
        for (const QString &d : deltas) {
            produced += d.size();
            sofar += d;
            if (std::any_of(stops.cbegin(), stops.cend(), [&](const QString &s) { return sofar.contains(s); }))
                break;
        }
        QCOMPARE(r.usage.input, stopped ? kInputEstimate : 10);
        QCOMPARE(r.usage.output, stopped ? std::max<qint64>(1, (produced + 3) / 4) : 7);
        // No delta ends in half a character.
        for (const QString &d : r.deltas)
            QVERIFY2(!d.back().isHighSurrogate() && !d.front().isLowSurrogate(), qPrintable(d));
    }

    void endsWhereASearchForEachSequenceWould() {
        // The sequences are one automaton that reads each character once: searching for each
        // sequence in each delta cost sequences x deltas, and a million of them held the engine
        // thread for seconds (probe X2-F2). Whatever the sequences (overlapping, one inside
        // another, sharing beginnings and ends) and however the text is split, the answer ends
        // where that search ended it: the earliest end, and there the longest sequence.
        QRandomGenerator rng(20261207);
        const auto word = [&rng](int least, int most, const char *letters) {
            QString out;
            const int size = int(rng.bounded(least, most + 1));
            for (int i = 0; i < size; ++i)
                out += QLatin1Char(letters[rng.bounded(int(qstrlen(letters)))]);
            return out;
        };
        for (int round = 0; round < 3000; ++round) {
            QStringList stops;
            for (int n = int(rng.bounded(1, 9)); n > 0; --n)
                stops << word(1, 5, "abc");
            const QString text = word(1, 40, "abcd");
            QStringList deltas;
            for (qsizetype at = 0; at < text.size();) {
                const qsizetype size = rng.bounded(1, 7);
                deltas << text.mid(at, size);
                at += size;
            }
            QString answer = text;
            QString matched;
            for (qsizetype end = 1; end <= text.size() && matched.isEmpty(); ++end)
                for (const QString &s : std::as_const(stops))
                    if (end >= s.size() && QStringView(text).sliced(end - s.size(), s.size()) == s &&
                        s.size() > matched.size()) {
                        matched = s;
                        answer = text.left(end - s.size());
                    }
            const Run r = run(deltas, stops);
            const QString what = stops.join(QLatin1Char('|')) + QLatin1String(" in ") + deltas.join(QLatin1Char('/'));
            QVERIFY2(r.streamed == answer && r.endText == answer, qPrintable(what + QLatin1String(": ") + r.streamed));
            QVERIFY2(r.stopSequence == matched, qPrintable(what + QLatin1String(": ") + r.stopSequence));
            QCOMPARE(r.dones, 1);
        }
    }

    void usageReportedBeforeTheCutIsKept() {
        // An upstream that reports its input at the start: that count stays, the output is estimated.
        auto batches = textAnswer({"twelve chars", " then STOP and more"});
        batches[0][0].usage.input = 300;
        batches[0][0].usage.cacheRead = 40;
        StopSequenceDecoder decoder(std::make_unique<ScriptedDecoder>(batches), {"STOP"}, kInputEstimate);
        QList<StreamEvent> all;
        for (qsizetype i = 0; i < batches.size(); ++i)
            all << decoder.feed(SseEvent{});
        QCOMPARE(all.last().type, EventType::Done);
        QCOMPARE(all.last().usage.input, 300);
        QCOMPARE(all.last().usage.cacheRead, 40);
        QCOMPARE(all.last().usage.output, (12 + 19 + 3) / 4);
    }

    void heldBackTextIsNotLostOnAnError() {
        // The last characters that could begin "\n\nUser:" wait; an error ends the stream: they
        // reach the client before it.
        StreamEvent error = makeEvent(EventType::Error);
        error.errorMessage = QStringLiteral("cut");
        StopSequenceDecoder decoder(std::make_unique<ScriptedDecoder>(QList<QList<StreamEvent>>{
                                        {makeEvent(EventType::TextStart, 0),
                                         makeEvent(EventType::TextDelta, 0, QStringLiteral("answer so far"))},
                                        {error}}),
                                    {QStringLiteral("\n\nUser:")});
        QString text;
        QList<StreamEvent> out = decoder.feed(SseEvent{});
        out << decoder.feed(SseEvent{});
        for (const StreamEvent &e : out)
            if (e.type == EventType::TextDelta)
                text += e.delta;
        QCOMPARE(text, QStringLiteral("answer so far"));
        QCOMPARE(out.last().type, EventType::Error);
    }

    void thinkingAndToolCallsPassUntouched() {
        StreamEvent thinking = makeEvent(EventType::ThinkingDelta, 0, QStringLiteral("STOP here is fine"));
        StreamEvent call = makeEvent(EventType::ToolCallDelta, 1, QStringLiteral("{\"q\":\"STOP\"}"));
        StopSequenceDecoder decoder(std::make_unique<ScriptedDecoder>(QList<QList<StreamEvent>>{{thinking, call}}),
                                    {QStringLiteral("STOP")});
        const QList<StreamEvent> out = decoder.feed(SseEvent{});
        QCOMPARE(out.size(), 2);
        QCOMPARE(out[0].delta, thinking.delta);
        QCOMPARE(out[1].delta, call.delta);
    }
};

QTEST_GUILESS_MAIN(TestStopSequenceDecoder)
#include "test_stop_sequence_decoder.moc"
