// The alias glob: one dialect for config validation and the resolver, so an
// alias either validates and matches or is refused when the config loads.
#include "core/config/config_loader.h"
#include "core/failover/candidate_resolver.h"
#include "core/util/glob_pattern.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

using sw::util::GlobPattern;

namespace {
bool matches(const char *pattern, const char *text) {
    return GlobPattern(QString::fromUtf8(pattern)).matches(QString::fromUtf8(text));
}

QByteArray configWithAlias(const char *alias) {
    const QJsonObject provider{{QStringLiteral("api"), QStringLiteral("anthropic-messages")},
                               {QStringLiteral("baseUrl"), QStringLiteral("http://127.0.0.1:9")}};
    const QJsonObject route{{QStringLiteral("candidates"), QJsonArray{QStringLiteral("anthropic/claude-3-opus")}},
                            {QStringLiteral("aliases"), QJsonArray{QString::fromUtf8(alias)}}};
    const QJsonObject root{
        {QStringLiteral("providers"), QJsonObject{{QStringLiteral("anthropic"), provider}}},
        {QStringLiteral("models"), QJsonObject{{QStringLiteral("anthropic/claude-3-opus"), QJsonObject()}}},
        {QStringLiteral("routes"), QJsonObject{{QStringLiteral("opus"), route}}}};
    return QJsonDocument(root).toJson();
}
} // namespace

class TestGlobPattern : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void starAndQuestionMark() {
        QVERIFY(matches("claude-*", "Claude-Opus-4"));
        QVERIFY(matches("*-mini", "gpt-5-mini"));
        QVERIFY(matches("gpt-?", "gpt-5"));
        QVERIFY(!matches("gpt-?", "gpt-"));
        QVERIFY(!matches("gpt-?", "gpt-55"));
        QVERIFY(matches("a*b*c", "axxbyyc"));
        QVERIFY(!matches("a*b*c", "axxbyy"));
        QVERIFY(!matches("claude-*", "xclaude-1"));
        QVERIFY(matches("claude-*", "claude-"));
        QVERIFY(matches("**", ""));
        QVERIFY(!matches("claude", "claude-3"));
    }
    void characterSets() {
        QVERIFY(matches("claude-[34]*", "claude-3-opus"));
        QVERIFY(matches("claude-[34]*", "claude-4-sonnet"));
        QVERIFY(!matches("claude-[34]*", "claude-5-opus"));
        QVERIFY(matches("gpt-[0-9]", "gpt-5"));
        QVERIFY(!matches("gpt-[0-9]", "gpt-x"));
        QVERIFY(matches("gpt-[!0-9]*", "gpt-x1"));
        QVERIFY(!matches("gpt-[^0-9]*", "gpt-5x"));
        // Case-insensitive inside a set too, and a '-' at either end is itself.
        QVERIFY(matches("[A-C]laude", "claude"));
        QVERIFY(matches("x[-a]", "x-"));
        QVERIFY(matches("x[a-]", "x-"));
        // A set after a star backtracks like any other character.
        QVERIFY(matches("*[0-9]-mini", "gpt-4o-5-mini"));
    }
    void invalidPatternsAreRefusedAndMatchNothing_data() {
        QTest::addColumn<QString>("pattern");
        QTest::addColumn<QString>("reason");
        QTest::newRow("empty") << QString() << QStringLiteral("empty");
        QTest::newRow("blank") << QStringLiteral("  ") << QStringLiteral("empty");
        QTest::newRow("unclosed set") << QStringLiteral("claude-[34*") << QStringLiteral("no closing ']'");
        QTest::newRow("empty set") << QStringLiteral("claude-[]") << QStringLiteral("no character");
        QTest::newRow("empty negated set") << QStringLiteral("claude-[!]") << QStringLiteral("no character");
        QTest::newRow("backwards range") << QStringLiteral("gpt-[9-0]") << QStringLiteral("backwards");
    }
    void invalidPatternsAreRefusedAndMatchNothing() {
        QFETCH(QString, pattern);
        QFETCH(QString, reason);
        const GlobPattern glob(pattern);
        QVERIFY(!glob.isValid());
        QVERIFY2(glob.errorString().contains(reason), qPrintable(glob.errorString()));
        QVERIFY(!glob.matches(QStringLiteral("claude-[34*")));
        QVERIFY(!glob.matches(QString()));
    }
    void aliasThatValidatesIsTheAliasThatMatches() {
        const auto parsed = sw::config::parse(configWithAlias("claude-[34]*"));
        QVERIFY2(parsed.ok(), parsed.ok() ? "" : qPrintable(parsed.errors.first().toString()));
        const auto r =
            sw::failover::CandidateResolver::resolve(*parsed.config, QStringLiteral("claude-3-opus-20240229"));
        QVERIFY(r && r->routeName == QLatin1String("opus"));
        QVERIFY(!sw::failover::CandidateResolver::resolve(*parsed.config, QStringLiteral("claude-2")));
    }
    void aliasThatWouldNeverMatchIsRefusedAtLoad() {
        const auto parsed = sw::config::parse(configWithAlias("claude-[34*"));
        QVERIFY(!parsed.ok());
        QCOMPARE(parsed.errors.first().path, QStringLiteral("routes.opus.aliases[0]"));
        QVERIFY2(parsed.errors.first().reason.contains(QLatin1String("no closing ']'")),
                 qPrintable(parsed.errors.first().reason));
    }
};

QTEST_GUILESS_MAIN(TestGlobPattern)
#include "test_glob_pattern.moc"
