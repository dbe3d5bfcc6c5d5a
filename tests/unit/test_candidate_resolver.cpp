// Route resolution order and the failover resolver (next untried candidate, marked ones last).
#include "core/failover/candidate_policy.h"
#include "core/failover/candidate_resolver.h"
#include "core/util/glob_pattern.h"

#include <QTest>

using namespace sw;
using namespace sw::failover;

namespace {
config::Config sample() {
    config::Config c;
    for (const auto &[id, api] : {std::pair{"anthropic", "anthropic-messages"},
                                  {"zai", "anthropic-messages"},
                                  {"openai", "openai-completions"}}) {
        config::ProviderConfig p;
        p.id = QString::fromLatin1(id);
        p.api = QString::fromLatin1(api);
        p.baseUrl = QStringLiteral("http://") + p.id;
        c.providers.insert(p.id, p);
    }
    for (const auto &[provider, id] : {std::pair{"anthropic", "claude-sonnet-4-5"},
                                       {"zai", "glm-4.6"},
                                       {"openai", "gpt-5"},
                                       {"openai", "glm-4.6-mirror"}}) {
        config::ModelConfig m;
        m.provider = QString::fromLatin1(provider);
        m.id = QString::fromLatin1(id);
        c.models.insert(m.key(), m);
    }
    config::RouteConfig r;
    r.name = QStringLiteral("sonnet");
    r.candidates = {QStringLiteral("anthropic/claude-sonnet-4-5"), QStringLiteral("zai/glm-4.6"),
                    QStringLiteral("openai/gpt-5")};
    r.aliases = {QStringLiteral("claude-sonnet-*")};
    c.routes.insert(r.name, r);
    return c;
}

QStringList walk(const Resolution &r, const CandidateResolver::State &state) {
    TriedCandidates tried;
    QStringList order;
    while (auto c = CandidateResolver::next(r, tried, state)) {
        order << c->name();
        tried.insert(*c);
    }
    return order;
}

TriedCandidates triedOf(const Candidate &c) {
    TriedCandidates tried;
    tried.insert(c);
    return tried;
}

Candidate candidate(const QString &provider, const QString &id, const QString &baseUrl) {
    Candidate c;
    c.provider.id = provider;
    c.provider.baseUrl = baseUrl;
    c.model.provider = provider;
    c.model.id = id;
    return c;
}
} // namespace

class TestCandidateResolver : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void resolutionOrder() {
        const auto c = sample();
        QCOMPARE(CandidateResolver::resolve(c, QStringLiteral("sonnet"))->routeName, QStringLiteral("sonnet"));
        // Claude Code's hard-coded names reach the route through its alias.
        const auto alias = CandidateResolver::resolve(c, QStringLiteral("claude-sonnet-4-5-20250929"));
        QVERIFY(alias && alias->routeName == QLatin1String("sonnet") && !alias->direct);
        const auto direct = CandidateResolver::resolve(c, QStringLiteral("zai/glm-4.6"));
        QVERIFY(direct && direct->direct && direct->chain.size() == 1);
        const auto bare = CandidateResolver::resolve(c, QStringLiteral("gpt-5"));
        QVERIFY(bare && bare->direct && bare->chain.first().name() == QLatin1String("openai/gpt-5"));
        QVERIFY(!CandidateResolver::resolve(c, QStringLiteral("nothing-like-it")));
        QVERIFY(!CandidateResolver::resolve(c, QString()));
    }
    void aliasWithCharacterSetResolves() {
        // The dialect config validation accepts is the one the resolver matches.
        auto c = sample();
        c.routes[QStringLiteral("sonnet")].aliases = {QStringLiteral("claude-[34]*")};
        const auto three = CandidateResolver::resolve(c, QStringLiteral("claude-3-opus"));
        QVERIFY(three && three->routeName == QLatin1String("sonnet"));
        QVERIFY(!CandidateResolver::resolve(c, QStringLiteral("claude-5-opus")));
    }
    // The README's recipe: the starter route `claude` catches `claude-*`, and a route `haiku` is added
    // for `claude-haiku-*`. Routes are kept by name, so "the first matching alias" was `claude`'s, and
    // Claude Code's background requests went to the expensive chain (probe K1 1). The most specific
    // matching alias wins, whatever the names.
    void theMostSpecificAliasWins() {
        auto c = sample();
        config::RouteConfig claude;
        claude.name = QStringLiteral("claude");
        claude.candidates = {QStringLiteral("anthropic/claude-sonnet-4-5")};
        claude.aliases = {QStringLiteral("claude-*")};
        config::RouteConfig haiku = claude;
        haiku.name = QStringLiteral("haiku");
        haiku.aliases = {QStringLiteral("claude-haiku-*")};
        config::RouteConfig any = claude;
        any.name = QStringLiteral("a-catch-all"); // first by name
        any.aliases = {QStringLiteral("*")};
        c.routes.remove(QStringLiteral("sonnet"));
        for (const auto &r : {claude, haiku, any})
            c.routes.insert(r.name, r);
        QCOMPARE(CandidateResolver::resolve(c, QStringLiteral("claude-haiku-4-5-20251001"))->routeName,
                 QStringLiteral("haiku"));
        QCOMPARE(CandidateResolver::resolve(c, QStringLiteral("Claude-Haiku-4-5"))->routeName, QStringLiteral("haiku"));
        QCOMPARE(CandidateResolver::resolve(c, QStringLiteral("claude-sonnet-4-5"))->routeName,
                 QStringLiteral("claude"));
        QCOMPARE(CandidateResolver::resolve(c, QStringLiteral("gpt-5"))->routeName, QStringLiteral("a-catch-all"));
        // A set fixes a character as a literal does; a `?` does not.
        QVERIFY(util::GlobPattern(QStringLiteral("claude-[34]*")).specificity() >
                util::GlobPattern(QStringLiteral("claude-?*")).specificity());
    }
    void markedCandidatesAreDeferred() {
        const auto r = *CandidateResolver::resolve(sample(), QStringLiteral("sonnet"));
        CandidateResolver::State s;
        s.isMarked = [](const Candidate &c) { return c.provider.id == QLatin1String("anthropic"); };
        QCOMPARE(walk(r, s), (QStringList{QStringLiteral("zai/glm-4.6"), QStringLiteral("openai/gpt-5"),
                                          QStringLiteral("anthropic/claude-sonnet-4-5")}));
    }
    void allMarkedFirstWins() {
        const auto r = *CandidateResolver::resolve(sample(), QStringLiteral("sonnet"));
        CandidateResolver::State s;
        s.isMarked = [](const Candidate &) { return true; };
        QCOMPARE(CandidateResolver::next(r, {}, s)->name(), QStringLiteral("anthropic/claude-sonnet-4-5"));
    }
    void aMarkedCandidatePassedOverIsReportedOnlyWhenAnotherIsAsked() {
        const auto r = *CandidateResolver::resolve(sample(), QStringLiteral("sonnet"));
        CandidateResolver::State s;
        s.isMarked = [](const Candidate &c) { return c.provider.id != QLatin1String("openai"); };
        QList<Skip> skipped;
        // Both marked ones stand before the unmarked one asked: each was passed over.
        QCOMPARE(CandidateResolver::next(r, {}, s, &skipped)->name(), QStringLiteral("openai/gpt-5"));
        QCOMPARE(skipped.size(), 2);
        QVERIFY(skipped[0].marked && skipped[1].marked);
        QVERIFY(!skipped[0].noCredential);
        QCOMPARE(skipped[0].candidate.provider.id, QStringLiteral("anthropic"));
        QCOMPARE(skipped[1].candidate.provider.id, QStringLiteral("zai"));
        // Only marked ones left: the first is asked, and none was passed over for its mark.
        skipped.clear();
        QCOMPARE(CandidateResolver::next(r, triedOf(r.chain[2]), s, &skipped)->name(),
                 QStringLiteral("anthropic/claude-sonnet-4-5"));
        QVERIFY(skipped.isEmpty());
        // Nothing marked: nothing reported.
        s.isMarked = [](const Candidate &) { return false; };
        QCOMPARE(CandidateResolver::next(r, {}, s, &skipped)->name(), QStringLiteral("anthropic/claude-sonnet-4-5"));
        QVERIFY(skipped.isEmpty());
    }
    // A follower this request cannot go to (an image to a text-only model) is passed over where it
    // stands: with the first candidate marked, it is not "asked instead" of it, so the marked one is
    // asked and reported passed over by no row (probe IV 2); marked or not, it is never returned.
    void oneThatCannotTakeTheRequestIsPassedOverNotAskedInstead() {
        const auto r = *CandidateResolver::resolve(sample(), QStringLiteral("sonnet"));
        CandidateResolver::State s;
        s.isMarked = [](const Candidate &c) { return c.provider.id == QLatin1String("anthropic"); };
        s.cannotTake = [](const Candidate &c) -> std::optional<QString> {
            if (c.provider.id == QLatin1String("anthropic"))
                return std::nullopt;
            return QStringLiteral("%1 does not accept image input").arg(c.name());
        };
        QList<Skip> skipped;
        QCOMPARE(CandidateResolver::next(r, {}, s, &skipped)->name(), QStringLiteral("anthropic/claude-sonnet-4-5"));
        QCOMPARE(skipped.size(), 2);
        QVERIFY(skipped[0].cannotTake && !skipped[0].marked && !skipped[0].noCredential);
        QCOMPARE(skipped[0].candidate.provider.id, QStringLiteral("zai"));
        QCOMPARE(skipped[0].reason, QStringLiteral("zai/glm-4.6 does not accept image input"));
        QVERIFY(skipped[1].cannotTake);
        QCOMPARE(skipped[1].candidate.provider.id, QStringLiteral("openai"));
        // A marked one that cannot take it either is not deferred: nothing is left.
        s.cannotTake = [](const Candidate &c) -> std::optional<QString> { return c.name(); };
        skipped.clear();
        QVERIFY(!CandidateResolver::next(r, {}, s, &skipped));
        QCOMPARE(skipped.size(), 3);
        QVERIFY(skipped[0].cannotTake && skipped[1].cannotTake && skipped[2].cannotTake);
    }
    // The precheck (what a model's own limits refuse): the chain's first candidate, asked first,
    // fails it as it would without failover (Pick::rejection, the client's 400); any other, or the
    // first once another was tried, is passed over where it stands.
    void onlyTheFirstAskedFailsItsPrecheckTheRestArePassedOver() {
        const auto r = *CandidateResolver::resolve(sample(), QStringLiteral("sonnet"));
        CandidateResolver::State s;
        s.precheck = [](const Candidate &c) -> std::optional<QString> {
            if (c.provider.id == QLatin1String("openai"))
                return std::nullopt;
            return QStringLiteral("%1 does not accept image input").arg(c.name());
        };
        QList<Skip> skipped;
        auto pick = CandidateResolver::pick(r, {}, s, &skipped);
        QCOMPARE(pick.candidate->name(), QStringLiteral("anthropic/claude-sonnet-4-5"));
        QCOMPARE(pick.rejection, std::optional<QString>(QStringLiteral("anthropic/claude-sonnet-4-5 does not accept "
                                                                       "image input")));
        QVERIFY(skipped.isEmpty());
        // Asked after another was tried, the first is passed over like the rest.
        TriedCandidates tried;
        tried.insert(r.chain.last());
        pick = CandidateResolver::pick(r, tried, s, &skipped);
        QVERIFY(!pick.candidate && !pick.rejection);
        QCOMPARE(skipped.size(), 2);
        QVERIFY(skipped[0].cannotTake && skipped[1].cannotTake);
        // The first marked, its follower fine: the follower is asked, with no rejection (a request
        // the fallback can take is served while the first is down).
        s.isMarked = [](const Candidate &c) { return c.provider.id == QLatin1String("anthropic"); };
        skipped.clear();
        pick = CandidateResolver::pick(r, {}, s, &skipped);
        QCOMPARE(pick.candidate->name(), QStringLiteral("openai/gpt-5"));
        QVERIFY(!pick.rejection);
        // With every candidate marked, the first is asked, and its precheck is the answer.
        s.isMarked = [](const Candidate &) { return true; };
        skipped.clear();
        pick = CandidateResolver::pick(r, {}, s, &skipped);
        QCOMPARE(pick.candidate->name(), QStringLiteral("anthropic/claude-sonnet-4-5"));
        QVERIFY(pick.rejection);
    }
    void credentialLessIsSkippedNeverAFollower() {
        const auto r = *CandidateResolver::resolve(sample(), QStringLiteral("sonnet"));
        CandidateResolver::State s;
        s.hasCredential = [](const Candidate &c) { return c.provider.id != QLatin1String("zai"); };
        QList<Skip> skipped;
        QCOMPARE(CandidateResolver::next(r, {}, s, &skipped)->name(), QStringLiteral("anthropic/claude-sonnet-4-5"));
        QVERIFY(skipped.isEmpty()); // not reached yet
        const TriedCandidates tried = triedOf(r.chain.first());
        QCOMPARE(CandidateResolver::next(r, tried, s, &skipped)->name(), QStringLiteral("openai/gpt-5"));
        QCOMPARE(skipped.size(), 1);
        QVERIFY(skipped.first().noCredential);
        QCOMPARE(skipped.first().candidate.provider.id, QStringLiteral("zai"));
        // Even when it is all that is left, a credential-less candidate is not returned.
        s.hasCredential = [](const Candidate &) { return false; };
        QVERIFY(!CandidateResolver::next(r, {}, s));
    }
    void singleCandidateIgnoresItsMark() {
        const auto r = *CandidateResolver::resolve(sample(), QStringLiteral("zai/glm-4.6"));
        CandidateResolver::State s;
        int consulted = 0;
        s.isMarked = [&consulted](const Candidate &) {
            ++consulted;
            return true;
        };
        QCOMPARE(CandidateResolver::next(r, {}, s)->name(), QStringLiteral("zai/glm-4.6"));
        QCOMPARE(consulted, 0); // deferring it would give the same answer: the mark must not even be read
        const TriedCandidates tried = triedOf(r.chain.first());
        QVERIFY(!CandidateResolver::next(r, tried, s)); // a direct selector has no follower
    }
    void costCeilingIsPricedAgainstTheTenantsFirstCandidate() {
        config::Config c = sample();
        c.models[QStringLiteral("anthropic/claude-sonnet-4-5")].costInput = 3;
        c.models[QStringLiteral("anthropic/claude-sonnet-4-5")].costOutput = 15; // 18
        c.models[QStringLiteral("zai/glm-4.6")].costOutput = 2;                  // 2
        c.models[QStringLiteral("openai/gpt-5")].costOutput = 10;                // 10
        c.routes[QStringLiteral("sonnet")].maxFallbackCostMultiplier = 2.0;
        const auto r = *CandidateResolver::resolve(c, QStringLiteral("sonnet"));
        // Against anthropic (18): nothing is over 36.
        for (const auto &cand : r.chain)
            QVERIFY(!CandidatePolicy::ineligibleReason(c, QStringLiteral("t"), r, cand));
        // A tenant without anthropic prices against zai (2): gpt-5 (10) is over 4.
        config::TenantConfig t;
        t.name = QStringLiteral("t");
        t.providers = {QStringLiteral("zai"), QStringLiteral("openai")};
        c.tenants.insert(t.name, t);
        const auto why = CandidatePolicy::ineligibleReason(c, QStringLiteral("t"), r, r.chain[2]);
        QVERIFY(why && CandidatePolicy::isCostCeiling(*why));
        QCOMPARE(*CandidatePolicy::ineligibleReason(c, QStringLiteral("t"), r, r.chain[0]),
                 QStringLiteral("provider not allowed for tenant"));
        QVERIFY(!CandidatePolicy::isCostCeiling(QStringLiteral("provider not allowed for tenant")));
    }
    void ineligibleIsSkippedAndReported() {
        const auto r = *CandidateResolver::resolve(sample(), QStringLiteral("sonnet"));
        CandidateResolver::State s;
        s.ineligible = [](const Candidate &c) -> std::optional<QString> {
            if (c.provider.id == QLatin1String("zai"))
                return QStringLiteral("region");
            return std::nullopt;
        };
        QList<Skip> skipped;
        const TriedCandidates tried = triedOf(r.chain.first());
        QCOMPARE(CandidateResolver::next(r, tried, s, &skipped)->name(), QStringLiteral("openai/gpt-5"));
        QCOMPARE(skipped.size(), 1);
        QCOMPARE(skipped.first().reason, QStringLiteral("region"));
    }
    void triedMeansSameProviderModelAndBaseUrl() {
        // The same model of the same provider id behind another base URL is another upstream:
        // it is still a follower once the first has failed. Only an exact repeat is not.
        Resolution r;
        r.chain = {candidate(QStringLiteral("openai"), QStringLiteral("gpt-5"), QStringLiteral("http://a")),
                   candidate(QStringLiteral("openai"), QStringLiteral("gpt-5"), QStringLiteral("http://b")),
                   candidate(QStringLiteral("openai"), QStringLiteral("gpt-5-mini"), QStringLiteral("http://a")),
                   candidate(QStringLiteral("openai"), QStringLiteral("gpt-5"), QStringLiteral("http://a"))};
        TriedCandidates tried;
        QVERIFY(tried.isEmpty());
        QCOMPARE(CandidateResolver::next(r, tried, {})->provider.baseUrl, QStringLiteral("http://a"));
        tried.insert(r.chain[0]);
        tried.insert(r.chain[3]); // the same candidate again: one entry
        QCOMPARE(tried.size(), 1);
        QVERIFY(tried.contains(r.chain[3]));
        QVERIFY(!tried.contains(r.chain[1]));
        QVERIFY(!tried.contains(r.chain[2]));
        const auto second = CandidateResolver::next(r, tried, {});
        QVERIFY(second && second->provider.baseUrl == QLatin1String("http://b"));
        tried.insert(*second);
        QCOMPARE(CandidateResolver::next(r, tried, {})->name(), QStringLiteral("openai/gpt-5-mini"));
        tried.insert(r.chain[2]);
        QVERIFY(!CandidateResolver::next(r, tried, {})); // the repeat of the first is not tried again
    }
};

QTEST_GUILESS_MAIN(TestCandidateResolver)
#include "test_candidate_resolver.moc"
