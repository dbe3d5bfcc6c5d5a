// core/wire/rapid_json: an upstream's event reads the same through it as through Qt's JSON.
#include "core/wire/rapid_json.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QThread>
#include <QtTest>

namespace rj = sw::wire::rj;

class TestRapidJson : public QObject {
    Q_OBJECT
private slots:
    void readsAnEventLikeQt();
    void theLastOfDuplicateNamesCounts();
    void nestingPastQtsLimitIsRefusedWithoutCrashing();
    void nestingToTheLimitFitsASmallStack();
    void refusesWhatQtRefuses();
    void takesWhatQtTakesThatRapidJsonWouldNot();
    void stringsKeepNulsAndLoneSurrogatesAndRefuseInvalidUtf8();
    void byteOrderMarksReadAsQtReadsThem();
    void numbersReadAsQtReadsThem();
    void compactWritesWhatQtWrites();
    void toQtGivesQtsValue();
    void aWideObjectInAnyOrderGivesQtsValue();
    void aLargeEventParses();
    void bytesThatAreNotUtf8ReadAsOneReplacementEachMaximalSubpart();
};

namespace {

QJsonValue qtRoot(const QByteArray &text) {
    const QJsonDocument d = QJsonDocument::fromJson(text);
    return d.isObject() ? QJsonValue(d.object()) : d.isArray() ? QJsonValue(d.array()) : QJsonValue();
}

QByteArray deep(int levels) {
    return QByteArray(levels, '[') + QByteArray(levels, ']');
}

} // namespace

void TestRapidJson::readsAnEventLikeQt() {
    rj::ParsedJson json;
    QVERIFY(json.parse(R"({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"},)"
                       R"("flag":true,"n":null})"));
    const rj::Value *data = json.object();
    QVERIFY(data);
    QVERIFY(rj::equals(rj::member(data, "type"), "content_block_delta"));
    QCOMPARE(rj::toInt(rj::member(data, "index"), -1), 1);
    QCOMPARE(rj::toString(rj::member(rj::member(data, "delta"), "text")), QStringLiteral("Hi"));
    QCOMPARE(rj::toBool(rj::member(data, "flag")), true);
    QVERIFY(rj::isAbsent(rj::member(data, "n")));    // null
    QVERIFY(rj::isAbsent(rj::member(data, "gone"))); // undefined
    // Lookups through something that is not an object are undefined, as toObject().value() is.
    QVERIFY(!rj::member(rj::member(data, "index"), "text"));
    QCOMPARE(rj::toString(rj::member(data, "index"), QStringLiteral("dflt")), QStringLiteral("dflt"));
    QCOMPARE(rj::toInt(rj::member(data, "type"), -1), -1);

    rj::ParsedJson array;
    QVERIFY(array.parse("[{\"a\":1}]"));
    QVERIFY(!array.object()); // QJsonDocument::object() of an array is empty
    QCOMPARE(rj::arraySize(&array.root()), 1);
}

void TestRapidJson::theLastOfDuplicateNamesCounts() {
    const QByteArray text = R"({"text":"first","n":1,"text":"second","n":{"x":1},"n":3})";
    rj::ParsedJson json;
    QVERIFY(json.parse(text));
    const QJsonObject qt = QJsonDocument::fromJson(text).object();
    QCOMPARE(rj::toString(rj::member(json.object(), "text")), QStringLiteral("second"));
    QCOMPARE(rj::toString(rj::member(json.object(), "text")), qt.value(QLatin1String("text")).toString());
    QCOMPARE(rj::toInteger(rj::member(json.object(), "n")), qint64(3));
    QCOMPARE(rj::compact(json.root()), QByteArray(R"({"n":3,"text":"second"})"));
    QCOMPARE(rj::toQtObject(json.object()), qt);
}

void TestRapidJson::nestingPastQtsLimitIsRefusedWithoutCrashing() {
    rj::ParsedJson limit;
    QVERIFY(limit.parse(deep(1024))); // Qt's limit, still taken
    QVERIFY(!QJsonDocument::fromJson(deep(1025)).isArray());
    for (const QByteArray &text : {deep(1025), QByteArray(100000, '[') + QByteArray(100000, ']'),
                                   QByteArray(100000, '['), "{\"a\":" + QByteArray(100000, '{')}) {
        rj::ParsedJson json;
        QVERIFY(!json.parse(text));
        QVERIFY(json.root().IsNull());
        QVERIFY(!json.object());
    }
}

void TestRapidJson::nestingToTheLimitFitsASmallStack() {
    // The parser recurses once per level and the limit stops it at level 1025: on a thread with
    // a sixteenth of the usual 8 MiB stack (ASan's frames included) the deepest texts taken
    // parse and deeper ones are refused.
    bool ok = false;
    QThread *thread = QThread::create([&ok] {
        const QByteArray objects =
            QByteArray().append(QByteArray("{\"a\":").repeated(1024)) + "1" + QByteArray(1024, '}');
        rj::ParsedJson arrays, nested, tooDeep, unclosed;
        ok = arrays.parse(deep(1024)) && nested.parse(objects) && !tooDeep.parse(deep(100000)) &&
             !unclosed.parse("{\"a\":" + QByteArray(100000, '{'));
    });
    thread->setStackSize(512 * 1024);
    thread->start();
    QVERIFY(thread->wait(30000));
    delete thread;
    QVERIFY(ok);
}

void TestRapidJson::refusesWhatQtRefuses() {
    const QList<QByteArray> refused{"",
                                    "   ",
                                    "123",
                                    "\"text\"",
                                    "{} x",
                                    QByteArray("{}\0{}", 5),
                                    "{}\f",
                                    "{\"a\":1,}",
                                    "[1,]",
                                    "{\"a\" 1}",
                                    "[True]",
                                    "[01]",
                                    "[+1]",
                                    "[1e]",
                                    "[1e400]",
                                    "[1e-400]",
                                    "[2e-324]",
                                    "{\"a\":\"x",
                                    "{\"a\":\"\xff\"}",
                                    "{\"a\":\"\xc0\xaf\"}",
                                    "{\"a\":\"\xed\xa0\x80\"}",
                                    "\xEF{}",
                                    " \xEF\xBB\xBF{}"};
    for (const QByteArray &text : refused) {
        QVERIFY2(QJsonDocument::fromJson(text).isNull(), text.toPercentEncoding().constData());
        rj::ParsedJson json;
        QVERIFY2(!json.parse(text), text.toPercentEncoding().constData());
        QVERIFY(json.root().IsNull());
    }
}

void TestRapidJson::takesWhatQtTakesThatRapidJsonWouldNot() {
    // Qt is lenient where RapidJSON is strict: raw control characters in strings, unknown
    // escapes (even of a byte that is not UTF-8: "\<0x96>" is U+0096), "1." and ".5", a byte
    // order mark before the document.
    for (const QByteArray &text :
         {QByteArray("{\"a\":\"x\ty\x01z\"}"), QByteArray(R"({"a":"\q"})"), QByteArray("[1.,.5,-.5]"),
          QByteArray("\xEF\xBB\xBF{\"a\":1}"), QByteArray("{\"a\":\"x\0y\"}", 11), QByteArray("[0e400,0.0e-400]"),
          QByteArray("[\"a\\\x96\"]")}) {
        rj::ParsedJson json;
        QVERIFY2(json.parse(text), text.toPercentEncoding().constData());
        QCOMPARE(rj::compact(json.root()), QJsonDocument::fromJson(text).toJson(QJsonDocument::Compact));
    }
    rj::ParsedJson lenient;
    QVERIFY(lenient.parse(R"({"a":"\q","b":[1.,.5]})"));
    QCOMPARE(rj::toString(rj::member(lenient.object(), "a")), QStringLiteral("q"));
    QCOMPARE(rj::toInteger(&rj::member(lenient.object(), "b")->GetArray()[0]), qint64(1));
}

void TestRapidJson::stringsKeepNulsAndLoneSurrogatesAndRefuseInvalidUtf8() {
    const QByteArray text = R"({"nul":"a\u0000b","hi":"\ud800","lo":"x\udc00","pair":"\ud83d\ude00"})";
    rj::ParsedJson json;
    QVERIFY(json.parse(text));
    const QJsonObject qt = QJsonDocument::fromJson(text).object();
    for (const char *name : {"nul", "hi", "lo", "pair"}) {
        QCOMPARE(rj::toString(rj::member(json.object(), name)), qt.value(QLatin1String(name)).toString());
    }
    QCOMPARE(rj::toString(rj::member(json.object(), "nul")).size(), 3);
    QCOMPARE(rj::toString(rj::member(json.object(), "hi")), QString(QChar(0xD800)));
    QCOMPARE(rj::toString(rj::member(json.object(), "pair")), QString::fromUtf8("\xF0\x9F\x98\x80"));
    // Written back as Qt writes them: the NUL and the lone surrogates as escapes.
    QCOMPARE(rj::compact(json.root()), QJsonDocument(qt).toJson(QJsonDocument::Compact));
    QVERIFY(rj::compact(json.root()).contains("\\u0000"));
    QVERIFY(rj::compact(json.root()).contains("\\ud800"));

    rj::ParsedJson invalid;
    QVERIFY(!invalid.parse("{\"text\":\"caf\xE9\"}")); // Latin-1, not UTF-8: Qt refuses the event
}

void TestRapidJson::byteOrderMarksReadAsQtReadsThem() {
    // Qt drops a byte order mark that starts a string written without escapes, and keeps one
    // written with escapes or followed by them.
    const QByteArray text = "{\"raw\":\"\xEF\xBB\xBFx\",\"escaped\":\"\\ufeffx\",\"mixed\":\"\xEF\xBB\xBFy\\n\"}";
    rj::ParsedJson json;
    QVERIFY(json.parse(text));
    const QJsonObject qt = QJsonDocument::fromJson(text).object();
    QCOMPARE(rj::toString(rj::member(json.object(), "raw")), QStringLiteral("x"));
    for (const char *name : {"raw", "escaped", "mixed"})
        QCOMPARE(rj::toString(rj::member(json.object(), name)), qt.value(QLatin1String(name)).toString());
    QCOMPARE(rj::compact(json.root()), QJsonDocument(qt).toJson(QJsonDocument::Compact));
}

void TestRapidJson::numbersReadAsQtReadsThem() {
    const QByteArray text = "[12, 12.0, 1.2e1, -0, -0.0, 12.5, 9223372036854775807, 9223372036854775808, "
                            "-9223372036854775809, 18446744073709551616, 2147483647, 2147483648, 1e300, 5e-324]";
    rj::ParsedJson json;
    QVERIFY(json.parse(text));
    const QJsonArray qt = QJsonDocument::fromJson(text).array();
    const auto &array = json.root().GetArray();
    QCOMPARE(qsizetype(array.Size()), qt.size());
    for (qsizetype i = 0; i < qt.size(); ++i) {
        const rj::Value *v = &array[rapidjson::SizeType(i)];
        QCOMPARE(rj::toInteger(v, -7), qt.at(i).toInteger(-7));
        QCOMPARE(rj::toInt(v, -7), qt.at(i).toInt(-7));
        QVERIFY(rj::isNumber(v));
    }
    QCOMPARE(rj::toInteger(&array[1]), qint64(12));                         // 12.0 is an integer
    QCOMPARE(rj::toInteger(&array[5], -1), qint64(-1));                     // 12.5 is not
    QCOMPARE(rj::toInteger(&array[7], -1), qint64(-1));                     // 2^63 does not fit
    QCOMPARE(rj::toInteger(&array[8]), std::numeric_limits<qint64>::min()); // rounds to -2^63
    QCOMPARE(rj::toInt(&array[11], -1), -1);                                // 2^31 is past int
    QCOMPARE(rj::compact(json.root()), QJsonDocument(qt).toJson(QJsonDocument::Compact));
}

void TestRapidJson::compactWritesWhatQtWrites() {
    const QByteArray text = "{\"b\":[1,{\"z\":null,\"a\":false}],\"a\":\"\\\"\\\\\\b\\f\\n\\r\\t\\u001f\x7f"
                            "\xE2\x80\xA8\",\"\":0.1,\"B\":1e-7,\"\xEF\xBC\xA1\":{},\"c\":[]}";
    rj::ParsedJson json;
    QVERIFY(json.parse(text));
    QCOMPARE(rj::compact(json.root()), QJsonDocument::fromJson(text).toJson(QJsonDocument::Compact));
    QCOMPARE(rj::compact(*rj::member(json.object(), "b")), QByteArray(R"([1,{"a":false,"z":null}])"));

    QByteArray escaped;
    rj::appendEscaped(escaped, "say \"hi\"\n\\");
    QCOMPARE(escaped, QByteArray(R"(say \"hi\"\n\\)"));

    // Deeper than the bound: nothing written.
    rj::ParsedJson nested;
    QVERIFY(nested.parse(deep(10)));
    QByteArray out = "x";
    QVERIFY(!rj::appendCompact(out, nested.root(), 5));
    QVERIFY(rj::appendCompact(out, nested.root(), 10));
    QCOMPARE(out, "x" + deep(10));
}

void TestRapidJson::toQtGivesQtsValue() {
    const QByteArray text = R"({"usage":{"prompt_tokens":5,"details":{"cached":1.0}},"list":[1,"a",null,true,2.5]})";
    rj::ParsedJson json;
    QVERIFY(json.parse(text));
    const QJsonObject qt = QJsonDocument::fromJson(text).object();
    QCOMPARE(rj::toQtObject(json.object()), qt);
    QCOMPARE(rj::toQt(rj::member(json.object(), "list")), qt.value(QLatin1String("list")));
    QVERIFY(rj::toQt(nullptr).isUndefined());
    QVERIFY(rj::toQtObject(rj::member(json.object(), "list")).isEmpty());
    QCOMPARE(qtRoot(text), QJsonValue(rj::toQtObject(json.object())));
}

void TestRapidJson::aWideObjectInAnyOrderGivesQtsValue() {
    // Past a few dozen members the names are sorted before they go into Qt's object (probe T3 F1:
    // inserted in reverse order, each one moved every key after it). The result is Qt's own, a
    // later duplicate still replacing an earlier one, in every order.
    QByteArray reversed = "{";
    for (int i = 3000; i > 0; --i)
        reversed += "\"k" + QByteArray::number(i) + "\":" + QByteArray::number(i) + ",";
    reversed += "\"k7\":\"later\",\"\\u00e9t\\u00e9\":1,\"\\ud83d\\ude00\":2,\"Z\":3,\"\":4}";
    rj::ParsedJson json;
    QVERIFY(json.parse(reversed));
    const QJsonObject mine = rj::toQtObject(json.object());
    const QJsonObject qt = QJsonDocument::fromJson(reversed).object();
    QCOMPARE(mine.size(), 3004);
    QCOMPARE(mine, qt);
    QCOMPARE(mine.value(QLatin1String("k7")), QJsonValue(QStringLiteral("later")));
    QCOMPARE(mine.keys(), qt.keys());
    // A nested wide object too (a tool schema's properties).
    const QByteArray nested = "{\"parameters\":{\"properties\":" + reversed + "}}";
    rj::ParsedJson inner;
    QVERIFY(inner.parse(nested));
    QCOMPARE(rj::toQtObject(inner.object()), QJsonDocument::fromJson(nested).object());
}

void TestRapidJson::aLargeEventParses() {
    // Past the 4 KiB kept inside ParsedJson: the pool takes memory from the heap.
    QByteArray text = "{\"text\":\"" + QByteArray(200000, 'x') + "\",\"items\":[";
    for (int i = 0; i < 5000; ++i)
        text += (i ? ",{\"i\":" : "{\"i\":") + QByteArray::number(i) + "}";
    text += "]}";
    rj::ParsedJson json;
    QVERIFY(json.parse(text));
    QCOMPARE(rj::toString(rj::member(json.object(), "text")).size(), 200000);
    QCOMPARE(rj::arraySize(rj::member(json.object(), "items")), 5000);
    QCOMPARE(rj::compact(json.root()), QJsonDocument::fromJson(text).toJson(QJsonDocument::Compact));
}

// An upstream's bytes that are not UTF-8 read as WHATWG's decoder (and so every SDK) reads them: one
// U+FFFD for each maximal subpart of a sequence, the valid text around it kept (probe HV 6: one a
// byte, as Qt's decoder gives, made a split emoji four).
void TestRapidJson::bytesThatAreNotUtf8ReadAsOneReplacementEachMaximalSubpart() {
    const QByteArray r = "\xEF\xBF\xBD";
    const QList<std::pair<QByteArray, QByteArray>> cases = {
        {"caf\xC3\xA9", "caf\xC3\xA9"},           // valid: unchanged
        {"a\xE2\x82z", "a" + r + "z"},            // a cut 3-byte sequence: one
        {"\xFF\xFF", r + r},                      // bytes no sequence begins with: one each
        {"x\xF0\x9F\x98", "x" + r},               // an emoji's first three bytes, at the end
        {"\x80", r},                              // a lone continuation byte
        {"\xED\xA0\x80", r + r + r},              // an encoded surrogate: not a subpart
        {"\xC0\x80", r + r},                      // an overlong NUL
        {"\xE4\xB8\x96\xE7", "\xE4\xB8\x96" + r}, // one character whole, the next cut
        {"\xF4\x90\x80\x80", r + r + r + r},      // past U+10FFFF
    };
    for (const auto &[in, want] : cases) {
        const QByteArray got = rj::repairedUtf8(in);
        QVERIFY2(got == want, (in.toHex(' ') + " -> " + got.toHex(' ')).constData());
        QVERIFY(rj::isUtf8(got));
    }
}

QTEST_GUILESS_MAIN(TestRapidJson)
#include "test_rapid_json.moc"
