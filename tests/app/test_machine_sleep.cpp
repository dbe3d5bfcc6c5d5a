// A laptop that sleeps through a parked key's stated reset time, or through a provider-down mark,
// finds them over on waking (probe AA1 F1). The built binary runs under tests/shim's LD_PRELOAD
// library, which shows it what a process sees after a suspend: the boot and wall clocks moved on by
// the sleep, the monotonic clock where it was.

#include "core/demo/fake_upstream.h"
#include "gateway_process.h"
#include "signal_wait.h"

#include <QDateTime>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

using namespace sw;

namespace {

constexpr qint64 kMinuteMs = 60 * 1000;

QJsonObject provider(const QString &baseUrl, const QJsonArray &credentials) {
    return {{QStringLiteral("api"), QStringLiteral("anthropic-messages")},
            {QStringLiteral("baseUrl"), baseUrl},
            {QStringLiteral("credentials"), credentials}};
}

QJsonObject route(const QStringList &candidates) {
    return {{QStringLiteral("candidates"), QJsonArray::fromStringList(candidates)}};
}

} // namespace

class TestMachineSleep final : public QObject {
    Q_OBJECT

    QTemporaryDir m_home;
    demo::FakeUpstream m_a;
    demo::FakeUpstream m_b;
    QNetworkAccessManager m_nam;
    QProcess m_gateway;
    QString m_base;
    QFile m_slept; // the milliseconds the machine has slept, as the shim reads them
    qint64 m_sleptMs = 0;

    QString configPath() const { return m_home.filePath(QStringLiteral("config.json")); }

    bool sleepFor(qint64 ms) {
        m_sleptMs += ms;
        // In place, never truncated: the gateway reads the file through a shared mapping.
        return m_slept.seek(0) &&
               m_slept.write(reinterpret_cast<const char *>(&m_sleptMs), sizeof m_sleptMs) ==
                   qint64(sizeof m_sleptMs) &&
               m_slept.flush();
    }

    std::pair<int, QByteArray> http(const QString &path, const QByteArray &body = {}, bool remove = false) {
        QNetworkRequest req{QUrl(m_base + path)};
        req.setHeader(QNetworkRequest::ContentTypeHeader, QByteArrayLiteral("application/json"));
        QNetworkReply *reply = remove           ? m_nam.deleteResource(req)
                               : body.isEmpty() ? m_nam.get(req)
                                                : m_nam.post(req, body);
        test::waitUntil([reply]() { return reply->isFinished(); }, 15000);
        const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
        const QByteArray data = reply->readAll();
        reply->deleteLater();
        return {status, data};
    }

    int chat(const QString &route) {
        const QJsonObject body{
            {QStringLiteral("model"), route},
            {QStringLiteral("messages"), QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                                                {QStringLiteral("content"), QStringLiteral("hi")}}}}};
        return http(QStringLiteral("/v1/chat/completions"), QJsonDocument(body).toJson(QJsonDocument::Compact)).first;
    }

    QJsonArray adminList(const QString &what) {
        return QJsonDocument::fromJson(http(QStringLiteral("/admin/") + what).second).object().value(what).toArray();
    }

    QString keyStateOfA() {
        for (const QJsonValue &c : adminList(QStringLiteral("credentials")))
            if (c[QStringLiteral("provider")].toString() == QLatin1String("a"))
                return c[QStringLiteral("state")].toString();
        return {};
    }

private Q_SLOTS:
    void initTestCase() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
        QSKIP("a sanitizer's runtime must come first in the library list: it stops a binary started with "
              "another library in LD_PRELOAD");
#endif
        QVERIFY(m_a.listen());
        QVERIFY(m_b.listen());
        const QJsonObject config{
            {QStringLiteral("listen"), QStringLiteral("127.0.0.1:0")},
            {QStringLiteral("providers"),
             QJsonObject{{QStringLiteral("a"), provider(m_a.baseUrl(), {QStringLiteral("env:SWITCHMAN_TEST_KEY_A")})},
                         {QStringLiteral("b"), provider(m_b.baseUrl(), {})}}},
            {QStringLiteral("models"),
             QJsonObject{{QStringLiteral("a/m"), QJsonObject{}}, {QStringLiteral("b/m"), QJsonObject{}}}},
            {QStringLiteral("routes"),
             QJsonObject{{QStringLiteral("solo"), route({QStringLiteral("a/m")})},
                         {QStringLiteral("chain"), route({QStringLiteral("a/m"), QStringLiteral("b/m")})}}}};
        QFile file(configPath());
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(QJsonDocument(config).toJson());
        file.close();

        m_slept.setFileName(m_home.filePath(QStringLiteral("slept-ms")));
        QVERIFY(m_slept.open(QIODevice::ReadWrite));
        QVERIFY(sleepFor(0));
        QProcessEnvironment env = test::gatewayEnvironment(m_home);
        const QString preload = env.value(QStringLiteral("LD_PRELOAD"));
        env.insert(QStringLiteral("LD_PRELOAD"), QStringLiteral(SWITCHMAN_CLOCK_SHIFT) +
                                                     (preload.isEmpty() ? QString() : QLatin1Char(':') + preload));
        env.insert(QStringLiteral("SWITCHMAN_TEST_SLEPT_MS_FILE"), m_slept.fileName());
        env.insert(QStringLiteral("SWITCHMAN_TEST_KEY_A"), QStringLiteral("sk-test-key-a-0123456789"));
        m_base = test::startGateway(m_gateway, configPath(), env);
        QVERIFY2(!m_base.isEmpty(), qPrintable(QString::fromUtf8(m_gateway.readAllStandardError())));
    }

    void cleanupTestCase() {
        if (m_gateway.state() == QProcess::NotRunning)
            return;
        m_gateway.terminate();
        if (!m_gateway.waitForFinished(20000))
            m_gateway.kill();
    }

    void init() {
        // Each case starts with nothing set aside, whatever the one before left.
        QCOMPARE(http(QStringLiteral("/admin/marks"), {}, true).first, 200);
        QCOMPARE(http(QStringLiteral("/admin/credentials"), {}, true).first, 200);
        m_a.clearFault();
    }

    void aMarkIsOverAfterASleepLongerThanIt() {
        demo::Fault down;
        down.kind = demo::Fault::Status;
        down.status = 503;
        down.retryAfter = "300";
        m_a.setFault(down);
        QCOMPARE(chat(QStringLiteral("chain")), 200); // b answered; a is marked for 300 s
        QCOMPARE(adminList(QStringLiteral("marks")).size(), 1);
        m_a.clearFault();

        QVERIFY(sleepFor(10 * kMinuteMs));
        QCOMPARE(adminList(QStringLiteral("marks")).size(), 0);
        const qsizetype askedBefore = m_a.requests().size();
        QCOMPARE(chat(QStringLiteral("chain")), 200);
        QCOMPARE(m_a.requests().size(), askedBefore + 1); // the first choice answers again
    }

    void aKeyParkedUntilAStatedTimeIsUsedWhenTheMachineSleptPastIt() {
        // Anthropic's spend limit names the time the key is usable again, an hour ahead of the wall
        // clock the gateway reads (which has moved on by the sleeps so far).
        const QDateTime resetAt = QDateTime::currentDateTimeUtc().addMSecs(m_sleptMs + 61 * kMinuteMs);
        const QString message =
            QStringLiteral("You have reached your specified API usage limits. You will regain access on %1 at %2 UTC.")
                .arg(resetAt.toString(QStringLiteral("yyyy-MM-dd")), resetAt.toString(QStringLiteral("HH:mm")));
        demo::Fault limit;
        limit.kind = demo::Fault::Status;
        limit.status = 400;
        limit.body =
            QJsonDocument(QJsonObject{{QStringLiteral("type"), QStringLiteral("error")},
                                      {QStringLiteral("error"),
                                       QJsonObject{{QStringLiteral("type"), QStringLiteral("invalid_request_error")},
                                                   {QStringLiteral("message"), message}}}})
                .toJson(QJsonDocument::Compact);
        m_a.setFault(limit);
        QCOMPARE(chat(QStringLiteral("chain")), 200); // b answered; a's key is parked until resetAt
        QCOMPARE(keyStateOfA(), QStringLiteral("parked"));
        m_a.clearFault();

        // The machine sleeps two hours: the stated time is an hour past when it wakes.
        QVERIFY(sleepFor(120 * kMinuteMs));
        QCOMPARE(keyStateOfA(), QStringLiteral("ok"));
        const qsizetype askedBefore = m_a.requests().size();
        QCOMPARE(chat(QStringLiteral("solo")), 200);
        QCOMPARE(m_a.requests().size(), askedBefore + 1);
    }
};

QTEST_GUILESS_MAIN(TestMachineSleep)
#include "test_machine_sleep.moc"
