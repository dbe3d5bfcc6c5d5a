// http::writeThrough on a real loopback connection: what the kernel takes leaves at once and Qt's
// buffer stays empty; what it cannot take (the peer stopped reading) waits in Qt's buffer and
// arrives after, in order; a broken connection is reported by Qt's own error path. And
// http::WriteBatch: writes held in a scope leave together when the outermost scope ends.

#include "core/http/socket_write.h"

#include "signal_wait.h"

#include <QSignalSpy>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTest>

#include <functional>

#include <memory>
#include <sys/socket.h>

using namespace sw;

namespace {

// A connected pair on 127.0.0.1: `client` (the writer under test) and `peer` (the reader).
struct Pair {
    QTcpServer server;
    QTcpSocket client;
    std::unique_ptr<QTcpSocket> peer;

    bool open() {
        if (!server.listen(QHostAddress::LocalHost))
            return false;
        client.connectToHost(QHostAddress::LocalHost, server.serverPort());
        if (!client.waitForConnected(5000) || !server.waitForNewConnection(5000))
            return false;
        peer.reset(server.nextPendingConnection());
        peer->setParent(nullptr);
        return peer != nullptr;
    }
};

QByteArray pattern(qsizetype size) {
    QByteArray bytes(size, Qt::Uninitialized);
    for (qsizetype i = 0; i < size; ++i)
        bytes[i] = char('a' + (i / 7) % 26);
    return bytes;
}

// Reads on the peer until `size` bytes arrived (the event loop runs, so the writer's Qt buffer drains too).
QByteArray readAll(QTcpSocket &peer, qsizetype size) {
    QByteArray got;
    sw::test::waitUntil(
        [&] {
            got += peer.readAll();
            return got.size() >= size;
        },
        20000);
    return got;
}

class Recorder final : public http::BatchedWriter {
public:
    explicit Recorder(QByteArray *out) : m_out(out) {}
    ~Recorder() = default;
    void write(const QByteArray &bytes) {
        if (!http::WriteBatch::open()) {
            *m_out += bytes;
            return;
        }
        if (m_held.isEmpty())
            http::WriteBatch::enlist(this);
        m_held += bytes;
    }
    void flushBatch() override {
        *m_out += "[" + m_held + "]";
        m_held.clear();
        ++flushes;
        if (onFlush)
            onFlush();
    }
    int flushes = 0;
    std::function<void()> onFlush; // what a flush may set off, e.g. a slot that deletes another writer

private:
    QByteArray *m_out;
    QByteArray m_held;
};

} // namespace

class TestSocketWrite : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void aWriteTheKernelTakesLeavesWithoutQtsBuffer() {
        Pair p;
        QVERIFY(p.open());
        const QByteArray bytes = pattern(3000);
        QSignalSpy written(&p.client, &QIODevice::bytesWritten);
        QCOMPARE(http::writeThrough(&p.client, bytes), qint64(bytes.size()));
        QCOMPARE(p.client.bytesToWrite(), qint64(0));
        // Already in the peer's kernel buffer: readable without the writer's event loop running.
        QVERIFY(p.peer->waitForReadyRead(5000));
        QCOMPARE(readAll(*p.peer, bytes.size()), bytes);
        QCOMPARE(written.count(), 0); // Qt never saw the bytes
    }

    void whatTheKernelCannotTakeWaitsInQtsBufferAndArrivesInOrder() {
        Pair p;
        QVERIFY(p.open());
        // Small kernel buffers on both sides so the peer's not reading fills them quickly.
        const int small = 16 * 1024;
        QVERIFY(::setsockopt(int(p.client.socketDescriptor()), SOL_SOCKET, SO_SNDBUF, &small, sizeof small) == 0);
        QVERIFY(::setsockopt(int(p.peer->socketDescriptor()), SOL_SOCKET, SO_RCVBUF, &small, sizeof small) == 0);
        const QByteArray first = pattern(200 * 1024); // under the by-reference size, over the kernel's buffers
        const qint64 direct = http::writeThrough(&p.client, first);
        QVERIFY2(direct > 0 && direct < first.size(), qPrintable(QString::number(direct)));
        QCOMPARE(p.client.bytesToWrite(), first.size() - direct);
        // Qt holds bytes now: a later write queues behind them instead of overtaking them.
        const QByteArray second = "and then this";
        QCOMPARE(http::writeThrough(&p.client, second), qint64(0));
        QCOMPARE(p.client.bytesToWrite(), first.size() - direct + second.size());
        const QByteArray got = readAll(*p.peer, first.size() + second.size());
        QCOMPARE(got.size(), first.size() + second.size());
        QVERIFY(got == first + second);
        QCOMPARE(p.client.bytesToWrite(), qint64(0));
        // Drained: the next write goes straight through again.
        QCOMPARE(http::writeThrough(&p.client, second), qint64(second.size()));
    }

    // A write of an answer many MB long goes to Qt's buffer whole (Qt keeps it by reference: no
    // copy of the part the kernel would not take), and arrives complete and in order.
    void aLargeWriteIsQueuedWholeAndArrivesInOrder() {
        Pair p;
        QVERIFY(p.open());
        const QByteArray large = pattern(4 * 1024 * 1024);
        QCOMPARE(http::writeThrough(&p.client, large), qint64(0));
        QCOMPARE(p.client.bytesToWrite(), large.size());
        const QByteArray after = "and then this";
        http::writeThrough(&p.client, after);
        const QByteArray got = readAll(*p.peer, large.size() + after.size());
        QVERIFY(got == large + after);
        QCOMPARE(p.client.bytesToWrite(), qint64(0));
    }

    void aBrokenConnectionIsReportedByQtsOwnErrorPath() {
        Pair p;
        QVERIFY(p.open());
        QSignalSpy errors(&p.client, &QAbstractSocket::errorOccurred);
        QSignalSpy gone(&p.client, &QAbstractSocket::disconnected);
        // The peer resets the connection (linger 0): the writer's next send fails.
        linger hard{};
        hard.l_onoff = 1;
        hard.l_linger = 0;
        QVERIFY(::setsockopt(int(p.peer->socketDescriptor()), SOL_SOCKET, SO_LINGER, &hard, sizeof hard) == 0);
        p.peer->abort();
        // Qt has not looked at the socket yet: it still thinks it connected.
        QCOMPARE(p.client.state(), QAbstractSocket::ConnectedState);
        qint64 direct = 0;
        // The RST may still be on its way on loopback for the very first send; a few writes meet it.
        for (int i = 0; i < 8 && p.client.state() == QAbstractSocket::ConnectedState && errors.isEmpty(); ++i) {
            direct = http::writeThrough(&p.client, QByteArray("hello"));
            if (direct == 0)
                break;
        }
        QCOMPARE(direct, qint64(0)); // the kernel refused: every byte went to Qt
        QVERIFY(errors.count() > 0 || errors.wait(5000));
        const auto error = errors.first().first().value<QAbstractSocket::SocketError>();
        QVERIFY2(error == QAbstractSocket::RemoteHostClosedError || error == QAbstractSocket::NetworkError,
                 qPrintable(p.client.errorString()));
        QVERIFY(gone.count() > 0 || gone.wait(5000));
    }

    void aSocketNotConnectedYetWritesThroughQt() {
        QTcpServer server;
        QVERIFY(server.listen(QHostAddress::LocalHost));
        QTcpSocket client;
        client.connectToHost(QHostAddress::LocalHost, server.serverPort());
        QCOMPARE(http::writeThrough(&client, QByteArray("early bytes")), qint64(0));
        QCOMPARE(client.bytesToWrite(), qint64(11));
        QVERIFY(server.waitForNewConnection(5000));
        std::unique_ptr<QTcpSocket> peer(server.nextPendingConnection());
        peer->setParent(nullptr);
        QCOMPARE(readAll(*peer, 11), QByteArray("early bytes"));
    }

    void aBatchHoldsWritesUntilTheOutermostScopeEnds() {
        QByteArray out;
        Recorder a(&out);
        Recorder b(&out);
        a.write("0");
        QCOMPARE(out, QByteArray("0")); // no batch: at once
        {
            const http::WriteBatch outer;
            a.write("1");
            b.write("x");
            {
                const http::WriteBatch inner;
                a.write("2");
            }
            QCOMPARE(out, QByteArray("0")); // the inner scope's end flushes nothing
            a.write("3");
        }
        QCOMPARE(out, QByteArray("0[123][x]")); // one flush per writer, in the order they enlisted
        QCOMPARE(a.flushes, 1);
        QCOMPARE(b.flushes, 1);
        QVERIFY(!http::WriteBatch::open());
    }

    void aWriterGoneBeforeTheBatchEndsIsNotFlushed() {
        QByteArray out;
        Recorder kept(&out);
        {
            const http::WriteBatch batch;
            auto gone = std::make_unique<Recorder>(&out);
            gone->write("lost");
            kept.write("kept");
            gone.reset();
        }
        QCOMPARE(out, QByteArray("[kept]"));
    }

    void aWriterDestroyedByAnotherOnesFlushIsNotFlushed() {
        QByteArray out;
        auto second = std::make_unique<Recorder>(&out);
        Recorder first(&out);
        first.onFlush = [&second] { second.reset(); };
        {
            const http::WriteBatch batch;
            first.write("first");
            second->write("second"); // enlisted after `first`, destroyed while `first` flushes
        }
        QCOMPARE(out, QByteArray("[first]"));
        QVERIFY(!second);
    }
};

QTEST_GUILESS_MAIN(TestSocketWrite)
#include "test_socket_write.moc"
