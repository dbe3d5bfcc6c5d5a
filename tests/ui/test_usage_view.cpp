// The Usage screen over a real engine whose ledger holds a week of seeded rows:
// per tenant / provider / model tables, the cost-per-day chart, the
// budget line and the 80 % notice in the window and tray, and "Export CSV…".
// With SWITCHMAN_SCREENSHOT_DIR set it saves docs/screenshots/5-usage.png.

#include "core/engine_host.h"
#include "core/snapshot/snapshot_publisher.h"
#include "core/telemetry/usage_ledger.h"
#include "core/util/clock.h"
#include "signal_wait.h"
#include "ui/main_window.h"
#include "ui/tray/tray_controller.h"
#include "ui/usage/usage_model.h"
#include "ui/usage/usage_view.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>

#include <csignal>
#include <sys/resource.h>

using namespace sw;
using namespace sw::ui;

namespace {

struct Seed {
    int daysAgo;
    int hour;
    const char *tenant;
    const char *candidate;
    qint64 input;
    qint64 output;
    double cost;
};

// A week of an ordinary team: two tenants and CI, three providers; today team-a is at 85 % of its $20.
const Seed kSeeds[] = {
    {6, 10, "team-a", "anthropic/claude-sonnet-4-5", 410'000, 52'000, 4.10},
    {6, 15, "ci-bots", "openai/gpt-4.1-mini", 900'000, 80'000, 0.52},
    {5, 9, "team-a", "anthropic/claude-sonnet-4-5", 620'000, 71'000, 6.20},
    {5, 11, "team-b", "openai/gpt-4.1", 300'000, 40'000, 2.90},
    {4, 14, "team-b", "google/gemini-2.5-pro", 500'000, 61'000, 3.75},
    {3, 10, "team-a", "anthropic/claude-sonnet-4-5", 1'100'000, 130'000, 11.40},
    {3, 16, "ci-bots", "openai/gpt-4.1-mini", 1'400'000, 90'000, 0.81},
    {2, 12, "team-b", "openai/gpt-4.1", 450'000, 51'000, 4.30},
    {1, 9, "team-a", "anthropic/claude-sonnet-4-5", 800'000, 95'000, 8.60},
    {1, 17, "team-b", "google/gemini-2.5-pro", 260'000, 30'000, 1.95},
    {0, 0, "team-a", "anthropic/claude-sonnet-4-5", 1'500'000, 180'000, 17.00},
    {0, 0, "ci-bots", "openai/gpt-4.1-mini", 700'000, 50'000, 0.40},
};

qint64 seedTime(const Seed &s) {
    const QDateTime now = QDateTime::currentDateTime();
    if (s.daysAgo == 0) { // today: a moment already past, whatever the hour the test runs
        // A minute ago, but never before today's midnight: a run in the first minute of a day put
        // "today" in yesterday, and the daily budget's notice never came.
        const qint64 nowMs = now.toMSecsSinceEpoch();
        const qint64 midnight = now.date().startOfDay().toMSecsSinceEpoch();
        const qint64 at = std::max(nowMs - 60'000, midnight + (nowMs - midnight) / 2);
        return at - (QString::fromLatin1(s.tenant) == QLatin1String("ci-bots")
                         ? std::min<qint64>(1000, (at - midnight) / 2)
                         : 0);
    }
    return QDateTime(now.date().addDays(-s.daysAgo), QTime(s.hour, 0)).toMSecsSinceEpoch();
}

config::TenantConfig tenant(const char *name, std::optional<config::BudgetConfig> budget = std::nullopt) {
    config::TenantConfig t;
    t.name = QString::fromLatin1(name);
    const QByteArray key = QByteArray("ui-test-") + name + QByteArray::number(QRandomGenerator::global()->generate64());
    t.keyHashes = {QStringLiteral("sha256:") +
                   QString::fromLatin1(QCryptographicHash::hash(key, QCryptographicHash::Sha256).toHex())};
    t.budget = budget;
    return t;
}

} // namespace

class TestUsageView : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Probe AB4 F4: a day of $0.006 had its cost axis labelled "$0.00, $0.00, $0.00, $0.01, $0.01":
    // each label now names its own tick, with the decimals the step needs.
    void aFewCentsADayHaveAnAxisThatReadsThem() {
        QTemporaryDir dir;
        const QString ledgerPath = dir.filePath(QStringLiteral("usage.sqlite"));
        {
            telemetry::UsageLedger seed({ledgerPath, 400, 0, {}}, util::systemClock(),
                                        [](const QString &, const QString &, const QJsonObject &) {});
            telemetry::UsageRow r;
            r.requestId = QStringLiteral("req_small");
            r.tenant = QStringLiteral("local");
            r.candidate = QStringLiteral("openai/gpt-4.1-mini");
            r.provider = QStringLiteral("openai");
            r.input = 4000;
            r.output = 200;
            r.cost = 0.006;
            r.outcome = QStringLiteral("ok");
            r.atEpochMs = seedTime({0, 0, "local", "openai/gpt-4.1-mini", 0, 0, 0});
            seed.append(r);
        }
        EngineHost host;
        Engine::Options options;
        options.config.listen = QStringLiteral("127.0.0.1:0");
        options.usageLedgerPath = ledgerPath;
        QString error;
        QVERIFY2(host.start(std::move(options), QString(), &error), qPrintable(error));
        MainWindow::Options windowOptions;
        windowOptions.tray = false;
        MainWindow window(&host, windowOptions);
        window.resize(1180, 760);
        window.show();
        window.showView(MainWindow::Usage);
        UsageView *view = window.usageView();
        QVERIFY(test::waitUntil([view]() { return view->chartCosts().size() == 7 && view->chartCosts().last() > 0; }));
        const QStringList labels = view->costAxisLabels();
        QCOMPARE(labels, (QStringList{QStringLiteral("$0.000"), QStringLiteral("$0.002"), QStringLiteral("$0.004"),
                                      QStringLiteral("$0.006"), QStringLiteral("$0.008")}));
        const QString shots = qEnvironmentVariable("SWITCHMAN_SCREENSHOT_DIR");
        if (!shots.isEmpty())
            QVERIFY(window.grab().save(QDir(shots).filePath(QStringLiteral("usage-small-spend.png"))));
    }

    void aWeekOfUsageAfterARestart() {
        QTemporaryDir dir;
        const QString ledgerPath = dir.filePath(QStringLiteral("usage.sqlite"));
        {
            // What an earlier run left in the ledger.
            telemetry::UsageLedger seed({ledgerPath, 400, 0, {}}, util::systemClock(),
                                        [](const QString &, const QString &, const QJsonObject &) {});
            int n = 0;
            for (const Seed &s : kSeeds) {
                telemetry::UsageRow r;
                r.requestId = QStringLiteral("req_seed%1").arg(++n);
                r.tenant = QString::fromLatin1(s.tenant);
                r.route = QStringLiteral("coding");
                r.candidate = QString::fromLatin1(s.candidate);
                r.provider = r.candidate.section(QLatin1Char('/'), 0, 0);
                r.input = s.input;
                r.output = s.output;
                r.cacheRead = s.input / 3;
                r.cost = s.cost;
                r.outcome = QStringLiteral("ok");
                r.atEpochMs = seedTime(s);
                seed.append(r);
            }
        }

        EngineHost host;
        Engine::Options options;
        options.config.listen = QStringLiteral("127.0.0.1:0");
        options.config.tenants.insert(QStringLiteral("team-a"),
                                      tenant("team-a", config::BudgetConfig{20, QStringLiteral("day")}));
        options.config.tenants.insert(QStringLiteral("team-b"),
                                      tenant("team-b", config::BudgetConfig{150, QStringLiteral("month")}));
        options.config.tenants.insert(QStringLiteral("ci-bots"), tenant("ci-bots"));
        options.usageLedgerPath = ledgerPath;
        QString error;
        QVERIFY2(host.start(std::move(options), QString(), &error), qPrintable(error));

        MainWindow::Options windowOptions;
        windowOptions.tray = false;
        MainWindow window(&host, windowOptions);
        snapshot::SnapshotPublisher *publisher = nullptr;
        host.runBlocking([&publisher](Engine &e) { publisher = new snapshot::SnapshotPublisher(e, 100); });
        connect(publisher, &snapshot::SnapshotPublisher::snapshotReady, &window, &MainWindow::applySnapshot);
        host.post([publisher](Engine &) { publisher->publishNow(); });
        window.resize(1180, 760);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        window.showView(MainWindow::Usage);
        UsageView *view = window.usageView();

        // The 80 % notice of team-a's daily budget (its spend was read back from the ledger at start).
        QVERIFY(test::waitUntil([&window]() { return !window.budgetNotice().isEmpty(); }));
        QVERIFY2(window.budgetNotice().contains(QStringLiteral("team-a")), qPrintable(window.budgetNotice()));
        QVERIFY2(window.budgetNotice().contains(QStringLiteral("85 %")), qPrintable(window.budgetNotice()));
        QVERIFY2(window.tray()->lastBudgetNotice().contains(QStringLiteral("$20.00 per day")),
                 qPrintable(window.tray()->lastBudgetNotice()));

        // Week, per tenant: the seeded totals.
        QVERIFY(test::waitUntil([view]() { return view->table()->rowCount() == 3 && view->chartCosts().size() == 7; }));
        QCOMPARE(view->table()->index(0, UsageModel::Name).data().toString(), QStringLiteral("ci-bots"));
        QCOMPARE(view->table()->index(1, UsageModel::Name).data().toString(), QStringLiteral("team-a"));
        QCOMPARE(view->table()->index(1, UsageModel::Attempts).data(Qt::UserRole).toLongLong(), 5);
        QCOMPARE(view->table()->index(1, UsageModel::Cost).data(Qt::UserRole).toDouble(),
                 4.10 + 6.20 + 11.40 + 8.60 + 17.00);
        const QList<double> perDay = view->chartCosts();
        const QList<double> expected{4.10 + 0.52, 6.20 + 2.90, 3.75, 11.40 + 0.81, 4.30, 8.60 + 1.95, 17.00 + 0.40};
        for (int i = 0; i < 7; ++i)
            QVERIFY2(qAbs(perDay.at(i) - expected.at(i)) < 1e-9,
                     qPrintable(QStringLiteral("day %1: %2 != %3").arg(i).arg(perDay.at(i)).arg(expected.at(i))));
        QCOMPARE(view->chartDays().last(), QDate::currentDate().toString(Qt::ISODate));

        // Day, per model: today only.
        view->setRange(UsageView::Day);
        view->setPer(UsageView::PerModel);
        QVERIFY(test::waitUntil([view]() {
            return view->table()->headerData(UsageModel::Name, Qt::Horizontal).toString() == QLatin1String("Model") &&
                   view->table()->rowCount() == 2 && view->chartCosts().size() == 1;
        }));
        QCOMPARE(view->table()->index(0, UsageModel::Name).data().toString(),
                 QStringLiteral("anthropic/claude-sonnet-4-5") /* provider/id */);
        QCOMPARE(view->chartCosts().size(), 1);

        // Export CSV: the table as shown.
        const QString csvPath = dir.filePath(QStringLiteral("usage.csv"));
        QVERIFY(view->exportCsv(csvPath));
        QFile csv(csvPath);
        QVERIFY(csv.open(QIODevice::ReadOnly));
        QCOMPARE(QString::fromUtf8(csv.readAll()),
                 QStringLiteral("model,attempts,input,output,cacheRead,cacheWrite,cost\r\n"
                                "anthropic/claude-sonnet-4-5,1,1500000,180000,500000,0,17.000000\r\n"
                                "openai/gpt-4.1-mini,1,700000,50000,233333,0,0.400000\r\n"));
        csv.close();

        // The picture: a week per provider, with the budget notice and line.
        view->setRange(UsageView::Week);
        view->setPer(UsageView::PerProvider);
        QVERIFY(test::waitUntil([view]() {
            return view->table()->headerData(UsageModel::Name, Qt::Horizontal).toString() ==
                       QLatin1String("Provider") &&
                   view->table()->rowCount() == 3 && view->chartCosts().size() == 7;
        }));
        QTest::qWait(300);
        const QString shots = qEnvironmentVariable("SWITCHMAN_SCREENSHOT_DIR");
        if (!shots.isEmpty()) {
            QDir().mkpath(shots);
            QVERIFY(window.grab().save(QDir(shots).filePath(QStringLiteral("5-usage.png"))));
        }
        host.stop();
        // Exported again onto a full disk (RLIMIT_FSIZE fails the write the same way, without
        // root): said, and the file there before is kept, not replaced by an empty one. With the
        // engine stopped, so that no ledger write meets the limit.
        const QByteArray exported = [&csvPath] {
            QFile f(csvPath);
            return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
        }();
        struct rlimit old {};
        QCOMPARE(getrlimit(RLIMIT_FSIZE, &old), 0);
        const auto oldHandler = std::signal(SIGXFSZ, SIG_IGN);
        struct rlimit limited = old;
        limited.rlim_cur = 16;
        QCOMPARE(setrlimit(RLIMIT_FSIZE, &limited), 0);
        QString exportError;
        const bool exportedAgain = view->exportCsv(csvPath, &exportError);
        setrlimit(RLIMIT_FSIZE, &old);
        std::signal(SIGXFSZ, oldHandler);
        QVERIFY(!exportedAgain);
        QVERIFY2(exportError.contains(csvPath) &&
                     exportError.contains(QStringLiteral("too large"), Qt::CaseInsensitive),
                 qPrintable(exportError));
        QVERIFY(csv.open(QIODevice::ReadOnly));
        QCOMPARE(csv.readAll(), exported);
    }
};

QTEST_MAIN(TestUsageView)
#include "test_usage_view.moc"
