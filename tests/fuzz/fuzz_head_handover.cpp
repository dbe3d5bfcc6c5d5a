// The read-head handover (ConnectionGuard::setHandsOverHeads) on arbitrary bytes in chunks of
// arbitrary size, differentially: the same input goes over loopback to the real listener (GuardedTcpServer,
// ConnectionGuard, Qt 6.4's server, HttpFront) once with handover and once with Qt reading every
// head itself. The handler must see the same requests (method, path, query, header fields in
// order, body) and the client the same status lines; the sanitizers watch the buffer rewriting.
// "$PORT" in an input becomes the listener's port (so a Host field can name it); both runs of an
// input use the same port.
#include "core/config/config.h"
#include "core/server/connection_guard.h"
#include "core/server/guarded_tcp_server.h"
#include "core/server/http_exchange.h"
#include "core/server/http_front.h"
#include "core/util/byte_budget.h"
#include "fuzz_common.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QHostAddress>
#include <QTcpSocket>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace {

struct Seen {
    QByteArray method;
    QString path;
    QString query;
    sw::http::HeaderList headers;
    QByteArray body;
    bool operator==(const Seen &) const = default;
};

QCoreApplication &app() {
    static int argc = 1;
    static char name[] = "fuzz_head_handover";
    static char *argv[] = {name, nullptr};
    static auto *a = new QCoreApplication(argc, argv); // lives for the process
    return *a;
}

struct Outcome {
    QList<Seen> seen;
    QList<QByteArray> statusLines;
};

Outcome run(const QByteArray &input, bool handover) {
    app();
    sw::server::ConnectionGuard::setHeadHandoverEnabled(handover);
    Outcome out;
    sw::config::LimitsConfig limits;
    limits.maxHeaderBytes = 4096;
    limits.maxBodyBytes = 8192;
    limits.headerTimeoutMs = 60000; // no timer fires while an input is fed
    limits.idleTimeoutMs = 60000;
    auto front =
        std::make_unique<sw::server::HttpFront>([&out](sw::server::InboundRequest &&in, sw::server::HttpExchange *ex) {
            out.seen.append({in.method, in.path, in.query.toString(QUrl::FullyEncoded), in.headers, in.body});
            ex->respond(200, {{"Content-Type", "application/json"}}, "{}");
            ex->deleteLater();
        });
    auto *tcp = new sw::server::GuardedTcpServer(
        limits, std::make_shared<sw::util::ByteBudget>(limits.maxBodyBytesInFlight), front.get(), front.get());
    // Both runs of an input listen on the same port, so "$PORT" and any port number the fuzzer
    // learned from the Host check are the same bytes in both.
    static quint16 samePort = 0;
    if (!tcp->listen(QHostAddress::LocalHost, samePort) && !tcp->listen(QHostAddress::LocalHost))
        std::abort();
    const quint16 port = samePort = tcp->serverPort();
    front->bind(tcp);
    front->setListener({QHostAddress(QHostAddress::LocalHost), port});
    front->setLimits(limits);

    QByteArray bytes = input;
    bytes.replace("$PORT", QByteArray::number(port));
    QTcpSocket client;
    client.connectToHost(QHostAddress::LocalHost, port);
    if (!client.waitForConnected(2000))
        std::abort();
    QByteArray answers;
    // Runs the loops until nothing has changed for `quietMs` (at most 2 s). The quiet time is
    // judged only after a pass that changed nothing: a thread stalled longer than `quietMs`
    // (a loaded machine, ASan) first handles what arrived meanwhile.
    const auto pump = [&](int quietMs) {
        QElapsedTimer total;
        total.start();
        QElapsedTimer quiet;
        quiet.start();
        qsizetype lastAnswers = -1;
        qsizetype lastSeen = -1;
        for (;;) {
            QCoreApplication::processEvents(QEventLoop::AllEvents, 2);
            answers += client.readAll();
            if (answers.size() != lastAnswers || out.seen.size() != lastSeen) {
                lastAnswers = answers.size();
                lastSeen = out.seen.size();
                quiet.restart();
            } else if (quiet.elapsed() >= quietMs || total.elapsed() >= 2000) {
                break;
            }
        }
    };
    // Chunks of 1 to 2017 bytes, chosen by the first byte: a whole head in one read is the case
    // the handover shortens, a head in pieces the case it leaves to Qt.
    if (!bytes.isEmpty()) {
        const qsizetype step = 1 + qsizetype(static_cast<unsigned char>(bytes.at(0)) % 64) * 32;
        const QByteArrayView rest = QByteArrayView(bytes).sliced(1);
        for (qsizetype at = 0; at < rest.size() && client.state() == QAbstractSocket::ConnectedState; at += step) {
            const QByteArrayView chunk = rest.sliced(at, std::min<qsizetype>(step, rest.size() - at));
            client.write(chunk.data(), chunk.size());
            client.flush();
            pump(1);
        }
    }
    pump(50);
    answers += client.readAll();
    for (qsizetype at = answers.indexOf("HTTP/1.1 "); at >= 0; at = answers.indexOf("HTTP/1.1 ", at + 1))
        out.statusLines.append(answers.mid(at, 12));
    client.abort();
    front.reset();
    QCoreApplication::processEvents();
    return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const QByteArray input = sw::fuzz::bytes(data, size);
    const Outcome with = run(input, true);
    const Outcome without = run(input, false);
    sw::server::ConnectionGuard::setHeadHandoverEnabled(true);
    if (qEnvironmentVariableIsSet("FUZZ_HANDOVER_VERBOSE"))
        std::fprintf(stderr, "%lld/%lld requests, %lld/%lld answers, %llu heads handed over so far\n",
                     qint64(with.seen.size()), qint64(without.seen.size()), qint64(with.statusLines.size()),
                     qint64(without.statusLines.size()), sw::server::ConnectionGuard::headsHandedOver());
    if (with.seen != without.seen || with.statusLines != without.statusLines) {
        std::fprintf(stderr, "handover changed the outcome: %lld vs %lld requests, %lld vs %lld answers\n",
                     qint64(with.seen.size()), qint64(without.seen.size()), qint64(with.statusLines.size()),
                     qint64(without.statusLines.size()));
        const auto dump = [](const char *label, const Outcome &o) {
            for (const QByteArray &line : o.statusLines)
                std::fprintf(stderr, "  %s answered: %s\n", label, line.constData());
            for (const Seen &s : o.seen) {
                std::fprintf(stderr, "  %s: %s %s ?%s body=[%s]\n", label, s.method.constData(), qPrintable(s.path),
                             qPrintable(s.query), s.body.toPercentEncoding().constData());
                for (const auto &[name, value] : s.headers)
                    std::fprintf(stderr, "    [%s] = [%s]\n", name.toPercentEncoding().constData(),
                                 value.toPercentEncoding().constData());
            }
        };
        dump("with", with);
        dump("without", without);
        std::abort();
    }
    return 0;
}
