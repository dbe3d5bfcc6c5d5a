// The answer's bytes go to the kernel directly while it takes them (http::writeThrough) and queue
// in Qt's buffer only behind a client that does not read: whatever path a byte takes, the client
// gets every one, in order. The real engine on loopback; the upstream is scripted byte by byte.
#include "gateway_fixture.h"
#include "hostile_upstream.h"
#include "raw_http_client.h"
#include "signal_wait.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QTcpSocket>
#include <QTest>

using namespace sw;
using namespace sw::test;

namespace {

// The text of delta `i`: a numbered marker, then filler, so a lost, repeated or reordered delta shows.
QByteArray deltaText(qint64 i, int filler) {
    return "[" + QByteArray::number(i).rightJustified(6, '0') + "]" + QByteArray(filler, char('a' + i % 26));
}

// The Anthropic stream the upstream sends: piece 0 opens it, pieces 1..deltas carry text, the next one ends it.
QByteArray streamPiece(qint64 i, qint64 deltas, int filler) {
    if (i == 0)
        return "event: message_start\ndata: "
               "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":"
               "\"assistant\",\"content\":[],\"model\":\"m\",\"stop_reason\":null,\"usage\":{\"input_tokens\":3,"
               "\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\","
               "\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";
    if (i <= deltas)
        return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
               "\"delta\":{\"type\":\"text_delta\",\"text\":\"" +
               deltaText(i, filler) + "\"}}\n\n";
    if (i == deltas + 1)
        return "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
               "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
               "\"end_turn\"},\"usage\":{\"output_tokens\":2000}}\n\nevent: message_stop\ndata: "
               "{\"type\":\"message_stop\"}\n\n";
    return {};
}

// The body of a chunked HTTP/1.1 response, de-chunked; empty when the framing is broken or incomplete.
QByteArray dechunk(const QByteArray &raw, bool *complete) {
    *complete = false;
    const qsizetype headEnd = raw.indexOf("\r\n\r\n");
    if (headEnd < 0)
        return {};
    QByteArray body;
    qsizetype at = headEnd + 4;
    for (;;) {
        const qsizetype lineEnd = raw.indexOf("\r\n", at);
        if (lineEnd < 0)
            return body;
        bool ok = false;
        const qsizetype size = raw.mid(at, lineEnd - at).toLongLong(&ok, 16);
        if (!ok || raw.size() < lineEnd + 2 + size + 2)
            return body;
        if (size == 0) {
            *complete = raw.mid(lineEnd, 4) == "\r\n\r\n";
            return body;
        }
        body += raw.mid(lineEnd + 2, size);
        at = lineEnd + 2 + size + 2;
    }
}

QByteArray postHead(const QByteArray &body, const QByteArray &extra = {}) {
    return "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + extra +
           "Content-Length: " + QByteArray::number(body.size()) + "\r\n\r\n" + body;
}

} // namespace

class TestWriteThrough : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // A client that stops reading while a long stream flows: the kernel's buffers fill, the
    // rest waits in the gateway's queue (which pauses the upstream), and when the client
    // reads again every delta arrives, in order, none twice, and the stream ends properly.
    void aClientThatStopsReadingGetsEveryByteInOrderWhenItResumes() {
        constexpr qint64 kDeltas = 2000; // about 8 MiB: more than the kernel buffers on the way
        constexpr int kFiller = 4000;
        HostileUpstream up;
        QVERIFY(up.listen());
        up.setScript([&](QTcpSocket *socket, const QByteArray &) {
            up.flood(
                socket, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
                [&](qint64 i) { return streamPiece(i, kDeltas, kFiller); }, [socket] { socket->disconnectFromHost(); });
        });
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].baseUrl = up.baseUrl();
        gw.start();

        QTcpSocket client;
        client.setReadBufferSize(4096); // takes the head and a little, then stops reading
        client.connectToHost(QHostAddress::LocalHost, gw.engine().port());
        QVERIFY(client.waitForConnected(5000));
        client.write(postHead(
            QJsonDocument(GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), true))
                .toJson(QJsonDocument::Compact)));
        // More has left the upstream than the client's kernel buffer holds: the gateway is queueing.
        QVERIFY(waitUntil([&] { return up.floodedBytes() > 2 * 1024 * 1024; }, 20000));
        QVERIFY(up.floodRunning()); // and the stream is not over yet

        client.setReadBufferSize(0);
        QByteArray raw;
        bool complete = false;
        QByteArray body;
        QVERIFY(waitUntil(
            [&] {
                raw += client.readAll();
                body = dechunk(raw, &complete);
                return complete;
            },
            30000));
        QVERIFY(raw.startsWith("HTTP/1.1 200 OK\r\n"));
        QString expected;
        for (qint64 i = 1; i <= kDeltas; ++i)
            expected += QString::fromLatin1(deltaText(i, kFiller));
        const QString text = anthropicStreamText(body);
        QCOMPARE(text.size(), expected.size());
        QVERIFY(text == expected);
        QVERIFY(body.contains("message_stop"));
    }

    // An answer larger than the kernel's socket buffers leaves partly at once and partly from
    // Qt's queue; one that fits leaves whole at once. With or without Connection: close, the
    // client reads it complete and in order.
    void anAnswerArrivesCompleteAndInOrder_data() {
        QTest::addColumn<int>("deltas");
        QTest::addColumn<bool>("close");
        QTest::newRow("small, Connection: close") << 1 << true;
        QTest::newRow("8 MiB, keep-alive") << 2000 << false;
        QTest::newRow("8 MiB, Connection: close") << 2000 << true;
    }
    void anAnswerArrivesCompleteAndInOrder() {
        QFETCH(int, deltas);
        QFETCH(bool, close);
        constexpr int kFiller = 4000;
        QByteArray text;
        for (int i = 1; i <= deltas; ++i)
            text += deltaText(i, kFiller);
        QByteArray sse;
        for (qint64 i = 0; i <= deltas + 1; ++i)
            sse += streamPiece(i, deltas, kFiller);
        HostileUpstream up;
        QVERIFY(up.listen());
        up.setScript([&](QTcpSocket *socket, const QByteArray &) {
            socket->write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " +
                          QByteArray::number(sse.size()) + "\r\n\r\n" + sse);
        });
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].baseUrl = up.baseUrl();
        gw.start();

        RawHttpClient client(gw.engine().port());
        QVERIFY(client.waitConnected());
        client.send(postHead(
            QJsonDocument(GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), false))
                .toJson(QJsonDocument::Compact),
            close ? QByteArray("Connection: close\r\n") : QByteArray()));
        QVERIFY(client.waitResponse(30000));
        QVERIFY2(client.status() == 200, client.body().left(300).constData());
        const QJsonObject answer = QJsonDocument::fromJson(client.body()).object();
        QVERIFY2(!answer.isEmpty(), qPrintable(QString::number(client.body().size())));
        const QString got = anthropicMessageText(answer);
        QCOMPARE(got.size(), text.size());
        QVERIFY(got == QString::fromLatin1(text));
    }
};

QTEST_GUILESS_MAIN(TestWriteThrough)
#include "test_write_through.moc"
