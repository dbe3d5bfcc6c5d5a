#include "core/telemetry/usage_ledger.h"

#include "core/telemetry/usage_database.h"
#include "core/util/clock.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QJsonObject>
#include <QPointer>
#include <QScopeGuard>
#include <QSysInfo>
#include <QUuid>

#include <algorithm>

namespace sw::telemetry {

namespace {
bool inMemory(const QString &path) {
    return path.isEmpty() || path == QLatin1String(":memory:");
}
} // namespace

UsageLedger::UsageLedger(Options options, util::Clock &clock, LogFn log, QObject *parent)
    : QObject(parent), m_options(std::move(options)), m_clock(clock), m_log(std::move(log)) {
    qRegisterMetaType<UsageReport>();
    m_writer = QUuid::createUuid().toString(QUuid::WithoutBraces);
    m_hostName = QSysInfo::machineHostName();
    m_host = m_options.host.isEmpty() ? UsageDatabase::hostIdentity(m_hostName, m_writer) : m_options.host;
    const qint64 nowEpochMs = m_clock.epochMs();
    int interrupted = 0;
    m_thread.setObjectName(QStringLiteral("usage-ledger"));
    m_worker = new QObject;
    m_worker->moveToThread(&m_thread);
    m_thread.start(QThread::LowPriority);

    Opened opened;
    QMetaObject::invokeMethod(
        m_worker,
        [this, &opened, &interrupted, nowEpochMs]() {
            opened = openDatabase();
            if (opened.writable && !m_dbInMemory) // before any spend is read: answers a crash cut, by estimate
                interrupted = billGoneWriters(nowEpochMs, false);
        },
        Qt::BlockingQueuedConnection);
    const bool ok = opened.writable;
    const bool readOnly = opened.readOnly;
    const QString &error = opened.error;
    m_persistent = ok && !inMemory(m_options.path);
    m_readOnly = readOnly;
    m_readable = ok || readOnly;
    if (readOnly) {
        m_stateError = error;
        m_log(QStringLiteral("error"),
              QStringLiteral("usage ledger: cannot write %1 (%2); it is read%3 (spend and budgets stay right), "
                             "requests are served as usual, and up to %4 new usage rows wait in memory until it can "
                             "be written")
                  .arg(m_options.path, error, opened.howRead)
                  .arg(kMaxUnwritten),
              {{QStringLiteral("path"), m_options.path}, {QStringLiteral("error"), error}});
    } else if (!ok) {
        m_stateError = opened.readError.isEmpty() ? error : error + QStringLiteral("; ") + opened.readError;
        m_log(QStringLiteral("error"),
              QStringLiteral("usage ledger: cannot open %1 (%2); usage is kept in memory until it can be opened "
                             "(tried again every few seconds, backing off to a minute); tenants with a spend budget "
                             "are refused meanwhile (503: their spend cannot be read), other requests are served as "
                             "usual")
                  .arg(m_options.path, m_stateError),
              {{QStringLiteral("path"), m_options.path}, {QStringLiteral("error"), m_stateError}});
        // A full disk or a folder not mounted yet passes: the file is tried again, not given up
        // for the session (probe AC4 F1).
        m_standIn = true;
        scheduleRetry();
    }
    reportBilled(interrupted);
    pruneNow();
    schedulePrune();
    if (!inMemory(m_options.path)) {
        scheduleHeartbeat();
        scheduleBillCheck();
    }
}

UsageDatabase::Writer UsageLedger::writerOf(qint64 seenEpochMs) const {
    return {m_writer, m_host, QCoreApplication::applicationPid(), m_hostName, seenEpochMs};
}

int UsageLedger::billGoneWriters(qint64 nowEpochMs, bool checkFirst) {
    QString ignored; // a file that cannot take it says so with the first batch
    const int billed = m_db->billInterrupted(writerOf(), nowEpochMs, &ignored, checkFirst);
    // This connection's own commit does not move the file's data version for it: the next spend
    // read sums the file again, so budgets count the rows billed here as other replicas' rows.
    if (billed > 0)
        m_db->forgetChanges();
    return billed;
}

void UsageLedger::reportBilled(int answers) {
    if (answers > 0)
        m_log(QStringLiteral("warn"),
              QStringLiteral("usage: %1 answers cut by a crash (or a pause past the heartbeat) billed by estimate")
                  .arg(answers),
              {{QStringLiteral("answers"), answers}, {QStringLiteral("outcome"), QStringLiteral("interrupted")}});
}

void UsageLedger::scheduleHeartbeat() {
    m_heartbeatTimer = m_clock.schedule(UsageDatabase::kHeartbeatMs, [this]() {
        m_heartbeatTimer = 0;
        // Only while this process has open rows in the file: nothing else reads a heartbeat, and
        // each write makes every replica's next spend read sum the file.
        if (m_persistent && !m_openWritten.isEmpty())
            QMetaObject::invokeMethod(m_worker, [this, now = m_clock.epochMs()]() {
                QString ignored; // missed beats are made up by the next; the stale rule allows a few
                if (!m_dbReadOnly && !m_dbInMemory)
                    m_db->heartbeat(m_writer, now, &ignored);
            });
        scheduleHeartbeat();
    });
}

void UsageLedger::scheduleBillCheck() {
    const qint64 due = m_clock.epochMs() + kBillCheckMs;
    m_billTimer = m_clock.schedule(kBillCheckMs, [this, due]() {
        m_billTimer = 0;
        const qint64 now = m_clock.epochMs();
        // Late by more than a beat: this process was paused (a suspended machine, a stopped
        // container) or the wall clock stepped forward. Heartbeats of writers paused with it look
        // stale until their next beat: this round is skipped, not taken as their end.
        if (m_persistent && now - due <= UsageDatabase::kHeartbeatMs) {
            QPointer<UsageLedger> self(this);
            QMetaObject::invokeMethod(m_worker, [this, self, now]() {
                if (m_dbReadOnly || m_dbInMemory)
                    return;
                const int billed = billGoneWriters(now, true);
                if (billed > 0)
                    QMetaObject::invokeMethod(this, [self, billed]() {
                        if (self)
                            self->reportBilled(billed);
                    });
            });
        }
        scheduleBillCheck();
    });
}

UsageLedger::Opened UsageLedger::openDatabase() {
    Opened o;
    delete m_db;
    m_db = new UsageDatabase;
    const QString path = inMemory(m_options.path) ? QStringLiteral(":memory:") : m_options.path;
    if (m_options.writable || inMemory(m_options.path))
        o.writable = m_db->open(path, UsageDatabase::Mode::ReadWrite, &o.error);
    else
        o.error = QStringLiteral("not writable");
    // A file a failed create left empty (the disk was full) holds nothing to read: read-only,
    // SQLite takes it for a ledger of schema version 0, and that, not the full disk, was the
    // reason given.
    const QFileInfo file(path);
    const bool empty = !inMemory(m_options.path) && file.exists() && file.isFile() && file.size() == 0;
    if (!o.writable && !inMemory(m_options.path) && !empty) {
        // Read-only (a read-only folder or file): its spend and history are still right. New
        // rows wait in memory and are written once it can take them.
        delete m_db;
        m_db = new UsageDatabase;
        o.readOnly = m_db->open(path, UsageDatabase::Mode::ReadOnly, &o.readError);
        if (o.readOnly && m_db->reading() != UsageDatabase::Reading::Shared && m_db->sharedReadLocked())
            o.howRead = (m_db->reading() == UsageDatabase::Reading::AsItIs
                             ? QStringLiteral(" as it is")
                             : QStringLiteral(" from a private copy with its write-ahead log")) +
                        QStringLiteral(" (another process holds it locked, so SQLite cannot share it; read again "
                                       "when that process changes it)");
        else if (o.readOnly && m_db->reading() != UsageDatabase::Reading::Shared)
            o.howRead = m_db->reading() == UsageDatabase::Reading::AsItIs
                            ? QStringLiteral(" as it is (its folder cannot be written either, so SQLite cannot share "
                                             "it; read again when another process changes it)")
                            : QStringLiteral(" from a private copy with its write-ahead log (its folder cannot be "
                                             "written, so SQLite cannot share it; read again when another process "
                                             "changes it)");
    }
    if (!o.writable && !o.readOnly) {
        // Still a ledger for this session, so queries work; nothing survives a restart.
        delete m_db;
        m_db = new UsageDatabase;
        QString ignored;
        m_db->open(QStringLiteral(":memory:"), UsageDatabase::Mode::ReadWrite, &ignored);
    }
    m_dbReadOnly = o.readOnly;
    m_dbInMemory = (!o.writable && !o.readOnly) || inMemory(m_options.path);
    m_dbStandIn = !o.writable && !o.readOnly && !inMemory(m_options.path);
    if (m_options.maxPages > 0)
        m_db->setMaxPages(m_options.maxPages);
    // A new file has its own row ids and data version: replay reads start over in it.
    m_replayCursor = 0;
    m_replayDataVersion = -1;
    return o;
}

void UsageLedger::checkFile() {
    if (m_dbInMemory || !m_db)
        return;
    const UsageDatabase::FileChange change = m_db->fileChanged();
    if (change == UsageDatabase::FileChange::None)
        return;
    if (change == UsageDatabase::FileChange::Changed) {
        // A picture of a read-only file that another process has written since: read it again
        // (shared now, if the writer made a -shm this process can read). A failed try keeps the old
        // picture and is made again at the next check.
        auto *again = new UsageDatabase;
        QString ignored;
        if (again->open(m_options.path, UsageDatabase::Mode::ReadOnly, &ignored)) {
            delete m_db;
            m_db = again;
            m_replayDataVersion = -1;
        } else {
            delete again;
        }
        return;
    }
    // Deleted or renamed over: rows written on would go to a file no one can open again, and be
    // lost at the next start. The old connection goes first, its log emptied (a new file there
    // must not inherit its pages), then the path is opened as at start.
    const bool deleted = change == UsageDatabase::FileChange::Deleted;
    m_db->emptyLog();
    delete m_db;
    m_db = nullptr;
    const Opened o = openDatabase();
    QString message =
        deleted ? QStringLiteral("usage ledger: %1 was deleted while Switchman was running; the rows it held are gone "
                                 "with it (budgets keep what was spent this period until a restart)")
                      .arg(m_options.path)
                : QStringLiteral("usage ledger: %1 was replaced by another file while Switchman was running; "
                                 "history is read from the new file, and budgets keep what was spent this period "
                                 "(spend in a period never goes down until a restart)")
                      .arg(m_options.path);
    QString level = QStringLiteral("warn");
    QString error;
    if (o.writable) {
        message += deleted ? QStringLiteral(", and usage from now on is written to a new file there")
                           : QStringLiteral(", and usage from now on is written to it");
    } else if (o.readOnly) {
        error = o.error;
        level = QStringLiteral("error");
        message += QStringLiteral("; it cannot be written (%1): up to %2 new usage rows wait in memory")
                       .arg(o.error)
                       .arg(kMaxUnwritten);
    } else {
        error = o.readError.isEmpty() ? o.error : o.error + QStringLiteral("; ") + o.readError;
        level = QStringLiteral("error");
        message += QStringLiteral("; it cannot be opened (%1): usage is kept in memory for this session only, and "
                                  "tenants with a spend budget are refused (503)")
                       .arg(error);
    }
    QPointer<UsageLedger> self(this);
    QMetaObject::invokeMethod(this, [self, level, message, error, o]() {
        if (!self)
            return;
        self->m_readOnly = o.readOnly;
        self->m_readable = o.writable || o.readOnly;
        self->m_persistent = o.writable && !inMemory(self->m_options.path);
        self->m_stateError = error;
        self->m_failing = false; // this file's trouble, if any, is said here
        self->m_log(level, message, {{QStringLiteral("path"), self->m_options.path}, {QStringLiteral("error"), error}});
        self->m_standIn = !o.writable && !o.readOnly;
        if (self->m_standIn && !self->m_stopping)
            self->scheduleRetry();
    });
}

void UsageLedger::openFileAgain(qint64 nowEpochMs) {
    UsageDatabase *memory = std::exchange(m_db, nullptr);
    const Opened o = openDatabase();
    QPointer<UsageLedger> self(this);
    if (!o.writable && !o.readOnly) {
        delete m_db;
        m_db = memory; // its rows stay; the next retry tries the file again
        const QString error = o.readError.isEmpty() ? o.error : o.error + QStringLiteral("; ") + o.readError;
        QMetaObject::invokeMethod(this, [self, error]() {
            if (!self)
                return;
            self->m_stateError = error;
            if (!self->m_stopping)
                self->scheduleRetry();
        });
        return;
    }
    // The rows kept in memory go first, with this write: the ledger stays in time order. A file
    // that can only be read keeps them waiting, as any row it cannot take yet.
    QList<UsageRow> kept = memory->allRows();
    delete memory;
    kept += std::exchange(m_retry, {});
    m_retry = std::move(kept);
    const int rows = int(m_retry.size());
    const int interrupted = o.writable ? billGoneWriters(nowEpochMs, false) : 0;
    QMetaObject::invokeMethod(this, [self, o, rows, interrupted]() {
        if (!self)
            return;
        self->m_standIn = false;
        self->m_readOnly = o.readOnly;
        self->m_readable = true;
        self->m_persistent = o.writable;
        self->m_stateError = o.readOnly ? o.error : QString();
        self->m_failing = o.readOnly; // a file read-only says so here, not again with its first write
        QString message = o.writable ? QStringLiteral("usage ledger: %1 opened at last; budgets are enforced again")
                                           .arg(self->m_options.path)
                                     : QStringLiteral("usage ledger: %1 opened at last, read-only (%2); budgets are "
                                                      "enforced again")
                                           .arg(self->m_options.path, o.error);
        if (rows > 0)
            message +=
                o.writable
                    ? QStringLiteral(", and the %1 usage rows kept in memory meanwhile are written to it").arg(rows)
                    : QStringLiteral(", and the %1 usage rows kept in memory wait until it can be "
                                     "written")
                          .arg(rows);
        self->m_log(QStringLiteral("info"), message,
                    {{QStringLiteral("path"), self->m_options.path}, {QStringLiteral("rows"), rows}});
        self->reportBilled(interrupted);
    });
}

UsageLedger::Health UsageLedger::health() const {
    if (inMemory(m_options.path))
        return {QStringLiteral("memory"), QString()};
    if (!m_readable)
        return {QStringLiteral("unavailable"),
                QStringLiteral("cannot open %1 (%2): tenants with a spend budget are refused until it opens")
                    .arg(m_options.path, m_stateError)};
    // A file that opens but whose spend cannot be summed refuses every tenant with a budget, as one
    // that cannot be read does: /healthz said "ok" meanwhile.
    if (m_spendUnread)
        return {QStringLiteral("unavailable"),
                QStringLiteral("cannot read the spend in %1 (%2): tenants with a spend budget are refused")
                    .arg(m_options.path, m_spendError)};
    if (m_readOnly)
        return {QStringLiteral("read-only"),
                QStringLiteral("cannot write %1 (%2); it is read, and new usage rows wait in memory (%3 now)")
                    .arg(m_options.path, m_stateError)
                    .arg(m_unwritten)};
    if (m_unwritten > 0)
        return {QStringLiteral("not writing"), QStringLiteral("cannot write %1 (%2); %3 usage rows wait in memory")
                                                   .arg(m_options.path, m_stateError)
                                                   .arg(m_unwritten)};
    return {QStringLiteral("ok"), QString()};
}

UsageLedger::~UsageLedger() {
    m_clock.cancel(m_flushTimer);
    m_clock.cancel(m_pruneTimer);
    m_clock.cancel(m_heartbeatTimer);
    m_clock.cancel(m_billTimer);
    m_stopping = true;
    m_clock.cancel(m_retryTimer);
    m_retryTimer = 0;
    // The pending batch and, once more, the rows an earlier write could not store.
    flush(true);
    QMetaObject::invokeMethod(
        m_worker, []() {}, Qt::BlockingQueuedConnection);
    QCoreApplication::sendPostedEvents(this);
    if (m_unwritten > 0)
        m_log(QStringLiteral("error"),
              QStringLiteral("usage ledger: %1 usage rows could not be written to %2 before shutdown and are lost")
                  .arg(m_unwritten)
                  .arg(m_options.path),
              {{QStringLiteral("path"), m_options.path}, {QStringLiteral("rows"), m_unwritten}});
    QMetaObject::invokeMethod(
        m_worker,
        [this]() {
            // This writer ends: answers it leaves open (cut by the shutdown) are anyone's to bill now.
            if (!m_dbReadOnly && !m_dbInMemory)
                m_db->retireWriter(m_writer);
            delete m_db;
            m_db = nullptr;
        },
        Qt::BlockingQueuedConnection);
    m_thread.quit();
    m_thread.wait();
    delete m_worker;
}

void UsageLedger::append(const UsageRow &row) {
    closeAnswer(row.requestId);
    m_pending.append(row);
    writeSoon();
}

void UsageLedger::openAnswer(const UsageRow &row) {
    if (!m_persistent || m_stopping)
        return;
    m_pendingOpen.insert(row.requestId, row);
    writeSoon();
}

void UsageLedger::writeSoon() {
    // A row is spend the provider billed and an answer the client has: it goes to the file at
    // once, not on the next tick, so a kill -9 right after an answer loses neither its row nor its
    // open row (probe R4 F1). While a write is under way, rows gather and go together when it ends
    // (writeDone): under load a write carries many rows, alone it carries one. A file that does not
    // take writes now is tried again on the tick and the retry timer only, not once per row.
    if (m_pending.size() >= kBatchRows || (m_writing == 0 && m_unwritten == 0))
        flush();
    else
        scheduleFlush();
}

void UsageLedger::writeDone() {
    --m_writing;
    if (m_writing == 0 && m_unwritten == 0 && !m_stopping &&
        (!m_pending.isEmpty() || !m_pendingOpen.isEmpty() || !m_pendingClosed.isEmpty()))
        flush();
}

void UsageLedger::closeAnswer(const QString &requestId) {
    if (m_pendingOpen.isEmpty() && m_openWritten.isEmpty())
        return;
    if (m_pendingOpen.remove(requestId))
        return; // never written: nothing to delete
    if (m_openWritten.remove(requestId)) {
        m_pendingClosed.append(requestId); // deleted in the batch that holds the final row
        writeSoon();
    }
}

void UsageLedger::scheduleFlush() {
    if (m_flushTimer)
        return;
    m_flushTimer = m_clock.schedule(kFlushMs, [this]() {
        m_flushTimer = 0;
        flush();
    });
}

void UsageLedger::flush(bool retry) {
    if (m_flushTimer) {
        m_clock.cancel(m_flushTimer);
        m_flushTimer = 0;
    }
    flushReplays();
    // With nothing new, the rows a failed write kept still go when asked (the retry timer, shutdown).
    if (m_pending.isEmpty() && m_pendingOpen.isEmpty() && m_pendingClosed.isEmpty() && !retry)
        return;
    QList<UsageRow> batch = std::exchange(m_pending, {});
    // Answers still open at the batch are written as open rows (the destructor's flush too: an
    // answer without its final row is not taken for ended); later, their final row deletes them.
    QList<UsageRow> opened = std::exchange(m_pendingOpen, {}).values();
    for (const UsageRow &row : std::as_const(opened))
        m_openWritten.insert(row.requestId);
    QStringList closed = std::exchange(m_pendingClosed, {});
    if (m_options.routeOf)
        for (QList<UsageRow> *rows : {&batch, &opened})
            for (UsageRow &row : *rows)
                if (row.route.isEmpty())
                    row.route = m_options.routeOf(row.requestId);
    QPointer<UsageLedger> self(this);
    ++m_writing;
    QMetaObject::invokeMethod(m_worker, [this, self, batch = std::move(batch), opened = std::move(opened),
                                         closed = std::move(closed), seen = m_clock.epochMs(), retry]() mutable {
        // However it ends, the rows gathered meanwhile go next (after the write's result).
        const auto done = qScopeGuard([this, self]() {
            QMetaObject::invokeMethod(this, [self]() {
                if (self)
                    self->writeDone();
            });
        });
        // On the retry timer (and at shutdown), not per batch: a failed open can take seconds.
        if (retry && m_dbStandIn)
            openFileAgain(seen);
        // Rows a failed write kept go first: the ledger stays in time order.
        QList<UsageRow> rows = std::exchange(m_retry, {});
        rows += std::move(batch);
        QList<UsageRow> opens = std::exchange(m_retryOpened, {});
        opens += std::move(opened);
        QStringList closes = std::exchange(m_retryClosed, {});
        closes += std::move(closed);
        // An answer opened and ended while the file could not take its open row: neither is written.
        for (qsizetype i = closes.size() - 1; i >= 0; --i) {
            const auto it = std::find_if(opens.begin(), opens.end(),
                                         [&](const UsageRow &r) { return r.requestId == closes.at(i); });
            if (it != opens.end()) {
                opens.erase(it);
                closes.removeAt(i);
            }
        }
        if (rows.isEmpty() && opens.isEmpty() && closes.isEmpty())
            return;  // a retry with nothing left to write
        checkFile(); // never a batch into a file deleted or renamed over meanwhile
        if (m_dbReadOnly && m_options.writable) {
            // Opened read-only at start: it may take writes now (the folder made writable again).
            auto *writable = new UsageDatabase;
            QString ignored;
            if (writable->open(m_options.path, UsageDatabase::Mode::ReadWrite, &ignored)) {
                delete m_db;
                m_db = writable;
                m_dbReadOnly = false;
                if (m_options.maxPages > 0)
                    m_db->setMaxPages(m_options.maxPages);
            } else {
                delete writable;
            }
        }
        QString error;
        int replaced = 0;
        const bool ok = m_db->write(rows, opens, closes, writerOf(seen), &error, &replaced);
        if (replaced > 0)
            QMetaObject::invokeMethod(this, [self, replaced]() {
                if (self)
                    self->m_log(QStringLiteral("warn"),
                                QStringLiteral("usage: %1 answers another replica billed as interrupted (this process "
                                               "was paused long enough to look gone) finished after all; their final "
                                               "rows replace the estimate, so each is billed once")
                                    .arg(replaced),
                                {{QStringLiteral("answers"), replaced}});
            });
        int dropped = 0;
        if (ok && m_dbInMemory)
            dropped = m_db->keepNewest(m_memoryMaxRows);
        if (dropped > 0 && !std::exchange(m_memoryCapSaid, true))
            QMetaObject::invokeMethod(this, [self, max = m_memoryMaxRows]() {
                if (self)
                    self->m_log(QStringLiteral("warn"),
                                QStringLiteral("usage ledger: held in memory, it keeps the newest %1 rows; older ones "
                                               "are dropped (configure a ledger file to keep them all)")
                                    .arg(max),
                                {{QStringLiteral("maxRows"), max}});
            });
        if (!ok) {
            m_retryOpened = std::move(opens);
            m_retryClosed = std::move(closes);
            m_retry = std::move(rows);
            if (m_retry.size() > kMaxUnwritten)
                m_retry.remove(0, m_retry.size() - kMaxUnwritten); // the oldest go first
        }
        const int unwritten = int(m_retry.size());
        const bool readOnly = m_dbReadOnly;
        QMetaObject::invokeMethod(this, [self, ok, error, unwritten, readOnly]() {
            if (self)
                self->onWriteResult(ok, error, unwritten, readOnly);
        });
    });
}

void UsageLedger::onWriteResult(bool ok, const QString &error, int unwritten, bool readOnly) {
    m_unwritten = unwritten;
    if (m_readOnly && !readOnly) { // the file takes writes again (its folder or mode made writable)
        m_readOnly = false;
        m_persistent = true;
    }
    if (!ok && !m_readOnly)
        m_stateError = error;
    if ((unwritten > 0 || m_standIn) && !m_stopping) {
        scheduleRetry();
    } else {
        m_clock.cancel(m_retryTimer);
        m_retryTimer = 0;
        m_retryDelayMs = kRetryFirstMs;
    }
    if (!ok && m_readOnly && !m_failing) {
        m_failing = true; // said at start, with the reason
        return;
    }
    if (!ok && !m_failing) {
        m_failing = true;
        // One line for the whole outage, not one per batch.
        m_log(QStringLiteral("error"),
              QStringLiteral("usage ledger: cannot write %1 (%2); requests are served as usual, up to %3 usage rows "
                             "wait in memory and are written when it can take them again")
                  .arg(m_options.path.isEmpty() ? QStringLiteral("memory") : m_options.path, error)
                  .arg(kMaxUnwritten),
              {{QStringLiteral("path"), m_options.path}, {QStringLiteral("error"), error}});
    } else if (ok && m_failing) {
        m_failing = false;
        m_log(QStringLiteral("info"), QStringLiteral("usage ledger: writing again"),
              {{QStringLiteral("path"), m_options.path}});
    }
}

void UsageLedger::scheduleRetry() {
    if (m_retryTimer)
        return;
    const qint64 delay = m_retryDelayMs;
    m_retryDelayMs = std::min(kRetryMaxMs, m_retryDelayMs * 2);
    m_retryTimer = m_clock.schedule(delay, [this]() {
        m_retryTimer = 0;
        flush(true);
    });
}

void UsageLedger::setMaxPages(qint64 pages) {
    m_options.maxPages = pages;
    QMetaObject::invokeMethod(
        m_worker, [this, pages]() { m_db->setMaxPages(pages); }, Qt::BlockingQueuedConnection);
}

void UsageLedger::keepReplay(ReplayRow row) {
    if (!m_persistent)
        return; // a ledger in memory (or read-only) keeps nothing past this process, which has them
    // To the worker now, not with the next batch: the retry a crash of this process provokes is
    // what the key is for, and a second's batch lost to the crash would answer it afresh.
    m_pendingReplays.append(std::move(row));
    flushReplays();
}

void UsageLedger::flushReplays() {
    if (m_pendingReplays.isEmpty())
        return;
    QMetaObject::invokeMethod(m_worker, [this, ops = std::exchange(m_pendingReplays, {})]() {
        QString ignored; // best effort: this process still replays them; a failing file has said so
        checkFile();
        if (!m_dbReadOnly && !m_dbInMemory)
            m_db->writeReplays(ops, m_writer, &ignored);
    });
}

QList<ReplayRow> UsageLedger::loadReplays(qint64 sinceEpochMs, qint64 maxBytes) {
    QList<ReplayRow> rows;
    if (!m_persistent && !m_readOnly)
        return rows;
    QMetaObject::invokeMethod(
        m_worker,
        [this, &rows, sinceEpochMs, maxBytes]() {
            m_db->changedElsewhere(&m_replayDataVersion);
            rows = m_db->replaysAfter(0, sinceEpochMs, QString(), maxBytes, &m_replayCursor);
        },
        Qt::BlockingQueuedConnection);
    return rows;
}

void UsageLedger::readNewReplays(qint64 sinceEpochMs, qint64 maxBytes, QObject *context,
                                 std::function<void(QList<ReplayRow>)> done) {
    if (!m_persistent && !m_readOnly)
        return;
    QPointer<QObject> receiver(context);
    QMetaObject::invokeMethod(m_worker, [this, sinceEpochMs, maxBytes, receiver, done = std::move(done)]() mutable {
        // Once a second: the path still names the file this ledger holds (one stat).
        checkFile();
        // One PRAGMA when no other process wrote; this process's own rows are skipped by name.
        if (!m_db->changedElsewhere(&m_replayDataVersion))
            return;
        QList<ReplayRow> rows = m_db->replaysAfter(m_replayCursor, sinceEpochMs, m_writer, maxBytes, &m_replayCursor);
        if (rows.isEmpty() || !receiver)
            return;
        QMetaObject::invokeMethod(receiver, [receiver, rows = std::move(rows), done = std::move(done)]() {
            if (receiver)
                done(rows);
        });
    });
}

void UsageLedger::flushAndWait() {
    flush(true);
    QMetaObject::invokeMethod(
        m_worker, []() {}, Qt::BlockingQueuedConnection);
    QCoreApplication::sendPostedEvents(this); // the write result, so unwrittenRows() is current
}

void UsageLedger::query(const UsageQuery &q, QObject *context, std::function<void(const UsageReport &)> done) {
    flush(); // queued before the query: the answer holds every row appended so far
    QPointer<QObject> receiver(context);
    QMetaObject::invokeMethod(m_worker, [this, q, receiver, done = std::move(done)]() mutable {
        checkFile();
        UsageReport report = m_db->query(q);
        if (!m_retry.isEmpty() && report.error.isEmpty())
            report.error = QStringLiteral("%1 usage rows are not written yet (the ledger file cannot take them)")
                               .arg(m_retry.size());
        if (!receiver)
            return;
        QMetaObject::invokeMethod(receiver, [receiver, report = std::move(report), done = std::move(done)]() {
            if (receiver)
                done(report);
        });
    });
}

double UsageLedger::spentSince(const QString &tenant, qint64 sinceEpochMs, qint64 untilEpochMs, bool *ok) {
    flush();
    double spent = 0;
    bool read = false;
    QString error;
    QMetaObject::invokeMethod(
        m_worker,
        [this, &spent, &read, &error, tenant, sinceEpochMs, untilEpochMs]() {
            // Rows a write could not store yet are spend all the same.
            spent = m_db->spentSince(tenant, sinceEpochMs, untilEpochMs, &read, &error) +
                    unwrittenSpend(tenant, sinceEpochMs, untilEpochMs);
            if (!read)
                m_db->forgetChanges(); // the next spend read (BudgetTracker, each second) sums the file again
        },
        Qt::BlockingQueuedConnection);
    if (ok)
        *ok = read;
    // A file whose first page is whole but whose others are not opens fine and fails every sum
    // (probe R4 F2): a budget read as $0 would serve a tenant past it, silently.
    if (!read)
        m_spendError = error;
    if (!read && !std::exchange(m_spendUnread, true))
        m_log(QStringLiteral("error"),
              QStringLiteral("usage ledger: cannot read the spend in %1 (%2); tenants with a spend budget are refused "
                             "(503: their spend cannot be read) until it can be read again")
                  .arg(m_options.path, error),
              {{QStringLiteral("path"), m_options.path}, {QStringLiteral("error"), error}});
    else if (read && std::exchange(m_spendUnread, false))
        m_log(QStringLiteral("info"), QStringLiteral("usage ledger: spend read again"),
              {{QStringLiteral("path"), m_options.path}});
    return spent;
}

double UsageLedger::unwrittenSpend(const QString &tenant, qint64 sinceEpochMs, qint64 untilEpochMs) const {
    double spent = 0;
    for (const UsageRow &r : std::as_const(m_retry))
        if (r.tenant == tenant && r.atEpochMs >= sinceEpochMs && (untilEpochMs <= 0 || r.atEpochMs < untilEpochMs) &&
            r.cost > 0)
            spent += r.cost;
    return spent;
}

void UsageLedger::readSpend(const QList<SpendWindow> &windows, QObject *context,
                            std::function<void(std::optional<QList<double>>)> done) {
    flush(); // queued before the read: the answer holds every row appended so far
    QPointer<QObject> receiver(context);
    QMetaObject::invokeMethod(m_worker, [this, windows, receiver, done = std::move(done)]() mutable {
        std::optional<QList<double>> spent;
        checkFile();
        // This process's own rows the tracker counted as they came: only another writer's are news.
        // One PRAGMA a second when nothing changed, not a SUM per tenant.
        if (m_db->changedElsewhere()) {
            QList<double> sums;
            bool allRead = true;
            for (const SpendWindow &w : windows) {
                bool ok = false;
                sums.append(m_db->spentSince(w.tenant, w.sinceEpochMs, w.untilEpochMs, &ok) +
                            unwrittenSpend(w.tenant, w.sinceEpochMs, w.untilEpochMs));
                allRead = allRead && ok;
            }
            if (allRead)
                spent = std::move(sums);
            else
                m_db->forgetChanges(); // asked again next time, not taken for nothing new
        }
        if (!receiver)
            return;
        QMetaObject::invokeMethod(receiver, [receiver, spent = std::move(spent), done = std::move(done)]() {
            if (receiver)
                done(spent);
        });
    });
}

bool UsageLedger::budgetNoticeGiven(const QString &tenant, qint64 periodStartMs) {
    bool given = false;
    QMetaObject::invokeMethod(
        m_worker, [this, &given, tenant, periodStartMs]() { given = m_db->budgetNoticeGiven(tenant, periodStartMs); },
        Qt::BlockingQueuedConnection);
    return given;
}

void UsageLedger::rememberBudgetNotice(const QString &tenant, qint64 periodStartMs) {
    QMetaObject::invokeMethod(m_worker, [this, tenant, periodStartMs]() {
        QString ignored; // a ledger that cannot write has said so already; the notice may come again
        m_db->rememberBudgetNotice(tenant, periodStartMs, &ignored);
    });
}

void UsageLedger::pruneNow() {
    const qint64 cutoff = m_clock.epochMs() - qint64(m_options.retentionDays) * 86'400'000;
    QPointer<UsageLedger> self(this);
    const qint64 replayCutoff = m_clock.epochMs() - 24LL * 3600 * 1000;
    QMetaObject::invokeMethod(m_worker, [this, self, cutoff, replayCutoff]() {
        QString error;
        const int n = m_db->pruneBefore(cutoff, &error);
        // Replays are kept a day (the Idempotency-Key window), whatever the usage retention.
        m_db->pruneReplaysBefore(replayCutoff);
        QMetaObject::invokeMethod(this, [self, n, error]() {
            if (!self)
                return;
            if (n > 0)
                self->m_log(
                    QStringLiteral("info"), QStringLiteral("usage ledger: pruned rows past retention"),
                    {{QStringLiteral("rows"), n}, {QStringLiteral("retentionDays"), self->m_options.retentionDays}});
        });
    });
}

void UsageLedger::schedulePrune() {
    m_pruneTimer = m_clock.schedule(kPruneEveryMs, [this]() {
        m_pruneTimer = 0;
        pruneNow();
        schedulePrune();
    });
}

} // namespace sw::telemetry
