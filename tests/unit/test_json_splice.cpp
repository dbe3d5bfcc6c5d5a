// The top-level splice of a JSON object's bytes: spans found through nesting, strings and
// escapes; members replaced or appended; every body it cannot vouch for declined.
#include "core/wire/json_splice.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

using sw::wire::JsonMemberEdit;
using sw::wire::JsonObjectSpans;
using sw::wire::jsonString;
using sw::wire::spliceTopLevel;

namespace {

QJsonObject parsed(const QByteArray &json) {
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &error);
    if (error.error != QJsonParseError::NoError || !doc.isObject())
        qWarning("not a JSON object: %s", json.constData());
    return doc.object();
}

// What the gateway sets on a same-API request.
const std::initializer_list<JsonMemberEdit> kEdits{{"model", "\"up-model\""}, {"stream", "true"}};

// The splice of `json` must be `json` parsed with model and stream set, whatever the body holds.
void checkSplicedLikeInsert(const QByteArray &json) {
    const std::optional<QByteArray> out = spliceTopLevel(json, kEdits);
    QVERIFY2(out, json.constData());
    QJsonObject expected = parsed(json);
    QVERIFY(!expected.isEmpty());
    expected.insert(QStringLiteral("model"), QStringLiteral("up-model"));
    expected.insert(QStringLiteral("stream"), true);
    QCOMPARE(parsed(*out), expected);
}

} // namespace

class TestJsonSplice : public QObject {
    Q_OBJECT
private slots:
    void spansSkipNestedValuesStringsAndEscapes();
    void whitespaceEverywhereIsKept();
    void replacesInPlaceAndAppendsTheMissing();
    void emptyObjectGetsTheMembers();
    void removesMembersWithTheirCommas();
    void arrayElementsAreFound();
    void unknownBytesAreForwardedExactly();
    void keyNamedInsideAValueIsNotTheMember();
    void duplicateKeysDecline();
    void escapedKeysDecline();
    void notASingleObjectDeclines();
    void truncatedOrMalformedDeclines();
    void deepNestingDeclinesWithoutRecursion();
    void jsonStringEscapes();
};

void TestJsonSplice::spansSkipNestedValuesStringsAndEscapes() {
    const QByteArray json =
        R"({"a":{"b":[1,{"c":"}]"}],"d":"x\"}y"},"s":"br{ace [and] \\\" quote \\\\","n":-1.5e+3,"t":true,"z":null,"model":"m"})";
    const auto spans = JsonObjectSpans::scan(json);
    QVERIFY(spans);
    QCOMPARE(spans->members().size(), 6);
    QStringList keys;
    for (const auto &m : spans->members())
        keys << QString::fromUtf8(spans->key(m));
    QCOMPARE(keys, (QStringList{"a", "s", "n", "t", "z", "model"}));
    QCOMPARE(spans->value(spans->members()[0]).toByteArray(), QByteArray(R"({"b":[1,{"c":"}]"}],"d":"x\"}y"})"));
    QCOMPARE(spans->value(spans->members()[1]).toByteArray(), QByteArray(R"("br{ace [and] \\\" quote \\\\")"));
    QCOMPARE(spans->value(spans->members()[2]).toByteArray(), QByteArray("-1.5e+3"));
    QCOMPARE(spans->value(spans->members()[3]).toByteArray(), QByteArray("true"));
    QCOMPARE(spans->value(spans->members()[4]).toByteArray(), QByteArray("null"));
    QCOMPARE(spans->value(*spans->find("model")).toByteArray(), QByteArray("\"m\""));
    QVERIFY(!spans->find("b")); // nested keys are not top-level members
    QVERIFY(!spans->hasDuplicateKeys());
    checkSplicedLikeInsert(json);
}

void TestJsonSplice::whitespaceEverywhereIsKept() {
    const QByteArray json = " \r\n\t{ \"model\" \t:\n \"old\" , \"messages\" : [ { \"role\" : \"user\" } ] ,"
                            "\"stream\":false\n}\n ";
    const auto out = spliceTopLevel(json, kEdits);
    QVERIFY(out);
    QCOMPARE(*out, QByteArray(" \r\n\t{ \"model\" \t:\n \"up-model\" , \"messages\" : [ { \"role\" : \"user\" } ] ,"
                              "\"stream\":true\n}\n "));
    checkSplicedLikeInsert(json);
}

void TestJsonSplice::replacesInPlaceAndAppendsTheMissing() {
    // model is replaced where it stands; stream and stream_options are appended in edit order.
    const auto out =
        spliceTopLevel(R"({"messages":[],"model":"old","temperature":0.2})",
                       {{"model", "\"new\""}, {"stream", "true"}, {"stream_options", R"({"include_usage":true})"}});
    QVERIFY(out);
    QCOMPARE(*out, QByteArray(R"({"messages":[],"model":"new","temperature":0.2,"stream":true,)"
                              R"("stream_options":{"include_usage":true}})"));
    // Any value, of any size, is replaced whole.
    const auto nested = spliceTopLevel(R"({"stream_options":{"a":[1,2,{"b":"}"}]},"x":1})",
                                       {{"stream_options", R"({"include_usage":true})"}});
    QVERIFY(nested);
    QCOMPARE(*nested, QByteArray(R"({"stream_options":{"include_usage":true},"x":1})"));
}

void TestJsonSplice::emptyObjectGetsTheMembers() {
    const auto out = spliceTopLevel(" { \n } ", kEdits);
    QVERIFY(out);
    QCOMPARE(*out, QByteArray(" {\"model\":\"up-model\",\"stream\":true \n } "));
    QCOMPARE(parsed(*out), (QJsonObject{{"model", "up-model"}, {"stream", true}}));
}

void TestJsonSplice::removesMembersWithTheirCommas() {
    // Every subset of four members taken out, with a replacement and an append alongside: the
    // others keep their bytes, spacing included, and the result is the object without them.
    const QByteArray json = " { \"a\" : 1 ,\n\"store\":false, \"model\":\"old\" ,\"z\":[2] \n} ";
    const char *const keys[] = {"a", "store", "model", "z"};
    for (int mask = 0; mask < 16; ++mask) {
        QList<JsonMemberEdit> edits;
        QJsonObject expected = parsed(json);
        for (int k = 0; k < 4; ++k)
            if (mask & (1 << k)) {
                edits.append(JsonMemberEdit::removal(keys[k]));
                expected.remove(QLatin1String(keys[k]));
            }
        edits.append(JsonMemberEdit::removal("absent"));
        if (!(mask & 4)) {
            edits.append(JsonMemberEdit{"model", "\"new\""});
            expected.insert(QStringLiteral("model"), QStringLiteral("new"));
        }
        edits.append(JsonMemberEdit{"stream", "true"});
        expected.insert(QStringLiteral("stream"), true);
        const auto out = spliceTopLevel(json, std::span<const JsonMemberEdit>(edits.constData(), edits.size()));
        QVERIFY(out);
        QCOMPARE(parsed(*out), expected);
    }
    const auto store = spliceTopLevel(json, {JsonMemberEdit::removal("store")});
    QVERIFY(store);
    QCOMPARE(*store, QByteArray(" { \"a\" : 1, \"model\":\"old\" ,\"z\":[2] \n} "));
    const auto first = spliceTopLevel(json, {JsonMemberEdit::removal("a"), JsonMemberEdit::removal("store")});
    QVERIFY(first);
    QCOMPARE(*first, QByteArray(" { \"model\":\"old\" ,\"z\":[2] \n} "));
    const auto last = spliceTopLevel(json, {JsonMemberEdit::removal("z"), JsonMemberEdit::removal("model")});
    QVERIFY(last);
    QCOMPARE(*last, QByteArray(" { \"a\" : 1 ,\n\"store\":false \n} "));
    const auto all = spliceTopLevel(R"({"store":false})", {JsonMemberEdit::removal("store"), {"stream", "true"}});
    QVERIFY(all);
    QCOMPARE(*all, QByteArray(R"({"stream":true})"));
}

void TestJsonSplice::arrayElementsAreFound() {
    const QByteArray json = R"( [ {"role":"developer","content":"a]\"}"} , "x",[1,[2]],-3 ] )";
    const auto spans = sw::wire::scanArray(json);
    QVERIFY(spans);
    QStringList values;
    for (const auto &v : *spans)
        values << QString::fromUtf8(json.mid(v.begin, v.end - v.begin));
    QCOMPARE(values, (QStringList{R"({"role":"developer","content":"a]\"}"})", "\"x\"", "[1,[2]]", "-3"}));
    QVERIFY(sw::wire::scanArray(" [ ] ") && sw::wire::scanArray(" [ ] ")->isEmpty());
    for (const char *bad : {"[1,]", "[,1]", "[1 2]", "[1", "{}", "[1]]", "[\"a]"})
        QVERIFY2(!sw::wire::scanArray(bad), bad);
}

void TestJsonSplice::unknownBytesAreForwardedExactly() {
    // Numbers beyond a double's precision, unicode raw and escaped, and key order are the
    // client's: only the edited value changes.
    const QByteArray json = "{\"seed\":12345678901234567890,\"pi\":3.14159265358979323846264338327950288,"
                            "\"text\":\"h\xc3\xa9llo \\u00e9 \xf0\x9f\x98\x80 \\ud83d\\ude00\",\"model\":\"a\","
                            "\"zeta\":{},\"alpha\":[]}";
    const auto out = spliceTopLevel(json, {{"model", "\"b\""}});
    QVERIFY(out);
    QByteArray expected = json;
    expected.replace("\"model\":\"a\"", "\"model\":\"b\"");
    QCOMPARE(*out, expected);
    QVERIFY(out->contains("12345678901234567890"));
    checkSplicedLikeInsert(json);
}

void TestJsonSplice::keyNamedInsideAValueIsNotTheMember() {
    // "model" as a nested key and as string text: neither is the top-level member.
    const QByteArray json = R"({"tools":[{"model":"inner"}],"note":"\"model\":\"x\"","m":{"model":1}})";
    const auto out = spliceTopLevel(json, kEdits);
    QVERIFY(out);
    QVERIFY(out->startsWith(R"({"tools":[{"model":"inner"}],"note":"\"model\":\"x\"","m":{"model":1},)"));
    checkSplicedLikeInsert(json);
}

void TestJsonSplice::duplicateKeysDecline() {
    // Qt keeps the last duplicate, a peer may keep the first: the body is not forwarded as is.
    QVERIFY(!spliceTopLevel(R"({"model":"a","model":"b"})", kEdits));
    QVERIFY(!spliceTopLevel(R"({"messages":[],"x":1,"messages":[1]})", kEdits)); // not an edited key either
    QVERIFY(JsonObjectSpans::scan(R"({"model":"a","model":"b"})")->hasDuplicateKeys());
    // Many members take the sorted check.
    QByteArray many = "{";
    for (int i = 0; i < 40; ++i)
        many += "\"k" + QByteArray::number(i) + "\":" + QByteArray::number(i) + ',';
    QVERIFY(spliceTopLevel(many + "\"last\":0}", kEdits));
    QVERIFY(!spliceTopLevel(many + "\"k17\":0}", kEdits));
    // Duplicates inside values are the client's business and stay as sent.
    QVERIFY(spliceTopLevel(R"({"metadata":{"a":1,"a":2}})", kEdits));
}

void TestJsonSplice::escapedKeysDecline() {
    // "mod\u0065l" is "model": comparing it would need decoding, so any escaped key declines.
    QVERIFY(!spliceTopLevel(R"({"mod\u0065l":"a","messages":[]})", kEdits));
    QVERIFY(!spliceTopLevel(R"({"x\"y":1})", kEdits));
    // Escapes in values and nested keys are fine.
    checkSplicedLikeInsert(R"({"messages":[{"r\u006fle":"user","content":"a\\b\u0000c"}]})");
}

void TestJsonSplice::notASingleObjectDeclines() {
    for (const QByteArray &json : {QByteArray(), QByteArray("   "), QByteArray("[]"), QByteArray("[{\"model\":1}]"),
                                   QByteArray("\"{}\""), QByteArray("42"), QByteArray("null"), QByteArray("{} {}"),
                                   QByteArray("{}x"), QByteArray("{},"), QByteArray("\xef\xbb\xbf{}")})
        QVERIFY2(!spliceTopLevel(json, kEdits), json.constData());
}

void TestJsonSplice::truncatedOrMalformedDeclines() {
    const QByteArray whole = R"({"model":"m","messages":[{"role":"user","content":"a \"quoted\" {text}"}],"n":1})";
    QVERIFY(spliceTopLevel(whole, kEdits));
    for (qsizetype cut = 0; cut < whole.size(); ++cut)
        QVERIFY2(!spliceTopLevel(whole.left(cut), kEdits), whole.left(cut).constData());
    for (const QByteArray &json :
         {QByteArray(R"({"a" 1})"), QByteArray(R"({"a":})"), QByteArray(R"({"a":1,})"), QByteArray(R"({,"a":1})"),
          QByteArray(R"({a:1})"), QByteArray(R"({"a":1 "b":2})"), QByteArray(R"({"a":[1,2}})"),
          QByteArray(R"({"a":{"b":1]})"), QByteArray(R"({"a":"x\"})"), QByteArray(R"({"a":1}})")})
        QVERIFY2(!spliceTopLevel(json, kEdits), json.constData());
}

void TestJsonSplice::deepNestingDeclinesWithoutRecursion() {
    // 100 000 levels would overflow a recursive scanner's stack.
    const int deep = 100000;
    const QByteArray hostile = "{\"a\":" + QByteArray(deep, '[') + QByteArray(deep, ']') + "}";
    QVERIFY(!spliceTopLevel(hostile, kEdits));
    // Within the bound it splices.
    const QByteArray fine = "{\"a\":" + QByteArray(500, '[') + QByteArray(500, ']') + "}";
    checkSplicedLikeInsert(fine);
}

void TestJsonSplice::jsonStringEscapes() {
    QCOMPARE(jsonString(u"plain/model-1"), QByteArray("\"plain/model-1\""));
    QCOMPARE(jsonString(u"q\"b\\n\n\t\x01"), QByteArray(R"("q\"b\\n\n\t\u0001")"));
    const QString unicode = QStringLiteral("mod\u00e8le-\U0001F600");
    QCOMPARE(parsed("{\"m\":" + jsonString(unicode) + "}").value(QStringLiteral("m")).toString(), unicode);
}

QTEST_GUILESS_MAIN(TestJsonSplice)
#include "test_json_splice.moc"
