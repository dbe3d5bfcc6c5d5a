// A burst of clients connecting at once (an agent fanning out, a load test) is
// taken by the kernel's accept queue while the engine is busy: every client's
// handshake completes and every one is answered, none waits for a SYN
// retransmit because the listener's backlog was full.
#include "gateway_fixture.h"

#include <QElapsedTimer>
#include <QTest>

#include <arpa/inet.h>
#include <cerrno>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

using namespace sw;
using namespace sw::test;

namespace {
// A non-blocking loopback connect; the fd, or -1.
int connectNonBlocking(quint16 port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// How many of `fds` complete their handshake within `ms`, without running Qt's event loop.
int handshakesDone(const std::vector<int> &fds, int ms) {
    std::vector<pollfd> pending;
    for (int fd : fds)
        pending.push_back({fd, POLLOUT, 0});
    int done = 0;
    QElapsedTimer clock;
    clock.start();
    while (!pending.empty() && clock.elapsed() < ms) {
        if (::poll(pending.data(), nfds_t(pending.size()), int(ms - clock.elapsed())) <= 0)
            break;
        std::vector<pollfd> still;
        for (const pollfd &p : pending) {
            if (p.revents == 0) {
                still.push_back({p.fd, POLLOUT, 0});
                continue;
            }
            int error = 0;
            socklen_t len = sizeof error;
            if (::getsockopt(p.fd, SOL_SOCKET, SO_ERROR, &error, &len) == 0 && error == 0)
                ++done;
        }
        pending = std::move(still);
    }
    return done;
}
} // namespace

class TestListenBacklog : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void aBurstOfConnectionsIsQueuedAndAnswered() {
        GatewayFixture gw;
        gw.start();
        const quint16 port = gw.engine().port();
        // More than Qt's default backlog of 50, fewer than limits.maxConnections. Qt's event loop
        // does not run while they connect, so the engine accepts none of them yet: only the
        // kernel's queue holds them. A full queue drops a handshake, whose client then retries
        // after 1 s, 3 s, 7 s...: within the wait below none of those would complete.
        constexpr int kClients = 300;
        std::vector<int> fds;
        for (int i = 0; i < kClients; ++i) {
            const int fd = connectNonBlocking(port);
            QVERIFY2(fd >= 0, "socket or connect failed");
            fds.push_back(fd);
        }
        QCOMPARE(handshakesDone(fds, 3000), kClients);

        const QByteArray request = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:" + QByteArray::number(port) + "\r\n\r\n";
        for (int fd : fds)
            QCOMPARE(::send(fd, request.constData(), size_t(request.size()), MSG_NOSIGNAL), ssize_t(request.size()));
        std::vector<QByteArray> answers(fds.size());
        const auto allAnswered = [&] {
            bool all = true;
            for (size_t i = 0; i < fds.size(); ++i) {
                char buf[4096];
                ssize_t n;
                while ((n = ::recv(fds[i], buf, sizeof buf, MSG_DONTWAIT)) > 0)
                    answers[i].append(buf, n);
                all = all && answers[i].contains("\r\n\r\n");
            }
            return all;
        };
        QVERIFY(QTest::qWaitFor(allAnswered, 30000));
        for (const QByteArray &a : answers)
            QVERIFY2(a.startsWith("HTTP/1.1 200"), a.left(64).constData());
        for (int fd : fds)
            ::close(fd);
    }
};

QTEST_GUILESS_MAIN(TestListenBacklog)
#include "test_listen_backlog.moc"
