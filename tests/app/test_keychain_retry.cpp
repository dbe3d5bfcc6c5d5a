// `switchman credential set NAME` while Switchman runs: the new key is
// stored in a real Secret Service (scripts/with-keyring; ctest -R keychain) and
// the running instance drops that credential's parking at once, so the next
// request tries the first provider again.
#include "core/config/config_loader.h"
#include "core/credentials/credential_pools.h"
#include "gateway_fixture.h"
#include "signal_wait.h"
#include "switchman_run.h"

#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QTest>

using namespace sw;
using namespace sw::test;

class TestKeychainRetry : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void credentialSetTellsTheRunningInstance() {
        if (qgetenv("SWITCHMAN_IN_KEYRING_SESSION") != "1")
            QSKIP("needs a Secret Service: scripts/test runs this under scripts/with-keyring");
        const QString name = QStringLiteral("cli-retry-%1").arg(QRandomGenerator::system()->generate64(), 0, 16);
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:") + name};
        gw.secrets.secrets.insert(name, "typo-key");
        gw.anthropicA.pushFault(statusFault(401));
        gw.start();
        QVERIFY(waitUntil([&gw, &name]() { return gw.engine().pools().isCached(name); }));
        const auto body = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("hi"), false);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(gw.engine().pools().parkedCount(), 1);

        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.json"));
        config::Config onDisk = gw.config;
        onDisk.listen = listenOf(gw);
        QVERIFY(config::save(path, onDisk));
        gw.secrets.secrets.insert(name, "fixed-key"); // what the engine's keychain will read from now on
        const SwitchmanRun set =
            runSwitchman({QStringLiteral("credential"), QStringLiteral("set"), name, QStringLiteral("--config"), path},
                         {}, "fixed-key\n");
        QVERIFY2(set.exitCode == 0, qPrintable(set.err));
        QVERIFY2(set.out.contains(QStringLiteral("uses it from the next request")), qPrintable(set.out));
        QCOMPARE(gw.engine().pools().parkedCount(), 0);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).header("x-switchman-candidate"),
                 QByteArray("pa/claude-a"));
        QCOMPARE(gw.anthropicA.requests().last().header("x-api-key"), QByteArray("fixed-key"));
    }
};

QTEST_GUILESS_MAIN(TestKeychainRetry)
#include "test_keychain_retry.moc"
