#include "core/formats/inbound_codec.h"
#include "core/upstream/upstream_adapter.h"

#include <QtTest>

using namespace sw::formats;
namespace wire = sw::wire;

class TestFormatRegistry : public QObject {
    Q_OBJECT
private slots:
    void codecsAnswerForTheirFormat();
    void namesAndSameApi();
    void adaptersByApiName();
};

void TestFormatRegistry::codecsAnswerForTheirFormat() {
    QCOMPARE(codecFor(wire::Api::OpenAICompletions).format(), wire::Api::OpenAICompletions);
    QCOMPARE(codecFor(wire::Api::AnthropicMessages).format(), wire::Api::AnthropicMessages);
    QCOMPARE(codecFor(wire::Api::OpenAIResponses).format(), wire::Api::OpenAIResponses);
    QCOMPARE(codecFor(wire::Api::Pi).format(), wire::Api::Pi);
    QCOMPARE(&codecFor(wire::Api::OpenAICompletions), &codecFor(wire::Api::OpenAICompletions)); // shared instance
}

void TestFormatRegistry::namesAndSameApi() {
    // The names configuration and telemetry use, one each, and back.
    QCOMPARE(QString(wire::apiName(wire::Api::OpenAICompletions)), QStringLiteral("openai-completions"));
    QCOMPARE(QString(wire::apiName(wire::Api::AnthropicMessages)), QStringLiteral("anthropic-messages"));
    QCOMPARE(QString(wire::apiName(wire::Api::OpenAIResponses)), QStringLiteral("openai-responses"));
    QCOMPARE(QString(wire::apiName(wire::Api::Google)), QStringLiteral("google-generative-ai"));
    for (const wire::Api api : {wire::Api::OpenAICompletions, wire::Api::AnthropicMessages, wire::Api::OpenAIResponses,
                                wire::Api::Google, wire::Api::Pi})
        QCOMPARE(wire::apiFromName(wire::apiName(api)), std::optional<wire::Api>(api));
    QCOMPARE(wire::apiFromName(QStringLiteral("openai-chat")),
             std::optional<wire::Api>()); // a route's name, not an API's
    // Every name a provider may be configured with has its adapter.
    for (const QString &name : wire::upstreamApiNames())
        QVERIFY2(sw::upstream::adapterFor(name), qPrintable(name));
    QCOMPARE(formatName(wire::Api::OpenAICompletions), QStringLiteral("openai-chat"));
    QCOMPARE(formatName(wire::Api::AnthropicMessages), QStringLiteral("anthropic-messages"));
    QCOMPARE(formatName(wire::Api::OpenAIResponses), QStringLiteral("openai-responses"));
    QCOMPARE(formatName(wire::Api::Pi), QStringLiteral("pi"));
}

void TestFormatRegistry::adaptersByApiName() {
    using sw::upstream::adapterFor;
    QVERIFY(adapterFor(QStringLiteral("anthropic-messages")));
    QCOMPARE(adapterFor(QStringLiteral("anthropic-messages"))->api(), QStringLiteral("anthropic-messages"));
    QVERIFY(adapterFor(QStringLiteral("openai-completions")));
    QCOMPARE(adapterFor(QStringLiteral("openai-completions"))->api(), QStringLiteral("openai-completions"));
    for (const char *api : {"openai-responses", "google-generative-ai"}) {
        QVERIFY(adapterFor(QLatin1String(api)));
        QCOMPARE(adapterFor(QLatin1String(api))->api(), QLatin1String(api));
    }
    QCOMPARE(adapterFor(QStringLiteral("no-such-api")), nullptr);
    QCOMPARE(adapterFor(QString()), nullptr);
}

QTEST_GUILESS_MAIN(TestFormatRegistry)
#include "test_format_registry.moc"
