#include "relay_floor.h"

#include "core/engine_host.h"

#include <QTcpServer>
#include <QTcpSocket>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <unordered_map>
#include <vector>

namespace bench {

// ---- QtRelay ---------------------------------------------------------------------------------

namespace {

// Copies what `from` has to `to`; bytes wait in `from` until `to` is connected.
void forward(QTcpSocket *from, QTcpSocket *to) {
    if (to->state() != QAbstractSocket::ConnectedState || from->bytesAvailable() == 0)
        return;
    to->write(from->readAll());
    to->flush(); // out in this loop turn, as the gateway does
}

void pipe(QTcpSocket *from, QTcpSocket *to) {
    QObject::connect(from, &QTcpSocket::readyRead, to, [from, to] { forward(from, to); });
    QObject::connect(from, &QTcpSocket::disconnected, to, [to] { to->disconnectFromHost(); });
}

} // namespace

QtRelay::QtRelay(const QUrl &target) {
    m_thread.setObjectName(QStringLiteral("qt-relay"));
    if (QAbstractEventDispatcher *dispatcher = sw::EngineHost::createEventDispatcher())
        m_thread.setEventDispatcher(dispatcher);
    m_thread.start();
    m_anchor = new QObject;
    m_anchor->moveToThread(&m_thread);
    const QString host = target.host();
    const quint16 targetPort = quint16(target.port());
    QMetaObject::invokeMethod(
        m_anchor,
        [this, host, targetPort] {
            auto *server = new QTcpServer(m_anchor);
            server->listen(QHostAddress::LocalHost, 0);
            m_port = server->serverPort();
            QObject::connect(server, &QTcpServer::newConnection, server, [server, host, targetPort] {
                while (QTcpSocket *client = server->nextPendingConnection()) {
                    client->setSocketOption(QAbstractSocket::LowDelayOption, 1);
                    auto *upstream = new QTcpSocket(client);
                    QObject::connect(upstream, &QTcpSocket::connected, upstream, [client, upstream] {
                        upstream->setSocketOption(QAbstractSocket::LowDelayOption, 1);
                        forward(client, upstream); // what the client sent while it connected
                    });
                    upstream->connectToHost(host, targetPort);
                    pipe(client, upstream);
                    pipe(upstream, client);
                    QObject::connect(client, &QTcpSocket::disconnected, client, &QObject::deleteLater);
                }
            });
        },
        Qt::BlockingQueuedConnection);
}

QtRelay::~QtRelay() {
    QMetaObject::invokeMethod(
        m_anchor, [this] { delete m_anchor; }, Qt::BlockingQueuedConnection);
    m_thread.quit();
    m_thread.wait();
}

QUrl QtRelay::baseUrl() const {
    return QUrl(QStringLiteral("http://127.0.0.1:%1").arg(m_port));
}

// ---- EpollRelay ------------------------------------------------------------------------------

namespace {

void noDelay(int fd) {
    const int on = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

sockaddr_in loopback(quint16 port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

// Writes all of it; the relay's sockets are blocking, so a full send buffer waits here.
bool writeAll(int fd, const char *data, ssize_t size) {
    while (size > 0) {
        const ssize_t n = ::send(fd, data, size_t(size), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        data += n;
        size -= n;
    }
    return true;
}

} // namespace

EpollRelay::EpollRelay(const QUrl &target) : m_targetPort(quint16(target.port())) {
    m_listen = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int on = 1;
    ::setsockopt(m_listen, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    sockaddr_in a = loopback(0);
    if (::bind(m_listen, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 || ::listen(m_listen, 1024) != 0)
        qFatal("epoll relay could not listen");
    socklen_t len = sizeof a;
    ::getsockname(m_listen, reinterpret_cast<sockaddr *>(&a), &len);
    m_port = ntohs(a.sin_port);
    m_epoll = ::epoll_create1(EPOLL_CLOEXEC);
    m_stop = ::eventfd(0, EFD_CLOEXEC);
    for (int fd : {m_listen, m_stop}) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = fd;
        ::epoll_ctl(m_epoll, EPOLL_CTL_ADD, fd, &ev);
    }
    m_thread = std::thread([this] { loop(); });
}

EpollRelay::~EpollRelay() {
    const quint64 one = 1;
    if (::write(m_stop, &one, sizeof one) != sizeof one)
        qWarning("epoll relay: could not signal the stop");
    m_thread.join();
    ::close(m_stop);
    ::close(m_epoll);
    ::close(m_listen);
}

QUrl EpollRelay::baseUrl() const {
    return QUrl(QStringLiteral("http://127.0.0.1:%1").arg(m_port));
}

void EpollRelay::loop() {
    pthread_setname_np(pthread_self(), "epoll-relay");
    std::unordered_map<int, int> peer; // fd -> the fd its bytes go to
    std::vector<char> buffer(64 * 1024);
    auto closePair = [&](int fd) {
        const auto it = peer.find(fd);
        if (it == peer.end())
            return;
        const int other = it->second;
        peer.erase(fd);
        peer.erase(other);
        ::close(fd); // closing removes it from the epoll set
        ::close(other);
    };
    epoll_event events[64];
    for (;;) {
        const int n = ::epoll_wait(m_epoll, events, 64, -1);
        if (n < 0 && errno == EINTR)
            continue;
        for (int i = 0; i < n; ++i) {
            const int fd = events[i].data.fd;
            if (fd == m_stop) {
                for (const auto &[a, b] : peer)
                    ::close(a);
                return;
            }
            if (fd == m_listen) {
                const int client = ::accept4(m_listen, nullptr, nullptr, SOCK_CLOEXEC);
                if (client < 0)
                    continue;
                const int upstream = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                const sockaddr_in a = loopback(m_targetPort);
                if (::connect(upstream, reinterpret_cast<const sockaddr *>(&a), sizeof a) != 0) {
                    ::close(upstream);
                    ::close(client);
                    continue;
                }
                noDelay(client);
                noDelay(upstream);
                peer[client] = upstream;
                peer[upstream] = client;
                for (int s : {client, upstream}) {
                    epoll_event ev{};
                    ev.events = EPOLLIN;
                    ev.data.fd = s;
                    ::epoll_ctl(m_epoll, EPOLL_CTL_ADD, s, &ev);
                }
                continue;
            }
            const auto it = peer.find(fd);
            if (it == peer.end())
                continue;
            const ssize_t got = ::recv(fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
            if (got < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (got <= 0 || !writeAll(it->second, buffer.data(), got))
                closePair(fd);
        }
    }
}

} // namespace bench
