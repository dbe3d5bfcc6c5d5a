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

    // One tenant's keys never take another's: past its share a tenant's own oldest answered key
    // goes, and the other tenant's key is still replayed.
    void aTenantPastItsShareLetsOnlyItsOwnOldestGo() {
        sw::test::FakeClock clock;
        IdempotencyStore store(clock);
        store.setBounds(1 << 20, 1 << 20);
        store.setMaxKeysPerTenant(3);
        const QString alice = QStringLiteral("alice");
        const QString carol = QStringLiteral("carol");
        QCOMPARE(store.begin(alice, "a1", kRoute, "request").state, State::New);
        store.complete(alice, "a1", 200, {}, "alice's answer");
        for (int i = 0; i < 50; ++i) {
            const QByteArray key = "c" + QByteArray::number(i);
            QCOMPARE(store.begin(carol, key, kRoute, "request").state, State::New);
            store.complete(carol, key, 200, {}, "carol's answer");
        }
        QCOMPARE(store.keysHeld(carol), 3);
        QCOMPARE(store.keysHeld(alice), 1);
        const auto hit = store.begin(alice, "a1", kRoute, "request");
        QCOMPARE(hit.state, State::Completed);
        QCOMPARE(hit.body, QByteArray("alice's answer"));
        QCOMPARE(store.begin(carol, "c49", kRoute, "request").state, State::Completed);
        QCOMPARE(store.begin(carol, "c0", kRoute, "request").state, State::New); // her own oldest went
        // And alice still has her whole share.
        QCOMPARE(store.begin(alice, "a2", kRoute, "request").state, State::New);
        QCOMPARE(store.keysHeld(alice), 2);
    }

    // A key in flight is never let go to make room (its twin must still get 409): a tenant whose
    // whole share is in flight is served without a new key, and only that tenant.
    void keysInFlightAreNotLetGo() {
        sw::test::FakeClock clock;
        IdempotencyStore store(clock);
        store.setMaxKeysPerTenant(2);
        QCOMPARE(store.begin(kTenant, "f1", kRoute, "request").state, State::New);
        QCOMPARE(store.begin(kTenant, "f2", kRoute, "request").state, State::New);
        QCOMPARE(store.begin(kTenant, "f3", kRoute, "request").state, State::New);
        QVERIFY(store.inFlight(kTenant, "f1"));
        QVERIFY(store.inFlight(kTenant, "f2"));
        QVERIFY(!store.inFlight(kTenant, "f3"));
        QCOMPARE(store.begin(QStringLiteral("other"), "o1", kRoute, "request").state, State::New);
        QVERIFY(store.inFlight(QStringLiteral("other"), "o1"));
    }

    // Past the byte total, the tenant keeping the most bytes gives up its oldest answer first.
    void pastTheTotalTheBiggestTenantGivesWay() {
        sw::test::FakeClock clock;
        IdempotencyStore store(clock);
        store.setBounds(1000, 500);
        const QString small = QStringLiteral("small");
        QCOMPARE(store.begin(small, "s1", kRoute, "request").state, State::New);
        store.complete(small, "s1", 200, {}, QByteArray(100, 's'));
        clock.advance(10);
        for (int i = 0; i < 10; ++i) {
            const QByteArray key = "b" + QByteArray::number(i);
            QCOMPARE(store.begin(kTenant, key, kRoute, "request").state, State::New);
            store.complete(kTenant, key, 200, {}, QByteArray(400, 'b'));
            clock.advance(10);
        }
        QVERIFY(store.keptBytes() <= 1000);
        QCOMPARE(store.begin(small, "s1", kRoute, "request").state, State::Completed);
        QCOMPARE(store.begin(kTenant, "b9", kRoute, "request").state, State::Completed);
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

    // The ledger file holds what the store keeps: told of each answer kept and each let go, it
    // mirrors the store, and what it hands back (a restart, a replica) is held within the same
    // bounds, never over a request still in flight here.
    void theJournalMirrorsTheStoreAndAdoptionKeepsItsBounds() {
        sw::test::FakeClock clock;
        clock.setEpochMs(1'700'000'000'000);
        IdempotencyStore store(clock);
        store.setBounds(1000, 500);
        QList<IdempotencyStore::Kept> told;
        store.setJournal([&told](IdempotencyStore::Kept k) { told.append(std::move(k)); });
        QCOMPARE(store.begin(kTenant, "k1", kRoute, "request").state, State::New);
        QVERIFY(told.isEmpty()); // nothing in flight is kept
        store.complete(kTenant, "k1", 200, {{"content-type", "application/json"}}, QByteArray(400, 'a'));
        QCOMPARE(told.size(), 1);
        QVERIFY(!told[0].dropped);
        QCOMPARE(told[0].atEpochMs, 1'700'000'000'000);
        QCOMPARE(IdempotencyStore::decodeHeaders(IdempotencyStore::encodeHeaders(told[0].hit.headers)),
                 told[0].hit.headers);
        clock.advance(IdempotencyStore::kRetentionMs + 1);
        QCOMPARE(store.begin(kTenant, "k2", kRoute, "request").state, State::New); // k1 expires
        QCOMPARE(told.size(), 2);
        QVERIFY(told[1].dropped);
        QCOMPARE(told[1].key, QByteArray("k1"));

        IdempotencyStore other(clock);
        other.setBounds(1000, 500);
        other.setMaxKeysPerTenant(2);
        IdempotencyStore::Kept k = told[0];
        k.atEpochMs = clock.epochMs() - 1000;
        other.adopt(k);
        QCOMPARE(other.begin(kTenant, "k1", kRoute, "request").state, State::Completed);
        QVERIFY(!other.usedForOtherRequest(kTenant, "k1", kRoute, "request"));
        QVERIFY(other.usedForOtherRequest(kTenant, "k1", kRoute, "another body"));
        // Too old, too big, or over a key in flight here: not adopted.
        IdempotencyStore::Kept old = k;
        old.key = "old";
        old.atEpochMs = clock.epochMs() - IdempotencyStore::kRetentionMs - 1;
        other.adopt(old);
        QCOMPARE(other.begin(kTenant, "old", kRoute, "request").state, State::New);
        IdempotencyStore::Kept big = k;
        big.key = "big";
        big.hit.body = QByteArray(501, 'b');
        other.adopt(big);
        QVERIFY(!other.inFlight(kTenant, "big"));
        QCOMPARE(other.keysHeld(kTenant), 2);
        IdempotencyStore::Kept twin = k;
        twin.key = "old"; // in flight here since the begin() above
        other.adopt(twin);
        QVERIFY(other.inFlight(kTenant, "old"));
        // Its tenant's share holds: a third key lets the oldest completed one go.
        IdempotencyStore::Kept third = k;
        third.key = "third";
        other.adopt(third);
        QCOMPARE(other.keysHeld(kTenant), 2);
        QCOMPARE(other.begin(kTenant, "third", kRoute, "request").state, State::Completed);
        QVERIFY(other.inFlight(kTenant, "old"));
    }
};

QTEST_GUILESS_MAIN(TestIdempotencyStore)
#include "test_idempotency_store.moc"
