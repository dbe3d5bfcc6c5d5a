// The window with marks shared through Redis: the Marks screen names the
// store and which replica set each mark, and when Redis goes away the status
// line says marks are local only. Real engine, real private redis-server.

#include "core/config/config_loader.h"
#include "core/engine_host.h"
#include "core/failover/provider_down_marks.h"
#include "core/snapshot/snapshot_publisher.h"
#include "gateway_fixture.h"
#include "redis_server.h"
#include "signal_wait.h"
#include "ui/main_window.h"
#include "ui/marks/marks_model.h"
#include "ui/marks/marks_view.h"

#include <QDir>
#include <QLabel>
#include <QTableView>
#include <QTest>

using namespace sw;
using namespace sw::ui;

class TestMarksStoreView : public QObject {
    Q_OBJECT

    static void save(QWidget &w, const QString &name) {
        const QString dir = qEnvironmentVariable("SWITCHMAN_SCREENSHOT_DIR");
        if (dir.isEmpty())
            return;
        QDir().mkpath(dir);
        QVERIFY(w.grab().save(QDir(dir).filePath(name + QStringLiteral(".png"))));
    }

private Q_SLOTS:
    void theWindowShowsWhereMarksLive() {
        test::RedisServer redis;
        QVERIFY2(redis.start(), qPrintable(redis.error()));
        test::ScriptedSecretStore secrets;
        EngineHost host;
        Engine::Options options;
        options.config = config::demoConfig();
        options.config.marks.store = QStringLiteral("redis");
        options.config.marks.url = redis.url();
        options.demo = true;
        options.secrets = &secrets;
        QString error;
        QVERIFY2(host.start(std::move(options), QStringLiteral("127.0.0.1:0"), &error), qPrintable(error));

        MainWindow::Options windowOptions;
        windowOptions.demo = true;
        windowOptions.tray = false;
        MainWindow window(&host, windowOptions);
        snapshot::SnapshotPublisher *publisher = nullptr;
        host.runBlocking([&publisher](Engine &e) { publisher = new snapshot::SnapshotPublisher(e, 100); });
        connect(publisher, &snapshot::SnapshotPublisher::snapshotReady, &window, &MainWindow::applySnapshot);
        window.resize(1180, 720);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        window.showView(MainWindow::Marks);

        auto *view = window.marksView();
        QVERIFY(test::waitUntil(
            [&]() { return view->storeLabel()->text().contains(QStringLiteral("shared via redis://")); }));
        QVERIFY(!view->table()->isColumnHidden(MarksModel::SetBy));

        // A mark another replica set, as it arrives from Redis, and one of ours.
        host.runBlocking([](Engine &e) {
            failover::MarkInfo theirs;
            theirs.tenant = QStringLiteral("local");
            theirs.provider = QStringLiteral("sim-openai");
            theirs.baseUrl = e.config()->providers.value(QStringLiteral("sim-openai")).baseUrl;
            theirs.model = QStringLiteral("gpt-sim");
            theirs.kind = failover::FailureKind::RateLimited;
            theirs.strikes = 2;
            theirs.ttlMs = 60000;
            theirs.expiresAtMs = e.clock().nowMs() + 60000;
            theirs.lastError = QStringLiteral("429 rate_limit_exceeded");
            theirs.setBy = QStringLiteral("build-box-2-4711");
            e.markTable().apply(theirs);
            failover::UpstreamFailure f;
            f.kind = failover::FailureKind::Transport;
            f.message = QStringLiteral("connection refused");
            e.markTable().mark(QStringLiteral("local"),
                               {QStringLiteral("sim-anthropic"), QStringLiteral("claude-sim"),
                                e.config()->providers.value(QStringLiteral("sim-anthropic")).baseUrl},
                               f);
            Q_EMIT e.marksChanged();
        });
        QVERIFY(test::waitUntil([&]() { return window.marksModel()->rowCount() == 2; }));
        QStringList authors;
        for (int r = 0; r < 2; ++r)
            authors << window.marksModel()->index(r, MarksModel::SetBy).data().toString();
        authors.sort();
        QCOMPARE(authors, (QStringList{QStringLiteral("build-box-2-4711"), QStringLiteral("this replica")}));
        QTest::qWait(300);
        save(window, QStringLiteral("3b-marks-shared"));

        // Redis goes away: the user is told marks stay on this machine.
        redis.kill();
        auto *status = window.findChild<QLabel *>(QStringLiteral("marksStore"), Qt::FindChildrenRecursively);
        QVERIFY(status);
        QVERIFY(test::waitUntil(
            [&]() {
                const auto labels = window.findChildren<QLabel *>(QStringLiteral("marksStore"));
                for (auto *l : labels)
                    if (l->isVisible() && l->text().contains(QStringLiteral("local only (Redis unreachable)")))
                        return true;
                return false;
            },
            8000));
        QTest::qWait(300);
        save(window, QStringLiteral("3c-marks-redis-down"));
        // With the store back to memory (a plain configuration), nothing of this shows.
        view->setStore(QStringLiteral("memory"), false, true);
        QVERIFY(view->table()->isColumnHidden(MarksModel::SetBy));
        QVERIFY(view->storeLabel()->isHidden());
    }
};

QTEST_MAIN(TestMarksStoreView)
#include "test_marks_store_view.moc"
