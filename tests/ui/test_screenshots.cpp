// The whole window over a real demo engine during a simulated outage: every
// view must show the outage (not its empty state). With SWITCHMAN_SCREENSHOT_DIR
// set, each view is also saved as a PNG there (docs/screenshots).

#include "core/config/config_loader.h"
#include "core/engine_host.h"
#include "core/snapshot/snapshot_publisher.h"
#include "gateway_fixture.h"
#include "signal_wait.h"
#include "ui/attempts/attempts_model.h"
#include "ui/demo/demo_banner.h"
#include "ui/failures/failures_view.h"
#include "ui/log/log_model.h"
#include "ui/main_window.h"
#include "ui/marks/credentials_model.h"
#include "ui/marks/marks_model.h"
#include "ui/shared/empty_state_stack.h"
#include "ui/tray/tray_controller.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QPainter>
#include <QTableView>
#include <QTest>
#include <QTextBrowser>

using namespace sw;
using namespace sw::ui;

class TestScreenshots : public QObject {
    Q_OBJECT

    std::unique_ptr<EngineHost> m_host;
    test::ScriptedSecretStore m_secrets;
    QNetworkAccessManager m_nam;

    int chat(const QString &model) {
        QNetworkRequest req(QUrl(m_host->baseUrl() + QStringLiteral("/v1/chat/completions")));
        req.setHeader(QNetworkRequest::ContentTypeHeader, QByteArrayLiteral("application/json"));
        const QJsonObject body{{QStringLiteral("model"), model},
                               {QStringLiteral("messages"),
                                QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                                       {QStringLiteral("content"), QStringLiteral("hello there")}}}}};
        QNetworkReply *reply = m_nam.post(req, QJsonDocument(body).toJson());
        test::waitUntil([reply]() { return reply->isFinished(); }, 15000);
        const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
        reply->deleteLater();
        return status;
    }

    static void save(QWidget &w, const QString &name) {
        const QString dir = qEnvironmentVariable("SWITCHMAN_SCREENSHOT_DIR");
        if (dir.isEmpty())
            return;
        QDir().mkpath(dir);
        QVERIFY(w.grab().save(QDir(dir).filePath(name + QStringLiteral(".png"))));
    }

private Q_SLOTS:
    void everyViewShowsTheOutage() {
        m_host = std::make_unique<EngineHost>();
        Engine::Options options;
        options.config = config::demoConfig();
        // Key pools with a spare each, so parking one (below) shows in the pictures without changing the routing.
        qputenv("SW_SHOT_ANTHROPIC_SPARE", "screenshot-spare-a");
        qputenv("SW_SHOT_OPENAI", "screenshot-openai");
        qputenv("SW_SHOT_OPENAI_SPARE", "screenshot-spare-b");
        m_secrets.secrets.insert(QStringLiteral("sim-anthropic-main"), "screenshot-main-a");
        options.config.providers[QStringLiteral("sim-anthropic")].credentials = {
            QStringLiteral("keychain:sim-anthropic-main"), QStringLiteral("env:SW_SHOT_ANTHROPIC_SPARE")};
        // And one whose variable is not set: shown missing, skipped by every request.
        qunsetenv("SW_SHOT_OPENAI_UNSET");
        options.config.providers[QStringLiteral("sim-openai")].credentials = {
            QStringLiteral("env:SW_SHOT_OPENAI"), QStringLiteral("env:SW_SHOT_OPENAI_SPARE"),
            QStringLiteral("env:SW_SHOT_OPENAI_UNSET")};
        config::RouteConfig backup;
        backup.name = QStringLiteral("backup");
        backup.candidates = {QStringLiteral("sim-openai/gpt-sim"), QStringLiteral("sim-responses/gpt-responses-sim")};
        options.config.routes.insert(backup.name, backup);
        options.demo = true;
        options.secrets = &m_secrets;
        QString error;
        QVERIFY2(m_host->start(std::move(options), QStringLiteral("127.0.0.1:0"), &error), qPrintable(error));

        MainWindow::Options windowOptions;
        windowOptions.demo = true;
        windowOptions.tray = false;
        MainWindow window(m_host.get(), windowOptions);
        snapshot::SnapshotPublisher *publisher = nullptr;
        m_host->runBlocking([&publisher](Engine &e) { publisher = new snapshot::SnapshotPublisher(e, 100); });
        connect(publisher, &snapshot::SnapshotPublisher::snapshotReady, &window, &MainWindow::applySnapshot);
        window.resize(1180, 720);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));

        // Healthy traffic first.
        for (int i = 0; i < 3; ++i)
            QCOMPARE(chat(QStringLiteral("demo")), 200);
        // sim-anthropic answers 503: failover to sim-openai, a server_error mark.
        window.demoBanner()->takeDown(QStringLiteral("sim-anthropic"), DemoBanner::Status503);
        for (int i = 0; i < 3; ++i)
            QCOMPARE(chat(QStringLiteral("demo")), 200);
        // It comes back, and sim-openai rate-limits with Retry-After: a rate_limited mark, answered on attempt 2.
        window.demoBanner()->bringBack(QStringLiteral("sim-anthropic"));
        window.demoBanner()->takeDown(QStringLiteral("sim-openai"), DemoBanner::RateLimited429);
        QCOMPARE(chat(QStringLiteral("demo")), 200);
        // And sim-anthropic goes down again (refusing): left on for the pictures.
        window.demoBanner()->bringBack(QStringLiteral("sim-openai"));
        window.demoBanner()->takeDown(QStringLiteral("sim-anthropic"), DemoBanner::Refuse);
        QCOMPARE(chat(QStringLiteral("claude-sonnet")), 200);
        QCOMPARE(chat(QStringLiteral("demo")), 200);
        // sim-openai answered those, which lifted its mark (an answer shows the provider is back); it
        // rate-limits once more on a route whose fallback is sim-responses: that mark stays.
        window.demoBanner()->takeDown(QStringLiteral("sim-openai"), DemoBanner::RateLimited429);
        QCOMPARE(chat(QStringLiteral("backup")), 200);
        window.demoBanner()->bringBack(QStringLiteral("sim-openai"));

        QVERIFY(test::waitUntil([&window]() { return window.marksModel()->rowCount() >= 2; }));
        QVERIFY(test::waitUntil([&window]() { return window.attemptsModel()->rowCount() >= 12; }));
        QCOMPARE(window.state(), HealthState::Marks);

        auto notEmpty = [&window](MainWindow::View v) {
            auto *stack = window.viewWidget(v)->findChild<EmptyStateStack *>();
            return stack && !stack->isShowingEmpty();
        };
        QVERIFY(notEmpty(MainWindow::Attempts));
        QVERIFY(notEmpty(MainWindow::Marks));
        QVERIFY(test::waitUntil([&]() { return notEmpty(MainWindow::Failures) && notEmpty(MainWindow::Usage); }));
        auto *failures = window.viewWidget(MainWindow::Failures)->findChild<FailuresView *>();
        if (!failures)
            failures = qobject_cast<FailuresView *>(window.viewWidget(MainWindow::Failures));
        QVERIFY(failures);
        QVERIFY2(failures->seriesNames().contains(QStringLiteral("sim-anthropic · server_error")),
                 qPrintable(failures->seriesNames().join(QLatin1Char(','))));
        QVERIFY(window.logModel()->rowCount() > 0);

        // A request selected in Attempts shows its story.
        window.showView(MainWindow::Attempts);
        auto *table = window.viewWidget(MainWindow::Attempts)->findChild<QTableView *>(QStringLiteral("attemptsTable"));
        QVERIFY(table);
        table->selectRow(1);
        auto *detail =
            window.viewWidget(MainWindow::Attempts)->findChild<QTextBrowser *>(QStringLiteral("attemptDetail"));
        QVERIFY2(detail->toPlainText().contains(QStringLiteral("Attempt 1")), qPrintable(detail->toPlainText()));
        QVERIFY(detail->toPlainText().contains(QStringLiteral("Attempt 2")));
        // Two keys out of use: one refused (401, a mistyped key), one over its usage limit.
        m_host->runBlocking([](Engine &e) {
            credentials::CredentialFailure unauthorized;
            unauthorized.status = 401;
            unauthorized.message = QStringLiteral("authentication_error: invalid x-api-key");
            e.pools().recordFailure({QStringLiteral("sim-anthropic"), 0}, unauthorized, {});
            credentials::CredentialFailure limited;
            limited.status = 429;
            limited.message =
                QStringLiteral("You have reached your usage limit for this billing period; try again in 47m");
            e.pools().recordFailure({QStringLiteral("sim-openai"), 0}, limited, {});
        });
        QVERIFY(test::waitUntil([&window]() { return window.credentialsModel()->parkedCount() == 3; }));
        QTest::qWait(1200); // let a countdown tick and the snapshots settle
        for (int v = 0; v < MainWindow::ViewCount; ++v) {
            window.showView(MainWindow::View(v));
            QTest::qWait(50);
            static const char *names[] = {"1-dashboard", "2-attempts",      "3-marks", "4-failures",
                                          "5-usage",     "6-configuration", "7-log"};
            // 5-usage.png shows a week of ledger rows: test_usage_view takes it.
            if (v != MainWindow::Usage)
                save(window, QString::fromLatin1(names[v]));
        }

        // The four tray states, side by side.
        QImage tray(4 * 80, 80, QImage::Format_ARGB32_Premultiplied);
        tray.fill(window.palette().color(QPalette::Window));
        QPainter p(&tray);
        int x = 8;
        for (HealthState s : {HealthState::Healthy, HealthState::Marks, HealthState::Paused, HealthState::Error}) {
            p.drawPixmap(x, 8, QIcon(TrayController::iconPath(s)).pixmap(64, 64));
            x += 80;
        }
        p.end();
        if (!qEnvironmentVariable("SWITCHMAN_SCREENSHOT_DIR").isEmpty())
            QVERIFY(tray.save(
                QDir(qEnvironmentVariable("SWITCHMAN_SCREENSHOT_DIR")).filePath(QStringLiteral("8-tray-states.png"))));
        m_host.reset();
    }
};

QTEST_MAIN(TestScreenshots)
#include "test_screenshots.moc"
