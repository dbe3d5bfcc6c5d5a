#pragma once
// The usage ledger: every usage row, kept across restarts in a SQLite
// file written off the request path. Lives on the engine thread; the file is
// owned by a worker thread. A row goes to the worker at once, off the request
// path; rows that come while a write is under way go together when it ends (one
// transaction for many under load), so a crash loses only the write under way.
// An answer in flight is not lost with it: at commit it gets an "open" row (its
// estimate so far), written at once and deleted only in the transaction that
// writes its final row, and the next start bills the open rows of a process
// that is gone. A
// file that cannot be written (read-only, full disk, locked) costs one log
// line, never a request: rows are then kept in memory (bounded) and retried on
// a timer that backs off, and once more at shutdown. A file that can be read
// but not written is opened read-only, so spend and history stay right; one
// that cannot be read at all (or cannot be created: a full disk at the first
// start) leaves the ledger in memory and not readable(), and tenants with a
// budget are refused (their spend is unknown); the file is tried again on the
// retry timer, and once it opens, the rows kept in memory meanwhile go to it. A file deleted
// or renamed over while running is noticed before the next batch (or spend read)
// and the path opened again, said once in the log.

#include "core/telemetry/usage_database.h"
#include "core/telemetry/usage_report.h"

#include <QHash>
#include <QObject>
#include <QSet>
#include <QStringList>
#include <QThread>
#include <functional>

namespace sw::util {
class Clock;
}

namespace sw::telemetry {

class UsageLedger final : public QObject {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(UsageLedger)
public:
    // The longest a row waits for the file while writes succeed (rows go at once when no write is
    // under way; this bounds the wait behind one); while they fail, rows go on this tick and on retries.
    static constexpr qint64 kFlushMs = 1000;
    static constexpr int kBatchRows = 500;
    static constexpr int kMaxUnwritten = 20000; // rows kept while the file cannot take them
    static constexpr qint64 kPruneEveryMs = 24LL * 3600 * 1000;
    // Rows a write could not store are tried again after this, doubling up to kRetryMaxMs.
    static constexpr qint64 kRetryFirstMs = 2000;
    static constexpr qint64 kRetryMaxMs = 60000;
    // A ledger held in memory (no file, or the file could not be opened) keeps only the newest rows:
    // every answered request adds one, so without a cap a long-running instance would grow without end.
    static constexpr int kMemoryMaxRows = 50000;
    // Open rows of writers gone since start (a crashed replica restarted in a new container within
    // the heartbeat window: its old rows' heartbeat was still fresh then) are billed at a check this often.
    static constexpr qint64 kBillCheckMs = 60'000;

    struct Options {
        QString path;            // empty or ":memory:" = this process only
        int retentionDays = 400; // usage.retentionDays
        qint64 maxPages = 0;     // > 0: cap the file's pages (tests: a full disk)
        // Fills a row's route when it has none, at batch time (the request's attempts name it by then).
        std::function<QString(const QString &requestId)> routeOf;
        bool writable = true; // false: the file is only read (tests: a read-only folder, which root can write)
        // Empty: this host and PID namespace (UsageDatabase::hostIdentity). Tests: another namespace's.
        QString host = QString();
    };
    using LogFn = std::function<void(const QString &level, const QString &message, const QJsonObject &fields)>;

    // Opens the file on the worker thread and waits for it (once, at engine start).
    UsageLedger(Options options, util::Clock &clock, LogFn log, QObject *parent = nullptr);
    ~UsageLedger() override; // writes what is pending, then stops the worker

    // A usage row; the request's final row (its id is the request's) ends the answer's open row.
    void append(const UsageRow &row);
    // An answer committed (a streamed one is final): its cost so far, by estimate, kept as an open
    // row until its final row comes, which deletes it in the same transaction. Written at once (with
    // the write under way's successor): at every moment the file holds the answer's open row or its
    // final row. A crash leaves it, and the next start bills it (outcome "interrupted"). Only for a
    // ledger file (nothing survives a ledger in memory).
    void openAnswer(const UsageRow &row);
    // The answer ended with no usage row (nothing to bill): its open row goes.
    void closeAnswer(const QString &requestId);
    // Answers on `context`'s thread after every row appended so far is written.
    void query(const UsageQuery &query, QObject *context, std::function<void(const UsageReport &)> done);
    void setRetentionDays(int days) { m_options.retentionDays = days; }
    void setMemoryMaxRows(int rows) { m_memoryMaxRows = rows; } // tests; takes effect at the next write
    // Blocking (engine start, a budget added by a reload): cost of a tenant since a moment. *ok false
    // when the file could not be read (a corrupt page: it opened, its sums fail), said in the log
    // once until a read succeeds again: the spend is unknown, never $0.
    double spentSince(const QString &tenant, qint64 sinceEpochMs, qint64 untilEpochMs = 0, bool *ok = nullptr);
    // Off the request path (BudgetTracker, every second): each window's spend, rows other processes
    // sharing the file wrote included, answered on `context`'s thread after every row appended so
    // far is written (rows the file could not take yet count too). nullopt when no other process
    // wrote since the last such read (nothing this process does not know) or the file could not be read.
    void readSpend(const QList<SpendWindow> &windows, QObject *context,
                   std::function<void(std::optional<QList<double>>)> done);
    bool budgetNoticeGiven(const QString &tenant, qint64 periodStartMs);
    void rememberBudgetNotice(const QString &tenant, qint64 periodStartMs);
    // Idempotency-Key answers (server::IdempotencyStore): a kept answer, or a key let go (`dropped`),
    // handed to the worker at once (not batched). Best effort: a file that cannot take them loses them, and
    // the answer is still replayed by this process.
    void keepReplay(ReplayRow row);
    // Blocking, once at engine start: the answers kept at or after sinceEpochMs, the newest
    // maxBytes of them, oldest first. Later reads (readNewReplays) start after them.
    QList<ReplayRow> loadReplays(qint64 sinceEpochMs, qint64 maxBytes);
    // Off the request path (every kReplayReadMs): answers other processes sharing the file kept
    // since the last read, on `context`'s thread. Nothing when no other process wrote.
    void readNewReplays(qint64 sinceEpochMs, qint64 maxBytes, QObject *context,
                        std::function<void(QList<ReplayRow>)> done);
    // Hands the pending batch to the worker and waits until it is written (or failed).
    void flushAndWait();
    // Prunes now (also runs at start and then every kPruneEveryMs on the clock).
    void pruneNow();

    bool persistent() const { return m_persistent; } // a file, opened and writable (at start, or since)
    // False when a file was configured and could not even be read at start: spend is unknown.
    bool readable() const { return m_readable; }
    bool readOnly() const { return m_readOnly; } // the file can be read, not written (yet)
    // What /healthz says of the ledger: "ok" (a file, written), "memory" (no file, by choice),
    // "read-only" (read; new rows wait in memory), "not writing" (writes fail now: a full disk, a
    // lock; rows wait in memory), "unavailable" (no file could be read: budgets are refused);
    // with the reason in SQLite's words, but for "ok" and "memory".
    struct Health {
        QString state;
        QString error;
    };
    Health health() const;
    void setMaxPages(qint64 pages); // tests: a disk that fills up, or gets room again
    QString path() const { return m_options.path; }
    int unwrittenRows() const { return m_unwritten; } // waiting for the file to take them

private:
    // This process, on its open rows; seen at seenEpochMs (> 0: its heartbeat written with them).
    UsageDatabase::Writer writerOf(qint64 seenEpochMs = 0) const;
    struct Opened {
        bool writable = false;
        bool readOnly = false;
        QString error;     // why it could not be written
        QString readError; // why it could not be read either
        QString howRead;   // read-only, not shared with writers: how, for the log
    };
    // Worker side: the configured file, writable if it can be, else read-only, else a ledger in
    // memory (sets m_db, m_dbReadOnly, m_dbInMemory). At start, and when the file was deleted or
    // renamed over while running.
    Opened openDatabase();
    // Worker side, once per batch or spend read: the path still names the file opened; if not,
    // opened again and said once in the log.
    void checkFile();
    // Worker side, on a retry while a ledger in memory stands in for the file: opens the file if it
    // can be now, and hands it the rows kept in memory meanwhile.
    void openFileAgain(qint64 nowEpochMs);
    void scheduleFlush();
    void writeSoon(); // rows to write: now if no write is under way, else when it ends
    void writeDone(); // a write handed to the worker ended (written or not)
    void flushReplays();
    void flush(bool retry = false);
    void scheduleRetry();
    void schedulePrune();
    void scheduleHeartbeat();
    void scheduleBillCheck();
    // Worker side: bills the open rows of writers gone (at start, then every kBillCheckMs).
    int billGoneWriters(qint64 nowEpochMs, bool checkFirst);
    void reportBilled(int answers);
    void onWriteResult(bool ok, const QString &error, int unwritten, bool readOnly);

    Options m_options;
    util::Clock &m_clock;
    LogFn m_log;
    QThread m_thread;
    UsageDatabase *m_db = nullptr; // used on m_thread only
    QObject *m_worker = nullptr;   // context for calls on m_thread
    QList<UsageRow> m_pending;
    QHash<QString, UsageRow> m_pendingOpen; // answers opened since the last batch, by request id
    QSet<QString> m_openWritten;            // answers whose open row went with a batch
    QStringList m_pendingClosed;            // of those, the ones that ended since the last batch
    QList<ReplayRow> m_pendingReplays;
    quint64 m_flushTimer = 0;
    int m_writing = 0; // writes handed to the worker and not yet ended
    quint64 m_pruneTimer = 0;
    quint64 m_retryTimer = 0;
    quint64 m_heartbeatTimer = 0;
    quint64 m_billTimer = 0;
    qint64 m_retryDelayMs = kRetryFirstMs;
    bool m_persistent = false;
    bool m_readable = true;
    bool m_stopping = false;              // the destructor runs: no retry is scheduled any more
    bool m_readOnly = false;              // set at start: the file is read, not written
    bool m_dbReadOnly = false;            // worker side: m_db is the file, opened read-only
    bool m_dbInMemory = false;            // worker side: m_db is in memory (its rows are capped)
    bool m_dbStandIn = false;             // worker side: in memory because the file could not be opened
    bool m_standIn = false;               // the same, engine side: a retry is kept scheduled
    int m_memoryMaxRows = kMemoryMaxRows; // used on the worker thread; set before rows are appended
    bool m_memoryCapSaid = false;         // worker side: the first dropped rows are logged, once
    bool m_failing = false;               // a write failed; the next success says so once
    bool m_spendUnread = false;           // a spend read failed; said once until one succeeds
    QString m_spendError;                 // why the last spend read failed
    QString m_stateError;                 // why the file cannot be read or written now (health())
    int m_unwritten = 0;
    // Worker side: this process's name on the replay rows it writes, the last replay row read,
    // and the file's data version as the replay reads last saw it.
    QString m_writer;
    QString m_host;     // with m_writer and the pid, the open rows' writer: is it gone, at the next start?
    QString m_hostName; // the host name alone (the rule for an older Switchman's open rows)
    qint64 m_replayCursor = 0;
    qint64 m_replayDataVersion = -1;
    // Worker side: rows a failed write could not store, retried with the next batch.
    QList<UsageRow> m_retry;
    QList<UsageRow> m_retryOpened;
    QStringList m_retryClosed;
    double unwrittenSpend(const QString &tenant, qint64 sinceEpochMs, qint64 untilEpochMs) const; // worker side
};

} // namespace sw::telemetry
