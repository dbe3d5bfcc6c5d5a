// CredentialPools on a fake clock and a scripted store: exhausted credentials
// are skipped until their reset, leases count in-flight use per credential,
// and pre-warming fills the keychain cache off the request path.
#include "credentials/credential_pools.h"
#include "fake_clock.h"
#include "gateway_fixture.h"
#include "signal_wait.h"

#include <QTest>

using namespace sw;
using namespace sw::credentials;
using namespace sw::test;

namespace {
AcquireResult acquireNow(CredentialPools &pools, const QStringList &refs, const QByteArray &callerAuth = {})
{
    AcquireResult out;
    bool done = false;
    QObject context;
    pools.acquire(QStringLiteral("p"), refs, callerAuth, 0, &context, [&](const AcquireResult &r) {
        out = r;
        done = true;
    });
    waitUntil([&done]() { return done; }, 2000);
    return out;
}
} // namespace

class TestCredentialPools : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void exhaustedUntilTheConfiguredReset()
    {
        qputenv("SW_POOL_A", "a");
        qputenv("SW_POOL_B", "b");
        FakeClock clock;
        ScriptedSecretStore store;
        CredentialPools pools(&store, clock);
        const QStringList refs{QStringLiteral("env:SW_POOL_A"), QStringLiteral("env:SW_POOL_B")};
        auto first = acquireNow(pools, refs);
        QCOMPARE(first.secret, QByteArray("a"));
        pools.markExhausted(first.lease, 5000);
        pools.release(first.lease);
        QCOMPARE(acquireNow(pools, refs).secret, QByteArray("b"));
        clock.advance(4999);
        QCOMPARE(acquireNow(pools, refs).secret, QByteArray("b"));
        pools.markExhausted({QStringLiteral("p"), 1}, 10000);
        QVERIFY(!pools.hasUsable(QStringLiteral("p"), refs, false)); // the resolver's peek sees it too
        QCOMPARE(acquireNow(pools, refs).kind, AcquireResult::Kind::NoCredential);
        clock.advance(1);
        QVERIFY(pools.hasUsable(QStringLiteral("p"), refs, false));
        QCOMPARE(acquireNow(pools, refs).secret, QByteArray("a"));
    }

    void leasesCountPerCredential()
    {
        qputenv("SW_POOL_A", "a");
        FakeClock clock;
        CredentialPools pools(nullptr, clock);
        const QStringList refs{QStringLiteral("env:SW_POOL_A")};
        const auto one = acquireNow(pools, refs);
        const auto two = acquireNow(pools, refs);
        QCOMPARE(pools.inFlight(QStringLiteral("p"), 0), 2);
        pools.release(one.lease);
        QCOMPARE(pools.inFlight(QStringLiteral("p"), 0), 1);
        pools.release(two.lease);
        QCOMPARE(pools.totalInFlight(), 0);
    }

    void prewarmFillsTheCacheSoAcquireDoesNotRead()
    {
        FakeClock clock;
        ScriptedSecretStore store;
        store.secrets.insert(QStringLiteral("k1"), "one");
        CredentialPools pools(&store, clock);
        QObject context;
        pools.prewarm({QStringLiteral("keychain:k1"), QStringLiteral("keychain:k1"), QStringLiteral("env:X"),
                       QStringLiteral("keychain:missing")},
                      &context);
        QCOMPARE(store.reads, 2); // each name once; env references are not the keychain's
        QVERIFY(waitUntil([&pools]() { return pools.isCached(QStringLiteral("k1")); }));
        QVERIFY(!pools.isCached(QStringLiteral("missing")));
        QCOMPARE(acquireNow(pools, {QStringLiteral("keychain:k1")}).secret, QByteArray("one"));
        QCOMPARE(store.reads, 2);
    }

    void anAnswerForAnOlderConfigurationIsDropped()
    {
        FakeClock clock;
        ScriptedSecretStore store;
        store.secrets.insert(QStringLiteral("k1"), "old");
        store.secrets.insert(QStringLiteral("k2"), "two");
        CredentialPools pools(&store, clock);
        QObject context;
        pools.prewarm({QStringLiteral("keychain:k1")}, &context); // its answer is still queued...
        pools.prewarm({QStringLiteral("keychain:k2")}, &context); // ...when a reload drops keychain:k1
        QVERIFY(waitUntil([&pools]() { return pools.isCached(QStringLiteral("k2")); }));
        QCoreApplication::processEvents();
        QVERIFY(!pools.isCached(QStringLiteral("k1")));
    }

    void aFailingKeychainIsAStoreErrorInWords()
    {
        FakeClock clock;
        ScriptedSecretStore store;
        store.mode = ScriptedSecretStore::Mode::Fail;
        CredentialPools pools(&store, clock);
        const auto r = acquireNow(pools, {QStringLiteral("keychain:k1")});
        QCOMPARE(r.kind, AcquireResult::Kind::StoreError);
        QVERIFY(r.error.contains(QStringLiteral("k1")));
        QVERIFY(r.secret.isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestCredentialPools)
#include "test_credential_pools.moc"
