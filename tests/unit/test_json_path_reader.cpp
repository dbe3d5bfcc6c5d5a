// Typed reads of a JSON object that name the dotted path of whatever they
// reject: an absent key keeps its default, a wrong type or range is one error
// at `path.key`, every bad array element is reported, comments are skipped.

#include "core/config/json_path_reader.h"

#include <QJsonDocument>
#include <QTest>

using namespace sw::config;

namespace {
QJsonObject json(const char *text) {
    return QJsonDocument::fromJson(text).object();
}

QStringList lines(const JsonPathReader &reader) {
    QStringList out;
    for (const ValidationError &e : reader.errors())
        out << e.toString();
    return out;
}
} // namespace

class TestJsonPathReader : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void absentKeyKeepsTheDefault() {
        JsonPathReader reader;
        auto o = JsonObjectReader::of(reader, json("{}"), QStringLiteral("limits"));
        QVERIFY(o);
        int value = 42;
        QVERIFY(!o->integer(QStringLiteral("maxConnections"), value, 1, QStringLiteral("must be greater than 0")));
        QCOMPARE(value, 42);
        QVERIFY(reader.errors().isEmpty());
    }

    void wrongTypeIsReportedAtTheNestedPath() {
        JsonPathReader reader;
        auto root = JsonObjectReader::of(reader, json(R"({"models": {"zai/glm-4.6": {"cost": "cheap"}}})"), {});
        auto models = root->object(QStringLiteral("models"));
        auto model = models->object(QStringLiteral("zai/glm-4.6"));
        QVERIFY(model);
        // Not an object where one is expected: nothing to read, one error.
        QVERIFY(!model->object(QStringLiteral("cost")));
        QCOMPARE(lines(reader), QStringList{QStringLiteral("models[\"zai/glm-4.6\"].cost: expected an object, got a "
                                                           "string")});
        JsonPathReader second;
        auto other = JsonObjectReader::of(second, json(R"({"odd key": {"x": 1}})"), QStringLiteral("routes"));
        QString text = QStringLiteral("kept");
        QVERIFY(!other->object(QStringLiteral("odd key"))->text(QStringLiteral("x"), text));
        QCOMPARE(text, QStringLiteral("kept"));
        QCOMPARE(lines(second), QStringList{QStringLiteral("routes[\"odd key\"].x: expected a string, got a number")});
    }

    void numbersAreCheckedForWholenessAndRange() {
        JsonPathReader reader;
        auto o = JsonObjectReader::of(reader, json(R"({"a": 1.5, "b": 5, "c": 1e12, "d": 7})"), QStringLiteral("f"));
        qint64 a = 0, b = 0, c = 0, d = 0;
        const QString reason = QStringLiteral("must be at least 10");
        QVERIFY(!o->integer(QStringLiteral("a"), a, 0, 100, reason));
        QVERIFY(!o->integer(QStringLiteral("b"), b, 10, 100, reason));
        QVERIFY(!o->integer(QStringLiteral("c"), c, 0, 100, reason));
        QVERIFY(o->integer(QStringLiteral("d"), d, 0, 100, reason));
        QCOMPARE(d, qint64(7));
        QCOMPARE(lines(reader),
                 (QStringList{QStringLiteral("f.a: expected an integer, got 1.5"),
                              QStringLiteral("f.b: must be at least 10"), QStringLiteral("f.c: must be at most 100")}));
    }

    void everyBadArrayElementIsReported() {
        JsonPathReader reader;
        auto o = JsonObjectReader::of(reader, json(R"({"input": [1, "text", true]})"), QStringLiteral("m"));
        QStringList input{QStringLiteral("default")};
        QVERIFY(!o->strings(QStringLiteral("input"), input));
        QCOMPARE(input, QStringList{QStringLiteral("default")});
        QCOMPARE(lines(reader), (QStringList{QStringLiteral("m.input[0]: expected a string, got a number"),
                                             QStringLiteral("m.input[2]: expected a string, got a boolean")}));
    }

    void commentKeysAreNeitherEntriesNorUnknown() {
        JsonPathReader reader;
        auto o = JsonObjectReader::of(reader, json(R"({"_comment": "x", "a": {}, "b": {}, "typo": 1})"),
                                      QStringLiteral("providers"));
        QCOMPARE(o->entryKeys(), (QStringList{QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("typo")}));
        o->allowOnly({QStringLiteral("a"), QStringLiteral("b")});
        QCOMPARE(lines(reader), QStringList{QStringLiteral("providers.typo: unknown key (expected one of: a, b)")});
    }

    void requiredKeyIsReportedWhenMissing() {
        JsonPathReader reader;
        auto o = JsonObjectReader::of(reader, json(R"({"api": "x"})"), QStringLiteral("providers.p"));
        QVERIFY(o->require(QStringLiteral("api")));
        QVERIFY(!o->require(QStringLiteral("baseUrl")));
        QCOMPARE(lines(reader), QStringList{QStringLiteral("providers.p.baseUrl: missing (required)")});
    }
};

QTEST_GUILESS_MAIN(TestJsonPathReader)
#include "test_json_path_reader.moc"
