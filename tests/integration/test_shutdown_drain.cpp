// A graceful shutdown (Engine::requestShutdown, what SIGTERM, SIGINT and the window's Quit call):
// the listener closes, a request on a connection still open gets 503, the requests in flight get
// limits.shutdownGraceMs (on the engine's clock) to finish, and what is left then ends as a cut
// does: a stream with its format's in-band error and a proper end, an answer not yet given with a
// whole 503. Every answer is billed, and the ledger file holds the rows once the engine is gone.
// The real engine on loopback, a raw-socket upstream that sends exactly the bytes scripted.
#include "fake_clock.h"
#include "gateway_fixture.h"
#include "hostile_upstream.h"
#include "raw_http_client.h"
#include "signal_wait.h"

#include "core/telemetry/telemetry.h"
#include "core/telemetry/usage_database.h"
#include "core/telemetry/usage_report.h"

#include <QJsonDocument>
#include <QPointer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>

using namespace sw;
using namespace sw::test;

namespace {

const QByteArray kSseHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";

// An Anthropic stream up to its first text ("Hello "), input_tokens 7 reported at its start.
const QByteArray kAnthropicOpening =
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\","
    "\"role\":\"assistant\",\"content\":[],\"model\":\"claude-a\",\"stop_reason\":null,"
    "\"usage\":{\"input_tokens\":7,\"output_tokens\":1}}}\n\n"
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
    "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
    "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello \"}}\n\n";
// The rest of it: "world", and a proper end.
const QByteArray kAnthropicRest =
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
    "\"delta\":{\"type\":\"text_delta\",\"text\":\"world\"}}\n\n"
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
    "\"usage\":{\"output_tokens\":3}}\n\n"
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
// A Chat Completions stream's first text ("Hi there "), after which the upstream says nothing more.
const QByteArray kChatOpening = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":"
                                "\"gpt-b\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":"
                                "\"Hi there \"},\"finish_reason\":null}]}\n\n";

QByteArray postBytes(const QString &path, const QJsonObject &body) {
    const QByteArray json = QJsonDocument(body).toJson(QJsonDocument::Compact);
    return "POST " + path.toLatin1() +
           " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
           QByteArray::number(json.size()) + "\r\n\r\n" + json;
}

bool chunkedEnd(const RawHttpClient &client) {
    return client.received().endsWith("0\r\n\r\n");
}

QJsonObject jsonBody(const RawHttpClient &client) {
    return QJsonDocument::fromJson(client.body()).object();
}

QList<telemetry::UsageRow> ledgerRows(const QString &path) {
    telemetry::UsageDatabase db;
    QString error;
    if (!db.open(path, telemetry::UsageDatabase::Mode::ReadOnly, &error))
        return {};
    return db.query({}).rows;
}

const telemetry::UsageRow *rowOf(const QList<telemetry::UsageRow> &rows, const QString &candidate) {
    for (const auto &row : rows)
        if (row.candidate == candidate)
            return &row;
    return nullptr;
}

} // namespace

class TestShutdownDrain final : public QObject {
    Q_OBJECT

    std::unique_ptr<FakeClock> m_clock; // one per test: no timer of an engine gone is left on it
    HostileUpstream m_up;
    QPointer<QTcpSocket> m_anthropicUpstream; // the Anthropic stream's upstream connection
    QPointer<QTcpSocket> m_chatUpstream;

    // pa (Anthropic) and pb (Chat Completions) answer from the scripted upstream with their
    // openings, then wait for the test; pc never answers.
    void configure(GatewayFixture &gw, const QString &ledgerPath) {
        gw.clock = m_clock.get();
        gw.config.providers[QStringLiteral("pa")].baseUrl = m_up.baseUrl();
        gw.config.providers[QStringLiteral("pb")].baseUrl = m_up.baseUrl() + QStringLiteral("/v1");
        gw.config.failover.deadlineMs = 600000; // no attempt budget or deadline inside the test's times
        gw.config.limits.shutdownGraceMs = 5000;
        gw.usageLedgerPath = ledgerPath;
        demo::Fault stall;
        stall.kind = demo::Fault::StallBeforeHeaders;
        gw.anthropicC.setFault(stall);
    }

private Q_SLOTS:
    void init() { m_clock = std::make_unique<FakeClock>(); }

    void initTestCase() {
        QVERIFY(m_up.listen());
        m_up.setScript([this](QTcpSocket *socket, const QByteArray &request) {
            if (request.startsWith("POST /v1/messages")) {
                m_anthropicUpstream = socket;
                socket->write(kSseHead + kAnthropicOpening);
            } else {
                m_chatUpstream = socket;
                socket->write(kSseHead + kChatOpening);
            }
        });
    }

    void graceLetsRequestsFinishThenEndsTheRest() {
        QTemporaryDir dir;
        const QString ledger = dir.filePath(QStringLiteral("usage.sqlite"));
        {
            GatewayFixture gw;
            configure(gw, ledger);
            gw.start();
            QList<telemetry::LogRecord> logs;
            connect(gw.engine().telemetry(), &telemetry::Telemetry::logged, this,
                    [&logs](const telemetry::LogRecord &r) { logs.append(r); });
            bool drained = false;
            connect(&gw.engine(), &Engine::drained, this, [&drained]() { drained = true; });
            const quint16 port = gw.engine().port();

            RawHttpClient finishing(port), cut(port), waiting(port), keptOpen(port);
            for (auto *c : {&finishing, &cut, &waiting, &keptOpen})
                QVERIFY(c->waitConnected());
            finishing.send(postBytes(QStringLiteral("/v1/messages"),
                                     GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), "hello", true)));
            cut.send(postBytes(QStringLiteral("/v1/chat/completions"),
                               GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), "hello", true)));
            waiting.send(postBytes(QStringLiteral("/v1/messages"),
                                   GatewayFixture::anthropicBody(QStringLiteral("pc/claude-c"), "hello", false)));
            QVERIFY(waitUntil([&]() {
                return finishing.received().contains("Hello ") && cut.received().contains("Hi there ") &&
                       gw.anthropicC.requests().size() == 1;
            }));
            QCOMPARE(gw.engine().activeRequests(), 3);

            gw.engine().requestShutdown();

            // A new connection is refused: the listener is closed.
            RawHttpClient late(port);
            QVERIFY(waitUntil([&late]() { return late.closed(); }));
            QVERIFY(late.socket().state() != QAbstractSocket::ConnectedState);
            // A chat request on a connection still open gets 503 in its format, told when to come
            // back, and its connection ends.
            keptOpen.send(postBytes(QStringLiteral("/v1/messages"),
                                    GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), "late", true)));
            QVERIFY(keptOpen.waitResponse());
            QCOMPARE(keptOpen.status(), 503);
            QVERIFY2(keptOpen.head().toLower().contains("retry-after: 1"), keptOpen.head().constData());
            QCOMPARE(jsonBody(keptOpen).value(QStringLiteral("type")).toString(), QStringLiteral("error"));
            QCOMPARE(
                jsonBody(keptOpen).value(QStringLiteral("error")).toObject().value(QStringLiteral("type")).toString(),
                QStringLiteral("overloaded_error"));
            QVERIFY(keptOpen.waitClosed());

            // The stream whose upstream finishes within the grace gets its whole answer.
            QVERIFY(m_anthropicUpstream);
            m_anthropicUpstream->write(kAnthropicRest);
            m_anthropicUpstream->disconnectFromHost();
            QVERIFY(waitUntil([&finishing]() { return chunkedEnd(finishing); }));
            QVERIFY(finishing.received().contains("event: message_stop"));
            QVERIFY(!finishing.received().contains("event: error"));
            QCOMPARE(anthropicStreamText(finishing.received()), QStringLiteral("Hello world"));
            QVERIFY(waitUntil([&gw]() { return gw.engine().activeRequests() == 2; }));

            // Up to the end of the grace the other two wait.
            m_clock->advance(4999);
            QTest::qWait(50);
            QCOMPARE(gw.engine().activeRequests(), 2);
            QVERIFY(!chunkedEnd(cut));
            QCOMPARE(waiting.status(), 0);
            QVERIFY(!drained);

            // The grace is over: the stream ends with its format's in-band error and a proper end,
            // the answer not given yet is a whole 503.
            m_clock->advance(1);
            QVERIFY(waitUntil([&cut]() { return chunkedEnd(cut); }));
            const QByteArray cutBody = cut.received();
            QVERIFY2(cutBody.contains("data: {\"error\":{"), cutBody.constData());
            QVERIFY(cutBody.contains("shut down"));
            QVERIFY(!cutBody.contains("[DONE]"));
            QCOMPARE(openaiStreamText(cutBody), QStringLiteral("Hi there "));
            QVERIFY(waiting.waitResponse());
            QCOMPARE(waiting.status(), 503);
            QVERIFY(waiting.head().toLower().contains("retry-after: 1"));
            QCOMPARE(
                jsonBody(waiting).value(QStringLiteral("error")).toObject().value(QStringLiteral("type")).toString(),
                QStringLiteral("overloaded_error"));
            QVERIFY(waitUntil([&drained]() { return drained; }));
            QCOMPARE(gw.engine().activeRequests(), 0);

            // One line as the drain starts, one as it ends.
            auto line = [&logs](const QString &prefix) -> QJsonObject {
                for (const auto &r : std::as_const(logs))
                    if (r.message.startsWith(prefix))
                        return r.fields;
                return {};
            };
            const QJsonObject started = line(QStringLiteral("shutting down"));
            QCOMPARE(started.value(QStringLiteral("inFlight")).toInt(), 3);
            QCOMPARE(started.value(QStringLiteral("graceMs")).toInt(), 5000);
            const QJsonObject ended = line(QStringLiteral("shut down:"));
            QCOMPARE(ended.value(QStringLiteral("finished")).toInt(), 1);
            QCOMPARE(ended.value(QStringLiteral("cut")).toInt(), 2);
        }
        // The engine is gone: its ledger file holds both streams, the whole one and the cut one.
        const auto rows = ledgerRows(ledger);
        const auto *whole = rowOf(rows, QStringLiteral("pa/claude-a"));
        QVERIFY(whole);
        QCOMPARE(whole->outcome, QStringLiteral("ok"));
        QCOMPARE(whole->input, qint64(7));
        QCOMPARE(whole->output, qint64(3));
        const auto *broken = rowOf(rows, QStringLiteral("pb/gpt-b"));
        QVERIFY(broken);
        QCOMPARE(broken->outcome, QStringLiteral("cut"));
        QVERIFY(broken->output > 0); // estimated from the text sent: Chat Completions reports usage at the end
    }

    void askingAgainEndsTheGraceAtOnce() {
        // A second SIGTERM or Ctrl-C: nothing waits for the grace.
        QTemporaryDir dir;
        const QString ledger = dir.filePath(QStringLiteral("usage.sqlite"));
        {
            GatewayFixture gw;
            configure(gw, ledger);
            gw.start();
            bool drained = false;
            connect(&gw.engine(), &Engine::drained, this, [&drained]() { drained = true; });
            RawHttpClient stream(gw.engine().port());
            QVERIFY(stream.waitConnected());
            stream.send(postBytes(QStringLiteral("/v1/messages"),
                                  GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), "hello", true)));
            QVERIFY(waitUntil([&stream]() { return stream.received().contains("Hello "); }));
            gw.engine().requestShutdown();
            QTest::qWait(20);
            QVERIFY(!drained);
            gw.engine().requestShutdown();
            QVERIFY(drained); // at once, the clock never moved
            QCOMPARE(gw.engine().activeRequests(), 0);
            QVERIFY(waitUntil([&stream]() { return stream.received().contains("event: error"); }));
            QVERIFY(!stream.received().contains("event: message_stop"));
        }
        const auto rows = ledgerRows(ledger);
        const auto *broken = rowOf(rows, QStringLiteral("pa/claude-a"));
        QVERIFY(broken);
        QCOMPARE(broken->outcome, QStringLiteral("cut"));
        QCOMPARE(broken->input, qint64(7));
    }

    void anEngineDeletedMidAnswerBillsIt() {
        // No drain at all (a test's fixture, an embedder's stop()): the answer is still ended as a
        // cut and billed, not dropped with its request.
        QTemporaryDir dir;
        const QString ledger = dir.filePath(QStringLiteral("usage.sqlite"));
        auto gw = std::make_unique<GatewayFixture>();
        configure(*gw, ledger);
        gw->start();
        RawHttpClient stream(gw->engine().port());
        QVERIFY(stream.waitConnected());
        stream.send(postBytes(QStringLiteral("/v1/chat/completions"),
                              GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), "hello", true)));
        QVERIFY(waitUntil([&stream]() { return stream.received().contains("Hi there "); }));
        gw.reset();
        QVERIFY(waitUntil([&stream]() { return stream.received().contains("data: {\"error\":{"); }));
        const auto rows = ledgerRows(ledger);
        const auto *broken = rowOf(rows, QStringLiteral("pb/gpt-b"));
        QVERIFY(broken);
        QCOMPARE(broken->outcome, QStringLiteral("cut"));
    }
};

QTEST_GUILESS_MAIN(TestShutdownDrain)
#include "test_shutdown_drain.moc"
