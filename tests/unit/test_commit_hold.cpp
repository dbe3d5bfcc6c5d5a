// record F2b test cycle: hold primitives on hand-driven event streams.
#include "core/failover/attempt_budget.h"
#include "core/failover/commit_hold.h"
#include "fake_clock.h"

#include <QTest>

using namespace sw::failover;
using sw::model::EventType;
using sw::model::StreamEvent;

namespace {
StreamEvent ev(EventType t, const QString &delta = {}) {
    StreamEvent e;
    e.type = t;
    e.delta = delta;
    e.contentIndex = 0;
    return e;
}
} // namespace

class TestCommitHold : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void startThenTextDeltaCommitsAndReplaysInOrder() {
        CommitHold hold;
        QVERIFY(hold.feed(ev(EventType::Start)).release.isEmpty());
        QVERIFY(hold.feed(ev(EventType::TextStart)).release.isEmpty());
        QVERIFY(hold.feed(ev(EventType::TextDelta, QString())).release.isEmpty()); // an empty delta does not commit
        QVERIFY(!hold.lastHeld());                                                 // and is not kept either
        const auto step = hold.feed(ev(EventType::TextDelta, QStringLiteral("Hi")));
        QVERIFY(step.justCommitted);
        QCOMPARE(step.release.size(), 3);
        QCOMPARE(step.release[0].type, EventType::Start);
        QCOMPARE(step.release[2].delta, QStringLiteral("Hi"));
        QVERIFY(hold.committed());
    }
    void aFloodOfEmptyDeltasHoldsNothing() {
        CommitHold hold;
        hold.feed(ev(EventType::Start), 100);
        for (int i = 0; i < 100000; ++i) {
            hold.feed(ev(EventType::TextDelta), 64);
            hold.feed(ev(EventType::ThinkingDelta), 64);
            hold.feed(ev(EventType::ToolCallDelta), 64);
        }
        QCOMPARE(hold.heldCount(), 1);
        QCOMPARE(hold.heldBytes(), 100);
        hold.feed(ev(EventType::TextStart), 50);
        QCOMPARE(hold.heldBytes(), 150);
        QVERIFY(hold.feed(ev(EventType::TextDelta, QStringLiteral("x")), 10).justCommitted);
        QCOMPARE(hold.heldBytes(), 0);
    }
    void committedForwardsLaterErrorUnchanged() {
        CommitHold hold;
        hold.feed(ev(EventType::Start));
        hold.feed(ev(EventType::ToolCallStart));
        QVERIFY(hold.feed(ev(EventType::ToolCallDelta, QStringLiteral("{"))).justCommitted);
        auto err = ev(EventType::Error);
        err.errorMessage = QStringLiteral("Overloaded");
        const auto step = hold.feed(err);
        QVERIFY(step.passThrough); // the caller hands the error on as it is
        QVERIFY(step.release.isEmpty());
        QVERIFY(!step.justFailed);
        QCOMPARE(hold.state(), CommitHold::State::Committed); // a committed attempt is final
        QVERIFY(!hold.feed(ev(EventType::TextDelta, QStringLiteral("more"))).justCommitted);
    }
    void startEmptyTextStartThenErrorFails() {
        CommitHold hold;
        hold.feed(ev(EventType::Start));
        hold.feed(ev(EventType::TextStart));
        hold.feed(ev(EventType::ToolCallStart));
        auto err = ev(EventType::Error);
        err.errorMessage = QStringLiteral("503");
        const auto step = hold.feed(err);
        QVERIFY(step.justFailed);
        QVERIFY(step.release.isEmpty());
        QCOMPARE(hold.state(), CommitHold::State::Failed);
        QCOMPARE(hold.failure().errorMessage, QStringLiteral("503"));
    }
    void doneWithoutContentCommits() {
        CommitHold hold;
        hold.feed(ev(EventType::Start));
        QVERIFY(hold.feed(ev(EventType::Done)).justCommitted);
    }
    void budgetFiresAfterSilence() {
        sw::test::FakeClock clock;
        bool aborted = false;
        AttemptBudget budget(clock, clock.nowMs() + 1000, [&] { aborted = true; });
        budget.observe(ev(EventType::Start));
        clock.advance(999);
        QVERIFY(!aborted);
        clock.advance(1);
        QVERIFY(aborted);
        QVERIFY(budget.timedOut());
    }
    void budgetNeverFiresAfterMeaningfulEvent() {
        sw::test::FakeClock clock;
        bool aborted = false;
        AttemptBudget budget(clock, clock.nowMs() + 1000, [&] { aborted = true; });
        budget.observe(ev(EventType::TextDelta, QStringLiteral("x")));
        clock.advance(5000);
        QVERIFY(!aborted);
        QVERIFY(!budget.timedOut());
    }
    void doneOrSettleDisarm() {
        for (int variant = 0; variant < 2; ++variant) {
            sw::test::FakeClock clock;
            AttemptBudget budget(clock, clock.nowMs() + 1000, [] {});
            if (variant == 0)
                budget.observe(ev(EventType::Done));
            else
                budget.settle();
            clock.advance(2000);
            QVERIFY2(!budget.timedOut(), qPrintable(QString::number(variant)));
            QCOMPARE(clock.pendingTimers(), 0);
        }
    }
    // A try's error is not the attempt's end: the retry that may follow runs inside the budget
    // (probe N3 H1), and the attempt's end settles it.
    void aTrysErrorLeavesTheBudgetArmed() {
        sw::test::FakeClock clock;
        bool fired = false;
        AttemptBudget budget(clock, clock.nowMs() + 1000, [&] { fired = true; });
        budget.observe(ev(EventType::Error));
        QVERIFY(budget.armed());
        clock.advance(1000);
        QVERIFY(fired);
        QVERIFY(budget.timedOut());
    }
    void noBudgetNeverFires() {
        sw::test::FakeClock clock;
        AttemptBudget budget(clock, std::nullopt, [] { QFAIL("fired"); });
        clock.advance(10'000'000);
        QVERIFY(!budget.timedOut());
        QVERIFY(!budget.armed());
    }
};

QTEST_GUILESS_MAIN(TestCommitHold)
#include "test_commit_hold.moc"
