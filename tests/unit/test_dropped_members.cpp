// wire::droppedMembers: what of a client's body a request converted to another API goes without,
// by name (formats/translation_rules.md, "The rule"). The members it reads whole (a Chat client's
// `reasoning` and `web_search_options`, a web search tool) are looked into too: a setting inside one
// that the target has no field for is named, not lost unsaid.

#include "core/formats/inbound_codec.h"
#include "core/wire/client_body.h"
#include "core/wire/dropped_members.h"

#include <QtTest>

using namespace sw::formats;
namespace wire = sw::wire;

Q_DECLARE_METATYPE(wire::Api)

class TestDroppedMembers : public QObject {
    Q_OBJECT
private slots:
    void named_data();
    void named();
};

void TestDroppedMembers::named_data() {
    QTest::addColumn<wire::Api>("inbound");
    QTest::addColumn<QByteArray>("extra"); // members beside the conversation
    QTest::addColumn<wire::Api>("target");
    QTest::addColumn<QStringList>("dropped");

    const auto chat = wire::Api::OpenAICompletions;
    const auto claude = wire::Api::AnthropicMessages;
    const auto responses = wire::Api::OpenAIResponses;
    const auto google = wire::Api::Google;

    // Probe L1 2: OpenRouter's unified reasoning object. effort, max_tokens, enabled and exclude are
    // read; anything else in it went unsaid, since `reasoning` counted as read whole.
    QTest::addRow("Chat reasoning, every member read")
        << chat << QByteArray(R"("reasoning":{"effort":"low","max_tokens":3000,"enabled":true,"exclude":true})")
        << claude << QStringList();
    QTest::addRow("Chat reasoning, an unread member")
        << chat << QByteArray(R"("reasoning":{"max_tokens":3000,"interleaved":true})") << google
        << QStringList{"reasoning.interleaved"};
    QTest::addRow("Chat reasoning, same API")
        << chat << QByteArray(R"("reasoning":{"interleaved":true})") << chat << QStringList();
    // Probe L1 1: web search's steering settings where the target has no field for them.
    QTest::addRow("Chat search context size to Responses is carried")
        << chat << QByteArray(R"("web_search_options":{"search_context_size":"high"})") << responses << QStringList();
    QTest::addRow("Chat search context size to Messages")
        << chat << QByteArray(R"("web_search_options":{"search_context_size":"high"})") << claude
        << QStringList{"web_search_options.search_context_size"};
    QTest::addRow("Chat search location to Gemini")
        << chat
        << QByteArray(
               R"("web_search_options":{"search_context_size":"low","user_location":{"type":"approximate","approximate":{"country":"GB"}}})")
        << google << QStringList{"web_search_options.search_context_size", "web_search_options.user_location"};
    QTest::addRow("Chat search location to Messages is carried")
        << chat
        << QByteArray(R"("web_search_options":{"user_location":{"type":"approximate","approximate":{"city":"Leeds"}}})")
        << claude << QStringList();
    QTest::addRow("Chat search settings of null set nothing")
        << chat << QByteArray(R"("web_search_options":{"search_context_size":null,"user_location":null})") << google
        << QStringList();
    QTest::addRow("Messages search location to Gemini")
        << claude
        << QByteArray(
               R"("tools":[{"type":"web_search_20250305","name":"web_search","max_uses":2,"user_location":{"type":"approximate","city":"Leeds"}}])")
        << google << QStringList{"tools[].user_location"};
    QTest::addRow("Messages search settings to Responses are carried")
        << claude
        << QByteArray(
               R"("tools":[{"type":"web_search_20250305","name":"web_search","max_uses":2,"allowed_domains":["a.example"],"user_location":{"type":"approximate","city":"Leeds"},"cache_control":{"type":"ephemeral"}}])")
        << responses << QStringList();
    QTest::addRow("Messages search tool, an unread member")
        << claude << QByteArray(R"("tools":[{"type":"web_search_20250305","name":"web_search","defer_loading":true}])")
        << responses << QStringList{"tools[].defer_loading"};
    QTest::addRow("Responses search context size to Messages")
        << responses
        << QByteArray(
               R"("tools":[{"type":"web_search","search_context_size":"high","filters":{"allowed_domains":["a.example"]}}])")
        << claude << QStringList{"tools[].search_context_size"};
    QTest::addRow("Responses search location to Gemini")
        << responses
        << QByteArray(
               R"("tools":[{"type":"web_search_preview","user_location":{"type":"approximate","country":"GB"}}])")
        << google << QStringList{"tools[].user_location"};
    QTest::addRow("Responses search filter, an unread member")
        << responses
        << QByteArray(R"("tools":[{"type":"web_search","filters":{"allowed_domains":["a.example"],"recency":"day"}}])")
        << claude << QStringList{"tools[].filters.recency"};
    // Probe L1 3: a Responses client's reasoning and text settings were read whole, unlooked into.
    QTest::addRow("Responses reasoning and text, every member read")
        << responses
        << QByteArray(
               R"("reasoning":{"effort":"low","summary":"auto"},"text":{"verbosity":"low","format":{"type":"text"}})")
        << chat << QStringList();
    QTest::addRow("Responses reasoning and text, unread members")
        << responses << QByteArray(R"("reasoning":{"effort":"low","mode":"deep"},"text":{"tone":"dry"})") << claude
        << QStringList{"reasoning.mode", "text.tone"};
    // Log probabilities asked for come back from no other API's answer: named; asked off, nothing is lost.
    QTest::addRow("Chat logprobs asked for") << chat << QByteArray(R"("logprobs":true,"top_logprobs":3)") << responses
                                             << QStringList{"logprobs", "top_logprobs"};
    QTest::addRow("Chat logprobs off") << chat << QByteArray(R"("logprobs":false,"top_logprobs":0)") << responses
                                       << QStringList();
    QTest::addRow("Responses logprobs asked for")
        << responses << QByteArray(R"("top_logprobs":2,"include":["message.output_text.logprobs"])") << chat
        << QStringList{"top_logprobs", "include[].message.output_text.logprobs"};
    QTest::addRow("Chat logprobs, same API") << chat << QByteArray(R"("logprobs":true)") << chat << QStringList();
}

void TestDroppedMembers::named() {
    QFETCH(wire::Api, inbound);
    QFETCH(QByteArray, extra);
    QFETCH(wire::Api, target);
    QFETCH(QStringList, dropped);
    QByteArray body = R"({"model":"m",)" + extra + ",";
    body += inbound == wire::Api::OpenAIResponses ? R"("input":"hi"})"
            : inbound == wire::Api::AnthropicMessages
                ? R"("max_tokens":100,"messages":[{"role":"user","content":"hi"}]})"
                : R"("messages":[{"role":"user","content":"hi"}]})";
    sw::model::GatewayError error;
    const auto request = codecFor(inbound).decode(body, &error);
    QVERIFY2(request, qPrintable(error.message));
    QCOMPARE(wire::droppedMembers(wire::clientBody(*request), inbound, target), dropped);
}

QTEST_GUILESS_MAIN(TestDroppedMembers)
#include "test_dropped_members.moc"
