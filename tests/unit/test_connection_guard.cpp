// ConnectionGuard behind a real GuardedTcpServer on loopback, with a stand-in for Qt's HTTP
// server: when the server gives up on a request the way Qt 6.4's does (it cuts every signal
// connection of the socket and leaves it open), the client is answered 400 and the connection
// closed, never left hanging; a request the server takes is not answered by the guard.
#include "core/server/connection_guard.h"
#include "core/server/guarded_tcp_server.h"
#include "raw_http_client.h"
#include "signal_wait.h"

#include <QHostAddress>
#include <QTest>

using namespace sw;
using sw::test::RawHttpClient;
using sw::test::waitUntil;

namespace {

// Reads what the guard lets through, as Qt's server does; gives up (cuts every connection of the
// socket) on a request line that names /give-up.
class StandInServer final : public QObject {
public:
    explicit StandInServer(server::GuardedTcpServer &tcp) {
        connect(&tcp, &QTcpServer::pendingConnectionAvailable, this, [this, &tcp] {
            while (QTcpSocket *socket = tcp.nextPendingConnection()) {
                connect(socket, &QIODevice::readyRead, this, [this, socket] {
                    const QByteArray bytes = socket->readAll();
                    read += bytes;
                    if (bytes.contains("/give-up"))
                        socket->disconnect();
                });
            }
        });
    }
    QByteArray read;
};

} // namespace

class TestConnectionGuard : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void aRequestTheServerGivesUpOnIsAnswered400AndClosed() {
        config::LimitsConfig limits;
        limits.headerTimeoutMs = 10000; // far beyond the waits below: the answer comes at once
        limits.idleTimeoutMs = 10000;
        QObject httpServer;
        server::GuardedTcpServer tcp(limits, nullptr, &httpServer); // no byte budget
        StandInServer standIn(tcp);
        standIn.setParent(&httpServer);
        QVERIFY(tcp.listen(QHostAddress::LocalHost));

        RawHttpClient client(tcp.serverPort());
        QVERIFY(client.waitConnected());
        client.send("GET /give-up HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        QVERIFY2(client.waitResponse(3000), client.received().constData());
        QCOMPARE(client.status(), 400);
        QVERIFY2(client.body().contains("malformed HTTP request"), client.body().constData());
        QVERIFY2(client.waitClosed(3000), client.received().constData());
        QVERIFY(standIn.read.contains("/give-up")); // the server saw it first, as Qt's does
    }

    void aRequestTheServerTakesIsNotAnsweredByTheGuard() {
        config::LimitsConfig limits;
        limits.headerTimeoutMs = 10000;
        limits.idleTimeoutMs = 10000;
        QObject httpServer;
        server::GuardedTcpServer tcp(limits, nullptr, &httpServer); // no byte budget
        StandInServer standIn(tcp);
        standIn.setParent(&httpServer);
        QVERIFY(tcp.listen(QHostAddress::LocalHost));

        RawHttpClient client(tcp.serverPort());
        QVERIFY(client.waitConnected());
        client.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        QVERIFY(waitUntil([&] { return standIn.read.contains("/healthz"); }, 3000));
        QTest::qWait(100); // a check queued after the read would have answered by now
        QVERIFY2(client.received().isEmpty(), client.received().constData());
        QVERIFY(!client.closed());
    }
};

QTEST_GUILESS_MAIN(TestConnectionGuard)
#include "test_connection_guard.moc"
