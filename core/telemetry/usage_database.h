#pragma once
// The usage ledger's SQLite file through Qt SQL (QSQLITE): schema, migration,
// batched inserts, grouped queries and the retention prune. One connection per
// object, used only on the thread that opened it (a Qt SQL rule): the ledger's
// worker thread, or the command line reading the file of a stopped instance.

#include "core/telemetry/usage_report.h"

#include <QString>

#include <memory>

class QTemporaryDir;

namespace sw::telemetry {

class UsageDatabase final {
    Q_DISABLE_COPY_MOVE(UsageDatabase)
public:
    static constexpr int kSchemaVersion = 5;
    // An open row older than this is billed at start whoever wrote it (a stream does not run a day).
    static constexpr qint64 kOpenRowMaxAgeMs = 24LL * 3600 * 1000;
    // A writer with open rows says it is alive this often (its `writers` row, seen_ms); one not
    // seen for kWriterStaleMs is gone, whatever its pid says (another host or PID namespace).
    static constexpr qint64 kHeartbeatMs = 10'000;
    static constexpr qint64 kWriterStaleMs = 4 * kHeartbeatMs;

    // Who wrote an open row: one process's ledger (its id, new at each start), host and pid.
    struct Writer {
        QString id;
        // The host as hostIdentity() names it: on Linux, its name and the PID namespace, where the
        // pid is this process's.
        QString host;
        qint64 pid = 0;
        // The host name alone, as writers before heartbeats (schema 4) named it; empty: `host`.
        QString hostName = QString();
        // > 0: now, written as this writer's heartbeat with the open rows it writes.
        qint64 seenEpochMs = 0;
    };
    // The host part of a Writer: the host name and, on Linux, the PID namespace
    // ("myhost pid:[4026531836]"). Containers on the host network share a host name and are
    // each pid 1 in their own namespace: a pid names a process only within one namespace.
    // A namespace's number is given again only once every process in it has ended, so a writer
    // that shares this identity and is not this one runs here or is gone: the pid tells which.
    // `unique` stands in for a namespace that cannot be read, so no other writer shares it.
    static QString hostIdentity(const QString &hostName, const QString &unique);

    UsageDatabase();
    ~UsageDatabase();

    enum class Mode { ReadWrite, ReadOnly };
    // Creates the file and its folder (ReadWrite), turns on WAL and migrates the schema to
    // kSchemaVersion. ":memory:" holds the ledger in memory. False with *error set, in SQLite's
    // words. ReadWrite refuses a file no one may write (chmod 444): its owner meant it read-only.
    // ReadOnly reads a file whose folder cannot be written too (see Reading).
    bool open(const QString &path, Mode mode, QString *error);
    bool isOpen() const { return m_open; }
    QString path() const { return m_path; }
    int schemaVersion() const;

    // How a read-only file is read. Shared: as SQLite shares a WAL file with its writers (through
    // the -shm beside it). A folder that cannot be written leaves no room for a -shm: AsItIs reads
    // the file as it was at open (SQLite's immutable=1; right when no write-ahead log holds rows
    // beside it), Copy reads a private copy of the file and its log. Both are pictures of the
    // file at open: fileChanged() says when they are no longer right.
    enum class Reading { Shared, AsItIs, Copy };
    Reading reading() const { return m_reading; }
    // Whether a shared read was refused for a lock (another process holding the file in exclusive
    // locking mode), rather than for a folder SQLite cannot make its -shm in.
    bool sharedReadLocked() const { return m_sharedReadLocked; }
    // Whether the path still names the file opened: Deleted (nothing there now), Replaced
    // (another file renamed over it), Changed (a picture, AsItIs or Copy, whose file or log a
    // writer changed since). One stat() or two: the ledger asks once per batch or spend read.
    enum class FileChange { None, Deleted, Replaced, Changed };
    FileChange fileChanged() const;
    // Before letting go of a file deleted or renamed over: its write-ahead log is checkpointed into
    // it (through the open descriptors) and emptied. SQLite's close leaves the log of a moved file
    // where it is, and the next open would apply its pages to whatever file now has the name.
    void emptyLog();
    struct FileStamp {
        bool exists = false;
        bool unknown = false; // stat() failed for another reason than a missing file
        quint64 device = 0;
        quint64 inode = 0;
        qint64 size = 0;
        qint64 changedNs = 0;
        bool operator==(const FileStamp &) const = default;
    };

    // One transaction for the whole batch: all rows or none. maxPages > 0 caps the file (a
    // stand-in for a full disk in tests).
    bool insert(const QList<UsageRow> &rows, QString *error);
    // The same, with answers that committed and have not ended ("open" rows, open_usage, `writer`'s,
    // replaced by request id) and those that ended (`closed`: their open rows deleted): all in
    // one transaction, so a final row and the deletion of its open row are never apart. An ended
    // answer whose open row another replica billed meanwhile (this writer was paused and taken for
    // gone) has that "interrupted" row deleted with it: its final row replaces the estimate.
    // *replacedInterrupted: how many were.
    bool write(const QList<UsageRow> &rows, const QList<UsageRow> &opened, const QStringList &closed,
               const Writer &writer, QString *error, int *replacedInterrupted = nullptr);
    // At start, and every minute after: open rows whose writer is gone become usage rows with
    // outcome "interrupted", billed by their estimate, in one transaction (two replicas bill
    // a row once). Gone: on this host and PID namespace, its pid not running, or this pid with
    // another id (a restart that got the same pid); anywhere, its heartbeat older than
    // kWriterStaleMs; a writer with no heartbeat (an older Switchman) by the pid rule on the host
    // name alone; and any row older than kOpenRowMaxAgeMs. `me`'s own rows are never billed.
    // checkFirst: a read first, and no write lock when no other writer has open rows (the
    // periodic check). The number billed, or -1 with *error set.
    int billInterrupted(const Writer &me, qint64 nowEpochMs, QString *error, bool checkFirst = false);
    // The writer's heartbeat: seen now (its open rows are a live writer's).
    bool heartbeat(const QString &writer, qint64 nowEpochMs, QString *error);
    // A writer that stops: its heartbeat goes, or is set to "long ago" when it leaves open rows
    // (answers cut by the shutdown), so another replica bills them at its next check.
    void retireWriter(const QString &writer);
    int openRowCount() const; // -1 when it cannot be read
    // Every usage row, oldest first (a ledger in memory handing its rows to the file it stood in for).
    QList<UsageRow> allRows() const;
    // A process with this pid runs on this host (one that cannot be asked counts as running; a
    // zombie, dead but not yet reaped, does not).
    static bool processRunning(qint64 pid);
    void setMaxPages(qint64 pages);
    UsageReport query(const UsageQuery &query) const;
    // Cost per tenant in [sinceEpochMs, untilEpochMs) (budgets after a restart); until 0 = no end.
    // 0 when the file cannot be read, with *ok false.
    // *ok false (and *error why, in SQLite's words) when the sum could not be read: never spend of $0.
    double spentSince(const QString &tenant, qint64 sinceEpochMs, qint64 untilEpochMs = 0, bool *ok = nullptr,
                      QString *error = nullptr) const;
    // True when another connection (another process sharing the file) committed since the last call
    // on this object, and on the first call. Cheap (SQLite's data_version): asked every second.
    bool changedElsewhere();
    void forgetChanges() { m_dataVersion = -1; } // a read that failed: the next changedElsewhere() says true
    // Deletes rows older than the cutoff; the number deleted, or -1 on error.
    int pruneBefore(qint64 cutoffEpochMs, QString *error);
    // Deletes all but the newest `maxRows` rows; the number deleted (0 on error).
    int keepNewest(int maxRows);
    // The 80 % budget notice, once per tenant and period, across restarts.
    bool budgetNoticeGiven(const QString &tenant, qint64 periodStartMs) const;
    bool rememberBudgetNotice(const QString &tenant, qint64 periodStartMs, QString *error);

    // Idempotency-Key answers: rows kept and keys let go, in order, in one transaction; `writer`
    // names this process, so a replica reading the file skips its own rows.
    bool writeReplays(const QList<ReplayRow> &ops, const QString &writer, QString *error);
    // Rows kept at or after sinceEpochMs with an id above afterId and another writer than
    // exceptWriter (empty: any), oldest first: the newest maxBytes of them. *lastId is the
    // highest id the file holds, read before them.
    QList<ReplayRow> replaysAfter(qint64 afterId, qint64 sinceEpochMs, const QString &exceptWriter, qint64 maxBytes,
                                  qint64 *lastId) const;
    int pruneReplaysBefore(qint64 cutoffEpochMs);
    // Like changedElsewhere(), with the caller's own memory of the version (two readers of one file).
    bool changedElsewhere(qint64 *seenVersion) const;

    // The default file: $XDG_DATA_HOME/switchman/usage.sqlite (~/.local/share/switchman/usage.sqlite).
    static QString defaultPath();

private:
    bool migrate(QString *error);
    bool openReadOnly(QString *error);
    QString m_connection;
    QString m_path;
    bool m_open = false;
    Reading m_reading = Reading::Shared;
    bool m_sharedReadLocked = false;
    FileStamp m_stamp;                     // the file opened, as it was then
    FileStamp m_walStamp;                  // its write-ahead log then (a picture's only)
    std::unique_ptr<QTemporaryDir> m_copy; // Reading::Copy: the copy read, removed with this object
    qint64 m_dataVersion = -1;             // as changedElsewhere() last saw it; -1 = not asked yet
};

} // namespace sw::telemetry
