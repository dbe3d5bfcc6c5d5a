// The Marks screen against a real engine on its own thread: a simulated
// provider fails, the mark reaches the view through snapshots, and clearing it
// from the view (Delete key, clear tenant) removes it in the engine.

#include "core/config/config_loader.h"
#include "core/engine_host.h"
#include "core/failover/failure_classifier.h"
#include "core/snapshot/snapshot_publisher.h"
#include "gateway_fixture.h"
#include "signal_wait.h"
#include "ui/main_window.h"
#include "ui/marks/marks_model.h"
#include "ui/marks/marks_view.h"
#include "ui/shared/engine_commands.h"
#include "ui/tray/tray_controller.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QTableView>
#include <QTest>

using namespace sw;
using namespace sw::ui;

class TestMarksView : public QObject {
    Q_OBJECT

    std::unique_ptr<EngineHost> m_host;
    test::ScriptedSecretStore m_secrets; // used on the engine thread only
    snapshot::SnapshotPublisher *m_publisher = nullptr;

    int engineMarkCount() {
        int n = 0;
        m_host->runBlocking([&n](Engine &e) { n = int(e.marks().size()); });
        return n;
    }

    int postChat(const QString &model) {
        QNetworkAccessManager nam;
        QNetworkRequest req(QUrl(m_host->baseUrl() + QStringLiteral("/v1/chat/completions")));
        req.setHeader(QNetworkRequest::ContentTypeHeader, QByteArrayLiteral("application/json"));
        const QJsonObject body{
            {QStringLiteral("model"), model},
            {QStringLiteral("messages"), QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                                                {QStringLiteral("content"), QStringLiteral("hi")}}}}};
        QNetworkReply *reply = nam.post(req, QJsonDocument(body).toJson());
        bool done = test::waitUntil([reply]() { return reply->isFinished(); }, 15000);
        const int status = done ? reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt() : -1;
        reply->deleteLater();
        return status;
    }

private Q_SLOTS:
    void init() {
        m_host = std::make_unique<EngineHost>();
        Engine::Options options;
        options.config = config::demoConfig();
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

    void failingProviderShowsAMarkAndDeleteClearsItInTheEngine() {
        EngineCommands commands(m_host.get());
        MarksModel model;
        MarksView view(&model, &commands);
        connect(m_publisher, &snapshot::SnapshotPublisher::snapshotReady, &model,
                [&model](const snapshot::EngineSnapshot &s) { model.applySnapshot(s.marks, s.wallMs); });
        view.resize(900, 300);
        view.show();

        // The first candidate answers 503: the request fails over and the tenant gets a mark.
        commands.setDemoFault(QStringLiteral("sim-anthropic"),
                              demo::Fault{demo::Fault::Status, 503, {}, {}, {}, 0, {}});
        QCOMPARE(postChat(QStringLiteral("demo")), 200);
        QCOMPARE(engineMarkCount(), 1);
        QVERIFY(test::waitUntil([&model]() { return model.rowCount() == 1; }));
        QCOMPARE(model.index(0, MarksModel::Provider).data().toString(), QStringLiteral("sim-anthropic"));
        QCOMPARE(model.index(0, MarksModel::Kind).data().toString(), QStringLiteral("server_error"));
        QCOMPARE(model.index(0, MarksModel::Tenant).data().toString(), QStringLiteral("local"));
        QVERIFY(model.index(0, MarksModel::Expires).data().toString().startsWith(QStringLiteral("0:")));

        // Select it and press Delete, as a user would.
        view.table()->setFocus();
        view.table()->selectRow(0);
        QTest::keyClick(view.table(), Qt::Key_Delete);
        QCOMPARE(model.rowCount(), 0); // the table answers at once
        QVERIFY(test::waitUntil([this]() { return engineMarkCount() == 0; }));
        // Later snapshots agree.
        QTest::qWait(200);
        QCOMPARE(model.rowCount(), 0);
    }

    void clearTenantAndClearAllGoThroughTheEngine() {
        EngineCommands commands(m_host.get());
        MarksModel model;
        MarksView view(&model, &commands);
        view.setConfirmBulkClear(false);
        connect(m_publisher, &snapshot::SnapshotPublisher::snapshotReady, &model,
                [&model](const snapshot::EngineSnapshot &s) { model.applySnapshot(s.marks, s.wallMs); });
        m_host->runBlocking([](Engine &e) {
            failover::UpstreamFailure f{failover::FailureKind::ServerError, 503, std::nullopt, QStringLiteral("503")};
            for (const char *tenant : {"alice", "bob"})
                for (const char *model : {"m1", "m2"})
                    e.markTable().mark(QString::fromLatin1(tenant),
                                       failover::CandidateRef{QStringLiteral("p"), QString::fromLatin1(model),
                                                              QStringLiteral("http://127.0.0.1:1")},
                                       f);
        });
        QVERIFY(test::waitUntil([&model]() { return model.rowCount() == 4; }));
        view.clearTenant(QStringLiteral("alice"));
        QCOMPARE(model.rowCount(), 2);
        QVERIFY(test::waitUntil([this]() { return engineMarkCount() == 2; }));
        QList<failover::MarkInfo> left;
        m_host->runBlocking([&left](Engine &e) { left = e.marks(); });
        for (const auto &m : left)
            QCOMPARE(m.tenant, QStringLiteral("bob"));
        view.clearAll();
        QCOMPARE(model.rowCount(), 0);
        QVERIFY(test::waitUntil([this]() { return engineMarkCount() == 0; }));
    }

    void windowBadgeAndTrayFollowTheEngine() {
        MainWindow::Options options;
        options.demo = true;
        options.tray = false;
        options.secrets = nullptr;
        MainWindow window(m_host.get(), options);
        connect(m_publisher, &snapshot::SnapshotPublisher::snapshotReady, &window, &MainWindow::applySnapshot);
        window.show();
        QVERIFY(test::waitUntil([&window]() {
            return !window.tray()->toolTip().isEmpty() &&
                   window.tray()->toolTip().contains(QStringLiteral("http://127.0.0.1"));
        }));
        QCOMPARE(window.state(), HealthState::Healthy);

        m_host->runBlocking([](Engine &e) {
            e.markTable().mark(QStringLiteral("local"),
                               failover::CandidateRef{QStringLiteral("sim-anthropic"), QStringLiteral("claude-sim"),
                                                      QStringLiteral("http://127.0.0.1:1")},
                               failover::UpstreamFailure{failover::FailureKind::RateLimited, 429, 45'000,
                                                         QStringLiteral("429 slow down")});
        });
        QVERIFY(test::waitUntil([&window]() { return window.state() == HealthState::Marks; }));
        QCOMPARE(window.tray()->state(), HealthState::Marks);
        QVERIFY(window.tray()->toolTip().contains(QStringLiteral("1 mark")));
        QCOMPARE(window.marksModel()->index(0, MarksModel::RetryAfter).data().toString(), QStringLiteral("45 s"));

        // Clear all from the window: the tray is healthy again before the engine even answers.
        window.marksView()->setConfirmBulkClear(false);
        window.marksView()->clearAll();
        QCOMPARE(window.tray()->state(), HealthState::Healthy);
        QVERIFY(test::waitUntil([this]() { return engineMarkCount() == 0; }));

        // Pause from the window: the engine answers 503 and the tray says Paused.
        window.commands()->setPaused(true);
        QCOMPARE(window.tray()->state(), HealthState::Paused);
        QCOMPARE(postChat(QStringLiteral("demo")), 503);
        window.commands()->setPaused(false);
        QVERIFY(test::waitUntil([&window]() { return window.tray()->state() == HealthState::Healthy; }));
        QCOMPARE(postChat(QStringLiteral("demo")), 200);
    }
};

QTEST_MAIN(TestMarksView)
#include "test_marks_view.moc"
