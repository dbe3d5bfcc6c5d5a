// config::withTenantKey on text its scanner does not follow: the result still
// means the file as read plus the one key (nothing dropped), only re-indented.
#include "core/config/config_edit.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

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
};

QTEST_GUILESS_MAIN(TestConfigEdit)
#include "test_config_edit.moc"
