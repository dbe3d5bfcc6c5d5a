// The answers kept for Idempotency-Key replays are bounded by configuration, never by
// clients: an answer over the per-answer bound lets its key go, and past the total the
// oldest kept answers go first.
#include "core/server/idempotency_store.h"
#include "fake_clock.h"

#include <QTest>

using sw::server::IdempotencyStore;
using State = IdempotencyStore::State;

namespace {
const QString kTenant = QStringLiteral("t");
const QString kRoute = QStringLiteral("/v1/messages");

// Takes `key` and completes it with a body of `bytes` bytes.
void answer(IdempotencyStore &store, const QByteArray &key, qsizetype bytes) {
    QCOMPARE(store.begin(kTenant, key, kRoute, "request").state, State::New);
    store.complete(kTenant, key, 200, {}, QByteArray(bytes, 'a'));
}
} // namespace

class TestIdempotencyStore : public QObject {
    Q_OBJECT
private slots:
    void aKeptAnswerIsReplayed() {
        sw::test::FakeClock clock;
        IdempotencyStore store(clock);
        store.setBounds(1000, 500);
        answer(store, "k1", 300);
        const auto hit = store.begin(kTenant, "k1", kRoute, "request");
        QCOMPARE(hit.state, State::Completed);
        QCOMPARE(hit.body.size(), 300);
        QCOMPARE(store.keptBytes(), 300);
    }

    void anAnswerOverItsBoundLetsTheKeyGo() {
        sw::test::FakeClock clock;
        IdempotencyStore store(clock);
        store.setBounds(1000, 500);
        answer(store, "big", 501);
        QCOMPARE(store.keptBytes(), 0);
        // Not kept, and not stuck in flight: the retry runs again (its answer is new).
        QVERIFY(!store.inFlight(kTenant, "big"));
        QCOMPARE(store.begin(kTenant, "big", kRoute, "request").state, State::New);
    }

    void pastTheTotalTheOldestGoFirst() {
        sw::test::FakeClock clock;
        IdempotencyStore store(clock);
        store.setBounds(1000, 500);
        answer(store, "k1", 400);
        clock.advance(10);
        answer(store, "k2", 400);
        clock.advance(10);
        answer(store, "k3", 400); // 1200 > 1000: k1, the oldest, goes
        QCOMPARE(store.keptBytes(), 800);
        QCOMPARE(store.begin(kTenant, "k2", kRoute, "request").state, State::Completed);
        QCOMPARE(store.begin(kTenant, "k3", kRoute, "request").state, State::Completed);
        QCOMPARE(store.begin(kTenant, "k1", kRoute, "request").state, State::New);
        // A smaller total, as a reload gives it, lets go at once; in-flight keys stay held.
        store.setBounds(400, 500);
        QCOMPARE(store.keptBytes(), 400);
        QCOMPARE(store.begin(kTenant, "k3", kRoute, "request").state, State::Completed);
        QVERIFY(store.inFlight(kTenant, "k1"));
    }

    void manyClientsCannotGrowItPastTheTotal() {
        sw::test::FakeClock clock;
        IdempotencyStore store(clock);
        store.setBounds(64 * 1024, 8 * 1024);
        for (int i = 0; i < 2000; ++i) {
            answer(store, QByteArray::number(i), 8 * 1024);
            QVERIFY(store.keptBytes() <= 64 * 1024);
        }
        QCOMPARE(store.keptBytes(), 64 * 1024);
    }

    void anExpiredAnswerGivesItsBytesBack() {
        sw::test::FakeClock clock;
        IdempotencyStore store(clock);
        store.setBounds(1000, 500);
        answer(store, "k1", 300);
        clock.advance(IdempotencyStore::kRetentionMs + 1);
        QCOMPARE(store.begin(kTenant, "k2", kRoute, "request").state, State::New); // expires k1 on the way
        QCOMPARE(store.keptBytes(), 0);
    }
};

QTEST_GUILESS_MAIN(TestIdempotencyStore)
#include "test_idempotency_store.moc"
