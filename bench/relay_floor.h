#pragma once
// Two byte relays for bench_gateway --floors: what a gateway pays for the extra hop before it does
// any work of its own. Each accepted client connection gets one upstream connection to the target,
// and bytes are copied both ways as they arrive: no HTTP parsing, no routing, no JSON.
//
// - QtRelay: QTcpServer and QTcpSocket on a thread of its own with the engine's event dispatcher
//   (Qt's UNIX one, as EngineHost gives the engine thread). The floor of any gateway on Qt sockets.
// - EpollRelay: plain sockets and epoll on a std::thread. The floor of the kernel's loopback TCP
//   and one thread wake-up per hop; what is left when no framework is in the way.

#include <QHostAddress>
#include <QObject>
#include <QThread>
#include <QUrl>

#include <atomic>
#include <thread>

namespace bench {

class QtRelay {
public:
    // Listens on 127.0.0.1 (any port) and relays to target's host and port.
    explicit QtRelay(const QUrl &target);
    ~QtRelay();
    QUrl baseUrl() const;

private:
    QThread m_thread;
    QObject *m_anchor = nullptr; // lives on m_thread; owns the server and the sockets
    quint16 m_port = 0;
};

class EpollRelay {
public:
    explicit EpollRelay(const QUrl &target);
    ~EpollRelay();
    QUrl baseUrl() const;

private:
    void loop();
    int m_listen = -1;
    int m_epoll = -1;
    int m_stop = -1; // eventfd: written once to end the loop
    quint16 m_port = 0;
    quint16 m_targetPort = 0;
    std::thread m_thread;
};

} // namespace bench
