// `switchman status`, `switchman marks clear`, `switchman credential retry` as a
// headless user runs them: the built binary against a real engine on a real
// socket. The engine runs in this process, so the binary is waited
// for with the event loop turning.
#include "core/config/config_loader.h"
#include "core/config/config_writer.h"
#include "core/credentials/credential_pools.h"
#include "gateway_fixture.h"
#include "signal_wait.h"
#include "switchman_run.h"

#include <QCryptographicHash>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTest>

using namespace sw;
using namespace sw::test;

// Route "c-then-b" = [pc/claude-c, pb/gpt-b] on a running gateway: pc's mark sends it to pb.
void addRouteCThenB(GatewayFixture &gw) {
    config::RouteConfig route;
    route.name = QStringLiteral("c-then-b");
    route.candidates = {QStringLiteral("pc/claude-c"), QStringLiteral("pb/gpt-b")};
    config::Config cfg = *gw.engine().config();
    cfg.routes.insert(route.name, route);
    gw.engine().applyConfig(cfg);
}

class TestAdminCommands : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void statusShowsMarksAndParkedKeysThenRetryPutsThemBack() {
        const QByteArray canary = "sk-canary-" + QByteArray::number(QRandomGenerator::system()->generate64(), 16);
        qputenv("SW_ADMIN_CMD_KEY", "env-key-one");
        GatewayFixture gw;
        qunsetenv("SW_ADMIN_CMD_UNSET");
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:pa-main"),
                                                                 QStringLiteral("env:SW_ADMIN_CMD_KEY"),
                                                                 QStringLiteral("env:SW_ADMIN_CMD_UNSET")};
        gw.secrets.secrets.insert(QStringLiteral("pa-main"), canary);
        gw.anthropicC.pushFault(statusFault(503)); // a mark for pc
        gw.start();
        QVERIFY(waitUntil([&gw]() { return gw.engine().pools().isCached(QStringLiteral("pa-main")); }));
        addRouteCThenB(gw);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("c-then-b"), QStringLiteral("hi"), false))
                     .header("x-switchman-candidate"),
                 QByteArray("pb/gpt-b"));
        credentials::CredentialFailure unauthorized;
        unauthorized.status = 401;
        unauthorized.message = QStringLiteral("invalid x-api-key ") + QString::fromLatin1(canary);
        gw.engine().pools().recordFailure({QStringLiteral("pa"), 0}, unauthorized, {});
        credentials::CredentialFailure limited;
        limited.status = 429;
        limited.retryAfterMs = 90000;
        gw.engine().pools().recordFailure({QStringLiteral("pa"), 1}, limited, {});

        const SwitchmanRun st = runSwitchman({QStringLiteral("status"), QStringLiteral("--listen"), listenOf(gw)});
        QCOMPARE(st.exitCode, 0);
        QVERIFY2(st.out.contains(QStringLiteral("running, 1 mark, 3 keys out of use")), qPrintable(st.out));
        QVERIFY2(st.out.contains(QStringLiteral("server_error")), qPrintable(st.out));
        const QStringList lines = st.out.split(QLatin1Char('\n'));
        auto lineWith = [&lines](const QString &needle) {
            for (const QString &l : lines)
                if (l.contains(needle))
                    return l;
            return QString();
        };
        const QString rejected = lineWith(QStringLiteral("keychain:pa-main"));
        QVERIFY2(rejected.contains(QStringLiteral("rejected")) && rejected.contains(QStringLiteral("401")) &&
                     rejected.contains(QStringLiteral("until the key changes")),
                 qPrintable(rejected));
        const QString parked = lineWith(QStringLiteral("env:SW_ADMIN_CMD_KEY"));
        QVERIFY2(parked.contains(QStringLiteral("parked")) && parked.contains(QStringLiteral("rate_limit")) &&
                     // 90 s from the park, rounded up; the status child may take seconds to answer under load
                     parked.contains(QRegularExpression(QStringLiteral("1 min (30|[12][0-9]) s"))),
                 qPrintable(parked));
        const QString missing = lineWith(QStringLiteral("env:SW_ADMIN_CMD_UNSET"));
        QVERIFY2(missing.contains(QStringLiteral("missing")) && missing.contains(QStringLiteral("until it is set")),
                 qPrintable(missing));
        QVERIFY2(st.out.contains(QStringLiteral("switchman credential set NAME")), qPrintable(st.out));
        QVERIFY(!st.out.contains(QString::fromLatin1(canary)));
        QVERIFY(!st.err.contains(QString::fromLatin1(canary)));

        // Retry one provider: only its credentials come back.
        const SwitchmanRun none = runSwitchman({QStringLiteral("credential"), QStringLiteral("retry"),
                                                QStringLiteral("pb"), QStringLiteral("--listen"), listenOf(gw)});
        QCOMPARE(none.exitCode, 0);
        QVERIFY2(none.out.contains(QStringLiteral("nothing to retry")), qPrintable(none.out));
        // A provider the configuration does not have is a typo, said so (probe E4 8: "nothing to
        // retry", exit 0).
        const SwitchmanRun typo = runSwitchman({QStringLiteral("credential"), QStringLiteral("retry"),
                                                QStringLiteral("pz"), QStringLiteral("--listen"), listenOf(gw)});
        QVERIFY(typo.exitCode != 0);
        QVERIFY2(typo.err.contains(QStringLiteral("no provider \"pz\"")), qPrintable(typo.err + typo.out));
        const SwitchmanRun retry = runSwitchman({QStringLiteral("credential"), QStringLiteral("retry"),
                                                 QStringLiteral("pa"), QStringLiteral("--listen"), listenOf(gw)});
        QCOMPARE(retry.exitCode, 0);
        QVERIFY2(retry.out.contains(QStringLiteral("2 credentials back in use")), qPrintable(retry.out));
        QCOMPARE(gw.engine().pools().parkedCount(), 1); // the missing key: a retry cannot give it a secret

        // Marks: a filter that matches nothing, then the one that does.
        const SwitchmanRun other =
            runSwitchman({QStringLiteral("marks"), QStringLiteral("clear"), QStringLiteral("--provider"),
                          QStringLiteral("pa"), QStringLiteral("--listen"), listenOf(gw)});
        QCOMPARE(other.exitCode, 0);
        QVERIFY2(other.out.contains(QStringLiteral("cleared 0 marks")), qPrintable(other.out));
        QCOMPARE(gw.engine().marks().size(), 1);
        const SwitchmanRun clear = runSwitchman(
            {QStringLiteral("marks"), QStringLiteral("clear"), QStringLiteral("--tenant"), QStringLiteral("local"),
             QStringLiteral("--provider"), QStringLiteral("pc"), QStringLiteral("--listen"), listenOf(gw)});
        QCOMPARE(clear.exitCode, 0);
        QVERIFY2(clear.out.contains(QStringLiteral("cleared 1 mark (tenant local, provider pc)")),
                 qPrintable(clear.out));
        QVERIFY(gw.engine().marks().isEmpty());

        qputenv("SW_ADMIN_CMD_UNSET", "env-key-two"); // the missing key is set: in use again
        const SwitchmanRun healthy = runSwitchman({QStringLiteral("status"), QStringLiteral("--listen"), listenOf(gw)});
        QVERIFY2(healthy.out.contains(QStringLiteral("running, healthy")), qPrintable(healthy.out));
        QVERIFY(healthy.out.contains(QStringLiteral("Marks: none")));
    }

    void statusShowsAnUpstreamsControlCharactersEscaped() {
        // An upstream's error text reaches `switchman status` through a mark's and a key's
        // lastError. Printed raw, its escape sequences cleared the operator's terminal and drew
        // a fake "healthy" status (and ESC[8m hid the real tables after it).
        const QString hostile = QStringLiteral("\x1b[2J\r\nMarks: none") + QStringLiteral("\x1b]0;pwned\x07") +
                                QChar(0x9b) + QStringLiteral("8m") + QChar(0x202e) + QStringLiteral("\tend");
        const auto errorBody = [&hostile](const char *type) {
            return QJsonDocument(
                       QJsonObject{{QStringLiteral("type"), QStringLiteral("error")},
                                   {QStringLiteral("error"), QJsonObject{{QStringLiteral("type"), QLatin1String(type)},
                                                                         {QStringLiteral("message"), hostile}}}})
                .toJson(QJsonDocument::Compact);
        };
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:pa-main")};
        gw.secrets.secrets.insert(QStringLiteral("pa-main"), "sk-pa-main-0001");
        demo::Fault overloaded = statusFault(503);
        overloaded.body = errorBody("overloaded_error");
        gw.anthropicC.pushFault(overloaded); // a mark for pc
        demo::Fault unauthorized = statusFault(401);
        unauthorized.body = errorBody("authentication_error");
        gw.anthropicA.pushFault(unauthorized); // pa's key rejected
        gw.start();
        addRouteCThenB(gw);
        for (const QString &model : {QStringLiteral("c-then-b"), QStringLiteral("chain")})
            QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                             GatewayFixture::anthropicBody(model, QStringLiteral("hi"), false))
                         .header("x-switchman-candidate"),
                     QByteArray("pb/gpt-b"));

        const SwitchmanRun st = runSwitchman({QStringLiteral("status"), QStringLiteral("--listen"), listenOf(gw)});
        QCOMPARE(st.exitCode, 0);
        for (const QChar c : st.out) {
            const char16_t u = c.unicode();
            QVERIFY2((u >= 0x20 || u == u'\n') && !(u >= 0x7f && u <= 0x9f) && u != 0x202e,
                     qPrintable(QStringLiteral("U+%1 in: %2").arg(uint(u), 4, 16, QLatin1Char('0')).arg(st.out)));
        }
        const QString shown = QStringLiteral("\\x1b[2J\\x0d\\x0aMarks: none\\x1b]0;pwned\\x07\\u009b8m\\u202e\\x09end");
        QString markLine;
        QString keyLine;
        for (const QString &l : st.out.split(QLatin1Char('\n'))) {
            if (l.contains(QStringLiteral("server_error")))
                markLine = l;
            if (l.contains(QStringLiteral("keychain:pa-main")))
                keyLine = l;
        }
        QVERIFY2(markLine.contains(QStringLiteral("claude-c")) && markLine.endsWith(shown), qPrintable(st.out));
        QVERIFY2(keyLine.contains(QStringLiteral("rejected")) && keyLine.endsWith(shown), qPrintable(st.out));
        // The real state, not the upstream's: one "Marks" heading, the real summary line.
        QVERIFY2(st.out.startsWith(QStringLiteral("Switchman at http://") + listenOf(gw) +
                                   QStringLiteral(": running, 1 mark, 1 key out of use\n")),
                 qPrintable(st.out));
        QCOMPARE(st.out.count(QRegularExpression(QStringLiteral("(^|\n)Marks"))), 1);
    }

    void statusSaysAKeyTheKeychainCannotGiveIsUnavailable() {
        // The Secret Service is not there: the key cannot be read and every request skips it.
        // `switchman status` said "running, healthy" with the state "unavailable" and nothing else.
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:pa-main")};
        gw.secrets.mode = ScriptedSecretStore::Mode::Fail;
        gw.start();
        QVERIFY(waitUntil([&gw]() {
            return gw.engine().pools().states().value(0).state == credentials::CredentialHealth::Unavailable;
        }));
        const SwitchmanRun st = runSwitchman({QStringLiteral("status"), QStringLiteral("--listen"), listenOf(gw)});
        QCOMPARE(st.exitCode, 0);
        QVERIFY2(st.out.contains(QStringLiteral("running, 1 key out of use")), qPrintable(st.out));
        QString row;
        for (const QString &l : st.out.split(QLatin1Char('\n')))
            if (l.contains(QStringLiteral("keychain:pa-main")))
                row = l;
        QVERIFY2(
            row.contains(QStringLiteral("unavailable")) && row.contains(QStringLiteral("until the keychain answers")) &&
                row.contains(QStringLiteral("keychain unavailable: the OS keychain (Secret Service) is not available")),
            qPrintable(row));
        QVERIFY2(st.out.contains(QStringLiteral("keychain could not be read")), qPrintable(st.out));
        QVERIFY2(!st.out.contains(QStringLiteral("credential retry")), qPrintable(st.out)); // nothing a retry fixes
    }

    // The starter's `["env:ANTHROPIC_API_KEY", "keychain:anthropic"]` with the variable set, on a
    // machine with no Secret Service (a server, a container): the keychain was read at every start, the
    // log said "keychain unavailable" and `status` "keys out of use" on a healthy setup (probe L3 M2).
    // A key behind a set variable is a fallback: not read until the pool reaches it.
    void aKeychainKeyBehindASetVariableIsNotReadAtStart() {
        qputenv("SWITCHMAN_TEST_PA_KEY", "test-pa-key-not-real");
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("env:SWITCHMAN_TEST_PA_KEY"),
                                                                 QStringLiteral("keychain:pa-main")};
        gw.config.providers[QStringLiteral("pb")].credentials = {QStringLiteral("keychain:pb-main")};
        gw.secrets.mode = ScriptedSecretStore::Mode::Fail;
        gw.start();
        QCOMPARE(gw.secrets.reads, 1); // pb's key, which has nothing before it
        const SwitchmanRun st = runSwitchman({QStringLiteral("status"), QStringLiteral("--listen"), listenOf(gw)});
        qunsetenv("SWITCHMAN_TEST_PA_KEY");
        QCOMPARE(st.exitCode, 0);
        QVERIFY2(st.out.contains(QStringLiteral("running, 1 key out of use")), qPrintable(st.out));
        for (const QString &l : st.out.split(QLatin1Char('\n')))
            QVERIFY2(!(l.contains(QStringLiteral("keychain:pa-main")) && l.contains(QStringLiteral("unavailable"))),
                     qPrintable(l));
    }

    // A reload (SIGHUP, POST /admin/reload) that refused the file was said only in the log and the
    // POST's answer: `switchman status` said "running, healthy" while the file on disk was not what
    // ran. It says the reload was refused and why, until one succeeds.
    void statusSaysARefusedReloadUntilOneSucceeds() {
        QTemporaryDir dir;
        GatewayFixture gw;
        gw.configPath = dir.filePath(QStringLiteral("config.json"));
        QVERIFY(config::save(gw.configPath, gw.config));
        gw.start();
        QFile broken(gw.configPath);
        QVERIFY(broken.open(QIODevice::WriteOnly | QIODevice::Truncate));
        broken.write("{\"routes\": ");
        broken.close();
        QString why;
        QVERIFY(!gw.engine().reload(&why)); // what SIGHUP runs
        const SwitchmanRun st = runSwitchman({QStringLiteral("status"), QStringLiteral("--listen"), listenOf(gw)});
        QCOMPARE(st.exitCode, 0);
        QVERIFY2(st.out.contains(QStringLiteral("running, configuration reload refused")), qPrintable(st.out));
        QVERIFY2(st.out.contains(QStringLiteral("Configuration: reload refused: ") + gw.configPath) &&
                     st.out.contains(QStringLiteral("invalid JSON")) &&
                     st.out.contains(QStringLiteral("the configuration loaded before is running")),
                 qPrintable(st.out));

        // Without --listen, the address comes from the file that does not load (probe L3 M1: every
        // command that asks the running Switchman gave up on the file, and only --listen could say
        // why): written in JSON that is refused, or in text that is no JSON at all.
        config::Config onDisk = gw.config;
        onDisk.listen = listenOf(gw);
        QJsonObject refusedJson = config::toJson(onDisk);
        refusedJson.insert(QStringLiteral("route"), QJsonObject()); // a typo of "routes"
        const QByteArray texts[] = {QJsonDocument(refusedJson).toJson(),
                                    "{\"listen\": \"" + listenOf(gw).toUtf8() + "\", \"routes\": "};
        for (const QByteArray &text : texts) {
            QVERIFY(broken.open(QIODevice::WriteOnly | QIODevice::Truncate));
            broken.write(text);
            broken.close();
            QVERIFY(!gw.engine().reload(&why));
            const SwitchmanRun byFile =
                runSwitchman({QStringLiteral("status"), QStringLiteral("--config"), gw.configPath});
            QCOMPARE(byFile.exitCode, 0);
            QVERIFY2(byFile.out.contains(QStringLiteral("running, configuration reload refused")),
                     qPrintable(byFile.out));
            QVERIFY2(byFile.err.contains(QStringLiteral("does not load")), qPrintable(byFile.err));
        }

        QVERIFY(config::save(gw.configPath, gw.config));
        QVERIFY(gw.engine().reload(&why));
        const SwitchmanRun healthy = runSwitchman({QStringLiteral("status"), QStringLiteral("--listen"), listenOf(gw)});
        QVERIFY2(healthy.out.contains(QStringLiteral("running, healthy")), qPrintable(healthy.out));
        QVERIFY2(!healthy.out.contains(QStringLiteral("Configuration")), qPrintable(healthy.out));
    }

    // Replicas sharing marks through Redis, Redis gone: /healthz says the marks are local only, and
    // `status` said "running, healthy" (probe J4 9). It says what the window's status line says.
    void statusSaysMarksAreNotSharedWhileRedisIsUnreachable() {
        QTcpServer closed;
        QVERIFY(closed.listen(QHostAddress::LocalHost));
        const quint16 port = closed.serverPort();
        closed.close(); // nothing listens there now
        GatewayFixture gw;
        gw.config.marks.store = QStringLiteral("redis");
        gw.config.marks.url = QStringLiteral("redis://127.0.0.1:%1/0").arg(port);
        gw.start();
        const SwitchmanRun st = runSwitchman({QStringLiteral("status"), QStringLiteral("--listen"), listenOf(gw)});
        QCOMPARE(st.exitCode, 0);
        QVERIFY2(st.out.contains(QStringLiteral("running, marks local only")), qPrintable(st.out));
        QVERIFY2(st.out.contains(QStringLiteral("Marks store: local only")), qPrintable(st.out));
        QVERIFY2(!st.out.contains(QStringLiteral("running, healthy")), qPrintable(st.out));
    }

    void theAddressComesFromTheConfigurationAndTheAdminKeyFromTheEnvironment() {
        const QByteArray adminKey = "test-admin-key-for-cli-0001";
        GatewayFixture gw;
        config::TenantConfig admin;
        admin.name = QStringLiteral("ops");
        admin.admin = true;
        admin.keyHashes = {QStringLiteral("sha256:") +
                           QString::fromLatin1(QCryptographicHash::hash(adminKey, QCryptographicHash::Sha256).toHex())};
        gw.config.tenants.insert(admin.name, admin);
        gw.start();
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.json"));
        config::Config onDisk = gw.config;
        onDisk.listen = listenOf(gw);
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(QJsonDocument(config::toJson(onDisk)).toJson());
        file.close();

        const SwitchmanRun refused = runSwitchman({QStringLiteral("status"), QStringLiteral("--config"), path});
        QCOMPARE(refused.exitCode, 1);
        QVERIFY2(refused.err.contains(QStringLiteral("SWITCHMAN_ADMIN_KEY")), qPrintable(refused.err));
        const SwitchmanRun ok = runSwitchman({QStringLiteral("status"), QStringLiteral("--config"), path}, adminKey);
        QCOMPARE(ok.exitCode, 0);
        QVERIFY2(ok.out.contains(QStringLiteral("Switchman at http://") + listenOf(gw)), qPrintable(ok.out));
        QVERIFY(!ok.out.contains(QString::fromLatin1(adminKey)));
    }

    void nothingRunningSaysSoAndHowToStartIt() {
        QTcpServer probe; // a port nobody listens on
        QVERIFY(probe.listen(QHostAddress::LocalHost));
        const quint16 port = probe.serverPort();
        probe.close();
        const SwitchmanRun run = runSwitchman(
            {QStringLiteral("status"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:%1").arg(port)});
        QCOMPARE(run.exitCode, 1);
        QVERIFY2(run.err.contains(QStringLiteral("no Switchman answers at http://127.0.0.1:%1").arg(port)),
                 qPrintable(run.err));
        QVERIFY(run.err.contains(QStringLiteral("switchman --headless")));
    }
};

QTEST_GUILESS_MAIN(TestAdminCommands)
#include "test_admin_commands.moc"
