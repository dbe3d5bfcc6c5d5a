// Tenants (keys, 401 in the inbound format, isolation of marks, usage
// and logs) and routing policy (tenant providers/regions, the route cost
// ceiling, alias globs and the resolution order) on the real engine.
#include "core/config/config_writer.h"
#include "core/telemetry/telemetry.h"
#include "gateway_fixture.h"

#include <QCryptographicHash>
#include <QJsonArray>
#include <QNetworkReply>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using namespace sw;
using namespace sw::test;

namespace {
const QByteArray kAliceKey = "sm-alice-test-key-000000000000000000";
const QByteArray kBobKey = "sm-bob-test-key-1111111111111111111111";
const QByteArray kEveKey = "sm-eve-test-key-2222222222222222222222";

QString hashOf(const QByteArray &key) {
    return QStringLiteral("sha256:") +
           QString::fromLatin1(QCryptographicHash::hash(key, QCryptographicHash::Sha256).toHex());
}

void addTenant(config::Config &c, const QString &name, const QByteArray &key, bool admin = false) {
    config::TenantConfig t;
    t.name = name;
    t.keyHashes = {hashOf(key)};
    t.admin = admin;
    c.tenants.insert(name, t);
}

demo::Fault status(int code) {
    demo::Fault f;
    f.kind = demo::Fault::Status;
    f.status = code;
    return f;
}

QList<QPair<QByteArray, QByteArray>> bearer(const QByteArray &key) {
    return {{"authorization", "Bearer " + key}};
}

QString errorMessage(const HttpResult &r) {
    return r.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString();
}

QList<telemetry::AttemptRecord> attemptsFor(Engine &e, const QByteArray &requestId) {
    QList<telemetry::AttemptRecord> out;
    for (const auto &a : e.telemetry()->attempts(-1))
        if (a.requestId == QString::fromLatin1(requestId))
            out.prepend(a);
    return out;
}
} // namespace

class TestTenantsPolicy : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void missingOrWrongKeyIs401InTheInboundFormat_data() {
        QTest::addColumn<QString>("path");
        QTest::addColumn<QByteArray>("key");
        QTest::addRow("messages, no key") << QStringLiteral("/v1/messages") << QByteArray();
        QTest::addRow("messages, wrong key") << QStringLiteral("/v1/messages") << QByteArray("sm-wrong");
        QTest::addRow("chat, no key") << QStringLiteral("/v1/chat/completions") << QByteArray();
        QTest::addRow("chat, wrong key") << QStringLiteral("/v1/chat/completions") << QByteArray("sm-wrong");
        QTest::addRow("chat, key with one byte changed")
            << QStringLiteral("/v1/chat/completions") << QByteArray(kAliceKey).replace(3, 1, "X");
    }
    void missingOrWrongKeyIs401InTheInboundFormat() {
        QFETCH(QString, path);
        QFETCH(QByteArray, key);
        GatewayFixture gw;
        addTenant(gw.config, QStringLiteral("alice"), kAliceKey);
        gw.start();
        const bool anthropic = path == QLatin1String("/v1/messages");
        const auto body = anthropic ? GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false)
                                    : GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("x"), false);
        const auto r = gw.post(path, body, key.isEmpty() ? QList<QPair<QByteArray, QByteArray>>{} : bearer(key));
        QCOMPARE(r.status, 401);
        const QJsonObject error = r.json().value(QStringLiteral("error")).toObject();
        QVERIFY(!error.value(QStringLiteral("message")).toString().isEmpty());
        if (anthropic) {
            QCOMPARE(r.json().value(QStringLiteral("type")).toString(), QStringLiteral("error"));
            QCOMPARE(error.value(QStringLiteral("type")).toString(), QStringLiteral("authentication_error"));
        }
        QVERIFY(!r.body.contains(key.isEmpty() ? QByteArray("\x01") : key)); // the key is never echoed
        QCOMPARE(gw.anthropicA.requests().size() + gw.openaiB.requests().size(), 0);
        // The right key, either header, gets through.
        QCOMPARE(gw.post(path, body, bearer(kAliceKey)).status, 200);
        QCOMPARE(gw.post(path, body, {{"x-api-key", kAliceKey}}).status, 200);
    }

    void noTenantsMeansLocalAndNoKey() {
        GatewayFixture gw;
        gw.start();
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false))
                     .status,
                 200);
        QCOMPARE(gw.engine().telemetry()->attempts(1).value(0).tenant, QStringLiteral("local"));
    }

    void nonLoopbackListenerNeedsTenants() {
        GatewayFixture gw;
        gw.config.listen = QStringLiteral("0.0.0.0:0");
        Engine::Options o;
        o.config = gw.config;
        o.secrets = &gw.secrets;
        Engine engine(o);
        QString error;
        QVERIFY(!engine.start(&error));
        QVERIFY2(error.contains(QStringLiteral("non-loopback")) && error.contains(QStringLiteral("key create")),
                 qPrintable(error));
    }

    void marksUsageAndLogsAreIsolatedPerTenant() {
        GatewayFixture gw;
        addTenant(gw.config, QStringLiteral("alice"), kAliceKey);
        addTenant(gw.config, QStringLiteral("bob"), kBobKey);
        gw.start();
        QSignalSpy logs(gw.engine().telemetry(), &telemetry::Telemetry::logLine);
        const auto body = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false);

        gw.anthropicA.pushFault(status(503)); // alice's request finds pa down
        const auto a = gw.post(QStringLiteral("/v1/messages"), body, bearer(kAliceKey));
        QCOMPARE(a.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(gw.engine().marks().size(), 1);
        QCOMPARE(gw.engine().marks().first().tenant, QStringLiteral("alice"));

        // bob's routing is untouched by alice's mark: pa is tried first, and answers.
        const auto b = gw.post(QStringLiteral("/v1/messages"), body, bearer(kBobKey));
        QCOMPARE(b.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
        // alice still avoids pa while her mark lasts.
        const int paSeen = gw.anthropicA.requests().size();
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body, bearer(kAliceKey)).header("x-switchman-candidate"),
                 QByteArray("pb/gpt-b"));
        QCOMPARE(gw.anthropicA.requests().size(), paSeen);

        // Usage rows carry the tenant that spent them.
        QSet<QString> aliceCandidates;
        QSet<QString> bobCandidates;
        for (const auto &row : gw.engine().telemetry()->usage()) {
            QVERIFY(row.tenant == QLatin1String("alice") || row.tenant == QLatin1String("bob"));
            (row.tenant == QLatin1String("alice") ? aliceCandidates : bobCandidates).insert(row.candidate);
        }
        QCOMPARE(aliceCandidates, QSet<QString>{QStringLiteral("pb/gpt-b")});
        QCOMPARE(bobCandidates, QSet<QString>{QStringLiteral("pa/claude-a")});
        // Attempts and the failover log line name the tenant.
        const auto attempts = attemptsFor(gw.engine(), a.header("x-switchman-request-id"));
        QCOMPARE(attempts.size(), 2);
        for (const auto &at : attempts)
            QCOMPARE(at.tenant, QStringLiteral("alice"));
        bool logged = false;
        for (const auto &args : logs) {
            const QJsonObject line = args.at(0).toJsonObject();
            if (line.value(QStringLiteral("msg")).toString() == QLatin1String("candidate failover")) {
                QCOMPARE(line.value(QStringLiteral("tenant")).toString(), QStringLiteral("alice"));
                logged = true;
            }
        }
        QVERIFY(logged);
        // Clearing by tenant touches only that tenant's marks.
        QCOMPARE(gw.engine().clearMarks({QStringLiteral("bob"), {}, {}, {}}), 0);
        QCOMPARE(gw.engine().clearMarks({QStringLiteral("alice"), {}, {}, {}}), 1);
    }

    // Idempotency-Key keys are held per tenant: one tenant sending more distinct keys than its
    // share lets only its own oldest go; another tenant's retry is still replayed, not sent upstream
    // (and billed) twice. A gateway-wide table that, once full, served everyone without idempotency
    // let bob's keys turn alice's off.
    void oneTenantsKeysNeverTurnOffAnothersIdempotency() {
        GatewayFixture gw;
        addTenant(gw.config, QStringLiteral("alice"), kAliceKey);
        addTenant(gw.config, QStringLiteral("bob"), kBobKey);
        gw.config.limits.maxIdempotencyKeysPerTenant = 20;
        gw.start();
        const QString chat = QStringLiteral("/v1/chat/completions");
        const QJsonObject body =
            GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("pay once"), false);
        auto with = [](const QByteArray &key, const QByteArray &idem) {
            auto h = bearer(key);
            h.append({"Idempotency-Key", idem});
            return h;
        };
        QCOMPARE(gw.post(chat, body, with(kAliceKey, "alice-1")).status, 200);
        QCOMPARE(gw.openaiB.requests().size(), 1);
        for (int i = 0; i < 60; ++i)
            QCOMPARE(gw.post(chat, body, with(kBobKey, "bob-" + QByteArray::number(i))).status, 200);
        QCOMPARE(gw.openaiB.requests().size(), 61);

        const HttpResult retry = gw.post(chat, body, with(kAliceKey, "alice-1"));
        QCOMPARE(retry.status, 200);
        QCOMPARE(retry.header("x-switchman-idempotent-replay"), QByteArray("true"));
        QCOMPARE(gw.openaiB.requests().size(), 61); // not sent upstream twice
        // Bob's newest keys are still his to replay; past his share, his oldest went.
        QCOMPARE(gw.post(chat, body, with(kBobKey, "bob-59")).header("x-switchman-idempotent-replay"),
                 QByteArray("true"));
        QCOMPARE(gw.openaiB.requests().size(), 61);
        QVERIFY(gw.post(chat, body, with(kBobKey, "bob-0")).header("x-switchman-idempotent-replay").isEmpty());
        QCOMPARE(gw.openaiB.requests().size(), 62);
    }

    void tenantProvidersLimitEligibility() {
        GatewayFixture gw;
        addTenant(gw.config, QStringLiteral("alice"), kAliceKey);
        gw.config.tenants[QStringLiteral("alice")].providers = {QStringLiteral("pb")};
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false),
                               bearer(kAliceKey));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(gw.anthropicA.requests().size(), 0);
        const auto attempts = attemptsFor(gw.engine(), r.header("x-switchman-request-id"));
        QCOMPARE(attempts.first().outcome, telemetry::AttemptOutcome::Skipped);
        QVERIFY(attempts.first().message.contains(QStringLiteral("provider not allowed")));
        // A direct selector of a forbidden provider is a model that does not exist, to this tenant: the
        // same 404 as a made-up name (a 403 told it the model was there), on the chat route and on
        // count_tokens, which answered 200 for it.
        const auto askFor = [&](const QString &model) {
            return gw.post(QStringLiteral("/v1/messages"),
                           GatewayFixture::anthropicBody(model, QStringLiteral("x"), false), bearer(kAliceKey));
        };
        const auto direct = askFor(QStringLiteral("pa/claude-a"));
        const auto madeUp = askFor(QStringLiteral("zz/claude-a"));
        QCOMPARE(direct.status, 404);
        QCOMPARE(madeUp.status, 404);
        QCOMPARE(errorMessage(direct).replace(QStringLiteral("pa/"), QStringLiteral("zz/")), errorMessage(madeUp));
        QCOMPARE(gw.anthropicA.requests().size(), 0);
        const auto count = [&](const QString &model, const QByteArray &key) {
            return gw
                .post(QStringLiteral("/v1/messages/count_tokens"),
                      QJsonObject{{QStringLiteral("model"), model},
                                  {QStringLiteral("messages"),
                                   QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                                          {QStringLiteral("content"), QStringLiteral("x")}}}}},
                      bearer(key))
                .status;
        };
        QCOMPARE(count(QStringLiteral("pa/claude-a"), kAliceKey), 404);
        QCOMPARE(count(QStringLiteral("zz/claude-a"), kAliceKey), 404);
        QCOMPARE(count(QStringLiteral("chain"), kAliceKey), 200); // pb is one of its candidates
    }

    // /v1/models listed every provider's models and every route to any tenant: a tenant limited
    // to some providers learned the others' whole configuration.
    void aTenantListsOnlyTheModelsItMayReach() {
        GatewayFixture gw;
        addTenant(gw.config, QStringLiteral("alice"), kAliceKey);
        addTenant(gw.config, QStringLiteral("bob"), kBobKey);
        gw.config.tenants[QStringLiteral("alice")].providers = {QStringLiteral("pb")};
        gw.start();
        const auto listed = [&gw](const QByteArray &key) {
            const auto r = gw.get(QStringLiteral("/v1/models"), 5000, bearer(key));
            QStringList ids;
            for (const auto &m : r.json().value(QStringLiteral("data")).toArray())
                ids << m.toObject().value(QStringLiteral("id")).toString();
            return ids;
        };
        const QStringList alice = listed(kAliceKey);
        const QStringList bob = listed(kBobKey);
        QVERIFY2(alice.contains(QStringLiteral("pb/gpt-b")), qPrintable(alice.join(u',')));
        QVERIFY2(alice.contains(QStringLiteral("chain")), qPrintable(alice.join(u','))); // pb is one of its candidates
        for (const QString &id : alice)
            QVERIFY2(!id.contains(u'/') || id.startsWith(QLatin1String("pb/")), qPrintable(id));
        QVERIFY2(bob.contains(QStringLiteral("pa/claude-a")) && bob.contains(QStringLiteral("pb/gpt-b")),
                 qPrintable(bob.join(u',')));
        QVERIFY(bob.size() > alice.size());
    }

    void tenantRegionsLimitEligibility() {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].region = QStringLiteral("us");
        gw.config.providers[QStringLiteral("pb")].region = QStringLiteral("eu");
        addTenant(gw.config, QStringLiteral("alice"), kAliceKey);
        addTenant(gw.config, QStringLiteral("bob"), kBobKey);
        gw.config.tenants[QStringLiteral("alice")].regions = {QStringLiteral("eu")};
        gw.start();
        const auto body = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body, bearer(kAliceKey)).header("x-switchman-candidate"),
                 QByteArray("pb/gpt-b"));
        QCOMPARE(gw.anthropicA.requests().size(), 0);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body, bearer(kBobKey)).header("x-switchman-candidate"),
                 QByteArray("pa/claude-a")); // bob has no region rule
    }

    void costCeilingSkipsExpensiveFollowersAndSaysSo() {
        GatewayFixture gw;
        gw.config.models[QStringLiteral("pb/gpt-b")].costInput = 50; // 50 + 2 vs 1 + 2: over 5x
        gw.config.routes[QStringLiteral("chain")].maxFallbackCostMultiplier = 5;
        gw.anthropicA.setFault(status(503));
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 503);
        QVERIFY2(errorMessage(r).contains(QStringLiteral("cost ceiling")) &&
                     errorMessage(r).contains(QStringLiteral("maxFallbackCostMultiplier 5")),
                 r.body.constData());
        QCOMPARE(gw.openaiB.requests().size(), 0);
    }

    void costCeilingAllowsCheaperFollowers() {
        GatewayFixture gw;
        gw.config.models[QStringLiteral("pb/gpt-b")].costInput = 10; // 12 vs 3: within 5x
        gw.config.routes[QStringLiteral("chain")].maxFallbackCostMultiplier = 5;
        gw.anthropicA.setFault(status(503));
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
    }

    void costCeilingIsPricedAgainstTheFirstEligibleCandidate() {
        // alice may not use pa, so pb (expensive) is her first eligible candidate and the
        // ceiling is measured from it: pc at the same price is allowed.
        GatewayFixture gw;
        gw.config.models[QStringLiteral("pb/gpt-b")].costInput = 50;
        gw.config.models[QStringLiteral("pc/claude-c")].costInput = 50;
        auto &route = gw.config.routes[QStringLiteral("chain")];
        route.candidates.append(QStringLiteral("pc/claude-c"));
        route.maxFallbackCostMultiplier = 2;
        addTenant(gw.config, QStringLiteral("alice"), kAliceKey);
        gw.config.tenants[QStringLiteral("alice")].providers = {QStringLiteral("pb"), QStringLiteral("pc")};
        gw.openaiB.setFault(status(503));
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false),
                               bearer(kAliceKey));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pc/claude-c"));
    }

    void aliasGlobsReachARoute_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("status");
        QTest::addColumn<QByteArray>("candidate");
        QTest::addRow("claude code dated name")
            << QStringLiteral("claude-sonnet-4-5-20250929") << 200 << QByteArray("pa/claude-a");
        QTest::addRow("alias is case-insensitive")
            << QStringLiteral("Claude-Sonnet-4-5") << 200 << QByteArray("pa/claude-a");
        QTest::addRow("exact route beats alias")
            << QStringLiteral("claude-sonnet-special") << 200 << QByteArray("pb/gpt-b");
        QTest::addRow("direct selector") << QStringLiteral("pc/claude-c") << 200 << QByteArray("pc/claude-c");
        QTest::addRow("unique bare id") << QStringLiteral("gpt-b") << 200 << QByteArray("pb/gpt-b");
        QTest::addRow("glob is anchored") << QStringLiteral("my-claude-sonnet-4") << 404 << QByteArray();
        QTest::addRow("unknown") << QStringLiteral("claude-opus-4-1") << 404 << QByteArray();
    }
    // A shared key refused with words that quote the request: while the key is out, every tenant's error
    // names why, but the provider's words (alice's prompt) reach alice alone; bob reads the status and
    // the reason (probe G3 2).
    void aSharedKeysLastErrorNamesOneTenantsWordsToThatTenantAlone() {
        GatewayFixture gw;
        addTenant(gw.config, QStringLiteral("alice"), kAliceKey);
        addTenant(gw.config, QStringLiteral("bob"), kBobKey);
        qputenv("SW_TEST_TENANT_SHARED_KEY", "key-shared");
        gw.config.providers[QStringLiteral("pb")].credentials = {QStringLiteral("env:SW_TEST_TENANT_SHARED_KEY")};
        demo::Fault refused = status(401);
        refused.body = "{\"error\":{\"message\":\"Invalid API key for this request: ALICE-PRIVATE my diagnosis "
                       "is hypertension\",\"type\":\"invalid_request_error\",\"code\":\"invalid_api_key\"}}";
        gw.openaiB.pushFault(refused);
        gw.start();
        const auto first =
            gw.post(QStringLiteral("/v1/chat/completions"),
                    GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"),
                                               QStringLiteral("ALICE-PRIVATE my diagnosis is hypertension"), false),
                    bearer(kAliceKey));
        QCOMPARE(first.status, 502);

        const auto body = GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hello"), false);
        const auto bob = gw.post(QStringLiteral("/v1/chat/completions"), body, bearer(kBobKey));
        QCOMPARE(bob.status, 502);
        QVERIFY2(errorMessage(bob).contains(QStringLiteral("refused its key")) &&
                     errorMessage(bob).contains(QStringLiteral("HTTP 401")),
                 bob.body.constData());
        QVERIFY2(!bob.body.contains("ALICE-PRIVATE") && !bob.body.contains("hypertension"), bob.body.constData());
        const auto alice = gw.post(QStringLiteral("/v1/chat/completions"), body, bearer(kAliceKey));
        QCOMPARE(alice.status, 502);
        QVERIFY2(alice.body.contains("ALICE-PRIVATE"), alice.body.constData()); // her own request's words
        QCOMPARE(gw.openaiB.requests().size(), 1);                              // the key was not asked again
    }

    void aliasGlobsReachARoute() {
        QFETCH(QString, model);
        QFETCH(int, status);
        QFETCH(QByteArray, candidate);
        GatewayFixture gw;
        config::RouteConfig sonnet;
        sonnet.name = QStringLiteral("sonnet");
        sonnet.candidates = {QStringLiteral("pa/claude-a"), QStringLiteral("pb/gpt-b")};
        sonnet.aliases = {QStringLiteral("claude-sonnet-*")};
        gw.config.routes.insert(sonnet.name, sonnet);
        config::RouteConfig special;
        special.name = QStringLiteral("claude-sonnet-special");
        special.candidates = {QStringLiteral("pb/gpt-b")};
        gw.config.routes.insert(special.name, special);
        gw.start();
        const auto r =
            gw.post(QStringLiteral("/v1/messages"), GatewayFixture::anthropicBody(model, QStringLiteral("x"), false));
        QCOMPARE(r.status, status);
        if (status == 200) {
            QCOMPARE(r.header("x-switchman-candidate"), candidate);
            QCOMPARE(r.header("x-litellm-model-id"), model.toUtf8()); // names what the client asked for
        } else {
            QCOMPARE(r.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("type")).toString(),
                     QStringLiteral("not_found_error"));
            QCOMPARE(gw.anthropicA.requests().size() + gw.openaiB.requests().size() + gw.anthropicC.requests().size(),
                     0);
        }
    }

    void anAmbiguousBareIdNamesItsProviders() {
        // The same upstream id configured on two providers: the client is told which to choose
        // from, not that the model does not exist.
        GatewayFixture gw;
        config::ModelConfig twin = gw.config.models.value(QStringLiteral("pb/gpt-b"));
        twin.provider = QStringLiteral("pa");
        gw.config.models.insert(twin.key(), twin);
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("gpt-b"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 404);
        const QString message =
            r.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString();
        QVERIFY2(message.contains(QStringLiteral("several providers (pa, pb)")), qPrintable(message));
        QVERIFY2(message.contains(QStringLiteral("provider/gpt-b")), qPrintable(message));
        QCOMPARE(gw.anthropicA.requests().size() + gw.openaiB.requests().size(), 0);
    }

    void aBareIdIsLookedUpAmongTheTenantsOwnProviders() {
        // Probe T4: a tenant that may use only pb asked for "gpt-b", which pa has too. It got the
        // 404 for an ambiguous id, naming pa (a provider that is not its own), when only one of
        // its own has the model: the answer is that one. A tenant that may use neither is told
        // what a made-up name tells it, and one that may use both still chooses.
        GatewayFixture gw;
        config::ModelConfig twin = gw.config.models.value(QStringLiteral("pb/gpt-b"));
        twin.provider = QStringLiteral("pa");
        gw.config.models.insert(twin.key(), twin);
        addTenant(gw.config, QStringLiteral("alice"), kAliceKey);
        gw.config.tenants[QStringLiteral("alice")].providers = {QStringLiteral("pb")};
        addTenant(gw.config, QStringLiteral("bob"), kBobKey);
        gw.config.tenants[QStringLiteral("bob")].providers = {QStringLiteral("pc")};
        addTenant(gw.config, QStringLiteral("eve"), kEveKey);
        gw.start();
        const auto ask = [&](const QString &path, const QString &model, const QByteArray &key) {
            return gw.post(path, GatewayFixture::anthropicBody(model, QStringLiteral("x"), false), bearer(key));
        };
        const QString messages = QStringLiteral("/v1/messages");
        const auto alice = ask(messages, QStringLiteral("gpt-b"), kAliceKey);
        QCOMPARE(alice.status, 200);
        QCOMPARE(alice.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(ask(QStringLiteral("/v1/messages/count_tokens"), QStringLiteral("gpt-b"), kAliceKey).status, 200);
        const auto bob = ask(messages, QStringLiteral("gpt-b"), kBobKey);
        QCOMPARE(bob.status, 404);
        QCOMPARE(errorMessage(bob), errorMessage(ask(messages, QStringLiteral("zz-made-up"), kBobKey))
                                        .replace(QStringLiteral("zz-made-up"), QStringLiteral("gpt-b")));
        QCOMPARE(ask(QStringLiteral("/v1/messages/count_tokens"), QStringLiteral("gpt-b"), kBobKey).status, 404);
        const auto eve = ask(messages, QStringLiteral("gpt-b"), kEveKey);
        QCOMPARE(eve.status, 404);
        QVERIFY2(errorMessage(eve).contains(QStringLiteral("several providers (pa, pb)")),
                 qPrintable(errorMessage(eve)));
        QCOMPARE(gw.anthropicA.requests().size(), 0);
        QCOMPARE(gw.openaiB.requests().size(), 1);
    }

    void aRevokedAdminsEventFeedEndsAtTheReload() {
        // Eve (admin) had /admin/events open; a reload removed her tenant. Her new calls got 401,
        // but the open feed kept streaming every tenant's attempts to her (found by a probe).
        QTemporaryDir dir;
        GatewayFixture gw;
        addTenant(gw.config, QStringLiteral("alice"), kAliceKey, true);
        addTenant(gw.config, QStringLiteral("bob"), kBobKey, true);
        addTenant(gw.config, QStringLiteral("eve"), kEveKey, true);
        gw.configPath = dir.filePath(QStringLiteral("config.json"));
        QVERIFY(config::save(gw.configPath, gw.config));
        gw.start();
        auto openFeed = [&gw](const QByteArray &key) {
            QNetworkRequest request(QUrl(gw.baseUrl() + QStringLiteral("/admin/events")));
            request.setRawHeader("authorization", "Bearer " + key);
            return gw.nam.get(request);
        };
        QNetworkReply *alice = openFeed(kAliceKey);
        QNetworkReply *bob = openFeed(kBobKey);
        QNetworkReply *eve = openFeed(kEveKey);
        for (QNetworkReply *feed : {alice, bob, eve})
            QTRY_VERIFY(feed->bytesAvailable() > 0); // the current marks arrive first
        QByteArray aliceSaw = alice->readAll(), bobSaw = bob->readAll(), eveSaw = eve->readAll();

        config::Config next = gw.config;
        next.tenants.remove(QStringLiteral("eve"));
        QVERIFY(config::save(gw.configPath, next));
        QCOMPARE(gw.postRaw(QStringLiteral("/admin/reload"), "{}", bearer(kAliceKey)).status, 200);
        QTRY_VERIFY(eve->isFinished()); // ended at the reload, not at the next event
        eveSaw += eve->readAll();
        QVERIFY2(eveSaw.contains("event: revoked") && eveSaw.contains("tenant eve was removed"), eveSaw.constData());
        QCOMPARE(eve->error(), QNetworkReply::NoError); // a proper end of the stream, not a reset

        // Demoted by the window's settings (no file): bob's feed ends too; alice's goes on.
        next.tenants[QStringLiteral("bob")].admin = false;
        gw.engine().applyConfig(next);
        QTRY_VERIFY(bob->isFinished());
        bobSaw += bob->readAll();
        QVERIFY2(bobSaw.contains("event: revoked") && bobSaw.contains("no longer an admin"), bobSaw.constData());

        const auto body = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body, bearer(kBobKey)).status, 200);
        QTRY_VERIFY((aliceSaw += alice->readAll()).contains("\"tenant\":\"bob\""));
        QVERIFY(!alice->isFinished());
        QVERIFY(!eveSaw.contains("event: attempt") && !bobSaw.contains("event: attempt"));
        for (QNetworkReply *feed : {alice, bob, eve}) {
            feed->abort();
            feed->deleteLater();
        }
    }

    void aReloadCannotTakeTheKeysOffANetworkListener() {
        // Started on 0.0.0.0 with tenants. The file is edited to say loopback and to drop the
        // tenants: it validated (a loopback file needs none), the reload answered
        // {"reloaded":true}, and the listener, which a reload never moves, served the network
        // with no key, admin API included (found by a probe).
        QTemporaryDir dir;
        GatewayFixture gw;
        addTenant(gw.config, QStringLiteral("alice"), kAliceKey, true);
        gw.config.listen = QStringLiteral("0.0.0.0:0");
        gw.configPath = dir.filePath(QStringLiteral("config.json"));
        config::Config edited = gw.config;
        edited.listen = QStringLiteral("127.0.0.1:0");
        edited.tenants.clear();
        QVERIFY(config::save(gw.configPath, edited));
        gw.start();
        const auto refused = gw.postRaw(QStringLiteral("/admin/reload"), "{}", bearer(kAliceKey));
        QCOMPARE(refused.status, 400);
        QVERIFY2(refused.body.contains("network can reach") && refused.body.contains("tenant"),
                 refused.body.constData());
        const auto body = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).status, 401); // still needs a key
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body, bearer(kAliceKey)).status, 200);
        // With its tenants, the same file reloads, and the log says the listener stays where it is.
        edited.tenants = gw.config.tenants;
        QVERIFY(config::save(gw.configPath, edited));
        QSignalSpy logs(gw.engine().telemetry(), &telemetry::Telemetry::logLine);
        QCOMPARE(gw.postRaw(QStringLiteral("/admin/reload"), "{}", bearer(kAliceKey)).status, 200);
        bool saidListen = false;
        for (const auto &args : logs)
            saidListen |= args.at(0).toJsonObject().value(QStringLiteral("msg")).toString() ==
                          QLatin1String("listen address changes at the next start");
        QVERIFY(saidListen);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).status, 401);
    }

    // The window's Save applies what it wrote through Engine::applyConfig. Started with --listen on
    // a network address, a file that said loopback (the starter's default) passed the window's check
    // once the first save had handed it the file's `listen`, and the engine applied it unchecked: with
    // its last tenant removed, the network listener served chat and the admin API with no key
    // (probe AB4 F1). It is refused as the reload of the same file is, and the configuration keeps
    // the listener given at start.
    void theWindowsApplyCannotTakeTheKeysOffANetworkListener() {
        GatewayFixture gw;
        addTenant(gw.config, QStringLiteral("alice"), kAliceKey, true);
        gw.config.listen = QStringLiteral("0.0.0.0:0");
        gw.listenGiven = gw.config.listen;
        gw.start();
        config::Config saved = gw.config;
        saved.listen = QStringLiteral("127.0.0.1:4141"); // what the file says
        saved.failover.keepaliveMs += 1000;
        QVERIFY(gw.engine().applyConfig(saved));
        QCOMPARE(gw.engine().config()->listen, QStringLiteral("0.0.0.0:0"));
        QCOMPARE(gw.engine().config()->failover.keepaliveMs, saved.failover.keepaliveMs);

        saved.tenants.clear();
        QString why;
        QVERIFY(!gw.engine().applyConfig(saved, &why));
        QVERIFY2(why.contains(QLatin1String("network can reach")) && why.contains(QLatin1String("no tenants")),
                 qPrintable(why));
        QCOMPARE(gw.engine().config()->tenants.size(), 1);
        const auto body = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).status, 401);
        QCOMPARE(gw.get(QStringLiteral("/admin/credentials")).status, 401);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body, bearer(kAliceKey)).status, 200);
    }

    // Started with --listen, whose command line the next start gives again: a reload of a file that
    // says another address warned "listen address changes at the next start" (probe I3 5), and the
    // configuration named the file's address, not the listener's.
    void aReloadKeepsTheListenGivenAtStart() {
        QTemporaryDir dir;
        GatewayFixture gw;
        gw.config.listen = QStringLiteral("127.0.0.1:0");
        gw.listenGiven = gw.config.listen;
        gw.configPath = dir.filePath(QStringLiteral("config.json"));
        config::Config file = gw.config;
        file.listen = QStringLiteral("127.0.0.1:4141");
        QVERIFY(config::save(gw.configPath, file));
        gw.start();
        QSignalSpy logs(gw.engine().telemetry(), &telemetry::Telemetry::logLine);
        QCOMPARE(gw.postRaw(QStringLiteral("/admin/reload"), "{}").status, 200);
        for (const auto &args : logs)
            QVERIFY2(args.at(0).toJsonObject().value(QStringLiteral("msg")).toString() !=
                         QLatin1String("listen address changes at the next start"),
                     "warned of a listen change the next start will not make");
        QCOMPARE(gw.engine().config()->listen, QStringLiteral("127.0.0.1:0"));
    }
};

QTEST_GUILESS_MAIN(TestTenantsPolicy)
#include "test_tenants_policy.moc"
