#include "app/credential_commands.h"

#include "app/admin_commands.h"
#include "core/config/config_edit.h"
#include "core/config/config_loader.h"
#include "core/credentials/credential_pools.h"
#include "core/credentials/gateway_key.h"
#include "core/credentials/keychain_store.h"

#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLockFile>
#include <QRegularExpression>
#include <QTimer>

#include <cstdio>
#include <iostream>
#include <string>
#include <termios.h>
#include <unistd.h>

namespace sw::app {

namespace {
constexpr int kKeychainTimeoutMs = 30000;
const char *const kNoKeychainWayOut =
    "Without a working Secret Service (gnome-keyring, KWallet), keep the key in an environment variable and "
    "reference it as env:VAR in the configuration's credentials list instead.";

// Runs one keychain job to completion on a local event loop (the CLI has nothing else to do).
credentials::SecretResult
runKeychain(const std::function<void(QObject *, std::function<void(const credentials::SecretResult &)>)> &job) {
    credentials::SecretResult result;
    bool finished = false;
    QObject context;
    QEventLoop loop;
    job(&context, [&](const credentials::SecretResult &r) {
        result = r;
        finished = true;
        loop.quit();
    });
    if (!finished) {
        QTimer::singleShot(kKeychainTimeoutMs, &loop, &QEventLoop::quit);
        loop.exec();
    }
    if (!finished) {
        result = {};
        result.error = QStringLiteral("the OS keychain (Secret Service) did not answer within %1 s")
                           .arg(kKeychainTimeoutMs / 1000);
    }
    return result;
}

// The whole of stdin from a pipe, or one line typed with echo off on a terminal.
QByteArray readSecret(const QString &name, QTextStream &err) {
    std::string text;
    if (isatty(STDIN_FILENO)) {
        err << "Secret for keychain:" << name << " (input hidden): " << Qt::flush;
        termios saved{};
        const bool haveTerm = tcgetattr(STDIN_FILENO, &saved) == 0;
        if (haveTerm) {
            termios quiet = saved;
            quiet.c_lflag &= ~tcflag_t(ECHO);
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
        }
        std::getline(std::cin, text);
        if (haveTerm)
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
        err << '\n' << Qt::flush;
    } else {
        text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    }
    QByteArray secret = QByteArray::fromStdString(text).trimmed();
    std::fill(text.begin(), text.end(), '\0');
    return secret;
}

// The configuration to edit or list: the file when it exists; an empty one when the
// default path has none yet. nullopt after telling the user why not.
std::optional<config::Config> loadForCommand(const QString &path, bool explicitPath, bool createIfMissing,
                                             QTextStream &err, int *exitCode) {
    if (!QFileInfo::exists(path)) {
        if (createIfMissing || !explicitPath)
            return config::Config();
        err << "switchman: cannot read " << path << ": no such file\n";
        *exitCode = 2;
        return std::nullopt;
    }
    const config::LoadResult loaded = config::load(path);
    if (!loaded.ok()) {
        err << "switchman: cannot use configuration " << path << ":\n";
        for (const auto &e : loaded.errors)
            err << "  " << e.toString() << '\n';
        *exitCode = loaded.status == config::LoadStatus::Unreadable ? 2 : 1;
        return std::nullopt;
    }
    return *loaded.config;
}
} // namespace

namespace {
// What `key create` needs of a configuration file that is a JSON object, whatever else in it is wrong:
// the tenants it names (is the key a new tenant's, the first?) and its listen address. Nothing for a
// file that is not JSON: that one is left alone, never written over.
std::optional<config::Config> namedIn(const QString &path) {
    config::Config named;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return std::nullopt;
    QJsonParseError error;
    const QJsonDocument document = QJsonDocument::fromJson(file.read(config::kMaxConfigBytes), &error);
    if (error.error != QJsonParseError::NoError || !document.isObject())
        return std::nullopt;
    const QJsonObject root = document.object();
    const QJsonObject tenants = root.value(QStringLiteral("tenants")).toObject();
    for (auto it = tenants.begin(); it != tenants.end(); ++it)
        if (!config::isCommentKey(it.key()))
            named.tenants.insert(it.key(), config::TenantConfig{});
    if (const QJsonValue listen = root.value(QStringLiteral("listen")); listen.isString())
        named.listen = listen.toString();
    return named;
}
} // namespace

int keyCreate(const QString &configPath, bool explicitPath, const QString &tenantName, QTextStream &out,
              QTextStream &err) {
    if (config::isCommentKey(tenantName)) {
        err << "switchman: key create: tenant names cannot start with '_' (such keys are comments)\n";
        return 64;
    }
    QString error;
    // Held until the file is written: other key creates wait, then read the file with this key in it.
    const std::unique_ptr<QLockFile> lock = config::lockConfigFile(configPath, &error);
    if (!lock) {
        err << "switchman: key create: nothing saved: " << error << '\n';
        return 1;
    }
    int code = 1;
    // A file invalid only for want of this tenant's key ("tenants.alice.keys: missing: create a key with
    // `switchman key create --tenant alice`") is what this command mends: the edited file is judged, not
    // the one it mends (probe K1 4: the command refused with the error that told the user to run it).
    std::optional<config::Config> config;
    if (const config::LoadResult loaded =
            QFileInfo::exists(configPath) ? config::load(configPath) : config::LoadResult();
        QFileInfo::exists(configPath) && loaded.status == config::LoadStatus::Invalid) {
        config = namedIn(configPath);
    }
    if (!config)
        config = loadForCommand(configPath, explicitPath, true, err, &code);
    if (!config)
        return code;
    // The file as its owner wrote it, so the edit keeps its comments, order and layout.
    QByteArray text = QJsonDocument(config::toJson(*config)).toJson(QJsonDocument::Indented);
    if (QFileInfo::exists(configPath)) {
        QFile file(configPath);
        if (!file.open(QIODevice::ReadOnly)) {
            err << "switchman: key create: nothing saved: cannot read " << configPath << ": " << file.errorString()
                << '\n';
            return 2;
        }
        text = file.readAll();
    }
    const bool firstTenant = config->tenants.isEmpty();
    const bool created = !config->tenants.contains(tenantName);
    const QString key = credentials::newGatewayKey();
    // A first tenant gets admin: the workstation owner keeps the admin API they had before keys existed.
    const QByteArray edited =
        config::withTenantKey(text, tenantName, credentials::gatewayKeyHash(key), created && firstTenant);
    // Never write a file that would not load again, but for other tenants written without a key, which
    // this command mends one run at a time: a file of two such tenants could never be mended, each run
    // refused for the other's missing key (probe JV L5). They are told, and were invalid before too.
    const config::ParseResult check = config::parse(edited);
    QList<config::ValidationError> keyless;
    QList<config::ValidationError> problems;
    for (const config::ValidationError &e : check.errors)
        (e.path.startsWith(QLatin1String("tenants.")) && e.path.endsWith(QLatin1String(".keys")) &&
                 e.reason.contains(QLatin1String("switchman key create --tenant"))
             ? keyless
             : problems)
            .append(e);
    if (!problems.isEmpty()) {
        err << "switchman: key create: nothing saved: the result would not be valid:\n";
        for (const auto &e : check.errors)
            err << "  " << e.toString() << '\n';
        return 1;
    }
    QString note;
    if (!config::writeConfigFile(configPath, edited, config::WriteMode::Replace, &error, &note)) {
        err << "switchman: key create: nothing saved: " << error << '\n';
        return 1;
    }
    if (!note.isEmpty())
        err << "switchman: " << note << '\n';
    // The key itself goes to stdout once (so it can be piped); everything else to stderr.
    out << key << '\n' << Qt::flush;
    err << "switchman: " << (created ? "created tenant " : "added a key to tenant ") << tenantName
        << (created && firstTenant ? " (admin)" : "") << " in " << configPath
        << ".\nThis key is shown once: only its sha256 hash is stored. Send it as `Authorization: Bearer KEY` or "
           "`x-api-key: KEY`.\n";
    if (firstTenant)
        err << "Callers now need a key: with tenants configured, requests without one get 401.\n";
    if (!keyless.isEmpty()) {
        err << "The file loads once every tenant has a key; still without one:\n";
        for (const auto &e : keyless)
            err << "  " << e.toString() << '\n';
    }
    // Nothing watches the file: a running instance keeps its old tenants until it re-reads it.
    // Until now it had none, so its admin API needs no key; otherwise an admin tenant's.
    err << "A Switchman that is already running takes the key once it re-reads the file: restart it, or run\n"
        << "  curl -X POST " << (firstTenant ? "" : "-H \"x-switchman-key: $SWITCHMAN_ADMIN_KEY\" ")
        << adminBaseUrl(config->listen) << "/admin/reload\n";
    if (!firstTenant)
        err << "with an admin tenant's key in SWITCHMAN_ADMIN_KEY.\n";
    return 0;
}

int credentialSet(const QString &name, QTextStream &out, QTextStream &err) {
    static const QRegularExpression namePattern(QStringLiteral("^[A-Za-z0-9._@-]+$"));
    if (!namePattern.match(name).hasMatch()) {
        err << "switchman: credential set: NAME may only use letters, digits, '.', '_', '@' and '-'\n";
        return 64;
    }
    QByteArray secret = readSecret(name, err);
    if (secret.isEmpty()) {
        err << "switchman: credential set: nothing was read from stdin; nothing stored\n";
        return 1;
    }
    credentials::KeychainStore store;
    const auto result = runKeychain([&](QObject *context, auto done) { store.write(name, secret, context, done); });
    secret.fill('\0');
    if (!result.ok) {
        err << "switchman: could not store keychain:" << name << ": " << printableText(result.error)
            << "\nNothing was stored. " << kNoKeychainWayOut << '\n';
        return 1;
    }
    out << "stored keychain:" << name << " in the OS keychain (service \"" << credentials::KeychainStore::serviceName()
        << "\"). Reference it as \"keychain:" << name << "\" in a provider's credentials.\n";
    // The caller then tells a running instance through its admin API when it can (no tenants, or
    // SWITCHMAN_ADMIN_KEY), and says what an instance it could not reach does (credentialSetUnreached).
    return 0;
}

void credentialSetUnreached(QTextStream &err) {
    err << "switchman: a running Switchman this command cannot reach (with tenants, set SWITCHMAN_ADMIN_KEY to an "
           "admin key) keeps its copy of the old secret until the provider refuses it, then reads the keychain "
           "again and uses the new one from the next request; `switchman credential retry` or a reload reads it "
           "at once.\n";
}

int credentialList(const QString &configPath, bool explicitPath, QTextStream &out, QTextStream &err) {
    int code = 1;
    const auto config = loadForCommand(configPath, explicitPath, false, err, &code);
    if (!config)
        return code;
    credentials::KeychainStore store;
    bool keychainBroken = false;
    QString keychainError;
    QString unavailable; // how every keychain: reference reads once one could not be read
    int listed = 0;
    for (const auto &provider : config->providers) {
        for (const QString &ref : provider.credentials) {
            QString where;
            if (ref.startsWith(QLatin1String("keychain:"))) {
                if (keychainBroken) {
                    where = unavailable;
                } else {
                    auto result =
                        runKeychain([&](QObject *context, auto done) { store.read(ref.mid(9), context, done); });
                    result.secret.fill('\0');
                    if (result.ok)
                        where = QStringLiteral("keychain: present");
                    else if (result.notFound)
                        where = QStringLiteral("keychain: MISSING (switchman credential set %1)").arg(ref.mid(9));
                    else {
                        keychainBroken = true;
                        keychainError = result.error;
                        // A locked keychain holds the key all the same: it is not MISSING (probe AA4 F2).
                        unavailable = result.locked ? QStringLiteral("keychain: unavailable (locked)")
                                                    : QStringLiteral("keychain: unavailable");
                        where = unavailable;
                    }
                }
            } else if (ref.startsWith(QLatin1String("env:"))) {
                // As the gateway reads it: a variable of whitespace alone is no key, and no key is sent.
                where = credentials::isUnsetEnvRef(ref) ? QStringLiteral("environment: unset")
                                                        : QStringLiteral("environment: set");
            } else if (ref == QLatin1String("passthrough")) {
                where = QStringLiteral("the caller's own key");
            } else {
                where = QStringLiteral("unknown reference");
            }
            out << provider.id << '\t' << ref << '\t' << where << '\n';
            ++listed;
        }
    }
    if (listed == 0)
        out << "no credential references in " << configPath << '\n';
    out.flush();
    if (keychainBroken) {
        err << "switchman: the OS keychain could not be read: " << printableText(keychainError) << '\n'
            << kNoKeychainWayOut << '\n';
        return 1;
    }
    return 0;
}

} // namespace sw::app
