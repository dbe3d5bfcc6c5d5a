// Credential health in the window: the Marks screen's second table,
// a dashboard card per parked key, "1 key out of use" on the status line and in the
// tray tooltip, and "Retry now" going to the engine. Against a real engine on
// its own thread; the model's countdown on an injected wall clock.

#include "core/config/config_loader.h"
#include "core/engine_host.h"
#include "core/snapshot/snapshot_publisher.h"
#include "gateway_fixture.h"
#include "signal_wait.h"
#include "ui/dashboard/mark_card.h"
#include "ui/main_window.h"
#include "ui/marks/credentials_model.h"
#include "ui/marks/marks_view.h"
#include "ui/shared/engine_commands.h"
#include "ui/status/status_line.h"
#include "ui/tray/tray_controller.h"

#include <QLabel>
#include <QPushButton>
#include <QRandomGenerator>
#include <QSignalSpy>
#include <QTableView>
#include <QTest>

using namespace sw;
using namespace sw::ui;
using credentials::CredentialHealth;

namespace {
credentials::CredentialStatus parkedRow(const QString &provider, int position, qint64 remainingMs) {
    credentials::CredentialStatus c;
    c.provider = provider;
    c.ref = QStringLiteral("env:KEY_%1").arg(position);
    c.position = position;
    c.state = CredentialHealth::Parked;
    c.reason = credentials::ParkReason::RateLimit;
    c.status = 429;
    c.remainingMs = remainingMs;
    c.parkedForMs = remainingMs;
    return c;
}
} // namespace

class TestCredentialsView : public QObject {
    Q_OBJECT

    std::unique_ptr<EngineHost> m_host;
    test::ScriptedSecretStore m_secrets; // used on the engine thread only
    snapshot::SnapshotPublisher *m_publisher = nullptr;
    QByteArray m_canary;

    int engineParked() {
        int n = 0;
        m_host->runBlocking([&n](Engine &e) { n = e.pools().parkedCount(); });
        return n;
    }

private Q_SLOTS:
    void init() {
        m_canary = "sk-canary-" + QByteArray::number(QRandomGenerator::system()->generate64(), 16);
        qputenv("SW_UI_SPARE_KEY", "spare-key-for-ui-test");
        m_secrets.secrets.insert(QStringLiteral("sim-anthropic-main"), m_canary);
        m_host = std::make_unique<EngineHost>();
        Engine::Options options;
        options.config = config::demoConfig();
        options.config.providers[QStringLiteral("sim-anthropic")].credentials = {
            QStringLiteral("keychain:sim-anthropic-main"), QStringLiteral("env:SW_UI_SPARE_KEY")};
        options.demo = true;
        options.secrets = &m_secrets;
        QString error;
        QVERIFY2(m_host->start(std::move(options), QStringLiteral("127.0.0.1:0"), &error), qPrintable(error));
        m_host->runBlocking([this](Engine &e) { m_publisher = new snapshot::SnapshotPublisher(e, 50); });
    }

    void cleanup() {
        m_host.reset();
        m_publisher = nullptr;
    }

    void theModelCountsDownOnItsOwnClock() {
        qint64 now = 1'000'000;
        CredentialsModel model;
        model.setWallClock([&now]() { return now; });
        QSignalSpy counts(&model, &CredentialsModel::parkedCountChanged);
        model.applySnapshot({parkedRow(QStringLiteral("p"), 0, 7000), parkedRow(QStringLiteral("p"), 1, 60000)}, now);
        QCOMPARE(model.parkedCount(), 2);
        QCOMPARE(counts.size(), 1);
        QCOMPARE(model.index(0, CredentialsModel::State).data().toString(), QStringLiteral("parked"));
        QCOMPARE(model.index(0, CredentialsModel::Reason).data().toString(), QStringLiteral("rate limit"));
        QCOMPARE(model.index(0, CredentialsModel::BackIn).data().toString(), QStringLiteral("0:07"));
        QCOMPARE(model.index(0, CredentialsModel::Position).data().toInt(), 1); // shown from 1, as people count
        now += 6500;
        model.tick();
        QCOMPARE(model.index(0, CredentialsModel::BackIn).data().toString(), QStringLiteral("0:01"));
        now += 500; // the 7 s are over: it reads ok without waiting for the engine
        model.tick();
        QCOMPARE(model.index(0, CredentialsModel::State).data().toString(), QStringLiteral("ok"));
        QVERIFY(model.index(0, CredentialsModel::BackIn).data().toString().isEmpty());
        QCOMPARE(model.parkedCount(), 1);
        QCOMPARE(counts.size(), 2);

        // Retry now: the row reads ok at once, and an older snapshot does not bring it back.
        credentials::CredentialFilter f;
        f.provider = QStringLiteral("p");
        model.markRetried(f);
        QCOMPARE(model.parkedCount(), 0);
        model.applySnapshot({parkedRow(QStringLiteral("p"), 0, 1000), parkedRow(QStringLiteral("p"), 1, 53000)},
                            now - 1);
        QCOMPARE(model.parkedCount(), 0);
        model.applySnapshot({parkedRow(QStringLiteral("p"), 1, 30000)}, now + 1); // a newer one: parked again
        QCOMPARE(model.parkedCount(), 1);
    }

    // Probe AB4 F2: a key parked by a spend limit for four days read "back in 5874:12"; an hour's
    // insufficient_quota park "60:00". From an hour on the table says what `switchman status` says.
    void aLongParkReadsInHoursAndMinutes() {
        qint64 now = 1'000'000;
        CredentialsModel model;
        model.setWallClock([&now]() { return now; });
        model.applySnapshot({parkedRow(QStringLiteral("p"), 0, 352'440'000),
                             parkedRow(QStringLiteral("p"), 1, 3'600'000),
                             parkedRow(QStringLiteral("q"), 0, 3'599'000)},
                            now);
        QCOMPARE(model.index(0, CredentialsModel::BackIn).data().toString(), QStringLiteral("97 h 54 min"));
        QCOMPARE(model.index(1, CredentialsModel::BackIn).data().toString(), QStringLiteral("1 h 00 min"));
        QCOMPARE(model.index(2, CredentialsModel::BackIn).data().toString(), QStringLiteral("59:59"));
        now += 1000;
        model.tick();
        QCOMPARE(model.index(1, CredentialsModel::BackIn).data().toString(), QStringLiteral("59:59"));
    }

    void theWindowShowsParkedKeysAndRetryNowReachesTheEngine() {
        MainWindow::Options options;
        options.demo = true;
        options.tray = false;
        options.secrets = nullptr;
        MainWindow window(m_host.get(), options);
        connect(m_publisher, &snapshot::SnapshotPublisher::snapshotReady, &window, &MainWindow::applySnapshot);
        window.resize(1180, 720);
        window.show();
        QVERIFY(test::waitUntil([&window]() { return window.credentialsModel()->rowCount() == 2; }));
        auto *keysLabel = window.statusLine()->findChild<QLabel *>(QStringLiteral("keysParked"));
        QVERIFY(keysLabel);
        QVERIFY(!keysLabel->isVisible());
        QVERIFY(!window.tray()->toolTip().contains(QStringLiteral("parked")));

        const QString canary = QString::fromLatin1(m_canary);
        QVERIFY(test::waitUntil([this]() {
            bool cached = false;
            m_host->runBlocking(
                [&cached](Engine &e) { cached = e.pools().isCached(QStringLiteral("sim-anthropic-main")); });
            return cached;
        }));
        m_host->runBlocking([canary](Engine &e) {
            credentials::CredentialFailure unauthorized;
            unauthorized.status = 401;
            unauthorized.message = QStringLiteral("invalid x-api-key ") + canary;
            e.pools().recordFailure({QStringLiteral("sim-anthropic"), 0}, unauthorized, {});
        });
        QVERIFY(test::waitUntil([&window]() { return window.credentialsModel()->parkedCount() == 1; }));
        QVERIFY(keysLabel->isVisible());
        QCOMPARE(keysLabel->text(), QStringLiteral("· 1 key out of use"));
        QVERIFY2(window.tray()->toolTip().contains(QStringLiteral("1 key out of use")),
                 qPrintable(window.tray()->toolTip()));
        // Its provider's requests go elsewhere: the state word and the tray say so, not "Healthy" (probe AB4 F2).
        QCOMPARE(window.state(), HealthState::Degraded);
        QCOMPARE(window.tray()->state(), HealthState::Degraded);
        QCOMPARE(window.findChild<QLabel *>(QStringLiteral("stateWord"))->text(), QStringLiteral("Degraded"));
        QVERIFY2(window.tray()->toolTip().contains(QStringLiteral("Degraded (a key of sim-anthropic is out of use")),
                 qPrintable(window.tray()->toolTip()));

        m_host->runBlocking([](Engine &e) {
            credentials::CredentialFailure limited;
            limited.status = 429;
            limited.retryAfterMs = 45000;
            e.pools().recordFailure({QStringLiteral("sim-anthropic"), 1}, limited, {});
        });
        QVERIFY(test::waitUntil([&window]() { return window.credentialsModel()->parkedCount() == 2; }));
        QCOMPARE(keysLabel->text(), QStringLiteral("· 2 keys out of use"));
        QVERIFY(window.tray()->toolTip().contains(QStringLiteral("2 keys out of use")));

        // The Marks screen's Credentials table says which, why and for how long.
        window.showView(MainWindow::Marks);
        QTableView *table = window.marksView()->credentialsTable();
        QVERIFY(table && table->isVisible());
        auto *model = window.credentialsModel();
        QCOMPARE(model->index(0, CredentialsModel::Reference).data().toString(),
                 QStringLiteral("keychain:sim-anthropic-main"));
        QCOMPARE(model->index(0, CredentialsModel::State).data().toString(), QStringLiteral("rejected"));
        QCOMPARE(model->index(0, CredentialsModel::Status).data().toString(), QStringLiteral("401"));
        QCOMPARE(model->index(0, CredentialsModel::BackIn).data().toString(), QStringLiteral("when the key changes"));
        QCOMPARE(model->index(1, CredentialsModel::State).data().toString(), QStringLiteral("parked"));
        const QString backIn = model->index(1, CredentialsModel::BackIn).data().toString();
        QVERIFY2(backIn == QLatin1String("0:45") || backIn == QLatin1String("0:44"), qPrintable(backIn));
        for (int r = 0; r < model->rowCount(); ++r)
            for (int c = 0; c < model->columnCount(); ++c)
                for (int role : {int(Qt::DisplayRole), int(Qt::ToolTipRole)})
                    QVERIFY(!model->index(r, c).data(role).toString().contains(canary));

        // The dashboard has a card per parked key.
        window.showView(MainWindow::Dashboard);
        QVERIFY(test::waitUntil([&window]() {
            return window.viewWidget(MainWindow::Dashboard)
                       ->findChildren<MarkCard *>(QStringLiteral("keyCard"))
                       .size() == 2;
        }));

        // Retry the selected one: only it leaves parking, in the engine too.
        window.showView(MainWindow::Marks);
        table->selectRow(1);
        auto *retry = window.marksView()->findChild<QPushButton *>(QStringLiteral("retryCredentials"));
        QVERIFY(retry && retry->isEnabled());
        QCOMPARE(retry->text(), QStringLiteral("Retry selected now"));
        QTest::mouseClick(retry, Qt::LeftButton);
        QCOMPARE(model->parkedCount(), 1); // at once
        QVERIFY(test::waitUntil([this]() { return engineParked() == 1; }));
        // Nothing selected: every parked key.
        table->clearSelection();
        QCOMPARE(retry->text(), QStringLiteral("Retry now"));
        QTest::mouseClick(retry, Qt::LeftButton);
        QVERIFY(test::waitUntil([this]() { return engineParked() == 0; }));
        QVERIFY(test::waitUntil([keysLabel]() { return !keysLabel->isVisible(); }));
        QVERIFY(!retry->isEnabled());
        QVERIFY(!window.tray()->toolTip().contains(QStringLiteral("parked")));

        // Set key… tells the engine a new secret was stored under that name.
        m_host->runBlocking([](Engine &e) { e.pools().reject({QStringLiteral("sim-anthropic"), 0}, 401, {}); });
        QVERIFY(test::waitUntil([model]() { return model->parkedCount() == 1; }));
        window.commands()->credentialChanged(QStringLiteral("keychain:sim-anthropic-main"));
        QCOMPARE(model->parkedCount(), 0);
        QVERIFY(test::waitUntil([this]() { return engineParked() == 0; }));
    }

    void aKeyTheKeychainCannotGiveIsShownUnavailable() {
        // A keychain key that cannot be read (no Secret Service, a locked keychain) is skipped by
        // every request; the window said "In use" in its tooltip and "parked" on its card.
        MainWindow::Options options;
        options.demo = true;
        options.tray = false;
        options.secrets = nullptr;
        MainWindow window(m_host.get(), options);
        connect(m_publisher, &snapshot::SnapshotPublisher::snapshotReady, &window, &MainWindow::applySnapshot);
        window.resize(1180, 720);
        window.show();
        QVERIFY(test::waitUntil([&window]() { return window.credentialsModel()->rowCount() == 2; }));
        QVERIFY(test::waitUntil([this]() {
            bool cached = false;
            m_host->runBlocking(
                [&cached](Engine &e) { cached = e.pools().isCached(QStringLiteral("sim-anthropic-main")); });
            return cached;
        }));
        m_host->runBlocking([this](Engine &e) {
            m_secrets.mode = test::ScriptedSecretStore::Mode::Fail;
            // A reload keeps a working cached copy (probe AA4 F3): one forgotten ("Retry now") is
            // read again, and the Secret Service is not there.
            e.clearCredentials({QString(), QStringLiteral("keychain:sim-anthropic-main")});
            e.applyConfig(*e.config());
        });
        auto *model = window.credentialsModel();
        QVERIFY(test::waitUntil([model]() {
            return model->index(0, CredentialsModel::State).data().toString() == QLatin1String("unavailable");
        }));
        QCOMPARE(model->parkedCount(), 1);
        QCOMPARE(model->index(0, CredentialsModel::Reference).data().toString(),
                 QStringLiteral("keychain:sim-anthropic-main"));
        const QString tip = model->index(0, CredentialsModel::State).data(Qt::ToolTipRole).toString();
        QVERIFY2(
            tip.startsWith(QStringLiteral("Keychain unavailable: the OS keychain (Secret Service) is not available")),
            qPrintable(tip));
        QCOMPARE(model->index(0, CredentialsModel::BackIn).data().toString(),
                 QStringLiteral("when the keychain answers"));
        QVERIFY(model->index(0, CredentialsModel::Reason).data().toString().isEmpty()); // the provider refused nothing
        QCOMPARE(model->index(1, CredentialsModel::State).data().toString(), QStringLiteral("ok")); // env: in use

        // The dashboard's card says it in the same words, with no countdown.
        window.showView(MainWindow::Dashboard);
        QVERIFY(test::waitUntil([&window]() {
            return window.viewWidget(MainWindow::Dashboard)
                       ->findChildren<MarkCard *>(QStringLiteral("keyCard"))
                       .size() == 1;
        }));
        MarkCard *card =
            window.viewWidget(MainWindow::Dashboard)->findChildren<MarkCard *>(QStringLiteral("keyCard")).first();
        QStringList texts;
        for (const QLabel *label : card->findChildren<QLabel *>())
            texts << label->text();
        const QString shown = texts.join(QLatin1Char('|'));
        QVERIFY2(
            shown.contains(QStringLiteral("keychain unavailable: the OS keychain (Secret Service) is not available")),
            qPrintable(shown));
        QVERIFY2(shown.contains(QStringLiteral("until the keychain answers")), qPrintable(shown));
        QVERIFY2(!shown.contains(QStringLiteral("parked")), qPrintable(shown));
        m_host->runBlocking([this](Engine &) { m_secrets.mode = test::ScriptedSecretStore::Mode::Answer; });
    }
};

QTEST_MAIN(TestCredentialsView)
#include "test_credentials_view.moc"
