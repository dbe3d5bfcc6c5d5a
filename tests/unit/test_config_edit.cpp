// config::withTenantKey on text its scanner does not follow: the result still
// means the file as read plus the one key (nothing dropped), only re-indented.
// config::withChanges (the admin window's Save): only what was edited changes
// in the text, byte for byte; comments, fields the writer does not know and
// edits made in the file meanwhile stay; text it cannot follow still loses no field.
#include "core/config/config_edit.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>
#include <optional>

namespace {

// A file as its owner wrote it: comments, a field config::toJson does not write, two indent styles.
const QByteArray kFile =
    "{\n"
    "  \"_comment\": \"written by hand\",\n"
    "  \"listen\": \"127.0.0.1:4141\",\n"
    "  \"futureField\": {\"x\": 1},\n"
    "  \"providers\": {\n"
    "    \"_comment\": \"one per upstream\",\n"
    "    \"a\": {\n"
    "      \"api\": \"openai-completions\",\n"
    "      \"baseUrl\": \"https://a.example/v1\",\n"
    "      \"credentials\": [\"env:A\"]\n"
    "    },\n"
    "    \"b\": { \"api\": \"anthropic-messages\", \"baseUrl\": \"https://b.example\", \"credentials\": [] }\n"
    "  },\n"
    "  \"routes\": {\n"
    "    \"r\": {\n"
    "      \"candidates\": [\"a/m\"],\n"
    "      \"aliases\": [\"r-*\"]\n"
    "    }\n"
    "  },\n"
    "  \"tenants\": {},\n"
    "  \"failover\": { \"enabled\": true, \"deadlineMs\": 120000 }\n"
    "}\n";

QJsonObject parsed(const QByteArray &json) {
    return QJsonDocument::fromJson(json).object();
}

// What the editor holds of a file: config::toJson has no comments and no fields it does not know.
QJsonObject known(const QJsonObject &object) {
    QJsonObject out;
    for (auto it = object.begin(); it != object.end(); ++it) {
        if (it.key().startsWith(QLatin1Char('_')) || it.key() == QStringLiteral("futureField"))
            continue;
        out.insert(it.key(), it.value().isObject() ? QJsonValue(known(it.value().toObject())) : it.value());
    }
    return out;
}

// `object` with the member at `path` set to `value`, or removed without one.
QJsonObject with(QJsonObject object, const QStringList &path, const std::optional<QJsonValue> &value) {
    const QString &key = path.first();
    if (path.size() > 1)
        object.insert(key, with(object.value(key).toObject(), path.mid(1), value));
    else if (value)
        object.insert(key, *value);
    else
        object.remove(key);
    return object;
}

QStringList at(const char *dotted) {
    return QString::fromLatin1(dotted).split(QLatin1Char('.'));
}

// `text` with `from` (which it holds once) replaced by `to`.
QByteArray replacedOnce(const QByteArray &text, const QByteArray &from, const QByteArray &to) {
    if (text.count(from) != 1)
        qFatal("%s is not in the text once", from.constData());
    return QByteArray(text).replace(from, to);
}

// withChanges of `disk` from `before` to `after`; fails the test unless it edited the text in place.
QByteArray editedInPlace(const QByteArray &disk, const QJsonObject &before, const QJsonObject &after) {
    bool inPlace = false;
    QString error;
    const QByteArray out = sw::config::withChanges(disk, before, after, &error, &inPlace);
    if (!inPlace)
        qWarning("not edited in place: %s", qPrintable(error));
    return out;
}

} // namespace

class TestConfigEdit : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void anEscapedTenantNameFallsBackWithoutLosingAField() {
        const QByteArray before =
            R"({"_comment": "kept", "tenants": {"\u0061lice": {"_c": 1, "keys": ["sha256:aa"]}}})";
        const QJsonObject after = QJsonDocument::fromJson(sw::config::withTenantKey(before, QStringLiteral("alice"),
                                                                                    QStringLiteral("sha256:bb"), false))
                                      .object();
        QCOMPARE(after.value(QStringLiteral("_comment")).toString(), QStringLiteral("kept"));
        const QJsonObject alice =
            after.value(QStringLiteral("tenants")).toObject().value(QStringLiteral("alice")).toObject();
        QCOMPARE(alice.value(QStringLiteral("_c")).toInt(), 1);
        QCOMPARE(alice.value(QStringLiteral("keys")).toArray(),
                 (QJsonArray{QStringLiteral("sha256:aa"), QStringLiteral("sha256:bb")}));
        QVERIFY(!alice.contains(QStringLiteral("admin")));
    }

    void anInlineArrayGetsTheKeyOnItsLine() {
        const QByteArray before = "{\n  \"tenants\": { \"a\": { \"keys\": [\"sha256:aa\"] } }\n}";
        QCOMPARE(sw::config::withTenantKey(before, QStringLiteral("a"), QStringLiteral("sha256:bb"), true),
                 QByteArray("{\n  \"tenants\": { \"a\": { \"keys\": [\"sha256:aa\", \"sha256:bb\"] } }\n}"));
    }

    void anEmptyTenantsSectionGetsTheFirstTenantAsAdmin() {
        QCOMPARE(sw::config::withTenantKey("{\"tenants\": {}}", QStringLiteral("a"), QStringLiteral("sha256:bb"), true),
                 QByteArray("{\"tenants\": {\"a\": {\"keys\": [\"sha256:bb\"], \"admin\": true}}}"));
    }

    void commentsAndUnknownFieldsSurviveAChange() {
        const QJsonObject before = known(parsed(kFile));
        const QJsonObject after = with(before, at("providers.a.baseUrl"), QStringLiteral("https://a2.example/v1"));
        const QByteArray out = editedInPlace(kFile, before, after);
        QCOMPARE(out, replacedOnce(kFile, "https://a.example/v1", "https://a2.example/v1"));
        const QJsonObject result = parsed(out);
        QCOMPARE(result.value(QStringLiteral("_comment")).toString(), QStringLiteral("written by hand"));
        QCOMPARE(result.value(QStringLiteral("futureField")).toObject(), (QJsonObject{{QStringLiteral("x"), 1}}));
    }

    void aNestedChangeKeepsEveryOtherByte() {
        const QJsonObject before = known(parsed(kFile));
        QJsonObject after =
            with(before, at("routes.r.candidates"), QJsonArray{QStringLiteral("a/m"), QStringLiteral("b/n")});
        after = with(after, at("failover.deadlineMs"), 45000);
        QCOMPARE(editedInPlace(kFile, before, after),
                 replacedOnce(replacedOnce(kFile, R"("candidates": ["a/m"])", R"("candidates": ["a/m", "b/n"])"),
                              "120000", "45000"));
    }

    void aRemovedMemberLeavesWithItsComma() {
        const QJsonObject before = known(parsed(kFile));
        // The last member of its object, a middle one, and the last entry of a section.
        QJsonObject after = with(before, at("routes.r.aliases"), std::nullopt);
        after = with(after, at("listen"), std::nullopt);
        after = with(after, at("providers.b"), std::nullopt);
        QByteArray expected = replacedOnce(kFile, ",\n      \"aliases\": [\"r-*\"]", "");
        expected = replacedOnce(expected, "  \"listen\": \"127.0.0.1:4141\",\n", "");
        expected = replacedOnce(expected,
                                ",\n    \"b\": { \"api\": \"anthropic-messages\", \"baseUrl\": \"https://b.example\", "
                                "\"credentials\": [] }",
                                "");
        QCOMPARE(editedInPlace(kFile, before, after), expected);
        // The only member of its object: `{}` is left.
        const QByteArray one = "{\n  \"failover\": {\n    \"enabled\": true\n  }\n}\n";
        QCOMPARE(editedInPlace(one, parsed(one), with(parsed(one), at("failover.enabled"), std::nullopt)),
                 QByteArray("{\n  \"failover\": {}\n}\n"));
    }

    void aNewMemberGoesIntoAnEmptyObjectOnItsOwnLine() {
        const QJsonObject before = known(parsed(kFile));
        const QJsonObject after = with(before, at("tenants.alice"),
                                       QJsonObject{{QStringLiteral("keys"), QJsonArray{QStringLiteral("sha256:aa")}},
                                                   {QStringLiteral("admin"), true}});
        QCOMPARE(editedInPlace(kFile, before, after),
                 replacedOnce(kFile, "\"tenants\": {},",
                              "\"tenants\": {\n    \"alice\": {\n      \"admin\": true,\n      \"keys\": "
                              "[\"sha256:aa\"]\n    }\n  },"));
    }

    void aNewMemberGoesAfterItsSiblings() {
        const QJsonObject before = known(parsed(kFile));
        // A section `before` did not have (all defaults), and an entry of an inline object.
        QJsonObject after = with(before, at("limits"), QJsonObject{{QStringLiteral("maxConnections"), 8}});
        after = with(after, at("failover.keepaliveMs"), 5000);
        QCOMPARE(editedInPlace(kFile, before, after),
                 replacedOnce(kFile, "\"deadlineMs\": 120000 }\n}",
                              "\"deadlineMs\": 120000, \"keepaliveMs\": 5000 },\n  \"limits\": {\n    "
                              "\"maxConnections\": 8\n  }\n}"));
    }

    void anObjectMissingInTheFileIsCreatedWhole() {
        // The file leaves failover to its defaults; the editor's copy spells them out.
        const QByteArray disk =
            replacedOnce(kFile, ",\n  \"failover\": { \"enabled\": true, \"deadlineMs\": 120000 }", "");
        const QJsonObject before = known(parsed(kFile));
        const QJsonObject after = with(before, at("failover.deadlineMs"), 45000);
        QCOMPARE(editedInPlace(disk, before, after),
                 replacedOnce(disk, "\"tenants\": {}\n}",
                              "\"tenants\": {},\n  \"failover\": {\n    \"deadlineMs\": 45000,\n    \"enabled\": "
                              "true\n  }\n}"));
    }

    void aRepeatedKeyFallsBackWithoutLosingAField() {
        const QByteArray disk = R"({"_c": "kept", "listen": "a", "x": {"y": 1}, "listen": "b"})";
        const QJsonObject before{{QStringLiteral("listen"), QStringLiteral("b")}};
        const QJsonObject after{{QStringLiteral("listen"), QStringLiteral("c")}};
        bool inPlace = true;
        const QJsonObject result = parsed(sw::config::withChanges(disk, before, after, nullptr, &inPlace));
        QVERIFY(!inPlace);
        QCOMPARE(result, (QJsonObject{{QStringLiteral("_c"), QStringLiteral("kept")},
                                      {QStringLiteral("listen"), QStringLiteral("c")},
                                      {QStringLiteral("x"), QJsonObject{{QStringLiteral("y"), 1}}}}));
        // An escaped name on the way to the change: the text cannot tell which member it is.
        const QByteArray escaped = R"({"_c": 1, "provid\u0065rs": {"a": {"baseUrl": "u", "_n": 2}}})";
        const QJsonObject loaded{
            {QStringLiteral("providers"),
             QJsonObject{{QStringLiteral("a"), QJsonObject{{QStringLiteral("baseUrl"), QStringLiteral("u")}}}}}};
        const QJsonObject edited = parsed(sw::config::withChanges(
            escaped, loaded, with(loaded, at("providers.a.baseUrl"), QStringLiteral("v")), nullptr, &inPlace));
        QVERIFY(!inPlace);
        QCOMPARE(edited, with(parsed(escaped), at("providers.a.baseUrl"), QStringLiteral("v")));
    }

    void aKeyAddedInTheFileSinceLoadingSurvivesAnotherEdit() {
        const QByteArray loadedText =
            replacedOnce(kFile, "\"tenants\": {}", R"("tenants": {"alice": {"keys": ["sha256:k1"]}})");
        const QJsonObject before = known(parsed(loadedText));
        // Meanwhile `switchman key create` adds a key to alice and creates bob, and someone edits listen.
        QByteArray disk =
            sw::config::withTenantKey(loadedText, QStringLiteral("alice"), QStringLiteral("sha256:k2"), false);
        disk = sw::config::withTenantKey(disk, QStringLiteral("bob"), QStringLiteral("sha256:k3"), false);
        disk = replacedOnce(disk, "127.0.0.1:4141", "127.0.0.1:5151");
        // The window changes a provider's URL and listen too: its listen wins, the keys stay.
        QJsonObject after = with(before, at("providers.a.baseUrl"), QStringLiteral("https://a2.example/v1"));
        after = with(after, at("listen"), QStringLiteral("127.0.0.1:6161"));
        const QByteArray out = editedInPlace(disk, before, after);
        QCOMPARE(out, replacedOnce(replacedOnce(disk, "https://a.example/v1", "https://a2.example/v1"),
                                   "127.0.0.1:5151", "127.0.0.1:6161"));
        const QJsonObject tenants = parsed(out).value(QStringLiteral("tenants")).toObject();
        QCOMPARE(tenants.value(QStringLiteral("alice")).toObject().value(QStringLiteral("keys")).toArray(),
                 (QJsonArray{QStringLiteral("sha256:k1"), QStringLiteral("sha256:k2")}));
        QVERIFY(tenants.contains(QStringLiteral("bob")));
    }

    void textThatIsNotAnObjectIsRefused() {
        QString error;
        QVERIFY(sw::config::withChanges("{\"listen\": ", {}, {}, &error).isEmpty());
        QVERIFY2(error.startsWith(QStringLiteral("not valid JSON")), qPrintable(error));
    }
};

QTEST_GUILESS_MAIN(TestConfigEdit)
#include "test_config_edit.moc"
