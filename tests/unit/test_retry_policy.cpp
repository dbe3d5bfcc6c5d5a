// In-attempt retries and the client's final error, as pure functions.
#include "core/failover/failure_response.h"
#include "core/failover/retry_policy.h"

#include <QTest>

using namespace sw::failover;

namespace {
RetryInput input(FailureKind kind, int retriesSoFar, bool follower = false) {
    RetryInput in;
    in.failure.kind = kind;
    in.hasFollower = follower;
    in.retriesSoFar = retriesSoFar;
    in.maxRetries = 5;
    in.retriesBeforeFailover = 1;
    in.maxRetryDelayMs = 10000;
    in.nowMs = 1000;
    return in;
}
const RetryPolicy::Random kNoJitter = [](qint64) { return qint64(0); };
const RetryPolicy::Random kMaxJitter = [](qint64 bound) { return bound - 1; };
} // namespace

class TestRetryPolicy : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void backoffDoublesWithJitterUpToTheCap() {
        QCOMPARE(RetryPolicy::nextDelay(input(FailureKind::ServerError, 0), kNoJitter), 500);
        QCOMPARE(RetryPolicy::nextDelay(input(FailureKind::ServerError, 1), kNoJitter), 1000);
        QCOMPARE(RetryPolicy::nextDelay(input(FailureKind::ServerError, 2), kMaxJitter), 2000 + 500);
        QCOMPARE(RetryPolicy::nextDelay(input(FailureKind::ServerError, 4), kNoJitter), 8000);
        auto in = input(FailureKind::ServerError, 4);
        in.maxRetries = 100;
        in.retriesSoFar = 60; // no overflow on absurd counts
        QCOMPARE(RetryPolicy::nextDelay(in, kMaxJitter), 10000);
    }
    void allowanceDependsOnTheFollower() {
        QVERIFY(RetryPolicy::nextDelay(input(FailureKind::Transport, 0, true), kNoJitter));
        QVERIFY(!RetryPolicy::nextDelay(input(FailureKind::Transport, 1, true), kNoJitter));
        QVERIFY(RetryPolicy::nextDelay(input(FailureKind::Transport, 4, false), kNoJitter));
        QVERIFY(!RetryPolicy::nextDelay(input(FailureKind::Transport, 5, false), kNoJitter));
    }
    void onlyOutagesAreRetried() {
        for (auto k : {FailureKind::CredentialExhausted, FailureKind::NotServed, FailureKind::SetupError})
            QVERIFY(!RetryPolicy::nextDelay(input(k, 0), kNoJitter));
        QVERIFY(RetryPolicy::nextDelay(input(FailureKind::RateLimited, 0), kNoJitter));
    }
    // SPEC 3: a 408, 429, 5xx or connection failure is retried, another 4xx never. A 403
    // concurrency cap is rate_limited, and was retried into the cap that set it off (probe N3 L1).
    void noOther4xxIsRetried() {
        auto in = input(FailureKind::RateLimited, 0);
        for (int status : {408, 429, 500, 503, 529}) {
            in.failure.status = status;
            QVERIFY2(RetryPolicy::nextDelay(in, kNoJitter), qPrintable(QString::number(status)));
        }
        for (int status : {400, 403, 409, 413}) {
            in.failure.status = status;
            QVERIFY2(!RetryPolicy::nextDelay(in, kNoJitter), qPrintable(QString::number(status)));
        }
    }
    // A try that said something is not asked for again: the generation would be billed twice (probe N3 M1).
    void noRetryAfterContent() {
        auto in = input(FailureKind::ServerError, 0);
        QVERIFY(RetryPolicy::nextDelay(in, kNoJitter));
        in.afterContent = true;
        QVERIFY(!RetryPolicy::nextDelay(in, kNoJitter));
    }
    // x-should-retry: false on the upstream's error (a gateway or proxy that already retried, the
    // convention the SDKs obey): a 503 was retried twice on a lone candidate, each Retry-After slept,
    // and behind another gateway each hop's retries multiplied the next one's (probe AB1 F2).
    void anUpstreamsFinalWordIsNotRetried() {
        for (const bool follower : {false, true}) {
            auto in = input(FailureKind::ServerError, 0, follower);
            in.failure.status = 503;
            QVERIFY(RetryPolicy::nextDelay(in, kNoJitter));
            in.upstreamSaidFinal = true;
            QVERIFY(!RetryPolicy::nextDelay(in, kNoJitter));
        }
        using Headers = sw::upstream::HeaderList;
        QVERIFY(RetryPolicy::upstreamSaysFinal(Headers{{"X-Should-Retry", " False"}}));
        QVERIFY(RetryPolicy::upstreamSaysFinal(Headers{{"retry-after", "3"}, {"x-should-retry", "false"}}));
        QVERIFY(!RetryPolicy::upstreamSaysFinal(Headers{{"x-should-retry", "true"}}));
        QVERIFY(!RetryPolicy::upstreamSaysFinal(Headers{{"retry-after", "3"}}));
        QVERIFY(!RetryPolicy::upstreamSaysFinal(Headers{}));
    }
    void retryAfterRaisesOrEndsTheAttempt() {
        auto in = input(FailureKind::RateLimited, 0);
        in.failure.retryAfterMs = 7000;
        QCOMPARE(RetryPolicy::nextDelay(in, kNoJitter), 7000);
        in.failure.retryAfterMs = 30000; // longer than maxRetryDelayMs: fail over instead
        QVERIFY(!RetryPolicy::nextDelay(in, kNoJitter));
    }
    void noRetryStartsAtOrAfterTheDeadline() {
        auto in = input(FailureKind::ServerError, 0);
        in.deadlineAtMs = in.nowMs + 500;
        QVERIFY(!RetryPolicy::nextDelay(in, kNoJitter));
        in.deadlineAtMs = in.nowMs + 501;
        QCOMPARE(RetryPolicy::nextDelay(in, kNoJitter), 500);
    }
    // SPEC 3: every in-attempt wait lies inside the attempt budget. A wait past its end was begun,
    // the budget cut it, and the 429 became a server_error with its Retry-After lost (probe M3 3).
    void noWaitRunsPastTheAttemptBudget() {
        auto in = input(FailureKind::RateLimited, 0, true);
        in.retriesBeforeFailover = 2;
        in.failure.retryAfterMs = 5000;
        in.budgetEndsAtMs = in.nowMs + 4000;
        QVERIFY(!RetryPolicy::nextDelay(in, kNoJitter)); // fails over now, as the 429 it is
        in.budgetEndsAtMs = in.nowMs + 5001;
        QCOMPARE(RetryPolicy::nextDelay(in, kNoJitter), 5000);
    }
    void clientErrorPerKind() {
        UpstreamFailure f;
        f.kind = FailureKind::Transport;
        f.message = QStringLiteral("connection refused");
        auto e = FailureResponse::forFailure(f, QStringLiteral("pa/a"));
        QCOMPARE(e.status, 502);
        QVERIFY(e.message.contains(QStringLiteral("pa/a unreachable")));
        f.kind = FailureKind::ServerError;
        f.status = 529;
        QCOMPARE(FailureResponse::forFailure(f, {}).status, 529);
        f.status = 408;
        QCOMPARE(FailureResponse::forFailure(f, {}).status, 504);
        f.kind = FailureKind::RateLimited;
        f.retryAfterMs = 4000;
        e = FailureResponse::forFailure(f, {});
        QCOMPARE(e.status, 429);
        QCOMPARE(e.retryAfterMs, 4000);
        f.kind = FailureKind::NotServed;
        QCOMPARE(FailureResponse::forFailure(f, {}).status, 404);
    }
    void retryAfterOnlyWhenEveryCandidateIsMarked() {
        QCOMPARE(FailureResponse::retryAfterWhenAllMarked({20000, 42000}), 20000);
        QCOMPARE(FailureResponse::retryAfterWhenAllMarked({20000, 0}), std::nullopt);
        QCOMPARE(FailureResponse::retryAfterWhenAllMarked({}), std::nullopt);
    }
};

QTEST_GUILESS_MAIN(TestRetryPolicy)
#include "test_retry_policy.moc"
