#include "app/cli_options.h"
#include "app/gateway_runner.h"
#include "core/config/config_loader.h"

#include <QTest>

using namespace sw::app;

Q_DECLARE_METATYPE(sw::app::Command)

class TestCliOptions final : public QObject {
    Q_OBJECT

private slots:
    void commands_data();
    void commands();
    void runOptions();
    void helpAndVersionWin();
    void usageErrors_data();
    void usageErrors();
    void bannerNamesBaseUrlAndCurl();
    void bannerAddsKeyWhenTenantsExist();
};

namespace {

CliParseResult parseArgs(const QStringList &args) {
    return parseCommandLine(QStringList{QStringLiteral("switchman")} + args);
}

} // namespace

void TestCliOptions::commands_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<Command>("command");
    QTest::addColumn<QString>("argument");
    QTest::newRow("run") << QStringList{} << Command::Run << QString();
    QTest::newRow("check-config") << QStringList{"check-config", "/tmp/c.json"} << Command::CheckConfig
                                  << "/tmp/c.json";
    QTest::newRow("key create") << QStringList{"key", "create", "--tenant", "alice"} << Command::KeyCreate << "alice";
    QTest::newRow("key create, option first")
        << QStringList{"--tenant=bob", "key", "create"} << Command::KeyCreate << "bob";
    QTest::newRow("credential set") << QStringList{"credential", "set", "anthropic-main"} << Command::CredentialSet
                                    << "anthropic-main";
    QTest::newRow("credential list") << QStringList{"credential", "list"} << Command::CredentialList << QString();
}

void TestCliOptions::commands() {
    QFETCH(QStringList, args);
    QFETCH(Command, command);
    QFETCH(QString, argument);
    const CliParseResult result = parseArgs(args);
    QVERIFY2(result.ok(), qPrintable(result.error));
    QCOMPARE(result.options.command, command);
    QCOMPARE(result.options.argument, argument);
}

void TestCliOptions::runOptions() {
    CliParseResult result = parseArgs({"--headless", "--config", "/etc/sw.json", "--listen", "127.0.0.1:0"});
    QVERIFY2(result.ok(), qPrintable(result.error));
    QCOMPARE(result.options.command, Command::Run);
    QVERIFY(result.options.headless);
    QVERIFY(!result.options.demo);
    QCOMPARE(result.options.configPath, QStringLiteral("/etc/sw.json"));
    QCOMPARE(result.options.listen, QStringLiteral("127.0.0.1:0"));

    result = parseArgs({"--demo"});
    QVERIFY(result.ok());
    QVERIFY(result.options.demo);
    QVERIFY(!result.options.headless);
    QVERIFY(result.options.configPath.isEmpty());
    QVERIFY(result.options.listen.isEmpty());
}

void TestCliOptions::helpAndVersionWin() {
    QVERIFY(parseArgs({"--help"}).options.help);
    QVERIFY(parseArgs({"-h"}).options.help);
    QVERIFY(parseArgs({"--version"}).options.version);
    QVERIFY(parseArgs({"-v"}).options.version);
    const CliParseResult result = parseArgs({"check-config", "--help"});
    QVERIFY(result.ok());
    QVERIFY(result.options.help);
    QVERIFY(helpText().contains(QStringLiteral("check-config FILE")));
    QVERIFY(helpText().contains(sw::config::defaultConfigPath()));
}

void TestCliOptions::usageErrors_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("error"); // a fragment
    QTest::newRow("unknown option") << QStringList{"--frobnicate"} << "frobnicate";
    QTest::newRow("unknown command") << QStringList{"serve"} << "unknown command 'serve'";
    QTest::newRow("check-config without file") << QStringList{"check-config"} << "check-config FILE";
    QTest::newRow("check-config two files") << QStringList{"check-config", "a", "b"} << "check-config FILE";
    QTest::newRow("key without create") << QStringList{"key", "delete"} << "key create --tenant NAME";
    QTest::newRow("key create without tenant") << QStringList{"key", "create"} << "--tenant NAME";
    QTest::newRow("credential set without name") << QStringList{"credential", "set"} << "credential set NAME";
    QTest::newRow("credential unknown") << QStringList{"credential", "rm", "x"} << "credential set NAME";
    QTest::newRow("tenant outside key create") << QStringList{"--tenant", "a"} << "--tenant only applies";
    QTest::newRow("demo with check-config") << QStringList{"check-config", "f", "--demo"} << "only apply when running";
    QTest::newRow("demo with config") << QStringList{"--demo", "--config", "f"} << "leave out --config";
    QTest::newRow("bad listen") << QStringList{"--listen", "4141"} << "--listen expects HOST:PORT";
    QTest::newRow("listen without value") << QStringList{"--listen"} << "listen";
}

void TestCliOptions::usageErrors() {
    QFETCH(QStringList, args);
    QFETCH(QString, error);
    const CliParseResult result = parseArgs(args);
    QVERIFY(!result.ok());
    QVERIFY2(result.error.contains(error), qPrintable(result.error));
}

void TestCliOptions::bannerNamesBaseUrlAndCurl() {
    const QString banner = listeningBanner(QStringLiteral("http://127.0.0.1:4141"), sw::config::demoConfig());
    const QStringList lines = banner.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 2);
    QCOMPARE(lines.at(0), QStringLiteral("Switchman listening on http://127.0.0.1:4141"));
    QVERIFY2(lines.at(1).contains(QStringLiteral("curl -s http://127.0.0.1:4141/v1/chat/completions")),
             qPrintable(lines.at(1)));
    QVERIFY(lines.at(1).contains(QStringLiteral("\"model\":\"demo\"")));
    QVERIFY(!lines.at(1).contains(QStringLiteral("authorization")));
}

void TestCliOptions::bannerAddsKeyWhenTenantsExist() {
    sw::config::Config config = sw::config::demoConfig();
    config.tenants.insert(QStringLiteral("alice"), {});
    QVERIFY(listeningBanner(QStringLiteral("http://[::1]:5000"), config)
                .contains(QStringLiteral("authorization: Bearer $SWITCHMAN_KEY")));
}

QTEST_GUILESS_MAIN(TestCliOptions)
#include "test_cli_options.moc"
