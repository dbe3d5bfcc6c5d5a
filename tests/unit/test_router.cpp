// The router on a real listener (HttpFront on a loopback socket), with a stand-in
// for the engine behind server::EngineControl: which route answers, in which
// format, and which key each route needs. No Engine is built: the server layer
// must not need one.
#include "core/credentials/gateway_key.h"
#include "core/failover/provider_down_marks.h"
#include "core/server/admin_api.h"
#include "core/server/engine_control.h"
#include "core/server/http_front.h"
#include "core/server/idempotency_store.h"
#include "core/server/router.h"
#include "core/telemetry/telemetry.h"
#include "core/telemetry/usage_report.h"
#include "fake_clock.h"
#include "raw_http_client.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTcpServer>
#include <QTest>

using namespace sw;
using namespace sw::server;

namespace {
const QByteArray kTenantKey = "test-gateway-key-tenant-0000";
const QByteArray kAdminKey = "test-gateway-key-admin-11111";

class StubEngine final : public EngineControl {
public:
    explicit StubEngine(util::Clock &clock) : m_clock(clock) {}
    util::Clock &clock() const override { return m_clock; }
    telemetry::Telemetry *telemetry() const override { return &m_telemetry; }
    QList<failover::MarkInfo> marks() const override { return {}; }
    int clearMarks(const failover::MarkFilter &) override { return 0; }
    QString marksStoreDescription() const override { return QStringLiteral("stub store"); }
    bool marksStoreUp() const override { return true; }
    QList<credentials::CredentialStatus> credentialStates() const override { return {}; }
    int clearCredentials(const credentials::CredentialFilter &) override { return 0; }
    bool reload(QString *) override {
        ++reloads;
        return true;
    }
    bool paused() const override { return pausedFlag; }
    std::shared_ptr<const config::Config> config() const override { return current; }
    void queryUsage(const telemetry::UsageQuery &, QObject *,
                    std::function<void(const telemetry::UsageReport &)> done) override {
        usageAnswer = std::move(done); // the ledger answers when the test says so
    }

    bool pausedFlag = false;
    int reloads = 0;
    std::shared_ptr<const config::Config> current; // what config() tells; null: none
    std::function<void(const telemetry::UsageReport &)> usageAnswer;

private:
    util::Clock &m_clock;
    mutable telemetry::Telemetry m_telemetry; // the interface hands out a mutable pointer from a const call
};

config::TenantConfig tenant(const QString &name, const QByteArray &key, bool admin) {
    config::TenantConfig t;
    t.name = name;
    t.keyHashes = {credentials::gatewayKeyHash(key)};
    t.admin = admin;
    return t;
}

struct Reply {
    int status = 0;
    QByteArray head;
    QByteArray body;
    QJsonObject json() const { return QJsonDocument::fromJson(body).object(); }
    QByteArray header(const QByteArray &name) const {
        for (const QByteArray &line : head.split('\n')) {
            const qsizetype colon = line.indexOf(':');
            if (colon > 0 && line.left(colon).trimmed().toLower() == name.toLower())
                return line.mid(colon + 1).trimmed();
        }
        return {};
    }
};
} // namespace

class TestRouter : public QObject {
    Q_OBJECT

    test::FakeClock m_clock;
    std::unique_ptr<StubEngine> m_engine;
    std::unique_ptr<failover::ProviderDownMarks> m_marks;
    std::unique_ptr<IdempotencyStore> m_idempotency;
    EngineContext m_ctx;
    std::unique_ptr<HttpFront> m_front;
    Router *m_router = nullptr;
    int m_runnersMade = 0;
    quint16 m_port = 0;

    Reply send(const QByteArray &method, const QByteArray &path, const http::HeaderList &headers = {},
               const QByteArray &body = {}) {
        test::RawHttpClient client(m_port);
        if (!client.waitConnected())
            return {};
        QByteArray request = method + ' ' + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + QByteArray::number(m_port) +
                             "\r\nConnection: close\r\n";
        for (const auto &[name, value] : headers)
            request += name + ": " + value + "\r\n";
        if (!body.isEmpty())
            request += "Content-Type: application/json\r\nContent-Length: " + QByteArray::number(body.size()) + "\r\n";
        client.send(request + "\r\n" + body);
        if (!client.waitResponse())
            return {};
        return {client.status(), client.head(), client.body()};
    }

private Q_SLOTS:
    void init() {
        m_engine = std::make_unique<StubEngine>(m_clock);
        m_marks = std::make_unique<failover::ProviderDownMarks>(m_clock);
        m_idempotency = std::make_unique<IdempotencyStore>(m_clock);
        config::Config cfg;
        cfg.tenants.insert(QStringLiteral("team"), tenant(QStringLiteral("team"), kTenantKey, false));
        cfg.tenants.insert(QStringLiteral("ops"), tenant(QStringLiteral("ops"), kAdminKey, true));
        config::ProviderConfig pa;
        pa.id = QStringLiteral("pa");
        pa.api = QStringLiteral("anthropic-messages");
        pa.baseUrl = QStringLiteral("http://127.0.0.1:9");
        cfg.providers.insert(pa.id, pa);
        config::ModelConfig claude;
        claude.provider = pa.id;
        claude.id = QStringLiteral("claude-a");
        cfg.models.insert(claude.key(), claude);
        config::RouteConfig chain;
        chain.name = QStringLiteral("chain");
        chain.candidates = {claude.key()};
        cfg.routes.insert(chain.name, chain);
        m_ctx = EngineContext{};
        m_ctx.config = std::make_shared<const config::Config>(cfg);
        m_ctx.clock = &m_clock;
        m_ctx.marks = m_marks.get();
        m_ctx.telemetry = m_engine->telemetry();
        m_ctx.idempotency = m_idempotency.get();
        m_runnersMade = 0;
        m_ctx.makeAttemptRunner = [this](AttemptRunnerSetup, QObject *) {
            ++m_runnersMade; // no test here gets a chat request that far
            return AttemptRunnerHandle{};
        };
        m_front = std::make_unique<HttpFront>(
            [this](InboundRequest &&r, HttpExchange *e) { m_router->dispatch(std::move(r), e); });
        m_router = new Router(m_ctx, *m_engine, nullptr, "test", m_front.get());
        auto *tcp = new QTcpServer(m_front.get());
        QVERIFY(tcp->listen(QHostAddress::LocalHost));
        m_front->bind(tcp);
        m_port = tcp->serverPort();
        m_front->setListener({QHostAddress(QHostAddress::LocalHost), m_port});
    }
    void cleanup() {
        m_front.reset();
        QCOMPARE(m_runnersMade, 0);
    }

    void unknownPathIs404InTheSharedShape() {
        for (const QByteArray method : {"GET", "POST"}) {
            const Reply r = send(method, "/v1/nowhere", {{"x-api-key", kAdminKey}}, method == "POST" ? "{}" : "");
            QCOMPARE(r.status, 404);
            // Read by OpenAI and Anthropic clients alike: error.type and error.message, and type "error".
            QCOMPARE(r.json().value(QStringLiteral("type")).toString(), QStringLiteral("error"));
            const QJsonObject error = r.json().value(QStringLiteral("error")).toObject();
            QCOMPARE(error.value(QStringLiteral("type")).toString(), QStringLiteral("not_found_error"));
            QVERIFY2(error.value(QStringLiteral("message")).toString().contains(QStringLiteral("/v1/nowhere")), r.body);
        }
    }

    void wrongMethodIs405WithAllow_data() {
        QTest::addColumn<QByteArray>("method");
        QTest::addColumn<QByteArray>("path");
        QTest::addColumn<QByteArray>("allow");
        QTest::addRow("GET a chat route") << QByteArray("GET") << QByteArray("/v1/messages") << QByteArray("POST");
        QTest::addRow("GET count_tokens")
            << QByteArray("GET") << QByteArray("/v1/messages/count_tokens") << QByteArray("POST");
        QTest::addRow("DELETE models") << QByteArray("DELETE") << QByteArray("/v1/models") << QByteArray("GET, HEAD");
        QTest::addRow("POST a model") << QByteArray("POST") << QByteArray("/v1/models/chain")
                                      << QByteArray("GET, HEAD");
        QTest::addRow("DELETE healthz") << QByteArray("DELETE") << QByteArray("/healthz") << QByteArray("GET, HEAD");
        QTest::addRow("POST admin marks")
            << QByteArray("POST") << QByteArray("/admin/marks") << QByteArray("GET, HEAD, DELETE");
        QTest::addRow("PUT admin credentials")
            << QByteArray("PUT") << QByteArray("/admin/credentials") << QByteArray("GET, HEAD, DELETE");
        QTest::addRow("DELETE metrics") << QByteArray("DELETE") << QByteArray("/metrics") << QByteArray("GET, HEAD");
    }
    void wrongMethodIs405WithAllow() {
        QFETCH(QByteArray, method);
        QFETCH(QByteArray, path);
        QFETCH(QByteArray, allow);
        const Reply r = send(method, path, {{"x-api-key", kAdminKey}});
        QCOMPARE(r.status, 405);
        QCOMPARE(r.header("allow"), allow);
        QVERIFY2(r.json().value(QStringLiteral("error")).isObject(), r.body);
    }

    void aChatRoutes405IsInItsOwnFormat() {
        // Anthropic's shape on /v1/messages, OpenAI's (with code and param) on /v1/chat/completions.
        const Reply anthropic = send("GET", "/v1/messages");
        QCOMPARE(anthropic.status, 405);
        QCOMPARE(anthropic.json().value(QStringLiteral("type")).toString(), QStringLiteral("error"));
        const Reply openai = send("GET", "/v1/chat/completions");
        QCOMPARE(openai.status, 405);
        QVERIFY2(!openai.json().contains(QStringLiteral("type")), openai.body);
        QVERIFY2(openai.json().value(QStringLiteral("error")).toObject().contains(QStringLiteral("code")), openai.body);
    }

    void unknownKeyIs401InTheClientsFormat() {
        const QByteArray body = R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})";
        for (const http::HeaderList &headers : {http::HeaderList{}, http::HeaderList{{"x-api-key", kTenantKey + "x"}},
                                                http::HeaderList{{"Authorization", "Basic " + kTenantKey}}}) {
            const Reply anthropic = send("POST", "/v1/messages", headers, body);
            QCOMPARE(anthropic.status, 401);
            QCOMPARE(anthropic.json().value(QStringLiteral("type")).toString(), QStringLiteral("error"));
            QCOMPARE(
                anthropic.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("type")).toString(),
                QStringLiteral("authentication_error"));
            const Reply openai = send("POST", "/v1/chat/completions", headers, body);
            QCOMPARE(openai.status, 401);
            const QJsonObject error = openai.json().value(QStringLiteral("error")).toObject();
            QCOMPARE(error.value(QStringLiteral("code")).toString(), QStringLiteral("invalid_api_key"));
            QVERIFY(!openai.json().contains(QStringLiteral("type")));
        }
        QCOMPARE(send("POST", "/v1/messages/count_tokens", {}, body).status, 401);
        QCOMPARE(send("GET", "/v1/models").status, 401);
    }

    void aTenantKeyReachesTheChatRoutes() {
        // An unknown model is the chat request's own 404 (its message names the model), not "no route".
        const QByteArray body =
            R"({"model":"no-such-model","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})";
        const Reply r = send("POST", "/v1/messages", {{"Authorization", "Bearer " + kTenantKey}}, body);
        QCOMPARE(r.status, 404);
        QVERIFY2(r.json()
                     .value(QStringLiteral("error"))
                     .toObject()
                     .value(QStringLiteral("message"))
                     .toString()
                     .contains(QStringLiteral("no-such-model")),
                 r.body);
        QVERIFY(!r.header("x-switchman-request-id").isEmpty());
        // count_tokens is answered here, never forwarded; for a model the gateway cannot route it gives the
        // 404 /v1/messages gives, so a client learns of the bad name before it sends the message.
        const Reply unroutable = send("POST", "/v1/messages/count_tokens", {{"x-api-key", kTenantKey}}, body);
        QCOMPARE(unroutable.status, 404);
        QCOMPARE(unroutable.json(), r.json());
        const QByteArray routable = R"({"model":"chain","messages":[{"role":"user","content":"hi"}]})";
        const Reply count = send("POST", "/v1/messages/count_tokens", {{"x-api-key", kTenantKey}}, routable);
        QCOMPARE(count.status, 200);
        QVERIFY(count.json().value(QStringLiteral("input_tokens")).toInt() >= 1);
        QCOMPARE(send("GET", "/v1/models", {{"x-api-key", kTenantKey}}).status, 200);
    }

    void countTokensRefusesWhatMessagesRefusesTheSameWay() {
        // count_tokens reads the body as /v1/messages does, its guards first: it parsed the body into
        // Qt's tree before them, and 31 MB of tiny values held 470 MB there (probe X2-F6). The refusal
        // is /v1/messages' own, word for word: it names the body's size, where count_tokens named that
        // of a copy it had written out again.
        QByteArray tiny = R"({"model":"chain","messages":[{"role":"user","content":"hi"}],"metadata":{"x":[1)";
        for (int i = 0; i < 300000; ++i)
            tiny += ",1";
        tiny += "]}}";
        for (const QByteArray &body : {tiny, QByteArray(R"({"model":"chain","messages":[)")}) {
            const Reply messages = send("POST", "/v1/messages", {{"x-api-key", kTenantKey}}, body);
            QCOMPARE(messages.status, 400);
            const Reply count = send("POST", "/v1/messages/count_tokens", {{"x-api-key", kTenantKey}}, body);
            QCOMPARE(count.status, 400);
            QCOMPARE(count.json(), messages.json());
        }
        const Reply refused = send("POST", "/v1/messages/count_tokens", {{"x-api-key", kTenantKey}}, tiny);
        QVERIFY2(refused.json()
                     .value(QStringLiteral("error"))
                     .toObject()
                     .value(QStringLiteral("message"))
                     .toString()
                     .contains(QStringLiteral("JSON values")),
                 refused.body);
    }

    void aListedModelIsAnsweredById() {
        // OpenAI's SDK: models.list() then models.retrieve(id). Every listed object is there by its id, the
        // same object; created is when the gateway started (the fake clock's 2026-01-01), not 0.
        const Reply list = send("GET", "/v1/models", {{"Authorization", "Bearer " + kTenantKey}});
        QCOMPARE(list.status, 200);
        QCOMPARE(list.json().value(QStringLiteral("object")).toString(), QStringLiteral("list"));
        const QJsonArray data = list.json().value(QStringLiteral("data")).toArray();
        QCOMPARE(data.size(), 2);
        for (const QJsonValue &v : data) {
            const QJsonObject listed = v.toObject();
            QCOMPARE(listed.value(QStringLiteral("created")).toInteger(), 1'767'225'600);
            const QByteArray id = listed.value(QStringLiteral("id")).toString().toUtf8();
            const Reply one = send("GET", "/v1/models/" + id, {{"Authorization", "Bearer " + kTenantKey}});
            QVERIFY2(one.status == 200, id + ": " + one.body);
            QCOMPARE(one.json(), listed);
        }
        // An id with a '/' may also come as one segment with %2F.
        const Reply escaped = send("GET", "/v1/models/pa%2Fclaude-a", {{"Authorization", "Bearer " + kTenantKey}});
        QCOMPARE(escaped.status, 200);
        QCOMPARE(escaped.json().value(QStringLiteral("id")).toString(), QStringLiteral("pa/claude-a"));
        // An unknown id: 404 in OpenAI's error shape, naming the id. No key: 401.
        const Reply unknown = send("GET", "/v1/models/pa/nope", {{"Authorization", "Bearer " + kTenantKey}});
        QCOMPARE(unknown.status, 404);
        QVERIFY2(!unknown.json().contains(QStringLiteral("type")), unknown.body);
        const QJsonObject error = unknown.json().value(QStringLiteral("error")).toObject();
        QCOMPARE(error.value(QStringLiteral("code")).toString(), QStringLiteral("not_found"));
        QVERIFY2(error.value(QStringLiteral("message")).toString().contains(QStringLiteral("\"pa/nope\"")),
                 unknown.body);
        QCOMPARE(send("GET", "/v1/models/chain").status, 401);
    }

    void anAnthropicClientGetsAnthropicsModelShape() {
        // Anthropic's SDK sends anthropic-version and reads data[] of {type, id, display_name, created_at},
        // has_more, first_id, last_id; and a ModelInfo from /v1/models/{id}.
        const http::HeaderList anthropic{{"x-api-key", kTenantKey}, {"anthropic-version", "2023-06-01"}};
        const Reply list = send("GET", "/v1/models", anthropic);
        QCOMPARE(list.status, 200);
        const QJsonObject page = list.json();
        QVERIFY2(!page.contains(QStringLiteral("object")), list.body);
        QCOMPARE(page.value(QStringLiteral("has_more")), QJsonValue(false));
        QCOMPARE(page.value(QStringLiteral("first_id")).toString(), QStringLiteral("chain"));
        QCOMPARE(page.value(QStringLiteral("last_id")).toString(), QStringLiteral("pa/claude-a"));
        const QJsonArray data = page.value(QStringLiteral("data")).toArray();
        QCOMPARE(data.size(), 2);
        const QJsonObject expected{{QStringLiteral("type"), QStringLiteral("model")},
                                   {QStringLiteral("id"), QStringLiteral("pa/claude-a")},
                                   {QStringLiteral("display_name"), QStringLiteral("pa/claude-a")},
                                   {QStringLiteral("created_at"), QStringLiteral("2026-01-01T00:00:00Z")}};
        QCOMPARE(data.at(1).toObject(), expected);
        const Reply one = send("GET", "/v1/models/pa/claude-a", anthropic);
        QCOMPARE(one.status, 200);
        QCOMPARE(one.json(), expected);
        const Reply unknown = send("GET", "/v1/models/claude-nope", anthropic);
        QCOMPARE(unknown.status, 404);
        QCOMPARE(unknown.json().value(QStringLiteral("type")).toString(), QStringLiteral("error"));
        QCOMPARE(unknown.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("type")).toString(),
                 QStringLiteral("not_found_error"));
    }

    void aTwinInFlightGets409WithRetryAfter() {
        // An SDK that retries a 409 must wait a moment for the twin's answer, not spin.
        const QByteArray body = R"({"model":"chain","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})";
        QCOMPARE(m_idempotency->begin(QStringLiteral("team"), "order-7", QStringLiteral("/v1/messages"), body).state,
                 IdempotencyStore::State::New);
        const Reply r = send("POST", "/v1/messages", {{"x-api-key", kTenantKey}, {"Idempotency-Key", "order-7"}}, body);
        QCOMPARE(r.status, 409);
        QCOMPARE(r.header("retry-after"), QByteArray("1"));
        QVERIFY(r.header("x-switchman-request-id").startsWith("req_test"));
        QCOMPARE(r.json().value(QStringLiteral("type")).toString(), QStringLiteral("error"));
        QCOMPARE(m_router->activeRequests(), 0);
    }

    void pausedRefusesChatsBeforeTheyStart() {
        m_engine->pausedFlag = true;
        const QByteArray body = R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})";
        const Reply r = send("POST", "/v1/messages", {{"x-api-key", kTenantKey}}, body);
        QCOMPARE(r.status, 503);
        QCOMPARE(r.header("retry-after"), QByteArray("5"));
        QVERIFY(r.header("x-switchman-request-id").startsWith("req_test")); // as on every chat answer
        QCOMPARE(r.json().value(QStringLiteral("type")).toString(), QStringLiteral("error"));
        QCOMPARE(m_router->activeRequests(), 0);
    }

    void adminRoutesNeedAnAdminKey() {
        // No key or an unknown one: 401. A tenant's key without admin rights: 403. An admin key: answered.
        QCOMPARE(send("GET", "/admin/marks").status, 401);
        QCOMPARE(send("GET", "/admin/marks", {{"x-api-key", "unknown-key-000000"}}).status, 401);
        const Reply tenant = send("GET", "/admin/marks", {{"x-switchman-key", kTenantKey}});
        QCOMPARE(tenant.status, 403);
        QCOMPARE(tenant.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString(),
                 QStringLiteral("admin key required"));
        const Reply admin = send("GET", "/admin/marks", {{"x-switchman-key", kAdminKey}});
        QCOMPARE(admin.status, 200);
        QVERIFY(admin.json().value(QStringLiteral("marks")).isArray());
        // A reload reaches the engine only with the admin key.
        QCOMPARE(send("POST", "/admin/reload", {{"x-api-key", kTenantKey}}, "{}").status, 403);
        QCOMPARE(m_engine->reloads, 0);
        QCOMPARE(send("POST", "/admin/reload", {{"x-api-key", kAdminKey}}, "{}").status, 200);
        QCOMPARE(m_engine->reloads, 1);
        // Metrics: an admin key, as the admin API.
        QCOMPARE(send("GET", "/metrics", {{"x-api-key", kTenantKey}}).status, 403); // as on the admin API
        const Reply metrics = send("GET", "/metrics", {{"x-api-key", kAdminKey}});
        QCOMPARE(metrics.status, 200);
        QVERIFY2(metrics.body.contains("switchman_marks_store_up 1"), metrics.body);
    }

    void aUsageAnswerIsNotGivenToAnAdminAReloadDemoted() {
        // The ledger answers later, on its thread: a reload meanwhile took the caller's admin
        // right away, and the answer (every tenant's spend) must not reach it.
        m_engine->current = m_ctx.config;
        test::RawHttpClient client(m_port);
        QVERIFY(client.waitConnected());
        client.send("GET /admin/usage?groupBy=tenant HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                    "x-switchman-key: " +
                    kAdminKey + "\r\n\r\n");
        QTRY_VERIFY(m_engine->usageAnswer != nullptr);
        config::Config demoted = *m_ctx.config;
        demoted.tenants[QStringLiteral("ops")].admin = false;
        m_engine->current = std::make_shared<const config::Config>(demoted);
        m_engine->usageAnswer(telemetry::UsageReport{});
        QVERIFY(client.waitResponse());
        QCOMPARE(client.status(), 403);
        QVERIFY2(client.body().contains("taken away by a reload"), client.body().constData());

        // Still an admin when the ledger answers: answered.
        m_engine->current = m_ctx.config;
        m_engine->usageAnswer = nullptr;
        test::RawHttpClient again(m_port);
        QVERIFY(again.waitConnected());
        again.send("GET /admin/usage?groupBy=tenant HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                   "x-switchman-key: " +
                   kAdminKey + "\r\n\r\n");
        QTRY_VERIFY(m_engine->usageAnswer != nullptr);
        m_engine->usageAnswer(telemetry::UsageReport{});
        QVERIFY(again.waitResponse());
        QCOMPARE(again.status(), 200);
    }

    void healthNeedsNoKey() {
        const Reply r = send("GET", "/healthz");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value(QStringLiteral("marks")).toString(), QStringLiteral("stub store"));
    }
};

QTEST_GUILESS_MAIN(TestRouter)
#include "test_router.moc"
