// Hostile clients at the front door, on the real engine with raw sockets (a client
// library would refuse most of these bytes): identifiers and header values with
// control bytes or attacker sizes are a 400 in the client's own format before
// anything is stored or forwarded; no response header can be split; a gateway
// key never reaches a passthrough provider; two Hosts, a foreign absolute-form
// target and a chunked trailer are refused at once; pipelined requests are
// answered in order; an Idempotency-Key reused with another body is a 422. A
// request whose key does not admit it is answered on its head, before any of its
// body is taken from limits.maxBodyBytesInFlight.
#include "core/http/socket_read.h"
#include "core/server/connection_guard.h"
#include "core/telemetry/telemetry.h"
#include "gateway_fixture.h"
#include "raw_http_client.h"
#include "signal_wait.h"

#include <QCryptographicHash>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QPointer>
#include <QTcpSocket>
#include <QTest>
#include <QUrl>

#include <algorithm>
#include <memory>
#include <vector>

using namespace sw;
using namespace sw::test;

namespace {
const QByteArray kAliceKey = "sm-alice-test-key-000000000000000000";
const QByteArray kBobKey = "sm-bob-test-key-1111111111111111111111";
const QByteArray kOwnProviderKey = "own-provider-key-for-tests";
const QByteArray kRootKey = "sm-root-test-key-2222222222222222222222";

const char *const kRoutes[] = {"/v1/messages", "/v1/chat/completions", "/v1/responses", "/v1/pi/stream"};

void addTenant(config::Config &c, const QString &name, const QByteArray &key, bool admin = false) {
    config::TenantConfig t;
    t.name = name;
    t.admin = admin;
    t.keyHashes = {QStringLiteral("sha256:") +
                   QString::fromLatin1(QCryptographicHash::hash(key, QCryptographicHash::Sha256).toHex())};
    c.tenants.insert(name, t);
}

// A chat body for `route` naming `model` (pi's field is given as `modelField`).
QByteArray chatBody(const QString &route, const QString &model, const QString &modelField = QStringLiteral("model")) {
    QJsonObject body;
    if (route == QLatin1String("/v1/messages"))
        body = GatewayFixture::anthropicBody(model, QStringLiteral("hi"), false);
    else if (route == QLatin1String("/v1/chat/completions"))
        body = GatewayFixture::openaiBody(model, QStringLiteral("hi"), false);
    else if (route == QLatin1String("/v1/responses"))
        body = {{QStringLiteral("model"), model}, {QStringLiteral("input"), QStringLiteral("hi")}};
    else
        body = {{modelField, model},
                {QStringLiteral("context"),
                 QJsonObject{{QStringLiteral("messages"),
                              QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                                     {QStringLiteral("content"), QStringLiteral("hi")},
                                                     {QStringLiteral("timestamp"), 0}}}}}}};
    return QJsonDocument(body).toJson(QJsonDocument::Compact);
}

QByteArray post(quint16 port, const QByteArray &path, const QByteArray &body, const QByteArray &extraHeaders = {}) {
    return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + QByteArray::number(port) +
           "\r\nContent-Type: application/json\r\nContent-Length: " + QByteArray::number(body.size()) + "\r\n" +
           extraHeaders + "\r\n" + body;
}

struct RawAnswer {
    int status = 0;
    QByteArray head;
    QByteArray body;
    QJsonObject json;
};

RawAnswer exchange(quint16 port, const QByteArray &request) {
    RawHttpClient c(port);
    RawAnswer a;
    if (!c.waitConnected())
        return a;
    c.send(request);
    c.waitResponse(8000);
    a.status = c.status();
    a.head = c.head();
    a.body = c.body();
    a.json = QJsonDocument::fromJson(a.body).object();
    return a;
}

// The error body is the one the client of `route` reads: Anthropic's {"type":"error",...},
// OpenAI's {"error":{...,"code"}}, pi's {"error":{type,message}}.
bool inClientFormat(const QString &route, const QJsonObject &json, const QString &errorType) {
    const QJsonObject error = json.value(QStringLiteral("error")).toObject();
    if (error.value(QStringLiteral("type")).toString() != errorType ||
        error.value(QStringLiteral("message")).toString().isEmpty())
        return false;
    if (route == QLatin1String("/v1/messages"))
        return json.value(QStringLiteral("type")).toString() == QLatin1String("error");
    if (route == QLatin1String("/v1/pi/stream"))
        return !json.contains(QStringLiteral("type")) && !error.contains(QStringLiteral("code"));
    return !json.contains(QStringLiteral("type")) && error.contains(QStringLiteral("code"));
}

QString messageOf(const QJsonObject &json) {
    return json.value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString();
}

int upstreamRequests(GatewayFixture &gw) {
    return int(gw.anthropicA.requests().size() + gw.openaiB.requests().size() + gw.anthropicC.requests().size() +
               gw.responsesD.requests().size() + gw.googleE.requests().size());
}

// Header lines of a response head, lower-cased names: a split value would show up as its own line.
QList<QByteArray> headerNames(const QByteArray &head) {
    QList<QByteArray> names;
    const QList<QByteArray> lines = head.split('\n');
    for (qsizetype i = 1; i < lines.size(); ++i)
        names.append(lines[i].left(lines[i].indexOf(':')).trimmed().toLower());
    return names;
}

// Whole responses (Content-Length framed) in the order they came on one connection.
QList<QByteArray> responsesIn(const QByteArray &stream) {
    QList<QByteArray> out;
    qsizetype at = 0;
    while (at < stream.size()) {
        const qsizetype end = stream.indexOf("\r\n\r\n", at);
        if (end < 0)
            break;
        const QByteArray head = stream.mid(at, end - at).toLower();
        const qsizetype cl = head.indexOf("content-length:");
        const qint64 length = cl < 0 ? 0 : head.mid(cl + 15, head.indexOf('\n', cl) - cl - 15).trimmed().toLongLong();
        if (stream.size() < end + 4 + length)
            break;
        out.append(stream.mid(at, end + 4 + length - at));
        at = end + 4 + length;
    }
    return out;
}
} // namespace

class TestHostileFront : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Item 2: names the gateway keeps in its attempt history and echoes in headers.
    void oversizedOrControlModelNamesAre400BeforeAnythingIsStored_data() {
        QTest::addColumn<QString>("route");
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("model");
        for (const char *route : kRoutes) {
            QTest::addRow("%s 257 bytes", route) << route << "model" << QString(257, QLatin1Char('m'));
            QTest::addRow("%s 1 MiB", route) << route << "model" << QString(1 << 20, QLatin1Char('m'));
            QTest::addRow("%s 129 two-byte characters", route) << route << "model" << QString(129, QChar(0xe9));
            QTest::addRow("%s SOH", route) << route << "model" << QStringLiteral("chain\x01");
            QTest::addRow("%s DEL", route) << route << "model" << QStringLiteral("chain\x7f");
            QTest::addRow("%s C1 NEL", route) << route << "model" << (QStringLiteral("chain") + QChar(0x85));
            QTest::addRow("%s line separator", route) << route << "model" << (QStringLiteral("chain") + QChar(0x2028));
        }
        QTest::addRow("pi modelId 257 bytes") << "/v1/pi/stream"
                                              << "modelId" << QString(257, QLatin1Char('m'));
        QTest::addRow("pi modelId LF") << "/v1/pi/stream"
                                       << "modelId" << QStringLiteral("chain\n: fake");
    }
    void oversizedOrControlModelNamesAre400BeforeAnythingIsStored() {
        QFETCH(QString, route);
        QFETCH(QString, field);
        QFETCH(QString, model);
        GatewayFixture gw;
        gw.start();
        const quint16 port = gw.engine().port();
        const RawAnswer a = exchange(port, post(port, route.toLatin1(), chatBody(route, model, field)));
        QCOMPARE(a.status, 400);
        QVERIFY2(inClientFormat(route, a.json, QStringLiteral("invalid_request_error")),
                 QJsonDocument(a.json).toJson().constData());
        QVERIFY2(messageOf(a.json).startsWith(field + QLatin1Char(' ')), qPrintable(messageOf(a.json)));
        QVERIFY(messageOf(a.json).size() < 200); // says what is wrong, never quotes the name back
        QVERIFY(!a.head.contains(model.left(64).toUtf8()));
        // Recorded as a refused request (its record and log line), without the name.
        const auto attempts = gw.engine().telemetry()->attempts(-1);
        QCOMPARE(attempts.size(), 1);
        QCOMPARE(attempts.first().outcome, telemetry::AttemptOutcome::Refused);
        QCOMPARE(attempts.first().status, 400);
        QVERIFY(attempts.first().requestedModel.isEmpty());
        QVERIFY(!attempts.first().message.contains(model.left(64)));
        QCOMPARE(gw.engine().marks().size(), 0);
        QCOMPARE(upstreamRequests(gw), 0);
    }

    // pi's modelId is no other route's: an unrelated member of that name refused a good request,
    // and labelled its refusal in the attempt history (probe T3 F3).
    void modelIdIsReadOnPisRouteAlone() {
        GatewayFixture gw;
        gw.start();
        const quint16 port = gw.engine().port();
        for (const char *route : {"/v1/chat/completions", "/v1/messages", "/v1/responses"}) {
            QJsonObject body =
                QJsonDocument::fromJson(chatBody(QString::fromLatin1(route), QStringLiteral("chain"))).object();
            body.insert(QStringLiteral("modelId"),
                        QStringLiteral("label\nof my choosing") + QString(300, QLatin1Char('x')));
            const RawAnswer a = exchange(port, post(port, route, QJsonDocument(body).toJson(QJsonDocument::Compact)));
            QVERIFY2(a.status == 200, a.head.constData());
        }
        for (const auto &attempt : gw.engine().telemetry()->attempts(-1))
            QCOMPARE(attempt.requestedModel, QStringLiteral("chain"));
    }

    void modelNamesAtTheLimitStillRoute() {
        GatewayFixture gw;
        config::RouteConfig route;
        route.name = QString(256, QLatin1Char('r'));
        route.candidates = {QStringLiteral("pa/claude-a")};
        gw.config.routes.insert(route.name, route);
        gw.start();
        const quint16 port = gw.engine().port();
        const RawAnswer a =
            exchange(port, post(port, "/v1/messages", chatBody(QStringLiteral("/v1/messages"), route.name)));
        QCOMPARE(a.status, 200);
        QCOMPARE(gw.anthropicA.requests().size(), 1);
    }

    // A model name past ASCII went into x-litellm-model-id and x-switchman-candidate as raw UTF-8,
    // which the SDKs read as Latin-1: a client asking for "pb/gpt-ü" was told "pb/gpt-Ã¼" (probe J3 2).
    // Those bytes are percent-encoded; the JSON body names it as it is.
    void aModelNamePastAsciiIsPercentEncodedInHeaders() {
        GatewayFixture gw;
        gw.start();
        const QString model = QStringLiteral("pb/gpt-\u00fc");
        const auto r = gw.post(QStringLiteral("/v1/chat/completions"),
                               GatewayFixture::openaiBody(model, QStringLiteral("hi"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pb/gpt-%C3%BC"));
        QCOMPARE(r.header("x-litellm-model-id"), QByteArray("pb/gpt-%C3%BC"));
        QCOMPARE(QUrl::fromPercentEncoding(r.header("x-switchman-candidate")), model);
        // A plain name is written as it is.
        const auto plain = gw.post(QStringLiteral("/v1/chat/completions"),
                                   GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), false));
        QCOMPARE(plain.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
    }

    // Item 4, on the way in: the classic splitting payload, on every chat route.
    void modelWithCrLfNeverBecomesAHeader_data() {
        QTest::addColumn<QString>("route");
        for (const char *route : kRoutes)
            QTest::addRow("%s", route) << route;
    }
    void modelWithCrLfNeverBecomesAHeader() {
        QFETCH(QString, route);
        GatewayFixture gw;
        gw.start();
        const quint16 port = gw.engine().port();
        const QString model = QStringLiteral("nosuch\r\nSet-Cookie: injected=1");
        RawHttpClient c(port);
        QVERIFY(c.waitConnected());
        // Twice on one keep-alive connection: a split could also inject a whole second response.
        const QByteArray request = post(port, route.toLatin1(), chatBody(route, model));
        c.send(request + request);
        QVERIFY(waitUntil([&c]() { return responsesIn(c.received()).size() == 2 || c.closed(); }, 8000));
        const QList<QByteArray> answers = responsesIn(c.received());
        QCOMPARE(answers.size(), 2);
        for (const QByteArray &answer : answers) {
            QVERIFY2(answer.startsWith("HTTP/1.1 400"), answer.constData());
            const QByteArray head = answer.left(answer.indexOf("\r\n\r\n"));
            QVERIFY2(!headerNames(head).contains("set-cookie"), head.constData());
            QVERIFY2(!head.toLower().contains("injected"), head.constData());
        }
        QVERIFY(!c.received().toLower().contains("\r\nset-cookie"));
        QCOMPARE(upstreamRequests(gw), 0);
    }

    // Item 4, on the way out: the one place that writes headers encodes what it is given, whatever
    // the source (here a candidate name from the configuration). A value of nothing but control
    // bytes is written three times its size: the header block is sized for that in advance, and
    // the ASan run checks the bound.
    void headerValuesAreMadeSafeWhereHeadersAreWritten_data() {
        QTest::addColumn<QString>("providerId");
        QTest::addColumn<QByteArray>("written");
        QTest::addRow("a splitting payload")
            << QStringLiteral("bad\r\nSet-Cookie: injected=1") << QByteArray("bad%0D%0ASet-Cookie: injected=1");
        QTest::addRow("300 control bytes") << QString(300, QChar(0x01)) << QByteArray("%01").repeated(300);
    }
    void headerValuesAreMadeSafeWhereHeadersAreWritten() {
        QFETCH(QString, providerId);
        QFETCH(QByteArray, written);
        GatewayFixture gw;
        // The model id goes upstream (the fake refuses control bytes too); the provider id only names it.
        config::ProviderConfig provider = gw.config.providers.value(QStringLiteral("pa"));
        provider.id = providerId;
        gw.config.providers.insert(provider.id, provider);
        config::ModelConfig bad = gw.config.models.value(QStringLiteral("pa/claude-a"));
        bad.provider = provider.id;
        gw.config.models.insert(bad.key(), bad);
        config::RouteConfig route;
        route.name = QStringLiteral("odd");
        route.candidates = {bad.key()};
        gw.config.routes.insert(route.name, route);
        gw.start();
        const quint16 port = gw.engine().port();
        const RawAnswer a =
            exchange(port, post(port, "/v1/messages", chatBody(QStringLiteral("/v1/messages"), route.name)));
        QVERIFY2(a.status == 200, qPrintable(QString::number(a.status) + QLatin1Char(' ') + QString::fromUtf8(a.body)));
        QVERIFY2(!headerNames(a.head).contains("set-cookie"), a.head.constData());
        QVERIFY2(a.head.contains("x-switchman-candidate: " + written + "/claude-a"), a.head.constData());
    }

    // Item 5: forwarded header values with control bytes.
    void controlBytesInForwardedHeadersAre400InTheClientsFormat_data() {
        QTest::addColumn<QString>("route");
        QTest::addColumn<QByteArray>("header");
        QTest::addColumn<QByteArray>("value");
        const QList<QPair<QByteArray, QByteArray>> cases = {
            {"anthropic-beta", QByteArray("tools-2024-04-04\rX-Injected: 1")},
            {"anthropic-version", QByteArray("2023-06-01\x01")},
            {"anthropic-version", QByteArray("2023-06-01\x7f")},
            {"OpenAI-Beta", QByteArray("assistants=v2\rx")},
            {"Authorization", QByteArray("Bearer own\rkey")},
            {"x-api-key", QByteArray("own\x1bkey")},
            {"x-switchman-key", QByteArray("sm-\x02")},
            {"Idempotency-Key", QByteArray("k\rEvil: 1")},
        };
        for (const char *route : kRoutes)
            for (const auto &[header, value] : cases)
                QTest::addRow("%s %s %s", route, header.constData(), value.toPercentEncoding().right(6).constData())
                    << route << header << value;
    }
    void controlBytesInForwardedHeadersAre400InTheClientsFormat() {
        QFETCH(QString, route);
        QFETCH(QByteArray, header);
        QFETCH(QByteArray, value);
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("passthrough")};
        gw.start();
        const quint16 port = gw.engine().port();
        const RawAnswer a = exchange(port, post(port, route.toLatin1(), chatBody(route, QStringLiteral("chain")),
                                                header + ": " + value + "\r\n"));
        QCOMPARE(a.status, 400);
        QVERIFY2(inClientFormat(route, a.json, QStringLiteral("invalid_request_error")),
                 QJsonDocument(a.json).toJson().constData());
        QVERIFY2(messageOf(a.json).contains(QString::fromLatin1(header.toLower())), qPrintable(messageOf(a.json)));
        QCOMPARE(upstreamRequests(gw), 0);
        QCOMPARE(gw.engine().telemetry()->attempts(-1).size(), 0);
    }

    // Probe Y2: a head with a bare CR or a NUL in a field was answered 400 by the router with the
    // connection kept, and the next request was read where the refused head's Content-Length said
    // it starts: a boundary that whatever reads the head otherwise (a proxy in front that ends the
    // line at the CR) puts elsewhere. Refused on the head now, and the connection closed: what was
    // pipelined behind it is never run.
    void aHeadWithAControlByteIsRefusedAndTheConnectionClosed_data() {
        QTest::addColumn<QByteArray>("value");
        QTest::addRow("bare CR") << QByteArray("a\rContent-Length: 0");
        QTest::addRow("NUL") << QByteArray("a\0b", 3);
        QTest::addRow("ESC") << QByteArray("a\x1b[31m");
    }
    void aHeadWithAControlByteIsRefusedAndTheConnectionClosed() {
        QFETCH(QByteArray, value);
        GatewayFixture gw;
        gw.start();
        const quint16 port = gw.engine().port();
        RawHttpClient c(port);
        QVERIFY(c.waitConnected());
        c.send(post(port, "/v1/messages", chatBody(QStringLiteral("/v1/messages"), QStringLiteral("chain")),
                    "X-Note: " + value + "\r\n") +
               "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        QVERIFY2(c.waitClosed(5000), c.received().constData());
        const QList<QByteArray> answers = responsesIn(c.received());
        QCOMPARE(answers.size(), 1);
        QVERIFY2(answers[0].startsWith("HTTP/1.1 400"), answers[0].constData());
        const QJsonObject json = QJsonDocument::fromJson(answers[0].mid(answers[0].indexOf("\r\n\r\n") + 4)).object();
        QVERIFY2(inClientFormat(QStringLiteral("/v1/messages"), json, QStringLiteral("invalid_request_error")),
                 answers[0].constData());
        QVERIFY2(messageOf(json).contains(QStringLiteral("x-note")), qPrintable(messageOf(json)));
        QCOMPARE(upstreamRequests(gw), 0);
    }

    void cleanForwardedHeadersStillReachTheUpstream() {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("passthrough")};
        gw.start();
        const quint16 port = gw.engine().port();
        const RawAnswer a = exchange(
            port, post(port, "/v1/messages", chatBody(QStringLiteral("/v1/messages"), QStringLiteral("chain")),
                       "anthropic-beta: tools-2024-04-04,\tprompt-caching\r\nx-api-key: " + kOwnProviderKey + "\r\n"));
        QCOMPARE(a.status, 200);
        QCOMPARE(gw.anthropicA.requests().size(), 1);
        QCOMPARE(gw.anthropicA.requests().first().header("x-api-key"), kOwnProviderKey);
        QVERIFY(gw.anthropicA.requests().first().header("anthropic-beta").startsWith("tools-2024-04-04"));
    }

    // Item 8: a gateway key in the provider-key slot never leaves the machine.
    void gatewayKeyInTheProviderSlotIs400AndNeverForwarded_data() {
        QTest::addColumn<QString>("route");
        QTest::addColumn<QByteArray>("header");
        QTest::addColumn<QByteArray>("value");
        for (const char *route : {"/v1/messages", "/v1/chat/completions"}) {
            QTest::addRow("%s own key as x-api-key", route) << route << QByteArray("x-api-key") << kAliceKey;
            QTest::addRow("%s own key as bearer", route)
                << route << QByteArray("Authorization") << "Bearer " + kAliceKey;
            QTest::addRow("%s other tenant's key as bearer", route)
                << route << QByteArray("Authorization") << "bearer " + kBobKey;
            QTest::addRow("%s other tenant's key as x-api-key", route) << route << QByteArray("x-api-key") << kBobKey;
        }
    }
    void gatewayKeyInTheProviderSlotIs400AndNeverForwarded() {
        QFETCH(QString, route);
        QFETCH(QByteArray, header);
        QFETCH(QByteArray, value);
        GatewayFixture gw;
        addTenant(gw.config, QStringLiteral("alice"), kAliceKey);
        addTenant(gw.config, QStringLiteral("bob"), kBobKey);
        for (const QString &p : {QStringLiteral("pa"), QStringLiteral("pb")})
            gw.config.providers[p].credentials = {QStringLiteral("passthrough")};
        gw.start();
        const quint16 port = gw.engine().port();
        const RawAnswer a =
            exchange(port, post(port, route.toLatin1(), chatBody(route, QStringLiteral("chain")),
                                "x-switchman-key: " + kAliceKey + "\r\n" + header + ": " + value + "\r\n"));
        QCOMPARE(a.status, 400);
        QVERIFY2(inClientFormat(route, a.json, QStringLiteral("invalid_request_error")),
                 QJsonDocument(a.json).toJson().constData());
        QVERIFY2(messageOf(a.json).contains(QString::fromLatin1(header)) &&
                     messageOf(a.json).contains(QStringLiteral("gateway key")),
                 qPrintable(messageOf(a.json)));
        QVERIFY(!QJsonDocument(a.json).toJson().contains(kAliceKey));
        QCOMPARE(upstreamRequests(gw), 0);

        // The caller's own provider key in that slot is still forwarded: that is what the slot is for.
        const RawAnswer ok =
            exchange(port, post(port, route.toLatin1(), chatBody(route, QStringLiteral("chain")),
                                "x-switchman-key: " + kAliceKey + "\r\n" + header + ": " +
                                    (header == "x-api-key" ? kOwnProviderKey : "Bearer " + kOwnProviderKey) + "\r\n"));
        QCOMPARE(ok.status, 200);
        QCOMPARE(gw.anthropicA.requests().size(), 1);
        const demo::RecordedRequest sent = gw.anthropicA.requests().first(); // a copy: requests() returns a temporary
        QVERIFY2(sent.header("x-api-key") == kOwnProviderKey || sent.header("authorization").endsWith(kOwnProviderKey),
                 sent.header("x-api-key").constData());
        for (const auto &h : sent.headers) {
            QVERIFY(!h.second.contains(kAliceKey));
            QVERIFY(!h.second.contains(kBobKey));
        }
    }

    // Item 9.
    void ambiguousHostsAre400_data() {
        QTest::addColumn<QByteArray>("requestLine");
        QTest::addColumn<QByteArray>("hosts");
        QTest::addColumn<int>("status");
        QTest::addRow("two Host headers, ours first")
            << QByteArray("GET /healthz HTTP/1.1") << QByteArray("Host: 127.0.0.1:%PORT\r\nHost: evil.example\r\n")
            << 400;
        QTest::addRow("two Host headers, same value")
            << QByteArray("GET /healthz HTTP/1.1") << QByteArray("Host: 127.0.0.1:%PORT\r\nhost: 127.0.0.1:%PORT\r\n")
            << 400;
        QTest::addRow("absolute-form, foreign host")
            << QByteArray("GET http://evil.example/healthz HTTP/1.1") << QByteArray("Host: 127.0.0.1:%PORT\r\n") << 400;
        QTest::addRow("absolute-form, foreign host, no Host")
            << QByteArray("GET http://evil.example/healthz HTTP/1.1") << QByteArray() << 400;
        QTest::addRow("absolute-form, https to us") << QByteArray("GET https://127.0.0.1:%PORT/healthz HTTP/1.1")
                                                    << QByteArray("Host: 127.0.0.1:%PORT\r\n") << 400;
        QTest::addRow("absolute-form naming us") << QByteArray("GET http://127.0.0.1:%PORT/healthz HTTP/1.1")
                                                 << QByteArray("Host: 127.0.0.1:%PORT\r\n") << 200;
        QTest::addRow("one Host") << QByteArray("GET /healthz HTTP/1.1") << QByteArray("Host: 127.0.0.1:%PORT\r\n")
                                  << 200;
    }
    void ambiguousHostsAre400() {
        QFETCH(QByteArray, requestLine);
        QFETCH(QByteArray, hosts);
        QFETCH(int, status);
        GatewayFixture gw;
        gw.start();
        const QByteArray port = QByteArray::number(gw.engine().port());
        requestLine.replace("%PORT", port);
        hosts.replace("%PORT", port);
        RawHttpClient c(gw.engine().port());
        QVERIFY(c.waitConnected());
        c.send(requestLine + "\r\n" + hosts + "\r\n");
        QVERIFY(c.waitResponse());
        QCOMPARE(c.status(), status);
        if (status == 400) {
            QVERIFY2(c.body().contains("Host") || c.body().contains("host"), c.body().constData());
            QVERIFY(c.waitClosed());
        }
    }

    // Qt reads "//x/admin/marks" as the authority x and the path /admin/marks, and decodes %2F: such
    // a target is a path no route has (RFC 9112 3.2.1), never served as the shorter one.
    void pathsQtWouldReadAsOthersAre400_data() {
        QTest::addColumn<QByteArray>("target");
        QTest::addColumn<int>("status");
        QTest::addColumn<QByteArray>("said");
        QTest::addRow("a base URL ending in '/'") << QByteArray("//v1/models") << 400 << QByteArray("base URL");
        QTest::addRow("an authority before /admin")
            << QByteArray("//x/admin/marks") << 400 << QByteArray("//x/admin/marks starts with");
        QTest::addRow("an encoded slash") << QByteArray("/admin%2Fmarks") << 400 << QByteArray("%2F");
        QTest::addRow("an encoded slash, lower case") << QByteArray("/v1%2fmodels") << 400 << QByteArray("%2F");
        QTest::addRow("an encoded slash in the query")
            << QByteArray("/healthz?next=%2Fadmin") << 200 << QByteArray("\"status\"");
    }
    void pathsQtWouldReadAsOthersAre400() {
        QFETCH(QByteArray, target);
        QFETCH(int, status);
        QFETCH(QByteArray, said);
        GatewayFixture gw;
        gw.start();
        RawHttpClient c(gw.engine().port());
        QVERIFY(c.waitConnected());
        c.send("GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        QVERIFY(c.waitResponse());
        QCOMPARE(c.status(), status);
        QVERIFY2(c.body().contains(said), c.body().constData());
    }

    // HEAD is GET without a body (RFC 9110 9.1, 9.3.2) on every resource that answers GET; the
    // answer that follows on the same connection is read right (no body was sent for the HEAD).
    void headIsAnsweredWhereGetIs_data() {
        QTest::addColumn<QByteArray>("path");
        QTest::addColumn<int>("status");
        QTest::addRow("models") << QByteArray("/v1/models") << 200;
        QTest::addRow("metrics") << QByteArray("/metrics") << 200;
        QTest::addRow("marks") << QByteArray("/admin/marks") << 200;
        QTest::addRow("attempts") << QByteArray("/admin/attempts") << 200;
        QTest::addRow("the event feed, which never ends") << QByteArray("/admin/events") << 405;
        QTest::addRow("a chat route") << QByteArray("/v1/chat/completions") << 405;
    }
    void headIsAnsweredWhereGetIs() {
        QFETCH(QByteArray, path);
        QFETCH(int, status);
        GatewayFixture gw;
        gw.start();
        RawHttpClient c(gw.engine().port());
        QVERIFY(c.waitConnected());
        c.send("HEAD " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        QVERIFY(waitUntil([&c]() { return c.received().contains("\"status\":\"ok\"") || c.closed(); }, 5000));
        const QByteArray got = c.received();
        QVERIFY2(got.startsWith("HTTP/1.1 " + QByteArray::number(status) + ' '), got.constData());
        const qsizetype headEnd = got.indexOf("\r\n\r\n");
        QVERIFY2(got.mid(headEnd + 4).startsWith("HTTP/1.1 200 "), got.constData()); // no body between
        if (status == 405)
            QVERIFY2(got.left(headEnd).toLower().contains("\r\nallow: "), got.constData());
    }

    // Item 10: the slow answer first, then the quick one, on one connection.
    void pipelinedRequestsAreAnsweredInOrder() {
        GatewayFixture gw;
        demo::Fault slow;
        slow.chunkDelayMs = 150;
        gw.anthropicA.setFault(slow);
        gw.start();
        const quint16 port = gw.engine().port();
        RawHttpClient c(port);
        QVERIFY(c.waitConnected());
        const QByteArray health = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
        c.send(post(port, "/v1/messages", chatBody(QStringLiteral("/v1/messages"), QStringLiteral("chain"))) + health +
               post(port, "/v1/chat/completions",
                    chatBody(QStringLiteral("/v1/chat/completions"), QStringLiteral("pb/gpt-b"))) +
               health);
        QVERIFY(waitUntil([&c]() { return responsesIn(c.received()).size() == 4 || c.closed(); }, 15000));
        const QList<QByteArray> answers = responsesIn(c.received());
        QCOMPARE(answers.size(), 4);
        QVERIFY2(answers[0].contains("\"type\":\"message\"") && answers[0].contains("pa/claude-a"),
                 answers[0].constData());
        QVERIFY2(answers[1].contains("\"status\":\"ok\""), answers[1].constData());
        QVERIFY2(answers[2].contains("chat.completion") && answers[2].contains("pb/gpt-b"), answers[2].constData());
        QVERIFY2(answers[3].contains("\"status\":\"ok\""), answers[3].constData());
        QVERIFY(!c.closed()); // kept alive: nothing was refused
    }

    // Held back while the first is answered, a pipelined request still meets every listener limit.
    void pipelinedOversizedRequestIsRefusedAfterTheFirstAnswer() {
        GatewayFixture gw;
        gw.config.limits.maxBodyBytes = 4096;
        demo::Fault slow;
        slow.chunkDelayMs = 100;
        gw.anthropicA.setFault(slow);
        gw.start();
        const quint16 port = gw.engine().port();
        RawHttpClient c(port);
        QVERIFY(c.waitConnected());
        c.send(post(port, "/v1/messages", chatBody(QStringLiteral("/v1/messages"), QStringLiteral("chain"))) +
               "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               "Content-Length: 100000\r\n\r\n" +
               QByteArray(2000, 'x'));
        QVERIFY(waitUntil([&c]() { return c.closed(); }, 10000));
        const QList<QByteArray> answers = responsesIn(c.received());
        QCOMPARE(answers.size(), 2);
        QVERIFY2(answers[0].startsWith("HTTP/1.1 200") && answers[0].contains("pa/claude-a"), answers[0].constData());
        QVERIFY2(answers[1].startsWith("HTTP/1.1 413") && answers[1].contains("maxBodyBytes"), answers[1].constData());
        QCOMPARE(gw.anthropicA.requests().size(), 1);
    }

    // A pipelined request is not read while the one before it is answered. Before, the connection
    // read the whole next request into memory while it waited (up to maxBodyBytes per connection,
    // outside limits.maxBodyBytesInFlight); now it takes 16 KiB and the rest waits in the kernel:
    // the client's sending stalls until the first answer is complete, then goes on.
    void aPipelinedBodyWaitsInTheKernelWhileTheFirstIsAnswered() {
        GatewayFixture gw;
        gw.config.limits.maxBodyBytes = 24 * 1024 * 1024;
        demo::Fault slow;
        slow.chunkDelayMs = 250;
        gw.anthropicA.setFault(slow);
        gw.start();
        const quint16 port = gw.engine().port();
        RawHttpClient c(port);
        QVERIFY(c.waitConnected());
        QJsonObject first = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("hi"), true);
        QJsonObject bigBody = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("hi"), false);
        bigBody.insert(QStringLiteral("system"), QString(16 * 1024 * 1024, u'z')); // a long prompt, not echoed
        const QByteArray big = QJsonDocument(bigBody).toJson(QJsonDocument::Compact);
        const qint64 total = c.socket().bytesToWrite();
        c.send(post(port, "/v1/messages", QJsonDocument(first).toJson(QJsonDocument::Compact)) +
               post(port, "/v1/messages", big));
        // The first answer has begun, well after the client wrote everything it could.
        QVERIFY(waitUntil([&c]() { return c.received().contains("content_block_delta"); }, 10000));
        const qint64 unsent = c.socket().bytesToWrite() - total;
        qInfo("while the first answer streams, %lld KiB of the next request are not taken", unsent / 1024);
        QVERIFY2(unsent > 4 * 1024 * 1024, qPrintable(QString::number(unsent)));
        QCOMPARE(gw.anthropicA.requests().size(), 1);
        // Then the second is read and answered, in order.
        const auto second = [&c]() {
            const QByteArray all = c.received();
            const qsizetype at = all.indexOf("HTTP/1.1 ", all.indexOf("message_stop"));
            return at < 0 ? QByteArray() : all.mid(at);
        };
        QVERIFY(waitUntil([&]() { return second().contains("\"type\":\"message\"") || c.closed(); }, 20000));
        QVERIFY2(second().startsWith("HTTP/1.1 200"), second().left(600).constData());
        QCOMPARE(gw.anthropicA.requests().size(), 2);
        QCOMPARE(gw.anthropicA.requests().last().body.size() > 16 * 1024 * 1024, true);
    }

    // Parked with a full buffer, the connection was read no more, so a client that pipelined more
    // than it takes (16 KiB) and then left went unnoticed until the answer was written: the upstream
    // ran on to its budget and was marked, the next candidate was asked for nobody (probe V3 1). The
    // kernel is asked while the answer runs: the client is heard gone within the check's second.
    void aClientThatPipelinedMuchAndLeftIsHeardGone() {
        GatewayFixture gw;
        demo::Fault stall;
        stall.kind = demo::Fault::StallBeforeHeaders;
        gw.anthropicA.setFault(stall);
        gw.start();
        const quint16 port = gw.engine().port();
        RawHttpClient c(port);
        QVERIFY(c.waitConnected());
        QJsonObject bigBody = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("hi"), false);
        // Over the 16 KiB the connection takes, within what the kernel holds: the client's end
        // reaches the gateway's kernel behind it (a client whose end waits in its own send queue
        // cannot be heard before its bytes are read).
        bigBody.insert(QStringLiteral("system"), QString(100 * 1024, u'z'));
        c.send(post(port, "/v1/messages",
                    QJsonDocument(GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("hi"), false))
                        .toJson(QJsonDocument::Compact)) +
               post(port, "/v1/messages", QJsonDocument(bigBody).toJson(QJsonDocument::Compact)));
        QVERIFY(waitUntil([&gw]() { return gw.anthropicA.requests().size() == 1; }, 10000));
        QVERIFY(waitUntil([&c]() { return c.socket().bytesToWrite() == 0; }, 10000));
        QCOMPARE(gw.engine().activeRequests(), 1);
        c.socket().abort(); // gone, with most of its next request unread behind the first
        QVERIFY(waitUntil([&gw]() { return gw.engine().activeRequests() == 0; }, 5000));
        bool aborted = false;
        QStringList seen;
        for (const auto &attempt : gw.engine().telemetry()->attempts(-1)) {
            aborted |= attempt.outcome == telemetry::AttemptOutcome::Aborted;
            seen << telemetry::outcomeName(attempt.outcome) + QLatin1Char(' ') + attempt.message;
        }
        QVERIFY2(aborted, qPrintable(seen.join(QLatin1String("; "))));
        QCOMPARE(gw.openaiB.requests().size(), 0); // no follower asked for a client that left
        QVERIFY(gw.engine().marks().isEmpty());
    }

    // Probe Y2 F1: a client that pipelines small requests and reads no answer had up to
    // maxBodyBytes of them read ahead into its connection (32 MiB a connection, charged to no
    // budget), and every request then cost a copy of all of it (15 requests a second). Now the
    // connection holds little past the request it serves, the rest waits in the kernel, and a
    // request's copies do not grow with what is queued behind it; every answer still comes, in
    // order, once the client reads.
    void aPipeliningClientIsReadAheadOnlyALittle() {
        GatewayFixture gw;
        for (int i = 0; i < 400; ++i) { // a /v1/models answer of about 100 KiB: the client's kernel fills soon
            config::ModelConfig m;
            m.provider = QStringLiteral("pa");
            m.id = QStringLiteral("model-%1-").arg(i) + QString(200, u'x');
            gw.config.models.insert(m.key(), m);
        }
        gw.start();
        QTcpSocket c;
        c.setSocketOption(QAbstractSocket::ReceiveBufferSizeSocketOption, 4096);
        c.setReadBufferSize(4096); // reads no answer
        c.connectToHost(QHostAddress::LocalHost, gw.engine().port());
        QVERIFY(c.waitForConnected(5000));
        QPointer<QTcpSocket> front; // the gateway's end of the connection
        QVERIFY(waitUntil(
            [&]() {
                const auto sockets = gw.engine().findChildren<server::GuardedSocket *>();
                front = sockets.size() == 1 ? sockets.first() : nullptr;
                return front != nullptr;
            },
            5000));
        qint64 mostHeld = 0;
        const auto look = [&]() {
            if (front)
                mostHeld = std::max(mostHeld, http::bufferedBytes(front));
        };
        connect(front, &QIODevice::readyRead, this, look);
        connect(front, &QIODevice::bytesWritten, this, look);

        const QByteArray models = "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
        const QByteArray health = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
        const QByteArray missing = "GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
        const int large = 100;   // about 10 MiB of answers: more than the kernels take
        const int small = 10000; // about 400 KiB of requests queued behind them
        const QByteArray queue = models.repeated(large) + (health + missing).repeated(small / 2);
        const quint64 copiedBefore = server::ConnectionGuard::unreadBytesCopied();
        c.write(queue);
        // The gateway waits for the client to take its answers (over 1 MiB of them unsent).
        QVERIFY(waitUntil(
            [&]() {
                look();
                return front && front->bytesToWrite() > 1024 * 1024;
            },
            20000));
        qInfo("%lld KiB queued; the connection holds at most %lld bytes of them", qint64(queue.size()) / 1024,
              mostHeld);
        QVERIFY2(mostHeld <= 32 * 1024, qPrintable(QString::number(mostHeld)));

        // The client reads: every answer, in order.
        c.setReadBufferSize(0);
        QList<int> statuses;
        QByteArray pending;
        const auto readAnswers = [&]() {
            pending += c.readAll();
            for (;;) {
                const qsizetype end = pending.indexOf("\r\n\r\n");
                if (end < 0)
                    return;
                const QByteArray head = pending.left(end).toLower();
                const qsizetype cl = head.indexOf("content-length:");
                const qint64 length =
                    cl < 0 ? 0 : head.mid(cl + 15, head.indexOf('\n', cl) - cl - 15).trimmed().toLongLong();
                if (pending.size() < end + 4 + length)
                    return;
                statuses.append(head.mid(9, 3).toInt());
                pending.remove(0, end + 4 + length);
            }
        };
        QVERIFY(waitUntil(
            [&]() {
                look();
                readAnswers();
                return statuses.size() >= large + small || c.state() != QAbstractSocket::ConnectedState;
            },
            60000));
        QCOMPARE(statuses.size(), large + small);
        for (int i = 0; i < large + small; ++i) {
            const int expected = i < large ? 200 : (i - large) % 2 == 0 ? 200 : 404;
            QVERIFY2(statuses[i] == expected, qPrintable(QStringLiteral("answer %1 is %2").arg(i).arg(statuses[i])));
        }
        QVERIFY2(mostHeld <= 32 * 1024, qPrintable(QString::number(mostHeld)));
        // What the guard copied of unread bytes, a request: bounded by the read-ahead, where a copy
        // of everything queued behind it (hundreds of KiB here) came with every request before.
        const quint64 copied = server::ConnectionGuard::unreadBytesCopied() - copiedBefore;
        qInfo("the guard copied %llu bytes of unread requests, %llu a request", copied, copied / (large + small));
        QVERIFY2(copied / (large + small) <= 8 * 1024, qPrintable(QString::number(copied)));
    }

    // Item 11: a trailer is refused at once, not held to the idle timeout.
    void chunkedTrailerIs400AtOnce() {
        GatewayFixture gw;
        gw.config.limits.idleTimeoutMs = 5000;
        gw.start();
        const quint16 port = gw.engine().port();
        const QByteArray body = chatBody(QStringLiteral("/v1/messages"), QStringLiteral("chain"));
        RawHttpClient c(port);
        QVERIFY(c.waitConnected());
        QElapsedTimer t;
        t.start();
        c.send("POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               "Transfer-Encoding: chunked\r\n\r\n" +
               QByteArray::number(body.size(), 16) + "\r\n" + body + "\r\n0\r\nX-Checksum: abc\r\n\r\n");
        QVERIFY(c.waitResponse(3000));
        QCOMPARE(c.status(), 400);
        QVERIFY2(c.body().contains("trailer"), c.body().constData());
        QVERIFY2(t.elapsed() < 2000, qPrintable(QString::number(t.elapsed())));
        QVERIFY(c.waitClosed(3000));
        QCOMPARE(upstreamRequests(gw), 0);
        // The same body without a trailer is served.
        const RawAnswer ok = exchange(port, "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                                            "application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
                                                QByteArray::number(body.size(), 16) + "\r\n" + body + "\r\n0\r\n\r\n");
        QCOMPARE(ok.status, 200);
    }

    // Review of probe Y2 F1: chunk framing is not counted as body by the budget or maxBodyBytes, but
    // Qt's parser keeps all of it until the request is whole. 1-byte chunks, or long chunk
    // extensions, made one connection hold hundreds of MB. Framing out of all proportion to the body
    // is refused, and the connection read no further; chunks of a sane size are served.
    void chunkFramingOutOfProportionIsRefused_data() {
        QTest::addColumn<int>("chunkBytes");
        QTest::addColumn<QByteArray>("extension");
        QTest::addColumn<int>("status");
        QTest::addRow("1-byte chunks") << 1 << QByteArray() << 400;
        QTest::addRow("chunk extensions") << 64 << (";x=" + QByteArray(3000, 'e')) << 400;
        QTest::addRow("100-byte chunks") << 100 << QByteArray() << 200;
    }
    void chunkFramingOutOfProportionIsRefused() {
        QFETCH(int, chunkBytes);
        QFETCH(QByteArray, extension);
        QFETCH(int, status);
        GatewayFixture gw;
        gw.config.limits.idleTimeoutMs = 5000;
        gw.start();
        // A request with 400 KiB of padding in a field the codec passes over.
        QByteArray body = chatBody(QStringLiteral("/v1/messages"), QStringLiteral("chain"));
        body.insert(1, "\"metadata\":{\"user_id\":\"" + QByteArray(400 * 1024, 'p') + "\"},");
        QByteArray chunked;
        for (qsizetype at = 0; at < body.size(); at += chunkBytes) {
            const QByteArray piece = body.mid(at, chunkBytes);
            chunked += QByteArray::number(piece.size(), 16) + extension + "\r\n" + piece + "\r\n";
        }
        chunked += "0\r\n\r\n";
        RawHttpClient c(gw.engine().port());
        QVERIFY(c.waitConnected());
        c.send("POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               "Transfer-Encoding: chunked\r\n\r\n" +
               chunked);
        QVERIFY(c.waitResponse(10000));
        QCOMPARE(c.status(), status);
        if (status == 400) {
            QVERIFY2(c.body().contains("chunk framing"), c.body().constData());
            QCOMPARE(upstreamRequests(gw), 0);
        }
    }

    // A chunked body whose lines end in a bare LF: the guard read it, Qt 6.4's parser waited for a CR
    // that never came, and the client heard nothing until the idle timeout (probe B3). A 400 at once.
    void chunkedBareLineFeedsAre400AtOnce_data() {
        QTest::addColumn<QByteArray>("chunked");
        const QByteArray body = R"({"model":"pa/claude-a","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})";
        const QByteArray size = QByteArray::number(body.size(), 16);
        QTest::addRow("size line") << QByteArray(size + "\n" + body + "\r\n0\r\n\r\n");
        QTest::addRow("after the data") << QByteArray(size + "\r\n" + body + "\n0\r\n\r\n");
        QTest::addRow("last chunk") << QByteArray(size + "\r\n" + body + "\r\n0\n\n");
    }
    void chunkedBareLineFeedsAre400AtOnce() {
        QFETCH(QByteArray, chunked);
        GatewayFixture gw;
        gw.config.limits.idleTimeoutMs = 5000;
        gw.start();
        RawHttpClient c(gw.engine().port());
        QVERIFY(c.waitConnected());
        QElapsedTimer t;
        t.start();
        c.send("POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               "Transfer-Encoding: chunked\r\n\r\n" +
               chunked);
        QVERIFY(c.waitResponse(3000));
        QCOMPARE(c.status(), 400);
        QVERIFY2(c.body().contains("malformed chunked body"), c.body().constData());
        QVERIFY2(t.elapsed() < 2000, qPrintable(QString::number(t.elapsed())));
        QCOMPARE(upstreamRequests(gw), 0);
    }

    // Item 12.
    // RFC 9110 8.6: Content-Length is 1*DIGIT. A sign or a radix prefix is read one way by one
    // parser and another by the next: the shapes request smuggling is made of.
    void aContentLengthThatIsNotDigitsIs400_data() {
        QTest::addColumn<QByteArray>("prefix");
        QTest::addRow("plus sign") << QByteArray("+");
        QTest::addRow("leading zeros are digits") << QByteArray("00");
    }
    void aContentLengthThatIsNotDigitsIs400() {
        QFETCH(QByteArray, prefix);
        GatewayFixture gw;
        gw.start();
        const QByteArray body = R"({"model":"pa/claude-a","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})";
        RawHttpClient c(gw.engine().port());
        QVERIFY(c.waitConnected());
        c.send("POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:" + QByteArray::number(gw.engine().port()) +
               "\r\nContent-Type: application/json\r\nContent-Length: " + prefix + QByteArray::number(body.size()) +
               "\r\n\r\n" + body);
        QVERIFY(c.waitResponse());
        if (prefix == "00") {
            QCOMPARE(c.status(), 200);
            return;
        }
        QCOMPARE(c.status(), 400);
        QVERIFY2(c.body().contains("Content-Length"), c.body().constData());
        QCOMPARE(gw.anthropicA.requests().size(), 0);
    }

    void idempotencyKeyReusedWithAnotherBodyIs422_data() {
        QTest::addColumn<QString>("route");
        for (const char *route : {"/v1/messages", "/v1/chat/completions"})
            QTest::addRow("%s", route) << route;
    }
    void idempotencyKeyReusedWithAnotherBodyIs422() {
        QFETCH(QString, route);
        GatewayFixture gw;
        gw.start();
        const quint16 port = gw.engine().port();
        const QByteArray key = "Idempotency-Key: order-42\r\n";
        const QByteArray first = chatBody(route, QStringLiteral("chain"));
        const RawAnswer a = exchange(port, post(port, route.toLatin1(), first, key));
        QCOMPARE(a.status, 200);
        QCOMPARE(upstreamRequests(gw), 1);
        // The same body replays.
        const RawAnswer replay = exchange(port, post(port, route.toLatin1(), first, key));
        QCOMPARE(replay.status, 200);
        QVERIFY(replay.head.contains("x-switchman-idempotent-replay: true"));
        QCOMPARE(upstreamRequests(gw), 1);
        // The same bytes on the other route are another request (its answer is in another format):
        // refused, never the first route's answer replayed.
        const QByteArray otherRoute = route == QLatin1String("/v1/messages") ? "/v1/chat/completions" : "/v1/messages";
        const RawAnswer elsewhere = exchange(port, post(port, otherRoute, first, key));
        QCOMPARE(elsewhere.status, 422);
        QVERIFY(!elsewhere.head.contains("idempotent-replay"));
        QCOMPARE(upstreamRequests(gw), 1);
        // Another body with the same key is refused, naming the key; never the first answer.
        const RawAnswer other =
            exchange(port, post(port, route.toLatin1(), chatBody(route, QStringLiteral("pb/gpt-b")), key));
        QCOMPARE(other.status, 422);
        QVERIFY2(inClientFormat(route, other.json, QStringLiteral("invalid_request_error")),
                 QJsonDocument(other.json).toJson().constData());
        QVERIFY2(messageOf(other.json).contains(QStringLiteral("order-42")), qPrintable(messageOf(other.json)));
        QVERIFY(!other.head.contains("idempotent-replay"));
        QCOMPARE(upstreamRequests(gw), 1);
        // A new key for the new body is served.
        QCOMPARE(exchange(port, post(port, route.toLatin1(), chatBody(route, QStringLiteral("pb/gpt-b")),
                                     "Idempotency-Key: order-43\r\n"))
                     .status,
                 200);
    }

    // Probe B3 M1: the key was checked only once the whole body had arrived. Eight peers without
    // a key each sent 16 MiB and stopped one byte short, and every tenant got 503 "the gateway
    // holds 127 MiB" for limits.idleTimeoutMs (two minutes); a head with no key and
    // "Expect: 100-continue" was told to go on. Now such a request is answered on its head, the
    // answer a request without a body gets, and the connection closes with the body unread.
    void aBodyTheKeyDoesNotAdmitIsAnsweredOnItsHead_data() {
        QTest::addColumn<QByteArray>("method");
        QTest::addColumn<QByteArray>("path");
        QTest::addColumn<QByteArray>("keyHeader");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("errorType");
        for (const char *route : kRoutes)
            QTest::addRow("%s no key", route) << QByteArray("POST") << QByteArray(route) << QByteArray() << 401
                                              << QStringLiteral("authentication_error");
        QTest::addRow("unknown bearer") << QByteArray("POST") << QByteArray("/v1/chat/completions")
                                        << QByteArray("Authorization: Bearer sm-nobody-holds-this-key\r\n") << 401
                                        << QStringLiteral("authentication_error");
        QTest::addRow("unknown x-api-key")
            << QByteArray("POST") << QByteArray("/v1/messages") << QByteArray("x-api-key: sm-nobody-holds-this-key\r\n")
            << 401 << QStringLiteral("authentication_error");
        QTest::addRow("escaped chat path") << QByteArray("POST") << QByteArray("/v1/chat/c%6Fmpletions") << QByteArray()
                                           << 401 << QStringLiteral("authentication_error");
        QTest::addRow("count_tokens") << QByteArray("POST") << QByteArray("/v1/messages/count_tokens") << QByteArray()
                                      << 401 << QStringLiteral("authentication_error");
        QTest::addRow("admin no key") << QByteArray("POST") << QByteArray("/admin/reload") << QByteArray() << 401
                                      << QStringLiteral("authentication_error");
        QTest::addRow("admin tenant key")
            << QByteArray("POST") << QByteArray("/admin/reload") << "x-switchman-key: " + kBobKey + "\r\n"
            << 403 << QStringLiteral("permission_error");
        QTest::addRow("admin absolute-form") << QByteArray("POST") << QByteArray("http://127.0.0.1:%PORT/admin/reload")
                                             << QByteArray() << 401 << QStringLiteral("authentication_error");
        QTest::addRow("unknown path") << QByteArray("POST") << QByteArray("/v1/nothing") << QByteArray() << 404
                                      << QStringLiteral("not_found_error");
        QTest::addRow("healthz with a body")
            << QByteArray("GET") << QByteArray("/healthz") << QByteArray() << 200 << QString();
    }
    void aBodyTheKeyDoesNotAdmitIsAnsweredOnItsHead() {
        QFETCH(QByteArray, method);
        QFETCH(QByteArray, path);
        QFETCH(QByteArray, keyHeader);
        QFETCH(int, status);
        QFETCH(QString, errorType);
        GatewayFixture gw;
        gw.config.limits.idleTimeoutMs = 60000; // a body that is waited for is never answered in this test
        addTenant(gw.config, QStringLiteral("alice"), kAliceKey);
        addTenant(gw.config, QStringLiteral("bob"), kBobKey);
        gw.start();
        const quint16 port = gw.engine().port();
        path.replace("%PORT", QByteArray::number(port));
        const QByteArray head = method + ' ' + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + QByteArray::number(port) +
                                "\r\nContent-Type: application/json\r\n" + keyHeader;
        // The answer a request with no body gets, as before: the router's.
        const RawAnswer bodiless = exchange(port, head + "Content-Length: 0\r\n\r\n");
        QCOMPARE(bodiless.status, status);

        // 16 MiB announced, nothing of it sent: the answer comes at once, on the head.
        RawHttpClient c(port);
        QVERIFY(c.waitConnected());
        c.send(head + "Content-Length: 16777216\r\n\r\n");
        QVERIFY2(c.waitResponse(5000), c.received().constData());
        QCOMPARE(c.status(), status);
        QCOMPARE(c.body(), bodiless.body); // in the client's format (the route's)
        for (const char *route : kRoutes)
            if (path == route)
                QVERIFY2(inClientFormat(QString::fromLatin1(path), bodiless.json, errorType), c.body().constData());
        if (!errorType.isEmpty())
            QCOMPARE(bodiless.json.value(QStringLiteral("error")).toObject().value(QStringLiteral("type")),
                     QJsonValue(errorType));
        QVERIFY2(c.head().contains("\r\nConnection: close"), c.head().constData());
        // What the peer still sends is not read; the connection ends.
        c.send(QByteArray(64 * 1024, 'x'));
        QVERIFY(c.waitClosed());
        QCOMPARE(upstreamRequests(gw), 0);
    }

    void expectContinueWithoutAKeyIs401Not100_data() {
        QTest::addColumn<QByteArray>("path");
        QTest::addColumn<QByteArray>("keyHeader");
        QTest::addColumn<int>("status");
        QTest::addRow("chat, no key") << QByteArray("/v1/messages") << QByteArray() << 401;
        QTest::addRow("admin, no key") << QByteArray("/admin/reload") << QByteArray() << 401;
        QTest::addRow("admin, tenant key") << QByteArray("/admin/reload") << "x-api-key: " + kAliceKey + "\r\n" << 403;
    }
    void expectContinueWithoutAKeyIs401Not100() {
        QFETCH(QByteArray, path);
        QFETCH(QByteArray, keyHeader);
        QFETCH(int, status);
        GatewayFixture gw;
        addTenant(gw.config, QStringLiteral("alice"), kAliceKey);
        gw.start();
        const quint16 port = gw.engine().port();
        RawHttpClient c(port);
        QVERIFY(c.waitConnected());
        c.send("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + keyHeader +
               "Expect: 100-continue\r\nContent-Length: 1048576\r\n\r\n");
        QVERIFY(c.waitResponse());
        QVERIFY2(c.received().startsWith("HTTP/1.1 " + QByteArray::number(status) + ' '),
                 c.received().left(200).constData());
        QVERIFY(!c.received().contains("100 Continue"));
        QVERIFY(c.waitClosed());

        // With the key, the head is told to go on, as before.
        RawHttpClient keyed(port);
        QVERIFY(keyed.waitConnected());
        const QByteArray body = chatBody(QStringLiteral("/v1/messages"), QStringLiteral("chain"));
        keyed.send("POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nx-api-key: " +
                   kAliceKey + "\r\nExpect: 100-continue\r\nContent-Length: " + QByteArray::number(body.size()) +
                   "\r\n\r\n");
        QVERIFY(keyed.waitResponse());
        QCOMPARE(keyed.status(), 100);
        keyed.send(body);
        QVERIFY(waitUntil([&keyed]() { return keyed.received().contains("\"type\":\"message\""); }));
        QVERIFY2(keyed.received().contains("HTTP/1.1 200"), keyed.received().constData());
    }

    // The probe's shape, scaled down: peers without a key send most of a body each, together more
    // than the whole budget, and wait. Before, they held limits.maxBodyBytesInFlight and a
    // tenant's request was 503 "the gateway holds ... of request bodies" until they timed out.
    void peersWithoutAKeyHoldNoneOfTheBodyBudget() {
        GatewayFixture gw;
        gw.config.limits.maxBodyBytes = 256 * 1024;
        gw.config.limits.maxBodyBytesInFlight = 512 * 1024;
        gw.config.limits.idleTimeoutMs = 60000;
        addTenant(gw.config, QStringLiteral("alice"), kAliceKey);
        addTenant(gw.config, QStringLiteral("root"), kRootKey, true);
        gw.start();
        const quint16 port = gw.engine().port();
        const qint64 length = 256 * 1024;
        std::vector<std::unique_ptr<RawHttpClient>> peers;
        for (const QByteArray &path :
             {QByteArray("/v1/messages"), QByteArray("/v1/chat/completions"), QByteArray("/admin/reload")}) {
            auto peer = std::make_unique<RawHttpClient>(port);
            QVERIFY(peer->waitConnected());
            peer->send("POST " + path +
                       " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                       "Content-Length: " +
                       QByteArray::number(length) + "\r\n\r\n" + QByteArray(length - 1, ' '));
            peers.push_back(std::move(peer));
        }
        // Their bytes are on the wire (before: read, and held, until the idle timeout).
        waitUntil(
            [&peers]() {
                return std::all_of(peers.cbegin(), peers.cend(), [](const auto &p) { return p->status() != 0; });
            },
            2000);
        // A tenant may send a body as large as ever (before: 503 overloaded_error).
        const QByteArray big =
            QJsonDocument(GatewayFixture::anthropicBody(QStringLiteral("chain"), QString(200 * 1024, u'm'), false))
                .toJson(QJsonDocument::Compact);
        const RawAnswer a = exchange(port, post(port, "/v1/messages", big, "x-api-key: " + kAliceKey + "\r\n"));
        QVERIFY2(a.status == 200, qPrintable(QString::number(a.status) + QLatin1Char(' ') + QString::fromUtf8(a.body)));
        QCOMPARE(gw.anthropicA.requests().size(), 1);
        QVERIFY(gw.anthropicA.requests().first().body.size() > 200 * 1024);
        // An admin's body on an admin path is read and answered by the admin API, as before.
        const RawAnswer admin =
            exchange(port, post(port, "/admin/reload", "{}", "x-switchman-key: " + kRootKey + "\r\n"));
        QCOMPARE(admin.status, 400);
        QVERIFY2(messageOf(admin.json).contains(QStringLiteral("no configuration file")),
                 qPrintable(messageOf(admin.json)));
        // Each was answered 401 on its head, and its connection closed.
        for (auto &peer : peers) {
            QCOMPARE(peer->status(), 401);
            QVERIFY(peer->waitClosed());
        }
    }

    // The key is looked up once, on the head; a key taken away while its body is on the way is
    // not honoured for that body: the tenants that answer are those of the configuration the
    // request is routed under.
    void aKeyRemovedWhileItsBodyArrivesIsRefused() {
        GatewayFixture gw;
        addTenant(gw.config, QStringLiteral("alice"), kAliceKey);
        addTenant(gw.config, QStringLiteral("bob"), kBobKey);
        gw.start();
        const quint16 port = gw.engine().port();
        const QByteArray body = chatBody(QStringLiteral("/v1/messages"), QStringLiteral("chain"));
        const QByteArray request = post(port, "/v1/messages", body, "x-api-key: " + kAliceKey + "\r\n");
        RawHttpClient c(port);
        QVERIFY(c.waitConnected());
        c.send(request.left(request.size() - body.size() + 1)); // the head and one byte of the body
        QVERIFY(!c.waitResponse(300));                          // admitted: its body is awaited
        config::Config without = *gw.engine().config();
        without.tenants.remove(QStringLiteral("alice"));
        gw.engine().applyConfig(without);
        c.send(body.mid(1));
        QVERIFY(c.waitResponse());
        QCOMPARE(c.status(), 401);
        QCOMPARE(upstreamRequests(gw), 0);
    }

    void oversizedIdempotencyKeyIs400AndNotStored() {
        GatewayFixture gw;
        gw.start();
        const quint16 port = gw.engine().port();
        const QByteArray body = chatBody(QStringLiteral("/v1/messages"), QStringLiteral("chain"));
        const RawAnswer a =
            exchange(port, post(port, "/v1/messages", body, "Idempotency-Key: " + QByteArray(257, 'k') + "\r\n"));
        QCOMPARE(a.status, 400);
        QVERIFY(messageOf(a.json).contains(QStringLiteral("Idempotency-Key")));
        QCOMPARE(upstreamRequests(gw), 0);
        const RawAnswer atLimit =
            exchange(port, post(port, "/v1/messages", body, "Idempotency-Key: " + QByteArray(256, 'k') + "\r\n"));
        QCOMPARE(atLimit.status, 200);
    }
};

QTEST_GUILESS_MAIN(TestHostileFront)
#include "test_hostile_front.moc"
