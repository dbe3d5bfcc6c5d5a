// The scripted fake upstream every failover test, benchmark and --demo stands
// on: it must speak HTTP/1.1 properly (keep-alive, pipelining, chunked bodies),
// record what it was sent, misbehave exactly as scripted, and answer in each
// upstream API's own stream shape.
#include "call_recorder.h"
#include "core/demo/demo_reply.h"
#include "core/demo/fake_upstream.h"
#include "core/upstream/qt_transport.h"
#include "core/upstream/sse_reader.h"
#include "signal_wait.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTcpSocket>
#include <QTest>
#include <memory>

using sw::demo::FakeUpstream;
using sw::demo::Fault;
using sw::test::CallRecorder;
using sw::test::waitUntil;
using namespace sw::upstream;

namespace {

Fault fault(Fault::Kind kind, int status = 0) {
    Fault f;
    f.kind = kind;
    f.status = status;
    return f;
}

// Text the client would show, pulled out of one API's stream.
QString streamedText(const QByteArray &path, const QByteArray &sse, QStringList *eventNames = nullptr) {
    SseReader reader;
    auto events = reader.feed(sse);
    events += reader.finish();
    QString text;
    for (const auto &e : events) {
        if (eventNames)
            *eventNames << QString::fromUtf8(e.event.isEmpty() ? e.data.left(40) : e.event);
        const QJsonObject o = QJsonDocument::fromJson(e.data).object();
        if (path.contains("/messages")) {
            if (o.value("type").toString() == "content_block_delta")
                text += o.value("delta").toObject().value("text").toString();
        } else if (path.contains("/chat/completions")) {
            text += o.value("choices").toArray().at(0).toObject().value("delta").toObject().value("content").toString();
        } else if (path.contains("/responses")) {
            if (e.event == "response.output_text.delta")
                text += o.value("delta").toString();
        } else {
            for (const auto &p :
                 o.value("candidates").toArray().at(0).toObject().value("content").toObject().value("parts").toArray())
                if (!p.toObject().value("thought").toBool())
                    text += p.toObject().value("text").toString();
        }
    }
    return text;
}

QByteArray readUntil(QTcpSocket &socket, const std::function<bool(const QByteArray &)> &done, int timeoutMs = 3000) {
    QByteArray got;
    waitUntil(
        [&] {
            got += socket.readAll();
            return done(got);
        },
        timeoutMs);
    return got;
}

} // namespace

class TestFakeUpstream : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void init();
    void cleanup();
    void recordsMethodPathHeadersAndBody();
    void decodesChunkedRequestBodySplitAcrossWrites();
    void servesPipelinedRequestsOnOneKeptAliveConnection();
    void connectionCloseIsHonoured();
    void oneShotFaultsAreConsumedInOrderThenGlobalApplies();
    void errorStatusBodyHasTheApisShape_data();
    void errorStatusBodyHasTheApisShape();
    void stallBeforeHeadersSendsNothing();
    void inBandErrorBeforeContent_data();
    void inBandErrorBeforeContent();
    void inBandErrorAfterContentFollowsFirstDelta();
    void demoReplyInEachApi_data();
    void demoReplyInEachApi();
    void googleNonStreamingAnswersJson();
    void nonStreamingAnswersJson_data();
    void nonStreamingAnswersJson();
    void rawReplyIsSentAsGiven();
    void unreadableBodyIsRefusedInTheApisShape_data();
    void unreadableBodyIsRefusedInTheApisShape();

private:
    CallRecorder *call(const QByteArray &path, const QByteArray &body);
    std::unique_ptr<FakeUpstream> m_fake;
    std::unique_ptr<QtTransport> m_transport;
    QList<CallRecorder *> m_recorders;
};

void TestFakeUpstream::init() {
    m_fake = std::make_unique<FakeUpstream>();
    m_fake->setLabel(QStringLiteral("lbl"));
    QVERIFY(m_fake->listen());
    m_transport = std::make_unique<QtTransport>();
}

void TestFakeUpstream::cleanup() {
    qDeleteAll(m_recorders);
    m_recorders.clear();
    m_transport.reset();
    m_fake.reset();
}

CallRecorder *TestFakeUpstream::call(const QByteArray &path, const QByteArray &body) {
    HttpRequest r;
    r.url = QUrl(m_fake->baseUrl() + QString::fromLatin1(path));
    r.headers = {{"content-type", "application/json"}};
    r.body = body;
    auto *rec = new CallRecorder(m_transport->start(r, this));
    m_recorders << rec;
    rec->waitFinished();
    return rec;
}

void TestFakeUpstream::recordsMethodPathHeadersAndBody() {
    QTcpSocket s;
    s.connectToHost(QHostAddress::LocalHost, m_fake->port());
    QVERIFY(s.waitForConnected(2000));
    s.write("POST /v1/chat/completions?trace=1 HTTP/1.1\r\nHost: x\r\nX-Api-Key: k1\r\nContent-Length: 11\r\n\r\n");
    s.write("hello world");
    QVERIFY(waitUntil([&] { return m_fake->requests().size() == 1; }));
    const auto r = m_fake->requests().front();
    QCOMPARE(r.method, QByteArray("POST"));
    QCOMPARE(r.path, QByteArray("/v1/chat/completions?trace=1"));
    QCOMPARE(r.header("x-api-key"), QByteArray("k1"));
    QCOMPARE(r.body, QByteArray("hello world"));
    m_fake->clearRequests();
    QVERIFY(m_fake->requests().isEmpty());
}

void TestFakeUpstream::decodesChunkedRequestBodySplitAcrossWrites() {
    m_fake->setRawReply("data: ok\n\n");
    QTcpSocket s;
    s.connectToHost(QHostAddress::LocalHost, m_fake->port());
    QVERIFY(s.waitForConnected(2000));
    s.write("POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel");
    QVERIFY(s.waitForBytesWritten(1000));
    QTest::qWait(20); // let the fake see a partial body
    QVERIFY(m_fake->requests().isEmpty());
    s.write("lo\r\n6\r\n world\r\n0\r\n\r\n");
    QVERIFY(waitUntil([&] { return m_fake->requests().size() == 1; }));
    QCOMPARE(m_fake->requests().front().body, QByteArray("hello world"));
}

void TestFakeUpstream::servesPipelinedRequestsOnOneKeptAliveConnection() {
    m_fake->setRawReply("data: ok\n\n");
    QTcpSocket s;
    s.connectToHost(QHostAddress::LocalHost, m_fake->port());
    QVERIFY(s.waitForConnected(2000));
    const QByteArray req = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
    s.write(req + req);
    const QByteArray got = readUntil(s, [](const QByteArray &b) { return b.count("0\r\n\r\n") >= 2; });
    QCOMPARE(got.count("HTTP/1.1 200"), 2);
    QCOMPARE(m_fake->requests().size(), 2);
    QCOMPARE(m_fake->acceptedConnections(), 1);
    QCOMPARE(s.state(), QAbstractSocket::ConnectedState);
}

void TestFakeUpstream::connectionCloseIsHonoured() {
    m_fake->setRawReply("data: ok\n\n");
    QTcpSocket s;
    s.connectToHost(QHostAddress::LocalHost, m_fake->port());
    QVERIFY(s.waitForConnected(2000));
    s.write("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    QVERIFY(waitUntil([&] { return s.state() == QAbstractSocket::UnconnectedState; }));
    QVERIFY(s.readAll().startsWith("HTTP/1.1 200"));
}

void TestFakeUpstream::oneShotFaultsAreConsumedInOrderThenGlobalApplies() {
    m_fake->setRawReply("data: ok\n\n");
    m_fake->pushFault(fault(Fault::Status, 503));
    m_fake->pushFault(fault(Fault::Status, 429));
    QCOMPARE(m_fake->pendingFaults(), 2);
    QCOMPARE(call("/v1/messages", "{}")->status, 503);
    QCOMPARE(call("/v1/messages", "{}")->status, 429);
    QCOMPARE(call("/v1/messages", "{}")->status, 200);
    m_fake->setFault(fault(Fault::Status, 500));
    QCOMPARE(call("/v1/messages", "{}")->status, 500);
    QCOMPARE(call("/v1/messages", "{}")->status, 500);
    QCOMPARE(m_fake->pendingFaults(), 0);
}

void TestFakeUpstream::errorStatusBodyHasTheApisShape_data() {
    QTest::addColumn<QByteArray>("path");
    QTest::addColumn<int>("status");
    QTest::addColumn<QString>("pointer"); // dotted path to a string field
    QTest::addColumn<QString>("value");
    QTest::newRow("anthropic 529") << QByteArray("/v1/messages") << 529 << "error.type"
                                   << "overloaded_error";
    QTest::newRow("anthropic 429") << QByteArray("/v1/messages") << 429 << "error.type"
                                   << "rate_limit_error";
    // OpenAI names the rate limit in `code` (its `type` varies: requests, tokens, ...).
    QTest::newRow("openai 429") << QByteArray("/v1/chat/completions") << 429 << "error.code"
                                << "rate_limit_exceeded";
    QTest::newRow("responses 500") << QByteArray("/v1/responses") << 500 << "error.type"
                                   << "server_error";
    QTest::newRow("google 429") << QByteArray("/v1beta/models/gemini:streamGenerateContent?alt=sse") << 429
                                << "error.status"
                                << "RESOURCE_EXHAUSTED";
}

void TestFakeUpstream::errorStatusBodyHasTheApisShape() {
    QFETCH(QByteArray, path);
    QFETCH(int, status);
    QFETCH(QString, pointer);
    QFETCH(QString, value);
    Fault f = fault(Fault::Status, status);
    f.retryAfter = "3";
    m_fake->pushFault(f);
    auto *rec = call(path, "{}");
    QCOMPARE(rec->status, status);
    QCOMPARE(headerValue(rec->headers, "retry-after"), QByteArray("3"));
    QJsonValue v = QJsonDocument::fromJson(rec->body).object();
    for (const auto &key : pointer.split('.'))
        v = v.toObject().value(key);
    QCOMPARE(v.toString(), value);
}

void TestFakeUpstream::stallBeforeHeadersSendsNothing() {
    m_fake->setFault(fault(Fault::StallBeforeHeaders));
    QTcpSocket s;
    s.connectToHost(QHostAddress::LocalHost, m_fake->port());
    QVERIFY(s.waitForConnected(2000));
    s.write("POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
    QVERIFY(waitUntil([&] { return m_fake->requests().size() == 1; }));
    QVERIFY(!s.waitForReadyRead(300)); // real socket I/O: nothing may arrive
    QCOMPARE(s.state(), QAbstractSocket::ConnectedState);
}

void TestFakeUpstream::inBandErrorBeforeContent_data() {
    QTest::addColumn<QByteArray>("path");
    QTest::addColumn<QByteArray>("marker");
    QTest::newRow("anthropic") << QByteArray("/v1/messages") << QByteArray("event: error\ndata: {");
    QTest::newRow("openai") << QByteArray("/v1/chat/completions") << QByteArray("data: {\"error\":{");
    QTest::newRow("responses") << QByteArray("/v1/responses") << QByteArray("event: error\n");
    QTest::newRow("google") << QByteArray("/v1beta/models/g:streamGenerateContent?alt=sse")
                            << QByteArray("data: {\"error\":{");
}

void TestFakeUpstream::inBandErrorBeforeContent() {
    QFETCH(QByteArray, path);
    QFETCH(QByteArray, marker);
    m_fake->pushFault(fault(Fault::InBandErrorBeforeContent));
    auto *rec = call(path, R"({"stream":true,"messages":[{"role":"user","content":"hi"}]})");
    QCOMPARE(rec->error(), TransportError::None);
    QCOMPARE(rec->status, 200);
    QVERIFY2(rec->body.contains(marker), rec->body.constData());
    QVERIFY(streamedText(path, rec->body).isEmpty());
    QVERIFY(!rec->body.contains("[DONE]"));
    QVERIFY(!rec->body.contains("message_stop"));
}

void TestFakeUpstream::inBandErrorAfterContentFollowsFirstDelta() {
    m_fake->pushFault(fault(Fault::InBandErrorAfterContent));
    const QByteArray path = "/v1/messages";
    // A body the Messages API accepts (model included): the fake reads it with the real codec.
    auto *rec = call(path, R"({"model":"m","stream":true,"messages":[{"role":"user","content":"hi there"}]})");
    QCOMPARE(rec->status, 200);
    QStringList names;
    const QString text = streamedText(path, rec->body, &names);
    QVERIFY2(!text.isEmpty(), rec->body.constData());
    QVERIFY(QStringLiteral("Hello from lbl. You said: hi there").startsWith(text));
    QCOMPARE(names.last(), QStringLiteral("error"));
    QVERIFY(!names.contains(QStringLiteral("message_stop")));
}

void TestFakeUpstream::demoReplyInEachApi_data() {
    QTest::addColumn<QByteArray>("path");
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<QByteArray>("terminal");
    QTest::newRow("anthropic-messages")
        << QByteArray("/v1/messages")
        << QByteArray(
               R"({"model":"claude","stream":true,"max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"hi there"}]}]})")
        << QByteArray("message_stop");
    QTest::newRow("openai-completions")
        << QByteArray("/api/v1/chat/completions")
        << QByteArray(R"({"model":"gpt","stream":true,"messages":[{"role":"user","content":"hi there"}]})")
        << QByteArray("data: [DONE]");
    QTest::newRow("openai-responses") << QByteArray("/v1/responses")
                                      << QByteArray(R"({"model":"gpt","stream":true,"input":"hi there"})")
                                      << QByteArray("response.completed");
    QTest::newRow("google-generative-ai")
        << QByteArray("/v1beta/models/gemini-2.5:streamGenerateContent?alt=sse")
        << QByteArray(R"({"contents":[{"role":"user","parts":[{"text":"hi there"}]}]})")
        << QByteArray("\"finishReason\":\"STOP\"");
}

void TestFakeUpstream::demoReplyInEachApi() {
    QFETCH(QByteArray, path);
    QFETCH(QByteArray, body);
    QFETCH(QByteArray, terminal);
    auto *rec = call(path, body);
    QCOMPARE(rec->error(), TransportError::None);
    QCOMPARE(rec->status, 200);
    QCOMPARE(headerValue(rec->headers, "content-type"), QByteArray("text/event-stream"));
    QCOMPARE(streamedText(path, rec->body), QStringLiteral("Hello from lbl. You said: hi there"));
    QVERIFY2(rec->body.contains(terminal), rec->body.constData());
}

void TestFakeUpstream::googleNonStreamingAnswersJson() {
    auto *rec =
        call("/v1beta/models/gemini:generateContent", R"({"contents":[{"role":"user","parts":[{"text":"hi"}]}]})");
    QCOMPARE(rec->status, 200);
    const QJsonObject o = QJsonDocument::fromJson(rec->body).object();
    QCOMPARE(o.value("candidates")
                 .toArray()
                 .at(0)
                 .toObject()
                 .value("content")
                 .toObject()
                 .value("parts")
                 .toArray()
                 .at(0)
                 .toObject()
                 .value("text")
                 .toString(),
             QStringLiteral("Hello from lbl. You said: hi"));
    QVERIFY(o.value("usageMetadata").toObject().value("candidatesTokenCount").toInt() >= 1);
}

void TestFakeUpstream::nonStreamingAnswersJson_data() {
    QTest::addColumn<QByteArray>("path");
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<QString>("pointer"); // dotted path, numbers index arrays
    QTest::newRow("anthropic") << QByteArray("/v1/messages")
                               << QByteArray(
                                      R"({"model":"c","max_tokens":9,"messages":[{"role":"user","content":"hi"}]})")
                               << "content.0.text";
    QTest::newRow("openai") << QByteArray("/v1/chat/completions")
                            << QByteArray(R"({"model":"g","messages":[{"role":"user","content":"hi"}]})")
                            << "choices.0.message.content";
}

void TestFakeUpstream::nonStreamingAnswersJson() {
    QFETCH(QByteArray, path);
    QFETCH(QByteArray, body);
    QFETCH(QString, pointer);
    auto *rec = call(path, body);
    QCOMPARE(rec->status, 200);
    QCOMPARE(headerValue(rec->headers, "content-type"), QByteArray("application/json"));
    QJsonValue v = QJsonDocument::fromJson(rec->body).object();
    for (const auto &key : pointer.split('.')) {
        bool isIndex = false;
        const int i = key.toInt(&isIndex);
        v = isIndex ? v.toArray().at(i) : v.toObject().value(key);
    }
    QCOMPARE(v.toString(), QStringLiteral("Hello from lbl. You said: hi"));
}

void TestFakeUpstream::rawReplyIsSentAsGiven() {
    const QByteArray raw = "event: a\ndata: 1\n\n: comment\ndata: 2\n\n";
    m_fake->setRawReply(raw);
    auto *rec = call("/anything", "{}");
    QCOMPARE(rec->status, 200);
    QCOMPARE(rec->body, raw);
}

void TestFakeUpstream::unreadableBodyIsRefusedInTheApisShape_data() {
    QTest::addColumn<QByteArray>("path");
    QTest::addColumn<QString>("pointer");
    QTest::addColumn<QString>("value");
    QTest::newRow("anthropic") << QByteArray("/v1/messages") << "error.type"
                               << "invalid_request_error";
    QTest::newRow("openai") << QByteArray("/v1/chat/completions") << "error.type"
                            << "invalid_request_error";
    QTest::newRow("responses") << QByteArray("/v1/responses") << "error.type"
                               << "invalid_request_error";
}

void TestFakeUpstream::unreadableBodyIsRefusedInTheApisShape() {
    // The fake reads requests with the real codecs, so a malformed converted body fails
    // loudly (as at the provider) instead of being answered anyway.
    QFETCH(QByteArray, path);
    QFETCH(QString, pointer);
    QFETCH(QString, value);
    auto *rec = call(path, R"({"stream":true,"messages":"not a list"})");
    QCOMPARE(rec->status, 400);
    QJsonValue v = QJsonDocument::fromJson(rec->body).object();
    for (const auto &key : pointer.split('.'))
        v = v.toObject().value(key);
    QCOMPARE(v.toString(), value);
    QCOMPARE(m_fake->requests().size(), 1);
}

QTEST_GUILESS_MAIN(TestFakeUpstream)
#include "test_fake_upstream.moc"
