// The demo brain is what a --demo user talks to and what tests and benchmarks
// stream: its replies must be deterministic and shaped like a real model's.
#include "core/demo/demo_brain.h"

#include <QJsonArray>
#include <QTest>

using namespace sw::model;
using sw::demo::replyFor;

namespace {

Message userSays(const QString &text) {
    Message m;
    m.role = Role::User;
    m.content << ContentBlock::makeText(text);
    return m;
}

Tool weatherTool() {
    Tool t;
    t.name = QStringLiteral("get_weather");
    t.parameters = QJsonObject{{"type", "object"},
                               {"properties", QJsonObject{{"city", QJsonObject{{"type", "string"}}},
                                                          {"days", QJsonObject{{"type", "integer"}}},
                                                          {"unit", QJsonObject{{"type", "string"}}}}},
                               {"required", QJsonArray{"city", "days"}}};
    return t;
}

QString concatDeltas(const QList<StreamEvent> &events, EventType type) {
    QString s;
    for (const auto &e : events)
        if (e.type == type)
            s += e.delta;
    return s;
}

int countOf(const QList<StreamEvent> &events, EventType type) {
    return int(std::count_if(events.begin(), events.end(), [type](const StreamEvent &e) { return e.type == type; }));
}

} // namespace

class TestDemoBrain : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void plainTextEchoesUserInFourDeltas();
    void usageCountsContextCharactersAndOutputWords();
    void reasoningAddsSignedThinkingBlockFirst();
    void thinkingBudgetAlsoAddsThinking();
    void toolRequestCallsFirstToolWithRequiredStringArguments();
    void toolChoiceRequiredForcesToolCall();
    void toolsWithoutAskingGiveText();
    void toolResultIsAcknowledged();
    void sameInputSameReply();
    void assembledMessageMatchesEvents();
};

void TestDemoBrain::plainTextEchoesUserInFourDeltas() {
    Context ctx;
    ctx.messages << userSays(QStringLiteral("what is the capital of France"));
    const auto events = replyFor(ctx, {}, QStringLiteral("alpha"));
    QCOMPARE(events.front().type, EventType::Start);
    QCOMPARE(events.back().type, EventType::Done);
    QCOMPARE(events.back().reason, StopReason::Stop);
    QCOMPARE(countOf(events, EventType::ThinkingStart), 0);
    const QString expected = QStringLiteral("Hello from alpha. You said: what is the capital of France");
    QCOMPARE(concatDeltas(events, EventType::TextDelta), expected);
    const int deltas = countOf(events, EventType::TextDelta);
    QVERIFY2(deltas >= 3 && deltas <= 5, qPrintable(QString::number(deltas)));
    const auto end =
        std::find_if(events.begin(), events.end(), [](const StreamEvent &e) { return e.type == EventType::TextEnd; });
    QVERIFY(end != events.end());
    QCOMPARE(end->block.text, expected);
    QCOMPARE(end->contentIndex, 0);
}

void TestDemoBrain::usageCountsContextCharactersAndOutputWords() {
    Context ctx;
    ctx.systemPrompt = QString(40, QLatin1Char('s'));
    ctx.messages << userSays(QString(60, QLatin1Char('u'))); // 100 characters in all
    const auto events = replyFor(ctx, {}, QStringLiteral("b"));
    QCOMPARE(events.back().usage.input, 25);
    // "Hello from b. You said: uuuu…" = 6 words
    QCOMPARE(events.back().usage.output, 6);

    Context tiny;
    tiny.messages << userSays(QStringLiteral("x"));
    QCOMPARE(replyFor(tiny, {}, QStringLiteral("b")).back().usage.input, 1);
}

void TestDemoBrain::reasoningAddsSignedThinkingBlockFirst() {
    Context ctx;
    ctx.messages << userSays(QStringLiteral("hi"));
    Options opts;
    opts.reasoning = QStringLiteral("high");
    const auto events = replyFor(ctx, opts, QStringLiteral("gamma"));
    QCOMPARE(events[1].type, EventType::ThinkingStart);
    QCOMPARE(events[1].contentIndex, 0);
    QCOMPARE(concatDeltas(events, EventType::ThinkingDelta), QStringLiteral("Thinking about the request."));
    const auto end = std::find_if(events.begin(), events.end(),
                                  [](const StreamEvent &e) { return e.type == EventType::ThinkingEnd; });
    QCOMPARE(end->block.signature, QStringLiteral("sig-demo-gamma"));
    const auto textStart =
        std::find_if(events.begin(), events.end(), [](const StreamEvent &e) { return e.type == EventType::TextStart; });
    QVERIFY(textStart > end);
    QCOMPARE(textStart->contentIndex, 1);
    QCOMPARE(concatDeltas(events, EventType::TextDelta), QStringLiteral("Hello from gamma. You said: hi"));
}

void TestDemoBrain::thinkingBudgetAlsoAddsThinking() {
    Context ctx;
    ctx.messages << userSays(QStringLiteral("hi"));
    Options opts;
    opts.thinkingBudget = 1024;
    QCOMPARE(countOf(replyFor(ctx, opts, QStringLiteral("d")), EventType::ThinkingStart), 1);
}

void TestDemoBrain::toolRequestCallsFirstToolWithRequiredStringArguments() {
    Context ctx;
    Tool second = weatherTool();
    second.name = QStringLiteral("other");
    ctx.tools << weatherTool() << second;
    ctx.messages << userSays(QStringLiteral("please use a Tool for this"));
    const auto events = replyFor(ctx, {}, QStringLiteral("t"));
    QCOMPARE(events.back().reason, StopReason::ToolUse);
    QCOMPARE(countOf(events, EventType::TextStart), 0);
    QCOMPARE(countOf(events, EventType::ToolCallStart), 1);
    const auto end = std::find_if(events.begin(), events.end(),
                                  [](const StreamEvent &e) { return e.type == EventType::ToolCallEnd; });
    QVERIFY(end != events.end());
    QCOMPARE(end->block.toolName, QStringLiteral("get_weather"));
    QVERIFY(!end->block.toolCallId.isEmpty());
    // Only required string properties: days is an integer, unit is optional.
    QCOMPARE(end->block.arguments, (QJsonObject{{"city", "demo"}}));
    QCOMPARE(concatDeltas(events, EventType::ToolCallDelta), QStringLiteral("{\"city\":\"demo\"}"));
}

void TestDemoBrain::toolChoiceRequiredForcesToolCall() {
    Context ctx;
    ctx.tools << weatherTool();
    ctx.messages << userSays(QStringLiteral("weather in Paris"));
    Options opts;
    opts.toolChoice = QStringLiteral("required");
    QCOMPARE(replyFor(ctx, opts, QStringLiteral("t")).back().reason, StopReason::ToolUse);
}

void TestDemoBrain::toolsWithoutAskingGiveText() {
    Context ctx;
    ctx.tools << weatherTool();
    ctx.messages << userSays(QStringLiteral("weather in Paris"));
    const auto events = replyFor(ctx, {}, QStringLiteral("t"));
    QCOMPARE(events.back().reason, StopReason::Stop);
    QCOMPARE(countOf(events, EventType::ToolCallStart), 0);
}

void TestDemoBrain::toolResultIsAcknowledged() {
    Context ctx;
    ctx.tools << weatherTool();
    ctx.messages << userSays(QStringLiteral("use the tool"));
    Message result;
    result.role = Role::ToolResult;
    result.toolCallId = QStringLiteral("call_1");
    result.content << ContentBlock::makeText(QStringLiteral("sunny, 21C"));
    ctx.messages << result;
    const auto events = replyFor(ctx, {}, QStringLiteral("t"));
    QCOMPARE(events.back().reason, StopReason::Stop);
    QCOMPARE(concatDeltas(events, EventType::TextDelta), QStringLiteral("Tool result received: sunny, 21C"));
}

void TestDemoBrain::sameInputSameReply() {
    Context ctx;
    ctx.messages << userSays(QStringLiteral("repeat after me"));
    Options opts;
    opts.reasoning = QStringLiteral("low");
    const auto a = replyFor(ctx, opts, QStringLiteral("x"));
    const auto b = replyFor(ctx, opts, QStringLiteral("x"));
    QCOMPARE(a.size(), b.size());
    for (int i = 0; i < a.size(); ++i) {
        QCOMPARE(a[i].type, b[i].type);
        QCOMPARE(a[i].delta, b[i].delta);
        QCOMPARE(a[i].contentIndex, b[i].contentIndex);
    }
}

void TestDemoBrain::assembledMessageMatchesEvents() {
    Context ctx;
    ctx.messages << userSays(QStringLiteral("hi"));
    Options opts;
    opts.reasoning = QStringLiteral("low");
    const AssistantMessage m = sw::demo::assembleMessage(replyFor(ctx, opts, QStringLiteral("m")));
    QCOMPARE(m.content.size(), 2);
    QCOMPARE(m.content[0].type, BlockType::Thinking);
    QCOMPARE(m.content[0].signature, QStringLiteral("sig-demo-m"));
    QCOMPARE(m.content[1].text, QStringLiteral("Hello from m. You said: hi"));
    QCOMPARE(m.stopReason, StopReason::Stop);
    QVERIFY(m.usage.output >= 1);
}

QTEST_APPLESS_MAIN(TestDemoBrain)
#include "test_demo_brain.moc"
