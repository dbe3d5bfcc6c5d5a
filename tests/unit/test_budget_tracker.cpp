// Spend budgets per tenant on the fake clock: calendar periods in
// local time, the refusal and its Retry-After, the reset when the period turns,
// the 80 % notice once per period (also across a restart), the spend a
// restarted engine reads back from the ledger, the reservations of requests in
// flight, and the shared ledger read again every second (other replicas' spend).

#include "core/telemetry/budget_tracker.h"
#include "fake_clock.h"

#include <QDateTime>
#include <QSignalSpy>
#include <QTest>

#include <ctime>

using namespace sw;
using namespace sw::telemetry;

namespace {

qint64 localMs(int y, int mo, int d, int h = 0, int mi = 0) {
    return QDateTime(QDate(y, mo, d), QTime(h, mi)).toMSecsSinceEpoch();
}

QMap<QString, config::TenantConfig> tenants(double usd, const QString &period) {
    config::TenantConfig t;
    t.name = QStringLiteral("team-a");
    t.keyHashes = {QStringLiteral("sha256:") + QString(64, QLatin1Char('0'))};
    t.budget = config::BudgetConfig{usd, period};
    config::TenantConfig free;
    free.name = QStringLiteral("free");
    return {{t.name, t}, {free.name, free}};
}

// A ledger read the test answers when it chooses, as the ledger's worker thread would.
struct PendingReads {
    QList<QList<SpendWindow>> asked;
    QList<BudgetTracker::Store::SpendAnswer> answers;
    void answer(std::optional<QList<double>> spent) { answers.takeFirst()(std::move(spent)); }
};

BudgetTracker::Store readsInto(PendingReads &reads) {
    BudgetTracker::Store store;
    store.readSpend = [&reads](const QList<SpendWindow> &windows, BudgetTracker::Store::SpendAnswer done) {
        reads.asked.append(windows);
        reads.answers.append(std::move(done));
    };
    return store;
}

} // namespace

class TestBudgetTracker : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() {
        qputenv("TZ", "Europe/Berlin");
        ::tzset();
    }

    void calendarPeriodsAreLocal() {
        // Wednesday 2026-01-14, 15:20 local.
        const qint64 now = localMs(2026, 1, 14, 15, 20);
        const auto day = calendarPeriod(QStringLiteral("day"), now);
        QCOMPARE(day.startMs, localMs(2026, 1, 14));
        QCOMPARE(day.endMs, localMs(2026, 1, 15));
        const auto week = calendarPeriod(QStringLiteral("week"), now);
        QCOMPARE(week.startMs, localMs(2026, 1, 12)); // Monday
        QCOMPARE(week.endMs, localMs(2026, 1, 19));
        const auto month = calendarPeriod(QStringLiteral("month"), now);
        QCOMPARE(month.startMs, localMs(2026, 1, 1));
        QCOMPARE(month.endMs, localMs(2026, 2, 1));
        // The day clocks go forward has 23 hours: a period is a calendar day, not 24 h.
        const auto dst = calendarPeriod(QStringLiteral("day"), localMs(2026, 3, 29, 12));
        QCOMPARE(dst.endMs - dst.startMs, 23 * 3'600'000LL);
        // December rolls into the next year.
        QCOMPARE(calendarPeriod(QStringLiteral("month"), localMs(2026, 12, 31, 23)).endMs, localMs(2027, 1, 1));
    }

    void refusesAtTheBudgetUntilThePeriodResets() {
        test::FakeClock clock;
        clock.setEpochMs(localMs(2026, 1, 14, 10));
        BudgetTracker budgets(clock, {});
        budgets.configure(tenants(1.0, QStringLiteral("day")));
        QVERIFY(!budgets.refusal(QStringLiteral("team-a")));
        budgets.add(QStringLiteral("team-a"), 0.6);
        QVERIFY(!budgets.refusal(QStringLiteral("team-a")));
        budgets.add(QStringLiteral("team-a"), 0.4);
        const auto refusal = budgets.refusal(QStringLiteral("team-a"));
        QVERIFY(refusal);
        QCOMPARE(refusal->retryAfterS, 14 * 3600); // until local midnight
        QVERIFY2(refusal->message.contains(QStringLiteral("$1.00 per day")), qPrintable(refusal->message));
        QVERIFY(refusal->message.contains(QStringLiteral("team-a")));
        QVERIFY(refusal->message.contains(QStringLiteral("2026-01-15 00:00")));
        // A tenant without a budget, or an unknown one, is never refused.
        budgets.add(QStringLiteral("free"), 1000);
        QVERIFY(!budgets.refusal(QStringLiteral("free")));
        QVERIFY(!budgets.refusal(QStringLiteral("nobody")));

        clock.advance(14 * 3'600'000LL - 1000);
        QVERIFY(budgets.refusal(QStringLiteral("team-a")));
        QCOMPARE(budgets.refusal(QStringLiteral("team-a"))->retryAfterS, 1);
        clock.advance(1000); // midnight: a new day
        QVERIFY(!budgets.refusal(QStringLiteral("team-a")));
        QCOMPARE(budgets.states().first().spent, 0.0);
        QCOMPARE(budgets.states().first().periodStartMs, localMs(2026, 1, 15));
    }

    void weeklyAndMonthlyBudgetsResetOnTheirBoundary() {
        test::FakeClock clock;
        clock.setEpochMs(localMs(2026, 1, 18, 23)); // Sunday evening
        BudgetTracker budgets(clock, {});
        budgets.configure(tenants(5, QStringLiteral("week")));
        budgets.add(QStringLiteral("team-a"), 5);
        QCOMPARE(budgets.refusal(QStringLiteral("team-a"))->retryAfterS, 3600);
        clock.advance(3'600'000); // Monday 00:00
        QVERIFY(!budgets.refusal(QStringLiteral("team-a")));

        budgets.configure(tenants(5, QStringLiteral("month")));
        budgets.add(QStringLiteral("team-a"), 5);
        QVERIFY(budgets.refusal(QStringLiteral("team-a")));
        clock.setEpochMs(localMs(2026, 1, 31, 23, 59));
        QVERIFY(budgets.refusal(QStringLiteral("team-a")));
        clock.setEpochMs(localMs(2026, 2, 1));
        QVERIFY(!budgets.refusal(QStringLiteral("team-a")));
    }

    void warnsOnceAtEightyPercentPerPeriod() {
        test::FakeClock clock;
        clock.setEpochMs(localMs(2026, 1, 14, 10));
        QList<std::pair<QString, qint64>> remembered;
        BudgetTracker::Store store;
        store.rememberNotice = [&remembered](const QString &t, qint64 start) { remembered.append({t, start}); };
        BudgetTracker budgets(clock, store);
        QSignalSpy warnings(&budgets, &BudgetTracker::warning);
        QSignalSpy reached(&budgets, &BudgetTracker::reached);
        budgets.configure(tenants(10, QStringLiteral("day")));
        budgets.add(QStringLiteral("team-a"), 7.9);
        QCOMPARE(warnings.size(), 0);
        budgets.add(QStringLiteral("team-a"), 0.2);
        QCOMPARE(warnings.size(), 1);
        QCOMPARE(warnings.first().first().value<BudgetState>().spent, 8.1);
        budgets.add(QStringLiteral("team-a"), 0.5);
        QCOMPARE(warnings.size(), 1);
        QCOMPARE(reached.size(), 0);
        budgets.add(QStringLiteral("team-a"), 2);
        QCOMPARE(reached.size(), 1);
        QCOMPARE(remembered, (QList<std::pair<QString, qint64>>{{QStringLiteral("team-a"), localMs(2026, 1, 14)}}));
        // The next day warns again, once.
        clock.advance(24 * 3'600'000LL);
        budgets.add(QStringLiteral("team-a"), 9);
        budgets.add(QStringLiteral("team-a"), 0.1);
        QCOMPARE(warnings.size(), 2);
    }

    // A wall clock stepped back across midnight set the day's spend to 0; it is read again from the
    // ledger, and a row stamped in the next period does not count toward this one.
    void aClockSteppedBackReadsThePeriodsSpendAgain() {
        test::FakeClock clock;
        QList<QPair<qint64, double>> rows; // the ledger: (time, cost) of team-a's rows
        BudgetTracker::Store store;
        store.spentSince = [&rows](const QString &, qint64 since, qint64 until) {
            double spent = 0;
            for (const auto &[at, cost] : std::as_const(rows))
                if (at >= since && (until <= 0 || at < until))
                    spent += cost;
            return spent;
        };
        BudgetTracker budgets(clock, store);
        clock.setEpochMs(localMs(2026, 1, 14, 23, 50));
        budgets.configure(tenants(4, QStringLiteral("day")));
        for (int i = 0; i < 2; ++i) {
            rows.append({clock.epochMs(), 2.0});
            budgets.add(QStringLiteral("team-a"), 2.0);
        }
        QVERIFY(budgets.refusal(QStringLiteral("team-a")));
        clock.setEpochMs(localMs(2026, 1, 15, 0, 10)); // a new day: a new budget
        QVERIFY(!budgets.refusal(QStringLiteral("team-a")));
        rows.append({clock.epochMs(), 1.0});
        budgets.add(QStringLiteral("team-a"), 1.0);
        clock.setEpochMs(localMs(2026, 1, 14, 23, 55)); // stepped back: the 14th was spent already
        QVERIFY(budgets.refusal(QStringLiteral("team-a")));
        QCOMPARE(budgets.states().first().spent, 4.0); // the 15th's row is not the 14th's spend
    }

    void aRestartReadsTheSpendAndTheNoticeFromTheLedger() {
        test::FakeClock clock;
        clock.setEpochMs(localMs(2026, 1, 14, 10));
        qint64 askedSince = 0;
        BudgetTracker::Store store;
        store.spentSince = [&askedSince](const QString &tenant, qint64 since, qint64) {
            askedSince = since;
            return tenant == QLatin1String("team-a") ? 9.0 : 0.0;
        };
        store.noticeGiven = [](const QString &, qint64) { return true; }; // the earlier run warned already
        BudgetTracker budgets(clock, store);
        QSignalSpy warnings(&budgets, &BudgetTracker::warning);
        budgets.configure(tenants(10, QStringLiteral("day")));
        QCOMPARE(askedSince, localMs(2026, 1, 14));
        QCOMPARE(budgets.states().first().spent, 9.0);
        QCOMPARE(warnings.size(), 0);
        QVERIFY(!budgets.refusal(QStringLiteral("team-a")));
        budgets.add(QStringLiteral("team-a"), 1);
        QVERIFY(budgets.refusal(QStringLiteral("team-a")));
        // A reload with the same budget keeps the count; a changed period reads it again.
        askedSince = 0;
        budgets.configure(tenants(20, QStringLiteral("day")));
        QCOMPARE(askedSince, 0);
        QCOMPARE(budgets.states().first().spent, 10.0);
        budgets.configure(tenants(20, QStringLiteral("month")));
        QCOMPARE(askedSince, localMs(2026, 1, 1));
    }

    // Parallel requests reserve their estimates: once the ones in flight would carry spend past the
    // budget, the next is refused (InFlight, a short Retry-After), and room comes back as they end.
    void requestsInFlightHoldTheirEstimates() {
        test::FakeClock clock;
        clock.setEpochMs(localMs(2026, 1, 14, 10));
        BudgetTracker budgets(clock, {});
        budgets.configure(tenants(10, QStringLiteral("day")));
        const QString team = QStringLiteral("team-a");
        QList<BudgetTracker::ReservationId> held;
        for (int i = 0; i < 4; ++i) {
            BudgetTracker::ReservationId id = 0;
            QVERIFY2(!budgets.reserve(team, 2.5, &id), qPrintable(QString::number(i)));
            QVERIFY(id != 0);
            held.append(id);
        }
        QCOMPARE(budgets.states().first().reserved, 10.0);
        BudgetTracker::ReservationId id = 0;
        auto refused = budgets.reserve(team, 2.5, &id);
        QVERIFY(refused);
        QCOMPARE(id, BudgetTracker::ReservationId(0));
        QCOMPARE(refused->kind, BudgetTracker::Refusal::Kind::InFlight);
        QCOMPARE(refused->retryAfterS, BudgetTracker::kInFlightRetryAfterS);
        QVERIFY2(refused->message.contains(QStringLiteral("4 other requests in flight")), qPrintable(refused->message));
        QVERIFY(refused->message.contains(QStringLiteral("$10.00 per day")));
        // Not reached: the plain gate (admission, before the request is parsed) lets it through.
        QVERIFY(!budgets.refusal(team));

        // The first answers for $2: spend counts it, its reservation shrinks by it, then it ends.
        budgets.add(team, 2.0);
        budgets.consume(held[0], 2.0);
        QCOMPARE(budgets.states().first().reserved, 8.0);
        budgets.release(held[0]);
        QCOMPARE(budgets.states().first().reserved, 7.5);
        QVERIFY(budgets.reserve(team, 2.5, &id)); // 2 + 7.5 + 2.5 > 10
        // The second ends with no usage (its client left before the upstream answered).
        budgets.release(held[1]);
        budgets.release(held[1]);                  // once only
        QVERIFY(!budgets.reserve(team, 2.5, &id)); // 2 + 5 + 2.5 <= 10
        budgets.release(id);
        budgets.release(held[2]);
        budgets.release(held[3]);
        QCOMPARE(budgets.states().first().reserved, 0.0);
        // A tenant without a budget holds nothing.
        QVERIFY(!budgets.reserve(QStringLiteral("free"), 100, &id));
        QCOMPARE(id, BudgetTracker::ReservationId(0));
    }

    // A request with nothing in flight beside it is judged on spend alone: an estimate larger than
    // what is left does not shut the tenant out (it is a guess; the request may cost far less).
    void aLoneRequestIsJudgedOnSpendAlone() {
        test::FakeClock clock;
        clock.setEpochMs(localMs(2026, 1, 14, 10));
        BudgetTracker budgets(clock, {});
        budgets.configure(tenants(10, QStringLiteral("day")));
        const QString team = QStringLiteral("team-a");
        budgets.add(team, 9);
        BudgetTracker::ReservationId lone = 0;
        QVERIFY(!budgets.reserve(team, 5, &lone));
        BudgetTracker::ReservationId next = 0;
        const auto inFlight = budgets.reserve(team, 0.5, &next);
        QVERIFY(inFlight);
        QCOMPARE(inFlight->kind, BudgetTracker::Refusal::Kind::InFlight);
        // It cost $1: the budget is reached, and the refusal is the period's (Reached, until midnight).
        budgets.add(team, 1);
        budgets.consume(lone, 1);
        budgets.release(lone);
        const auto reached = budgets.reserve(team, 0.5, &next);
        QVERIFY(reached);
        QCOMPARE(reached->kind, BudgetTracker::Refusal::Kind::Reached);
        QCOMPARE(reached->retryAfterS, 14 * 3600);
    }

    // Probe K3 2: a try the upstream billed (its input reported, then an overload) used up the request's
    // reservation, and the failover's next try ran on none: six requests on a $1 budget spent $1.83.
    // Before a try after a costly one, the request holds its estimate again, by reserve()'s rule.
    void anotherTryAfterACostlyOneHoldsItsEstimateAgain() {
        test::FakeClock clock;
        clock.setEpochMs(localMs(2026, 1, 14, 10));
        BudgetTracker budgets(clock, {});
        budgets.configure(tenants(10, QStringLiteral("day")));
        const QString team = QStringLiteral("team-a");
        QList<BudgetTracker::ReservationId> held;
        for (int i = 0; i < 4; ++i) {
            BudgetTracker::ReservationId id = 0;
            QVERIFY(!budgets.reserve(team, 2.0, &id));
            held.append(id);
        }
        // The first's try cost $2 and failed: spend 2, held 6. Its next try (up to $2 more) would
        // make 2 + 6 + 2 = 10: within the budget, so it goes, holding $2 again.
        budgets.add(team, 2.0);
        budgets.consume(held[0], 2.0);
        QCOMPARE(budgets.states().first().reserved, 6.0);
        QVERIFY(!budgets.renew(held[0], 2.0));
        QCOMPARE(budgets.states().first().reserved, 8.0);
        // The second's try cost $2 too: 4 + 6 + 2 > 10 with others in flight: refused, nothing held more.
        budgets.add(team, 2.0);
        budgets.consume(held[1], 2.0);
        const auto refused = budgets.renew(held[1], 2.0);
        QVERIFY(refused);
        QCOMPARE(refused->kind, BudgetTracker::Refusal::Kind::InFlight);
        QVERIFY2(refused->message.contains(QStringLiteral("3 other requests in flight that may cost up to $6.00")),
                 qPrintable(refused->message));
        QVERIFY2(refused->message.contains(QStringLiteral("another try of this one")), qPrintable(refused->message));
        QCOMPARE(budgets.states().first().reserved, 6.0);
        // A reservation not used up has nothing to top up; an unknown one is no refusal.
        QVERIFY(!budgets.renew(held[2], 2.0));
        QVERIFY(!budgets.renew(BudgetTracker::ReservationId(9999), 2.0));
        QCOMPARE(budgets.states().first().reserved, 6.0);
        // Alone in flight, a request is judged on spend alone: under the budget it tries again...
        for (const auto id : {held[1], held[2], held[3]})
            budgets.release(id);
        budgets.add(team, 5.0); // spend 9
        budgets.consume(held[0], 2.0);
        QVERIFY(!budgets.renew(held[0], 2.0));
        // ...and at the budget it is refused with the period's refusal.
        budgets.add(team, 1.0);
        budgets.consume(held[0], 1.0);
        const auto reached = budgets.renew(held[0], 2.0);
        QVERIFY(reached);
        QCOMPARE(reached->kind, BudgetTracker::Refusal::Kind::Reached);
        budgets.release(held[0]);
        QCOMPARE(budgets.states().first().reserved, 0.0);
    }

    // Replicas share the ledger: every kLedgerReadMs it is read again, off the request path. What
    // this process counted before a read was asked is in its answer; what it counts while the read
    // is out is added to it; nothing is counted twice.
    void theSharedLedgerIsReadAgainWithoutCountingTwice() {
        test::FakeClock clock;
        clock.setEpochMs(localMs(2026, 1, 14, 10));
        PendingReads reads;
        BudgetTracker budgets(clock, readsInto(reads));
        const QString team = QStringLiteral("team-a");
        // No request asks the ledger: admission and usage never wait for it.
        budgets.configure(tenants(10, QStringLiteral("day")));
        BudgetTracker::ReservationId id = 0;
        QVERIFY(!budgets.reserve(team, 1, &id));
        budgets.release(id);
        clock.advance(BudgetTracker::kLedgerReadMs - 1);
        QCOMPARE(reads.asked.size(), 0);
        clock.advance(1);
        QCOMPARE(reads.asked.size(), 1);
        QCOMPARE(reads.asked.first().size(), 1); // the tenant with a budget, for its day
        QCOMPARE(reads.asked.first().first().tenant, team);
        QCOMPARE(reads.asked.first().first().sinceEpochMs, localMs(2026, 1, 14));
        QCOMPARE(reads.asked.first().first().untilEpochMs, localMs(2026, 1, 15));

        // While the read is out, this process records $2; no second read is asked meanwhile.
        budgets.add(team, 2);
        clock.advance(5 * BudgetTracker::kLedgerReadMs);
        QCOMPARE(reads.asked.size(), 1);
        // Another replica wrote $5: the answer holds it (and not this process's $2, asked before).
        reads.answer(QList<double>{5});
        QCOMPARE(budgets.states().first().spent, 7.0);

        // $1 more here before the next read is asked: that one's answer holds all of this process's
        // $3 and the other replica's $5 + $1.
        budgets.add(team, 1);
        clock.advance(BudgetTracker::kLedgerReadMs);
        QCOMPARE(reads.asked.size(), 2);
        reads.answer(QList<double>{9});
        QCOMPARE(budgets.states().first().spent, 9.0);
        // Nothing new (no other writer since), or the file could not be read: the count stands.
        clock.advance(BudgetTracker::kLedgerReadMs);
        QCOMPARE(reads.asked.size(), 3);
        budgets.add(team, 0.5);
        reads.answer(std::nullopt);
        QCOMPARE(budgets.states().first().spent, 9.5);
        // An answer that finds less than this process counted lowers nothing.
        clock.advance(BudgetTracker::kLedgerReadMs);
        reads.answer(QList<double>{1});
        QCOMPARE(budgets.states().first().spent, 9.5);
        // The other replica reaches the budget: this one refuses.
        clock.advance(BudgetTracker::kLedgerReadMs);
        reads.answer(QList<double>{10.5});
        QCOMPARE(budgets.states().first().spent, 10.5);
        QVERIFY(budgets.refusal(team));
    }

    // Probe R4 F2: a ledger whose sums fail (a corrupt page past the first: the file opens) was
    // read as $0 spent, and a tenant past its budget was served again. Its spend is unknown: the
    // tenant is refused as with a ledger that could not be opened, until a ledger read tells it.
    void aSpendThatCannotBeReadIsNotZero() {
        test::FakeClock clock;
        clock.setEpochMs(localMs(2026, 1, 14, 10));
        PendingReads reads;
        BudgetTracker::Store store = readsInto(reads);
        store.spentSince = [](const QString &, qint64, qint64) { return std::optional<double>(); };
        store.available = []() { return true; }; // the file opened
        BudgetTracker budgets(clock, store);
        budgets.configure(tenants(10, QStringLiteral("day")));
        const QString team = QStringLiteral("team-a");
        QVERIFY(!budgets.refusal(team)); // no spend to refuse on...
        const auto why = budgets.unavailable(team);
        QVERIFY(why); // ...and none to serve on
        QVERIFY2(why->contains(QStringLiteral("usage ledger unavailable: spend budgets cannot be enforced")),
                 qPrintable(*why));
        QVERIFY(!budgets.unavailable(QStringLiteral("free"))); // no budget: served
        clock.advance(BudgetTracker::kLedgerReadMs);
        QCOMPARE(reads.asked.size(), 1);
        reads.answer(std::nullopt); // still unreadable (or nothing new): still unknown
        QVERIFY(budgets.unavailable(team));
        clock.advance(BudgetTracker::kLedgerReadMs);
        reads.answer(QList<double>{12}); // read at last: past the budget
        QVERIFY(!budgets.unavailable(team));
        QVERIFY(budgets.refusal(team));
    }

    // A read asked before the spend was read afresh (a new period) answers for the old count.
    void aLedgerReadFromBeforeANewPeriodIsDropped() {
        test::FakeClock clock;
        clock.setEpochMs(localMs(2026, 1, 14, 23, 59));
        PendingReads reads;
        BudgetTracker::Store store = readsInto(reads);
        store.spentSince = [](const QString &, qint64, qint64) { return 0.0; };
        BudgetTracker budgets(clock, store);
        budgets.configure(tenants(10, QStringLiteral("day")));
        clock.advance(BudgetTracker::kLedgerReadMs);
        QCOMPARE(reads.asked.size(), 1);
        clock.setEpochMs(localMs(2026, 1, 15, 0, 1));
        QCOMPARE(budgets.states().first().spent, 0.0); // the new day, read afresh
        reads.answer(QList<double>{8});                // the 14th's spend
        QCOMPARE(budgets.states().first().spent, 0.0);
        // The next read asks for the new day.
        clock.advance(BudgetTracker::kLedgerReadMs);
        QCOMPARE(reads.asked.size(), 2);
        QCOMPARE(reads.asked.last().first().sinceEpochMs, localMs(2026, 1, 15));
        // No budget left: no more reads.
        budgets.configure({});
        reads.answer(QList<double>{});
        clock.advance(10 * BudgetTracker::kLedgerReadMs);
        QCOMPARE(reads.asked.size(), 2);
    }
};

QTEST_GUILESS_MAIN(TestBudgetTracker)
#include "test_budget_tracker.moc"
