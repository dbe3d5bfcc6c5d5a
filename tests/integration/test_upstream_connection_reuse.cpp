// Upstream keep-alive through the real engine: a run of requests to a plain-http
// provider (the socket transport: Ollama, vLLM, llama.cpp, every benchmark) must
// reuse upstream connections, so the number the fake upstream accepts stays at
// the concurrency of the run, never at its request count.
#include "gateway_fixture.h"

#include <QTest>

using namespace sw;
using namespace sw::test;

class TestUpstreamConnectionReuse : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void sequentialRequestsShareOneConnection_data();
    void sequentialRequestsShareOneConnection();
    void concurrentWavesStayAtTheConcurrency();
    void failedAttemptsDoNotLeakConnections();
};

void TestUpstreamConnectionReuse::sequentialRequestsShareOneConnection_data() {
    QTest::addColumn<QString>("route");
    QTest::addColumn<QString>("model");
    QTest::addColumn<bool>("stream");
    for (bool stream : {false, true}) {
        const char *mode = stream ? "stream" : "json";
        // Same API (passthrough frames) and translated, each upstream API.
        QTest::addRow("messages to anthropic %s", mode) << "/v1/messages"
                                                        << "pa/claude-a" << stream;
        QTest::addRow("chat to openai %s", mode) << "/v1/chat/completions"
                                                 << "pb/gpt-b" << stream;
        QTest::addRow("chat to anthropic %s", mode) << "/v1/chat/completions"
                                                    << "pa/claude-a" << stream;
        QTest::addRow("messages to responses %s", mode) << "/v1/messages"
                                                        << "pd/resp-d" << stream;
        QTest::addRow("chat to google %s", mode) << "/v1/chat/completions"
                                                 << "pe/gemini-e" << stream;
    }
}

void TestUpstreamConnectionReuse::sequentialRequestsShareOneConnection() {
    QFETCH(QString, route);
    QFETCH(QString, model);
    QFETCH(bool, stream);
    GatewayFixture gw;
    gw.start();
    const QString provider = model.section(QLatin1Char('/'), 0, 0);
    demo::FakeUpstream &fake = provider == QLatin1String("pa")   ? gw.anthropicA
                               : provider == QLatin1String("pb") ? gw.openaiB
                               : provider == QLatin1String("pd") ? gw.responsesD
                                                                 : gw.googleE;
    constexpr int kRequests = 30;
    for (int i = 0; i < kRequests; ++i) {
        const QJsonObject body = route == QLatin1String("/v1/messages")
                                     ? GatewayFixture::anthropicBody(model, QStringLiteral("hi %1").arg(i), stream)
                                     : GatewayFixture::openaiBody(model, QStringLiteral("hi %1").arg(i), stream);
        const HttpResult r = gw.post(route, body);
        QCOMPARE(r.status, 200);
        QVERIFY2(!r.body.isEmpty(), "empty answer");
    }
    QCOMPARE(fake.requests().size(), kRequests);
    QCOMPARE(fake.acceptedConnections(), 1);
}

void TestUpstreamConnectionReuse::concurrentWavesStayAtTheConcurrency() {
    GatewayFixture gw;
    gw.start();
    // The fixture's client holds at most 6 connections to the gateway, so 6 is the concurrency.
    constexpr int kConcurrency = 6;
    constexpr int kWaves = 8;
    for (int wave = 0; wave < kWaves; ++wave) {
        QList<QNetworkReply *> replies;
        for (int i = 0; i < kConcurrency; ++i) {
            const bool stream = (wave + i) % 2 == 0;
            replies << gw.postAsync(QStringLiteral("/v1/messages"),
                                    GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"),
                                                                  QStringLiteral("wave %1 #%2").arg(wave).arg(i),
                                                                  stream));
        }
        for (QNetworkReply *reply : replies) {
            const HttpResult r = gw.wait(reply);
            QCOMPARE(r.status, 200);
        }
    }
    QCOMPARE(gw.anthropicA.requests().size(), kConcurrency * kWaves);
    QVERIFY2(gw.anthropicA.acceptedConnections() <= kConcurrency,
             qPrintable(QStringLiteral("%1 upstream connections for %2 requests at concurrency %3")
                            .arg(gw.anthropicA.acceptedConnections())
                            .arg(kConcurrency * kWaves)
                            .arg(kConcurrency)));
}

void TestUpstreamConnectionReuse::failedAttemptsDoNotLeakConnections() {
    // An error status is a complete response: its connection is as reusable as a 200's.
    GatewayFixture gw;
    gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pa/claude-a"),
                                                            QStringLiteral("pc/claude-c")};
    gw.start();
    demo::Fault f;
    f.kind = demo::Fault::Status;
    f.status = 400; // a client error: no mark, no failover, the next request tries pa again
    constexpr int kRequests = 10;
    for (int i = 0; i < kRequests; ++i) {
        gw.anthropicA.pushFault(f);
        const bool stream = i % 2 == 0;
        const HttpResult r =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("hi %1").arg(i), stream));
        // A stream has its 200 head already (early headers); the error comes in band.
        QCOMPARE(r.status, stream ? 200 : 400);
        QVERIFY2(r.body.contains("demo upstream answered 400"), r.body.constData());
    }
    QCOMPARE(gw.anthropicA.requests().size(), kRequests);
    QCOMPARE(gw.anthropicA.acceptedConnections(), 1);
}

QTEST_GUILESS_MAIN(TestUpstreamConnectionReuse)
#include "test_upstream_connection_reuse.moc"
