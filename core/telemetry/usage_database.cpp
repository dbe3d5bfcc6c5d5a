#include "core/telemetry/usage_database.h"

#include "core/model/chat.h"

#include <QAtomicInteger>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QThread>
#include <QVariant>

#include <algorithm>
#ifdef Q_OS_UNIX
#include <cerrno>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#endif
#include <cmath>
#include <limits>
#include <utility>

namespace sw::telemetry {

namespace {
// How long a statement waits for another writer's lock (a batch is brief) before it fails.
constexpr int kBusyWaitMs = 5000;

QAtomicInteger<quint64> g_connections;

// A null QString binds as SQL NULL and a NaN as NULL too: every column is NOT NULL, and one row the
// file refuses would hold back every row after it.
QVariant text(const QString &s) {
    return s.isNull() ? QVariant(QStringLiteral("")) : QVariant(s);
}

QVariant number(double d) {
    return std::isfinite(d) ? QVariant(d) : QVariant(0.0);
}

// A count beyond model::kMaxReportedTokens is stored as 0 (unknown), as the gateway records it.
QVariant count(qint64 n) {
    return QVariant(model::saneTokens(n));
}

// Token counts and costs as the reports read them. A ledger written before counts were checked
// (model::kMaxReportedTokens) can hold an upstream's int64-max: its SUM overflowed ("integer
// overflow"), and every report over that row failed. A count out of range reads as 0, as the
// gateway records it now, and a row with such a count costs nothing; so a sum over any number of
// rows stays far inside 64 bits, and one peer's nonsense neither breaks a report nor locks a budget.
QString saneCount(const char *column) {
    return QStringLiteral("(CASE WHEN %1 BETWEEN 0 AND %2 THEN %1 ELSE 0 END)")
        .arg(QLatin1String(column))
        .arg(model::kMaxReportedTokens);
}

QString saneCost() {
    return QStringLiteral("(CASE WHEN cost >= 0 AND input BETWEEN 0 AND %1 AND output BETWEEN 0 AND %1"
                          " AND cache_read BETWEEN 0 AND %1 AND cache_write BETWEEN 0 AND %1 THEN cost ELSE 0 END)")
        .arg(model::kMaxReportedTokens);
}

const QString kInsertUsage =
    QStringLiteral("INSERT INTO usage (request_id, tenant, route, candidate, provider, model, input, output,"
                   " cache_read, cache_write, cost, outcome, at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");

void bindUsage(QSqlQuery &q, const UsageRow &r) {
    const QVariantList values{text(r.requestId),   text(r.tenant),   text(r.route),
                              text(r.candidate),   text(r.provider), text(modelOfCandidate(r.candidate)),
                              count(r.input),      count(r.output),  count(r.cacheRead),
                              count(r.cacheWrite), number(r.cost),   text(r.outcome),
                              r.atEpochMs};
    for (int i = 0; i < values.size(); ++i)
        q.bindValue(i, values.at(i));
}

QString lastError(const QSqlQuery &q) {
    return q.lastError().text();
}

// Ends a batch's transaction: all of it or, with *error set, none of it.
bool commitOrRollBack(QSqlDatabase &db, QString *error) {
    if (db.commit())
        return true;
    *error = db.lastError().text();
    db.rollback();
    return false;
}

// Schema steps, in order: step N takes a file from version N to N + 1. A file is never
// rewritten wholesale; each step runs in one transaction with the version bump.
const QList<QStringList> &migrationSteps() {
    static const QList<QStringList> steps{
        // 0 → 1: the first ledger, one row per attempt that reported usage.
        {QStringLiteral("CREATE TABLE usage ("
                        " id INTEGER PRIMARY KEY,"
                        " request_id TEXT NOT NULL,"
                        " tenant TEXT NOT NULL,"
                        " candidate TEXT NOT NULL,"
                        " provider TEXT NOT NULL,"
                        " model TEXT NOT NULL,"
                        " input INTEGER NOT NULL, output INTEGER NOT NULL,"
                        " cache_read INTEGER NOT NULL, cache_write INTEGER NOT NULL,"
                        " cost REAL NOT NULL,"
                        " outcome TEXT NOT NULL,"
                        " at_ms INTEGER NOT NULL)"),
         QStringLiteral("CREATE INDEX usage_at ON usage(at_ms)"),
         QStringLiteral("CREATE INDEX usage_tenant_at ON usage(tenant, at_ms)")},
        // 1 → 2: the route the client asked for, and the budget notices given (once per period).
        {QStringLiteral("ALTER TABLE usage ADD COLUMN route TEXT NOT NULL DEFAULT ''"),
         QStringLiteral("CREATE TABLE budget_notices (tenant TEXT NOT NULL, period_start_ms INTEGER NOT NULL,"
                        " PRIMARY KEY (tenant, period_start_ms))")},
        // 2 → 3: Idempotency-Key answers, kept 24 h across restarts and shared by replicas.
        {QStringLiteral("CREATE TABLE replays ("
                        " id INTEGER PRIMARY KEY,"
                        " tenant TEXT NOT NULL,"
                        " key BLOB NOT NULL,"
                        " digest BLOB NOT NULL,"
                        " status INTEGER NOT NULL,"
                        " headers BLOB NOT NULL,"
                        " body BLOB NOT NULL,"
                        " at_ms INTEGER NOT NULL,"
                        " writer TEXT NOT NULL)"),
         QStringLiteral("CREATE INDEX replays_key ON replays(tenant, key)"),
         QStringLiteral("CREATE INDEX replays_at ON replays(at_ms)")},
        // 3 → 4: answers that committed and have not ended, with the process that wrote them: a
        // crash mid-answer leaves them here, and the next start bills them ("interrupted").
        {QStringLiteral("CREATE TABLE IF NOT EXISTS open_usage ("
                        " writer TEXT NOT NULL,"
                        " host TEXT NOT NULL,"
                        " pid INTEGER NOT NULL,"
                        " request_id TEXT NOT NULL,"
                        " tenant TEXT NOT NULL,"
                        " route TEXT NOT NULL,"
                        " candidate TEXT NOT NULL,"
                        " provider TEXT NOT NULL,"
                        " model TEXT NOT NULL,"
                        " input INTEGER NOT NULL, output INTEGER NOT NULL,"
                        " cache_read INTEGER NOT NULL, cache_write INTEGER NOT NULL,"
                        " cost REAL NOT NULL,"
                        " at_ms INTEGER NOT NULL,"
                        " PRIMARY KEY (writer, request_id))")},
        // 4 → 5: each writer's heartbeat. Replicas in their own PID namespaces (containers) share a
        // host name and a pid (1): whether a writer of open rows is alive is read here, not from its pid.
        {QStringLiteral("CREATE TABLE IF NOT EXISTS writers (id TEXT PRIMARY KEY, seen_ms INTEGER NOT NULL)")},
    };
    return steps;
}

} // namespace

UsageDatabase::UsageDatabase()
    : m_connection(QStringLiteral("switchman-usage-%1").arg(g_connections.fetchAndAddRelaxed(1))) {}

UsageDatabase::~UsageDatabase() {
    {
        QSqlDatabase db = QSqlDatabase::database(m_connection, false);
        if (db.isValid())
            db.close();
    }
    if (QSqlDatabase::contains(m_connection))
        QSqlDatabase::removeDatabase(m_connection);
}

QString UsageDatabase::hostIdentity(const QString &hostName, const QString &unique) {
#ifdef Q_OS_LINUX
    char link[128] = {};
    const ssize_t n = ::readlink("/proc/self/ns/pid", link, sizeof link - 1);
    if (n > 0)
        return hostName + QLatin1Char(' ') + QString::fromLatin1(link, int(n)); // "pid:[4026531836]"
    // No /proc: a namespace no other writer shares, so only heartbeats say whose rows are gone.
    return QStringLiteral("%1 pid:[unknown %2]").arg(hostName, unique);
#else
    Q_UNUSED(unique);
    return hostName;
#endif
}

QString UsageDatabase::defaultPath() {
    // GenericDataLocation honours XDG_DATA_HOME.
    return QDir(QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation))
        .filePath(QStringLiteral("switchman/usage.sqlite"));
}

namespace {

// The row a query of request_id, tenant, route, candidate, provider, input, output, cache_read,
// cache_write, cost, outcome, at_ms (in that order) stands on.
UsageRow rowAt(const QSqlQuery &q) {
    UsageRow r;
    r.requestId = q.value(0).toString();
    r.tenant = q.value(1).toString();
    r.route = q.value(2).toString();
    r.candidate = q.value(3).toString();
    r.provider = q.value(4).toString();
    r.input = q.value(5).toLongLong();
    r.output = q.value(6).toLongLong();
    r.cacheRead = q.value(7).toLongLong();
    r.cacheWrite = q.value(8).toLongLong();
    r.cost = q.value(9).toDouble();
    r.outcome = q.value(10).toString();
    r.atEpochMs = q.value(11).toLongLong();
    return r;
}

// What a path names now: which file (device and inode), and its size and last change.
UsageDatabase::FileStamp stampOf(const QString &path) {
    UsageDatabase::FileStamp s;
#ifdef Q_OS_UNIX
    struct stat st {};
    if (::stat(QFile::encodeName(path).constData(), &st) != 0) {
        s.unknown = errno != ENOENT && errno != ENOTDIR; // a folder made unreadable hides it, not deletes it
        return s;
    }
    s.exists = true;
    s.device = quint64(st.st_dev);
    s.inode = quint64(st.st_ino);
    s.size = qint64(st.st_size);
    s.changedNs = qint64(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
#else
    const QFileInfo info(path);
    s.exists = info.exists();
    s.size = info.size();
    s.changedNs = info.lastModified().toMSecsSinceEpoch() * 1'000'000;
#endif
    return s;
}

// A file no one may write (chmod 444, a-w): its owner meant it to be read only. Root could write
// it all the same; it is opened read-only whoever runs.
bool nobodyMayWrite(const QString &path) {
#ifdef Q_OS_UNIX
    struct stat st {};
    return ::stat(QFile::encodeName(path).constData(), &st) == 0 && S_ISREG(st.st_mode) &&
           !(st.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH));
#else
    return QFileInfo::exists(path) && !QFileInfo(path).isWritable();
#endif
}

// A file name as SQLite reads it in a URI: '%', '?' and '#' escaped, and the rest as bytes.
QString sqliteUri(const QString &path, const QString &query) {
    return QStringLiteral("file:") +
           QString::fromLatin1(QFile::encodeName(QFileInfo(path).absoluteFilePath()).toPercentEncoding("/")) +
           QLatin1Char('?') + query;
}

} // namespace

bool UsageDatabase::open(const QString &path, Mode mode, QString *error) {
    m_path = path;
    m_reading = Reading::Shared;
    m_sharedReadLocked = false;
    m_copy.reset();
    const bool memory = path == QLatin1String(":memory:");
    if (!memory && mode == Mode::ReadWrite) {
        const QString dir = QFileInfo(path).absolutePath();
        if (!QDir().mkpath(dir)) {
            *error = QStringLiteral("cannot create the folder %1").arg(dir);
            return false;
        }
        // Tenants, models and spend are the owner's only (0600). Narrowing only ever takes access
        // away: a file its owner made read-only (0444) stays so (0400), and is read, not written.
        const QFileDevice::Permissions owner = QFileDevice::ReadOwner | QFileDevice::WriteOwner;
        const QFileDevice::Permissions others = QFileDevice::ReadGroup | QFileDevice::WriteGroup |
                                                QFileDevice::ExeGroup | QFileDevice::ReadOther |
                                                QFileDevice::WriteOther | QFileDevice::ExeOther;
        const auto onDisk = [](const QString &file) { // the mode bits, without Qt's per-user flags
            return QFile::permissions(file) & ~(QFileDevice::ReadUser | QFileDevice::WriteUser | QFileDevice::ExeUser);
        };
        if (!QFileInfo::exists(path)) {
            QFile f(path);
            if (f.open(QIODevice::WriteOnly | QIODevice::NewOnly, owner)) // created 0600, never wider
                f.close();
        }
        if (QFileInfo::exists(path) && (onDisk(path) & others))
            QFile::setPermissions(path, onDisk(path) & ~others);
        // SQLite gives the -wal and -shm files it creates the main file's mode; ones a crash left
        // (or an older Switchman made wider) get it too.
        const QFileDevice::Permissions mainMode = onDisk(path);
        for (const QString &file : {path + QStringLiteral("-wal"), path + QStringLiteral("-shm")})
            if (QFileInfo::exists(file) && onDisk(file) != mainMode)
                QFile::setPermissions(file, mainMode);
        if (nobodyMayWrite(path)) {
            *error = QStringLiteral("the file is read-only (no write permission for anyone)");
            return false;
        }
    }
    if (!memory && mode == Mode::ReadOnly && !QFileInfo::exists(path)) {
        *error = QStringLiteral("%1 does not exist (no usage recorded yet)").arg(path);
        return false;
    }
    QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), m_connection);
    if (!db.isValid()) {
        *error = QStringLiteral("the Qt SQLite driver is missing (Debian: install libqt6sql6-sqlite)");
        return false;
    }
    if (!memory && mode == Mode::ReadOnly)
        return openReadOnly(error);
    db.setDatabaseName(path);
    // A writer holding the lock for a batch is brief: wait for it rather than fail.
    db.setConnectOptions(QStringLiteral("QSQLITE_BUSY_TIMEOUT=%1").arg(kBusyWaitMs));
    if (!db.open()) {
        *error = db.lastError().text();
        return false;
    }
    QSqlQuery q(db);
    if (!memory) {
        // WAL: readers (the command line, a query) never block the writer, and a batch is one fsync.
        // Switching a new file to WAL takes its lock without SQLite's busy wait: a replica that
        // opens the same new file at the same moment gets "database is locked". It is asked
        // again for up to two seconds (on the ledger's own thread, never on a request's path: at start,
        // and at each batch while the file could only be read). Each ask waits
        // 100 ms at most: a file another process holds in exclusive locking mode makes SQLite wait
        // out the busy timeout on every ask, and 100 asks of 5 s kept the gateway from listening,
        // without a word, for 8.5 minutes (probe Z4 F2).
        q.exec(QStringLiteral("PRAGMA busy_timeout=100"));
        const auto toWal = [&q] {
            return q.exec(QStringLiteral("PRAGMA journal_mode=WAL")) && q.next() &&
                   q.value(0).toString().compare(QLatin1String("wal"), Qt::CaseInsensitive) == 0;
        };
        QElapsedTimer asking;
        asking.start();
        bool wal = toWal();
        while (!wal && asking.elapsed() < 2000 && lastError(q).contains(QLatin1String("locked"))) {
            QThread::msleep(20);
            wal = toWal();
        }
        const QString walError = wal ? QString() : lastError(q);
        q.exec(QStringLiteral("PRAGMA busy_timeout=%1").arg(kBusyWaitMs));
        if (!wal) {
            *error = QStringLiteral("cannot use write-ahead logging: %1").arg(walError);
            db.close();
            return false;
        }
        q.exec(QStringLiteral("PRAGMA synchronous=NORMAL"));
    }
    if (!migrate(error)) {
        db.close();
        return false;
    }
    m_stamp = memory ? FileStamp{} : stampOf(path);
    m_open = true;
    return true;
}

bool UsageDatabase::openReadOnly(QString *error) {
    QSqlDatabase db = QSqlDatabase::database(m_connection, false);
    const QString wal = m_path + QStringLiteral("-wal");
    // Asks the schema version through the connection as configured: SQLite opens a file lazily, so
    // a read is what tells whether it can be read at all. Empty when it can, else SQLite's words.
    const auto tryOpen = [&db, this](const QString &name, const QString &options) -> QString {
        db.close();
        db.setDatabaseName(name);
        db.setConnectOptions(options);
        if (!db.open())
            return db.lastError().text();
        QSqlQuery q(db);
        if (!q.exec(QStringLiteral("PRAGMA user_version")) || !q.next()) {
            const QString why = lastError(q);
            q.finish();
            db.close();
            return why.trimmed().isEmpty() ? QStringLiteral("unknown SQLite error") : why;
        }
        const int version = q.value(0).toInt();
        q.finish();
        if (version < 1 || version > kSchemaVersion) {
            db.close();
            return QStringLiteral("it has schema version %1; this Switchman reads version 1 to %2")
                .arg(version)
                .arg(kSchemaVersion);
        }
        return QString();
    };
    // Shared with its writers, as SQLite reads a WAL file: it needs the -shm next to it, or a folder
    // where it can create one.
    const QString shared =
        tryOpen(m_path, QStringLiteral("QSQLITE_OPEN_READONLY;QSQLITE_BUSY_TIMEOUT=%1").arg(kBusyWaitMs));
    QString why = shared;
    m_sharedReadLocked = why.contains(QLatin1String("locked"));
    if (!why.isEmpty() && why.contains(QLatin1String("schema version"))) {
        *error = QStringLiteral("%1: %2").arg(m_path, why);
        return false;
    }
    if (!why.isEmpty()) {
        // A folder that cannot be written (mounted read-only, or its mode narrowed): SQLite cannot
        // make the -shm it shares the file through. With no write-ahead log beside the file (a
        // clean shutdown leaves none), the file holds every committed row: SQLite reads it as it is
        // (immutable=1). A log with frames in it is read with them, from a private copy of both (a
        // crash left it, then the folder became read-only). Either is a picture of the file when
        // opened; fileChanged() says when it is no longer right, and the ledger opens it again.
        const FileStamp log = stampOf(wal);
        if (!log.exists || log.size == 0) {
            why = tryOpen(sqliteUri(m_path, QStringLiteral("mode=ro&immutable=1")),
                          QStringLiteral("QSQLITE_OPEN_URI;QSQLITE_OPEN_READONLY"));
            if (why.isEmpty())
                m_reading = Reading::AsItIs;
        } else {
            auto copy = std::make_unique<QTemporaryDir>();
            const QString file = copy->filePath(QStringLiteral("usage.sqlite"));
            const auto copied = [](const QString &from, const QString &to) {
                return QFile::copy(from, to) &&
                       QFile::setPermissions(to, QFileDevice::ReadOwner | QFileDevice::WriteOwner);
            };
            if (!copy->isValid() || !copied(m_path, file) || !copied(wal, file + QStringLiteral("-wal"))) {
                why = QStringLiteral("cannot copy it with its write-ahead log %1 to read them: %2")
                          .arg(wal, copy->isValid() ? QStringLiteral("a copy failed") : copy->errorString());
            } else {
                why = tryOpen(file, QStringLiteral("QSQLITE_OPEN_READONLY;QSQLITE_BUSY_TIMEOUT=%1").arg(kBusyWaitMs));
                if (why.isEmpty()) {
                    m_reading = Reading::Copy;
                    m_copy = std::move(copy);
                }
            }
        }
        if (!why.isEmpty()) {
            *error = QStringLiteral("cannot read %1: %2; read as it is: %3").arg(m_path, shared, why);
            return false;
        }
    }
    m_stamp = stampOf(m_path);
    m_walStamp = stampOf(wal);
    m_open = true;
    return true;
}

void UsageDatabase::emptyLog() {
    if (m_open && m_reading == Reading::Shared)
        QSqlQuery(QSqlDatabase::database(m_connection, false)).exec(QStringLiteral("PRAGMA wal_checkpoint(TRUNCATE)"));
}

UsageDatabase::FileChange UsageDatabase::fileChanged() const {
    if (!m_open || m_path.isEmpty() || m_path == QLatin1String(":memory:") || !m_stamp.exists)
        return FileChange::None;
    const FileStamp now = stampOf(m_path);
    if (now.unknown)
        return FileChange::None; // cannot tell: the file open is kept
    if (!now.exists)
        return FileChange::Deleted;
    if (now.device != m_stamp.device || now.inode != m_stamp.inode)
        return FileChange::Replaced;
    // A picture of the file is right until the file or its log changes (a writer came).
    if (m_reading != Reading::Shared && (now.size != m_stamp.size || now.changedNs != m_stamp.changedNs ||
                                         stampOf(m_path + QStringLiteral("-wal")) != m_walStamp))
        return FileChange::Changed;
    return FileChange::None;
}

int UsageDatabase::schemaVersion() const {
    QSqlQuery q(QSqlDatabase::database(m_connection, false));
    if (!q.exec(QStringLiteral("PRAGMA user_version")) || !q.next())
        return -1;
    return q.value(0).toInt();
}

bool UsageDatabase::migrate(QString *error) {
    // Replicas that share a data folder open the file at the same moment. Each step takes the
    // write lock first (BEGIN IMMEDIATE; the other waits out the busy timeout) and reads the
    // version under it, so a step another process has just applied is never run twice. A plain
    // BEGIN read the version before the lock, and one of two replicas failed with "table usage
    // already exists" and kept its usage in memory only.
    QSqlDatabase db = QSqlDatabase::database(m_connection, false);
    const auto &steps = migrationSteps();
    QSqlQuery q(db);
    for (;;) {
        if (!q.exec(QStringLiteral("BEGIN IMMEDIATE"))) {
            *error = QStringLiteral("cannot lock the usage database: %1").arg(lastError(q));
            return false;
        }
        const int version = schemaVersion();
        if (version == kSchemaVersion)
            return q.exec(QStringLiteral("COMMIT"));
        if (version < 0 || version > kSchemaVersion) {
            *error = version < 0 ? QStringLiteral("cannot read the schema version: %1").arg(db.lastError().text())
                                 // a newer Switchman wrote it: leave it alone rather than guess
                                 : QStringLiteral("schema version %1 is newer than this Switchman's %2")
                                       .arg(version)
                                       .arg(kSchemaVersion);
            q.exec(QStringLiteral("ROLLBACK"));
            return false;
        }
        for (const QString &sql : steps.at(version)) {
            if (!q.exec(sql)) {
                *error = QStringLiteral("migrating to schema version %1: %2").arg(version + 1).arg(lastError(q));
                q.exec(QStringLiteral("ROLLBACK"));
                return false;
            }
        }
        if (!q.exec(QStringLiteral("PRAGMA user_version=%1").arg(version + 1)) || !q.exec(QStringLiteral("COMMIT"))) {
            *error = QStringLiteral("migrating to schema version %1: %2").arg(version + 1).arg(lastError(q));
            q.exec(QStringLiteral("ROLLBACK"));
            return false;
        }
    }
}

void UsageDatabase::setMaxPages(qint64 pages) {
    QSqlQuery q(QSqlDatabase::database(m_connection, false));
    q.exec(QStringLiteral("PRAGMA max_page_count=%1").arg(pages));
}

bool UsageDatabase::insert(const QList<UsageRow> &rows, QString *error) {
    return write(rows, {}, {}, {}, error);
}

bool UsageDatabase::write(const QList<UsageRow> &rows, const QList<UsageRow> &opened, const QStringList &closed,
                          const Writer &writer, QString *error, int *replacedInterrupted) {
    if (replacedInterrupted)
        *replacedInterrupted = 0;
    if (!m_open) {
        *error = QStringLiteral("the ledger is not open");
        return false;
    }
    if (rows.isEmpty() && opened.isEmpty() && closed.isEmpty())
        return true;
    QSqlDatabase db = QSqlDatabase::database(m_connection, false);
    if (!db.transaction()) {
        *error = db.lastError().text();
        return false;
    }
    const auto fail = [&](const QSqlQuery &q) {
        *error = lastError(q);
        db.rollback();
        return false;
    };
    QSqlQuery q(db);
    if (!rows.isEmpty()) {
        q.prepare(kInsertUsage);
        for (const UsageRow &r : rows) {
            bindUsage(q, r);
            if (!q.exec())
                return fail(q);
        }
    }
    if (!opened.isEmpty()) {
        q.prepare(QStringLiteral("INSERT OR REPLACE INTO open_usage (writer, host, pid, request_id, tenant, route,"
                                 " candidate, provider, model, input, output, cache_read, cache_write, cost, at_ms)"
                                 " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
        for (const UsageRow &r : opened) {
            const QVariantList values{text(writer.id),     text(writer.host), writer.pid,
                                      text(r.requestId),   text(r.tenant),    text(r.route),
                                      text(r.candidate),   text(r.provider),  text(modelOfCandidate(r.candidate)),
                                      count(r.input),      count(r.output),   count(r.cacheRead),
                                      count(r.cacheWrite), number(r.cost),    r.atEpochMs};
            for (int i = 0; i < values.size(); ++i)
                q.bindValue(i, values.at(i));
            if (!q.exec())
                return fail(q);
        }
    }
    if (writer.seenEpochMs > 0 && !writer.id.isEmpty()) {
        // The heartbeat goes with the open rows, in their transaction: no open row of this writer
        // is ever without it (a row without one is an older Switchman's). A batch without open
        // rows refreshes one already there.
        q.prepare(opened.isEmpty() ? QStringLiteral("UPDATE writers SET seen_ms = ? WHERE id = ?")
                                   : QStringLiteral("INSERT OR REPLACE INTO writers (seen_ms, id) VALUES (?, ?)"));
        q.bindValue(0, writer.seenEpochMs);
        q.bindValue(1, writer.id);
        if (!q.exec())
            return fail(q);
    }
    int replaced = 0;
    if (!closed.isEmpty()) {
        q.prepare(QStringLiteral("DELETE FROM open_usage WHERE writer = ? AND request_id = ?"));
        // An open row already gone was billed by another replica as "interrupted": this writer was
        // paused past kWriterStaleMs (a stopped container, a suspended host) and taken for gone. Its
        // final row, written above, is the real figure: the estimate goes, so the request is billed once.
        QSqlQuery settle(db);
        settle.prepare(QStringLiteral("DELETE FROM usage WHERE request_id = ? AND outcome = 'interrupted'"));
        for (const QString &id : closed) {
            q.bindValue(0, text(writer.id));
            q.bindValue(1, text(id));
            if (!q.exec())
                return fail(q);
            if (q.numRowsAffected() > 0)
                continue;
            settle.bindValue(0, text(id));
            if (!settle.exec())
                return fail(settle);
            replaced += std::max(0, settle.numRowsAffected());
        }
    }
    if (!commitOrRollBack(db, error))
        return false;
    if (replacedInterrupted)
        *replacedInterrupted = replaced;
    return true;
}

bool UsageDatabase::processRunning(qint64 pid) {
#ifdef Q_OS_UNIX
    if (pid <= 0 || pid != qint64(pid_t(pid)))
        return false;
    // Signal 0 asks without sending: EPERM is a process that runs as another user.
    if (::kill(pid_t(pid), 0) != 0 && errno != EPERM)
        return false;
#ifdef Q_OS_LINUX
    // A zombie answers signal 0 too: a crashed instance whose parent (a supervisor that restarts
    // it at once) has not reaped it yet runs no more, and its open rows are billed now, not at
    // some later start. Its state follows the name in parentheses, which may hold any byte.
    QFile stat(QStringLiteral("/proc/%1/stat").arg(pid));
    if (stat.open(QIODevice::ReadOnly)) {
        const QByteArray line = stat.read(4096);
        const qsizetype close = line.lastIndexOf(')');
        if (close >= 0 && close + 2 < line.size()) {
            const char state = line.at(close + 2);
            if (state == 'Z' || state == 'X')
                return false;
        }
    }
#endif
    return true;
#else
    Q_UNUSED(pid);
    return true; // unknown: left for the age rule
#endif
}

int UsageDatabase::billInterrupted(const Writer &me, qint64 nowEpochMs, QString *error, bool checkFirst) {
    if (!m_open) {
        *error = QStringLiteral("the ledger is not open");
        return -1;
    }
    QSqlDatabase db = QSqlDatabase::database(m_connection, false);
    QSqlQuery q(db);
    if (checkFirst) {
        // Every minute on every replica: one read, and the write lock only when another writer has
        // open rows (answers in flight, or left by a crash).
        q.prepare(QStringLiteral("SELECT 1 FROM open_usage WHERE writer <> ? LIMIT 1"));
        q.bindValue(0, me.id);
        if (!q.exec()) {
            *error = lastError(q);
            return -1;
        }
        if (!q.next())
            return 0;
        q.finish();
    }
    // The write lock first: replicas starting together on one file bill a dead writer's rows once.
    if (!q.exec(QStringLiteral("BEGIN IMMEDIATE"))) {
        *error = lastError(q);
        return -1;
    }
    struct Open {
        QString writer;
        UsageRow row;
    };
    QList<Open> gone;
    q.setForwardOnly(true);
    q.prepare(QStringLiteral("SELECT o.writer, o.host, o.pid, o.request_id, o.tenant, o.route, o.candidate, o.provider,"
                             " o.input, o.output, o.cache_read, o.cache_write, o.cost, o.at_ms, w.seen_ms"
                             " FROM open_usage o LEFT JOIN writers w ON w.id = o.writer WHERE o.writer <> ?"));
    q.bindValue(0, me.id);
    if (!q.exec()) {
        *error = lastError(q);
        QSqlQuery(db).exec(QStringLiteral("ROLLBACK"));
        return -1;
    }
    const QString myHostName = me.hostName.isEmpty() ? me.host : me.hostName;
    const qint64 staleBefore = nowEpochMs - kWriterStaleMs;
    while (q.next()) {
        const QString writer = q.value(0).toString();
        const QString host = q.value(1).toString();
        const qint64 pid = q.value(2).toLongLong();
        const qint64 atMs = q.value(13).toLongLong();
        const bool heartbeat = !q.value(14).isNull();
        const bool old = atMs < nowEpochMs - kOpenRowMaxAgeMs;
        // Another writer (never `me`) whose pid is this process's on this host: a restart that got
        // the same pid. Exact, and at once; but only where the pid means the same process.
        const auto pidGone = [&]() { return pid == me.pid || !processRunning(pid); };
        bool ended = false;
        if (heartbeat)
            // Another host or PID namespace: gone once its heartbeat stopped. This one: by the pid
            // too (a crash restarted at once), or the heartbeat (a pid reused by another program).
            ended = q.value(14).toLongLong() < staleBefore || (host == me.host && pidGone());
        else
            // An older Switchman's row, named by the host name alone: its rule.
            ended = host == myHostName && pidGone();
        if (!old && !ended)
            continue; // a live writer's answer (another replica), still running
        Open o;
        o.writer = writer;
        o.row.requestId = q.value(3).toString();
        o.row.tenant = q.value(4).toString();
        o.row.route = q.value(5).toString();
        o.row.candidate = q.value(6).toString();
        o.row.provider = q.value(7).toString();
        o.row.input = q.value(8).toLongLong();
        o.row.output = q.value(9).toLongLong();
        o.row.cacheRead = q.value(10).toLongLong();
        o.row.cacheWrite = q.value(11).toLongLong();
        o.row.cost = q.value(12).toDouble();
        o.row.outcome = QStringLiteral("interrupted");
        o.row.atEpochMs = atMs; // the budget period the answer ran in
        gone.append(std::move(o));
    }
    q.finish();
    QSqlQuery put(db);
    put.prepare(kInsertUsage);
    QSqlQuery drop(db);
    drop.prepare(QStringLiteral("DELETE FROM open_usage WHERE writer = ? AND request_id = ?"));
    for (const Open &o : std::as_const(gone)) {
        bindUsage(put, o.row);
        drop.bindValue(0, o.writer);
        drop.bindValue(1, o.row.requestId);
        const bool ok = put.exec() && drop.exec();
        if (!ok) {
            *error = put.lastError().text() + drop.lastError().text();
            QSqlQuery(db).exec(QStringLiteral("ROLLBACK"));
            return -1;
        }
    }
    // Heartbeats of writers gone with no open rows left: nothing reads them any more. A writer
    // only paused writes its heartbeat again with its next open row.
    QSqlQuery forget(db);
    forget.prepare(QStringLiteral("DELETE FROM writers WHERE seen_ms < ? AND id <> ?"
                                  " AND NOT EXISTS (SELECT 1 FROM open_usage o WHERE o.writer = writers.id)"));
    forget.bindValue(0, staleBefore);
    forget.bindValue(1, me.id);
    if (!forget.exec()) {
        *error = lastError(forget);
        QSqlQuery(db).exec(QStringLiteral("ROLLBACK"));
        return -1;
    }
    if (!QSqlQuery(db).exec(QStringLiteral("COMMIT"))) {
        *error = db.lastError().text();
        QSqlQuery(db).exec(QStringLiteral("ROLLBACK"));
        return -1;
    }
    return int(gone.size());
}

bool UsageDatabase::heartbeat(const QString &writer, qint64 nowEpochMs, QString *error) {
    if (!m_open) {
        *error = QStringLiteral("the ledger is not open");
        return false;
    }
    QSqlQuery q(QSqlDatabase::database(m_connection, false));
    q.prepare(QStringLiteral("INSERT OR REPLACE INTO writers (id, seen_ms) VALUES (?, ?)"));
    q.bindValue(0, writer);
    q.bindValue(1, nowEpochMs);
    if (!q.exec()) {
        *error = lastError(q);
        return false;
    }
    return true;
}

void UsageDatabase::retireWriter(const QString &writer) {
    if (!m_open)
        return;
    QSqlDatabase db = QSqlDatabase::database(m_connection, false);
    if (!db.transaction())
        return;
    QSqlQuery q(db);
    q.prepare(QStringLiteral("SELECT 1 FROM open_usage WHERE writer = ? LIMIT 1"));
    q.bindValue(0, writer);
    const bool leavesOpenRows = q.exec() && q.next();
    q.finish();
    q.prepare(leavesOpenRows ? QStringLiteral("UPDATE writers SET seen_ms = 0 WHERE id = ?")
                             : QStringLiteral("DELETE FROM writers WHERE id = ?"));
    q.bindValue(0, writer);
    if (q.exec())
        db.commit();
    else
        db.rollback();
}

int UsageDatabase::openRowCount() const {
    QSqlQuery q(QSqlDatabase::database(m_connection, false));
    if (!m_open || !q.exec(QStringLiteral("SELECT COUNT(*) FROM open_usage")) || !q.next())
        return -1;
    return q.value(0).toInt();
}

QList<UsageRow> UsageDatabase::allRows() const {
    QList<UsageRow> rows;
    QSqlQuery q(QSqlDatabase::database(m_connection, false));
    q.setForwardOnly(true);
    if (!m_open || !q.exec(QStringLiteral("SELECT request_id, tenant, route, candidate, provider, input, output,"
                                          " cache_read, cache_write, cost, outcome, at_ms FROM usage ORDER BY id")))
        return rows;
    while (q.next()) {
        rows.append(rowAt(q));
    }
    return rows;
}

UsageReport UsageDatabase::query(const UsageQuery &uq) const {
    UsageReport report;
    report.groupBy = uq.groupBy;
    if (!m_open) {
        report.error = QStringLiteral("the ledger is not open");
        return report;
    }
    QStringList where;
    QVariantList args;
    if (uq.sinceMs > 0) {
        where << QStringLiteral("at_ms >= ?");
        args << uq.sinceMs;
    }
    if (uq.untilMs > 0) {
        where << QStringLiteral("at_ms < ?");
        args << uq.untilMs;
    }
    if (!uq.tenant.isEmpty()) {
        where << QStringLiteral("tenant = ?");
        args << uq.tenant;
    }
    const QString filter =
        where.isEmpty() ? QString() : QStringLiteral(" WHERE ") + where.join(QStringLiteral(" AND "));
    const QString sums = QStringLiteral("COUNT(*), COALESCE(SUM(%1),0), COALESCE(SUM(%2),0),"
                                        " COALESCE(SUM(%3),0), COALESCE(SUM(%4),0), COALESCE(SUM(%5),0)")
                             .arg(saneCount("input"), saneCount("output"), saneCount("cache_read"),
                                  saneCount("cache_write"), saneCost());
    QSqlDatabase db = QSqlDatabase::database(m_connection, false);
    auto run = [&](const QString &sql) {
        QSqlQuery q(db);
        q.setForwardOnly(true);
        q.prepare(sql);
        for (int i = 0; i < args.size(); ++i)
            q.bindValue(i, args.at(i));
        if (!q.exec()) {
            report.unreadable = true;
            if (report.error.isEmpty())
                report.error = lastError(q);
        }
        return q;
    };
    // A step that failed ends a result as its end would: said, never taken for "no more rows".
    auto checkEnd = [&report](const QSqlQuery &q) {
        if (q.lastError().isValid()) {
            report.unreadable = true;
            if (report.error.isEmpty())
                report.error = lastError(q);
        }
    };
    auto totalsFrom = [](const QSqlQuery &q, int first) {
        UsageTotals t;
        t.attempts = q.value(first).toLongLong();
        t.input = q.value(first + 1).toLongLong();
        t.output = q.value(first + 2).toLongLong();
        t.cacheRead = q.value(first + 3).toLongLong();
        t.cacheWrite = q.value(first + 4).toLongLong();
        t.cost = q.value(first + 5).toDouble();
        return t;
    };
    {
        QSqlQuery q = run(QStringLiteral("SELECT ") + sums + QStringLiteral(" FROM usage") + filter);
        if (q.next())
            report.totals = totalsFrom(q, 0);
        else
            checkEnd(q);
    }
    QString key;
    switch (uq.groupBy) {
    case UsageGrouping::None:
        break;
    // SQLite's 'localtime' is the C library's, as QDateTime's local time is: days agree with the Usage screen.
    case UsageGrouping::Day:
        key = QStringLiteral("strftime('%Y-%m-%d', at_ms / 1000, 'unixepoch', 'localtime')");
        break;
    case UsageGrouping::Provider:
        key = QStringLiteral("provider");
        break;
    case UsageGrouping::Model:
        // A model is provider/id (SPEC): the same id at two providers is two models, priced apart.
        key = QStringLiteral("candidate");
        break;
    case UsageGrouping::Tenant:
        key = QStringLiteral("tenant");
        break;
    }
    if (uq.groupBy == UsageGrouping::Day) {
        QSqlQuery q =
            run(QStringLiteral("SELECT %1 AS k, %2 FROM usage%3 GROUP BY k ORDER BY k").arg(key, sums, filter));
        while (q.next()) {
            UsageTotals t = totalsFrom(q, 1);
            t.key = q.value(0).toString();
            report.groups.append(t);
        }
        checkEnd(q);
        return report;
    }
    if (uq.groupBy != UsageGrouping::None) {
        // The groups that cost most (then the most attempts), one more to tell whether any are left
        // over; SQLite keeps only those while it sorts. The rest are one "(other)" row: the totals
        // less the groups shown.
        const int maxGroups = std::clamp(uq.maxGroups, 1, UsageQuery::kMaxMaxGroups);
        QSqlQuery q = run(QStringLiteral("SELECT %1 AS k, %2 FROM usage%3 GROUP BY k ORDER BY %4 DESC, COUNT(*) DESC, k"
                                         " LIMIT %5")
                              .arg(key, sums, filter, QStringLiteral("SUM(%1)").arg(saneCost()))
                              .arg(maxGroups + 1));
        while (q.next()) {
            UsageTotals t = totalsFrom(q, 1);
            t.key = q.value(0).toString();
            report.groups.append(t);
        }
        checkEnd(q);
        const bool more = report.groups.size() > maxGroups;
        if (more)
            report.groups.removeLast();
        std::sort(report.groups.begin(), report.groups.end(),
                  [](const UsageTotals &a, const UsageTotals &b) { return a.key < b.key; });
        if (more) {
            UsageTotals other = report.totals;
            other.key = QStringLiteral("(other)");
            for (const UsageTotals &g : std::as_const(report.groups)) {
                other.attempts -= g.attempts;
                other.input -= g.input;
                other.output -= g.output;
                other.cacheRead -= g.cacheRead;
                other.cacheWrite -= g.cacheWrite;
                other.cost -= g.cost;
            }
            other.cost = std::max(0.0, other.cost);
            QSqlQuery n = run(QStringLiteral("SELECT COUNT(DISTINCT %1) FROM usage%2").arg(key, filter));
            other.otherGroups = n.next() ? std::max<qint64>(1, n.value(0).toLongLong() - maxGroups) : 1;
            report.groups.append(other);
        }
        return report;
    }
    QSqlQuery q = run(QStringLiteral("SELECT request_id, tenant, route, candidate, provider, %3, %4, %5, %6, %7,"
                                     " outcome, at_ms FROM (SELECT * FROM usage%1"
                                     " ORDER BY at_ms DESC, id DESC LIMIT %2) ORDER BY at_ms, id")
                          .arg(filter)
                          .arg(std::max(0, uq.limit))
                          .arg(saneCount("input"), saneCount("output"), saneCount("cache_read"),
                               saneCount("cache_write"), saneCost()));
    while (q.next()) {
        report.rows.append(rowAt(q));
    }
    checkEnd(q);
    return report;
}

double UsageDatabase::spentSince(const QString &tenant, qint64 sinceEpochMs, qint64 untilEpochMs, bool *ok,
                                 QString *error) const {
    if (ok)
        *ok = false;
    if (!m_open) {
        if (error)
            *error = QStringLiteral("the ledger is not open");
        return 0;
    }
    QSqlQuery q(QSqlDatabase::database(m_connection, false));
    q.prepare(QStringLiteral("SELECT COALESCE(SUM(%1),0) FROM usage WHERE tenant = ? AND at_ms >= ? AND at_ms < ?")
                  .arg(saneCost()));
    q.bindValue(0, tenant);
    q.bindValue(1, sinceEpochMs);
    q.bindValue(2, untilEpochMs > 0 ? untilEpochMs : std::numeric_limits<qint64>::max());
    if (!q.exec() || !q.next()) {
        if (error)
            *error = lastError(q).isEmpty() ? QStringLiteral("no sum read") : lastError(q);
        return 0;
    }
    if (ok)
        *ok = true;
    return q.value(0).toDouble();
}

bool UsageDatabase::writeReplays(const QList<ReplayRow> &ops, const QString &writer, QString *error) {
    QSqlDatabase db = QSqlDatabase::database(m_connection, false);
    if (!m_open || !db.transaction()) {
        *error = db.lastError().text();
        return false;
    }
    QSqlQuery drop(db);
    drop.prepare(QStringLiteral("DELETE FROM replays WHERE tenant = ? AND key = ?"));
    QSqlQuery put(db);
    put.prepare(QStringLiteral("INSERT INTO replays (tenant, key, digest, status, headers, body, at_ms, writer)"
                               " VALUES (?, ?, ?, ?, ?, ?, ?, ?)"));
    for (const ReplayRow &op : ops) {
        // A key kept again (let go, then taken by a new request) has one row: the newest.
        drop.bindValue(0, op.tenant);
        drop.bindValue(1, op.key);
        bool ok = drop.exec();
        if (ok && !op.dropped) {
            put.bindValue(0, op.tenant);
            put.bindValue(1, op.key);
            put.bindValue(2, op.requestDigest);
            put.bindValue(3, op.status);
            put.bindValue(4, op.headers);
            put.bindValue(5, op.body);
            put.bindValue(6, op.atEpochMs);
            put.bindValue(7, writer);
            ok = put.exec();
        }
        if (!ok) {
            *error = lastError(op.dropped ? drop : put);
            db.rollback();
            return false;
        }
    }
    return commitOrRollBack(db, error);
}

QList<ReplayRow> UsageDatabase::replaysAfter(qint64 afterId, qint64 sinceEpochMs, const QString &exceptWriter,
                                             qint64 maxBytes, qint64 *lastId) const {
    QList<ReplayRow> rows;
    *lastId = afterId;
    if (!m_open)
        return rows;
    QSqlDatabase db = QSqlDatabase::database(m_connection, false);
    QSqlQuery q(db);
    if (!q.exec(QStringLiteral("SELECT MAX(id) FROM replays")) || !q.next())
        return rows;
    const qint64 top = q.value(0).toLongLong();
    if (top <= afterId)
        return rows;
    *lastId = top;
    // Newest first, so the bound keeps the newest; handed back oldest first.
    q.prepare(QStringLiteral("SELECT tenant, key, digest, status, headers, body, at_ms FROM replays"
                             " WHERE id > ? AND id <= ? AND at_ms >= ? AND writer IS NOT ? ORDER BY id DESC"));
    q.bindValue(0, afterId);
    q.bindValue(1, top);
    q.bindValue(2, sinceEpochMs);
    q.bindValue(3, exceptWriter);
    if (!q.exec())
        return rows;
    qint64 bytes = 0;
    while (q.next()) {
        ReplayRow r;
        r.tenant = q.value(0).toString();
        r.key = q.value(1).toByteArray();
        r.requestDigest = q.value(2).toByteArray();
        r.status = q.value(3).toInt();
        r.headers = q.value(4).toByteArray();
        r.body = q.value(5).toByteArray();
        r.atEpochMs = q.value(6).toLongLong();
        bytes += r.headers.size() + r.body.size();
        if (bytes > maxBytes)
            break;
        rows.append(std::move(r));
    }
    std::reverse(rows.begin(), rows.end());
    return rows;
}

int UsageDatabase::pruneReplaysBefore(qint64 cutoffEpochMs) {
    QSqlQuery q(QSqlDatabase::database(m_connection, false));
    q.prepare(QStringLiteral("DELETE FROM replays WHERE at_ms < ?"));
    q.bindValue(0, cutoffEpochMs);
    return m_open && q.exec() ? q.numRowsAffected() : 0;
}

bool UsageDatabase::changedElsewhere(qint64 *seenVersion) const {
    QSqlQuery q(QSqlDatabase::database(m_connection, false));
    if (!m_open || !q.exec(QStringLiteral("PRAGMA data_version")) || !q.next())
        return true; // unknown: read it
    const qint64 version = q.value(0).toLongLong();
    return std::exchange(*seenVersion, version) != version;
}

bool UsageDatabase::changedElsewhere() {
    return changedElsewhere(&m_dataVersion);
}

int UsageDatabase::pruneBefore(qint64 cutoffEpochMs, QString *error) {
    QSqlQuery q(QSqlDatabase::database(m_connection, false));
    q.prepare(QStringLiteral("DELETE FROM usage WHERE at_ms < ?"));
    q.bindValue(0, cutoffEpochMs);
    if (!q.exec()) {
        *error = lastError(q);
        return -1;
    }
    const int n = q.numRowsAffected();
    // Notices of periods long gone are kept with the same retention as rows.
    q.prepare(QStringLiteral("DELETE FROM budget_notices WHERE period_start_ms < ?"));
    q.bindValue(0, cutoffEpochMs);
    q.exec();
    return n;
}

int UsageDatabase::keepNewest(int maxRows) {
    if (!m_open)
        return 0;
    QSqlQuery q(QSqlDatabase::database(m_connection, false));
    // Ids grow with every insert, so the newest rows are the highest ids.
    q.prepare(QStringLiteral("DELETE FROM usage WHERE id <= (SELECT MAX(id) FROM usage) - ?"));
    q.bindValue(0, qMax(0, maxRows));
    if (!q.exec())
        return 0;
    return q.numRowsAffected();
}

bool UsageDatabase::budgetNoticeGiven(const QString &tenant, qint64 periodStartMs) const {
    if (!m_open)
        return false;
    QSqlQuery q(QSqlDatabase::database(m_connection, false));
    q.prepare(QStringLiteral("SELECT 1 FROM budget_notices WHERE tenant = ? AND period_start_ms = ?"));
    q.bindValue(0, tenant);
    q.bindValue(1, periodStartMs);
    return q.exec() && q.next();
}

bool UsageDatabase::rememberBudgetNotice(const QString &tenant, qint64 periodStartMs, QString *error) {
    QSqlQuery q(QSqlDatabase::database(m_connection, false));
    q.prepare(QStringLiteral("INSERT OR IGNORE INTO budget_notices (tenant, period_start_ms) VALUES (?, ?)"));
    q.bindValue(0, tenant);
    q.bindValue(1, periodStartMs);
    if (!q.exec()) {
        *error = lastError(q);
        return false;
    }
    return true;
}

} // namespace sw::telemetry
