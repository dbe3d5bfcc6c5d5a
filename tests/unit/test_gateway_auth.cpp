// Who is calling (GatewayAuth) and whether an authenticated chat request may
// start (ChatAdmission), as pure functions over a request's headers.
#include "core/credentials/gateway_key.h"
#include "core/server/chat_admission.h"
#include "core/server/client_stream.h"
#include "core/server/gateway_auth.h"
#include "core/server/idempotency_store.h"
#include "core/telemetry/budget_tracker.h"
#include "fake_clock.h"

#include <QTest>

using namespace sw;
using namespace sw::server;

namespace {
// Test keys, not in the generated format on purpose except where the format is the point.
const QByteArray kAliceKey = "test-gateway-key-alice-0000";
const QByteArray kBobKey = "test-gateway-key-bob-1111111";
const QByteArray kProviderKey = "test-provider-key-2222";

config::TenantConfig tenant(const QString &name, const QByteArray &key, bool admin = false) {
    config::TenantConfig t;
    t.name = name;
    t.keyHashes = {credentials::gatewayKeyHash(key)};
    t.admin = admin;
    return t;
}

QMap<QString, config::TenantConfig> twoTenants() {
    return {{QStringLiteral("alice"), tenant(QStringLiteral("alice"), kAliceKey)},
            {QStringLiteral("bob"), tenant(QStringLiteral("bob"), kBobKey, true)}};
}

InboundRequest request(http::HeaderList headers) {
    InboundRequest r;
    r.method = "POST";
    r.path = QStringLiteral("/v1/messages");
    r.headers = std::move(headers);
    r.body = "{}";
    return r;
}

QString tenantOf(const std::optional<Caller> &caller) {
    return caller ? caller->tenant : QStringLiteral("<none>");
}
} // namespace

class TestGatewayAuth : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void keyPlacesInOrder_data() {
        QTest::addColumn<http::HeaderList>("headers");
        QTest::addColumn<QString>("tenant");
        QTest::addRow("x-switchman-key") << http::HeaderList{{"x-switchman-key", kAliceKey}} << "alice";
        QTest::addRow("x-api-key") << http::HeaderList{{"x-api-key", kAliceKey}} << "alice";
        QTest::addRow("bearer") << http::HeaderList{{"Authorization", "Bearer " + kAliceKey}} << "alice";
        // First present wins: x-switchman-key, then x-api-key, then Authorization.
        QTest::addRow("x-switchman-key over x-api-key")
            << http::HeaderList{{"x-api-key", kBobKey}, {"x-switchman-key", kAliceKey}} << "alice";
        QTest::addRow("x-api-key over bearer")
            << http::HeaderList{{"Authorization", "Bearer " + kAliceKey}, {"x-api-key", kBobKey}} << "bob";
        // A provider key in x-api-key beside x-switchman-key: the tenant is still x-switchman-key's.
        QTest::addRow("x-switchman-key beside a provider key")
            << http::HeaderList{{"x-api-key", kProviderKey}, {"x-switchman-key", kBobKey}} << "bob";
        // x-api-key is present, so Authorization is not consulted even though it holds a valid key.
        QTest::addRow("unknown x-api-key shadows a valid bearer")
            << http::HeaderList{{"x-api-key", kProviderKey}, {"Authorization", "Bearer " + kAliceKey}} << "<none>";
        QTest::addRow("scheme in any case, spaces around")
            << http::HeaderList{{"authorization", "bEaReR   " + kAliceKey + "  "}} << "alice";
        QTest::addRow("tab after the scheme") << http::HeaderList{{"Authorization", "Bearer\t" + kAliceKey}} << "alice";
        QTest::addRow("no key at all") << http::HeaderList{{"content-type", "application/json"}} << "<none>";
        QTest::addRow("unknown key") << http::HeaderList{{"x-api-key", kAliceKey + "x"}} << "<none>";
        QTest::addRow("malformed: bare key in Authorization")
            << http::HeaderList{{"Authorization", kAliceKey}} << "<none>";
        QTest::addRow("malformed: other scheme")
            << http::HeaderList{{"Authorization", "Basic " + kAliceKey}} << "<none>";
        QTest::addRow("malformed: no space after the scheme")
            << http::HeaderList{{"Authorization", "Bearer" + kAliceKey}} << "<none>";
        QTest::addRow("malformed: scheme only") << http::HeaderList{{"Authorization", "Bearer "}} << "<none>";
    }
    void keyPlacesInOrder() {
        QFETCH(http::HeaderList, headers);
        QFETCH(QString, tenant);
        const auto tenants = twoTenants();
        QCOMPARE(tenantOf(GatewayAuth(tenants).authenticate(request(headers))), tenant);
    }

    void adminComesFromTheTenant() {
        const auto tenants = twoTenants();
        const GatewayAuth auth(tenants);
        const auto alice = auth.authenticate(request({{"x-api-key", kAliceKey}}));
        const auto bob = auth.authenticate(request({{"x-api-key", kBobKey}}));
        QVERIFY(alice && bob);
        QVERIFY(!alice->admin);
        QVERIFY(bob->admin);
    }

    void storedHashInUpperCaseStillMatches() {
        auto tenants = twoTenants();
        QString &stored = tenants[QStringLiteral("alice")].keyHashes[0];
        stored = QStringLiteral("sha256:") + stored.mid(7).toUpper(); // a hand-edited config
        QCOMPARE(tenantOf(GatewayAuth(tenants).callerForKey(kAliceKey)), QStringLiteral("alice"));
    }

    void noTenantsMeansLocalAdmin() {
        const QMap<QString, config::TenantConfig> none;
        const auto caller = GatewayAuth(none).authenticate(request({}));
        QVERIFY(caller);
        QCOMPARE(caller->tenant, QStringLiteral("local"));
        QVERIFY(caller->admin);
    }

    void providerKey() {
        const auto tenants = twoTenants();
        const GatewayAuth auth(tenants);
        // Tenants and no x-switchman-key: the auth headers hold the gateway key, nothing goes upstream.
        QCOMPARE(auth.providerKey(request({{"x-api-key", kAliceKey}})), QByteArray());
        QCOMPARE(auth.providerKey(request({{"Authorization", "Bearer " + kAliceKey}})), QByteArray());
        // With x-switchman-key: x-api-key, else the bearer token, else Authorization as sent.
        QCOMPARE(auth.providerKey(request({{"x-switchman-key", kAliceKey}, {"x-api-key", kProviderKey}})),
                 kProviderKey);
        QCOMPARE(
            auth.providerKey(request({{"x-switchman-key", kAliceKey}, {"Authorization", "bearer " + kProviderKey}})),
            kProviderKey);
        QCOMPARE(auth.providerKey(request({{"x-switchman-key", kAliceKey}, {"Authorization", kProviderKey}})),
                 kProviderKey);
        // No tenants: whatever the caller sends is its own provider key.
        const QMap<QString, config::TenantConfig> none;
        QCOMPARE(GatewayAuth(none).providerKey(request({{"Authorization", "Bearer " + kProviderKey}})), kProviderKey);
    }

    void gatewayKeyInProviderSlot_data() {
        QTest::addColumn<http::HeaderList>("headers");
        QTest::addColumn<QString>("refusedHeader"); // empty: not refused
        QTest::addRow("provider key in x-api-key")
            << http::HeaderList{{"x-switchman-key", kAliceKey}, {"x-api-key", kProviderKey}} << QString();
        QTest::addRow("own key in x-api-key")
            << http::HeaderList{{"x-switchman-key", kAliceKey}, {"x-api-key", kAliceKey}} << "x-api-key";
        QTest::addRow("other tenant's key as bearer")
            << http::HeaderList{{"x-switchman-key", kAliceKey}, {"Authorization", "Bearer " + kBobKey}}
            << "Authorization";
        QTest::addRow("tenant key as bare Authorization")
            << http::HeaderList{{"x-switchman-key", kAliceKey}, {"Authorization", kBobKey}} << "Authorization";
        // Not any tenant's, but in the gateway key format: no provider issues it, so forwarding could only leak it.
        QTest::addRow("unknown key in the gateway format")
            << http::HeaderList{{"x-switchman-key", kAliceKey}, {"x-api-key", credentials::newGatewayKey().toLatin1()}}
            << "x-api-key";
        // Without x-switchman-key the auth headers name the tenant and are never forwarded.
        QTest::addRow("no x-switchman-key") << http::HeaderList{{"x-api-key", kAliceKey}} << QString();
    }
    void gatewayKeyInProviderSlot() {
        QFETCH(http::HeaderList, headers);
        QFETCH(QString, refusedHeader);
        const auto tenants = twoTenants();
        const auto problem = GatewayAuth(tenants).gatewayKeyInProviderSlot(request(headers));
        QCOMPARE(problem.has_value(), !refusedHeader.isEmpty());
        if (problem)
            QVERIFY2(problem->startsWith(refusedHeader + QStringLiteral(" carries a Switchman gateway key")),
                     qPrintable(*problem));
    }

    void admissionOrderAndAnswers() {
        const auto tenants = twoTenants();
        const GatewayAuth auth(tenants);
        test::FakeClock clock;
        IdempotencyStore idempotency(clock);
        ChatAdmission::Gates gates;
        gates.auth = &auth;
        gates.idempotency = &idempotency;

        auto admitted = [&](const http::HeaderList &headers, const QByteArray &body = "{}") {
            InboundRequest r = request(headers);
            r.body = body;
            return ChatAdmission::check(gates, r, QStringLiteral("alice"));
        };
        QVERIFY(!admitted({{"x-api-key", kAliceKey}}));

        // Idempotency-Key: short printable ASCII only.
        auto refusal = admitted({{"idempotency-key", QByteArray(300, 'k')}});
        QVERIFY(refusal);
        QCOMPARE(refusal->error.status, 400);
        refusal = admitted({{"idempotency-key", "key\x01"}});
        QVERIFY(refusal);
        QCOMPARE(refusal->error.status, 400);
        // The same key with another body: 422, never a replay of some other request.
        QCOMPARE(idempotency.begin(QStringLiteral("alice"), "k1", QStringLiteral("/v1/messages"), "{\"a\":1}").state,
                 IdempotencyStore::State::New);
        refusal = admitted({{"idempotency-key", "k1"}}, "{\"a\":2}");
        QVERIFY(refusal);
        QCOMPARE(refusal->error.status, 422);
        // The same key and body while the twin is in flight: 409, with a short Retry-After for SDKs that retry
        // a 409; once the twin completed the request is admitted (and replayed by the chat request).
        refusal = admitted({{"idempotency-key", "k1"}}, "{\"a\":1}");
        QVERIFY(refusal);
        QCOMPARE(refusal->error.status, 409);
        QCOMPARE(http::headerValue(errorHintHeaders(refusal->error), "retry-after"), QByteArray("1"));
        idempotency.complete(QStringLiteral("alice"), "k1", 200, {}, "{}");
        QVERIFY(!admitted({{"idempotency-key", "k1"}}, "{\"a\":1}"));

        // Paused: 503 with Retry-After; a key in the provider slot is still named first (400).
        gates.paused = true;
        refusal = admitted({});
        QVERIFY(refusal);
        QCOMPARE(refusal->error.status, 503);
        QCOMPARE(http::headerValue(errorHintHeaders(refusal->error), "retry-after"), QByteArray("5"));
        refusal = admitted({{"x-switchman-key", kAliceKey}, {"x-api-key", kBobKey}});
        QVERIFY(refusal);
        QCOMPARE(refusal->error.status, 400);
        gates.paused = false;

        // A tenant at its budget: 429, Retry-After until the period resets.
        telemetry::BudgetTracker budgets(clock, {});
        auto withBudget = tenants;
        withBudget[QStringLiteral("alice")].budget = config::BudgetConfig{1.0, QStringLiteral("day")};
        budgets.configure(withBudget);
        gates.budgets = &budgets;
        QVERIFY(!admitted({}));
        budgets.add(QStringLiteral("alice"), 1.5);
        refusal = admitted({});
        QVERIFY(refusal);
        QCOMPARE(refusal->error.status, 429);
        QCOMPARE(http::headerValue(errorHintHeaders(refusal->error), "x-switchman-budget"), QByteArray("exceeded"));
        // The period resets in hours: SDKs would sleep that long (twice) before the app heard.
        QCOMPARE(http::headerValue(errorHintHeaders(refusal->error), "x-should-retry"), QByteArray("false"));
        QVERIFY(http::headerValue(errorHintHeaders(refusal->error), "retry-after").toLongLong() > 0);
        QCOMPARE(refusal->error.retryAfterMs.value_or(0),
                 http::headerValue(errorHintHeaders(refusal->error), "retry-after").toLongLong() * 1000);
    }
};

QTEST_GUILESS_MAIN(TestGatewayAuth)
#include "test_gateway_auth.moc"
