#include "core/formats/anthropic_messages_codec.h"
#include "core/formats/inbound_codec.h"
#include "core/formats/openai_chat_codec.h"
#include "core/formats/openai_responses_codec.h"
#include "core/formats/pi_native_codec.h"
#include "core/model/event_accumulator.h"
#include "core/upstream/anthropic_adapter.h"
#include "core/upstream/openai_completions_adapter.h"
#include "core/upstream/openai_responses_adapter.h"
#include "core/wire/tool_call_id.h"
#include "wire_fixtures.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QtTest>

using namespace sw::model;
using namespace sw::formats;
using namespace sw::upstream;
using sw::test::readTestData;
namespace wire = sw::wire;
using sw::test::spokenIn;

Q_DECLARE_METATYPE(sw::model::StopReason)

namespace {
Target target() {
    Target t;
    t.provider = QStringLiteral("openai");
    t.modelId = QStringLiteral("gpt-5");
    t.api = QStringLiteral("openai-responses");
    t.baseUrl = QStringLiteral("https://api.openai.com/v1/");
    t.credential = "sk-secret";
    return t;
}
QJsonObject json(const QByteArray &b) {
    return QJsonDocument::fromJson(b).object();
}
QList<StreamEvent> decode(const QByteArray &sse) {
    auto decoder = OpenAIResponsesAdapter().makeDecoder(target());
    return sw::test::decodeTranscript(*decoder, sse);
}
} // namespace

namespace {
// Blocks come out one at a time: once another block's event follows, a block is never seen again.
QString interleaving(const QList<StreamEvent> &events) {
    QList<int> seen;
    for (const StreamEvent &e : events) {
        if (e.contentIndex < 0)
            continue;
        if (!seen.isEmpty() && seen.last() == e.contentIndex)
            continue;
        if (seen.contains(e.contentIndex))
            return QStringLiteral("block %1 resumed after block %2").arg(e.contentIndex).arg(seen.last());
        seen << e.contentIndex;
    }
    return {};
}
} // namespace

class TestOpenAIResponsesAdapter : public QObject {
    Q_OBJECT
private slots:
    void aModelsOutputCapLowersTheRequestsMax();
    void modelConfiguredNotToReasonGetsNoReasoning();
    void aModelThatAlwaysReasonsGetsNoSampling();
    void samplingLeftOutForReasoningIsNamed();
    void aServerThatRefusedASummaryIsAskedForNone();
    void webSearchSettingsGoWhereResponsesHasThem();
    void aChatClientsVerbosityIsTextVerbosity();
    void openRoutersReasoningObjectSetsTheEffort();
    void interleavedFunctionCallsAssembleByOutputIndex();
    void aStreamThatKeepsNoArgumentsSaysEachCallOnce();
    void thePromptCacheKeyCrossesOver();
    void passthroughKeepsEveryFieldAndBetaHeader();
    void passthroughSplicesUnlessAReasoningItemIsDropped();
    void passthroughDropsTheItemIdsTheGatewayMadeUp();
    void aRefusedReasoningItemSendsNoneAndNoItemIds();
    void aReasoningItemTheGatewayNamedIsNeverSentUp();
    void aResponseNamedWithControlCharactersFails();
    void aToolCallNamedWithControlCharactersFails();
    void reasoningFromOtherApisGoesBackOnlyToItsMaker();
    void piFunctionCallsKeepOpenAIsItemId();
    void reasoningWithoutTheItemItLedToIsLeftOut();
    void reasoningPairingEdges();
    void piClientsGetCallIdsWithTheItemId();
    void longCallIdsFitAndStayPaired();
    void aSameApiHistorysOverLongCallIdsGoBounded();
    void repeatedCallIdsGoUniqueEachOutputWithItsCall_data();
    void repeatedCallIdsGoUniqueEachOutputWithItsCall();
    void repeatedCallIdsOfOneAnswerReachTheClientUnique();
    void convertsAnthropicConversation();
    void imagesOfParallelToolResultsFollowTheRun();
    void maxOutputTokensIsAtLeastTheApisMinimum();
    void effortNoneReachesTheApisThatSpeakIt();
    void anthropicThinkingGoesAsAnEffortOpenAITakes();
    void eachOpenAIModelGetsTheNearestEffortItTakes();
    void aConvertedEffortGoesAsTheAnsweringModelTakesIt();
    void aPassthroughEffortIsChangedInTheClientsBytes();
    void decodesFullTranscript();
    void errorThenFailedIsOneErrorEvent();
    void streamCutShortIsAnError();
    void parsesErrorBody();
    void customToolCallItemsAreToolCalls();
    void textNotStreamedIsTheFinishedItems_data();
    void textNotStreamedIsTheFinishedItems();
    void anotherApisStrictSchemaIsStrictOnlyWhereStrictModeTakesIt();
};

namespace {
// The calls of a Responses body and how each pairs with its outputs, in the calls' order: "call_id
// name=output" when exactly one output answers it, else the outputs that do.
QStringList pairsOf(const QJsonArray &input) {
    QStringList out;
    for (qsizetype i = 0; i < input.size(); ++i) {
        if (input[i]["type"].toString() != QLatin1String("function_call"))
            continue;
        const QString id = input[i]["call_id"].toString();
        QStringList answers;
        for (const QJsonValue &item : input)
            if (item["type"].toString() == QLatin1String("function_call_output") && item["call_id"].toString() == id)
                answers << item["output"].toString();
        out << id + ' ' + input[i]["name"].toString() +
                   (answers.size() == 1 ? '=' + answers[0]
                                        : QStringLiteral(" answered by [%1]").arg(answers.join(',')));
    }
    return out;
}
} // namespace

void TestOpenAIResponsesAdapter::repeatedCallIdsGoUniqueEachOutputWithItsCall_data() {
    QTest::addColumn<wire::Api>("inbound");
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<QStringList>("pairs");
    // Kimi's Anthropic-compatible endpoint gives two calls of one answer the id "grep:3"; its client
    // (Claude Code) answers each, and the turn goes to OpenAI converted.
    QTest::newRow("anthropic client, one answer")
        << wire::Api::AnthropicMessages << QByteArray(R"({"model":"m",
            "max_tokens":100,"messages":[{"role":"user","content":"go"},
            {"role":"assistant","content":[
              {"type":"tool_use","id":"grep:3","name":"get_weather","input":{}},
              {"type":"tool_use","id":"grep:3","name":"read_file","input":{}}]},
            {"role":"user","content":[
              {"type":"tool_result","tool_use_id":"grep:3","content":"WEATHER"},
              {"type":"tool_result","tool_use_id":"grep:3","content":"FILE"}]}]})")
        << QStringList{"grep:3 get_weather=WEATHER", "grep:3_2 read_file=FILE"};
    // DeepSeek and GLM do the same in Chat.
    QTest::newRow("chat client") << wire::Api::OpenAICompletions << QByteArray(R"({"model":"m","messages":[
            {"role":"user","content":"go"},
            {"role":"assistant","content":null,"tool_calls":[
              {"id":"call_0","type":"function","function":{"name":"get_weather","arguments":"{}"}},
              {"id":"call_0","type":"function","function":{"name":"read_file","arguments":"{}"}}]},
            {"role":"tool","tool_call_id":"call_0","content":"WEATHER"},
            {"role":"tool","tool_call_id":"call_0","content":"FILE"}]})")
                                 << QStringList{"call_0 get_weather=WEATHER", "call_0_2 read_file=FILE"};
    // A Responses client told them so (by a shim in front of such a server), on the passthrough.
    QTest::newRow("responses client, passthrough")
        << wire::Api::OpenAIResponses << QByteArray(R"({"model":"m",
            "x_custom":1,"input":[{"role":"user","content":"go"},
            {"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"},
            {"type":"function_call","id":"fc_1","call_id":"call_0","name":"get_weather","arguments":"{}"},
            {"type":"function_call","id":"fc_2","call_id":"call_0","name":"read_file","arguments":"{}"},
            {"type":"function_call_output","call_id":"call_0","output":"WEATHER"},
            {"role":"user","content":"and hurry"},
            {"type":"function_call_output","call_id":"call_0","output":"FILE"}]})")
        << QStringList{"call_0 get_weather=WEATHER", "call_0_2 read_file=FILE"};
    // A server that names every turn's call "call_0": each turn's output still goes with its own call.
    QTest::newRow("responses client, one id every turn")
        << wire::Api::OpenAIResponses << QByteArray(R"({"model":"m","input":[{"role":"user","content":"go"},
            {"type":"function_call","call_id":"call_0","name":"get_weather","arguments":"{}"},
            {"type":"function_call_output","call_id":"call_0","output":"WEATHER"},
            {"type":"function_call","call_id":"call_0","name":"read_file","arguments":"{}"},
            {"type":"function_call_output","call_id":"call_0","output":"FILE"}]})")
        << QStringList{"call_0 get_weather=WEATHER", "call_0_2 read_file=FILE"};
}

void TestOpenAIResponsesAdapter::repeatedCallIdsGoUniqueEachOutputWithItsCall() {
    // Two function_call items under one call_id went to OpenAI as they were, which it refuses, and
    // both outputs named the one id (probe JV M4). Each call goes with a call_id of its own, each
    // output with its call's, in order.
    QFETCH(wire::Api, inbound);
    QFETCH(QByteArray, body);
    QFETCH(QStringList, pairs);
    sw::model::GatewayError error;
    const auto req = codecFor(inbound).decode(body, &error);
    QVERIFY2(req, qPrintable(error.message));
    const QByteArray sent = OpenAIResponsesAdapter().buildRequest(*req, target(), {}).body;
    QCOMPARE(pairsOf(json(sent).value("input").toArray()), pairs);
    if (inbound == wire::Api::OpenAIResponses && json(body).contains("x_custom")) {
        QCOMPARE(json(sent).value("x_custom").toInt(), 1); // the rest as the client wrote it
        QVERIFY2(sent.contains(R"("encrypted_content":"gAAA")"), sent.constData());
    }
}

void TestOpenAIResponsesAdapter::repeatedCallIdsOfOneAnswerReachTheClientUnique() {
    // A Responses-compatible server that gives two parallel calls one call_id: every client is told
    // the second by the next free one, in the item's added and done events (relayed to a same-API
    // client too), the response's output and the canonical answer, so each output pairs with its own
    // call in the next turn.
    const QByteArray sse =
        R"(data: {"type":"response.created","response":{"id":"resp_1","status":"in_progress","output":[]}})"
        "\n\n"
        R"(data: {"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"call_0","name":"get_weather","arguments":""}})"
        "\n\n"
        R"(data: {"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"call_0","name":"get_weather","arguments":"{}"}})"
        "\n\n"
        R"(data: {"type":"response.output_item.added","output_index":1,"item":{"id":"fc_2","type":"function_call","call_id":"call_0","name":"read_file","arguments":""}})"
        "\n\n"
        R"(data: {"type":"response.output_item.done","output_index":1,"item":{"id":"fc_2","type":"function_call","call_id":"call_0","name":"read_file","arguments":"{}"}})"
        "\n\n"
        R"(data: {"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[{"id":"fc_1","type":"function_call","call_id":"call_0","name":"get_weather","arguments":"{}"},{"id":"fc_2","type":"function_call","call_id":"call_0","name":"read_file","arguments":"{}"}],"usage":{"input_tokens":1,"output_tokens":1}}})"
        "\n\n";
    auto decoder = OpenAIResponsesAdapter().makeDecoder(target());
    QList<StreamEvent> events;
    QStringList relayed; // the call_ids of each event's item, then of the completed response's output
    for (const SseEvent &e : sw::test::splitSse(sse)) {
        events << decoder->feed(e);
        const QJsonObject data = json(decoder->lastRelayData().isEmpty() ? e.data : decoder->lastRelayData());
        if (data.contains("item"))
            relayed << data["item"]["call_id"].toString();
        for (const QJsonValue &item : data["response"]["output"].toArray())
            relayed << item["call_id"].toString();
    }
    events << decoder->finish();
    QCOMPARE(relayed, (QStringList{"call_0", "call_0", "call_0_2", "call_0_2", "call_0", "call_0_2"}));
    EventAccumulator acc;
    acc.addAll(events);
    const AssistantMessage &m = acc.message();
    QCOMPARE(m.content.size(), 2);
    QCOMPARE(m.content[0].toolCallId, QStringLiteral("call_0"));
    QCOMPARE(m.content[1].toolCallId, QStringLiteral("call_0_2"));
    QCOMPARE(m.content[1].toolName, QStringLiteral("read_file"));
    // A same-API JSON answer is the upstream's own response, with the same ids.
    const QJsonArray output = m.native.value("output").toArray();
    QCOMPARE(output.size(), 2);
    QCOMPARE(output[1]["call_id"].toString(), QStringLiteral("call_0_2"));
}

// Probe L1 LOW 2: with reasoning on, a converted request goes without the client's temperature and
// top_p (OpenAI's reasoning models take only the defaults), and the answer said nothing of it.
void TestOpenAIResponsesAdapter::samplingLeftOutForReasoningIsNamed() {
    Target t = target();
    t.modelId = QStringLiteral("gpt-5.1"); // reasons only when asked
    const auto dropped = [&](const char *settings) {
        const auto req = OpenAIChatCodec().decode(
            R"({"model":"m","temperature":0.2,"top_p":0.9,"messages":[{"role":"user","content":"hi"}],)" +
                QByteArray(settings) + "}",
            nullptr);
        const ChatRequest converted = spokenIn(*req, wire::Api::OpenAICompletions);
        const QJsonObject sent = json(OpenAIResponsesAdapter().buildRequest(converted, t, {}).body);
        const QStringList out = OpenAIResponsesAdapter().droppedFor(converted, t);
        // Named exactly when left out.
        if (out.contains("temperature") == sent.contains("temperature"))
            return QStringList{QStringLiteral("(temperature sent and named, or neither)")};
        return out;
    };
    QCOMPARE(dropped(R"("reasoning_effort":"medium")"), QStringList({"temperature", "top_p"}));
    QCOMPARE(dropped(R"("reasoning":{"max_tokens":3000})"), QStringList({"temperature", "top_p"}));
    QCOMPARE(dropped(R"("reasoning_effort":"none")"), QStringList());
    QCOMPARE(dropped(R"("stream":false)"), QStringList());
    t.modelReasons = false; // gets no reasoning, and the sampling
    QCOMPARE(dropped(R"("reasoning_effort":"medium")"), QStringList());
}

// Probe Q4 9: OpenAI refuses a reasoning summary for an organisation that is not verified. After that
// refusal (Target::reasoningSummary false) neither a converted request nor a Responses client's own
// asks for one; the client's is named, as anything its request goes without.
void TestOpenAIResponsesAdapter::aServerThatRefusedASummaryIsAskedForNone() {
    const auto chat = OpenAIChatCodec().decode(
        R"({"model":"m","reasoning_effort":"high","messages":[{"role":"user","content":"hi"}]})", nullptr);
    const ChatRequest converted = spokenIn(*chat, wire::Api::OpenAICompletions);
    const auto own = OpenAIResponsesCodec().decode(
        R"({"model":"m","input":"hi","reasoning":{"effort":"low","summary":"detailed"},"x_new":1})", nullptr);
    const ChatRequest same = spokenIn(*own, wire::Api::OpenAIResponses);
    Target t = target();
    const auto reasoning = [&](const ChatRequest &r) {
        return json(OpenAIResponsesAdapter().buildRequest(r, t, {}).body).value("reasoning").toObject();
    };
    QCOMPARE(reasoning(converted).value("summary").toString(), QStringLiteral("auto"));
    QCOMPARE(reasoning(same).value("summary").toString(), QStringLiteral("detailed"));
    QVERIFY(OpenAIResponsesAdapter().droppedFor(same, t).isEmpty());
    t.reasoningSummary = false;
    QCOMPARE(reasoning(converted), QJsonObject({{"effort", "high"}}));
    QCOMPARE(reasoning(same), QJsonObject({{"effort", "low"}}));
    QCOMPARE(json(OpenAIResponsesAdapter().buildRequest(same, t, {}).body).value("x_new").toInt(), 1);
    QCOMPARE(OpenAIResponsesAdapter().droppedFor(same, t), QStringList{QStringLiteral("reasoning.summary")});
    QVERIFY(OpenAIResponsesAdapter().droppedFor(converted, t).isEmpty());
}

// Probe L1 1: a Chat client's search context size went nowhere although Responses has the field, and
// an Anthropic client's max_uses went nowhere although Responses caps its built-in tool calls.
void TestOpenAIResponsesAdapter::webSearchSettingsGoWhereResponsesHasThem() {
    const auto chat = OpenAIChatCodec().decode(
        R"({"model":"m","messages":[{"role":"user","content":"news?"}],"web_search_options":)"
        R"({"search_context_size":"high","user_location":{"type":"approximate","approximate":{"country":"GB"}}}})",
        nullptr);
    QVERIFY(chat);
    const QJsonObject fromChat =
        json(OpenAIResponsesAdapter().buildRequest(spokenIn(*chat, wire::Api::OpenAICompletions), target(), {}).body);
    QCOMPARE(fromChat.value("tools").toArray(),
             QJsonArray{QJsonObject({{"type", "web_search"},
                                     {"search_context_size", "high"},
                                     {"user_location", QJsonObject{{"type", "approximate"}, {"country", "GB"}}}})});
    QVERIFY(!fromChat.contains("max_tool_calls"));

    const auto claude = AnthropicMessagesCodec().decode(
        R"({"model":"m","max_tokens":100,"messages":[{"role":"user","content":"news?"}],"tools":[)"
        R"({"type":"web_search_20250305","name":"web_search","max_uses":2,"allowed_domains":["docs.python.org"]}]})",
        nullptr);
    QVERIFY(claude);
    const QJsonObject fromClaude =
        json(OpenAIResponsesAdapter().buildRequest(spokenIn(*claude, wire::Api::AnthropicMessages), target(), {}).body);
    QCOMPARE(fromClaude.value("tools").toArray(),
             QJsonArray{QJsonObject({{"type", "web_search"},
                                     {"filters", QJsonObject{{"allowed_domains", QJsonArray{"docs.python.org"}}}}})});
    QCOMPARE(fromClaude.value("max_tool_calls").toInt(), 2);
}

// Probe L1 3: a Chat client's verbosity was dropped on its way to Responses, which has the same
// setting as text.verbosity (beside the format that response_format becomes).
void TestOpenAIResponsesAdapter::aChatClientsVerbosityIsTextVerbosity() {
    const auto chat = OpenAIChatCodec().decode(R"({"model":"m","messages":[{"role":"user","content":"hi"}],)"
                                               R"("verbosity":"low","response_format":{"type":"json_object"}})",
                                               nullptr);
    QVERIFY(chat);
    const QJsonObject body =
        json(OpenAIResponsesAdapter().buildRequest(spokenIn(*chat, wire::Api::OpenAICompletions), target(), {}).body);
    QCOMPARE(body.value("text").toObject(),
             QJsonObject({{"format", QJsonObject{{"type", "json_object"}}}, {"verbosity", "low"}}));
    QVERIFY(!body.contains("verbosity"));
    // A value OpenAI does not define goes nowhere.
    const auto odd = OpenAIChatCodec().decode(
        R"({"model":"m","messages":[{"role":"user","content":"hi"}],"verbosity":"terse"})", nullptr);
    QVERIFY(odd);
    QVERIFY(
        !json(OpenAIResponsesAdapter().buildRequest(spokenIn(*odd, wire::Api::OpenAICompletions), target(), {}).body)
             .contains("text"));
}

// Probe L1 2: OpenRouter's reasoning object turned no reasoning on after a failover; its budget goes
// as an effort, as an Anthropic or pi budget does.
void TestOpenAIResponsesAdapter::openRoutersReasoningObjectSetsTheEffort() {
    Target t = target();
    t.modelId = QStringLiteral("gpt-5.1");
    const auto reasoning = [&](const char *object) {
        const auto req = OpenAIChatCodec().decode(
            R"({"model":"m","messages":[{"role":"user","content":"hi"}],"reasoning":)" + QByteArray(object) + "}",
            nullptr);
        return json(OpenAIResponsesAdapter().buildRequest(spokenIn(*req, wire::Api::OpenAICompletions), t, {}).body)
            .value("reasoning")
            .toObject()
            .value("effort")
            .toString();
    };
    QCOMPARE(reasoning(R"({"max_tokens":3000})"), QStringLiteral("low"));
    QCOMPARE(reasoning(R"({"max_tokens":12000})"), QStringLiteral("medium"));
    QCOMPARE(reasoning(R"({"enabled":true})"), QStringLiteral("medium"));
    QCOMPARE(reasoning(R"({"enabled":false})"), QStringLiteral("none"));
    QCOMPARE(reasoning(R"({"effort":"high"})"), QStringLiteral("high"));
}

void TestOpenAIResponsesAdapter::passthroughKeepsEveryFieldAndBetaHeader() {
    const QByteArray body =
        R"({"model":"fast","input":"hi","previous_response_id":"resp_9","tools":[{"type":"web_search"}],"x_new":1})";
    const auto req = OpenAIResponsesCodec().decode(body, nullptr);
    QVERIFY(req);
    const HttpRequest http = OpenAIResponsesAdapter().buildRequest(spokenIn(*req, wire::Api::OpenAIResponses), target(),
                                                                   {{"OpenAI-Beta", "responses=v9"}});
    QCOMPARE(http.url.toString(), QStringLiteral("https://api.openai.com/v1/responses"));
    const QJsonObject sent = json(http.body);
    QCOMPARE(sent.value("model").toString(), QStringLiteral("gpt-5"));
    QCOMPARE(sent.value("stream").toBool(), true);
    QCOMPARE(sent.value("previous_response_id").toString(), QStringLiteral("resp_9"));
    QCOMPARE(sent.value("x_new").toInt(), 1);
    QCOMPARE(sent.value("tools").toArray()[0].toObject().value("type").toString(), QStringLiteral("web_search"));
    QCOMPARE(headerValue(http.headers, "authorization"), QByteArray("Bearer sk-secret"));
    QCOMPARE(headerValue(http.headers, "openai-beta"), QByteArray("responses=v9"));
}

namespace {
// One decoded request built twice: spliced into the client's bytes, and written whole (rawBody
// cleared: the path that stays for bodies the splice declines). Both must say the same JSON.
struct BothPaths {
    QByteArray spliced;
    QByteArray whole;
};
BothPaths bothPaths(const QByteArray &clientBody) {
    auto req = OpenAIResponsesCodec().decode(clientBody, nullptr);
    if (!req)
        return {};
    BothPaths both;
    both.spliced = OpenAIResponsesAdapter().buildRequest(*req, target(), {}).body;
    req->rawBody.clear();
    both.whole = OpenAIResponsesAdapter().buildRequest(*req, target(), {}).body;
    return both;
}
} // namespace

void TestOpenAIResponsesAdapter::passthroughSplicesUnlessAReasoningItemIsDropped() {
    const QByteArray history =
        R"("input":[{"role":"user","content":[{"type":"input_text","text":"list {files} \"here\""},)"
        R"({"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="}]},)"
        R"({"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAAown"},)"
        R"({"type":"function_call","call_id":"call_1","name":"shell","arguments":"{\"cmd\":\"ls\"}"},)"
        R"({"type":"function_call_output","call_id":"call_1","output":"a.txt"}],)"
        R"("tools":[{"type":"function","name":"shell","parameters":{"type":"object"}}])";
    const QByteArray foreign = R"({"type":"reasoning","id":"rs_2","summary":[],"encrypted_content":")" +
                               tagSignature(QStringLiteral("anthropic-messages"), QStringLiteral("sig")).toUtf8() +
                               R"("},)";
    QByteArray withForeign = history;
    withForeign.insert(withForeign.indexOf(R"({"type":"function_call")"), foreign);
    struct Case {
        const char *name;
        QByteArray body;
        bool spliced;
    };
    const QList<Case> cases{
        {"own reasoning, tools, image",
         R"({"model":"codex","reasoning":{"effort":"high"},"store":false,"include":["reasoning.encrypted_content"],)" +
             history + "}",
         true},
        {"input text", R"({"model":"codex","input":"hi","x_new":{"a":[1]},"stream":false})", true},
        {"big integer", R"({"model":"codex","metadata":{"n":12345678901234567890},)" + history + "}", true},
        {"foreign reasoning", R"({"model":"codex","store":false,)" + withForeign + "}", false},
        {"duplicate key", R"({"model":"codex","store":false,"store":true,)" + history + "}", false},
    };
    for (const Case &c : cases) {
        const BothPaths both = bothPaths(c.body);
        QVERIFY2(!both.whole.isEmpty(), c.name);
        QCOMPARE(json(both.spliced), json(both.whole));
        QCOMPARE(json(both.spliced).value("model").toString(), QStringLiteral("gpt-5"));
        QVERIFY2(json(both.spliced).value("stream").toBool(), c.name);
        if (c.spliced)
            QVERIFY2(both.spliced != both.whole, c.name); // the client's key order, not Qt's
        else
            QCOMPARE(both.spliced, both.whole);
    }
    // The splice keeps a number beyond a double's precision exactly, as the client wrote it.
    const BothPaths big = bothPaths(cases[2].body);
    QVERIFY(big.spliced.contains("12345678901234567890"));
    QVERIFY(!big.whole.contains("12345678901234567890"));
    // Another API's reasoning item never reaches OpenAI; the upstream's own does.
    const BothPaths dropped = bothPaths(cases[3].body);
    QVERIFY(!dropped.spliced.contains("swsig1"));
    QVERIFY(!dropped.spliced.contains("rs_2"));
    QVERIFY(dropped.spliced.contains("gAAAAown"));
}

void TestOpenAIResponsesAdapter::aReasoningItemTheGatewayNamedIsNeverSentUp() {
    // The openai SDK keeps its snapshot of a response that ended incomplete (max tokens), in which
    // the reasoning item another API's thinking became has its gateway-made id and no
    // encrypted_content yet. OpenAI refuses such an item; it is left out, the rest goes.
    const QByteArray body =
        "{\"model\":\"codex\",\"store\":false,\"input\":[{\"role\":\"user\",\"content\":\"go\"},"
        "{\"id\":\"rs_req_7_0\",\"type\":\"reasoning\",\"summary\":[]},"
        "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"half\"}]},"
        "{\"role\":\"user\",\"content\":\"go on\"}]}";
    const auto req = OpenAIResponsesCodec().decode(body, nullptr);
    QVERIFY(req);
    const QByteArray sent = OpenAIResponsesAdapter().buildRequest(*req, target(), {}).body;
    QVERIFY2(!sent.contains("reasoning") && !sent.contains("rs_req_"), sent.constData());
    QVERIFY2(sent.contains("half") && sent.contains("go on"), sent.constData());
}

void TestOpenAIResponsesAdapter::aRefusedReasoningItemSendsNoneAndNoItemIds() {
    // After this upstream refused an encrypted reasoning item (invalid_encrypted_content: another
    // provider of the Responses API made it), the retry sends no reasoning item, and no item id
    // that would ask for its reasoning ("provided without its required 'reasoning' item"). An
    // item_reference keeps its id: that id is all it is.
    const QByteArray body =
        R"({"model":"codex","store":false,"input":[{"role":"user","content":"go"},)"
        R"({"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAAfromElsewhere"},)"
        R"({"type":"function_call","id":"fc_1","call_id":"call_1","name":"shell","arguments":"{}"},)"
        R"({"type":"function_call_output","call_id":"call_1","output":"a.txt"},)"
        R"({"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"done"}]},)"
        R"({"type":"item_reference","id":"msg_0"},{"role":"user","content":"and now?"}]})";
    auto req = OpenAIResponsesCodec().decode(body, nullptr);
    QVERIFY(req);
    Target refused = target();
    refused.replayReasoning = false;
    const QByteArray first = OpenAIResponsesAdapter().buildRequest(*req, target(), {}).body;
    QVERIFY2(first.contains("gAAAAfromElsewhere") && first.contains("fc_1"), first.constData());
    const QByteArray sent = OpenAIResponsesAdapter().buildRequest(*req, refused, {}).body;
    QVERIFY2(!sent.contains("gAAAAfromElsewhere"), sent.constData());
    QVERIFY2(!sent.contains("\"reasoning\""), sent.constData());
    QVERIFY2(!sent.contains("fc_1") && !sent.contains("msg_1"), sent.constData());
    QVERIFY2(sent.contains("call_1") && sent.contains("done") && sent.contains("and now?"), sent.constData());
    QVERIFY2(sent.contains("msg_0"), sent.constData());

    // Converted (a pi client): the reasoning item and the call's fc_ id go too.
    ChatRequest pi;
    Message assistant;
    assistant.role = Role::Assistant;
    assistant.api = QStringLiteral("openai-responses");
    ContentBlock thinking;
    thinking.type = BlockType::Thinking;
    thinking.text = QStringLiteral("plan");
    thinking.signature =
        QStringLiteral("{\"id\":\"rs_77\",\"type\":\"reasoning\",\"encrypted_content\":\"gAAAother\"}");
    ContentBlock call;
    call.type = BlockType::ToolCall;
    call.toolCallId = QStringLiteral("call_abc|fc_0123");
    call.toolName = QStringLiteral("f");
    assistant.content << thinking << call;
    Message result;
    result.role = Role::ToolResult;
    result.toolCallId = QStringLiteral("call_abc|fc_0123");
    result.content << ContentBlock::makeText(QStringLiteral("ok"));
    pi.context.messages << assistant << result;
    const ChatRequest fromPi = spokenIn(pi, wire::Api::Pi);
    const QByteArray piFirst = OpenAIResponsesAdapter().buildRequest(fromPi, target(), {}).body;
    QVERIFY2(piFirst.contains("gAAAother") && piFirst.contains("fc_0123"), piFirst.constData());
    const QByteArray piSent = OpenAIResponsesAdapter().buildRequest(fromPi, refused, {}).body;
    QVERIFY2(!piSent.contains("gAAAother") && !piSent.contains("fc_0123") && !piSent.contains("rs_77"),
             piSent.constData());
    QVERIFY2(piSent.contains("call_abc") && piSent.contains("function_call_output"), piSent.constData());
}

void TestOpenAIResponsesAdapter::piFunctionCallsKeepOpenAIsItemId() {
    // pi keeps a Responses call as "call_id|item_id". OpenAI pairs a replayed reasoning item with
    // the item it led to by that item's id, both ways: a reasoning item whose following call has
    // no id is refused ("provided without its required following item"), and so is a call id
    // whose reasoning is absent ("provided without its required 'reasoning' item"). An id another
    // API made ("toolu_…") has no item id to give.
    const auto inputFor = [](bool withReasoning) {
        ChatRequest req;
        Message assistant;
        assistant.role = Role::Assistant;
        assistant.api = QStringLiteral("openai-responses");
        if (withReasoning) {
            ContentBlock thinking;
            thinking.type = BlockType::Thinking;
            thinking.text = QStringLiteral("plan");
            thinking.signature = QStringLiteral(R"({"id":"rs_77","type":"reasoning","encrypted_content":"gAAA"})");
            assistant.content << thinking;
        }
        for (const char *id : {"call_abc|fc_0123", "toolu_01A"}) {
            ContentBlock call;
            call.type = BlockType::ToolCall;
            call.toolCallId = QString::fromLatin1(id);
            call.toolName = QStringLiteral("f");
            assistant.content << call;
        }
        Message result;
        result.role = Role::ToolResult;
        result.toolCallId = QStringLiteral("call_abc|fc_0123");
        result.content << ContentBlock::makeText(QStringLiteral("ok"));
        req.context.messages << assistant << result;
        return json(OpenAIResponsesAdapter().buildRequest(spokenIn(req, wire::Api::Pi), target(), {}).body)
            .value("input")
            .toArray();
    };
    const QJsonArray paired = inputFor(true);
    QCOMPARE(paired.size(), 4);
    QCOMPARE(paired[0].toObject().value("type").toString(), QStringLiteral("reasoning"));
    QCOMPARE(paired[0].toObject().value("id").toString(), QStringLiteral("rs_77"));
    QCOMPARE(paired[1].toObject().value("call_id").toString(), QStringLiteral("call_abc"));
    QCOMPARE(paired[1].toObject().value("id").toString(), QStringLiteral("fc_0123"));
    QCOMPARE(paired[2].toObject().value("call_id").toString(), QStringLiteral("toolu_01A"));
    QVERIFY(!paired[2].toObject().contains("id"));
    QCOMPARE(paired[3].toObject().value("type").toString(), QStringLiteral("function_call_output"));
    QCOMPARE(paired[3].toObject().value("call_id").toString(), QStringLiteral("call_abc"));

    const QJsonArray alone = inputFor(false); // the call's reasoning is not in the history
    QCOMPARE(alone.size(), 3);
    QCOMPARE(alone[0].toObject().value("call_id").toString(), QStringLiteral("call_abc"));
    QVERIFY(!alone[0].toObject().contains("id"));
}

void TestOpenAIResponsesAdapter::piClientsGetCallIdsWithTheItemId() {
    // A pi client answered by a Responses upstream gets its calls as pi-ai names them, "call|fc_…",
    // streamed and whole; sent back, the next turn keeps the reasoning beside its call.
    const auto events = decode(readTestData(QStringLiteral("responses_upstream_full.sse")));
    EncodeInfo info;
    info.responseId = QStringLiteral("req_1");
    info.upstreamApi = QStringLiteral("openai-responses");
    auto encoder = PiNativeCodec().makeStreamEncoder(info);
    QByteArray sse;
    for (const StreamEvent &e : events)
        sse += encoder->encode(e);
    QJsonObject start, done;
    for (const auto &f : sw::test::splitSse(sse)) {
        const QJsonObject o = json(f.data);
        if (o.value("type") == QStringLiteral("toolcall_start"))
            start = o;
        else if (o.value("type") == QStringLiteral("done"))
            done = o;
    }
    QCOMPARE(start.value("id").toString(), QStringLiteral("call_abc|fc_01"));
    QVERIFY2(sse.contains("\"contentSignature\":\"{\\\"id\\\":\\\"msg_"),
             sse.constData()); // text_end: pi's proxy reads it
    const QJsonArray content = done.value("message").toObject().value("content").toArray();
    QCOMPARE(content.last().toObject().value("id").toString(), QStringLiteral("call_abc|fc_01"));
    EventAccumulator acc;
    acc.addAll(events);
    const QJsonObject whole = json(PiNativeCodec().encodeResponse(acc.message(), info)).value("message").toObject();
    QCOMPARE(whole.value("content").toArray().last().toObject().value("id").toString(),
             QStringLiteral("call_abc|fc_01"));

    const QByteArray next =
        QJsonDocument(QJsonObject{{"model", "m"},
                                  {"context",
                                   QJsonObject{{"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "go"}},
                                                                       done.value("message"),
                                                                       QJsonObject{{"role", "toolResult"},
                                                                                   {"toolCallId", "call_abc|fc_01"},
                                                                                   {"toolName", "get_weather"},
                                                                                   {"content", "sunny"}}}}}}})
            .toJson();
    const auto req = PiNativeCodec().decode(next, nullptr);
    QVERIFY(req);
    const QJsonArray input =
        json(OpenAIResponsesAdapter().buildRequest(spokenIn(*req, wire::Api::Pi), target(), {}).body)
            .value("input")
            .toArray();
    QStringList kinds;
    for (const QJsonValue &v : input)
        kinds << v.toObject().value("type").toString(QStringLiteral("message"));
    QCOMPARE(kinds, (QStringList{"message", "reasoning", "message", "function_call", "function_call_output"}));
    QCOMPARE(input[3].toObject().value("id").toString(), QStringLiteral("fc_01"));
    QCOMPARE(input[3].toObject().value("call_id").toString(), QStringLiteral("call_abc"));
    // The text between them goes back as its message item, under the id pi kept in textSignature.
    const QString textSignature = content[1].toObject().value("textSignature").toString();
    const QString messageId = json(textSignature.toUtf8()).value("id").toString();
    QVERIFY2(messageId.startsWith(QLatin1String("msg_")), qPrintable(textSignature));
    QCOMPARE(input[2].toObject().value("id").toString(), messageId);
    QCOMPARE(input[2].toObject().value("content").toArray()[0].toObject().value("text").toString(),
             QStringLiteral("Checking now."));
}

void TestOpenAIResponsesAdapter::longCallIdsFitAndStayPaired() {
    // Responses refuses a call_id over 64 characters; other APIs' ids can be longer. Call and
    // output get the same bounded id, and two long ids that share a prefix stay apart.
    const QString a = QStringLiteral("tooluse_") + QString(60, QLatin1Char('x')) + QStringLiteral("_a");
    const QString b = QStringLiteral("tooluse_") + QString(60, QLatin1Char('x')) + QStringLiteral("_b");
    ChatRequest req;
    Message assistant;
    assistant.role = Role::Assistant;
    for (const QString &id : {a, b}) {
        ContentBlock call;
        call.type = BlockType::ToolCall;
        call.toolCallId = id;
        call.toolName = QStringLiteral("f");
        assistant.content << call;
    }
    req.context.messages << assistant;
    for (const QString &id : {a, b}) {
        Message result;
        result.role = Role::ToolResult;
        result.toolCallId = id;
        result.content << ContentBlock::makeText(QStringLiteral("ok"));
        req.context.messages << result;
    }
    const QJsonArray input =
        json(OpenAIResponsesAdapter().buildRequest(spokenIn(req, wire::Api::AnthropicMessages), target(), {}).body)
            .value("input")
            .toArray();
    QCOMPARE(input.size(), 4);
    for (int i = 0; i < 4; ++i)
        QVERIFY(input[i].toObject().value("call_id").toString().size() <= 64);
    QCOMPARE(input[0].toObject().value("call_id"), input[2].toObject().value("call_id"));
    QCOMPARE(input[1].toObject().value("call_id"), input[3].toObject().value("call_id"));
    QVERIFY(input[0].toObject().value("call_id") != input[1].toObject().value("call_id"));
}

void TestOpenAIResponsesAdapter::aSameApiHistorysOverLongCallIdsGoBounded() {
    // A Responses server that names its calls with 100 characters: a Responses client keeps the id
    // and sends it back. The turn after a failover to OpenAI went up as the client wrote it, and
    // OpenAI refuses a call_id over 64, on every turn after (probe Y). The call's and its output's
    // go bounded alike; the rest as the client wrote it.
    const QString longId = QStringLiteral("call_") + QString(95, QLatin1Char('z'));
    const QByteArray body = "{\"model\":\"m\",\"x_custom\":1,\"input\":[{\"role\":\"user\",\"content\":\"go\"},"
                            "{\"type\":\"function_call\",\"call_id\":\"" +
                            longId.toLatin1() +
                            "\",\"name\":\"f\",\"arguments\":\"{}\"},"
                            "{\"type\":\"function_call_output\",\"call_id\":\"" +
                            longId.toLatin1() + "\",\"output\":\"ok\"}]}";
    const auto req = OpenAIResponsesCodec().decode(body, nullptr);
    QVERIFY(req);
    const QByteArray sent = OpenAIResponsesAdapter().buildRequest(*req, target(), {}).body;
    QVERIFY2(!sent.contains(longId.toLatin1()), sent.constData());
    const QJsonArray input = json(sent).value("input").toArray();
    QCOMPARE(input.size(), 3);
    const QString bounded = input[1].toObject().value("call_id").toString();
    QCOMPARE(bounded, sw::wire::boundedToolCallId(longId, sw::wire::kResponsesMaxCallIdLength));
    QVERIFY(bounded.size() <= 64);
    QCOMPARE(input[2].toObject().value("call_id").toString(), bounded);
    QCOMPARE(input[1].toObject().value("name").toString(), QStringLiteral("f"));
    QCOMPARE(json(sent).value("x_custom").toInt(), 1);
}

void TestOpenAIResponsesAdapter::reasoningPairingEdges() {
    const auto reasoning = [](const char *id) {
        ContentBlock b;
        b.type = BlockType::Thinking;
        b.signature =
            QStringLiteral(R"({"id":"%1","type":"reasoning","encrypted_content":"gAAA"})").arg(QLatin1String(id));
        return b;
    };
    const auto text = [](const char *t, const char *itemId) {
        ContentBlock b = ContentBlock::makeText(QString::fromUtf8(t));
        b.itemId = QString::fromLatin1(itemId);
        return b;
    };
    const auto call = [](const char *id) {
        ContentBlock b;
        b.type = BlockType::ToolCall;
        b.toolCallId = QString::fromLatin1(id);
        b.toolName = QStringLiteral("f");
        return b;
    };
    const auto sent = [](const QList<ContentBlock> &content) {
        ChatRequest req;
        Message m;
        m.role = Role::Assistant;
        m.api = QStringLiteral("openai-responses");
        m.content = content;
        req.context.messages << m;
        return json(OpenAIResponsesAdapter().buildRequest(spokenIn(req, wire::Api::Pi), target(), {}).body)
            .value("input")
            .toArray();
    };
    const auto kinds = [](const QJsonArray &input) {
        QStringList out;
        for (const QJsonValue &v : input)
            out << v.toObject().value("type").toString(QStringLiteral("easy")) + QLatin1Char(':') +
                       v.toObject().value("id").toString();
        return out;
    };
    // Two parts of one message item (two blocks, one id) are one item, not two under one id.
    QCOMPARE(kinds(sent({reasoning("rs_1"), text("A", "msg_a"), text("B", "msg_a")})),
             (QStringList{"reasoning:rs_1", "message:msg_a"}));
    // An empty text sends nothing, so it cannot be what the reasoning led to.
    QCOMPARE(kinds(sent({reasoning("rs_1"), text("", "")})), QStringList{});
    // The item right after the reasoning decides: an id-less call there takes the reasoning without
    // its id, whatever follows it.
    QCOMPARE(kinds(sent({reasoning("rs_1"), call("call_1"), text("done", "")})),
             (QStringList{"reasoning:", "function_call:", "easy:"}));
    // A call keeps its fc_ id only beside its own reasoning, not an earlier one.
    ContentBlock foreign = reasoning("rs_2");
    foreign.signature = QStringLiteral("not-json");
    QCOMPARE(kinds(sent({reasoning("rs_1"), call("call_a|fc_a"), foreign, call("call_b|fc_b")})),
             (QStringList{"reasoning:rs_1", "function_call:fc_a", "function_call:"}));
}

void TestOpenAIResponsesAdapter::reasoningWithoutTheItemItLedToIsLeftOut() {
    // An Anthropic client kept the answer but its tool_use ids cannot hold OpenAI's item ids: the
    // reasoning goes without its id, followed by the call without one, as Codex sends each step
    // (probe T1-1: it was left out, and the model lost its reasoning at every tool step). A reasoning
    // item with an id would be refused without its following item; one without encrypted content
    // says nothing, and is left out.
    ChatRequest req;
    Message assistant;
    assistant.role = Role::Assistant;
    assistant.api = QStringLiteral("openai-responses");
    ContentBlock thinking;
    thinking.type = BlockType::Thinking;
    thinking.signature = QStringLiteral(R"({"id":"rs_1","type":"reasoning","encrypted_content":"gAAA"})");
    ContentBlock call;
    call.type = BlockType::ToolCall;
    call.toolCallId = QStringLiteral("call_1");
    call.toolName = QStringLiteral("f");
    assistant.content << thinking << call;
    req.context.messages << assistant;
    const QByteArray sent =
        OpenAIResponsesAdapter().buildRequest(spokenIn(req, wire::Api::AnthropicMessages), target(), {}).body;
    const QJsonArray input = json(sent).value("input").toArray();
    QCOMPARE(input.size(), 2);
    QCOMPARE(input[0].toObject().value("type").toString(), QStringLiteral("reasoning"));
    QCOMPARE(input[0].toObject().value("encrypted_content").toString(), QStringLiteral("gAAA"));
    QVERIFY2(!input[0].toObject().contains("id") && !sent.contains("rs_1"), sent.constData());
    QCOMPARE(input[1].toObject().value("call_id").toString(), QStringLiteral("call_1"));
    QVERIFY(!input[1].toObject().contains("id"));

    // Reasoning OpenAI stored (no encrypted content) cannot be read without its id: left out.
    req.context.messages[0].content[0].signature = QStringLiteral(R"({"id":"rs_1","type":"reasoning"})");
    const QByteArray stored =
        OpenAIResponsesAdapter().buildRequest(spokenIn(req, wire::Api::AnthropicMessages), target(), {}).body;
    QVERIFY2(!stored.contains("reasoning") && !stored.contains("rs_1"), stored.constData());
    QVERIFY(stored.contains("\"call_id\":\"call_1\""));
}

void TestOpenAIResponsesAdapter::aResponseNamedWithControlCharactersFails() {
    // SPEC 10: what an upstream names its model and answer with is echoed only when it is at most
    // 256 bytes with no control character; a Responses stream relays response.created as it is.
    const auto firstEvent = [](const QByteArray &model) {
        const QList<StreamEvent> events =
            decode("event: response.created\ndata: "
                   "{\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"model\":\"" +
                   model + "\",\"status\":\"in_progress\",\"output\":[]}}\n\n");
        return events.isEmpty() ? StreamEvent() : events.first();
    };
    QCOMPARE(firstEvent("gpt-5").type, EventType::Start);
    for (const QByteArray &bad :
         {QByteArray(R"(gpt\u001b[31m)"), QByteArray(R"(gpt\r\nX: 1)"), QByteArray(R"(gpt\u0085)"),
          QByteArray(R"(gpt\u2028)"), QByteArray(257, 'm'), QByteArray(R"(gpt\u202e5-tpg)"),
          QByteArray(R"(gpt\u200b-5)"), QByteArray(R"(\ufeffgpt)"), QByteArray(R"(gpt\u2066x\u2069)")}) {
        const StreamEvent e = firstEvent(bad);
        QVERIFY2(e.type == EventType::Error, bad.constData());
        QCOMPARE(e.errorStatus.value_or(0), 502);
    }
    QCOMPARE(firstEvent(QByteArray(256, 'm')).type, EventType::Start);
    QCOMPARE(firstEvent(R"(gpt-5 \u00e9t\u00e9)").type, EventType::Start);   // not a control character
    QCOMPARE(firstEvent(R"(gpt\u2013\u2070\ufeee)").type, EventType::Start); // neighbours of those refused
}

void TestOpenAIResponsesAdapter::aToolCallNamedWithControlCharactersFails() {
    // Probe T3 (SPEC 10): a same-API stream relayed a function_call item as the upstream wrote it,
    // so its name's escapes reached a CLI agent's terminal and its 100 KB call_id went back
    // upstream on the next turn. The frame is refused whole, as a response with a bad model is.
    const auto lastFrame = [](const QByteArray &sse) {
        auto decoder = OpenAIResponsesAdapter().makeDecoder(target());
        return sw::test::feedLastFrame(*decoder, sse);
    };
    const auto frame = [](const QByteArray &type, const QByteArray &rest) {
        return "event: " + type + "\ndata: {\"type\":\"" + type + "\"," + rest + "}\n\n";
    };
    const auto created = [&](const QByteArray &model) {
        return frame("response.created", "\"response\":{\"id\":\"resp_1\",\"model\":\"" + model +
                                             "\",\"status\":\"in_progress\",\"output\":[]}");
    };
    const auto item = [](const QByteArray &type, const QByteArray &id, const QByteArray &callId,
                         const QByteArray &name) {
        return "{\"type\":\"" + type + "\",\"id\":\"" + id + "\",\"call_id\":\"" + callId + "\",\"name\":\"" + name +
               "\",\"arguments\":\"\",\"status\":\"in_progress\"}";
    };
    const auto added = [&](const QByteArray &type, const QByteArray &id, const QByteArray &callId,
                           const QByteArray &name) {
        return created("gpt-5") +
               frame("response.output_item.added", "\"output_index\":0,\"item\":" + item(type, id, callId, name));
    };
    const sw::test::LastFrame model = lastFrame(created(R"(gpt\u001b[31m)"));
    QVERIFY(model.unreadable);
    QCOMPARE(model.events.size(), 1);
    QCOMPARE(model.events[0].type, EventType::Error);

    const sw::test::LastFrame good =
        lastFrame(added("function_call", "fc_" + QByteArray(253, 'x'), "call_" + QByteArray(251, 'y'), "get_weather"));
    QVERIFY(!good.unreadable);
    QCOMPARE(good.events.last().type, EventType::ToolCallStart);
    QCOMPARE(good.events.last().block.itemId.size(), 256);
    QCOMPARE(good.events.last().block.toolCallId.size(), 256);
    QCOMPARE(good.events.last().block.toolName, QStringLiteral("get_weather"));

    const QByteArray goodCall = added("function_call", "fc_1", "call_1", "get_weather");
    for (const QByteArray &bad : sw::test::unechoableToolCallNames()) {
        for (const QByteArray &sse : {
                 added("function_call", "fc_1", "call_1", bad),
                 added("function_call", "fc_1", bad, "get_weather"),
                 added("function_call", bad, "call_1", "get_weather"),
                 added("custom_tool_call", "ctc_1", "call_1", bad),
                 added("custom_tool_call", "ctc_1", bad, "apply_patch"),
                 // the events that follow the item name it again, and are relayed as they are
                 goodCall + frame("response.function_call_arguments.delta",
                                  "\"output_index\":0,\"item_id\":\"" + bad + "\",\"delta\":\"{}\""),
                 goodCall +
                     frame("response.function_call_arguments.done",
                           "\"output_index\":0,\"item_id\":\"fc_1\",\"name\":\"" + bad + "\",\"arguments\":\"{}\""),
                 goodCall + frame("response.output_item.done",
                                  "\"output_index\":0,\"item\":" + item("function_call", "fc_1", bad, "get_weather")),
                 goodCall + frame("response.completed",
                                  "\"response\":{\"id\":\"resp_1\",\"model\":\"gpt-5\",\"status\":\"completed\","
                                  "\"output\":[" +
                                      item("function_call", "fc_1", "call_1", bad) + "]}"),
             }) {
            const QString problem = sw::test::unechoableToolCallProblem(lastFrame(sse));
            QVERIFY2(problem.isEmpty(), qPrintable(problem + QLatin1Char(' ') + QString::fromUtf8(sse)));
        }
    }
}

void TestOpenAIResponsesAdapter::passthroughDropsTheItemIdsTheGatewayMadeUp() {
    // Turn 1 of a Codex session went to Anthropic (OpenAI was down): the gateway wrote its answer
    // as Responses items under ids of its own. Turn 2 goes back to OpenAI on the passthrough, which
    // forwards the client's items as they are. No OpenAI server stored those ids, and OpenAI
    // refuses an input item id it does not know, so the conversation could not go on.
    AssistantMessage m;
    m.content << ContentBlock::makeText(QStringLiteral("looking"));
    ContentBlock call;
    call.type = BlockType::ToolCall;
    call.toolCallId = QStringLiteral("toolu_01A");
    call.toolName = QStringLiteral("shell");
    call.arguments = QJsonObject{{"cmd", "ls"}};
    m.content << call;
    EncodeInfo info;
    info.responseId = QStringLiteral("req_1v2eor000004"); // what Router::nextRequestId makes
    info.model = QStringLiteral("codex");
    info.upstreamApi = QStringLiteral("anthropic-messages");
    const QJsonArray output = json(OpenAIResponsesCodec().encodeResponse(m, info)).value("output").toArray();
    QCOMPARE(output.size(), 2);
    QStringList madeUp;
    for (const QJsonValue &item : output)
        madeUp << item.toObject().value("id").toString();
    QVERIFY2(!madeUp.contains(QString()), qPrintable(madeUp.join(',')));

    // OpenAI's own items from an earlier turn keep their ids: its reasoning is paired with them.
    QJsonArray input{
        QJsonObject{{"role", "user"}, {"content", "start"}},
        QJsonObject{
            {"type", "reasoning"}, {"id", "rs_0a1b"}, {"summary", QJsonArray()}, {"encrypted_content", "gAAAA"}},
        QJsonObject{{"type", "function_call"},
                    {"id", "fc_0a1c"},
                    {"call_id", "call_0"},
                    {"name", "shell"},
                    {"arguments", "{}"}},
        QJsonObject{{"type", "function_call_output"}, {"call_id", "call_0"}, {"output", "ok"}}};
    for (const QJsonValue &item : output)
        input.append(item);
    input.append(QJsonObject{{"type", "function_call_output"}, {"call_id", "toolu_01A"}, {"output", "a.txt"}});
    const QByteArray body = QJsonDocument(QJsonObject{{"model", "codex"}, {"store", false}, {"input", input}}).toJson();
    const BothPaths both = bothPaths(body);
    QVERIFY(!both.whole.isEmpty());
    QCOMPARE(json(both.spliced), json(both.whole));
    for (const QString &id : madeUp)
        QVERIFY2(!both.spliced.contains(id.toUtf8()), both.spliced.constData());
    const QJsonArray sent = json(both.spliced).value("input").toArray();
    QCOMPARE(sent.size(), input.size()); // every item still there, the text and the call
    QCOMPARE(sent.at(1).toObject().value("id").toString(), QStringLiteral("rs_0a1b"));
    QCOMPARE(sent.at(2).toObject().value("id").toString(), QStringLiteral("fc_0a1c"));
    QCOMPARE(sent.at(4).toObject().value("type").toString(), QStringLiteral("message"));
    QCOMPARE(sent.at(5).toObject().value("call_id").toString(), QStringLiteral("toolu_01A"));
    QVERIFY(!sent.at(5).toObject().contains("id"));
}

void TestOpenAIResponsesAdapter::reasoningFromOtherApisGoesBackOnlyToItsMaker() {
    // Turn 1 of a Codex-style client (store: false), answered in one JSON response by another
    // API; turn 2 sends that output back as input, as Codex does.
    const auto answerFrom = [](const char *api, const ContentBlock &thinking) {
        AssistantMessage m;
        m.content << thinking << ContentBlock::makeText(QStringLiteral("done"));
        EncodeInfo i;
        i.responseId = QStringLiteral("resp_req_1");
        i.model = QStringLiteral("codex");
        i.upstreamApi = QString::fromLatin1(api);
        return json(OpenAIResponsesCodec().encodeResponse(m, i)).value("output").toArray();
    };
    const auto nextTurn = [](const QJsonArray &output) {
        QJsonArray input{QJsonObject{{"role", "user"}, {"content", "go"}}};
        for (const QJsonValue &item : output)
            input.append(item);
        input.append(QJsonObject{{"role", "user"}, {"content", "and now?"}});
        const QByteArray body =
            QJsonDocument(QJsonObject{{"model", "codex"}, {"store", false}, {"input", input}}).toJson();
        auto req = OpenAIResponsesCodec().decode(body, nullptr);
        return req ? *req : ChatRequest();
    };

    // Chat's reasoning_content has no signature. Its item must still say it is foreign: an item with
    // neither tag nor encrypted_content reads as one OpenAI stored, and OpenAI answers a made-up id
    // with a 400 ("Item with id ... not found") that no failover gets past.
    ContentBlock chatThinking;
    chatThinking.type = BlockType::Thinking;
    chatThinking.text = QStringLiteral("because");
    const QJsonArray chatOutput = answerFrom("openai-completions", chatThinking);
    const QJsonObject chatItem = chatOutput.at(0).toObject();
    QCOMPARE(chatItem.value("type").toString(), QStringLiteral("reasoning"));
    QVERIFY2(chatItem.value("encrypted_content").toString().startsWith(QLatin1String("swsig1.openai-completions.")),
             qPrintable(chatItem.value("encrypted_content").toString()));
    const ChatRequest afterChat = nextTurn(chatOutput);
    QVERIFY(!afterChat.context.messages.isEmpty());
    QCOMPARE(afterChat.context.messages[1].content[0].signatureApi, QStringLiteral("openai-completions"));
    const QByteArray toResponses = OpenAIResponsesAdapter().buildRequest(afterChat, target(), {}).body;
    QVERIFY2(!toResponses.contains(chatItem.value("id").toString().toUtf8()), toResponses.constData());
    QVERIFY(!toResponses.contains("swsig1"));
    QVERIFY(toResponses.contains("\"done\""));

    // Anthropic's redacted_thinking: in the JSON answer too (the stream had it, the JSON dropped
    // it), and back to Anthropic as redacted_thinking with its data, never as a signed thinking block.
    ContentBlock redacted;
    redacted.type = BlockType::Thinking;
    redacted.redacted = true;
    redacted.signature = QStringLiteral("EmwKAhgBEgy3va3pzix");
    const QJsonArray claudeOutput = answerFrom("anthropic-messages", redacted);
    QCOMPARE(claudeOutput.at(0).toObject().value("type").toString(), QStringLiteral("reasoning"));
    const ChatRequest afterClaude = nextTurn(claudeOutput);
    Target claude = target();
    claude.api = QStringLiteral("anthropic-messages");
    claude.baseUrl = QStringLiteral("https://api.anthropic.com");
    const QJsonArray messages =
        json(AnthropicAdapter().buildRequest(afterClaude, claude, {}).body).value("messages").toArray();
    const QJsonArray turn = messages.at(1).toObject().value("content").toArray();
    QCOMPARE(turn.at(0).toObject(),
             (QJsonObject{{"type", "redacted_thinking"}, {"data", QStringLiteral("EmwKAhgBEgy3va3pzix")}}));
    // Neither reaches OpenAI.
    QVERIFY(!OpenAIResponsesAdapter().buildRequest(afterClaude, target(), {}).body.contains("EmwKAhgBEgy3va3pzix"));
}

void TestOpenAIResponsesAdapter::imagesOfParallelToolResultsFollowTheRun() {
    const QByteArray body = R"({"model":"m","max_tokens":100,"messages":[
        {"role":"user","content":"look"},
        {"role":"assistant","content":[
            {"type":"tool_use","id":"toolu_a","name":"Read","input":{}},
            {"type":"tool_use","id":"toolu_b","name":"Read","input":{}}]},
        {"role":"user","content":[
            {"type":"tool_result","tool_use_id":"toolu_a","content":[{"type":"text","text":"a"},
                {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]},
            {"type":"tool_result","tool_use_id":"toolu_b","content":"b"}]}]})";
    const auto req = AnthropicMessagesCodec().decode(body, nullptr);
    QVERIFY(req);
    const QJsonArray input =
        json(OpenAIResponsesAdapter().buildRequest(spokenIn(*req, wire::Api::AnthropicMessages), target(), {}).body)
            .value("input")
            .toArray();
    QStringList kinds;
    for (const QJsonValue &v : input)
        kinds << (v.toObject().contains("role") ? v.toObject().value("role").toString()
                                                : v.toObject().value("type").toString());
    QCOMPARE(kinds, (QStringList{"user", "function_call", "function_call", "function_call_output",
                                 "function_call_output", "user"}));
    QCOMPARE(input[5].toObject().value("content").toArray()[1].toObject().value("image_url").toString(),
             QStringLiteral("data:image/png;base64,iVBORw0KGgo="));
}

void TestOpenAIResponsesAdapter::maxOutputTokensIsAtLeastTheApisMinimum() {
    // OpenAI refuses max_output_tokens under 16 ("integer below minimum value"); Claude Code's
    // quota probe asks for 1.
    const auto req = AnthropicMessagesCodec().decode(
        R"({"model":"m","max_tokens":1,"messages":[{"role":"user","content":"quota"}]})", nullptr);
    QVERIFY(req);
    const QJsonObject sent =
        json(OpenAIResponsesAdapter().buildRequest(spokenIn(*req, wire::Api::AnthropicMessages), target(), {}).body);
    QCOMPARE(sent.value("max_output_tokens").toInt(), 16);
}

void TestOpenAIResponsesAdapter::effortNoneReachesTheApisThatSpeakIt() {
    // A client that asks a reasoning model not to think: dropped, gpt-5 thought at its default
    // (medium) and the client paid for the reasoning tokens and the wait.
    const auto fromResponses = OpenAIResponsesCodec().decode(
        R"({"model":"m","input":"hi","reasoning":{"effort":"none"},"temperature":0.2})", nullptr);
    QVERIFY(fromResponses);
    QCOMPARE(fromResponses->options.reasoning, QStringLiteral("none"));
    Target gpt51 = target(); // a model that takes effort none (gpt-5 does not: it always reasons)
    gpt51.modelId = QStringLiteral("gpt-5.1");
    Target chat = gpt51;
    chat.api = QStringLiteral("openai-completions");
    const QJsonObject toChat = json(
        OpenAICompletionsAdapter().buildRequest(spokenIn(*fromResponses, wire::Api::OpenAIResponses), chat, {}).body);
    QCOMPARE(toChat.value("reasoning_effort").toString(), QStringLiteral("none"));
    QCOMPARE(toChat.value("temperature").toDouble(), 0.2); // OpenAI takes sampling at effort none

    const auto fromChat = OpenAIChatCodec().decode(
        R"({"model":"m","reasoning_effort":"none","temperature":0.2,"messages":[{"role":"user","content":"hi"}]})",
        nullptr);
    QVERIFY(fromChat);
    const QJsonObject toResponses =
        json(OpenAIResponsesAdapter().buildRequest(spokenIn(*fromChat, wire::Api::OpenAICompletions), gpt51, {}).body);
    QCOMPARE(toResponses.value("reasoning").toObject().value("effort").toString(), QStringLiteral("none"));
    QCOMPARE(toResponses.value("temperature").toDouble(), 0.2);
    QVERIFY(!toResponses.contains("include")); // no encrypted reasoning to carry

    Target anthropic = target();
    anthropic.api = QStringLiteral("anthropic-messages");
    const QJsonObject toAnthropic =
        json(AnthropicAdapter().buildRequest(spokenIn(*fromResponses, wire::Api::OpenAIResponses), anthropic, {}).body);
    QVERIFY(!toAnthropic.contains("thinking"));
    QCOMPARE(toAnthropic.value("temperature").toDouble(), 0.2);
}

// Probe G2 2, 5 and 8: what a Claude client's thinking settings become at Chat and Responses. Each
// value OpenAI refused was a 400 that ended the request with a later candidate untried.
void TestOpenAIResponsesAdapter::anthropicThinkingGoesAsAnEffortOpenAITakes() {
    Target chat = target();
    chat.api = QStringLiteral("openai-completions");
    chat.modelId = QStringLiteral("gpt-5.1");
    Target responses = target();
    responses.modelId = QStringLiteral("gpt-5.1");
    const auto sent = [&](const QByteArray &settings) {
        const auto req = AnthropicMessagesCodec().decode(
            R"({"model":"m","max_tokens":4000,"messages":[{"role":"user","content":"hi"}],)" + settings + "}", nullptr);
        const ChatRequest converted = spokenIn(*req, wire::Api::AnthropicMessages);
        return std::pair{json(OpenAICompletionsAdapter().buildRequest(converted, chat, {}).body),
                         json(OpenAIResponsesAdapter().buildRequest(converted, responses, {}).body)};
    };
    // Anthropic's smallest budget went as "minimal", which gpt-5.1 and later, o3 and o4-mini refuse.
    const auto [smallToChat, smallToResponses] = sent(R"("thinking":{"type":"enabled","budget_tokens":1024})");
    QCOMPARE(smallToChat.value("reasoning_effort").toString(), QStringLiteral("low"));
    QCOMPARE(smallToResponses.value("reasoning").toObject().value("effort").toString(), QStringLiteral("low"));

    // Effort max (Opus 4.6+) went raw; OpenAI has no such value. As xhigh: high.
    const auto [maxToChat, maxToResponses] = sent(R"("thinking":{"type":"adaptive"},"output_config":{"effort":"max"})");
    QCOMPARE(maxToChat.value("reasoning_effort").toString(), QStringLiteral("high"));
    QCOMPARE(maxToResponses.value("reasoning").toObject().value("effort").toString(), QStringLiteral("high"));

    // An effort with thinking off governs only how much Claude writes: it turned reasoning on at
    // gpt-5.1 (whose default is none) and cost a Responses client its temperature.
    for (const QByteArray &thinking : {QByteArray(R"("thinking":{"type":"disabled"},)"), QByteArray()}) {
        const auto [offToChat, offToResponses] =
            sent(thinking + R"("output_config":{"effort":"medium"},"temperature":0.3)");
        QVERIFY2(!offToChat.contains("reasoning_effort"), thinking.constData());
        QCOMPARE(offToChat.value("temperature").toDouble(), 0.3);
        QVERIFY2(!offToResponses.contains("reasoning"), thinking.constData());
        QVERIFY(!offToResponses.contains("include"));
        QCOMPARE(offToResponses.value("temperature").toDouble(), 0.3);
    }

    // To a model the gateway does not know (vLLM's, Groq's, a deployment's own name), a word above
    // high still goes as high: such servers refuse xhigh and max with a 400 that ends the chain.
    chat.modelId = QStringLiteral("qwen3-235b-a22b");
    responses.modelId = QStringLiteral("my-reasoning-deployment");
    const auto [maxToOther, maxToOtherResponses] =
        sent(R"("thinking":{"type":"adaptive"},"output_config":{"effort":"max"})");
    QCOMPARE(maxToOther.value("reasoning_effort").toString(), QStringLiteral("high"));
    QCOMPARE(maxToOtherResponses.value("reasoning").toObject().value("effort").toString(), QStringLiteral("high"));
}

// Probe AC3 F5: each OpenAI reasoning model takes its own effort words and answers a 400 for the
// others, a request error that ends the chain. What each gets is a word it takes, the nearest.
void TestOpenAIResponsesAdapter::eachOpenAIModelGetsTheNearestEffortItTakes() {
    // The words each takes, as OpenAI's 400 lists them ("Supported values are: ...").
    const QList<std::pair<const char *, QStringList>> models{
        {"gpt-5", {"minimal", "low", "medium", "high"}},
        {"gpt-5-mini-2025-08-07", {"minimal", "low", "medium", "high"}},
        {"openai/gpt-5-nano", {"minimal", "low", "medium", "high"}},
        {"gpt-5-codex", {"low", "medium", "high"}},
        {"gpt-5-pro", {"high"}},
        {"gpt-5.1", {"none", "low", "medium", "high"}},
        {"gpt-5.1-2025-11-13", {"none", "low", "medium", "high"}},
        {"gpt-5.1-codex", {"low", "medium", "high"}},
        {"gpt-5.1-codex-mini", {"medium", "high"}},
        {"gpt-5.1-codex-max", {"low", "medium", "high", "xhigh"}},
        {"gpt-5.2", {"none", "low", "medium", "high", "xhigh"}},
        {"gpt-5.2-codex", {"low", "medium", "high", "xhigh"}},
        {"gpt-5.2-pro", {"medium", "high", "xhigh"}},
        {"o3", {"low", "medium", "high"}},
        {"o4-mini", {"low", "medium", "high"}},
    };
    const QStringList words{"none", "minimal", "low", "medium", "high", "xhigh", "max"};
    for (const auto &[id, taken] : models)
        for (const QString &word : words) {
            const QString sent = openAIEffortFor(word, QLatin1String(id));
            QVERIFY2(taken.contains(sent), qPrintable(QStringLiteral("%1 %2 -> %3").arg(id, word, sent)));
            if (taken.contains(word)) // a word the model takes goes as it is
                QCOMPARE(sent, word);
        }
    // The nearest: less thinking asked stays little, more stays much.
    QCOMPARE(openAIEffortFor(QStringLiteral("xhigh"), QStringLiteral("gpt-5.1")), QStringLiteral("high"));
    QCOMPARE(openAIEffortFor(QStringLiteral("max"), QStringLiteral("gpt-5.2")), QStringLiteral("xhigh"));
    QCOMPARE(openAIEffortFor(QStringLiteral("minimal"), QStringLiteral("gpt-5.1")), QStringLiteral("low"));
    QCOMPARE(openAIEffortFor(QStringLiteral("none"), QStringLiteral("gpt-5")), QStringLiteral("minimal"));
    QCOMPARE(openAIEffortFor(QStringLiteral("none"), QStringLiteral("o4-mini")), QStringLiteral("low"));
    QCOMPARE(openAIEffortFor(QStringLiteral("low"), QStringLiteral("gpt-5.1-codex-mini")), QStringLiteral("medium"));
    // A model the gateway does not know (a later generation, another server's, a deployment's own
    // name, a chat model) gets the client's word, and so does a word it does not know.
    for (const char *id : {"gpt-5.5", "gpt-5.10", "my-gpt5-deployment", "gpt-oss-120b", "gpt-5.1-chat-latest",
                           "magistral-medium-latest", "gpt-4.1"})
        for (const QString &word : words)
            QCOMPARE(openAIEffortFor(word, QLatin1String(id)), word);
    QCOMPARE(openAIEffortFor(QStringLiteral("turbo"), QStringLiteral("gpt-5.1")), QStringLiteral("turbo"));
    QCOMPARE(openAIEffortFor(QString(), QStringLiteral("gpt-5.1")), QString());
}

// Probe AC3 F5 B and C: a Chat client's minimal reached gpt-5.1 after gpt-5 failed, and pi's lowest
// level reached o4-mini, each refused with a 400; a converted xhigh went as high even to gpt-5.2,
// which takes it, and nothing said so. What changed is named in the answer.
void TestOpenAIResponsesAdapter::aConvertedEffortGoesAsTheAnsweringModelTakesIt() {
    const auto chat = [](const char *effort) {
        const auto req = OpenAIChatCodec().decode(R"({"model":"m","messages":[{"role":"user","content":"hi"}],)"
                                                  R"("reasoning_effort":")" +
                                                      QByteArray(effort) + R"("})",
                                                  nullptr);
        return spokenIn(*req, wire::Api::OpenAICompletions);
    };
    const auto pi =
        PiNativeCodec().decode(R"({"model":"m","context":{"messages":[{"role":"user","content":"hi","timestamp":1}]},)"
                               R"("options":{"reasoning":"minimal"}})",
                               nullptr);
    QVERIFY(pi);
    const ChatRequest fromPi = spokenIn(*pi, wire::Api::Pi);
    const auto anthropic =
        AnthropicMessagesCodec().decode(R"({"model":"m","max_tokens":4000,"messages":[{"role":"user","content":"hi"}],)"
                                        R"("thinking":{"type":"adaptive"},"output_config":{"effort":"max"}})",
                                        nullptr);
    QVERIFY(anthropic);
    const ChatRequest fromClaude = spokenIn(*anthropic, wire::Api::AnthropicMessages);
    struct Case {
        ChatRequest request;
        const char *model;
        const char *sent;
        const char *named; // "" when the effort goes as asked
    };
    const QList<Case> cases{
        {chat("minimal"), "gpt-5.1", "low", "reasoning_effort"},
        {chat("minimal"), "gpt-5", "minimal", ""},
        {chat("xhigh"), "gpt-5.2", "xhigh", ""},
        {chat("xhigh"), "gpt-5.1", "high", "reasoning_effort"},
        {chat("minimal"), "gpt-oss-120b", "minimal", ""}, // not known: as the client wrote it
        {chat("none"), "gpt-5", "minimal", "reasoning_effort"},
        {fromPi, "o4-mini", "low", "options.reasoning"},
        {fromClaude, "gpt-5.2", "xhigh", "output_config.effort"},
        {fromClaude, "gpt-5", "high", "output_config.effort"},
    };
    for (const Case &c : cases) {
        const QString label = QStringLiteral("%1 to %2").arg(c.request.options.reasoning, c.model);
        Target responses = target();
        responses.modelId = QLatin1String(c.model);
        Target completions = responses;
        completions.api = QStringLiteral("openai-completions");
        const QJsonObject toResponses = json(OpenAIResponsesAdapter().buildRequest(c.request, responses, {}).body);
        const QJsonObject toChat = json(OpenAICompletionsAdapter().buildRequest(c.request, completions, {}).body);
        QVERIFY2(toResponses.value("reasoning").toObject().value("effort").toString() == QLatin1String(c.sent),
                 qPrintable(label));
        QVERIFY2(toChat.value("reasoning_effort").toString() == QLatin1String(c.sent), qPrintable(label));
        for (const QStringList &dropped : {OpenAIResponsesAdapter().droppedFor(c.request, responses),
                                           OpenAICompletionsAdapter().droppedFor(c.request, completions)})
            QVERIFY2(*c.named ? dropped.contains(QLatin1String(c.named)) : dropped.isEmpty(),
                     qPrintable(label + QStringLiteral(": ") + dropped.join(QLatin1Char(','))));
    }
    // A model configured not to reason is asked no effort, so none is named.
    Target quiet = target();
    quiet.modelId = QStringLiteral("gpt-5.1");
    quiet.modelReasons = false;
    QVERIFY(OpenAIResponsesAdapter().droppedFor(chat("xhigh"), quiet).isEmpty());
}

// Probe AC3 F5 A: Codex's xhigh, written for gpt-5.2, went to gpt-5.1 after a failover as it was, and
// gpt-5.1's 400 ended the request. The client's bytes go with only the effort changed, and named.
void TestOpenAIResponsesAdapter::aPassthroughEffortIsChangedInTheClientsBytes() {
    const QByteArray body = R"({"model":"codex", "input":"refactor this", "reasoning":{ "effort" : "xhigh",)"
                            R"( "summary":"auto"},"store":false,"include":["reasoning.encrypted_content"]})";
    const auto req = OpenAIResponsesCodec().decode(body, nullptr);
    QVERIFY(req);
    Target t = target();
    t.modelId = QStringLiteral("gpt-5.1");
    const QByteArray sent = OpenAIResponsesAdapter().buildRequest(*req, t, {}).body;
    QCOMPARE(sent, QByteArray(R"({"model":"gpt-5.1", "input":"refactor this", "reasoning":{ "effort" : "high",)"
                              R"( "summary":"auto"},"store":false,"include":["reasoning.encrypted_content"],)"
                              R"("stream":true})"));
    QCOMPARE(OpenAIResponsesAdapter().droppedFor(*req, t), QStringList{QStringLiteral("reasoning.effort")});
    // Written whole (a body the splice declines), the same.
    ChatRequest whole = *req;
    whole.rawBody.clear();
    QCOMPARE(json(OpenAIResponsesAdapter().buildRequest(whole, t, {}).body), json(sent));
    // gpt-5.2 takes xhigh, and a model the gateway does not know gets it as the client wrote it.
    for (const char *id : {"gpt-5.2", "gpt-5.5"}) {
        t.modelId = QLatin1String(id);
        const QJsonObject asked = json(OpenAIResponsesAdapter().buildRequest(*req, t, {}).body);
        QCOMPARE(asked.value("reasoning").toObject().value("effort").toString(), QStringLiteral("xhigh"));
        QVERIFY(OpenAIResponsesAdapter().droppedFor(*req, t).isEmpty());
    }
}

void TestOpenAIResponsesAdapter::convertsAnthropicConversation() {
    const QByteArray body = R"({"model":"m","max_tokens":1000,"system":"Be brief.","stop_sequences":["END"],
      "thinking":{"type":"enabled","budget_tokens":3000},
      "tools":[{"name":"get_weather","input_schema":{"type":"object"}}],
      "messages":[
        {"role":"user","content":[{"type":"text","text":"Weather?"},
          {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]},
        {"role":"assistant","content":[{"type":"thinking","thinking":"Look it up.","signature":"sig-abc"},
          {"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"location":"Paris"}}]},
        {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"sunny"}]}]})";
    const auto req = AnthropicMessagesCodec().decode(body, nullptr);
    QVERIFY(req);
    const HttpRequest http = OpenAIResponsesAdapter().buildRequest(spokenIn(*req, wire::Api::AnthropicMessages),
                                                                   target(), {{"anthropic-beta", "x"}});
    const QJsonObject sent = json(http.body);
    QCOMPARE(sent.value("instructions").toString(), QStringLiteral("Be brief."));
    QCOMPARE(sent.value("max_output_tokens").toInt(), 1000);
    QCOMPARE(sent.value("reasoning").toObject().value("effort").toString(), QStringLiteral("low")); // 3000 tokens
    QCOMPARE(sent.value("store").toBool(true), false);
    QVERIFY(!sent.contains("stop")); // no Responses field for stop sequences
    QVERIFY(headerValue(http.headers, "anthropic-beta").isEmpty());
    const QJsonArray input = sent.value("input").toArray();
    QCOMPARE(input.size(), 3);
    QCOMPARE(input[0].toObject().value("content").toArray()[1].toObject().value("image_url").toString(),
             QStringLiteral("data:image/png;base64,iVBORw0KGgo="));
    // Anthropic thinking has no Responses form and is never replayed as text: text and signature are dropped.
    QVERIFY(!QJsonDocument(sent).toJson().contains("sig-abc"));
    QVERIFY(!QJsonDocument(sent).toJson().contains("Look it up."));
    QCOMPARE(input[1].toObject().value("type").toString(), QStringLiteral("function_call"));
    QCOMPARE(input[1].toObject().value("call_id").toString(), QStringLiteral("toolu_01"));
    QCOMPARE(input[1].toObject().value("arguments").toString(), QStringLiteral("{\"location\":\"Paris\"}"));
    QCOMPARE(input[2].toObject().value("type").toString(), QStringLiteral("function_call_output"));
    QCOMPARE(input[2].toObject().value("output").toString(), QStringLiteral("sunny"));
    QCOMPARE(sent.value("tools").toArray()[0].toObject().value("name").toString(), QStringLiteral("get_weather"));
}

void TestOpenAIResponsesAdapter::decodesFullTranscript() {
    const auto events = decode(readTestData(QStringLiteral("responses_upstream_full.sse")));
    EventAccumulator acc;
    acc.addAll(events);
    QVERIFY(acc.isFinished());
    const AssistantMessage &m = acc.message();
    QCOMPARE(m.stopReason, StopReason::ToolUse);
    QCOMPARE(m.content.size(), 3);
    QCOMPARE(m.content[0].type, BlockType::Thinking);
    QCOMPARE(m.content[0].text, QStringLiteral("Need the weather."));
    QCOMPARE(json(m.content[0].signature.toUtf8()).value("encrypted_content").toString(),
             QStringLiteral("gAAAAB-opaque"));
    QCOMPARE(m.content[1].text, QStringLiteral("Checking now."));
    QCOMPARE(m.content[2].toolCallId, QStringLiteral("call_abc"));
    QCOMPARE(m.content[2].arguments.value("location").toString(), QStringLiteral("Paris"));
    QCOMPARE(m.usage.input, 472);
    QCOMPARE(m.usage.cacheRead, 2048);
    QCOMPARE(m.usage.output, 89);
    // The first meaningful event is the reasoning delta, not the item announcements.
    int firstMeaningful = -1;
    for (int i = 0; i < events.size() && firstMeaningful < 0; ++i)
        if (events[i].isMeaningful())
            firstMeaningful = i;
    QCOMPARE(events[firstMeaningful].type, EventType::ThinkingDelta);
}

void TestOpenAIResponsesAdapter::errorThenFailedIsOneErrorEvent() {
    const auto events = decode(readTestData(QStringLiteral("responses_upstream_failed.sse")));
    int errors = 0;
    for (const auto &e : events)
        errors += e.type == EventType::Error;
    QCOMPARE(errors, 1);
    QCOMPARE(events.last().type, EventType::Error);
    QCOMPARE(events.last().errorStatus, std::optional<int>(500));
    QVERIFY(events.last().errorMessage.contains(QStringLiteral("server had an error")));
    // The body ends after the error event, before response.failed: still one error, typed as the
    // upstream's own (the loop reads an untyped error at the end as a connection cut short).
    const QByteArray failed = readTestData(QStringLiteral("responses_upstream_failed.sse"));
    const auto cut = decode(failed.left(failed.indexOf("event: response.failed")));
    QCOMPARE(cut.last().type, EventType::Error);
    QCOMPARE(cut.last().errorType, QStringLiteral("server_error"));
    QCOMPARE(cut.last().errorStatus, std::optional<int>(500));
}

void TestOpenAIResponsesAdapter::streamCutShortIsAnError() {
    QByteArray full = readTestData(QStringLiteral("responses_upstream_full.sse"));
    const auto events = decode(full.left(full.indexOf("event: response.completed")));
    QCOMPARE(events.last().type, EventType::Error);
    QVERIFY(events.last().errorMessage.contains(QStringLiteral("before completion")));
}

void TestOpenAIResponsesAdapter::parsesErrorBody() {
    const auto info = OpenAIResponsesAdapter().parseError(
        429,
        R"({"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}})");
    QCOMPARE(info.message, QStringLiteral("Rate limit reached"));
    QCOMPARE(info.errorType, QStringLiteral("rate_limit_exceeded"));
}

void TestOpenAIResponsesAdapter::interleavedFunctionCallsAssembleByOutputIndex() {
    auto decoder = OpenAIResponsesAdapter().makeDecoder(target());
    const QList<StreamEvent> events =
        sw::test::decodeTranscript(*decoder, readTestData(QStringLiteral("responses_upstream_interleaved_tools.sse")));
    QVERIFY2(interleaving(events).isEmpty(), qPrintable(interleaving(events)));
    EventAccumulator acc;
    acc.addAll(events);
    const AssistantMessage &m = acc.message();
    QCOMPARE(m.stopReason, StopReason::ToolUse);
    QCOMPARE(m.content.size(), 2);
    QCOMPARE(m.content[0].toolCallId, QStringLiteral("call_a"));
    QCOMPARE(m.content[0].arguments, QJsonObject({{"location", "Paris"}}));
    QCOMPARE(m.content[1].toolCallId, QStringLiteral("call_b"));
    QCOMPARE(m.content[1].arguments, QJsonObject({{"zone", "CET"}}));
}

void TestOpenAIResponsesAdapter::thePromptCacheKeyCrossesOver() {
    // Chat's prompt_cache_key is the same field on Responses, and pi-ai sends a pi session's id as
    // it unless told not to cache: requests of one conversation land where their prefix is cached.
    const auto sent = [](wire::Api inbound, const QByteArray &body) {
        sw::model::GatewayError error;
        const auto req =
            inbound == wire::Api::Pi ? PiNativeCodec().decode(body, &error) : OpenAIChatCodec().decode(body, &error);
        return req ? json(OpenAIResponsesAdapter().buildRequest(spokenIn(*req, inbound), target(), {}).body)
                   : QJsonObject{};
    };
    const QByteArray chat = R"({"model":"m","prompt_cache_key":"conv-7","messages":[{"role":"user","content":"hi"}]})";
    QCOMPARE(sent(wire::Api::OpenAICompletions, chat).value("prompt_cache_key").toString(), QStringLiteral("conv-7"));
    const QByteArray pi =
        R"({"model":"m","options":{"sessionId":"sess-1"%1},"context":{"messages":[{"role":"user","content":"hi","timestamp":0}]}})";
    QCOMPARE(sent(wire::Api::Pi, QByteArray(pi).replace("%1", "")).value("prompt_cache_key").toString(),
             QStringLiteral("sess-1"));
    QVERIFY(
        !sent(wire::Api::Pi, QByteArray(pi).replace("%1", R"(,"cacheRetention":"none")")).contains("prompt_cache_key"));
    QVERIFY(!sent(wire::Api::OpenAICompletions, R"({"model":"m","messages":[{"role":"user","content":"hi"}]})")
                 .contains("prompt_cache_key"));
}

void TestOpenAIResponsesAdapter::aStreamThatKeepsNoArgumentsSaysEachCallOnce() {
    // For a streaming Anthropic or Chat client the builder keeps no arguments. The item's done
    // event repeats them whole, and was appended when nothing had been kept: every call went out
    // twice. What was said, not what was kept, decides.
    for (const char *file : {"responses_upstream_interleaved_tools.sse", "responses_upstream_custom_tool.sse"}) {
        auto keeping = OpenAIResponsesAdapter().makeDecoder(target());
        auto streaming = OpenAIResponsesAdapter().makeDecoder(target());
        streaming->setKeepsText(false);
        const QByteArray sse = readTestData(QString::fromLatin1(file));
        const QList<StreamEvent> kept = sw::test::decodeTranscript(*keeping, sse);
        const QList<StreamEvent> said = sw::test::decodeTranscript(*streaming, sse);
        QMap<int, QString> deltas;
        int calls = 0;
        for (const StreamEvent &e : said)
            if (e.type == EventType::ToolCallDelta)
                deltas[e.contentIndex] += e.delta;
        for (const StreamEvent &e : kept)
            if (e.type == EventType::ToolCallEnd) {
                ++calls;
                QCOMPARE(deltas.value(e.contentIndex), e.block.argumentsJson);
            }
        QVERIFY(calls > 0);
        for (const StreamEvent &e : said)
            if (e.type == EventType::ToolCallEnd)
                QVERIFY(e.block.argumentsJson.isEmpty());
    }
}

void TestOpenAIResponsesAdapter::customToolCallItemsAreToolCalls() {
    // Codex passthrough: GPT-5 answers apply_patch as a custom_tool_call. Its input deltas
    // are the answer's content (the gateway commits on them and counts them), and the
    // canonical call carries {"input": patch}.
    auto decoder = OpenAIResponsesAdapter().makeDecoder(target());
    const QList<StreamEvent> events =
        sw::test::decodeTranscript(*decoder, readTestData(QStringLiteral("responses_upstream_custom_tool.sse")));
    EventAccumulator acc;
    acc.addAll(events);
    const AssistantMessage m = acc.message();
    QCOMPARE(m.content.size(), 2);
    const ContentBlock call = m.content[1];
    QCOMPARE(call.type, BlockType::ToolCall);
    QVERIFY(call.custom);
    QCOMPARE(call.toolName, QStringLiteral("apply_patch"));
    QCOMPARE(call.toolCallId, QStringLiteral("call_Xq4mR7vB2nL9sK3tP8wZ1yH6"));
    QCOMPARE(
        call.arguments.value(QStringLiteral("input")).toString(),
        QStringLiteral("*** Begin Patch\n*** Update File: src/main.c\n@@ int main(void) {\n-    return 1;\n+    return "
                       "0;\n }\n*** End Patch\n"));
    int meaningfulCallDeltas = 0;
    for (const StreamEvent &e : events)
        meaningfulCallDeltas += e.type == EventType::ToolCallDelta && e.isMeaningful();
    QVERIFY2(meaningfulCallDeltas >= 7, qPrintable(QString::number(meaningfulCallDeltas))); // one per streamed line
    QCOMPARE(m.stopReason, StopReason::ToolUse);
    QCOMPARE(m.native.value(QStringLiteral("output")).toArray()[1].toObject().value(QStringLiteral("type")).toString(),
             QStringLiteral("custom_tool_call"));
}

void TestOpenAIResponsesAdapter::textNotStreamedIsTheFinishedItems_data() {
    // Probe AC1-F2: a server that sends no output_text.delta, only the finished item or the whole
    // response (LiteLLM's fake stream for a model that cannot stream: response.completed alone),
    // gave Chat, Messages and pi clients an empty answer that finished normally. The text is the
    // finished item's, said once, and never a second time when it did stream.
    QTest::addColumn<QByteArrayList>("frames"); // the data of each SSE event
    QTest::addColumn<QString>("text");          // the text deltas a streaming client is sent, joined
    QTest::addColumn<int>("blocks");            // content blocks of the answer
    QTest::addColumn<StopReason>("reason");

    const QByteArray message =
        R"({"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"The answer is 42.","annotations":[]}]})";
    const QByteArray started = R"({"type":"response.created","response":{"id":"resp_1","output":[]}})";
    const QByteArray added =
        R"({"type":"response.output_item.added","output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","content":[]}})";
    const QByteArray partAdded =
        R"({"type":"response.content_part.added","output_index":0,"item_id":"msg_1","content_index":0,"part":{"type":"output_text","text":""}})";
    const QByteArray partDone =
        R"({"type":"response.content_part.done","output_index":0,"item_id":"msg_1","content_index":0,"part":{"type":"output_text","text":"The answer is 42."}})";
    const QByteArray done = R"({"type":"response.output_item.done","output_index":0,"item":)" + message + "}";
    const auto completed = [](const QByteArray &output) {
        return R"({"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[)" + output +
               R"(],"usage":{"input_tokens":5,"output_tokens":7}}})";
    };
    const auto delta = [](const char *index, const char *piece) {
        return QByteArray(R"({"type":"response.output_text.delta",)") + index + R"("item_id":"msg_1","delta":")" +
               piece + R"("})";
    };
    const QString answer = QStringLiteral("The answer is 42.");

    QTest::addRow("response.completed alone") << QByteArrayList{completed(message)} << answer << 1 << StopReason::Stop;
    QTest::addRow("the item added and done, no delta")
        << QByteArrayList{started, added, done, completed(message)} << answer << 1 << StopReason::Stop;
    QTest::addRow("the part added and done, no delta")
        << QByteArrayList{started, added, partAdded, partDone, done, completed(message)} << answer << 1
        << StopReason::Stop;
    QTest::addRow("the part added, no delta, the item done")
        << QByteArrayList{started, added, partAdded, done, completed(message)} << answer << 1 << StopReason::Stop;
    QTest::addRow("streamed: said once") << QByteArrayList{started,
                                                           added,
                                                           partAdded,
                                                           delta(R"("output_index":0,)", "The answer"),
                                                           delta(R"("output_index":0,)", " is 42."),
                                                           partDone,
                                                           done,
                                                           completed(message)}
                                         << answer << 1 << StopReason::Stop;
    QTest::addRow("streamed with no output_index: said once")
        << QByteArrayList{delta("", "The answer"), delta("", " is 42."), completed(message)} << answer << 1
        << StopReason::Stop;
    QTest::addRow("a refusal in response.completed alone")
        << QByteArrayList{completed(
               R"({"id":"msg_1","type":"message","role":"assistant","content":[{"type":"refusal","refusal":"I cannot help with that."}]})")}
        << QStringLiteral("I cannot help with that.") << 1 << StopReason::Refusal;
    QTest::addRow("reasoning, then a call, in response.completed alone")
        << QByteArrayList{completed(
               R"({"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Need the weather."}]},{"id":"fc_1","type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{}"})")}
        << QString() << 2 << StopReason::ToolUse;
    QTest::addRow("a streamed item, then one only in response.completed")
        << QByteArrayList{started, added, delta(R"("output_index":0,)", "The answer is 42."), done,
                          completed(
                              message +
                              R"(,{"id":"msg_2","type":"message","role":"assistant","content":[{"type":"output_text","text":" Indeed."}]})")}
        << QStringLiteral("The answer is 42. Indeed.") << 2 << StopReason::Stop;
    // A server whose events name the item by index alone, and whose response.completed lists an item
    // it never streamed before the one it did: which streamed cannot be told, so none is read again.
    QTest::addRow("streamed by index alone, completed with another item first")
        << QByteArrayList{R"({"type":"response.output_text.delta","output_index":0,"delta":"The answer is 42."})",
                          completed(R"({"id":"rs_1","type":"reasoning","summary":[]},)" + message)}
        << answer << 1 << StopReason::Stop;
}

void TestOpenAIResponsesAdapter::textNotStreamedIsTheFinishedItems() {
    QFETCH(QByteArrayList, frames);
    QFETCH(QString, text);
    QFETCH(int, blocks);
    QFETCH(StopReason, reason);
    // A JSON client's answer (text kept) and a streaming one's (each delta sent, none kept).
    for (const bool keepsText : {true, false}) {
        auto decoder = OpenAIResponsesAdapter().makeDecoder(target());
        decoder->setKeepsText(keepsText);
        QList<StreamEvent> events;
        for (const QByteArray &frame : frames)
            events << decoder->feed(SseEvent{{}, frame});
        events << decoder->finish();
        QString said;
        for (const StreamEvent &e : events)
            if (e.type == EventType::TextDelta)
                said += e.delta;
        QCOMPARE(said, text);
        EventAccumulator acc;
        acc.addAll(events);
        QVERIFY(acc.isFinished());
        QCOMPARE(acc.message().content.size(), blocks);
        QCOMPARE(acc.message().stopReason, reason);
        QString kept;
        for (const ContentBlock &b : acc.message().content)
            kept += b.type == BlockType::Text ? b.text : QString();
        if (keepsText)
            QCOMPARE(kept, text);
    }
}

// Probe G2 4: an Anthropic (or Chat, or pi) client's temperature with no thinking asked went to gpt-5,
// which answered 400 "Unsupported parameter: 'temperature' is not supported with this model." and
// ended the chain. A model that always reasons goes without the client's sampling, converted or
// passed through, and the answer names it; gpt-5.1 (default effort none) keeps it.
void TestOpenAIResponsesAdapter::aModelThatAlwaysReasonsGetsNoSampling() {
    const auto req = AnthropicMessagesCodec().decode(
        R"({"model":"claude","max_tokens":1000,"temperature":0.7,"messages":[{"role":"user","content":"hi"}]})",
        nullptr);
    QVERIFY(req);
    const ChatRequest converted = spokenIn(*req, wire::Api::AnthropicMessages);
    Target t = target(); // gpt-5
    const QJsonObject sent = json(OpenAIResponsesAdapter().buildRequest(converted, t, {}).body);
    QVERIFY(!sent.contains("temperature"));
    QVERIFY(!sent.contains("reasoning")); // none asked: the model's own default
    QCOMPARE(sent.value("max_output_tokens").toInt(), 1000);
    QCOMPARE(OpenAIResponsesAdapter().droppedFor(converted, t), QStringList{"temperature"});

    const auto pi =
        PiNativeCodec().decode(R"({"model":"m","context":{"messages":[{"role":"user","content":"hi","timestamp":1}]},)"
                               R"("options":{"temperature":0.2}})",
                               nullptr);
    QVERIFY(pi);
    const ChatRequest fromPi = spokenIn(*pi, wire::Api::Pi);
    t.modelId = QStringLiteral("o3");
    QVERIFY(!json(OpenAIResponsesAdapter().buildRequest(fromPi, t, {}).body).contains("temperature"));
    QCOMPARE(OpenAIResponsesAdapter().droppedFor(fromPi, t), QStringList{"options.temperature"});

    // A Responses client's own body to gpt-5 (after gpt-4.1, which took it, failed over): the same.
    const QByteArray own = R"({"model":"m","input":"hi","temperature":0.2,"top_p":0.5,"user":"u1"})";
    const auto responses = OpenAIResponsesCodec().decode(own, nullptr);
    QVERIFY(responses);
    t.modelId = QStringLiteral("gpt-5");
    const QJsonObject passed = json(OpenAIResponsesAdapter().buildRequest(*responses, t, {}).body);
    QVERIFY(!passed.contains("temperature"));
    QVERIFY(!passed.contains("top_p"));
    QCOMPARE(passed.value("user").toString(), QStringLiteral("u1"));
    QCOMPARE(OpenAIResponsesAdapter().droppedFor(*responses, t), QStringList({"temperature", "top_p"}));

    t.modelId = QStringLiteral("gpt-5.1");
    QCOMPARE(json(OpenAIResponsesAdapter().buildRequest(converted, t, {}).body).value("temperature").toDouble(), 0.7);
    QVERIFY(OpenAIResponsesAdapter().droppedFor(converted, t).isEmpty());
    const QByteArray asSent = OpenAIResponsesAdapter().buildRequest(*responses, t, {}).body;
    QVERIFY(asSent.startsWith(R"({"model":"gpt-5.1","input":"hi","temperature":0.2,)")); // spliced as sent
    QVERIFY(OpenAIResponsesAdapter().droppedFor(*responses, t).isEmpty());
}

// A converted request to a model configured `"reasoning": false` (gpt-4.1) goes without
// `reasoning` (and its encrypted-content include), which it refuses with a 400; the client's
// sampling then goes as asked. Unknown and true send it as before; a Responses client's own
// body is never changed.
void TestOpenAIResponsesAdapter::modelConfiguredNotToReasonGetsNoReasoning() {
    const auto req = AnthropicMessagesCodec().decode("{\"model\":\"claude\",\"max_tokens\":8000,\"temperature\":0.5,"
                                                     "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":4000},"
                                                     "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
                                                     nullptr);
    QVERIFY(req);
    const ChatRequest converted = spokenIn(*req, wire::Api::AnthropicMessages);
    Target t = target();
    t.modelId = QStringLiteral("gpt-4.1");
    const QJsonObject reasons = json(OpenAIResponsesAdapter().buildRequest(converted, t, {}).body);
    QCOMPARE(reasons.value(QStringLiteral("reasoning")).toObject().value(QStringLiteral("effort")).toString(),
             QStringLiteral("low"));

    t.modelReasons = false;
    const QJsonObject body = json(OpenAIResponsesAdapter().buildRequest(converted, t, {}).body);
    QVERIFY(!body.contains(QStringLiteral("reasoning")));
    QVERIFY(!body.contains(QStringLiteral("include")));
    QCOMPARE(body.value(QStringLiteral("temperature")).toDouble(), 0.5);
    QCOMPARE(body.value(QStringLiteral("max_output_tokens")).toInt(), 8000);
    // "none" is a reasoning setting too.
    const auto off = OpenAIChatCodec().decode(
        "{\"model\":\"m\",\"reasoning_effort\":\"none\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
        nullptr);
    QVERIFY(off);
    QVERIFY(!json(OpenAIResponsesAdapter().buildRequest(spokenIn(*off, wire::Api::OpenAICompletions), t, {}).body)
                 .contains(QStringLiteral("reasoning")));

    // A Responses client's own body goes as it sent it.
    const auto same = OpenAIResponsesCodec().decode(
        "{\"model\":\"m\",\"input\":\"hi\",\"reasoning\":{\"effort\":\"high\"}}", nullptr);
    QVERIFY(same);
    QCOMPARE(json(OpenAIResponsesAdapter().buildRequest(spokenIn(*same, wire::Api::OpenAIResponses), t, {}).body)
                 .value(QStringLiteral("reasoning"))
                 .toObject()
                 .value(QStringLiteral("effort"))
                 .toString(),
             QStringLiteral("high"));
}

// A model that writes at most N tokens: max_output_tokens goes down to N, in the client's own bytes
// (the rest spliced as it was) and in a converted body.
void TestOpenAIResponsesAdapter::aModelsOutputCapLowersTheRequestsMax() {
    Target t = target();
    t.maxOutputTokens = 32000;
    const auto own = OpenAIResponsesCodec().decode(
        "{\"model\":\"m\",\"max_output_tokens\":128000,\"x_extra\":1,\"input\":\"hi\"}", nullptr);
    QVERIFY(own);
    const QByteArray spliced =
        OpenAIResponsesAdapter().buildRequest(spokenIn(*own, wire::Api::OpenAIResponses), t, {}).body;
    QCOMPARE(json(spliced).value(QStringLiteral("max_output_tokens")).toInt(), 32000);
    QVERIFY(spliced.contains("\"x_extra\":1"));
    const auto anthropic = AnthropicMessagesCodec().decode(
        "{\"model\":\"m\",\"max_tokens\":64000,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", nullptr);
    QVERIFY(anthropic);
    QCOMPARE(json(OpenAIResponsesAdapter().buildRequest(spokenIn(*anthropic, wire::Api::AnthropicMessages), t, {}).body)
                 .value(QStringLiteral("max_output_tokens"))
                 .toInt(),
             32000);
}

// As on Chat: Responses' strict mode refuses an optional property (and a function tool is strict
// unless it says otherwise), so such a schema goes with strict: false, as it is.
void TestOpenAIResponsesAdapter::anotherApisStrictSchemaIsStrictOnlyWhereStrictModeTakesIt() {
    for (const bool noteRequired : {false, true}) {
        const auto req = AnthropicMessagesCodec().decode(sw::test::anthropicStrictSchemas(noteRequired), nullptr);
        QVERIFY(req);
        const QJsonObject sent = json(
            OpenAIResponsesAdapter().buildRequest(spokenIn(*req, wire::Api::AnthropicMessages), target(), {}).body);
        const QJsonObject format = sent.value("text").toObject().value("format").toObject();
        const QJsonObject tool = sent.value("tools").toArray()[0].toObject();
        QCOMPARE(format.value("strict"), QJsonValue(noteRequired));
        QCOMPARE(tool.value("strict"), QJsonValue(noteRequired));
        QCOMPARE(format.value("schema").toObject().value("required").toArray().size(), noteRequired ? 2 : 1);
        QCOMPARE(tool.value("parameters"), format.value("schema"));
    }
}

QTEST_GUILESS_MAIN(TestOpenAIResponsesAdapter)
#include "test_openai_responses_adapter.moc"
