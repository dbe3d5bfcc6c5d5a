// GUI responsiveness under load (SPEC 11: main-thread stall p99 <= 16 ms while
// the engine serves 2000 req/s). The real admin window (every view, offscreen
// or on a display) is fed by the engine-thread SnapshotPublisher while raw
// blocking-socket clients on their own threads drive non-streaming chat
// requests at the demo engine on loopback, against its simulated providers.
// Halfway through, one simulated provider starts answering 503 so attempts,
// marks, failures and log lines flow as they do in an outage.
//
// Stall = how late a 4 ms PreciseTimer on the GUI thread fires (lateness of
// each tick beyond its interval). Also reported: time spent applying each
// snapshot on the GUI thread, and the request rate actually achieved.
//
//   bench_gui_stall [--rate 2000] [--seconds 10] [--connections 16] [--view dashboard|attempts|marks|failures|log]

#include "core/config/config_loader.h"
#include "core/demo/fake_upstream.h"
#include "core/engine_host.h"
#include "core/snapshot/snapshot_publisher.h"
#include "ui/main_window.h"
#include "ui/shared/engine_commands.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QTimer>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Percentiles {
    double p50 = 0, p99 = 0, max = 0;
    size_t n = 0;
};

Percentiles percentiles(std::vector<double> v) {
    Percentiles p;
    p.n = v.size();
    if (v.empty())
        return p;
    std::sort(v.begin(), v.end());
    auto at = [&v](double q) { return v[std::min(v.size() - 1, size_t(q * double(v.size())))]; };
    p.p50 = at(0.50);
    p.p99 = at(0.99);
    p.max = v.back();
    return p;
}

// One keep-alive connection on a blocking socket, sending at a fixed pace.
void clientLoop(quint16 port, double ratePerConnection, Clock::time_point until, std::atomic<long> &ok,
                std::atomic<long> &failed, std::atomic<bool> &stop) {
    const std::string body = R"({"model":"demo","messages":[{"role":"user","content":"ping"}]})";
    const std::string request = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                "Content-Type: application/json\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body;
    int fd = -1;
    auto connectSocket = [&]() {
        if (fd >= 0)
            ::close(fd);
        fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return ::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0;
    };
    if (!connectSocket())
        return;
    const auto interval =
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / ratePerConnection));
    auto next = Clock::now();
    std::string buffer;
    char chunk[16384];
    while (!stop && Clock::now() < until) {
        std::this_thread::sleep_until(next);
        next += interval;
        if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != ssize_t(request.size())) {
            ++failed;
            connectSocket();
            continue;
        }
        buffer.clear();
        size_t headerEnd = std::string::npos;
        size_t need = 0;
        bool good = true;
        for (;;) {
            const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
            if (n <= 0) {
                good = false;
                break;
            }
            buffer.append(chunk, size_t(n));
            if (headerEnd == std::string::npos) {
                headerEnd = buffer.find("\r\n\r\n");
                if (headerEnd == std::string::npos)
                    continue;
                std::string head = buffer.substr(0, headerEnd);
                std::transform(head.begin(), head.end(), head.begin(),
                               [](unsigned char c) { return char(std::tolower(c)); });
                const size_t cl = head.find("content-length:");
                need = headerEnd + 4 + (cl == std::string::npos ? 0 : std::stoul(head.substr(cl + 15)));
                good = head.rfind("http/1.1 200", 0) == 0;
            }
            if (buffer.size() >= need)
                break;
        }
        if (good)
            ++ok;
        else {
            ++failed;
            if (buffer.empty())
                connectSocket();
        }
    }
    ::close(fd);
}

} // namespace

int main(int argc, char **argv) {
    if (!qEnvironmentVariableIsSet("DISPLAY") && !qEnvironmentVariableIsSet("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QCommandLineParser parser;
    parser.addHelpOption();
    parser.addOption(
        {QStringLiteral("rate"), QStringLiteral("requests per second"), QStringLiteral("n"), QStringLiteral("2000")});
    parser.addOption(
        {QStringLiteral("seconds"), QStringLiteral("duration"), QStringLiteral("s"), QStringLiteral("10")});
    parser.addOption({QStringLiteral("connections"), QStringLiteral("client connections"), QStringLiteral("n"),
                      QStringLiteral("16")});
    parser.addOption({QStringLiteral("view"), QStringLiteral("view shown during the run"), QStringLiteral("name"),
                      QStringLiteral("dashboard")});
    parser.process(app);
    const double rate = parser.value(QStringLiteral("rate")).toDouble();
    const int seconds = parser.value(QStringLiteral("seconds")).toInt();
    const int connections = std::max(1, parser.value(QStringLiteral("connections")).toInt());
    const QStringList views{QStringLiteral("dashboard"), QStringLiteral("attempts"), QStringLiteral("marks"),
                            QStringLiteral("failures"),  QStringLiteral("usage"),    QStringLiteral("configuration"),
                            QStringLiteral("log")};
    const int view = std::max(0, int(views.indexOf(parser.value(QStringLiteral("view")))));

    sw::EngineHost host;
    sw::Engine::Options options;
    options.config = sw::config::demoConfig();
    options.demo = true;
    QString error;
    if (!host.start(std::move(options), QStringLiteral("127.0.0.1:0"), &error)) {
        std::fprintf(stderr, "cannot start engine: %s\n", qPrintable(error));
        return 1;
    }
    const quint16 port = quint16(QUrl(host.baseUrl()).port());

    sw::ui::MainWindow::Options windowOptions;
    windowOptions.demo = true;
    windowOptions.tray = false;
    sw::ui::MainWindow window(&host, windowOptions);
    window.showView(sw::ui::MainWindow::View(view));
    window.show();

    std::vector<double> applyMs;
    int snapshots = 0;
    sw::snapshot::SnapshotPublisher *publisher = nullptr;
    host.runBlocking([&publisher](sw::Engine &e) { publisher = new sw::snapshot::SnapshotPublisher(e); });
    QObject::connect(publisher, &sw::snapshot::SnapshotPublisher::snapshotReady, &window,
                     [&](const sw::snapshot::EngineSnapshot &s) {
                         QElapsedTimer t;
                         t.start();
                         window.applySnapshot(s);
                         applyMs.push_back(double(t.nsecsElapsed()) / 1e6);
                         ++snapshots;
                     });

    // Stall probe: a 4 ms precise timer; lateness beyond the interval is the stall.
    std::vector<double> lateness;
    QElapsedTimer probeClock;
    qint64 lastTickNs = -1;
    QTimer probe;
    probe.setTimerType(Qt::PreciseTimer);
    probe.setInterval(4);
    bool measuring = false;
    QObject::connect(&probe, &QTimer::timeout, &app, [&]() {
        const qint64 now = probeClock.nsecsElapsed();
        if (measuring && lastTickNs >= 0)
            lateness.push_back(std::max(0.0, double(now - lastTickNs) / 1e6 - 4.0));
        lastTickNs = now;
    });
    probeClock.start();
    probe.start();

    std::atomic<long> ok{0}, failed{0};
    std::atomic<bool> stop{false};
    std::vector<std::thread> clients;
    Clock::time_point until;
    QElapsedTimer wall;
    // Let the window settle, then start the load and the measurement.
    QTimer::singleShot(500, &app, [&]() {
        until = Clock::now() + std::chrono::seconds(seconds);
        for (int i = 0; i < connections; ++i)
            clients.emplace_back(clientLoop, port, rate / connections, until, std::ref(ok), std::ref(failed),
                                 std::ref(stop));
        measuring = true;
        wall.start();
    });
    // Halfway: an outage, as a user would cause it from the demo banner.
    QTimer::singleShot(500 + seconds * 500, &app, [&]() {
        sw::demo::Fault f;
        f.kind = sw::demo::Fault::Status;
        f.status = 503;
        window.commands()->setDemoFault(QStringLiteral("sim-anthropic"), f);
    });
    QTimer::singleShot(500 + seconds * 1000 + 200, &app, [&]() {
        measuring = false;
        QCoreApplication::quit();
    });
    app.exec();
    stop = true;
    for (auto &t : clients)
        t.join();
    const double elapsed = double(wall.elapsed()) / 1000.0;

    const auto stall = percentiles(lateness);
    const auto apply = percentiles(applyMs);
    std::printf("bench_gui_stall: view=%s target=%.0f req/s connections=%d seconds=%d platform=%s\n",
                qPrintable(views.at(view)), rate, connections, seconds, qPrintable(QGuiApplication::platformName()));
    std::printf("  requests: ok=%ld failed=%ld achieved=%.0f req/s\n", ok.load(), failed.load(),
                double(ok.load() + failed.load()) / std::max(0.001, elapsed));
    std::printf("  GUI thread stall (4 ms timer lateness): p50=%.2f ms p99=%.2f ms max=%.2f ms (n=%zu)  goal p99 <= 16 "
                "ms: %s\n",
                stall.p50, stall.p99, stall.max, stall.n, stall.p99 <= 16.0 ? "met" : "NOT met");
    std::printf("  snapshot apply on GUI thread: p50=%.2f ms p99=%.2f ms max=%.2f ms (snapshots=%d, %.1f/s)\n",
                apply.p50, apply.p99, apply.max, snapshots, double(snapshots) / std::max(0.001, elapsed));
    host.stop();
    return 0;
}
