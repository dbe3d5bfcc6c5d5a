// A key an upstream streams back a few characters a delta reaches no client whole (probe Q3 F3).
#include "core/upstream/delta_secret_scrub.h"
#include "core/util/redaction.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

using namespace sw;
using namespace sw::upstream;

namespace {

const QByteArray kKey = "probe-key-0123456789abcdef";

model::StreamEvent delta(const QString &text, int index = 0, model::EventType type = model::EventType::TextDelta) {
    model::StreamEvent e;
    e.type = type;
    e.contentIndex = index;
    e.delta = text;
    return e;
}

model::StreamEvent end(int index = 0, model::EventType type = model::EventType::TextEnd) {
    model::StreamEvent e;
    e.type = type;
    e.contentIndex = index;
    return e;
}

QStringList pieces(const QString &text, qsizetype size) {
    QStringList out;
    for (qsizetype i = 0; i < text.size(); i += size)
        out << text.mid(i, size);
    return out;
}

// What a client joins of block `index` when `deltas` come one event a frame, then the block's end.
QString joined(DeltaSecretScrub &scrub, const QStringList &deltas, int index = 0) {
    QString out;
    const auto take = [&out, index](const QList<model::StreamEvent> &events) {
        for (const model::StreamEvent &e : events)
            if (e.contentIndex == index && e.type == model::EventType::TextDelta)
                out += e.delta;
    };
    for (const QString &d : deltas) {
        QList<model::StreamEvent> events{delta(d, index)};
        scrub.apply(events);
        take(events);
    }
    QList<model::StreamEvent> last{end(index)};
    scrub.apply(last);
    take(last);
    return out;
}

} // namespace

class TestDeltaSecretScrub : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void aKeySplitAnywhereIsRedacted() {
        const QString key = QString::fromLatin1(kKey);
        for (const qsizetype size : {1, 2, 3, 5, 7, 25}) {
            DeltaSecretScrub scrub(util::secretTextForms(kKey));
            const QString out =
                joined(scrub, QStringList{QStringLiteral("say ")} + pieces(key, size) + QStringList{" done"});
            // At most the first three characters were shown before the key could be told from text.
            QVERIFY2(out == QStringLiteral("say pro[redacted] done") || out == QStringLiteral("say [redacted] done") ||
                         out == QStringLiteral("say p[redacted] done") ||
                         out == QStringLiteral("say pr[redacted] done"),
                     qPrintable(QStringLiteral("%1: %2").arg(size).arg(out)));
        }
    }

    void theKeyInAnotherFormOrCaseIsRedactedToo() {
        for (const QByteArray &form : {kKey.toUpper(), kKey.toBase64(), kKey.toHex()}) {
            DeltaSecretScrub scrub(util::secretTextForms(kKey));
            const QString out = joined(scrub, pieces(QStringLiteral("x ") + QString::fromLatin1(form) + " y", 3));
            QVERIFY2(out.endsWith(QStringLiteral("[redacted] y")), qPrintable(out));
            QVERIFY2(!out.contains(QString::fromLatin1(form.mid(3, 6)), Qt::CaseInsensitive), qPrintable(out));
        }
    }

    void textThatOnlyBeganLikeTheKeyGoesOnWhole() {
        DeltaSecretScrub scrub(util::secretTextForms(kKey));
        QList<model::StreamEvent> first{delta(QStringLiteral("the probe"))};
        QVERIFY(scrub.apply(first));
        QCOMPARE(first.at(0).delta, QStringLiteral("the ")); // "probe" may begin the key: held
        QList<model::StreamEvent> second{delta(QStringLiteral("s agree"))};
        QVERIFY(scrub.apply(second));
        QCOMPARE(second.at(0).delta, QStringLiteral("probes agree"));
        // Three characters or fewer are never held: "pro" begins too many words.
        DeltaSecretScrub other(util::secretTextForms(kKey));
        QList<model::StreamEvent> shortTail{delta(QStringLiteral("a pro"))};
        QVERIFY(!other.apply(shortTail));
        QCOMPARE(shortTail.at(0).delta, QStringLiteral("a pro"));
        QCOMPARE(joined(other, {QStringLiteral("gram")}), QStringLiteral("gram"));
    }

    void whatIsHeldAtTheBlocksEndGoesBeforeIt() {
        DeltaSecretScrub scrub(util::secretTextForms(kKey));
        QList<model::StreamEvent> events{delta(QStringLiteral("see probe")), end()};
        QVERIFY(scrub.apply(events));
        QCOMPARE(events.size(), 3);
        QCOMPARE(events.at(0).delta, QStringLiteral("see "));
        QCOMPARE(events.at(1).type, model::EventType::TextDelta);
        QCOMPARE(events.at(1).delta, QStringLiteral("probe"));
        QCOMPARE(events.at(2).type, model::EventType::TextEnd);
        // Most of a key, cut short at the end, is still a key.
        QList<model::StreamEvent> cut{delta(QStringLiteral("key probe-key-01"), 1), end(1)};
        scrub.apply(cut);
        QCOMPARE(cut.size(), 3);
        QCOMPARE(cut.at(0).delta, QStringLiteral("key "));
        QCOMPARE(cut.at(1).delta, QString::fromLatin1(util::kRedacted));
        // A Done (or an Error) releases every block still holding.
        QList<model::StreamEvent> open{delta(QStringLiteral("a probe"), 2), delta(QStringLiteral("b probe"), 3)};
        scrub.apply(open);
        model::StreamEvent done;
        done.type = model::EventType::Done;
        QList<model::StreamEvent> finish{done};
        scrub.apply(finish);
        QCOMPARE(finish.size(), 3);
        QCOMPARE(finish.at(0).contentIndex, 2);
        QCOMPARE(finish.at(1).contentIndex, 3);
        QCOMPARE(finish.at(2).type, model::EventType::Done);
    }

    void eachBlockIsFollowedOnItsOwn() {
        // The key's pieces in a tool call's arguments, interleaved with a text block's words.
        DeltaSecretScrub scrub(util::secretTextForms(kKey));
        const QStringList keyPieces = pieces(QString::fromLatin1(kKey), 4);
        QString text;
        QString arguments;
        for (const QString &piece : keyPieces) {
            QList<model::StreamEvent> events{delta(QStringLiteral("word "), 0),
                                             delta(piece, 1, model::EventType::ToolCallDelta)};
            scrub.apply(events);
            text += events.at(0).delta;
            arguments += events.at(1).delta;
        }
        QList<model::StreamEvent> last{end(1, model::EventType::ToolCallEnd)};
        scrub.apply(last);
        QCOMPARE(text, QString(QStringLiteral("word ")).repeated(keyPieces.size()));
        QCOMPARE(arguments, QString::fromLatin1(util::kRedacted));
    }

    void noKeyNoWork() {
        DeltaSecretScrub scrub(QStringList{});
        QVERIFY(!scrub.active());
        QList<model::StreamEvent> events{delta(QStringLiteral("anything")), end()};
        QVERIFY(!scrub.apply(events));
        QCOMPARE(events.size(), 2);
    }

    void aSameApiFrameIsWrittenAgainFromItsDeltas() {
        // A Chat chunk per piece, as a passthrough client gets them.
        DeltaSecretScrub scrub(util::secretTextForms(kKey));
        const auto chunk = [](const QString &content) {
            const QJsonObject o{{QStringLiteral("id"), "chatcmpl-1"},
                                {QStringLiteral("choices"),
                                 QJsonArray{QJsonObject{
                                     {QStringLiteral("index"), 0},
                                     {QStringLiteral("delta"), QJsonObject{{QStringLiteral("content"), content}}}}}}};
            return SseEvent{QByteArray(), QJsonDocument(o).toJson(QJsonDocument::Compact)};
        };
        const auto contentOf = [](const QByteArray &frame) {
            QStringList out;
            for (const QByteArray &line : frame.split('\n'))
                if (line.startsWith("data: "))
                    out << QJsonDocument::fromJson(line.mid(6))
                               .object()
                               .value(QStringLiteral("choices"))
                               .toArray()
                               .at(0)
                               .toObject()
                               .value(QStringLiteral("delta"))
                               .toObject()
                               .value(QStringLiteral("content"))
                               .toString();
            return out;
        };
        QStringList shown;
        for (const QString &piece :
             QStringList{QStringLiteral("my probe")} + pieces(QString::fromLatin1(kKey.mid(5)), 3)) {
            const SseEvent frame = chunk(piece);
            QList<model::StreamEvent> events{delta(piece)};
            if (!scrub.apply(events)) {
                shown << piece; // unchanged: relayed as it came
                continue;
            }
            const std::optional<QByteArray> raw = scrub.rewriteFrame(frame, events);
            QVERIFY(raw);
            QVERIFY2(raw->contains("chatcmpl-1"), raw->constData()); // the rest of the chunk stays
            shown << contentOf(*raw);
        }
        QCOMPARE(shown.join(QString()), QStringLiteral("my [redacted]"));

        // A tail held back and released at the block's end goes as a copy of its frame, before the end's.
        const SseEvent tail = chunk(QStringLiteral("ok probe"));
        QList<model::StreamEvent> events{delta(QStringLiteral("ok probe"))};
        QVERIFY(scrub.apply(events));
        const std::optional<QByteArray> first = scrub.rewriteFrame(tail, events);
        QVERIFY(first);
        QCOMPARE(contentOf(*first), QStringList{QStringLiteral("ok ")});
        const SseEvent finish{QByteArray(), QByteArray("{\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}")};
        QList<model::StreamEvent> ending{end()};
        QVERIFY(scrub.apply(ending));
        const std::optional<QByteArray> last = scrub.rewriteFrame(finish, ending);
        QVERIFY(last);
        QCOMPARE(contentOf(*last), (QStringList{QStringLiteral("probe"), QString()}));
        QVERIFY2(last->endsWith(finish.data + "\n\n"), last->constData());
    }
};

QTEST_GUILESS_MAIN(TestDeltaSecretScrub)
#include "test_delta_secret_scrub.moc"
