// CredentialPools on a fake clock and a scripted store: exhausted credentials
// are skipped until their reset, leases count in-flight use per credential,
// and pre-warming fills the keychain cache off the request path. The
// parked / rejected states, how long a credential is parked (park_policy), and
// what brings one back (time, a new secret, a changed pool, a clear).
#include "core/config/config.h"
#include "core/config/config_loader.h"
#include "core/credentials/credential_pools.h"
#include "core/credentials/park_policy.h"
#include "fake_clock.h"
#include "gateway_fixture.h"
#include "signal_wait.h"

#include <QDateTime>
#include <QTest>

using namespace sw;
using namespace sw::credentials;
using namespace sw::test;

namespace {
AcquireResult acquireNow(CredentialPools &pools, const QStringList &refs, const QByteArray &callerAuth = {},
                         const QString &provider = QStringLiteral("p")) {
    AcquireResult out;
    bool done = false;
    QObject context;
    pools.acquire(provider, refs, callerAuth, 0, &context, [&](const AcquireResult &r) {
        out = r;
        done = true;
    });
    waitUntil([&done]() { return done; }, 2000);
    return out;
}
const QString P = QStringLiteral("p");

// A pool of one keychain key, "k", read into the cache as at start.
struct CachedKeychainPool {
    FakeClock clock;
    ScriptedSecretStore store;
    CredentialPools pools{&store, clock};
    const QStringList refs{QStringLiteral("keychain:k")};
    QObject context;
    bool cached = false;

    explicit CachedKeychainPool(const QByteArray &secret) {
        store.secrets.insert(QStringLiteral("k"), secret);
        pools.configure({{P, refs}});
        pools.prewarm(refs, &context);
        cached = waitUntil([this]() { return pools.isCached(QStringLiteral("k")); });
    }
};

CredentialStatus stateOf(const CredentialPools &pools, const QString &provider, int position) {
    for (const auto &s : pools.states())
        if (s.provider == provider && s.position == position)
            return s;
    return {};
}

CredentialFailure failure(int status, const QString &message = {}, std::optional<qint64> retryAfterMs = {},
                          upstream::HeaderList headers = {}) {
    CredentialFailure f;
    f.status = status;
    f.message = message;
    f.retryAfterMs = retryAfterMs;
    f.headers = std::move(headers);
    return f;
}

// 2026-11-30 12:00:00 UTC: a fixed "now" for reset times written as absolute times.
constexpr qint64 kNoon = 1796040000000;
} // namespace

class TestCredentialPools : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void exhaustedUntilTheConfiguredReset() {
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

    void leasesCountPerCredential() {
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

    void prewarmFillsTheCacheSoAcquireDoesNotRead() {
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

    void anAnswerForAnOlderConfigurationIsDropped() {
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

    void aFailingKeychainIsAStoreErrorInWords() {
        FakeClock clock;
        ScriptedSecretStore store;
        store.mode = ScriptedSecretStore::Mode::Fail;
        CredentialPools pools(&store, clock);
        const auto r = acquireNow(pools, {QStringLiteral("keychain:k1")});
        QCOMPARE(r.kind, AcquireResult::Kind::StoreError);
        QVERIFY(r.error.contains(QStringLiteral("k1")));
        QVERIFY(r.secret.isEmpty());
    }

    // A keychain that cannot be read (no Secret Service, a locked keyring) stopped the whole pool: the
    // provider's env: key after it was never tried, and every request got a 502 (probe K4 1). SPEC 7:
    // the env: references keep working. With no other key, the keychain's error is still the answer.
    void aFailingKeychainLeavesThePoolsOtherKeysWorking() {
        FakeClock clock;
        ScriptedSecretStore store;
        store.mode = ScriptedSecretStore::Mode::Fail;
        CredentialPools pools(&store, clock);
        qputenv("SW_TEST_POOL_BACKUP_KEY", "backup-key-4242");
        const auto r =
            acquireNow(pools, {QStringLiteral("keychain:k1"), QStringLiteral("env:SW_TEST_POOL_BACKUP_KEY")});
        qunsetenv("SW_TEST_POOL_BACKUP_KEY");
        QCOMPARE(r.kind, AcquireResult::Kind::Ok);
        QCOMPARE(r.secret, QByteArray("backup-key-4242"));
        const auto none =
            acquireNow(pools, {QStringLiteral("keychain:k1"), QStringLiteral("env:SW_TEST_POOL_UNSET_KEY")});
        QCOMPARE(none.kind, AcquireResult::Kind::StoreError);
        QVERIFY(none.error.contains(QStringLiteral("k1")));
        CredentialPools noStore(nullptr, clock);
        qputenv("SW_TEST_POOL_BACKUP_KEY", "backup-key-4242");
        const auto withoutKeychain =
            acquireNow(noStore, {QStringLiteral("keychain:k1"), QStringLiteral("env:SW_TEST_POOL_BACKUP_KEY")});
        qunsetenv("SW_TEST_POOL_BACKUP_KEY");
        QCOMPARE(withoutKeychain.secret, QByteArray("backup-key-4242"));
    }

    // ---------------------------------------------------------------- parking time

    void parkingTimeFollowsRetryAfterThenHintsThenTheReason() {
        const ParkDefaults d; // 60 s for an opaque 429, 1 h for a usage limit
        // Retry-After wins over everything else.
        QCOMPARE(judgeCredentialFailure(failure(429, {}, 7000), d, kNoon).durationMs, qint64(7000));
        auto v = judgeCredentialFailure(failure(429, QStringLiteral("usage limit reached, try again in 5h"), 7000), d,
                                        kNoon);
        QCOMPARE(v.reason, ParkReason::UsageLimit);
        QCOMPARE(v.durationMs, qint64(7000));
        // An opaque 429 (no wording, no hint) is a per-minute limit: a minute, not an hour.
        v = judgeCredentialFailure(failure(429, QStringLiteral("Too Many Requests")), d, kNoon);
        QCOMPARE(v.reason, ParkReason::RateLimit);
        QCOMPARE(v.durationMs, qint64(60000));
        QVERIFY(!v.reject);
        // A usage limit without a hint: exhaustedResetMs.
        v = judgeCredentialFailure(failure(429, QStringLiteral("You exceeded your current quota")), d, kNoon);
        QCOMPARE(v.reason, ParkReason::UsageLimit);
        QCOMPARE(v.durationMs, qint64(3600000));
        // OpenAI says "insufficient_quota" in the error type, not the message.
        auto quota = failure(429, QStringLiteral("You exceeded your quota"));
        QCOMPARE(judgeCredentialFailure(quota, d, kNoon).reason, ParkReason::RateLimit);
        quota.classification = QStringLiteral("insufficient_quota: You exceeded your quota");
        QCOMPARE(judgeCredentialFailure(quota, d, kNoon).reason, ParkReason::UsageLimit);
        // The configured values are used, not the built-in ones.
        config::Config cfg;
        cfg.failover.rateLimitParkMs = 15000;
        cfg.failover.exhaustedResetMs = 7200000;
        const ParkDefaults mine = parkDefaultsFor(cfg, config::ProviderConfig());
        QCOMPARE(judgeCredentialFailure(failure(429), mine, kNoon).durationMs, qint64(15000));
        QCOMPARE(judgeCredentialFailure(failure(402, QStringLiteral("credit balance too low")), mine, kNoon).durationMs,
                 qint64(7200000));
        config::ProviderConfig slow;
        slow.exhaustedResetMs = 90000; // a provider's own setting still wins
        QCOMPARE(parkDefaultsFor(cfg, slow).exhaustedResetMs, qint64(90000));
        // A 401 is not timed at all; a 403 about the key is parked as auth.
        v = judgeCredentialFailure(failure(401, QStringLiteral("invalid x-api-key")), d, kNoon);
        QVERIFY(v.reject);
        QCOMPARE(v.reason, ParkReason::Auth);
        // Google says a key is wrong with a 400: rejected like a 401.
        v = judgeCredentialFailure(failure(400, QStringLiteral("API key not valid. Please pass a valid API key.")), d,
                                   kNoon);
        QVERIFY(v.reject);
        QCOMPARE(v.reason, ParkReason::Auth);
        // So do a deleted Gemini key and xAI's wrong or revoked key (probe AA4 F4).
        for (const QString &refused :
             {QStringLiteral("INVALID_ARGUMENT: API Key not found. Please pass a valid API key."),
              QStringLiteral("INVALID_ARGUMENT: Request contains an invalid argument. (reason API_KEY_EXPIRED)"),
              QStringLiteral("Incorrect API key provided: xa***ey. You can obtain an API key from the console.")}) {
            v = judgeCredentialFailure(failure(400, refused), d, kNoon);
            QVERIFY2(v.reject && v.reason == ParkReason::Auth, qPrintable(refused));
        }
        // OpenAI's per-minute limit links to its billing page: parked by its hint as a rate limit.
        v = judgeCredentialFailure(
            failure(429, QStringLiteral("Rate limit reached for gpt-4o-mini on requests per min (RPM). You can "
                                        "increase your rate limit at https://platform.openai.com/account/billing.")),
            d, kNoon);
        QCOMPARE(v.reason, ParkReason::RateLimit);
        QCOMPARE(v.durationMs, qint64(60000));
        v = judgeCredentialFailure(
            failure(403, QStringLiteral("permission_error: Your API key does not have permission to use the "
                                        "specified resource.")),
            d, kNoon);
        QVERIFY(!v.reject);
        QCOMPARE(v.reason, ParkReason::Auth);
        QCOMPARE(v.durationMs, qint64(3600000));
    }

    void aForbiddenThatIsNotAboutTheKeyIsAShortSetAside() {
        // A WAF page, a region block or one model out of reach said nothing about the key: it sat out an
        // hour as "auth", for every model of the provider (probe t4_403_*). Now a minute, like an opaque 429.
        const ParkDefaults d;
        const QStringList notTheKey{
            QStringLiteral("<html><title>Attention Required! | Cloudflare</title><h1>Sorry, you have been "
                           "blocked</h1></html>"),
            QStringLiteral("unsupported_country_region_territory: Country, region, or territory not supported"),
            QStringLiteral("Project does not have access to model gpt-4o"),
            QStringLiteral("forbidden"),
        };
        for (const QString &text : notTheKey) {
            const auto v = judgeCredentialFailure(failure(403, text), d, kNoon);
            QVERIFY2(!v.reject, qPrintable(text));
            QCOMPARE(v.reason, ParkReason::Forbidden);
            QCOMPARE(v.durationMs, qint64(60000));
        }
        // Its own hint still wins; the configured rate-limit park is used.
        QCOMPARE(judgeCredentialFailure(failure(403, QStringLiteral("blocked"), 5000), d, kNoon).durationMs,
                 qint64(5000));
        config::Config cfg;
        cfg.failover.rateLimitParkMs = 15000;
        QCOMPARE(judgeCredentialFailure(failure(403, QStringLiteral("blocked")),
                                        parkDefaultsFor(cfg, config::ProviderConfig()), kNoon)
                     .durationMs,
                 qint64(15000));
        // Words about the key still make it an auth park.
        for (const char *text : {"Your API key has been revoked", "invalid x-api-key", "This key is disabled",
                                 "permission_error: OAuth token does not meet scope requirement",
                                 "Your organization has been disabled."}) {
            const auto v = judgeCredentialFailure(failure(403, QString::fromUtf8(text)), d, kNoon);
            QVERIFY2(v.reason == ParkReason::Auth, text);
        }

        // In the pool (injected clock): set aside a minute, a wait the client is told of, then back.
        qputenv("SW_POOL_WAF", "waf-key");
        const QStringList refs{QStringLiteral("env:SW_POOL_WAF")};
        FakeClock clock;
        CredentialPools pools(nullptr, clock);
        pools.configure({{P, refs}});
        const auto r = acquireNow(pools, refs);
        QCOMPARE(r.kind, AcquireResult::Kind::Ok);
        pools.release(r.lease);
        pools.recordFailure(r.lease, failure(403, notTheKey.first()), d);
        QCOMPARE(stateOf(pools, P, 0).state, CredentialHealth::Parked);
        QCOMPARE(stateOf(pools, P, 0).reason, ParkReason::Forbidden);
        QCOMPARE(parkReasonName(ParkReason::Forbidden), QStringLiteral("forbidden"));
        clock.advance(20000);
        const auto wait = pools.waitFor(P, refs, false);
        QVERIFY(wait); // not "no usable credential" with nothing to wait for
        QCOMPARE(wait->remainingMs, 40000);
        QCOMPARE(wait->reason, ParkReason::Forbidden);
        QCOMPARE(wait->status, 403);
        QCOMPARE(acquireNow(pools, refs).kind, AcquireResult::Kind::NoCredential);
        clock.advance(40000);
        QCOMPARE(stateOf(pools, P, 0).state, CredentialHealth::Ok);
        QCOMPARE(acquireNow(pools, refs).kind, AcquireResult::Kind::Ok);
    }

    // A refusal of what the request carries is no word on the key (probe S2 F1): xAI names its "API key
    // ID" in its safety check's 403, and that made it an hour's "auth" park; Google's FAILED_PRECONDITION
    // about a file the request names is no refusal of the account.
    void aRefusalOfTheContentIsNoWordOnTheKey() {
        for (const char *text :
             {"Content violates usage guidelines. Team: 0000, API key ID: 1111, Model: grok-4-0709, Failed check: "
              "SAFETY_CHECK_TYPE_BIO",
              "openai/gpt-4o requires moderation on OpenRouter. Your input was flagged for violence/graphic.",
              "PERMISSION_DENIED: You do not have permission to access the File 8k2lq0x1 or it may not exist.",
              "FAILED_PRECONDITION: The File 4d21d8wxg1pe is not in an ACTIVE state and usage is not allowed."}) {
            const QString t = QString::fromUtf8(text);
            QVERIFY2(refusesTheContent(t.startsWith(QLatin1String("FAILED")) ? 400 : 403, t), text);
            QVERIFY2(!refusesTheAccount(400, t), text);
            QVERIFY2(!refusesTheContent(401, t), text); // a 401 is about the key, whatever it says
        }
        // The key's id named is no word against the key: a minute's "forbidden", not an hour's "auth".
        const ParkDefaults d;
        QCOMPARE(parkReasonFor(failure(403, QStringLiteral("Forbidden. Team: 0000, API key ID: 1111"))),
                 ParkReason::Forbidden);
        QCOMPARE(parkReasonFor(failure(403, QStringLiteral("Your API key has been revoked"))), ParkReason::Auth);
        QCOMPARE(parkReasonFor(failure(403, QStringLiteral("The api_key is invalid"))), ParkReason::Auth);
        // The account's and the key's own refusals are unchanged.
        QVERIFY(refusesTheAccount(400, QStringLiteral("FAILED_PRECONDITION: User location is not supported for the "
                                                      "API use.")));
        QVERIFY(!refusesTheContent(403, QStringLiteral("Your organization has been suspended for violating our usage "
                                                       "policies.")));
        QVERIFY(!refusesTheContent(400, QStringLiteral("INVALID_ARGUMENT: API key not valid. Your input was flagged")));
        QVERIFY(judgeCredentialFailure(failure(400, QStringLiteral("INVALID_ARGUMENT: API key not valid.")), d, kNoon)
                    .reject);
    }

    void parkingTimesAreConfiguredUnderFailover() {
        const auto defaults = config::parse(R"({"failover": {"enabled": true}})");
        QVERIFY(defaults.ok());
        QCOMPARE(defaults.config->failover.rateLimitParkMs, qint64(60000));
        QCOMPARE(defaults.config->failover.exhaustedResetMs, qint64(3600000));
        const auto set = config::parse(R"({"failover": {"rateLimitParkMs": 30000, "exhaustedResetMs": 600000}})");
        QVERIFY(set.ok());
        QCOMPARE(set.config->failover.rateLimitParkMs, qint64(30000));
        QCOMPARE(set.config->failover.exhaustedResetMs, qint64(600000));
        const QJsonObject saved = config::toJson(*set.config).value(QStringLiteral("failover")).toObject();
        QCOMPARE(saved.value(QStringLiteral("rateLimitParkMs")).toInteger(), 30000);
        QCOMPARE(saved.value(QStringLiteral("exhaustedResetMs")).toInteger(), 600000);
        const auto tooShort = config::parse(R"({"failover": {"rateLimitParkMs": 5}})");
        QVERIFY(!tooShort.ok());
        QCOMPARE(tooShort.errors.first().path, QStringLiteral("failover.rateLimitParkMs"));
    }

    void providerResetHeadersPreferTheExhaustedBudget() {
        // Anthropic: RFC 3339 times; the requests budget is used up, the token budget is not.
        const upstream::HeaderList anthropic{{"anthropic-ratelimit-requests-remaining", "0"},
                                             {"anthropic-ratelimit-requests-reset", "2026-11-30T12:00:42Z"},
                                             {"anthropic-ratelimit-tokens-remaining", "90000"},
                                             {"anthropic-ratelimit-tokens-reset", "2026-11-30T12:05:00Z"}};
        QCOMPARE(resetHintFromHeaders(anthropic, kNoon), std::optional<qint64>(42000));
        QCOMPARE(judgeCredentialFailure(failure(429, {}, {}, anthropic), {}, kNoon).durationMs, qint64(42000));
        // OpenAI: Go durations; the token budget is used up.
        const upstream::HeaderList openai{{"x-ratelimit-remaining-requests", "499"},
                                          {"x-ratelimit-reset-requests", "120ms"},
                                          {"x-ratelimit-remaining-tokens", "0"},
                                          {"x-ratelimit-reset-tokens", "6m0s"}};
        QCOMPARE(resetHintFromHeaders(openai, kNoon), std::optional<qint64>(360000));
        // No remaining counts: the latest reset.
        QCOMPARE(
            resetHintFromHeaders({{"x-ratelimit-reset-requests", "1.5s"}, {"x-ratelimit-reset-tokens", "20s"}}, kNoon),
            std::optional<qint64>(20000));
        // A reset already in the past is no hint: the reason's default applies.
        const upstream::HeaderList stale{{"anthropic-ratelimit-requests-reset", "2026-11-30T11:00:00Z"}};
        QCOMPARE(resetHintFromHeaders(stale, kNoon), std::nullopt);
        QCOMPARE(judgeCredentialFailure(failure(429, {}, {}, stale), {}, kNoon).durationMs, qint64(60000));
    }

    void resetHintsInTheErrorText() {
        QCOMPARE(resetHintFromText(QStringLiteral("Rate limit reached. Please try again in 20s."), kNoon),
                 std::optional<qint64>(20000));
        QCOMPARE(resetHintFromText(QStringLiteral("quota exhausted, try again in 1h 30m"), kNoon),
                 std::optional<qint64>(5400000));
        QCOMPARE(resetHintFromText(QStringLiteral("usage limit; resets at 2026-11-30T15:00:00Z"), kNoon),
                 std::optional<qint64>(3 * 3600000));
        // Anthropic's spend limit names the day it ends (probe K4 3): parked until then, not an hour.
        QCOMPARE(resetHintFromText(QStringLiteral("You have reached your specified API usage limits. You will regain "
                                                  "access on 2026-12-01 at 00:00 UTC."),
                                   kNoon),
                 std::optional<qint64>(12 * 3600000));
        QCOMPARE(resetHintFromText(QStringLiteral("You will regain access on 2026-12-01 at 9:30"), kNoon),
                 std::optional<qint64>(21 * 3600000 + 30 * 60000));
        QCOMPARE(resetHintFromText(QStringLiteral("Claude AI usage limit reached|1796047200"), kNoon),
                 std::optional<qint64>(2 * 3600000));
        QCOMPARE(resetHintFromText(QStringLiteral("Your limit resets at 5pm UTC"), kNoon),
                 std::optional<qint64>(5 * 3600000));
        QCOMPARE(resetHintFromText(QStringLiteral("Your limit resets at 11:00 UTC"), kNoon), // tomorrow's 11:00
                 std::optional<qint64>(23 * 3600000));
        QCOMPARE(resetHintFromText(QStringLiteral("error 500 at line 5"), kNoon), std::nullopt);
        const auto v = judgeCredentialFailure(
            failure(429, QStringLiteral("You have hit your usage limit. It resets at 2026-11-30T13:00:00Z.")), {},
            kNoon);
        QCOMPARE(v.reason, ParkReason::UsageLimit);
        QCOMPARE(v.durationMs, qint64(3600000));
    }

    void redactionMasksSecretsAndKeyShapes() {
        const QString e = redactCredentialError(
            QStringLiteral("invalid x-api-key fixture-secret-0001 (sk-test-abcdefgh); Bearer xyz.abc"),
            {"fixture-secret-0001"});
        QVERIFY2(!e.contains(QStringLiteral("fixture-secret-0001")), qPrintable(e));
        QVERIFY2(!e.contains(QStringLiteral("sk-test-abcdefgh")), qPrintable(e));
        QVERIFY2(!e.contains(QStringLiteral("xyz.abc")), qPrintable(e));
        QVERIFY(e.startsWith(QStringLiteral("invalid x-api-key [redacted]")));
    }

    // ---------------------------------------------------------------- states

    void parkedCountsDownOnTheClockAndComesBack() {
        qputenv("SW_POOL_A", "a");
        qputenv("SW_POOL_B", "b");
        FakeClock clock;
        CredentialPools pools(nullptr, clock);
        const QStringList refs{QStringLiteral("env:SW_POOL_A"), QStringLiteral("env:SW_POOL_B")};
        pools.configure({{P, refs}});
        int changes = 0;
        pools.setChangedCallback([&changes]() { ++changes; });
        QCOMPARE(stateOf(pools, P, 0).state, CredentialHealth::Ok);
        QCOMPARE(stateOf(pools, P, 0).remainingMs, std::nullopt);

        const auto v = pools.recordFailure({P, 0}, failure(429, QStringLiteral("slow down"), 7000), {});
        QCOMPARE(v.durationMs, qint64(7000));
        QCOMPARE(changes, 1);
        auto s = stateOf(pools, P, 0);
        QCOMPARE(s.state, CredentialHealth::Parked);
        QCOMPARE(s.reason, ParkReason::RateLimit);
        QCOMPARE(s.status, 429);
        QCOMPARE(s.remainingMs, std::optional<qint64>(7000));
        QCOMPARE(s.ref, QStringLiteral("env:SW_POOL_A"));
        QCOMPARE(pools.parkedCount(), 1);
        QCOMPARE(acquireNow(pools, refs).secret, QByteArray("b"));

        clock.advance(6999);
        QCOMPARE(stateOf(pools, P, 0).remainingMs, std::optional<qint64>(1));
        QCOMPARE(acquireNow(pools, refs).secret, QByteArray("b"));
        clock.advance(1);
        QCOMPARE(stateOf(pools, P, 0).state, CredentialHealth::Ok);
        QCOMPARE(pools.parkedCount(), 0);
        QCOMPARE(acquireNow(pools, refs).secret, QByteArray("a"));

        // An opaque 429: a minute.
        pools.recordFailure({P, 0}, failure(429), {});
        clock.advance(59999);
        QVERIFY(!pools.hasUsable(P, {refs.at(0)}, false));
        clock.advance(1);
        QVERIFY(pools.hasUsable(P, {refs.at(0)}, false));
    }

    void aLaterFailureNeverShortensParking() {
        qputenv("SW_POOL_A", "a");
        FakeClock clock;
        CredentialPools pools(nullptr, clock);
        const QStringList refs{QStringLiteral("env:SW_POOL_A")};
        pools.configure({{P, refs}});
        pools.park({P, 0}, ParkReason::UsageLimit, 429, 3600000, QStringLiteral("usage limit"));
        pools.park({P, 0}, ParkReason::RateLimit, 429, 60000, QStringLiteral("slow down"));
        QCOMPARE(stateOf(pools, P, 0).remainingMs, std::optional<qint64>(3600000));
        QCOMPARE(stateOf(pools, P, 0).reason, ParkReason::UsageLimit);
    }

    void rejectedStaysUntilTheSecretChanges() {
        qputenv("SW_POOL_A", "wrong-one");
        FakeClock clock;
        ScriptedSecretStore store;
        store.secrets.insert(QStringLiteral("k"), "typo-key");
        CredentialPools pools(&store, clock);
        const QStringList refs{QStringLiteral("keychain:k"), QStringLiteral("env:SW_POOL_A")};
        pools.configure({{P, refs}});
        QCOMPARE(acquireNow(pools, refs).secret, QByteArray("typo-key"));

        pools.recordFailure({P, 0}, failure(401, QStringLiteral("invalid x-api-key typo-key")), {});
        auto s = stateOf(pools, P, 0);
        QCOMPARE(s.state, CredentialHealth::Rejected);
        QCOMPARE(s.reason, ParkReason::Auth);
        QCOMPARE(s.status, 401);
        QCOMPARE(s.remainingMs, std::nullopt); // no timer
        QVERIFY2(!s.lastError.contains(QStringLiteral("typo-key")), qPrintable(s.lastError));
        clock.advance(30LL * 24 * 3600 * 1000); // a month later: still rejected
        QCOMPARE(stateOf(pools, P, 0).state, CredentialHealth::Rejected);
        QCOMPARE(acquireNow(pools, refs).secret, QByteArray("wrong-one"));

        // The user stores the right key (credential set): the next acquire reads it at once.
        store.secrets.insert(QStringLiteral("k"), "fixed-key");
        QCOMPARE(pools.credentialChanged(QStringLiteral("keychain:k")), 1);
        QCOMPARE(stateOf(pools, P, 0).state, CredentialHealth::Ok);
        QCOMPARE(acquireNow(pools, refs).secret, QByteArray("fixed-key"));

        // An env: key fixed in place (the same process sees the new value) is noticed without a command.
        pools.recordFailure({P, 1}, failure(401), {});
        QCOMPARE(stateOf(pools, P, 1).state, CredentialHealth::Rejected);
        qputenv("SW_POOL_A", "right-one");
        QCOMPARE(stateOf(pools, P, 1).state, CredentialHealth::Ok);
    }

    void aReloadThatReadsANewSecretClearsTheRejection() {
        FakeClock clock;
        ScriptedSecretStore store;
        store.secrets.insert(QStringLiteral("k"), "typo-key");
        CredentialPools pools(&store, clock);
        const QStringList refs{QStringLiteral("keychain:k")};
        pools.configure({{P, refs}});
        QObject context;
        pools.prewarm(refs, &context);
        QVERIFY(waitUntil([&pools]() { return pools.isCached(QStringLiteral("k")); }));
        pools.reject({P, 0}, 401, {});
        pools.prewarm(refs, &context); // the same secret again: still rejected
        QVERIFY(waitUntil([&pools]() { return !pools.isReading(QStringLiteral("k")); }));
        QCOMPARE(stateOf(pools, P, 0).state, CredentialHealth::Rejected);
        store.secrets.insert(QStringLiteral("k"), "fixed-key"); // Set key… in the GUI, then a reload
        pools.prewarm(refs, &context);
        QVERIFY(waitUntil([&pools]() { return stateOf(pools, P, 0).state == CredentialHealth::Ok; }));
    }

    void aRefusedKeychainSecretIsReadAgainAndANewOneUsedAtOnce() {
        // `switchman credential set` while the gateway runs: the pool kept sending the cached old
        // key, and after the provider's 401 it stayed rejected (502 on every request) until a
        // retry or a restart (probe R).
        FakeClock clock;
        ScriptedSecretStore store;
        store.secrets.insert(QStringLiteral("k"), "old-key-444");
        CredentialPools pools(&store, clock);
        const QStringList refs{QStringLiteral("keychain:k")};
        pools.configure({{P, refs}});
        QObject context;
        pools.prewarm(refs, &context);
        QVERIFY(waitUntil([&pools]() { return pools.isCached(QStringLiteral("k")); }));
        const int readsBefore = store.reads;

        // Refused while the keychain still holds the same key: read once, and it stays out.
        auto sent = acquireNow(pools, refs);
        QCOMPARE(sent.secret, QByteArray("old-key-444"));
        pools.release(sent.lease);
        pools.recordFailure(sent.lease, failure(401, QStringLiteral("invalid x-api-key")), {});
        pools.recordFailure(sent.lease, failure(401, QStringLiteral("invalid x-api-key")), {}); // one read
        QVERIFY(waitUntil([&]() { return store.reads == readsBefore + 1; }));
        QTest::qWait(20);
        QCOMPARE(store.reads, readsBefore + 1);
        QCOMPARE(stateOf(pools, P, 0).state, CredentialHealth::Rejected);
        QCOMPARE(acquireNow(pools, refs).kind, AcquireResult::Kind::NoCredential);

        // The user stores a new key; the next refusal of the old one reads it and it is back at once.
        store.secrets.insert(QStringLiteral("k"), "new-key-555");
        pools.recordFailure(sent.lease, failure(401, QStringLiteral("invalid x-api-key")), {});
        QVERIFY(waitUntil([&pools]() { return stateOf(pools, P, 0).state == CredentialHealth::Ok; }));
        auto next = acquireNow(pools, refs);
        QCOMPARE(next.kind, AcquireResult::Kind::Ok);
        QCOMPARE(next.secret, QByteArray("new-key-555"));
        pools.release(next.lease);

        // A 403 about the key parks it for auth: a new key stored meanwhile un-parks it too.
        store.secrets.insert(QStringLiteral("k"), "newer-key-666");
        pools.recordFailure(next.lease, failure(403, QStringLiteral("permission denied: the API key is disabled")), {});
        QCOMPARE(stateOf(pools, P, 0).state, CredentialHealth::Parked);
        QCOMPARE(stateOf(pools, P, 0).reason, ParkReason::Auth);
        QVERIFY(waitUntil([&pools]() { return stateOf(pools, P, 0).state == CredentialHealth::Ok; }));
        QCOMPARE(acquireNow(pools, refs).secret, QByteArray("newer-key-666"));
    }

    // The re-read after a refusal made a read of its own beside one already out (a reload's, while
    // the keyring waits for its unlock prompt), and one that never answered stopped every later
    // re-read of that key: a key stored once the keychain worked again was not found.
    void aReadAfterARefusalJoinsAReadAlreadyOut() {
        CachedKeychainPool s("old-key-1");
        QVERIFY(s.cached);
        FakeClock &clock = s.clock;
        ScriptedSecretStore &store = s.store;
        CredentialPools &pools = s.pools;
        const QStringList &refs = s.refs;
        QObject &context = s.context;

        store.mode = ScriptedSecretStore::Mode::Hang;
        pools.prewarm(refs, &context); // a reload: its read waits; the cached key stays in use
        QVERIFY(pools.isReading(QStringLiteral("k")));
        const int readsBefore = store.reads;
        const AcquireResult sent = acquireNow(pools, refs);
        QCOMPARE(sent.secret, QByteArray("old-key-1"));
        pools.release(sent.lease);
        pools.recordFailure(sent.lease, failure(401, QStringLiteral("invalid x-api-key")), {});
        QCOMPARE(store.reads, readsBefore); // asked once, not twice
        QCOMPARE(stateOf(pools, P, 0).state, CredentialHealth::Rejected);
        // Once that read is past its bound it may never answer: the next re-read asks itself.
        clock.advance(CredentialPools::kKeychainReadTimeoutMs);
        clock.advance(CredentialPools::kRereadStaleMs);
        pools.recordFailure(sent.lease, failure(401, QStringLiteral("invalid x-api-key")), {});
        QCOMPARE(store.reads, readsBefore + 1);

        // The user unlocks the keyring with a new key in it: the one answer brings the key back.
        store.secrets.insert(QStringLiteral("k"), "new-key-2");
        store.mode = ScriptedSecretStore::Mode::Answer;
        store.answerHeld();
        QVERIFY(waitUntil([&pools]() { return stateOf(pools, P, 0).state == CredentialHealth::Ok; }));
        QCOMPARE(acquireNow(pools, refs).secret, QByteArray("new-key-2"));
    }

    void aReadAfterARefusalThatNeverAnswersDoesNotStopTheNext() {
        CachedKeychainPool s("old-key-1");
        QVERIFY(s.cached);
        FakeClock &clock = s.clock;
        ScriptedSecretStore &store = s.store;
        CredentialPools &pools = s.pools;
        const QStringList &refs = s.refs;

        store.mode = ScriptedSecretStore::Mode::Hang; // the Secret Service hangs
        const AcquireResult sent = acquireNow(pools, refs);
        pools.release(sent.lease);
        const int readsBefore = store.reads;
        pools.recordFailure(sent.lease, failure(401, QStringLiteral("invalid x-api-key")), {});
        QCOMPARE(store.reads, readsBefore + 1);
        clock.advance(CredentialPools::kRereadStaleMs - 1);
        QCOMPARE(acquireNow(pools, refs).kind, AcquireResult::Kind::NoCredential); // looked at: no new read
        QCOMPARE(store.reads, readsBefore + 1);

        // A minute on, the hung read no longer holds the next back; the keychain works again by then.
        clock.advance(1);
        store.mode = ScriptedSecretStore::Mode::Answer;
        store.secrets.insert(QStringLiteral("k"), "new-key-2");
        QCOMPARE(acquireNow(pools, refs).kind, AcquireResult::Kind::NoCredential); // the read is out
        QCOMPARE(store.reads, readsBefore + 2);
        QVERIFY(waitUntil([&pools]() { return stateOf(pools, P, 0).state == CredentialHealth::Ok; }));
        QCOMPARE(acquireNow(pools, refs).secret, QByteArray("new-key-2"));
    }

    void anUnreachableKeychainIsNotShownAsOk() {
        // The Secret Service down: requests failed over with setup_error while /admin/credentials
        // said "ok" (probe R).
        FakeClock clock;
        ScriptedSecretStore store;
        store.mode = ScriptedSecretStore::Mode::Fail;
        CredentialPools pools(&store, clock);
        const QStringList refs{QStringLiteral("keychain:k")};
        pools.configure({{P, refs}});
        int changes = 0;
        pools.setChangedCallback([&changes]() { ++changes; });
        QObject context;
        pools.prewarm(refs, &context);
        QVERIFY(waitUntil([&pools]() { return stateOf(pools, P, 0).state != CredentialHealth::Ok; }));
        const CredentialStatus down = stateOf(pools, P, 0);
        QCOMPARE(down.state, CredentialHealth::Unavailable);
        QCOMPARE(credentialHealthName(down.state), QStringLiteral("unavailable"));
        QVERIFY2(down.lastError.contains(QStringLiteral("not available")), qPrintable(down.lastError));
        QVERIFY(changes > 0); // the window refreshes
        QCOMPARE(acquireNow(pools, refs).kind, AcquireResult::Kind::StoreError);

        // The store is back: the next read (a request's) brings it back to ok.
        store.mode = ScriptedSecretStore::Mode::Answer;
        store.secrets.insert(QStringLiteral("k"), "the-key-777");
        QCOMPARE(acquireNow(pools, refs).secret, QByteArray("the-key-777"));
        QCOMPARE(stateOf(pools, P, 0).state, CredentialHealth::Ok);
    }

    // A keychain read that never answers (a locked keyring whose unlock prompt nobody answers, a hung
    // Secret Service) held every request of the pool until the request deadline, the pool's next key
    // and the route's next candidate never asked, and the key said "ok" (probe AA4 F1).
    void aKeychainReadThatDoesNotAnswerEndsAtItsBound() {
        qputenv("SW_POOL_B", "b");
        FakeClock clock;
        ScriptedSecretStore store;
        store.mode = ScriptedSecretStore::Mode::Hang;
        CredentialPools pools(&store, clock);
        const QString keychainRef = QStringLiteral("keychain:k");
        const QStringList refs{keychainRef, QStringLiteral("env:SW_POOL_B")};
        pools.configure({{P, refs}});
        int changes = 0;
        pools.setChangedCallback([&changes]() { ++changes; });
        QObject context;
        std::optional<AcquireResult> first;
        pools.acquire(P, refs, {}, 0, &context, [&first](const AcquireResult &r) { first = r; });
        QCoreApplication::processEvents();
        clock.advance(CredentialPools::kKeychainReadTimeoutMs - 1);
        QVERIFY(!first);
        QCOMPARE(stateOf(pools, P, 0).state, CredentialHealth::Ok); // a read just begun is no problem
        clock.advance(1);
        QVERIFY(first);
        QCOMPARE(first->kind, AcquireResult::Kind::Ok);
        QCOMPARE(first->secret, QByteArray("b"));
        QCOMPARE(first->lease.index, 1);

        // The read goes on. The key is out of use meanwhile: said so, and later requests neither
        // wait for it nor ask the keychain again.
        const CredentialStatus row = stateOf(pools, P, 0);
        QCOMPARE(row.state, CredentialHealth::Unavailable);
        QVERIFY2(row.lastError.contains(QStringLiteral("has not answered")), qPrintable(row.lastError));
        QVERIFY(changes > 0);
        QVERIFY(!pools.hasUsable(P, {keychainRef}, false));
        QVERIFY(pools.hasUsable(P, refs, false));
        bool answered = false;
        pools.acquire(P, refs, {}, 0, &context, [&answered](const AcquireResult &r) {
            answered = r.kind == AcquireResult::Kind::Ok && r.secret == "b";
        });
        QVERIFY(answered); // at once, on the same clock
        const AcquireResult alone = acquireNow(pools, {keychainRef});
        QCOMPARE(alone.kind, AcquireResult::Kind::StoreError);
        QVERIFY2(alone.error.contains(QStringLiteral("has not answered")), qPrintable(alone.error));
        QCOMPARE(store.reads, 1);

        // The keyring is unlocked: the read's answer is used when it comes.
        store.secrets.insert(QStringLiteral("k"), "late-key");
        store.mode = ScriptedSecretStore::Mode::Answer;
        store.answerHeld();
        QVERIFY(waitUntil([&pools]() { return pools.isCached(QStringLiteral("k")); }));
        QCOMPARE(stateOf(pools, P, 0).state, CredentialHealth::Ok);
        QCOMPARE(acquireNow(pools, refs).secret, QByteArray("late-key"));
        QCOMPARE(store.reads, 1);
    }

    // A reload that changed nothing threw away the cached keychain secrets and read them again: with
    // the keyring locked since, the working key was gone and its provider out of service (probe AA4 F3).
    void aReloadKeepsAWorkingSecretUntilAReadSaysOtherwise() {
        FakeClock clock;
        ScriptedSecretStore store;
        store.secrets.insert(QStringLiteral("k"), "working-key");
        CredentialPools pools(&store, clock);
        const QStringList refs{QStringLiteral("keychain:k")};
        pools.configure({{P, refs}});
        QObject context;
        pools.prewarm(refs, &context);
        QVERIFY(waitUntil([&pools]() { return pools.isCached(QStringLiteral("k")); }));

        store.mode = ScriptedSecretStore::Mode::Fail; // locked since
        pools.prewarm(refs, &context);
        QVERIFY(waitUntil([&pools]() { return !pools.isReading(QStringLiteral("k")); }));
        QCOMPARE(stateOf(pools, P, 0).state, CredentialHealth::Ok);
        QCOMPARE(acquireNow(pools, refs).secret, QByteArray("working-key"));

        store.mode = ScriptedSecretStore::Mode::Hang; // an unlock prompt nobody answers
        pools.prewarm(refs, &context);
        clock.advance(CredentialPools::kKeychainReadTimeoutMs);
        QCOMPARE(stateOf(pools, P, 0).state, CredentialHealth::Ok);
        QCOMPARE(acquireNow(pools, refs).secret, QByteArray("working-key"));
        store.secrets.insert(QStringLiteral("k"), "rotated-key"); // unlocked, and a new key read
        store.mode = ScriptedSecretStore::Mode::Answer;
        store.answerHeld();
        QVERIFY(waitUntil([&pools]() { return !pools.isReading(QStringLiteral("k")); }));
        QCOMPARE(acquireNow(pools, refs).secret, QByteArray("rotated-key"));

        // A definite "no such entry" drops it.
        store.secrets.remove(QStringLiteral("k"));
        pools.prewarm(refs, &context);
        QVERIFY(waitUntil([&pools]() { return !pools.isReading(QStringLiteral("k")); }));
        QVERIFY(!pools.isCached(QStringLiteral("k")));
        QCOMPARE(stateOf(pools, P, 0).state, CredentialHealth::Missing);

        // A key taken out of the configuration is forgotten.
        store.secrets.insert(QStringLiteral("k"), "working-key");
        pools.prewarm(refs, &context);
        QVERIFY(waitUntil([&pools]() { return pools.isCached(QStringLiteral("k")); }));
        const QStringList other{QStringLiteral("env:SW_POOL_B")};
        pools.configure({{P, other}});
        pools.prewarm(other, &context);
        QVERIFY(!pools.isCached(QStringLiteral("k")));
    }

    void aChangedPoolStartsOverAndClearFilters() {
        qputenv("SW_POOL_A", "a");
        qputenv("SW_POOL_B", "b");
        FakeClock clock;
        CredentialPools pools(nullptr, clock);
        const QString a = QStringLiteral("env:SW_POOL_A");
        const QString b = QStringLiteral("env:SW_POOL_B");
        pools.configure({{P, {a, b}}, {QStringLiteral("q"), {a}}});
        pools.park({P, 0}, ParkReason::RateLimit, 429, 60000, {});
        pools.park({P, 1}, ParkReason::RateLimit, 429, 60000, {});
        pools.park({QStringLiteral("q"), 0}, ParkReason::UsageLimit, 429, 60000, {});
        QCOMPARE(pools.parkedCount(), 3);

        // The same pools again (an unrelated configuration change): nothing moves.
        pools.configure({{P, {a, b}}, {QStringLiteral("q"), {a}}});
        QCOMPARE(pools.parkedCount(), 3);
        // q's pool changed: its states go; p's stay.
        pools.configure({{P, {a, b}}, {QStringLiteral("q"), {b, a}}});
        QCOMPARE(pools.parkedCount(), 2);

        CredentialFilter byRef;
        byRef.provider = P;
        byRef.ref = b;
        QCOMPARE(pools.clear(byRef), 1);
        QCOMPARE(stateOf(pools, P, 0).state, CredentialHealth::Parked);
        QCOMPARE(stateOf(pools, P, 1).state, CredentialHealth::Ok);
        QCOMPARE(pools.clear({}), 1);
        QCOMPARE(pools.parkedCount(), 0);
        QCOMPARE(pools.clear({}), 0);
    }

    void aPoolOutOnlyForLimitsSaysWhenItIsBack() {
        // The client's 429 and Retry-After when no key of a provider is usable: the soonest key a
        // usage or rate limit set aside; nothing when one will not come back by waiting.
        qputenv("SW_POOL_A", "a");
        qputenv("SW_POOL_B", "b");
        const QStringList refs{QStringLiteral("env:SW_POOL_A"), QStringLiteral("env:SW_POOL_B")};
        FakeClock clock;
        CredentialPools pools(nullptr, clock);
        pools.configure({{P, refs}});
        QVERIFY(!pools.waitFor(P, refs, false)); // both usable
        pools.park({P, 0}, ParkReason::UsageLimit, 429, 3600000, QStringLiteral("quota"));
        QVERIFY(!pools.waitFor(P, refs, false)); // one usable
        pools.park({P, 1}, ParkReason::RateLimit, 429, 30000, QStringLiteral("slow down"));
        clock.advance(10000);
        auto wait = pools.waitFor(P, refs, false);
        QVERIFY(wait);
        QCOMPARE(wait->remainingMs, 20000);
        QCOMPARE(wait->reason, ParkReason::RateLimit);
        QCOMPARE(wait->lastError, QStringLiteral("slow down"));
        clock.advance(20000); // the rate-limited key is back
        QVERIFY(!pools.waitFor(P, refs, false));
        pools.reject({P, 1}, 401, {});
        wait = pools.waitFor(P, refs, false); // the refused one is no wait; the other one is
        QVERIFY(wait);
        QCOMPARE(wait->remainingMs, 3600000 - 30000);
        pools.reject({P, 0}, 401, {});
        QVERIFY(!pools.waitFor(P, refs, false)); // only a new secret helps
    }

    void passthroughIsNeverParked() {
        FakeClock clock;
        CredentialPools pools(nullptr, clock);
        pools.configure({{P, {QStringLiteral("passthrough")}}});
        pools.recordFailure({P, 0}, failure(401), {});
        pools.park({P, 0}, ParkReason::RateLimit, 429, 60000, {});
        QCOMPARE(stateOf(pools, P, 0).state, CredentialHealth::Ok);
        QVERIFY(pools.hasUsable(P, {QStringLiteral("passthrough")}, true));
    }

    void markExhaustedStillParks() {
        qputenv("SW_POOL_A", "a");
        FakeClock clock;
        CredentialPools pools(nullptr, clock);
        pools.configure({{P, {QStringLiteral("env:SW_POOL_A")}}});
        pools.markExhausted({P, 0}, 5000);
        QCOMPARE(stateOf(pools, P, 0).state, CredentialHealth::Parked);
        QCOMPARE(stateOf(pools, P, 0).remainingMs, std::optional<qint64>(5000));
    }

    // A key whose project cannot reach one model is started past for that model alone, while it lasts,
    // and only while it is the same key: a changed pool position or a clear forgets it. Tenants' model
    // ids cannot grow the table.
    void aModelOutOfAKeysReachIsRememberedForThatKeyAndModel() {
        FakeClock clock;
        CredentialPools pools(nullptr, clock);
        const QStringList refs = {QStringLiteral("env:SW_POOL_A"), QStringLiteral("env:SW_POOL_B")};
        const QString m = QStringLiteral("gpt-x");
        pools.configure({{P, refs}});
        QCOMPARE(pools.firstInReach(P, refs, m, 0), 0);
        pools.noteOutOfReach(P, 0, m);
        QCOMPARE(pools.firstInReach(P, refs, m, 0), 1);
        QCOMPARE(pools.firstInReach(P, refs, QStringLiteral("gpt-y"), 0), 0); // another model: untouched
        QCOMPARE(stateOf(pools, P, 0).state, CredentialHealth::Ok);           // the key is not set aside
        pools.noteOutOfReach(P, 1, m);
        QCOMPARE(pools.firstInReach(P, refs, m, 0), -1);
        clock.advance(CredentialPools::kOutOfReachMs);
        QCOMPARE(pools.firstInReach(P, refs, m, 0), 0);

        pools.noteOutOfReach(P, 0, m);
        const QStringList replaced = {QStringLiteral("env:SW_POOL_C"), refs[1]};
        pools.configure({{P, replaced}});
        QCOMPARE(pools.firstInReach(P, replaced, m, 0), 0); // another key at that position

        pools.noteOutOfReach(P, 0, m);
        CredentialFilter all;
        pools.clear(all); // "Retry now"
        QCOMPARE(pools.firstInReach(P, replaced, m, 0), 0);

        for (int i = 0; i < 3 * CredentialPools::kMaxOutOfReach; ++i)
            pools.noteOutOfReach(P, 0, QStringLiteral("tenant-model-%1").arg(i));
        QVERIFY(pools.outOfReachCount() <= CredentialPools::kMaxOutOfReach);
        pools.noteOutOfReach(P, 0, m);
        QCOMPARE(pools.firstInReach(P, replaced, m, 0), 1); // the newest is kept when the table is full
    }
};

QTEST_GUILESS_MAIN(TestCredentialPools)
#include "test_credential_pools.moc"
