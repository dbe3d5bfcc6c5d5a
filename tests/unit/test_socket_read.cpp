// http::useSmallReadChunks on a real loopback connection: the socket's read buffer stops keeping a
// 16 KiB block between reads, and every way the gateway and Qt's HTTP server read a socket
// (read, peek, getChar, readLine, readAll, a read transaction rolled back while more bytes
// arrive) still returns the bytes in order.

#include "core/http/socket_read.h"
#include "core/upstream/socket_transport.h"

#include "signal_wait.h"

#include <QSslSocket>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTest>

#include <memory>

using namespace sw;

namespace {

struct Pair {
    QTcpServer server;
    QTcpSocket writer;
    std::unique_ptr<QTcpSocket> reader;

    bool open() {
        if (!server.listen(QHostAddress::LocalHost))
            return false;
        writer.connectToHost(QHostAddress::LocalHost, server.serverPort());
        if (!writer.waitForConnected(5000) || !server.waitForNewConnection(5000))
            return false;
        reader.reset(server.nextPendingConnection());
        if (!reader)
            return false;
        reader->setParent(nullptr);
        return true;
    }
    // Sends and waits until all of it is readable on the reader.
    bool send(const QByteArray &bytes) {
        const qint64 before = reader->bytesAvailable();
        writer.write(bytes);
        writer.flush();
        return sw::test::waitUntil(
            [&] {
                reader->waitForReadyRead(10);
                return reader->bytesAvailable() >= before + bytes.size();
            },
            10000);
    }
};

QByteArray pattern(qsizetype size, char seed) {
    QByteArray bytes(size, Qt::Uninitialized);
    for (qsizetype i = 0; i < size; ++i)
        bytes[i] = char(seed + (i % 23));
    return bytes;
}

} // namespace

class TestSocketRead : public QObject {
    Q_OBJECT

private slots:
    void anOpenSocketStopsKeepingABlock() {
        Pair pair;
        QVERIFY(pair.open());
        QCOMPARE(http::readChunkSize(pair.reader.get()), 16384); // Qt 6.4's default
        QVERIFY(http::useSmallReadChunks(pair.reader.get()));
        QCOMPARE(http::readChunkSize(pair.reader.get()), http::kReadChunkBytes);
    }

    // The upstream transport's sockets, plain and TLS; a TLS socket's own plain socket (where the
    // encrypted bytes land first) too. No handshake is needed to see them: a call connects at once.
    void upstreamSocketsUseTheSmallBlock() {
        QTcpServer server;
        QVERIFY(server.listen(QHostAddress::LocalHost));
        upstream::SocketTransport transport;
        const QString base = QStringLiteral("127.0.0.1:%1/v1/x").arg(server.serverPort());
        const auto socketsOf = [&](const QString &scheme, QObject *owner) {
            upstream::HttpRequest request;
            request.url = QUrl(scheme + QStringLiteral("://") + base);
            request.body = "{}";
            transport.start(request, owner);
            return owner->findChildren<QAbstractSocket *>(); // the call's socket and what it owns
        };

        QObject plainOwner;
        const auto plain = socketsOf(QStringLiteral("http"), &plainOwner);
        QCOMPARE(plain.size(), 1);
        QCOMPARE(http::readChunkSize(plain.first()), http::kReadChunkBytes);

        if (!QSslSocket::supportsSsl())
            QSKIP("no TLS backend");
        QObject tlsOwner;
        const auto tls = socketsOf(QStringLiteral("https"), &tlsOwner);
        QCOMPARE(tls.size(), 2); // the QSslSocket and the plain socket under it
        for (QAbstractSocket *socket : tls)
            QCOMPARE(http::readChunkSize(socket), http::kReadChunkBytes);
    }

    void aSocketThatIsNotOpenIsLeftAlone() {
        QTcpSocket socket;
        QVERIFY(!http::useSmallReadChunks(&socket));
        QCOMPARE(http::readChunkSize(&socket), -1);
        QVERIFY(!http::useSmallReadChunks(nullptr));
    }

    void everyKindOfReadReturnsTheBytesInOrder() {
        Pair pair;
        QVERIFY(pair.open());
        QVERIFY(http::useSmallReadChunks(pair.reader.get()));
        QTcpSocket &r = *pair.reader;

        QVERIFY(pair.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
        QCOMPARE(r.readLine(), QByteArray("GET / HTTP/1.1\r\n"));
        char c = 0;
        QVERIFY(r.getChar(&c));
        QCOMPARE(c, 'H');
        QCOMPARE(r.peek(4), QByteArray("ost:"));
        QCOMPARE(r.read(4), QByteArray("ost:"));
        QCOMPARE(r.readAll(), QByteArray(" x\r\n\r\n"));
        QCOMPARE(r.bytesAvailable(), 0);

        // Several arrivals held at once, then one big one (larger than Qt's old 16 KiB block).
        QVERIFY(pair.send("one,"));
        QVERIFY(pair.send("two,"));
        const QByteArray big = pattern(100 * 1024, 'a');
        QVERIFY(pair.send(big));
        QCOMPARE(r.read(8), QByteArray("one,two,"));
        QByteArray rest;
        while (rest.size() < big.size() &&
               sw::test::waitUntil([&] { return r.bytesAvailable() > 0 || r.waitForReadyRead(10); }, 2000))
            rest += r.read(7000); // not aligned with any chunk
        QCOMPARE(rest, big);

        // A line much longer than the block: QIODevice::readLine() grows its result by the block size.
        const QByteArray line = pattern(5000, 'k') + "\n";
        QVERIFY(pair.send(line + "next"));
        QCOMPARE(r.readLine(), line);
        QCOMPARE(r.readAll(), QByteArray("next"));

        // Byte by byte, the way Qt's HTTP server reads a request head.
        QVERIFY(pair.send("abc"));
        QByteArray one;
        while (r.bytesAvailable() > 0) {
            char b;
            QCOMPARE(r.read(&b, 1), 1);
            one += b;
        }
        QCOMPARE(one, QByteArray("abc"));
    }

    // The connection guard parks a pipelined request inside a read transaction and rolls it back
    // later; Qt's HTTP server reads inside one too. Bytes that arrive while it is open are kept.
    void aTransactionRolledBackKeepsEveryByte() {
        Pair pair;
        QVERIFY(pair.open());
        QVERIFY(http::useSmallReadChunks(pair.reader.get()));
        QTcpSocket &r = *pair.reader;

        QVERIFY(pair.send("first|"));
        r.startTransaction();
        QCOMPARE(r.read(r.bytesAvailable()), QByteArray("first|"));
        QVERIFY(pair.send(pattern(40 * 1024, 'A')));
        QVERIFY(pair.send("|last"));
        QCOMPARE(r.read(r.bytesAvailable()).size(), 40 * 1024 + 5);
        r.rollbackTransaction();
        QCOMPARE(r.readAll(), QByteArray("first|") + pattern(40 * 1024, 'A') + "|last");

        // A committed transaction consumes what it read and nothing more.
        QVERIFY(pair.send("keep-this"));
        r.startTransaction();
        QCOMPARE(r.read(5), QByteArray("keep-"));
        r.commitTransaction();
        QCOMPARE(r.readAll(), QByteArray("this"));
    }
};

QTEST_GUILESS_MAIN(TestSocketRead)
#include "test_socket_read.moc"
