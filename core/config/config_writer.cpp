#include "core/config/config_writer.h"

#include "core/config/config_reader.h"
#include "core/util/save_file.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>

#ifdef Q_OS_UNIX
#include <cerrno>
#include <cstring>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace sw::config {

namespace {

QJsonValue json(const QStringList &list) {
    return QJsonArray::fromStringList(list);
}
QJsonValue json(const QString &text) {
    return text;
}
QJsonValue json(qint64 value) {
    return value;
}
QJsonValue json(int value) {
    return value;
}
QJsonValue json(bool value) {
    return value;
}

// Writes `key` only when the field differs from its default: a saved file says
// what its owner chose, not every default of this version.
template <typename T> void putChanged(QJsonObject &o, const QString &key, const T &value, const T &defaultValue) {
    if (value != defaultValue)
        o.insert(key, json(value));
}

QJsonObject providerJson(const ProviderConfig &p) {
    const ProviderConfig d;
    QJsonObject o{{QStringLiteral("api"), p.api},
                  {QStringLiteral("baseUrl"), p.baseUrl},
                  {QStringLiteral("credentials"), json(p.credentials)}};
    putChanged(o, QStringLiteral("region"), p.region, d.region);
    putChanged(o, QStringLiteral("maxRetries"), p.maxRetries, d.maxRetries);
    putChanged(o, QStringLiteral("retriesBeforeFailover"), p.retriesBeforeFailover, d.retriesBeforeFailover);
    putChanged(o, QStringLiteral("exhaustedResetMs"), p.exhaustedResetMs, d.exhaustedResetMs);
    putChanged(o, QStringLiteral("demo"), p.demo, d.demo);
    putChanged(o, QStringLiteral("caFile"), p.caFile, d.caFile);
    putChanged(o, QStringLiteral("proxy"), p.proxy, d.proxy);
    return o;
}

QJsonObject modelJson(const ModelConfig &m) {
    const ModelConfig d;
    QJsonObject o;
    putChanged(o, QStringLiteral("kind"), m.kind, d.kind);
    putChanged(o, QStringLiteral("input"), m.input, d.input);
    if (m.reasoning)
        o.insert(QStringLiteral("reasoning"), *m.reasoning);
    if (m.maxTokens)
        o.insert(QStringLiteral("maxTokens"), *m.maxTokens);
    if (m.freeOfCharge || m.costInput != 0 || m.costOutput != 0 || m.costCacheRead || m.costCacheWrite) {
        QJsonObject cost{{QStringLiteral("input"), m.costInput}, {QStringLiteral("output"), m.costOutput}};
        if (m.costCacheRead)
            cost.insert(QStringLiteral("cacheRead"), *m.costCacheRead);
        if (m.costCacheWrite)
            cost.insert(QStringLiteral("cacheWrite"), *m.costCacheWrite);
        o.insert(QStringLiteral("cost"), cost);
    }
    putChanged(o, QStringLiteral("tier"), m.tier, d.tier);
    return o;
}

QJsonObject routeJson(const RouteConfig &r) {
    QJsonObject o{{QStringLiteral("candidates"), json(r.candidates)}};
    putChanged(o, QStringLiteral("aliases"), r.aliases, QStringList());
    if (r.maxFallbackCostMultiplier)
        o.insert(QStringLiteral("maxFallbackCostMultiplier"), *r.maxFallbackCostMultiplier);
    return o;
}

QJsonObject tenantJson(const TenantConfig &t) {
    QJsonObject o{{QStringLiteral("keys"), json(t.keyHashes)}};
    putChanged(o, QStringLiteral("providers"), t.providers, QStringList());
    putChanged(o, QStringLiteral("regions"), t.regions, QStringList());
    putChanged(o, QStringLiteral("admin"), t.admin, false);
    if (t.budget)
        o.insert(QStringLiteral("budget"),
                 QJsonObject{{QStringLiteral("usd"), t.budget->usd}, {QStringLiteral("period"), t.budget->period}});
    return o;
}

QJsonObject failoverJson(const FailoverConfig &f) {
    const FailoverConfig d;
    // The two fields a reader looks for first are always written.
    QJsonObject o{{QStringLiteral("enabled"), f.enabled}, {QStringLiteral("deadlineMs"), f.deadlineMs}};
    putChanged(o, QStringLiteral("maxRetryDelayMs"), f.maxRetryDelayMs, d.maxRetryDelayMs);
    putChanged(o, QStringLiteral("keepaliveMs"), f.keepaliveMs, d.keepaliveMs);
    putChanged(o, QStringLiteral("rateLimitParkMs"), f.rateLimitParkMs, d.rateLimitParkMs);
    putChanged(o, QStringLiteral("exhaustedResetMs"), f.exhaustedResetMs, d.exhaustedResetMs);
    putChanged(o, QStringLiteral("upstreamIdleTimeoutMs"), f.upstreamIdleTimeoutMs, d.upstreamIdleTimeoutMs);
    putChanged(o, QStringLiteral("connectTimeoutMs"), f.connectTimeoutMs, d.connectTimeoutMs);
    return o;
}

QJsonObject limitsJson(const LimitsConfig &l) {
    const LimitsConfig d;
    QJsonObject o;
    putChanged(o, QStringLiteral("maxBodyBytes"), l.maxBodyBytes, d.maxBodyBytes);
    putChanged(o, QStringLiteral("maxHeaderBytes"), l.maxHeaderBytes, d.maxHeaderBytes);
    putChanged(o, QStringLiteral("headerTimeoutMs"), l.headerTimeoutMs, d.headerTimeoutMs);
    putChanged(o, QStringLiteral("idleTimeoutMs"), l.idleTimeoutMs, d.idleTimeoutMs);
    putChanged(o, QStringLiteral("maxConnections"), l.maxConnections, d.maxConnections);
    putChanged(o, QStringLiteral("maxHoldBytes"), l.maxHoldBytes, d.maxHoldBytes);
    putChanged(o, QStringLiteral("maxResponseBytes"), l.maxResponseBytes, d.maxResponseBytes);
    putChanged(o, QStringLiteral("maxBodyBytesInFlight"), l.maxBodyBytesInFlight, d.maxBodyBytesInFlight);
    putChanged(o, QStringLiteral("maxReplayBytes"), l.maxReplayBytes, d.maxReplayBytes);
    putChanged(o, QStringLiteral("maxIdempotencyKeysPerTenant"), l.maxIdempotencyKeysPerTenant,
               d.maxIdempotencyKeysPerTenant);
    putChanged(o, QStringLiteral("shutdownGraceMs"), l.shutdownGraceMs, d.shutdownGraceMs);
    return o;
}

QJsonObject marksJson(const MarksConfig &m) {
    const MarksConfig d;
    // The store is always named once the section is written at all.
    QJsonObject o{{QStringLiteral("store"), m.store}};
    putChanged(o, QStringLiteral("url"), m.url, d.url);
    putChanged(o, QStringLiteral("prefix"), m.prefix, d.prefix);
    putChanged(o, QStringLiteral("password"), m.password, d.password);
    putChanged(o, QStringLiteral("caFile"), m.caFile, d.caFile);
    return o;
}

// Each entry of a map section as `key: entryJson(value)`; the map key wins over
// the struct's own name fields, since it is what references use.
template <typename T, typename Fn> QJsonObject mapJson(const QMap<QString, T> &map, Fn entryJson) {
    QJsonObject o;
    for (auto it = map.begin(); it != map.end(); ++it)
        o.insert(it.key(), entryJson(it.value()));
    return o;
}

QString validationMessage(const QList<ValidationError> &errors) {
    QStringList lines;
    for (const ValidationError &e : errors)
        lines.append(e.toString());
    return QStringLiteral("configuration is not valid:\n") + lines.join(QLatin1Char('\n'));
}

bool fail(QString *error, const QString &message) {
    if (error)
        *error = message;
    return false;
}

// Tenant key hashes and credential references: owner only.
constexpr QFileDevice::Permissions kOwnerOnly =
    QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ReadUser | QFileDevice::WriteUser;
constexpr QFileDevice::Permissions kOther = QFileDevice::ReadOther | QFileDevice::WriteOther | QFileDevice::ExeOther;

#ifdef Q_OS_UNIX
QString userName(uid_t uid) {
    const passwd *pw = ::getpwuid(uid);
    return pw ? QString::fromLocal8Bit(pw->pw_name) : QString::number(uid);
}

QString groupName(gid_t gid) {
    const group *gr = ::getgrgid(gid);
    return gr ? QString::fromLocal8Bit(gr->gr_name) : QString::number(gid);
}

// The new file (a new inode, created as whoever runs this) gets the old one's owner and group:
// `sudo switchman key create` on the service user's file once handed it to root, and the service
// could neither reload it nor start again. Where they cannot be kept (not root, and not the owner),
// nothing is written: the file would lock out whoever reads it now. A group the mode gives no
// access to is kept when it can be, and may change when not.
bool keepOwner(const QString &target, const struct stat &old, int fd, QString *error) {
    struct stat made {};
    if (::fstat(fd, &made) != 0)
        return fail(error, QStringLiteral("cannot write %1: %2").arg(target, QString::fromLocal8Bit(strerror(errno))));
    const bool owner = made.st_uid != old.st_uid;
    const bool group = made.st_gid != old.st_gid;
    if (!owner && !group)
        return true;
    if (::fchown(fd, owner ? old.st_uid : uid_t(-1), group ? old.st_gid : gid_t(-1)) == 0)
        return true;
    const QString why = QString::fromLocal8Bit(strerror(errno));
    if (!owner && !(old.st_mode & S_IRWXG))
        return true; // only a group no one reads it through: the owner keeps the file
    const passwd *pw = ::getpwuid(old.st_uid);
    const QString sudoUser = pw ? QString::fromLocal8Bit(pw->pw_name) : QStringLiteral("'#%1'").arg(old.st_uid);
    return fail(error, QStringLiteral("%1 belongs to %2:%3, and a new file written as %4:%5 could not be given back "
                                      "to them (%6), so %2 could no longer read it. Run this as %2 (sudo -u %7 ...) "
                                      "or as root")
                           .arg(target, userName(old.st_uid), groupName(old.st_gid), userName(made.st_uid),
                                groupName(made.st_gid), why, sudoUser));
}
#endif

// Replace: through a temporary file renamed over the target, so a failure at
// any point (no descriptors, disk full) leaves the old file whole.
bool replaceFile(const QString &target, const QByteArray &bytes, QString *error) {
    // An existing file keeps the mode its owner chose, unless anyone on the machine could read it.
    const QFileDevice::Permissions mode = QFileInfo::exists(target) ? QFile::permissions(target) & ~kOther : kOwnerOnly;
    QSaveFile file(target);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Unbuffered))
        return fail(error, QStringLiteral("cannot write %1: %2").arg(target, file.errorString()));
#ifdef Q_OS_UNIX
    // And its owner and group (before the mode: a chown may clear mode bits).
    struct stat old {};
    if (::stat(QFile::encodeName(target).constData(), &old) == 0 && file.handle() >= 0 &&
        !keepOwner(target, old, file.handle(), error)) {
        file.cancelWriting();
        return false;
    }
#endif
    // Before the first byte: QSaveFile creates a new file with the umask's mode (often 0644).
    if (!file.setPermissions(mode)) {
        file.cancelWriting();
        return fail(error, QStringLiteral("cannot set the permissions of %1: %2").arg(target, file.errorString()));
    }
    // Every byte checked written and on the disk before the rename (a full disk once renamed an
    // empty file over the configuration and reported success).
    QString reason;
    if (!util::writeAndCommit(file, bytes, &reason))
        return fail(error, QStringLiteral("cannot write %1: %2").arg(target, reason));
    return true;
}

// CreateOnly: O_EXCL, so a file that appeared meanwhile (another instance, the user) is kept;
// a partial file is removed again.
bool createFile(const QString &path, const QByteArray &bytes, QString *error) {
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::NewOnly, kOwnerOnly))
        return fail(error, QFileInfo::exists(path)
                               ? QStringLiteral("%1 already exists").arg(path)
                               : QStringLiteral("cannot write %1: %2").arg(path, file.errorString()));
    if (file.write(bytes) != bytes.size() || !file.flush()) {
        const QString reason = file.errorString();
        file.close();
        file.remove();
        return fail(error, QStringLiteral("cannot write %1: %2").arg(path, reason));
    }
    return true;
}

} // namespace

QJsonObject toJson(const Config &config) {
    QJsonObject root;
    root.insert(QStringLiteral("listen"), config.listen);
    root.insert(QStringLiteral("providers"), mapJson(config.providers, providerJson));
    root.insert(QStringLiteral("models"), mapJson(config.models, modelJson));
    root.insert(QStringLiteral("routes"), mapJson(config.routes, routeJson));
    if (!config.tenants.isEmpty())
        root.insert(QStringLiteral("tenants"), mapJson(config.tenants, tenantJson));
    root.insert(QStringLiteral("failover"), failoverJson(config.failover));
    const QJsonObject limits = limitsJson(config.limits);
    if (!limits.isEmpty())
        root.insert(QStringLiteral("limits"), limits);
    if (config.marks != MarksConfig())
        root.insert(QStringLiteral("marks"), marksJson(config.marks));
    if (config.usage != UsageConfig())
        root.insert(QStringLiteral("usage"),
                    QJsonObject{{QStringLiteral("retentionDays"), config.usage.retentionDays}});
    return root;
}

bool save(const QString &path, const Config &config, QString *error, QString *note) {
    const QByteArray json = QJsonDocument(toJson(config)).toJson(QJsonDocument::Indented);
    // Never write a file that would not load again.
    const ParseResult check = parse(json);
    if (!check.ok())
        return fail(error, validationMessage(check.errors));
    return writeConfigFile(path, json, WriteMode::Replace, error, note);
}

bool writeConfigFile(const QString &path, const QByteArray &bytes, WriteMode mode, QString *error, QString *note) {
    if (note)
        note->clear();
    // A symbolic link is resolved, never replaced by a file (dotfile managers link config.json
    // into a repository), and the caller is told which file was written.
    QString target = path;
    const QFileInfo info(path);
    if (mode == WriteMode::Replace && info.isSymLink()) {
        target = info.canonicalFilePath();
        if (target.isEmpty())
            return fail(error, QStringLiteral("%1 is a symbolic link to %2, which does not exist; fix the link or "
                                              "pass the real path with --config")
                                   .arg(path, info.symLinkTarget()));
        if (note)
            *note = QStringLiteral("%1 is a symbolic link: wrote its target %2").arg(path, target);
    }
    QString why;
    if (!makePrivateDirectory(QFileInfo(target).absolutePath(), &why))
        return fail(error, why);
    return mode == WriteMode::Replace ? replaceFile(target, bytes, error) : createFile(target, bytes, error);
}

bool makePrivateDirectory(const QString &directory, QString *error) {
    const QString absolute = QDir::cleanPath(QDir(directory).absolutePath());
    QStringList missing;
    for (QString at = absolute; !QFileInfo::exists(at); at = QFileInfo(at).absolutePath()) {
        missing.prepend(at);
        if (QFileInfo(at).absolutePath() == at)
            break; // the root itself is missing: mkdir reports it below
    }
    for (const QString &dir : std::as_const(missing)) {
        if (!QDir().mkdir(dir, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner |
                                   QFileDevice::ReadUser | QFileDevice::WriteUser | QFileDevice::ExeUser) &&
            !QFileInfo(dir).isDir())
            return fail(error, QStringLiteral("cannot create directory %1").arg(dir));
    }
    if (!QFileInfo(absolute).isDir())
        return fail(error,
                    QStringLiteral("cannot create directory %1: a file of that name is in the way").arg(absolute));
    return true;
}

} // namespace sw::config
