// The built binary and the signals a service manager sends it: SIGTERM drains (the answer in
// flight finishes, then the process exits 0), SIGHUP re-reads the configuration file and the
// process keeps running.

#include "core/demo/fake_upstream.h"
#include "gateway_process.h"
#include "signal_wait.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QProcess>
#include <QRegularExpression>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <sys/types.h>

using namespace sw;

namespace {

// An Anthropic stream of eight words, one event at a time.
QByteArray anthropicWords() {
    QByteArray sse = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":"
                     "\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-a\",\"stop_reason\":null,"
                     "\"usage\":{\"input_tokens\":7,\"output_tokens\":1}}}\n\n"
                     "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
                     "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";
    for (int i = 1; i <= 8; ++i)
        sse += "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
               "\"delta\":{\"type\":\"text_delta\",\"text\":\"w" +
               QByteArray::number(i) + " \"}}\n\n";
    sse += "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
           "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
           "\"usage\":{\"output_tokens\":8}}\n\n"
           "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    return sse;
}

} // namespace

class TestSignals final : public QObject {
    Q_OBJECT

    QTemporaryDir m_home;
    demo::FakeUpstream m_upstream;
    QNetworkAccessManager m_nam;

    QString configPath() const { return m_home.filePath(QStringLiteral("config.json")); }

    void writeConfig(const QStringList &routes) {
        QJsonObject routeObjects;
        for (const QString &r : routes)
            routeObjects.insert(r,
                                QJsonObject{{QStringLiteral("candidates"), QJsonArray{QStringLiteral("pa/claude-a")}}});
        const QJsonObject config{
            {QStringLiteral("listen"), QStringLiteral("127.0.0.1:0")},
            {QStringLiteral("providers"),
             QJsonObject{
                 {QStringLiteral("pa"), QJsonObject{{QStringLiteral("api"), QStringLiteral("anthropic-messages")},
                                                    {QStringLiteral("baseUrl"), m_upstream.baseUrl()},
                                                    {QStringLiteral("credentials"), QJsonArray{}}}}}},
            {QStringLiteral("models"), QJsonObject{{QStringLiteral("pa/claude-a"), QJsonObject{}}}},
            {QStringLiteral("routes"), routeObjects}};
        QFile file(configPath());
        QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
        file.write(QJsonDocument(config).toJson());
    }

    QProcessEnvironment gatewayEnvironment(const QString &qtLoggingRules = {}) const {
        return test::gatewayEnvironment(m_home, qtLoggingRules);
    }
    QString startGateway(QProcess &process, const QString &qtLoggingRules = {}) {
        return test::startGateway(process, configPath(), gatewayEnvironment(qtLoggingRules));
    }

    QStringList modelIds(const QString &base) {
        QNetworkReply *reply = m_nam.get(QNetworkRequest(QUrl(base + QStringLiteral("/v1/models"))));
        test::waitUntil([reply]() { return reply->isFinished(); }, 5000);
        QStringList ids;
        for (const auto &m : QJsonDocument::fromJson(reply->readAll()).object().value(QStringLiteral("data")).toArray())
            ids << m.toObject().value(QStringLiteral("id")).toString();
        reply->deleteLater();
        return ids;
    }

    static bool refused(quint16 port) {
        QTcpSocket socket;
        socket.connectToHost(QHostAddress::LocalHost, port);
        test::waitUntil(
            [&socket]() {
                return socket.state() != QAbstractSocket::ConnectingState &&
                       socket.state() != QAbstractSocket::HostLookupState;
            },
            2000);
        return socket.error() == QAbstractSocket::ConnectionRefusedError;
    }

    static bool exitedCleanly(QProcess &process) {
        return test::waitUntil([&]() { return process.state() == QProcess::NotRunning; }, 20000) &&
               process.exitStatus() == QProcess::NormalExit && process.exitCode() == 0;
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(m_home.isValid());
        QVERIFY(m_upstream.listen());
    }

    void sigtermLetsTheAnswerInFlightFinish() {
        writeConfig({QStringLiteral("coding")});
        m_upstream.setRawReply(anthropicWords());
        demo::Fault paced;
        paced.chunkDelayMs = 150; // 13 events: about two seconds of answer
        m_upstream.setFault(paced);
        QProcess gateway;
        const QString base = startGateway(gateway);
        QVERIFY2(!base.isEmpty(), qPrintable(QString::fromUtf8(gateway.readAllStandardError())));
        const quint16 port = QUrl(base).port();

        QNetworkRequest req(QUrl(base + QStringLiteral("/v1/messages")));
        req.setHeader(QNetworkRequest::ContentTypeHeader, QByteArrayLiteral("application/json"));
        const QJsonObject body{
            {QStringLiteral("model"), QStringLiteral("coding")},
            {QStringLiteral("max_tokens"), 64},
            {QStringLiteral("stream"), true},
            {QStringLiteral("messages"), QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                                                {QStringLiteral("content"), QStringLiteral("hi")}}}}};
        QNetworkReply *reply = m_nam.post(req, QJsonDocument(body).toJson(QJsonDocument::Compact));
        QByteArray received;
        connect(reply, &QIODevice::readyRead, this, [&received, reply]() { received += reply->readAll(); });
        QVERIFY(test::waitUntil([&received]() { return received.contains("w1 "); }, 10000));

        ::kill(pid_t(gateway.processId()), SIGTERM);
        // The listener closes at once; the answer already running goes on to its end.
        QVERIFY(test::waitUntil([port]() { return refused(port); }, 5000));
        QVERIFY(gateway.state() == QProcess::Running);
        QVERIFY(test::waitUntil([reply]() { return reply->isFinished(); }, 15000));
        received += reply->readAll();
        QCOMPARE(reply->error(), QNetworkReply::NoError);
        QVERIFY2(received.contains("event: message_stop"), received.constData());
        QVERIFY(received.contains("w8 "));
        QVERIFY(!received.contains("event: error"));
        reply->deleteLater();
        QVERIFY(exitedCleanly(gateway));
        const QString log = QString::fromUtf8(gateway.readAllStandardError());
        QVERIFY2(log.contains(QStringLiteral("\"inFlight\":1")), qPrintable(log));
        QVERIFY2(log.contains(QStringLiteral("\"finished\":1")) && log.contains(QStringLiteral("\"cut\":0")),
                 qPrintable(log));
        m_upstream.clearFault();
        m_upstream.setRawReply({});
    }

    void sighupReloadsTheConfiguration() {
        writeConfig({QStringLiteral("first")});
        QProcess gateway;
        const QString base = startGateway(gateway);
        QVERIFY2(!base.isEmpty(), qPrintable(QString::fromUtf8(gateway.readAllStandardError())));
        QVERIFY(modelIds(base).contains(QStringLiteral("first")));
        QVERIFY(!modelIds(base).contains(QStringLiteral("second")));

        writeConfig({QStringLiteral("first"), QStringLiteral("second")});
        ::kill(pid_t(gateway.processId()), SIGHUP);
        QVERIFY(test::waitUntil([&]() { return modelIds(base).contains(QStringLiteral("second")); }, 10000));
        QVERIFY(gateway.state() == QProcess::Running);
        // A file with an error is refused, and the running configuration stays.
        QFile broken(configPath());
        QVERIFY(broken.open(QIODevice::WriteOnly | QIODevice::Truncate));
        broken.write("{ not json");
        broken.close();
        ::kill(pid_t(gateway.processId()), SIGHUP);
        QString log;
        QVERIFY(test::waitUntil(
            [&]() {
                log += QString::fromUtf8(gateway.readAllStandardError());
                return log.contains(QStringLiteral("configuration reload refused"));
            },
            10000));
        QVERIFY(gateway.state() == QProcess::Running);
        QVERIFY(modelIds(base).contains(QStringLiteral("second")));
        QVERIFY2(log.contains(QStringLiteral("SIGHUP: reloading the configuration")), qPrintable(log));

        gateway.terminate();
        QVERIFY(exitedCleanly(gateway));
    }

    // systemd counts a start at exec (Type=simple), so `restart && reload` sends SIGHUP while the
    // gateway starts: its default action ended the process, and systemd does not restart one that
    // died of SIGHUP (probe V2 F6). From main's first lines on, a SIGHUP is ignored until the
    // reload handler is in place.
    void aSighupDuringTheStartEndsNothing() {
        writeConfig({QStringLiteral("coding")});
        QProcess gateway;
        gateway.setProcessEnvironment(gatewayEnvironment());
        gateway.start(QStringLiteral(SWITCHMAN_BIN),
                      {QStringLiteral("--headless"), QStringLiteral("--config"), configPath()});
        QVERIFY(gateway.waitForStarted(10000));
        const pid_t pid = pid_t(gateway.processId());
        // The signal masks the kernel shows for the process: SIGHUP is bit 0, SIGPIPE bit 12.
        const auto masks = [pid]() {
            QFile status(QStringLiteral("/proc/%1/status").arg(pid));
            quint64 ignored = 0, caught = 0;
            if (status.open(QIODevice::ReadOnly))
                for (const QByteArray &line : status.readAll().split('\n')) {
                    if (line.startsWith("SigIgn:"))
                        ignored = line.mid(7).trimmed().toULongLong(nullptr, 16);
                    else if (line.startsWith("SigCgt:"))
                        caught = line.mid(7).trimmed().toULongLong(nullptr, 16);
                }
            return std::pair(ignored, caught);
        };
        QString banner;
        // main has begun once SIGPIPE is ignored (its first line); the banner says the start is over.
        // The masks are read before the banner each time: a loaded machine may let the start finish
        // between two looks, and the mask must already say it then.
        QVERIFY(test::waitUntil(
            [&]() {
                if (masks().first & (1ULL << (SIGPIPE - 1)))
                    return true;
                banner += QString::fromUtf8(gateway.readAllStandardOutput());
                return banner.contains(QLatin1Char('\n'));
            },
            20000));
        QVERIFY2(masks().first & (1ULL << (SIGPIPE - 1)), "SIGPIPE was not ignored when the gateway listened");
        // Ignored during the start, then caught (the reload handler, before the banner): never the
        // default action, which ends the process.
        QVERIFY(test::waitUntil(
            [&]() {
                const auto [ignored, caught] = masks();
                if ((ignored | caught) & (1ULL << (SIGHUP - 1)))
                    return true;
                banner += QString::fromUtf8(gateway.readAllStandardOutput());
                return banner.contains(QLatin1Char('\n'));
            },
            5000));
        QVERIFY2((masks().first | masks().second) & (1ULL << (SIGHUP - 1)), "SIGHUP had its default action");
        ::kill(pid, SIGHUP);
        QVERIFY(test::waitUntil(
            [&]() {
                banner += QString::fromUtf8(gateway.readAllStandardOutput());
                return banner.contains(QLatin1Char('\n')) || gateway.state() == QProcess::NotRunning;
            },
            20000));
        QVERIFY2(gateway.state() == QProcess::Running, qPrintable(QString::fromUtf8(gateway.readAllStandardError())));
        const auto m = QRegularExpression(QStringLiteral("listening on (http://\\S+)")).match(banner);
        QVERIFY(m.hasMatch());
        QVERIFY(modelIds(m.captured(1)).contains(QStringLiteral("coding")));
        gateway.terminate();
        QVERIFY(exitedCleanly(gateway));
    }

    // A log reader that goes away (`2>&1 | tee` stopped, a log shipper restarted): the next log line
    // killed the gateway with SIGPIPE, which systemd does not restart (probe V2 F3). It costs the
    // lines now, and the gateway goes on serving.
    void aLogReaderThatLeavesEndsNothing() {
        writeConfig({QStringLiteral("coding")});
        // stderr into a pipe whose reader (`true`) is gone at once, as a stopped `| tee` is; stdout
        // (the banner) into a file; the gateway's pid from the shell that execs it.
        const QString banner = m_home.filePath(QStringLiteral("banner.txt"));
        const QString pidFile = m_home.filePath(QStringLiteral("gateway.pid"));
        QFile::remove(banner);
        QFile::remove(pidFile);
        QProcess shell;
        shell.setProcessEnvironment(gatewayEnvironment());
        shell.start(QStringLiteral("/bin/sh"),
                    {QStringLiteral("-c"),
                     QStringLiteral("{ sh -c 'echo $$ > \"$0\"; exec \"$@\"' \"$1\" \"$2\" --headless --config \"$3\" "
                                    "2>&1 1>\"$4\"; } | true"),
                     QStringLiteral("sh"), pidFile, QStringLiteral(SWITCHMAN_BIN), configPath(), banner});
        QVERIFY(shell.waitForStarted(10000));
        QString base;
        QVERIFY(test::waitUntil(
            [&]() {
                QFile f(banner);
                if (!f.open(QIODevice::ReadOnly))
                    return false;
                const auto m = QRegularExpression(QStringLiteral("listening on (http://\\S+)"))
                                   .match(QString::fromUtf8(f.readAll()));
                base = m.hasMatch() ? m.captured(1) : QString();
                return !base.isEmpty();
            },
            20000));
        QFile pidText(pidFile);
        QVERIFY(pidText.open(QIODevice::ReadOnly));
        const pid_t pid = pid_t(pidText.readAll().trimmed().toLongLong());
        QVERIFY(pid > 0);
        // Lines to write, into the pipe nobody reads: a reload's, each time.
        for (int i = 0; i < 3; ++i) {
            QCOMPARE(::kill(pid, SIGHUP), 0);
            QVERIFY(modelIds(base).contains(QStringLiteral("coding")));
        }
        QCOMPARE(::kill(pid, 0), 0); // still running
        QCOMPARE(::kill(pid, SIGTERM), 0);
        QVERIFY(shell.waitForFinished(20000));
    }

    void qtsOwnMessagesAreJsonLinesToo() {
        // The headless log is JSON lines, and Qt's own messages are among them: a shutdown
        // with 2 000 connections open once wrote 1 600 plain "QIODevice::read (QTcpSocket):
        // device not open" lines, which a log shipper drops or chokes on. A logging category
        // turned on by QT_LOGGING_RULES prints through the same handler, once per request.
        writeConfig({QStringLiteral("coding")});
        QProcess gateway;
        const QString base = startGateway(gateway, QStringLiteral("qt.httpserver.debug=true"));
        QVERIFY2(!base.isEmpty(), qPrintable(QString::fromUtf8(gateway.readAllStandardError())));
        QVERIFY(modelIds(base).contains(QStringLiteral("coding")));
        gateway.terminate();
        QVERIFY(exitedCleanly(gateway));

        const QList<QByteArray> lines = gateway.readAllStandardError().split('\n');
        int fromQt = 0;
        for (const QByteArray &line : lines) {
            if (line.isEmpty())
                continue;
            QJsonParseError error{};
            const QJsonDocument doc = QJsonDocument::fromJson(line, &error);
            QVERIFY2(error.error == QJsonParseError::NoError && doc.isObject(), line.constData());
            const QJsonObject o = doc.object();
            QVERIFY2(o.contains(QStringLiteral("ts")) && o.contains(QStringLiteral("level")), line.constData());
            if (o.value(QStringLiteral("source")).toString() == QLatin1String("qt")) {
                QCOMPARE(o.value(QStringLiteral("category")).toString(), QStringLiteral("qt.httpserver"));
                QCOMPARE(o.value(QStringLiteral("level")).toString(), QStringLiteral("debug"));
                QVERIFY2(o.value(QStringLiteral("msg")).toString().startsWith(QStringLiteral("Request: ")),
                         line.constData());
                ++fromQt;
            }
        }
        QVERIFY(fromQt >= 1);
    }
};

QTEST_GUILESS_MAIN(TestSignals)
#include "test_signals.moc"
