// upstream::joinUrl: a provider's base URL and an API path make the request URL, whatever
// trailing slashes the configured base has; the per-thread cache of recent joins never gives a
// URL other than a fresh join would, including after more distinct joins than it keeps and on
// another thread.

#include "core/upstream/http_types.h"

#include <QTest>
#include <QThread>

using namespace sw;

class TestJoinUrl : public QObject {
    Q_OBJECT

private slots:
    void joinsBaseAndPath_data() {
        QTest::addColumn<QString>("base");
        QTest::addColumn<QString>("path");
        QTest::addColumn<QString>("url");
        QTest::addRow("plain") << "https://api.example.test/v1"
                               << "/chat/completions"
                               << "https://api.example.test/v1/chat/completions";
        QTest::addRow("trailing slash") << "https://api.example.test/v1/"
                                        << "/responses"
                                        << "https://api.example.test/v1/responses";
        QTest::addRow("many slashes") << "http://127.0.0.1:8080///"
                                      << "/v1/messages"
                                      << "http://127.0.0.1:8080/v1/messages";
        QTest::addRow("query in path") << "https://gen.example.test/v1beta"
                                       << "/models/m:streamGenerateContent?alt=sse"
                                       << "https://gen.example.test/v1beta/models/m:streamGenerateContent?alt=sse";
    }
    void joinsBaseAndPath() {
        QFETCH(QString, base);
        QFETCH(QString, path);
        QFETCH(QString, url);
        QCOMPARE(upstream::joinUrl(base, path), QUrl(url));
        QCOMPARE(upstream::joinUrl(base, path), QUrl(url)); // from the cache now
    }

    void moreJoinsThanTheCacheKeepsStayRight() {
        for (int round = 0; round < 3; ++round) {
            for (int i = 0; i < 20; ++i) {
                const QString base = QStringLiteral("http://h%1.example.test:%2/").arg(i).arg(8000 + i);
                QCOMPARE(upstream::joinUrl(base, QStringLiteral("/chat/completions")),
                         QUrl(QStringLiteral("http://h%1.example.test:%2/chat/completions").arg(i).arg(8000 + i)));
                QCOMPARE(upstream::joinUrl(base, QStringLiteral("/responses")),
                         QUrl(QStringLiteral("http://h%1.example.test:%2/responses").arg(i).arg(8000 + i)));
            }
        }
    }

    // urlParts: what the socket transport writes a request with (target, Host value, pool key).
    void urlPartsAreThoseOfTheUrl_data() {
        QTest::addColumn<QString>("url");
        QTest::addColumn<QString>("hostKey");
        QTest::addColumn<QByteArray>("target");
        QTest::addColumn<QByteArray>("hostField");
        QTest::addRow("https, default port")
            << "https://API.example.test/v1/chat/completions"
            << "https://api.example.test:443" << QByteArray("/v1/chat/completions") << QByteArray("api.example.test");
        QTest::addRow("http, own port, query")
            << "http://127.0.0.1:8080/v1beta/models/m:streamGenerateContent?alt=sse"
            << "http://127.0.0.1:8080" << QByteArray("/v1beta/models/m:streamGenerateContent?alt=sse")
            << QByteArray("127.0.0.1:8080");
        QTest::addRow("ipv6 literal") << "http://[::1]:11434/v1/chat/completions"
                                      << "http://::1:11434" << QByteArray("/v1/chat/completions")
                                      << QByteArray("[::1]:11434");
        QTest::addRow("no path") << "http://h.example.test:80"
                                 << "http://h.example.test:80" << QByteArray("/") << QByteArray("h.example.test");
        QTest::addRow("escaped path") << "https://h.example.test/a%20b/c"
                                      << "https://h.example.test:443" << QByteArray("/a%20b/c")
                                      << QByteArray("h.example.test");
    }
    void urlPartsAreThoseOfTheUrl() {
        QFETCH(QString, url);
        QFETCH(QString, hostKey);
        QFETCH(QByteArray, target);
        QFETCH(QByteArray, hostField);
        const QUrl parsed(url);
        for (int i = 0; i < 2; ++i) { // computed, then the kept copy
            const upstream::UrlParts parts = upstream::urlParts(parsed);
            QCOMPARE(parts.hostKey, hostKey);
            QCOMPARE(parts.target, target);
            QCOMPARE(parts.hostField, hostField);
        }
    }

    // Kept by the URL's shared data: a URL parsed again, or one changed after it was kept (Qt
    // detaches it), is never taken for another; more URLs than are kept stay right.
    void urlPartsNeverAnswerForAnotherUrl() {
        QUrl url(QStringLiteral("http://a.example.test:1000/x"));
        QCOMPARE(upstream::urlParts(url).hostField, QByteArray("a.example.test:1000"));
        url.setPort(2000);
        QCOMPARE(upstream::urlParts(url).hostField, QByteArray("a.example.test:2000"));
        for (int round = 0; round < 3; ++round)
            for (int i = 0; i < 20; ++i) {
                const QUrl joined = upstream::joinUrl(QStringLiteral("http://h%1.example.test:%2").arg(i).arg(9000 + i),
                                                      QStringLiteral("/v1/messages"));
                const upstream::UrlParts parts = upstream::urlParts(joined);
                QCOMPARE(parts.hostField, QStringLiteral("h%1.example.test:%2").arg(i).arg(9000 + i).toLatin1());
                QCOMPARE(parts.target, QByteArray("/v1/messages"));
            }
    }

    void anotherThreadJoinsOnItsOwn() {
        const QString base = QStringLiteral("https://api.example.test/v1");
        QCOMPARE(upstream::joinUrl(base, QStringLiteral("/messages")),
                 QUrl(QStringLiteral("https://api.example.test/v1/messages")));
        QUrl fromThread;
        QThread *thread = QThread::create([&] { fromThread = upstream::joinUrl(base, QStringLiteral("/messages")); });
        thread->start();
        QVERIFY(thread->wait(5000));
        delete thread;
        QCOMPARE(fromThread, QUrl(QStringLiteral("https://api.example.test/v1/messages")));
    }
};

QTEST_GUILESS_MAIN(TestJoinUrl)
#include "test_join_url.moc"
