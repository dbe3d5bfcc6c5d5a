// A client's request body, parsed once at decode (wire::parseClientBody, rj::ParsedJson), reads
// exactly as the document Qt's parser gives (or is refused with exactly Qt's error), on every
// corpus file and fixture, on every prefix of real bodies, on mutated bodies, and on the texts
// where RapidJSON and Qt part ways: the check of the fuzz target fuzz_rapid_json on each.
#include "core/formats/inbound_codec.h"
#include "core/wire/client_body.h"
#include "tests/fuzz/rapid_json_check.h"

#include <QDirIterator>
#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QtTest>

class TestClientBodyParse : public QObject {
    Q_OBJECT
private slots:
    void aRequestBodyReadsAsQtsDocument();
    void everyCorpusFileAndFixtureParsesAsQtParsesIt();
    void everyPrefixOfARealBodyParsesAsQtParsesIt();
    void nestingPastQtsLimitFailsAsQtFails();
    void textsWhereRapidJsonAndQtPartWaysGiveQtsResult();
    void numbersAreIntegersWhereQtsAre();
    void theLastOfDuplicateNamesCounts();
    void mutatedBodiesParseAsQtParsesThem();
    void theDecodeRefusesABadBodyWithQtsMessage();
    void aKeptBodyHoldsAboutItsOwnSize();
    void aBodyOfTinyValuesIsRefusedBeforeItOutgrowsItsText();
};

namespace {

QByteArray readFile(const QString &path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

#define VERIFY_SAME_AS_QT(text)                                                                                        \
    do {                                                                                                               \
        const QByteArray t_ = (text);                                                                                  \
        const char *what_ = sw::rjcheck::difference(t_);                                                               \
        QVERIFY2(!what_,                                                                                               \
                 qPrintable(QStringLiteral("%1 differs on %2")                                                         \
                                .arg(QLatin1String(what_), QString::fromLatin1(t_.left(200).toPercentEncoding()))));   \
    } while (false)

// A coding agent's conversation, as the request bench builds it: escapes, unicode, tool calls.
QByteArray conversation(int turns) {
    QJsonArray messages;
    for (int i = 0; i < turns; ++i) {
        const QString text =
            QStringLiteral("Turn %1: `if (s[i] == '\"') { return \"\\\\\"; }` — résumé ✓ 😀\n\t").arg(i);
        messages.append(QJsonObject{{"role", "user"}, {"content", text.repeated(4)}});
        messages.append(
            QJsonObject{{"role", "assistant"},
                        {"content", QJsonArray{QJsonObject{{"type", "text"}, {"text", text}},
                                               QJsonObject{{"type", "tool_use"},
                                                           {"id", QStringLiteral("call_%1").arg(i)},
                                                           {"input", QJsonObject{{"line", i}, {"ratio", i / 7.0}}}}}}});
    }
    return QJsonDocument(QJsonObject{{"model", "m"}, {"max_tokens", 32000}, {"messages", messages}})
        .toJson(QJsonDocument::Compact);
}

} // namespace

void TestClientBodyParse::aRequestBodyReadsAsQtsDocument() {
    const QByteArray bodies[] = {
        R"({"model":"gpt","stream":false,"messages":[{"role":"user","content":"ping"}]})",
        conversation(50),
        readFile(QStringLiteral(SWITCHMAN_TEST_DATA "/anthropic_request_claude_code.json")),
        readFile(QStringLiteral(SWITCHMAN_TEST_DATA "/openai_chat_request_sdk.json")),
        " \t\r\n[ {\"a\" : [ ] , \"b\" : { } } , null , true , false , \"\" ] \n",
    };
    for (const QByteArray &body : bodies) {
        QVERIFY(!body.isEmpty());
        const auto parsed = sw::wire::parseClientBody(body);
        QVERIFY(parsed);
        QCOMPARE(sw::wire::rj::compact(parsed->root()), QJsonDocument::fromJson(body).toJson(QJsonDocument::Compact));
        VERIFY_SAME_AS_QT(body);
    }
}

void TestClientBodyParse::everyCorpusFileAndFixtureParsesAsQtParsesIt() {
    // Every file whole, every line of it, and every SSE data: payload.
    const QString roots[] = {QStringLiteral(SWITCHMAN_TEST_DATA "/../fuzz/corpus"),
                             QStringLiteral(SWITCHMAN_TEST_DATA)};
    int files = 0;
    int texts = 0;
    for (const QString &root : roots) {
        QDirIterator it(root, QDir::Files, QDirIterator::Subdirectories);
        while (it.hasNext()) {
            const QByteArray content = readFile(it.next());
            ++files;
            QList<QByteArray> inputs{content};
            for (const QByteArray &line : content.split('\n')) {
                inputs.append(line);
                if (line.startsWith("data:"))
                    inputs.append(line.mid(5).trimmed());
            }
            for (const QByteArray &input : std::as_const(inputs)) {
                VERIFY_SAME_AS_QT(input);
                ++texts;
            }
        }
    }
    qInfo("compared %d texts from %d files", texts, files);
    QVERIFY(files >= 190);
}

void TestClientBodyParse::everyPrefixOfARealBodyParsesAsQtParsesIt() {
    const QByteArray bodies[] = {
        readFile(QStringLiteral(SWITCHMAN_TEST_DATA "/anthropic_request_claude_code.json")),
        readFile(QStringLiteral(SWITCHMAN_TEST_DATA "/pi_request_stream_proxy.json")),
        conversation(3),
    };
    int prefixes = 0;
    for (const QByteArray &body : bodies) {
        QVERIFY(!body.isEmpty());
        for (qsizetype n = 0; n <= body.size(); ++n, ++prefixes) {
            VERIFY_SAME_AS_QT(body.left(n));
            VERIFY_SAME_AS_QT(body.left(n) + '\0' + body.mid(n)); // a NUL anywhere
        }
    }
    qInfo("compared %d prefixes", prefixes);
}

void TestClientBodyParse::nestingPastQtsLimitFailsAsQtFails() {
    for (const int levels : {1, 1023, 1024, 1025, 100000}) {
        const QByteArray arrays = QByteArray(levels, '[') + QByteArray(levels, ']');
        const QByteArray objects = QByteArray("{\"a\":").repeated(levels) + "1" + QByteArray(levels, '}');
        QByteArray mixed;
        for (int i = 0; i < levels; ++i)
            mixed += i % 2 ? "[" : "{\"k\":";
        mixed += "0";
        for (int i = levels - 1; i >= 0; --i)
            mixed += i % 2 ? "]" : "}";
        for (const QByteArray &text : {arrays, objects, mixed}) {
            VERIFY_SAME_AS_QT(text);
            QCOMPARE(sw::wire::parseClientBody(text) != nullptr, levels <= 1024);
        }
    }
}

void TestClientBodyParse::textsWhereRapidJsonAndQtPartWaysGiveQtsResult() {
    const QByteArray texts[] = {
        // NUL: raw in a string, after the document, escaped
        QByteArray("{\"a\":\"x\0y\"}", 11),
        QByteArray("{}\0", 3),
        QByteArray("{\"a\":1}\0 ", 9),
        R"({"a\u0000b":"\u0000"})",
        // raw control characters, odd escapes
        "{\"a\":\"tab\there\"}",
        "{\"a\":\"\x01\x1f\"}",
        R"({"a":"\q\'\/"})",
        "{\"a\":\"\\\x96\"}",
        // not UTF-8: overlong, encoded surrogate, past U+10FFFF, stray continuation, cut sequence
        "{\"a\":\"\xC0\x80\"}",
        "{\"a\":\"\xE0\x80\xAF\"}",
        "{\"a\":\"\xED\xA0\x80\"}",
        "{\"a\":\"\xF4\x90\x80\x80\"}",
        "{\"a\":\"\x80\"}",
        "{\"a\":\"\xE2\x82\"}",
        "{\"\xFF\":1}",
        "\xFF{}",
        // surrogate escapes: a pair, lone high, lone low, reversed, high then a letter
        R"({"a":"\ud83d\ude00"})",
        R"({"a":"\ud800"})",
        R"({"a":"\udc00x"})",
        R"({"a":"\udc00\ud800"})",
        R"({"a":"\ud800\u0041"})",
        R"({"\udc00":1,"\ud800":2})",
        // byte order marks: before the document, only a mark, in strings and names, escaped
        "\xEF\xBB\xBF{\"a\":1}",
        "\xEF\xBB\xBF",
        "\xEF\xBB\xBF{}",
        "\xEF\xBB\xBF\xEF\xBB\xBF{}",
        "{\"a\":\"\xEF\xBB\xBFx\"}",
        R"({"a":"\ufeffx"})",
        "{\"\xEF\xBB\xBF"
        "a\":1,\"a\":2}",
        R"({"\ufeffa":1})",
        "{\"a\":\"x\xEF\xBB\xBF\"}",
        // names from U+D000 up, names that sort differently by code point and by UTF-16 unit
        "{\"\xED\x9F\xBF\":1,\"\xEE\x80\x80\":2,\"\xF0\x9F\x98\x80\":3}",
        R"({"\ue000":1,"\ud83d\ude00":2})",
        "{\"\xEF\xBF\xBF\":1,\"\xF0\x90\x80\x80\":2}",
        "{\"é\":1,\"e\":2,\"ü\":3,\"中\":4,\"a\":5}",
        // whitespace Qt does not take, trailing content, a scalar at the top
        "{\f}",
        "{\v}",
        "\xC2\xA0{}",
        "{}\xE2\x80\xA8",
        "{} x",
        "{}{}",
        "[1,]",
        "{\"a\":1,}",
        "\"str\"",
        "1",
        "null",
        "",
        " ",
        "{",
        "[",
        "{\"a\"",
        "{\"a\":",
        "{\"a\":1",
        "[\"",
        "[\"\\",
        "[\"\\u12",
        "[tru]",
        "[nul]",
        "[fals]",
        "[True]",
        "[NaN]",
        "[Infinity]",
        "[-Infinity]",
        // numbers Qt reads its own way
        "[01]",
        "[.5]",
        "[1.]",
        "[-]",
        "[+1]",
        "[1e]",
        "[1e+]",
        "[-.5]",
        "[0x10]",
        "[1.5e3.2]",
    };
    for (const QByteArray &text : texts)
        VERIFY_SAME_AS_QT(text);
}

void TestClientBodyParse::numbersAreIntegersWhereQtsAre() {
    const char *numbers[] = {
        "0",
        "-0",
        "0.0",
        "-0.0",
        "1.0",
        "1.5",
        "1e2",
        "1E2",
        "1e+2",
        "1.0e2",
        "12e-1",
        "120e-1",
        "1e-2",
        "9007199254740993",
        "9223372036854775807",
        "-9223372036854775808",
        "9223372036854775808",
        "-9223372036854775809",
        "9223372036854775807.0",
        "9.223372036854775807e18",
        "92233720368547758070e-1",
        "18446744073709551615",
        "18446744073709551616",
        "123456789012345678901234567890",
        "1e18",
        "1e19",
        "-1e19",
        "1e308",
        "1.7976931348623157e308",
        "1.7976931348623159e308",
        "1e309",
        "-1e400",
        "1e400",
        "4.9e-324",
        "5e-324",
        "2e-324",
        "2.4703282292062328e-324",
        "1e-320",
        "1e-400",
        "-1e-400",
        "0e400",
        "0e-400",
        "0.000000000000000000000000000000000000001",
        "3.141592653589793238462643383279",
        "0.1",
        "0.30000000000000004",
        "100000000000000000000",
        "1e0",
        "-1e0",
        "1e-0",
        "2.5e-1",
        "99999999999999999",
        "999999999999999999",
        "9999999999999999999",
    };
    for (const char *n : numbers) {
        const QByteArray text = QByteArray("{\"n\":") + n + ",\"a\":[" + n + "]}";
        VERIFY_SAME_AS_QT(text);
    }
    // Spot checks of what the comparison above compares.
    const auto parsed = sw::wire::parseClientBody(R"({"a":1.0,"b":1e2,"c":-0,"d":9223372036854775808,"e":0.5})");
    QVERIFY(parsed);
    const QJsonObject o = sw::wire::rj::toQtObject(parsed->object());
    QCOMPARE(o.value("a").toVariant().typeId(), QMetaType::LongLong);
    QCOMPARE(o.value("b").toInteger(), 100);
    QCOMPARE(o.value("c").toVariant().typeId(), QMetaType::LongLong);
    QCOMPARE(o.value("d").toVariant().typeId(), QMetaType::Double);
    QCOMPARE(o.value("e").toDouble(), 0.5);
}

void TestClientBodyParse::theLastOfDuplicateNamesCounts() {
    const QByteArray texts[] = {
        R"({"a":1,"a":2})",
        R"({"a":{"x":1},"b":0,"a":[2]})",
        R"({"a":1,"\u0061":2})",
        R"({"é":1,"\u00e9":2})",
        R"({"b":1,"a":2,"b":3,"a":4,"c":5})",
        R"([{"k":1,"k":null},{"k":"x","k":"y","k":"z"}])",
    };
    for (const QByteArray &text : texts)
        VERIFY_SAME_AS_QT(text);
    const auto parsed = sw::wire::parseClientBody(R"({"a":1,"a":2})");
    QCOMPARE(sw::wire::rj::toInt(sw::wire::rj::member(parsed->object(), "a")), 2);
}

void TestClientBodyParse::mutatedBodiesParseAsQtParsesThem() {
    // Deterministic mutations of real bodies: bytes replaced by the ones where the parsers part
    // ways, bytes dropped and doubled.
    const QByteArray bodies[] = {
        readFile(QStringLiteral(SWITCHMAN_TEST_DATA "/openai_chat_request_sdk.json")),
        readFile(QStringLiteral(SWITCHMAN_TEST_DATA "/anthropic_request_claude_code.json")),
        conversation(2),
    };
    const QByteArray specials[] = {"\0",   "\\",       "\"",       "\\u",         "\\ud800", "\\udc00", "\xEF\xBB\xBF",
                                   "\xED", "\xC0\x80", "\x01",     "e400",        "e-400",   ".",       "-",
                                   "{",    "[",        "]",        "}",           ",",       ":",       "0",
                                   "1e2",  "\xF0\x9F", "\xE2\x80", "\xEE\x80\x80"};
    QRandomGenerator random(18);
    for (int round = 0; round < 3000; ++round) {
        QByteArray text = bodies[round % 3];
        for (int edits = 1 + random.bounded(3); edits > 0; --edits) {
            const qsizetype at = random.bounded(int(text.size()));
            switch (random.bounded(3)) {
            case 0:
                text.replace(at, 1 + random.bounded(2), specials[random.bounded(int(std::size(specials)))]);
                break;
            case 1:
                text.remove(at, 1 + random.bounded(4));
                break;
            default:
                text.insert(at, text.mid(at, 1 + random.bounded(8)));
            }
        }
        VERIFY_SAME_AS_QT(text);
    }
}

void TestClientBodyParse::theDecodeRefusesABadBodyWithQtsMessage() {
    const QByteArray bodies[] = {"{\"model\":\"m\",",  "{\"model\":\"m\"}x", QByteArray("{\"model\":\"m\"}\0", 14),
                                 "[{\"model\":\"m\"}", "{\"model\":1e400}",  QByteArray(2000, '[')};
    for (const sw::wire::Api api :
         {sw::wire::Api::OpenAICompletions, sw::wire::Api::AnthropicMessages, sw::wire::Api::OpenAIResponses}) {
        for (const QByteArray &body : bodies) {
            QJsonParseError qt{};
            QJsonDocument::fromJson(body, &qt);
            QVERIFY(qt.error != QJsonParseError::NoError);
            sw::model::GatewayError error;
            QVERIFY(!sw::formats::codecFor(api).decode(body, &error));
            QCOMPARE(error.status, 400);
            QCOMPARE(error.message, QStringLiteral("Request body is not valid JSON: ") + qt.errorString());
        }
        sw::model::GatewayError error;
        QVERIFY(!sw::formats::codecFor(api).decode("[{\"model\":\"m\"}]", &error));
        QCOMPARE(error.message, QStringLiteral("Request body must be a JSON object"));
    }
}

void TestClientBodyParse::aKeptBodyHoldsAboutItsOwnSize() {
    // A request keeps its parsed body until it ends: what it holds follows the body (about twice
    // its size, a few KiB at least), never a fixed 64 KiB chunk per request.
    for (const int turns : {0, 1, 4, 12, 40, 160}) {
        const QByteArray body = turns ? conversation(turns) : QByteArray(R"({"model":"m","messages":[]})");
        const auto parsed = sw::wire::parseClientBody(body);
        QVERIFY(parsed);
        const size_t held = parsed->heldBytes();
        qInfo("%lld bytes of body hold %zu bytes", qlonglong(body.size()), held);
        QVERIFY2(held <= 3 * size_t(body.size()) + 12 * 1024, qPrintable(QString::number(held)));
    }
}

// A body of many tiny values costs its tree about 80 bytes a value: 30 MB of 4-byte values (under
// the old bound, a quarter of the bytes) held about 480 MB (probe Z2 M2). Past a sixteenth of its
// bytes (plus 100 000) it is refused before the tree is built; at the bound the tree stays within
// about six times the text (measured: 25.4 MB for 4 MB of 17-byte values).
void TestClientBodyParse::aBodyOfTinyValuesIsRefusedBeforeItOutgrowsItsText() {
    const auto bodyOf = [](const QByteArray &value, qsizetype bytes) {
        QByteArray body = R"({"model":"m","messages":[],"metadata":{"x":[)";
        body.reserve(bytes + 64);
        while (body.size() < bytes)
            body += value + ',';
        body += value + "]}}";
        return body;
    };
    bool tooMany = false;
    QVERIFY(!sw::wire::parseClientBody(bodyOf("1234", 4 * 1024 * 1024), &tooMany));
    QVERIFY(tooMany);
    const QByteArray wide = bodyOf("1234567890123456", 4 * 1024 * 1024); // 17 bytes a value: under the bound
    tooMany = false;
    const auto parsed = sw::wire::parseClientBody(wide, &tooMany);
    QVERIFY(parsed && !tooMany);
    QVERIFY2(parsed->heldBytes() <= 7 * size_t(wide.size()), qPrintable(QString::number(parsed->heldBytes())));
}

QTEST_GUILESS_MAIN(TestClientBodyParse)
#include "test_client_body_parse.moc"
