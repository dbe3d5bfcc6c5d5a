#pragma once
// A raw-socket upstream for tests that need bytes no well-behaved server sends:
// endless lines, endless heads, floods that ignore whether anyone reads. Each
// complete request (head plus Content-Length body) goes to a script that
// answers on the socket as it likes.
//
// The flood writes through a small window (it tops up only as the kernel takes
// bytes), so the flooder itself never holds more than kFloodWindow unsent:
// memory measured in the test process is the client side's.

#include <QByteArray>
#include <QObject>
#include <QString>
#include <functional>

class QTcpServer;
class QTcpSocket;

namespace sw::test {

class HostileUpstream final : public QObject {
    Q_OBJECT
public:
    static constexpr qint64 kFloodWindow = 256 * 1024;

    // The next piece to send for index 0, 1, 2, ...; an empty piece ends the flood.
    using Pieces = std::function<QByteArray(qint64 index)>;
    using Script = std::function<void(QTcpSocket *socket, const QByteArray &request)>;

    explicit HostileUpstream(QObject *parent = nullptr);
    ~HostileUpstream() override;

    bool listen();
    quint16 port() const;
    QString baseUrl() const; // http://127.0.0.1:<port>
    void setScript(Script script) { m_script = std::move(script); }
    int acceptedConnections() const { return m_accepted; }

    // Writes `head`, then pieces until one is empty or the peer goes; `onEnd` runs when the last piece is written.
    void flood(QTcpSocket *socket, const QByteArray &head, Pieces pieces, std::function<void()> onEnd = {});
    // Bytes of the current flood the kernel has taken (written and not waiting in our buffer).
    qint64 floodedBytes() const { return m_flooded; }
    bool floodRunning() const { return m_floodRunning; }

    // Common floods.
    static Pieces repeat(const QByteArray &piece, qint64 count); // `count` copies of `piece`

private:
    QTcpServer *m_server;
    Script m_script;
    int m_accepted = 0;
    qint64 m_flooded = 0;
    bool m_floodRunning = false;
};

// The resident set size of this process, from /proc/self/status, in bytes.
qint64 residentBytes();

} // namespace sw::test
