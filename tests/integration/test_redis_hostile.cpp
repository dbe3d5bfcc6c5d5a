// A Redis that is not one: a fake RESP server on loopback answers the handshake like Redis, then
// pushes one reply that never ends on the subscription. What the gateway holds is bounded by its
// own limits (RedisClient::kMaxReplyElements, kMaxReplyBuffer), never by what a peer announces or
// sends: past them the connection is dropped as a protocol error and reconnected.

#include "core/config/config_loader.h"
#include "core/config/config_writer.h"
#include "core/redis/redis_client.h"
#include "fake_clock.h"
#include "signal_wait.h"
#include "tls_front.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTest>
#include <QUrl>

using namespace sw;

namespace {

// Answers PING, SUBSCRIBE and anything else (+OK); after a SUBSCRIBE, while `flood` is set, writes
// `head` then `unit` over and over until the client closes or `cap` bytes went out.
class HostileRedis : public QObject {
    Q_OBJECT
public:
    QByteArray head, unit;
    qint64 cap = 0;
    bool flood = true;
    QByteArray reply = "+OK\r\n"; // to any other command
    qint64 sent = 0;              // flood bytes written on the last connection
    qint64 sentAtClose = -1;      // what had been written when the client closed it
    int connections = 0;
    QTcpSocket *last = nullptr;

    bool listen() {
        connect(&m_server, &QTcpServer::newConnection, this, [this]() {
            while (QTcpSocket *s = m_server.nextPendingConnection()) {
                ++connections;
                last = s;
                sent = 0;
                auto *buffer = new QByteArray;
                connect(s, &QObject::destroyed, this, [buffer]() { delete buffer; });
                connect(s, &QTcpSocket::readyRead, this, [this, s, buffer]() {
                    *buffer += s->readAll();
                    while (auto argv = takeCommand(*buffer))
                        answer(s, *argv);
                });
                connect(s, &QTcpSocket::bytesWritten, this, [this, s]() { pump(s); });
                connect(s, &QTcpSocket::disconnected, this, [this, s]() {
                    if (s == last)
                        sentAtClose = sent;
                    s->deleteLater();
                });
            }
        });
        return m_server.listen(QHostAddress::LocalHost);
    }
    QString url() const { return QStringLiteral("redis://127.0.0.1:%1").arg(m_server.serverPort()); }
    quint16 port() const { return m_server.serverPort(); }

private:
    static std::optional<QByteArrayList> takeCommand(QByteArray &buffer) {
        // *N\r\n then N times $LEN\r\nBYTES\r\n
        qsizetype pos = buffer.indexOf("\r\n");
        if (!buffer.startsWith('*') || pos < 0)
            return std::nullopt;
        const int n = buffer.mid(1, pos - 1).toInt();
        pos += 2;
        QByteArrayList argv;
        for (int i = 0; i < n; ++i) {
            const qsizetype eol = buffer.indexOf("\r\n", pos);
            if (eol < 0)
                return std::nullopt;
            const int len = buffer.mid(pos + 1, eol - pos - 1).toInt();
            if (buffer.size() < eol + 2 + len + 2)
                return std::nullopt;
            argv.append(buffer.mid(eol + 2, len));
            pos = eol + 2 + len + 2;
        }
        buffer.remove(0, pos);
        return argv;
    }
    static QByteArray bulk(const QByteArray &b) { return "$" + QByteArray::number(b.size()) + "\r\n" + b + "\r\n"; }
    void answer(QTcpSocket *s, const QByteArrayList &argv) {
        const QByteArray name = argv.value(0).toUpper();
        if (name == "PING") {
            s->write("+PONG\r\n");
        } else if (name == "SUBSCRIBE") {
            s->write("*3\r\n" + bulk("subscribe") + bulk(argv.value(1)) + ":1\r\n");
            if (flood) {
                s->write(head);
                sent += head.size();
                pump(s);
            }
        } else {
            s->write(reply);
        }
    }
    void pump(QTcpSocket *s) {
        if (!flood || s != last || sent == 0 || s->state() != QAbstractSocket::ConnectedState)
            return;
        while (s->bytesToWrite() < (1 << 20) && sent < cap) {
            s->write(unit);
            sent += unit.size();
        }
    }

    QTcpServer m_server;
};

// A configuration whose marks are shared through `url`, trusting `caFile`.
QByteArray configWithMarksCaFile(const QString &url, const QString &caFile) {
    const QJsonObject marks{{QStringLiteral("store"), QStringLiteral("redis")},
                            {QStringLiteral("url"), url},
                            {QStringLiteral("caFile"), caFile}};
    const QJsonObject root{{QStringLiteral("listen"), QStringLiteral("127.0.0.1:0")}, {QStringLiteral("marks"), marks}};
    return QJsonDocument(root).toJson(QJsonDocument::Compact);
}

} // namespace

class TestRedisHostile : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // 150 MiB of ":1" after "*100000000" grew the gateway to 2.7 GB, never freed; 300 MiB of
    // 1000-byte strings to 1.17 GB: the reader's buffer was bounded, not the reply it builds (and the
    // subscriber, waiting for no answer, has no timeout to end it).
    void anEndlessReplyDropsTheConnection_data() {
        QTest::addColumn<QByteArray>("head");
        QTest::addColumn<QByteArray>("unit");
        QTest::addColumn<qint64>("cap");
        QTest::addColumn<QString>("why");
        QTest::addColumn<qint64>("readAtMost"); // what the client took before it dropped the connection
        const QByteArray one = ":1\r\n";
        const QString tooLarge = QStringLiteral("protocol error: a reply over");
        QTest::newRow("an array announcing 100 million integers")
            << QByteArray("*100000000\r\n") << one.repeated(16384) << qint64(16 << 20) << tooLarge << qint64(16 << 20);
        // Each announcement within the bound, their elements together over it.
        QTest::newRow("an array of 250000 holding an array of 250000")
            << QByteArray("*250000\r\n*250000\r\n") << one.repeated(16384) << qint64(16 << 20) << tooLarge
            << qint64(16 << 20);
        const QByteArray kilobyte = "$1000\r\n" + QByteArray(1000, 'x') + "\r\n";
        QTest::newRow("an array of 200000 strings of 1000 bytes")
            << QByteArray("*200000\r\n") << kilobyte.repeated(64) << qint64(128 << 20) << tooLarge << qint64(128 << 20);
        // Inside the reply bounds, but one value: dropped once 4 MiB of it is held, not at its end
        // (R3 F1: 60 MB strings, each read whole, took seconds of the engine thread's time). The
        // loopback socket's buffers hold a few MB more of what the fake wrote.
        const QString tooLong = QStringLiteral("protocol error: a value over 4194304 bytes");
        QTest::newRow("a string of 60 MB")
            << QByteArray("$60000000\r\n") << QByteArray(65536, 'x') << qint64(60000000) << tooLong << qint64(32 << 20);
        QTest::newRow("a status line that never ends")
            << QByteArray("+") << QByteArray(65536, 'o') << qint64(60000000) << tooLong << qint64(32 << 20);
    }
    void anEndlessReplyDropsTheConnection() {
        QFETCH(QByteArray, head);
        QFETCH(QByteArray, unit);
        QFETCH(qint64, cap);
        HostileRedis server;
        server.head = head;
        server.unit = unit;
        server.cap = cap;
        QVERIFY(server.listen());
        test::FakeClock net; // the client's command timeout and reconnects
        redis::RedisClient client(*redis::RedisEndpoint::parse(server.url(), nullptr), net);
        QStringList lost;
        connect(&client, &redis::RedisClient::lost, this,
                [&](const QString &why, redis::RedisClient::Loss) { lost.append(why); });
        QStringList messages;
        connect(&client, &redis::RedisClient::message, this,
                [&](const QByteArray &, const QByteArray &payload) { messages.append(QString::fromLatin1(payload)); });
        client.subscribe("ch");
        client.open();

        // Dropped before the flood ends, as a protocol error.
        QVERIFY2(test::waitUntil([&]() { return !lost.isEmpty(); }, 30000),
                 qPrintable(QStringLiteral("still connected after %1 bytes").arg(server.sent)));
        QFETCH(QString, why);
        QFETCH(qint64, readAtMost);
        QVERIFY2(lost.first().startsWith(why), qPrintable(lost.first()));
        QVERIFY(test::waitUntil([&]() { return server.sentAtClose >= 0; }, 5000));
        qInfo("dropped after %lld flood bytes (%s)", server.sentAtClose, qPrintable(lost.first()));
        QVERIFY(server.sentAtClose < cap);
        QVERIFY2(server.sentAtClose <= readAtMost, qPrintable(QString::number(server.sentAtClose)));
        QVERIFY(!client.isReady());

        // Reconnected like after any other failure, 250 ms later; a sane server is read as before.
        server.flood = false;
        net.advance(250);
        QVERIFY(test::waitUntil([&]() { return server.connections == 2 && client.isReady(); }, 5000));
        server.last->write("*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n");
        QVERIFY(test::waitUntil([&]() { return !messages.isEmpty(); }, 5000));
        QCOMPARE(messages, QStringList{QStringLiteral("hello")});
    }

    // A rediss:// store whose certificate a private CA signed could not be trusted: marks had no
    // caFile, and the handshake's failure read "Redis unreachable" (probe AC4 F3). The endpoint's
    // caFile is trusted besides the system store, and a certificate refused is a TLS loss.
    void aRedissStoreTrustsItsCaFile() {
        HostileRedis server;
        server.flood = false;
        QVERIFY(server.listen());
        test::TlsFront front(server.port());
        QVERIFY(front.ok());
        redis::RedisEndpoint endpoint = *redis::RedisEndpoint::parse(
            QStringLiteral("rediss://127.0.0.1:%1").arg(QUrl(front.baseUrl()).port()), nullptr);
        test::FakeClock net;
        {
            redis::RedisClient untrusting(endpoint, net);
            std::optional<redis::RedisClient::Loss> loss;
            connect(&untrusting, &redis::RedisClient::lost, this,
                    [&](const QString &, redis::RedisClient::Loss l) { loss = l; });
            untrusting.open();
            QVERIFY(test::waitUntil([&]() { return loss.has_value(); }, 5000));
            QCOMPARE(*loss, redis::RedisClient::Loss::TlsFailed);
            QVERIFY(!untrusting.isReady());
        }
        // marks.caFile: checked as providers.NAME.caFile is, kept when the file is saved back.
        const auto good = config::parse(configWithMarksCaFile(endpoint.display(), front.caFile()));
        QVERIFY2(good.ok(), good.errors.isEmpty() ? "" : qPrintable(good.errors.front().toString()));
        QCOMPARE(good.config->marks.caFile, front.caFile());
        QCOMPARE(config::toJson(*good.config)
                     .value(QStringLiteral("marks"))
                     .toObject()
                     .value(QStringLiteral("caFile"))
                     .toString(),
                 front.caFile());
        for (const auto &[url, file] :
             {std::pair{endpoint.display(), QStringLiteral("relative/ca.pem")},
              std::pair{QStringLiteral("redis://127.0.0.1:6379"), front.caFile()}}) { // no TLS to trust it for
            const auto bad = config::parse(configWithMarksCaFile(url, file));
            QVERIFY2(!bad.ok(), qPrintable(url + QLatin1Char(' ') + file));
            QCOMPARE(bad.errors.front().path, QStringLiteral("marks.caFile"));
        }
        endpoint.caFile = good.config->marks.caFile;
        redis::RedisClient trusting(endpoint, net);
        trusting.open();
        QVERIFY(test::waitUntil([&]() { return trusting.isReady(); }, 5000));
        std::optional<redis::RedisValue> reply;
        trusting.command({"GET", "k"}, [&](const redis::RedisValue &v) { reply = v; });
        QVERIFY(test::waitUntil([&]() { return reply.has_value(); }, 5000));
        QVERIFY(!reply->isError());
    }

    // The bounds leave room for what Redis sends this gateway: the largest pull (RedisMarkSync
    // reads at most kMaxPulledMarks marks, each well under 1000 bytes) is an array well inside them.
    void aLargeLegitimateReplyIsRead() {
        HostileRedis server;
        server.flood = false;
        const QByteArray mark = "$1000\r\n" + QByteArray(1000, 'm') + "\r\n";
        server.reply = "*20000\r\n" + mark.repeated(20000);
        QVERIFY(server.listen());
        test::FakeClock net;
        redis::RedisClient client(*redis::RedisEndpoint::parse(server.url(), nullptr), net);
        client.open();
        QVERIFY(test::waitUntil([&]() { return client.isReady(); }, 5000));
        std::optional<redis::RedisValue> reply;
        client.command({"EVAL", "pull"}, [&](const redis::RedisValue &v) { reply = v; });
        QVERIFY(test::waitUntil([&]() { return reply.has_value(); }, 10000));
        QCOMPARE(reply->type, redis::RedisValue::Type::Array);
        QCOMPARE(reply->elements.size(), 20000);
        QCOMPARE(reply->elements.last().str, QByteArray(1000, 'm'));
        QVERIFY(client.isReady());
    }
};

QTEST_GUILESS_MAIN(TestRedisHostile)
#include "test_redis_hostile.moc"
