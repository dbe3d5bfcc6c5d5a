// The engine-thread SnapshotPublisher: what the GUI sees must be what the
// engine did (attempts, marks with remaining TTL, /metrics failure counters,
// usage) and it must arrive batched, a few snapshots per second at most.

#include "core/snapshot/snapshot_publisher.h"
#include "core/telemetry/telemetry.h"
#include "gateway_fixture.h"
#include "signal_wait.h"

#include <QElapsedTimer>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTest>

using namespace sw;

class TestSnapshotPublisher : public QObject {
    Q_OBJECT
    // A publisher on the engine (it dies with the engine), every snapshot it sends appended to `seen`.
    snapshot::SnapshotPublisher *collect(test::GatewayFixture &gw, QList<snapshot::EngineSnapshot> &seen) {
        auto *publisher = new snapshot::SnapshotPublisher(gw.engine(), 250);
        connect(publisher, &snapshot::SnapshotPublisher::snapshotReady, this,
                [&seen](const snapshot::EngineSnapshot &s) { seen << s; });
        return publisher;
    }

private Q_SLOTS:
    // With the window the log goes to no stderr, and the publisher is made after the start: the
    // start's lines ("usage: N answers cut by a crash billed by estimate", "listening") reached no
    // one (probe AB4 F3). They wait in the engine, a bounded number, until taken.
    void theStartsLinesWaitForTheWindow() {
        test::GatewayFixture gw;
        gw.start();
        const QList<QJsonObject> early = gw.engine().takeEarlyLog();
        QStringList messages;
        for (const QJsonObject &line : early)
            messages << line.value(QStringLiteral("msg")).toString();
        QVERIFY2(messages.contains(QStringLiteral("listening")), qPrintable(messages.join(QLatin1Char('|'))));
        // Taken once: what follows reaches the publisher, and is kept here no more.
        gw.engine().telemetry()->log(QStringLiteral("info"), QStringLiteral("after the window"));
        QVERIFY(gw.engine().takeEarlyLog().isEmpty());

        // Never taken (a window that did not come), the engine keeps the first lines only.
        test::GatewayFixture busy;
        busy.start();
        for (int i = 0; i < 3 * Engine::kEarlyLogLines; ++i)
            busy.engine().telemetry()->log(QStringLiteral("info"), QStringLiteral("line %1").arg(i));
        const QList<QJsonObject> kept = busy.engine().takeEarlyLog();
        QCOMPARE(kept.size(), Engine::kEarlyLogLines);
        int startLines = 0; // logged by the start, before the loop's
        for (const QJsonObject &line : kept)
            startLines += line.value(QStringLiteral("msg")).toString().startsWith(QLatin1String("line ")) ? 0 : 1;
        QCOMPARE(kept.last().value(QStringLiteral("msg")).toString(),
                 QStringLiteral("line %1").arg(Engine::kEarlyLogLines - startLines - 1));
    }

    void snapshotsCarryWhatTheEngineDid() {
        test::GatewayFixture gw;
        gw.start();
        QList<snapshot::EngineSnapshot> seen;
        auto *publisher = collect(gw, seen);

        gw.anthropicA.setFault(demo::Fault{demo::Fault::Status, 503, "7", {}, {}, 0, {}});
        for (int i = 0; i < 3; ++i)
            QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                             test::GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("hi"), false))
                         .status,
                     200);
        seen.clear();
        publisher->publishNow();
        QCOMPARE(seen.size(), 1);
        const auto s = seen.first();
        QCOMPARE(s.baseUrl, gw.baseUrl());
        QVERIFY(!s.paused);
        QCOMPARE(s.requestsPerMinute, 3);
        // Every attempt since the last snapshot, oldest first: 503 then the follower, per request
        // (later requests skip the marked candidate).
        QVERIFY(s.newAttempts.size() >= 4);
        QCOMPARE(s.newAttempts.first().outcome, telemetry::AttemptOutcome::Failed);
        QCOMPARE(s.newAttempts.first().status, 503);
        QCOMPARE(s.newAttempts.at(1).outcome, telemetry::AttemptOutcome::Committed);
        // The mark, with its remaining TTL at snapshot time.
        QCOMPARE(s.marks.size(), 1);
        QCOMPARE(s.marks.first().info.provider, QStringLiteral("pa"));
        QVERIFY(s.marks.first().remainingMs > 15'000 && s.marks.first().remainingMs <= 20'000);
        // The /metrics counter, and the per-minute buckets add up to it.
        const QString key = QStringLiteral("pa") + QChar(0x1f) + QStringLiteral("server_error");
        QCOMPARE(s.failureTotals.value(key), gw.engine().telemetry()->failureCounts().value(key));
        QVERIFY(gw.engine().telemetry()->metricsText({}).contains(
            QStringLiteral("switchman_candidate_failures_total{provider=\"pa\",failure=\"server_error\"} %1")
                .arg(s.failureTotals.value(key))));
        qint64 bucketed = 0;
        for (const auto &m : s.failuresByMinute)
            bucketed += m.counts.value(key);
        QCOMPARE(bucketed, s.failureTotals.value(key));
        QVERIFY(s.config);
        QVERIFY(s.config->routes.contains(QStringLiteral("chain")));

        // Nothing new: the next snapshot carries no attempts again.
        seen.clear();
        publisher->publishNow();
        QVERIFY(seen.first().newAttempts.isEmpty());
        QCOMPARE(seen.first().marks.size(), 1);
    }

    // A request the gateway refuses itself reaches the window as one "refused" record (the
    // Attempts view and "Last requests" show it) and counts in req/min; it is not an outage, so
    // the header is not turned to "a request got no answer from any candidate".
    void aRefusedRequestReachesTheWindowWithoutAnError() {
        test::GatewayFixture gw;
        gw.start();
        QList<snapshot::EngineSnapshot> seen;
        auto *publisher = collect(gw, seen);
        const test::HttpResult refused =
            gw.post(QStringLiteral("/v1/messages"),
                    test::GatewayFixture::anthropicBody(QStringLiteral("nosuch-model"), QStringLiteral("hi"), false));
        QCOMPARE(refused.status, 404);
        seen.clear();
        publisher->publishNow();
        QCOMPARE(seen.size(), 1);
        const auto s = seen.first();
        QCOMPARE(s.newAttempts.size(), 1);
        const telemetry::AttemptRecord &a = s.newAttempts.first();
        QCOMPARE(a.requestId, QString::fromLatin1(refused.header("x-switchman-request-id")));
        QCOMPARE(a.outcome, telemetry::AttemptOutcome::Refused);
        QCOMPARE(a.requestedModel, QStringLiteral("nosuch-model"));
        QCOMPARE(a.status, 404);
        QVERIFY(a.candidate.isEmpty());
        QCOMPARE(s.requestsPerMinute, 1);
        QCOMPARE(s.lastUnansweredWallMs, 0);
        bool logged = false;
        for (const auto &l : s.newLogLines)
            logged = logged || (l.value(QStringLiteral("msg")).toString() == QStringLiteral("request refused") &&
                                l.value(QStringLiteral("requestId")).toString() == a.requestId);
        QVERIFY(logged);
    }

    void atMostAFewSnapshotsPerSecondUnderLoad() {
        test::GatewayFixture gw;
        gw.start();
        auto *publisher = new snapshot::SnapshotPublisher(gw.engine(), 250);
        QSignalSpy spy(publisher, &snapshot::SnapshotPublisher::snapshotReady);
        QElapsedTimer t;
        t.start();
        int sent = 0;
        while (t.elapsed() < 1500) {
            QList<QNetworkReply *> replies;
            for (int i = 0; i < 8; ++i)
                replies << gw.postAsync(
                    QStringLiteral("/v1/messages"),
                    test::GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
            for (auto *r : replies)
                gw.wait(r);
            sent += 8;
        }
        const double seconds = double(t.elapsed()) / 1000.0;
        QVERIFY(sent >= 16);
        QVERIFY2(spy.size() <= int(seconds * 4) + 2, qPrintable(QString::number(spy.size())));
        publisher->publishNow(); // whatever is still pending
        int attempts = 0;
        for (const auto &args : spy)
            attempts += int(args.first().value<snapshot::EngineSnapshot>().newAttempts.size());
        QCOMPARE(attempts, sent); // batched, none lost
    }
};

QTEST_MAIN(TestSnapshotPublisher)
#include "test_snapshot_publisher.moc"
