// Claude Code 2.x puts "system" messages between the turns of an Anthropic
// Messages request (anthropic-beta mid-conversation-system-2026-04-07). The
// gateway must accept them: rejecting them with 400 broke Claude Code outright.

#include "core/formats/anthropic_messages_codec.h"
#include "core/wire/client_body.h"

#include <QtTest>

using namespace sw::model;
using namespace sw::formats;

class TestAnthropicSystemMessages : public QObject {
    Q_OBJECT
private slots:
    void midConversationSystemJoinsTheSystemPrompt();
    void systemMessageAsString();
    void systemMessageWithNonTextBlockIsKeptForPassthrough();
    void unknownRoleIsStillRejected();
};

void TestAnthropicSystemMessages::midConversationSystemJoinsTheSystemPrompt() {
    // Shape of Claude Code 2.1's first request, trimmed.
    const QByteArray body = R"({"model": "claude-opus-4-8", "max_tokens": 100, "stream": true,
      "system": [{"type": "text", "text": "You are Claude Code."}],
      "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Hello", "cache_control": {"type": "ephemeral"}}]},
        {"role": "system", "content": [{"type": "text", "text": "Available agent types: claude."},
                                       {"type": "text", "text": "Skills: none."}]}
      ]})";
    GatewayError error;
    const auto parsed = AnthropicMessagesCodec().decode(body, &error);
    QVERIFY2(parsed.has_value(), qPrintable(error.message));
    QCOMPARE(parsed->context.systemPrompt,
             QStringLiteral("You are Claude Code.\n\nAvailable agent types: claude.\n\nSkills: none."));
    QCOMPARE(parsed->context.messages.size(), 1);
    QCOMPARE(parsed->context.messages.first().role, Role::User);
    // Passthrough to an Anthropic upstream forwards the body as sent, system message included.
    QCOMPARE(sw::wire::clientBodyQt(*parsed)
                 .value(QStringLiteral("messages"))
                 .toArray()
                 .at(1)
                 .toObject()
                 .value(QStringLiteral("role")),
             QJsonValue(QStringLiteral("system")));
}

void TestAnthropicSystemMessages::systemMessageAsString() {
    const QByteArray body = R"({"model": "m", "max_tokens": 10,
      "messages": [{"role": "user", "content": "hi"}, {"role": "system", "content": "Be brief."}]})";
    GatewayError error;
    const auto parsed = AnthropicMessagesCodec().decode(body, &error);
    QVERIFY2(parsed.has_value(), qPrintable(error.message));
    QCOMPARE(parsed->context.systemPrompt, QStringLiteral("Be brief."));
}

// A block other than text in a system message between the turns (Anthropic's tool changes, and
// what may come) stays in the body for an Anthropic candidate that takes it, rather than a 400 from
// the gateway before any upstream is asked (probe AB3 F2); other APIs' candidates refuse it by name
// (test_decode_golden, test_anthropic_adapter).
void TestAnthropicSystemMessages::systemMessageWithNonTextBlockIsKeptForPassthrough() {
    const QByteArray body = R"({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"},
      {"role": "system", "content": [{"type": "image", "source": {"type": "url", "url": "http://localhost/x.png"}}]}]})";
    GatewayError error;
    const auto parsed = AnthropicMessagesCodec().decode(body, &error);
    QVERIFY2(parsed.has_value(), qPrintable(error.message));
    QCOMPARE(parsed->context.systemPrompt, QString());
    QCOMPARE(parsed->context.messages.size(), 1);
}

void TestAnthropicSystemMessages::unknownRoleIsStillRejected() {
    const QByteArray body = R"({"model": "m", "max_tokens": 10, "messages": [{"role": "tool", "content": "x"}]})";
    GatewayError error;
    QVERIFY(!AnthropicMessagesCodec().decode(body, &error).has_value());
    QCOMPARE(error.status, 400);
    QVERIFY2(error.message.contains(QStringLiteral("messages[0].role")), qPrintable(error.message));
}

QTEST_GUILESS_MAIN(TestAnthropicSystemMessages)
#include "test_anthropic_system_messages.moc"
