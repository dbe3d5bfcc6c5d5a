// The failover loop's accounting for one request, as the usage ledger and /admin/usage get it.
#include "core/telemetry/attempt_reporter.h"
#include "core/telemetry/telemetry.h"

#include <QTest>

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
};

QTEST_GUILESS_MAIN(TestAttemptReporter)
#include "test_attempt_reporter.moc"
