// Usage ledger and budgets through the real engine: a tenant at its
// budget gets 429 in its own format, with Retry-After, and no upstream sees the
// request; parallel requests cannot carry it past its budget; a replica sharing
// the ledger file spends from the same budget; /metrics shows spend and budget;
// /admin/usage groups rows; an unwritable ledger answers every request and says
// so once.

#include "core/failover/candidate_resolver.h"
#include "core/formats/inbound_codec.h"
#include "core/server/chat_admission.h"
#include "core/telemetry/budget_tracker.h"
#include "core/telemetry/telemetry.h"
#include "core/telemetry/usage_database.h"
#include "core/telemetry/usage_ledger.h"
#include "fake_clock.h"
#include "gateway_fixture.h"
#include "unprivileged_run.h"

#include <QCoreApplication>
#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QScopeGuard>
#include <QTemporaryDir>
#include <QTest>

#include <limits>
#include <sys/stat.h>

using namespace sw;
using namespace sw::test;

namespace {

QJsonObject routeBody(const QString &route, const QString &model) {
    if (route == QLatin1String("/v1/messages"))
        return GatewayFixture::anthropicBody(model, QStringLiteral("a b c d e f"), false);
    if (route == QLatin1String("/v1/chat/completions"))
        return GatewayFixture::openaiBody(model, QStringLiteral("a b c d e f"), false);
    if (route == QLatin1String("/v1/responses"))
        return {{QStringLiteral("model"), model}, {QStringLiteral("input"), QStringLiteral("a b c d e f")}};
    return {{QStringLiteral("model"), model},
            {QStringLiteral("context"),
             QJsonObject{{QStringLiteral("messages"),
                          QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                                 {QStringLiteral("content"), QStringLiteral("a b c d e f")},
                                                 {QStringLiteral("timestamp"), 0}}}}}}};
}

// A gateway key made at run time (no key-shaped literal in the repository).
QByteArray makeKey(const char *who) {
    return QByteArray("test-") + who + '-' + QByteArray::number(QRandomGenerator::global()->generate64(), 36);
}

config::TenantConfig tenant(const QString &name, const QByteArray &key, bool admin,
                            std::optional<config::BudgetConfig> budget = std::nullopt) {
    config::TenantConfig t;
    t.name = name;
    t.keyHashes = {QStringLiteral("sha256:") +
                   QString::fromLatin1(QCryptographicHash::hash(key, QCryptographicHash::Sha256).toHex())};
    t.admin = admin;
    t.budget = budget;
    return t;
}

QList<QPair<QByteArray, QByteArray>> as(const QByteArray &key) {
    return {{"authorization", "Bearer " + key}};
}

// An Anthropic answer of "hi" that reports the given counts (message_start's input and cache
// reads, message_delta's output), whatever was asked.
QByteArray anthropicAnswer(const QByteArray &input, const QByteArray &output, const QByteArray &cacheRead = "0") {
    return "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":"
           "\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"stop_reason\":null,"
           "\"usage\":{\"input_tokens\":" +
           input + ",\"output_tokens\":1,\"cache_read_input_tokens\":" + cacheRead +
           "}}}\n\n"
           "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
           "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
           "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
           "\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n"
           "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
           "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
           "\"usage\":{\"output_tokens\":" +
           output +
           "}}\n\n"
           "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
}

// An Anthropic answer that reports 10 input and 500 output tokens, whatever was asked.
QByteArray answerOf500Tokens() {
    return anthropicAnswer("10", "500");
}

int upstreamCalls(GatewayFixture &gw) {
    return int(gw.anthropicA.requests().size() + gw.openaiB.requests().size() + gw.responsesD.requests().size());
}

} // namespace

class TestUsageBudgets : public QObject {
    Q_OBJECT

    QByteArray m_adminKey = makeKey("admin");
    QByteArray m_teamKey = makeKey("team");

    void addTenants(GatewayFixture &gw, double usd) {
        gw.config.tenants.insert(QStringLiteral("ops"), tenant(QStringLiteral("ops"), m_adminKey, true));
        gw.config.tenants.insert(QStringLiteral("team-a"), tenant(QStringLiteral("team-a"), m_teamKey, false,
                                                                  config::BudgetConfig{usd, QStringLiteral("day")}));
    }

    HttpResult adminGet(GatewayFixture &gw, const QString &path) {
        QNetworkRequest req(QUrl(gw.baseUrl() + path));
        req.setRawHeader("authorization", "Bearer " + m_adminKey);
        return gw.wait(gw.nam.get(req));
    }

    // /healthz as a load balancer asks it (no key), as a tenant, and as an admin.
    QJsonObject healthz(GatewayFixture &gw, const QByteArray &key = {}) {
        const HttpResult r =
            gw.get(QStringLiteral("/healthz"), 15000, key.isEmpty() ? QList<QPair<QByteArray, QByteArray>>() : as(key));
        if (r.status != 200)
            qWarning("healthz answered %d", r.status);
        return r.json();
    }

private Q_SLOTS:
    void tenantAtItsBudgetGets429InItsOwnFormat_data() {
        QTest::addColumn<QString>("route");
        QTest::addColumn<QString>("model");
        QTest::newRow("openai chat") << QStringLiteral("/v1/chat/completions") << QStringLiteral("pb/gpt-b");
        QTest::newRow("anthropic messages") << QStringLiteral("/v1/messages") << QStringLiteral("pa/claude-a");
        QTest::newRow("openai responses") << QStringLiteral("/v1/responses") << QStringLiteral("pd/resp-d");
        QTest::newRow("pi native") << QStringLiteral("/v1/pi/stream") << QStringLiteral("pa/claude-a");
    }
    void tenantAtItsBudgetGets429InItsOwnFormat() {
        QFETCH(QString, route);
        QFETCH(QString, model);
        GatewayFixture gw;
        addTenants(gw, 0.00001); // one answer of the fake upstream costs more than this
        gw.start();
        const HttpResult first = gw.post(route, routeBody(route, model), as(m_teamKey));
        QCOMPARE(first.status, 200);
        const int calls = upstreamCalls(gw);
        QCOMPARE(calls, 1);

        const HttpResult refused = gw.post(route, routeBody(route, model), as(m_teamKey));
        QCOMPARE(refused.status, 429);
        QCOMPARE(upstreamCalls(gw), calls); // never reached an upstream, never failed over
        bool ok = false;
        const int retryAfter = refused.header("retry-after").toInt(&ok);
        QVERIFY2(ok && retryAfter >= 1 && retryAfter <= 86400 + 3600, refused.header("retry-after").constData());
        // Like every other answer, it names the request id the request was given.
        QVERIFY2(refused.header("x-switchman-request-id").startsWith("req_"),
                 refused.header("x-switchman-request-id").constData());
        const QJsonObject body = refused.json();
        QString message;
        if (route == QLatin1String("/v1/messages")) {
            QCOMPARE(body.value(QStringLiteral("type")).toString(), QStringLiteral("error"));
            const QJsonObject e = body.value(QStringLiteral("error")).toObject();
            QCOMPARE(e.value(QStringLiteral("type")).toString(), QStringLiteral("rate_limit_error"));
            message = e.value(QStringLiteral("message")).toString();
        } else if (route == QLatin1String("/v1/pi/stream")) {
            const QJsonObject e = body.value(QStringLiteral("error")).toObject();
            QCOMPARE(e.value(QStringLiteral("type")).toString(), QStringLiteral("rate_limit_error"));
            message = e.value(QStringLiteral("message")).toString();
        } else {
            const QJsonObject e = body.value(QStringLiteral("error")).toObject();
            QCOMPARE(e.value(QStringLiteral("code")).toString(), QStringLiteral("rate_limit_exceeded"));
            message = e.value(QStringLiteral("message")).toString();
        }
        QVERIFY2(message.contains(QStringLiteral("budget of $0.00 per day")), qPrintable(message));
        QVERIFY2(message.contains(QStringLiteral("team-a")), qPrintable(message));
        QVERIFY2(message.contains(QStringLiteral("until the day resets")), qPrintable(message));

        // Another tenant (no budget) is still served.
        QCOMPARE(gw.post(route, routeBody(route, model), as(m_adminKey)).status, 200);
        QCOMPARE(upstreamCalls(gw), calls + 1);
    }

    // "provider/any-id" resolves to a model the config does not list: it has no price, so its rows
    // cost 0. A tenant with a budget is refused it (403 in its own format, naming the model and the
    // budget) and no upstream sees the request; a tenant without a budget is served as before.
    // A budget's reservation counts a request at its own maximum, at most kMaxReservedOutputTokens, and
    // at that many when it names none (probe K3 1: 4096 were reserved for answers of 30 000 tokens, and
    // a burst spent 6x the budget). A client's larger maximum goes down to it on every API; a request
    // that names none goes without one, as for a tenant without a budget (a model of a smaller
    // context refused the forced cap: probe JV M2).
    void aBudgetHoldsTheUpstreamToWhatItReserved() {
        GatewayFixture gw;
        addTenants(gw, 100);
        gw.start();
        const QByteArray cap = QByteArray::number(server::ChatAdmission::kMaxReservedOutputTokens);
        for (const QString &model :
             {QStringLiteral("pb/gpt-b"), QStringLiteral("pd/resp-d"), QStringLiteral("pe/gemini-e")}) {
            QJsonObject big = GatewayFixture::openaiBody(model, QStringLiteral("hi"), false);
            big.insert(QStringLiteral("max_tokens"), 100000);
            QCOMPARE(gw.post(QStringLiteral("/v1/chat/completions"), big, as(m_teamKey)).status, 200);
        }
        QVERIFY2(gw.openaiB.requests().last().body.contains("\"max_tokens\":" + cap),
                 gw.openaiB.requests().last().body.constData());
        QVERIFY2(gw.responsesD.requests().last().body.contains("\"max_output_tokens\":" + cap),
                 gw.responsesD.requests().last().body.constData());
        QVERIFY2(gw.googleE.requests().last().body.contains("\"maxOutputTokens\":" + cap),
                 gw.googleE.requests().last().body.constData());
        // None named: none sent, and the reservation counted the cap's worth.
        const QJsonObject none = GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), false);
        QCOMPARE(gw.post(QStringLiteral("/v1/chat/completions"), none, as(m_teamKey)).status, 200);
        QVERIFY2(!gw.openaiB.requests().last().body.contains("max_tokens"),
                 gw.openaiB.requests().last().body.constData());
        const failover::Resolution direct =
            *failover::CandidateResolver::resolve(*gw.engine().config(), QStringLiteral("pb/gpt-b"));
        model::ChatRequest unnamed;
        const config::ModelConfig &priced = gw.config.models.value(QStringLiteral("pb/gpt-b"));
        QCOMPARE(
            server::ChatAdmission::costEstimate(*gw.engine().config(), QStringLiteral("team-a"), direct, unnamed, 0),
            double(server::ChatAdmission::kMaxReservedOutputTokens) * priced.costOutput / 1e6);
        // A tenant without a budget: the client's maximum as it asked.
        QJsonObject big = GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), false);
        big.insert(QStringLiteral("max_tokens"), 100000);
        QCOMPARE(gw.post(QStringLiteral("/v1/chat/completions"), big, as(m_adminKey)).status, 200);
        QVERIFY2(gw.openaiB.requests().last().body.contains("\"max_tokens\":100000"),
                 gw.openaiB.requests().last().body.constData());
    }

    // Chat's n: each choice is billed as an answer of its own, and was reserved as one (probe T3 F2:
    // n: 50 spent forty times a tenant's budget). OpenAI takes at most 128.
    void eachOfChatsChoicesIsReserved() {
        GatewayFixture gw;
        addTenants(gw, 100);
        gw.start();
        const failover::Resolution direct =
            *failover::CandidateResolver::resolve(*gw.engine().config(), QStringLiteral("pb/gpt-b"));
        const double oneAnswer = 1000.0 * gw.config.models.value(QStringLiteral("pb/gpt-b")).costOutput / 1e6;
        QVERIFY(oneAnswer > 0);
        const auto estimateFor = [&](wire::Api api, const QJsonObject &body) {
            model::GatewayError error;
            const auto req = formats::codecFor(api).decode(QJsonDocument(body).toJson(QJsonDocument::Compact), &error);
            return req ? server::ChatAdmission::costEstimate(*gw.engine().config(), QStringLiteral("team-a"), direct,
                                                             *req, 0)
                       : -1.0;
        };
        const auto chat = [](std::optional<int> n) {
            QJsonObject body = GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), true);
            body.insert(QStringLiteral("max_tokens"), 1000);
            if (n)
                body.insert(QStringLiteral("n"), *n);
            return body;
        };
        QVERIFY(qFuzzyCompare(estimateFor(wire::Api::OpenAICompletions, chat(std::nullopt)), oneAnswer));
        QVERIFY(qFuzzyCompare(estimateFor(wire::Api::OpenAICompletions, chat(1)), oneAnswer));
        QVERIFY(qFuzzyCompare(estimateFor(wire::Api::OpenAICompletions, chat(50)), 50 * oneAnswer));
        QVERIFY(qFuzzyCompare(estimateFor(wire::Api::OpenAICompletions, chat(100000)), 128 * oneAnswer));
        // Another format has no n: a member of that name is no choice count.
        QJsonObject messages = GatewayFixture::anthropicBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), true);
        messages.insert(QStringLiteral("max_tokens"), 1000);
        messages.insert(QStringLiteral("n"), 50);
        QVERIFY(qFuzzyCompare(estimateFor(wire::Api::AnthropicMessages, messages), oneAnswer));
    }

    // Two output caps that disagree (probe T3 F4): the budget reserved by max_completion_tokens while
    // a server that reads max_tokens alone (Ollama) was asked for a million. The smaller is the
    // request's, and the upstream gets it under both names.
    void twoOutputCapsThatDisagreeReachTheUpstreamAsTheSmaller() {
        GatewayFixture gw;
        addTenants(gw, 100);
        gw.start();
        QJsonObject body = GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), false);
        body.insert(QStringLiteral("max_completion_tokens"), 100);
        body.insert(QStringLiteral("max_tokens"), 1000000);
        QCOMPARE(gw.post(QStringLiteral("/v1/chat/completions"), body, as(m_teamKey)).status, 200);
        const QJsonObject sent = QJsonDocument::fromJson(gw.openaiB.requests().last().body).object();
        QCOMPARE(sent.value(QStringLiteral("max_tokens")).toInt(), 100);
        QCOMPARE(sent.value(QStringLiteral("max_completion_tokens")).toInt(), 100);
        // The other way round, the same.
        body.insert(QStringLiteral("max_completion_tokens"), 1000000);
        body.insert(QStringLiteral("max_tokens"), 100);
        QCOMPARE(gw.post(QStringLiteral("/v1/chat/completions"), body, as(m_teamKey)).status, 200);
        const QJsonObject again = QJsonDocument::fromJson(gw.openaiB.requests().last().body).object();
        QCOMPARE(again.value(QStringLiteral("max_tokens")).toInt(), 100);
        QCOMPARE(again.value(QStringLiteral("max_completion_tokens")).toInt(), 100);
    }

    // A completed request's answer kept under its Idempotency-Key, retried after the tenant reached
    // its budget (possibly with that very request): the budget's 429 came instead of the answer the
    // client had paid for (probe K3 3). A replay costs nothing and is given back.
    void aKeptAnswerIsGivenBackAtTheBudget() {
        GatewayFixture gw;
        addTenants(gw, 1);
        auto &model = gw.config.models[QStringLiteral("pa/claude-a")];
        model.costInput = 1;
        model.costOutput = 4000; // 500 output tokens: $2, the whole budget
        gw.anthropicA.setRawReply(answerOf500Tokens());
        gw.start();
        const QJsonObject body =
            GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("hi"), false);
        QList<QPair<QByteArray, QByteArray>> headers = as(m_teamKey);
        headers.append(QPair<QByteArray, QByteArray>("Idempotency-Key", "order-42"));
        const auto first = gw.post(QStringLiteral("/v1/messages"), body, headers);
        QCOMPARE(first.status, 200);
        QVERIFY(gw.engine().budgets().first().spent >= 1); // the budget is reached
        const auto other = gw.post(QStringLiteral("/v1/messages"), body, as(m_teamKey));
        QCOMPARE(other.status, 429);
        QCOMPARE(other.header("x-switchman-budget"), QByteArray("exceeded"));
        const auto replay = gw.post(QStringLiteral("/v1/messages"), body, headers);
        QCOMPARE(replay.status, 200);
        QCOMPARE(replay.header("x-switchman-idempotent-replay"), QByteArray("true"));
        QCOMPARE(replay.body, first.body);
        QCOMPARE(gw.anthropicA.requests().size(), 1);
    }

    void anUnpricedModelIsRefusedToATenantWithABudget() {
        GatewayFixture gw;
        addTenants(gw, 4);
        // A local model priced at 0 on purpose (`cost` given, zero) is free, not unknown.
        config::ModelConfig free;
        free.provider = QStringLiteral("pa");
        free.id = QStringLiteral("local-free");
        free.freeOfCharge = true;
        gw.config.models.insert(free.key(), free);
        gw.start();
        const QString route = QStringLiteral("/v1/messages");
        const HttpResult refused = gw.post(route, routeBody(route, QStringLiteral("pa/not-listed")), as(m_teamKey));
        QVERIFY2(refused.status == 403, refused.body.constData());
        QCOMPARE(upstreamCalls(gw), 0);
        const QJsonObject e = refused.json().value(QStringLiteral("error")).toObject();
        QCOMPARE(e.value(QStringLiteral("type")).toString(), QStringLiteral("permission_error"));
        const QString message = e.value(QStringLiteral("message")).toString();
        QVERIFY2(message.contains(QStringLiteral("pa/not-listed")), qPrintable(message));
        QVERIFY2(message.contains(QStringLiteral("budget")), qPrintable(message));
        QVERIFY2(message.contains(QStringLiteral("team-a")), qPrintable(message));
        // A priced model is still served to the same tenant; the unpriced one to a tenant without a budget.
        QCOMPARE(gw.post(route, routeBody(route, QStringLiteral("pa/claude-a")), as(m_teamKey)).status, 200);
        QCOMPARE(gw.post(route, routeBody(route, QStringLiteral("pa/not-listed")), as(m_adminKey)).status, 200);
        QCOMPARE(gw.post(route, routeBody(route, QStringLiteral("pa/local-free")), as(m_teamKey)).status, 200);
        QCOMPARE(upstreamCalls(gw), 3);
    }

    void aRestartKeepsTheSpendAndTheNotice() {
        QTemporaryDir dir;
        const QString ledger = dir.filePath(QStringLiteral("usage.sqlite"));
        const QString route = QStringLiteral("/v1/messages");
        {
            GatewayFixture gw;
            gw.usageLedgerPath = ledger;
            addTenants(gw, 0.00001);
            gw.start();
            QCOMPARE(gw.engine().budgetWarnings().size(), 0);
            QCOMPARE(gw.post(route, routeBody(route, QStringLiteral("pa/claude-a")), as(m_teamKey)).status, 200);
            QCOMPARE(gw.engine().budgetWarnings().size(), 1); // 80 % (and 100 %) crossed
            QCOMPARE(gw.engine().budgetWarnings().first().tenant, QStringLiteral("team-a"));
        }
        GatewayFixture gw;
        gw.usageLedgerPath = ledger;
        addTenants(gw, 0.00001);
        gw.start();
        // The spend came back from the file: refused at once, and the notice is not given twice.
        QCOMPARE(gw.engine().budgetWarnings().size(), 0);
        QVERIFY(gw.engine().budgets().first().spent > 0.00001);
        QCOMPARE(gw.post(route, routeBody(route, QStringLiteral("pa/claude-a")), as(m_teamKey)).status, 429);
        QCOMPARE(gw.anthropicA.requests().size(), 0);
    }

    // The Responses API reports usage only when its answer completes; an answer the gateway cuts
    // at the client's stop sequence never does. Its tokens are estimated and spent all the same:
    // a stop sequence of the client's own is no way around its budget.
    // Cache reads and writes at the input price billed a Claude Code turn (90 000 tokens read from the
    // cache) 7x what Anthropic charges, in the ledger, the budget and pi's cost (probe K3 4). A model's
    // `cost.cacheRead` / `cost.cacheWrite` price them; absent, the input price, as before.
    void cacheTokensArePricedAtTheirOwnPrice() {
        GatewayFixture gw;
        addTenants(gw, 100);
        auto &model = gw.config.models[QStringLiteral("pa/claude-a")];
        model.costInput = 3;
        model.costOutput = 15;
        model.costCacheRead = 0.3;
        gw.anthropicA.setRawReply(anthropicAnswer("5", "200", "90000"));
        gw.start();
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("hi"), false),
                         as(m_teamKey))
                     .status,
                 200);
        const double expected = (5 * 3.0 + 90000 * 0.3 + 200 * 15.0) / 1e6;
        const double spent = gw.engine().budgets().first().spent;
        QVERIFY2(qAbs(spent - expected) < 1e-9,
                 qPrintable(QStringLiteral("billed $%1, expected $%2").arg(spent).arg(expected)));
    }

    void anAnswerCutAtAStopSequenceIsSpend() {
        GatewayFixture gw;
        addTenants(gw, 0.00001);
        gw.start();
        const QJsonObject body{{"model", "pd/resp-d"},
                               {"max_tokens", 64},
                               {"stop_sequences", QJsonArray{"STOP"}},
                               {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "alpha STOP beta"}}}}};
        const HttpResult r = gw.post(QStringLiteral("/v1/messages"), body, as(m_teamKey));
        QVERIFY2(r.status == 200, r.body.constData());
        QCOMPARE(r.json().value("stop_reason").toString(), QStringLiteral("stop_sequence"));
        const QJsonObject usage = r.json().value("usage").toObject();
        QVERIFY2(usage.value("input_tokens").toInt() > 0 && usage.value("output_tokens").toInt() > 0,
                 r.body.constData());
        QVERIFY(gw.engine().budgets().first().spent > 0.00001);
        const qsizetype calls = gw.responsesD.requests().size();
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body, as(m_teamKey)).status, 429);
        QCOMPARE(gw.responsesD.requests().size(), calls);
    }

    // 20 requests at once for a tenant at $0 of $10, each costing $2: before, all 20 were served
    // ($40). The requests in flight hold their estimates ($2: max_tokens 500 at $4000 a million), so
    // spend passes the budget by at most one request's estimate; the rest get a 429 that says why
    // and to come back in seconds. Run one after the other, they are served until the budget is
    // reached, which is refused as before.
    void parallelRequestsCannotCarrySpendPastTheBudget() {
        GatewayFixture gw;
        addTenants(gw, 10);
        auto &model = gw.config.models[QStringLiteral("pa/claude-a")];
        model.costInput = 1;
        model.costOutput = 4000;
        gw.anthropicA.setRawReply(answerOf500Tokens());
        demo::Fault paced;
        paced.chunkDelayMs = 150; // about a second an answer: all 20 overlap
        gw.anthropicA.setFault(paced);
        gw.start();
        const QString route = QStringLiteral("/v1/messages");
        QJsonObject body = GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("hi"), false);
        body.insert(QStringLiteral("max_tokens"), 500);
        const QByteArray bytes = QJsonDocument(body).toJson(QJsonDocument::Compact);
        const double estimate = (double((bytes.size() + 3) / 4) * 1 + 500.0 * 4000) / 1e6;

        // Several managers: one keeps six connections to a host, and the rest would wait in line.
        std::vector<std::unique_ptr<QNetworkAccessManager>> nams;
        QList<QNetworkReply *> replies;
        for (int i = 0; i < 20; ++i) {
            if (i % 5 == 0)
                nams.push_back(std::make_unique<QNetworkAccessManager>());
            QNetworkRequest req(QUrl(gw.baseUrl() + route));
            req.setHeader(QNetworkRequest::ContentTypeHeader, QByteArrayLiteral("application/json"));
            req.setRawHeader("authorization", "Bearer " + m_teamKey);
            replies.append(nams.back()->post(req, bytes));
        }
        int served = 0;
        int refused = 0;
        for (QNetworkReply *reply : replies) {
            const HttpResult r = gw.wait(reply);
            QVERIFY2(r.status == 200 || r.status == 429, r.body.constData());
            if (r.status == 200) {
                ++served;
                continue;
            }
            ++refused;
            QCOMPARE(r.header("x-switchman-budget"), QByteArray("in-flight"));
            QCOMPARE(r.header("retry-after"), QByteArray::number(telemetry::BudgetTracker::kInFlightRetryAfterS));
            QVERIFY(r.header("x-switchman-request-id").startsWith("req_"));
            const QJsonObject e = r.json().value(QStringLiteral("error")).toObject();
            QCOMPARE(e.value(QStringLiteral("type")).toString(), QStringLiteral("rate_limit_error"));
            QVERIFY2(e.value(QStringLiteral("message")).toString().contains(QStringLiteral("in flight")),
                     r.body.constData());
        }
        QCOMPARE(served + refused, 20);
        QVERIFY2(refused > 0, "every parallel request was served");
        QCOMPARE(gw.anthropicA.requests().size(), served); // a refused request reached no upstream
        const double spent = gw.engine().budgets().first().spent;
        QVERIFY2(spent <= 10 + estimate, qPrintable(QStringLiteral("$%1 spent of $10").arg(spent)));
        QCOMPARE(gw.engine().budgets().first().reserved, 0.0); // every request let go of its reservation

        // One at a time: served until the budget is reached, then the period's 429.
        HttpResult last;
        for (int i = 0; i < 10 && (last = gw.postRaw(route, bytes, as(m_teamKey))).status == 200; ++i) {
        }
        QCOMPARE(last.status, 429);
        QCOMPARE(last.header("x-switchman-budget"), QByteArray("exceeded"));
        QVERIFY(gw.engine().budgets().first().spent >= 10);
        QVERIFY(gw.engine().budgets().first().spent <= 10 + estimate);
    }

    // Probe K3 2: a try that the upstream billed (message_start's input, then overloaded_error) used up
    // the request's reservation, and its failover ran on none: parallel requests each cost two tries
    // on the estimate of one, and spend passed the budget by several estimates ($1.83 of $1). The
    // next try holds the estimate again or ends the request with the in-flight 429.
    void aBurstOfFailoversCannotCarrySpendPastTheBudget() {
        GatewayFixture gw;
        addTenants(gw, 10);
        for (const char *key : {"pa/claude-a", "pc/claude-c"}) {
            auto &model = gw.config.models[QLatin1String(key)];
            model.costInput = 4000;
            model.costOutput = 4000;
        }
        config::RouteConfig route;
        route.name = QStringLiteral("two");
        route.candidates = {QStringLiteral("pa/claude-a"), QStringLiteral("pc/claude-c")};
        gw.config.routes.insert(route.name, route);
        // A reports 500 input tokens ($2), then is overloaded before any content.
        gw.anthropicA.setRawReply(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":"
            "\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"stop_reason\":null,"
            "\"usage\":{\"input_tokens\":500,\"output_tokens\":1}}}\n\n"
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
            "\"message\":\"Overloaded\"}}\n\n");
        gw.anthropicC.setRawReply(answerOf500Tokens());
        demo::Fault paced;
        paced.chunkDelayMs = 150; // every try overlaps every other
        gw.anthropicA.setFault(paced);
        gw.anthropicC.setFault(paced);
        gw.start();
        QJsonObject body = GatewayFixture::anthropicBody(QStringLiteral("two"), QStringLiteral("hi"), false);
        body.insert(QStringLiteral("max_tokens"), 500);
        const QByteArray bytes = QJsonDocument(body).toJson(QJsonDocument::Compact);
        const double estimate = (double((bytes.size() + 3) / 4) + 500.0) * 4000 / 1e6;

        std::vector<std::unique_ptr<QNetworkAccessManager>> nams;
        QList<QNetworkReply *> replies;
        for (int i = 0; i < 8; ++i) {
            if (i % 4 == 0)
                nams.push_back(std::make_unique<QNetworkAccessManager>());
            QNetworkRequest req(QUrl(gw.baseUrl() + QStringLiteral("/v1/messages")));
            req.setHeader(QNetworkRequest::ContentTypeHeader, QByteArrayLiteral("application/json"));
            req.setRawHeader("authorization", "Bearer " + m_teamKey);
            replies.append(nams.back()->post(req, bytes));
        }
        int afterATry = 0;
        for (QNetworkReply *reply : replies) {
            const HttpResult r = gw.wait(reply);
            QVERIFY2(r.status == 200 || r.status == 429, r.body.constData());
            if (r.status == 429 && r.body.contains("another try of this one")) {
                ++afterATry;
                QCOMPARE(r.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("type")).toString(),
                         QStringLiteral("rate_limit_error"));
                QCOMPARE(r.header("retry-after"), QByteArray::number(telemetry::BudgetTracker::kInFlightRetryAfterS));
                // The same words as a refusal at admission: which budget, and that a retry helps.
                QCOMPARE(r.header("x-switchman-budget"), QByteArray("in-flight"));
                QCOMPARE(r.header("x-should-retry"), QByteArray("true"));
            }
        }
        QVERIFY2(gw.anthropicA.requests().size() >= 2, "the burst did not overlap");
        const double spent = gw.engine().budgets().first().spent;
        qInfo("spent $%.3f of $10, %d refused before another try", spent, afterATry);
        QVERIFY2(spent <= 10 + estimate,
                 qPrintable(QStringLiteral("$%1 spent of $10 (estimate $%2)").arg(spent).arg(estimate)));
        QVERIFY2(afterATry > 0, "no follower was refused");
        QCOMPARE(gw.engine().budgets().first().reserved, 0.0);
    }

    // Replicas that share a data folder share the ledger file. Another writer to it (a second
    // UsageLedger on the same path, standing in for a replica) spends from the same budget: what
    // it wrote counts here within a ledger read (kLedgerReadMs), and this gateway's own rows are
    // not counted twice when the file holding them is read back.
    void aReplicaSharingTheLedgerSpendsFromTheSameBudget() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clock;
        clock.setEpochMs(QDateTime::currentMSecsSinceEpoch()); // rows are stamped with the wall clock
        GatewayFixture gw;
        gw.clock = &clock;
        gw.usageLedgerPath = path;
        addTenants(gw, 10);
        gw.start();
        // The ledger's worker has run every job asked of it so far (a spend read among them), and its
        // answers have reached the engine's objects: a read is over, without waiting on time.
        const auto settle = [&gw]() {
            gw.engine().usageLedger()->flushAndWait();
            QCoreApplication::sendPostedEvents();
        };
        const QString route = QStringLiteral("/v1/messages");
        QCOMPARE(gw.post(route, routeBody(route, QStringLiteral("pa/claude-a")), as(m_teamKey)).status, 200);
        const double own = gw.engine().budgets().first().spent;
        QVERIFY(own > 0 && own < 0.01);
        clock.advance(telemetry::BudgetTracker::kLedgerReadMs); // the row goes to the file, which is read
        settle();
        QCOMPARE(gw.engine().budgets().first().spent, own);

        telemetry::UsageLedger replica({path, 400, 0, {}}, clock,
                                       [](const QString &, const QString &, const QJsonObject &) {});
        telemetry::UsageRow row;
        row.requestId = QStringLiteral("req_replica");
        row.tenant = QStringLiteral("team-a");
        row.candidate = QStringLiteral("pa/claude-a");
        row.provider = QStringLiteral("pa");
        row.input = 1000;
        row.output = 500;
        row.cost = 6;
        row.outcome = QStringLiteral("ok");
        row.atEpochMs = QDateTime::currentMSecsSinceEpoch();
        replica.append(row);
        replica.flushAndWait();
        QCOMPARE(gw.engine().budgets().first().spent, own); // not read yet: no query on the request path

        clock.advance(telemetry::BudgetTracker::kLedgerReadMs);
        settle();
        QCOMPARE(gw.engine().budgets().first().spent, own + 6); // this gateway's row once, the replica's
        // Under the budget: served. Then the replica spends the rest, and this gateway refuses.
        QCOMPARE(gw.post(route, routeBody(route, QStringLiteral("pa/claude-a")), as(m_teamKey)).status, 200);
        const double both = gw.engine().budgets().first().spent;
        QVERIFY(both > own + 6);
        row.requestId = QStringLiteral("req_replica2");
        row.cost = 4;
        replica.append(row);
        replica.flushAndWait();
        clock.advance(telemetry::BudgetTracker::kLedgerReadMs);
        settle();
        QCOMPARE(gw.engine().budgets().first().spent, both + 4);
        const int calls = upstreamCalls(gw);
        const HttpResult refused = gw.post(route, routeBody(route, QStringLiteral("pa/claude-a")), as(m_teamKey));
        QCOMPARE(refused.status, 429);
        QCOMPARE(refused.header("x-switchman-budget"), QByteArray("exceeded"));
        QCOMPARE(upstreamCalls(gw), calls);
        // Read again with nothing new: still each row once.
        for (int i = 0; i < 3; ++i) {
            clock.advance(telemetry::BudgetTracker::kLedgerReadMs);
            settle();
        }
        QCOMPARE(gw.engine().budgets().first().spent, both + 4);
        // /metrics says the same as the shared ledger (the probe saw each replica's own half).
        const HttpResult usage = adminGet(gw, QStringLiteral("/admin/usage?tenant=team-a&groupBy=tenant"));
        const double ledgerTotal =
            usage.json().value(QStringLiteral("totals")).toObject().value(QStringLiteral("cost")).toDouble();
        QVERIFY2(qAbs(ledgerTotal - (both + 4)) < 1e-9, usage.body.constData());
    }

    // kill -9 (or OOM, power loss) during a streamed answer lost it from the ledger and from the
    // budget, though the provider billed it (probe C3 4). The file such a crash leaves is the file
    // as it is while the answer streams: a copy of it taken then, opened by the next start, bills
    // the answer as "interrupted" by what was known at commit (message_start's input count), and
    // the tenant's budget counts it. The gateway that runs on bills its own row only.
    void anAnswerACrashCutIsBilledAtTheNextStart() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        const QString crashed = dir.filePath(QStringLiteral("crashed/usage.sqlite"));
        test::FakeClock clock;
        clock.setEpochMs(QDateTime::currentMSecsSinceEpoch()); // rows are stamped with the wall clock
        const QString route = QStringLiteral("/v1/messages");
        const auto priced = [this](GatewayFixture &gw) {
            addTenants(gw, 10);
            auto &model = gw.config.models[QStringLiteral("pa/claude-a")];
            model.costInput = 1000; // $ a million tokens: 1000 input tokens cost $1
            model.costOutput = 2000;
        };
        {
            GatewayFixture gw;
            priced(gw);
            gw.clock = &clock;
            gw.usageLedgerPath = path;
            gw.anthropicA.setRawReply(anthropicAnswer("1000", "500"));
            demo::Fault paced;
            paced.chunkDelayMs = 200; // the answer is still running while the test looks
            gw.anthropicA.setFault(paced);
            gw.start();
            QNetworkReply *reply = gw.postAsync(
                route, GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("hi"), true),
                as(m_teamKey));
            QByteArray got;
            QVERIFY(QTest::qWaitFor(
                [&]() {
                    got += reply->readAll();
                    return got.contains("text_delta");
                },
                10000));
            // Committed and streaming: the next batch (1 s on the gateway's clock) writes what it costs so far.
            clock.advance(telemetry::UsageLedger::kFlushMs);
            gw.engine().usageLedger()->flushAndWait();
            QVERIFY(QDir().mkpath(QFileInfo(crashed).absolutePath()));
            for (const QString &suffix : {QString(), QStringLiteral("-wal")})
                QVERIFY(QFile::copy(path + suffix, crashed + suffix)); // the file kill -9 would leave now
            const HttpResult r = gw.wait(reply);
            QCOMPARE(r.status, 200);
            QVERIFY(!got.contains("message_stop")); // the copy was taken mid-answer
            QCOMPARE(gw.engine().budgets().first().spent, (1000.0 * 1000 + 500.0 * 2000) / 1e6);
        }
        {
            // The gateway that ran on: its answer's own row, and no open row left behind.
            telemetry::UsageDatabase db;
            QString error;
            QVERIFY2(db.open(path, telemetry::UsageDatabase::Mode::ReadOnly, &error), qPrintable(error));
            const telemetry::UsageReport report = db.query({});
            QCOMPARE(report.rows.size(), 1);
            QCOMPARE(report.rows.first().outcome, QStringLiteral("ok"));
            QCOMPARE(db.openRowCount(), 0);
        }
        // The start after the crash.
        GatewayFixture gw;
        priced(gw);
        gw.clock = &clock;
        gw.usageLedgerPath = crashed;
        gw.start();
        const double estimate = (1000.0 * 1000 + 1 * 2000) / 1e6; // message_start's input, one output token so far
        QCOMPARE(gw.engine().budgets().first().tenant, QStringLiteral("team-a"));
        QCOMPARE(gw.engine().budgets().first().spent, estimate);
        const HttpResult usage = adminGet(gw, QStringLiteral("/admin/usage?tenant=team-a"));
        const QJsonArray rows = usage.json().value(QStringLiteral("rows")).toArray();
        QCOMPARE(rows.size(), 1);
        const QJsonObject row = rows.first().toObject();
        QCOMPARE(row.value(QStringLiteral("outcome")).toString(), QStringLiteral("interrupted"));
        QCOMPARE(row.value(QStringLiteral("candidate")).toString(), QStringLiteral("pa/claude-a"));
        QCOMPARE(row.value(QStringLiteral("input")).toInt(), 1000);
        QCOMPARE(row.value(QStringLiteral("cost")).toDouble(), estimate);
    }

    // Requests the gateway refuses itself made no attempt, yet did not get through (probe E4 3):
    // each has a "refused" record in /admin/attempts (the window's Attempts and "Last requests"
    // read the same records) under the id the client was given, and a log line with that id. A
    // caller without a known key is only counted.
    void refusedRequestsAreRecordedAndLogged() {
        GatewayFixture gw;
        addTenants(gw, 0.00001); // one answer of the fake upstream costs more than this
        gw.start();
        QList<QJsonObject> lines;
        connect(gw.engine().telemetry(), &telemetry::Telemetry::logLine, this,
                [&lines](const QJsonObject &l) { lines.append(l); });
        const QString messages = QStringLiteral("/v1/messages");
        const QString chat = QStringLiteral("/v1/chat/completions");
        QCOMPARE(gw.post(messages, routeBody(messages, QStringLiteral("pa/claude-a")), as(m_teamKey)).status, 200);

        const HttpResult budget = gw.post(messages, routeBody(messages, QStringLiteral("pa/claude-a")), as(m_teamKey));
        QCOMPARE(budget.status, 429);
        const HttpResult unknown = gw.post(chat, routeBody(chat, QStringLiteral("nosuch-model")), as(m_adminKey));
        QCOMPARE(unknown.status, 404);
        QJsonObject badBody = routeBody(chat, QStringLiteral("pb/gpt-b"));
        badBody.insert(QStringLiteral("messages"), 5);
        const HttpResult invalid = gw.post(chat, badBody, as(m_adminKey));
        QCOMPARE(invalid.status, 400);
        QCOMPARE(gw.post(chat, routeBody(chat, QStringLiteral("pb/gpt-b")), as("not-a-gateway-key")).status, 401);

        const QJsonArray attempts =
            adminGet(gw, QStringLiteral("/admin/attempts")).json().value(QStringLiteral("attempts")).toArray();
        QCOMPARE(attempts.size(), 4); // the served request's attempt and the three refusals; no 401
        struct Expected {
            const HttpResult *answer;
            QString tenant, model, reason, words;
        };
        const Expected expected[] = {
            {&budget, QStringLiteral("team-a"), QStringLiteral("pa/claude-a"), QStringLiteral("budget"),
             QStringLiteral("budget of $0.00 per day")},
            {&unknown, QStringLiteral("ops"), QStringLiteral("nosuch-model"), QStringLiteral("unknown_model"),
             QStringLiteral("model \"nosuch-model\" is not a route")},
            {&invalid, QStringLiteral("ops"), QStringLiteral("pb/gpt-b"), QStringLiteral("invalid_request"),
             QStringLiteral("messages")},
        };
        for (const Expected &e : expected) {
            const QString id = QString::fromLatin1(e.answer->header("x-switchman-request-id"));
            QVERIFY(id.startsWith(QStringLiteral("req_")));
            QJsonObject record;
            for (const auto &a : attempts)
                if (a.toObject().value(QStringLiteral("requestId")).toString() == id)
                    record = a.toObject();
            QVERIFY2(!record.isEmpty(), qPrintable(id + QStringLiteral(" is not in /admin/attempts")));
            QCOMPARE(record.value(QStringLiteral("outcome")).toString(), QStringLiteral("refused"));
            QCOMPARE(record.value(QStringLiteral("tenant")).toString(), e.tenant);
            QCOMPARE(record.value(QStringLiteral("requestedModel")).toString(), e.model);
            QCOMPARE(record.value(QStringLiteral("status")).toInt(), e.answer->status);
            QCOMPARE(record.value(QStringLiteral("failure")).toString(), e.reason);
            QVERIFY(record.value(QStringLiteral("candidate")).isNull()); // no candidate was tried
            QCOMPARE(record.value(QStringLiteral("attempt")).toInt(), 0);
            QVERIFY2(record.value(QStringLiteral("message")).toString().contains(e.words),
                     qPrintable(record.value(QStringLiteral("message")).toString()));

            QList<QJsonObject> logged;
            for (const auto &l : std::as_const(lines))
                if (l.value(QStringLiteral("requestId")).toString() == id)
                    logged << l;
            QCOMPARE(logged.size(), 1);
            const QJsonObject &l = logged.first();
            QCOMPARE(l.value(QStringLiteral("msg")).toString(), QStringLiteral("request refused"));
            QCOMPARE(l.value(QStringLiteral("tenant")).toString(), e.tenant);
            QCOMPARE(l.value(QStringLiteral("model")).toString(), e.model);
            QCOMPARE(l.value(QStringLiteral("status")).toInt(), e.answer->status);
            QCOMPARE(l.value(QStringLiteral("reason")).toString(), e.reason);
            QVERIFY2(l.value(QStringLiteral("error")).toString().contains(e.words),
                     qPrintable(l.value(QStringLiteral("error")).toString()));
            // A budget is the tenant's limit working, not a fault.
            QCOMPARE(l.value(QStringLiteral("level")).toString(),
                     e.answer->status == 429 ? QStringLiteral("info") : QStringLiteral("warn"));
        }
        const QString metrics = QString::fromUtf8(adminGet(gw, QStringLiteral("/metrics")).body);
        for (const char *status : {"400", "401", "404", "429"})
            QVERIFY2(
                metrics.contains(
                    QStringLiteral("switchman_refused_requests_total{status=\"%1\"} 1\n").arg(QLatin1String(status))),
                qPrintable(metrics));
        QVERIFY2(!metrics.contains(QStringLiteral("outcome=\"refused\"")), qPrintable(metrics)); // not an attempt
    }

    void metricsShowSpendAndBudget() {
        GatewayFixture gw;
        addTenants(gw, 20);
        gw.start();
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                         routeBody(QStringLiteral("/v1/messages"), QStringLiteral("pa/claude-a")), as(m_teamKey))
                     .status,
                 200);
        const QString metrics = QString::fromUtf8(adminGet(gw, QStringLiteral("/metrics")).body);
        QVERIFY2(metrics.contains(QStringLiteral("switchman_tenant_budget_usd{tenant=\"team-a\"} 20\n")),
                 qPrintable(metrics));
        const qsizetype at = metrics.indexOf(QStringLiteral("switchman_tenant_spend_usd{tenant=\"team-a\"} "));
        QVERIFY2(at >= 0, qPrintable(metrics));
        const double spent =
            metrics.mid(at).section(QLatin1Char(' '), 1, 1).section(QLatin1Char('\n'), 0, 0).toDouble();
        double rowCost = 0;
        for (const auto &row : gw.engine().telemetry()->usage())
            rowCost += row.cost;
        QVERIFY(rowCost > 0);
        QCOMPARE(spent, rowCost);
        QVERIFY(!metrics.contains(QStringLiteral("switchman_tenant_budget_usd{tenant=\"ops\"}"))); // no budget
    }

    void adminUsageGroupsAndFilters() {
        GatewayFixture gw;
        addTenants(gw, 100);
        gw.start();
        for (const auto &[route, model, key] :
             {std::tuple{QStringLiteral("/v1/messages"), QStringLiteral("pa/claude-a"), m_teamKey},
              std::tuple{QStringLiteral("/v1/chat/completions"), QStringLiteral("pb/gpt-b"), m_teamKey},
              std::tuple{QStringLiteral("/v1/chat/completions"), QStringLiteral("pb/gpt-b"), m_adminKey}})
            QCOMPARE(gw.post(route, routeBody(route, model), as(key)).status, 200);

        // Unchanged shape without parameters, plus totals.
        const QJsonObject all = adminGet(gw, QStringLiteral("/admin/usage")).json();
        const QJsonArray rows = all.value(QStringLiteral("rows")).toArray();
        QCOMPARE(rows.size(), 3);
        QCOMPARE(rows.at(0).toObject().value(QStringLiteral("candidate")).toString(), QStringLiteral("pa/claude-a"));
        QCOMPARE(rows.at(0).toObject().value(QStringLiteral("route")).toString(), QStringLiteral("pa/claude-a"));
        QCOMPARE(all.value(QStringLiteral("totals")).toObject().value(QStringLiteral("attempts")).toInt(), 3);

        const QJsonObject byProvider = adminGet(gw, QStringLiteral("/admin/usage?groupBy=provider")).json();
        const QJsonArray groups = byProvider.value(QStringLiteral("rows")).toArray();
        QCOMPARE(groups.size(), 2);
        QCOMPARE(groups.at(0).toObject().value(QStringLiteral("provider")).toString(), QStringLiteral("pa"));
        QCOMPARE(groups.at(0).toObject().value(QStringLiteral("attempts")).toInt(), 1);
        QCOMPARE(groups.at(1).toObject().value(QStringLiteral("provider")).toString(), QStringLiteral("pb"));
        QCOMPARE(groups.at(1).toObject().value(QStringLiteral("attempts")).toInt(), 2);

        const QJsonObject team =
            adminGet(gw, QStringLiteral("/admin/usage?tenant=team-a&groupBy=model&since=1d")).json();
        QCOMPARE(team.value(QStringLiteral("totals")).toObject().value(QStringLiteral("attempts")).toInt(), 2);
        const QJsonObject future = adminGet(gw, QStringLiteral("/admin/usage?since=2999-01-01")).json();
        QCOMPARE(future.value(QStringLiteral("rows")).toArray().size(), 0);
        const QJsonObject byDay = adminGet(gw, QStringLiteral("/admin/usage?groupBy=day")).json();
        QCOMPARE(
            byDay.value(QStringLiteral("rows")).toArray().first().toObject().value(QStringLiteral("day")).toString(),
            QDate::currentDate().toString(Qt::ISODate));

        // Groups are bounded (a client can name any number of models): the top `limit` by cost,
        // the rest as one "(other)" row.
        const QJsonObject top = adminGet(gw, QStringLiteral("/admin/usage?groupBy=model&limit=1")).json();
        const QJsonArray topRows = top.value(QStringLiteral("rows")).toArray();
        QCOMPARE(topRows.size(), 2);
        QCOMPARE(topRows.at(1).toObject().value(QStringLiteral("model")).toString(), QStringLiteral("(other)"));
        QCOMPARE(topRows.at(1).toObject().value(QStringLiteral("otherGroups")).toInt(), 1);
        QCOMPARE(topRows.at(0).toObject().value(QStringLiteral("attempts")).toInt() +
                     topRows.at(1).toObject().value(QStringLiteral("attempts")).toInt(),
                 3);

        QCOMPARE(adminGet(gw, QStringLiteral("/admin/usage?groupBy=week")).status, 400);
        QCOMPARE(adminGet(gw, QStringLiteral("/admin/usage?since=yesterday-ish")).status, 400);
    }

    // An upstream that reports int64-max tokens (seen from a hostile peer) must not break the
    // usage reports over that row nor lock its tenant's budget: the count is nonsense, not a bill.
    void anUpstreamsNonsenseUsageBreaksNoReportAndLocksNoBudget() {
        QTemporaryDir dir;
        const QString ledger = dir.filePath(QStringLiteral("usage.sqlite"));
        const QString route = QStringLiteral("/v1/messages");
        const QByteArray max = QByteArray::number(std::numeric_limits<qint64>::max());
        const QByteArray nonsense = anthropicAnswer(max, max, max);
        {
            GatewayFixture gw;
            gw.usageLedgerPath = ledger;
            addTenants(gw, 1000);
            gw.start();
            QCOMPARE(gw.post(route, routeBody(route, QStringLiteral("pa/claude-a")), as(m_adminKey)).status, 200);
            gw.anthropicA.setRawReply(nonsense);
            QCOMPARE(gw.post(route, routeBody(route, QStringLiteral("pa/claude-a")), as(m_teamKey)).status, 200);
            gw.anthropicA.setRawReply({});
            // The budget is not locked: the same tenant is served again.
            QCOMPARE(gw.post(route, routeBody(route, QStringLiteral("pa/claude-a")), as(m_teamKey)).status, 200);
            QVERIFY2(gw.engine().budgets().first().spent < 1,
                     qPrintable(QString::number(gw.engine().budgets().first().spent)));

            const HttpResult byTenant = adminGet(gw, QStringLiteral("/admin/usage?since=1d&groupBy=tenant"));
            QVERIFY2(byTenant.status == 200, byTenant.body.constData());
            const QJsonObject report = byTenant.json();
            QVERIFY2(!report.contains(QStringLiteral("error")), byTenant.body.constData());
            const QJsonObject totals = report.value(QStringLiteral("totals")).toObject();
            QCOMPARE(totals.value(QStringLiteral("attempts")).toInt(), 3);
            QVERIFY2(totals.value(QStringLiteral("cost")).toDouble() < 1, byTenant.body.constData());
            QVERIFY2(totals.value(QStringLiteral("input")).toDouble() < 1e6, byTenant.body.constData());
            const QJsonArray groups = report.value(QStringLiteral("rows")).toArray();
            QCOMPARE(groups.size(), 2); // the other tenant's row is still there
            QCOMPARE(groups.at(0).toObject().value(QStringLiteral("tenant")).toString(), QStringLiteral("ops"));
            QCOMPARE(groups.at(0).toObject().value(QStringLiteral("attempts")).toInt(), 1);
            QVERIFY(groups.at(0).toObject().value(QStringLiteral("cost")).toDouble() > 0);
            QCOMPARE(groups.at(1).toObject().value(QStringLiteral("attempts")).toInt(), 2);
            // The row itself was kept, with the nonsense counts as unknown (0) and the output the
            // stream showed.
            const QJsonArray rows = adminGet(gw, QStringLiteral("/admin/usage?tenant=team-a"))
                                        .json()
                                        .value(QStringLiteral("rows"))
                                        .toArray();
            QCOMPARE(rows.size(), 2);
            QCOMPARE(rows.at(0).toObject().value(QStringLiteral("cacheRead")).toInt(-1), 0);
            QVERIFY(rows.at(0).toObject().value(QStringLiteral("output")).toDouble() < 1e6);
        }
        // Nor after a restart, when the spend is summed from the file.
        GatewayFixture gw;
        gw.usageLedgerPath = ledger;
        addTenants(gw, 1000);
        gw.start();
        QVERIFY2(gw.engine().budgets().first().spent < 1,
                 qPrintable(QString::number(gw.engine().budgets().first().spent)));
        QCOMPARE(gw.post(route, routeBody(route, QStringLiteral("pa/claude-a")), as(m_teamKey)).status, 200);
    }

    // A ledger that cannot be read at start (a corrupt header here) fell back to memory, and every
    // budget started again at $0. A tenant with a budget is refused with 503 in its own format now;
    // a tenant without one is served.
    void anUnreadableLedgerRefusesTenantsWithABudget() {
        QTemporaryDir dir;
        const QString ledger = dir.filePath(QStringLiteral("usage.sqlite"));
        const QString route = QStringLiteral("/v1/chat/completions");
        {
            GatewayFixture gw;
            gw.usageLedgerPath = ledger;
            addTenants(gw, 20);
            gw.start();
            QCOMPARE(gw.post(route, routeBody(route, QStringLiteral("pb/gpt-b")), as(m_teamKey)).status, 200);
        }
        QFile f(ledger);
        QVERIFY(f.open(QIODevice::ReadWrite));
        f.write("GARBAGEGARBAGE");
        f.close();
        GatewayFixture gw;
        gw.usageLedgerPath = ledger;
        addTenants(gw, 20);
        gw.start();
        const HttpResult refused = gw.post(route, routeBody(route, QStringLiteral("pb/gpt-b")), as(m_teamKey));
        QVERIFY2(refused.status == 503, refused.body.constData());
        QCOMPARE(upstreamCalls(gw), 0);
        const QString message =
            refused.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString();
        QVERIFY2(message.contains(QStringLiteral("usage ledger unavailable: spend budgets cannot be enforced")),
                 qPrintable(message));
        QCOMPARE(gw.post(route, routeBody(route, QStringLiteral("pb/gpt-b")), as(m_adminKey)).status, 200);
        QCOMPARE(upstreamCalls(gw), 1);
        // /healthz said "ok" all along. It says the ledger is unavailable now; the reason (a path,
        // SQLite's words) only to an admin key.
        for (const QByteArray &key : {QByteArray(), m_teamKey}) {
            const QJsonObject h = healthz(gw, key);
            QCOMPARE(h.value(QStringLiteral("status")).toString(), QStringLiteral("ok")); // liveness, as before
            QCOMPARE(h.value(QStringLiteral("usage")).toString(), QStringLiteral("unavailable"));
            QVERIFY(!h.contains(QStringLiteral("usageError")));
        }
        const QJsonObject h = healthz(gw, m_adminKey);
        QCOMPARE(h.value(QStringLiteral("usage")).toString(), QStringLiteral("unavailable"));
        QVERIFY2(h.value(QStringLiteral("usageError")).toString().contains(QStringLiteral("not a database")),
                 qPrintable(h.value(QStringLiteral("usageError")).toString()));
    }

    // Probe R4 F2: the first page whole, the others garbage. The file opened, its sums failed and
    // read as $0, and a tenant over its budget (429 before the restart) was served. It is refused
    // with the same 503 as for a ledger that cannot be opened; a tenant without a budget is served.
    void aLedgerWhoseSpendCannotBeReadRefusesTenantsWithABudget() {
        QTemporaryDir dir;
        const QString ledger = dir.filePath(QStringLiteral("usage.sqlite"));
        const QString route = QStringLiteral("/v1/chat/completions");
        {
            GatewayFixture gw;
            gw.usageLedgerPath = ledger;
            addTenants(gw, 0.00001);
            gw.start();
            for (int i = 0; i < 3; ++i) // a tenant without a budget, served before and after
                QCOMPARE(gw.post(route, routeBody(route, QStringLiteral("pb/gpt-b")), as(m_adminKey)).status, 200);
            QCOMPARE(gw.post(route, routeBody(route, QStringLiteral("pb/gpt-b")), as(m_teamKey)).status, 200);
            QCOMPARE(gw.post(route, routeBody(route, QStringLiteral("pb/gpt-b")), as(m_teamKey)).status, 429);
        }
        QFile f(ledger);
        QVERIFY(f.open(QIODevice::ReadWrite));
        QVERIFY(f.size() > 8192);
        QByteArray garbage(f.size() - 4096, Qt::Uninitialized);
        quint32 x = 88172645u;
        for (char &c : garbage) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            c = char(x);
        }
        QVERIFY(f.seek(4096)); // SQLite's default page size
        QCOMPARE(f.write(garbage), garbage.size());
        f.close();
        QFile::remove(ledger + QStringLiteral("-wal"));
        QFile::remove(ledger + QStringLiteral("-shm"));
        GatewayFixture gw;
        gw.usageLedgerPath = ledger;
        addTenants(gw, 0.00001);
        gw.start();
        const int callsBefore = upstreamCalls(gw);
        const HttpResult refused = gw.post(route, routeBody(route, QStringLiteral("pb/gpt-b")), as(m_teamKey));
        QVERIFY2(refused.status == 503, refused.body.constData());
        QCOMPARE(upstreamCalls(gw), callsBefore);
        const QString message =
            refused.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString();
        QVERIFY2(message.contains(QStringLiteral("usage ledger unavailable: spend budgets cannot be enforced")),
                 qPrintable(message));
        QCOMPARE(gw.post(route, routeBody(route, QStringLiteral("pb/gpt-b")), as(m_adminKey)).status, 200);
        // /healthz says so (it said "ok"), and tells an admin why.
        QCOMPARE(healthz(gw).value(QStringLiteral("usage")).toString(), QStringLiteral("unavailable"));
        QVERIFY2(healthz(gw, m_adminKey).value(QStringLiteral("usageError")).toString().contains(ledger),
                 qPrintable(healthz(gw, m_adminKey).value(QStringLiteral("usageError")).toString()));
    }

    // A data folder that cannot be written (a volume mounted read-only, ProtectHome=read-only):
    // the ledger could not be read, every tenant with a budget got 503 for the whole session and
    // /healthz said "ok". The spend is read from the file: the tenant over its budget gets 429, as
    // before the restart, and /healthz says the ledger is read-only.
    void aLedgerInAFolderThatCannotBeWrittenKeepsItsBudgets() {
        SW_AS_UNPRIVILEGED_USER();
        QTemporaryDir dir;
        const QString folder = dir.filePath(QStringLiteral("switchman"));
        const QString ledger = folder + QStringLiteral("/usage.sqlite");
        const QString route = QStringLiteral("/v1/messages");
        double spent = 0;
        {
            GatewayFixture gw;
            gw.usageLedgerPath = ledger;
            addTenants(gw, 0.00001);
            gw.start();
            QCOMPARE(gw.post(route, routeBody(route, QStringLiteral("pa/claude-a")), as(m_teamKey)).status, 200);
            spent = gw.engine().budgets().first().spent;
            QVERIFY(spent > 0.00001);
            QCOMPARE(healthz(gw).value(QStringLiteral("usage")).toString(), QStringLiteral("ok"));
        }
        QVERIFY(::chmod(QFile::encodeName(folder).constData(), 0555) == 0);
        const auto writable = qScopeGuard([&folder]() { ::chmod(QFile::encodeName(folder).constData(), 0755); });
        GatewayFixture gw;
        gw.usageLedgerPath = ledger;
        addTenants(gw, 0.00001);
        gw.start();
        QCOMPARE(gw.engine().budgets().first().spent, spent);
        const HttpResult refused = gw.post(route, routeBody(route, QStringLiteral("pa/claude-a")), as(m_teamKey));
        QVERIFY2(refused.status == 429, refused.body.constData()); // over its budget, not "ledger unavailable"
        QCOMPARE(gw.post(route, routeBody(route, QStringLiteral("pa/claude-a")), as(m_adminKey)).status, 200);
        QCOMPARE(healthz(gw).value(QStringLiteral("usage")).toString(), QStringLiteral("read-only"));
        QVERIFY2(healthz(gw, m_adminKey).value(QStringLiteral("usageError")).toString().contains(ledger),
                 qPrintable(healthz(gw, m_adminKey).value(QStringLiteral("usageError")).toString()));
    }

    void anUnwritableLedgerStillAnswersEveryRequest() {
        QTemporaryDir dir;
        QFile blocker(dir.filePath(QStringLiteral("file")));
        QVERIFY(blocker.open(QIODevice::WriteOnly));
        blocker.close();
        GatewayFixture gw;
        gw.usageLedgerPath = dir.filePath(QStringLiteral("file/switchman/usage.sqlite"));
        QList<QJsonObject> lines;
        gw.start();
        QVERIFY(!gw.engine().usageLedger()->persistent());
        connect(gw.engine().telemetry(), &telemetry::Telemetry::logLine, this,
                [&lines](const QJsonObject &l) { lines.append(l); });
        for (int i = 0; i < 4; ++i) {
            const QString route = i % 2 ? QStringLiteral("/v1/messages") : QStringLiteral("/v1/chat/completions");
            QCOMPARE(gw.post(route, routeBody(route, QStringLiteral("chain"))).status, 200);
        }
        // The session's usage is still there, from memory.
        QCOMPARE(gw.get(QStringLiteral("/admin/usage")).json().value(QStringLiteral("rows")).toArray().size(), 4);
        for (const auto &l : lines)
            QVERIFY2(!l.value(QStringLiteral("msg")).toString().contains(QStringLiteral("usage ledger")),
                     qPrintable(l.value(QStringLiteral("msg")).toString())); // said once, at start
    }

    void aLedgerThatFillsUpStillAnswersEveryRequest() {
        QTemporaryDir dir;
        // Declared before the gateway: the ledger still logs while the engine is deleted (the rows
        // it could not write, at shutdown), and the slot below appends to this list.
        QList<QString> ledgerLines;
        GatewayFixture gw;
        gw.usageLedgerPath = dir.filePath(QStringLiteral("usage.sqlite"));
        gw.usageLedgerMaxPages = 1; // SQLite raises it to the file's size at open: a disk with no room left
        gw.start();
        QVERIFY(gw.engine().usageLedger()->persistent());
        connect(gw.engine().telemetry(), &telemetry::Telemetry::logLine, this, [&ledgerLines](const QJsonObject &l) {
            const QString msg = l.value(QStringLiteral("msg")).toString();
            if (msg.startsWith(QStringLiteral("usage ledger")))
                ledgerLines.append(msg);
        });
        int served = 0;
        for (; served < 300 && gw.engine().usageLedger()->unwrittenRows() == 0; ++served) {
            const QString route = served % 2 ? QStringLiteral("/v1/messages") : QStringLiteral("/v1/chat/completions");
            QCOMPARE(gw.post(route, routeBody(route, QStringLiteral("chain"))).status, 200);
            if (served % 10 == 9)
                gw.engine().usageLedger()->flushAndWait();
        }
        QVERIFY2(gw.engine().usageLedger()->unwrittenRows() > 0, "the file never filled up");
        for (int i = 0; i < 10; ++i) // and it keeps answering
            QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                             routeBody(QStringLiteral("/v1/messages"), QStringLiteral("chain")))
                         .status,
                     200);
        gw.engine().usageLedger()->flushAndWait();
        QCOMPARE(ledgerLines.size(), 1);
        QVERIFY2(ledgerLines.first().contains(QStringLiteral("full")), qPrintable(ledgerLines.first()));
        // With no tenants every caller is the admin: /healthz says why too.
        const QJsonObject h = healthz(gw);
        QCOMPARE(h.value(QStringLiteral("usage")).toString(), QStringLiteral("not writing"));
        QVERIFY2(h.value(QStringLiteral("usageError")).toString().contains(QStringLiteral("full")),
                 qPrintable(h.value(QStringLiteral("usageError")).toString()));
    }
};

QTEST_MAIN(TestUsageBudgets)
#include "test_usage_budgets.moc"
