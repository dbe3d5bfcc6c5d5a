#include "redis_server.h"

#include <QStandardPaths>
#include <QTcpServer>
#include <QTcpSocket>
#include <QThread>

namespace sw::test {

namespace {
quint16 freePort() {
    QTcpServer probe;
    probe.listen(QHostAddress::LocalHost, 0);
    return probe.serverPort();
}
} // namespace

RedisServer::RedisServer() : m_port(freePort()) {}

RedisServer::~RedisServer() {
    kill();
}

bool RedisServer::start() {
    const QString binary = QStandardPaths::findExecutable(QStringLiteral("redis-server"));
    if (binary.isEmpty()) {
        m_error = QStringLiteral("redis-server is not installed (scripts/deps.sh installs it)");
        return false;
    }
    m_process.setProgram(binary);
    m_process.setArguments({QStringLiteral("--port"), QString::number(m_port), QStringLiteral("--bind"),
                            QStringLiteral("127.0.0.1"), QStringLiteral("--save"), QString(),
                            QStringLiteral("--appendonly"), QStringLiteral("no"), QStringLiteral("--dir"), m_dir.path(),
                            QStringLiteral("--daemonize"), QStringLiteral("no")});
    m_process.setProcessChannelMode(QProcess::MergedChannels);
    m_process.start();
    if (!m_process.waitForStarted(5000)) {
        m_error = m_process.errorString();
        return false;
    }
    for (int i = 0; i < 100; ++i) {
        if (command({"PING"}).startsWith("+PONG"))
            return true;
        QThread::msleep(50);
    }
    m_error = QStringLiteral("redis-server did not answer: %1").arg(QString::fromUtf8(m_process.readAll()));
    return false;
}

void RedisServer::kill() {
    if (m_process.state() != QProcess::NotRunning) {
        m_process.kill();
        m_process.waitForFinished(5000);
    }
}

QByteArray RedisServer::command(const QList<QByteArray> &argv) {
    QTcpSocket s;
    s.connectToHost(QHostAddress::LocalHost, m_port);
    if (!s.waitForConnected(500))
        return {};
    QByteArray out = "*" + QByteArray::number(argv.size()) + "\r\n";
    for (const QByteArray &a : argv)
        out += "$" + QByteArray::number(a.size()) + "\r\n" + a + "\r\n";
    s.write(out);
    s.waitForBytesWritten(1000);
    QByteArray reply;
    while (s.waitForReadyRead(500)) {
        reply += s.readAll();
        if (reply.endsWith("\r\n"))
            break;
    }
    return reply;
}

} // namespace sw::test
