#pragma once
// The command line's way to a running instance, so a headless user can do what the window does:
// `switchman status`, `switchman marks clear`, `switchman credential retry`,
// and the nudge `credential set` gives a running instance. They use the same
// admin API as curl would, on the configured listen address, so a headless
// user needs nothing else. Nothing here ever prints a secret.

#include <QByteArray>
#include <QString>
#include <QTextStream>

namespace sw::app {

struct AdminTarget {
    QString baseUrl; // http://HOST:PORT of the running instance
    QByteArray key;  // SWITCHMAN_ADMIN_KEY, sent as x-switchman-key when set
};

// Where the running instance listens: --listen when given, else the configuration's `listen`
// (the default configuration when the default file does not exist). A wildcard address is
// reached over loopback. Empty baseUrl after telling the user why (exit code in *exitCode).
AdminTarget adminTarget(const QString &configPath, bool explicitPath, const QString &listenOverride, QTextStream &err,
                        int *exitCode);

// http://HOST:PORT for a listen address ("HOST:PORT"): a wildcard address is reached over loopback.
// Empty when `listen` is not HOST:PORT.
QString adminBaseUrl(const QString &listen);

// `switchman status`: state, marks and the credential table.
int statusCommand(const AdminTarget &target, QTextStream &out, QTextStream &err);
// `switchman marks clear [--tenant T] [--provider P]`.
int marksClearCommand(const AdminTarget &target, const QString &tenant, const QString &provider, QTextStream &out,
                      QTextStream &err);
// `switchman credential retry [PROVIDER]`.
int credentialRetryCommand(const AdminTarget &target, const QString &provider, QTextStream &out, QTextStream &err);
// After `credential set NAME`: a running instance drops that reference's state and cached secret.
// Best effort and quiet when nothing runs; returns whether an instance took it.
bool notifyCredentialChanged(const AdminTarget &target, const QString &ref, int *cleared);

// `switchman usage`: the running instance's /admin/usage, or, when no instance answers, the
// ledger file itself (read-only; SQLite's WAL lets it be read while another process writes).
struct UsageArguments {
    QString since, until, tenant, by;
    bool csv = false;
    QString ledgerPath; // the file read when no instance runs
};
int usageCommand(const AdminTarget &target, const UsageArguments &args, QTextStream &out, QTextStream &err);

// Text from a peer (an upstream's error message in a mark or a credential, a Redis replica's
// mark, an answer's error, the ledger, the keychain) as the terminal shows it, never as commands
// to it: C0 controls (CR, LF, TAB and ESC among them) and DEL become \xNN, C1 controls (U+009B
// starts an escape sequence in some terminals) \u00NN, and the invisible characters that
// reorder or hide text (bidi embeddings, overrides and isolates, zero-width characters, line
// and paragraph separators, BOM) \uNNNN. Everything else is kept.
QString printableText(const QString &text);

// "42 s", "3 min 20 s", "1 h 05 min" for the countdown columns.
QString remainingText(qint64 ms);

} // namespace sw::app
