// Idempotency-Key answers outlive the process (seed 003: one key, one billable interaction).
// They are kept in the usage ledger's file: a retry after a restart, or on a replica sharing
// the file, is answered from it without an upstream call and without a second usage row. What
// the store let go (another body, a stream that broke off) is never replayed, and a gateway
// whose ledger is in memory keeps nothing past itself.

#include "core/telemetry/telemetry.h"
#include "core/telemetry/usage_database.h"
#include "core/telemetry/usage_ledger.h"
#include "fake_clock.h"
#include "gateway_fixture.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QTemporaryDir>
#include <QTest>

#include <limits>

using namespace sw;
using namespace sw::test;
using demo::Fault;

namespace {

Fault resetAfterContent() {
    Fault f;
    f.kind = Fault::ResetAfterContent;
    return f;
}

using Headers = QList<QPair<QByteArray, QByteArray>>;

// A gateway whose usage ledger (and so its kept answers) is the file `ledger`.
void startOn(GatewayFixture &gw, const QString &ledger, util::Clock *clock = nullptr) {
    if (clock)
        gw.clock = clock;
    gw.usageLedgerPath = ledger;
    gw.start();
}

Headers keyed(const QByteArray &key) {
    return {{"Idempotency-Key", key}};
}

int replayRows(const QString &path) {
    telemetry::UsageDatabase db;
    QString error;
    if (!db.open(path, telemetry::UsageDatabase::Mode::ReadOnly, &error))
        return -1;
    qint64 last = 0;
    return int(db.replaysAfter(0, 0, QString(), std::numeric_limits<qint64>::max(), &last).size());
}

} // namespace

class IdempotentReplayFileTest : public QObject {
    Q_OBJECT
private slots:
    void aRetryAfterARestartIsAnsweredFromTheFile() {
        QTemporaryDir dir;
        const QString ledger = dir.filePath(QStringLiteral("usage.sqlite"));
        const QString messages = QStringLiteral("/v1/messages");
        const QJsonObject json = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false);
        const QJsonObject stream = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("y"), true);
        HttpResult firstJson, firstStream;
        {
            GatewayFixture gw;
            startOn(gw, ledger);
            firstJson = gw.post(messages, json, keyed("restart-json"));
            QCOMPARE(firstJson.status, 200);
            firstStream = gw.post(messages, stream, keyed("restart-stream"));
            QCOMPARE(firstStream.status, 200);
            QVERIFY2(firstStream.body.contains("message_stop"), firstStream.body.constData());
            QCOMPARE(gw.anthropicA.requests().size(), 2);
        } // the engine stops: what it kept is in the file
        QCOMPARE(replayRows(ledger), 2);

        GatewayFixture gw;
        startOn(gw, ledger);
        const HttpResult again = gw.post(messages, json, keyed("restart-json"));
        QCOMPARE(again.status, 200);
        QCOMPARE(again.body, firstJson.body);
        QCOMPARE(again.header("x-switchman-idempotent-replay"), QByteArray("true"));
        QCOMPARE(again.header("content-type"), firstJson.header("content-type"));
        const HttpResult againStream = gw.post(messages, stream, keyed("restart-stream"));
        QCOMPARE(againStream.status, 200);
        QCOMPARE(againStream.body, firstStream.body);
        QVERIFY2(againStream.header("content-type").startsWith("text/event-stream"),
                 againStream.header("content-type"));
        QCOMPARE(gw.anthropicA.requests().size(), 0); // no upstream call, so nothing billed twice
        QCOMPARE(gw.engine().telemetry()->attempts(-1).size(), 0);

        // The key still belongs to its first request: another body under it is refused, not answered
        // with the kept one, and not sent upstream.
        const HttpResult other =
            gw.post(messages, GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("z"), false),
                    keyed("restart-json"));
        QCOMPARE(other.status, 422);
        QCOMPARE(gw.anthropicA.requests().size(), 0);
    }

    void aStreamCutAfterContentIsNotKeptAcrossARestart() {
        QTemporaryDir dir;
        const QString ledger = dir.filePath(QStringLiteral("usage.sqlite"));
        const QString messages = QStringLiteral("/v1/messages");
        const QJsonObject direct =
            GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), true);
        {
            GatewayFixture gw;
            gw.anthropicA.setFault(resetAfterContent());
            startOn(gw, ledger);
            const HttpResult cut = gw.post(messages, direct, keyed("cut"));
            QVERIFY2(cut.body.contains("event: error"), cut.body.constData());
        }
        QCOMPARE(replayRows(ledger), 0);
        GatewayFixture gw;
        startOn(gw, ledger);
        const HttpResult retried = gw.post(messages, direct, keyed("cut"));
        QVERIFY2(retried.body.contains("message_stop"), retried.body.constData());
        QVERIFY(retried.header("x-switchman-idempotent-replay").isEmpty());
        QCOMPARE(gw.anthropicA.requests().size(), 1);
    }

    // Replicas sharing a data folder share the file: an answer one kept is replayed by the other
    // within a read (kReplayReadMs), off the request path.
    void aReplicaSharingTheFileReplaysTheOthersAnswer() {
        QTemporaryDir dir;
        const QString ledger = dir.filePath(QStringLiteral("usage.sqlite"));
        const QString chat = QStringLiteral("/v1/chat/completions");
        const QJsonObject body = GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("x"), false);
        test::FakeClock clockA, clockB;
        clockA.setEpochMs(QDateTime::currentMSecsSinceEpoch());
        clockB.setEpochMs(QDateTime::currentMSecsSinceEpoch());
        GatewayFixture a, b;
        startOn(a, ledger, &clockA);
        startOn(b, ledger, &clockB);
        const HttpResult first = a.post(chat, body, keyed("replica-1"));
        QCOMPARE(first.status, 200);
        const int upstreamA = int(a.anthropicA.requests().size() + a.openaiB.requests().size());
        QCOMPARE(upstreamA, 1);
        clockA.advance(telemetry::UsageLedger::kFlushMs); // the answer goes to the file
        a.engine().usageLedger()->flushAndWait();

        clockB.advance(1000); // B reads what others wrote
        b.engine().usageLedger()->flushAndWait();
        QCoreApplication::sendPostedEvents();
        const HttpResult second = b.post(chat, body, keyed("replica-1"));
        QCOMPARE(second.status, 200);
        QCOMPARE(second.body, first.body);
        QCOMPARE(second.header("x-switchman-idempotent-replay"), QByteArray("true"));
        QCOMPARE(b.anthropicA.requests().size() + b.openaiB.requests().size(), 0);

        // B's own answers are not read back as news, and A sees them in turn.
        const QJsonObject other = GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("w"), false);
        const HttpResult fromB = b.post(chat, other, keyed("replica-2"));
        QCOMPARE(fromB.status, 200);
        clockB.advance(telemetry::UsageLedger::kFlushMs);
        b.engine().usageLedger()->flushAndWait();
        clockA.advance(1000);
        a.engine().usageLedger()->flushAndWait();
        QCoreApplication::sendPostedEvents();
        const HttpResult onA = a.post(chat, other, keyed("replica-2"));
        QCOMPARE(onA.body, fromB.body);
        QCOMPARE(onA.header("x-switchman-idempotent-replay"), QByteArray("true"));
        QCOMPARE(int(a.anthropicA.requests().size() + a.openaiB.requests().size()), upstreamA);
        QCOMPARE(replayRows(ledger), 2);
    }

    // The retry a crash provokes is what the key is for: the answer is in the file as soon as it
    // is kept, not with the usage batch a second later (the clock here never reaches it).
    void anAnswerIsInTheFileBeforeTheUsageBatch() {
        QTemporaryDir dir;
        const QString ledger = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clock;
        clock.setEpochMs(QDateTime::currentMSecsSinceEpoch());
        GatewayFixture gw;
        startOn(gw, ledger, &clock);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false),
                         keyed("crash"))
                     .status,
                 200);
        QTRY_COMPARE(replayRows(ledger), 1);
    }

    // Past the Idempotency-Key window an answer is neither loaded nor replayed: the retry runs.
    void anAnswerOlderThanADayIsNotLoaded() {
        QTemporaryDir dir;
        const QString ledger = dir.filePath(QStringLiteral("usage.sqlite"));
        const QString messages = QStringLiteral("/v1/messages");
        const QJsonObject json = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false);
        test::FakeClock clock;
        clock.setEpochMs(QDateTime::currentMSecsSinceEpoch());
        {
            GatewayFixture gw;
            startOn(gw, ledger, &clock);
            QCOMPARE(gw.post(messages, json, keyed("old")).status, 200);
        }
        QCOMPARE(replayRows(ledger), 1);
        clock.advance(24LL * 3600 * 1000 + 1000);
        GatewayFixture gw;
        startOn(gw, ledger, &clock);
        const HttpResult again = gw.post(messages, json, keyed("old"));
        QCOMPARE(again.status, 200);
        QVERIFY(again.header("x-switchman-idempotent-replay").isEmpty());
        QCOMPARE(gw.anthropicA.requests().size(), 1);
        gw.engine().usageLedger()->flushAndWait();
    }
};

QTEST_MAIN(IdempotentReplayFileTest)
#include "test_idempotent_replay_file.moc"
