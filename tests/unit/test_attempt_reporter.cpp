// The failover loop's accounting for one request, as the usage ledger and /admin/usage get it.
#include "core/telemetry/attempt_reporter.h"
#include "core/telemetry/telemetry.h"

#include <QTest>

#include <algorithm>

using namespace sw;

class TestAttemptReporter : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void everyTrysRowNamesTheRouteFromTheStart() {
        // A failed try's row (REQ:a1) is written before its attempt ends, and the route was taken
        // from the attempt rows when the ledger's batch went out: a batch between the two left the
        // try's row without a route, and grouping by route split one request (probe E1 F5).
        telemetry::Telemetry t;
        telemetry::AttemptReporter reporter(t, {QStringLiteral("req_7"), QStringLiteral("team-a"),
                                                QStringLiteral("coding"), QStringLiteral("openai"), QString()});
        failover::UsageReport tried;
        tried.rowId = QStringLiteral("req_7:a1");
        tried.candidate.provider.id = QStringLiteral("pb");
        tried.candidate.model.id = QStringLiteral("gpt-b");
        tried.usage.input = 12;
        tried.usage.output = 3;
        reporter.usageRecorded(tried);
        failover::UsageReport answer = tried;
        answer.rowId = QStringLiteral("req_7");
        answer.answered = true;
        reporter.usageRecorded(answer);
        QCOMPARE(t.usage().size(), 2);
        for (const telemetry::UsageRow &row : t.usage()) {
            QCOMPARE(row.route, QStringLiteral("coding"));
            QCOMPARE(row.tenant, QStringLiteral("team-a"));
        }
        QCOMPARE(t.usage().first().outcome, QStringLiteral("error"));
        QCOMPARE(t.usage().last().outcome, QStringLiteral("ok"));
    }

    void aTenantsRefusalsAreRecordedWithinALimitAndCountedBeyondIt() {
        // 2 100 unknown-model 404s, free to send, pushed every other tenant's records out of the
        // attempts list and wrote a warn line each (probe EV 3). A tenant's refusals are recorded and
        // logged up to the limit in each window; the rest are counted, and said once.
        telemetry::Telemetry t;
        int lines = 0;
        connect(&t, &telemetry::Telemetry::logged, this, [&lines](const telemetry::LogRecord &) { ++lines; });
        const telemetry::RequestFacts alice{QStringLiteral("req_a"), QStringLiteral("alice"), QStringLiteral("nosuch"),
                                            QStringLiteral("openai"), QString()};
        const telemetry::RequestFacts bob{QStringLiteral("req_b"), QStringLiteral("bob"), QStringLiteral("nosuch"),
                                          QStringLiteral("openai"), QString()};
        qint64 now = 1'000'000;
        const int limit = telemetry::Telemetry::kRefusalRecordsPerWindow;
        for (int i = 0; i < limit + 30; ++i)
            telemetry::recordRefusal(t, alice, 404, QStringLiteral("unknown_model"), QStringLiteral("no model"), now);
        telemetry::recordRefusal(t, bob, 404, QStringLiteral("unknown_model"), QStringLiteral("no model"), now);
        const auto records = t.attempts(-1);
        const auto of = [&records](const QString &tenant) {
            return std::count_if(records.begin(), records.end(),
                                 [&](const telemetry::AttemptRecord &r) { return r.tenant == tenant; });
        };
        QCOMPARE(of(QStringLiteral("alice")), limit);
        QCOMPARE(of(QStringLiteral("bob")), 1); // another tenant's is kept
        QCOMPARE(lines, limit + 1 + 1);         // alice's, one "not recorded", bob's
        QVERIFY2(t.metricsText({}).contains(
                     QStringLiteral("switchman_refused_requests_total{status=\"404\"} %1").arg(limit + 31)),
                 qPrintable(t.metricsText({})));
        // The next window records again.
        now += telemetry::Telemetry::kRefusalWindowMs;
        telemetry::recordRefusal(t, alice, 404, QStringLiteral("unknown_model"), QStringLiteral("no model"), now);
        QCOMPARE(t.attempts(-1).size(), limit + 2);
    }
};

QTEST_GUILESS_MAIN(TestAttemptReporter)
#include "test_attempt_reporter.moc"
