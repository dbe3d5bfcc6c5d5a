// A request that comes back to the gateway that sent it: a provider whose baseUrl is the gateway
// itself, or two gateways naming each other. Before, one such request nested itself until every
// connection was taken and kept going after its client left (probe C3, finding 1). Now every
// upstream request carries Via naming this engine, a request holding it is answered 508 on its
// head, and a 508 from an upstream is never retried or failed over (server::HopMarker).
#include "core/telemetry/telemetry.h"
#include "gateway_fixture.h"
#include "raw_http_client.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTest>

using namespace sw;
using namespace sw::test;
using demo::Fault;

namespace {
const QRegularExpression kOwnEntry(QStringLiteral("^1\\.1 (switchman-[0-9a-z]+)$"));

QString errorMessage(const HttpResult &r) {
    return r.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString();
}

// A provider "NAME" at `baseUrl` (openai-completions), with model NAME/m, its only model.
void addProvider(config::Config &config, const QString &name, const QString &baseUrl, int maxRetries) {
    config::ProviderConfig p;
    p.id = name;
    p.api = QStringLiteral("openai-completions");
    p.baseUrl = baseUrl;
    p.maxRetries = maxRetries;
    config.providers.insert(name, p);
    config::ModelConfig m;
    m.provider = name;
    m.id = QStringLiteral("m");
    config.models.insert(m.key(), m);
}

int attemptsOf(const QSignalSpy &spy) {
    return int(spy.count());
}

// A POST whose head is written as given (`fields`, each line ending in CRLF): a field sent twice.
int rawPost(GatewayFixture &gw, const QByteArray &path, const QJsonObject &body, const QByteArray &fields) {
    const quint16 port = quint16(QUrl(gw.baseUrl()).port());
    const QByteArray json = QJsonDocument(body).toJson(QJsonDocument::Compact);
    RawHttpClient client(port);
    if (!client.waitConnected())
        return 0;
    client.send("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + QByteArray::number(port) +
                "\r\nContent-Type: application/json\r\nContent-Length: " + QByteArray::number(json.size()) + "\r\n" +
                fields + "\r\n" + json);
    client.waitResponse();
    return client.status();
}
} // namespace

class TestRequestLoops : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void upstreamRequestsCarryThisGatewaysViaAfterTheClients() {
        GatewayFixture gw;
        gw.start();
        const auto body = GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), false);
        QCOMPARE(gw.post(QStringLiteral("/v1/chat/completions"), body).status, 200);
        const QByteArray own = gw.openaiB.requests().last().header("via");
        const auto match = kOwnEntry.match(QString::fromLatin1(own));
        QVERIFY2(match.hasMatch(), own.constData());

        // The client's own Via (a corporate proxy's) is kept, this gateway's entry after it, and the
        // entry names the same engine on every request.
        QCOMPARE(rawPost(gw, "/v1/chat/completions", body, "Via: 1.0 corp-proxy (Squid/6.1)\r\nVia: 1.1 edge\r\n"),
                 200);
        QCOMPARE(gw.openaiB.requests().last().header("via"),
                 QByteArray("1.0 corp-proxy (Squid/6.1), 1.1 edge, ") + own);
        // Every upstream API gets it, converted or not.
        const auto anthropic = GatewayFixture::anthropicBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), true);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), anthropic).status, 200);
        QCOMPARE(gw.openaiB.requests().last().header("via"), own);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("hi"), false))
                     .status,
                 200);
        QCOMPARE(gw.anthropicA.requests().last().header("via"), own);
    }

    void aRequestHoldingThisGatewaysViaIs508OnItsHead() {
        GatewayFixture gw;
        gw.start();
        const auto chat = GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), false);
        QCOMPARE(gw.post(QStringLiteral("/v1/chat/completions"), chat).status, 200);
        const QByteArray own = gw.openaiB.requests().last().header("via");
        const int sent = int(gw.openaiB.requests().size());

        // Back at the gateway that sent it, behind another proxy: 508 in the route's own format,
        // no upstream asked, and the SDKs told not to retry it.
        const HttpResult looped =
            gw.post(QStringLiteral("/v1/chat/completions"), chat, {{"Via", "1.0 corp-proxy, " + own + ", 1.1 lb"}});
        QCOMPARE(looped.status, 508);
        QCOMPARE(looped.header("x-should-retry"), QByteArray("false"));
        QVERIFY2(errorMessage(looped).contains(QLatin1String("loop detected")), looped.body.constData());
        QVERIFY(errorMessage(looped).contains(QString::fromLatin1(own.mid(4))));
        QCOMPARE(int(gw.openaiB.requests().size()), sent);
        const HttpResult anthropic = gw.post(
            QStringLiteral("/v1/messages"),
            GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("hi"), false), {{"Via", own}});
        QCOMPARE(anthropic.status, 508);
        QCOMPARE(anthropic.json().value(QStringLiteral("type")).toString(), QStringLiteral("error"));
        QVERIFY(gw.anthropicA.requests().isEmpty());
        // Off the chat routes too (nothing the gateway sends goes there, but nothing loops back either).
        QCOMPARE(gw.get(QStringLiteral("/v1/models"), 15000, {{"Via", own}}).status, 508);

        // A ring of other gateways: eight Switchman entries pass, a ninth is one too many.
        QByteArray ring;
        for (int i = 1; i <= 8; ++i)
            ring += (ring.isEmpty() ? "" : ", ") + QByteArray("1.1 switchman-other") + QByteArray::number(i);
        QCOMPARE(gw.post(QStringLiteral("/v1/chat/completions"), chat, {{"Via", ring}}).status, 200);
        QCOMPARE(gw.openaiB.requests().last().header("via"), ring + ", " + own);
        const HttpResult tooMany =
            gw.post(QStringLiteral("/v1/chat/completions"), chat, {{"Via", ring + ", 1.1 switchman-other9"}});
        QCOMPARE(tooMany.status, 508);
        QVERIFY2(errorMessage(tooMany).contains(QLatin1String("9 Switchman gateways")), tooMany.body.constData());
        // An unclosed comment in a client's Via hides no entry after it.
        QCOMPARE(gw.post(QStringLiteral("/v1/chat/completions"), chat, {{"Via", "1.1 x (unclosed, " + own}}).status,
                 508);
    }

    void aProviderAtTheGatewaysOwnAddressEndsWith508() {
        GatewayFixture gw;
        gw.config.limits.maxConnections = 64; // bounds the loop this test would start without the check
        // A reload or the window's Save refuses a provider at the listener's address, so the
        // configuration holds it from the start, with retries (a desktop setup, no tenants): the
        // wire check ends what the file check did not see.
        QTcpServer probe;
        QVERIFY(probe.listen(QHostAddress::LocalHost));
        const QString address = QStringLiteral("127.0.0.1:%1").arg(probe.serverPort());
        probe.close();
        gw.config.listen = address;
        addProvider(gw.config, QStringLiteral("self"), QStringLiteral("http://%1/v1").arg(address), 2);
        gw.start();
        config::Config config = gw.config;
        QString refused;
        QVERIFY(!gw.engine().applyConfig(config, &refused));
        QVERIFY2(refused.contains(QLatin1String("points at Switchman itself")), qPrintable(refused));

        QSignalSpy attempts(gw.engine().telemetry(), &telemetry::Telemetry::attemptRecorded);
        QElapsedTimer clock;
        clock.start();
        const HttpResult r =
            gw.post(QStringLiteral("/v1/chat/completions"),
                    GatewayFixture::openaiBody(QStringLiteral("self/m"), QStringLiteral("hi"), false), {}, 5000);
        QCOMPARE(r.status, 508);
        QVERIFY2(clock.elapsed() < 3000, qPrintable(QString::number(clock.elapsed())));
        const QString message = errorMessage(r);
        QVERIFY2(message.contains(QLatin1String("508 Loop Detected")) &&
                     message.contains(QLatin1String("providers.self.baseUrl")) &&
                     message.contains(QLatin1String("already passed through this Switchman")),
                 qPrintable(message));
        QCOMPARE(r.header("x-should-retry"), QByteArray("false"));
        // One attempt: the second hop was answered on its head, the first neither retried it (maxRetries
        // 2) nor went round again.
        QCOMPARE(attemptsOf(attempts), 1);
        QCOMPARE(gw.get(QStringLiteral("/healthz")).status, 200);
    }

    void twoGatewaysNamingEachOtherEndWith508() {
        GatewayFixture a;
        GatewayFixture b;
        a.config.limits.maxConnections = 64; // bounds the loop this test would start without the check
        b.config.limits.maxConnections = 64;
        a.start();
        b.start();
        config::Config configA = a.config;
        addProvider(configA, QStringLiteral("peer"), b.baseUrl() + QStringLiteral("/v1"), 2);
        a.engine().applyConfig(configA);
        config::Config configB = b.config;
        addProvider(configB, QStringLiteral("peer"), a.baseUrl() + QStringLiteral("/v1"), 2);
        b.engine().applyConfig(configB);

        QSignalSpy attemptsA(a.engine().telemetry(), &telemetry::Telemetry::attemptRecorded);
        QSignalSpy attemptsB(b.engine().telemetry(), &telemetry::Telemetry::attemptRecorded);
        const HttpResult r =
            a.post(QStringLiteral("/v1/chat/completions"),
                   GatewayFixture::openaiBody(QStringLiteral("peer/m"), QStringLiteral("hi"), false), {}, 5000);
        QCOMPARE(r.status, 508);
        QVERIFY2(errorMessage(r).contains(QLatin1String("already passed through this Switchman")),
                 qPrintable(errorMessage(r)));
        // A → B → A: A's request to B and B's back to A, which A answered on its head. B had sent its
        // stream's headers to A by then, so A read the loop in band: nothing retried either way.
        QCOMPARE(attemptsOf(attemptsA), 1);
        QCOMPARE(attemptsOf(attemptsB), 1);

        // A streaming client has its headers already too: the loop ends its stream, as bounded.
        const HttpResult streamed =
            a.post(QStringLiteral("/v1/chat/completions"),
                   GatewayFixture::openaiBody(QStringLiteral("peer/m"), QStringLiteral("hi"), true), {}, 5000);
        QVERIFY(!streamed.timedOut);
        QVERIFY2(streamed.body.contains("reported 508 Loop Detected"), streamed.body.constData());
        QCOMPARE(attemptsOf(attemptsA), 2);
        QCOMPARE(attemptsOf(attemptsB), 2);
    }

    void a508FromAnUpstreamIsNeitherRetriedNorFailedOver() {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].maxRetries = 2;
        gw.start();
        Fault loop;
        loop.kind = Fault::Status;
        loop.status = 508;
        loop.body = R"({"type":"error","error":{"type":"api_error","message":"Loop Detected"}})";
        gw.anthropicA.setFault(loop);

        // Route "chain" = [pa/claude-a, pb/gpt-b]: a failover would go round the loop from another
        // side, and each hop's retries multiply the next one's. The client hears of the loop.
        const HttpResult r =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("hi"), false));
        QCOMPARE(r.status, 508);
        QCOMPARE(r.header("x-should-retry"), QByteArray("false"));
        QVERIFY2(errorMessage(r).contains(QLatin1String("upstream pa/claude-a reported 508 Loop Detected")) &&
                     errorMessage(r).contains(QLatin1String("providers.pa.baseUrl")),
                 r.body.constData());
        QCOMPARE(int(gw.anthropicA.requests().size()), 1);
        QVERIFY(gw.openaiB.requests().isEmpty());

        // Alone in its chain, with maxRetries 2: still one request.
        const HttpResult alone =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("hi"), false));
        QCOMPARE(alone.status, 508);
        QCOMPARE(int(gw.anthropicA.requests().size()), 2);
        // No mark: the provider is not down, the configuration is wrong.
        QVERIFY(gw.get(QStringLiteral("/admin/marks")).json().value(QStringLiteral("marks")).toArray().isEmpty());

        // A 508 about something else (a shared host's "Resource Limit Is Reached") is a server's trouble:
        // the route goes on to its next candidate (probe D2 L1: it stopped and blamed the baseUrl).
        loop.body = R"({"type":"error","error":{"type":"api_error","message":"508 Resource Limit Is Reached"}})";
        gw.anthropicA.setFault(loop);
        const HttpResult limit =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("hi"), false));
        QCOMPARE(limit.status, 200);
        QCOMPARE(limit.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
    }
};

QTEST_GUILESS_MAIN(TestRequestLoops)
#include "test_request_loops.moc"
