// Two real `switchman --headless` processes sharing one private redis-server,
// in front of fake upstreams in this test process: what a team running
// replicas behind a load balancer sees.

#include "core/demo/fake_upstream.h"
#include "redis_server.h"
#include "signal_wait.h"

#include <QCryptographicHash>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QProcess>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <memory>

using namespace sw;

namespace {

const QByteArray kAliceKey = "test-gateway-key-alice";
const QByteArray kBobKey = "test-gateway-key-bob";

quint16 freePort() {
    QTcpServer probe;
    probe.listen(QHostAddress::LocalHost, 0);
    return probe.serverPort();
}

struct Reply {
    int status = 0;
    QByteArray body;
    QJsonObject json() const { return QJsonDocument::fromJson(body).object(); }
};

class Replica {
public:
    Replica(const QString &configPath) : m_port(freePort()) {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("DISPLAY"));
        env.remove(QStringLiteral("WAYLAND_DISPLAY"));
        // The usage ledger goes to $XDG_DATA_HOME: a private one, never the user's.
        env.insert(QStringLiteral("XDG_DATA_HOME"), m_data.path());
        m_process.setProcessEnvironment(env);
        m_process.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        m_process.start(QStringLiteral(SWITCHMAN_BIN),
                        {QStringLiteral("--headless"), QStringLiteral("--config"), configPath,
                         QStringLiteral("--listen"), QStringLiteral("127.0.0.1:%1").arg(m_port)});
    }
    ~Replica() {
        // A replica exits at once on SIGTERM; one that does not may be a sanitizer writing its
        // report, which a kill would cut to its first line: it gets the time to finish it.
        m_process.terminate();
        if (!m_process.waitForFinished(30000))
            m_process.kill();
        m_process.waitForFinished(2000);
    }
    Reply send(const QByteArray &method, const QString &path, const QByteArray &key, const QByteArray &body = {}) {
        QNetworkRequest req(QUrl(QStringLiteral("http://127.0.0.1:%1%2").arg(m_port).arg(path)));
        req.setRawHeader("x-api-key", key);
        req.setRawHeader("anthropic-version", "2023-06-01");
        if (!body.isEmpty())
            req.setHeader(QNetworkRequest::ContentTypeHeader, QByteArrayLiteral("application/json"));
        QNetworkReply *reply = m_nam.sendCustomRequest(req, method, body);
        QEventLoop loop;
        QObject::connect(reply, &QNetworkReply::finished, &loop, &QEventLoop::quit);
        QTimer::singleShot(20000, &loop, &QEventLoop::quit);
        loop.exec();
        Reply r;
        r.status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
        r.body = reply->readAll();
        reply->deleteLater();
        return r;
    }
    quint16 port() const { return m_port; }
    static QByteArray chatBody() {
        const QJsonObject body{{QStringLiteral("model"), QStringLiteral("chain")},
                               {QStringLiteral("max_tokens"), 64},
                               {QStringLiteral("messages"),
                                QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                                       {QStringLiteral("content"), QStringLiteral("hello")}}}}};
        return QJsonDocument(body).toJson(QJsonDocument::Compact);
    }
    Reply chat(const QByteArray &key = kAliceKey) {
        const QJsonObject body{{QStringLiteral("model"), QStringLiteral("chain")},
                               {QStringLiteral("max_tokens"), 64},
                               {QStringLiteral("messages"),
                                QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                                       {QStringLiteral("content"), QStringLiteral("hello")}}}}};
        return send("POST", QStringLiteral("/v1/messages"), key, QJsonDocument(body).toJson(QJsonDocument::Compact));
    }
    QJsonArray marks() {
        return send("GET", QStringLiteral("/admin/marks"), kAliceKey).json().value(QStringLiteral("marks")).toArray();
    }
    QString store() {
        return send("GET", QStringLiteral("/healthz"), kAliceKey).json().value(QStringLiteral("marks")).toString();
    }
    bool waitReady() {
        return test::waitUntil([&]() { return send("GET", QStringLiteral("/healthz"), {}).status == 200; }, 15000);
    }

private:
    quint16 m_port;
    QTemporaryDir m_data;
    QProcess m_process;
    QNetworkAccessManager m_nam;
};

QByteArray sha(const QByteArray &key) {
    return "sha256:" + QCryptographicHash::hash(key, QCryptographicHash::Sha256).toHex();
}

} // namespace

class TestRedisReplicas : public QObject {
    Q_OBJECT

    std::unique_ptr<test::RedisServer> m_redis;
    std::unique_ptr<demo::FakeUpstream> m_a, m_b;
    QTemporaryDir m_dir;
    std::unique_ptr<Replica> m_one, m_two;

    QString writeConfig(const QString &redisUrl, const QString &name = QStringLiteral("config.json")) {
        const QJsonObject provider{{QStringLiteral("api"), QStringLiteral("anthropic-messages")},
                                   {QStringLiteral("credentials"), QJsonArray{}}};
        QJsonObject pa = provider, pb = provider;
        pa.insert(QStringLiteral("baseUrl"), m_a->baseUrl());
        pb.insert(QStringLiteral("baseUrl"), m_b->baseUrl());
        const QJsonObject config{
            {QStringLiteral("listen"), QStringLiteral("127.0.0.1:0")},
            {QStringLiteral("providers"), QJsonObject{{QStringLiteral("pa"), pa}, {QStringLiteral("pb"), pb}}},
            {QStringLiteral("models"), QJsonObject{{QStringLiteral("pa/claude-a"), QJsonObject{}},
                                                   {QStringLiteral("pb/claude-b"), QJsonObject{}}}},
            {QStringLiteral("routes"),
             QJsonObject{{QStringLiteral("chain"),
                          QJsonObject{{QStringLiteral("candidates"),
                                       QJsonArray{QStringLiteral("pa/claude-a"), QStringLiteral("pb/claude-b")}}}}}},
            {QStringLiteral("tenants"),
             QJsonObject{{QStringLiteral("alice"),
                          QJsonObject{{QStringLiteral("keys"), QJsonArray{QString::fromLatin1(sha(kAliceKey))}},
                                      {QStringLiteral("admin"), true}}},
                         {QStringLiteral("bob"),
                          QJsonObject{{QStringLiteral("keys"), QJsonArray{QString::fromLatin1(sha(kBobKey))}}}}}},
            {QStringLiteral("marks"), QJsonObject{{QStringLiteral("store"), QStringLiteral("redis")},
                                                  {QStringLiteral("url"), redisUrl},
                                                  {QStringLiteral("prefix"), QStringLiteral("replicatest")}}}};
        const QString path = m_dir.filePath(name);
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly))
            return {};
        f.write(QJsonDocument(config).toJson());
        return path;
    }
    static demo::Fault status503(int delayMs = 0) {
        demo::Fault f;
        f.kind = demo::Fault::Status;
        f.status = 503;
        f.chunkDelayMs = delayMs;
        return f;
    }
    void failA() { m_a->setFault(status503()); }

private Q_SLOTS:
    void init() {
        m_redis = std::make_unique<test::RedisServer>();
        QVERIFY2(m_redis->start(), qPrintable(m_redis->error()));
        m_a = std::make_unique<demo::FakeUpstream>();
        m_b = std::make_unique<demo::FakeUpstream>();
        QVERIFY(m_a->listen() && m_b->listen());
        const QString config = writeConfig(m_redis->url());
        m_one = std::make_unique<Replica>(config);
        m_two = std::make_unique<Replica>(config);
        QVERIFY(m_one->waitReady() && m_two->waitReady());
        QVERIFY(test::waitUntil(
            [&]() {
                return m_one->store().startsWith(QStringLiteral("shared via")) &&
                       m_two->store().startsWith(QStringLiteral("shared via"));
            },
            10000));
    }
    void cleanup() {
        m_one.reset();
        m_two.reset();
        m_redis.reset();
    }

    void anOutageSeenByOneReplicaSparesTheOther() {
        failA();
        QCOMPARE(m_one->chat().status, 200); // answered by B after A's 503
        QCOMPARE(m_a->requests().size(), 1);
        QVERIFY(test::waitUntil([&]() { return m_two->marks().size() == 1; }, 2000));
        m_a->clearRequests();
        QCOMPARE(m_two->chat().status, 200);
        QCOMPARE(m_a->requests().size(), 0); // replica 2 skipped A without calling it

        QElapsedTimer reads;
        reads.start();
        const QJsonObject one = m_one->marks().first().toObject();
        const QJsonObject two = m_two->marks().first().toObject();
        const qint64 between = reads.elapsed(); // two replicas under ASan may take a while to answer
        QCOMPARE(two.value(QStringLiteral("provider")).toString(), QStringLiteral("pa"));
        QCOMPARE(two.value(QStringLiteral("strikes")).toInt(), 1);
        QVERIFY(one.value(QStringLiteral("setBy")).isNull());              // replica 1 set it
        QVERIFY(!two.value(QStringLiteral("setBy")).toString().isEmpty()); // replica 2 names replica 1
        const double gap = qAbs(one.value(QStringLiteral("remainingMs")).toDouble() -
                                two.value(QStringLiteral("remainingMs")).toDouble());
        qInfo("remaining time on the two replicas differs by %.0f ms", gap);
        QVERIFY2(gap <= 100 + between, qPrintable(QStringLiteral("%1 ms apart, %2 ms between the reads")
                                                      .arg(gap)
                                                      .arg(between))); // ±100 ms, plus the time between the reads
    }

    void aClearOnOneReplicaBringsTheProviderBackOnTheOther() {
        failA();
        QCOMPARE(m_one->chat().status, 200);
        QVERIFY(test::waitUntil([&]() { return m_two->marks().size() == 1; }, 2000));
        m_a->clearFault();
        QCOMPARE(m_two->send("DELETE", QStringLiteral("/admin/marks"), kAliceKey)
                     .json()
                     .value(QStringLiteral("cleared"))
                     .toInt(),
                 1);
        QVERIFY(test::waitUntil([&]() { return m_one->marks().isEmpty(); }, 2000));
        m_a->clearRequests();
        QCOMPARE(m_one->chat().status, 200);
        QCOMPARE(m_a->requests().size(), 1); // A answers again on replica 1
    }

    void sixParallelFailuresAcrossBothReplicasAreOneStrike() {
        // One blip, six parallel requests split across the replicas: each try started before
        // the first mark was set, so the shared ladder takes one strike (20 s), not six.
        m_a->setFault(status503(1500)); // every request reaches A before the first 503 answers, even under ASan
        m_b->clearFault();
        QList<QNetworkReply *> replies;
        QNetworkAccessManager nam;
        for (int i = 0; i < 6; ++i) {
            const quint16 port = (i % 2 ? m_two : m_one)->port();
            QNetworkRequest req(QUrl(QStringLiteral("http://127.0.0.1:%1/v1/messages").arg(port)));
            req.setRawHeader("x-api-key", kAliceKey);
            req.setHeader(QNetworkRequest::ContentTypeHeader, QByteArrayLiteral("application/json"));
            replies << nam.post(req, Replica::chatBody());
        }
        QVERIFY(test::waitUntil(
            [&]() {
                return std::all_of(replies.begin(), replies.end(), [](QNetworkReply *r) { return r->isFinished(); });
            },
            20000));
        for (QNetworkReply *r : replies)
            QCOMPARE(r->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt(), 200);
        QCOMPARE(m_a->requests().size(), 6); // all six reached A before any mark existed
        QVERIFY(test::waitUntil([&]() { return m_two->marks().size() == 1 && m_one->marks().size() == 1; }, 2000));
        QTest::qWait(200); // let every script answer land
        const QJsonObject mark = m_one->marks().first().toObject();
        QCOMPARE(mark.value(QStringLiteral("strikes")).toInt(), 1);
        QVERIFY(mark.value(QStringLiteral("remainingMs")).toDouble() <= 20000);
        QCOMPARE(m_two->marks().first().toObject().value(QStringLiteral("strikes")).toInt(), 1);
    }

    void aTenantsMarkNeverSteersAnotherAcrossReplicas() {
        failA();
        QCOMPARE(m_one->chat(kAliceKey).status, 200);
        QVERIFY(test::waitUntil([&]() { return m_two->marks().size() == 1; }, 2000));
        m_a->clearFault();
        m_a->clearRequests();
        QCOMPARE(m_two->chat(kBobKey).status, 200);
        QCOMPARE(m_a->requests().size(), 1); // bob still reaches A
    }

    // A Redis that accepts connections and never answers (a stopped process: its kernel still
    // completes the connect) was shown shared in /healthz after every reconnect. It is local, with
    // the reason, and requests go on as with Redis down.
    void aHungRedisIsReportedLocalNotShared() {
        QTcpServer hung;
        QVERIFY(hung.listen(QHostAddress::LocalHost));
        Replica three(
            writeConfig(QStringLiteral("redis://127.0.0.1:%1").arg(hung.serverPort()), QStringLiteral("hung.json")));
        QVERIFY(three.waitReady());
        QStringList seen;
        QVERIFY(test::waitUntil(
            [&]() {
                seen << three.store();
                return seen.last() == QLatin1String("local only (Redis not answering)");
            },
            15000));
        QVERIFY2(seen.filter(QStringLiteral("shared")).isEmpty(), qPrintable(seen.join(QStringLiteral(" | "))));
        QVERIFY(three.send("GET", QStringLiteral("/metrics"), kAliceKey).body.contains("switchman_marks_store_up 0"));
        failA();
        QCOMPARE(three.chat().status, 200); // answered by B, A marked locally
        QCOMPARE(three.marks().size(), 1);
        QCOMPARE(three.store(), QStringLiteral("local only (Redis not answering)"));
    }

    // A Redis that answers and refuses every write (READONLY: the primary was demoted by a failover)
    // was reported shared, metrics said store up, and no mark reached the other replica.
    void aRedisRefusingWritesIsReportedLocalThenSharedAgain() {
        QVERIFY(m_redis->command({"REPLICAOF", "127.0.0.1", "1"}).startsWith("+OK")); // no master there
        QVERIFY(test::waitUntil(
            [&]() {
                return m_one->store().startsWith(QStringLiteral("local only (Redis refuses writes: READONLY")) &&
                       m_two->store().startsWith(QStringLiteral("local only (Redis refuses writes: READONLY"));
            },
            10000));
        QVERIFY(m_one->send("GET", QStringLiteral("/metrics"), kAliceKey).body.contains("switchman_marks_store_up 0"));
        failA();
        QCOMPARE(m_one->chat().status, 200); // answered by B, A marked locally
        QCOMPARE(m_one->marks().size(), 1);
        QCOMPARE(m_two->marks().size(), 0);
        QVERIFY(m_redis->command({"REPLICAOF", "NO", "ONE"}).startsWith("+OK"));
        QVERIFY(test::waitUntil(
            [&]() {
                return m_one->store().startsWith(QStringLiteral("shared via")) &&
                       m_two->store().startsWith(QStringLiteral("shared via"));
            },
            15000));
        QVERIFY(m_one->send("GET", QStringLiteral("/metrics"), kAliceKey).body.contains("switchman_marks_store_up 1"));
        // The mark learned meanwhile reaches the other replica.
        QVERIFY(test::waitUntil([&]() { return m_two->marks().size() == 1; }, 5000));
    }

    // Whatever can publish on the marks channel made every replica hold what it sent: any tenant,
    // provider or model, a 1 MiB lastError each, and expiries of 2^63 ms (shown, and sent to
    // clients as Retry-After, in the quintillions).
    void marksFromRedisAreCheckedByEachReplica() {
        auto publish = [&](const QString &tenant, const QString &provider, const QString &model,
                           const QString &expiresAt, const QString &lastError) {
            const QJsonObject o{{QStringLiteral("op"), QStringLiteral("set")},
                                {QStringLiteral("replica"), QStringLiteral("elsewhere")},
                                {QStringLiteral("tenant"), tenant},
                                {QStringLiteral("provider"), provider},
                                {QStringLiteral("baseUrl"), m_a->baseUrl()},
                                {QStringLiteral("model"), model},
                                {QStringLiteral("kind"), QStringLiteral("server_error")},
                                {QStringLiteral("strikes"), 1},
                                {QStringLiteral("ttlMs"), 1e300},
                                {QStringLiteral("expiresAt"), expiresAt},
                                {QStringLiteral("setAt"), QStringLiteral("0")},
                                {QStringLiteral("lastError"), lastError}};
            return m_redis->command({"PUBLISH", "replicatest:marks", QJsonDocument(o).toJson(QJsonDocument::Compact)})
                .startsWith(":2"); // both replicas subscribe
        };
        const QString huge(1 << 20, QLatin1Char('E'));
        const QString never = QStringLiteral("9223372036854775807");
        for (int i = 0; i < 20; ++i)
            QVERIFY(publish(QStringLiteral("alice"), QStringLiteral("pa"), QStringLiteral("m%1").arg(i), never, huge));
        QVERIFY(publish(QStringLiteral("mallory"), QStringLiteral("pa"), QStringLiteral("claude-a"), never, huge));
        QVERIFY(publish(QStringLiteral("alice"), QStringLiteral("px"), QStringLiteral("claude-a"), never, huge));
        QVERIFY(publish(QStringLiteral("alice"), QStringLiteral("pa"), QStringLiteral("claude-a"), never, huge));
        QVERIFY(test::waitUntil([&]() { return m_one->marks().size() == 1 && m_two->marks().size() == 1; }, 5000));
        QTest::qWait(200);
        for (Replica *r : {m_one.get(), m_two.get()}) {
            const QJsonArray marks = r->marks();
            QCOMPARE(marks.size(), 1); // only the one this configuration has
            const QJsonObject m = marks.first().toObject();
            QCOMPARE(m.value(QStringLiteral("tenant")).toString(), QStringLiteral("alice"));
            QCOMPARE(m.value(QStringLiteral("model")).toString(), QStringLiteral("claude-a"));
            QVERIFY(m.value(QStringLiteral("remainingMs")).toDouble() <= 300000); // the ladder's cap
            QCOMPARE(m.value(QStringLiteral("lastError")).toString().size(), 500);
        }
    }

    void redisDownKeepsEveryRequestAnsweredThenResyncs() {
        m_redis->kill();
        QVERIFY(test::waitUntil([&]() { return m_one->store().startsWith(QStringLiteral("local only")); }, 5000));
        QVERIFY(m_one->send("GET", QStringLiteral("/metrics"), kAliceKey).body.contains("switchman_marks_store_up 0"));
        failA();
        for (int i = 0; i < 6; ++i)
            QCOMPARE((i % 2 ? m_two : m_one)->chat().status, 200); // zero failed requests
        QVERIFY(!m_one->marks().isEmpty());                        // learned locally
        QVERIFY2(m_redis->start(), qPrintable(m_redis->error()));
        QVERIFY(test::waitUntil(
            [&]() {
                return m_one->store().startsWith(QStringLiteral("shared via")) &&
                       m_two->store().startsWith(QStringLiteral("shared via"));
            },
            15000));
        QVERIFY(m_one->send("GET", QStringLiteral("/metrics"), kAliceKey).body.contains("switchman_marks_store_up 1"));
        // Both replicas now hold the same mark, as Redis does.
        QVERIFY(test::waitUntil([&]() { return m_one->marks().size() == 1 && m_two->marks().size() == 1; }, 3000));
        QVERIFY(m_redis->command({"KEYS", "replicatest:mark:*"}).startsWith("*1"));
    }
};

QTEST_GUILESS_MAIN(TestRedisReplicas)
#include "test_redis_replicas.moc"
