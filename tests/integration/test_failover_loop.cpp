// record F2c + C1: the attempt loop on the real engine, real sockets, fake upstreams.
#include "core/config/config_loader.h"
#include "core/credentials/credential_pools.h"
#include "core/telemetry/telemetry.h"
#include "core/upstream/default_transport.h"
#include "core/wire/tool_call_id.h"
#include "fake_clock.h"
#include "gateway_fixture.h"
#include "hostile_upstream.h"
#include "raw_http_client.h"
#include "signal_wait.h"
#include "wire_fixtures.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QPointer>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <algorithm>
#include <optional>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

using namespace sw;
using namespace sw::test;
using demo::Fault;

namespace {
Fault fault(Fault::Kind k, int status = 0, QByteArray retryAfter = {}, QByteArray body = {}) {
    Fault f;
    f.kind = k;
    f.status = status;
    f.retryAfter = std::move(retryAfter);
    f.body = std::move(body);
    return f;
}

// Mistral's validator (its API, and its chat templates behind vLLM or llama.cpp): a 400 for any tool
// call id that is not nine characters of [a-zA-Z0-9], in its own words.
QStringList toolIdsOf(const QByteArray &body) {
    QStringList ids;
    for (const QJsonValue &m : QJsonDocument::fromJson(body).object().value(QStringLiteral("messages")).toArray()) {
        for (const QJsonValue &call : m[QStringLiteral("tool_calls")].toArray())
            ids << call[QStringLiteral("id")].toString();
        if (m[QStringLiteral("role")].toString() == QLatin1String("tool"))
            ids << m[QStringLiteral("tool_call_id")].toString();
    }
    return ids;
}
bool nineAlphanumerics(const QStringList &ids) {
    static const QRegularExpression form(QStringLiteral("^[a-zA-Z0-9]{9}$"));
    return !ids.isEmpty() &&
           std::all_of(ids.begin(), ids.end(), [](const QString &id) { return form.match(id).hasMatch(); });
}
std::optional<Fault> mistralValidator(const demo::RecordedRequest &r) {
    static const QRegularExpression form(QStringLiteral("^[a-zA-Z0-9]{9}$"));
    for (const QString &id : toolIdsOf(r.body))
        if (!form.match(id).hasMatch())
            return fault(Fault::Status, 400, {},
                         "{\"object\":\"error\",\"message\":\"Tool call id was " + id.toUtf8() +
                             " but must be a-z, A-Z, 0-9, with a length of 9.\",\"type\":\"invalid_function_call\","
                             "\"param\":null,\"code\":\"3280\"}");
    return std::nullopt;
}
// Claude Code's tool loop: a call Anthropic named, and its result.
QJsonObject claudeToolLoop(const QString &model) {
    const QJsonObject tool{
        {"name", "read_file"}, {"description", "r"}, {"input_schema", QJsonObject{{"type", "object"}}}};
    return {{"model", model},
            {"max_tokens", 1000},
            {"stream", false},
            {"tools", QJsonArray{tool}},
            {"messages",
             QJsonArray{QJsonObject{{"role", "user"}, {"content", "open a.py"}},
                        QJsonObject{{"role", "assistant"},
                                    {"content", QJsonArray{QJsonObject{{"type", "text"}, {"text", "Reading."}},
                                                           QJsonObject{{"type", "tool_use"},
                                                                       {"id", "toolu_01AAA"},
                                                                       {"name", "read_file"},
                                                                       {"input", QJsonObject{{"path", "a.py"}}}}}}},
                        QJsonObject{{"role", "user"},
                                    {"content", QJsonArray{QJsonObject{{"type", "tool_result"},
                                                                       {"tool_use_id", "toolu_01AAA"},
                                                                       {"content", "print(1)"}}}}}}}};
}

qint64 failuresOf(Engine &e, const QString &provider, const QString &kind) {
    return e.telemetry()->failureCounts().value(provider + QChar(0x1f) + kind);
}

QJsonObject routeBody(const QString &route, const QString &model, bool stream) {
    if (route == QLatin1String("/v1/messages"))
        return GatewayFixture::anthropicBody(model, QStringLiteral("a b c d e f"), stream);
    if (route == QLatin1String("/v1/chat/completions"))
        return GatewayFixture::openaiBody(model, QStringLiteral("a b c d e f"), stream);
    if (route == QLatin1String("/v1/responses"))
        return {{QStringLiteral("model"), model},
                {QStringLiteral("input"), QStringLiteral("a b c d e f")},
                {QStringLiteral("stream"), stream}};
    return {{QStringLiteral("model"), model},
            {QStringLiteral("stream"), stream},
            {QStringLiteral("context"),
             QJsonObject{{QStringLiteral("messages"),
                          QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                                 {QStringLiteral("content"), QStringLiteral("a b c d e f")},
                                                 {QStringLiteral("timestamp"), 0}}}}}}};
}

// Answers every request with the same bytes: a captive portal or a misconfigured proxy in front
// of a provider (kept alive), or a listener that does not speak HTTP at all (then closed).
class CannedAnswerServer : public QTcpServer {
public:
    explicit CannedAnswerServer(QByteArray answer, bool thenClose = false)
        : m_answer(std::move(answer)), m_close(thenClose) {
        connect(this, &QTcpServer::newConnection, this, [this]() {
            while (QTcpSocket *s = nextPendingConnection()) {
                connect(s, &QTcpSocket::readyRead, s, [this, s]() {
                    s->readAll();
                    ++asked;
                    s->write(m_answer);
                    if (m_close)
                        s->disconnectFromHost();
                });
            }
        });
        listen(QHostAddress::LocalHost);
    }
    QString url() const { return QStringLiteral("http://127.0.0.1:%1").arg(serverPort()); }
    int asked = 0; // reads that were answered: one a request

private:
    QByteArray m_answer;
    bool m_close;
};

// The engine's own transport, recording what the loop asks of each call's reading and
// honouring it as a socket would: while paused, nothing more reaches the engine.
class ReadPauseProbe final : public upstream::Transport {
public:
    class Call final : public upstream::UpstreamCall {
    public:
        Call(upstream::UpstreamCall *inner, ReadPauseProbe &probe, QObject *parent)
            : upstream::UpstreamCall(parent), m_inner(inner), m_probe(probe) {
            inner->setParent(this);
            connect(inner, &UpstreamCall::responseStarted, this, &UpstreamCall::responseStarted);
            connect(inner, &UpstreamCall::bodyData, this, [this](const QByteArray &chunk) {
                if (m_paused || !m_held.isEmpty())
                    m_held.append(chunk);
                else
                    Q_EMIT bodyData(chunk);
            });
            connect(inner, &UpstreamCall::finished, this, [this](const upstream::TransportResult &r) {
                m_finished = r;
                flush();
            });
        }
        void abort() override { m_inner->abort(); }
        void setReadPaused(bool paused) override {
            m_probe.pauses << paused;
            m_paused = paused;
            if (!paused)
                QTimer::singleShot(0, this, [this]() { flush(); });
        }

    private:
        void flush() {
            while (!m_paused && !m_held.isEmpty())
                Q_EMIT bodyData(m_held.takeFirst());
            if (!m_paused && m_held.isEmpty() && m_finished) {
                const auto r = *m_finished;
                m_finished.reset();
                Q_EMIT finished(r);
            }
        }
        upstream::UpstreamCall *m_inner;
        ReadPauseProbe &m_probe;
        bool m_paused = false;
        QList<QByteArray> m_held;
        std::optional<upstream::TransportResult> m_finished;
    };
    upstream::UpstreamCall *start(const upstream::HttpRequest &request, QObject *parent) override {
        return new Call(m_real.start(request, nullptr), *this, parent);
    }
    QList<bool> pauses;

private:
    upstream::DefaultTransport m_real;
};

QByteArray anthropicSse(const QByteArray &type, const QByteArray &json) {
    return "event: " + type + "\ndata: " + json + "\n\n";
}

// `n` pings and `n` empty text deltas, alternating: frames that never change the answer.
QByteArray pingsAndEmptyDeltas(int n) {
    QByteArray noise;
    for (int i = 0; i < n; ++i) {
        noise += anthropicSse("ping", R"({"type": "ping"})");
        noise += anthropicSse("content_block_delta",
                              R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}})");
    }
    return noise;
}

// An Anthropic stream: `before` frames, then one text block of `deltas` deltas of `deltaBytes` each.
QByteArray anthropicStream(const QByteArray &before, int deltas, int deltaBytes) {
    QByteArray out = anthropicSse(
        "message_start",
        R"({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1}}})");
    out += before;
    out += anthropicSse("content_block_start",
                        R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})");
    const QByteArray text(deltaBytes, 'x');
    for (int i = 0; i < deltas; ++i)
        out += anthropicSse("content_block_delta",
                            R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":")" + text +
                                R"("}})");
    out += anthropicSse("content_block_stop", R"({"type":"content_block_stop","index":0})");
    out += anthropicSse("message_delta",
                        R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}})");
    out += anthropicSse("message_stop", R"({"type":"message_stop"})");
    return out;
}

// An Anthropic stream with a thinking block of `signatureDeltas` signature deltas of 1 KiB each and a
// text block, the thinking first or (`textFirst`) after the text.
QByteArray signedAnthropicStream(int signatureDeltas, bool textFirst = false) {
    const QByteArray thinking = textFirst ? "1" : "0";
    const QByteArray text = textFirst ? "0" : "1";
    QByteArray textBlock = anthropicSse("content_block_start", R"({"type":"content_block_start","index":)" + text +
                                                                   R"(,"content_block":{"type":"text","text":""}})");
    textBlock += anthropicSse("content_block_delta", R"({"type":"content_block_delta","index":)" + text +
                                                         R"(,"delta":{"type":"text_delta","text":"done"}})");
    textBlock += anthropicSse("content_block_stop", R"({"type":"content_block_stop","index":)" + text + "}");
    QByteArray thinkingBlock =
        anthropicSse("content_block_start", R"({"type":"content_block_start","index":)" + thinking +
                                                R"(,"content_block":{"type":"thinking","thinking":""}})");
    const QByteArray signature(1024, 'S');
    for (int i = 0; i < signatureDeltas; ++i)
        thinkingBlock += anthropicSse("content_block_delta", R"({"type":"content_block_delta","index":)" + thinking +
                                                                 R"(,"delta":{"type":"signature_delta","signature":")" +
                                                                 signature + R"("}})");
    thinkingBlock += anthropicSse("content_block_stop", R"({"type":"content_block_stop","index":)" + thinking + "}");
    QByteArray out = anthropicSse(
        "message_start",
        R"({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1}}})");
    out += textFirst ? textBlock + thinkingBlock : thinkingBlock + textBlock;
    out += anthropicSse("message_delta",
                        R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}})");
    out += anthropicSse("message_stop", R"({"type":"message_stop"})");
    return out;
}

// Posts a streaming request, hangs up once `marker` arrived, and gives the one usage row the
// request left (empty when the ledger holds another count of rows).
void abortOnceContentCame(GatewayFixture &gw, const QString &path, const QJsonObject &body, const QByteArray &marker,
                          QJsonObject *row) {
    QNetworkReply *reply = gw.postAsync(path, body);
    QTRY_VERIFY(reply->bytesAvailable() > 0 && reply->peek(4096).contains(marker));
    const QString id = QString::fromLatin1(reply->rawHeader("x-switchman-request-id"));
    reply->abort();
    reply->deleteLater();
    QTRY_COMPARE(gw.engine().activeRequests(), 0);
    const auto rows = gw.get(QStringLiteral("/admin/usage")).json().value(QStringLiteral("rows")).toArray();
    QCOMPARE(rows.size(), 1);
    *row = rows.first().toObject();
    QCOMPARE(row->value(QStringLiteral("requestId")).toString(), id);
}

// Lets sockets and queued calls run without letting any clock time pass: with the
// engine on a FakeClock, "nothing happened yet" is checked without sleeping on timers.
void drainEvents() {
    for (int i = 0; i < 50; ++i)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 2);
}

QList<telemetry::AttemptRecord> attemptsOf(Engine &e, const QByteArray &requestId) {
    QList<telemetry::AttemptRecord> out;
    for (const auto &a : e.telemetry()->attempts(-1))
        if (a.requestId == QString::fromLatin1(requestId))
            out.prepend(a);
    return out;
}
} // namespace

class TestFailoverLoop : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void refusedThenFailsOverEveryRouteAndMode_data() {
        QTest::addColumn<QString>("route");
        QTest::addColumn<bool>("stream");
        QTest::addColumn<int>("faultKind");
        for (int k : {int(Fault::Refuse), int(Fault::Status)})
            for (const char *route : {"/v1/messages", "/v1/chat/completions", "/v1/responses", "/v1/pi/stream"})
                for (bool stream : {false, true})
                    QTest::addRow("%s %s %s", k == Fault::Refuse ? "refused" : "503", route, stream ? "stream" : "json")
                        << QString::fromLatin1(route) << stream << k;
    }
    void refusedThenFailsOverEveryRouteAndMode() {
        QFETCH(QString, route);
        QFETCH(bool, stream);
        QFETCH(int, faultKind);
        GatewayFixture gw;
        gw.anthropicA.setFault(faultKind == Fault::Refuse ? fault(Fault::Refuse) : fault(Fault::Status, 503));
        gw.start();
        QJsonObject body;
        if (route == QLatin1String("/v1/messages"))
            body = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("ping"), stream);
        else if (route == QLatin1String("/v1/chat/completions"))
            body = GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("ping"), stream);
        else if (route == QLatin1String("/v1/responses"))
            body = {{QStringLiteral("model"), QStringLiteral("chain")},
                    {QStringLiteral("input"), QStringLiteral("ping")},
                    {QStringLiteral("stream"), stream}};
        else
            body = {{QStringLiteral("model"), QStringLiteral("chain")},
                    {QStringLiteral("stream"), stream},
                    {QStringLiteral("context"),
                     QJsonObject{{QStringLiteral("messages"),
                                  QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                                         {QStringLiteral("content"), QStringLiteral("ping")},
                                                         {QStringLiteral("timestamp"), 0}}}}}}};
        const auto r = gw.post(route, body);
        QCOMPARE(r.status, 200);
        const QString kind = faultKind == Fault::Refuse ? QStringLiteral("transport") : QStringLiteral("server_error");
        // B answered: its label is in the text, and no error reached the client. A stream names the
        // failover in its comment, as a JSON answer does in its headers.
        const QByteArray comment = ": switchman candidate=pb/gpt-b attempt=2 fallback-from=pa/claude-a "
                                   "fallback-reason=" +
                                   kind.toLatin1() + "\n\n";
        QByteArray text = r.body;
        text.replace(comment, "");
        QVERIFY2(text.contains("pb/gpt-b"), r.body.constData());
        QVERIFY(!text.contains("pa/claude-a"));
        if (!stream) {
            QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
            QCOMPARE(r.header("x-switchman-attempts"), QByteArray("2"));
            QCOMPARE(r.header("x-switchman-fallback-from"), QByteArray("pa/claude-a"));
            QCOMPARE(r.header("x-switchman-fallback-reason"), kind.toLatin1());
            QCOMPARE(r.header("x-litellm-model-id"), QByteArray("chain"));
        } else {
            QVERIFY2(r.body.contains(comment), r.body.left(300).constData());
            QVERIFY(!r.body.contains("event: error"));
        }
        QCOMPARE(failuresOf(gw.engine(), QStringLiteral("pa"), kind), 1); // onFailure once, with A
        QCOMPARE(gw.engine().marks().size(), 1);
        QCOMPARE(gw.engine().marks().first().provider, QStringLiteral("pa"));
        QCOMPARE(gw.engine().marks().first().model.isEmpty(), faultKind == Fault::Refuse); // transport: whole base URL
        QCOMPARE(gw.engine().pools().totalInFlight(), 0);
    }

    void markedCandidateIsDeferred() {
        GatewayFixture gw;
        gw.anthropicA.setFault(fault(Fault::Status, 503));
        gw.start();
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("one"), false))
                     .status,
                 200);
        const int seenByA = gw.anthropicA.requests().size();
        gw.anthropicA.clearFault();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("two"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(gw.anthropicA.requests().size(), seenByA); // A not contacted while marked
        // Clearing the mark through the admin API brings A back at once.
        const auto cleared = gw.del(QStringLiteral("/admin/marks?provider=pa"));
        QCOMPARE(cleared.json().value(QStringLiteral("cleared")).toInt(), 1);
        const auto r3 = gw.post(QStringLiteral("/v1/messages"),
                                GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("three"), false));
        QCOMPARE(r3.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
    }

    // Probe I3 1: while pa/claude-a's mark lasted, requests to the chain were answered by pb/gpt-b as
    // though it were the route's first choice: attempts 1, no fallback headers, no row and no log line
    // for pa. Only the request that set the mark said it failed over. Now each one passed over for
    // its mark says so on every surface, in the words the first request used.
    void aCandidatePassedOverForItsMarkIsNamedOnEverySurface() {
        test::FakeClock clock;
        clock.advance(1000);
        GatewayFixture gw;
        gw.clock = &clock;
        gw.anthropicA.pushFault(fault(Fault::Status, 503));
        gw.start();
        QSignalSpy logged(gw.engine().telemetry(), &telemetry::Telemetry::logLine);
        const QJsonObject json = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false);
        const auto first = gw.post(QStringLiteral("/v1/messages"), json);
        QCOMPARE(first.header("x-switchman-fallback-from"), QByteArray("pa/claude-a"));
        QCOMPARE(first.header("x-switchman-fallback-reason"), QByteArray("server_error"));
        const int seenByA = gw.anthropicA.requests().size();

        clock.advance(6000); // the 20 s mark has 14 s left
        const auto r = gw.post(QStringLiteral("/v1/messages"), json);
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(r.header("x-switchman-attempts"), QByteArray("2")); // the skipped row is attempt 1
        QCOMPARE(r.header("x-switchman-fallback-from"), QByteArray("pa/claude-a"));
        QCOMPARE(r.header("x-switchman-fallback-reason"), QByteArray("server_error"));
        QCOMPARE(gw.anthropicA.requests().size(), seenByA); // not asked while marked
        const QByteArray id = r.header("x-switchman-request-id");
        const auto attempts = attemptsOf(gw.engine(), id);
        QCOMPARE(attempts.size(), 2);
        QCOMPARE(attempts[0].attempt, 1);
        QCOMPARE(attempts[0].candidate, QStringLiteral("pa/claude-a"));
        QCOMPARE(attempts[0].outcome, telemetry::AttemptOutcome::Skipped);
        QCOMPARE(attempts[0].failure, QStringLiteral("server_error"));
        QCOMPARE(attempts[0].logOutcome, QStringLiteral("skipped"));
        QCOMPARE(attempts[0].message, QStringLiteral("marked down (server_error), 14 s left"));
        QCOMPARE(attempts[1].attempt, 2);
        QCOMPARE(attempts[1].outcome, telemetry::AttemptOutcome::Committed);
        bool sawSkipLine = false;
        for (const auto &args : logged) {
            const auto o = args.at(0).toJsonObject();
            sawSkipLine |=
                o.value(QStringLiteral("requestId")).toString() == QLatin1String(id) &&
                o.value(QStringLiteral("outcome")).toString() == QLatin1String("skipped") &&
                o.value(QStringLiteral("resolvedProvider")).toString() == QLatin1String("pa") &&
                o.value(QStringLiteral("failure")).toString() == QLatin1String("server_error") &&
                o.value(QStringLiteral("reason")).toString() == QLatin1String("marked down (server_error), 14 s left");
        }
        QVERIFY(sawSkipLine);
        // The admin API's rows say the same.
        const auto rows = gw.get(QStringLiteral("/admin/attempts")).json().value(QStringLiteral("attempts")).toArray();
        bool sawRow = false;
        for (const auto &row : rows) {
            const auto o = row.toObject();
            sawRow |= o.value(QStringLiteral("requestId")).toString() == QLatin1String(id) &&
                      o.value(QStringLiteral("candidate")).toString() == QLatin1String("pa/claude-a") &&
                      o.value(QStringLiteral("outcome")).toString() == QLatin1String("skipped");
        }
        QVERIFY(sawRow);

        // A stream has no fallback headers (they went out before any failover): its comment says it.
        const auto streamed =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), true));
        QVERIFY2(streamed.body.contains(": switchman candidate=pb/gpt-b attempt=2 fallback-from=pa/claude-a "
                                        "fallback-reason=server_error\n"),
                 streamed.body.left(300).constData());
        QCOMPARE(gw.anthropicA.requests().size(), seenByA);

        // Every candidate marked: the first is asked and answers. Nothing was rerouted: nothing said.
        failover::UpstreamFailure down;
        down.kind = failover::FailureKind::RateLimited;
        gw.engine().markTable().mark(
            QStringLiteral("local"),
            {QStringLiteral("pb"), QStringLiteral("gpt-b"), gw.openaiB.baseUrl() + QStringLiteral("/v1")}, down);
        const auto all = gw.post(QStringLiteral("/v1/messages"), json);
        QCOMPARE(all.status, 200);
        QCOMPARE(all.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
        QCOMPARE(all.header("x-switchman-attempts"), QByteArray("1"));
        QVERIFY(all.header("x-switchman-fallback-from").isEmpty());
        QVERIFY(all.header("x-switchman-fallback-reason").isEmpty());
        QCOMPARE(attemptsOf(gw.engine(), all.header("x-switchman-request-id")).size(), 1);
    }

    // The candidate passed over for its mark is still the chain's last resort: when the one asked
    // instead fails, it is asked, and its answer fell back from the one that failed, not from itself.
    void aMarkedCandidateThatAnswersLastIsNoFallbackOfItself() {
        test::FakeClock clock;
        clock.advance(1000);
        GatewayFixture gw;
        gw.clock = &clock;
        gw.config.providers[QStringLiteral("pb")].maxRetries = 0;
        gw.openaiB.pushFault(fault(Fault::Status, 503));
        gw.start();
        failover::UpstreamFailure down;
        down.kind = failover::FailureKind::Transport;
        gw.engine().markTable().mark(QStringLiteral("local"),
                                     {QStringLiteral("pa"), QStringLiteral("claude-a"), gw.anthropicA.baseUrl()}, down);
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
        QCOMPARE(r.header("x-switchman-attempts"), QByteArray("3"));
        QCOMPARE(r.header("x-switchman-fallback-from"), QByteArray("pb/gpt-b"));
        QCOMPARE(r.header("x-switchman-fallback-reason"), QByteArray("server_error"));
        const auto attempts = attemptsOf(gw.engine(), r.header("x-switchman-request-id"));
        QCOMPARE(attempts.size(), 3);
        QCOMPARE(attempts[0].candidate, QStringLiteral("pa/claude-a"));
        QCOMPARE(attempts[0].outcome, telemetry::AttemptOutcome::Skipped);
        QCOMPARE(attempts[0].message, QStringLiteral("marked down (transport), 20 s left"));
        QCOMPARE(attempts[1].candidate, QStringLiteral("pb/gpt-b"));
        QCOMPARE(attempts[1].outcome, telemetry::AttemptOutcome::Failed);
        QCOMPARE(attempts[2].candidate, QStringLiteral("pa/claude-a"));
        QCOMPARE(attempts[2].outcome, telemetry::AttemptOutcome::Committed);
    }

    // Probe I3 2: a field dropped from a JSON request was said only in x-switchman-dropped: the
    // "converted without" line was written for streams alone, and no attempt record carried it, so
    // /admin/attempts, the event feed and the window never said the request went without it.
    void whatTheAnswersRequestWentWithoutIsLoggedAndRecorded_data() {
        QTest::addColumn<bool>("stream");
        QTest::newRow("json") << false;
        QTest::newRow("stream") << true;
    }
    void whatTheAnswersRequestWentWithoutIsLoggedAndRecorded() {
        QFETCH(bool, stream);
        GatewayFixture gw;
        gw.start();
        QSignalSpy logged(gw.engine().telemetry(), &telemetry::Telemetry::logLine);
        // A Claude client's effort with thinking off: no other API has it (translation_rules.md).
        const QJsonObject body{{"model", "pb/gpt-b"},
                               {"max_tokens", 100},
                               {"stream", stream},
                               {"thinking", QJsonObject{{"type", "disabled"}}},
                               {"output_config", QJsonObject{{"effort", "low"}}},
                               {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "hi"}}}}};
        const auto r = gw.post(QStringLiteral("/v1/messages"), body);
        QCOMPARE(r.status, 200);
        if (stream)
            QVERIFY(r.body.contains(" dropped=output_config.effort"));
        else
            QCOMPARE(r.header("x-switchman-dropped"), QByteArray("output_config.effort"));
        const QString id = QString::fromLatin1(r.header("x-switchman-request-id"));
        bool sawLine = false;
        for (const auto &args : logged) {
            const auto o = args.at(0).toJsonObject();
            sawLine |= o.value(QStringLiteral("msg")).toString() == QLatin1String("converted without") &&
                       o.value(QStringLiteral("requestId")).toString() == id &&
                       o.value(QStringLiteral("fields")).toString() == QLatin1String("output_config.effort");
        }
        QVERIFY(sawLine);
        const auto attempts = attemptsOf(gw.engine(), id.toLatin1());
        QCOMPARE(attempts.size(), 1);
        QCOMPARE(attempts[0].dropped, QStringList{QStringLiteral("output_config.effort")});
        const auto rows = gw.get(QStringLiteral("/admin/attempts")).json().value(QStringLiteral("attempts")).toArray();
        QVERIFY(!rows.isEmpty());
        const auto row = rows.first().toObject(); // newest first
        QCOMPARE(row.value(QStringLiteral("requestId")).toString(), id);
        QCOMPARE(row.value(QStringLiteral("dropped")).toArray(), QJsonArray{QStringLiteral("output_config.effort")});
    }

    // stallAfter200HitsBudget and providerRetryingA503IsCutByBudget only waited for the budget
    // on the real clock: they are tests/unit/test_attempt_loop.cpp now (FakeClock).

    void clientAbortWhileHeldStartsNoFollower() {
        GatewayFixture gw;
        gw.anthropicA.setFault(fault(Fault::StallBeforeHeaders));
        gw.start();
        QNetworkReply *reply =
            gw.postAsync(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), true));
        QTRY_COMPARE(gw.anthropicA.requests().size(), 1);
        QSignalSpy closed(&gw.anthropicA, &demo::FakeUpstream::connectionClosed);
        reply->abort();
        QTRY_VERIFY(closed.count() >= 1); // the upstream connection is closed at once
        QTest::qWait(200);
        QCOMPARE(gw.openaiB.requests().size(), 0); // no follower started
        bool sawAbort = false;
        for (const auto &a : gw.engine().telemetry()->attempts(-1))
            sawAbort |= a.outcome == telemetry::AttemptOutcome::Aborted;
        QVERIFY(sawAbort);
        QTRY_COMPARE(gw.engine().activeRequests(), 0);
        QCOMPARE(gw.engine().pools().totalInFlight(), 0);
        reply->deleteLater();
    }

    void aClientsOwnTimeoutBringsTheFallbackInsideIt() {
        // An SDK client with its own timeout (X-Stainless-Timeout, seconds) leaves before the attempt
        // budget (half the deadline) fires: its SDK asks again, and a stalled first candidate got
        // every retry, the healthy fallback never asked (probe R1 1). The request's deadline comes
        // inside what the client waits, so the budget cuts the stall in time. The cut is on the
        // client's clock, though: no mark, no failure counted (probe S2 F2: a client that waits 3 s
        // took a provider answering in 1.8 s away from every other client of its tenant).
        FakeClock clock;
        GatewayFixture gw;
        gw.clock = &clock;
        gw.config.failover.deadlineMs = 120000;
        gw.anthropicA.setFault(fault(Fault::StallBeforeHeaders));
        gw.start();
        const auto body = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("hi"), false);
        QNetworkReply *reply = gw.postAsync(QStringLiteral("/v1/messages"), body, {{"X-Stainless-Timeout", "4"}});
        QTRY_COMPARE(gw.anthropicA.requests().size(), 1);
        clock.advance(1874); // the budget: half of 4 s less the answer's margin
        QTest::qWait(50);
        QCOMPARE(gw.openaiB.requests().size(), 0);
        clock.advance(1);
        const auto r = gw.wait(reply);
        QVERIFY2(r.status == 200, r.body.constData());
        QCOMPARE(gw.openaiB.requests().size(), 1);
        QVERIFY(gw.engine().marks().isEmpty());
        reply->deleteLater();
        // Without the header, the gateway's own budget (half of 120 s) cuts the stall, and marks it.
        QNetworkReply *own = gw.postAsync(QStringLiteral("/v1/messages"), body);
        QTRY_COMPARE(gw.anthropicA.requests().size(), 2);
        clock.advance(60000);
        QCOMPARE(gw.wait(own).status, 200);
        own->deleteLater();
        QCOMPARE(gw.engine().marks().size(), 1);

        // Not heeded: a stream (its headers stop the SDK's clock), a wait too short to judge a
        // provider by, and anything but seconds.
        FakeClock clock2;
        GatewayFixture other;
        other.clock = &clock2;
        other.config.failover.deadlineMs = 120000;
        other.anthropicA.setFault(fault(Fault::StallBeforeHeaders));
        other.start();
        const QList<QPair<QByteArray, QByteArray>> unheeded[] = {
            {{"X-Stainless-Timeout", "1"}}, {{"X-Stainless-Timeout", "4e0"}}, {{"X-Stainless-Timeout", "-4"}}};
        QList<QNetworkReply *> waiting;
        for (const auto &headers : unheeded)
            waiting << other.postAsync(QStringLiteral("/v1/messages"), body, headers);
        waiting << other.postAsync(QStringLiteral("/v1/messages"),
                                   GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("hi"), true),
                                   {{"X-Stainless-Timeout", "4"}});
        QTRY_COMPARE(other.anthropicA.requests().size(), 4);
        clock2.advance(30000);
        QTest::qWait(100);
        QCOMPARE(other.openaiB.requests().size(), 0);
        clock2.advance(30000); // the configured budget
        for (QNetworkReply *w : std::as_const(waiting)) {
            QCOMPARE(other.wait(w).status, 200);
            w->deleteLater();
        }
        QCOMPARE(other.openaiB.requests().size(), 4);
    }

    void aToolNameThatCouldNotBeRelayedBackIsRefusedUpFront() {
        // Probe S2 F5: a client's tool named over 256 bytes, or with a control character, went upstream;
        // the model's call to it failed the answer as the upstream's fault: four billed calls, every
        // candidate of the chain marked for the tenant, a 502. Now the request's own 400, in its shape.
        GatewayFixture gw;
        gw.start();
        const QJsonObject schema{{QStringLiteral("type"), QStringLiteral("object")}};
        for (const QString &name : {QString(264, QLatin1Char('x')), QStringLiteral("get\tweather")}) {
            const QJsonObject function{{QStringLiteral("name"), name}, {QStringLiteral("parameters"), schema}};
            QJsonObject chat = GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("hi"), false);
            chat.insert(QStringLiteral("tools"),
                        QJsonArray{QJsonObject{{QStringLiteral("type"), QStringLiteral("function")},
                                               {QStringLiteral("function"), function}}});
            QJsonObject messages = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("hi"), false);
            messages.insert(QStringLiteral("tools"), QJsonArray{QJsonObject{{QStringLiteral("name"), name},
                                                                            {QStringLiteral("input_schema"), schema}}});
            QJsonObject responses = routeBody(QStringLiteral("/v1/responses"), QStringLiteral("chain"), false);
            QJsonObject responsesTool = function;
            responsesTool.insert(QStringLiteral("type"), QStringLiteral("function"));
            responses.insert(QStringLiteral("tools"), QJsonArray{responsesTool});
            QJsonObject pi = routeBody(QStringLiteral("/v1/pi/stream"), QStringLiteral("chain"), false);
            QJsonObject context = pi.value(QStringLiteral("context")).toObject();
            context.insert(QStringLiteral("tools"), QJsonArray{function});
            pi.insert(QStringLiteral("context"), context);
            const QList<QPair<QString, QJsonObject>> requests{{QStringLiteral("/v1/chat/completions"), chat},
                                                              {QStringLiteral("/v1/messages"), messages},
                                                              {QStringLiteral("/v1/responses"), responses},
                                                              {QStringLiteral("/v1/pi/stream"), pi}};
            for (const auto &[route, body] : requests) {
                const auto r = gw.post(route, body);
                QVERIFY2(r.status == 400, qPrintable(route + QStringLiteral(": ") + QString::fromUtf8(r.body)));
                QVERIFY2(r.body.contains("tools[0]") && r.body.contains("could not be relayed back"),
                         r.body.constData());
                if (route == QLatin1String("/v1/messages"))
                    QCOMPARE(r.json().value(QStringLiteral("type")).toString(), QStringLiteral("error"));
            }
        }
        QCOMPARE(gw.anthropicA.requests().size(), 0);
        QCOMPARE(gw.openaiB.requests().size(), 0);
        QVERIFY(gw.engine().marks().isEmpty());
    }

    void slowFirstDeltaStillAnswers() {
        GatewayFixture gw;
        gw.config.failover.deadlineMs = 4000; // budget 2 s
        Fault slow;
        slow.chunkDelayMs = 300; // first delta (about 0.9 s) well inside the budget, the whole answer after it
        gw.anthropicA.setFault(slow);
        gw.start();
        QElapsedTimer t;
        t.start();
        const auto r =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("chain"),
                                                  QStringLiteral("one two three four five six seven eight"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
        QVERIFY2(t.elapsed() > 2000, "the answer must outlast the budget for this test to mean anything");
        QCOMPARE(gw.openaiB.requests().size(), 0);
    }

    void textThenErrorDoesNotFailOver() {
        GatewayFixture gw;
        gw.anthropicA.setFault(fault(Fault::InBandErrorAfterContent));
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), true));
        QCOMPARE(r.status, 200);
        QVERIFY(!anthropicStreamText(r.body).isEmpty()); // A's text
        QVERIFY(r.body.contains("event: error"));        // and A's error
        QVERIFY(!r.body.contains("message_stop"));       // never a fake success end
        QCOMPARE(gw.openaiB.requests().size(), 0);
    }

    void inBandErrorBeforeContentFailsOver() {
        GatewayFixture gw;
        gw.anthropicA.setFault(fault(Fault::InBandErrorBeforeContent));
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/chat/completions"),
                               GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("x"), true));
        QCOMPARE(r.status, 200);
        QVERIFY(openaiStreamText(r.body).contains(QStringLiteral("pb/gpt-b")));
        QVERIFY(r.body.trimmed().endsWith("data: [DONE]"));
    }

    void inBandErrorAfterTheStartIsClassifiedAsWhatItSays_data() {
        QTest::addColumn<bool>("stream");
        QTest::newRow("stream") << true;
        QTest::newRow("non-stream") << false;
    }

    void inBandErrorAfterTheStartIsClassifiedAsWhatItSays() {
        // Anthropic sends a mid-stream overload after message_start and an empty text block: the
        // error is the provider's word (server_error, this model only), not a cut connection that
        // marks the whole host; a deterministic one stops with its own status.
        QFETCH(bool, stream);
        const QByteArray start =
            anthropicSse(
                "message_start",
                R"({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","usage":{"input_tokens":3,"output_tokens":0}}})") +
            anthropicSse("content_block_start",
                         R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})");
        {
            GatewayFixture gw;
            gw.anthropicA.setRawReply(
                start + anthropicSse("error",
                                     R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"));
            gw.start();
            const auto r = gw.post(QStringLiteral("/v1/chat/completions"),
                                   GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("x"), stream));
            QCOMPARE(r.status, 200);
            QCOMPARE(failuresOf(gw.engine(), QStringLiteral("pa"), QStringLiteral("server_error")), 1);
            QCOMPARE(failuresOf(gw.engine(), QStringLiteral("pa"), QStringLiteral("transport")), 0);
            const auto attempts = attemptsOf(gw.engine(), r.header("x-switchman-request-id"));
            QVERIFY(!attempts.isEmpty());
            QVERIFY2(attempts.first().message.contains(QStringLiteral("Overloaded")),
                     qPrintable(attempts.first().message));
        }
        {
            GatewayFixture gw;
            gw.anthropicA.setRawReply(
                start +
                anthropicSse(
                    "error",
                    R"({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 205000 tokens > 200000 maximum"}})"));
            gw.start();
            const auto r = gw.post(QStringLiteral("/v1/messages"),
                                   GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), stream));
            QCOMPARE(gw.openaiB.requests().size(), 0); // deterministic: no failover
            QCOMPARE(gw.anthropicA.requests().size(), 1);
            QVERIFY(gw.engine().marks().isEmpty());
            QVERIFY2(r.body.contains("prompt is too long"), r.body.constData());
            if (!stream)
                QCOMPARE(r.status, 400);
        }
    }

    void usageLimitRotatesThroughThePool() {
        GatewayFixture gw;
        qputenv("SWITCHMAN_TEST_K1", "test-key-one");
        qputenv("SWITCHMAN_TEST_K2", "test-key-two");
        qputenv("SWITCHMAN_TEST_K3", "test-key-three");
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("env:SWITCHMAN_TEST_K1"),
                                                                 QStringLiteral("env:SWITCHMAN_TEST_K2"),
                                                                 QStringLiteral("env:SWITCHMAN_TEST_K3")};
        const QByteArray usage =
            R"({"type":"error","error":{"type":"rate_limit_error","message":"usage_limit_reached"}})";
        gw.anthropicA.pushFault(fault(Fault::Status, 429, {}, usage));
        gw.anthropicA.pushFault(
            fault(Fault::Status, 401, {},
                  R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}})"));
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
        const auto seen = gw.anthropicA.requests();
        QCOMPARE(seen.size(), 3);
        QCOMPARE(seen[0].header("x-api-key"), QByteArray("test-key-one"));
        QCOMPARE(seen[1].header("x-api-key"), QByteArray("test-key-two"));
        QCOMPARE(seen[2].header("x-api-key"), QByteArray("test-key-three"));
        QVERIFY(gw.engine().marks().isEmpty()); // credential problems set no mark
        // Exhausted credentials are remembered: the next request starts at the third.
        gw.post(QStringLiteral("/v1/messages"),
                GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("y"), false));
        QCOMPARE(gw.anthropicA.requests().last().header("x-api-key"), QByteArray("test-key-three"));
    }

    void usageLimitWithOneCredentialFailsOver() {
        GatewayFixture gw;
        qputenv("SWITCHMAN_TEST_ONLY", "test-key-only");
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("env:SWITCHMAN_TEST_ONLY")};
        gw.anthropicA.setFault(
            fault(Fault::Status, 429, {},
                  R"({"type":"error","error":{"type":"rate_limit_error","message":"usage_limit_reached"}})"));
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(r.header("x-switchman-fallback-reason"), QByteArray("credential_exhausted"));
        QVERIFY(gw.engine().marks().isEmpty());
    }

    void credentialStoreFailureIsSetupError() {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:pa-main")};
        gw.secrets.mode = ScriptedSecretStore::Mode::Fail;
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-fallback-reason"), QByteArray("setup_error"));
        QCOMPARE(failuresOf(gw.engine(), QStringLiteral("pa"), QStringLiteral("setup_error")), 1);
        QVERIFY(gw.engine().marks().isEmpty()); // setup failures never mark
        QCOMPARE(gw.anthropicA.requests().size(), 0);
    }

    void keychainSecretIsUsedAndCached() {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:pa-main")};
        gw.secrets.secrets.insert(QStringLiteral("pa-main"), "test-keychain-value");
        gw.start();
        for (int i = 0; i < 2; ++i)
            QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                             GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false))
                         .status,
                     200);
        QCOMPARE(gw.anthropicA.requests().last().header("x-api-key"), QByteArray("test-keychain-value"));
        QCOMPARE(gw.secrets.reads, 1);
    }

    void streamingFollowerWithoutCredentialGetsInBandError() {
        GatewayFixture gw;
        gw.anthropicA.setFault(fault(Fault::Status, 503));
        gw.config.providers[QStringLiteral("pb")].credentials = {QStringLiteral("env:SWITCHMAN_TEST_UNSET_VARIABLE")};
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), true));
        QCOMPARE(r.status, 200); // headers went out when A's call started
        QVERIFY(r.body.contains("event: error"));
        QVERIFY(!r.body.contains("message_stop"));
    }

    // An Anthropic client asks for thinking; the follower is configured `"reasoning": false`
    // (gpt-4o refuses reasoning_effort with a 400 that would end the request): it gets the
    // request without reasoning_effort and answers.
    void followerConfiguredNotToReasonGetsNoReasoningEffort() {
        GatewayFixture gw;
        gw.config.models[QStringLiteral("pb/gpt-b")].reasoning = false;
        gw.anthropicA.setFault(fault(Fault::Status, 503));
        gw.start();
        QJsonObject body = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false);
        body.insert(QStringLiteral("max_tokens"), 8000);
        body.insert(QStringLiteral("thinking"), QJsonObject{{QStringLiteral("type"), QStringLiteral("enabled")},
                                                            {QStringLiteral("budget_tokens"), 4000}});
        const auto r = gw.post(QStringLiteral("/v1/messages"), body);
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QVERIFY(gw.anthropicA.requests().last().body.contains("\"thinking\"")); // the first candidate got it
        const QList<demo::RecordedRequest> sent = gw.openaiB.requests();
        QCOMPARE(sent.size(), 1);
        QVERIFY(!sent.last().body.contains("reasoning_effort"));
        QVERIFY(sent.last().body.contains("\"max_completion_tokens\":8000") ||
                sent.last().body.contains("\"max_tokens\":8000"));
    }

    void incompatibleFollowersAreSkippedWithoutFailure() {
        GatewayFixture gw;
        config::ModelConfig embed;
        embed.provider = QStringLiteral("pb");
        embed.id = QStringLiteral("embed-b");
        embed.kind = QStringLiteral("embedding");
        gw.config.models.insert(embed.key(), embed);
        gw.config.routes[QStringLiteral("chain")].candidates = {
            QStringLiteral("pa/claude-a"), QStringLiteral("pb/embed-b"), QStringLiteral("pc/claude-c")};
        gw.anthropicA.setFault(fault(Fault::Status, 503));
        gw.start();
        QSignalSpy logged(gw.engine().telemetry(), &telemetry::Telemetry::logLine);
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        for (int i = logged.count() - 1; i >= 0; --i)
            if (logged.at(i).at(0).toJsonObject().value(QStringLiteral("msg")).toString() !=
                QLatin1String("candidate failover"))
                logged.removeAt(i);
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pc/claude-c"));
        QCOMPARE(failuresOf(gw.engine(), QStringLiteral("pb"), QStringLiteral("setup_error")), 0);
        const auto attempts = attemptsOf(gw.engine(), r.header("x-switchman-request-id"));
        QCOMPARE(attempts.size(), 3);
        QCOMPARE(attempts[1].outcome, telemetry::AttemptOutcome::Skipped);
        QCOMPARE(attempts[2].outcome, telemetry::AttemptOutcome::Committed);
        QCOMPARE(logged.count(), 2); // one line for A's failure, one for the skipped follower
        QCOMPARE(logged.at(1).at(0).toJsonObject().value(QStringLiteral("outcome")).toString(),
                 QStringLiteral("skipped"));
        QCOMPARE(logged.at(0).at(0).toJsonObject().value(QStringLiteral("failure")).toString(),
                 QStringLiteral("server_error"));
        QCOMPARE(logged.at(0).at(0).toJsonObject().value(QStringLiteral("next")).toString(),
                 QStringLiteral("pc/claude-c")); // the one asked next, not the embedding model passed over
    }

    // A route shaped like SPEC 4's `sonnet` (image model, text-only model, image model) whose first
    // candidate is marked down: the text-only follower is asked first and cannot take an image. It is
    // skipped, as any follower is, not a 400 "does not accept image input" for the whole mark's TTL
    // (probe G4 1): the next image model answers, or the marked first one when none is left.
    void aFollowerAskedFirstWhileTheFirstIsMarkedIsSkippedNotARefusal() {
        GatewayFixture gw;
        config::ModelConfig text = gw.config.models.value(QStringLiteral("pb/gpt-b"));
        text.id = QStringLiteral("text-b");
        text.input = {QStringLiteral("text")};
        gw.config.models.insert(text.key(), text);
        gw.config.routes[QStringLiteral("chain")].candidates = {
            QStringLiteral("pa/claude-a"), QStringLiteral("pb/text-b"), QStringLiteral("pc/claude-c")};
        config::RouteConfig two;
        two.name = QStringLiteral("two");
        two.candidates = {QStringLiteral("pa/claude-a"), QStringLiteral("pb/text-b")};
        gw.config.routes.insert(two.name, two);
        config::RouteConfig textFirst;
        textFirst.name = QStringLiteral("text-first");
        textFirst.candidates = {QStringLiteral("pb/text-b"), QStringLiteral("pc/claude-c")};
        gw.config.routes.insert(textFirst.name, textFirst);
        gw.anthropicA.pushFault(fault(Fault::Status, 503));
        gw.start();
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false))
                     .status,
                 200);
        QCOMPARE(gw.engine().marks().size(), 1); // pa/claude-a is down for this tenant

        auto withImage = [](const QString &route) {
            QJsonObject body = GatewayFixture::anthropicBody(route, QStringLiteral("x"), false);
            QJsonArray content = {
                QJsonObject{{"type", "text"}, {"text", "what is this?"}},
                QJsonObject{
                    {"type", "image"},
                    {"source", QJsonObject{{"type", "base64"}, {"media_type", "image/png"}, {"data", "iVBORw0K"}}}}};
            body.insert(QStringLiteral("messages"), QJsonArray{QJsonObject{{"role", "user"}, {"content", content}}});
            return body;
        };
        gw.anthropicA.clearRequests();
        const auto r = gw.post(QStringLiteral("/v1/messages"), withImage(QStringLiteral("chain")));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pc/claude-c"));
        QCOMPARE(gw.openaiB.requests().size(), 1);    // only the first, text request reached it
        QCOMPARE(gw.anthropicA.requests().size(), 0); // still marked: not asked while another can answer

        // No other image model: the marked first candidate is asked after all, and answers.
        const auto back = gw.post(QStringLiteral("/v1/messages"), withImage(QStringLiteral("two")));
        QCOMPARE(back.status, 200);
        QCOMPARE(back.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
        QCOMPARE(gw.openaiB.requests().size(), 1);
        // Its rows say what happened: no "marked down" row for the candidate that then
        // answered (probe IV 2: it was reported passed over for the text-only follower, then asked),
        // and no fallback headers, since the route's first choice answered.
        const auto rows = attemptsOf(gw.engine(), back.header("x-switchman-request-id"));
        QCOMPARE(rows.size(), 2);
        QCOMPARE(rows[0].candidate, QStringLiteral("pb/text-b"));
        QCOMPARE(rows[0].outcome, telemetry::AttemptOutcome::Skipped);
        QCOMPARE(rows[0].message, QStringLiteral("pb/text-b does not accept image input"));
        QCOMPARE(rows[1].candidate, QStringLiteral("pa/claude-a"));
        QCOMPARE(rows[1].outcome, telemetry::AttemptOutcome::Committed);
        QCOMPARE(back.header("x-switchman-fallback-from"), QByteArray());
        QCOMPARE(back.header("x-switchman-attempts"), QByteArray("2"));

        // The chain's first candidate unable to take it fails as it would without failover: a 400 naming it.
        const auto refused = gw.post(QStringLiteral("/v1/messages"), withImage(QStringLiteral("text-first")));
        QCOMPARE(refused.status, 400);
        QVERIFY2(refused.body.contains("pb/text-b does not accept image input"), refused.body.constData());
    }

    // A reload that removes a provider, or moves it to another base URL, takes its marks with it: they
    // were listed as down in /admin/marks and the window, and applied again to a provider of the same
    // name that came back within the TTL (probe G1 5). Marks of what stays are kept.
    void aReloadDropsTheMarksOfWhatItRemoved() {
        GatewayFixture gw;
        gw.config.routes[QStringLiteral("chain")].candidates = {
            QStringLiteral("pa/claude-a"), QStringLiteral("pc/claude-c"), QStringLiteral("pb/gpt-b")};
        gw.anthropicA.pushFault(fault(Fault::Status, 503));
        gw.anthropicC.pushFault(fault(Fault::Status, 503));
        gw.start();
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false))
                     .status,
                 200);
        QCOMPARE(gw.engine().marks().size(), 2);

        config::Config next = gw.config;
        next.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pc/claude-c"), QStringLiteral("pb/gpt-b")};
        next.providers.remove(QStringLiteral("pa"));
        next.models.remove(QStringLiteral("pa/claude-a"));
        gw.engine().applyConfig(next);
        QCOMPARE(gw.engine().marks().size(), 1);
        QCOMPARE(gw.engine().marks().first().provider, QStringLiteral("pc"));

        next.providers[QStringLiteral("pc")].baseUrl += QStringLiteral("/moved");
        gw.engine().applyConfig(next);
        QVERIFY(gw.engine().marks().isEmpty());
    }

    // The failover log line names the client that sent the request. The gateway keeps the text of
    // the last client address it wrote (every request from one machine has the same); a request
    // from another address must get its own, and the one after it the first again.
    void theFailoverLogNamesEachRequestsOwnClient() {
        GatewayFixture gw;
        gw.anthropicA.setFault(fault(Fault::Status, 503));
        gw.start();
        QSignalSpy logged(gw.engine().telemetry(), &telemetry::Telemetry::logLine);
        const QByteArray body =
            QJsonDocument(GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false))
                .toJson(QJsonDocument::Compact);
        const QByteArray request = "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                   "Content-Length: " +
                                   QByteArray::number(body.size()) + "\r\n\r\n" + body;
        const QList<QHostAddress> from = {QHostAddress(QStringLiteral("127.0.0.2")), QHostAddress::LocalHost,
                                          QHostAddress(QStringLiteral("127.0.0.3")),
                                          QHostAddress(QStringLiteral("127.0.0.3")), QHostAddress::LocalHost};
        QStringList peers;
        for (const QHostAddress &address : from) {
            gw.engine().clearMarks({}); // the first candidate fails again: one failover line per request
            RawHttpClient client(gw.engine().port(), address);
            QVERIFY(client.waitConnected());
            QCOMPARE(client.socket().localAddress(), address);
            const qsizetype before = logged.count();
            client.send(request);
            QVERIFY(client.waitResponse());
            QCOMPARE(client.status(), 200);
            for (qsizetype i = before; i < logged.count(); ++i) {
                const QJsonObject line = logged.at(i).at(0).toJsonObject();
                if (line.value(QStringLiteral("msg")).toString() == QLatin1String("candidate failover"))
                    peers.append(line.value(QStringLiteral("peer")).toString());
            }
        }
        QCOMPARE(peers,
                 (QStringList{QStringLiteral("127.0.0.2"), QStringLiteral("127.0.0.1"), QStringLiteral("127.0.0.3"),
                              QStringLiteral("127.0.0.3"), QStringLiteral("127.0.0.1")}));
    }

    void incompatibleFirstCandidateIsSkippedForOneThatCan_data() {
        QTest::addColumn<bool>("stream");
        QTest::newRow("json") << false;
        QTest::newRow("stream") << true;
    }
    void incompatibleFirstCandidateIsSkippedForOneThatCan() {
        // previous_response_id on /v1/responses. A chat-completions upstream holds
        // no such state: it is skipped with a row naming the field, the Responses upstream answers.
        QFETCH(bool, stream);
        GatewayFixture gw;
        gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pb/gpt-b"),
                                                                QStringLiteral("pd/resp-d")};
        gw.start();
        QJsonObject body{
            {"model", "chain"}, {"input", "and then?"}, {"stream", stream}, {"previous_response_id", "resp_earlier"}};
        const auto r = gw.post(QStringLiteral("/v1/responses"), body);
        QCOMPARE(r.status, 200);
        QCOMPARE(gw.openaiB.requests().size(), 0);
        QCOMPARE(gw.responsesD.requests().size(), 1);
        QCOMPARE(QJsonDocument::fromJson(gw.responsesD.requests().last().body)
                     .object()
                     .value("previous_response_id")
                     .toString(),
                 QStringLiteral("resp_earlier"));
        const auto attempts = attemptsOf(gw.engine(), r.header("x-switchman-request-id"));
        QCOMPARE(attempts.size(), 2);
        QCOMPARE(attempts[0].outcome, telemetry::AttemptOutcome::Skipped);
        QVERIFY2(attempts[0].message.contains(QStringLiteral("previous_response_id")), qPrintable(attempts[0].message));
        QCOMPARE(attempts[1].outcome, telemetry::AttemptOutcome::Committed);
        QVERIFY(gw.engine().marks().isEmpty());

        // With only the incompatible one left: a 400 in the client's format naming the field.
        GatewayFixture only;
        only.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pb/gpt-b")};
        only.start();
        const auto refused = only.post(QStringLiteral("/v1/responses"), body);
        QCOMPARE(refused.status, 400);
        const QJsonObject error = refused.json().value("error").toObject();
        QVERIFY2(error.value("message").toString().contains(QStringLiteral("previous_response_id")),
                 refused.body.constData());
        QCOMPARE(only.openaiB.requests().size(), 0);
    }

    void webSearchWithFunctionsSkipsGeminiForTheNextCandidate() {
        // Claude Code's tools with its web search, the Messages provider down: Gemini refuses
        // grounding beside function declarations with a 400 that would end the request. It is
        // skipped with a row naming why, and the Responses candidate after it answers.
        GatewayFixture gw;
        gw.config.routes[QStringLiteral("chain")].candidates = {
            QStringLiteral("pa/claude-a"), QStringLiteral("pe/gemini-e"), QStringLiteral("pd/resp-d")};
        gw.anthropicA.setFault(fault(Fault::Status, 503));
        gw.start();
        QJsonObject body = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("search"), false);
        body.insert("tools",
                    QJsonArray{QJsonObject{{"name", "read_file"}, {"input_schema", QJsonObject{{"type", "object"}}}},
                               QJsonObject{{"type", "web_search_20250305"}, {"name", "web_search"}, {"max_uses", 5}}});
        const auto r = gw.post(QStringLiteral("/v1/messages"), body);
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pd/resp-d"));
        QCOMPARE(gw.googleE.requests().size(), 0);
        QCOMPARE(gw.responsesD.requests().size(), 1);
        const QJsonArray tools =
            QJsonDocument::fromJson(gw.responsesD.requests().last().body).object().value("tools").toArray();
        QCOMPARE(tools.size(), 2); // the function and the web search, both
        const auto attempts = attemptsOf(gw.engine(), r.header("x-switchman-request-id"));
        QCOMPARE(attempts.size(), 3);
        QCOMPARE(attempts[1].outcome, telemetry::AttemptOutcome::Skipped);
        QVERIFY2(attempts[1].message.contains(QStringLiteral("web_search")), qPrintable(attempts[1].message));
        QCOMPARE(attempts[2].outcome, telemetry::AttemptOutcome::Committed);

        // Web search alone still goes to Gemini.
        body.insert("tools", QJsonArray{QJsonObject{{"type", "web_search_20250305"}, {"name", "web_search"}}});
        const auto alone = gw.post(QStringLiteral("/v1/messages"), body);
        QCOMPARE(alone.status, 200);
        QCOMPARE(alone.header("x-switchman-candidate"), QByteArray("pe/gemini-e"));
        QCOMPARE(QJsonDocument::fromJson(gw.googleE.requests().last().body)
                     .object()
                     .value("tools")
                     .toArray()[0]
                     .toObject()
                     .keys(),
                 QStringList{"googleSearch"});
    }

    void chatPassthroughUsageChunkOnlyForClientsThatAskedForIt() {
        // The gateway asks a Chat upstream for usage (to bill it); the usage-only chunk is the
        // client's only with stream_options.include_usage. The usage row is written either way.
        GatewayFixture gw;
        gw.start();
        auto usageChunks = [](const QByteArray &body) {
            int n = 0;
            for (const QByteArray &line : body.split('\n')) {
                if (!line.startsWith("data: {"))
                    continue;
                const QJsonObject o = QJsonDocument::fromJson(line.mid(6)).object();
                n += o.value("usage").isObject() && o.value("choices").toArray().isEmpty();
            }
            return n;
        };
        QSignalSpy usage(gw.engine().telemetry(), &telemetry::Telemetry::usageRecorded);
        QJsonObject body = GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("x"), true);
        body.remove("stream_options");
        const auto plain = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(plain.status, 200);
        QVERIFY2(plain.body.contains("[DONE]"), plain.body.constData());
        QVERIFY2(usageChunks(plain.body) == 0, plain.body.constData());
        QCOMPARE(usage.count(), 1);
        body.insert("stream_options", QJsonObject{{"include_usage", true}});
        const auto asked = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(usageChunks(asked.body), 1);
    }

    void badRequestDoesNotFailOver() {
        GatewayFixture gw;
        gw.anthropicA.setFault(
            fault(Fault::Status, 400, {},
                  R"({"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too large"}})"));
        gw.start();
        QSignalSpy logged(gw.engine().telemetry(), &telemetry::Telemetry::logLine);
        const auto r = gw.post(QStringLiteral("/v1/chat/completions"),
                               GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 400);
        // The stop has its log line, as every failed attempt does (probe I1 1: none was written).
        bool stopLogged = false;
        for (const auto &args : logged) {
            const QJsonObject line = args.at(0).toJsonObject();
            stopLogged |= line.value(QStringLiteral("msg")).toString() == QLatin1String("candidate failover") &&
                          line.value(QStringLiteral("outcome")).toString() == QLatin1String("stop") &&
                          line.value(QStringLiteral("status")).toInt() == 400;
        }
        QVERIFY(stopLogged);
        QVERIFY(r.json()
                    .value(QStringLiteral("error"))
                    .toObject()
                    .value(QStringLiteral("message"))
                    .toString()
                    .contains(QStringLiteral("max_tokens")));
        QCOMPARE(gw.openaiB.requests().size(), 0);
        QVERIFY(gw.engine().marks().isEmpty());
    }

    void aFallbackWithASmallerOutputCapAnswersWithinIt() {
        // Claude Code asks for 32000 output tokens; the first candidate is down and the fallback
        // writes at most 16384, which it says with a 400 that used to end the chain. The gateway
        // asks the fallback once more for its maximum; the client gets the answer, and nothing
        // is marked for the refusal.
        GatewayFixture gw;
        gw.anthropicA.setFault(fault(Fault::Status, 503));
        gw.openaiB.pushFault(
            fault(Fault::Status, 400, {},
                  R"({"error":{"message":"max_tokens is too large: 32000. This model supports at most )"
                  R"(16384 completion tokens, whereas you provided 32000.","type":"invalid_request_error",)"
                  R"("param":"max_tokens","code":"invalid_value"}})"));
        gw.start();
        QJsonObject body = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), true);
        body.insert("max_tokens", 32000);
        const auto r = gw.post(QStringLiteral("/v1/messages"), body);
        QVERIFY2(r.status == 200, r.body.constData());
        QVERIFY2(r.body.contains("message_stop"), r.body.constData());
        QVERIFY2(!r.body.contains("invalid_request_error"), r.body.constData());
        const auto sent = gw.openaiB.requests();
        QCOMPARE(sent.size(), 2);
        const auto maxOf = [](const QByteArray &b) {
            const QJsonObject o = QJsonDocument::fromJson(b).object();
            return o.value("max_completion_tokens").toInt(o.value("max_tokens").toInt());
        };
        QCOMPARE(maxOf(sent[0].body), 32000);
        QCOMPARE(maxOf(sent[1].body), 16384);
        const auto marks = gw.engine().marks();
        QCOMPARE(marks.size(), 1); // pa's 503 only
        QCOMPARE(marks.first().provider, QStringLiteral("pa"));

        // The model's maximum in the configuration: the fallback is asked for it at once.
        GatewayFixture known;
        known.config.models[QStringLiteral("pb/gpt-b")].maxTokens = 4096;
        known.anthropicA.setFault(fault(Fault::Status, 503));
        known.start();
        const auto k = known.post(QStringLiteral("/v1/messages"), body);
        QVERIFY2(k.status == 200, k.body.constData());
        QCOMPARE(known.openaiB.requests().size(), 1);
        QCOMPARE(maxOf(known.openaiB.requests().first().body), 4096);
    }

    void aSignatureAnotherProviderMadeIsDroppedNotFatal() {
        // A Claude Code conversation whose last turn was answered by another provider of the
        // Messages API (after a failover): its thinking signature is that provider's, and
        // Anthropic refuses it with a 400, for this request and every later one. The gateway
        // sends the same candidate the history without signed thinking (thinking off for this
        // tool loop, as Messages requires), once; the client gets the answer, nothing is marked.
        GatewayFixture gw;
        gw.anthropicA.pushFault(fault(
            Fault::Status, 400, {},
            R"({"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0: Invalid `signature` in `thinking` block"}})"));
        gw.start();
        const QJsonObject body{
            {"model", "chain"},
            {"max_tokens", 1024},
            {"stream", true},
            {"thinking", QJsonObject{{"type", "enabled"}, {"budget_tokens", 512}}},
            {"messages",
             QJsonArray{QJsonObject{{"role", "user"}, {"content", "read it"}},
                        QJsonObject{{"role", "assistant"},
                                    {"content", QJsonArray{QJsonObject{{"type", "thinking"},
                                                                       {"thinking", "Read a.cpp first."},
                                                                       {"signature", "c2lnbmVkLWJ5LWFub3RoZXI="}},
                                                           QJsonObject{{"type", "tool_use"},
                                                                       {"id", "toolu_1"},
                                                                       {"name", "Read"},
                                                                       {"input", QJsonObject{{"path", "a.cpp"}}}}}}},
                        QJsonObject{{"role", "user"},
                                    {"content", QJsonArray{QJsonObject{{"type", "tool_result"},
                                                                       {"tool_use_id", "toolu_1"},
                                                                       {"content", "int x;"}}}}}}}};
        const auto r = gw.post(QStringLiteral("/v1/messages"), body);
        QVERIFY2(r.status == 200, r.body.constData());
        QVERIFY2(r.body.contains("message_stop"), r.body.constData());
        QVERIFY2(!r.body.contains("invalid_request_error"), r.body.constData());
        const auto sent = gw.anthropicA.requests();
        QCOMPARE(sent.size(), 2);
        QVERIFY(sent[0].body.contains("c2lnbmVkLWJ5LWFub3RoZXI="));
        QVERIFY2(!sent[1].body.contains("c2lnbmVkLWJ5LWFub3RoZXI="), sent[1].body.constData());
        QVERIFY(!sent[1].body.contains("Read a.cpp first."));
        const QJsonObject second = QJsonDocument::fromJson(sent[1].body).object();
        QCOMPARE(second.value("thinking").toObject().value("type").toString(), QStringLiteral("disabled"));
        QVERIFY(second.value("messages").toArray().at(1).toObject().value("content").toArray().size() == 1);
        QCOMPARE(gw.openaiB.requests().size(), 0);
        QVERIFY(gw.engine().marks().isEmpty());
    }

    void aChatServerGetsReasoningContentOnlyWhenItAsksForIt() {
        // A Chat client sends back the reasoning_content of its earlier answers (the gateway writes
        // another API's thinking there too). Most Chat servers get none of it (Groq and Cerebras
        // refuse the field); one in DeepSeek's thinking mode refuses a tool-call turn without it,
        // and then gets the same request once more with each such turn's reasoning_content.
        GatewayFixture gw;
        gw.openaiB.pushFault(fault(
            Fault::Status, 400, {},
            R"({"error":{"message":"Missing `reasoning_content` field in the assistant message at message index 1","type":"invalid_request_error","param":null,"code":"invalid_request_error"}})"));
        gw.start();
        const QJsonObject call{
            {"id", "call_1"}, {"type", "function"}, {"function", QJsonObject{{"name", "read"}, {"arguments", "{}"}}}};
        const QJsonObject body{
            {"model", "pb/gpt-b"},
            {"stream", true},
            {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "read it"}},
                                    QJsonObject{{"role", "assistant"},
                                                {"content", QJsonValue()},
                                                {"reasoning_content", "Read a.cpp first."},
                                                {"tool_calls", QJsonArray{call}}},
                                    QJsonObject{{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "int x;"}}}}};
        const auto r = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QVERIFY2(r.status == 200, r.body.constData());
        QVERIFY2(r.body.contains("[DONE]"), r.body.constData());
        QVERIFY2(!r.body.contains("reasoning_content` field"), r.body.constData());
        const auto sent = gw.openaiB.requests();
        QCOMPARE(sent.size(), 2);
        QVERIFY2(!sent[0].body.contains("reasoning_content"), sent[0].body.constData());
        const QJsonObject turn =
            QJsonDocument::fromJson(sent[1].body).object().value("messages").toArray().at(1).toObject();
        QCOMPARE(turn.value("reasoning_content").toString(), QStringLiteral("Read a.cpp first."));
        QCOMPARE(turn.value("tool_calls").toArray().size(), 1);
        QVERIFY(gw.engine().marks().isEmpty());
        // The server said it once: the next turn goes with it at once, not after another 400
        // (probe W: a 400 and a second try on every turn of the conversation).
        const auto next = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QVERIFY2(next.status == 200, next.body.constData());
        QCOMPARE(gw.openaiB.requests().size(), 3);
        QVERIFY2(gw.openaiB.requests().last().body.contains("\"reasoning_content\":\"Read a.cpp first.\""),
                 gw.openaiB.requests().last().body.constData());
        // It is that model's rule, not the server's: another model behind the same base URL (a router)
        // gets none, where a strict one refused the field until the process ended (probe S2 F3).
        QJsonObject other = body;
        other.insert("model", "pb/strict-model");
        const auto strict = gw.post(QStringLiteral("/v1/chat/completions"), other);
        QVERIFY2(strict.status == 200, strict.body.constData());
        QCOMPARE(gw.openaiB.requests().size(), 4);
        QVERIFY2(!gw.openaiB.requests().last().body.contains("reasoning_content"),
                 gw.openaiB.requests().last().body.constData());
    }

    void aRefusedReasoningSummaryIsLeftOutAndNotAskedForAgain() {
        // A client asking for reasoning reaches an OpenAI Responses model with a summary of the
        // reasoning asked for (the gateway's own addition, so the client can show it). OpenAI refuses
        // it for an organisation that is not verified (probe Q4 9): the chain ended on that 400.
        // The same request goes once more without the summary, and the server is asked for none
        // again.
        GatewayFixture gw;
        gw.responsesD.pushFault(fault(
            Fault::Status, 400, {},
            R"({"error":{"message":"Your organization must be verified to generate reasoning summaries. Please go to the organization settings and click on Verify Organization.","type":"invalid_request_error","param":"reasoning.summary","code":"unsupported_value"}})"));
        gw.start();
        const QJsonObject body{{"model", "pd/resp-d"},
                               {"max_tokens", 4096},
                               {"thinking", QJsonObject{{"type", "enabled"}, {"budget_tokens", 2048}}},
                               {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "hi"}}}}};
        const auto r = gw.post(QStringLiteral("/v1/messages"), body);
        QVERIFY2(r.status == 200, r.body.constData());
        const auto sent = gw.responsesD.requests();
        QCOMPARE(sent.size(), 2);
        const auto reasoningOf = [](const QByteArray &b) {
            return QJsonDocument::fromJson(b).object().value("reasoning").toObject();
        };
        QCOMPARE(reasoningOf(sent[0].body).value("summary").toString(), QStringLiteral("auto"));
        QVERIFY2(!reasoningOf(sent[1].body).contains("summary"), sent[1].body.constData());
        QVERIFY(!reasoningOf(sent[1].body).value("effort").toString().isEmpty()); // still reasoning
        QVERIFY(gw.engine().marks().isEmpty());
        // The next request, a Responses client's own summary among it, goes without at once.
        const QJsonObject own{{"model", "pd/resp-d"},
                              {"input", "hi"},
                              {"reasoning", QJsonObject{{"effort", "low"}, {"summary", "detailed"}}}};
        const auto next = gw.post(QStringLiteral("/v1/responses"), own);
        QVERIFY2(next.status == 200, next.body.constData());
        QCOMPARE(gw.responsesD.requests().size(), 3);
        const QJsonObject third = reasoningOf(gw.responsesD.requests().last().body);
        QCOMPARE(third.value("effort").toString(), QStringLiteral("low"));
        QVERIFY2(!third.contains("summary"), gw.responsesD.requests().last().body.constData());
    }

    void aModelThatWillNotStreamIsAskedForItsAnswerWhole() {
        // OpenAI will not stream o3 or gpt-5 to an organisation that is not verified, and every
        // upstream request streams: the chain stopped there on every request, JSON ones too (probe V1
        // F4). The same request goes once more asking for the answer whole, and that model at that
        // base URL is asked so from then on; another model there still streams.
        GatewayFixture gw;
        config::ModelConfig mini = gw.config.models.value(QStringLiteral("pb/gpt-b"));
        mini.id = QStringLiteral("gpt-mini");
        gw.config.models.insert(mini.key(), mini);
        gw.openaiB.pushFault(
            fault(Fault::Status, 400, {},
                  R"({"error":{"message":"Your organization must be verified to stream this model. Please go to: )"
                  R"(https://platform.openai.com/settings/organization/general and click on Verify Organization.",)"
                  R"("type":"invalid_request_error","param":"stream","code":"unsupported_value"}})"));
        gw.start();
        const auto streamed = [](const QByteArray &body) {
            const QJsonObject o = QJsonDocument::fromJson(body).object();
            return o.value("stream").toBool() || o.contains("stream_options");
        };
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), true));
        QVERIFY2(r.status == 200, r.body.constData());
        QVERIFY2(r.body.contains("message_stop"), r.body.constData());
        auto sent = gw.openaiB.requests();
        QCOMPARE(sent.size(), 2);
        QVERIFY(streamed(sent[0].body));
        QVERIFY2(!streamed(sent[1].body), sent[1].body.constData());
        QCOMPARE(sent[1].header("accept"), QByteArray("application/json"));
        QVERIFY(gw.engine().marks().isEmpty());
        // The next request for that model asks for the answer whole at once.
        const auto next = gw.post(QStringLiteral("/v1/chat/completions"),
                                  GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), false));
        QVERIFY2(next.status == 200, next.body.constData());
        sent = gw.openaiB.requests();
        QCOMPARE(sent.size(), 3);
        QVERIFY2(!streamed(sent[2].body), sent[2].body.constData());
        // Another model at the same base URL still streams.
        const auto other =
            gw.post(QStringLiteral("/v1/chat/completions"),
                    GatewayFixture::openaiBody(QStringLiteral("pb/gpt-mini"), QStringLiteral("hi"), false));
        QVERIFY2(other.status == 200, other.body.constData());
        sent = gw.openaiB.requests();
        QCOMPARE(sent.size(), 4);
        QVERIFY2(streamed(sent[3].body), sent[3].body.constData());
    }

    void anOrganisationsRefusalIsLearnedForItsKeyOnly_data() {
        QTest::addColumn<QByteArray>("refusal");
        QTest::addColumn<QString>("mended"); // the member the mended request changes
        QTest::newRow("reasoning summary")
            << QByteArray(
                   R"({"error":{"message":"Your organization must be verified to generate reasoning summaries.",)"
                   R"("type":"invalid_request_error","param":"reasoning.summary","code":"unsupported_value"}})")
            << QStringLiteral("summary");
        QTest::newRow("stream")
            << QByteArray(R"({"error":{"message":"Your organization must be verified to stream this model.",)"
                          R"("type":"invalid_request_error","param":"stream","code":"unsupported_value"}})")
            << QStringLiteral("stream");
    }
    void anOrganisationsRefusalIsLearnedForItsKeyOnly() {
        // OpenAI refuses a summary, or a model's stream, to an organisation that is not verified: the
        // key's. Learned per base URL, one caller's own key at a passthrough provider (or one key of
        // a pool) took streaming and summaries from every other key at that URL until the process
        // ended (probe AC2 F2). The key that was refused is asked so from then on; the company's key
        // beside it is not.
        QFETCH(QByteArray, refusal);
        QFETCH(QString, mended);
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pd")].credentials = {QStringLiteral("keychain:pd-key")};
        gw.secrets.secrets.insert(QStringLiteral("pd-key"), "shared-key");
        config::ProviderConfig byok = gw.config.providers.value(QStringLiteral("pd"));
        byok.id = QStringLiteral("byok");
        byok.credentials = {QStringLiteral("passthrough")};
        gw.config.providers.insert(byok.id, byok);
        config::ModelConfig model = gw.config.models.value(QStringLiteral("pd/resp-d"));
        model.provider = byok.id;
        gw.config.models.insert(model.key(), model);
        gw.responsesD.pushFault(fault(Fault::Status, 400, {}, refusal));
        gw.start();
        const auto body = [](const QString &model) {
            return QJsonObject{{"model", model},
                               {"input", "hi"},
                               {"stream", true},
                               {"reasoning", QJsonObject{{"effort", "low"}, {"summary", "auto"}}}};
        };
        const QList<QPair<QByteArray, QByteArray>> alicesKey{{"authorization", "Bearer alice-own-key"}};
        // Whether a request sent upstream asks for what was refused.
        const auto asks = [&mended](const demo::RecordedRequest &r) {
            const QJsonObject o = QJsonDocument::fromJson(r.body).object();
            return mended == QLatin1String("stream") ? o.value("stream").toBool()
                                                     : o.value("reasoning").toObject().contains("summary");
        };
        const auto alice = gw.post(QStringLiteral("/v1/responses"), body(QStringLiteral("byok/resp-d")), alicesKey);
        QVERIFY2(alice.status == 200, alice.body.constData());
        auto sent = gw.responsesD.requests();
        QCOMPARE(sent.size(), 2);
        QCOMPARE(sent[0].header("authorization"), QByteArray("Bearer alice-own-key"));
        QVERIFY(asks(sent[0]));
        QVERIFY2(!asks(sent[1]), sent[1].body.constData());
        // The company's key at the same base URL is still asked for it.
        const auto company = gw.post(QStringLiteral("/v1/responses"), body(QStringLiteral("pd/resp-d")));
        QVERIFY2(company.status == 200, company.body.constData());
        sent = gw.responsesD.requests();
        QCOMPARE(sent.size(), 3);
        QCOMPARE(sent[2].header("authorization"), QByteArray("Bearer shared-key"));
        QVERIFY2(asks(sent[2]), sent[2].body.constData());
        // The refused key is not, from its next request on.
        const auto again = gw.post(QStringLiteral("/v1/responses"), body(QStringLiteral("byok/resp-d")), alicesKey);
        QVERIFY2(again.status == 200, again.body.constData());
        sent = gw.responsesD.requests();
        QCOMPARE(sent.size(), 4);
        QCOMPARE(sent[3].header("authorization"), QByteArray("Bearer alice-own-key"));
        QVERIFY2(!asks(sent[3]), sent[3].body.constData());
        QVERIFY(gw.engine().marks().isEmpty());
    }

    void aClaudeToolLoopFailsOverToAMistralModelWithIdsItTakes() {
        // Claude Code's tool loop (ids toolu_…) fails over to a Mistral model on a Chat server, whose
        // validator refuses any id that is not nine characters of [a-zA-Z0-9] (probe Q4 6): the 400
        // ended the chain. The history goes with each id by its alias, a call's and its result's
        // alike; the ids of Mistral's own answer reach the client as Mistral wrote them.
        GatewayFixture gw;
        config::ModelConfig mistral = gw.config.models.value(QStringLiteral("pb/gpt-b"));
        mistral.id = QStringLiteral("mistral-large-latest");
        gw.config.models.insert(mistral.key(), mistral);
        gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pa/claude-a"), mistral.key()};
        gw.anthropicA.setFault(fault(Fault::Status, 503));
        gw.openaiB.setJudge(mistralValidator);
        gw.openaiB.setRawReply(
            "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"mistral-large-latest\","
            "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,"
            "\"id\":\"Zx9Qw2Lp7\",\"type\":\"function\",\"function\":{\"name\":\"read_file\","
            "\"arguments\":\"{\\\"path\\\":\\\"b.py\\\"}\"}}]}}]}\n\n"
            "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},"
            "\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5,"
            "\"total_tokens\":15}}\n\n"
            "data: [DONE]\n\n");
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"), claudeToolLoop(QStringLiteral("chain")));
        QVERIFY2(r.status == 200, r.body.constData());
        const auto sent = gw.openaiB.requests();
        QCOMPARE(sent.size(), 1); // at once: Mistral is told by its model's name
        const QStringList ids = toolIdsOf(sent[0].body);
        QCOMPARE(ids.size(), 2);
        QVERIFY2(nineAlphanumerics(ids), qPrintable(ids.join(',')));
        QCOMPARE(ids[0], ids[1]); // the result still names its call
        QCOMPARE(ids[0], wire::nineCharToolId(QStringLiteral("toolu_01AAA")));
        const QJsonArray content = r.json().value("content").toArray();
        QCOMPARE(content.size(), 1);
        QCOMPARE(content[0].toObject().value("type").toString(), QStringLiteral("tool_use"));
        QCOMPARE(content[0].toObject().value("id").toString(), QStringLiteral("Zx9Qw2Lp7"));
    }

    void aServerThatRefusedAToolCallIdGetsNineAlphanumericsFromThen() {
        // A loopback vLLM serving a Mistral model under a name of the operator's own: nothing tells it
        // is Mistral until it refuses an id. The same candidate gets the request once more with each id
        // by its nine-character alias, and every later request for that model at that base URL goes so
        // at once.
        GatewayFixture gw;
        gw.openaiB.setJudge(mistralValidator);
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"), claudeToolLoop(QStringLiteral("pb/gpt-b")));
        QVERIFY2(r.status == 200, r.body.constData());
        QVERIFY2(!r.body.contains("length of 9"), r.body.constData());
        auto sent = gw.openaiB.requests();
        QCOMPARE(sent.size(), 2);
        QCOMPARE(toolIdsOf(sent[0].body), (QStringList{"toolu_01AAA", "toolu_01AAA"}));
        QVERIFY2(nineAlphanumerics(toolIdsOf(sent[1].body)), sent[1].body.constData());
        QVERIFY(gw.engine().marks().isEmpty());
        // A Chat client's own history (OpenAI's ids) to the same server: nine characters at once.
        const QJsonObject call{
            {"id", "call_1"}, {"type", "function"}, {"function", QJsonObject{{"name", "read"}, {"arguments", "{}"}}}};
        const QJsonObject chat{
            {"model", "pb/gpt-b"},
            {"stream", true},
            {"messages",
             QJsonArray{QJsonObject{{"role", "user"}, {"content", "read it"}},
                        QJsonObject{{"role", "assistant"}, {"content", QJsonValue()}, {"tool_calls", QJsonArray{call}}},
                        QJsonObject{{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "int x;"}}}}};
        const auto next = gw.post(QStringLiteral("/v1/chat/completions"), chat);
        QVERIFY2(next.status == 200, next.body.constData());
        sent = gw.openaiB.requests();
        QCOMPARE(sent.size(), 3);
        const QStringList ids = toolIdsOf(sent[2].body);
        QCOMPARE(ids, (QStringList{wire::nineCharToolId(QStringLiteral("call_1")),
                                   wire::nineCharToolId(QStringLiteral("call_1"))}));

        // The words in the client's own prompt, quoted back by another 400: no mend, nothing learned.
        GatewayFixture echo;
        const QByteArray prompt = "why does it say Tool call id was x1 but must be a-z, A-Z, 0-9, with a length of 9?";
        echo.openaiB.setJudge([prompt](const demo::RecordedRequest &req) -> std::optional<Fault> {
            if (nineAlphanumerics(toolIdsOf(req.body)))
                return std::nullopt; // a mend would have been answered
            return fault(Fault::Status, 400, {},
                         "{\"error\":{\"message\":\"Invalid content: '" + prompt +
                             "' is not allowed\",\"type\":\"invalid_request_error\"}}");
        });
        echo.start();
        QJsonObject asked = chat;
        QJsonArray turns = asked.value("messages").toArray();
        turns.append(QJsonObject{{"role", "user"}, {"content", QString::fromUtf8(prompt)}});
        asked.insert("messages", turns);
        asked.insert("stream", false);
        const auto refused = echo.post(QStringLiteral("/v1/chat/completions"), asked);
        QCOMPARE(refused.status, 400);
        QCOMPARE(echo.openaiB.requests().size(), 1);
    }

    void directSelectorHasNoFollower() {
        GatewayFixture gw;
        gw.anthropicA.setFault(fault(Fault::Status, 503));
        gw.start();
        const auto r =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 503);
        QCOMPARE(r.header("x-switchman-attempts"), QByteArray("1"));
        QCOMPARE(gw.openaiB.requests().size(), 0);
        QCOMPARE(r.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("type")).toString(),
                 QStringLiteral("overloaded_error"));
    }

    void directSelectorRetriesWithBackoffWithoutFollower() {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].maxRetries = 2;
        gw.anthropicA.pushFault(fault(Fault::Status, 503, "0"));
        gw.anthropicA.pushFault(fault(Fault::Status, 529));
        gw.start();
        const auto r =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(gw.anthropicA.requests().size(), 3);
    }

    void aMarkedProviderThatAnswersIsLetBackIn() {
        // A lone candidate is tried while marked. Five failures in a row on a one-second blip made a
        // 300 s mark, and the provider that then answered stayed marked: a route put it last for
        // five minutes (probe S F2). Tries begun while it is marked add no strike (probe H4 1): the
        // blip is one 20 s mark, and the clients are told so. The answer lifts the mark: the
        // route's first choice is its first choice again.
        test::FakeClock clock;
        clock.advance(1000);
        GatewayFixture gw;
        gw.clock = &clock;
        gw.config.providers[QStringLiteral("pa")].maxRetries = 0;
        for (int i = 0; i < 5; ++i)
            gw.anthropicA.pushFault(fault(Fault::Status, 503));
        gw.start();
        const QJsonObject direct =
            GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), false);
        for (int i = 0; i < 5; ++i) {
            clock.advance(300);
            const auto r = gw.post(QStringLiteral("/v1/messages"), direct);
            QCOMPARE(r.status, 503);
            // The lone candidate is tried however it is marked: its mark's TTL is no time to wait for
            // (the upstream named none), and the SDK's own backoff is left to it (probe M1 2).
            QVERIFY2(r.header("retry-after").isEmpty(), r.header("retry-after").constData());
            QVERIFY(r.header("x-should-retry").isEmpty());
        }
        QCOMPARE(gw.engine().marks().size(), 1);
        QCOMPARE(gw.engine().marks().first().strikes, 1);
        clock.advance(300);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), direct).status, 200);
        QVERIFY(gw.engine().marks().isEmpty());
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
        QCOMPARE(gw.openaiB.requests().size(), 0);
    }

    void everyCandidateMarkedGivesRetryAfter() {
        GatewayFixture gw;
        gw.anthropicA.setFault(fault(Fault::Status, 503));
        gw.openaiB.setFault(
            fault(Fault::Status, 429, "42", R"({"error":{"message":"Rate limit reached","type":"rate_limit_error"}})"));
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/chat/completions"),
                               GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 429);
        const int retryAfter = r.header("retry-after").toInt();
        QVERIFY2(retryAfter >= 19 && retryAfter <= 20,
                 r.header("retry-after").constData()); // A's 20 s mark is the shortest
        QCOMPARE(gw.engine().marks().size(), 2);
        const auto marks = gw.get(QStringLiteral("/admin/marks")).json().value(QStringLiteral("marks")).toArray();
        QCOMPARE(marks.size(), 2);
        bool sawB = false;
        for (const auto &m : marks) {
            const auto o = m.toObject();
            if (o.value(QStringLiteral("provider")).toString() == QLatin1String("pb")) {
                sawB = true;
                QCOMPARE(o.value(QStringLiteral("kind")).toString(), QStringLiteral("rate_limited"));
                QCOMPARE(o.value(QStringLiteral("retryAfterMs")).toInt(), 42000);
                QVERIFY(o.value(QStringLiteral("remainingMs")).toInt() > 41000);
            }
        }
        QVERIFY(sawB);
    }

    // The gateway walked the chain and retried its last candidate already: an SDK that retried
    // after the Retry-After (the marks' TTL, which the SDKs sleep uncapped) would walk it again as
    // the marks ran out, striking each again, and its app heard of the outage a minute late
    // (probe M1 1). Told not to retry, it hears at once; Retry-After stays, for the app.
    void aWalkedChainTellsTheSdkNotToWalkItAgain() {
        GatewayFixture gw;
        gw.anthropicA.setFault(fault(Fault::Status, 503));
        gw.openaiB.setFault(fault(Fault::Status, 503));
        gw.config.providers[QStringLiteral("pb")].maxRetries = 0;
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 503);
        QCOMPARE(r.header("x-should-retry"), QByteArray("false"));
        const int retryAfter = r.header("retry-after").toInt();
        QVERIFY2(retryAfter >= 19 && retryAfter <= 20, r.header("retry-after").constData());
    }

    // One try, no retry of the gateway's own (maxRetries 0): the SDK's retries are the only ones,
    // and the upstream's Retry-After is what it is told, not a mark's TTL the lone candidate never
    // waits for (a 429 saying 3 s reached the SDK as 30, 60, 120 s: probe M1 2).
    void aLoneCandidateLeavesRetriesToTheSdkWithTheUpstreamsRetryAfter() {
        GatewayFixture gw;
        gw.anthropicA.setFault(fault(Fault::Status, 429, "3"));
        gw.config.providers[QStringLiteral("pa")].maxRetries = 0;
        gw.start();
        const QJsonObject direct =
            GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), false);
        for (int i = 0; i < 2; ++i) { // the second while the first's rate_limited mark (30 s) stands
            const auto r = gw.post(QStringLiteral("/v1/messages"), direct);
            QCOMPARE(r.status, 429);
            QCOMPARE(r.header("retry-after"), QByteArray("3"));
            QVERIFY(r.header("x-should-retry").isEmpty());
        }
        QCOMPARE(gw.anthropicA.requests().size(), 2);
    }

    void oneUsageRowPerAttemptWithDistinctIds() {
        GatewayFixture gw;
        gw.anthropicA.setFault(fault(Fault::InBandErrorAfterContent)); // non-streaming: fails over after content
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        const QString id = QString::fromLatin1(r.header("x-switchman-request-id"));
        const auto rows = gw.get(QStringLiteral("/admin/usage")).json().value(QStringLiteral("rows")).toArray();
        QStringList ids;
        for (const auto &row : rows)
            ids << row.toObject().value(QStringLiteral("requestId")).toString();
        QVERIFY2(ids.contains(id), qPrintable(ids.join(QLatin1Char(','))));
        QVERIFY2(ids.contains(id + QStringLiteral(":a1")), qPrintable(ids.join(QLatin1Char(','))));
        QCOMPARE(ids.size(), 2);
    }

    void metricsExposeFailureCounter() {
        GatewayFixture gw;
        gw.anthropicA.setFault(fault(Fault::Refuse));
        gw.start();
        gw.post(QStringLiteral("/v1/messages"),
                GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        const auto m = gw.get(QStringLiteral("/metrics"));
        QCOMPARE(m.status, 200);
        QVERIFY(m.body.contains("switchman_candidate_failures_total{provider=\"pa\",failure=\"transport\"} 1"));
        QVERIFY(m.body.contains("switchman_attempts_total{provider=\"pb\",outcome=\"committed\"} 1"));
        QVERIFY(m.body.contains("switchman_marks{"));
    }

    void idempotencyKeyReplaysWithoutUpstream() {
        GatewayFixture gw;
        gw.start();
        const QList<QPair<QByteArray, QByteArray>> h{{"Idempotency-Key", "abc-123"}};
        const auto first =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false), h);
        const auto second =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false), h);
        QCOMPARE(second.status, 200);
        QCOMPARE(second.body, first.body);
        QCOMPARE(gw.anthropicA.requests().size(), 1);
        // While the twin is in flight the second gets 409.
        gw.anthropicA.setFault(fault(Fault::StallBeforeHeaders));
        const QList<QPair<QByteArray, QByteArray>> h2{{"Idempotency-Key", "in-flight"}};
        QNetworkReply *pending =
            gw.postAsync(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), false), h2);
        QTRY_COMPARE(gw.anthropicA.requests().size(), 2);
        const auto twin =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), false), h2);
        QCOMPARE(twin.status, 409);
        QCOMPARE(twin.header("retry-after"), QByteArray("1")); // an SDK that retries a 409 waits for the twin
        QCOMPARE(gw.anthropicA.requests().size(), 2);
        pending->abort();
        pending->deleteLater();
    }

    void aStreamedAnswerIsReplayedToo() {
        // Seed 003: one Idempotency-Key, one billable interaction, streamed or not. The retry of a
        // whole stream gets the same events without an upstream call; a stream that broke off
        // after content is not an answer to keep, so its retry runs again.
        GatewayFixture gw;
        gw.start();
        const QString messages = QStringLiteral("/v1/messages");
        const QJsonObject body = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), true);
        const QList<QPair<QByteArray, QByteArray>> h{{"Idempotency-Key", "stream-1"}};
        const auto first = gw.post(messages, body, h);
        QCOMPARE(first.status, 200);
        QVERIFY2(first.body.contains("message_stop"), first.body.constData());
        const auto second = gw.post(messages, body, h);
        QCOMPARE(second.status, 200);
        QCOMPARE(second.body, first.body);
        QVERIFY2(second.header("content-type").startsWith("text/event-stream"), second.header("content-type"));
        QCOMPARE(second.header("x-switchman-idempotent-replay"), QByteArray("true"));
        QCOMPARE(gw.anthropicA.requests().size(), 1);
        const qsizetype usageRows = gw.engine().telemetry()->attempts(-1).size();

        gw.anthropicA.setFault(fault(Fault::ResetAfterContent));
        const QList<QPair<QByteArray, QByteArray>> cut{{"Idempotency-Key", "stream-cut"}};
        const QJsonObject direct =
            GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), true);
        const auto broken = gw.post(messages, direct, cut);
        QVERIFY2(broken.body.contains("event: error"), broken.body.constData());
        gw.anthropicA.clearFault();
        const auto retried = gw.post(messages, direct, cut);
        QCOMPARE(gw.anthropicA.requests().size(), 3);
        QVERIFY2(retried.body.contains("message_stop"), retried.body.constData());
        QVERIFY(retried.header("x-switchman-idempotent-replay").isEmpty());
        QVERIFY(gw.engine().telemetry()->attempts(-1).size() > usageRows);
    }

    void adminEventFeedStreamsAttemptsAndMarks() {
        GatewayFixture gw;
        gw.anthropicA.setFault(fault(Fault::Status, 503));
        gw.start();
        QNetworkReply *feed = gw.nam.get(QNetworkRequest(QUrl(gw.baseUrl() + QStringLiteral("/admin/events"))));
        QTRY_VERIFY(feed->bytesAvailable() > 0); // the current marks arrive first
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false))
                     .status,
                 200);
        QByteArray seen;
        QTRY_VERIFY((seen += feed->readAll()).contains("\"candidate\":\"pb/gpt-b\""));
        QVERIFY(seen.contains("event: attempt"));
        QVERIFY(seen.contains("\"outcome\":\"failed\""));
        QVERIFY(seen.count("event: marks") >= 2); // initial, then A's new mark
        QVERIFY(seen.contains("\"provider\":\"pa\""));
        feed->abort();
        feed->deleteLater();
    }

    // The feed says when a mark goes, as when one is set: lifted by an answer (probe I3 3: it left
    // /admin/marks with no event, so a dashboard showed the provider down while it answered), and
    // run out (it went without a word). Each mark says when it runs out in wall-clock time.
    void theEventFeedSaysWhenAMarkGoes() {
        test::FakeClock clock;
        clock.advance(1000);
        GatewayFixture gw;
        gw.clock = &clock;
        gw.anthropicA.pushFault(fault(Fault::Status, 503));
        gw.start();
        QNetworkReply *feed = gw.nam.get(QNetworkRequest(QUrl(gw.baseUrl() + QStringLiteral("/admin/events"))));
        QByteArray seen;
        QTRY_VERIFY((seen += feed->readAll()).contains("event: marks")); // the current ones: none
        const QJsonObject direct =
            GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), false);
        const auto marksEvents = [&seen]() { return seen.count("event: marks"); };
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), direct).status, 503);
        QTRY_VERIFY((seen += feed->readAll()).contains("\"provider\":\"pa\""));
        QVERIFY2(seen.contains("\"expiresAtMs\":"), seen.constData());
        // Each attempt says when it began, as the log and the window's Time column do (probe I3 5).
        QVERIFY2(seen.contains("event: attempt") && seen.contains("\"atMs\":") && seen.contains("Z\","),
                 seen.constData());
        int before = marksEvents();
        clock.advance(300);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), direct).status, 200); // answers: lifts the mark
        QVERIFY(gw.engine().marks().isEmpty());
        QTRY_VERIFY((seen += feed->readAll()).count("event: marks") > before);
        QVERIFY2(seen.endsWith("{\"marks\":[]}\n\n") || seen.contains("{\"marks\":[]}\n\nevent: attempt"),
                 seen.right(400).constData());
        // Set again, then run out.
        gw.anthropicA.pushFault(fault(Fault::Status, 503));
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), direct).status, 503);
        QTRY_VERIFY((seen += feed->readAll()).count("\"provider\":\"pa\"") >= 2);
        before = marksEvents();
        clock.advance(20001);
        QVERIFY(gw.engine().marks().isEmpty());
        QTRY_VERIFY((seen += feed->readAll()).count("event: marks") > before);
        QVERIFY2(seen.endsWith("{\"marks\":[]}\n\n"), seen.right(400).constData());
        feed->abort();
        feed->deleteLater();
    }

    void reloadAppliesNewConfigWithoutDroppingInFlight() {
        QTemporaryDir dir;
        GatewayFixture gw;
        gw.configPath = dir.filePath(QStringLiteral("config.json"));
        QVERIFY(config::save(gw.configPath, gw.config));
        Fault slow;
        slow.chunkDelayMs = 150;
        gw.anthropicA.setFault(slow);
        gw.start();
        QNetworkReply *inFlight =
            gw.postAsync(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("a b c d"), true));
        QTRY_COMPARE(gw.anthropicA.requests().size(), 1);

        config::Config next = gw.config;
        next.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pb/gpt-b")};
        QVERIFY(config::save(gw.configPath, next));
        const auto reloaded = gw.postRaw(QStringLiteral("/admin/reload"), "{}");
        QCOMPARE(reloaded.status, 200);
        const auto after = gw.post(QStringLiteral("/v1/messages"),
                                   GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(after.header("x-switchman-candidate"), QByteArray("pb/gpt-b")); // new requests see the new route

        const auto first = gw.wait(inFlight); // the request already running finishes on A
        QCOMPARE(first.status, 200);
        QVERIFY(anthropicStreamText(first.body).contains(QStringLiteral("pa/claude-a")));
        QVERIFY(first.body.contains("message_stop"));

        // A broken file is refused and the running configuration stays.
        QFile broken(gw.configPath);
        QVERIFY(broken.open(QIODevice::WriteOnly | QIODevice::Truncate));
        broken.write("{\"routes\": 42}");
        broken.close();
        const auto refused = gw.postRaw(QStringLiteral("/admin/reload"), "{}");
        QCOMPARE(refused.status, 400);
        QVERIFY(refused.body.contains("routes"));
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("y"), false))
                     .header("x-switchman-candidate"),
                 QByteArray("pb/gpt-b"));
        // /healthz said "ok" as if the file ran: whoever reloaded with SIGHUP learnt nothing. It says
        // the reload was refused, and why, until a reload succeeds (liveness is unchanged).
        QJsonObject health = gw.get(QStringLiteral("/healthz")).json();
        QCOMPARE(health.value(QStringLiteral("status")).toString(), QStringLiteral("ok"));
        QCOMPARE(health.value(QStringLiteral("config")).toString(), QStringLiteral("reload refused"));
        QVERIFY2(health.value(QStringLiteral("configError")).toString().contains(gw.configPath) &&
                     health.value(QStringLiteral("configError")).toString().contains(QStringLiteral("routes")),
                 qPrintable(health.value(QStringLiteral("configError")).toString()));
        QString why;
        QVERIFY(!gw.engine().reload(&why)); // as SIGHUP does: still refused, still said
        QCOMPARE(gw.get(QStringLiteral("/healthz")).json().value(QStringLiteral("config")).toString(),
                 QStringLiteral("reload refused"));
        QVERIFY(config::save(gw.configPath, next));
        QCOMPARE(gw.postRaw(QStringLiteral("/admin/reload"), "{}").status, 200);
        health = gw.get(QStringLiteral("/healthz")).json();
        QCOMPARE(health.value(QStringLiteral("config")).toString(), QStringLiteral("ok"));
        QVERIFY(!health.contains(QStringLiteral("configError")));
    }

    // A provider pointed at the gateway itself is refused at start; on reload it was judged against
    // the file's `listen` (not where the gateway listens: --listen at start, a `listen` edited since),
    // passed, and every request then ended 508 (probe K1 6). A reload judges the address listened on.
    void aReloadRefusesAProviderAtTheGatewaysOwnAddress() {
        QTemporaryDir dir;
        GatewayFixture gw;
        gw.configPath = dir.filePath(QStringLiteral("config.json"));
        QVERIFY(config::save(gw.configPath, gw.config));
        gw.start();
        const QString self = QStringLiteral("127.0.0.1:%1").arg(gw.engine().port());
        config::Config next = gw.config;
        next.listen = QStringLiteral("127.0.0.1:1"); // edited in the file; the gateway stays where it is
        next.providers[QStringLiteral("pb")].baseUrl = QStringLiteral("http://%1/v1").arg(self);
        QVERIFY(config::save(gw.configPath, next));
        QString why;
        QVERIFY(!gw.engine().reload(&why));
        QVERIFY2(why.contains(QStringLiteral("points at Switchman itself")), qPrintable(why));
        next.providers[QStringLiteral("pb")].baseUrl =
            QStringLiteral("http://0.0.0.0:%1/v1").arg(gw.engine().port()); // reaches it too
        QVERIFY(config::save(gw.configPath, next));
        QVERIFY(!gw.engine().reload(&why));
        QVERIFY2(why.contains(QStringLiteral("points at Switchman itself")), qPrintable(why));
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("pb/gpt-b"), QStringLiteral("y"), false))
                     .status,
                 200); // the configuration before runs
    }

    void clientLeavingMidStreamAbortsUpstreamAndServerSurvives() {
        GatewayFixture gw;
        Fault slow;
        slow.chunkDelayMs = 200;
        gw.anthropicA.setFault(slow);
        gw.start();
        QNetworkReply *reply = gw.postAsync(
            QStringLiteral("/v1/messages"),
            GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("a b c d e f g h"), true));
        QTRY_VERIFY(reply->bytesAvailable() > 0 && reply->peek(4096).contains("content_block_delta"));
        QSignalSpy closed(&gw.anthropicA, &demo::FakeUpstream::connectionClosed);
        reply->abort();
        reply->deleteLater();
        QTRY_VERIFY(closed.count() >= 1);
        QTRY_COMPARE(gw.engine().activeRequests(), 0);
        QCOMPARE(gw.engine().pools().totalInFlight(), 0);
        gw.anthropicA.clearFault();
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("again"), false))
                     .status,
                 200);
    }

    // ---- the loop's timers on the injected clock: exact times, no sleeping on budgets

    void budgetFiresAtHalfTheDeadlineOnTheClock() {
        test::FakeClock clock;
        GatewayFixture gw;
        gw.clock = &clock;
        gw.config.failover.deadlineMs = 120000; // the default: budget 60 s
        gw.anthropicA.setFault(fault(Fault::StallBeforeHeaders));
        gw.start();
        QNetworkReply *reply =
            gw.postAsync(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), true));
        QTRY_COMPARE(gw.anthropicA.requests().size(), 1);
        clock.advance(59999);
        drainEvents();
        QCOMPARE(gw.openaiB.requests().size(), 0);
        clock.advance(1);
        const auto r = gw.wait(reply);
        QCOMPARE(r.status, 200);
        QVERIFY(r.body.contains(": switchman candidate=pb/gpt-b"));
        QCOMPARE(failuresOf(gw.engine(), QStringLiteral("pa"), QStringLiteral("server_error")), 1);
        QCOMPARE(attemptsOf(gw.engine(), r.header("x-switchman-request-id")).first().logOutcome,
                 QStringLiteral("budget"));
        reply->deleteLater();
    }

    // A try's in-band error (or early close) disarmed the attempt's budget, so the provider's own
    // retry ran unbounded: a stalled retry held the client to the idle limit, past the deadline, and
    // the healthy follower was never asked (probe N3 H1). The budget covers the attempt's retries.
    void aTrysErrorLeavesItsRetryInsideTheBudget() {
        test::FakeClock clock;
        GatewayFixture gw;
        gw.clock = &clock;
        gw.config.failover.deadlineMs = 120000; // budget 60 s
        gw.config.providers[QStringLiteral("pa")].retriesBeforeFailover = 1;
        gw.anthropicA.setFault(fault(Fault::StallBeforeHeaders));        // the retry stalls
        gw.anthropicA.pushFault(fault(Fault::InBandErrorBeforeContent)); // the first try: overloaded, in band
        gw.start();
        QNetworkReply *reply =
            gw.postAsync(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), true));
        QTRY_COMPARE(gw.anthropicA.requests().size(), 1);
        drainEvents();
        clock.advance(1000); // the retry's backoff: 500 ms and up to 25 % jitter
        QTRY_COMPARE(gw.anthropicA.requests().size(), 2);
        clock.advance(58999); // 59.999 s from the first launch
        drainEvents();
        QCOMPARE(gw.openaiB.requests().size(), 0);
        clock.advance(1); // 60 s from the first launch
        const auto r = gw.wait(reply);
        QCOMPARE(r.status, 200);
        QVERIFY2(r.body.contains(": switchman candidate=pb/gpt-b"), r.body.constData());
        QCOMPARE(attemptsOf(gw.engine(), r.header("x-switchman-request-id")).first().logOutcome,
                 QStringLiteral("budget"));
        reply->deleteLater();
    }

    // SPEC 3, never retried after the attempt committed: a non-streaming answer that broke after
    // its content was asked for again from the same lone candidate, a second generation billed as
    // two rows, where a stream in the same case got its error (probe N3 M1).
    void aNonStreamingAnswerThatBrokeAfterContentIsNotAskedForAgain() {
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].maxRetries = 2;
        gw.anthropicA.pushFault(fault(Fault::InBandErrorAfterContent));
        gw.start();
        const auto r =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), false));
        QVERIFY2(r.status >= 500, r.body.constData());
        QCOMPARE(gw.anthropicA.requests().size(), 1);
        QCOMPARE(gw.get(QStringLiteral("/admin/usage")).json().value(QStringLiteral("rows")).toArray().size(), 1);
    }

    void keepaliveCadenceWhileHeldAndNoneAfterCommit() {
        test::FakeClock clock;
        GatewayFixture gw;
        gw.clock = &clock;
        gw.config.failover.deadlineMs = 120000; // the defaults: keepalive every 15 s, budget 60 s
        gw.anthropicA.setFault(fault(Fault::StallBeforeHeaders));
        gw.start();
        QNetworkReply *reply =
            gw.postAsync(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), true));
        QTRY_COMPARE(gw.anthropicA.requests().size(), 1);
        for (int i = 1; i <= 3; ++i) {
            clock.advance(14999);
            drainEvents();
            QCOMPARE(reply->peek(1 << 20).count(": keepalive\n\n"), i - 1);
            clock.advance(1);
            QTRY_COMPARE(reply->peek(1 << 20).count(": keepalive\n\n"), i);
        }
        clock.advance(15000); // 60 s: the fourth keepalive and the budget fall together
        const auto r = gw.wait(reply);
        QCOMPARE(r.status, 200);
        QVERIFY(r.body.lastIndexOf(": keepalive") < r.body.indexOf(": switchman candidate=pb/gpt-b"));
        reply->deleteLater();
    }

    void deadlineDuringSetupOnTheClock() {
        // A deadline shorter than the keychain's own bound (CredentialPools::kKeychainReadTimeoutMs)
        // cuts the read it waits for.
        static_assert(credentials::CredentialPools::kKeychainReadTimeoutMs > 4000);
        test::FakeClock clock;
        GatewayFixture gw;
        gw.clock = &clock;
        gw.config.failover.deadlineMs = 4000;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:pa-main")};
        gw.secrets.mode = ScriptedSecretStore::Mode::Hang;
        gw.start();
        QNetworkReply *reply =
            gw.postAsync(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QTRY_COMPARE(gw.engine().activeRequests(), 1); // (the keychain may be read ahead at start)
        drainEvents();
        clock.advance(3999);
        drainEvents();
        QVERIFY(!reply->isFinished());
        clock.advance(1);
        const auto r = gw.wait(reply);
        QCOMPARE(r.status, 502);
        QCOMPARE(gw.openaiB.requests().size(), 0); // B never starts
        QVERIFY(gw.engine().marks().isEmpty());
        const auto attempts = gw.engine().telemetry()->attempts(1);
        QCOMPARE(attempts.first().logOutcome, QStringLiteral("deadline"));
        QCOMPARE(attempts.first().failure, QStringLiteral("setup_error"));
        reply->deleteLater();
    }

    void silentOnlyCandidateEndsAtTheDefaultIdleTimeout_data() {
        QTest::addColumn<bool>("stream");
        QTest::newRow("stream") << true;
        QTest::newRow("json") << false;
    }
    void silentOnlyCandidateEndsAtTheDefaultIdleTimeout() {
        // The upstream idle timeout at its default: 300 s without an upstream byte; keepalives stop then.
        QFETCH(bool, stream);
        test::FakeClock clock;
        GatewayFixture gw;
        gw.clock = &clock;
        gw.config.failover.deadlineMs = 3'600'000; // the idle limit, not the deadline, must end it
        gw.anthropicA.setFault(fault(Fault::StallAfter200));
        gw.start();
        QNetworkReply *reply =
            gw.postAsync(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), stream));
        QTRY_COMPARE(gw.anthropicA.requests().size(), 1);
        drainEvents(); // the 200 head arrives: that byte starts the idle count
        clock.advance(299999);
        drainEvents();
        QVERIFY(!reply->isFinished());
        clock.advance(1);
        const auto r = gw.wait(reply);
        if (stream) {
            QCOMPARE(r.status, 200);
            QCOMPARE(r.body.count(": keepalive"), 19); // every 15 s up to 285 s, none after the end
            QVERIFY(r.body.contains("event: error"));
            QVERIFY(r.body.contains("upstreamIdleTimeoutMs"));
            QVERIFY(!r.body.contains("message_stop"));
        } else {
            QCOMPARE(r.status, 504);
            QCOMPARE(r.json().value(QStringLiteral("type")).toString(), QStringLiteral("error"));
        }
        QCOMPARE(failuresOf(gw.engine(), QStringLiteral("pa"), QStringLiteral("server_error")), 1);
        reply->deleteLater();
    }

    // ---- Failure handling end to end, one test per case

    void malformedResponseAndUnknownHostFailOverAsTransport_data() {
        QTest::addColumn<int>("which");
        QTest::newRow("not HTTP") << 0;
        QTest::newRow("unknown host") << 1;
    }
    void malformedResponseAndUnknownHostFailOverAsTransport() {
        // The transport's type decides, whatever Qt or the parser call it.
        QFETCH(int, which);
        CannedAnswerServer garbage("SMTP READY, NOT HTTP AT ALL\r\n\r\n", true);
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].baseUrl =
            which == 0 ? garbage.url() : QStringLiteral("http://no-such-host.invalid");
        gw.start();
        const auto r =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false), {}, 20000);
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(r.header("x-switchman-fallback-reason"), QByteArray("transport"));
        QCOMPARE(gw.engine().marks().size(), 1);
        QVERIFY(gw.engine().marks().first().model.isEmpty()); // the whole base URL
    }

    void anErrorAnswerIsReadForWhatItSaysThoughItsBodyIsCompressedOrBroken_data() {
        QTest::addColumn<QByteArray>("answer");
        QTest::addColumn<QByteArray>("reason"); // x-switchman-fallback-reason
        const QByteArray credit =
            sw::test::readTestData(QStringLiteral("failures/anthropic_400_credit_balance.json.gz"));
        // Compressed though the request asked for identity: read raw, the bytes were the client's
        // error and the credit-balance words that fail over were lost (a stop with garbage).
        QTest::newRow("gzip credit balance")
            << "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
               "Content-Length: " +
                   QByteArray::number(credit.size()) + "\r\n\r\n" + credit
            << QByteArray("credential_exhausted");
        // The same body compressed as a transfer coding: its bytes were the client's error (probe T2 F1).
        QTest::newRow("gzip transfer coding credit balance")
            << "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\n" + credit
            << QByteArray("credential_exhausted");
        // A 503 whose chunked body then broke: the upstream answered, so its model is marked, not
        // the whole base URL as a connection failure.
        QTest::newRow("503 with a broken chunk")
            << QByteArray("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                          "Transfer-Encoding: chunked\r\n\r\nZZZ\r\n")
            << QByteArray("server_error");
    }
    void anErrorAnswerIsReadForWhatItSaysThoughItsBodyIsCompressedOrBroken() {
        QFETCH(QByteArray, answer);
        QFETCH(QByteArray, reason);
        QVERIFY(answer.size() > 100);
        CannedAnswerServer upstream(answer, true);
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].baseUrl = upstream.url();
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(r.header("x-switchman-fallback-reason"), reason);
        for (const auto &mark : gw.engine().marks())
            QCOMPARE(mark.model, QStringLiteral("claude-a")); // never the whole base URL
    }

    // A host that answered in a form the gateway does not read (compressed though it was asked for
    // identity, an HTTP/2 status line, Content-Lengths that disagree) answers the same when asked
    // again: the generation was billed each time (probe T2 F3, three calls), and the client read
    // "unreachable" of a host that had answered.
    void anAnswerTheGatewayCannotReadIsNotAskedForAgain_data() {
        QTest::addColumn<QByteArray>("answer");
        const QByteArray body = QByteArray("\x1f\x8b\x08") + " compressed answer";
        QTest::newRow("gzip") << "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
                                 "Content-Length: " +
                                     QByteArray::number(body.size()) + "\r\n\r\n" + body;
        QTest::newRow("gzip transfer coding")
            << "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" +
                   QByteArray::number(body.size(), 16) + "\r\n" + body + "\r\n0\r\n\r\n";
        QTest::newRow("HTTP/2") << QByteArray("HTTP/2 200\r\ncontent-type: text/event-stream\r\n\r\ndata: {}\n\n");
        QTest::newRow("lengths disagree") << QByteArray("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                                        "Content-Length: 2\r\nContent-Length: 9\r\n\r\n{}");
    }
    void anAnswerTheGatewayCannotReadIsNotAskedForAgain() {
        QFETCH(QByteArray, answer);
        CannedAnswerServer alone(answer, true);
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].baseUrl = alone.url();
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), false),
                               {}, 20000);
        QCOMPARE(r.status, 502);
        QCOMPARE(alone.asked, 1);
        QVERIFY2(r.body.contains("broke off its answer") && !r.body.contains("unreachable"), r.body.constData());
        QCOMPARE(r.header("x-should-retry"), QByteArray("false"));

        // On a chain, the next candidate answers.
        CannedAnswerServer first(answer, true);
        GatewayFixture chain;
        chain.config.providers[QStringLiteral("pa")].baseUrl = first.url();
        chain.start();
        const auto c = chain.post(QStringLiteral("/v1/messages"),
                                  GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(c.status, 200);
        QCOMPARE(c.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(first.asked, 1);
    }

    // A 503 whose upstream says its failure is final (`x-should-retry: false`: a proxy or gateway
    // that already retried) was asked twice more on a lone route, the client waiting out each
    // Retry-After (probe AB1 F2). It hears at once, and is told not to retry either.
    void anUpstreamsFinalFailureReachesALoneRoutesClientAtOnce() {
        const QByteArray body = "{\"error\":{\"type\":\"overloaded\",\"message\":\"every candidate failed\"}}";
        CannedAnswerServer alone("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                                 "Retry-After: 1\r\nx-should-retry: false\r\nContent-Length: " +
                                     QByteArray::number(body.size()) + "\r\n\r\n" + body,
                                 true);
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].baseUrl = alone.url();
        gw.config.providers[QStringLiteral("pa")].maxRetries = 2; // a lone candidate's 503 is retried twice
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), false),
                               {}, 20000);
        QCOMPARE(r.status, 503);
        QCOMPARE(alone.asked, 1);
        QCOMPARE(r.header("x-should-retry"), QByteArray("false"));
        QCOMPARE(r.header("retry-after"), QByteArray("1"));
    }

    // obs-fold (RFC 9112 5.2): a folded line is part of the field before it. Read as a field of its
    // own, "Content-Encoding: gzip" made this good answer unreadable, and its host was marked
    // (probe T2 F2).
    void aFoldedHeaderLineIsPartOfTheFieldBeforeIt() {
        const QByteArray json = "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":"
                                "\"claude-a\",\"content\":[{\"type\":\"text\",\"text\":\"folded but whole\"}],"
                                "\"stop_reason\":\"end_turn\",\"stop_sequence\":null,\"usage\":{\"input_tokens\":3,"
                                "\"output_tokens\":2}}";
        CannedAnswerServer folded("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Note: a\r\n"
                                  " Content-Encoding: gzip\r\nContent-Length: " +
                                  QByteArray::number(json.size()) + "\r\nX-Other: b\r\n\tContent-Length: 7\r\n\r\n" +
                                  json);
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].baseUrl = folded.url();
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QVERIFY2(r.status == 200, r.body.constData());
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
        QVERIFY2(r.body.contains("folded but whole"), r.body.constData());
        QVERIFY(gw.engine().marks().isEmpty());
    }

    // A head whose lines end in a bare CR: its end was found in the body, and the headers and the
    // first event read as a start line gave a 200 that lacked the answer's first words (probe T2
    // F4). It is no answer: the next candidate is asked.
    void aHeadWithBareCarriageReturnsIsNoAnswer() {
        CannedAnswerServer bare(
            QByteArray("HTTP/1.1 200 OK\rContent-Type: text/event-stream\r\r") +
                "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":"
                "\"message\",\"role\":\"assistant\",\"model\":\"claude-a\",\"content\":[],\"usage\":{"
                "\"input_tokens\":1,\"output_tokens\":0}}}\n\n"
                "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
                "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
                "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
                "{\"type\":\"text_delta\",\"text\":\"FIRST WORDS then the rest\"}}\n\n",
            true);
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].baseUrl = bare.url();
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QVERIFY2(!r.body.contains("then the rest"), r.body.constData());
    }

    // Every upstream request asks for an event stream. A 200 with a JSON or HTML body is not a
    // cut connection: before, it was "stream ended before completion", a transport failure that
    // marked the whole host down, and the upstream's own words were lost. Now its error decides,
    // as a non-2xx's would, and the client reads what the upstream said.
    void aTwoHundredThatIsNotAStreamIsTheUpstreamsError() {
        GatewayFixture gw;
        // A rate-limit error sent with 200: it fails over as rate_limited (its type says 429), where
        // it was transport.
        gw.anthropicA.setFault(fault(Fault::Status, 200, {},
                                     "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":"
                                     "\"Slow down, says the upstream\"}}"));
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QVERIFY2(r.status == 200, r.body.constData());
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(r.header("x-switchman-fallback-reason"), QByteArray("rate_limited"));
        QCOMPARE(failuresOf(gw.engine(), QStringLiteral("pa"), QStringLiteral("transport")), 0);
        for (const auto &mark : gw.engine().marks())
            QVERIFY2(!mark.model.isEmpty(), "a whole-host (transport) mark");
        const auto attempts = gw.engine().telemetry()->attempts(-1);
        QVERIFY(!attempts.isEmpty());
        bool toldWhy = false;
        for (const auto &a : attempts)
            toldWhy |= a.message.contains(QStringLiteral("Slow down, says the upstream"));
        QVERIFY(toldWhy);

        // A captive portal's page on the only candidate: the client reads that, in its format.
        const QByteArray page = "<html><p>Sign in to the hotel network</p></html>";
        CannedAnswerServer portal("HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: " +
                                  QByteArray::number(page.size()) + "\r\n\r\n" + page);
        GatewayFixture gw2;
        gw2.config.providers[QStringLiteral("pa")].baseUrl = portal.url();
        gw2.start();
        const auto e =
            gw2.post(QStringLiteral("/v1/messages"),
                     GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), false));
        QCOMPARE(e.status, 502);
        QVERIFY2(e.body.contains("text/html") && e.body.contains("Sign in to the hotel network"), e.body.constData());
        QCOMPARE(e.body.count("pa/claude-a"), 1); // "upstream pa/claude-a: answered HTTP 200 with …", named once
        QCOMPARE(failuresOf(gw2.engine(), QStringLiteral("pa"), QStringLiteral("transport")), 0);

        // The same page with no Content-Type at all, closed at its end (probe A1 3): read as a
        // stream it said "unreachable: stream ended before completion" and marked the whole host.
        // Then typed as an event stream, or after a byte order mark and blank lines (probe AV).
        for (const QByteArray &head : {QByteArray("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n\n  "),
                                       QByteArray("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n\xEF\xBB\xBF\r\n\r\n"),
                                       QByteArray("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                                                  "Connection: close\r\n\r\n")}) {
            CannedAnswerServer untyped(head + page);
            GatewayFixture gw3;
            gw3.config.providers[QStringLiteral("pa")].baseUrl = untyped.url();
            gw3.start();
            const auto u =
                gw3.post(QStringLiteral("/v1/messages"),
                         GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), false));
            QCOMPARE(u.status, 502);
            QVERIFY2(u.body.contains("HTML page") && u.body.contains("Sign in to the hotel network"),
                     u.body.constData());
            QVERIFY2(!u.body.contains("unreachable"), u.body.constData());
            QCOMPARE(failuresOf(gw3.engine(), QStringLiteral("pa"), QStringLiteral("transport")), 0);
            for (const auto &mark : gw3.engine().marks())
                QVERIFY2(!mark.model.isEmpty(), "a whole-host (transport) mark");
        }
    }

    // Gemini sends nothing after its finish reason but the end of the body. A connection that broke
    // there (a proxy's reset, a dropped last chunk) lost a finished answer (probe P1 1): the
    // follower was asked and billed again, the whole host marked, a lone candidate's client told
    // "unreachable". It is the answer, as a clean end gives it.
    void aJsonAnswerBrokenInItsBodyIsNotAskedAgainAndIsBilled() {
        // Probe Q1 M1: a server that ignores stream: true answers whole JSON, and the connection
        // breaks after the answer's text arrived. The try was read as one that said nothing: a lone
        // candidate was asked three times (three generations billed by the provider) and no try
        // had a usage row. Now it is asked once, billed by its estimate, and the client told it broke.
        const QByteArray json = "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,"
                                "\"message\":{\"role\":\"assistant\",\"content\":\"" +
                                QByteArray(400, 'w') + "\"},\"finish_reason\":\"stop\"}],\"usage\":{}}";
        const QByteArray head =
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + QByteArray::number(json.size()) +
            "\r\n\r\n";
        CannedAnswerServer server(head + json.left(json.size() * 9 / 10), true);
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pb")].baseUrl = server.url();
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/chat/completions"),
                               GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 502);
        QVERIFY2(r.body.contains("broke off its answer"), r.body.constData());
        QCOMPARE(server.asked, 1);
        const auto usage = gw.engine().telemetry()->usage();
        QCOMPARE(usage.size(), 1);
        QVERIFY2(usage.first().output >= 100, qPrintable(QString::number(usage.first().output))); // 400 characters
        QVERIFY(usage.first().input > 0);

        // Framed by the connection's end (HTTP/1.0, no Content-Length), the same cut read as an answer
        // of the wrong media type, which marked the model and was asked three times (probe Q1 L1).
        CannedAnswerServer closeDelimited(
            "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + json.left(json.size() * 9 / 10), true);
        GatewayFixture gw2;
        gw2.config.providers[QStringLiteral("pb")].baseUrl = closeDelimited.url();
        gw2.start();
        const auto r2 = gw2.post(QStringLiteral("/v1/chat/completions"),
                                 GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("x"), false));
        QCOMPARE(r2.status, 502);
        QVERIFY2(r2.body.contains("broke off its answer") && !r2.body.contains("instead of an event stream"),
                 r2.body.constData());
        QCOMPARE(closeDelimited.asked, 1);
        QCOMPARE(gw2.engine().telemetry()->usage().size(), 1);
    }

    // A 2xx JSON body whose framing ended cleanly (Content-Length: 0, a chunked body of no chunk,
    // half an object inside its Content-Length or chunks) came over a working connection. It was
    // told as "connection closed before the JSON answer ended", a transport failure marking the
    // whole base URL, so every other model there was skipped (probe AA1-F2). It is this model's
    // server error: the model alone is marked, and the chain's next candidate answers.
    void aWholeFramedJsonBodyWithNoAnswerIsTheModelsServerError_data() {
        QTest::addColumn<QByteArray>("answer");
        QTest::addColumn<QByteArray>("words");
        const QByteArray half = "{\"id\":\"x\",\"object\":\"chat.completion\"";
        const QByteArray ok = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n";
        QTest::newRow("content-length 0") << ok + "Content-Length: 0\r\n\r\n" << QByteArray("with an empty body");
        QTest::newRow("chunked, no chunk") << ok + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                                           << QByteArray("with an empty body");
        QTest::newRow("half an object, content-length")
            << ok + "Content-Length: " + QByteArray::number(half.size()) + "\r\n\r\n" + half
            << QByteArray("a JSON body that stops mid-way: 36 bytes");
        QTest::newRow("half an object, chunked")
            << ok + "Transfer-Encoding: chunked\r\n\r\n" + QByteArray::number(half.size(), 16) + "\r\n" + half +
                   "\r\n0\r\n\r\n"
            << QByteArray("a JSON body that stops mid-way: 36 bytes");
    }
    void aWholeFramedJsonBodyWithNoAnswerIsTheModelsServerError() {
        QFETCH(QByteArray, answer);
        QFETCH(QByteArray, words);
        CannedAnswerServer server(answer); // the connection stays open
        GatewayFixture lone;
        lone.config.providers[QStringLiteral("pb")].baseUrl = server.url();
        lone.start();
        const auto r = lone.post(QStringLiteral("/v1/chat/completions"),
                                 GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 502);
        QVERIFY2(r.body.contains(words) && !r.body.contains("broke off") && !r.body.contains("connection closed"),
                 r.body.constData());
        QCOMPARE(failuresOf(lone.engine(), QStringLiteral("pb"), QStringLiteral("transport")), 0);
        QVERIFY(failuresOf(lone.engine(), QStringLiteral("pb"), QStringLiteral("server_error")) > 0);
        QVERIFY(!lone.engine().marks().isEmpty());
        for (const auto &mark : lone.engine().marks())
            QVERIFY2(mark.model == QStringLiteral("gpt-b"), "a whole-host (transport) mark");

        GatewayFixture chain;
        chain.config.providers[QStringLiteral("pb")].baseUrl = server.url();
        chain.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pb/gpt-b"),
                                                                   QStringLiteral("pa/claude-a")};
        chain.start();
        const auto c = chain.post(QStringLiteral("/v1/chat/completions"),
                                  GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QVERIFY2(c.status == 200, c.body.constData());
        QCOMPARE(c.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
    }

    void aFinishedGeminiAnswerWhoseBodyBreaksIsTheAnswer() {
        const QByteArray frame = "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":"
                                 "\"All done.\"}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{"
                                 "\"promptTokenCount\":5,\"candidatesTokenCount\":3}}\r\n\r\n";
        // A chunked event stream of one chunk, whose last chunk never comes: the body never ends.
        const auto oneChunk = [](const QByteArray &data) {
            return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
                   QByteArray::number(data.size(), 16) + "\r\n" + data + "\r\n";
        };
        // Gemini first, Claude after it.
        const auto geminiFirst = [](GatewayFixture &gw, const QString &url) {
            gw.config.providers[QStringLiteral("pe")].baseUrl = url;
            gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pe/gemini-e"),
                                                                    QStringLiteral("pa/claude-a")};
        };
        CannedAnswerServer gemini(oneChunk(frame), true); // closed there
        for (const bool stream : {false, true}) {
            GatewayFixture gw;
            geminiFirst(gw, gemini.url());
            gw.start();
            const auto r = gw.post(QStringLiteral("/v1/chat/completions"),
                                   GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("x"), stream));
            QVERIFY2(r.status == 200, r.body.constData());
            if (stream) {
                QVERIFY2(r.body.startsWith(": switchman candidate=pe/gemini-e attempt=1"), r.body.constData());
                QCOMPARE(openaiStreamText(r.body), QStringLiteral("All done."));
                QVERIFY2(r.body.contains("\"finish_reason\":\"stop\"") && r.body.contains("data: [DONE]") &&
                             !r.body.contains("\"error\""),
                         r.body.constData());
            } else {
                QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pe/gemini-e"));
                QCOMPARE(openaiMessageText(QJsonDocument::fromJson(r.body).object()), QStringLiteral("All done."));
            }
            QCOMPARE(gw.anthropicA.requests().size(), 0); // the follower was never asked
            QCOMPARE(failuresOf(gw.engine(), QStringLiteral("pe"), QStringLiteral("transport")), 0);
            QVERIFY(gw.engine().marks().isEmpty());
        }

        // Silent after it instead, the body never ended: the answer too, at the idle limit.
        CannedAnswerServer silent(oneChunk(frame), false);
        GatewayFixture held;
        geminiFirst(held, silent.url());
        held.config.failover.upstreamIdleTimeoutMs = 300;
        held.start();
        const auto h = held.post(QStringLiteral("/v1/chat/completions"),
                                 GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QVERIFY2(h.status == 200, h.body.constData());
        QCOMPARE(h.header("x-switchman-candidate"), QByteArray("pe/gemini-e"));
        QCOMPARE(openaiMessageText(QJsonDocument::fromJson(h.body).object()), QStringLiteral("All done."));
        QCOMPARE(held.anthropicA.requests().size(), 0);
        QCOMPARE(failuresOf(held.engine(), QStringLiteral("pe"), QStringLiteral("server_error")), 0);
        QVERIFY(held.engine().marks().isEmpty());

        // Cut before the finish reason, it is a broken answer, and a lone candidate's client is
        // told so: not "unreachable", which sends a user to the DNS and the base URL (probe P1 2).
        const QByteArray partial = "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":"
                                   "\"All \"}]}}]}\r\n\r\n";
        CannedAnswerServer cut(oneChunk(partial), true);
        GatewayFixture lone;
        lone.config.providers[QStringLiteral("pe")].baseUrl = cut.url();
        lone.start();
        const auto e = lone.post(QStringLiteral("/v1/chat/completions"),
                                 GatewayFixture::openaiBody(QStringLiteral("pe/gemini-e"), QStringLiteral("x"), false));
        QCOMPARE(e.status, 502);
        QVERIFY2(e.body.contains("upstream pe/gemini-e broke off its answer") && !e.body.contains("unreachable"),
                 e.body.constData());
    }

    // A 404 without a body (a wrong baseUrl path on many servers) told the client "upstream
    // pa/claude-a: " and nothing else.
    void anEmptyErrorBodyNamesTheStatus() {
        CannedAnswerServer server("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].baseUrl = server.url();
        gw.start();
        const auto e =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), false));
        QCOMPARE(e.status, 404);
        QVERIFY2(e.body.contains("upstream pa/claude-a: HTTP 404 with an empty body"), e.body.constData());
    }

    // Some OpenAI-compatible servers and caching proxies ignore `stream: true` and answer 200 with
    // the API's whole JSON answer. It was read as an error (502 server_error after three billed
    // calls, the model marked, failover); now it is the answer, read as the stream it stands for.
    void aWholeJsonAnswerToAStreamRequestIsTheAnswer_data() {
        QTest::addColumn<QString>("route");
        QTest::addColumn<QString>("model");
        QTest::addColumn<bool>("stream");
        QTest::addColumn<int>("textBytes"); // the answer's text; over 64 KiB, the old error-body cap
        const QString chat = QStringLiteral("/v1/chat/completions"), messages = QStringLiteral("/v1/messages"),
                      responses = QStringLiteral("/v1/responses");
        QTest::newRow("chat json, chat client") << chat << QStringLiteral("pb/gpt-b") << false << 0;
        QTest::newRow("chat json, chat stream") << chat << QStringLiteral("pb/gpt-b") << true << 0;
        QTest::newRow("chat json, messages stream") << messages << QStringLiteral("pb/gpt-b") << true << 0;
        QTest::newRow("chat json 100 KiB, chat client") << chat << QStringLiteral("pb/gpt-b") << false << 100000;
        QTest::newRow("messages json, messages client") << messages << QStringLiteral("pa/claude-a") << false << 0;
        QTest::newRow("messages json, messages stream") << messages << QStringLiteral("pa/claude-a") << true << 0;
        QTest::newRow("messages json, chat client") << chat << QStringLiteral("pa/claude-a") << false << 0;
        QTest::newRow("responses json, responses client") << responses << QStringLiteral("pd/resp-d") << false << 0;
        QTest::newRow("responses json, responses stream") << responses << QStringLiteral("pd/resp-d") << true << 0;
        QTest::newRow("responses json, chat stream") << chat << QStringLiteral("pd/resp-d") << true << 0;
        QTest::newRow("gemini json, chat client") << chat << QStringLiteral("pe/gemini-e") << false << 0;
        QTest::newRow("gemini json, messages stream") << messages << QStringLiteral("pe/gemini-e") << true << 0;
        QTest::newRow("gemini json 100 KiB, responses stream")
            << responses << QStringLiteral("pe/gemini-e") << true << 100000;
    }
    void aWholeJsonAnswerToAStreamRequestIsTheAnswer() {
        QFETCH(QString, route);
        QFETCH(QString, model);
        QFETCH(bool, stream);
        QFETCH(int, textBytes);
        const QString text = textBytes > 0 ? QString(textBytes, QLatin1Char('x')) + QStringLiteral(" the end")
                                           : QStringLiteral("a perfectly good answer");
        const auto s = [](const char *v) { return QString::fromLatin1(v); };
        const QJsonObject args{{s("city"), s("Paris")}};
        const QString argsText = QString::fromUtf8(QJsonDocument(args).toJson(QJsonDocument::Compact));
        QJsonObject answer;
        GatewayFixture gw;
        demo::FakeUpstream *upstream = nullptr;
        const QString provider = model.section(QLatin1Char('/'), 0, 0);
        if (provider == QLatin1String("pb")) {
            upstream = &gw.openaiB;
            const QJsonObject call{
                {s("id"), s("call_1")},
                {s("type"), s("function")},
                {s("function"), QJsonObject{{s("name"), s("get_weather")}, {s("arguments"), argsText}}}};
            answer = {
                {s("id"), s("chatcmpl-1")},
                {s("object"), s("chat.completion")},
                {s("created"), 1},
                {s("model"), s("gpt-b")},
                {s("choices"), QJsonArray{QJsonObject{{s("index"), 0},
                                                      {s("message"), QJsonObject{{s("role"), s("assistant")},
                                                                                 {s("content"), text},
                                                                                 {s("tool_calls"), QJsonArray{call}}}},
                                                      {s("finish_reason"), s("tool_calls")}}}},
                {s("usage"),
                 QJsonObject{{s("prompt_tokens"), 11}, {s("completion_tokens"), 7}, {s("total_tokens"), 18}}}};
        } else if (provider == QLatin1String("pa")) {
            upstream = &gw.anthropicA;
            answer = {{s("id"), s("msg_1")},
                      {s("type"), s("message")},
                      {s("role"), s("assistant")},
                      {s("model"), s("claude-a")},
                      {s("content"), QJsonArray{QJsonObject{{s("type"), s("text")}, {s("text"), text}},
                                                QJsonObject{{s("type"), s("tool_use")},
                                                            {s("id"), s("toolu_1")},
                                                            {s("name"), s("get_weather")},
                                                            {s("input"), args}}}},
                      {s("stop_reason"), s("tool_use")},
                      {s("stop_sequence"), QJsonValue::Null},
                      {s("usage"), QJsonObject{{s("input_tokens"), 11}, {s("output_tokens"), 7}}}};
        } else if (provider == QLatin1String("pd")) {
            upstream = &gw.responsesD;
            const QJsonObject message{{s("id"), s("msg_1")},
                                      {s("type"), s("message")},
                                      {s("role"), s("assistant")},
                                      {s("status"), s("completed")},
                                      {s("content"), QJsonArray{QJsonObject{{s("type"), s("output_text")},
                                                                            {s("text"), text},
                                                                            {s("annotations"), QJsonArray()}}}}};
            const QJsonObject call{{s("id"), s("fc_1")},          {s("type"), s("function_call")},
                                   {s("status"), s("completed")}, {s("call_id"), s("call_1")},
                                   {s("name"), s("get_weather")}, {s("arguments"), argsText}};
            answer = {{s("id"), s("resp_1")},
                      {s("object"), s("response")},
                      {s("created_at"), 1},
                      {s("status"), s("completed")},
                      {s("model"), s("resp-d")},
                      {s("output"), QJsonArray{message, call}},
                      {s("usage"), QJsonObject{{s("input_tokens"), 11}, {s("output_tokens"), 7}}}};
        } else {
            upstream = &gw.googleE;
            answer = {{s("candidates"),
                       QJsonArray{QJsonObject{
                           {s("content"),
                            QJsonObject{{s("role"), s("model")},
                                        {s("parts"), QJsonArray{QJsonObject{{s("text"), text}},
                                                                QJsonObject{{s("functionCall"),
                                                                             QJsonObject{{s("name"), s("get_weather")},
                                                                                         {s("args"), args}}}}}}}},
                           {s("finishReason"), s("STOP")}}}},
                      {s("usageMetadata"), QJsonObject{{s("promptTokenCount"), 11}, {s("candidatesTokenCount"), 7}}}};
        }
        upstream->setFault(fault(Fault::Status, 200, {}, QJsonDocument(answer).toJson(QJsonDocument::Compact)));
        gw.start();
        const auto r = gw.post(route, routeBody(route, model, stream));
        QVERIFY2(r.status == 200, r.body.constData());
        QVERIFY2(!r.body.contains("instead of an event stream"), r.body.left(2000).constData());
        QVERIFY2(r.body.contains(text.right(30).toUtf8()), r.body.left(2000).constData());
        QVERIFY2(r.body.contains("get_weather") && r.body.contains("Paris"), r.body.right(2000).constData());
        if (stream) {
            const char *end = route == QLatin1String("/v1/messages")           ? "event: message_stop"
                              : route == QLatin1String("/v1/chat/completions") ? "data: [DONE]"
                                                                               : "event: response.completed";
            QVERIFY2(r.body.contains(end), r.body.right(2000).constData());
        } else {
            // It ended with a tool call: the stop reason says so (Responses: the function_call item).
            const char *why = route == QLatin1String("/v1/messages")           ? "\"stop_reason\":\"tool_use\""
                              : route == QLatin1String("/v1/chat/completions") ? "\"finish_reason\":\"tool_calls\""
                                                                               : "\"type\":\"function_call\"";
            QVERIFY2(r.body.contains(why), r.body.right(2000).constData());
        }
        // One upstream call (each is billed), no failure, no mark.
        QCOMPARE(upstream->requests().size(), 1);
        QCOMPARE(failuresOf(gw.engine(), provider, QStringLiteral("server_error")), 0);
        QVERIFY(gw.engine().marks().isEmpty());
    }

    // The body of a 200 JSON answer that is the upstream's error keeps being its error, however
    // long: read whole now (it may be an answer), it is still classified by its own words.
    void aTwoHundredJsonErrorOverTheOldCapIsStillAnError() {
        GatewayFixture gw;
        const QByteArray message(100000, 'z');
        gw.openaiB.setFault(
            fault(Fault::Status, 200, {}, "{\"error\":{\"type\":\"server_error\",\"message\":\"" + message + "\"}}"));
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/chat/completions"),
                               routeBody(QStringLiteral("/v1/chat/completions"), QStringLiteral("pb/gpt-b"), false));
        QCOMPARE(r.status, 502);
        QVERIFY2(r.body.contains("instead of an event stream") && r.body.contains("zzzz"),
                 r.body.left(500).constData());
    }

    // A Responses upstream that sends content, then `error` and no response.failed: its error is
    // relayed, then one response.failed; the gateway's own `error` event no longer follows it
    // (two terminal errors with different messages, probe B).
    void aRelayedResponsesErrorIsTheOnlyErrorEvent() {
        GatewayFixture gw;
        const auto ev = [](const char *type, const QByteArray &json) {
            return QByteArray("event: ") + type + "\ndata: " + json + "\n\n";
        };
        gw.responsesD.setRawReply(
            ev("response.created", "{\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":"
                                   "\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"output\":[]}}") +
            ev("response.output_item.added",
               "{\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"id\":"
               "\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"status\":\"in_progress\",\"content\":[]}}") +
            ev("response.content_part.added",
               "{\"type\":\"response.content_part.added\",\"sequence_number\":2,\"item_id\":\"msg_1\",\"output_"
               "index\":0,\"content_index\":0,\"part\":{\"type\":\"output_text\",\"text\":\"\"}}") +
            ev("response.output_text.delta",
               "{\"type\":\"response.output_text.delta\",\"sequence_number\":3,\"item_id\":\"msg_1\",\"output_"
               "index\":0,\"content_index\":0,\"delta\":\"partial words\"}") +
            ev("error", "{\"type\":\"error\",\"sequence_number\":4,\"code\":\"server_error\",\"message\":\"The "
                        "server had an error\",\"param\":null}"));
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/responses"),
                               routeBody(QStringLiteral("/v1/responses"), QStringLiteral("pd/resp-d"), true));
        QCOMPARE(r.status, 200);
        QVERIFY2(r.body.contains("partial words") && r.body.contains("The server had an error"), r.body.constData());
        QVERIFY2(r.body.count("event: error") == 1, r.body.constData());
        QVERIFY2(r.body.count("event: response.failed") == 1, r.body.constData());
        QVERIFY(!r.body.contains("response.completed"));
    }

    // A Chat client's `n: 2`, streamed same-API: each choice's first frame carries only its role, and
    // the second choice's was taken for noise and not relayed; the openai SDK then threw "missing role
    // for choice 1" on every such stream (probe GV2 1).
    void everyChoicesRoleFrameReachesAChatClient() {
        GatewayFixture gw;
        const auto chunk = [](const QByteArray &choices) {
            return "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-b\","
                   "\"choices\":[" +
                   choices + "]}\n\n";
        };
        gw.openaiB.setRawReply(chunk(R"({"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null})") +
                               chunk(R"({"index":1,"delta":{"role":"assistant","content":""},"finish_reason":null})") +
                               chunk(R"({"index":0,"delta":{"content":"one"},"finish_reason":null})") +
                               chunk(R"({"index":1,"delta":{"content":"two"},"finish_reason":null})") +
                               chunk(R"({"index":0,"delta":{},"finish_reason":"stop"})") +
                               chunk(R"({"index":1,"delta":{},"finish_reason":"stop"})") + "data: [DONE]\n\n");
        gw.start();
        QJsonObject body = GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), true);
        body.insert(QStringLiteral("n"), 2);
        const auto r = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(r.status, 200);
        QVERIFY2(r.body.contains(R"({"index":1,"delta":{"role":"assistant","content":""})"), r.body.constData());
        QVERIFY2(r.body.contains("\"two\"") && r.body.contains("[DONE]"), r.body.constData());

        // With a stop sequence to a model that refuses stop, the gateway would cut from the decoded
        // stream, which holds one choice: no candidate can take it, and the client reads why.
        config::ModelConfig o3 = gw.config.models.value(QStringLiteral("pb/gpt-b"));
        o3.id = QStringLiteral("o3");
        o3.reasoning = true;
        config::Config next = gw.config;
        next.models.insert(o3.key(), o3);
        gw.engine().applyConfig(next);
        body.insert(QStringLiteral("model"), QStringLiteral("pb/o3"));
        body.insert(QStringLiteral("stop"), QJsonArray{QStringLiteral("END")});
        const auto refused = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(refused.status, 400);
        QVERIFY2(refused.body.contains("n: 2 choices with stop sequences cannot reach o3"), refused.body.constData());
    }

    void cutAfterCommitWritesTheFormatsError_data() {
        QTest::addColumn<QString>("route");
        QTest::addColumn<QString>("model");
        // Same-API passthrough on the first three (the raw frames path), the encoder on pi.
        QTest::newRow("messages passthrough") << QStringLiteral("/v1/messages") << QStringLiteral("pa/claude-a");
        QTest::newRow("chat passthrough") << QStringLiteral("/v1/chat/completions") << QStringLiteral("pb/gpt-b");
        QTest::newRow("responses passthrough") << QStringLiteral("/v1/responses") << QStringLiteral("pd/resp-d");
        QTest::newRow("pi") << QStringLiteral("/v1/pi/stream") << QStringLiteral("pa/claude-a");
        QTest::newRow("chat from anthropic") << QStringLiteral("/v1/chat/completions") << QStringLiteral("pa/claude-a");
    }
    void cutAfterCommitWritesTheFormatsError() {
        // A reset after content is the format's error, never a clean end.
        QFETCH(QString, route);
        QFETCH(QString, model);
        GatewayFixture gw;
        for (auto *f : {&gw.anthropicA, &gw.openaiB, &gw.responsesD})
            f->setFault(fault(Fault::ResetAfterContent));
        gw.start();
        const auto r = gw.post(route, routeBody(route, model, true));
        QCOMPARE(r.status, 200);
        QVERIFY2(r.body.contains(": switchman candidate="), r.body.constData()); // it had committed
        if (route == QLatin1String("/v1/messages")) {
            QVERIFY2(r.body.contains("event: error"), r.body.constData());
            QVERIFY(!r.body.contains("message_stop"));
        } else if (route == QLatin1String("/v1/chat/completions")) {
            QVERIFY2(r.body.contains("\"error\""), r.body.constData());
            QVERIFY(!r.body.contains("[DONE]"));
            QVERIFY(!r.body.contains("\"finish_reason\":\"stop\""));
        } else if (route == QLatin1String("/v1/responses")) {
            QVERIFY2(r.body.contains("response.failed"), r.body.constData());
            QVERIFY(!r.body.contains("response.completed"));
            // One response: the error continues the upstream's stream (its id, sequence numbers
            // that keep rising), it does not start another with a response.created of its own.
            QString createdId;
            int lastSequence = -1;
            for (const auto &e : sw::test::splitSse(r.body)) {
                const QJsonObject o = QJsonDocument::fromJson(e.data).object();
                if (o.isEmpty())
                    continue;
                const int seq = o.value(QStringLiteral("sequence_number")).toInt(-1);
                QVERIFY2(seq > lastSequence, qPrintable(QStringLiteral("sequence_number %1 after %2 in %3")
                                                            .arg(seq)
                                                            .arg(lastSequence)
                                                            .arg(QString::fromUtf8(r.body))));
                lastSequence = seq;
                const QString type = o.value(QStringLiteral("type")).toString();
                const QString id =
                    o.value(QStringLiteral("response")).toObject().value(QStringLiteral("id")).toString();
                if (type == QLatin1String("response.created")) {
                    QVERIFY2(createdId.isEmpty(), "a second response.created");
                    createdId = id;
                } else if (type == QLatin1String("response.failed")) {
                    QCOMPARE(id, createdId);
                }
            }
            QVERIFY(!createdId.isEmpty());
        } else {
            QVERIFY2(r.body.contains("\"type\":\"error\""), r.body.constData());
            QVERIFY(!r.body.contains("\"type\":\"done\""));
        }
        QVERIFY(r.body.contains("upstream connection lost"));
        // Seen in monitoring too: the committed row stays, a failed one follows it, and the failure
        // counter moves (before, the attempt looked like a success). Still no mark: a committed
        // attempt is final.
        const QString provider = model.section(QLatin1Char('/'), 0, 0);
        QVERIFY(waitUntil([&]() { return gw.engine().telemetry()->attempts(-1).size() >= 2; }, 2000));
        const auto attempts = gw.engine().telemetry()->attempts(-1); // newest first
        QCOMPARE(attempts[0].outcome, telemetry::AttemptOutcome::Failed);
        QCOMPARE(attempts[0].failure, QStringLiteral("transport"));
        QCOMPARE(attempts[0].logOutcome, QStringLiteral("after_commit"));
        QCOMPARE(attempts[0].attempt, attempts[1].attempt);
        QCOMPARE(attempts[1].outcome, telemetry::AttemptOutcome::Committed);
        QCOMPARE(failuresOf(gw.engine(), provider, QStringLiteral("transport")), 1);
        QVERIFY(gw.engine().marks().isEmpty());
        // One attempt, counted once: committed, not committed and failed.
        const QString metrics = gw.engine().telemetry()->metricsText({});
        QVERIFY2(metrics.contains(
                     QStringLiteral("switchman_attempts_total{provider=\"%1\",outcome=\"committed\"} 1").arg(provider)),
                 qPrintable(metrics));
        QVERIFY2(!metrics.contains(
                     QStringLiteral("switchman_attempts_total{provider=\"%1\",outcome=\"failed\"}").arg(provider)),
                 qPrintable(metrics));
    }

    void redirectStopsWithA502NamingIt() {
        // A 3xx is not an outage (no mark, no failover) and not a success.
        GatewayFixture gw;
        Fault moved = fault(Fault::Status, 301, {}, "{}");
        // A pre-signed URL's signature, a token, user info: none of it is the client's to read.
        moved.location = "https://user:pass@api.example.test/v2/messages?sig=SECRETSIG&token=abc#frag";
        gw.anthropicA.setFault(moved);
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/chat/completions"),
                               GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 502);
        const QString message =
            r.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString();
        QVERIFY2(message.contains(QStringLiteral("redirect")) &&
                     message.contains(QStringLiteral("https://api.example.test/v2/messages")),
                 qPrintable(message));
        for (const char *secret : {"SECRETSIG", "token", "pass", "frag"})
            QVERIFY2(!message.contains(QLatin1String(secret)), qPrintable(message));
        QCOMPARE(message.count(QStringLiteral("pa/claude-a")), 1); // named once
        QCOMPARE(gw.openaiB.requests().size(), 0);
        QVERIFY(gw.engine().marks().isEmpty());
        // Final: the SDKs retry a 502 twice, and would ask the redirect twice more (probe S1 F1).
        QCOMPARE(r.header("x-should-retry"), QByteArray("false"));
    }

    void anAnthropicAnswerResetAfterItsStopReasonIsTheAnswer() {
        // message_delta said why the answer stopped, with its usage; the connection was reset before
        // message_stop. The whole, billed answer was failed over from (the fallback asked and billed
        // too) and its host marked; a Chat stream reset after its finish_reason was the answer
        // (probe S1 F2).
        const QByteArray answer =
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":"
            "\"message\",\"role\":\"assistant\",\"model\":\"claude-a\",\"content\":[],\"usage\":{"
            "\"input_tokens\":5,\"output_tokens\":1}}}\n\n"
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{"
            "\"type\":\"text\",\"text\":\"\"}}\n\n"
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
            "\"text_delta\",\"text\":\"all of it\"}}\n\n"
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
            "\"usage\":{\"output_tokens\":4}}\n\n";
        for (const bool stream : {false, true}) {
            GatewayFixture gw;
            Fault reset = fault(Fault::ResetAfterContent);
            reset.body = answer;
            gw.anthropicA.pushFault(reset);
            gw.start();
            const auto r = gw.post(QStringLiteral("/v1/messages"),
                                   GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), stream));
            QCOMPARE(r.status, 200);
            QVERIFY2(r.body.contains("all of it"), r.body.constData());
            QVERIFY2(!r.body.contains("event: error"), r.body.constData());
            if (!stream) // a stream's headers went before any candidate answered
                QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
            QCOMPARE(gw.openaiB.requests().size(), 0);
            QVERIFY(gw.engine().marks().isEmpty());
        }
    }

    void laterPlainFailureNeverShortensAMark() {
        // A 300 s Retry-After mark stays 300 s after a plain 429.
        GatewayFixture gw;
        gw.anthropicA.pushFault(
            fault(Fault::Status, 429, "300",
                  R"({"type":"error","error":{"type":"rate_limit_error","message":"Rate limited"}})"));
        gw.anthropicA.pushFault(
            fault(Fault::Status, 429, {},
                  R"({"type":"error","error":{"type":"rate_limit_error","message":"Rate limited"}})"));
        gw.start();
        const auto body = GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), false);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).status, 429);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).status, 429); // a direct selector ignores its mark
        QCOMPARE(gw.anthropicA.requests().size(), 2);
        QCOMPARE(gw.engine().marks().size(), 1);
        const qint64 left = gw.engine().marks().first().expiresAtMs - gw.engine().markTable().now();
        QVERIFY2(left > 290000, qPrintable(QString::number(left)));
    }

    void parallelFailuresOnOneBlipAreOneStrike() {
        // Six requests in flight when A stalls add one strike (20 s), not six.
        GatewayFixture gw;
        gw.config.failover.deadlineMs = 1200; // budget 600 ms, then server_error on A for each
        gw.anthropicA.setFault(fault(Fault::StallBeforeHeaders));
        gw.start();
        QList<QNetworkReply *> replies;
        for (int i = 0; i < 6; ++i)
            replies << gw.postAsync(QStringLiteral("/v1/messages"),
                                    GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QTRY_COMPARE(gw.anthropicA.requests().size(), 6);
        for (auto *reply : replies) {
            const auto r = gw.wait(reply);
            QCOMPARE(r.status, 200);
            QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
            reply->deleteLater();
        }
        QCOMPARE(failuresOf(gw.engine(), QStringLiteral("pa"), QStringLiteral("server_error")), 6);
        const auto marks = gw.engine().marks();
        QCOMPARE(marks.size(), 1);
        QCOMPARE(marks.first().strikes, 1);
        QCOMPARE(marks.first().ttlMs, 20000);
    }

    void disabledFailoverIsAPlainRelay() {
        // No marks set or consulted; the first eligible candidate answers or fails.
        GatewayFixture gw;
        gw.config.failover.enabled = false;
        gw.anthropicA.setFault(fault(Fault::Status, 503));
        gw.start();
        const auto body = GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body).status, 503);
        QVERIFY(gw.engine().marks().isEmpty());
        gw.anthropicA.clearFault();
        // A pre-existing mark (say, from before the switch) is not consulted either.
        failover::UpstreamFailure f;
        f.kind = failover::FailureKind::ServerError;
        gw.engine().markTable().mark(QStringLiteral("local"),
                                     {QStringLiteral("pa"), QStringLiteral("claude-a"), gw.anthropicA.baseUrl()}, f);
        const auto r = gw.post(QStringLiteral("/v1/messages"), body);
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
        QCOMPARE(gw.openaiB.requests().size(), 0);
    }

    void credentialLessFollowerIsNoFollower() {
        // B has no usable key, so A keeps its own retries, the
        // client gets A's real error, and B leaves a skipped credential_exhausted row.
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].maxRetries = 1;
        gw.config.providers[QStringLiteral("pb")].credentials = {QStringLiteral("env:SWITCHMAN_TEST_UNSET_VARIABLE")};
        gw.anthropicA.setFault(fault(Fault::Status, 503));
        gw.start();
        QSignalSpy logged(gw.engine().telemetry(), &telemetry::Telemetry::logLine);
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 503);
        QCOMPARE(r.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("type")).toString(),
                 QStringLiteral("overloaded_error"));
        QVERIFY(!r.body.contains("no usable credential"));
        QCOMPARE(gw.anthropicA.requests().size(), 2); // its in-attempt retry was not taken away
        QCOMPARE(gw.openaiB.requests().size(), 0);
        const auto attempts = attemptsOf(gw.engine(), r.header("x-switchman-request-id"));
        QCOMPARE(attempts.size(), 2);
        QCOMPARE(attempts[1].candidate, QStringLiteral("pb/gpt-b"));
        QCOMPARE(attempts[1].outcome, telemetry::AttemptOutcome::Skipped);
        QCOMPARE(attempts[1].failure, QStringLiteral("credential_exhausted"));
        QVERIFY2(attempts[1].message.contains(QStringLiteral("SWITCHMAN_TEST_UNSET_VARIABLE, which is not set")),
                 qPrintable(attempts[1].message));
        bool sawSkipLine = false;
        for (const auto &args : logged) {
            const auto o = args.at(0).toJsonObject();
            sawSkipLine |= o.value(QStringLiteral("outcome")).toString() == QLatin1String("skipped") &&
                           o.value(QStringLiteral("failure")).toString() == QLatin1String("credential_exhausted") &&
                           o.value(QStringLiteral("reason")).toString().contains(QStringLiteral("which is not set"));
        }
        QVERIFY(sawSkipLine);
    }

    void credentialLessFirstCandidateLeavesASkippedRow() {
        // No silent reroute. A has no usable key: B answers, and A's row says why.
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("env:SWITCHMAN_TEST_UNSET_VARIABLE")};
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), true));
        QCOMPARE(r.status, 200);
        QVERIFY(r.body.contains(": switchman candidate=pb/gpt-b attempt=2"));
        QCOMPARE(gw.anthropicA.requests().size(), 0);
        const auto attempts = attemptsOf(gw.engine(), r.header("x-switchman-request-id"));
        QCOMPARE(attempts.size(), 2);
        QCOMPARE(attempts[0].candidate, QStringLiteral("pa/claude-a"));
        QCOMPARE(attempts[0].outcome, telemetry::AttemptOutcome::Skipped);
        QCOMPARE(attempts[0].failure, QStringLiteral("credential_exhausted"));
        QCOMPARE(attempts[0].logOutcome, QStringLiteral("skipped"));
        QCOMPARE(attempts[1].outcome, telemetry::AttemptOutcome::Committed);
        QVERIFY(gw.engine().marks().isEmpty());
    }

    void hugeRetryAfterIsClamped() {
        // A non-finite or absurd Retry-After is a capped mark, not UB.
        GatewayFixture gw;
        gw.anthropicA.pushFault(
            fault(Fault::Status, 429, "1e400",
                  R"({"type":"error","error":{"type":"rate_limit_error","message":"Rate limited"}})"));
        gw.openaiB.pushFault(fault(Fault::Status, 429, "99999999999999999999999",
                                   R"({"error":{"message":"Rate limit reached","type":"rate_limit_error"}})"));
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 429);
        for (const auto &m : gw.engine().marks())
            QVERIFY(m.ttlMs > 0 && m.ttlMs <= 300000);
        QVERIFY(r.header("retry-after").toLongLong() > 0);
        QVERIFY(r.header("retry-after").toLongLong() <= 300);
    }

    void usageRowIdsAreUniqueAndTheAnswerKeepsThePlainId() {
        // Two failed tries of one attempt, each billed for its input (message_start, then the
        // error, before any content), then the answer.
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].maxRetries = 2;
        gw.anthropicA.setRawReply(anthropicStream({}, 2, 4));
        gw.anthropicA.pushFault(fault(Fault::InBandErrorAfterContent)); // after the raw reply's first frame
        gw.anthropicA.pushFault(fault(Fault::InBandErrorAfterContent));
        gw.start();
        const auto r =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(gw.anthropicA.requests().size(), 3);
        const QString id = QString::fromLatin1(r.header("x-switchman-request-id"));
        const auto rows = gw.get(QStringLiteral("/admin/usage")).json().value(QStringLiteral("rows")).toArray();
        QStringList ids;
        for (const auto &row : rows)
            ids << row.toObject().value(QStringLiteral("requestId")).toString();
        QCOMPARE(ids.size(), 3);
        QCOMPARE(QSet<QString>(ids.begin(), ids.end()).size(), 3);
        QVERIFY2(ids.contains(id), qPrintable(ids.join(QLatin1Char(','))));
    }

    void clientAbortAfterCommitBillsThePlainId() {
        GatewayFixture gw;
        Fault slow;
        slow.chunkDelayMs = 200;
        gw.anthropicA.setFault(slow);
        gw.start();
        QJsonObject row;
        abortOnceContentCame(
            gw, QStringLiteral("/v1/messages"),
            GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("a b c d e f g h"), true),
            "content_block_delta", &row);
        QVERIFY(!row.isEmpty());
        // Billed, and not as an answer the client got whole.
        QCOMPARE(row.value(QStringLiteral("outcome")).toString(), QStringLiteral("aborted"));
    }

    // Gemini reports its usage (cumulative, thinking and cached input included) on every chunk.
    // A stream that ended before its finish reason was billed those counts when the upstream
    // closed with a FIN, but the 4-chars estimate when it reset: 71 input and 6 output tokens for
    // 3000 (2500 cached) and 474, 73x less (probe H1 1). A pi client's error event said 0 tokens
    // either way (probe H1 5). Both ends now bill and tell what Gemini reported.
    void aStreamCutBillsWhatTheUpstreamReportedHoweverTheConnectionEnds_data() {
        QTest::addColumn<QString>("route");
        QTest::addColumn<bool>("reset");
        for (const char *route : {"/v1/chat/completions", "/v1/pi/stream"})
            for (const bool reset : {false, true})
                QTest::addRow("%s %s", route, reset ? "RST" : "FIN") << QString::fromLatin1(route) << reset;
    }
    void aStreamCutBillsWhatTheUpstreamReportedHoweverTheConnectionEnds() {
        QFETCH(QString, route);
        QFETCH(bool, reset);
        const auto chunk = [](const char *text, int candidates) {
            return "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"" +
                   QByteArray(text) +
                   "\"}]},\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":3000,\"cachedContentTokenCount\":"
                   "2500,\"candidatesTokenCount\":" +
                   QByteArray::number(candidates) + ",\"thoughtsTokenCount\":450}}\n\n";
        };
        HostileUpstream up;
        QVERIFY(up.listen());
        QPointer<QTcpSocket> upstream;
        const auto framed = [](const QByteArray &event) {
            return QByteArray::number(event.size(), 16) + "\r\n" + event + "\r\n";
        };
        up.setScript([&upstream, &chunk, &framed](QTcpSocket *socket, const QByteArray &) {
            upstream = socket;
            socket->write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
                          framed(chunk("Hello", 12)) + framed(chunk(" world", 24)));
        });
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pe")].baseUrl = up.baseUrl() + QStringLiteral("/v1beta");
        gw.start();
        const QString model = QStringLiteral("pe/gemini-e");
        const QJsonObject body =
            route == QLatin1String("/v1/pi/stream")
                ? QJsonObject{{QStringLiteral("model"), model},
                              {QStringLiteral("stream"), true},
                              {QStringLiteral("context"),
                               QJsonObject{{QStringLiteral("messages"),
                                            QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                                                   {QStringLiteral("content"), QStringLiteral("hi")},
                                                                   {QStringLiteral("timestamp"), 0}}}}}}}
                : GatewayFixture::openaiBody(model, QStringLiteral("hi"), true);
        QNetworkReply *reply = gw.postAsync(route, body);
        // Both chunks reached the client: the gateway has read them before the upstream goes.
        QTRY_VERIFY(reply->bytesAvailable() > 0 && reply->peek(1 << 20).contains("world"));
        QVERIFY(upstream);
        if (reset) {
            const struct linger lin { 1, 0 };
            ::setsockopt(int(upstream->socketDescriptor()), SOL_SOCKET, SO_LINGER, &lin, sizeof lin);
            upstream->abort();
        } else {
            // The body ends cleanly (its last chunk), without Gemini's finish reason.
            upstream->write("0\r\n\r\n");
            upstream->disconnectFromHost();
        }
        const HttpResult r = gw.wait(reply);
        const QString id = QString::fromLatin1(r.header("x-switchman-request-id"));
        QTRY_COMPARE(gw.engine().activeRequests(), 0);
        const auto rows = gw.get(QStringLiteral("/admin/usage")).json().value(QStringLiteral("rows")).toArray();
        QCOMPARE(rows.size(), 1);
        const QJsonObject row = rows.first().toObject();
        const QByteArray shown = QJsonDocument(row).toJson();
        QCOMPARE(row.value(QStringLiteral("requestId")).toString(), id);
        QCOMPARE(row.value(QStringLiteral("outcome")).toString(), QStringLiteral("cut"));
        QVERIFY2(row.value(QStringLiteral("input")).toInt() == 500, shown.constData());
        QVERIFY2(row.value(QStringLiteral("cacheRead")).toInt() == 2500, shown.constData());
        QVERIFY2(row.value(QStringLiteral("output")).toInt() == 474, shown.constData()); // 24 + 450 thinking
        if (route == QLatin1String("/v1/pi/stream")) {
            // pi sums usage over its messages, error messages included.
            QVERIFY2(r.body.contains("\"type\":\"error\""), r.body.constData());
            const qsizetype error = r.body.indexOf("\"type\":\"error\"");
            QVERIFY2(r.body.indexOf("\"cacheRead\":2500", error) > error, r.body.constData());
        }
    }

    void anAbortedStreamWhoseUsageNeverCameIsStillBilled() {
        // OpenAI reports usage only at the end of a stream. A client that hung up after the content
        // had started left no row at all ($0 for ten whole answers in a probe): a way around a
        // tenant's budget. The answer so far is billed by estimate, four characters a token.
        GatewayFixture gw;
        gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pb/gpt-b")};
        Fault slow;
        slow.chunkDelayMs = 200;
        gw.openaiB.setFault(slow);
        gw.start();
        QJsonObject row;
        abortOnceContentCame(
            gw, QStringLiteral("/v1/chat/completions"),
            GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("a b c d e f g h"), true),
            "\"content\":\"", &row);
        QCOMPARE(row.value(QStringLiteral("outcome")).toString(), QStringLiteral("aborted"));
        QVERIFY2(row.value(QStringLiteral("output")).toDouble() > 0, qPrintable(QJsonDocument(row).toJson()));
        QVERIFY2(row.value(QStringLiteral("input")).toDouble() > 0, qPrintable(QJsonDocument(row).toJson()));
        QVERIFY(row.value(QStringLiteral("cost")).toDouble() > 0);
    }

    // An agent's Esc on a Gemini thinking model: Gemini had reported its input (most of it cached)
    // and 450 thinking tokens with its first chunk, but the aborted answer was billed its visible
    // characters (probe H1 1).
    void anAbortedGeminiStreamBillsWhatGeminiReported() {
        GatewayFixture gw;
        QByteArray sse;
        for (const auto &[text, candidates] : {std::pair{"Hello", 12}, std::pair{" world", 24}})
            sse += "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"" +
                   QByteArray(text) +
                   "\"}]},\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":3000,\"cachedContentTokenCount\":"
                   "2500,\"candidatesTokenCount\":" +
                   QByteArray::number(candidates) + ",\"thoughtsTokenCount\":450}}\n\n";
        gw.googleE.setRawReply(sse);
        Fault slow;
        slow.chunkDelayMs = 1000; // a chunk a second: the client leaves after the first
        gw.googleE.setFault(slow);
        gw.start();
        QJsonObject row;
        abortOnceContentCame(gw, QStringLiteral("/v1/chat/completions"),
                             GatewayFixture::openaiBody(QStringLiteral("pe/gemini-e"), QStringLiteral("hi"), true),
                             "Hello", &row);
        const QByteArray shown = QJsonDocument(row).toJson();
        QCOMPARE(row.value(QStringLiteral("outcome")).toString(), QStringLiteral("aborted"));
        QVERIFY2(row.value(QStringLiteral("input")).toInt() == 500, shown.constData());
        QVERIFY2(row.value(QStringLiteral("cacheRead")).toInt() == 2500, shown.constData());
        QVERIFY2(row.value(QStringLiteral("output")).toInt() >= 462, shown.constData()); // 450 of them thinking
    }

    void anAnswerWhoseUsageMeansNothingIsBilledByEstimate() {
        // An upstream that reports no usage, or counts no upstream could mean (negative, past 2^32:
        // read as 0), left no usage row at all: a served answer missing from /admin/usage and free
        // of its tenant's budget (probe ZV). It is billed by estimate, four characters a token.
        GatewayFixture gw;
        QByteArray sse;
        for (
            const QByteArray &chunk :
            {QByteArray(
                 R"({"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":"forty characters of answer text here ok"}}]})"),
             QByteArray(R"({"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})"),
             QByteArray(
                 R"({"id":"c1","choices":[],"usage":{"prompt_tokens":-5,"completion_tokens":-7,"total_tokens":9223372036854775807}})")})
            sse += "data: " + chunk + "\n\n";
        gw.openaiB.setRawReply(sse + "data: [DONE]\n\n");
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), false));
        QCOMPARE(r.status, 200);
        QVERIFY(waitUntil(
            [&]() { return !gw.get(QStringLiteral("/admin/usage")).json().value("rows").toArray().isEmpty(); }, 5000));
        const QJsonObject row = gw.get(QStringLiteral("/admin/usage")).json().value("rows").toArray()[0].toObject();
        QCOMPARE(row.value(QStringLiteral("output")).toInt(), 10); // 39 characters, four a token
        QVERIFY2(row.value(QStringLiteral("input")).toInt() > 0, qPrintable(QJsonDocument(row).toJson()));
    }

    void aTryCutAfterItsContentIsBilledWhenTheNextCandidateAnswers() {
        // A non-streaming client sees nothing of a try whose stream was cut after its content
        // began: the next candidate answers it. The cut try's content was still produced and
        // billed by its provider, but only its usage report would have said so, and that comes
        // at the end: OpenAI's try left no row, Anthropic's said one output token.
        const QString words = QStringLiteral("a b c d e f g h i j k l m n o p q r s t u v w x y z");
        for (const bool openaiFirst : {true, false}) {
            GatewayFixture gw;
            if (openaiFirst) {
                gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pb/gpt-b"),
                                                                        QStringLiteral("pa/claude-a")};
                gw.openaiB.pushFault(fault(Fault::ResetAfterContent));
            } else {
                gw.anthropicA.pushFault(fault(Fault::ResetAfterContent));
            }
            gw.start();
            const auto r = gw.post(QStringLiteral("/v1/chat/completions"),
                                   GatewayFixture::openaiBody(QStringLiteral("chain"), words, false));
            QCOMPARE(r.status, 200);
            const QString id = QString::fromLatin1(r.header("x-switchman-request-id"));
            QTRY_COMPARE(gw.engine().activeRequests(), 0);
            const auto rows = gw.get(QStringLiteral("/admin/usage")).json().value(QStringLiteral("rows")).toArray();
            QCOMPARE(rows.size(), 2);
            QJsonObject cut;
            QJsonObject answer;
            for (const auto &v : rows)
                (v.toObject().value(QStringLiteral("requestId")).toString() == id ? answer : cut) = v.toObject();
            const QByteArray shown = QJsonDocument(QJsonArray(rows)).toJson();
            QCOMPARE(answer.value(QStringLiteral("outcome")).toString(), QStringLiteral("ok"));
            QCOMPARE(cut.value(QStringLiteral("requestId")).toString(), id + QStringLiteral(":a1"));
            QCOMPARE(cut.value(QStringLiteral("outcome")).toString(), QStringLiteral("error"));
            QCOMPARE(cut.value(QStringLiteral("provider")).toString(),
                     openaiFirst ? QStringLiteral("pb") : QStringLiteral("pa"));
            QVERIFY2(cut.value(QStringLiteral("output")).toDouble() > 1, shown.constData());
            QVERIFY2(cut.value(QStringLiteral("input")).toDouble() > 0, shown.constData());
            QVERIFY2(cut.value(QStringLiteral("cost")).toDouble() > 0, shown.constData());
        }
    }

    void aStreamCutAfterItsContentIsBilledAsCut() {
        // The ledger said "ok" for a stream the client got an in-band error on: `switchman usage`
        // counted a broken answer as a success. The whole answer of the next request says "ok".
        GatewayFixture gw;
        gw.anthropicA.pushFault(fault(Fault::InBandErrorAfterContent));
        gw.start();
        const auto cut = gw.post(QStringLiteral("/v1/messages"),
                                 GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x y z"), true));
        QCOMPARE(cut.status, 200);
        QVERIFY2(cut.body.contains("event: error"), cut.body.constData());
        const auto whole =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x y z"), true));
        QCOMPARE(whole.status, 200);
        QMap<QString, QString> outcomes;
        for (const auto &row : gw.get(QStringLiteral("/admin/usage")).json().value(QStringLiteral("rows")).toArray())
            outcomes.insert(row.toObject().value(QStringLiteral("requestId")).toString(),
                            row.toObject().value(QStringLiteral("outcome")).toString());
        QCOMPARE(outcomes.value(QString::fromLatin1(cut.header("x-switchman-request-id"))), QStringLiteral("cut"));
        QCOMPARE(outcomes.value(QString::fromLatin1(whole.header("x-switchman-request-id"))), QStringLiteral("ok"));
    }

    void requestIdsAreDistinctAndTellNothingOfOtherRequests() {
        // Every answer names its request: "req_", this process's prefix, 13 characters. Another
        // tenant's requests between two of mine leave no trace in my ids (they were a counter), and
        // the SDKs find the id where they look for one: x-request-id (OpenAI), request-id (Anthropic).
        GatewayFixture gw;
        gw.start();
        QList<QByteArray> ids;
        for (int i = 0; i < 40; ++i) {
            const auto r = gw.post(QStringLiteral("/v1/messages"),
                                   GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
            QCOMPARE(r.status, 200);
            ids << r.header("x-switchman-request-id");
            QCOMPARE(r.header("request-id"), ids.last());
        }
        static const QRegularExpression form(QStringLiteral("^req_[0-9a-z]{1,6}[0-9a-v]{13}$"));
        for (const QByteArray &id : ids)
            QVERIFY2(form.match(QString::fromLatin1(id)).hasMatch(), id.constData());
        QCOMPARE(QSet<QByteArray>(ids.begin(), ids.end()).size(), ids.size());
        // Consecutive ids do not step by one: no two share their first 12 characters after the prefix.
        int sameStem = 0;
        for (int i = 1; i < ids.size(); ++i)
            sameStem += ids[i].chopped(1) == ids[i - 1].chopped(1);
        QCOMPARE(sameStem, 0);
        const auto chat = gw.post(QStringLiteral("/v1/chat/completions"),
                                  GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(chat.status, 200);
        QCOMPARE(chat.header("x-request-id"), chat.header("x-switchman-request-id"));
        const auto rows = gw.get(QStringLiteral("/admin/usage")).json().value(QStringLiteral("rows")).toArray();
        QCOMPARE(rows.size(), 41);
        QCOMPARE(rows.last().toObject().value(QStringLiteral("requestId")).toString().toLatin1(),
                 chat.header("x-switchman-request-id"));
    }

    void silentFirstCandidateFailsOverAtTheIdleTimeout() {
        GatewayFixture gw;
        gw.config.failover.upstreamIdleTimeoutMs = 300; // well inside the 60 s budget
        gw.anthropicA.setFault(fault(Fault::StallBeforeHeaders));
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(r.header("x-switchman-fallback-reason"), QByteArray("server_error"));
    }

    void aSlowButTalkingStreamIsNeverCut() {
        GatewayFixture gw;
        gw.config.failover.upstreamIdleTimeoutMs = 600; // 4 gaps: a stalled test thread cannot make one gap look idle
        Fault slow;
        slow.chunkDelayMs = 150; // every gap under the idle limit, the whole answer well over it
        gw.anthropicA.setFault(slow);
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"),
                                                             QStringLiteral("one two three four five six"), true));
        QCOMPARE(r.status, 200);
        QVERIFY(r.body.contains("message_stop"));
        QVERIFY(!r.body.contains("event: error"));
    }

    void markedSingleCandidateIsStillTried() {
        // The resolver's "a single candidate ignores its mark", end to end.
        GatewayFixture gw;
        gw.start();
        failover::UpstreamFailure f;
        f.kind = failover::FailureKind::ServerError;
        gw.engine().markTable().mark(QStringLiteral("local"),
                                     {QStringLiteral("pa"), QStringLiteral("claude-a"), gw.anthropicA.baseUrl()}, f);
        const auto r =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(gw.anthropicA.requests().size(), 1);
    }

    // ---- Held memory and secrets in upstream errors, inside the loop

    void pingsAndEmptyDeltasAreNeverHeld_data() {
        QTest::addColumn<QString>("route");
        QTest::newRow("passthrough frames") << QStringLiteral("/v1/messages");
        QTest::newRow("canonical events") << QStringLiteral("/v1/chat/completions");
    }
    void pingsAndEmptyDeltasAreNeverHeld() {
        // 40 000 pings and empty deltas before the first token: ~3 MiB that a 64 KiB hold
        // would have to keep if they counted. A answers; no ping is replayed.
        QFETCH(QString, route);
        GatewayFixture gw;
        gw.config.limits.maxHoldBytes = 64 * 1024;
        const QByteArray noise = pingsAndEmptyDeltas(20000);
        gw.anthropicA.setRawReply(anthropicStream(noise, 3, 10));
        gw.start();
        const auto r = gw.post(route, routeBody(route, QStringLiteral("chain"), true), {}, 30000);
        QCOMPARE(r.status, 200);
        QVERIFY2(r.body.contains(": switchman candidate=pa/claude-a"), r.body.left(2000).constData());
        QVERIFY(r.body.size() < 64 * 1024);
        QCOMPARE(r.body.count("ping"), 0);
        QCOMPARE(gw.openaiB.requests().size(), 0);
    }

    void chatEmptyDeltasWithoutAFinishReasonAreNeverHeld() {
        // A Chat server that leaves finish_reason out of every chunk but the last (instead of
        // null) and sends 40 000 empty deltas first: on a same-API route they are noise too, so
        // a 64 KiB hold keeps none of them and the first token commits the answer.
        GatewayFixture gw;
        gw.config.limits.maxHoldBytes = 64 * 1024;
        gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pb/gpt-b"),
                                                                QStringLiteral("pa/claude-a")};
        QByteArray stream;
        for (int i = 0; i < 40000; ++i)
            stream +=
                R"(data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":""}}]})"
                "\n\n";
        stream +=
            R"(data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]})"
            "\n\n"
            R"(data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})"
            "\n\ndata: [DONE]\n\n";
        gw.openaiB.setRawReply(stream);
        gw.start();
        const auto r =
            gw.post(QStringLiteral("/v1/chat/completions"),
                    routeBody(QStringLiteral("/v1/chat/completions"), QStringLiteral("chain"), true), {}, 30000);
        QCOMPARE(r.status, 200);
        QVERIFY2(r.body.contains(": switchman candidate=pb/gpt-b"), r.body.left(2000).constData());
        QVERIFY2(r.body.contains("\"hi\""), r.body.left(2000).constData());
        QVERIFY(r.body.size() < 64 * 1024);
        QCOMPARE(gw.anthropicA.requests().size(), 0);
    }

    void anEmptyDataEventIsNeverRelayed_data() {
        QTest::addColumn<QByteArray>("before");
        QTest::addColumn<QByteArray>("after");
        QTest::newRow("before the first token") << QByteArray("data: \n\n") << QByteArray();
        QTest::newRow("after the first token") << QByteArray() << QByteArray("data:\n\n");
        QTest::newRow("a last line cut after data:") << QByteArray() << QByteArray("data:");
        QTest::newRow("a last line cut after data") << QByteArray() << QByteArray("data");
    }
    void anEmptyDataEventIsNeverRelayed() {
        // Probe Y1 F1: on the Chat passthrough an event with empty data went to the client as
        // "data: ", which no JSON reader takes: the OpenAI SDK threw a SyntaxError and lost an answer
        // the gateway ended with [DONE]. Every data line the client reads is JSON or [DONE].
        QFETCH(QByteArray, before);
        QFETCH(QByteArray, after);
        GatewayFixture gw;
        gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pb/gpt-b")};
        const QByteArray chunk = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,";
        gw.openaiB.setRawReply(before + chunk + "\"delta\":{\"content\":\"hi\"}}]}\n\n" + chunk +
                               "\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" + after);
        gw.start();
        const auto r =
            gw.post(QStringLiteral("/v1/chat/completions"),
                    routeBody(QStringLiteral("/v1/chat/completions"), QStringLiteral("chain"), true), {}, 30000);
        QCOMPARE(r.status, 200);
        QVERIFY2(r.body.contains("\"hi\""), r.body.constData());
        QVERIFY2(r.body.endsWith("data: [DONE]\n\n"), r.body.constData());
        for (const QByteArray &line : r.body.split('\n')) {
            if (!line.startsWith("data:") || line == "data: [DONE]")
                continue;
            QJsonParseError error;
            QJsonDocument::fromJson(line.mid(5), &error);
            QVERIFY2(error.error == QJsonParseError::NoError, r.body.constData());
        }
    }

    void aFinishReasonErrorIsAFailureNotAnAnswer_data() {
        QTest::addColumn<QByteArray>("reason");
        QTest::newRow("OpenRouter") << QByteArray("error");
        QTest::newRow("DeepSeek") << QByteArray("insufficient_system_resource"); // probe B1 1
        QTest::newRow("z.ai") << QByteArray("network_error");
    }
    void aFinishReasonErrorIsAFailureNotAnAnswer() {
        // A finish_reason that says the server broke off: before content it fails over, after content the
        // client's stream ends in the format's error; never an empty or partial answer as success.
        QFETCH(QByteArray, reason);
        GatewayFixture gw;
        gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pb/gpt-b"),
                                                                QStringLiteral("pa/claude-a")};
        const QByteArray broke = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
                                 "\"delta\":{},\"finish_reason\":\"" +
                                 reason + "\"}]}\n\ndata: [DONE]\n\n";
        gw.openaiB.setRawReply(broke);
        gw.start();
        const QString chat = QStringLiteral("/v1/chat/completions");
        const auto before = gw.post(chat, routeBody(chat, QStringLiteral("chain"), false));
        QCOMPARE(before.status, 200);
        QCOMPARE(before.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
        QCOMPARE(before.header("x-switchman-fallback-from"), QByteArray("pb/gpt-b"));

        gw.openaiB.setRawReply(
            R"(data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Half"}}]})"
            "\n\n" +
            broke);
        const auto after = gw.post(chat, routeBody(chat, QStringLiteral("pb/gpt-b"), true));
        QCOMPARE(after.status, 200);
        QVERIFY2(after.body.contains("Half"), after.body.constData());
        // The gateway's error after the relayed chunk (its "finish_reason":"error" is no error an
        // SDK reads: the stream would have looked finished, probe V).
        QVERIFY2(after.body.contains("data: {\"error\":{"), after.body.constData());
        QVERIFY2(after.body.contains("finish_reason \\\"" + reason + "\\\""), after.body.constData());
        QVERIFY2(!after.body.contains("[DONE]"), after.body.constData());
        QVERIFY2(!after.body.contains("\"finish_reason\":\"stop\""), after.body.constData());
    }

    void aBareErrorFrameAfterContentEndsAChatClientsStreamInAnError() {
        // vLLM and SGLang send the error object itself as a frame. Relayed after content, it is no error the
        // openai SDK reads ({"object":"error"} has no `error` member): the client ended silently with half an
        // answer, or its helper threw "chunk.choices is not iterable" (probe B1 2, BV). The gateway's error,
        // in the upstream's words, goes instead of it.
        GatewayFixture gw;
        gw.openaiB.setRawReply(
            R"(data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Half"}}]})"
            "\n\n"
            R"(data: {"object":"error","message":"CUDA out of memory","type":"InternalServerError","code":500})"
            "\n\ndata: [DONE]\n\n");
        gw.start();
        const QString chat = QStringLiteral("/v1/chat/completions");
        const auto r = gw.post(chat, routeBody(chat, QStringLiteral("pb/gpt-b"), true));
        QCOMPARE(r.status, 200);
        QVERIFY2(r.body.contains("Half"), r.body.constData());
        QVERIFY2(r.body.contains("data: {\"error\":{"), r.body.constData());
        QVERIFY2(r.body.contains("CUDA out of memory"), r.body.constData());
        QVERIFY2(!r.body.contains("\"object\":\"error\""), r.body.constData()); // the SDK's helper throws on it
        QVERIFY2(!r.body.contains("[DONE]"), r.body.constData());
    }

    void aWholeAnswerWhoseUpstreamClosedEarlyEndsInTheFormatsLastFrame() {
        // The upstream said why it stopped, then closed without its last frame (Messages'
        // message_stop, Chat's [DONE]): the answer is whole, and the gateway counts it so, but a
        // same-API client got a stream with no end in its format (probe V). It gets that frame.
        GatewayFixture gw;
        gw.anthropicA.setRawReply(
            "event: message_start\ndata: "
            R"({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1}}})"
            "\n\nevent: content_block_start\ndata: "
            R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})"
            "\n\nevent: content_block_delta\ndata: "
            R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Whole"}})"
            "\n\nevent: content_block_stop\ndata: "
            R"({"type":"content_block_stop","index":0})"
            "\n\nevent: message_delta\ndata: "
            R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}})"
            "\n\n");
        gw.openaiB.setRawReply(
            R"(data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Whole"}}]})"
            "\n\n"
            R"(data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})"
            "\n\n");
        gw.start();
        const auto messages =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), true));
        QCOMPARE(messages.status, 200);
        QVERIFY2(messages.body.contains("Whole") && !messages.body.contains("event: error"), messages.body.constData());
        QVERIFY2(messages.body.endsWith("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"),
                 messages.body.constData());
        const auto chat = gw.post(QStringLiteral("/v1/chat/completions"),
                                  GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("x"), true));
        QCOMPARE(chat.status, 200);
        QVERIFY2(chat.body.contains("Whole") && !chat.body.contains("\"error\""), chat.body.constData());
        QVERIFY2(chat.body.endsWith("data: [DONE]\n\n"), chat.body.constData());
        QCOMPARE(chat.body.count("[DONE]"), 1);

        // An upstream that ends its stream itself: one last frame, its own.
        gw.anthropicA.setRawReply(QByteArray());
        const auto whole =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), true));
        QCOMPARE(whole.status, 200);
        QCOMPARE(whole.body.count("event: message_stop"), 1);
    }

    void framesTheGatewayCouldNotReadAreNotRelayed_data() {
        QTest::addColumn<QByteArray>("garbage");
        QTest::addColumn<bool>("endsTheBody"); // the garbage is the last thing the upstream sends
        // An event cut off by the end of the body: the gateway made it whole with a blank line,
        // and the OpenAI SDK threw "Could not parse message into JSON" instead of reading the
        // gateway's own "stream ended" error.
        QTest::addRow("cut mid-event") << QByteArray("data: {\"trunc") << true;
        // Lines run together by a bare CR: one event of two data lines, which is not JSON. The
        // JSON answer never had it; the stream relayed it and the SDK threw mid-answer.
        QTest::addRow("bare CR") << QByteArray("data: {a}\rdata: {HIDDEN}\r\r\n\n") << false;
    }
    void framesTheGatewayCouldNotReadAreNotRelayed() {
        QFETCH(QByteArray, garbage);
        QFETCH(bool, endsTheBody);
        GatewayFixture gw;
        gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pb/gpt-b")};
        const auto chunk = [](const QByteArray &delta) {
            return R"(data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":)" + delta +
                   "}]}\n\n";
        };
        QByteArray stream = chunk(R"({"role":"assistant","content":"seen"})") + garbage;
        if (!endsTheBody)
            stream +=
                chunk(R"({"content":" visible"})") +
                R"(data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})"
                "\n\ndata: [DONE]\n\n";
        gw.openaiB.setRawReply(stream);
        gw.start();
        const auto r =
            gw.post(QStringLiteral("/v1/chat/completions"),
                    routeBody(QStringLiteral("/v1/chat/completions"), QStringLiteral("chain"), true), {}, 30000);
        QCOMPARE(r.status, 200);
        QVERIFY2(!r.body.contains("trunc") && !r.body.contains("HIDDEN"), r.body.constData());
        // Every event the client gets is JSON its SDK can read, or [DONE].
        for (const QByteArray &event : r.body.split('\n'))
            if (event.startsWith("data: ") && event != "data: [DONE]")
                QVERIFY2(!QJsonDocument::fromJson(event.mid(6)).isNull(), event.constData());
        QVERIFY(r.body.contains("seen"));
        if (endsTheBody) {
            QVERIFY2(r.body.contains("\"error\""), r.body.constData()); // the gateway's own error event
            QVERIFY(!r.body.contains("[DONE]"));
        } else {
            QVERIFY2(r.body.contains(" visible") && r.body.contains("[DONE]"), r.body.constData());
        }
    }

    void anUpstreamsNamesAreBoundedAsAClientsAre_data() {
        QTest::addColumn<QString>("route");
        QTest::addColumn<bool>("stream");
        QTest::addColumn<bool>("anthropicFirst");
        QTest::addColumn<QByteArray>("name");
        const QByteArray escapes = R"(gpt\r\nX-Evil: 1\r\n\u0000\u0007\u001b[31mZZZ)";
        const QByteArray longName(5000, 'm');
        for (const bool stream : {true, false}) {
            const char *mode = stream ? "stream" : "json";
            QTest::addRow("chat model with escapes, %s", mode)
                << QStringLiteral("/v1/chat/completions") << stream << false << escapes;
            QTest::addRow("messages model of 5000 bytes, %s", mode)
                << QStringLiteral("/v1/messages") << stream << true << longName;
        }
    }
    void anUpstreamsNamesAreBoundedAsAClientsAre() {
        // SPEC 10: an echoed identifier is at most 256 bytes with no control characters. A
        // same-API stream relayed the upstream's model name as it was: a CLI printing it ran the
        // escapes. Such an upstream is broken: its attempt fails before anything is relayed, and
        // the next candidate answers.
        QFETCH(QString, route);
        QFETCH(bool, stream);
        QFETCH(bool, anthropicFirst);
        QFETCH(QByteArray, name);
        GatewayFixture gw;
        if (anthropicFirst) {
            gw.anthropicA.setRawReply(
                anthropicStream({}, 2, 10).replace(R"("model":"m")", "\"model\":\"" + name + "\""));
        } else {
            gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pb/gpt-b"),
                                                                    QStringLiteral("pa/claude-a")};
            gw.openaiB.setRawReply(R"(data: {"id":"c","object":"chat.completion.chunk","model":")" + name +
                                   R"(","choices":[{"index":0,"delta":{"role":"assistant","content":"bad"}}]})"
                                   "\n\ndata: [DONE]\n\n");
        }
        gw.start();
        const auto r = gw.post(route, routeBody(route, QStringLiteral("chain"), stream), {}, 30000);
        QCOMPARE(r.status, 200);
        QVERIFY2(!r.body.contains("ZZZ") && !r.body.contains("mmmmmmmm") && !r.body.contains("\"bad\""),
                 r.body.left(600).constData());
        const QByteArray follower = anthropicFirst ? "pb/gpt-b" : "pa/claude-a";
        if (stream)
            QVERIFY2(r.body.contains(": switchman candidate=" + follower), r.body.left(600).constData());
        else
            QCOMPARE(r.header("x-switchman-candidate"), follower);
        QCOMPARE(failuresOf(gw.engine(), anthropicFirst ? QStringLiteral("pa") : QStringLiteral("pb"),
                            QStringLiteral("server_error")),
                 1);
    }

    void anUpstreamsToolCallNamesAreBoundedAsAClientsAre_data() {
        QTest::addColumn<QString>("route");
        QTest::addColumn<bool>("stream");
        QTest::addColumn<QString>("first"); // the candidate whose first frame names a call so
        QTest::addColumn<QByteArray>("id"); // the call's id and name, as JSON string contents
        QTest::addColumn<QByteArray>("name");
        // Probe T3: an escape sequence that sets a terminal's title, CR LF, NUL, U+202E, 100 KB.
        const QByteArray escapes = R"(get_weather\u001b]0;ZZZ\u0007\r\n\u0000)";
        const QByteArray bidi = R"(get_\u202eZZZ)";
        const QByteArray longId(100 * 1024, 'q');
        const QString chat = QStringLiteral("/v1/chat/completions"), messages = QStringLiteral("/v1/messages"),
                      responses = QStringLiteral("/v1/responses"), pi = QStringLiteral("/v1/pi/stream");
        for (const bool stream : {true, false}) {
            const char *mode = stream ? "stream" : "json";
            QTest::addRow("chat passthrough, name with escapes, %s", mode)
                << chat << stream << QStringLiteral("pb/gpt-b") << QByteArray("call_1") << escapes;
            QTest::addRow("chat passthrough, id of 100 KB, %s", mode)
                << chat << stream << QStringLiteral("pb/gpt-b") << longId << QByteArray("get_weather");
            QTest::addRow("messages passthrough, name with U+202E, %s", mode)
                << messages << stream << QStringLiteral("pa/claude-a") << QByteArray("toolu_1") << bidi;
            QTest::addRow("messages passthrough, id of 100 KB, %s", mode)
                << messages << stream << QStringLiteral("pa/claude-a") << longId << QByteArray("get_weather");
            QTest::addRow("responses passthrough, name with escapes, %s", mode)
                << responses << stream << QStringLiteral("pd/resp-d") << QByteArray("call_1") << escapes;
            QTest::addRow("responses passthrough, call_id of 100 KB, %s", mode)
                << responses << stream << QStringLiteral("pd/resp-d") << longId << QByteArray("get_weather");
            QTest::addRow("pi from chat, id of 100 KB, %s", mode)
                << pi << stream << QStringLiteral("pb/gpt-b") << longId << QByteArray("get_weather");
            QTest::addRow("pi from messages, name with escapes, %s", mode)
                << pi << stream << QStringLiteral("pa/claude-a") << QByteArray("toolu_1") << escapes;
            QTest::addRow("chat from gemini, name with U+202E, %s", mode)
                << chat << stream << QStringLiteral("pe/gemini-e") << QByteArray() << bidi;
        }
    }
    void anUpstreamsToolCallNamesAreBoundedAsAClientsAre() {
        // SPEC 10, probe T3: a same-API stream relayed an upstream's tool call id and name as they
        // were, so a CLI agent printed the escapes to its terminal and sent a 100 KB id back up on
        // its next turn (and every route showed the name to the client). Such an upstream is
        // broken, as one naming its model so is: its attempt fails before anything is relayed, and
        // the next candidate answers.
        QFETCH(QString, route);
        QFETCH(bool, stream);
        QFETCH(QString, first);
        QFETCH(QByteArray, id);
        QFETCH(QByteArray, name);
        // Each frame is written whole (moc reads a raw string as plain ones: its quotes must pair),
        // with the call's id and name put in after.
        const auto ev = [&](const char *type, const QByteArray &json) {
            return QByteArray("event: ") + type +
                   "\ndata: " + QByteArray(json).replace("@ID@", id).replace("@NAME@", name) + "\n\n";
        };
        const auto data = [&](const QByteArray &json) {
            return "data: " + QByteArray(json).replace("@ID@", id).replace("@NAME@", name) + "\n\n";
        };
        GatewayFixture gw;
        const QString follower =
            first == QLatin1String("pa/claude-a") ? QStringLiteral("pb/gpt-b") : QStringLiteral("pa/claude-a");
        gw.config.routes[QStringLiteral("chain")].candidates = {first, follower};
        if (first == QLatin1String("pb/gpt-b")) {
            gw.openaiB.setRawReply(
                data(
                    R"({"id":"c","object":"chat.completion.chunk","model":"gpt-b","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"@ID@","type":"function","function":{"name":"@NAME@","arguments":"{}"}}]}}]})") +
                data(
                    R"({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})") +
                data("[DONE]"));
        } else if (first == QLatin1String("pa/claude-a")) {
            gw.anthropicA.setRawReply(
                ev("message_start",
                   R"({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1}}})") +
                ev("content_block_start",
                   R"({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"@ID@","name":"@NAME@","input":{}}})") +
                ev("content_block_delta",
                   R"({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}})") +
                ev("content_block_stop", R"({"type":"content_block_stop","index":0})") +
                ev("message_delta",
                   R"({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}})") +
                ev("message_stop", R"({"type":"message_stop"})"));
        } else if (first == QLatin1String("pd/resp-d")) {
            gw.responsesD.setRawReply(
                ev("response.created",
                   R"({"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}})") +
                ev("response.output_item.added",
                   R"({"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"@ID@","name":"@NAME@","arguments":"","status":"in_progress"}})") +
                ev("response.output_item.done",
                   R"({"type":"response.output_item.done","sequence_number":2,"output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"@ID@","name":"@NAME@","arguments":"{}","status":"completed"}})") +
                ev("response.completed",
                   R"({"type":"response.completed","sequence_number":3,"response":{"id":"resp_1","object":"response","status":"completed","output":[{"type":"function_call","id":"fc_1","call_id":"@ID@","name":"@NAME@","arguments":"{}","status":"completed"}]}})"));
        } else {
            gw.googleE.setRawReply(data(
                R"({"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"@NAME@","args":{}}}]},"finishReason":"STOP"}]})"));
        }
        gw.start();
        const auto r = gw.post(route, routeBody(route, QStringLiteral("chain"), stream), {}, 30000);
        QCOMPARE(r.status, 200);
        // Neither the name nor the id reached the client, and nothing else of the first answer.
        QVERIFY2(!r.body.contains("ZZZ") && !r.body.contains("qqqqqqqq") && !r.body.contains("get_weather"),
                 r.body.left(600).constData());
        if (stream) {
            QVERIFY2(r.body.contains(": switchman candidate=" + follower.toLatin1() + " attempt=2"),
                     r.body.left(600).constData());
            QVERIFY2(!r.body.contains("event: error"), r.body.left(600).constData());
        } else {
            QCOMPARE(r.header("x-switchman-candidate"), follower.toLatin1());
            QCOMPARE(r.header("x-switchman-fallback-from"), first.toLatin1());
        }
        QCOMPARE(failuresOf(gw.engine(), first.section(QLatin1Char('/'), 0, 0), QStringLiteral("server_error")), 1);
    }

    void aGeminiAnswerThatFailedToCallStopsWithNoMark() {
        // Gemini ends an answer it could not make with finishReason MALFORMED_FUNCTION_CALL (or
        // OTHER, LANGUAGE, ...) and no content, over a connection that worked. It was read as a
        // connection cut early, a transport failure that set every model of the Google base URL
        // aside (probe E1 F2), then as the model's outage: a mark that kept Gemini from the
        // tenant's other requests and two retries of the same request (probe N1 1). The record's
        // row for an error with no status that names no outage: it stops, with no mark, no retry
        // and no failover, and the client hears what the model said.
        GatewayFixture gw;
        gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pe/gemini-e"),
                                                                QStringLiteral("pb/gpt-b")};
        gw.config.providers[QStringLiteral("pe")].maxRetries = 2;
        gw.googleE.setRawReply(
            "data: "
            R"({"candidates":[{"content":{"role":"model","parts":[]},"finishReason":"MALFORMED_FUNCTION_CALL"}]})"
            "\n\n");
        gw.start();
        for (const QString &model : {QStringLiteral("chain"), QStringLiteral("pe/gemini-e")}) {
            for (const bool stream : {false, true}) {
                const int before = int(gw.googleE.requests().size());
                const auto r = gw.post(QStringLiteral("/v1/chat/completions"),
                                       GatewayFixture::openaiBody(model, QStringLiteral("x"), stream));
                if (stream) {
                    QCOMPARE(r.status, 200); // the early headers were out: the error is in band
                    QVERIFY2(r.body.contains("\"error\"") && !r.body.contains("[DONE]"), r.body.constData());
                } else {
                    QCOMPARE(r.status, 502);
                }
                QVERIFY2(r.body.contains("MALFORMED_FUNCTION_CALL") && !r.body.contains("unreachable") &&
                             !r.body.contains("overloaded"),
                         r.body.constData());
                QCOMPARE(int(gw.googleE.requests().size()) - before, 1); // not asked again
            }
        }
        QCOMPARE(gw.openaiB.requests().size(), 0); // nor sent on to the follower
        QVERIFY(gw.engine().marks().isEmpty());
        QCOMPARE(failuresOf(gw.engine(), QStringLiteral("pe"), QStringLiteral("server_error")), 0);
        QCOMPARE(failuresOf(gw.engine(), QStringLiteral("pe"), QStringLiteral("transport")), 0);
    }

    // Gemini blocks a prompt with promptFeedback.blockReason and no candidate. Every reason is
    // Google's refusal of the prompt, OTHER ("blocked for reasons not known") too: it was the
    // model's outage, a mark, and the blocked prompt sent on to the next provider (probe N1 1).
    void aPromptGeminiBlockedForAnyReasonIsARefusal() {
        GatewayFixture gw;
        gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pe/gemini-e"),
                                                                QStringLiteral("pb/gpt-b")};
        gw.googleE.setRawReply("data: "
                               R"({"promptFeedback":{"blockReason":"OTHER"},"usageMetadata":{"promptTokenCount":9}})"
                               "\n\n");
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/chat/completions"),
                               GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json()[QStringLiteral("choices")][0][QStringLiteral("finish_reason")].toString(),
                 QStringLiteral("content_filter"));
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pe/gemini-e"));
        QCOMPARE(gw.openaiB.requests().size(), 0);
        QVERIFY(gw.engine().marks().isEmpty());
    }

    void aChatServersOverLongCallIdReachesAChatClientBoundedInTheStreamAsInTheAnswer() {
        // vLLM names a call "chatcmpl-tool-" and 32 hex digits (46). A Chat client got it bounded to
        // 40 in a JSON answer but as it came in a stream (relayed frame by frame), and sent it back:
        // OpenAI, the next turn's candidate, refuses an id over 40 (probe W). Both now tell the
        // client the same bounded id.
        const QByteArray vllm = "chatcmpl-tool-0123456789abcdef0123456789abcdef";
        GatewayFixture gw;
        gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pb/gpt-b")};
        // moc reads a raw string as plain ones (its quotes must pair): the id goes in after.
        const QByteArray call =
            QByteArray(
                R"({"id":"c","object":"chat.completion.chunk","model":"gpt-b","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"@ID@","type":"function","function":{"name":"get_weather","arguments":""}}]}}]})")
                .replace("@ID@", vllm);
        gw.openaiB.setRawReply(
            "data: " + call + "\n\n" +
            R"(data: {"id":"c","object":"chat.completion.chunk","model":"gpt-b","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]})"
            "\n\n" +
            R"(data: {"id":"c","object":"chat.completion.chunk","model":"gpt-b","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})"
            "\n\ndata: [DONE]\n\n");
        gw.start();
        const auto answer = gw.post(QStringLiteral("/v1/chat/completions"),
                                    GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(answer.status, 200);
        const QString bounded = answer.json()
                                    .value(QStringLiteral("choices"))
                                    .toArray()
                                    .first()
                                    .toObject()
                                    .value(QStringLiteral("message"))
                                    .toObject()
                                    .value(QStringLiteral("tool_calls"))
                                    .toArray()
                                    .first()
                                    .toObject()
                                    .value(QStringLiteral("id"))
                                    .toString();
        QVERIFY2(!bounded.isEmpty() && bounded.size() <= 40, qPrintable(bounded));
        const auto stream = gw.post(QStringLiteral("/v1/chat/completions"),
                                    GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("x"), true));
        QCOMPARE(stream.status, 200);
        QVERIFY2(!stream.body.contains(vllm), stream.body.constData());
        QVERIFY2(stream.body.contains("\"id\":\"" + bounded.toLatin1() + "\""), stream.body.constData());
        QVERIFY2(stream.body.contains("\"name\":\"get_weather\""), stream.body.constData());
        QVERIFY2(stream.body.contains("data: [DONE]"), stream.body.constData());
    }

    void anSseEventOverEightMiBEndsTheAttemptAsTransport() {
        // One event of 9 MiB before any content: the reader drops it and the attempt ends as
        // a connection-level failure, so the follower answers and the base URL is marked.
        GatewayFixture gw;
        const QByteArray huge =
            anthropicSse("content_block_delta", "{\"pad\":\"" + QByteArray(9 * 1024 * 1024, 'p') + "\"}");
        gw.anthropicA.setRawReply(anthropicStream(huge, 3, 10));
        gw.start();
        const auto r =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), true), {}, 30000);
        QCOMPARE(r.status, 200);
        QVERIFY(r.body.contains(": switchman candidate=pb/gpt-b"));
        QCOMPARE(failuresOf(gw.engine(), QStringLiteral("pa"), QStringLiteral("transport")), 1);
    }

    void holdOverItsByteLimitFailsOverAsServerError() {
        GatewayFixture gw;
        gw.config.limits.maxHoldBytes = 64 * 1024;
        QByteArray blocks; // empty block starts: held (they open blocks), never meaningful
        for (int i = 1; i <= 2000; ++i)
            blocks += anthropicSse("content_block_start", R"({"type":"content_block_start","index":)" +
                                                              QByteArray::number(i) +
                                                              R"(,"content_block":{"type":"text","text":""}})");
        gw.anthropicA.setRawReply(anthropicStream(blocks, 1, 10));
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), true));
        QCOMPARE(r.status, 200);
        QVERIFY(r.body.contains(": switchman candidate=pb/gpt-b"));
        QCOMPARE(failuresOf(gw.engine(), QStringLiteral("pa"), QStringLiteral("server_error")), 1);
        const auto attempts = attemptsOf(gw.engine(), r.header("x-switchman-request-id"));
        QVERIFY(attempts.first().message.contains(QStringLiteral("maxHoldBytes")));
    }

    void aJsonAnswersHoldBeforeItsFirstTokenIsBoundedToo() {
        // The same flood of empty blocks to a JSON client: it read on to maxResponseBytes (64 MiB by
        // default, 155 MiB of RSS for one request in a probe), then stopped with a 502, no
        // failover and no mark. Before its first token a JSON answer is a hold like a stream's.
        GatewayFixture gw;
        gw.config.limits.maxHoldBytes = 64 * 1024;
        QByteArray blocks;
        for (int i = 1; i <= 2000; ++i)
            blocks += anthropicSse("content_block_start", R"({"type":"content_block_start","index":)" +
                                                              QByteArray::number(i) +
                                                              R"(,"content_block":{"type":"text","text":""}})");
        gw.anthropicA.setRawReply(anthropicStream(blocks, 1, 10));
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/chat/completions"),
                               GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QVERIFY2(r.status == 200, r.body.left(300).constData());
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pb/gpt-b"));
        QCOMPARE(r.header("x-switchman-fallback-reason"), QByteArray("server_error"));
        QCOMPARE(failuresOf(gw.engine(), QStringLiteral("pa"), QStringLiteral("server_error")), 1);
        const auto attempts = attemptsOf(gw.engine(), r.header("x-switchman-request-id"));
        QVERIFY(attempts.first().message.contains(QStringLiteral("maxHoldBytes")));
        // An answer that began is bounded by maxResponseBytes alone: 100 KiB of text, over the
        // 64 KiB hold, still answers.
        gw.anthropicA.setRawReply(anthropicStream({}, 100, 1024));
        const auto big = gw.post(QStringLiteral("/v1/chat/completions"),
                                 GatewayFixture::openaiBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), false));
        QVERIFY2(big.status == 200, big.body.left(300).constData());
        QCOMPARE(openaiMessageText(big.json()).size(), 100 * 1024);
    }

    void nonStreamingAnswerOverMaxResponseBytesIsAnError() {
        GatewayFixture gw;
        gw.config.limits.maxResponseBytes = 100 * 1024;
        gw.anthropicA.setRawReply(anthropicStream({}, 200, 1024)); // ~240 KiB
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/chat/completions"),
                               GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 502);
        QVERIFY2(r.json()
                     .value(QStringLiteral("error"))
                     .toObject()
                     .value(QStringLiteral("message"))
                     .toString()
                     .contains(QStringLiteral("maxResponseBytes")),
                 r.body.constData());
        QCOMPARE(gw.openaiB.requests().size(), 0); // the same answer elsewhere would be as large
    }

    void pingsDoNotCountAgainstAJsonAnswersBound() {
        // A JSON answer whose upstream sends ~3 MiB of pings and empty deltas before a short
        // answer: none of it is kept, so none of it counts against maxResponseBytes (64 KiB here).
        // It did: the request ended in a 502 "exceeds limits.maxResponseBytes" with no failover,
        // while the same upstream on a stream answered (and an endless flood failed over).
        GatewayFixture gw;
        gw.config.limits.maxResponseBytes = 64 * 1024;
        const QByteArray noise = pingsAndEmptyDeltas(20000);
        gw.anthropicA.setRawReply(anthropicStream(noise, 3, 10));
        gw.start();
        const auto r =
            gw.post(QStringLiteral("/v1/chat/completions"),
                    GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("x"), false), {}, 30000);
        QVERIFY2(r.status == 200, r.body.left(300).constData());
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
        QCOMPARE(openaiMessageText(r.json()).size(), 30);
        QCOMPARE(gw.openaiB.requests().size(), 0);
    }

    void nonStreamingAnswersTogetherAreBoundedByBytesInFlight() {
        // One answer under maxResponseBytes, yet over what all requests may hold at once: 503, in
        // the client's format, without failover or a mark (the provider did nothing wrong). What
        // an answer took is given back when its request is done, so answers that fit one at a
        // time keep fitting.
        GatewayFixture gw;
        gw.config.limits.maxBodyBytes = 64 * 1024;
        gw.config.limits.maxBodyBytesInFlight = 256 * 1024;
        gw.config.limits.maxResponseBytes = 1024 * 1024;
        gw.anthropicA.setRawReply(anthropicStream({}, 100, 1024)); // ~115 KiB
        gw.start();
        for (int i = 0; i < 4; ++i) {
            const auto r = gw.post(QStringLiteral("/v1/chat/completions"),
                                   GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("x"), false));
            QVERIFY2(r.status == 200, r.body.left(300).constData());
            QCOMPARE(openaiMessageText(r.json()).size(), 100 * 1024);
        }
        gw.anthropicA.setRawReply(anthropicStream({}, 300, 1024)); // ~340 KiB
        const auto r = gw.post(QStringLiteral("/v1/chat/completions"),
                               GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("x"), false));
        QCOMPARE(r.status, 503);
        QCOMPARE(r.header("retry-after"), QByteArray("1")); // as for a request body that does not fit
        const QJsonObject error = r.json().value(QStringLiteral("error")).toObject();
        QVERIFY2(error.value(QStringLiteral("message")).toString().contains(QStringLiteral("maxBodyBytesInFlight")),
                 r.body.constData());
        QCOMPARE(gw.openaiB.requests().size(), 0);
        QVERIFY(gw.engine().marks().isEmpty());
        QCOMPARE(failuresOf(gw.engine(), QStringLiteral("pa"), QStringLiteral("server_error")), 0);
        // And the refused answer gave its bytes back too.
        gw.anthropicA.setRawReply(anthropicStream({}, 100, 1024));
        QCOMPARE(gw.post(QStringLiteral("/v1/chat/completions"),
                         GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("x"), false))
                     .status,
                 200);
    }

    void aStreamThatKeepsItsAnswerTakesFromBytesInFlight() {
        // A Responses (or pi) client's stream keeps the whole message for its closing events, which
        // repeat it: 60 MB of upstream text held ~545 MiB, and six such streams at once 1.7 GB, with
        // no configured bound but maxResponseBytes per stream (probe T1). What it keeps now takes from
        // limits.maxBodyBytesInFlight (4 bytes a character kept, not a byte of the upstream's frames)
        // and is given back when it is done; past the room the answer ends with the in-band error
        // naming the limit: no failover, no mark.
        GatewayFixture gw;
        gw.config.limits.maxBodyBytes = 64 * 1024;
        gw.config.limits.maxBodyBytesInFlight = 256 * 1024;
        gw.config.limits.maxResponseBytes = 1024 * 1024;
        gw.start();
        const QJsonObject responsesBody{{"model", "chain"}, {"input", "x"}, {"stream", true}};
        gw.anthropicA.setRawReply(anthropicStream({}, 10, 1024)); // 10 KiB of text: 40 KiB kept
        for (int i = 0; i < 8; ++i) {                             // 8 x 40 KiB: given back each time
            const auto r = gw.post(QStringLiteral("/v1/responses"), responsesBody);
            QVERIFY2(r.status == 200, r.body.left(300).constData());
            QVERIFY2(r.body.contains("response.completed"), r.body.right(300).constData());
        }
        gw.anthropicA.setRawReply(anthropicStream({}, 100, 1024)); // 100 KiB of text: 400 KiB kept
        const auto cut = gw.post(QStringLiteral("/v1/responses"), responsesBody);
        QCOMPARE(cut.status, 200); // the stream had begun
        QVERIFY2(!cut.body.contains("response.completed"), cut.body.right(300).constData());
        QVERIFY2(cut.body.contains("maxBodyBytesInFlight"), cut.body.right(500).constData());
        QCOMPARE(gw.openaiB.requests().size(), 0);
        QVERIFY(gw.engine().marks().isEmpty());
        QCOMPARE(failuresOf(gw.engine(), QStringLiteral("pa"), QStringLiteral("server_error")), 0);
        // A Chat client's stream keeps nothing of it: the same answer goes through whole.
        const auto chat = gw.post(QStringLiteral("/v1/chat/completions"),
                                  GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("x"), true));
        QVERIFY2(chat.status == 200 && chat.body.contains("[DONE]"), chat.body.right(300).constData());
        // And the cut answer gave its bytes back.
        gw.anthropicA.setRawReply(anthropicStream({}, 10, 1024));
        const auto after = gw.post(QStringLiteral("/v1/responses"), responsesBody);
        QVERIFY2(after.body.contains("response.completed"), after.body.right(300).constData());
    }

    void aKeptStreamIsChargedForItsTextNotItsFrames_data() {
        QTest::addColumn<QString>("route");
        QTest::addColumn<QByteArray>("answered");
        QTest::newRow("Responses") << QStringLiteral("/v1/responses") << QByteArray("response.completed");
        QTest::newRow("pi") << QStringLiteral("/v1/pi/stream") << QByteArray("\"type\":\"done\"");
    }
    void aKeptStreamIsChargedForItsTextNotItsFrames() {
        // Real upstream frames are tens of times their text: an OpenAI chunk of ~320 bytes carries a
        // token of four characters. Charged four times each frame's bytes, twelve ordinary Codex
        // answers at once (0.41 MB of text) took the whole 128 MiB budget: their streams were cut
        // mid-answer and another tenant's 8 MB request got 503 (probe AC2 F1). A stream takes what
        // its encoder and builder keep of the text. Here 6 000 deltas of four characters in frames
        // of ~400 bytes: 2.4 MB of frames, ten times the room, for 24 000 characters kept.
        QFETCH(QString, route);
        QFETCH(QByteArray, answered);
        GatewayFixture gw;
        gw.config.limits.maxBodyBytes = 64 * 1024;
        gw.config.limits.maxBodyBytesInFlight = 256 * 1024;
        gw.config.limits.maxResponseBytes = 4 * 1024 * 1024;
        gw.start();
        const QByteArray padding(320, 'o');
        QByteArray fat;
        for (int i = 0; i < 6000; ++i)
            fat += anthropicSse(
                "content_block_delta",
                R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"tokn"},"obfuscation":")" +
                    padding + R"("})");
        QByteArray stream = anthropicStream({}, 0, 0);
        stream.insert(stream.indexOf("event: content_block_stop"), fat);
        gw.anthropicA.setRawReply(stream);
        for (int i = 0; i < 3; ++i) {
            const auto r = gw.post(route, routeBody(route, QStringLiteral("chain"), true));
            QVERIFY2(r.status == 200 && r.body.contains(answered) && !r.body.contains("maxBodyBytesInFlight"),
                     r.body.right(600).constData());
            QVERIFY(r.body.count("tokn") >= 6000);
        }
    }

    void aChatClientsCustomCallTakesFromBytesInFlight() {
        // A Chat client's custom tool call goes out whole at its end, so its encoder keeps the input
        // until then: 60 MB of it a stream was charged to nothing (probe X2 F5). It takes from
        // limits.maxBodyBytesInFlight as a kept message does; past the room the answer ends with the
        // in-band error naming the limit. A function call of the same bytes is streamed as it comes.
        const auto inputDelta = [](const QString &partial) {
            const QJsonObject delta{{QStringLiteral("type"), QStringLiteral("input_json_delta")},
                                    {QStringLiteral("partial_json"), partial}};
            const QJsonObject frame{{QStringLiteral("type"), QStringLiteral("content_block_delta")},
                                    {QStringLiteral("index"), 0},
                                    {QStringLiteral("delta"), delta}};
            return anthropicSse("content_block_delta", QJsonDocument(frame).toJson(QJsonDocument::Compact));
        };
        const auto callStream = [&inputDelta](int deltas) {
            QByteArray out = anthropicSse(
                "message_start",
                R"({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1}}})");
            out += anthropicSse(
                "content_block_start",
                R"({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"ct","input":{}}})");
            out += inputDelta(QStringLiteral("{\"input\": \""));
            const QString piece(1024, u'p');
            for (int i = 0; i < deltas; ++i)
                out += inputDelta(piece);
            out += inputDelta(QStringLiteral("\"}"));
            out += anthropicSse("content_block_stop", R"({"type":"content_block_stop","index":0})");
            out += anthropicSse(
                "message_delta",
                R"({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}})");
            out += anthropicSse("message_stop", R"({"type":"message_stop"})");
            return out;
        };
        const auto bodyWith = [](const QJsonObject &tool) {
            QJsonObject body = GatewayFixture::openaiBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), true);
            body.insert(QStringLiteral("tools"), QJsonArray{tool});
            return body;
        };
        const QJsonObject custom =
            bodyWith({{QStringLiteral("type"), QStringLiteral("custom")},
                      {QStringLiteral("custom"), QJsonObject{{QStringLiteral("name"), QStringLiteral("ct")}}}});
        const QJsonObject function =
            bodyWith({{QStringLiteral("type"), QStringLiteral("function")},
                      {QStringLiteral("function"),
                       QJsonObject{{QStringLiteral("name"), QStringLiteral("ct")},
                                   {QStringLiteral("parameters"),
                                    QJsonObject{{QStringLiteral("type"), QStringLiteral("object")}}}}}});
        GatewayFixture gw;
        gw.config.limits.maxBodyBytes = 64 * 1024;
        gw.config.limits.maxBodyBytesInFlight = 256 * 1024;
        gw.config.limits.maxResponseBytes = 1024 * 1024;
        gw.start();
        gw.anthropicA.setRawReply(callStream(10)); // 10 KiB of input: 40 KiB kept
        for (int i = 0; i < 8; ++i) {              // given back each time
            const auto r = gw.post(QStringLiteral("/v1/chat/completions"), custom);
            QVERIFY2(r.status == 200 && r.body.contains("\"type\":\"custom\"") && r.body.contains("[DONE]"),
                     r.body.right(300).constData());
        }
        gw.anthropicA.setRawReply(callStream(100)); // 100 KiB of input: 400 KiB kept
        const auto cut = gw.post(QStringLiteral("/v1/chat/completions"), custom);
        QCOMPARE(cut.status, 200); // the stream had begun
        QVERIFY2(cut.body.contains("maxBodyBytesInFlight") && !cut.body.contains("[DONE]"),
                 cut.body.right(500).constData());
        QVERIFY(gw.engine().marks().isEmpty());
        const auto streamed = gw.post(QStringLiteral("/v1/chat/completions"), function);
        QVERIFY2(streamed.status == 200 && streamed.body.contains("[DONE]"), streamed.body.right(300).constData());
    }

    void whatAStreamHoldsBeforeItsCommitTakesFromBytesInFlight_data() {
        QTest::addColumn<QString>("route");
        QTest::addColumn<QByteArray>("answered");
        QTest::addColumn<QByteArray>("overloaded");
        QTest::newRow("Messages") << QStringLiteral("/v1/messages") << QByteArray("message_stop")
                                  << QByteArray("overloaded_error");
        QTest::newRow("Chat") << QStringLiteral("/v1/chat/completions") << QByteArray("[DONE]")
                              << QByteArray("overloaded");
    }
    void whatAStreamHoldsBeforeItsCommitTakesFromBytesInFlight() {
        // Signature deltas change nothing a client sees yet, so a stream holds them until its first
        // text, up to limits.maxHoldBytes a request. Held by a Messages or Chat client's stream they
        // took nothing from the budget all requests share: 96 such streams at once held 2.1 GB
        // (probe Z2 M1). Now they take 3 bytes a held byte; past the room the request is refused as
        // overloaded, as a request body that does not fit is: no failover, no mark, and the room is
        // given back. A Chat client's decoder keeps them though no frame of them is held (probe X2
        // F4: 40 MB a stream went uncharged).
        QFETCH(QString, route);
        QFETCH(QByteArray, answered);
        QFETCH(QByteArray, overloaded);
        GatewayFixture gw;
        gw.config.limits.maxBodyBytes = 64 * 1024;
        gw.config.limits.maxBodyBytesInFlight = 256 * 1024;
        gw.config.limits.maxResponseBytes = 1024 * 1024;
        gw.start();
        const QJsonObject body = routeBody(route, QStringLiteral("chain"), true);
        gw.anthropicA.setRawReply(signedAnthropicStream(20)); // ~21 KiB held: ~63 KiB of the room
        for (int i = 0; i < 6; ++i) {                         // given back each time
            const auto r = gw.post(route, body);
            QVERIFY2(r.status == 200 && r.body.contains(answered), r.body.right(300).constData());
        }
        gw.anthropicA.setRawReply(signedAnthropicStream(120)); // ~125 KiB held: ~375 KiB, over the room
        const auto refused = gw.post(route, body);
        // The stream's head went out with the first keepalive room: the refusal is its error event,
        // overloaded (the SDKs retry it), and no answer.
        QVERIFY2(refused.body.contains(overloaded) && refused.body.contains("maxBodyBytesInFlight"),
                 refused.body.left(600).constData());
        QVERIFY(!refused.body.contains(answered));
        QVERIFY(!refused.body.contains("SSSS")); // nothing held reached the client
        QCOMPARE(gw.openaiB.requests().size(), 0);
        QVERIFY(gw.engine().marks().isEmpty());
        gw.anthropicA.setRawReply(signedAnthropicStream(20));
        const auto after = gw.post(route, body);
        QVERIFY2(after.status == 200 && after.body.contains(answered), after.body.right(300).constData());
    }

    void signatureDeltasBeforeTheFirstTokenAreBoundedByTheHold_data() {
        QTest::addColumn<QString>("route");
        QTest::newRow("Messages") << QStringLiteral("/v1/messages");
        QTest::newRow("Chat") << QStringLiteral("/v1/chat/completions");
    }
    void signatureDeltasBeforeTheFirstTokenAreBoundedByTheHold() {
        // ~125 KiB of signature before the first token, over a 64 KiB hold: nothing the client gets
        // soon, on every route. A Chat client's stream kept them all and was answered whole (probe
        // X2 F4: 40 MB a stream past an 8 MiB hold); now it fails over as a Messages client's does.
        QFETCH(QString, route);
        GatewayFixture gw;
        gw.config.limits.maxHoldBytes = 64 * 1024;
        gw.anthropicA.setRawReply(signedAnthropicStream(120));
        gw.start();
        const auto r = gw.post(route, routeBody(route, QStringLiteral("chain"), true), {}, 30000);
        QCOMPARE(r.status, 200);
        QVERIFY2(r.body.contains(": switchman candidate=pb/gpt-b"), r.body.left(600).constData());
        QVERIFY(!r.body.contains("SSSS"));
        QCOMPARE(failuresOf(gw.engine(), QStringLiteral("pa"), QStringLiteral("server_error")), 1);
        const auto attempts = attemptsOf(gw.engine(), r.header("x-switchman-request-id"));
        QVERIFY(attempts.first().message.contains(QStringLiteral("over limits.maxHoldBytes")));
    }

    void signatureDeltasAfterTheCommitTakeFromBytesInFlight() {
        // A thinking block after the text: its signature reaches no Chat client, so nothing paces the
        // upstream while the decoder keeps it for the block's End. It takes from the shared budget:
        // past the room the answer is cut with the limit named (it went through whole, uncharged).
        GatewayFixture gw;
        gw.config.limits.maxBodyBytes = 64 * 1024;
        gw.config.limits.maxBodyBytesInFlight = 256 * 1024;
        gw.config.limits.maxResponseBytes = 1024 * 1024;
        gw.start();
        const QJsonObject body = routeBody(QStringLiteral("/v1/chat/completions"), QStringLiteral("pa/claude-a"), true);
        gw.anthropicA.setRawReply(signedAnthropicStream(20, true)); // ~63 KiB of the room
        const auto fits = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QVERIFY2(fits.status == 200 && fits.body.contains("[DONE]"), fits.body.right(300).constData());
        gw.anthropicA.setRawReply(signedAnthropicStream(120, true)); // ~375 KiB, over the room
        const auto cut = gw.post(QStringLiteral("/v1/chat/completions"), body);
        QCOMPARE(cut.status, 200); // the text went out first
        QVERIFY2(cut.body.contains("done"), cut.body.left(600).constData());
        QVERIFY2(cut.body.contains("maxBodyBytesInFlight") && !cut.body.contains("[DONE]"),
                 cut.body.right(600).constData());
        QVERIFY(gw.engine().marks().isEmpty());
    }

    void anAnswerTheClientDoesNotReadStaysInTheBudget_data() {
        QTest::addColumn<bool>("readsLater");
        QTest::newRow("the client reads it later") << true;
        QTest::newRow("the client never reads it") << false;
    }
    void anAnswerTheClientDoesNotReadStaysInTheBudget() {
        // A finished answer waits in the socket until its client reads it. Its bytes stay in
        // limits.maxBodyBytesInFlight until the kernel takes them, as they were while the upstream
        // sent them: another answer that does not fit beside them is a 503. They are given back as
        // the client reads, or when the client, having read nothing for limits.idleTimeoutMs, is
        // closed. (Clients that stopped reading large answers grew the gateway by 825 MB.)
        QFETCH(bool, readsLater);
        GatewayFixture gw;
        gw.config.limits.maxBodyBytes = 64 * 1024;
        gw.config.limits.maxResponseBytes = 7 * 1024 * 1024 + 512 * 1024;
        gw.config.limits.maxBodyBytesInFlight = 8 * 1024 * 1024;
        gw.config.limits.idleTimeoutMs = 1500;
        // ~7 MB read, ~6.5 MB answered: more than the kernel's buffers of the connection take.
        gw.anthropicA.setRawReply(anthropicStream({}, 6500, 1024));
        gw.start();
        const QJsonObject request = GatewayFixture::openaiBody(QStringLiteral("chain"), QStringLiteral("x"), false);

        // A small receive window, set before the connection is made (Qt sets its option only after).
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        const int small = 4096;
        QVERIFY(::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small) == 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(gw.engine().port());
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        QVERIFY(::connect(fd, reinterpret_cast<const sockaddr *>(&address), sizeof address) == 0);
        QTcpSocket reader;
        QVERIFY(reader.setSocketDescriptor(fd));
        reader.setReadBufferSize(4096); // reads nothing beyond this: the kernel buffers fill
        const QByteArray body = QJsonDocument(request).toJson(QJsonDocument::Compact);
        reader.write("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     "Content-Length: " +
                     QByteArray::number(body.size()) + "\r\n\r\n" + body);
        QTRY_VERIFY_WITH_TIMEOUT(reader.bytesAvailable() > 0, 15000); // answered: the rest waits unread
        const QByteArray head = reader.peek(4096);
        QVERIFY2(head.startsWith("HTTP/1.1 200"), head.left(200).constData());
        const qsizetype headEnd = head.indexOf("\r\n\r\n") + 4;
        const QRegularExpressionMatch length =
            QRegularExpression(QStringLiteral("(?i)content-length: (\\d+)")).match(QString::fromLatin1(head));
        QVERIFY(headEnd > 4 && length.hasMatch());
        const qint64 answerBytes = headEnd + length.captured(1).toLongLong();
        QVERIFY(answerBytes > 6 * 1024 * 1024);

        const auto second = gw.post(QStringLiteral("/v1/chat/completions"), request);
        QCOMPARE(second.status, 503);
        QCOMPARE(second.header("retry-after"), QByteArray("1"));
        QVERIFY2(second.body.contains("maxBodyBytesInFlight"), second.body.constData());
        QVERIFY(gw.engine().marks().isEmpty()); // the provider did nothing wrong

        if (readsLater) {
            reader.setReadBufferSize(0);
            QByteArray got;
            QVERIFY(waitUntil(
                [&]() {
                    got += reader.readAll();
                    return got.size() >= answerBytes;
                },
                15000));
            QCOMPARE(got.size(), answerBytes);
            QCOMPARE(openaiMessageText(QJsonDocument::fromJson(got.mid(headEnd)).object()).size(), 6500 * 1024);
            const auto third = gw.post(QStringLiteral("/v1/chat/completions"), request);
            QCOMPARE(third.status, 200); // what it read was given back
            return;
        }
        // Never read: closed after limits.idleTimeoutMs, and its bytes are given back.
        QElapsedTimer waited;
        waited.start();
        int status = 0;
        while (status != 200 && waited.elapsed() < 10000) {
            QTest::qWait(250);
            status = gw.post(QStringLiteral("/v1/chat/completions"), request).status;
            QVERIFY(status == 503 || status == 200);
        }
        QCOMPARE(status, 200);
        reader.setReadBufferSize(0);
        QByteArray got;
        QVERIFY(waitUntil(
            [&]() {
                got += reader.readAll();
                return reader.state() != QAbstractSocket::ConnectedState;
            },
            10000));
        QVERIFY2(got.size() < answerBytes, qPrintable(QString::number(got.size()))); // cut: the connection went
    }

    void aFailedTrysAnswerBytesAreGivenBackBeforeTheNext() {
        // A first candidate reads ~180 KiB of answer and breaks off; the loop drops it and the next
        // candidate answers as much again. Together they are over the 256 KiB budget, but the
        // process never holds both: the failed try's bytes go back before the next try starts.
        GatewayFixture gw;
        gw.config.limits.maxBodyBytes = 64 * 1024;
        gw.config.limits.maxBodyBytesInFlight = 256 * 1024;
        config::RouteConfig route;
        route.name = QStringLiteral("two-claudes");
        route.candidates = {QStringLiteral("pa/claude-a"), QStringLiteral("pc/claude-c")};
        gw.config.routes.insert(route.name, route);
        const QByteArray whole = anthropicStream({}, 160, 1024);
        gw.anthropicA.setRawReply(whole.left(whole.indexOf("event: content_block_stop"))); // no end
        gw.anthropicC.setRawReply(whole);
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/chat/completions"),
                               GatewayFixture::openaiBody(QStringLiteral("two-claudes"), QStringLiteral("x"), false));
        QVERIFY2(r.status == 200, r.body.left(400).constData());
        QCOMPARE(openaiMessageText(r.json()).size(), 160 * 1024);
        QCOMPARE(gw.anthropicA.requests().size(), 1);
    }

    void aClientThatDoesNotReadPausesTheUpstream() {
        // After commit the upstream is read only while the client has at most 1 MiB unsent.
        ReadPauseProbe probe;
        GatewayFixture gw;
        gw.transport = &probe;
        gw.anthropicA.setRawReply(anthropicStream({}, 3000, 8 * 1024)); // 24 MiB of text
        gw.start();
        QTcpSocket client;
        client.setReadBufferSize(4096); // read nothing beyond this: the kernel buffers fill
        client.connectToHost(QHostAddress::LocalHost, gw.engine().port());
        QVERIFY(client.waitForConnected(5000));
        const QByteArray body =
            QJsonDocument(GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), true))
                .toJson(QJsonDocument::Compact);
        client.write(
            "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
            QByteArray::number(body.size()) + "\r\n\r\n" + body);
        QTRY_VERIFY_WITH_TIMEOUT(probe.pauses.contains(true), 15000);
        // Now read it all: reading resumes and the stream completes.
        client.setReadBufferSize(0);
        QByteArray received;
        QElapsedTimer t;
        t.start();
        while (!received.contains("message_stop") && t.elapsed() < 30000) {
            QTest::qWait(5);
            received += client.readAll();
            received = received.right(4096);
        }
        QVERIFY(received.contains("message_stop"));
        QCOMPARE(probe.pauses.first(), true);
        QVERIFY(probe.pauses.contains(false));
    }

    void keysNeverLeaveThroughPassthroughFrames() {
        // An upstream error event quoting a key, after commit, on a same-API route.
        GatewayFixture gw;
        qputenv("SWITCHMAN_TEST_LEAKY", "test-secret-value-0123456789");
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("env:SWITCHMAN_TEST_LEAKY")};
        QByteArray stream = anthropicStream({}, 1, 5);
        stream.truncate(stream.indexOf("event: content_block_stop"));
        const QByteArray keyShape =
            "sk-ant-" + QByteArray("api03-") + QByteArray(24, 'A'); // assembled: no key-shaped literal in git
        stream += anthropicSse(
            "error",
            R"({"type":"error","error":{"type":"api_error","message":"bad key test-secret-value-0123456789, header Bearer abcdefghijklmnop1234 and )" +
                keyShape + R"("}})");
        gw.anthropicA.setRawReply(stream);
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), true));
        QCOMPARE(r.status, 200);
        QVERIFY(r.body.contains("event: error"));
        QVERIFY2(!r.body.contains("test-secret-value"), r.body.constData());
        QVERIFY(!r.body.contains("abcdefghijklmnop1234"));
        QVERIFY(!r.body.contains("AAAAAAAAAAAAAAAA"));
        QVERIFY(r.body.contains("[redacted]"));
        for (const auto &a : gw.engine().telemetry()->attempts(-1))
            QVERIFY(!a.message.contains(QStringLiteral("test-secret-value")));
    }

    void keysNeverLeaveThroughErrorCodesOrParams() {
        // An upstream 400 whose error body quotes the key it refused in its type, param and code,
        // not only in its message: the client gets each field, so each is redacted. Chat client,
        // Chat upstream (the error's own fields) and Anthropic client, Chat upstream (translated).
        GatewayFixture gw;
        qputenv("SWITCHMAN_TEST_LEAKY", "test-secret-value-0123456789");
        gw.config.providers[QStringLiteral("pb")].credentials = {QStringLiteral("env:SWITCHMAN_TEST_LEAKY")};
        gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pb/gpt-b")};
        demo::Fault fault;
        fault.kind = demo::Fault::Status;
        fault.status = 400;
        fault.body = R"({"error":{"message":"no","type":"t test-secret-value-0123456789",)"
                     R"("param":"key test-secret-value-0123456789","code":"Bearer test-secret-value-0123456789"}})";
        gw.openaiB.setFault(fault);
        gw.start();
        for (bool stream : {false, true}) {
            const auto chat =
                gw.post(QStringLiteral("/v1/chat/completions"),
                        QJsonObject{{"model", "chain"},
                                    {"stream", stream},
                                    {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "x"}}}}});
            // A stream has its 200 and SSE headers from the first attempt's start: the error is in it.
            QVERIFY2(chat.status == (stream ? 200 : 400), chat.body.constData());
            QVERIFY2(!chat.body.contains("test-secret-value"), chat.body.constData());
            QVERIFY2(chat.body.contains("[redacted]"), chat.body.constData()); // the fields are there, redacted
            const auto claude =
                gw.post(QStringLiteral("/v1/messages"),
                        GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), stream));
            QCOMPARE(claude.status, stream ? 200 : 400);
            QVERIFY2(!claude.body.contains("test-secret-value"), claude.body.constData());
            const auto pi =
                gw.postRaw(QStringLiteral("/v1/pi/stream"),
                           R"({"model":{"id":"chain"},"context":{"messages":[{"role":"user","content":"x"}]}})");
            QVERIFY2(!pi.body.contains("test-secret-value"), pi.body.constData());
        }

        // An in-band error event whose type quotes the key (the decoders put it in the message),
        // translated for Chat, pi and Responses clients.
        GatewayFixture inBand;
        inBand.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("env:SWITCHMAN_TEST_LEAKY")};
        inBand.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pa/claude-a")};
        inBand.anthropicA.setRawReply(anthropicSse(
            "error", R"({"type":"error","error":{"type":"test-secret-value-0123456789","message":"refused"}})"));
        inBand.start();
        for (const char *path : {"/v1/chat/completions", "/v1/pi/stream", "/v1/responses"}) {
            const auto r = inBand.postRaw(
                QString::fromLatin1(path),
                R"({"model":"chain","stream":true,"input":"x","messages":[{"role":"user","content":"x"}],)"
                R"("context":{"messages":[{"role":"user","content":"x"}]}})");
            QVERIFY2(r.body.contains("error"), r.body.constData());
            QVERIFY2(!r.body.contains("test-secret-value"), r.body.constData());
        }
    }

    void malformedJsonGets400AndNoUpstreamCall() {
        GatewayFixture gw;
        gw.start();
        const auto a = gw.postRaw(QStringLiteral("/v1/messages"), "{not json");
        QCOMPARE(a.status, 400);
        QCOMPARE(a.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("type")).toString(),
                 QStringLiteral("invalid_request_error"));
        const auto o = gw.postRaw(QStringLiteral("/v1/chat/completions"), "[1,2]");
        QCOMPARE(o.status, 400);
        QVERIFY(o.json().value(QStringLiteral("error")).isObject());
        QCOMPARE(gw.anthropicA.requests().size() + gw.openaiB.requests().size(), 0);
        const auto unknown = gw.post(QStringLiteral("/v1/messages"),
                                     GatewayFixture::anthropicBody(QStringLiteral("nope"), QStringLiteral("x"), false));
        QCOMPARE(unknown.status, 404);
        QCOMPARE(unknown.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("type")).toString(),
                 QStringLiteral("not_found_error"));
    }
};

QTEST_GUILESS_MAIN(TestFailoverLoop)
#include "test_failover_loop.moc"
