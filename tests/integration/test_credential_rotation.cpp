// Credential pools on the real engine (which key a try uses, rotation after the
// provider refuses one, passthrough of the caller's key): the fake upstream
// records the auth header of every request it saw.
#include "core/credentials/credential_pools.h"
#include "core/telemetry/telemetry.h"
#include "fake_clock.h"
#include "gateway_fixture.h"
#include "signal_wait.h"
#include "wire_fixtures.h"

#include <QCryptographicHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QSignalSpy>
#include <QTest>

using namespace sw;
using namespace sw::test;

namespace {
demo::Fault status(int code) {
    demo::Fault f;
    f.kind = demo::Fault::Status;
    f.status = code;
    return f;
}

QByteArrayList authSeen(const demo::FakeUpstream &upstream) {
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
bool upstreamSaw(const demo::FakeUpstream &upstream, const QByteArray &needle) {
    for (const auto &r : upstream.requests()) {
        if (r.body.contains(needle) || r.path.contains(needle))
            return true;
        for (const auto &h : r.headers)
            if (h.second.contains(needle))
                return true;
    }
    return false;
}

demo::Fault statusWith(int code, const QByteArray &retryAfter, const QByteArray &body = {}) {
    demo::Fault f = status(code);
    f.retryAfter = retryAfter;
    f.body = body;
    return f;
}

// Gemini's 429 for a quota of one model (gemini-e): its QuotaFailure names it, its RetryInfo says 20 s.
demo::Fault geminiQuotaOfOneModel() {
    return statusWith(
        429, {},
        R"({"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing )"
        R"(details. Quota exceeded for metric: generate_content_free_tier_requests, limit: 5, model: gemini-e\n)"
        R"(Please retry in 20.5s.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/)"
        R"(google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/)"
        R"(generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier",)"
        R"("quotaDimensions":{"location":"global","model":"gemini-e"},"quotaValue":"5"}]},)"
        R"({"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"20s"}]}})");
}

// The entry of GET /admin/credentials for one provider's position.
QJsonObject credentialEntry(GatewayFixture &gw, const QString &provider, int position = 0) {
    const auto r = gw.get(QStringLiteral("/admin/credentials"));
    for (const auto &v : r.json().value(QStringLiteral("credentials")).toArray()) {
        const QJsonObject o = v.toObject();
        if (o.value(QStringLiteral("provider")).toString() == provider &&
            o.value(QStringLiteral("position")).toInt() == position)
            return o;
    }
    return {};
}

QString sha256Ref(const QByteArray &key) {
    return QStringLiteral("sha256:") +
           QString::fromLatin1(QCryptographicHash::hash(key, QCryptographicHash::Sha256).toHex());
}

const QByteArray kAliceKey = "sm-alice-test-key-000000000000000000";
const QByteArray kBobKey = "sm-bob-test-key-1111111111111111111111";

void addTenant(config::Config &c, const QString &name, const QByteArray &key, bool admin = false) {
    config::TenantConfig t;
    t.name = name;
    t.keyHashes = {sha256Ref(key)};
    t.admin = admin;
    c.tenants.insert(name, t);
}

QList<QPair<QByteArray, QByteArray>> bearer(const QByteArray &key) {
    return {{"authorization", "Bearer " + key}};
}

QString errorMessageOf(const HttpResult &r) {
    return r.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString();
}
} // namespace

class TestCredentialRotation : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void init() {
        qputenv("SW_TEST_KEY_ONE", "key-one");
        qputenv("SW_TEST_KEY_THREE", "key-three");
        qputenv("SW_TEST_PA_KEY", "pa-own-key");
    }

    void rotatesAcrossAThreeCredentialPoolAndResets() {
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
        QCOMPARE(rotatedFrom, (QList<int>{0, 1}));                       // logged by position, never by value
        QCOMPARE(first.header("x-switchman-attempts"), QByteArray("1")); // rotation stays inside the attempt
        QVERIFY(gw.engine().marks().isEmpty());                          // and marks nothing

        gw.anthropicA.clearRequests();
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).status, 200);
        QCOMPARE(authSeen(gw.anthropicA), QByteArrayList{"key-three"}); // exhausted ones are skipped up front

        clock.advance(59999);
        gw.anthropicA.clearRequests();
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).status, 200);
        QCOMPARE(authSeen(gw.anthropicA), QByteArrayList{"key-three"});

        clock.advance(
            1); // exhaustedResetMs passed: the parked key is back; the rejected (401) one waits for a new secret
        gw.anthropicA.clearRequests();
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).status, 200);
        QCOMPARE(authSeen(gw.anthropicA), QByteArrayList{"key-two"});
        QCOMPARE(gw.engine().pools().totalInFlight(), 0);
    }

    void exhaustedPoolFailsOverAsCredentialExhausted() {
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
        QCOMPARE(gw.engine().telemetry()->failureCounts().value(QStringLiteral("pa\x1f"
                                                                               "credential_exhausted")),
                 1);
        // The next request does not even try pa: its pool has nothing usable. The answer still says
        // where it would have gone and why (it said x-switchman-attempts: 2 and nothing more).
        gw.anthropicA.clearRequests();
        const auto again =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("again"), false));
        QCOMPARE(again.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(again.header("x-switchman-fallback-from"), QByteArray("pa/claude-a"));
        QCOMPARE(again.header("x-switchman-fallback-reason"), QByteArray("credential_exhausted"));
        QCOMPARE(gw.anthropicA.requests().size(), 0);
        // Asked for pa alone, the client is told why: the key the provider refused, not "no usable
        // credential for provider" said twice (probe Z4 7).
        const auto direct =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("alone"), false));
        QCOMPARE(direct.status, 502);
        const QString message = direct.json().value("error").toObject().value("message").toString();
        QVERIFY2(message.contains(QStringLiteral("refused its key env:SW_TEST_KEY_ONE (HTTP 401")) &&
                     message.contains(QStringLiteral("store a new secret")) &&
                     message.count(QStringLiteral("no usable credential")) == 1,
                 qPrintable(message));
    }

    void aPaymentRequiredRotatesThenFailsOver() {
        // An OpenAI-compatible server out of credit answers 402 with its own words. It went to the
        // client as it was: no rotation to the spare key, no failover, the key still "ok".
        GatewayFixture gw;
        gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pb/gpt-b"),
                                                                QStringLiteral("pa/claude-a")};
        gw.config.providers[QStringLiteral("pb")].credentials = {QStringLiteral("env:SW_TEST_KEY_ONE"),
                                                                 QStringLiteral("env:SW_TEST_KEY_THREE")};
        const QByteArray broke = R"({"error":{"code":402,"message":"Insufficient credits. Add more credits."}})";
        gw.openaiB.pushFault(statusWith(402, {}, broke));
        gw.start();
        const auto body = GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("hi"), false);
        const auto rotated = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(rotated.status, 200);
        QCOMPARE(rotated.header("x-switchman-candidate"), QByteArray("pb/gpt-b")); // the spare key answered
        QCOMPARE(authSeen(gw.openaiB), (QByteArrayList{"Bearer key-one", "Bearer key-three"}));
        QCOMPARE(credentialEntry(gw, QStringLiteral("pb"), 0).value(QStringLiteral("state")).toString(),
                 QStringLiteral("parked"));
        gw.openaiB.pushFault(statusWith(402, {}, broke)); // and now the spare is out of credit too
        const auto failedOver = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(failedOver.status, 200);
        QCOMPARE(failedOver.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
        QCOMPARE(failedOver.header("x-switchman-fallback-reason"), QByteArray("credential_exhausted"));
    }

    // OpenRouter refuses a request its credit cannot pay for with a 402 that names the request's size.
    // It set the shared key aside for an hour, so one tenant's 64000-token request took OpenRouter
    // from every tenant (probe G3 1). The output form is asked again with the cap the credit pays for;
    // the prompt form fails over; neither sets the key aside or marks anything.
    void aPaymentRequiredForThisRequestsSizeLeavesTheKeyToOthers() {
        GatewayFixture gw;
        gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pb/gpt-b"),
                                                                QStringLiteral("pa/claude-a")};
        gw.config.providers[QStringLiteral("pb")].credentials = {QStringLiteral("env:SW_TEST_KEY_ONE")};
        const QByteArray fewer =
            "{\"error\":{\"message\":\"This request requires more credits, or fewer max_tokens. You requested up to "
            "64000 tokens, but can only afford 5000. To increase, visit https://example.test/credits\",\"code\":402}}";
        gw.openaiB.pushFault(statusWith(402, {}, fewer));
        gw.start();
        QJsonObject big = GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("hi"), false);
        big.insert(QStringLiteral("max_tokens"), 64000);
        const auto capped = gw.post(QStringLiteral("/v1/chat/completions"), big);
        QCOMPARE(capped.status, 200);
        QCOMPARE(capped.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        const auto sent = gw.openaiB.requests();
        QCOMPARE(sent.size(), 2);
        QVERIFY2(sent.last().body.contains("\"max_tokens\":5000") ||
                     sent.last().body.contains("\"max_completion_tokens\":5000"),
                 sent.last().body.constData());
        QCOMPARE(credentialEntry(gw, QStringLiteral("pb"), 0).value(QStringLiteral("state")).toString(),
                 QStringLiteral("ok"));

        const QByteArray prompt =
            "{\"error\":{\"message\":\"Prompt tokens limit exceeded: 10234 > 6964\",\"code\":402}}";
        gw.openaiB.pushFault(statusWith(402, {}, prompt));
        const auto body = GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("hi"), false);
        const auto failedOver = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(failedOver.status, 200);
        QCOMPARE(failedOver.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
        QVERIFY(gw.engine().marks().isEmpty());
        QCOMPARE(credentialEntry(gw, QStringLiteral("pb"), 0).value(QStringLiteral("state")).toString(),
                 QStringLiteral("ok"));
        gw.openaiB.clearRequests();
        QCOMPARE(gw.post(QStringLiteral("/v1/chat/completions"), body).header("x-switchman-candidate"),
                 QByteArray("pb/gpt-b")); // the next tenant's small request is served on the same key
        QCOMPARE(gw.openaiB.requests().size(), 1);

        // Alone on the route, the client reads the provider's words with its 402.
        gw.openaiB.pushFault(statusWith(402, {}, prompt));
        const auto direct =
            gw.post(QStringLiteral("/v1/chat/completions"),
                    GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), false));
        QCOMPARE(direct.status, 402);
        QVERIFY2(direct.body.contains("Prompt tokens limit exceeded"), direct.body.constData());
    }

    void aKeyGoogleCallsInvalidRotatesThenFailsOver() {
        // Google refuses a wrong key with a 400 INVALID_ARGUMENT (reason API_KEY_INVALID), not a 401.
        // It went to the client as its own bad request: no rotation to the pool's good key, no
        // failover, and the key stayed "ok" for every later request (probe Z1 1).
        GatewayFixture gw;
        gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pe/gemini-e"),
                                                                QStringLiteral("pa/claude-a")};
        gw.config.providers[QStringLiteral("pe")].credentials = {QStringLiteral("env:SW_TEST_KEY_ONE"),
                                                                 QStringLiteral("env:SW_TEST_KEY_THREE")};
        const QByteArray invalid = sw::test::readTestData(QStringLiteral("failures/google_400_api_key_invalid.json"));
        QVERIFY(!invalid.isEmpty());
        gw.googleE.pushFault(statusWith(400, {}, invalid));
        gw.start();
        const auto body = GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("hi"), false);
        const auto rotated = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(rotated.status, 200);
        QCOMPARE(rotated.header("x-switchman-candidate"), QByteArray("pe/gemini-e")); // the pool's good key
        QCOMPARE(credentialEntry(gw, QStringLiteral("pe"), 0).value(QStringLiteral("state")).toString(),
                 QStringLiteral("rejected"));
        gw.googleE.pushFault(statusWith(400, {}, invalid)); // and now the other key is refused too
        const auto failedOver = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(failedOver.status, 200);
        QCOMPARE(failedOver.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
        QCOMPARE(failedOver.header("x-switchman-fallback-reason"), QByteArray("credential_exhausted"));
    }

    // xAI refuses a wrong or revoked key with a 400 "Incorrect API key provided", Gemini a deleted one
    // with a 400 "API Key not found" (ErrorInfo reason API_KEY_INVALID). Both went to the client as
    // its own bad request: the pool's good key and the fallback never asked, and the key "ok" for
    // every later request (probe AA4 F4). Google's reason alone says it too, whatever the message.
    void aKeyRefusedWith400InItsProvidersWordsRotatesThenFailsOver_data() {
        QTest::addColumn<QString>("provider");
        QTest::addColumn<QString>("model");
        QTest::addColumn<QByteArray>("body");
        QTest::newRow("xai, a revoked key")
            << "pb"
            << "pb/gpt-b" << sw::test::readTestData(QStringLiteral("failures/xai_400_incorrect_api_key.json"));
        QTest::newRow("gemini, a deleted key")
            << "pe"
            << "pe/gemini-e" << sw::test::readTestData(QStringLiteral("failures/google_400_api_key_not_found.json"));
        QTest::newRow("gemini, only the ErrorInfo reason says it")
            << "pe"
            << "pe/gemini-e"
            << QByteArray(R"({"error":{"code":400,"message":"Request contains an invalid argument.",)"
                          R"("status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/)"
                          R"(google.rpc.ErrorInfo","reason":"API_KEY_EXPIRED","domain":"googleapis.com"}]}})");
    }
    void aKeyRefusedWith400InItsProvidersWordsRotatesThenFailsOver() {
        QFETCH(QString, provider);
        QFETCH(QString, model);
        QFETCH(QByteArray, body);
        QVERIFY(!body.isEmpty());
        GatewayFixture gw;
        gw.config.routes[QStringLiteral("chain")].candidates = {model, QStringLiteral("pa/claude-a")};
        gw.config.providers[provider].credentials = {QStringLiteral("env:SW_TEST_KEY_ONE"),
                                                     QStringLiteral("env:SW_TEST_KEY_THREE")};
        demo::FakeUpstream &upstream = provider == QLatin1String("pb") ? gw.openaiB : gw.googleE;
        upstream.pushFault(statusWith(400, {}, body));
        gw.start();
        const auto request = GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("hi"), false);
        const auto rotated = gw.post(QStringLiteral("/v1/chat/completions"), request);
        QCOMPARE(rotated.status, 200);
        QCOMPARE(rotated.header("x-switchman-candidate"), model.toUtf8()); // the pool's good key answered
        QCOMPARE(upstream.requests().size(), 2);
        QCOMPARE(credentialEntry(gw, provider, 0).value(QStringLiteral("state")).toString(),
                 QStringLiteral("rejected"));
        QCOMPARE(credentialEntry(gw, provider, 1).value(QStringLiteral("state")).toString(), QStringLiteral("ok"));
        upstream.pushFault(statusWith(400, {}, body)); // and now the other key is refused too
        const auto failedOver = gw.post(QStringLiteral("/v1/chat/completions"), request);
        QCOMPARE(failedOver.status, 200);
        QCOMPARE(failedOver.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
        QCOMPARE(failedOver.header("x-switchman-fallback-reason"), QByteArray("credential_exhausted"));
        QCOMPARE(credentialEntry(gw, provider, 1).value(QStringLiteral("state")).toString(),
                 QStringLiteral("rejected"));
        upstream.clearRequests();
        QCOMPARE(gw.post(QStringLiteral("/v1/chat/completions"), request).header("x-switchman-candidate"),
                 QByteArray("pa/claude-a"));
        QCOMPARE(upstream.requests().size(), 0); // refused keys are not asked again
    }

    // Google refuses a region it does not serve, or a project without billing, with a 400
    // FAILED_PRECONDITION ("User location is not supported for the API use."), not a 403. It went to
    // the client as its own bad request, on every request of every tenant, the healthy next
    // candidate never tried and nothing learned (probe E1 F1). It is a refusal of the account, as
    // OpenAI's 403 region block is: the key set aside a minute, the next candidate answers.
    void aGoogleRegionOrBillingRefusalSetsTheKeyAsideAndFailsOver() {
        FakeClock clock;
        GatewayFixture gw;
        gw.clock = &clock;
        gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pe/gemini-e"),
                                                                QStringLiteral("pa/claude-a")};
        gw.config.providers[QStringLiteral("pe")].credentials = {QStringLiteral("env:SW_TEST_KEY_ONE")};
        gw.googleE.pushFault(statusWith(
            400, {},
            R"({"error":{"code":400,"message":"User location is not supported for the API use.","status":"FAILED_PRECONDITION"}})"));
        gw.start();
        const auto body = GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("hi"), false);
        const auto first = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(first.status, 200);
        QCOMPARE(first.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
        QCOMPARE(first.header("x-switchman-fallback-reason"), QByteArray("credential_exhausted"));
        QCOMPARE(credentialEntry(gw, QStringLiteral("pe")).value(QStringLiteral("reason")).toString(),
                 QStringLiteral("forbidden"));
        const auto second = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(second.status, 200);
        QCOMPARE(gw.googleE.requests().size(), 1); // not asked again while set aside

        // Alone on its route, the client hears of the refusal and when the key is back: not a
        // request error of its own, nor a rate limit.
        const auto alone =
            gw.post(QStringLiteral("/v1/chat/completions"),
                    GatewayFixture::openaiBody(QStringLiteral("pe/gemini-e"), QStringLiteral("hi"), false));
        QCOMPARE(alone.status, 502);
        QCOMPARE(alone.header("retry-after"), QByteArray("60"));
        QVERIFY2(alone.body.contains("User location is not supported"), alone.body.constData());

        // A 400 about the request itself stays the client's.
        clock.advance(61000);
        gw.googleE.pushFault(statusWith(
            400, {},
            R"({"error":{"code":400,"message":"Invalid JSON payload received.","status":"INVALID_ARGUMENT"}})"));
        const auto own = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(own.status, 400);
        QCOMPARE(credentialEntry(gw, QStringLiteral("pe")).value(QStringLiteral("state")).toString(),
                 QStringLiteral("ok"));
    }

    // Anthropic's "credit balance is too low" (a 400) on the only candidate reached a Chat client as
    // 429 rate_limit_exceeded: apps that say "top up the account" on insufficient_quota, OpenAI's
    // code for a spent quota, said "slow down" (probe E1 F5).
    void aSpentCreditReachesAChatClientAsInsufficientQuota() {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("env:SW_TEST_KEY_THREE")};
        gw.anthropicA.pushFault(statusWith(
            400, {},
            R"({"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}})"));
        gw.start();
        const auto spent =
            gw.post(QStringLiteral("/v1/chat/completions"),
                    GatewayFixture::openaiBody(QStringLiteral("pa/claude-a"), QStringLiteral("hi"), false));
        QCOMPARE(spent.status, 429);
        QCOMPARE(spent.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toString(),
                 QStringLiteral("insufficient_quota"));
        QVERIFY2(spent.body.contains("credit balance is too low"), spent.body.constData());
        // An Anthropic client keeps its own vocabulary.
        const auto own =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("hi"), false));
        QCOMPARE(own.status, 429);
        QCOMPARE(own.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("type")).toString(),
                 QStringLiteral("rate_limit_error"));
    }

    // A spent quota an Anthropic-API provider sends as its 429 rate_limit_error (Claude's "usage limit
    // reached"): the request that hit it got rate_limit_exceeded, which Codex retries, and only the
    // next one insufficient_quota (probe K4 2). The upstream's own code no longer overrides the one
    // the gateway gives the meaning: the same code on both requests, JSON and stream.
    void aSpentQuotaSentAsA429IsInsufficientQuotaFromTheFirstRequest() {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("env:SW_TEST_KEY_THREE")};
        gw.anthropicA.setFault(statusWith(
            429, {},
            R"({"type":"error","error":{"type":"rate_limit_error","message":"You have reached your specified API usage limits. You will regain access on 2026-12-31 at 00:00 UTC."}})"));
        gw.start();
        for (int i = 0; i < 2; ++i) {
            const auto r =
                gw.post(QStringLiteral("/v1/chat/completions"),
                        GatewayFixture::openaiBody(QStringLiteral("pa/claude-a"), QStringLiteral("hi"), false));
            QCOMPARE(r.status, 429);
            QCOMPARE(r.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toString(),
                     QStringLiteral("insufficient_quota"));
        }
        QCOMPARE(gw.anthropicA.requests().size(), 1); // the key set aside after the first
    }

    // A secret with a line break in it went into the upstream request as it was, and what followed
    // the break reached the provider as header lines of its own (probe V2 F1). The whitespace around
    // a secret is dropped (a key read from a CRLF file keeps its CR); a control character inside one
    // keeps the key out of service, said in /admin/credentials, and the pool's next key answers.
    void aSecretWithALineBreakNeverReachesAHeader() {
        qputenv("SW_TEST_KEY_CRLF", "key-crlf\r\nX-Injected: yes");
        qputenv("SW_TEST_KEY_CR", "key-cr\r");
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("env:SW_TEST_KEY_CRLF"),
                                                                 QStringLiteral("env:SW_TEST_KEY_CR")};
        gw.start();
        const auto r =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("hi"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(authSeen(gw.anthropicA), QByteArrayList{"key-cr"});
        for (const auto &seen : gw.anthropicA.requests())
            for (const auto &[name, value] : seen.headers)
                QVERIFY2(!name.contains("Injected") && !value.contains("Injected"), name + ": " + value);
        const QJsonObject entry = credentialEntry(gw, QStringLiteral("pa"));
        QCOMPARE(entry.value(QStringLiteral("state")).toString(), QStringLiteral("rejected"));
        QVERIFY2(entry.value(QStringLiteral("lastError")).toString().contains(QStringLiteral("line break")),
                 QJsonDocument(entry).toJson().constData());
        // Alone, the key is no key: the client is told why, and nothing is sent.
        GatewayFixture alone;
        alone.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("env:SW_TEST_KEY_CRLF")};
        alone.start();
        const auto refused =
            alone.post(QStringLiteral("/v1/messages"),
                       GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("hi"), false));
        QVERIFY2(refused.status >= 400, refused.body.constData());
        QVERIFY2(refused.body.contains("line break"), refused.body.constData());
        QVERIFY2(!refused.body.contains("key-crlf"), refused.body.constData());
        QCOMPARE(alone.anthropicA.requests().size(), 0);
        qunsetenv("SW_TEST_KEY_CRLF");
        qunsetenv("SW_TEST_KEY_CR");
    }

    // Gemini's quotas are each model's own; its 429 says "You exceeded your current quota" and names
    // the model in a QuotaFailure. The whole key was set aside for the stated delay, so the route's
    // next Gemini model on the same key was skipped, and every request for the delay failed without
    // an upstream call (probe V1 F5). The model is held back; the key serves the other model.
    void aQuotaOfOneGeminiModelLeavesTheKeyToTheOthers() {
        GatewayFixture gw;
        auto flash = gw.config.models.value(QStringLiteral("pe/gemini-e"));
        flash.id = QStringLiteral("gemini-flash");
        gw.config.models.insert(flash.key(), flash);
        gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pe/gemini-e"),
                                                                QStringLiteral("pe/gemini-flash")};
        gw.config.providers[QStringLiteral("pe")].credentials = {QStringLiteral("env:SW_TEST_KEY_ONE")};
        gw.googleE.pushFault(geminiQuotaOfOneModel());
        gw.start();
        const auto body = GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("hi"), false);
        const auto first = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(first.status, 200);
        QCOMPARE(first.header("x-switchman-candidate"), QByteArray("pe/gemini-flash"));
        QCOMPARE(first.header("x-switchman-fallback-reason"), QByteArray("rate_limited"));
        QCOMPARE(credentialEntry(gw, QStringLiteral("pe")).value(QStringLiteral("state")).toString(),
                 QStringLiteral("ok"));
        // The limited model is held back; the other is asked at once.
        const auto second = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(second.status, 200);
        QCOMPARE(second.header("x-switchman-candidate"), QByteArray("pe/gemini-flash"));
        QCOMPARE(gw.googleE.requests().size(), 3);
    }

    // Gemini's quotas are per project too: a pool of keys from several projects is the usual way to
    // have more of them. The next key is asked within the attempt, as for any limit of the key's
    // (SPEC 5); the one that hit the quota is passed over for that model for the stated delay.
    void aQuotaOfOneGeminiModelGoesToThePoolsNextKey() {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pe")].credentials = {QStringLiteral("env:SW_TEST_KEY_ONE"),
                                                                 QStringLiteral("env:SW_TEST_KEY_THREE")};
        gw.googleE.pushFault(geminiQuotaOfOneModel());
        gw.start();
        const auto body = GatewayFixture::openaiBody(QStringLiteral("pe/gemini-e"), QStringLiteral("hi"), false);
        const auto first = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(first.status, 200);
        const auto second = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(second.status, 200);
        QByteArrayList keys;
        for (const auto &r : gw.googleE.requests())
            keys << r.header("x-goog-api-key");
        QCOMPARE(keys.size(), 3);
        QVERIFY2(keys[0] != keys[1] && keys[1] == keys[2], keys.join(',').constData());
        QCOMPARE(credentialEntry(gw, QStringLiteral("pe")).value(QStringLiteral("state")).toString(),
                 QStringLiteral("ok"));
        QVERIFY(gw.engine().marks().isEmpty());
    }

    // A key set aside for seconds is a limit to wait out, whatever its words: the client's 429 says
    // "slow down" and lets its SDK retry after the Retry-After. It said "quota spent, do not retry"
    // (insufficient_quota, x-should-retry: false) for Gemini's 3 s limit, and the SDKs gave up at
    // once where a retry would have answered (probe V1 F1).
    void aKeyBackWithinAMinuteIsARateLimitToTheClient() {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pe")].credentials = {QStringLiteral("env:SW_TEST_KEY_ONE")};
        gw.googleE.pushFault(statusWith(
            429, {},
            R"({"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing )"
            R"(details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/)"
            R"(google.rpc.RetryInfo","retryDelay":"3s"}]}})"));
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/chat/completions"),
                               GatewayFixture::openaiBody(QStringLiteral("pe/gemini-e"), QStringLiteral("hi"), false));
        QCOMPARE(r.status, 429);
        QCOMPARE(r.header("retry-after"), QByteArray("3"));
        QVERIFY2(r.header("x-should-retry").isEmpty(), r.header("x-should-retry").constData());
        QCOMPARE(r.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toString(),
                 QStringLiteral("rate_limit_exceeded"));
    }

    // Anthropic answers a disabled organisation with a 400 (Groq a restricted one too). It stopped the
    // chain as the request's own error, on every request, the key in service and the healthy fallback
    // never asked (probe V1 F3). It refuses the account, as the same words on a 403 do.
    void aDisabledOrganisationSetsTheKeyAsideAndFailsOver() {
        GatewayFixture gw;
        gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pa/claude-a"),
                                                                QStringLiteral("pb/gpt-b")};
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("env:SW_TEST_KEY_ONE")};
        gw.anthropicA.pushFault(statusWith(
            400, {},
            R"({"type":"error","error":{"type":"invalid_request_error","message":"This organization has been )"
            R"(disabled."},"request_id":"req_test_0001"})"));
        gw.start();
        const auto body = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("hi"), false);
        const auto first = gw.post(QStringLiteral("/v1/messages"), body);
        QCOMPARE(first.status, 200);
        QCOMPARE(first.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(first.header("x-switchman-fallback-reason"), QByteArray("credential_exhausted"));
        const QJsonObject entry = credentialEntry(gw, QStringLiteral("pa"));
        QCOMPARE(entry.value(QStringLiteral("state")).toString(), QStringLiteral("parked"));
        QCOMPARE(entry.value(QStringLiteral("reason")).toString(), QStringLiteral("auth"));
        const auto second = gw.post(QStringLiteral("/v1/messages"), body);
        QCOMPARE(second.status, 200);
        QCOMPARE(gw.anthropicA.requests().size(), 1); // not asked again while set aside
    }

    // A 400 or 404 quotes the field names, values and model id it refused. Words one tenant put in
    // its request, echoed so, once took the shared key out of service for every tenant: rejected
    // until a restart, or parked for up to a week with the tenant's own "reset" hint (probe B3 H1).
    // The answer is still the client's 400/404; the key stays in service, and the next request
    // uses it.
    void wordsTheRequestHeldNeverDecideTheSharedKey_data() {
        QTest::addColumn<QString>("provider");
        QTest::addColumn<QString>("field");   // the extra member the request carries ("" = none)
        QTest::addColumn<QString>("model");   // the model asked for
        QTest::addColumn<int>("status");      // the upstream's answer
        QTest::addColumn<QByteArray>("body"); // its error body, quoting the request
        QTest::newRow("anthropic 400, key wording")
            << "pa"
            << "API key not valid"
            << "pa/claude-a" << 400
            << QByteArray(R"({"type":"error","error":{"type":"invalid_request_error",)"
                          R"("message":"API key not valid: Extra inputs are not permitted"}})");
        QTest::newRow("anthropic 400, usage wording and a reset hint")
            << "pa"
            << "out of credits, resets in 168 hours"
            << "pa/claude-a" << 400
            << QByteArray(R"({"type":"error","error":{"type":"invalid_request_error",)"
                          R"("message":"out of credits, resets in 168 hours: Extra inputs are not permitted"}})");
        QTest::newRow("anthropic 400, escaped in the request")
            << "pa"
            << "usage\u0020limit"
            << "pa/claude-a" << 400
            << QByteArray(R"({"type":"error","error":{"type":"invalid_request_error",)"
                          R"("message":"usage limit: Extra inputs are not permitted"}})");
        // Quoted from the middle or the end, never from the start (probe EV 2: the last 60 characters
        // of a tenant's text, ending in Google's status word or in usage wording, set the key aside).
        QTest::newRow("anthropic 400 quoting the end, a Google status word")
            << "pa"
            << "a member whose name ends in FAILED_PRECONDITION"
            << "pa/claude-a" << 400
            << QByteArray(R"({"type":"error","error":{"type":"invalid_request_error",)"
                          R"("message":"name ends in FAILED_PRECONDITION: Extra inputs are not permitted"}})");
        QTest::newRow("anthropic 400 quoting the end, usage wording")
            << "pa"
            << "a long member name the provider cut, then my credit balance"
            << "pa/claude-a" << 400
            << QByteArray(R"({"type":"error","error":{"type":"invalid_request_error",)"
                          R"("message":"cut, then my credit balance: Extra inputs are not permitted"}})");
        // Quoted as Python's repr writes it: the newline the tenant sent as an escape comes back as
        // a backslash and an n (a vLLM server's 400; probe R3 F2 parked the key for an hour).
        QTest::newRow("chat server quoting a repr, usage wording")
            << "pa"
            << "\\ncredit balance"
            << "pa/claude-a" << 400
            << QByteArray(R"({"type":"error","error":{"type":"invalid_request_error",)"
                          "\"message\":\"Extra inputs are not permitted: \x27\\\\ncredit balance\x27\"}}");
        QTest::newRow("a JSON quote of a non-ASCII tenant text, key wording")
            << "pa"
            << "caf\u00e9: API key not valid"
            << "pa/claude-a" << 400
            << QByteArray(R"({"type":"error","error":{"type":"invalid_request_error",)"
                          "\"message\":\"Unknown field \\\"caf\\\\u00e9: API key not valid\\\"\"}}");
        QTest::newRow("anthropic 400 quoting xAI's key words")
            << "pa"
            << "Incorrect API key provided"
            << "pa/claude-a" << 400
            << QByteArray(R"({"type":"error","error":{"type":"invalid_request_error",)"
                          R"("message":"Incorrect API key provided: Extra inputs are not permitted"}})");
        QTest::newRow("anthropic 400 quoting Gemini's deleted-key words")
            << "pa"
            << "API Key not found"
            << "pa/claude-a" << 400
            << QByteArray(R"({"type":"error","error":{"type":"invalid_request_error",)"
                          R"("message":"API Key not found: Extra inputs are not permitted"}})");
        QTest::newRow("anthropic 400 quoting an account's words")
            << "pa"
            << "my organization has been disabled"
            << "pa/claude-a" << 400
            << QByteArray(R"({"type":"error","error":{"type":"invalid_request_error",)"
                          R"("message":"my organization has been disabled: Extra inputs are not permitted"}})");
        QTest::newRow("gemini 404, the model id in the URL")
            << "pe"
            << ""
            << "pe/insufficient_quota" << 404
            << QByteArray(R"({"error":{"code":404,"message":"models/insufficient_quota is not found for API )"
                          R"(version v1beta","status":"NOT_FOUND"}})");
    }
    void wordsTheRequestHeldNeverDecideTheSharedKey() {
        QFETCH(QString, provider);
        QFETCH(QString, field);
        QFETCH(QString, model);
        QFETCH(int, status);
        QFETCH(QByteArray, body);
        GatewayFixture gw;
        gw.config.providers[provider].credentials = {QStringLiteral("env:SW_TEST_KEY_ONE")};
        demo::FakeUpstream &upstream = provider == QLatin1String("pa") ? gw.anthropicA : gw.googleE;
        upstream.pushFault(statusWith(status, {}, body));
        gw.start();

        QByteArray request = QJsonDocument(GatewayFixture::anthropicBody(model, QStringLiteral("hi"), false))
                                 .toJson(QJsonDocument::Compact);
        if (!field.isEmpty()) // written by hand: an escape must reach the upstream as the tenant wrote it
            request.insert(1, "\"" + field.toUtf8() + "\":1,");
        const auto refused = gw.postRaw(QStringLiteral("/v1/messages"), request);
        QCOMPARE(refused.status, status); // the tenant's own bad request, as the upstream said it
        const QJsonObject entry = credentialEntry(gw, provider);
        QVERIFY2(entry.value(QStringLiteral("state")).toString() == QLatin1String("ok"),
                 QJsonDocument(entry).toJson().constData());

        // Another request finds the key in service.
        upstream.clearRequests();
        const auto next =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(provider == QLatin1String("pa") ? QStringLiteral("pa/claude-a")
                                                                                  : QStringLiteral("pe/gemini-e"),
                                                  QStringLiteral("hi"), false));
        QCOMPARE(next.status, 200);
        QCOMPARE(upstream.requests().size(), 1);
    }

    // The other side of the rule above: a real out-of-credit answer still parks the key and fails over
    // when the conversation merely talks about credit (probe BV R1: the prompt "my credit balance is
    // low" hid Anthropic's own 400, and every later request hit the spent key).
    void aRealUsageLimitCountsWhateverTheConversationSays() {
        GatewayFixture gw;
        gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pa/claude-a"),
                                                                QStringLiteral("pb/gpt-b")};
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("env:SW_TEST_KEY_ONE")};
        gw.anthropicA.pushFault(statusWith(
            400, {},
            R"({"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low )"
            R"(to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}})"));
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"),
                                                             QStringLiteral("my credit balance is low, why?"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(r.header("x-switchman-fallback-reason"), QByteArray("credential_exhausted"));
        QCOMPARE(credentialEntry(gw, QStringLiteral("pa")).value(QStringLiteral("state")).toString(),
                 QStringLiteral("parked"));
    }

    void leaseCountsTheCredentialInFlight() {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("env:SW_TEST_KEY_ONE"),
                                                                 QStringLiteral("env:SW_TEST_KEY_THREE")};
        demo::Fault stall;
        stall.kind = demo::Fault::StallBeforeHeaders;
        gw.anthropicA.setFault(stall);
        gw.start();
        auto *reply =
            gw.postAsync(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), false));
        QVERIFY(waitUntil([&gw]() { return gw.anthropicA.requests().size() == 1; }));
        QCOMPARE(gw.engine().pools().inFlight(QStringLiteral("pa"), 0), 1);
        QCOMPARE(gw.engine().pools().inFlight(QStringLiteral("pa"), 1), 0);
        reply->abort(); // the client leaves: the lease is released
        reply->deleteLater();
        QVERIFY(waitUntil([&gw]() { return gw.engine().pools().totalInFlight() == 0; }));
    }

    void keychainSecretsArePrewarmedAtStart() {
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

    void keychainProblemsAreLoggedAtStart() {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:pa-missing")};
        gw.start();
        QSignalSpy logs(gw.engine().telemetry(), &telemetry::Telemetry::logLine);
        QVERIFY(waitUntil([&logs]() { return !logs.isEmpty(); }));
        const QJsonObject line = logs.first().at(0).toJsonObject();
        QCOMPARE(line.value(QStringLiteral("level")).toString(), QStringLiteral("warn"));
        QCOMPARE(line.value(QStringLiteral("msg")).toString(), QStringLiteral("keychain credential missing"));
        QCOMPARE(line.value(QStringLiteral("credential")).toString(), QStringLiteral("keychain:pa-missing"));
        QVERIFY(line.value(QStringLiteral("hint"))
                    .toString()
                    .contains(QStringLiteral("switchman credential set pa-missing")));

        GatewayFixture down;
        down.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:pa-main")};
        down.secrets.mode = ScriptedSecretStore::Mode::Fail;
        down.start();
        QSignalSpy downLogs(down.engine().telemetry(), &telemetry::Telemetry::logLine);
        QVERIFY(waitUntil([&downLogs]() { return !downLogs.isEmpty(); }));
        QCOMPARE(downLogs.first().at(0).toJsonObject().value(QStringLiteral("msg")).toString(),
                 QStringLiteral("keychain unavailable"));
        // Said once, as what it is: the store could not be read. It was also logged as a
        // warning "credential back in use", with an empty reason and status 0 (a provider's words).
        QVERIFY(waitUntil([&down]() {
            return credentialEntry(down, QStringLiteral("pa")).value(QStringLiteral("state")).toString() ==
                   QLatin1String("unavailable");
        }));
        auto linesAbout = [&downLogs]() {
            QList<QJsonObject> lines;
            for (const auto &args : downLogs) {
                const QJsonObject line = args.at(0).toJsonObject();
                if (line.value(QStringLiteral("credential")).toString() == QLatin1String("keychain:pa-main") ||
                    line.value(QStringLiteral("ref")).toString() == QLatin1String("keychain:pa-main"))
                    lines << line;
            }
            return lines;
        };
        QList<QJsonObject> lines = linesAbout();
        QCOMPARE(lines.size(), 1);
        QCOMPARE(lines.first().value(QStringLiteral("msg")).toString(), QStringLiteral("keychain unavailable"));
        QCOMPARE(lines.first().value(QStringLiteral("level")).toString(), QStringLiteral("warn"));
        QCOMPARE(lines.first().value(QStringLiteral("provider")).toString(), QStringLiteral("pa"));
        QVERIFY(lines.first().value(QStringLiteral("hint")).toString().contains(QStringLiteral("not available")));
        QVERIFY(!lines.first().contains(QStringLiteral("reason")) && !lines.first().contains(QStringLiteral("status")));
        // A reload while it still cannot be read says it again, once.
        down.engine().applyConfig(*down.engine().config());
        QVERIFY(waitUntil([&linesAbout]() { return linesAbout().size() == 2; }));
        QCOMPARE(linesAbout().last().value(QStringLiteral("msg")).toString(), QStringLiteral("keychain unavailable"));
        // Readable again: the next request reads it, and the log says the key is back in use.
        down.secrets.mode = ScriptedSecretStore::Mode::Answer;
        down.secrets.secrets.insert(QStringLiteral("pa-main"), "key-back");
        QCOMPARE(down.post(QStringLiteral("/v1/messages"),
                           GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("y"), false))
                     .header("x-switchman-candidate"),
                 QByteArray("pa/claude-a"));
        lines = linesAbout();
        QCOMPARE(lines.size(), 3);
        QCOMPARE(lines.last().value(QStringLiteral("msg")).toString(), QStringLiteral("credential back in use"));
        QCOMPARE(lines.last().value(QStringLiteral("level")).toString(), QStringLiteral("info"));
    }

    void keychainFailureIsASetupErrorThatFailsOver() {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:pa-main")};
        gw.secrets.mode = ScriptedSecretStore::Mode::Fail;
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-fallback-reason"), QByteArray("setup_error"));
        QCOMPARE(gw.anthropicA.requests().size(), 0);
        // The admin window said "ok" for a key no request could read (probe R): it says why not.
        const QJsonObject entry = credentialEntry(gw, QStringLiteral("pa"));
        QCOMPARE(entry.value(QStringLiteral("state")).toString(), QStringLiteral("unavailable"));
        QVERIFY2(entry.value(QStringLiteral("lastError")).toString().contains(QStringLiteral("not available")),
                 qPrintable(entry.value(QStringLiteral("lastError")).toString()));
        // The Secret Service is back: the next request reads the key and it is ok again.
        gw.secrets.mode = ScriptedSecretStore::Mode::Answer;
        gw.secrets.secrets.insert(QStringLiteral("pa-main"), "key-back");
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("y"), false))
                     .header("x-switchman-candidate"),
                 QByteArray("pa/claude-a"));
        QCOMPARE(credentialEntry(gw, QStringLiteral("pa")).value(QStringLiteral("state")).toString(),
                 QStringLiteral("ok"));
    }

    void aKeyStoredWhileRunningIsUsedOnceTheOldOneIsRefused() {
        // `switchman credential set` could not tell the running instance (tenants, no admin key):
        // it kept sending the cached old key, and after the provider's 401 the key stayed
        // rejected until a retry or a restart (probe R 08).
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:pa-main")};
        gw.secrets.secrets.insert(QStringLiteral("pa-main"), "sk-kc-OLD-444");
        gw.start();
        QVERIFY(waitUntil([&gw]() { return gw.engine().pools().isCached(QStringLiteral("pa-main")); }));
        gw.secrets.secrets.insert(QStringLiteral("pa-main"), "sk-kc-NEW-555"); // nobody tells the gateway
        gw.anthropicA.pushFault(status(401));                                  // the provider revoked the old one
        const auto body = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("hi"), false);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QVERIFY(waitUntil([&gw]() {
            return credentialEntry(gw, QStringLiteral("pa")).value(QStringLiteral("state")).toString() ==
                   QLatin1String("ok");
        }));
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).header("x-switchman-candidate"),
                 QByteArray("pa/claude-a"));
        QCOMPARE(authSeen(gw.anthropicA), (QByteArrayList{"sk-kc-OLD-444", "sk-kc-NEW-555"}));
    }

    void aKeyStoredAfterTheRefusalIsFoundByTheNextRequest() {
        // The usual order (probe R 08): the provider revokes the key (401, rejected), then the user
        // stores a new one with `credential set` that cannot reach the instance. Every request
        // answered 502 without trying the provider until a retry or a restart.
        FakeClock clock;
        GatewayFixture gw;
        gw.clock = &clock;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:pa-main")};
        gw.secrets.secrets.insert(QStringLiteral("pa-main"), "sk-kc-OLD-444");
        gw.start();
        QVERIFY(waitUntil([&gw]() { return gw.engine().pools().isCached(QStringLiteral("pa-main")); }));
        gw.anthropicA.pushFault(status(401));
        const auto body = GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("hi"), false);
        QVERIFY(gw.post(QStringLiteral("/v1/messages"), body).status >= 400);
        QCOMPARE(credentialEntry(gw, QStringLiteral("pa")).value(QStringLiteral("state")).toString(),
                 QStringLiteral("rejected"));
        gw.secrets.secrets.insert(QStringLiteral("pa-main"), "sk-kc-NEW-555");
        // The next look at the rejected key (a request, or the admin window as here) reads the store.
        clock.advance(credentials::CredentialPools::kRereadRefusedMs);
        QVERIFY(waitUntil([&gw]() {
            return credentialEntry(gw, QStringLiteral("pa")).value(QStringLiteral("state")).toString() ==
                   QLatin1String("ok");
        }));
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).status, 200);
        QCOMPARE(authSeen(gw.anthropicA), (QByteArrayList{"sk-kc-OLD-444", "sk-kc-NEW-555"}));
    }

    // A locked keyring whose unlock prompt nobody answers (or a hung Secret Service) held every
    // request of the route until the deadline, then 502: the healthy next candidate was never asked,
    // /admin/credentials said "ok" and the log said nothing (probe AA4 F1).
    void aKeychainThatDoesNotAnswerFailsOverAtItsBound() {
        FakeClock clock;
        GatewayFixture gw;
        gw.clock = &clock;
        gw.config.failover.deadlineMs = 120000; // the default
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:pa-main")};
        gw.secrets.mode = ScriptedSecretStore::Mode::Hang;
        gw.start();
        QSignalSpy logs(gw.engine().telemetry(), &telemetry::Telemetry::logLine);
        const auto body = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false);
        QNetworkReply *reply = gw.postAsync(QStringLiteral("/v1/messages"), body);
        QTRY_COMPARE(gw.engine().activeRequests(), 1);
        QCoreApplication::processEvents();
        QVERIFY(!reply->isFinished());
        clock.advance(credentials::CredentialPools::kKeychainReadTimeoutMs); // from the read at start
        const auto r = gw.wait(reply);
        reply->deleteLater();
        QVERIFY2(r.status == 200, r.body.constData());
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(r.header("x-switchman-fallback-reason"), QByteArray("setup_error"));

        // Said in the admin API and the log while the read waits.
        const QJsonObject entry = credentialEntry(gw, QStringLiteral("pa"));
        QCOMPARE(entry.value(QStringLiteral("state")).toString(), QStringLiteral("unavailable"));
        QVERIFY2(entry.value(QStringLiteral("lastError")).toString().contains(QStringLiteral("has not answered")),
                 qPrintable(entry.value(QStringLiteral("lastError")).toString()));
        bool logged = false;
        for (const auto &args : logs) {
            const QJsonObject line = args.at(0).toJsonObject();
            logged =
                logged || (line.value(QStringLiteral("msg")).toString() == QLatin1String("keychain unavailable") &&
                           line.value(QStringLiteral("hint")).toString().contains(QStringLiteral("has not answered")));
        }
        QVERIFY(logged);

        // Later requests pass the key over at once (the clock stands still), with no read of their own.
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(gw.secrets.reads, 1);

        // The keyring is unlocked: the read's answer is used from the next request.
        gw.secrets.secrets.insert(QStringLiteral("pa-main"), "pa-late");
        gw.secrets.mode = ScriptedSecretStore::Mode::Answer;
        gw.secrets.answerHeld();
        QVERIFY(waitUntil([&gw]() { return gw.engine().pools().isCached(QStringLiteral("pa-main")); }));
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).header("x-switchman-candidate"),
                 QByteArray("pa/claude-a"));
        QCOMPARE(authSeen(gw.anthropicA), QByteArrayList{"pa-late"});
        QCOMPARE(credentialEntry(gw, QStringLiteral("pa")).value(QStringLiteral("state")).toString(),
                 QStringLiteral("ok"));
    }

    // A reload that changed nothing (SIGHUP, /admin/reload) threw away the cached keychain key: with
    // the keyring locked since, its provider went out of service (probe AA4 F3).
    void aReloadThatChangesNothingKeepsTheKeychainKey() {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:pa-main")};
        gw.secrets.secrets.insert(QStringLiteral("pa-main"), "pa-secret");
        gw.start();
        QVERIFY(waitUntil([&gw]() { return gw.engine().pools().isCached(QStringLiteral("pa-main")); }));
        gw.secrets.mode = ScriptedSecretStore::Mode::Fail; // the keyring locked since
        QSignalSpy logs(gw.engine().telemetry(), &telemetry::Telemetry::logLine);
        gw.engine().applyConfig(*gw.engine().config());
        QVERIFY(waitUntil([&gw]() { return !gw.engine().pools().isReading(QStringLiteral("pa-main")); }));
        QCOMPARE(gw.secrets.reads, 2);
        bool said = false; // the read failed, and the log says the key read before stays in use
        for (const auto &args : logs) {
            const QJsonObject line = args.at(0).toJsonObject();
            said = said || (line.value(QStringLiteral("msg")).toString() == QLatin1String("keychain unavailable") &&
                            line.contains(QStringLiteral("inUse")));
        }
        QVERIFY(said);
        const auto r =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(authSeen(gw.anthropicA), QByteArrayList{"pa-secret"});
        QCOMPARE(credentialEntry(gw, QStringLiteral("pa")).value(QStringLiteral("state")).toString(),
                 QStringLiteral("ok"));
    }

    void passthroughForwardsTheCallersKeyToThatProviderOnly() {
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
        const auto gatewayOnly =
            gw.post(QStringLiteral("/v1/messages"), body, {{"authorization", "Bearer " + gatewayKey}});
        QCOMPARE(gatewayOnly.status, 200);
        QCOMPARE(gatewayOnly.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
        QCOMPARE(gw.anthropicC.requests().size(), 0);
        for (const auto *u : {&gw.anthropicA, &gw.openaiB, &gw.anthropicC})
            QVERIFY(!upstreamSaw(*u, gatewayKey));
        QVERIFY(!upstreamSaw(gw.anthropicC, "pa-own-key"));
    }

    // Two providers forward the caller's own key, at two base URLs. The caller gave one key, meant
    // for the chain's first of them: a failover sent it on to the second host, whether the first
    // failed or was passed over for its mark (probe J3 1). The second has no key for this request,
    // its row says why, and a provider with a key of its own answers.
    void theCallersKeyGoesToOneBaseUrlOnly() {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pc")].credentials = {QStringLiteral("passthrough")};
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("passthrough")};
        QVERIFY(gw.config.providers[QStringLiteral("pa")].baseUrl != gw.config.providers[QStringLiteral("pc")].baseUrl);
        config::RouteConfig route;
        route.name = QStringLiteral("pass");
        route.candidates = {QStringLiteral("pc/claude-c"), QStringLiteral("pa/claude-a"), QStringLiteral("pb/gpt-b")};
        gw.config.routes.insert(route.name, route);
        gw.start();
        const auto body = GatewayFixture::anthropicBody(QStringLiteral("pass"), QStringLiteral("hi"), false);
        const QList<QPair<QByteArray, QByteArray>> callerKey{{"x-api-key", "caller-own-key"}};

        gw.anthropicC.pushFault(status(503));
        const auto failedOver = gw.post(QStringLiteral("/v1/messages"), body, callerKey);
        QCOMPARE(failedOver.status, 200);
        QCOMPARE(failedOver.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(authSeen(gw.anthropicC), QByteArrayList{"caller-own-key"});
        QCOMPARE(gw.anthropicA.requests().size(), 0);
        QVERIFY(!upstreamSaw(gw.openaiB, "caller-own-key"));
        bool said = false;
        for (const auto &a : gw.engine().telemetry()->attempts(-1))
            if (a.requestId == QString::fromLatin1(failedOver.header("x-switchman-request-id")) &&
                a.candidate == QLatin1String("pa/claude-a"))
                said = a.message.contains(QLatin1String("sends only to provider \"pc\""));
        QVERIFY(said);

        // pc marked down now: pa is asked first, and still gets no key that was meant for pc.
        const auto marked = gw.post(QStringLiteral("/v1/messages"), body, callerKey);
        QCOMPARE(marked.status, 200);
        QCOMPARE(marked.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(gw.anthropicA.requests().size(), 0);

        // A direct request to pa is its own chain: pa is its first passthrough provider.
        const auto direct = gw.post(
            QStringLiteral("/v1/messages"),
            GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("hi"), false), callerKey);
        QCOMPARE(direct.status, 200);
        QCOMPARE(authSeen(gw.anthropicA), QByteArrayList{"caller-own-key"});
    }

    // The same server written as a second provider with a `/` at the end (or its host in capitals) is
    // the same base URL: the key goes there too. It was skipped as another host's, and the client got
    // the 503 the server beside it would have answered (probe JV L3).
    void theCallersKeyBaseUrlIsComparedAsAUrl() {
        GatewayFixture gw;
        auto &pc = gw.config.providers[QStringLiteral("pc")];
        pc.credentials = {QStringLiteral("passthrough")};
        config::ProviderConfig again = pc;
        again.id = QStringLiteral("pc-again");
        QVERIFY(again.baseUrl.startsWith(QLatin1String("http://127.0.0.1:")));
        again.baseUrl = QStringLiteral("HTTP://127.0.0.1") + again.baseUrl.mid(16) + QStringLiteral("/");
        gw.config.providers.insert(again.id, again);
        config::ModelConfig model = gw.config.models.value(QStringLiteral("pc/claude-c"));
        model.provider = again.id;
        gw.config.models.insert(model.key(), model);
        config::RouteConfig route;
        route.name = QStringLiteral("pass");
        route.candidates = {QStringLiteral("pc/claude-c"), QStringLiteral("pc-again/claude-c")};
        gw.config.routes.insert(route.name, route);
        gw.start();
        gw.anthropicC.pushFault(status(503));
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("pass"), QStringLiteral("hi"), false),
                               {{"x-api-key", "caller-own-key"}});
        QVERIFY2(r.status == 200, r.body.constData());
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pc-again/claude-c"));
        QCOMPARE(authSeen(gw.anthropicC), (QByteArrayList{"caller-own-key", "caller-own-key"}));
    }

    // Two callers of one tenant, each signed in with its own provider key (two people behind one
    // gateway key, or two local tools on a tenant-less gateway), pick the same Idempotency-Key: the
    // second must get its own answer from its own account, never a replay of the first one's
    // answer (someone else's conversation, billed to someone else).
    void anIdempotencyKeyBelongsToTheCallersOwnProviderKey() {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pc")].credentials = {QStringLiteral("passthrough")};
        gw.start();
        const auto body = GatewayFixture::anthropicBody(QStringLiteral("pc/claude-c"), QStringLiteral("x"), false);
        const auto first = gw.post(QStringLiteral("/v1/messages"), body,
                                   {{"x-api-key", "first-callers-key"}, {"Idempotency-Key", "k1"}});
        QCOMPARE(first.status, 200);
        const auto second = gw.post(QStringLiteral("/v1/messages"), body,
                                    {{"x-api-key", "second-callers-key"}, {"Idempotency-Key", "k1"}});
        QCOMPARE(second.status, 200);
        QVERIFY(second.header("x-switchman-idempotent-replay").isEmpty());
        QCOMPARE(authSeen(gw.anthropicC), (QByteArrayList{"first-callers-key", "second-callers-key"}));
        // Each caller's own retry is still a replay, and does not reach the provider.
        const auto retry = gw.post(QStringLiteral("/v1/messages"), body,
                                   {{"authorization", "Bearer first-callers-key"}, {"Idempotency-Key", "k1"}});
        QCOMPARE(retry.status, 200);
        QCOMPARE(retry.header("x-switchman-idempotent-replay"), QByteArray("true"));
        QCOMPARE(retry.body, first.body);
        QCOMPARE(gw.anthropicC.requests().size(), 2);
        // Another body under the same key is still the caller's own mistake (422), told only to it.
        const auto other = GatewayFixture::anthropicBody(QStringLiteral("pc/claude-c"), QStringLiteral("y"), false);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), other,
                         {{"x-api-key", "first-callers-key"}, {"Idempotency-Key", "k1"}})
                     .status,
                 422);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), other,
                         {{"x-api-key", "third-callers-key"}, {"Idempotency-Key", "k1"}})
                     .status,
                 200);
    }

    void aCallersRejectedKeyDoesNotLockOutOtherCallers() {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pc")].credentials = {QStringLiteral("passthrough")};
        gw.anthropicC.pushFault(status(401));
        gw.start();
        const auto body = GatewayFixture::anthropicBody(QStringLiteral("pc/claude-c"), QStringLiteral("x"), false);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body, {{"x-api-key", "callers-revoked-key"}}).status, 401);
        const auto other = gw.post(QStringLiteral("/v1/messages"), body, {{"x-api-key", "another-callers-key"}});
        QCOMPARE(other.status, 200);
        QCOMPARE(authSeen(gw.anthropicC), (QByteArrayList{"callers-revoked-key", "another-callers-key"}));
    }

    // Claude Code signed in through a passthrough provider: when its login expires, the upstream's
    // 401 must reach it (it renews the login on a 401) rather than a failover that hides it on
    // every later request, or a mark that parks the provider for the caller's key.
    void aCallersRefusedKeyIsTheirsToRenewNotAFailover() {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pc")].credentials = {QStringLiteral("passthrough")};
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("env:SW_TEST_PA_KEY")};
        config::RouteConfig route;
        route.name = QStringLiteral("login");
        route.candidates = {QStringLiteral("pc/claude-c"), QStringLiteral("pa/claude-a")};
        gw.config.routes.insert(route.name, route);
        gw.anthropicC.pushFault(statusWith(401, {},
                                           "{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\","
                                           "\"message\":\"OAuth token has expired.\"}}"));
        gw.start();

        const auto expired =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("login"), QStringLiteral("hi"), false),
                    {{"authorization", "Bearer expired"}});
        QCOMPARE(expired.status, 401);
        const QJsonObject error = expired.json().value(QStringLiteral("error")).toObject();
        QCOMPARE(error.value(QStringLiteral("type")).toString(), QStringLiteral("authentication_error"));
        QVERIFY2(error.value(QStringLiteral("message")).toString().contains(QStringLiteral("OAuth token has expired")),
                 expired.body.constData());
        // A stream's 200 went out when the try began (SPEC 5): the refusal is its in-band error.
        gw.anthropicC.pushFault(status(401));
        const auto expiredStream =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("login"), QStringLiteral("hi"), true),
                    {{"authorization", "Bearer expired"}});
        QVERIFY2(expiredStream.body.contains("event: error") && expiredStream.body.contains("authentication_error"),
                 expiredStream.body.constData());
        QCOMPARE(gw.anthropicA.requests().size(), 0); // not answered by another provider's key
        QVERIFY(gw.engine().marks().isEmpty());

        // The renewed login goes to the same provider at once.
        const auto renewed =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("login"), QStringLiteral("hi"), false),
                    {{"authorization", "Bearer renewed"}});
        QCOMPARE(renewed.status, 200);
        QCOMPARE(renewed.header("x-switchman-candidate"), QByteArray("pc/claude-c"));
        QCOMPARE(authSeen(gw.anthropicC), (QByteArrayList{"expired", "expired", "renewed"}));

        // A usage limit on the caller's own key is what failover is for: the next candidate answers.
        gw.anthropicC.pushFault(statusWith(429, {},
                                           "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\","
                                           "\"message\":\"You have reached your usage limit.\"}}"));
        const auto limited =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("login"), QStringLiteral("hi"), false),
                    {{"authorization", "Bearer renewed"}});
        QCOMPARE(limited.status, 200);
        QCOMPARE(limited.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
    }

    // An OpenAI key out of quota on a route with no other candidate: the client gets 429 with the
    // provider's own code and when the key is back (seed 004: a spend cap stays 429), on that
    // request and the next ones, which do not reach the provider. It got 502 "no usable
    // credential", which SDKs retry at once and users read as a broken key.
    void aLimitOnEveryKeyIsA429ThatSaysWhenItIsBack() {
        FakeClock clock;
        GatewayFixture gw;
        gw.clock = &clock;
        gw.config.providers[QStringLiteral("pb")].credentials = {QStringLiteral("env:SW_TEST_KEY_ONE")};
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("env:SW_TEST_KEY_THREE")};
        gw.openaiB.pushFault(statusWith(
            429, {},
            R"({"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}})"));
        gw.anthropicA.pushFault(status(401));
        gw.start();
        const auto body = GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), false);
        const auto first = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(first.status, 429);
        QCOMPARE(first.header("retry-after"), QByteArray("3600"));
        QCOMPARE(first.header("x-should-retry"), QByteArray("false")); // not an hour's sleep in the SDK
        QJsonObject error = first.json().value(QStringLiteral("error")).toObject();
        QCOMPARE(error.value(QStringLiteral("code")).toString(), QStringLiteral("insufficient_quota"));
        QVERIFY2(
            error.value(QStringLiteral("message")).toString().contains(QStringLiteral("exceeded your current quota")),
            first.body.constData());

        clock.advance(600000);
        const auto later = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(later.status, 429);
        QCOMPARE(later.header("retry-after"), QByteArray("3000"));
        error = later.json().value(QStringLiteral("error")).toObject();
        QVERIFY2(error.value(QStringLiteral("message")).toString().contains(QStringLiteral("usage limit")),
                 later.body.constData());
        QCOMPARE(gw.openaiB.requests().size(), 1); // not asked again while the key is set aside

        // A key the provider refused waits for a new secret, not for time: a 502 with no Retry-After.
        const auto anthropic =
            GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("hi"), false);
        for (int i = 0; i < 2; ++i) {
            const auto refused = gw.post(QStringLiteral("/v1/messages"), anthropic);
            QCOMPARE(refused.status, 502);
            QVERIFY(refused.header("retry-after").isEmpty());
            QCOMPARE(refused.header("x-should-retry"), QByteArray("false")); // only a new secret helps
        }
        QCOMPARE(gw.anthropicA.requests().size(), 1);
    }

    // A 403 that says nothing about the key (a Cloudflare block page, a region block) set the only
    // key aside as "auth" for an hour (probe t4_403_recover), then for a minute. A WAF blocks a
    // request for what it says: one tenant's prompt then steered every tenant off the provider for
    // that minute, and a direct selector got "no usable credential" (probe Q2 F3). A page is this
    // request's refusal: the client is told the 403 and its words, the key stays in service.
    void aForbiddenPageIsTheRequestsRefusalNotTheKeys() {
        FakeClock clock;
        GatewayFixture gw;
        gw.clock = &clock;
        gw.config.providers[QStringLiteral("pb")].credentials = {QStringLiteral("env:SW_TEST_KEY_ONE")};
        gw.openaiB.pushFault(statusWith(403, {},
                                        "<!DOCTYPE html><html><head><title>Attention Required! | Cloudflare</title>"
                                        "</head><body><h1>Sorry, you have been blocked</h1></body></html>"));
        gw.start();
        const auto body = GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), false);
        const auto first = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(first.status, 502);
        QCOMPARE(first.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("type")).toString(),
                 QStringLiteral("server_error"));
        const QString message =
            first.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString();
        QVERIFY2(message.contains(QStringLiteral("403")) && message.contains(QStringLiteral("you have been blocked")) &&
                     !message.contains(QStringLiteral("no usable credential")),
                 first.body.constData());
        QCOMPARE(gw.openaiB.requests().size(), 1); // a 403 is not retried
        QCOMPARE(credentialEntry(gw, QStringLiteral("pb")).value(QStringLiteral("state")).toString(),
                 QStringLiteral("ok"));

        clock.advance(1000); // the next request, whoever sends it, is asked of the provider and answered
        const auto next = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(next.status, 200);
        QCOMPARE(gw.openaiB.requests().size(), 2);
    }

    // A provider's refusal of what one tenant's request carries, with its key in good standing, set the
    // shared key aside for every tenant: xAI's safety 403 for an hour (its text names the "API key ID"),
    // OpenRouter's moderation 403 and Gemini's refusals of a file the request names for a minute; the
    // requester got a 502 and the other tenants were refused too (probe S2 F1). It is the requester's
    // refusal, told in its format as a 400 content_filter is; the key stays in service.
    void aContentRefusalLeavesTheKeyToEveryOtherTenant() {
        FakeClock clock;
        GatewayFixture gw;
        gw.clock = &clock;
        addTenant(gw.config, QStringLiteral("alice"), kAliceKey, true);
        addTenant(gw.config, QStringLiteral("bob"), kBobKey);
        gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pb/gpt-b"),
                                                                QStringLiteral("pa/claude-a")};
        gw.config.providers[QStringLiteral("pb")].credentials = {QStringLiteral("env:SW_TEST_KEY_ONE")};
        gw.config.providers[QStringLiteral("pe")].credentials = {QStringLiteral("env:SW_TEST_KEY_THREE")};
        gw.start();
        const auto stateOf = [&gw](const QString &provider) {
            const auto r = gw.get(QStringLiteral("/admin/credentials"), 15000, bearer(kAliceKey));
            for (const auto &v : r.json().value(QStringLiteral("credentials")).toArray())
                if (v.toObject().value(QStringLiteral("provider")).toString() == provider)
                    return v.toObject().value(QStringLiteral("state")).toString();
            return QString();
        };
        struct Shape {
            demo::FakeUpstream *upstream;
            QString model;
            int status;
            QByteArray body;
            QString words;
        };
        const QList<Shape> shapes{
            {&gw.openaiB, QStringLiteral("pb/gpt-b"), 403,
             "{\"code\":\"The caller does not have permission to execute the specified operation\",\"error\":"
             "\"Content violates usage guidelines. Team: 0000-test, API key ID: 1111-test, Model: gpt-b, Failed "
             "check: SAFETY_CHECK_TYPE_BIO\"}",
             QStringLiteral("Content violates usage guidelines")},
            {&gw.openaiB, QStringLiteral("pb/gpt-b"), 403,
             "{\"error\":{\"code\":403,\"message\":\"openai/gpt-4o requires moderation on OpenRouter. Your input "
             "was flagged for violence/graphic. No credits were charged.\"}}",
             QStringLiteral("Your input was flagged")},
            {&gw.googleE, QStringLiteral("pe/gemini-e"), 403,
             "{\"error\":{\"code\":403,\"message\":\"You do not have permission to access the File 8k2lq0x1 or it "
             "may not exist.\",\"status\":\"PERMISSION_DENIED\"}}",
             QStringLiteral("permission to access the File")},
            {&gw.googleE, QStringLiteral("pe/gemini-e"), 400,
             "{\"error\":{\"code\":400,\"message\":\"The File 4d21d8wxg1pe is not in an ACTIVE state and usage is "
             "not allowed.\",\"status\":\"FAILED_PRECONDITION\"}}",
             QStringLiteral("not in an ACTIVE state")},
        };
        for (const Shape &shape : shapes) {
            shape.upstream->pushFault(statusWith(shape.status, {}, shape.body));
            const qsizetype asked = shape.upstream->requests().size();
            const auto refused =
                gw.post(QStringLiteral("/v1/chat/completions"),
                        GatewayFixture::openaiBody(shape.model, QStringLiteral("a prompt"), false), bearer(kAliceKey));
            QCOMPARE(refused.status, shape.status); // the provider's refusal, not a 502
            QVERIFY2(errorMessageOf(refused).contains(shape.words) &&
                         !errorMessageOf(refused).contains(QStringLiteral("no usable credential")),
                     refused.body.constData());
            QCOMPARE(shape.upstream->requests().size(), asked + 1); // asked once: the same answer would come
            QCOMPARE(stateOf(shape.model.section(QLatin1Char('/'), 0, 0)), QStringLiteral("ok"));

            clock.advance(1000); // the other tenant's request is asked of the provider and answered
            const auto served =
                gw.post(QStringLiteral("/v1/chat/completions"),
                        GatewayFixture::openaiBody(shape.model, QStringLiteral("hi"), false), bearer(kBobKey));
            QCOMPARE(served.status, 200);
            QCOMPARE(shape.upstream->requests().size(), asked + 2);
        }
        // In a chain too it is the requester's refusal (as a 400 content_filter stops it): no failover,
        // no mark, the key in service.
        gw.openaiB.pushFault(statusWith(403, {}, shapes.first().body));
        const auto chained = gw.post(
            QStringLiteral("/v1/chat/completions"),
            GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("a prompt"), false), bearer(kAliceKey));
        QCOMPARE(chained.status, 403);
        QVERIFY(gw.anthropicA.requests().isEmpty());
        QVERIFY(gw.engine().marks().isEmpty());
        QCOMPARE(stateOf(QStringLiteral("pb")), QStringLiteral("ok"));
    }

    // One prompt over a per-minute token limit (OpenAI's "Request too large ... on tokens per min",
    // Anthropic's "would exceed the rate limit ... reduce the prompt length" with its budget untouched)
    // marked the model rate_limited for the tenant: its other clients were steered off a healthy first
    // choice (probe S2 F4). The request's own size: it fails over for itself alone, marks nothing, and
    // with no candidate left the client reads the provider's words as a 413, which no SDK retries.
    void aRequestTooLargeForTheRateLimitMarksNothing() {
        FakeClock clock;
        GatewayFixture gw;
        gw.clock = &clock;
        gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pb/gpt-b"),
                                                                QStringLiteral("pa/claude-a")};
        demo::Fault tooLarge = statusWith(
            429, {},
            "{\"error\":{\"message\":\"Request too large for gpt-4o in organization org-Test0000 on tokens per min "
            "(TPM): Limit 30000, Requested 43090. The input or output tokens must be reduced in order to run "
            "successfully.\",\"type\":\"tokens\",\"param\":null,\"code\":\"rate_limit_exceeded\"}}");
        tooLarge.headers = {{"x-ratelimit-limit-tokens", "30000"},     {"x-ratelimit-remaining-tokens", "30000"},
                            {"x-ratelimit-reset-tokens", "0s"},        {"x-ratelimit-limit-requests", "500"},
                            {"x-ratelimit-remaining-requests", "499"}, {"x-ratelimit-reset-requests", "120ms"}};
        gw.openaiB.pushFault(tooLarge);
        gw.start();
        const auto body = GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("hi"), false);
        const auto failedOver = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(failedOver.status, 200);
        QCOMPARE(failedOver.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
        QCOMPARE(gw.openaiB.requests().size(), 1); // not asked again: the same request is too large
        QVERIFY(gw.engine().marks().isEmpty());
        clock.advance(1000);
        const auto next = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(next.header("x-switchman-candidate"), QByteArray("pb/gpt-b")); // the first choice still

        // Alone on its route: the provider's words as the request's error, nothing to wait out.
        gw.openaiB.pushFault(tooLarge);
        const auto alone = gw.post(QStringLiteral("/v1/chat/completions"),
                                   GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), false));
        QCOMPARE(alone.status, 413);
        QVERIFY(alone.header("retry-after").isEmpty());
        QCOMPARE(alone.header("x-should-retry"), QByteArray("false"));
        QVERIFY2(errorMessageOf(alone).contains(QStringLiteral("Request too large for gpt-4o")),
                 alone.body.constData());
        QCOMPARE(gw.openaiB.requests().size(), 3);

        // Anthropic's words are any token limit's: its budget untouched tells the request's size.
        demo::Fault wouldExceed = statusWith(
            429, "1",
            "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"This request would "
            "exceed the rate limit for your organization (0000) of 30,000 input tokens per minute. Please reduce "
            "the prompt length or the maximum tokens requested, or try again later.\"}}");
        wouldExceed.headers = {{"anthropic-ratelimit-input-tokens-limit", "30000"},
                               {"anthropic-ratelimit-input-tokens-remaining", "30000"}};
        gw.anthropicA.pushFault(wouldExceed);
        const auto messages =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("hi"), false));
        QCOMPARE(messages.status, 413);
        QCOMPARE(messages.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("type")).toString(),
                 QStringLiteral("request_too_large"));
        QVERIFY(messages.header("retry-after").isEmpty());
        QVERIFY(gw.engine().marks().isEmpty());
    }

    // A provider's 413 (Anthropic's request_too_large, the stock page of an nginx in front of a
    // self-hosted server, 1 MiB by default) stopped the chain on every request of that size: the
    // route's fallback, which takes it, was never asked (probe Z1 F1). It is this provider's limit, as
    // a 429 over a per-minute token limit is: the request goes on for itself alone, nothing is marked,
    // and with no candidate left the client reads the provider's 413 in its own format.
    void aRequestTooLargeForOneProviderGoesToTheNext() {
        FakeClock clock;
        GatewayFixture gw;
        gw.clock = &clock;
        gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pa/claude-a"),
                                                                QStringLiteral("pb/gpt-b")};
        const demo::Fault anthropicTooLarge =
            statusWith(413, {},
                       "{\"type\":\"error\",\"error\":{\"type\":\"request_too_large\",\"message\":\"Request "
                       "exceeds the maximum allowed number of bytes.\"}}");
        const demo::Fault nginxPage = statusWith(
            413, {},
            "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n<center><h1>413 "
            "Request Entity Too Large</h1></center>\r\n<hr><center>nginx/1.22.1</center>\r\n</body>\r\n</html>\r\n");
        gw.start();
        qsizetype asked = 0;
        for (const demo::Fault &fault : {anthropicTooLarge, nginxPage}) {
            for (const bool stream : {false, true}) {
                gw.anthropicA.pushFault(fault);
                const auto served =
                    gw.post(QStringLiteral("/v1/chat/completions"),
                            GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("hi"), stream));
                QCOMPARE(served.status, 200);
                if (stream) // a Chat stream from a Chat upstream, relayed as it came
                    QVERIFY2(served.body.contains("\"model\":\"gpt-b\"") && served.body.contains("[DONE]"),
                             served.body.constData());
                else
                    QCOMPARE(served.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
                QVERIFY2(!served.body.contains("too large") && !served.body.contains("Too Large") &&
                             !served.body.contains("\"error\""),
                         served.body.constData());
                asked += 1;
                QCOMPARE(gw.anthropicA.requests().size(), asked); // once: the same request is too large
                QVERIFY(gw.engine().marks().isEmpty());
                clock.advance(1000);
            }
        }
        // The first choice still answers a request it takes.
        const auto next = gw.post(QStringLiteral("/v1/chat/completions"),
                                  GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("hi"), false));
        QCOMPARE(next.header("x-switchman-candidate"), QByteArray("pa/claude-a"));

        // Alone on its route: the provider's 413 with its own code, not retried, nothing to wait out.
        gw.anthropicA.pushFault(anthropicTooLarge);
        const auto alone =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("hi"), false));
        QCOMPARE(alone.status, 413);
        QCOMPARE(alone.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("type")).toString(),
                 QStringLiteral("request_too_large"));
        QVERIFY2(errorMessageOf(alone).contains(QStringLiteral("maximum allowed number of bytes")),
                 alone.body.constData());
        QCOMPARE(alone.header("x-should-retry"), QByteArray("false"));
        QVERIFY(alone.header("retry-after").isEmpty());
        QCOMPARE(gw.anthropicA.requests().size(), asked + 2); // asked once more, not retried
        QVERIFY(gw.engine().marks().isEmpty());

        // After a candidate that is down, the one that finds the request too large says less: the
        // client hears the outage, which it retries (the first may take it once back), not a 413.
        gw.anthropicA.pushFault(status(503));
        gw.openaiB.pushFault(statusWith(413, {},
                                        "{\"error\":{\"message\":\"Request too large\",\"type\":"
                                        "\"invalid_request_error\"}}"));
        const auto behindAnOutage =
            gw.post(QStringLiteral("/v1/chat/completions"),
                    GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("hi"), false));
        QCOMPARE(behindAnOutage.status, 503);
        QVERIFY2(!errorMessageOf(behindAnOutage).contains(QStringLiteral("too large")),
                 behindAnOutage.body.constData());
        // Behind a key that is refused, the 413 is what the client can act on now.
        clock.advance(60000);
        gw.anthropicA.pushFault(
            statusWith(401, {},
                       "{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":"
                       "\"invalid x-api-key\"}}"));
        gw.openaiB.pushFault(statusWith(413, {},
                                        "{\"error\":{\"message\":\"Request too large\",\"type\":"
                                        "\"invalid_request_error\"}}"));
        const auto behindARefusedKey =
            gw.post(QStringLiteral("/v1/chat/completions"),
                    GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("hi"), false));
        QCOMPARE(behindARefusedKey.status, 413);
        QVERIFY2(errorMessageOf(behindARefusedKey).contains(QStringLiteral("Request too large")),
                 behindARefusedKey.body.constData());
    }

    // OpenAI's 403 for one model a project may not use ("Project `proj_…` does not have access to model
    // `gpt-5`") set the shared key aside for a minute for every model and tenant, and a tenant naming
    // such a model could repeat it once a minute (probe BV t_403). It is a verdict on that model for
    // that key: this request goes on with the pool's next key, or the next candidate, and nothing is
    // set aside.
    void aModelOutOfAKeysReachLeavesTheKeyToEveryOtherModel() {
        FakeClock clock;
        GatewayFixture gw;
        gw.clock = &clock;
        auto &pb = gw.config.providers[QStringLiteral("pb")];
        pb.credentials = {QStringLiteral("env:SW_TEST_KEY_ONE"), QStringLiteral("env:SW_TEST_KEY_THREE")};
        config::ModelConfig other = gw.config.models.value(QStringLiteral("pb/gpt-b"));
        other.id = QStringLiteral("gpt-other");
        gw.config.models.insert(other.key(), other);
        const QByteArray noAccess = "{\"error\":{\"message\":\"Project `proj_probe` does not have access to model "
                                    "`gpt-b`\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":"
                                    "\"model_not_found\"}}";
        gw.openaiB.pushFault(statusWith(403, {}, noAccess));
        gw.start();

        const auto first = gw.post(QStringLiteral("/v1/chat/completions"),
                                   GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), false));
        QCOMPARE(first.status, 200); // the other project's key reaches the model
        QCOMPARE(authSeen(gw.openaiB), (QByteArrayList{"Bearer key-one", "Bearer key-three"}));
        for (int position : {0, 1})
            QCOMPARE(credentialEntry(gw, QStringLiteral("pb"), position).value(QStringLiteral("state")).toString(),
                     QStringLiteral("ok"));

        gw.openaiB.clearRequests();
        const auto second =
            gw.post(QStringLiteral("/v1/chat/completions"),
                    GatewayFixture::openaiBody(QStringLiteral("pb/gpt-other"), QStringLiteral("hi"), false));
        QCOMPARE(second.status, 200);
        QCOMPARE(authSeen(gw.openaiB), QByteArrayList{"Bearer key-one"}); // the first key still serves the rest

        // The next request for the model starts at the key that reached it: one upstream call, not a
        // refusal paid again on every request (probe E4 8).
        gw.openaiB.clearRequests();
        const auto again = gw.post(QStringLiteral("/v1/chat/completions"),
                                   GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), false));
        QCOMPARE(again.status, 200);
        QCOMPARE(authSeen(gw.openaiB), QByteArrayList{"Bearer key-three"});

        // With no other key the request fails over, marking nothing; as the last candidate, the client
        // reads which model was out of reach.
        gw.openaiB.clearRequests();
        gw.openaiB.pushFault(statusWith(403, {}, noAccess));
        const auto last = gw.post(QStringLiteral("/v1/chat/completions"),
                                  GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), false));
        QCOMPARE(authSeen(gw.openaiB), QByteArrayList{"Bearer key-three"});
        QCOMPARE(last.status, 404);
        QVERIFY2(last.body.contains("does not have access to model"), last.body.constData());
        QVERIFY(gw.engine().marks().isEmpty());
        QCOMPARE(credentialEntry(gw, QStringLiteral("pb"), 0).value(QStringLiteral("state")).toString(),
                 QStringLiteral("ok"));

        // Both keys known out of reach: the first is asked once more (access may have been granted), not
        // every key again.
        gw.openaiB.clearRequests();
        gw.openaiB.pushFault(statusWith(403, {}, noAccess));
        QCOMPARE(gw.post(QStringLiteral("/v1/chat/completions"),
                         GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), false))
                     .status,
                 404);
        QCOMPARE(authSeen(gw.openaiB), QByteArrayList{"Bearer key-one"});

        // What was learned lasts a while, then each key is asked again in order: access granted since
        // to the first key's project is used.
        clock.advance(credentials::CredentialPools::kOutOfReachMs + 1);
        gw.openaiB.clearRequests();
        QCOMPARE(gw.post(QStringLiteral("/v1/chat/completions"),
                         GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), false))
                     .status,
                 200);
        QCOMPARE(authSeen(gw.openaiB), QByteArrayList{"Bearer key-one"});
    }

    // LiteLLM's virtual key limited to some models answers another model with a 401 (its
    // key_model_access_denied). One tenant's request for such a model rejected the provider's only
    // key for every tenant and model until its secret changed, and their lone routes were told to
    // "store a new secret for it" (probe AB2 F1). It is that model's refusal: the client reads it, and
    // the key serves every other model.
    void aModelRefusedWithA401LeavesTheKeyToEveryOtherModel() {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pb")].credentials = {QStringLiteral("env:SW_TEST_KEY_ONE")};
        config::ModelConfig other = gw.config.models.value(QStringLiteral("pb/gpt-b"));
        other.id = QStringLiteral("gpt-other");
        gw.config.models.insert(other.key(), other);
        const QByteArray refused = "{\"error\":{\"message\":\"key not allowed to access model. This key can only "
                                   "access models=[gpt-other]. Tried to access gpt-b\",\"type\":"
                                   "\"key_model_access_denied\",\"param\":\"model\",\"code\":\"401\"}}";
        gw.openaiB.pushFault(statusWith(401, {}, refused));
        gw.start();

        const auto denied =
            gw.post(QStringLiteral("/v1/chat/completions"),
                    GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), false));
        QCOMPARE(denied.status, 404);
        QVERIFY2(errorMessageOf(denied).contains(QStringLiteral("not allowed to access model")),
                 denied.body.constData());
        QVERIFY2(!errorMessageOf(denied).contains(QStringLiteral("new secret")), denied.body.constData());
        QCOMPARE(credentialEntry(gw, QStringLiteral("pb")).value(QStringLiteral("state")).toString(),
                 QStringLiteral("ok"));
        QVERIFY(gw.engine().marks().isEmpty());

        gw.openaiB.clearRequests();
        const auto served =
            gw.post(QStringLiteral("/v1/chat/completions"),
                    GatewayFixture::openaiBody(QStringLiteral("pb/gpt-other"), QStringLiteral("hi"), false));
        QCOMPARE(served.status, 200);
        QCOMPARE(gw.openaiB.requests().size(), 1);
    }

    void passthroughAloneWithoutCallerKeyIsCredentialExhausted() {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pc")].credentials = {QStringLiteral("passthrough")};
        gw.start();
        const auto r =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("pc/claude-c"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 502);
        QVERIFY2(r.json()
                     .value(QStringLiteral("error"))
                     .toObject()
                     .value(QStringLiteral("message"))
                     .toString()
                     .contains(QStringLiteral("no usable credential")),
                 r.body.constData());
        QCOMPARE(gw.anthropicC.requests().size(), 0);
    }

    // ---------------------------------------------------------------- credential health

    void adminCredentialsShowsAParkedKeyAndDeleteTriesItAgain() {
        FakeClock clock;
        GatewayFixture gw;
        gw.clock = &clock;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:pa-main")};
        gw.config.providers[QStringLiteral("pb")].credentials = {QStringLiteral("env:SW_TEST_KEY_ONE")};
        gw.secrets.secrets.insert(QStringLiteral("pa-main"), "typo-key");
        gw.anthropicA.pushFault(status(401));
        gw.start();
        const auto body = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("hi"), false);

        const auto all = gw.get(QStringLiteral("/admin/credentials"));
        QCOMPARE(all.status, 200);
        QCOMPARE(all.json().value(QStringLiteral("credentials")).toArray().size(), 2);
        QJsonObject pa = credentialEntry(gw, QStringLiteral("pa"));
        QCOMPARE(pa.value(QStringLiteral("ref")).toString(), QStringLiteral("keychain:pa-main"));
        QCOMPARE(pa.value(QStringLiteral("state")).toString(), QStringLiteral("ok"));
        QVERIFY(pa.value(QStringLiteral("remainingMs")).isNull());
        QVERIFY(pa.value(QStringLiteral("reason")).isNull());
        QCOMPARE(pa.value(QStringLiteral("leases")).toInt(), 0);

        QSignalSpy logs(gw.engine().telemetry(), &telemetry::Telemetry::logLine);
        const auto first = gw.post(QStringLiteral("/v1/messages"), body);
        QCOMPARE(first.status, 200);
        QCOMPARE(first.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        // The log says which key went out of use, by reference, never by value.
        QJsonObject parkedLine;
        for (const auto &args : logs) {
            const QJsonObject line = args.at(0).toJsonObject();
            const QString msg = line.value(QStringLiteral("msg")).toString();
            if (msg == QLatin1String("credential parked") || msg == QLatin1String("credential rejected"))
                parkedLine = line;
            QVERIFY(!QJsonDocument(line).toJson().contains("typo-key"));
        }
        QCOMPARE(parkedLine.value(QStringLiteral("ref")).toString(), QStringLiteral("keychain:pa-main"));
        QCOMPARE(parkedLine.value(QStringLiteral("level")).toString(), QStringLiteral("warn"));
        pa = credentialEntry(gw, QStringLiteral("pa"));
        QVERIFY2(pa.value(QStringLiteral("state")).toString() != QLatin1String("ok"),
                 QJsonDocument(pa).toJson().constData());
        QVERIFY(!pa.value(QStringLiteral("reason")).isNull());
        QVERIFY(!all.body.contains("typo-key"));
        QVERIFY(!gw.get(QStringLiteral("/admin/credentials")).body.contains("typo-key"));
        QCOMPARE(credentialEntry(gw, QStringLiteral("pb")).value(QStringLiteral("state")).toString(),
                 QStringLiteral("ok"));

        // Still out on the next request...
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(gw.anthropicA.requests().size(), 1);
        // ...until the user says "retry now": only the matching one is cleared.
        const auto none = gw.del(QStringLiteral("/admin/credentials?provider=pb"));
        QCOMPARE(none.json().value(QStringLiteral("cleared")).toInt(), 0);
        const auto cleared = gw.del(QStringLiteral("/admin/credentials?provider=pa&ref=keychain:pa-main"));
        QCOMPARE(cleared.status, 200);
        QCOMPARE(cleared.json().value(QStringLiteral("cleared")).toInt(), 1);
        QCOMPARE(credentialEntry(gw, QStringLiteral("pa")).value(QStringLiteral("state")).toString(),
                 QStringLiteral("ok"));
        const auto again = gw.post(QStringLiteral("/v1/messages"), body);
        QCOMPARE(again.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
        QCOMPARE(authSeen(gw.anthropicA), (QByteArrayList{"typo-key", "typo-key"}));
        QCOMPARE(gw.del(QStringLiteral("/admin/credentials")).json().value(QStringLiteral("cleared")).toInt(), 0);
        QCOMPARE(gw.post(QStringLiteral("/admin/credentials"), QJsonObject{}).status, 405);
    }

    void aNewSecretForTheReferenceIsUsedAtOnce() {
        FakeClock clock;
        GatewayFixture gw;
        gw.clock = &clock;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:pa-main")};
        gw.secrets.secrets.insert(QStringLiteral("pa-main"), "typo-key");
        gw.anthropicA.pushFault(status(401));
        gw.start();
        QVERIFY(waitUntil([&gw]() { return gw.engine().pools().isCached(QStringLiteral("pa-main")); }));
        const auto body = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("hi"), false);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).header("x-switchman-candidate"), QByteArray("pb/gpt-b"));

        // `switchman credential set pa-main` stores the right key and tells the running instance
        // (DELETE /admin/credentials?ref=keychain:pa-main): the next request reads the keychain again.
        gw.secrets.secrets.insert(QStringLiteral("pa-main"), "fixed-key");
        QCOMPARE(gw.del(QStringLiteral("/admin/credentials?ref=keychain:pa-main"))
                     .json()
                     .value(QStringLiteral("cleared"))
                     .toInt(),
                 1);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).header("x-switchman-candidate"),
                 QByteArray("pa/claude-a"));
        QCOMPARE(authSeen(gw.anthropicA), (QByteArrayList{"typo-key", "fixed-key"}));

        // The GUI's Set key… goes through Engine::credentialChanged.
        gw.anthropicA.pushFault(status(401));
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        gw.secrets.secrets.insert(QStringLiteral("pa-main"), "gui-key");
        QCOMPARE(gw.engine().credentialChanged(QStringLiteral("keychain:pa-main")), 1);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).header("x-switchman-candidate"),
                 QByteArray("pa/claude-a"));
        QCOMPARE(authSeen(gw.anthropicA).last(), QByteArray("gui-key"));

        // A configuration that changes the pool starts it over; one that leaves it alone does not.
        gw.anthropicA.pushFault(status(401));
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        gw.engine().applyConfig(*gw.engine().config());
        QVERIFY(credentialEntry(gw, QStringLiteral("pa")).value(QStringLiteral("state")).toString() !=
                QLatin1String("ok"));
        config::Config changed = *gw.engine().config();
        changed.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:pa-main"),
                                                               QStringLiteral("env:SW_TEST_KEY_THREE")};
        gw.engine().applyConfig(changed);
        QCOMPARE(credentialEntry(gw, QStringLiteral("pa")).value(QStringLiteral("state")).toString(),
                 QStringLiteral("ok"));
        QCOMPARE(credentialEntry(gw, QStringLiteral("pa"), 1).value(QStringLiteral("ref")).toString(),
                 QStringLiteral("env:SW_TEST_KEY_THREE"));
    }

    void aCredentialWithNoSecretIsShownMissing() {
        // An unset environment variable and a keychain entry that is not there are skipped by every
        // request, yet /admin/credentials (and the window) said "ok" (found by a probe).
        qunsetenv("SW_TEST_UNSET");
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("env:SW_TEST_UNSET"),
                                                                 QStringLiteral("keychain:not-there"),
                                                                 QStringLiteral("env:SW_TEST_KEY_ONE")};
        gw.start();
        QVERIFY(waitUntil([&gw]() {
            return credentialEntry(gw, QStringLiteral("pa"), 1).value(QStringLiteral("state")).toString() ==
                   QLatin1String("missing");
        }));
        const QJsonObject env = credentialEntry(gw, QStringLiteral("pa"), 0);
        QCOMPARE(env.value(QStringLiteral("state")).toString(), QStringLiteral("missing"));
        QVERIFY(env.value(QStringLiteral("lastError")).toString().contains(QStringLiteral("SW_TEST_UNSET")));
        QVERIFY(credentialEntry(gw, QStringLiteral("pa"), 1)
                    .value(QStringLiteral("lastError"))
                    .toString()
                    .contains(QStringLiteral("switchman credential set not-there")));
        QCOMPARE(credentialEntry(gw, QStringLiteral("pa"), 2).value(QStringLiteral("state")).toString(),
                 QStringLiteral("ok"));
        // Set now, both are ok again: the variable at once, the entry once it is read.
        qputenv("SW_TEST_UNSET", "key-set-later");
        gw.secrets.secrets.insert(QStringLiteral("not-there"), "key-two");
        QCOMPARE(credentialEntry(gw, QStringLiteral("pa"), 0).value(QStringLiteral("state")).toString(),
                 QStringLiteral("ok"));
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("hi"), false))
                     .status,
                 200);
        qunsetenv("SW_TEST_UNSET");
    }

    void theAdminShapesOfRejectedAndParked() {
        // The states as the loop records them (CredentialPools::recordFailure), read back over HTTP.
        const QByteArray canary = "sk-canary-" + QByteArray::number(QRandomGenerator::system()->generate64(), 16);
        FakeClock clock;
        GatewayFixture gw;
        gw.clock = &clock;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:pa-main"),
                                                                 QStringLiteral("env:SW_TEST_KEY_ONE")};
        gw.secrets.secrets.insert(QStringLiteral("pa-main"), canary);
        gw.start();
        QVERIFY(waitUntil([&gw]() { return gw.engine().pools().isCached(QStringLiteral("pa-main")); }));
        auto &pools = gw.engine().pools();
        credentials::CredentialFailure unauthorized;
        unauthorized.status = 401;
        unauthorized.message = QStringLiteral("invalid x-api-key ") + QString::fromLatin1(canary);
        pools.recordFailure({QStringLiteral("pa"), 0}, unauthorized, {});
        credentials::CredentialFailure limited;
        limited.status = 429;
        limited.message = QStringLiteral("Too Many Requests");
        limited.retryAfterMs = 7000;
        pools.recordFailure({QStringLiteral("pa"), 1}, limited, {});

        const auto r = gw.get(QStringLiteral("/admin/credentials"));
        QVERIFY(!r.body.contains(canary));
        QJsonObject rejected = credentialEntry(gw, QStringLiteral("pa"), 0);
        QCOMPARE(rejected.value(QStringLiteral("state")).toString(), QStringLiteral("rejected"));
        QCOMPARE(rejected.value(QStringLiteral("reason")).toString(), QStringLiteral("auth"));
        QCOMPARE(rejected.value(QStringLiteral("status")).toInt(), 401);
        QVERIFY(rejected.value(QStringLiteral("remainingMs")).isNull());
        QVERIFY(rejected.value(QStringLiteral("lastError")).toString().startsWith(QStringLiteral("invalid x-api-key")));
        QJsonObject parked = credentialEntry(gw, QStringLiteral("pa"), 1);
        QCOMPARE(parked.value(QStringLiteral("state")).toString(), QStringLiteral("parked"));
        QCOMPARE(parked.value(QStringLiteral("reason")).toString(), QStringLiteral("rate_limit"));
        QCOMPARE(parked.value(QStringLiteral("status")).toInt(), 429);
        QCOMPARE(parked.value(QStringLiteral("remainingMs")).toInteger(), 7000);
        QCOMPARE(parked.value(QStringLiteral("ref")).toString(), QStringLiteral("env:SW_TEST_KEY_ONE"));

        // Both out: the route goes to pb without trying pa.
        const auto body = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("hi"), false);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(gw.anthropicA.requests().size(), 0);
        clock.advance(6999);
        QCOMPARE(credentialEntry(gw, QStringLiteral("pa"), 1).value(QStringLiteral("remainingMs")).toInteger(), 1);
        clock.advance(1); // Retry-After 7 s passed: back, and used
        QCOMPARE(credentialEntry(gw, QStringLiteral("pa"), 1).value(QStringLiteral("state")).toString(),
                 QStringLiteral("ok"));
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).header("x-switchman-candidate"),
                 QByteArray("pa/claude-a"));
        QCOMPARE(authSeen(gw.anthropicA), QByteArrayList{"key-one"});
        QCOMPARE(credentialEntry(gw, QStringLiteral("pa"), 0).value(QStringLiteral("state")).toString(),
                 QStringLiteral("rejected")); // a month or a minute: a 401 waits for a new secret
    }

    // End to end through the failover loop: needs the loop's call site to use
    // CredentialPools::recordFailure.
    void theLoopRecordsRejectedAndParkedCredentials() {
        FakeClock clock;
        GatewayFixture gw;
        gw.clock = &clock;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("env:SW_TEST_KEY_ONE")};
        gw.anthropicA.pushFault(status(401));
        gw.start();
        const auto body = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("hi"), false);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(credentialEntry(gw, QStringLiteral("pa")).value(QStringLiteral("state")).toString(),
                 QStringLiteral("rejected"));
        // The next request is passed over pa with a skipped attempt row.
        QSignalSpy attempts(gw.engine().telemetry(), &telemetry::Telemetry::attemptRecorded);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        bool skipped = false;
        for (const auto &args : attempts) {
            const auto a = args.at(0).value<telemetry::AttemptRecord>();
            skipped =
                skipped || (a.outcome == telemetry::AttemptOutcome::Skipped && a.provider == QLatin1String("pa") &&
                            a.failure == QLatin1String("credential_exhausted"));
        }
        QVERIFY(skipped);
        gw.del(QStringLiteral("/admin/credentials"));

        // An opaque 429 (no rate-limit wording: a 429 that says "rate limit" is a mark instead).
        gw.anthropicA.pushFault(statusWith(429, "7", R"({"type":"error","error":{"type":"error","message":"nope"}})"));
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(credentialEntry(gw, QStringLiteral("pa")).value(QStringLiteral("remainingMs")).toInteger(), 7000);
        gw.del(QStringLiteral("/admin/credentials"));
        gw.anthropicA.pushFault(statusWith(429, {}, R"({"type":"error","error":{"type":"error","message":"nope"}})"));
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(credentialEntry(gw, QStringLiteral("pa")).value(QStringLiteral("remainingMs")).toInteger(), 60000);
    }

    void aGeminiPerMinuteLimitParksForItsRetryDelay() {
        // Gemini's free-tier per-minute 429 says "You exceeded your current quota" (a usage limit's
        // words) and puts when it lifts in RetryInfo: the key is back in 47 s, not in an hour.
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pe")].credentials = {QStringLiteral("env:SW_TEST_KEY_ONE")};
        gw.start();
        gw.googleE.pushFault(statusWith(
            429, {},
            R"({"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing )"
            R"(details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo",)"
            R"("retryDelay":"47s"}]}})"));
        gw.post(QStringLiteral("/v1/chat/completions"),
                GatewayFixture::openaiBody(QStringLiteral("pe/gemini-e"), QStringLiteral("hi"), false));
        const QJsonObject pe = credentialEntry(gw, QStringLiteral("pe"));
        QCOMPARE(pe.value(QStringLiteral("state")).toString(), QStringLiteral("parked"));
        const qint64 remaining = pe.value(QStringLiteral("remainingMs")).toInteger(); // real clock: ms pass
        QVERIFY2(remaining > 45000 && remaining <= 47000, qPrintable(QString::number(remaining)));
    }
};

QTEST_GUILESS_MAIN(TestCredentialRotation)
#include "test_credential_rotation.moc"
