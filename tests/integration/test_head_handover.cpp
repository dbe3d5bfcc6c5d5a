// The read-head handover (ConnectionGuard::setHandsOverHeads): the listener gives Qt's HTTP server
// a shortened head and hands the request's fields to HttpFront itself. Differential: every request
// below goes through the real listener (GuardedTcpServer, ConnectionGuard, Qt's server, HttpFront)
// twice, once with handover and once with Qt reading every head itself, and the handler must see
// the same method, path, query, header fields (names, values, order, duplicates) and body, and the
// client the same answers. The cases cover what reaches the shortening (SDK heads, odd case and
// spacing, bare LF, chunked bodies, Expect, pipelining, keep-alive) and what must not be
// shortened (a head read in pieces); a head of more than 100 fields, which Qt 6.4's parser gives
// up on, is refused once with 431 either way.

#include "core/config/config.h"
#include "core/server/connection_guard.h"
#include "core/server/guarded_tcp_server.h"
#include "core/server/http_exchange.h"
#include "core/server/http_front.h"
#include "core/util/byte_budget.h"
#include "signal_wait.h"

#include <QHash>
#include <QHostAddress>
#include <QTcpSocket>
#include <QTest>

#include <memory>

using namespace sw;

namespace {

struct Seen {
    QByteArray method;
    QString path;
    QString query;
    http::HeaderList headers;
    QByteArray body;
    bool operator==(const Seen &) const = default;
};

QByteArray describe(const QList<Seen> &seen) {
    QByteArray out;
    for (const Seen &s : seen) {
        out += s.method + ' ' + s.path.toUtf8() + " ?" + s.query.toUtf8() + " body=" + s.body + '\n';
        for (const auto &[name, value] : s.headers)
            out += "  [" + name + "] = [" + value + "]\n";
    }
    return out;
}

// A listener as the engine builds it, with a handler that records each request and answers 200.
class Listener {
public:
    Listener() {
        m_front = std::make_unique<server::HttpFront>([this](server::InboundRequest &&in, server::HttpExchange *ex) {
            seen.append({in.method, in.path, in.query.toString(QUrl::FullyEncoded), in.headers, in.body});
            ex->respond(200, {{"Content-Type", "application/json"}}, "{\"n\":" + QByteArray::number(seen.size()) + "}");
            ex->deleteLater();
        });
        config::LimitsConfig limits;
        m_tcp = new server::GuardedTcpServer(limits, std::make_shared<util::ByteBudget>(limits.maxBodyBytesInFlight),
                                             m_front.get(), m_front.get());
        ok = m_tcp->listen(QHostAddress::LocalHost);
        port = m_tcp->serverPort();
        m_front->bind(m_tcp);
        m_front->setListener({QHostAddress(QHostAddress::LocalHost), port});
        m_front->setLimits(limits);
    }

    // Sends `pieces` on one connection (each written and given time to arrive on its own) and
    // reads until `answers` status lines came back or the server closed. Returns the statuses.
    QList<int> run(const QList<QByteArray> &pieces, int answers) {
        QTcpSocket client;
        client.connectToHost(QHostAddress::LocalHost, port);
        if (!client.waitForConnected(5000))
            return {-1};
        for (const QByteArray &piece : pieces) {
            client.write(piece);
            client.flush();
            if (pieces.size() > 1)
                sw::test::waitUntil([&] { return client.bytesToWrite() == 0; }, 2000), QTest::qWait(2);
        }
        QByteArray got;
        sw::test::waitUntil(
            [&] {
                got += client.readAll();
                return got.count("HTTP/1.1 ") - got.count("HTTP/1.1 100 ") >= answers ||
                       client.state() != QAbstractSocket::ConnectedState;
            },
            8000);
        got += client.readAll();
        // Whether the server closes the connection after its answers (Connection: close, HTTP/1.0).
        sw::test::waitUntil([&] { return client.state() != QAbstractSocket::ConnectedState; }, 150);
        closedAfter = client.state() != QAbstractSocket::ConnectedState;
        QList<int> statuses;
        for (qsizetype at = got.indexOf("HTTP/1.1 "); at >= 0; at = got.indexOf("HTTP/1.1 ", at + 1))
            statuses.append(got.mid(at + 9, 3).toInt());
        return statuses;
    }

    bool ok = false;
    quint16 port = 0;
    QList<Seen> seen;
    bool closedAfter = false;

private:
    std::unique_ptr<server::HttpFront> m_front;
    server::GuardedTcpServer *m_tcp = nullptr; // a child of m_front
};

QByteArray host(quint16 port) {
    return "Host: 127.0.0.1:" + QByteArray::number(port) + "\r\n";
}

QByteArray post(quint16 port, const QByteArray &path, const QByteArray &fields, const QByteArray &body) {
    return "POST " + path + " HTTP/1.1\r\n" + host(port) + fields +
           "Content-Length: " + QByteArray::number(body.size()) + "\r\n\r\n" + body;
}

const QByteArray kBody = R"({"model":"m","messages":[{"role":"user","content":"hi"}]})";

// What the OpenAI Node SDK sends (values are placeholders).
const QByteArray kSdkFields = "Accept: application/json\r\n"
                              "Content-Type: application/json\r\n"
                              "User-Agent: OpenAI/JS 4.104.0\r\n"
                              "X-Stainless-Lang: js\r\n"
                              "X-Stainless-Package-Version: 4.104.0\r\n"
                              "X-Stainless-OS: Linux\r\n"
                              "X-Stainless-Arch: x64\r\n"
                              "X-Stainless-Runtime: node\r\n"
                              "X-Stainless-Runtime-Version: v18.19.0\r\n"
                              "Authorization: Bearer test-key-not-real\r\n"
                              "X-Stainless-Retry-Count: 0\r\n"
                              "Accept-Encoding: gzip,deflate\r\n"
                              "Connection: keep-alive\r\n";

// `n` fields in all, with the Host and Content-Length that post() adds.
QByteArray manyFields(int n) {
    QByteArray fields = "Content-Type: application/json\r\n";
    for (int i = 0; i < n - 3; ++i)
        fields += "X-Field-" + QByteArray::number(i) + ": value " + QByteArray::number(i) + "\r\n";
    return fields;
}

QList<QByteArray> bytewise(const QByteArray &all, qsizetype headBytes) {
    QList<QByteArray> pieces;
    for (qsizetype i = 0; i < headBytes; ++i)
        pieces.append(all.mid(i, 1));
    pieces.append(all.mid(headBytes));
    return pieces;
}

} // namespace

class TestHeadHandover : public QObject {
    Q_OBJECT

private slots:
    void cleanup() { server::ConnectionGuard::setHeadHandoverEnabled(true); }

    void theHandlerSeesTheSameRequestEitherWay_data() {
        QTest::addColumn<QByteArray>("name");
        QTest::addColumn<int>("answers");
        QTest::addColumn<bool>("handedOver"); // at least one head of the case is shortened
        QTest::addRow("sdk head") << QByteArray("sdk") << 1 << true;
        QTest::addRow("case, spacing, tabs, empty and repeated fields") << QByteArray("odd") << 1 << true;
        QTest::addRow("fields ending in a bare LF") << QByteArray("lf") << 1 << true;
        QTest::addRow("query string and a GET") << QByteArray("get") << 1 << true;
        QTest::addRow("chunked body") << QByteArray("chunked") << 1 << true;
        QTest::addRow("Expect: 100-continue") << QByteArray("expect") << 1 << true;
        QTest::addRow("keep-alive, three requests, a stray CRLF between") << QByteArray("keepalive") << 3 << true;
        QTest::addRow("two requests in one write") << QByteArray("pipelined") << 2 << true;
        QTest::addRow("head arriving a byte at a time") << QByteArray("bytewise") << 1 << false;
        QTest::addRow("100 fields") << QByteArray("fields100") << 1 << true;
        QTest::addRow("101 fields: refused with 431, once") << QByteArray("fields101") << 1 << false;
        QTest::addRow("Connection: close") << QByteArray("close") << 1 << true;
        QTest::addRow("absolute-form target naming this listener") << QByteArray("absolute") << 1 << true;
        QTest::addRow("no Host field") << QByteArray("nohost") << 1 << true;
        QTest::addRow("HTTP/1.0 asking for keep-alive") << QByteArray("http10") << 1 << true;
        QTest::addRow("HTTP/1.0, then a second request") << QByteArray("http10twice") << 2 << true;
        // The path goes to Qt as "/" only when Qt would read it back unchanged.
        QTest::addRow("a dot segment in the path") << QByteArray("dots") << 1 << true;
        QTest::addRow("a percent escape in the path") << QByteArray("escaped") << 1 << true;
        QTest::addRow("a path starting with two slashes") // refused on the head (400), never handed over
            << QByteArray("twoslashes") << 1 << false;
        QTest::addRow("an empty segment inside the path") << QByteArray("emptysegment") << 1 << true;
        QTest::addRow("the root path") << QByteArray("root") << 1 << true;
        QTest::addRow("a query (Anthropic's SDK: ?beta=true)") << QByteArray("beta") << 1 << true;
        QTest::addRow("a plain path, then one with a query, pipelined") << QByteArray("plainthenquery") << 2 << true;
    }

    void theHandlerSeesTheSameRequestEitherWay() {
        QFETCH(QByteArray, name);
        QFETCH(int, answers);
        QFETCH(bool, handedOver);

        const auto pieces = [&](quint16 port) -> QList<QByteArray> {
            if (name == "sdk")
                return {post(port, "/v1/chat/completions", kSdkFields, kBody)};
            if (name == "odd")
                return {post(port, "/v1/messages",
                             "content-TYPE:application/json\r\n"
                             "X-Api-Key:    spaced-value   \r\n"
                             "x-tabbed:\tinner\tTAB\t\r\n"
                             "X-Empty:\r\n"
                             "X-Dup: 1\r\n"
                             "anthropic-version: 2023-06-01\r\n"
                             "X-Dup: 2\r\n"
                             "X-UTF8: caf\xc3\xa9\r\n",
                             kBody)};
            if (name == "lf") // the request line ends in CRLF (the listener refuses it bare), the fields in LF
                return {"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1:" + QByteArray::number(port) +
                        "\nContent-Type: application/json\nX-Trace: a\nContent-Length: " +
                        QByteArray::number(kBody.size()) + "\n\n" + kBody};
            if (name == "get")
                return {"GET /v1/models?limit=2&after=x%20y&flag HTTP/1.1\r\n" + host(port) +
                        "Accept: application/json\r\nUser-Agent: test\r\n\r\n"};
            if (name == "chunked")
                return {"POST /v1/chat/completions HTTP/1.1\r\n" + host(port) +
                        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nX-Trace: chunks\r\n\r\n" +
                        QByteArray::number(kBody.size() - 10, 16) + "\r\n" + kBody.left(kBody.size() - 10) +
                        "\r\na\r\n" + kBody.right(10) + "\r\n0\r\n\r\n"};
            if (name == "expect")
                return {
                    post(port, "/v1/messages", "Content-Type: application/json\r\nExpect: 100-continue\r\n", kBody)};
            if (name == "keepalive")
                return {post(port, "/v1/messages", "Content-Type: application/json\r\nX-N: 1\r\n", kBody),
                        "\r\n" + post(port, "/v1/messages", "Content-Type: application/json\r\nX-N: 2\r\n", kBody),
                        post(port, "/v1/chat/completions", kSdkFields, kBody)};
            if (name == "pipelined")
                return {post(port, "/v1/messages", "Content-Type: application/json\r\nX-N: 1\r\n", kBody) +
                        post(port, "/v1/chat/completions", kSdkFields, kBody)};
            if (name == "bytewise") {
                const QByteArray all = post(port, "/v1/chat/completions", kSdkFields, kBody);
                return bytewise(all, all.indexOf("\r\n\r\n") + 4);
            }
            if (name == "fields100")
                return {post(port, "/v1/messages", manyFields(100), kBody)};
            if (name == "fields101")
                return {post(port, "/v1/messages", manyFields(101), kBody)};
            if (name == "absolute")
                return {"POST http://127.0.0.1:" + QByteArray::number(port) + "/v1/messages?beta=true HTTP/1.1\r\n" +
                        host(port) + "Content-Type: application/json\r\nContent-Length: " +
                        QByteArray::number(kBody.size()) + "\r\n\r\n" + kBody};
            if (name == "nohost")
                return {"POST /v1/messages HTTP/1.1\r\nContent-Type: application/json\r\nX-Api-Key: k\r\n"
                        "Content-Length: " +
                        QByteArray::number(kBody.size()) + "\r\n\r\n" + kBody};
            if (name == "http10" || name == "http10twice") {
                const QByteArray one = "GET /v1/models HTTP/1.0\r\n" + host(port) +
                                       "Connection: keep-alive\r\nUser-Agent: old-client\r\n\r\n";
                return name == "http10" ? QList<QByteArray>{one} : QList<QByteArray>{one, one};
            }
            // One JSON POST whose request target is the case itself.
            static const QHash<QByteArray, QByteArray> targets{
                {"dots", "/v1/./x/../messages"},    {"escaped", "/v1/chat%2Dcompletions"},
                {"twoslashes", "//v1/messages"},    {"emptysegment", "/v1//messages"},
                {"beta", "/v1/messages?beta=true"}, {"root", "/"}};
            if (targets.contains(name))
                return {post(port, targets.value(name), "Content-Type: application/json\r\n", kBody)};
            if (name == "plainthenquery")
                return {post(port, "/v1/chat/completions", kSdkFields, kBody) +
                        post(port, "/v1/messages?beta=true", "Content-Type: application/json\r\n", kBody)};
            if (name == "close")
                return {post(port, "/v1/messages", "Content-Type: application/json\r\nConnection: close\r\n", kBody)};
            return {};
        };

        QList<Seen> seenWith;
        QList<Seen> seenWithout;
        QList<int> statusesWith;
        QList<int> statusesWithout;
        bool closedWith = false;
        bool closedWithout = false;
        for (const bool on : {true, false}) {
            server::ConnectionGuard::setHeadHandoverEnabled(on);
            Listener listener;
            QVERIFY(listener.ok);
            const quint64 before = server::ConnectionGuard::headsHandedOver();
            const QList<int> statuses = listener.run(pieces(listener.port), answers);
            const quint64 handed = server::ConnectionGuard::headsHandedOver() - before;
            // The host field names the port, which differs between the two listeners.
            for (Seen &s : listener.seen)
                for (auto &[field, value] : s.headers)
                    if (field.compare("host", Qt::CaseInsensitive) == 0)
                        value.replace(QByteArray::number(listener.port), "PORT");
            if (on) {
                QCOMPARE(handed > 0, handedOver);
                seenWith = listener.seen;
                statusesWith = statuses;
                closedWith = listener.closedAfter;
            } else {
                QCOMPARE(handed, quint64(0));
                seenWithout = listener.seen;
                statusesWithout = statuses;
                closedWithout = listener.closedAfter;
            }
        }
        QCOMPARE(statusesWith, statusesWithout);
        QCOMPARE(closedWith, closedWithout);
        QCOMPARE(statusesWith.size(), answers);
        QVERIFY2(seenWith == seenWithout,
                 ("with handover:\n" + describe(seenWith) + "Qt's own reading:\n" + describe(seenWithout)).constData());
        if (name == "fields101") {
            QCOMPARE(statusesWith, QList<int>{431});
            QVERIFY(seenWith.isEmpty());
        } else if (name == "nohost" || name == "twoslashes") {
            // Refused by the listener's Host check, or for a path Qt reads as an authority: the same
            // way either way.
            QVERIFY(seenWith.isEmpty());
            QVERIFY(statusesWith.value(0) >= 400);
        } else {
            QCOMPARE(seenWith.size(), answers); // every request reached the handler
            QCOMPARE(statusesWith, QList<int>(answers, 200));
        }
    }
};

QTEST_GUILESS_MAIN(TestHeadHandover)
#include "test_head_handover.moc"
