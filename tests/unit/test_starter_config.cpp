// The starter configuration of the first start, and the "_comment" convention
// it relies on: keys that start with '_' are skipped by the loader.

#include "core/config/config_loader.h"
#include "core/config/starter_config.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

using namespace sw::config;

class TestStarterConfig final : public QObject {
    Q_OBJECT

private slots:
    void commentKeysAreSkippedEverywhere();
    void otherUnknownKeysAreStillErrors();
    void commentOnlyTenantsDoNotOpenTheListener();
    void starterLoadsAndRoutesClaudeCode();
    void starterHoldsReferencesNeverSecrets();
    void starterExplainsItself();
    void writeCreatesTheDirectory();
    void writeNeverReplacesAFile();
    void writeFailureLeavesNothing();
};

namespace {

QStringList errorStrings(const QList<ValidationError> &errors) {
    QStringList lines;
    for (const ValidationError &e : errors)
        lines.append(e.toString());
    return lines;
}

QByteArray readFile(const QString &path) {
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

} // namespace

void TestStarterConfig::commentKeysAreSkippedEverywhere() {
    const ParseResult result = parse(R"({
      "_comment": "top", "_notes": ["any", "json", 1],
      "providers": { "_comment": "in a map",
        "p": { "_comment": "in a provider", "api": "openai-completions", "baseUrl": "http://localhost:8080" } },
      "models": { "_comment": "x", "p/m": { "_why": "cheap", "cost": { "_unit": "per million", "input": 1 } } },
      "routes": { "_comment": "x", "r": { "_comment": "x", "candidates": ["p/m"] } },
      "tenants": { "_comment": "x", "t": { "_comment": "x",
        "keys": ["sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"] } },
      "failover": { "_comment": "x", "enabled": true },
      "limits": { "_comment": "x" }
    })");
    QVERIFY2(result.ok(), qPrintable(errorStrings(result.errors).join(QLatin1Char('\n'))));
    const Config &c = *result.config;
    QCOMPARE(c.providers.keys(), QStringList{QStringLiteral("p")});
    QCOMPARE(c.models.keys(), QStringList{QStringLiteral("p/m")});
    QCOMPARE(c.models.value(QStringLiteral("p/m")).costInput, 1.0);
    QCOMPARE(c.routes.keys(), QStringList{QStringLiteral("r")});
    QCOMPARE(c.tenants.keys(), QStringList{QStringLiteral("t")});
    // Comments are not configuration: a save writes none of them back.
    const QJsonObject saved = toJson(c);
    QVERIFY(!saved.contains(QStringLiteral("_comment")));
    QVERIFY(!saved.value(QStringLiteral("providers")).toObject().contains(QStringLiteral("_comment")));
}

void TestStarterConfig::otherUnknownKeysAreStillErrors() {
    const ParseResult result = parse(R"({"comment": "no underscore", "failover": {"enable": true}})");
    QCOMPARE(result.errors.size(), 2);
    QCOMPARE(result.errors.at(0).path, QStringLiteral("comment"));
    QVERIFY(result.errors.at(0).reason.startsWith(QStringLiteral("unknown key")));
    QCOMPARE(result.errors.at(1).path, QStringLiteral("failover.enable"));
}

void TestStarterConfig::commentOnlyTenantsDoNotOpenTheListener() {
    // Without a real tenant every caller is trusted, so a non-loopback listen
    // stays refused however many comments the tenants object holds.
    const ParseResult result = parse(R"({"listen": "0.0.0.0:4141", "tenants": {"_comment": "none yet"}})");
    QCOMPARE(result.errors.size(), 1);
    QCOMPARE(result.errors.at(0).path, QStringLiteral("listen"));
    QVERIFY(result.errors.at(0).reason.contains(QStringLiteral("not a loopback address")));
}

void TestStarterConfig::starterLoadsAndRoutesClaudeCode() {
    const ParseResult result = parse(starterConfigJson());
    QVERIFY2(result.ok(), qPrintable(errorStrings(result.errors).join(QLatin1Char('\n'))));
    const Config &c = *result.config;
    QCOMPARE(c.listen, QStringLiteral("127.0.0.1:4141"));
    QVERIFY(c.tenants.isEmpty());
    QVERIFY(c.failover.enabled);
    QCOMPARE(c.providers.value(QStringLiteral("anthropic")).api, QStringLiteral("anthropic-messages"));
    QCOMPARE(c.providers.value(QStringLiteral("openai")).api, QStringLiteral("openai-completions"));
    // Claude Code sends names like claude-sonnet-4-5-20250929 and claude-haiku-4-5.
    const RouteConfig claude = c.routes.value(QStringLiteral("claude"));
    QVERIFY(claude.aliases.contains(QStringLiteral("claude-*")));
    QCOMPARE(claude.candidates.size(), 2); // a follower to fail over to
    QCOMPARE(claude.candidates.first(), QStringLiteral("anthropic/claude-sonnet-4-5"));
    QVERIFY(c.routes.value(QStringLiteral("gpt")).aliases.contains(QStringLiteral("gpt-*")));
}

void TestStarterConfig::starterHoldsReferencesNeverSecrets() {
    const Config c = *parse(starterConfigJson()).config;
    QStringList refs;
    for (const ProviderConfig &p : c.providers)
        refs += p.credentials;
    // env: first: an unset variable is skipped without touching the keychain,
    // and a machine without a Secret Service still works with exported keys.
    QCOMPARE(refs, QStringList({QStringLiteral("env:ANTHROPIC_API_KEY"), QStringLiteral("keychain:anthropic"),
                                QStringLiteral("env:OPENAI_API_KEY"), QStringLiteral("keychain:openai")}));
}

void TestStarterConfig::starterExplainsItself() {
    const QJsonObject root = QJsonDocument::fromJson(starterConfigJson()).object();
    const QString top = QString::fromUtf8(QJsonDocument(root.value(QStringLiteral("_comment")).toArray()).toJson());
    QVERIFY(top.contains(QStringLiteral("switchman credential set anthropic")));
    QVERIFY(top.contains(QStringLiteral("switchman --demo")));
    QVERIFY(top.contains(QStringLiteral("check-config")));
    for (const char *section : {"providers", "models", "routes"})
        QVERIFY2(root.value(QLatin1String(section)).toObject().contains(QStringLiteral("_comment")), section);
}

void TestStarterConfig::writeCreatesTheDirectory() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("a/b/switchman/config.json"));
    QString error;
    QVERIFY2(writeStarterConfig(path, &error), qPrintable(error));
    QCOMPARE(readFile(path), starterConfigJson());
    const LoadResult loaded = load(path);
    QVERIFY(loaded.ok());
}

void TestStarterConfig::writeNeverReplacesAFile() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("config.json"));
    {
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("{\"listen\": \"127.0.0.1:5000\"}");
    }
    QString error;
    QVERIFY(!writeStarterConfig(path, &error));
    QVERIFY2(error.contains(QStringLiteral("already exists")), qPrintable(error));
    QCOMPARE(readFile(path), QByteArray("{\"listen\": \"127.0.0.1:5000\"}"));
}

void TestStarterConfig::writeFailureLeavesNothing() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    // A regular file where the directory should be: fails even for root.
    const QString blocker = dir.filePath(QStringLiteral("switchman"));
    {
        QFile file(blocker);
        QVERIFY(file.open(QIODevice::WriteOnly));
    }
    QString error;
    QVERIFY(!writeStarterConfig(blocker + QStringLiteral("/config.json"), &error));
    QVERIFY2(error.contains(QStringLiteral("cannot create directory")), qPrintable(error));
    QCOMPARE(QDir(dir.path()).entryList(QDir::NoDotAndDotDot | QDir::AllEntries),
             QStringList{QStringLiteral("switchman")});
}

QTEST_GUILESS_MAIN(TestStarterConfig)
#include "test_starter_config.moc"
