#include "core/telemetry/usage_ledger.h"

#include "core/telemetry/usage_database.h"
#include "core/util/clock.h"

#include <QCoreApplication>
#include <QJsonObject>
#include <QPointer>

namespace sw::telemetry {

namespace {
bool inMemory(const QString &path) {
    return path.isEmpty() || path == QLatin1String(":memory:");
}
} // namespace

UsageLedger::UsageLedger(Options options, util::Clock &clock, LogFn log, QObject *parent)
    : QObject(parent), m_options(std::move(options)), m_clock(clock), m_log(std::move(log)) {
    qRegisterMetaType<UsageReport>();
    m_thread.setObjectName(QStringLiteral("usage-ledger"));
    m_worker = new QObject;
    m_worker->moveToThread(&m_thread);
    m_thread.start(QThread::LowPriority);

    QString error;
    bool ok = false;
    QMetaObject::invokeMethod(
        m_worker,
        [this, &error, &ok]() {
            m_db = new UsageDatabase;
            const QString path = inMemory(m_options.path) ? QStringLiteral(":memory:") : m_options.path;
            ok = m_db->open(path, UsageDatabase::Mode::ReadWrite, &error);
            if (!ok) {
                // Still a ledger for this session, so queries and budgets work; nothing survives a restart.
                delete m_db;
                m_db = new UsageDatabase;
                QString ignored;
                m_db->open(QStringLiteral(":memory:"), UsageDatabase::Mode::ReadWrite, &ignored);
            }
            if (m_options.maxPages > 0)
                m_db->setMaxPages(m_options.maxPages);
        },
        Qt::BlockingQueuedConnection);
    m_persistent = ok && !inMemory(m_options.path);
    if (!ok)
        m_log(QStringLiteral("error"),
              QStringLiteral("usage ledger: cannot open %1 (%2); usage is kept in memory for this session only and "
                             "requests are served as usual")
                  .arg(m_options.path, error),
              {{QStringLiteral("path"), m_options.path}, {QStringLiteral("error"), error}});
    pruneNow();
    schedulePrune();
}

UsageLedger::~UsageLedger() {
    m_clock.cancel(m_flushTimer);
    m_clock.cancel(m_pruneTimer);
    flushAndWait();
    QMetaObject::invokeMethod(
        m_worker,
        [this]() {
            delete m_db;
            m_db = nullptr;
        },
        Qt::BlockingQueuedConnection);
    m_thread.quit();
    m_thread.wait();
    delete m_worker;
}

void UsageLedger::append(const UsageRow &row) {
    m_pending.append(row);
    if (m_pending.size() >= kBatchRows)
        flush();
    else
        scheduleFlush();
}

void UsageLedger::scheduleFlush() {
    if (m_flushTimer)
        return;
    m_flushTimer = m_clock.schedule(kFlushMs, [this]() {
        m_flushTimer = 0;
        flush();
    });
}

void UsageLedger::flush() {
    if (m_flushTimer) {
        m_clock.cancel(m_flushTimer);
        m_flushTimer = 0;
    }
    if (m_pending.isEmpty())
        return;
    QList<UsageRow> batch = std::exchange(m_pending, {});
    if (m_options.routeOf)
        for (UsageRow &row : batch)
            if (row.route.isEmpty())
                row.route = m_options.routeOf(row.requestId);
    QPointer<UsageLedger> self(this);
    QMetaObject::invokeMethod(m_worker, [this, self, batch = std::move(batch)]() mutable {
        // Rows a failed write kept go first: the ledger stays in time order.
        QList<UsageRow> rows = std::exchange(m_retry, {});
        rows += std::move(batch);
        QString error;
        const bool ok = m_db->insert(rows, &error);
        int dropped = 0;
        if (ok && !m_persistent)
            dropped = m_db->keepNewest(m_memoryMaxRows);
        if (dropped > 0 && !std::exchange(m_memoryCapSaid, true))
            QMetaObject::invokeMethod(this, [self, max = m_memoryMaxRows]() {
                if (self)
                    self->m_log(QStringLiteral("warning"),
                                QStringLiteral("usage ledger: held in memory, it keeps the newest %1 rows; older ones "
                                               "are dropped (configure a ledger file to keep them all)")
                                    .arg(max),
                                {{QStringLiteral("maxRows"), max}});
            });
        if (!ok) {
            m_retry = std::move(rows);
            if (m_retry.size() > kMaxUnwritten)
                m_retry.remove(0, m_retry.size() - kMaxUnwritten); // the oldest go first
        }
        const int unwritten = int(m_retry.size());
        QMetaObject::invokeMethod(this, [self, ok, error, unwritten]() {
            if (self)
                self->onWriteResult(ok, error, unwritten);
        });
    });
}

void UsageLedger::onWriteResult(bool ok, const QString &error, int unwritten) {
    m_unwritten = unwritten;
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

void UsageLedger::flushAndWait() {
    flush();
    QMetaObject::invokeMethod(
        m_worker, []() {}, Qt::BlockingQueuedConnection);
    QCoreApplication::sendPostedEvents(this); // the write result, so unwrittenRows() is current
}

void UsageLedger::query(const UsageQuery &q, QObject *context, std::function<void(const UsageReport &)> done) {
    flush(); // queued before the query: the answer holds every row appended so far
    QPointer<QObject> receiver(context);
    QMetaObject::invokeMethod(m_worker, [this, q, receiver, done = std::move(done)]() mutable {
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

double UsageLedger::spentSince(const QString &tenant, qint64 sinceEpochMs) {
    flush();
    double spent = 0;
    QMetaObject::invokeMethod(
        m_worker, [this, &spent, tenant, sinceEpochMs]() { spent = m_db->spentSince(tenant, sinceEpochMs); },
        Qt::BlockingQueuedConnection);
    return spent;
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
    QMetaObject::invokeMethod(m_worker, [this, self, cutoff]() {
        QString error;
        const int n = m_db->pruneBefore(cutoff, &error);
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
