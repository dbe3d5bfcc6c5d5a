// Credential pools on the real engine (SPEC 5 resolveGatewayApiKey /
// refreshGatewayApiKeyAfterAuthError, SPEC 4 passthrough): the fake upstream
// records the auth header of every request it saw.
#include "credentials/credential_pools.h"
#include "fake_clock.h"
#include "gateway_fixture.h"
#include "signal_wait.h"
#include "telemetry/telemetry.h"

#include <QCryptographicHash>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTest>

using namespace sw;
using namespace sw::test;

namespace {
demo::Fault status(int code)
{
    demo::Fault f;
    f.kind = demo::Fault::Status;
    f.status = code;
    return f;
}

QByteArrayList authSeen(const demo::FakeUpstream &upstream)
{
    QByteArrayList keys;
    for (const auto &r : upstream.requests()) {
        QByteArray key = r.header("x-api-key");
        if (key.isEmpty())
            key = r.header("authorization");
        keys << key;
    }
    return keys;
}

// Every header and body byte an upstream ever received.
bool upstreamSaw(const demo::FakeUpstream &upstream, const QByteArray &needle)
{
    for (const auto &r : upstream.requests()) {
        if (r.body.contains(needle) || r.path.contains(needle))
            return true;
        for (const auto &h : r.headers)
            if (h.second.contains(needle))
                return true;
    }
    return false;
}

QString sha256Ref(const QByteArray &key)
{
    return QStringLiteral("sha256:") + QString::fromLatin1(QCryptographicHash::hash(key, QCryptographicHash::Sha256).toHex());
}
} // namespace

class TestCredentialRotation : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void init()
    {
        qputenv("SW_TEST_KEY_ONE", "key-one");
        qputenv("SW_TEST_KEY_THREE", "key-three");
        qputenv("SW_TEST_PA_KEY", "pa-own-key");
    }

    void rotatesAcrossAThreeCredentialPoolAndResets()
    {
        FakeClock clock;
        GatewayFixture gw;
        gw.clock = &clock;
        auto &pa = gw.config.providers[QStringLiteral("pa")];
        pa.credentials = {QStringLiteral("env:SW_TEST_KEY_ONE"), QStringLiteral("keychain:pa-two"),
                          QStringLiteral("env:SW_TEST_KEY_THREE")};
        pa.exhaustedResetMs = 60000;
        gw.secrets.secrets.insert(QStringLiteral("pa-two"), "key-two");
        gw.anthropicA.pushFault(status(401)); // key-one rejected
        gw.anthropicA.pushFault(status(403)); // key-two: a plain 403 (not a concurrency cap) too
        gw.start();
        QSignalSpy logs(gw.engine().telemetry(), &telemetry::Telemetry::logLine);

        const auto body = GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("hi"), false);
        const auto first = gw.post(QStringLiteral("/v1/messages"), body);
        QCOMPARE(first.status, 200);
        QCOMPARE(authSeen(gw.anthropicA), (QByteArrayList{"key-one", "key-two", "key-three"}));
        QList<int> rotatedFrom;
        for (const auto &args : logs) {
            const QJsonObject line = args.at(0).toJsonObject();
            if (line.value(QStringLiteral("msg")).toString() != QLatin1String("credential rotated"))
                continue;
            QCOMPARE(line.value(QStringLiteral("tenant")).toString(), QStringLiteral("local"));
            rotatedFrom << line.value(QStringLiteral("credentialIndex")).toInt();
        }
        QCOMPARE(rotatedFrom, (QList<int>{0, 1})); // logged by position, never by value
        QCOMPARE(first.header("x-switchman-attempts"), QByteArray("1")); // rotation stays inside the attempt
        QVERIFY(gw.engine().marks().isEmpty());                         // and marks nothing

        gw.anthropicA.clearRequests();
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).status, 200);
        QCOMPARE(authSeen(gw.anthropicA), QByteArrayList{"key-three"}); // exhausted ones are skipped up front

        clock.advance(59999);
        gw.anthropicA.clearRequests();
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).status, 200);
        QCOMPARE(authSeen(gw.anthropicA), QByteArrayList{"key-three"});

        clock.advance(1); // exhaustedResetMs passed: the pool starts over at the first credential
        gw.anthropicA.clearRequests();
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).status, 200);
        QCOMPARE(authSeen(gw.anthropicA), QByteArrayList{"key-one"});
        QCOMPARE(gw.engine().pools().totalInFlight(), 0);
    }

    void exhaustedPoolFailsOverAsCredentialExhausted()
    {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("env:SW_TEST_KEY_ONE"),
                                                                 QStringLiteral("env:SW_TEST_KEY_THREE")};
        gw.anthropicA.pushFault(status(401));
        gw.anthropicA.pushFault(status(401));
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("hi"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(r.header("x-switchman-fallback-reason"), QByteArray("credential_exhausted"));
        QCOMPARE(authSeen(gw.anthropicA), (QByteArrayList{"key-one", "key-three"}));
        QCOMPARE(gw.engine().telemetry()->failureCounts().value(QStringLiteral("pa\x1f" "credential_exhausted")), 1);
        // The next request does not even try pa: its pool has nothing usable.
        gw.anthropicA.clearRequests();
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("again"), false))
                     .header("x-switchman-candidate"),
                 QByteArray("pb/gpt-b"));
        QCOMPARE(gw.anthropicA.requests().size(), 0);
    }

    void leaseCountsTheCredentialInFlight()
    {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("env:SW_TEST_KEY_ONE"),
                                                                 QStringLiteral("env:SW_TEST_KEY_THREE")};
        demo::Fault stall;
        stall.kind = demo::Fault::StallBeforeHeaders;
        gw.anthropicA.setFault(stall);
        gw.start();
        auto *reply = gw.postAsync(QStringLiteral("/v1/messages"),
                                   GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), false));
        QVERIFY(waitUntil([&gw]() { return gw.anthropicA.requests().size() == 1; }));
        QCOMPARE(gw.engine().pools().inFlight(QStringLiteral("pa"), 0), 1);
        QCOMPARE(gw.engine().pools().inFlight(QStringLiteral("pa"), 1), 0);
        reply->abort(); // the client leaves: the lease is released
        reply->deleteLater();
        QVERIFY(waitUntil([&gw]() { return gw.engine().pools().totalInFlight() == 0; }));
    }

    void keychainSecretsArePrewarmedAtStart()
    {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:pa-main")};
        gw.config.providers[QStringLiteral("pb")].credentials = {QStringLiteral("keychain:pb-main")};
        gw.secrets.secrets.insert(QStringLiteral("pa-main"), "pa-secret");
        gw.secrets.secrets.insert(QStringLiteral("pb-main"), "pb-secret");
        gw.start();
        QVERIFY(waitUntil([&gw]() {
            return gw.engine().pools().isCached(QStringLiteral("pa-main")) &&
                   gw.engine().pools().isCached(QStringLiteral("pb-main"));
        }));
        const int readsBefore = gw.secrets.reads;
        QCOMPARE(readsBefore, 2);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false))
                     .status,
                 200);
        QCOMPARE(gw.secrets.reads, readsBefore); // the request did not touch the keychain
        QCOMPARE(authSeen(gw.anthropicA), QByteArrayList{"pa-secret"});
        // A reload re-reads (picks up `switchman credential set` done meanwhile).
        gw.secrets.secrets.insert(QStringLiteral("pa-main"), "pa-rotated");
        gw.engine().applyConfig(*gw.engine().config());
        QVERIFY(waitUntil([&gw]() { return gw.secrets.reads == 4; }));
        gw.anthropicA.clearRequests();
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("y"), false))
                     .status,
                 200);
        QCOMPARE(authSeen(gw.anthropicA), QByteArrayList{"pa-rotated"});
    }

    void keychainProblemsAreLoggedAtStart()
    {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:pa-missing")};
        gw.start();
        QSignalSpy logs(gw.engine().telemetry(), &telemetry::Telemetry::logLine);
        QVERIFY(waitUntil([&logs]() { return !logs.isEmpty(); }));
        const QJsonObject line = logs.first().at(0).toJsonObject();
        QCOMPARE(line.value(QStringLiteral("level")).toString(), QStringLiteral("warn"));
        QCOMPARE(line.value(QStringLiteral("msg")).toString(), QStringLiteral("keychain credential missing"));
        QCOMPARE(line.value(QStringLiteral("credential")).toString(), QStringLiteral("keychain:pa-missing"));
        QVERIFY(line.value(QStringLiteral("hint")).toString().contains(QStringLiteral("switchman credential set pa-missing")));

        GatewayFixture down;
        down.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:pa-main")};
        down.secrets.mode = ScriptedSecretStore::Mode::Fail;
        down.start();
        QSignalSpy downLogs(down.engine().telemetry(), &telemetry::Telemetry::logLine);
        QVERIFY(waitUntil([&downLogs]() { return !downLogs.isEmpty(); }));
        QCOMPARE(downLogs.first().at(0).toJsonObject().value(QStringLiteral("msg")).toString(),
                 QStringLiteral("keychain unavailable"));
    }

    void keychainFailureIsASetupErrorThatFailsOver()
    {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:pa-main")};
        gw.secrets.mode = ScriptedSecretStore::Mode::Fail;
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-fallback-reason"), QByteArray("setup_error"));
        QCOMPARE(gw.anthropicA.requests().size(), 0);
    }

    void passthroughForwardsTheCallersKeyToThatProviderOnly()
    {
        GatewayFixture gw;
        const QByteArray gatewayKey = "gw-key-alice-0123456789";
        config::TenantConfig alice;
        alice.name = QStringLiteral("alice");
        alice.keyHashes = {sha256Ref(gatewayKey)};
        gw.config.tenants.insert(alice.name, alice);
        gw.config.providers[QStringLiteral("pc")].credentials = {QStringLiteral("passthrough")};
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("env:SW_TEST_PA_KEY")};
        config::RouteConfig route;
        route.name = QStringLiteral("pass");
        route.candidates = {QStringLiteral("pc/claude-c"), QStringLiteral("pa/claude-a")};
        gw.config.routes.insert(route.name, route);
        gw.start();
        const auto body = GatewayFixture::anthropicBody(QStringLiteral("pass"), QStringLiteral("hi"), false);

        // The caller names its tenant with x-switchman-key and sends its own provider key.
        const auto r = gw.post(QStringLiteral("/v1/messages"), body,
                               {{"x-switchman-key", gatewayKey}, {"x-api-key", "caller-own-key"}});
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pc/claude-c"));
        QCOMPARE(authSeen(gw.anthropicC), QByteArrayList{"caller-own-key"});

        // pc down: the follower gets its own credential, never the caller's.
        gw.anthropicC.pushFault(status(503));
        const auto failover = gw.post(QStringLiteral("/v1/messages"), body,
                                      {{"x-switchman-key", gatewayKey}, {"authorization", "Bearer caller-own-key"}});
        QCOMPARE(failover.status, 200);
        QCOMPARE(failover.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
        QCOMPARE(authSeen(gw.anthropicA), QByteArrayList{"pa-own-key"});
        QVERIFY(!upstreamSaw(gw.anthropicA, "caller-own-key"));

        // The gateway key alone (as Bearer): nothing to pass through, so pc is not used, and
        // the gateway key reaches no upstream.
        gw.engine().clearMarks(failover::MarkFilter{});
        gw.anthropicC.clearRequests();
        const auto gatewayOnly = gw.post(QStringLiteral("/v1/messages"), body, {{"authorization", "Bearer " + gatewayKey}});
        QCOMPARE(gatewayOnly.status, 200);
        QCOMPARE(gatewayOnly.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
        QCOMPARE(gw.anthropicC.requests().size(), 0);
        for (const auto *u : {&gw.anthropicA, &gw.openaiB, &gw.anthropicC})
            QVERIFY(!upstreamSaw(*u, gatewayKey));
        QVERIFY(!upstreamSaw(gw.anthropicC, "pa-own-key"));
    }

    void aCallersRejectedKeyDoesNotLockOutOtherCallers()
    {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pc")].credentials = {QStringLiteral("passthrough")};
        gw.anthropicC.pushFault(status(401));
        gw.start();
        const auto body = GatewayFixture::anthropicBody(QStringLiteral("pc/claude-c"), QStringLiteral("x"), false);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body, {{"x-api-key", "callers-revoked-key"}}).status, 502);
        const auto other = gw.post(QStringLiteral("/v1/messages"), body, {{"x-api-key", "another-callers-key"}});
        QCOMPARE(other.status, 200);
        QCOMPARE(authSeen(gw.anthropicC), (QByteArrayList{"callers-revoked-key", "another-callers-key"}));
    }

    void passthroughAloneWithoutCallerKeyIsCredentialExhausted()
    {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pc")].credentials = {QStringLiteral("passthrough")};
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("pc/claude-c"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 502);
        QVERIFY2(r.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString().contains(
                     QStringLiteral("no usable credential")),
                 r.body.constData());
        QCOMPARE(gw.anthropicC.requests().size(), 0);
    }
};

QTEST_GUILESS_MAIN(TestCredentialRotation)
#include "test_credential_rotation.moc"
