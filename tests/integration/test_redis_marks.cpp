// Marks shared through a real, private redis-server by two replicas in one
// process (each its own mark table, clock and connections). Local time runs on
// fake clocks and the shared wall clock is injected, so the ladder and the
// strike reset are exact; only the Redis round trips are real I/O.

#include "core/failover/provider_down_marks.h"
#include "core/redis/redis_mark_sync.h"
#include "core/telemetry/telemetry.h"
#include "fake_clock.h"
#include "gateway_fixture.h"
#include "redis_server.h"
#include "signal_wait.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTest>
#include <csignal>
#include <memory>

using namespace sw;
using failover::FailureKind;

namespace {
const failover::CandidateRef kA{QStringLiteral("pa"), QStringLiteral("claude-a"), QStringLiteral("http://127.0.0.1:1")};
const failover::CandidateRef kB{QStringLiteral("pa"), QStringLiteral("claude-b"), QStringLiteral("http://127.0.0.1:1")};

failover::UpstreamFailure failure(FailureKind kind, std::optional<qint64> retryAfter = std::nullopt) {
    failover::UpstreamFailure f;
    f.kind = kind;
    f.status = kind == FailureKind::RateLimited ? 429 : 503;
    f.retryAfterMs = retryAfter;
    f.message = QStringLiteral("upstream said no");
    return f;
}

config::Config configOfA() {
    config::Config cfg;
    config::ProviderConfig provider;
    provider.id = kA.provider;
    provider.baseUrl = kA.baseUrl;
    cfg.providers.insert(provider.id, provider);
    config::ModelConfig model;
    model.provider = kA.provider;
    model.id = kA.modelId;
    cfg.models.insert(model.key(), model);
    return cfg;
}

config::TenantConfig tenant(const QString &name) {
    config::TenantConfig t;
    t.name = name;
    return t;
}

struct Replica {
    test::FakeClock clock;
    failover::ProviderDownMarks marks{clock};
    std::unique_ptr<redis::RedisMarkSync> sync;
    QStringList logs;
    int changes = 0; // marks applied from Redis (script answers and published messages)

    Replica(const QString &url, const QString &id, qint64 *wall, util::Clock *connectionClock = nullptr,
            std::function<bool(const failover::MarkInfo &)> accepts = {}) {
        redis::RedisMarkSync::Options o;
        o.endpoint = *redis::RedisEndpoint::parse(url, nullptr);
        o.prefix = QStringLiteral("t");
        o.replicaId = id;
        o.wallClock = [wall]() { return *wall; };
        o.heartbeatMs = 200;
        o.connectionClock = connectionClock;
        o.accepts = std::move(accepts);
        o.log = [this](const QString &level, const QString &message, const QJsonObject &) {
            logs.append(level + QLatin1Char(' ') + message);
        };
        sync = std::make_unique<redis::RedisMarkSync>(marks, clock, o);
        QObject::connect(sync.get(), &redis::RedisMarkSync::marksChanged, sync.get(), [this]() { ++changes; });
        sync->start();
    }
    std::optional<failover::MarkInfo> mark(const QString &tenant = QStringLiteral("alice")) const {
        for (const auto &m : marks.active())
            if (m.tenant == tenant && m.provider == kA.provider)
                return m;
        return std::nullopt;
    }
};
// A TCP relay to Redis whose links can stall: while stalled nothing is passed either way, and
// what a client wrote (and then closed on) reaches Redis once it goes on, as from a network
// partition that kept the connection (a stalled load balancer or NAT, a paused proxy).
class StallingRelay : public QObject {
public:
    explicit StallingRelay(quint16 redisPort) : m_redisPort(redisPort) {
        m_server.listen(QHostAddress::LocalHost);
        QObject::connect(&m_server, &QTcpServer::newConnection, this, [this]() {
            while (QTcpSocket *client = m_server.nextPendingConnection()) {
                auto *redis = new QTcpSocket(this);
                client->setParent(this);
                m_links.append(std::make_pair(client, redis));
                QObject::connect(client, &QTcpSocket::readyRead, this, [this]() { pump(); });
                QObject::connect(redis, &QTcpSocket::readyRead, this, [this]() { pump(); });
                QObject::connect(redis, &QTcpSocket::connected, this, [this]() { pump(); });
                QObject::connect(client, &QTcpSocket::disconnected, this, [this]() { pump(); });
                redis->connectToHost(QHostAddress::LocalHost, m_redisPort);
            }
        });
    }
    QString url() const { return QStringLiteral("redis://127.0.0.1:%1/0").arg(m_server.serverPort()); }
    void stall() { m_stalled = true; }
    void goOn() {
        m_stalled = false;
        pump();
    }

private:
    void pump() {
        if (m_stalled)
            return;
        for (const auto &[client, redis] : std::as_const(m_links)) {
            if (redis->state() != QAbstractSocket::ConnectedState)
                continue;
            if (client->bytesAvailable() > 0)
                redis->write(client->readAll());
            if (redis->bytesAvailable() > 0 && client->state() == QAbstractSocket::ConnectedState)
                client->write(redis->readAll());
            if (client->state() != QAbstractSocket::ConnectedState && client->bytesAvailable() == 0)
                redis->disconnectFromHost(); // after what it holds is written
        }
    }
    QTcpServer m_server;
    quint16 m_redisPort;
    bool m_stalled = false;
    QList<std::pair<QTcpSocket *, QTcpSocket *>> m_links;
};

} // namespace

class TestRedisMarks : public QObject {
    Q_OBJECT

    std::unique_ptr<test::RedisServer> m_redis;
    qint64 m_wall = 1'800'000'000'000;
    std::unique_ptr<Replica> m_one, m_two;
    std::unique_ptr<test::FakeClock> m_net;  // a replica's connection clock, when a test sets one
    std::unique_ptr<test::FakeClock> m_net2; // the second replica's, when a test sets one

    // Makes the first replica one that reconnects only when the test moves m_net; it reaches Redis
    // at `url` (a relay in front of it), else directly.
    bool firstReconnectsOnCue(const QString &url = {}) {
        m_net = std::make_unique<test::FakeClock>();
        m_one = std::make_unique<Replica>(url.isEmpty() ? m_redis->url() : url, QStringLiteral("one"), &m_wall,
                                          m_net.get());
        return test::waitUntil([&]() { return m_one->sync->storeUp(); }, 5000);
    }
    bool firstReconnects() {
        for (int i = 0; i < 60 && !m_one->sync->storeUp(); ++i) {
            m_net->advance(250);
            test::waitUntil([&]() { return m_one->sync->storeUp(); }, 500);
        }
        return m_one->sync->storeUp();
    }

    // Moves every clock: the two replicas' local ones and the shared wall clock.
    void advance(qint64 ms) {
        m_wall += ms;
        m_one->clock.advance(ms);
        m_two->clock.advance(ms);
    }
    // A failure on replica `r`, as the loop reports it, then wait for Redis's answer on both.
    qint64 fail(Replica &r, const failover::UpstreamFailure &f, std::optional<qint64> attemptStart = std::nullopt,
                const QString &tenant = QStringLiteral("alice")) {
        const int seenOne = m_one->changes, seenTwo = m_two->changes;
        if (attemptStart) {
            // What the loop will report once marks know each attempt's start: the
            // observer call alone (the local table's own ladder does not know bursts yet).
            failover::MarkInfo m;
            m.tenant = tenant;
            m.provider = kA.provider;
            m.baseUrl = kA.baseUrl;
            m.model = f.kind == FailureKind::Transport ? QString() : kA.modelId;
            m.kind = f.kind;
            m.lastError = f.message;
            r.sync->markSet(m, f, attemptStart);
        } else {
            r.marks.mark(tenant, kA, f);
        }
        // Both replicas agree once the script's answer and its message arrived. The bounds here
        // are for a loaded machine (the sanitizer build under ctest -j2): a wait ends as soon as
        // its condition holds.
        const bool agreed = test::waitUntil(
            [&]() {
                auto a = m_one->mark(tenant), b = m_two->mark(tenant);
                return m_one->changes > seenOne && m_two->changes > seenTwo && a && b && a->strikes == b->strikes &&
                       qAbs(a->expiresAtMs - b->expiresAtMs) <= 1;
            },
            15000);
        if (!agreed)
            qWarning("the replicas did not agree on the mark within 15 s");
        return m_two->mark(tenant) ? m_two->mark(tenant)->expiresAtMs - m_two->clock.nowMs() : 0;
    }

private Q_SLOTS:
    void init() {
        m_wall = 1'800'000'000'000;
        m_redis = std::make_unique<test::RedisServer>();
        QVERIFY2(m_redis->start(), qPrintable(m_redis->error()));
        m_one = std::make_unique<Replica>(m_redis->url(), QStringLiteral("one"), &m_wall);
        m_two = std::make_unique<Replica>(m_redis->url(), QStringLiteral("two"), &m_wall);
        QVERIFY(test::waitUntil([&]() { return m_one->sync->storeUp() && m_two->sync->storeUp(); }, 5000));
    }
    void cleanup() {
        m_one.reset();
        m_two.reset();
        m_net.reset();
        m_net2.reset();
        m_redis.reset();
    }

    void ladderIsSharedAcrossReplicas() {
        // Failures alternate between replicas; each lands after the previous mark expired,
        // within the strike-reset window, so strikes climb the one ladder.
        const QList<qint64> expected{20000, 40000, 80000, 160000, 300000, 300000};
        for (int i = 0; i < expected.size(); ++i) {
            Replica &r = i % 2 ? *m_two : *m_one;
            const qint64 ttl = fail(r, failure(FailureKind::ServerError));
            QCOMPARE(ttl, expected[i]);
            QCOMPARE(m_one->mark()->strikes, i + 1);
            advance(expected[i] + 1000);
        }
    }

    void rateLimitedStartsAt30sAndHonoursRetryAfter() {
        QCOMPARE(fail(*m_one, failure(FailureKind::RateLimited)), qint64(30000));
        advance(31000);
        // Retry-After above the ladder wins, capped at 300 s.
        QCOMPARE(fail(*m_two, failure(FailureKind::RateLimited, 900000)), qint64(300000));
    }

    void aLaterFailureNeverShortensAMark() {
        QCOMPARE(fail(*m_one, failure(FailureKind::RateLimited, 300000)), qint64(300000));
        advance(1000);
        // A plain 429 on the other replica would give 60 s: the 299 s left stand.
        QCOMPARE(fail(*m_two, failure(FailureKind::RateLimited)), qint64(299000));
    }

    void aBurstOfParallelFailuresIsOneStrike() {
        const qint64 attemptStart = m_one->clock.nowMs(); // six attempts started together
        advance(5);
        QCOMPARE(fail(*m_one, failure(FailureKind::ServerError), attemptStart), qint64(20000));
        for (int i = 0; i < 5; ++i) {
            advance(3);
            fail(i % 2 ? *m_one : *m_two, failure(FailureKind::ServerError), attemptStart);
        }
        QCOMPARE(m_two->mark()->strikes, 1);
        QCOMPARE(m_one->mark()->strikes, 1);
        // An attempt that started after the mark was set is a new failure: a strike.
        advance(20000);
        const qint64 laterStart = m_one->clock.nowMs();
        QCOMPARE(fail(*m_two, failure(FailureKind::ServerError), laterStart), qint64(40000));
    }

    // A try begun while the shared mark stands (a lone candidate, or every one marked) adds no
    // strike on any replica: its failure says what the mark says. Counted, one burst on one replica
    // gave 17 to 20 strikes and Retry-After: 300 (probe HV 1). Its Retry-After still lengthens
    // the mark; the failure after the mark ran out is the next strike.
    void aTryWhileMarkedAddsNoStrikeOnAnyReplica() {
        QCOMPARE(fail(*m_one, failure(FailureKind::ServerError)), qint64(20000));
        for (int i = 0; i < 4; ++i) {
            advance(300);
            const qint64 began = m_one->clock.nowMs();
            advance(5);
            fail(i % 2 ? *m_one : *m_two, failure(FailureKind::ServerError), began);
        }
        QCOMPARE(m_one->mark()->strikes, 1);
        QCOMPARE(m_two->mark()->strikes, 1);
        QVERIFY(m_two->mark()->expiresAtMs - m_two->clock.nowMs() < 20000);
        const qint64 began = m_one->clock.nowMs();
        advance(5);
        QCOMPARE(fail(*m_two, failure(FailureKind::ServerError, 45000), began), qint64(45000));
        QCOMPARE(m_one->mark()->strikes, 1);
        advance(46000);
        const qint64 afterItRanOut = m_one->clock.nowMs();
        advance(5);
        QCOMPARE(fail(*m_one, failure(FailureKind::ServerError), afterItRanOut), qint64(40000));
        QCOMPARE(m_two->mark()->strikes, 2);
    }

    void strikesResetAfterFiveQuietMinutes() {
        fail(*m_one, failure(FailureKind::ServerError));
        advance(21000);
        QCOMPARE(fail(*m_two, failure(FailureKind::ServerError)), qint64(40000));
        advance(40000 + 300001);
        QCOMPARE(fail(*m_one, failure(FailureKind::ServerError)), qint64(20000));
        QCOMPARE(m_two->mark()->strikes, 1);
    }

    void aMarkReachesTheOtherReplicaQuickly() {
        QElapsedTimer t;
        t.start();
        m_one->marks.mark(QStringLiteral("alice"), kA, failure(FailureKind::Transport));
        QVERIFY(test::waitUntil([&]() { return m_two->marks.isDown(QStringLiteral("alice"), kA); }, 10000));
        qInfo("mark propagated to the other replica in %lld ms", qint64(t.elapsed()));
        QVERIFY2(t.elapsed() < 1000, "propagation took over a second");
        const auto seen = m_two->mark();
        QCOMPARE(seen->setBy, QStringLiteral("one")); // the window shows which replica set it
        QVERIFY(seen->model.isEmpty());               // a transport mark covers the base URL
    }

    void aClearOnOneReplicaClearsEverywhere() {
        fail(*m_one, failure(FailureKind::ServerError));
        QVERIFY(m_one->marks.isDown(QStringLiteral("alice"), kA));
        QCOMPARE(m_two->marks.clear({}), 1);
        QVERIFY(test::waitUntil([&]() { return !m_one->marks.isDown(QStringLiteral("alice"), kA); }, 10000));
        // The strikes went with it: the next failure starts the ladder again.
        advance(1000);
        QCOMPARE(fail(*m_one, failure(FailureKind::ServerError)), qint64(20000));
    }

    // Review of probe Y4 F1: a clear Redis runs late may also come after its replica's return, when
    // the replica has pushed the mark it struck meanwhile. Redis spares that mark, changed by the
    // clearing replica after the clear was made (on that replica's clock), so the clear never saw it.
    // Here the clear's time is set a second before the strike's to stand for that.
    void aLateClearSparesAStrikeItsReplicaMadeAfterIt() {
        const QString alice = QStringLiteral("alice");
        fail(*m_one, failure(FailureKind::ServerError));
        const qint64 struck = m_wall;
        m_wall = struck - 1000;
        failover::MarkFilter alicesA;
        alicesA.tenant = alice;
        QCOMPARE(m_one->marks.clear(alicesA), 1);
        m_wall = struck;
        // What the first sends next reaches the second after the clear: one connection, in order.
        m_one->marks.mark(QStringLiteral("bob"), kA, failure(FailureKind::ServerError));
        QVERIFY(test::waitUntil([&]() { return m_two->marks.isDown(QStringLiteral("bob"), kA); }, 10000));
        QVERIFY2(m_two->marks.isDown(alice, kA), "a clear made before the strike, run after it, undid it");
        // Redis holds it: a replica starting now pulls it. Another replica's clear still clears it.
        const auto redisHoldsAlices = [&](const QString &name) {
            Replica fresh(m_redis->url(), name, &m_wall);
            return test::waitUntil([&]() { return fresh.marks.isDown(QStringLiteral("bob"), kA); }, 10000) &&
                   fresh.marks.isDown(alice, kA);
        };
        QVERIFY(redisHoldsAlices(QStringLiteral("three")));
        QCOMPARE(m_two->marks.clear(alicesA), 1);
        QVERIFY(test::waitUntil([&]() { return !redisHoldsAlices(QStringLiteral("four")); }, 10000));
    }

    void aSetReadLateNeverUndoesANewerSetOrClear() {
        // A replica reads script replies and published messages on two connections, so it may
        // read a set after a newer set or clear of the same mark. Redis numbers every set and
        // clear; a replica applies nothing older than what it applied for that mark. Here a
        // third party publishes out of order; a mark for "bob" marks where the messages got to
        // (one subscription: in order).
        redis::RedisClient pub(*redis::RedisEndpoint::parse(m_redis->url(), nullptr));
        pub.open();
        QVERIFY(test::waitUntil([&]() { return pub.isReady(); }, 5000));
        auto idOf = [](const QString &tenant) {
            const QString raw = tenant + QChar(0) + kA.provider + QChar(0) + kA.baseUrl + QChar(0) + kA.modelId;
            return raw.toUtf8().toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals);
        };
        auto publish = [&](QJsonObject o) {
            o.insert(QStringLiteral("replica"), QStringLiteral("three"));
            pub.command({"PUBLISH", "t:marks", QJsonDocument(o).toJson(QJsonDocument::Compact)});
        };
        auto set = [&](const QString &tenant, int seq, int strikes, qint64 ttl) {
            publish({{QStringLiteral("op"), QStringLiteral("set")},
                     {QStringLiteral("seq"), seq},
                     {QStringLiteral("tenant"), tenant},
                     {QStringLiteral("provider"), kA.provider},
                     {QStringLiteral("baseUrl"), kA.baseUrl},
                     {QStringLiteral("model"), kA.modelId},
                     {QStringLiteral("kind"), QStringLiteral("server_error")},
                     {QStringLiteral("strikes"), strikes},
                     {QStringLiteral("ttlMs"), double(ttl)},
                     {QStringLiteral("expiresAt"), QString::number(m_wall + ttl)},
                     {QStringLiteral("setAt"), QString::number(m_wall)}});
        };
        auto barrier = [&](int seq) { // applied once every message published before it was read
            set(QStringLiteral("bob"), seq, seq, 20000);
            return test::waitUntil(
                [&]() {
                    return m_one->mark(QStringLiteral("bob")) && m_one->mark(QStringLiteral("bob"))->strikes == seq;
                },
                5000);
        };
        set(QStringLiteral("alice"), 10, 3, 80000);
        set(QStringLiteral("alice"), 9, 1, 20000); // older, read after: ignored
        QVERIFY(barrier(11));
        QVERIFY(m_one->mark());
        QCOMPARE(m_one->mark()->strikes, 3);
        QCOMPARE(m_one->mark()->expiresAtMs - m_one->clock.nowMs(), qint64(80000));

        publish({{QStringLiteral("op"), QStringLiteral("clear")},
                 {QStringLiteral("seq"), 12},
                 {QStringLiteral("ids"), QJsonArray{QString::fromLatin1(idOf(QStringLiteral("alice")))}}});
        set(QStringLiteral("alice"), 10, 3, 80000); // the set before the clear, read after it: ignored
        QVERIFY(barrier(13));
        QVERIFY(!m_one->mark());
        QVERIFY(!m_two->mark());

        set(QStringLiteral("alice"), 14, 1, 20000); // a new failure after the clear: applied
        QVERIFY(barrier(15));
        QVERIFY(m_one->mark());
        QCOMPARE(m_one->mark()->strikes, 1);
    }

    // Each mark id ever applied left its sequence number behind for the process's life: a stream
    // of new ids (model names, tenants) grew it without end. Numbers older than
    // kSequenceMemoryMs are forgotten; recent ones still order late messages (the test above).
    void oldSequenceNumbersAreForgotten() {
        redis::RedisClient pub(*redis::RedisEndpoint::parse(m_redis->url(), nullptr));
        pub.open();
        QVERIFY(test::waitUntil([&]() { return pub.isReady(); }, 5000));
        auto set = [&](const QString &model, int seq) {
            const QJsonObject o{{QStringLiteral("op"), QStringLiteral("set")},
                                {QStringLiteral("seq"), seq},
                                {QStringLiteral("replica"), QStringLiteral("three")},
                                {QStringLiteral("tenant"), QStringLiteral("carol")},
                                {QStringLiteral("provider"), kA.provider},
                                {QStringLiteral("baseUrl"), kA.baseUrl},
                                {QStringLiteral("model"), model},
                                {QStringLiteral("kind"), QStringLiteral("server_error")},
                                {QStringLiteral("strikes"), 1},
                                {QStringLiteral("ttlMs"), 20000.0},
                                {QStringLiteral("expiresAt"), QString::number(m_wall + 20000)},
                                {QStringLiteral("setAt"), QString::number(m_wall)}};
            pub.command({"PUBLISH", "t:marks", QJsonDocument(o).toJson(QJsonDocument::Compact)});
        };
        int seq = 100;
        for (int i = 0; i < 1500; ++i)
            set(QStringLiteral("m%1").arg(i), ++seq);
        QVERIFY(test::waitUntil([&]() { return m_one->sync->rememberedSequences() >= 1500; }, 10000));
        advance(redis::RedisMarkSync::kSequenceMemoryMs + 1000);
        for (int i = 0; i < 1500; ++i)
            set(QStringLiteral("n%1").arg(i), ++seq);
        // Every message read: the last one's mark is there.
        QVERIFY(test::waitUntil(
            [&]() {
                const auto active = m_one->marks.active();
                return std::any_of(active.cbegin(), active.cend(),
                                   [](const failover::MarkInfo &m) { return m.model == QLatin1String("n1499"); });
            },
            10000));
        const int remembered = m_one->sync->rememberedSequences();
        qInfo("numbers remembered after 3000 mark ids, 1500 of them older than the memory: %d", remembered);
        QVERIFY2(remembered <= 1500, qPrintable(QString::number(remembered)));
    }

    void aTenantsMarkNeverSteersAnother() {
        fail(*m_one, failure(FailureKind::ServerError), std::nullopt, QStringLiteral("alice"));
        QVERIFY(m_two->marks.isDown(QStringLiteral("alice"), kA));
        QVERIFY(!m_two->marks.isDown(QStringLiteral("bob"), kA));
        QVERIFY(!m_one->marks.isDown(QStringLiteral("bob"), kA));
    }

    // A Redis that accepts connections and answers nothing: a stopped process, whose kernel still
    // completes the connect. It was reported shared after every connect, logged "marks shared" and
    // then "local only" every 2.5 s, and the reconnects never backed off.
    void aRedisThatNeverAnswersIsLocalNotShared() {
        QTcpServer hung;
        QVERIFY(hung.listen(QHostAddress::LocalHost));
        test::FakeClock net; // times the answers and the reconnects
        QList<QTcpSocket *> accepted;
        QList<qint64> connectedAt;
        connect(&hung, &QTcpServer::newConnection, this, [&]() {
            while (QTcpSocket *c = hung.nextPendingConnection()) {
                accepted.append(c);
                connectedAt.append(net.nowMs());
            }
        });
        // Attempt `n`: both connections (commands and subscription) connected and sent their handshake.
        auto bothSentHandshake = [&](int n) {
            return test::waitUntil(
                [&]() {
                    return accepted.size() == 2 * n && accepted[2 * n - 1]->bytesAvailable() > 0 &&
                           accepted[2 * n - 2]->bytesAvailable() > 0;
                },
                5000);
        };
        Replica r(QStringLiteral("redis://127.0.0.1:%1").arg(hung.serverPort()), QStringLiteral("solo"), &m_wall, &net);
        QVERIFY(bothSentHandshake(1));
        QVERIFY(!r.sync->storeUp()); // connected is not answered
        QCOMPARE(r.sync->describe(), QStringLiteral("local only (Redis unreachable)"));
        net.advance(2250); // past the 2 s command timeout, on the watchdog's 250 ms tick
        QVERIFY(!r.sync->storeUp());
        QCOMPARE(r.sync->describe(), QStringLiteral("local only (Redis not answering)"));
        // Marks work, locally.
        r.marks.mark(QStringLiteral("alice"), kA, failure(FailureKind::ServerError));
        QVERIFY(r.marks.isDown(QStringLiteral("alice"), kA));

        // Each silent attempt waits longer for the next: 250 ms, doubling to 5 s.
        qint64 lastFailure = net.nowMs();
        int attempts = 1;
        for (const qint64 backoff : {250, 500, 1000, 2000, 4000, 5000, 5000}) {
            net.advance(backoff - 1);
            QVERIFY2(!hung.waitForNewConnection(100),
                     qPrintable(QStringLiteral("reconnected before %1 ms").arg(backoff)));
            net.advance(1);
            QVERIFY(bothSentHandshake(++attempts));
            QCOMPARE(connectedAt.last(), lastFailure + backoff);
            QVERIFY(!r.sync->storeUp());
            net.advance(2250);
            lastFailure = net.nowMs();
            QCOMPARE(r.sync->describe(), QStringLiteral("local only (Redis not answering)"));
        }
        QCOMPARE(accepted.size(), 16);
        // One line for the outage; never "shared".
        QCOMPARE(r.logs, QStringList{QStringLiteral("warn marks: local only (Redis not answering)")});
    }

    // Redis dropped the subscription alone (a subscriber over its output buffer limit, or an
    // operator's CLIENT KILL): the store went local and stayed local, the command connection being
    // fine, so no mark was shared again. It is shared once the subscription is back.
    void aDroppedSubscriptionComesBackShared() {
        QList<bool> states;
        connect(m_one->sync.get(), &redis::RedisMarkSync::storeUpChanged, this, [&](bool up) { states.append(up); });
        QVERIFY(m_redis->command({"CLIENT", "KILL", "TYPE", "pubsub"}).contains('2'));
        QVERIFY(test::waitUntil(
            [&]() { return states.contains(false) && m_one->sync->storeUp() && m_two->sync->storeUp(); }, 5000));
        QCOMPARE(m_one->logs.filter(QStringLiteral("local only")).size(), 1);
        QCOMPARE(fail(*m_one, failure(FailureKind::ServerError)), qint64(20000)); // reaches the other replica
    }

    // A Redis that answers PING and refuses every write (READONLY: a primary demoted to replica by a
    // failover; OOM: maxmemory reached with noeviction) was reported shared: marks from one replica
    // never reached the other, /healthz said "shared via ..., 2 replicas seen", switchman_marks_store_up
    // 1, nothing was logged, and the marks learned meanwhile were never pushed. An error reply to a
    // write takes the store down; the heartbeat keeps trying, and the first write taken brings it back.
    void aRedisThatRefusesWritesIsLocalUntilItTakesThem_data() {
        QTest::addColumn<QList<QByteArrayList>>("refuse");
        QTest::addColumn<QList<QByteArrayList>>("restore");
        QTest::addColumn<QString>("error");
        QTest::newRow("replica after a failover")
            << QList<QByteArrayList>{{"REPLICAOF", "127.0.0.1", "1"}} // no master there
            << QList<QByteArrayList>{{"REPLICAOF", "NO", "ONE"}} << QStringLiteral("READONLY");
        QTest::newRow("maxmemory, noeviction")
            << QList<QByteArrayList>{{"CONFIG", "SET", "maxmemory-policy", "noeviction"},
                                     {"CONFIG", "SET", "maxmemory", "1"}}
            << QList<QByteArrayList>{{"CONFIG", "SET", "maxmemory", "0"}} << QStringLiteral("OOM");
    }
    void aRedisThatRefusesWritesIsLocalUntilItTakesThem() {
        QFETCH(QList<QByteArrayList>, refuse);
        QFETCH(QList<QByteArrayList>, restore);
        QFETCH(QString, error);
        for (const QByteArrayList &c : refuse)
            QVERIFY(m_redis->command(c).startsWith("+OK"));
        QVERIFY(m_redis->command({"SET", "x", "1"}).startsWith("-" + error.toLatin1()));

        // A mark set now is refused by Redis: the store is down, the mark local.
        m_one->marks.mark(QStringLiteral("alice"), kA, failure(FailureKind::ServerError));
        QVERIFY(m_one->marks.isDown(QStringLiteral("alice"), kA));
        // The other replica learns it from its next heartbeat.
        QVERIFY(test::waitUntil([&]() { return !m_one->sync->storeUp() && !m_two->sync->storeUp(); }, 5000));
        for (Replica *r : {m_one.get(), m_two.get()})
            QVERIFY2(r->sync->describe().startsWith(QStringLiteral("local only (Redis refuses writes: ") + error),
                     qPrintable(r->sync->describe()));
        QVERIFY(!m_two->marks.isDown(QStringLiteral("alice"), kA));
        // Heartbeats keep trying (every 200 ms here): still down, one log line for the outage.
        QTest::qWait(1000);
        QVERIFY(!m_one->sync->storeUp());
        QCOMPARE(m_one->logs.filter(QStringLiteral("local only")).size(), 1);
        QVERIFY(
            m_one->logs.last().startsWith(QStringLiteral("warn marks: local only (Redis refuses writes: ") + error));
        QCOMPARE(m_two->logs.filter(QStringLiteral("local only")).size(), 1);

        for (const QByteArrayList &c : restore)
            QVERIFY(m_redis->command(c).startsWith("+OK"));
        QVERIFY(test::waitUntil([&]() { return m_one->sync->storeUp() && m_two->sync->storeUp(); }, 10000));
        QVERIFY(m_one->sync->describe().startsWith(QStringLiteral("shared via redis://127.0.0.1:")));
        QCOMPARE(m_one->logs.last(), QStringLiteral("info marks shared through Redis"));
        // The mark learned while writes were refused reaches the other replica.
        QVERIFY(test::waitUntil([&]() { return m_two->marks.isDown(QStringLiteral("alice"), kA); }, 5000));
        QCOMPARE(m_two->mark()->setBy, QStringLiteral("one"));
        QCOMPARE(m_one->logs.filter(QStringLiteral("local only")).size(), 1);
    }

    // Marks published through Redis were applied as they came: a 1 MiB lastError each, any number
    // of marks for models, providers and tenants this gateway does not have (400 of them: 0.92 GB),
    // and numbers cast from double to int64 unchecked (undefined for 1e300), shown as 9.2e18 ms
    // left and sent to clients as a Retry-After of 9.2e15 s. A remote mark is checked as a local
    // one is made.
    void aMarkFromRedisIsCheckedLikeALocalOne() {
        config::Config cfg = configOfA();
        cfg.tenants.insert(QStringLiteral("alice"), tenant(QStringLiteral("alice")));
        Replica r(m_redis->url(), QStringLiteral("checked"), &m_wall, nullptr,
                  [cfg](const failover::MarkInfo &m) { return redis::RedisMarkSync::configures(cfg, m); });
        QVERIFY(test::waitUntil([&]() { return r.sync->storeUp(); }, 5000));

        redis::RedisClient pub(*redis::RedisEndpoint::parse(m_redis->url(), nullptr));
        pub.open();
        QVERIFY(test::waitUntil([&]() { return pub.isReady(); }, 5000));
        int seq = 0;
        auto publish = [&](QJsonObject o) {
            if (!o.contains(QStringLiteral("seq")))
                o.insert(QStringLiteral("seq"), ++seq);
            pub.command({"PUBLISH", "t:marks", QJsonDocument(o).toJson(QJsonDocument::Compact)});
        };
        auto mark = [&](const QString &tenant, const QString &provider, const QString &baseUrl, const QString &model) {
            return QJsonObject{{QStringLiteral("op"), QStringLiteral("set")},
                               {QStringLiteral("replica"), QStringLiteral("three")},
                               {QStringLiteral("tenant"), tenant},
                               {QStringLiteral("provider"), provider},
                               {QStringLiteral("baseUrl"), baseUrl},
                               {QStringLiteral("model"), model},
                               {QStringLiteral("kind"), QStringLiteral("server_error")},
                               {QStringLiteral("strikes"), 1},
                               {QStringLiteral("ttlMs"), 20000.0},
                               {QStringLiteral("expiresAt"), QString::number(m_wall + 20000)},
                               {QStringLiteral("setAt"), QString::number(m_wall)}};
        };
        const QJsonObject ours = mark(QStringLiteral("alice"), kA.provider, kA.baseUrl, kA.modelId);
        auto ourMark = [&]() -> std::optional<failover::MarkInfo> {
            for (const auto &m : r.marks.active())
                if (m.model == kA.modelId)
                    return m;
            return std::nullopt;
        };
        // Applied once every message published before it was read (one subscription: in order).
        auto barrier = [&](int strikes) {
            QJsonObject o = ours;
            o.insert(QStringLiteral("strikes"), strikes);
            publish(o);
            return test::waitUntil([&]() { return ourMark() && ourMark()->strikes == strikes; }, 5000);
        };

        // Numbers out of every range, a 1 MiB lastError and replica id.
        QJsonObject weird = ours;
        weird.insert(QStringLiteral("expiresAt"), QStringLiteral("9223372036854775807"));
        weird.insert(QStringLiteral("setAt"), QStringLiteral("-9223372036854775808"));
        weird.insert(QStringLiteral("ttlMs"), 1e300);
        weird.insert(QStringLiteral("strikes"), 1e300);
        weird.insert(QStringLiteral("retryAfterMs"), -1e300);
        weird.insert(QStringLiteral("lastError"), QString(1 << 20, QLatin1Char('E')));
        weird.insert(QStringLiteral("replica"), QString(1 << 20, QLatin1Char('R')));
        publish(weird);
        QVERIFY(test::waitUntil([&]() { return ourMark().has_value(); }, 5000));
        const auto m = *ourMark();
        QCOMPARE(r.marks.remainingMs(QStringLiteral("alice"), kA), qint64(300000)); // the ladder's cap
        QCOMPARE(m.ttlMs, qint64(300000));
        QCOMPARE(m.strikes, int(redis::RedisMarkSync::kMaxStrikes));
        QVERIFY(!m.retryAfterMs);
        QVERIFY(m.struckAtMs <= r.clock.nowMs());
        QCOMPARE(m.lastError.size(), 500);
        QCOMPARE(m.setBy.size(), qsizetype(redis::RedisMarkSync::kMaxReplicaIdChars));

        weird = ours;
        weird.insert(QStringLiteral("retryAfterMs"), 1e300);
        weird.insert(QStringLiteral("expiresAt"), QStringLiteral("-9223372036854775808"));
        weird.insert(QStringLiteral("strikes"), -5);
        publish(weird);
        QVERIFY(test::waitUntil([&]() { return !ourMark(); }, 5000)); // expired
        QVERIFY(barrier(2));
        weird = ours;
        weird.insert(QStringLiteral("retryAfterMs"), 1e300);
        weird.insert(QStringLiteral("strikes"), 3);
        publish(weird);
        QVERIFY(test::waitUntil([&]() { return ourMark() && ourMark()->strikes == 3; }, 5000));
        QCOMPARE(ourMark()->retryAfterMs, std::optional<qint64>(300000));

        // Marks this configuration could not have set: other tenants, providers, base URLs and
        // models, kinds that set no mark, a transport mark naming a model, a model's mark naming
        // none, and a sequence number no Redis gives (it would order out every later one).
        for (int i = 0; i < 400; ++i) {
            QJsonObject o = mark(QStringLiteral("alice"), kA.provider, kA.baseUrl, QStringLiteral("m%1").arg(i));
            o.insert(QStringLiteral("lastError"), QString(1 << 12, QLatin1Char('E')));
            publish(o);
        }
        publish(mark(QStringLiteral("mallory"), kA.provider, kA.baseUrl, kA.modelId));
        publish(mark(QStringLiteral("alice"), QStringLiteral("px"), kA.baseUrl, kA.modelId));
        publish(mark(QStringLiteral("alice"), kA.provider, QStringLiteral("http://127.0.0.1:2"), kA.modelId));
        QJsonObject o = ours;
        o.insert(QStringLiteral("kind"), QStringLiteral("credential_exhausted"));
        o.insert(QStringLiteral("strikes"), 50);
        publish(o);
        o = ours;
        o.insert(QStringLiteral("kind"), QStringLiteral("transport"));
        o.insert(QStringLiteral("strikes"), 50);
        publish(o);
        o = mark(QStringLiteral("alice"), kA.provider, kA.baseUrl, QString());
        publish(o);
        o = ours;
        o.insert(QStringLiteral("seq"), 1e300);
        o.insert(QStringLiteral("strikes"), 50);
        publish(o);
        QVERIFY(barrier(4));
        QCOMPARE(r.marks.active().size(), 1);
        // A transport mark of a configured provider is one this gateway sets too.
        o = mark(QStringLiteral("alice"), kA.provider, kA.baseUrl, QString());
        o.insert(QStringLiteral("kind"), QStringLiteral("transport"));
        publish(o);
        QVERIFY(barrier(5));
        QCOMPARE(r.marks.active().size(), 2);
    }

    void configuresNamesWhatThisGatewayCouldMark() {
        config::Config cfg = configOfA();
        failover::MarkInfo m;
        m.tenant = QStringLiteral("local"); // every caller's tenant when none is configured
        m.provider = kA.provider;
        m.baseUrl = kA.baseUrl;
        m.model = kA.modelId;
        QVERIFY(redis::RedisMarkSync::configures(cfg, m));
        m.model.clear();
        QVERIFY(redis::RedisMarkSync::configures(cfg, m));
        m.model = QStringLiteral("unlisted");
        QVERIFY(!redis::RedisMarkSync::configures(cfg, m));
        m.model = kA.modelId;
        m.tenant = QStringLiteral("alice");
        QVERIFY(!redis::RedisMarkSync::configures(cfg, m));
        cfg.tenants.insert(QStringLiteral("alice"), tenant(QStringLiteral("alice")));
        QVERIFY(redis::RedisMarkSync::configures(cfg, m));
        m.tenant = QStringLiteral("local");
        QVERIFY(!redis::RedisMarkSync::configures(cfg, m));
    }

    void redisDownMeansLocalMarksThenResync() {
        m_redis->kill();
        QVERIFY(test::waitUntil([&]() { return !m_one->sync->storeUp() && !m_two->sync->storeUp(); }, 10000));
        QCOMPARE(m_one->sync->describe(), QStringLiteral("local only (Redis unreachable)"));
        // Marks still work, locally.
        m_one->marks.mark(QStringLiteral("alice"), kA, failure(FailureKind::ServerError));
        QVERIFY(m_one->marks.isDown(QStringLiteral("alice"), kA));
        QVERIFY(!m_two->marks.isDown(QStringLiteral("alice"), kA));
        // Several reconnect attempts fail meanwhile: one log line per outage.
        QTest::qWait(1200);
        QCOMPARE(m_one->logs.filter(QStringLiteral("local only")).size(), 1);

        QVERIFY2(m_redis->start(), qPrintable(m_redis->error()));
        QVERIFY(test::waitUntil([&]() { return m_one->sync->storeUp() && m_two->sync->storeUp(); }, 10000));
        // The mark learned while Redis was away reaches the other replica.
        QVERIFY(test::waitUntil([&]() { return m_two->marks.isDown(QStringLiteral("alice"), kA); }, 10000));
        QVERIFY(m_one->sync->describe().startsWith(QStringLiteral("shared via redis://127.0.0.1:")));
    }

    // Probe W3 F1, F2: the heartbeat and the pull walked the whole database with KEYS (seconds on a
    // shared Redis of millions of keys, every 2 s, on every replica; refused where KEYS is denied),
    // and a key of another type under the prefix failed every pull, flipping the store between
    // shared and local every 2 s. They read the gateway's own index and set of replicas now.
    void replicasShareMarksWhereKeysIsDeniedAndStrangersLiveUnderThePrefix() {
        QVERIFY(m_redis->command({"ACL", "SETUSER", "default", "-keys"}).startsWith("+OK"));
        QVERIFY(m_redis->command({"RPUSH", "t:mark:left-by-another-tool", "x"}).startsWith(":1"));
        // Listed in the index too, as a confused program might: passed over, and taken out of it.
        QVERIFY(m_redis->command({"ZADD", "t:index", "9999999999999", "t:mark:left-by-another-tool"}).startsWith(":1"));
        QVERIFY(m_redis->command({"SET", "t:replica:someone-else", "1"}).startsWith("+OK"));
        const QString alice = QStringLiteral("alice");
        fail(*m_one, failure(FailureKind::ServerError));
        QVERIFY(m_two->mark(alice));
        // A replica that starts now takes the live mark from Redis (its pull), and stays shared.
        Replica three(m_redis->url(), QStringLiteral("three"), &m_wall);
        QVERIFY(test::waitUntil([&]() { return three.sync->storeUp(); }, 5000));
        QVERIFY2(test::waitUntil([&]() { return three.mark(alice).has_value(); }, 5000),
                 "the new replica did not take the live mark from Redis");
        QVERIFY(test::waitUntil([&]() { return three.sync->replicasSeen() == 3; }, 5000));
        QTest::qWait(1000); // five heartbeats (200 ms each): a failing pull or beat would show
        for (Replica *r : {m_one.get(), m_two.get(), &three}) {
            QVERIFY(r->sync->storeUp());
            QCOMPARE(r->logs.filter(QStringLiteral("local only")).size(), 0);
        }
        QCOMPARE(three.sync->replicasSeen(), 3);
        // A clear leaves the index with the mark.
        QCOMPARE(m_one->marks.clear({}), 1);
        QVERIFY(test::waitUntil([&]() { return !three.mark(alice); }, 5000));
        QVERIFY(m_redis->command({"ZCARD", "t:index"}).startsWith(":0")); // the stranger went at the pull
    }

    void aClearDuringAnOutageStaysClearedWhenRedisReturns() {
        // Both replicas hold alice's mark on A. Redis goes away; the operator clears the mark on the
        // second replica. When Redis came back (empty), the first pushed every mark it held and the
        // clear was undone on the second too (probe Z4 5). Only marks set while Redis was away go
        // back now, and a clear made meanwhile is sent.
        m_one->marks.mark(QStringLiteral("alice"), kA, failure(FailureKind::ServerError));
        QVERIFY(test::waitUntil([&]() { return m_two->marks.isDown(QStringLiteral("alice"), kA); }, 10000));
        m_redis->kill();
        QVERIFY(test::waitUntil([&]() { return !m_one->sync->storeUp() && !m_two->sync->storeUp(); }, 10000));
        failover::MarkFilter alicesA;
        alicesA.tenant = QStringLiteral("alice");
        QCOMPARE(m_two->marks.clear(alicesA), 1);
        // A mark the first replica sets meanwhile does go to the second when Redis is back.
        m_one->marks.mark(QStringLiteral("alice"), kB, failure(FailureKind::ServerError));
        QVERIFY2(m_redis->start(), qPrintable(m_redis->error()));
        QVERIFY(test::waitUntil([&]() { return m_one->sync->storeUp() && m_two->sync->storeUp(); }, 10000));
        QVERIFY(test::waitUntil([&]() { return m_two->marks.isDown(QStringLiteral("alice"), kB); }, 10000));
        QTest::qWait(300); // anything else either replica sends on its return has arrived by now
        QVERIFY(!m_two->marks.isDown(QStringLiteral("alice"), kA));
    }

    // Probe Y4 F1: Redis stalls with a clear in its socket; the replica that sent it gives up waiting
    // and, local only, strikes the provider anew. When Redis wakes it runs the clear and publishes
    // it: the replica read its own clear back and took the new mark away, so it never went to Redis
    // and the provider, still down, was marked on no replica.
    void aClearRedisRunsLateSparesAMarkStruckSince() {
        QVERIFY(firstReconnectsOnCue());
        const QString alice = QStringLiteral("alice");
        fail(*m_one, failure(FailureKind::ServerError));
        QVERIFY(m_two->marks.isDown(alice, kA));
        QCOMPARE(::kill(pid_t(m_redis->pid()), SIGSTOP), 0);
        failover::MarkFilter alicesA;
        alicesA.tenant = alice;
        QCOMPARE(m_one->marks.clear(alicesA), 1); // sent; Redis reads it when it wakes
        QTest::qWait(100);                        // written to the socket
        m_net->advance(2250);                     // past the 2 s command timeout
        QVERIFY(test::waitUntil([&]() { return !m_one->sync->storeUp(); }, 5000));
        advance(1000);
        m_one->marks.mark(alice, kA, failure(FailureKind::ServerError)); // failed again meanwhile
        QVERIFY(m_one->marks.isDown(alice, kA));
        // The replica tries again while Redis still sleeps: its new connections wait in the accept
        // queue with their handshakes, so the clear's message reaches the new subscription.
        m_net->advance(250);
        QTest::qWait(200);
        QCOMPARE(::kill(pid_t(m_redis->pid()), SIGCONT), 0);
        QVERIFY(test::waitUntil([&]() { return m_one->sync->storeUp(); }, 5000));
        // What each sent on its return has reached the other once this has.
        m_one->marks.mark(QStringLiteral("bob"), kA, failure(FailureKind::ServerError));
        QVERIFY(test::waitUntil([&]() { return m_two->marks.isDown(QStringLiteral("bob"), kA); }, 10000));
        QTest::qWait(300);
        QVERIFY2(m_one->marks.isDown(alice, kA), "the clear Redis ran late undid the strike made after it");
        QVERIFY2(m_two->marks.isDown(alice, kA), "the strike made while Redis stalled never reached the other replica");
    }

    // Probe Z4 F1: the first replica's link to Redis stalls (Redis itself serves the second) while it
    // clears alice's mark; it gives up waiting and goes local. 21 s on, the provider fails again on
    // the second replica: strike 2. Then the link goes on and Redis runs the old clear. It deleted the
    // second replica's new mark there and in Redis: the provider, down again, was marked nowhere. A
    // clear deletes the version its replica saw, not one another replica set after it.
    void aClearThatSatInAStalledLinkSparesAnotherReplicasLaterStrike() {
        StallingRelay relay(m_redis->port());
        QVERIFY(firstReconnectsOnCue(relay.url()));
        const QString alice = QStringLiteral("alice");
        QCOMPARE(fail(*m_one, failure(FailureKind::ServerError)), qint64(20000));

        relay.stall();
        failover::MarkFilter alicesA;
        alicesA.tenant = alice;
        QCOMPARE(m_one->marks.clear(alicesA), 1); // written; it waits in the stalled link
        QTest::qWait(100);
        m_net->advance(2250); // past the 2 s command timeout
        QVERIFY(test::waitUntil([&]() { return !m_one->sync->storeUp(); }, 5000));
        advance(21000); // the second replica's copy ran out
        QVERIFY(!m_two->marks.isDown(alice, kA));
        m_two->marks.mark(alice, kA, failure(FailureKind::ServerError));
        QVERIFY(test::waitUntil([&]() { return m_two->mark() && m_two->mark()->strikes == 2; }, 10000));

        relay.goOn(); // the clear reaches Redis, 21 s after it was made
        // Redis has run it once a command sent after it on another connection is answered.
        QTest::qWait(200);
        m_two->marks.mark(QStringLiteral("bob"), kA, failure(FailureKind::ServerError));
        QVERIFY(test::waitUntil([&]() { return m_two->marks.isDown(QStringLiteral("bob"), kA); }, 10000));
        QTest::qWait(300);
        QVERIFY2(m_two->marks.isDown(alice, kA), "the clear made before the strike, run after it, undid it");
        QCOMPARE(m_two->mark()->strikes, 2);
        // The first replica, back, takes the mark from Redis.
        QVERIFY(firstReconnects());
        QVERIFY(test::waitUntil([&]() { return m_one->marks.isDown(alice, kA); }, 10000));
        QCOMPARE(m_one->mark()->strikes, 2);
        // A clear made after the strike still clears it, everywhere.
        QCOMPARE(m_one->marks.clear(alicesA), 1);
        QVERIFY(test::waitUntil([&]() { return !m_two->marks.isDown(alice, kA); }, 10000));
    }

    // ... and a clear made after another replica's failure it had not heard of (its link stalled
    // first) still clears that failure's mark, in Redis and on every replica: the later one wins.
    void aClearMadeAfterAFailureItHadNotHeardOfStillClearsIt() {
        StallingRelay relay(m_redis->port());
        QVERIFY(firstReconnectsOnCue(relay.url()));
        const QString alice = QStringLiteral("alice");
        QCOMPARE(fail(*m_one, failure(FailureKind::RateLimited, 60000)), qint64(60000));

        relay.stall();
        advance(1000);
        const int heard = m_two->changes;
        m_two->marks.mark(alice, kA, failure(FailureKind::RateLimited, 90000));    // a version the first never hears
        QVERIFY(test::waitUntil([&]() { return m_two->changes > heard; }, 10000)); // Redis took it
        advance(1000);
        failover::MarkFilter alicesA;
        alicesA.tenant = alice;
        QCOMPARE(m_one->marks.clear(alicesA), 1); // after that failure; it waits in the stalled link
        QTest::qWait(100);
        relay.goOn();
        QVERIFY2(test::waitUntil([&]() { return !m_two->marks.isDown(alice, kA); }, 10000),
                 "a clear made after the failure did not clear its mark");
        QVERIFY(test::waitUntil([&]() { return !m_one->marks.isDown(alice, kA); }, 10000));
        Replica fresh(m_redis->url(), QStringLiteral("three"), &m_wall);
        QVERIFY(test::waitUntil([&]() { return fresh.sync->storeUp(); }, 5000));
        m_two->marks.mark(QStringLiteral("bob"), kA, failure(FailureKind::ServerError));
        QVERIFY(test::waitUntil([&]() { return fresh.marks.isDown(QStringLiteral("bob"), kA); }, 10000));
        QVERIFY2(!fresh.marks.isDown(alice, kA), "Redis kept the cleared mark");
    }

    // Probe E4 4: both replicas hold alice's mark; Redis dies and comes back empty; the second
    // replica clears the mark meanwhile and, back first, publishes the clear while the first has not
    // subscribed again. The first kept the mark until its TTL ended (up to 300 s): its pull after
    // the reconnect only added marks. It now takes Redis's state, but for the marks it set while away.
    void aClearPublishedWhileAPeerWasAwayStillReachesIt() {
        QVERIFY(firstReconnectsOnCue());
        const QString alice = QStringLiteral("alice");
        m_one->marks.mark(alice, kA, failure(FailureKind::ServerError));
        QVERIFY(test::waitUntil([&]() { return m_two->marks.isDown(alice, kA); }, 10000));

        m_redis->kill();
        QVERIFY(test::waitUntil([&]() { return !m_one->sync->storeUp() && !m_two->sync->storeUp(); }, 10000));
        advance(1000);
        failover::MarkFilter alicesA;
        alicesA.tenant = alice;
        QCOMPARE(m_two->marks.clear(alicesA), 1);
        advance(1000);
        m_one->marks.mark(alice, kB, failure(FailureKind::ServerError)); // set while away: it goes back
        QVERIFY2(m_redis->start(), qPrintable(m_redis->error()));
        // The second replica is back, and its clear is published (it took a sequence number)...
        QVERIFY(test::waitUntil([&]() { return m_two->sync->storeUp(); }, 15000));
        QVERIFY(test::waitUntil(
            [&]() {
                const QByteArray seq = m_redis->command({"GET", "t:seq"});
                return seq.startsWith('$') && !seq.startsWith("$-1");
            },
            5000));
        QVERIFY(!m_one->sync->storeUp());
        // ... before the first one reconnects and subscribes.
        QVERIFY(firstReconnects());
        QVERIFY2(test::waitUntil([&]() { return !m_one->marks.isDown(alice, kA); }, 5000),
                 "the mark cleared on the other replica during the outage stayed on this one");
        QVERIFY(test::waitUntil([&]() { return m_two->marks.isDown(alice, kB); }, 10000));
        QVERIFY(m_one->marks.isDown(alice, kB)); // its own, set while away: Redis has it now
        QVERIFY(!m_two->marks.isDown(alice, kA));
    }

    // Between a clear on one replica and a failure on another, both during an outage, the later
    // one wins once Redis is back (a clear leaves a tombstone with its time). Before, the failing
    // replica pushed its mark back whatever the order: a later clear was undone on both replicas.
    void aClearMadeAfterAnotherReplicasFailureWinsWhenRedisReturns() {
        QVERIFY(firstReconnectsOnCue());
        const QString alice = QStringLiteral("alice"), bob = QStringLiteral("bob");
        m_one->marks.mark(alice, kA, failure(FailureKind::ServerError));
        m_one->marks.mark(alice, kB, failure(FailureKind::ServerError));
        QVERIFY(
            test::waitUntil([&]() { return m_two->marks.isDown(alice, kA) && m_two->marks.isDown(alice, kB); }, 10000));
        m_redis->kill();
        QVERIFY(test::waitUntil([&]() { return !m_one->sync->storeUp() && !m_two->sync->storeUp(); }, 10000));
        advance(21000); // both marks ended
        // Model a: the first replica fails on it, then the operator clears it on the second (which
        // had marked it too). Model b: the second marks and clears it, then the first fails on it.
        m_one->marks.mark(alice, kA, failure(FailureKind::ServerError));
        advance(1000);
        m_two->marks.mark(alice, kA, failure(FailureKind::ServerError));
        m_two->marks.mark(alice, kB, failure(FailureKind::ServerError));
        advance(1000);
        failover::MarkFilter f;
        f.tenant = alice;
        QCOMPARE(m_two->marks.clear(f), 2);
        advance(1000);
        m_one->marks.mark(alice, kB, failure(FailureKind::ServerError));

        QVERIFY2(m_redis->start(), qPrintable(m_redis->error()));
        QVERIFY(test::waitUntil([&]() { return m_two->sync->storeUp(); }, 15000));
        QVERIFY(firstReconnects());
        // Everything the first replica sent on its return has reached the second once this has.
        m_one->marks.mark(bob, kA, failure(FailureKind::ServerError));
        QVERIFY(test::waitUntil([&]() { return m_two->marks.isDown(bob, kA); }, 10000));
        QVERIFY(test::waitUntil([&]() { return !m_one->marks.isDown(alice, kA); }, 5000));
        QVERIFY(!m_two->marks.isDown(alice, kA)); // the clear came later
        QVERIFY(m_one->marks.isDown(alice, kB));  // the failure came later
        QVERIFY(test::waitUntil([&]() { return m_two->marks.isDown(alice, kB); }, 5000));
    }

    // Probe E4 6: with Redis slow (0.9 s each way), a failure on the second replica, whose attempt
    // started after the first replica's strike but before it heard of it, counted strike 2 (40 s)
    // where one replica, deferring the marked candidate, would have stayed at strike 1 (20 s).
    void aFailureOnAReplicaThatHadNotHeardOfTheMarkAddsNoStrike() {
        const QString alice = QStringLiteral("alice");
        const qint64 startOne = m_one->clock.nowMs();
        advance(5);
        failover::MarkInfo m;
        m.tenant = alice;
        m.provider = kA.provider;
        m.baseUrl = kA.baseUrl;
        m.model = kA.modelId;
        m.kind = FailureKind::ServerError;
        m_one->sync->markSet(m, failure(FailureKind::ServerError), startOne); // strike 1, in Redis now
        advance(50); // the second replica starts its attempt 30 ms later, then hears of the mark
        const qint64 startTwo = m_two->clock.nowMs() - 20;
        QVERIFY(test::waitUntil([&]() { return m_two->mark(alice).has_value(); }, 10000));
        // Strike 1: 20 s from this failure (as a burst's later failure extends it), not 40 s.
        QCOMPARE(fail(*m_two, failure(FailureKind::ServerError), startTwo), qint64(20000));
        QCOMPARE(m_one->mark(alice)->strikes, 1);
        QCOMPARE(m_two->mark(alice)->strikes, 1);
        // An attempt made knowing the mark (every candidate marked: tried anyway) says what the mark
        // says (probe HV 1): no strike. The one after the mark ran out is the next.
        advance(1000);
        QCOMPARE(fail(*m_two, failure(FailureKind::ServerError), m_two->clock.nowMs()), qint64(19000));
        QCOMPARE(m_one->mark(alice)->strikes, 1);
        advance(20000);
        QCOMPARE(fail(*m_two, failure(FailureKind::ServerError), m_two->clock.nowMs()), qint64(40000));
        QCOMPARE(m_one->mark(alice)->strikes, 2);
    }

    // Probe J4 1: deployments kept apart by database on one Redis (prod on /0, stage on /1, one
    // prefix) shared the pub/sub channel, which ignores SELECT: a failure in stage marked prod's
    // replicas, and a clear in stage cleared prod's marks that prod's own Redis still held.
    void replicasOnAnotherDatabaseNeitherMarkNorClearOurs() {
        const QString alice = QStringLiteral("alice"), bob = QStringLiteral("bob"), carol = QStringLiteral("carol");
        QString stageUrl = m_redis->url();
        stageUrl.chop(1);
        Replica stage(stageUrl + QLatin1Char('1'), QStringLiteral("stage"), &m_wall);
        QVERIFY(test::waitUntil([&]() { return stage.sync->storeUp(); }, 5000));
        // Database 0 keeps the channel it always had: replicas of the version before still hear it.
        QCOMPARE(redis::RedisMarkSync::channelFor(QStringLiteral("t"), 0), QByteArray("t:marks"));

        stage.marks.mark(alice, kA, failure(FailureKind::ServerError));
        QVERIFY(test::waitUntil([&]() { return stage.changes > 0; }, 5000)); // published by now
        // A mark published after it reaches the other prod replica: stage's would have come first.
        m_one->marks.mark(bob, kA, failure(FailureKind::ServerError));
        QVERIFY(test::waitUntil([&]() { return m_two->mark(bob).has_value(); }, 10000));
        QVERIFY2(!m_two->mark(alice), "stage's failure marked prod");
        QVERIFY(!m_one->mark(alice));

        // Prod's own mark for alice, then a clear of every mark in stage.
        fail(*m_one, failure(FailureKind::ServerError), std::nullopt, alice);
        QVERIFY(stage.marks.clear({}) > 0);
        QVERIFY(test::waitUntil( // the clear's script has run (and published)
            [&]() {
                return m_redis->command({"EVAL", "redis.call('SELECT', 1) return #redis.call('KEYS', 't:mark:*')", "0"})
                    .startsWith(":0");
            },
            10000));
        m_one->marks.mark(carol, kA, failure(FailureKind::ServerError));
        QVERIFY(test::waitUntil([&]() { return m_two->mark(carol).has_value(); }, 10000));
        QVERIFY2(m_two->mark(alice) && m_one->mark(alice), "stage's clear cleared prod's marks");
        QVERIFY(m_redis->command({"KEYS", "t:mark:*"}).startsWith("*3"));
    }

    // Probe J4 2: Redis lost its keys with both replicas connected (FLUSHALL, FLUSHDB): its set
    // and clear numbers started over at 1, and each replica ignored every new set and clear of a
    // mark it had applied a higher number for, until the numbers passed it again. Each replica
    // notices, and takes Redis's state as after a reconnect.
    void marksAreSharedAgainAfterRedisLosesItsKeys() {
        const QString alice = QStringLiteral("alice");
        fail(*m_one, failure(FailureKind::ServerError));
        advance(21000);
        fail(*m_two, failure(FailureKind::ServerError)); // strike 2
        QCOMPARE(m_one->marks.clear({}), 1);
        QVERIFY(test::waitUntil([&]() { return !m_two->mark(alice); }, 10000));
        QVERIFY(m_redis->command({"GET", "t:seq"}).contains("\r\n3\r\n"));

        QVERIFY(m_redis->command({"FLUSHALL"}).startsWith("+OK"));
        advance(1000);
        m_two->marks.mark(alice, kA, failure(FailureKind::ServerError)); // a new failure: number 1
        QVERIFY2(test::waitUntil([&]() { return m_one->mark(alice).has_value(); }, 5000),
                 "a mark set after the flush did not reach the other replica");
        QCOMPARE(m_one->mark(alice)->strikes, 1);
        // Clears are heard again too.
        QCOMPARE(m_two->marks.clear({}), 1);
        QVERIFY2(test::waitUntil([&]() { return !m_one->mark(alice); }, 5000),
                 "a clear made after the flush did not reach the other replica");
        QVERIFY(m_one->sync->storeUp() && m_two->sync->storeUp());
        for (Replica *r : {m_one.get(), m_two.get()})
            QCOMPARE(r->logs.filter(QStringLiteral("Redis lost its keys")).size(), 1); // said once each
    }

    // Probe J4 6: during an outage the second replica clears alice's mark, then the first, which
    // still held it, fails on the candidate (a try begun while the mark stood: no strike) with
    // Retry-After 120 s, lengthening the mark. The failure is the later event and stands, whichever
    // replica comes back first; it was undone everywhere, the push carrying the last strike's time.
    void aFailureLengtheningAMarkAfterAClearStandsWhenRedisReturns_data() {
        QTest::addColumn<bool>("clearingReplicaFirst");
        QTest::newRow("the clearing replica back first") << true;
        QTest::newRow("the failing replica back first") << false;
    }
    void aFailureLengtheningAMarkAfterAClearStandsWhenRedisReturns() {
        QFETCH(bool, clearingReplicaFirst);
        m_net = std::make_unique<test::FakeClock>();
        m_net2 = std::make_unique<test::FakeClock>();
        m_one = std::make_unique<Replica>(m_redis->url(), QStringLiteral("one"), &m_wall, m_net.get());
        m_two = std::make_unique<Replica>(m_redis->url(), QStringLiteral("two"), &m_wall, m_net2.get());
        test::FakeClock &net2 = *m_net2;
        QVERIFY(test::waitUntil([&]() { return m_one->sync->storeUp() && m_two->sync->storeUp(); }, 5000));
        auto reconnects = [](Replica &r, test::FakeClock &net) {
            for (int i = 0; i < 60 && !r.sync->storeUp(); ++i) {
                net.advance(250);
                test::waitUntil([&]() { return r.sync->storeUp(); }, 500);
            }
            return r.sync->storeUp();
        };
        const QString alice = QStringLiteral("alice");
        fail(*m_one, failure(FailureKind::ServerError)); // strike 1, 20 s
        m_redis->kill();
        QVERIFY(test::waitUntil([&]() { return !m_one->sync->storeUp() && !m_two->sync->storeUp(); }, 10000));
        advance(1000);
        failover::MarkFilter alicesA;
        alicesA.tenant = alice;
        QCOMPARE(m_two->marks.clear(alicesA), 1);
        advance(1000);
        const qint64 began = m_one->clock.nowMs();
        advance(5);
        QCOMPARE(m_one->marks.mark(alice, kA, failure(FailureKind::RateLimited, 120000), began), qint64(120000));
        QCOMPARE(m_one->mark(alice)->strikes, 1); // begun while the mark stood: no strike

        QVERIFY2(m_redis->start(), qPrintable(m_redis->error()));
        if (clearingReplicaFirst) {
            QVERIFY(reconnects(*m_two, net2));
            QVERIFY(reconnects(*m_one, *m_net));
        } else {
            QVERIFY(reconnects(*m_one, *m_net));
            QVERIFY(reconnects(*m_two, net2));
        }
        // What each sent on its return has reached the other once these have.
        m_one->marks.mark(QStringLiteral("bob"), kA, failure(FailureKind::ServerError));
        m_two->marks.mark(QStringLiteral("carol"), kA, failure(FailureKind::ServerError));
        QVERIFY(test::waitUntil(
            [&]() { return m_two->mark(QStringLiteral("bob")) && m_one->mark(QStringLiteral("carol")); }, 10000));
        for (Replica *r : {m_one.get(), m_two.get()}) {
            QVERIFY2(test::waitUntil([&]() { return r->mark(alice).has_value(); }, 5000),
                     "the earlier clear beat the later failure");
            QVERIFY(r->mark(alice)->expiresAtMs - r->clock.nowMs() > 100000);
        }
    }

    config::MarksConfig redisMarks() const {
        config::MarksConfig marks;
        marks.store = QStringLiteral("redis");
        marks.url = m_redis->url();
        marks.prefix = QStringLiteral("t");
        return marks;
    }
    static bool saidNextStart(const QSignalSpy &logs) {
        for (const auto &args : logs) {
            const QJsonObject line = args.at(0).toJsonObject();
            if (line.value(QStringLiteral("msg")).toString() ==
                    QLatin1String("marks store changes at the next start") &&
                line.value(QStringLiteral("level")).toString() == QLatin1String("warn"))
                return true;
        }
        return false;
    }

    // Probe J4 4: the marks store is the one started with the process, but after a reload that
    // changed `marks`, /healthz and /metrics described the file's: "memory" while marks still went
    // through Redis, "local only (Redis unreachable)" with a Redis that answers and was never
    // contacted. They describe the running store, and the reload says the change waits for a restart.
    void aReloadChangingTheMarksStoreSaysItTakesEffectAtTheNextStart() {
        {
            test::GatewayFixture gw;
            gw.config.marks = redisMarks();
            gw.start();
            QVERIFY(test::waitUntil(
                [&]() {
                    return gw.get(QStringLiteral("/healthz"))
                        .json()
                        .value(QStringLiteral("marks"))
                        .toString()
                        .startsWith(QStringLiteral("shared via"));
                },
                5000));
            QSignalSpy logs(gw.engine().telemetry(), &telemetry::Telemetry::logLine);
            config::Config memory = *gw.engine().config();
            memory.marks = {};
            gw.engine().applyConfig(memory);
            QVERIFY(saidNextStart(logs));
            const QString said = gw.get(QStringLiteral("/healthz")).json().value(QStringLiteral("marks")).toString();
            QVERIFY2(said.startsWith(QStringLiteral("shared via %1").arg(m_redis->url())), qPrintable(said));
            QVERIFY(gw.get(QStringLiteral("/metrics")).body.contains("switchman_marks_store_up 1"));
            // Still shared: a mark from another replica reaches it.
            m_one->marks.mark(QStringLiteral("local"),
                              {QStringLiteral("pa"), QStringLiteral("claude-a"), gw.anthropicA.baseUrl()},
                              failure(FailureKind::ServerError));
            QVERIFY(test::waitUntil([&]() { return gw.engine().marks().size() == 1; }, 5000));
            // Said at each reload while the file differs from what runs, and no more once it does not.
            logs.clear();
            gw.engine().applyConfig(*gw.engine().config());
            QVERIFY(saidNextStart(logs));
            config::Config back = memory;
            back.marks = redisMarks();
            logs.clear();
            gw.engine().applyConfig(back);
            QVERIFY(!saidNextStart(logs));
            QVERIFY(gw.engine().waitingForRestart().isEmpty()); // and /admin/reload says nothing waits
        }
        {
            test::GatewayFixture gw;
            gw.start();
            QSignalSpy logs(gw.engine().telemetry(), &telemetry::Telemetry::logLine);
            config::Config shared = *gw.engine().config();
            shared.marks = redisMarks();
            gw.engine().applyConfig(shared);
            QVERIFY(saidNextStart(logs));
            // The reload's answer says so too (probe R3 F3: {"reloaded":true} and a log line only).
            QCOMPARE(gw.engine().waitingForRestart(), QStringList{QStringLiteral("marks")});
            QCOMPARE(gw.get(QStringLiteral("/healthz")).json().value(QStringLiteral("marks")).toString(),
                     QStringLiteral("memory"));
            QVERIFY(gw.get(QStringLiteral("/metrics")).body.contains("switchman_marks_store_up 1"));
            QVERIFY(!gw.engine().markSync());
        }
    }

    // Probe J4 5: a reload drops the marks of a provider or tenant it removes; when a later reload
    // brought it back, the replica did not take its live marks from Redis again, and sent the next
    // request to a provider every other replica knew was down.
    void aProviderOrTenantBackByReloadGetsItsLiveMarksAgain() {
        m_wall = QDateTime::currentMSecsSinceEpoch(); // the engine's wall clock is the system's
        test::GatewayFixture gw;
        gw.config.marks = redisMarks();
        gw.config.tenants.insert(QStringLiteral("alice"), tenant(QStringLiteral("alice")));
        gw.config.tenants.insert(QStringLiteral("bob"), tenant(QStringLiteral("bob")));
        gw.start();
        QVERIFY(test::waitUntil([&]() { return gw.engine().markSync() && gw.engine().markSync()->storeUp(); }, 5000));
        const failover::CandidateRef pa{QStringLiteral("pa"), QStringLiteral("claude-a"), gw.anthropicA.baseUrl()};
        auto held = [&](const QString &tenant) {
            const auto marks = gw.engine().marks();
            return std::any_of(marks.cbegin(), marks.cend(), [&](const failover::MarkInfo &m) {
                return m.tenant == tenant && m.provider == pa.provider;
            });
        };
        m_one->marks.mark(QStringLiteral("alice"), pa, failure(FailureKind::ServerError));
        m_one->marks.mark(QStringLiteral("bob"), pa, failure(FailureKind::ServerError));
        QVERIFY(test::waitUntil([&]() { return held(QStringLiteral("alice")) && held(QStringLiteral("bob")); }, 5000));
        const config::Config full = *gw.engine().config();

        config::Config withoutPa = full;
        withoutPa.providers.remove(QStringLiteral("pa"));
        withoutPa.models.remove(QStringLiteral("pa/claude-a"));
        withoutPa.routes[QStringLiteral("chain")].candidates.removeAll(QStringLiteral("pa/claude-a"));
        gw.engine().applyConfig(withoutPa);
        QVERIFY(gw.engine().marks().isEmpty());
        m_one->marks.mark(QStringLiteral("carol"), pa, failure(FailureKind::ServerError)); // made meanwhile
        QVERIFY(test::waitUntil([&]() { return m_two->mark(QStringLiteral("carol")).has_value(); }, 5000));
        config::Config withCarol = full;
        withCarol.tenants.insert(QStringLiteral("carol"), tenant(QStringLiteral("carol")));
        gw.engine().applyConfig(withCarol);
        QVERIFY2(test::waitUntil(
                     [&]() {
                         return held(QStringLiteral("alice")) && held(QStringLiteral("bob")) &&
                                held(QStringLiteral("carol"));
                     },
                     5000),
                 "the provider's live marks did not come back with it");

        config::Config withoutBob = withCarol;
        withoutBob.tenants.remove(QStringLiteral("bob"));
        gw.engine().applyConfig(withoutBob);
        QVERIFY(!held(QStringLiteral("bob")));
        gw.engine().applyConfig(withCarol);
        QVERIFY2(test::waitUntil([&]() { return held(QStringLiteral("bob")); }, 5000),
                 "the tenant's live mark did not come back with it");
        QCOMPARE(gw.engine().marks().size(), 3);
    }

    // Probe E4 8: a wrong password, or none where Redis wants one, read "Redis unreachable".
    void aRefusedPasswordIsSaidSo() {
        QVERIFY(m_redis->command({"CONFIG", "SET", "requirepass", "right"}).startsWith("+OK"));
        Replica none(m_redis->url(), QStringLiteral("none"), &m_wall);
        Replica wrong(QStringLiteral("redis://:wrong@127.0.0.1:%1/0").arg(m_redis->port()), QStringLiteral("wrong"),
                      &m_wall);
        Replica right(QStringLiteral("redis://:right@127.0.0.1:%1/0").arg(m_redis->port()), QStringLiteral("right"),
                      &m_wall);
        QVERIFY(test::waitUntil([&]() { return right.sync->storeUp(); }, 5000));
        for (Replica *r : {&none, &wrong}) {
            QVERIFY(test::waitUntil([&]() { return !r->logs.isEmpty(); }, 5000));
            QCOMPARE(r->sync->describe(), QStringLiteral("local only (Redis refused the password)"));
            QCOMPARE(r->logs, QStringList{QStringLiteral("warn marks: local only (Redis refused the password)")});
        }
    }
};

QTEST_GUILESS_MAIN(TestRedisMarks)
#include "test_redis_marks.moc"
