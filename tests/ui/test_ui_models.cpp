// The admin window's models: each checked with QAbstractItemModelTester while
// it is fed the way snapshots feed it, plus what a user sees in the cells.

#include "telemetry_fixtures.h"
#include "ui/attempts/attempts_filter_model.h"
#include "ui/attempts/attempts_model.h"
#include "ui/attempts/request_story.h"
#include "ui/failures/failure_totals_model.h"
#include "ui/log/log_filter_model.h"
#include "ui/log/log_model.h"
#include "ui/marks/marks_model.h"
#include "ui/usage/usage_model.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTest>

using namespace sw;
using namespace sw::ui;

namespace {

telemetry::AttemptRecord attempt(const QString &request, int n, const QString &tenant,
                                 telemetry::AttemptOutcome outcome, const QString &provider,
                                 const QString &failure = {}, int status = 0) {
    telemetry::AttemptRecord a;
    a.requestId = request;
    a.attempt = n;
    a.tenant = tenant;
    a.requestedModel = QStringLiteral("sonnet");
    a.provider = provider;
    a.candidate = provider + QStringLiteral("/m");
    a.outcome = outcome;
    a.failure = failure;
    a.status = status;
    a.elapsedMs = 12;
    a.startedAtEpochMs = 1'700'000'000'000;
    return a;
}

snapshot::MarkRow mark(const QString &tenant, const QString &provider, const QString &model, qint64 remainingMs,
                       int strikes = 1) {
    snapshot::MarkRow r;
    r.info.tenant = tenant;
    r.info.provider = provider;
    r.info.baseUrl = QStringLiteral("http://127.0.0.1:9/") + provider;
    r.info.model = model;
    r.info.kind = model.isEmpty() ? failover::FailureKind::Transport : failover::FailureKind::ServerError;
    r.info.strikes = strikes;
    r.info.ttlMs = 40'000;
    r.info.lastError = QStringLiteral("HTTP 503 overloaded");
    r.remainingMs = remainingMs;
    return r;
}

} // namespace

class TestUiModels : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void attemptsRingKeepsNewestOnTopAndDropsOldest() {
        AttemptsModel model(5);
        AttemptsFilterModel filter;
        filter.setSourceModel(&model);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester filterTester(&filter, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
        QSignalSpy removed(&model, &QAbstractItemModel::rowsRemoved);

        QList<telemetry::AttemptRecord> batch;
        for (int i = 1; i <= 3; ++i)
            batch << attempt(QStringLiteral("req_%1").arg(i), 1, QStringLiteral("alice"),
                             telemetry::AttemptOutcome::Committed, QStringLiteral("anthropic"));
        model.append(batch);
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(inserted.size(), 1); // one batch, one insert
        QCOMPARE(model.index(0, AttemptsModel::Request).data().toString(), QStringLiteral("req_3"));

        batch.clear();
        for (int i = 4; i <= 7; ++i)
            batch << attempt(QStringLiteral("req_%1").arg(i), 1, QStringLiteral("bob"),
                             telemetry::AttemptOutcome::Failed, QStringLiteral("zai"), QStringLiteral("server_error"),
                             503);
        model.append(batch);
        QCOMPARE(model.rowCount(), 5); // bounded
        QCOMPARE(inserted.size(), 2);
        QCOMPARE(removed.size(), 1); // the two oldest fell off in one merged removal
        QCOMPARE(model.index(0, AttemptsModel::Request).data().toString(), QStringLiteral("req_7"));
        QCOMPARE(model.index(4, AttemptsModel::Request).data().toString(), QStringLiteral("req_3"));
        QCOMPARE(model.index(0, AttemptsModel::Status).data().toInt(), 503);
        QCOMPARE(model.index(0, AttemptsModel::Failure).data().toString(), QStringLiteral("server_error"));
        QCOMPARE(model.tenants(), (QStringList{QStringLiteral("alice"), QStringLiteral("bob")}));

        // A batch larger than the ring keeps only its newest.
        batch.clear();
        for (int i = 8; i <= 20; ++i)
            batch << attempt(QStringLiteral("req_%1").arg(i), 1, QStringLiteral("alice"),
                             telemetry::AttemptOutcome::Committed, QStringLiteral("anthropic"));
        model.append(batch);
        QCOMPARE(model.rowCount(), 5);
        QCOMPARE(model.index(0, AttemptsModel::Request).data().toString(), QStringLiteral("req_20"));
        QCOMPARE(model.index(4, AttemptsModel::Request).data().toString(), QStringLiteral("req_16"));
    }

    void attemptsFilterByTenantAndOutcome() {
        AttemptsModel model(100);
        AttemptsFilterModel filter;
        filter.setSourceModel(&model);
        QAbstractItemModelTester tester(&filter, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.append({attempt(QStringLiteral("r1"), 1, QStringLiteral("alice"), telemetry::AttemptOutcome::Failed,
                              QStringLiteral("anthropic"), QStringLiteral("server_error"), 503),
                      attempt(QStringLiteral("r1"), 2, QStringLiteral("alice"), telemetry::AttemptOutcome::Committed,
                              QStringLiteral("zai")),
                      attempt(QStringLiteral("r2"), 1, QStringLiteral("bob"), telemetry::AttemptOutcome::Committed,
                              QStringLiteral("anthropic"))});
        filter.setTenant(QStringLiteral("alice"));
        QCOMPARE(filter.rowCount(), 2);
        filter.setOutcome(QStringLiteral("failed"));
        QCOMPARE(filter.rowCount(), 1);
        QCOMPARE(filter.index(0, AttemptsModel::Candidate).data().toString(), QStringLiteral("anthropic/m"));
        filter.setTenant({});
        filter.setOutcome(QStringLiteral("committed"));
        QCOMPARE(filter.rowCount(), 2);
        // New rows that pass the filter show up live.
        model.append({attempt(QStringLiteral("r3"), 1, QStringLiteral("bob"), telemetry::AttemptOutcome::Committed,
                              QStringLiteral("anthropic"))});
        QCOMPARE(filter.rowCount(), 3);
    }

    void requestReadsAsOneStory() {
        const QList<telemetry::AttemptRecord> attempts{
            attempt(QStringLiteral("r1"), 2, QStringLiteral("alice"), telemetry::AttemptOutcome::Committed,
                    QStringLiteral("zai")),
            attempt(QStringLiteral("r1"), 1, QStringLiteral("alice"), telemetry::AttemptOutcome::Failed,
                    QStringLiteral("anthropic"), QStringLiteral("server_error"), 503)};
        QCOMPARE(RequestStory::line(attempts),
                 QStringLiteral("\u2713 sonnet \u2192 zai/m on attempt 2, anthropic 503"));
        QVERIFY(RequestStory::answered(attempts));
        const QStringList steps = RequestStory::steps(attempts);
        QCOMPARE(steps.size(), 2);
        QVERIFY(steps.first().startsWith(QStringLiteral("Attempt 1: anthropic/m")));
        const auto failed = QList<telemetry::AttemptRecord>{attempts.at(1)};
        QVERIFY(!RequestStory::answered(failed));
        QVERIFY(RequestStory::line(failed).contains(QStringLiteral("unanswered")));
        // A candidate passed over for its mark was not asked: the line says so, not that it failed
        // (probe K1 11: "dead transport" beside a Failures panel that counted none).
        auto skipped = attempts.at(1);
        skipped.outcome = telemetry::AttemptOutcome::Skipped;
        skipped.status = 0;
        skipped.failure = QStringLiteral("transport");
        QCOMPARE(RequestStory::line({attempts.at(0), skipped}),
                 QStringLiteral("\u2713 sonnet \u2192 zai/m on attempt 2, anthropic skipped (transport)"));

        // A request the gateway refused itself (a budget, an unknown model) asked no upstream: it
        // reads as the gateway's refusal with its reason, not as an outage ("unanswered: 429").
        const auto refused =
            test::refusedRecord(QStringLiteral("r9"), QStringLiteral("tenant alice is over its budget"));
        QCOMPARE(RequestStory::line({refused}),
                 QStringLiteral("\u2298 sonnet refused by the gateway: budget (HTTP 429)"));
        QCOMPARE(RequestStory::steps({refused}),
                 QStringList{QStringLiteral("Refused by the gateway before any upstream (budget, HTTP 429): tenant "
                                            "alice is over its budget")});
    }

    void marksCountDownOnTheirOwnClock() {
        qint64 now = 5'000'000;
        MarksModel model;
        model.setWallClock([&now]() { return now; });
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy count(&model, &MarksModel::countChanged);
        model.applySnapshot(
            {mark(QStringLiteral("alice"), QStringLiteral("anthropic"), QStringLiteral("sonnet"), 38'000),
             mark(QStringLiteral("bob"), QStringLiteral("zai"), QString(), 3'000)},
            now);
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(count.size(), 1);
        QCOMPARE(model.index(0, MarksModel::Expires).data().toString(), QStringLiteral("0:38"));
        QCOMPARE(model.index(1, MarksModel::Scope).data().toString(),
                 QStringLiteral("every model at http://127.0.0.1:9/zai"));
        QCOMPARE(model.index(1, MarksModel::Kind).data().toString(), QStringLiteral("transport"));

        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        now += 1'000;
        model.tick();
        QCOMPARE(model.index(0, MarksModel::Expires).data().toString(), QStringLiteral("0:37"));
        QCOMPARE(changed.size(), 1); // one merged range for the countdown column
        now += 5'000;
        model.tick();
        QCOMPARE(model.index(0, MarksModel::Expires).data().toString(), QStringLiteral("0:32"));
        QCOMPARE(model.rowCount(), 1); // bob's 3 s mark ran out and went away
        QCOMPARE(model.index(0, MarksModel::Tenant).data().toString(), QStringLiteral("alice"));

        // A later snapshot extends the mark in place (same row, new expiry).
        model.applySnapshot(
            {mark(QStringLiteral("alice"), QStringLiteral("anthropic"), QStringLiteral("sonnet"), 80'000, 2)}, now);
        QCOMPARE(model.rowCount(), 1);
        QCOMPARE(model.index(0, MarksModel::Expires).data().toString(), QStringLiteral("1:20"));
        QCOMPARE(model.index(0, MarksModel::Strikes).data().toInt(), 2);

        // An upstream's error text is shown as its characters: Qt draws a tooltip that looks like HTML as
        // HTML, and an upstream could put a fake "healthy" heading or an image there (probe D2).
        snapshot::MarkRow page = mark(QStringLiteral("alice"), QStringLiteral("zai"), QString(), 10'000);
        page.info.lastError = QStringLiteral("<h1>All providers healthy</h1><img src=\"x\">");
        model.applySnapshot({page}, now);
        const QString tip = model.index(0, MarksModel::LastError).data(Qt::ToolTipRole).toString();
        QVERIFY2(tip.contains(QStringLiteral("&lt;h1&gt;All providers healthy&lt;/h1&gt;")), qPrintable(tip));
        QVERIFY2(!tip.contains(QStringLiteral("<h1>")) && !tip.contains(QStringLiteral("<img")), qPrintable(tip));
    }

    void clearedMarksStayGoneUntilTheEngineConfirms() {
        qint64 now = 5'000'000;
        MarksModel model;
        model.setWallClock([&now]() { return now; });
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        const auto a = mark(QStringLiteral("alice"), QStringLiteral("anthropic"), QStringLiteral("sonnet"), 38'000);
        const auto b = mark(QStringLiteral("alice"), QStringLiteral("openai"), QStringLiteral("gpt"), 38'000);
        const auto c = mark(QStringLiteral("bob"), QStringLiteral("anthropic"), QStringLiteral("sonnet"), 38'000);
        model.applySnapshot({a, b, c}, now - 100);
        failover::MarkFilter alice;
        alice.tenant = QStringLiteral("alice");
        model.removeMatching(alice);
        QCOMPARE(model.rowCount(), 1);
        // A snapshot the engine took before the clear arrives late: it must not bring them back.
        model.applySnapshot({a, b, c}, now - 50);
        QCOMPARE(model.rowCount(), 1);
        // After the clear, the engine's snapshot is the truth again (a new failure marks anew).
        now += 1000;
        model.applySnapshot({a, c}, now);
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.filterFor(0).tenant, QStringLiteral("bob"));
    }

    void usageTotalsPerKey() {
        UsageModel model(QStringLiteral("Tenant"));
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QMap<QString, snapshot::UsageTotals> totals;
        totals[QStringLiteral("bob")] = {1, 100, 20, 0, 0, 0.001};
        model.setTotals(totals);
        totals[QStringLiteral("alice")] = {2, 1000, 200, 0, 0, 0.0123};
        totals[QStringLiteral("bob")].input += 50;
        model.setTotals(totals);
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.index(0, UsageModel::Name).data().toString(), QStringLiteral("alice"));
        QCOMPARE(model.index(1, UsageModel::Input).data(Qt::UserRole).toLongLong(), 150);
        QCOMPARE(model.index(0, UsageModel::Cost).data().toString(), QStringLiteral("$0.0123"));
        QCOMPARE(model.total().attempts, 3);
        totals.remove(QStringLiteral("bob"));
        model.setTotals(totals);
        QCOMPARE(model.rowCount(), 1);
    }

    void failureTotalsMatchTheMetricsCounter() {
        FailureTotalsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QHash<QString, qint64> totals;
        totals[QStringLiteral("zai") + QChar(0x1f) + QStringLiteral("transport")] = 2;
        model.setTotals(totals);
        totals[QStringLiteral("anthropic") + QChar(0x1f) + QStringLiteral("server_error")] = 5;
        model.setTotals(totals);
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.index(0, FailureTotalsModel::Provider).data().toString(), QStringLiteral("anthropic"));
        QCOMPARE(model.index(0, FailureTotalsModel::Failure).data().toString(), QStringLiteral("server_error"));
        QCOMPARE(model.count(QStringLiteral("anthropic"), QStringLiteral("server_error")), 5);
        QCOMPARE(model.total(), 7);
    }

    void logFiltersByLevelAndSearch() {
        LogModel model(3);
        LogFilterModel filter;
        filter.setSourceModel(&model);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester filterTester(&filter, QAbstractItemModelTester::FailureReportingMode::QtTest);
        auto line = [](const QString &level, const QString &msg, const QString &provider) {
            return QJsonObject{{QStringLiteral("ts"), QStringLiteral("2026-11-29T20:00:00.000Z")},
                               {QStringLiteral("level"), level},
                               {QStringLiteral("msg"), msg},
                               {QStringLiteral("resolvedProvider"), provider}};
        };
        model.append({line(QStringLiteral("info"), QStringLiteral("listening"), QString()),
                      line(QStringLiteral("warn"), QStringLiteral("candidate failover"), QStringLiteral("anthropic")),
                      line(QStringLiteral("warn"), QStringLiteral("candidate failover"), QStringLiteral("zai"))});
        QCOMPARE(filter.rowCount(), 3);
        filter.setMinimumLevel(1);
        QCOMPARE(filter.rowCount(), 2);
        filter.setSearchText(QStringLiteral("ZAI"));
        QCOMPARE(filter.rowCount(), 1);
        QVERIFY(filter.index(0, LogModel::Details).data().toString().contains(QStringLiteral("resolvedProvider=zai")));
        filter.setSearchText({});
        model.append({line(QStringLiteral("error"), QStringLiteral("boom"), QString())});
        QCOMPARE(model.rowCount(), 3); // bounded
        QCOMPARE(model.index(0, LogModel::Message).data().toString(), QStringLiteral("boom"));
        filter.setMinimumLevel(2);
        QCOMPARE(filter.rowCount(), 1);
    }
};

QTEST_MAIN(TestUiModels)
#include "test_ui_models.moc"
