// How a connection ends (RFC 9112 9.3, 9.6), and the HTTP/1.1 details around it (HEAD, 100-continue,
// upgrades, HTTP/1.0 framing), through the real listener (GuardedTcpServer,
// ConnectionGuard, Qt's server, HttpFront, HttpExchange) and a raw client socket: a request that
// says "Connection: close" gets an answer that says so and then the server's FIN; so does an
// HTTP/1.0 request unless it asks for keep-alive; an HTTP/1.0 client's streamed answer is not
// chunked (HTTP/1.0 has no chunked framing: the close ends the body); a plain HTTP/1.1
// connection stays open for the next request.

#include "core/config/config.h"
#include "core/http/socket_write.h"
#include "core/server/guarded_tcp_server.h"
#include "core/server/http_exchange.h"
#include "core/server/http_front.h"
#include "core/util/byte_budget.h"
#include "signal_wait.h"

#include <QElapsedTimer>
#include <QHostAddress>
#include <QTcpSocket>
#include <QTest>

#include <memory>

#include <sys/socket.h>

using namespace sw;

namespace {

// A listener as the engine builds it. POST /whole is answered with one body; POST /stream with a
// stream of two pieces, the second and the end written inside one write batch (as the upstream
// path writes them), so the end leaves when the batch does. `client` is a raw socket connected to it.
class Listener {
public:
    explicit Listener(int idleTimeoutMs = 120000) {
        m_front = std::make_unique<server::HttpFront>([this](server::InboundRequest &&in, server::HttpExchange *ex) {
            ++requests;
            if (in.path == QLatin1String("/stream")) {
                // As ClientStream sends it: an SSE head that asks to keep the connection.
                ex->beginStream(200, {{"Content-Type", "text/event-stream"}, {"Connection", "keep-alive"}});
                ex->write("data: one\n\n");
                {
                    http::WriteBatch batch;
                    ex->write("data: two\n\n");
                    ex->endStream();
                }
            } else if (in.path == QLatin1String("/first")) {
                // As the loop writes a stream whose first content and more arrive in one upstream
                // read: the first content is sent at once, the rest with the batch's end.
                ex->beginStream(200, {{"Content-Type", "text/event-stream"}});
                http::WriteBatch batch;
                ex->write("data: first\n\n");
                ex->sendNow();
                atSendNow = clientHas();
                ex->write("data: second\n\n");
                ex->endStream();
                beforeBatchEnd = clientHas();
            } else if (in.path == QLatin1String("/big")) {
                ex->respond(200, {{"Content-Type", "text/plain"}}, QByteArray(kBigBytes, 'x'));
            } else {
                ex->respond(200, {{"Content-Type", "application/json"}},
                            "{\"n\":" + QByteArray::number(requests) + "}");
            }
            ex->deleteLater();
        });
        config::LimitsConfig limits;
        limits.idleTimeoutMs = idleTimeoutMs;
        m_tcp = new server::GuardedTcpServer(limits, std::make_shared<util::ByteBudget>(limits.maxBodyBytesInFlight),
                                             m_front.get(), m_front.get());
        ok = m_tcp->listen(QHostAddress::LocalHost);
        port = m_tcp->serverPort();
        m_front->bind(m_tcp);
        m_front->setListener({QHostAddress(QHostAddress::LocalHost), port});
        m_front->setLimits(limits);
        client.connectToHost(QHostAddress::LocalHost, port);
        ok = ok && client.waitForConnected(5000);
    }

    QByteArray request(const QByteArray &path, const QByteArray &version, const QByteArray &fields) const {
        const QByteArray body = "{}";
        return "POST " + path + ' ' + version + "\r\nHost: 127.0.0.1:" + QByteArray::number(port) +
               "\r\nContent-Type: application/json\r\n" + fields +
               "Content-Length: " + QByteArray::number(body.size()) + "\r\n\r\n" + body;
    }

    static constexpr qsizetype kBigBytes = 16 * 1024 * 1024; // more than the kernel's buffers hold

    bool ok = false;
    quint16 port = 0;
    int requests = 0;
    // /first: what had reached the client's socket when sendNow() returned, and before the batch ended.
    QByteArray atSendNow;
    QByteArray beforeBatchEnd;

private:
    // The bytes in the kernel's buffer of `client`, not read yet (loopback delivers a send at once).
    QByteArray clientHas() {
        QByteArray buffer(64 * 1024, Qt::Uninitialized);
        const auto n =
            ::recv(int(client.socketDescriptor()), buffer.data(), size_t(buffer.size()), MSG_PEEK | MSG_DONTWAIT);
        return buffer.left(n > 0 ? n : 0);
    }

    std::unique_ptr<server::HttpFront> m_front;
    server::GuardedTcpServer *m_tcp = nullptr; // a child of m_front

public:
    QTcpSocket client; // connected to the listener (ok) when it is made
};

struct Exchange {
    QByteArray bytes;    // everything the server sent
    bool closed = false; // the server ended the connection (within two seconds of the request)
};

// Writes `bytes` on `client` and reads until the server closes or `until` holds.
Exchange send(QTcpSocket &client, const QByteArray &bytes, const std::function<bool(const QByteArray &)> &until) {
    Exchange out;
    client.write(bytes);
    client.flush();
    sw::test::waitUntil(
        [&] {
            out.bytes += client.readAll();
            return client.state() != QAbstractSocket::ConnectedState || until(out.bytes);
        },
        2000);
    out.bytes += client.readAll();
    out.closed = client.state() != QAbstractSocket::ConnectedState;
    return out;
}

bool never(const QByteArray &) {
    return false;
}

QByteArray head(const QByteArray &response) {
    return response.left(response.indexOf("\r\n\r\n") + 2);
}

} // namespace

class TestConnectionClose : public QObject {
    Q_OBJECT

private slots:
    void closeIsAnsweredAndHonoured_data() {
        QTest::addColumn<QByteArray>("version");
        QTest::addColumn<QByteArray>("fields");
        QTest::newRow("HTTP/1.1 close") << QByteArray("HTTP/1.1") << QByteArray("Connection: close\r\n");
        QTest::newRow("HTTP/1.1 Close in a list") << QByteArray("HTTP/1.1") << QByteArray("Connection: TE, Close\r\n");
        QTest::newRow("HTTP/1.0") << QByteArray("HTTP/1.0") << QByteArray();
    }
    void closeIsAnsweredAndHonoured() {
        QFETCH(QByteArray, version);
        QFETCH(QByteArray, fields);
        Listener listener;
        QVERIFY(listener.ok);
        QTcpSocket &client = listener.client;
        const Exchange got = send(client, listener.request("/whole", version, fields), never);
        QVERIFY2(got.bytes.startsWith("HTTP/1.1 200 OK\r\n"), got.bytes.constData());
        QVERIFY2(head(got.bytes).contains("\r\nConnection: close\r\n"), got.bytes.constData());
        QVERIFY(got.bytes.endsWith("\r\n\r\n{\"n\":1}"));
        QVERIFY2(got.closed, "the server kept the connection open");
    }

    void keepAliveStaysOpenForTheNextRequest() {
        Listener listener;
        QVERIFY(listener.ok);
        QTcpSocket &client = listener.client;
        for (const QByteArray &fields : {QByteArray(), QByteArray("Connection: keep-alive\r\n")}) {
            const Exchange got = send(client, listener.request("/whole", "HTTP/1.1", fields),
                                      [](const QByteArray &b) { return b.endsWith("}"); });
            QVERIFY2(!got.closed, got.bytes.constData());
            QVERIFY(!head(got.bytes).contains("Connection:"));
        }
        QCOMPARE(listener.requests, 2);
    }

    // An HTTP/1.0 client that asks to keep the connection is told it is kept, and it is.
    void http10KeepAliveIsAnswered() {
        Listener listener;
        QVERIFY(listener.ok);
        QTcpSocket &client = listener.client;
        for (int n = 1; n <= 2; ++n) {
            const Exchange got = send(client, listener.request("/whole", "HTTP/1.0", "Connection: Keep-Alive\r\n"),
                                      [](const QByteArray &b) { return b.endsWith("}"); });
            QVERIFY2(!got.closed, got.bytes.constData());
            QVERIFY(head(got.bytes).contains("\r\nConnection: keep-alive\r\n"));
            QVERIFY(got.bytes.endsWith("{\"n\":" + QByteArray::number(n) + "}"));
        }
    }

    // The second of two pipelined requests is not answered when the first said close.
    void nothingIsReadAfterAClose() {
        Listener listener;
        QVERIFY(listener.ok);
        QTcpSocket &client = listener.client;
        const Exchange got = send(client,
                                  listener.request("/whole", "HTTP/1.1", "Connection: close\r\n") +
                                      listener.request("/whole", "HTTP/1.1", QByteArray()),
                                  never);
        QVERIFY(got.closed);
        QCOMPARE(got.bytes.count("HTTP/1.1 200"), 1);
        QCOMPARE(listener.requests, 1);
    }

    // The same with an answer the socket cannot send at once, read late by the client: the
    // connection is closing while Qt's socket still sends, and the request pipelined after the
    // close must not run (its answer could never be sent; at the gateway it would be billed).
    void nothingRunsAfterACloseWhileTheAnswerIsStillSent() {
        Listener listener;
        QVERIFY(listener.ok);
        QTcpSocket &client = listener.client;
        client.write(listener.request("/big", "HTTP/1.1", "Connection: close\r\n") +
                     listener.request("/whole", "HTTP/1.1", QByteArray()));
        client.flush();
        QTest::qWait(300); // the answer fills the kernel's buffers and waits in Qt's
        QByteArray got;
        QVERIFY(sw::test::waitUntil(
            [&] {
                got += client.readAll();
                return client.state() != QAbstractSocket::ConnectedState;
            },
            10000));
        got += client.readAll();
        QCOMPARE(got.count("HTTP/1.1 200"), 1);
        QCOMPARE(got.size() - (got.indexOf("\r\n\r\n") + 4), Listener::kBigBytes);
        QTest::qWait(100);
        QCOMPARE(listener.requests, 1);
    }

    // A client that reads a large answer slowly, but reads, keeps its connection past the idle
    // timeout: the idle clock counts from the last bytes the kernel took, not from the answer's
    // start.
    void aSlowReaderGetsTheWholeAnswer() {
        Listener listener(/*idleTimeoutMs=*/1200);
        QVERIFY(listener.ok);
        QTcpSocket &client = listener.client;
        client.setReadBufferSize(512 * 1024); // before any byte of the answer arrives
        client.write(listener.request("/big", "HTTP/1.1", QByteArray()));
        client.flush();
        QByteArray got;
        QElapsedTimer t;
        t.start();
        const qsizetype want = Listener::kBigBytes;
        const auto bodyBytes = [&got] {
            const qsizetype end = got.indexOf("\r\n\r\n");
            return end < 0 ? qsizetype(0) : got.size() - (end + 4);
        };
        while (t.elapsed() < 20000 && client.state() == QAbstractSocket::ConnectedState && bodyBytes() < want) {
            QTest::qWait(100); // about 5 MiB a second: the whole answer takes longer than the idle timeout
            got += client.read(512 * 1024);
        }
        got += client.readAll();
        QVERIFY2(t.elapsed() > 1200, "the answer arrived faster than the idle timeout: nothing was tested");
        QCOMPARE(bodyBytes(), want);
    }

    // A HEAD request is answered with the header block alone (its Content-Length is the body's):
    // stray body bytes would be read as the next answer on a kept connection.
    void headGetsNoBody() {
        Listener listener;
        QVERIFY(listener.ok);
        QTcpSocket &client = listener.client;
        const QByteArray head =
            "HEAD /whole HTTP/1.1\r\nHost: 127.0.0.1:" + QByteArray::number(listener.port) + "\r\n\r\n";
        const Exchange first = send(client, head, [](const QByteArray &b) { return b.endsWith("\r\n\r\n"); });
        QVERIFY2(first.bytes.startsWith("HTTP/1.1 200 OK\r\n"), first.bytes.constData());
        QVERIFY(first.bytes.contains("\r\nContent-Length: 7\r\n"));
        QVERIFY(first.bytes.endsWith("\r\n\r\n"));
        QTest::qWait(50);
        QCOMPARE(client.readAll(), QByteArray()); // no body after the head
        const Exchange next = send(client, listener.request("/whole", "HTTP/1.1", QByteArray()),
                                   [](const QByteArray &b) { return b.endsWith("}"); });
        QVERIFY2(next.bytes.startsWith("HTTP/1.1 200 OK\r\n"), next.bytes.constData());
        QVERIFY(next.bytes.endsWith("{\"n\":2}"));
    }

    // "Expect: 100-continue" gets its interim answer once the head passed the guard (curl waits a
    // second for it before sending a body over 1 MiB); an HTTP/1.0 client never gets a 1xx.
    void expectContinueIsAnswered_data() {
        QTest::addColumn<QByteArray>("version");
        QTest::addColumn<bool>("continues");
        QTest::newRow("HTTP/1.1") << QByteArray("HTTP/1.1") << true;
        QTest::newRow("HTTP/1.0") << QByteArray("HTTP/1.0") << false;
    }
    void expectContinueIsAnswered() {
        QFETCH(QByteArray, version);
        QFETCH(bool, continues);
        Listener listener;
        QVERIFY(listener.ok);
        QTcpSocket &client = listener.client;
        QByteArray request = listener.request("/whole", version, "Expect: 100-continue\r\n");
        const qsizetype bodyAt = request.indexOf("\r\n\r\n") + 4;
        const Exchange interim =
            send(client, request.left(bodyAt), [](const QByteArray &b) { return b.endsWith("\r\n\r\n"); });
        QCOMPARE(interim.bytes, continues ? QByteArray("HTTP/1.1 100 Continue\r\n\r\n") : QByteArray());
        QCOMPARE(listener.requests, 0);
        const Exchange got = send(client, request.mid(bodyAt), [](const QByteArray &b) { return b.endsWith("}"); });
        QVERIFY2(got.bytes.startsWith("HTTP/1.1 200 OK\r\n") && got.bytes.endsWith("{\"n\":1}"), got.bytes.constData());
    }

    // Qt's server would take a WebSocket upgrade for itself and drop the connection without an
    // answer (after the request ran): the guard refuses it with a reason, and nothing runs.
    void webSocketUpgradeIsRefusedWithAReason() {
        Listener listener;
        QVERIFY(listener.ok);
        QTcpSocket &client = listener.client;
        const Exchange got = send(
            client, listener.request("/whole", "HTTP/1.1", "Connection: Upgrade\r\nUpgrade: WebSocket\r\n"), never);
        QVERIFY2(got.bytes.startsWith("HTTP/1.1 400 "), got.bytes.constData());
        QVERIFY(got.bytes.contains("WebSocket upgrades are not supported"));
        QVERIFY(got.closed);
        QCOMPARE(listener.requests, 0);
    }

    // HTTP/1.0 has no chunked framing: a body sent so is answered, then the connection closes,
    // even when the client asked to keep it (RFC 9112 6.1).
    void http10ChunkedBodyClosesAfterTheAnswer() {
        Listener listener;
        QVERIFY(listener.ok);
        QTcpSocket &client = listener.client;
        const QByteArray request = "POST /whole HTTP/1.0\r\nHost: 127.0.0.1:" + QByteArray::number(listener.port) +
                                   "\r\nContent-Type: application/json\r\nConnection: keep-alive\r\n"
                                   "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
        const Exchange got =
            send(client, request + listener.request("/whole", "HTTP/1.0", "Connection: keep-alive\r\n"), never);
        QVERIFY2(got.bytes.startsWith("HTTP/1.1 200 OK\r\n"), got.bytes.constData());
        QVERIFY(head(got.bytes).contains("\r\nConnection: close\r\n"));
        QVERIFY(got.closed);
        QCOMPARE(got.bytes.count("HTTP/1.1 200"), 1);
        QCOMPARE(listener.requests, 1);
    }

    void streamsEndWithTheConnection_data() {
        QTest::addColumn<QByteArray>("version");
        QTest::addColumn<QByteArray>("fields");
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<bool>("chunked");
        // Chunked, its last chunk, then the close.
        QTest::newRow("HTTP/1.1 close") << QByteArray("HTTP/1.1") << QByteArray("Connection: close\r\n")
                                        << QByteArray("b\r\ndata: one\n\n\r\nb\r\ndata: two\n\n\r\n0\r\n\r\n") << true;
        // No framing at all: the events as they are, ended by the close.
        QTest::newRow("HTTP/1.0") << QByteArray("HTTP/1.0") << QByteArray() << QByteArray("data: one\n\ndata: two\n\n")
                                  << false;
        QTest::newRow("HTTP/1.0 keep-alive") << QByteArray("HTTP/1.0") << QByteArray("Connection: keep-alive\r\n")
                                             << QByteArray("data: one\n\ndata: two\n\n") << false;
    }
    void streamsEndWithTheConnection() {
        QFETCH(QByteArray, version);
        QFETCH(QByteArray, fields);
        QFETCH(QByteArray, body);
        QFETCH(bool, chunked);
        Listener listener;
        QVERIFY(listener.ok);
        QTcpSocket &client = listener.client;
        const Exchange got = send(client, listener.request("/stream", version, fields), never);
        QVERIFY2(got.closed, got.bytes.constData());
        QVERIFY(head(got.bytes).contains("\r\nConnection: close\r\n"));
        QCOMPARE(head(got.bytes).count("Connection:"), 1); // not the handler's keep-alive as well
        QCOMPARE(head(got.bytes).contains("Transfer-Encoding: chunked"), chunked);
        QCOMPARE(got.bytes.mid(got.bytes.indexOf("\r\n\r\n") + 4), body);
    }

    // Without close, a stream's connection stays for the next request.
    void theFirstContentLeavesBeforeTheRestOfItsBatch() {
        // The loop calls sendNow() once the first content is out of the hold: the client has it
        // while the gateway still decodes the rest of that upstream read.
        Listener listener;
        QVERIFY(listener.ok);
        const Exchange got = send(listener.client, listener.request("/first", "HTTP/1.1", {}),
                                  [](const QByteArray &b) { return b.endsWith("0\r\n\r\n"); });
        QVERIFY2(got.bytes.contains("data: second"), got.bytes.constData());
        QVERIFY2(listener.atSendNow.contains("data: first"), listener.atSendNow.constData());
        QVERIFY2(!listener.beforeBatchEnd.contains("data: second"), listener.beforeBatchEnd.constData());
        QVERIFY(!listener.beforeBatchEnd.contains("0\r\n\r\n"));
    }

    void streamsKeepTheConnectionWithoutClose() {
        Listener listener;
        QVERIFY(listener.ok);
        QTcpSocket &client = listener.client;
        const Exchange got = send(client, listener.request("/stream", "HTTP/1.1", QByteArray()),
                                  [](const QByteArray &b) { return b.endsWith("0\r\n\r\n"); });
        QVERIFY(!got.closed);
        QVERIFY(head(got.bytes).contains("\r\nConnection: keep-alive\r\n")); // the handler's, as it was
        const Exchange next = send(client, listener.request("/whole", "HTTP/1.1", QByteArray()),
                                   [](const QByteArray &b) { return b.endsWith("}"); });
        QVERIFY(next.bytes.endsWith("{\"n\":2}"));
    }
};

QTEST_GUILESS_MAIN(TestConnectionClose)
#include "test_connection_close.moc"
