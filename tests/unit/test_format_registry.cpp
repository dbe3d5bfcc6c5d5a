#include "formats/inbound_codec.h"
#include "upstream/upstream_adapter.h"

#include <QtTest>

using namespace sw::formats;

class TestFormatRegistry : public QObject {
    Q_OBJECT
private slots:
    void codecsAnswerForTheirFormat();
    void namesAndSameApi();
    void adaptersByApiName();
};

void TestFormatRegistry::codecsAnswerForTheirFormat() {
    QCOMPARE(codecFor(InboundFormat::OpenAIChat).format(), InboundFormat::OpenAIChat);
    QCOMPARE(codecFor(InboundFormat::AnthropicMessages).format(), InboundFormat::AnthropicMessages);
    QCOMPARE(codecFor(InboundFormat::OpenAIResponses).format(), InboundFormat::OpenAIResponses);
    QCOMPARE(codecFor(InboundFormat::PiNative).format(), InboundFormat::PiNative);
    QCOMPARE(&codecFor(InboundFormat::OpenAIChat), &codecFor(InboundFormat::OpenAIChat)); // shared instance
}

void TestFormatRegistry::namesAndSameApi() {
    QCOMPARE(sameApiName(InboundFormat::OpenAIChat), QStringLiteral("openai-completions"));
    QCOMPARE(sameApiName(InboundFormat::AnthropicMessages), QStringLiteral("anthropic-messages"));
    QCOMPARE(sameApiName(InboundFormat::OpenAIResponses), QStringLiteral("openai-responses"));
    QCOMPARE(sameApiName(InboundFormat::PiNative), QString());
    QCOMPARE(formatName(InboundFormat::OpenAIChat), QStringLiteral("openai-chat"));
    QCOMPARE(formatName(InboundFormat::AnthropicMessages), QStringLiteral("anthropic-messages"));
    QCOMPARE(formatName(InboundFormat::OpenAIResponses), QStringLiteral("openai-responses"));
    QCOMPARE(formatName(InboundFormat::PiNative), QStringLiteral("pi"));
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
