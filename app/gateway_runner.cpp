#include "app/gateway_runner.h"

#include "core/config/config_loader.h"
#include "core/engine_host.h"
#include "core/telemetry/stderr_sink.h"
#include "core/telemetry/telemetry.h"
#include "core/telemetry/usage_database.h"

#include <QCoreApplication>
#include <QJsonObject>
#include <QSocketNotifier>
#include <QTextStream>

#ifdef SWITCHMAN_HAVE_GUI
#include "core/snapshot/snapshot_publisher.h"
#include "ui/main_window.h"
#include <QApplication>
#endif

#include <algorithm>
#include <csignal>
#include <memory>
#include <sys/resource.h>
#include <unistd.h>
#include <utility>

#include <cstdio>

namespace sw::app {

namespace {

// Signals reach the main thread through a self-pipe (only write() in the handler): one byte, the
// signal's number.
int g_signalPipe[2] = {-1, -1};

void onSignal(int signal) {
    const char byte = char(signal);
    [[maybe_unused]] const auto n = ::write(g_signalPipe[1], &byte, 1);
}

// SIGINT/SIGTERM: the first ends the event loop, and runGateway() then drains the engine
// (EngineHost::drain: requests in flight get limits.shutdownGraceMs); one more during the drain
// ends it at once. SIGHUP re-reads the configuration file, as POST /admin/reload does.
std::unique_ptr<QSocketNotifier> handleSignals(EngineHost &host) {
    if (::pipe(g_signalPipe) != 0)
        return {};
    auto notifier = std::make_unique<QSocketNotifier>(g_signalPipe[0], QSocketNotifier::Read);
    QObject::connect(notifier.get(), &QSocketNotifier::activated, notifier.get(), [&host]() {
        char byte = 0;
        if (::read(g_signalPipe[0], &byte, 1) != 1)
            return;
        if (byte == SIGHUP)
            return host.post([](Engine &engine) {
                // reload() logs the outcome: "configuration applied", or why it was refused.
                engine.telemetry()->log(QStringLiteral("info"), QStringLiteral("SIGHUP: reloading the configuration"));
                engine.reload(nullptr);
            });
        static bool stopping = false;
        if (!std::exchange(stopping, true))
            return QCoreApplication::quit();
        host.requestShutdown(); // a second one: the grace ends now
    });
    struct sigaction sa {};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGHUP, &sa, nullptr);
    return notifier;
}

// Each stream holds a client's descriptor and an upstream's: the common soft limit of 1024 is half
// of what limits.maxConnections allows by default, and a gateway out of descriptors could open no
// upstream connection, which read as the provider being down (probe V2 F4). The soft limit goes
// up to the hard one, as a server's runtime does; returns the soft limit now.
rlim_t raiseOpenFileLimit() {
    struct rlimit limit {};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0)
        return RLIM_INFINITY;
    if (limit.rlim_cur < limit.rlim_max) {
        struct rlimit raised = limit;
        raised.rlim_cur = limit.rlim_max;
        if (::setrlimit(RLIMIT_NOFILE, &raised) == 0)
            return raised.rlim_cur;
    }
    return limit.rlim_cur;
}

} // namespace

int runGateway(const CliOptions &options, const config::Config &config) {
    Engine::Options engineOptions;
    engineOptions.config = config;
    // The file it started from, which /admin/reload and SIGHUP re-read: --config's, else the
    // default one (main() read it, or wrote it on a first start).
    engineOptions.configPath = options.demo                   ? QString()
                               : options.configPath.isEmpty() ? config::defaultConfigPath()
                                                              : options.configPath;
    engineOptions.demo = options.demo;
    engineOptions.listenGiven = options.listen;
    // Usage survives a restart in $XDG_DATA_HOME/switchman/usage.sqlite; --demo's simulated spend stays
    // in memory so it never mixes with real usage.
    if (!options.demo)
        engineOptions.usageLedgerPath = telemetry::UsageDatabase::defaultPath();
#ifdef SWITCHMAN_HAVE_GUI
    const bool gui = qobject_cast<QApplication *>(QCoreApplication::instance()) != nullptr;
#else
    const bool gui = false;
#endif
    engineOptions.jsonLogToStderr = !gui;
    // Qt's own warnings join the JSON lines: a shutdown with 2 000 connections open once wrote
    // 1 600 plain "QIODevice::read (QTcpSocket): device not open" lines among them.
    if (!gui)
        telemetry::logQtMessagesAsJsonLines();

    const rlim_t openFiles = raiseOpenFileLimit();
    EngineHost host;
    QString error;
    if (!host.start(std::move(engineOptions), QString(), &error)) {
        telemetry::StderrSink::instance().flush(telemetry::StderrSink::kFlushOnExitMs); // what led to it first
        QTextStream(stderr) << "switchman: " << error << '\n';
        return 1;
    }
    // The handlers before the banner: a SIGTERM sent once the banner is read (a test, a service
    // manager's stop right after the start) found the default action still in place when the
    // main thread had not got this far, and ended the process without its drain.
    const auto signalNotifier = handleSignals(host);
    printListening(host.baseUrl(), config);
    if (const rlim_t needed = 2 * rlim_t(std::max(config.limits.maxConnections, 0)) + 64; openFiles < needed)
        host.post([openFiles, needed](Engine &engine) {
            engine.telemetry()->log(
                QStringLiteral("warn"),
                QStringLiteral("the open-files limit is under what limits.maxConnections needs: each stream "
                               "holds two descriptors; raise it (ulimit -n, systemd's LimitNOFILE) or lower "
                               "limits.maxConnections"),
                QJsonObject{{QStringLiteral("limit"), double(openFiles)}, {QStringLiteral("needed"), double(needed)}});
        });

#ifdef SWITCHMAN_HAVE_GUI
    std::unique_ptr<ui::MainWindow> window;
    if (gui) {
        ui::MainWindow::Options windowOptions;
        windowOptions.demo = options.demo;
        windowOptions.configPath = options.demo                   ? QString()
                                   : options.configPath.isEmpty() ? config::defaultConfigPath()
                                                                  : options.configPath;
        windowOptions.listenGiven = options.listen;
        window = std::make_unique<ui::MainWindow>(&host, windowOptions);
        // The publisher lives on the engine thread; its snapshots reach the window by queued signal.
        snapshot::SnapshotPublisher *publisher = nullptr;
        // What the start logged before the publisher listened, taken in the same step: no line is
        // lost between the two, none shown twice.
        QList<QJsonObject> startLog;
        host.runBlocking([&publisher, &startLog](Engine &engine) {
            publisher = new snapshot::SnapshotPublisher(engine);
            startLog = engine.takeEarlyLog();
        });
        window->showStartLog(startLog);
        QObject::connect(publisher, &snapshot::SnapshotPublisher::snapshotReady, window.get(),
                         &ui::MainWindow::applySnapshot, Qt::QueuedConnection);
        host.post([publisher](Engine &) { publisher->publishNow(); });
        window->show();
    }
#endif
    const int code = QCoreApplication::exec();
#ifdef SWITCHMAN_HAVE_GUI
    window.reset();
#endif
    // However the loop ended (a signal, the tray's Quit, the window closed): requests in flight
    // finish or are ended and billed, and the usage ledger is written, before the engine goes.
    host.drain();
    host.stop();
    // The last lines (the drain's) reach a reader that still reads; one that stalls holds up the
    // exit a second at most.
    telemetry::StderrSink::instance().flush(telemetry::StderrSink::kFlushOnExitMs);
    return code;
}

QString listeningBanner(const QString &baseUrl, const config::Config &config) {
    // Name something the configuration can answer: a route first, then a model.
    QString model = QStringLiteral("MODEL");
    if (!config.routes.isEmpty())
        model = config.routes.firstKey();
    else if (!config.models.isEmpty())
        model = config.models.firstKey();
    const QString auth =
        config.tenants.isEmpty() ? QString() : QStringLiteral(" -H \"authorization: Bearer $SWITCHMAN_KEY\"");
    return QStringLiteral("Switchman listening on %1\n"
                          "Try: curl -s %1/v1/chat/completions -H 'content-type: application/json'%2 "
                          "-d '{\"model\":\"%3\",\"messages\":[{\"role\":\"user\",\"content\":\"ping\"}]}'\n")
        .arg(baseUrl, auth, model);
}

void printListening(const QString &baseUrl, const config::Config &config) {
    QTextStream out(stdout);
    out << listeningBanner(baseUrl, config);
    out.flush();
    std::fflush(stdout);
}

} // namespace sw::app
