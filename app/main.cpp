// Entry point: command line, configuration, application object. Wiring only.

#include "app/admin_commands.h"
#include "app/cli_options.h"
#include "app/credential_commands.h"
#include "app/first_run.h"
#include "app/gateway_runner.h"
#include "core/config/config_loader.h"
#include "core/telemetry/stderr_sink.h"
#include "core/telemetry/usage_database.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QTextStream>

#include <memory>

#include <csignal>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#ifdef SWITCHMAN_HAVE_GUI
#include <QApplication>
#endif

namespace {

using namespace sw;

// Exit codes, as --help documents them.
constexpr int kExitFailure = 1;    // invalid configuration, failed command
constexpr int kExitUnreadable = 2; // a file that cannot be read
constexpr int kExitUsage = 64;     // bad command line (EX_USAGE)

QTextStream &out() {
    static QTextStream stream(stdout);
    return stream;
}

QTextStream &err() {
    static QTextStream stream(stderr);
    return stream;
}

int checkConfig(const QString &file) {
    const config::LoadResult result = config::load(file);
    if (result.ok()) {
        out() << file << ": OK\n";
        return 0;
    }
    for (const config::ValidationError &error : result.errors)
        out() << file << ": " << error.toString() << '\n';
    return result.status == config::LoadStatus::Unreadable ? kExitUnreadable : kExitFailure;
}

// First start: nothing configured yet is not an error. Writes the commented
// starter configuration and says what to do next (app/first_run.h).
config::Config firstStart(const QString &path) {
    const app::FirstRun first = app::firstRun(path);
    err() << first.message;
    return first.config;
}

// The configuration the gateway starts with, or an exit code after telling the user why not.
int startupConfig(const app::CliOptions &options, config::Config &config) {
    if (options.demo) {
        config = config::demoConfig();
    } else {
        const bool explicitPath = !options.configPath.isEmpty();
        const QString path = explicitPath ? options.configPath : config::defaultConfigPath();
        if (!explicitPath && !QFileInfo::exists(path)) {
            config = firstStart(path);
        } else {
            const config::LoadResult result = config::load(path, options.listen);
            if (!result.ok()) {
                err() << "switchman: cannot use configuration " << path << ":\n";
                for (const config::ValidationError &error : result.errors)
                    err() << "  " << error.toString() << '\n';
                return result.status == config::LoadStatus::Unreadable ? kExitUnreadable : kExitFailure;
            }
            config = *result.config;
        }
    }
    if (!options.listen.isEmpty()) {
        config.listen = options.listen;
        const QList<config::ValidationError> errors = config::validate(config);
        if (!errors.isEmpty()) {
            err() << "switchman: --listen " << options.listen << ":\n";
            for (const config::ValidationError &error : errors)
                err() << "  " << error.toString() << '\n';
            return kExitFailure;
        }
    }
    return 0;
}

#ifdef SWITCHMAN_HAVE_GUI
// Whether the X server of a local $DISPLAY (":N", "unix:N") takes a connection: a DISPLAY left from
// a closed session (tmux, ssh, a container) made Qt abort the start with advice to reinstall (probe L3
// L1). A remote one (ssh's "localhost:10") is left to Qt to try.
bool localDisplayAnswers(const QByteArray &display) {
    const qsizetype colon = display.lastIndexOf(':');
    const QByteArray host = display.left(colon);
    bool isNumber = false;
    const int number = display.mid(colon + 1).split('.').value(0).toInt(&isNumber);
    if (colon < 0 || !isNumber || !(host.isEmpty() || host == "unix"))
        return true;
    const QByteArray path = "/tmp/.X11-unix/X" + QByteArray::number(number);
    for (const bool abstract : {true, false}) { // Linux's abstract name first, as Xlib does
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::memcpy(address.sun_path + (abstract ? 1 : 0), path.constData(), size_t(path.size()));
        const auto length = socklen_t(offsetof(sockaddr_un, sun_path) + size_t(path.size()) + 1);
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        const bool connected = fd >= 0 && ::connect(fd, reinterpret_cast<const sockaddr *>(&address), length) == 0;
        if (fd >= 0)
            ::close(fd);
        if (connected)
            return true;
    }
    return false;
}
#endif

// QApplication only for the GUI run: it needs a display, and a usage error or
// a subcommand must work without one.
std::unique_ptr<QCoreApplication> makeApplication(int &argc, char **argv, const app::CliParseResult &parsed) {
#ifdef SWITCHMAN_HAVE_GUI
    const app::CliOptions &options = parsed.options;
    // Without a display the GUI cannot start: run headless instead of aborting.
    bool display = qEnvironmentVariableIsSet("DISPLAY") || qEnvironmentVariableIsSet("WAYLAND_DISPLAY") ||
                   qEnvironmentVariableIsSet("QT_QPA_PLATFORM");
    const bool gui =
        parsed.ok() && options.command == app::Command::Run && !options.headless && !options.help && !options.version;
    if (gui && display && !qEnvironmentVariableIsSet("WAYLAND_DISPLAY") &&
        !qEnvironmentVariableIsSet("QT_QPA_PLATFORM") && !localDisplayAnswers(qgetenv("DISPLAY"))) {
        err() << "switchman: the display " << qgetenv("DISPLAY")
              << " does not answer: running headless (switchman --headless says so)\n";
        err().flush();
        display = false;
    }
    if (gui && display)
        return std::make_unique<QApplication>(argc, argv);
#else
    Q_UNUSED(parsed);
#endif
    return std::make_unique<QCoreApplication>(argc, argv);
}

} // namespace

int main(int argc, char **argv) {
    // A reader of our output that goes away (a `| tee` stopped, a log shipper restarted) costs the
    // lines it would have read, not the process: writes fail with EPIPE instead (probe V2 F3).
    std::signal(SIGPIPE, SIG_IGN);
    // Whatever way main ends, the log lines still queued go to a reader that reads (a second at most).
    std::atexit([]() { telemetry::StderrSink::instance().flush(telemetry::StderrSink::kFlushOnExitMs); });
    QStringList arguments;
    for (int i = 0; i < argc; ++i)
        arguments.append(QString::fromLocal8Bit(argv[i]));
    const app::CliParseResult parsed = app::parseCommandLine(arguments);
    const app::CliOptions &options = parsed.options;
    // Until the gateway's handler is in place (after it listens), a reload asked for during the
    // start is nothing to do: the start reads the newest file. Its default ended the process, which
    // systemd does not restart (probe V2 F6).
    if (options.command == app::Command::Run)
        std::signal(SIGHUP, SIG_IGN);

    QCoreApplication::setApplicationName(QStringLiteral("switchman"));
    QCoreApplication::setApplicationVersion(QStringLiteral(SWITCHMAN_VERSION));
    const std::unique_ptr<QCoreApplication> application = makeApplication(argc, argv, parsed);

    if (!parsed.ok()) {
        err() << "switchman: " << parsed.error << "\nTry 'switchman --help'.\n";
        return kExitUsage;
    }
    if (options.help) {
        out() << app::helpText();
        return 0;
    }
    if (options.version) {
        out() << "switchman " << SWITCHMAN_VERSION << '\n';
        return 0;
    }
    switch (options.command) {
    case app::Command::CheckConfig:
        return checkConfig(options.argument);
    case app::Command::KeyCreate:
        return app::keyCreate(options.configPath.isEmpty() ? config::defaultConfigPath() : options.configPath,
                              !options.configPath.isEmpty(), options.argument, out(), err());
    case app::Command::CredentialSet: {
        const int code = app::credentialSet(options.argument, out(), err());
        if (code == 0) {
            // A running instance drops that credential's parking and cached secret now.
            QString ignored;
            QTextStream quiet(&ignored);
            int unused = 0;
            const app::AdminTarget target =
                app::adminTarget(options.configPath.isEmpty() ? config::defaultConfigPath() : options.configPath,
                                 !options.configPath.isEmpty(), {}, quiet, &unused);
            if (!target.baseUrl.isEmpty() &&
                app::notifyCredentialChanged(target, QStringLiteral("keychain:") + options.argument, nullptr))
                out() << "The running Switchman at " << target.baseUrl << " uses it from the next request.\n";
            else
                app::credentialSetUnreached(err());
        }
        return code;
    }
    case app::Command::Status:
    case app::Command::MarksClear:
    case app::Command::CredentialRetry: {
        int code = 1;
        const app::AdminTarget target =
            app::adminTarget(options.configPath.isEmpty() ? config::defaultConfigPath() : options.configPath,
                             !options.configPath.isEmpty(), options.listen, err(), &code);
        if (target.baseUrl.isEmpty())
            return code;
        if (options.command == app::Command::Status)
            return app::statusCommand(target, out(), err());
        if (options.command == app::Command::MarksClear)
            return app::marksClearCommand(target, options.tenant, options.provider, out(), err());
        return app::credentialRetryCommand(target, options.argument, out(), err());
    }
    case app::Command::Usage: {
        int code = 1;
        QString quietText;
        QTextStream quiet(&quietText);
        // No configuration file is not an error here: the default address, then the file.
        const app::AdminTarget target =
            app::adminTarget(options.configPath.isEmpty() ? config::defaultConfigPath() : options.configPath,
                             !options.configPath.isEmpty(), options.listen, quiet, &code);
        app::UsageArguments args;
        args.since = options.since;
        args.until = options.until;
        args.tenant = options.tenant;
        args.by = options.by;
        args.csv = options.csv;
        args.ledgerPath = telemetry::UsageDatabase::defaultPath();
        return app::usageCommand(target, args, out(), err());
    }
    case app::Command::CredentialList:
        return app::credentialList(options.configPath.isEmpty() ? config::defaultConfigPath() : options.configPath,
                                   !options.configPath.isEmpty(), out(), err());
    case app::Command::Run:
        break;
    }
    config::Config config;
    if (const int code = startupConfig(options, config); code != 0)
        return code;
    out().flush();
    err().flush();
    return app::runGateway(options, config);
}
