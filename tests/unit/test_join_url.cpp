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
