#pragma once
// The command line (`switchman --help`), parsed into plain data. Parsing never
// prints or exits: main() decides what to do with the result.

#include <QString>
#include <QStringList>

namespace sw::app {

enum class Command {
    Run,            // switchman [--headless] [--config FILE] [--listen HOST:PORT] [--demo]
    CheckConfig,    // switchman check-config FILE
    KeyCreate,      // switchman key create --tenant NAME
    CredentialSet,  // switchman credential set NAME
    CredentialList, // switchman credential list
    // Talk to the running instance's admin API on the configured listen address.
    Status,          // switchman status
    MarksClear,      // switchman marks clear [--tenant T] [--provider P]
    CredentialRetry, // switchman credential retry [PROVIDER]
    // The usage ledger: from the running instance, or the file itself when none runs.
    Usage, // switchman usage [--since 7d] [--until T] [--tenant T] [--by day|provider|model|tenant] [--csv]
};

struct CliOptions {
    Command command = Command::Run;
    // check-config: the FILE; key create: the tenant NAME; credential set: the credential NAME;
    // credential retry: the PROVIDER (empty = all).
    QString argument;
    QString tenant;   // marks clear --tenant
    QString provider; // marks clear --provider
    QString since;    // usage --since (7d, 24h, 2026-01-05, ...); empty = from the start
    QString until;    // usage --until
    QString by;       // usage --by day|provider|model|tenant; empty = one line per row
    bool csv = false; // usage --csv
    bool headless = false;
    QString configPath; // --config; empty = config::defaultConfigPath()
    QString listen;     // --listen HOST:PORT override; empty = the configuration's (also: where the
                        // status / marks clear / credential retry commands find the running instance)
    bool demo = false;
    bool version = false;
    bool help = false;
};

struct CliParseResult {
    CliOptions options;
    QString error; // non-empty on a usage error, e.g. "unknown option 'x'"

    bool ok() const { return error.isEmpty(); }
};

// arguments as from QCoreApplication::arguments(): the program name first.
CliParseResult parseCommandLine(const QStringList &arguments);

// The text of --help.
QString helpText();

} // namespace sw::app
