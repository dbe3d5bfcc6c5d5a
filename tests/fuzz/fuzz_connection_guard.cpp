// The listener's framing (ConnectionGuard: request line, head, Content-Length and
// chunked bodies, pipelining) on arbitrary bytes in arbitrary chunks, over a real
// loopback connection. A stand-in for Qt's HTTP parser reads what the guard lets
// through, as Qt's server does. Checks beyond the sanitizers: whatever the client
// is answered is one 4xx with the guard's JSON body, never a second status line.
#include "core/server/connection_guard.h"
#include "fuzz_common.h"

#include <QCoreApplication>
#include <QHostAddress>
#include <QTcpServer>
#include <QTcpSocket>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace {

struct Loopback {
    QCoreApplication *app = nullptr;
    QTcpServer server;
    Loopback() {
        static int argc = 1;
        static char name[] = "fuzz_connection_guard";
        static char *argv[] = {name, nullptr};
        app = new QCoreApplication(argc, argv);
        if (!server.listen(QHostAddress::LocalHost)) {
            std::fprintf(stderr, "cannot listen on loopback\n");
            std::abort();
        }
    }
};

Loopback &loopback() {
    static Loopback *l = new Loopback; // lives for the process: Qt objects outlive static destruction badly
    return *l;
}

// Reads everything it is given, like Qt's parser after the guard's slot has run.
class StandInParser final : public QObject {
public:
    explicit StandInParser(QTcpSocket *socket) : m_socket(socket) {
        connect(socket, &QIODevice::readyRead, this, [this]() { m_read += m_socket->readAll().size(); });
    }
    qint64 read() const { return m_read; }

private:
    QTcpSocket *m_socket;
    qint64 m_read = 0;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Loopback &l = loopback();
    QTcpSocket client;
    client.connectToHost(QHostAddress::LocalHost, l.server.serverPort());
    if (!client.waitForConnected(2000) || !l.server.waitForNewConnection(2000))
        std::abort();
    std::unique_ptr<QTcpSocket> accepted(l.server.nextPendingConnection());

    sw::config::LimitsConfig limits;
    limits.maxHeaderBytes = 2048; // small, so 431 and 413 are in reach of a fuzzed input
    limits.maxBodyBytes = 4096;
    limits.headerTimeoutMs = 60000; // no timer fires while an input is fed
    limits.idleTimeoutMs = 60000;
    StandInParser *parser = nullptr;
    QObject httpServer;
    // The guard first, then the parser: the order Qt's server connects them in.
    auto *guard = new sw::server::ConnectionGuard(accepted.get(), limits, &httpServer, []() {});
    parser = new StandInParser(accepted.get());
    parser->setParent(&httpServer);

    qint64 written = 0;
    sw::fuzz::feedInChunks(sw::fuzz::bytes(data, size), [&](QByteArrayView chunk) {
        if (chunk.isEmpty() || client.state() != QAbstractSocket::ConnectedState)
            return;
        client.write(chunk.data(), chunk.size());
        client.flush();
        written += chunk.size();
        // Until the server side has taken this chunk (through the parser, or the guard's drain).
        for (int spins = 0; spins < 50 && accepted->state() == QAbstractSocket::ConnectedState; ++spins) {
            if (parser->read() >= written || guard->rejected())
                break;
            accepted->waitForReadyRead(20);
        }
    });

    if (guard->rejected()) {
        QByteArray answer;
        for (int spins = 0; spins < 50 && !answer.contains("\r\n\r\n"); ++spins) {
            client.waitForReadyRead(20);
            answer += client.readAll();
        }
        const qsizetype headEnd = answer.indexOf("\r\n\r\n");
        const bool oneRefusal = answer.startsWith("HTTP/1.1 4") && headEnd > 0 && answer.indexOf("HTTP/1.1 ", 1) < 0 &&
                                answer.contains("\"error\"");
        if (!oneRefusal) {
            std::fprintf(stderr, "refusal is not one 4xx answer: %s\n", answer.left(300).constData());
            std::abort();
        }
    }
    accepted.reset(); // deletes the guard with its socket
    client.abort();
    return 0;
}
