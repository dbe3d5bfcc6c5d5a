#pragma once
// A raw TCP client for listener tests: sends exactly the bytes it is given and
// collects what comes back, on the test thread's event loop (the engine runs
// there too, so nothing here blocks).

#include <QByteArray>
#include <QHostAddress>
#include <QTcpSocket>

namespace sw::test {

class RawHttpClient final : public QObject {
    Q_OBJECT
public:
    explicit RawHttpClient(quint16 port, QObject *parent = nullptr);
    // From a chosen local address (e.g. 127.0.0.2: any 127/8 address reaches a loopback listener).
    RawHttpClient(quint16 port, const QHostAddress &from, QObject *parent = nullptr);
    bool waitConnected(int timeoutMs = 5000);
    void send(const QByteArray &bytes);
    // Until one whole response (head + Content-Length body) arrived or the server closed.
    bool waitResponse(int timeoutMs = 5000);
    bool waitClosed(int timeoutMs = 5000);
    int status() const;      // 0 when no status line arrived
    QByteArray body() const; // the first response's body
    QByteArray head() const; // the first response's head
    bool closed() const { return m_closed; }
    QByteArray received() const { return m_received; }
    QTcpSocket &socket() { return m_socket; }

private:
    QTcpSocket m_socket;
    QByteArray m_received;
    bool m_closed = false;
};

} // namespace sw::test
