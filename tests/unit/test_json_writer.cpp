#include "core/wire/json.h"
#include "core/wire/json_writer.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonParseError>
#include <QRandomGenerator>
#include <QtTest>

#include <cmath>
#include <limits>

using sw::wire::JsonWriter;

namespace {

// The writer's text parsed back; fails the test when it is not valid JSON.
QJsonValue parsed(const QByteArray &json) {
    QJsonParseError error{};
    const QJsonDocument doc = QJsonDocument::fromJson("[" + json + "]", &error);
    if (error.error != QJsonParseError::NoError) {
        qWarning("invalid JSON (%s): %s", qPrintable(error.errorString()), json.constData());
        return QJsonValue(QJsonValue::Undefined);
    }
    return doc.array().at(0);
}

// `s` as Qt's own writer writes it.
QByteArray qtStringJson(const QString &s) {
    return QJsonDocument(QJsonObject{{"v", s}}).toJson(QJsonDocument::Compact).mid(5).chopped(1);
}

QByteArray stringJson(const QString &s) {
    JsonWriter w;
    w.value(s);
    return w.take();
}

} // namespace

class TestJsonWriter : public QObject {
    Q_OBJECT
private slots:
    void writesObjectsInCallerOrder();
    void stringsRoundTrip_data();
    void stringsRoundTrip();
    void randomUtf16RoundTrips();
    void loneSurrogatesAreEscapes();
    void wellFormedTextHasNoLoneSurrogate();
    void numbers();
    void embeddedValuesEqualQtsOwn();
    void embeddingIsDepthBounded();
    void sseFramesHoldOneDataLine();
    void compactJsonMatchesQt();
};

void TestJsonWriter::writesObjectsInCallerOrder() {
    JsonWriter w;
    w.beginObject()
        .field("id", QStringLiteral("chatcmpl-1"))
        .field("object", "chat.completion")
        .field("created", qint64(1764400000))
        .key("choices")
        .beginArray()
        .beginObject()
        .field("index", 0)
        .key("logprobs")
        .null()
        .field("ok", true)
        .endObject()
        .beginArray()
        .endArray()
        .endArray()
        .key("empty")
        .beginObject()
        .endObject()
        .endObject();
    QCOMPARE(w.depth(), 0);
    QCOMPARE(w.take(), QByteArray(R"({"id":"chatcmpl-1","object":"chat.completion","created":1764400000,)"
                                  R"("choices":[{"index":0,"logprobs":null,"ok":true},[]],"empty":{}})"));
}

void TestJsonWriter::stringsRoundTrip_data() {
    QTest::addColumn<QString>("text");
    QTest::newRow("empty") << QString();
    QTest::newRow("ascii") << QStringLiteral("Hello, world");
    QTest::newRow("quote and backslash") << QStringLiteral("say \"hi\" \\ C:\\path");
    QTest::newRow("controls") << QString::fromUtf16(u"a\u0001b\u001fc\td\ne\rf\bg\fh\u007f");
    QTest::newRow("NUL inside") << QString(QChar(0)) + QStringLiteral("after") + QChar(0);
    QTest::newRow("line and paragraph separators") << QString::fromUtf16(u"x\u2028y\u2029z");
    QTest::newRow("two and three byte") << QString::fromUtf16(u"\u00e9t\u00e9 \u4e2d\u6587 \uffff \ufeff");
    QTest::newRow("astral pair") << QString::fromUtf16(u"\U0001F600 \U0010FFFF \U00010000");
    QTest::newRow("html-ish") << QStringLiteral("</script><!-- & ' -->");
    // Longer than one conversion chunk, with a pair across the chunk boundary.
    QTest::newRow("long with pair at chunk end")
        << QString(511, QLatin1Char('a')) + QString::fromUtf16(u"\U0001F600") + QString(2000, QChar(0x4e2d));
    QTest::newRow("long escapes") << QString(3000, QChar(0x01));
}

void TestJsonWriter::stringsRoundTrip() {
    QFETCH(QString, text);
    const QByteArray json = stringJson(text);
    QCOMPARE(parsed(json), QJsonValue(text));
    // The same text as Qt writes it (Qt escapes lone surrogates and controls the same way).
    QCOMPARE(parsed(json), parsed(qtStringJson(text)));
    QVERIFY(!json.contains('\n'));
    QVERIFY(!json.contains('\r'));
}

void TestJsonWriter::randomUtf16RoundTrips() {
    // Any sequence of UTF-16 units, surrogates in any order included, gives JSON that reads back
    // as what Qt's own writer gives for it.
    QRandomGenerator rng(1234);
    for (int round = 0; round < 2000; ++round) {
        QString s;
        const int n = int(rng.bounded(40));
        for (int i = 0; i < n; ++i) {
            const quint32 pick = rng.bounded(6);
            char16_t u = 0;
            if (pick == 0)
                u = char16_t(rng.bounded(0x20));
            else if (pick == 1)
                u = char16_t(0xd800 + rng.bounded(0x800)); // any surrogate
            else if (pick == 2)
                u = char16_t(0x20 + rng.bounded(0x60));
            else
                u = char16_t(rng.bounded(0x10000));
            s.append(QChar(u));
        }
        const QJsonValue mine = parsed(stringJson(s));
        const QJsonValue qts = parsed(qtStringJson(s));
        QVERIFY2(mine.isString(), qPrintable(QString::number(round)));
        QCOMPARE(mine, qts);
    }
}

void TestJsonWriter::loneSurrogatesAreEscapes() {
    const QString s = QString(QChar(0xd800)) + QLatin1Char('x') + QChar(0xdc00) + QChar(0xdbff);
    const QByteArray json = stringJson(s);
    QCOMPARE(json, QByteArray(R"("\ud800x\udc00\udbff")"));
    QCOMPARE(parsed(json).toString(), s);
    // Valid UTF-8 everywhere: the bytes decode without replacement characters.
    QVERIFY(!QString::fromUtf8(stringJson(QString::fromUtf16(u"\U0001F600\u00e9"))).contains(QChar(0xfffd)));
}

void TestJsonWriter::wellFormedTextHasNoLoneSurrogate() {
    // A body another server parses: each lone half a U+FFFD, a pair its character (probe R1 5).
    const QString s = QString(QChar(0xd83d)) + QLatin1Char('x') + QChar(0xdc00) + QString::fromUtf16(u"\U0001F600");
    QCOMPARE(sw::wire::compactJson(QJsonObject{{"t", s}}),
             QByteArray("{\"t\":\"\xef\xbf\xbdx\xef\xbf\xbd\xf0\x9f\x98\x80\"}"));
    JsonWriter w;
    w.setWellFormedText();
    w.value(QString(QChar(0xdbff)));
    QCOMPARE(w.take(), QByteArray("\"\xef\xbf\xbd\""));
}

void TestJsonWriter::numbers() {
    JsonWriter w;
    w.beginArray()
        .value(0)
        .value(-1)
        .value(std::numeric_limits<qint64>::max())
        .value(std::numeric_limits<qint64>::min())
        .value(1.5)
        .value(-0.25)
        .value(3.0)
        .value(1e-7)
        .value(1.7976931348623157e308)
        .value(std::nan(""))
        .value(std::numeric_limits<double>::infinity())
        .value(false)
        .endArray();
    const QJsonArray a = parsed(w.take()).toArray();
    QCOMPARE(a.size(), 12);
    QCOMPARE(a.at(0).toInteger(), 0);
    QCOMPARE(a.at(1).toInteger(), -1);
    QCOMPARE(a.at(2).toInteger(), std::numeric_limits<qint64>::max());
    QCOMPARE(a.at(3).toInteger(), std::numeric_limits<qint64>::min());
    QCOMPARE(a.at(4).toDouble(), 1.5);
    QCOMPARE(a.at(5).toDouble(), -0.25);
    QCOMPARE(a.at(6).toDouble(), 3.0);
    QCOMPARE(a.at(7).toDouble(), 1e-7);
    QCOMPARE(a.at(8).toDouble(), 1.7976931348623157e308);
    QVERIFY(a.at(9).isNull());
    QVERIFY(a.at(10).isNull());
    QCOMPARE(a.at(11), QJsonValue(false));
}

void TestJsonWriter::embeddedValuesEqualQtsOwn() {
    const QByteArray source = R"({"usage":{"prompt_tokens":12,"big":9007199254740993,"ratio":0.125,)"
                              R"("neg":-3e-9,"nested":[1,[2,{"x":null}],true,"s\u0000\n\u2028"],)"
                              R"("z":{}, "a":[], "\u00e9\u4e2d":"k"}})";
    const QJsonObject o = QJsonDocument::fromJson(source).object();
    QVERIFY(!o.isEmpty());
    JsonWriter w;
    w.beginObject().field("whole", o).field("value", o.value("usage")).field("array", QJsonArray{1, "two", 3.5});
    w.endObject();
    const QJsonObject back = parsed(w.take()).toObject();
    QCOMPARE(back.value("whole").toObject(), o);
    QCOMPARE(back.value("value"), o.value("usage"));
    QCOMPARE(back.value("array").toArray(), (QJsonArray{1, "two", 3.5}));
    QCOMPARE(back.value("whole").toObject().value("usage").toObject().value("big").toInteger(), 9007199254740993LL);
}

void TestJsonWriter::embeddingIsDepthBounded() {
    // A value nested deeper than the bound is cut to null instead of recursing without end.
    QJsonValue deep = QJsonArray{QStringLiteral("bottom")};
    for (int i = 0; i < JsonWriter::kMaxDepth + 50; ++i)
        deep = QJsonArray{deep};
    JsonWriter w;
    w.beginObject().field("deep", deep).endObject();
    const QByteArray json = w.take();
    QVERIFY(json.contains("null"));
    QVERIFY(!json.contains("bottom"));
    QVERIFY(json.endsWith("]}"));
    // Qt's parser (limit 1024) refuses it, but the text is balanced JSON.
    QCOMPARE(json.count('['), json.count(']'));

    // A value from a parser (at most 1024 levels) is written whole.
    QJsonValue fits = QJsonArray{QStringLiteral("bottom")};
    for (int i = 0; i < 1000; ++i)
        fits = QJsonArray{fits};
    JsonWriter w2;
    w2.beginObject().field("fits", fits).endObject();
    QVERIFY(w2.take().contains("bottom"));
}

void TestJsonWriter::sseFramesHoldOneDataLine() {
    JsonWriter w;
    w.beginSseEvent("content_block_delta").beginObject().field("text", QStringLiteral("a\nb\r\nc")).endObject();
    w.endSseEvent();
    w.beginSseEvent().beginObject().field("n", 1).endObject().endSseEvent();
    w.appendRaw("data: [DONE]\n\n");
    QCOMPARE(w.take(), QByteArray("event: content_block_delta\ndata: {\"text\":\"a\\nb\\r\\nc\"}\n\n"
                                  "data: {\"n\":1}\n\n"
                                  "data: [DONE]\n\n"));
}

void TestJsonWriter::compactJsonMatchesQt() {
    // Keys in the object's (sorted) order and the same escapes: Qt's bytes, numbers aside.
    const QJsonObject o = QJsonDocument::fromJson(R"({"b":[1,-2,"x",null,false,{"c":"\ud83d\ude00\u2028"}],)"
                                                  R"("a":{"k":"v\u0001\"\\/","":{}}, "n":9007199254740993})")
                              .object();
    QVERIFY(!o.isEmpty());
    QCOMPARE(sw::wire::compactJson(o), QJsonDocument(o).toJson(QJsonDocument::Compact));
    QCOMPARE(sw::wire::compactJson(QJsonObject()), QByteArray("{}"));
    const QJsonObject d{{"r", 0.1}, {"e", 1e-7}, {"big", 1e300}};
    QCOMPARE(QJsonDocument::fromJson(sw::wire::compactJson(d)).object(), d);
}

QTEST_GUILESS_MAIN(TestJsonWriter)
#include "test_json_writer.moc"
