#pragma once
// A private redis-server for one test: on a free loopback port, no persistence,
// never the system service. Stopped (and restartable on the same port) at will.

#include <QProcess>
#include <QTemporaryDir>

namespace sw::test {

class RedisServer {
public:
    RedisServer();
    ~RedisServer();
    // Starts redis-server and waits until it answers PING; false with a reason in error().
    bool start();
    void kill(); // SIGKILL, as a crash would
    quint16 port() const { return m_port; }
    qint64 pid() const { return m_process.processId(); } // to stop and continue it (SIGSTOP, SIGCONT)
    QString url() const { return QStringLiteral("redis://127.0.0.1:%1/0").arg(m_port); }
    QString error() const { return m_error; }
    // One command through redis-cli semantics, answered synchronously (test side only).
    QByteArray command(const QList<QByteArray> &argv);

private:
    QProcess m_process;
    QTemporaryDir m_dir;
    quint16 m_port = 0;
    QString m_error;
};

} // namespace sw::test
