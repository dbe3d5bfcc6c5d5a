// The listener's request rules as pure functions: Host (DNS rebinding), Origin, JSON bodies,
// and no control byte in any header value.
#include "core/server/request_guard.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

using namespace sw::server;

class TestRequestGuard : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void host_data() {
        QTest::addColumn<QString>("bound");
        QTest::addColumn<QByteArray>("host");
        QTest::addColumn<bool>("allowed");
        const QString v4 = QStringLiteral("127.0.0.1");
        const QString v6 = QStringLiteral("::1");
        QTest::addRow("v4 literal") << v4 << QByteArray("127.0.0.1:4141") << true;
        QTest::addRow("v4 no port") << v4 << QByteArray("127.0.0.1") << true;
        QTest::addRow("localhost") << v4 << QByteArray("localhost:4141") << true;
        QTest::addRow("localhost trailing dot") << v4 << QByteArray("localhost.:4141") << true;
        QTest::addRow("wrong port") << v4 << QByteArray("127.0.0.1:80") << false;
        QTest::addRow("rebinding") << v4 << QByteArray("evil.example:4141") << false;
        QTest::addRow("localhost subdomain") << v4 << QByteArray("localhost.evil.example:4141") << false;
        QTest::addRow("v6 loopback literal on v4 listener")
            << v4 << QByteArray("[::1]:4141") << true; // a literal cannot be rebound
        QTest::addRow("v6 literal") << v6 << QByteArray("[::1]:4141") << true;
        QTest::addRow("v6 no port") << v6 << QByteArray("[::1]") << true;
        QTest::addRow("v6 unbracketed") << v6 << QByteArray("::1") << false;
        QTest::addRow("empty") << v4 << QByteArray() << false;
        QTest::addRow("port garbage") << v4 << QByteArray("127.0.0.1:41x41") << false;
        QTest::addRow("localhost in capitals") << v4 << QByteArray("LocalHost:4141") << true;
        QTest::addRow("blanks around") << v4 << QByteArray(" 127.0.0.1:4141\t") << true;
        QTest::addRow("port with a leading zero") << v4 << QByteArray("127.0.0.1:04141") << false;
        QTest::addRow("colon without a port") << v4 << QByteArray("127.0.0.1:") << true;
        QTest::addRow("another loopback address") << v4 << QByteArray("127.0.0.2:4141") << false;
        QTest::addRow("listener on 127.0.0.2, named")
            << QStringLiteral("127.0.0.2") << QByteArray("127.0.0.2:4141") << true;
        QTest::addRow("listener on 127.0.0.2, 127.0.0.1 named")
            << QStringLiteral("127.0.0.2") << QByteArray("127.0.0.1:4141") << false;
        QTest::addRow("v4 literal a prefix of the listener's") << v4 << QByteArray("127.0.0.10:4141") << false;
        QTest::addRow("v6 literal written in full") << v6 << QByteArray("[0:0:0:0:0:0:0:1]:4141") << true;
        QTest::addRow("non-loopback listener takes any host")
            << QStringLiteral("0.0.0.0") << QByteArray("gw.lan:4141") << true;
    }
    void host() {
        QFETCH(QString, bound);
        QFETCH(QByteArray, host);
        QFETCH(bool, allowed);
        const ListenerIdentity listener{QHostAddress(bound), 4141};
        const auto r = RequestGuard::checkHost(listener, host);
        QCOMPARE(!r.has_value(), allowed);
        if (r)
            QCOMPARE(r->status, host.isEmpty() ? 400 : 403); // none is malformed; another name, forbidden
    }

    void origin_data() {
        QTest::addColumn<QByteArray>("origin");
        QTest::addColumn<bool>("allowed");
        QTest::addRow("none") << QByteArray() << true;
        QTest::addRow("same origin") << QByteArray("http://127.0.0.1:4141") << true;
        QTest::addRow("same origin localhost") << QByteArray("http://localhost:4141") << true;
        QTest::addRow("other site") << QByteArray("https://evil.example") << false;
        QTest::addRow("null") << QByteArray("null") << false;
        QTest::addRow("other loopback port") << QByteArray("http://localhost:3000") << false;
        QTest::addRow("https same host") << QByteArray("https://127.0.0.1:4141") << false;
        QTest::addRow("default port") << QByteArray("http://127.0.0.1") << false;
        QTest::addRow("with path") << QByteArray("http://127.0.0.1:4141/x") << false;
    }
    void origin() {
        QFETCH(QByteArray, origin);
        QFETCH(bool, allowed);
        const auto r = RequestGuard::checkOrigin({QHostAddress::LocalHost, 4141}, origin);
        QCOMPARE(!r.has_value(), allowed);
    }

    void contentType_data() {
        QTest::addColumn<QByteArray>("method");
        QTest::addColumn<QByteArray>("type");
        QTest::addColumn<qint64>("size");
        QTest::addColumn<int>("status");
        QTest::addRow("json") << QByteArray("POST") << QByteArray("application/json") << qint64(10) << 0;
        QTest::addRow("json charset") << QByteArray("POST") << QByteArray("application/json; charset=utf-8")
                                      << qint64(10) << 0;
        QTest::addRow("text/plain") << QByteArray("POST") << QByteArray("text/plain") << qint64(10) << 415;
        QTest::addRow("missing with body") << QByteArray("POST") << QByteArray() << qint64(10) << 415;
        QTest::addRow("empty POST") << QByteArray("POST") << QByteArray() << qint64(0) << 0;
        QTest::addRow("json-ish suffix") << QByteArray("POST") << QByteArray("application/jsonp") << qint64(1) << 415;
        QTest::addRow("capitals and blanks")
            << QByteArray("POST") << QByteArray(" Application/JSON ;charset=UTF-8") << qint64(10) << 0;
        QTest::addRow("json after a parameter")
            << QByteArray("POST") << QByteArray("text/plain; x=application/json") << qint64(10) << 415;
        QTest::addRow("GET ignores") << QByteArray("GET") << QByteArray("text/plain") << qint64(0) << 0;
        QTest::addRow("PUT form") << QByteArray("PUT") << QByteArray("application/x-www-form-urlencoded") << qint64(3)
                                  << 415;
    }
    void contentType() {
        QFETCH(QByteArray, method);
        QFETCH(QByteArray, type);
        QFETCH(qint64, size);
        QFETCH(int, status);
        const auto r = RequestGuard::checkContentType(method, type, size);
        QCOMPARE(r ? r->status : 0, status);
    }

    void contentEncoding_data() {
        QTest::addColumn<QByteArray>("coding");
        QTest::addColumn<int>("status");
        QTest::addRow("none") << QByteArray() << 0;
        QTest::addRow("identity") << QByteArray("identity") << 0;
        QTest::addRow("Identity, blanks") << QByteArray(" Identity ") << 0;
        QTest::addRow("gzip") << QByteArray("gzip") << 415;
        QTest::addRow("br") << QByteArray("br") << 415;
        QTest::addRow("zstd") << QByteArray("zstd") << 415;
        QTest::addRow("a list") << QByteArray("gzip, identity") << 415;
    }
    void contentEncoding() {
        QFETCH(QByteArray, coding);
        QFETCH(int, status);
        const auto r = RequestGuard::checkContentEncoding(coding);
        QCOMPARE(r ? r->status : 0, status);
        if (r)
            QVERIFY(r->message.contains(QStringLiteral("Content-Encoding")));
    }

    void responseIsACompleteClosingHttpResponse() {
        const Rejection r{413, "request_too_large", QStringLiteral("too big")};
        const QByteArray bytes = RequestGuard::responseBytes(r);
        QVERIFY(bytes.startsWith("HTTP/1.1 413 Payload Too Large\r\n"));
        QVERIFY(bytes.contains("\r\nConnection: close\r\n"));
        const QByteArray body = bytes.mid(bytes.indexOf("\r\n\r\n") + 4);
        QVERIFY(bytes.contains("Content-Length: " + QByteArray::number(body.size()) + "\r\n"));
        const QJsonObject o = QJsonDocument::fromJson(body).object();
        QCOMPARE(o.value(QStringLiteral("type")).toString(), QStringLiteral("error")); // Anthropic shape
        QCOMPARE(o.value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString(),
                 QStringLiteral("too big")); // and OpenAI's error.message
        QVERIFY(!bytes.toLower().contains("access-control"));
    }

    void headerValuesWithControlBytes_data() {
        QTest::addColumn<QByteArray>("value");
        QTest::addColumn<bool>("refused");
        QTest::addRow("plain") << QByteArray("2023-06-01") << false;
        QTest::addRow("tab between list items") << QByteArray("a,\tb") << false;
        QTest::addRow("UTF-8 (obs-text)") << QByteArray("caf\xc3\xa9") << false;
        QTest::addRow("bare CR") << QByteArray("a\rb") << true;
        QTest::addRow("LF") << QByteArray("a\nb") << true;
        QTest::addRow("NUL") << QByteArray("a\0b", 3) << true;
        QTest::addRow("ESC") << QByteArray("a\x1b[31m") << true;
        QTest::addRow("DEL") << QByteArray("a\x7f") << true;
    }
    void headerValuesWithControlBytes() {
        QFETCH(QByteArray, value);
        QFETCH(bool, refused);
        const sw::http::HeaderList headers{{"Host", "127.0.0.1"}, {"Anthropic-Beta", value}};
        const auto problem = RequestGuard::controlByteProblem(headers);
        QCOMPARE(problem.has_value(), refused);
        if (refused) {
            QVERIFY2(problem->contains(QStringLiteral("anthropic-beta")), qPrintable(*problem));
            QVERIFY(!problem->contains(QString::fromLatin1(value))); // names the header, never echoes the value
        }
    }
};

QTEST_GUILESS_MAIN(TestRequestGuard)
#include "test_request_guard.moc"
