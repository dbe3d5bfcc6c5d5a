// record C1 test cycle: marks on an injected clock.
#include "core/failover/provider_down_marks.h"
#include "fake_clock.h"

#include <QTest>

using namespace sw::failover;

namespace {
const CandidateRef kA{QStringLiteral("anthropic"), QStringLiteral("claude"), QStringLiteral("http://a")};
const CandidateRef kASibling{QStringLiteral("anthropic"), QStringLiteral("haiku"), QStringLiteral("http://a")};
const CandidateRef kB{QStringLiteral("zai"), QStringLiteral("glm"), QStringLiteral("http://b")};
UpstreamFailure failure(FailureKind k, std::optional<qint64> retryAfter = {}) {
    UpstreamFailure f;
    f.kind = k;
    f.retryAfterMs = retryAfter;
    f.message = QStringLiteral("boom");
    return f;
}
} // namespace

class TestProviderDownMarks : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void aTenantNamingEndlessModelsKeepsABoundedTable() {
        // A client names the model (provider/anything); each distinct name failing on a broken
        // provider is a mark of its own. The table keeps kMaxEntriesPerTenant per tenant, the
        // newest marks, and never evicts another tenant's.
        sw::test::FakeClock clock;
        ProviderDownMarks marks(clock);
        marks.mark(QStringLiteral("other"), kB, failure(FailureKind::ServerError));
        const int n = ProviderDownMarks::kMaxEntriesPerTenant + 300;
        for (int i = 0; i < n; ++i) {
            clock.advance(10);
            const CandidateRef named{QStringLiteral("anthropic"), QStringLiteral("m%1").arg(i),
                                     QStringLiteral("http://a")};
            marks.mark(QStringLiteral("t"), named, failure(FailureKind::ServerError));
        }
        const QList<MarkInfo> active = marks.active();
        QCOMPARE(active.size(), ProviderDownMarks::kMaxEntriesPerTenant + 1);
        QVERIFY(marks.isDown(QStringLiteral("other"), kB));
        const CandidateRef newest{QStringLiteral("anthropic"), QStringLiteral("m%1").arg(n - 1),
                                  QStringLiteral("http://a")};
        const CandidateRef oldest{QStringLiteral("anthropic"), QStringLiteral("m0"), QStringLiteral("http://a")};
        QVERIFY(marks.isDown(QStringLiteral("t"), newest));
        QVERIFY(!marks.isDown(QStringLiteral("t"), oldest));
    }

    void ttlLadderDoublesToCap() {
        sw::test::FakeClock clock;
        ProviderDownMarks marks(clock);
        const QList<qint64> expected{20000, 40000, 80000, 160000, 300000, 300000};
        for (qint64 ttl : expected) {
            QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::ServerError)), ttl);
            QVERIFY(marks.isDown(QStringLiteral("t"), kA));
            clock.advance(ttl - 1);
            QVERIFY(marks.isDown(QStringLiteral("t"), kA));
            clock.advance(1);
            QVERIFY(!marks.isDown(QStringLiteral("t"), kA));
        }
    }
    void rateLimitedStartsAtThirty() {
        sw::test::FakeClock clock;
        ProviderDownMarks marks(clock);
        QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::RateLimited)), 30000);
        QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::RateLimited)), 60000);
    }
    void retryAfterRaisesTtlButIsCapped() {
        sw::test::FakeClock clock;
        ProviderDownMarks marks(clock);
        QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::RateLimited, 90000)), 90000);
        QCOMPARE(marks.mark(QStringLiteral("t"), kB, failure(FailureKind::ServerError, 3'600'000)), 300000);
        QCOMPARE(marks.mark(QStringLiteral("u"), kA, failure(FailureKind::ServerError, 1000)), 20000);
    }
    void laterShorterFailureNeverShortensAMark() {
        sw::test::FakeClock clock;
        ProviderDownMarks marks(clock);
        QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::RateLimited, 300000)), 300000);
        clock.advance(1000);
        // A plain 429 would be 60 s on its own; the mark keeps its 299 s.
        QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::RateLimited)), 299000);
        clock.advance(298999);
        QVERIFY(marks.isDown(QStringLiteral("t"), kA));
        clock.advance(1);
        QVERIFY(!marks.isDown(QStringLiteral("t"), kA));
    }
    void failuresOfAttemptsStartedBeforeTheStrikeAddNone() {
        sw::test::FakeClock clock;
        clock.advance(1000);
        ProviderDownMarks marks(clock);
        const qint64 started = clock.nowMs();
        clock.advance(500); // six parallel attempts, all started at `started`, fail at once
        for (int i = 0; i < 6; ++i)
            QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::ServerError), started), 20000);
        QCOMPARE(marks.active().first().strikes, 1);
        clock.advance(20000); // let back in; an attempt started now that fails is a second strike
        const qint64 later = clock.nowMs();
        clock.advance(100);
        QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::ServerError), later), 40000);
        QCOMPARE(marks.active().first().strikes, 2);
    }
    // A parallel attempt begun before the strike (in its millisecond too, ordered by the table's
    // sequence) is the same blip; a retry begun right after it, while its mark is live, says what
    // the mark says (probe H4 1). Neither adds a strike. The retry after the mark ran out is the
    // next consecutive failure (probe G4 2: the ladder still climbs, one step per mark).
    void anAttemptBegunWhileMarkedAddsNoStrikeOneAfterItRanOutDoes() {
        sw::test::FakeClock clock;
        clock.advance(1000);
        ProviderDownMarks marks(clock);
        const quint64 before = marks.sequence();
        const qint64 t = clock.nowMs();
        QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::ServerError), t, before), 20000);
        const quint64 after = marks.sequence(); // the retry begins now, the clock has not moved
        QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::ServerError), t, before), 20000);
        QCOMPARE(marks.active().first().strikes, 1); // a parallel attempt begun before: the same blip
        QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::ServerError), t, after), 20000);
        QCOMPARE(marks.active().first().strikes, 1); // begun while marked
        clock.advance(20000);
        const qint64 ranOut = clock.nowMs();
        QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::ServerError), ranOut, marks.sequence()),
                 40000);
        QCOMPARE(marks.active().first().strikes, 2);
        // A mark learned from another replica counts from when this process learned it.
        MarkInfo remote = marks.active().first();
        remote.strikes = 3;
        const quint64 beforeApply = marks.sequence();
        marks.apply(remote);
        QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::ServerError), ranOut, beforeApply), 80000);
        QCOMPARE(marks.active().first().strikes, 3);
    }
    void aLoneCandidatesConsecutiveFailuresClimbUntilItAnswers() {
        // A lone candidate (or a route whose candidates are all marked) is tried while marked. A
        // failure of a try begun while the mark was live adds no strike (SPEC 5, probe H4 1): five
        // requests 0.3 s apart keep the one 20 s mark, running out as set. Each failure after the
        // mark ran out is the next consecutive failure: 40, 80, 160, 300 s. The first answer ends
        // the run: the mark goes, and the next failure is the first again.
        sw::test::FakeClock clock;
        clock.advance(1000);
        ProviderDownMarks marks(clock);
        QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::Transport), clock.nowMs()), 20000);
        for (int i = 1; i < 5; ++i) {
            clock.advance(300);
            QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::Transport), clock.nowMs()),
                     20000 - 300 * i);
        }
        QCOMPARE(marks.active().first().strikes, 1);
        for (const qint64 ttl : {40000, 80000, 160000, 300000, 300000}) {
            clock.advance(marks.remainingMs(QStringLiteral("t"), kA) + 300); // ran out 0.3 s ago
            QVERIFY(!marks.isDown(QStringLiteral("t"), kA));
            QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::Transport), clock.nowMs()), ttl);
        }
        QCOMPARE(marks.active().first().strikes, 6);
        clock.advance(300);
        QCOMPARE(marks.answered(QStringLiteral("t"), kA, clock.nowMs()), 1);
        QVERIFY(marks.active().isEmpty());
        clock.advance(300);
        QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::Transport), clock.nowMs()), 20000);
        QCOMPARE(marks.active().first().strikes, 1);
    }
    // A burst of requests to a chain whose candidates are all down: each request tries the marked
    // candidates anyway, each try beginning after the strike before it. Counted, 50 such requests
    // took the mark to 300 s in milliseconds and told every client Retry-After: 300 (probe H4 1).
    // One strike, 20 s; a Retry-After given by a failure meanwhile still lengthens the mark.
    void aBurstOfTriesWhileMarkedIsOneStrike() {
        sw::test::FakeClock clock;
        clock.advance(1000);
        ProviderDownMarks marks(clock);
        for (int i = 0; i < 50; ++i) {
            const qint64 began = clock.nowMs();
            const quint64 seq = marks.sequence();
            clock.advance(2);
            QVERIFY(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::ServerError), began, seq) <= 20000);
        }
        QCOMPARE(marks.active().first().strikes, 1);
        UpstreamFailure slow = failure(FailureKind::RateLimited);
        slow.retryAfterMs = 45000;
        QCOMPARE(marks.mark(QStringLiteral("t"), kA, slow, clock.nowMs(), marks.sequence()), 45000);
        QCOMPARE(marks.active().first().strikes, 1);
        // A try begun while marked that fails only after the mark ran out (a stall) is a failure
        // after it: the next strike, not a candidate left unmarked (probe HV 4).
        const qint64 began = clock.nowMs();
        const quint64 seq = marks.sequence();
        clock.advance(46000);
        QVERIFY(!marks.isDown(QStringLiteral("t"), kA));
        QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::ServerError), began, seq), 40000);
        QCOMPARE(marks.active().first().strikes, 2);
    }
    void anAnswerLiftsTheMarksItDisproves() {
        // The provider answers a try started after the mark's last strike: it is back, the mark and
        // its strikes go (the next failure is the first again), and the observer hears of it as of a
        // clear. A try started before the strike (in flight when the outage began) proves nothing.
        sw::test::FakeClock clock;
        clock.advance(1000);
        ProviderDownMarks marks(clock);
        const qint64 before = clock.nowMs();
        clock.advance(10);
        marks.mark(QStringLiteral("t"), kA, failure(FailureKind::Transport), clock.nowMs());
        marks.mark(QStringLiteral("t"), kA, failure(FailureKind::ServerError), clock.nowMs());
        marks.mark(QStringLiteral("t"), kB, failure(FailureKind::Transport), clock.nowMs());
        marks.mark(QStringLiteral("u"), kA, failure(FailureKind::Transport), clock.nowMs());
        QCOMPARE(marks.answered(QStringLiteral("t"), kA, before), 0);
        QVERIFY(marks.isDown(QStringLiteral("t"), kA));
        clock.advance(300);
        QCOMPARE(marks.answered(QStringLiteral("t"), kA, clock.nowMs()), 2); // the base URL's and the model's
        QVERIFY(!marks.isDown(QStringLiteral("t"), kA));
        QVERIFY(!marks.isDown(QStringLiteral("t"), kASibling));
        QVERIFY(marks.isDown(QStringLiteral("t"), kB)); // another provider's mark stays
        QVERIFY(marks.isDown(QStringLiteral("u"), kA)); // and another tenant's
        QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::Transport), clock.nowMs()), 20000);
        QCOMPARE(marks.answered(QStringLiteral("t"), kB, clock.nowMs() + 1), 1);
    }
    void strikesResetAfterQuietPeriod() {
        sw::test::FakeClock clock;
        ProviderDownMarks marks(clock);
        marks.mark(QStringLiteral("t"), kA, failure(FailureKind::ServerError));
        clock.advance(20000 + 300000); // expired exactly 300 s ago: still consecutive
        QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::ServerError)), 40000);
        clock.advance(40000 + 300001); // expired over 300 s ago
        QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::ServerError)), 20000);
    }
    void outagesOfEitherKindClimbOneLadder() {
        // A provider whose outages alternate between refused connections (the host's mark) and
        // 503s (the model's): SPEC 5's 20, 40, 80, 160 s, as one kind alone climbs (probe W2 F2).
        sw::test::FakeClock clock;
        ProviderDownMarks marks(clock);
        const QList<qint64> expected{20000, 40000, 80000, 160000};
        for (int i = 0; i < expected.size(); ++i) {
            const auto kind = i % 2 == 0 ? FailureKind::Transport : FailureKind::ServerError;
            QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(kind)), expected[i]);
            clock.advance(expected[i]);
            QVERIFY(!marks.isDown(QStringLiteral("t"), kA));
        }
        // Another provider's ladder is its own.
        QCOMPARE(marks.mark(QStringLiteral("t"), kB, failure(FailureKind::ServerError)), 20000);
        // Parallel requests failing on one blip, some refused, some answered 503, are one strike;
        // so is a 503 to a try made while the host's mark stood (a lone candidate).
        sw::test::FakeClock clock2;
        ProviderDownMarks burst(clock2);
        const qint64 t0 = clock2.nowMs();
        clock2.advance(1000);
        QCOMPARE(burst.mark(QStringLiteral("t"), kA, failure(FailureKind::Transport), t0 + 500), 20000);
        QCOMPARE(burst.mark(QStringLiteral("t"), kA, failure(FailureKind::ServerError), t0 + 500), 20000);
        clock2.advance(1000);
        QCOMPARE(burst.mark(QStringLiteral("t"), kA, failure(FailureKind::ServerError), t0 + 1500), 19000); // as set
        QCOMPARE(burst.active().size(), 2);
        // A 503 to a try made while only the host's mark stood (a lone candidate): the model's mark
        // says what the host's said, no step more.
        sw::test::FakeClock clock3;
        ProviderDownMarks lone(clock3);
        const qint64 t1 = clock3.nowMs();
        QCOMPARE(lone.mark(QStringLiteral("t"), kA, failure(FailureKind::Transport), t1), 20000);
        clock3.advance(20000);
        QCOMPARE(lone.mark(QStringLiteral("t"), kA, failure(FailureKind::Transport), t1 + 20000), 40000);
        clock3.advance(1000);
        QCOMPARE(lone.mark(QStringLiteral("t"), kA, failure(FailureKind::ServerError), t1 + 20500), 40000);
    }
    void oneModelsLadderDoesNotTakeTheWholeHostAlong() {
        // A model at its third strike, then the host's first refused connection: the host's mark
        // covers every model there, and starts at 20 s (review of W2 F2's fix). A rate limit's
        // ladder never carries over to the host either.
        sw::test::FakeClock clock;
        ProviderDownMarks marks(clock);
        for (const qint64 ttl : {20000, 40000, 80000}) {
            QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::ServerError)), ttl);
            clock.advance(ttl);
        }
        QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(FailureKind::Transport)), 20000);
        QVERIFY(marks.isDown(QStringLiteral("t"), kASibling));
        QCOMPARE(marks.remainingMs(QStringLiteral("t"), kASibling), 20000);
        sw::test::FakeClock clock2;
        ProviderDownMarks limited(clock2);
        QCOMPARE(limited.mark(QStringLiteral("t"), kA, failure(FailureKind::Transport)), 20000);
        clock2.advance(20000);
        QCOMPARE(limited.mark(QStringLiteral("t"), kA, failure(FailureKind::RateLimited)), 30000);
        clock2.advance(30000);
        QCOMPARE(limited.mark(QStringLiteral("t"), kA, failure(FailureKind::Transport)), 40000);
        // One refusal, then a model's own run of 503s, then a refusal: the host's second strike.
        sw::test::FakeClock clock3;
        ProviderDownMarks run(clock3);
        QCOMPARE(run.mark(QStringLiteral("t"), kA, failure(FailureKind::Transport)), 20000);
        clock3.advance(20000);
        for (const qint64 ttl : {40000, 80000, 160000}) {
            QCOMPARE(run.mark(QStringLiteral("t"), kA, failure(FailureKind::ServerError)), ttl);
            clock3.advance(ttl);
        }
        QCOMPARE(run.mark(QStringLiteral("t"), kA, failure(FailureKind::Transport)), 40000);
    }
    void transportCoversEveryModelOnBaseUrl() {
        sw::test::FakeClock clock;
        ProviderDownMarks marks(clock);
        marks.mark(QStringLiteral("t"), kA, failure(FailureKind::Transport));
        QVERIFY(marks.isDown(QStringLiteral("t"), kA));
        QVERIFY(marks.isDown(QStringLiteral("t"), kASibling));
        QVERIFY(!marks.isDown(QStringLiteral("t"), kB));
        QCOMPARE(marks.active().first().model, QString());
    }
    void serverErrorCoversOneModel() {
        sw::test::FakeClock clock;
        ProviderDownMarks marks(clock);
        marks.mark(QStringLiteral("t"), kA, failure(FailureKind::ServerError));
        QVERIFY(marks.isDown(QStringLiteral("t"), kA));
        QVERIFY(!marks.isDown(QStringLiteral("t"), kASibling));
    }
    void otherKindsSetNoMark() {
        sw::test::FakeClock clock;
        ProviderDownMarks marks(clock);
        for (auto k : {FailureKind::CredentialExhausted, FailureKind::NotServed, FailureKind::SetupError})
            QCOMPARE(marks.mark(QStringLiteral("t"), kA, failure(k)), 0);
        QVERIFY(marks.active().isEmpty());
        QVERIFY(!marks.isDown(QStringLiteral("t"), kA));
    }
    void tenantsAreIsolated() {
        sw::test::FakeClock clock;
        ProviderDownMarks marks(clock);
        marks.mark(QStringLiteral("alice"), kA, failure(FailureKind::Transport));
        QVERIFY(marks.isDown(QStringLiteral("alice"), kA));
        QVERIFY(!marks.isDown(QStringLiteral("bob"), kA));
    }
    void clearingByFilter() {
        sw::test::FakeClock clock;
        ProviderDownMarks marks(clock);
        marks.mark(QStringLiteral("alice"), kA, failure(FailureKind::ServerError));
        marks.mark(QStringLiteral("alice"), kB, failure(FailureKind::ServerError));
        marks.mark(QStringLiteral("bob"), kA, failure(FailureKind::ServerError));
        QCOMPARE(marks.clear({QString(), QStringLiteral("zai"), QString(), QString()}), 1);
        QCOMPARE(marks.clear({QStringLiteral("alice"), {}, {}, {}}), 1);
        QCOMPARE(marks.active().size(), 1);
        QCOMPARE(marks.clear({}), 1);
        QVERIFY(marks.active().isEmpty());
        // A cleared mark forgets its strikes.
        QCOMPARE(marks.mark(QStringLiteral("alice"), kA, failure(FailureKind::ServerError)), 20000);
    }
    void clearingOneTransportMarkLeavesModelMarks() {
        sw::test::FakeClock clock;
        ProviderDownMarks marks(clock);
        marks.mark(QStringLiteral("t"), kA, failure(FailureKind::Transport));
        marks.mark(QStringLiteral("t"), kA, failure(FailureKind::ServerError));
        MarkFilter one{QStringLiteral("t"), QStringLiteral("anthropic"), QStringLiteral("http://a"), QString()};
        one.exactModel = true;
        QCOMPARE(marks.clear(one), 1);
        QCOMPARE(marks.active().size(), 1);
        QCOMPARE(marks.active().first().model, QStringLiteral("claude"));
    }
    void remainingIsTheLongestCoveringMark() {
        sw::test::FakeClock clock;
        ProviderDownMarks marks(clock);
        marks.mark(QStringLiteral("t"), kA, failure(FailureKind::Transport), clock.nowMs());
        marks.mark(QStringLiteral("t"), kA, failure(FailureKind::RateLimited), clock.nowMs()); // the same blip
        clock.advance(5000);
        QCOMPARE(marks.remainingMs(QStringLiteral("t"), kA), 25000);
    }
};

QTEST_GUILESS_MAIN(TestProviderDownMarks)
#include "test_provider_down_marks.moc"
