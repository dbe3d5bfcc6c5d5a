#include "app/cli_options.h"

#include "core/config/config_loader.h"
#include "core/telemetry/usage_database.h"
#include "core/telemetry/usage_report.h"

#include <QCommandLineOption>
#include <QCommandLineParser>

namespace sw::app {

CliParseResult parseCommandLine(const QStringList &arguments) {
    CliParseResult result;
    CliOptions &o = result.options;

    QCommandLineParser parser;
    parser.setSingleDashWordOptionMode(QCommandLineParser::ParseAsLongOptions);
    const QCommandLineOption headless(QStringLiteral("headless"));
    const QCommandLineOption config(QStringLiteral("config"), QString(), QStringLiteral("FILE"));
    const QCommandLineOption listen(QStringLiteral("listen"), QString(), QStringLiteral("HOST:PORT"));
    const QCommandLineOption demo(QStringLiteral("demo"));
    const QCommandLineOption tenant(QStringLiteral("tenant"), QString(), QStringLiteral("NAME"));
    const QCommandLineOption provider(QStringLiteral("provider"), QString(), QStringLiteral("ID"));
    const QCommandLineOption since(QStringLiteral("since"), QString(), QStringLiteral("WHEN"));
    const QCommandLineOption until(QStringLiteral("until"), QString(), QStringLiteral("WHEN"));
    const QCommandLineOption by(QStringLiteral("by"), QString(), QStringLiteral("GROUP"));
    const QCommandLineOption csv(QStringLiteral("csv"));
    const QCommandLineOption version(QStringList{QStringLiteral("v"), QStringLiteral("version")});
    const QCommandLineOption help(QStringList{QStringLiteral("h"), QStringLiteral("help")});
    parser.addOptions({headless, config, listen, demo, tenant, provider, since, until, by, csv, version, help});

    if (!parser.parse(arguments)) {
        result.error = parser.errorText();
        return result;
    }
    o.help = parser.isSet(help);
    o.version = parser.isSet(version);
    if (o.help || o.version)
        return result; // like every CLI: --help and --version win over the rest

    o.headless = parser.isSet(headless);
    o.configPath = parser.value(config);
    o.listen = parser.value(listen);
    o.demo = parser.isSet(demo);

    const QStringList words = parser.positionalArguments();
    const QString verb = words.value(0);
    const auto expectWords = [&](qsizetype count, const QString &usage) {
        if (words.size() != count)
            result.error = QStringLiteral("usage: switchman %1").arg(usage);
        return words.size() == count;
    };
    if (words.isEmpty()) {
        o.command = Command::Run;
    } else if (verb == QLatin1String("check-config")) {
        o.command = Command::CheckConfig;
        if (expectWords(2, QStringLiteral("check-config FILE")))
            o.argument = words.at(1);
    } else if (verb == QLatin1String("key")) {
        o.command = Command::KeyCreate;
        if (words.value(1) != QLatin1String("create"))
            result.error = QStringLiteral("usage: switchman key create --tenant NAME");
        else if (expectWords(2, QStringLiteral("key create --tenant NAME")))
            o.argument = parser.value(tenant);
        if (result.ok() && o.argument.isEmpty())
            result.error = QStringLiteral("key create needs --tenant NAME");
    } else if (verb == QLatin1String("credential")) {
        const QString sub = words.value(1);
        if (sub == QLatin1String("set")) {
            o.command = Command::CredentialSet;
            if (expectWords(3, QStringLiteral("credential set NAME")))
                o.argument = words.at(2);
        } else if (sub == QLatin1String("list")) {
            o.command = Command::CredentialList;
            expectWords(2, QStringLiteral("credential list"));
        } else if (sub == QLatin1String("retry")) {
            o.command = Command::CredentialRetry;
            if (words.size() > 3)
                result.error = QStringLiteral("usage: switchman credential retry [PROVIDER]");
            o.argument = words.value(2);
        } else {
            result.error =
                QStringLiteral("usage: switchman credential set NAME | credential list | credential retry [PROVIDER]");
        }
    } else if (verb == QLatin1String("status")) {
        o.command = Command::Status;
        expectWords(1, QStringLiteral("status"));
    } else if (verb == QLatin1String("marks")) {
        o.command = Command::MarksClear;
        if (words.value(1) != QLatin1String("clear") || words.size() != 2)
            result.error = QStringLiteral("usage: switchman marks clear [--tenant T] [--provider P]");
        o.tenant = parser.value(tenant);
        o.provider = parser.value(provider);
    } else if (verb == QLatin1String("usage")) {
        o.command = Command::Usage;
        expectWords(1, QStringLiteral("usage [--since 7d] [--until WHEN] [--tenant T] [--by provider] [--csv]"));
        o.tenant = parser.value(tenant);
        o.since = parser.value(since);
        o.until = parser.value(until);
        o.by = parser.value(by);
        o.csv = parser.isSet(csv);
        const qint64 now = 1; // only the form is checked here; the time is read when the command runs
        for (const auto &[name, value] :
             {std::pair{QStringLiteral("--since"), o.since}, std::pair{QStringLiteral("--until"), o.until}})
            if (!value.isEmpty() && !telemetry::parseTimeBound(value, now) && result.ok())
                result.error =
                    QStringLiteral("%1 expects 7d, 24h, 30m, a date (2026-01-05) or an ISO date-time, got '%2'")
                        .arg(name, value);
        if (result.ok() && !o.by.isEmpty() && !telemetry::groupingFromName(o.by))
            result.error = QStringLiteral("--by expects day, provider, model or tenant, got '%1'").arg(o.by);
    } else {
        result.error = QStringLiteral("unknown command '%1'").arg(verb);
    }
    if (!result.ok())
        return result;

    // Options that only mean something for one command are refused elsewhere,
    // so a misplaced one is noticed instead of silently ignored.
    const bool remote = o.command == Command::Status || o.command == Command::MarksClear ||
                        o.command == Command::CredentialRetry || o.command == Command::Usage;
    const bool usageOption = parser.isSet(since) || parser.isSet(until) || parser.isSet(by) || parser.isSet(csv);
    if (parser.isSet(tenant) && o.command != Command::KeyCreate && o.command != Command::MarksClear &&
        o.command != Command::Usage)
        result.error = QStringLiteral("--tenant only applies to 'key create', 'marks clear' and 'usage'");
    else if (usageOption && o.command != Command::Usage)
        result.error = QStringLiteral("--since, --until, --by and --csv only apply to 'usage'");
    else if (parser.isSet(provider) && o.command != Command::MarksClear)
        result.error = QStringLiteral("--provider only applies to 'marks clear'");
    else if (o.command != Command::Run && (o.headless || o.demo))
        result.error = QStringLiteral("--headless and --demo only apply when running the gateway");
    else if (o.command != Command::Run && !remote && !o.listen.isEmpty())
        result.error = QStringLiteral("--listen only applies when running the gateway or talking to it");
    else if (o.command == Command::CheckConfig && !o.configPath.isEmpty())
        result.error = QStringLiteral("check-config takes the file as its argument, not --config");
    else if (o.demo && !o.configPath.isEmpty())
        result.error = QStringLiteral("--demo uses the built-in configuration: leave out --config");
    else if (parser.isSet(listen) && !config::parseListenAddress(o.listen))
        result.error =
            QStringLiteral("--listen expects HOST:PORT (e.g. 127.0.0.1:4141 or [::1]:4141), got '%1'").arg(o.listen);
    return result;
}

QString helpText() {
    return QStringLiteral(
               "Usage: switchman [--headless] [--config FILE] [--listen HOST:PORT] [--demo]\n"
               "       switchman check-config FILE\n"
               "       switchman key create --tenant NAME\n"
               "       switchman credential set NAME\n"
               "       switchman credential list\n"
               "       switchman status\n"
               "       switchman marks clear [--tenant T] [--provider P]\n"
               "       switchman credential retry [PROVIDER]\n"
               "       switchman usage [--since 7d] [--until WHEN] [--tenant T] [--by day|provider|model|tenant] "
               "[--csv]\n"
               "\n"
               "Switchman is an LLM gateway: point an SDK or coding agent at it and it fails over\n"
               "across upstream providers before the first byte of the answer.\n"
               "\n"
               "Options:\n"
               "  --headless          run without the admin window and tray\n"
               "  --config FILE       configuration file (default: %1)\n"
               "  --listen HOST:PORT  listen address, overriding the configuration's\n"
               "  --demo              built-in configuration with simulated providers\n"
               "  -v, --version       print the version and exit\n"
               "  -h, --help          print this help and exit\n"
               "\n"
               "Commands:\n"
               "  check-config FILE           validate a configuration file; exit 0 when valid,\n"
               "                              1 when not, 2 when it cannot be read\n"
               "  key create --tenant NAME    make a gateway key for a tenant (printed once, its hash stored)\n"
               "  credential set NAME         read a secret from stdin into the OS keychain as keychain:NAME\n"
               "  credential list             list the credential references of the configuration\n"
               "\n"
               "Commands for the running instance (its admin API at the configuration's listen\n"
               "address, or --listen HOST:PORT; with tenants configured, an admin tenant's key\n"
               "in SWITCHMAN_ADMIN_KEY):\n"
               "  status                      state, provider-down marks and credential health\n"
               "  marks clear [--tenant T] [--provider P]\n"
               "                              clear marks (all, or the matching ones)\n"
               "  credential retry [PROVIDER] put parked or rejected credentials back in use now\n"
               "  usage [--since 7d] [--until WHEN] [--tenant T] [--by GROUP] [--csv]\n"
               "                              tokens and cost from the usage ledger, one line per attempt or\n"
               "                              grouped by day, provider, model or tenant; WHEN is 7d, 24h, 30m,\n"
               "                              a date (2026-01-05) or an ISO date-time. With no instance\n"
               "                              running it reads %2 directly\n"
               "\n"
               "Exit status: 0 success, 1 invalid configuration or failure, 2 unreadable file,\n"
               "64 bad command line.\n")
        .arg(config::defaultConfigPath(), telemetry::UsageDatabase::defaultPath());
}

} // namespace sw::app
