#include "core/formats/anthropic_messages_codec.h"
#include "core/formats/inbound_codec.h"
#include "core/formats/openai_chat_codec.h"
#include "core/formats/openai_responses_codec.h"
#include "core/formats/pi_native_codec.h"
#include "core/model/event_accumulator.h"
#include "core/upstream/anthropic_schema.h"
#include "core/upstream/google_adapter.h"
#include "core/upstream/openai_completions_adapter.h"
#include "core/upstream/openai_completions_stream_decoder.h"
#include "core/upstream/openai_schema.h"
#include "core/wire/client_body.h"
#include "core/wire/json.h"
#include "core/wire/json_writer.h"
#include "core/wire/rapid_json.h"
#include "core/wire/tool_call_id.h"
#include "core/wire/tool_id_pairing.h"
#include "wire_fixtures.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QtTest>

using namespace sw::model;
using namespace sw::formats;
using namespace sw::upstream;
using sw::test::readTestData;
namespace wire = sw::wire;
namespace model = sw::model;
using sw::test::spokenIn;

namespace {
Target target(const QString &baseUrl = QStringLiteral("https://openrouter.ai/api/v1")) {
    Target t;
    t.provider = QStringLiteral("openrouter");
    t.modelId = QStringLiteral("deepseek/deepseek-r1");
    t.api = QStringLiteral("openai-completions");
    t.baseUrl = baseUrl;
    t.credential = "sk-or-v1-secret";
    return t;
}
QJsonObject json(const QByteArray &b) {
    return QJsonDocument::fromJson(b).object();
}
QString str(const QJsonValue &v) {
    return v.toString();
}
// The role of each message, in order.
QStringList rolesOf(const QJsonArray &messages) {
    QStringList roles;
    for (const QJsonValue &m : messages)
        roles << str(m.toObject().value(QStringLiteral("role")));
    return roles;
}
QList<StreamEvent> decode(const QByteArray &sse) {
    auto decoder = OpenAICompletionsAdapter().makeDecoder(target());
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

class TestOpenAICompletionsAdapter : public QObject {
    Q_OBJECT
private slots:
    void modelConfiguredNotToReasonGetsNoReasoningEffort();
    void aLongToolDescriptionIsCutForOpenAI();
    void aToolDescriptionIsCutAtASentenceNeverInACharacter();
    void reasoningUsesMaxCompletionTokens();
    void aModelThatAlwaysReasonsGetsNoSampling();
    void samplingLeftOutForReasoningIsNamed();
    void groqGoesWithoutWhatItRefuses();
    void openAIsOwnMembersGoOnlyToOpenAI();
    void openAIsOwnMembersLeaveByTheSplice();
    void aPassthroughEffortGoesAsTheAnsweringModelTakesIt();
    void interleavedToolCallDeltasAssembleByIndex();
    void passthroughKeepsEveryClientField();
    void passthroughSplicesTheClientBytes();
    void anEmptyAssistantTurnIsLeftOut();
    void reasoningContentGoesOnlyToAServerThatAsksForItBack();
    void openRoutersSignedReasoningGoesBackOnlyToOpenRouter();
    void googlesCallSignatureGoesBackOnlyToGooglesChatEndpoint();
    void googlesChatEndpointSignsItsCallsForEveryClient();
    void aSameApiHistorysOverLongCallIdsGoBounded();
    void repeatedCallIdsGoUniqueEachResultWithItsCall_data();
    void repeatedCallIdsGoUniqueEachResultWithItsCall();
    void repeatedCallIdsOfOneAnswerReachTheClientUnique();
    void aConvertedToolTurnCarriesOnlyItsOwnReasoningBack();
    void aNineCharToolIdIsMadeFromTheIdAlone();
    void aMistralTargetGetsEveryToolIdAsNineAlphanumerics();
    void aSameApiHistoryGoesToMistralWithNineCharIds();
    void mistralsApiGetsNoMemberItRefuses();
    void aUserTurnAfterToolTurnsGetsAnAssistantTurnBeforeItForMistral();
    void mistralsContentChunksAreRead();
    void crossFormatFromClaudeCode();
    void imagesOfParallelToolResultsFollowTheRun();
    void documentsOfToolResults();
    void maxTokensFieldDependsOnHost();
    void decodesFullTranscript();
    void inBandErrorChunkBecomesErrorEvent();
    void streamCutShortIsAnError();
    void finishReasonWithoutDoneIsClean();
    void contentFilterIsARefusal();
    void finishReasonErrorIsAFailure();
    void aSchemaOfManyPropertiesIsJudgedInOnePass();
    void otherChoicesAreNotMergedIntoTheFirst();
    void toolCallIdsFitOpenAIsLimit();
    void aToolCallNamedWithControlCharactersFails();
    void alternativeReasoningFieldNames();
    void parsesErrorBodies();
    void usageOnlyChunkIsRecognised();
    void sameApiExtrasRideOnDone();
    void usageIsWrittenAsTheUpstreamSentIt_data();
    void usageIsWrittenAsTheUpstreamSentIt();
    void resultsComeBeforeWordsTypedWhileTheToolRan();
    void aModelsOutputCapLowersTheRequestsMax();
    void anotherApisStrictSchemaIsStrictOnlyWhereStrictModeTakesIt();
    void aServerIsKnownByItsHostAlone();
    void aResponsesClientsVerbosityGoesToTheServersThatTakeIt();
};

// The host checks (read without a QUrl parse, several a request) name the host the URL connects to,
// never a look-alike in its path, query, user info or a longer name.
void TestOpenAICompletionsAdapter::aServerIsKnownByItsHostAlone() {
    for (const char *url : {"https://api.openai.com/v1", "https://API.OpenAI.com:443/v1/", "https://api.openai.com",
                            "https://user:secret@api.openai.com/v1", "https://api.openai.com./v1"})
        QVERIFY2(OpenAICompletionsAdapter::isOpenAI(QLatin1String(url)), url);
    for (const char *url : {"https://api.openai.com.evil.test/v1", "https://evil.test/api.openai.com/v1",
                            "https://evil.test?api.openai.com", "https://api.openai.com@evil.test/v1",
                            "https://evil.test#api.openai.com", "http://[::1]:8080/v1", ""})
        QVERIFY2(!OpenAICompletionsAdapter::isOpenAI(QLatin1String(url)), url);
    QVERIFY(OpenAICompletionsAdapter::isGroq(QStringLiteral("https://api.groq.com/openai/v1")));
    QVERIFY(!OpenAICompletionsAdapter::isGroq(QStringLiteral("http://127.0.0.1:1/openai/v1")));
}

// Probe L1 3: Codex's text.verbosity was dropped on its way to a Chat server. OpenAI's and
// OpenRouter's take the same setting as `verbosity`; another server may refuse a member it does not
// know, so it goes there without (a documented drop).
void TestOpenAICompletionsAdapter::aResponsesClientsVerbosityGoesToTheServersThatTakeIt() {
    const auto req = OpenAIResponsesCodec().decode(
        R"({"model":"m","input":"hi","text":{"verbosity":"high","format":{"type":"text"}}})", nullptr);
    QVERIFY(req);
    const auto sent = [&](const char *baseUrl) {
        return json(OpenAICompletionsAdapter()
                        .buildRequest(spokenIn(*req, wire::Api::OpenAIResponses), target(QLatin1String(baseUrl)), {})
                        .body);
    };
    QCOMPARE(sent("https://api.openai.com/v1").value("verbosity").toString(), QStringLiteral("high"));
    QCOMPARE(sent("https://openrouter.ai/api/v1").value("verbosity").toString(), QStringLiteral("high"));
    QVERIFY(!sent("http://127.0.0.1:11434/v1").contains("verbosity"));
    QVERIFY(!sent("https://api.groq.com/openai/v1").contains("verbosity"));
}

void TestOpenAICompletionsAdapter::passthroughKeepsEveryClientField() {
    QByteArray clientBody = readTestData(QStringLiteral("openai_chat_request_sdk.json"));
    clientBody.replace("\"stream_options\": {\"include_usage\": true}",
                       "\"stream_options\": {\"include_usage\": false, \"x\": 1}");
    const auto req = OpenAIChatCodec().decode(clientBody, nullptr);
    QVERIFY(req);
    QVERIFY(!req->includeUsage);
    const HeaderList forward{{"OpenAI-Beta", "assistants=v2"}, {"anthropic-beta", "x"}};
    const HttpRequest http = OpenAICompletionsAdapter().buildRequest(
        spokenIn(*req, wire::Api::OpenAICompletions), target(QStringLiteral("https://api.openai.com/v1/")), forward);
    QCOMPARE(http.url.toString(), QStringLiteral("https://api.openai.com/v1/chat/completions"));
    const QJsonObject body = json(http.body);
    QJsonObject expected = sw::wire::clientBodyQt(*req);
    expected.insert(QStringLiteral("model"), QStringLiteral("deepseek/deepseek-r1"));
    expected.insert(QStringLiteral("stream"), true);
    expected.insert(QStringLiteral("stream_options"),
                    QJsonObject{{QStringLiteral("include_usage"), true}, {QStringLiteral("x"), 1}});
    // The client's two caps (1024, and max_tokens 99) disagree: the smaller goes under both names.
    expected.insert(QStringLiteral("max_completion_tokens"), 99);
    QCOMPARE(body, expected);
    QCOMPARE(body.value(QStringLiteral("seed")).toInt(), 42);
    QCOMPARE(headerValue(http.headers, "authorization"), QByteArray("Bearer sk-or-v1-secret"));
    QCOMPARE(headerValue(http.headers, "openai-beta"), QByteArray("assistants=v2"));
    QVERIFY(headerValue(http.headers, "anthropic-beta").isEmpty());
}

namespace {
// One decoded request built twice: spliced into the client's bytes, and written whole (rawBody
// cleared: the path that stays for bodies the splice declines). Both must say the same JSON.
struct BothPaths {
    QByteArray spliced;
    QByteArray whole;
};
BothPaths bothPaths(const QByteArray &clientBody, const Target &to = target()) {
    auto req = OpenAIChatCodec().decode(clientBody, nullptr);
    if (!req)
        return {};
    BothPaths both;
    both.spliced = OpenAICompletionsAdapter().buildRequest(*req, to, {}).body;
    req->rawBody.clear();
    both.whole = OpenAICompletionsAdapter().buildRequest(*req, to, {}).body;
    return both;
}
} // namespace

void TestOpenAICompletionsAdapter::anEmptyAssistantTurnIsLeftOut() {
    // What the openai SDK keeps of an answer that was reasoning only (another API's, through the
    // gateway): content null, no call. OpenAI refuses it ("expected a string, got null"); it is
    // left out, and every other turn and field goes as the client wrote it.
    const QByteArray body = "{\"model\":\"m\",\"x_custom\":1,\"messages\":[{\"role\":\"user\",\"content\":\"think\"},"
                            "{\"role\":\"assistant\",\"content\":null,\"refusal\":null},"
                            "{\"role\":\"user\",\"content\":\"and say it\"},"
                            "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":"
                            "\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},"
                            "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"ok\"}]}";
    const auto req = sw::formats::OpenAIChatCodec().decode(body, nullptr);
    QVERIFY(req);
    const QJsonObject sent = json(OpenAICompletionsAdapter().buildRequest(*req, target(), {}).body);
    const QJsonArray messages = sent.value("messages").toArray();
    QCOMPARE(messages.size(), 4);
    QCOMPARE(messages[0].toObject().value("content").toString(), QStringLiteral("think"));
    QCOMPARE(messages[1].toObject().value("content").toString(), QStringLiteral("and say it"));
    QCOMPARE(messages[2].toObject().value("tool_calls").toArray().size(), 1); // a call's null content stays
    QCOMPARE(sent.value("x_custom").toInt(), 1);
    QCOMPARE(sent.value("model").toString(), target().modelId);
}

void TestOpenAICompletionsAdapter::reasoningContentGoesOnlyToAServerThatAsksForItBack() {
    // A Chat client keeps the reasoning_content of every answer (the gateway writes another API's
    // thinking there too) and sends it back. Groq and Cerebras refuse the field with a 400 ("property
    // 'reasoning_content' is unsupported"); DeepSeek's thinking mode refuses a tool-call turn
    // without it ("Missing `reasoning_content` field in the assistant message at message index 3").
    const QByteArray body =
        "{\"model\":\"m\",\"x_custom\":1,\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
        "{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"Read it first.\",\"tool_calls\":[{\"id\":"
        "\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"ok\"},"
        "{\"role\":\"assistant\",\"content\":\"again\",\"tool_calls\":[{\"id\":\"call_2\",\"type\":\"function\","
        "\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"call_2\",\"content\":\"ok\"},"
        "{\"role\":\"assistant\",\"content\":\"done\",\"reasoning_content\":\"All read.\"},"
        "{\"role\":\"user\",\"content\":\"thanks\"}]}";
    const auto req = sw::formats::OpenAIChatCodec().decode(body, nullptr);
    QVERIFY(req);
    const auto reasoningOf = [](const QJsonArray &messages, int i) {
        return messages[i].toObject().value(QStringLiteral("reasoning_content"));
    };

    // Any other Chat server: no reasoning_content, everything else as the client wrote it.
    const QByteArray plain = OpenAICompletionsAdapter().buildRequest(*req, target(), {}).body;
    QVERIFY2(!plain.contains("reasoning_content"), plain.constData());
    QVERIFY(!plain.contains("Read it first."));
    QJsonArray messages = json(plain).value("messages").toArray();
    QCOMPARE(messages.size(), 7);
    QCOMPARE(messages[1].toObject().value("tool_calls").toArray().size(), 1);
    QCOMPARE(messages[5].toObject().value("content").toString(), QStringLiteral("done"));
    QCOMPARE(json(plain).value("x_custom").toInt(), 1);

    // DeepSeek's API: each turn with calls carries it, the client's own or an empty one.
    const QByteArray deepseek =
        OpenAICompletionsAdapter().buildRequest(*req, target(QStringLiteral("https://api.deepseek.com/v1")), {}).body;
    messages = json(deepseek).value("messages").toArray();
    QCOMPARE(messages.size(), 7);
    QCOMPARE(reasoningOf(messages, 1).toString(), QStringLiteral("Read it first."));
    QVERIFY(reasoningOf(messages, 3).isString());
    QCOMPARE(reasoningOf(messages, 3).toString(), QString());
    QCOMPARE(reasoningOf(messages, 5).toString(), QStringLiteral("All read.")); // as sent
    QCOMPARE(json(deepseek).value("x_custom").toInt(), 1);

    // A server that asked for it (the try after its 400): the same.
    Target asked = target();
    asked.reasoningBack = true;
    messages = json(OpenAICompletionsAdapter().buildRequest(*req, asked, {}).body).value("messages").toArray();
    QCOMPARE(reasoningOf(messages, 1).toString(), QStringLiteral("Read it first."));
    QVERIFY(reasoningOf(messages, 3).isString());
}

void TestOpenAICompletionsAdapter::openRoutersSignedReasoningGoesBackOnlyToOpenRouter() {
    // OpenRouter streams its reasoning as delta.reasoning and a signed delta.reasoning_details; on a
    // streamed passthrough they reach the client byte for byte and the SDK sends them back in the
    // assistant turn. When OpenRouter was down and the turn went to Groq, Groq refused every turn
    // ("'messages.1' : property 'reasoning' is unsupported") and got OpenRouter's signature.
    const QByteArray body =
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
        "{\"role\":\"assistant\",\"content\":\"on it\",\"reasoning\":\"Read it first.\","
        "\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\"Read it first.\",\"signature\":"
        "\"SIG-or-1\",\"format\":\"anthropic-claude-v1\",\"index\":0}],\"tool_calls\":[{\"id\":\"call_1\","
        "\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"ok\"},"
        "{\"role\":\"assistant\",\"content\":\"done\",\"reasoning_text\":\"All read.\"},"
        "{\"role\":\"user\",\"content\":\"thanks\"}],\"x_custom\":1}";
    const auto req = sw::formats::OpenAIChatCodec().decode(body, nullptr);
    QVERIFY(req);

    const QByteArray groq = OpenAICompletionsAdapter()
                                .buildRequest(*req, target(QStringLiteral("https://api.groq.com/openai/v1")), {})
                                .body;
    for (const char *gone : {"\"reasoning\"", "reasoning_details", "reasoning_text", "SIG-or-1", "Read it first."})
        QVERIFY2(!groq.contains(gone), groq.constData());
    QJsonArray messages = json(groq).value("messages").toArray();
    QCOMPARE(messages.size(), 5);
    QCOMPARE(messages[1].toObject().value("content").toString(), QStringLiteral("on it"));
    QCOMPARE(messages[1].toObject().value("tool_calls").toArray().size(), 1);
    QCOMPARE(messages[3].toObject().value("content").toString(), QStringLiteral("done"));
    QCOMPARE(json(groq).value("x_custom").toInt(), 1);

    // DeepSeek takes its own reasoning_content back, not another server's members.
    const QByteArray deepseek =
        OpenAICompletionsAdapter().buildRequest(*req, target(QStringLiteral("https://api.deepseek.com/v1")), {}).body;
    QVERIFY2(!deepseek.contains("SIG-or-1") && !deepseek.contains("reasoning_text"), deepseek.constData());
    messages = json(deepseek).value("messages").toArray();
    QVERIFY(messages[1].toObject().value("reasoning_content").isString());
    QVERIFY(!messages[1].toObject().contains("reasoning"));

    // OpenRouter gets its own turns as the client kept them, signature and all.
    const QJsonArray back =
        json(OpenAICompletionsAdapter().buildRequest(*req, target(), {}).body).value("messages").toArray();
    QCOMPARE(back[1].toObject().value("reasoning").toString(), QStringLiteral("Read it first."));
    QCOMPARE(back[1].toObject().value("reasoning_details").toArray().at(0).toObject().value("signature").toString(),
             QStringLiteral("SIG-or-1"));
    QCOMPARE(back[3].toObject().value("reasoning_text").toString(), QStringLiteral("All read."));
    // Unless OpenRouter refused a signature (another provider's, behind it): the one retry without
    // signed reasoning sends the turns without the members, not the same body again.
    Target refused = target();
    refused.replayReasoning = false;
    const QByteArray retried = OpenAICompletionsAdapter().buildRequest(*req, refused, {}).body;
    for (const char *gone : {"\"reasoning\"", "reasoning_details", "reasoning_text", "SIG-or-1"})
        QVERIFY2(!retried.contains(gone), retried.constData());
    QCOMPARE(json(retried)["messages"][1]["tool_calls"].toArray().size(), 1);
}

void TestOpenAICompletionsAdapter::googlesCallSignatureGoesBackOnlyToGooglesChatEndpoint() {
    // A Chat client answered by Gemini (through the gateway, or Google's own Chat endpoint) keeps the
    // call's extra_content.google.thought_signature and sends it back. After a failover to another
    // Chat server the member would go up as written: a strict server refuses an unknown member with
    // a 400, and the signature is Google's. It goes without; the rest of the turn as the client wrote it.
    const QByteArray body =
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\","
        "\"function\":{\"name\":\"f\",\"arguments\":\"{}\"},"
        "\"extra_content\":{\"google\":{\"thought_signature\":\"U0lHLWZj\"}}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"ok\"}],\"x_custom\":1}";
    const auto req = sw::formats::OpenAIChatCodec().decode(body, nullptr);
    QVERIFY(req);
    for (const QString &host :
         {QStringLiteral("https://api.openai.com/v1"), QStringLiteral("https://openrouter.ai/api/v1"),
          QStringLiteral("https://api.groq.com/openai/v1")}) {
        const QByteArray sent = OpenAICompletionsAdapter().buildRequest(*req, target(host), {}).body;
        QVERIFY2(!sent.contains("extra_content") && !sent.contains("U0lHLWZj"), sent.constData());
        const QJsonArray messages = json(sent).value("messages").toArray();
        QCOMPARE(messages.size(), 3);
        const QJsonObject call = messages[1].toObject().value("tool_calls").toArray().at(0).toObject();
        QCOMPARE(call.value("id").toString(), QStringLiteral("call_1"));
        QCOMPARE(call.value("function").toObject().value("name").toString(), QStringLiteral("f"));
        QCOMPARE(json(sent).value("x_custom").toInt(), 1);
    }
    // Google's own Chat endpoint takes it back, as the client wrote it; so do Vertex AI's and a Gemini
    // model behind a proxy or a custom domain (the review: stripped there, Gemini 3 refused every
    // tool step). OpenRouter carries Gemini's signature in reasoning_details: not there.
    Target proxied = target(QStringLiteral("https://llm.example.internal/v1"));
    proxied.modelId = QStringLiteral("Gemini-3-Pro-Preview");
    for (const Target &google :
         {target(QStringLiteral("https://generativelanguage.googleapis.com/v1beta/openai")),
          target(QStringLiteral(
              "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/l/endpoints/openapi")),
          proxied}) {
        const QByteArray sent = OpenAICompletionsAdapter().buildRequest(*req, google, {}).body;
        QVERIFY2(sent.contains("\"extra_content\":{\"google\":{\"thought_signature\":\"U0lHLWZj\"}}"),
                 sent.constData());
    }
    Target openRouterGemini = target();
    openRouterGemini.modelId = QStringLiteral("google/gemini-3-pro-preview");
    QVERIFY(!OpenAICompletionsAdapter().buildRequest(*req, openRouterGemini, {}).body.contains("extra_content"));
}

// Google's own Chat endpoint (Gemini 3 behind generativelanguage.googleapis.com/v1beta/openai) signs a
// call in its first delta, `extra_content.google.thought_signature`, and refuses the next turn's call
// without it. A non-streaming Chat client (the gateway drains the stream) and a client of another
// format lost it; now it is the call's signature, Google's, in every answer, and goes back to
// Google's endpoints alone: as the member to the Chat one, as thoughtSignature to the Gemini API.
void TestOpenAICompletionsAdapter::googlesChatEndpointSignsItsCallsForEveryClient() {
    const Target google = target(QStringLiteral("https://generativelanguage.googleapis.com/v1beta/openai"));
    auto decoder = OpenAICompletionsAdapter().makeDecoder(google);
    const QList<StreamEvent> events = sw::test::decodeTranscript(
        *decoder, "data: {\"id\":\"g1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{"
                  "\"extra_content\":{\"google\":{\"thought_signature\":\"R0VNLWZj\"}},\"function\":{\"arguments\":"
                  "\"{\\\"city\\\":\\\"Paris\\\"}\",\"name\":\"get_weather\"},\"id\":\"function-call-1\",\"index\":0,"
                  "\"type\":\"function\"}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
    EventAccumulator acc;
    acc.addAll(events);
    QVERIFY(acc.isFinished());
    QCOMPARE(acc.message().content.size(), 1);
    QCOMPARE(acc.message().content[0].signature, QStringLiteral("R0VNLWZj"));

    sw::formats::EncodeInfo info;
    info.upstreamApi = wire::apiName(wire::Api::OpenAICompletions);
    info.model = QStringLiteral("gemini");
    // A non-streaming Chat client reads it where Google's endpoint wrote it.
    const QJsonObject chatCall =
        json(OpenAIChatCodec().encodeResponse(acc.message(), info))["choices"][0]["message"]["tool_calls"][0]
            .toObject();
    QCOMPARE(chatCall["extra_content"]["google"]["thought_signature"].toString(), QStringLiteral("R0VNLWZj"));
    // A Messages client gets the call's carrier, and sends it back with the call.
    const QByteArray messagesAnswer = AnthropicMessagesCodec().encodeResponse(acc.message(), info);
    const QJsonArray answered = json(messagesAnswer).value("content").toArray();
    QVERIFY2(messagesAnswer.contains("R0VNLWZj"), messagesAnswer.constData());
    const QString callId = answered.last().toObject().value("id").toString();
    const QJsonArray history{
        QJsonObject{{"role", "user"}, {"content", "weather in Paris?"}},
        QJsonObject{{"role", "assistant"}, {"content", answered}},
        QJsonObject{{"role", "user"},
                    {"content",
                     QJsonArray{QJsonObject{{"type", "tool_result"}, {"tool_use_id", callId}, {"content", "sunny"}}}}}};
    const auto next = AnthropicMessagesCodec().decode(
        wire::compactJson(QJsonObject{{"model", "m"}, {"max_tokens", 100}, {"messages", history}}), nullptr);
    QVERIFY(next);
    const QJsonObject back = json(OpenAICompletionsAdapter().buildRequest(*next, google, {}).body);
    const QJsonObject backCall = back["messages"][1]["tool_calls"][0].toObject();
    QCOMPARE(backCall["function"]["name"].toString(), QStringLiteral("get_weather"));
    QCOMPARE(backCall["extra_content"]["google"]["thought_signature"].toString(), QStringLiteral("R0VNLWZj"));
    QCOMPARE(GoogleAdapter::buildBody(*next)["contents"][1]["parts"][0]["thoughtSignature"].toString(),
             QStringLiteral("R0VNLWZj"));
    // Another Chat server gets the call without it.
    const QByteArray other = OpenAICompletionsAdapter().buildRequest(*next, target(), {}).body;
    QVERIFY2(!other.contains("extra_content") && !other.contains("R0VNLWZj"), other.constData());

    // A pi client keeps it as the call's thoughtSignature, in a message whose api is
    // openai-completions: raw, it came back as that API's and went as the skip value (probe P4).
    // Tagged with Gemini's API, it comes back as Google's.
    AssistantMessage answer = acc.message();
    answer.api = info.upstreamApi;
    const PiNativeCodec pi;
    const QJsonObject piAnswer = json(pi.encodeResponse(answer, info))["message"].toObject();
    const QJsonObject piCall = piAnswer["content"].toArray().last().toObject();
    QVERIFY2(piCall["thoughtSignature"].toString().endsWith(QStringLiteral("R0VNLWZj")),
             qPrintable(QString::fromUtf8(QJsonDocument(piAnswer).toJson())));
    QByteArray piStream;
    const auto piEncoder = pi.makeStreamEncoder(info);
    for (const StreamEvent &e : events)
        piStream += piEncoder->encode(e);
    QVERIFY2(piStream.contains(piCall["thoughtSignature"].toString().toUtf8()), piStream.constData());
    const QJsonArray piHistory{QJsonObject{{"role", "user"}, {"content", "weather in Paris?"}}, piAnswer,
                               QJsonObject{{"role", "toolResult"},
                                           {"toolCallId", piCall["id"]},
                                           {"toolName", "get_weather"},
                                           {"content", QJsonArray{QJsonObject{{"type", "text"}, {"text", "sunny"}}}},
                                           {"isError", false}}};
    const auto piNext = pi.decode(
        wire::compactJson(QJsonObject{{"modelId", "m"}, {"context", QJsonObject{{"messages", piHistory}}}}), nullptr);
    QVERIFY(piNext);
    QCOMPARE(json(OpenAICompletionsAdapter()
                      .buildRequest(*piNext, google, {})
                      .body)["messages"][1]["tool_calls"][0]["extra_content"]["google"]["thought_signature"]
                 .toString(),
             QStringLiteral("R0VNLWZj"));
    QCOMPARE(GoogleAdapter::buildBody(*piNext)["contents"][1]["parts"][0]["thoughtSignature"].toString(),
             QStringLiteral("R0VNLWZj"));
    QVERIFY(!OpenAICompletionsAdapter().buildRequest(*piNext, target(), {}).body.contains("R0VNLWZj"));

    // Calls Gemini did not make: the first of the turn gets the skip value Google documents, the
    // rest nothing, as the Gemini API's adapter sends them; another server never sees it.
    const auto foreign = OpenAIChatCodec().decode(
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
        "{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}},"
        "{\"id\":\"call_2\",\"type\":\"function\",\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"ok\"},"
        "{\"role\":\"tool\",\"tool_call_id\":\"call_2\",\"content\":\"ok\"}]}",
        nullptr);
    QVERIFY(foreign);
    const ChatRequest converted = spokenIn(*foreign, wire::Api::AnthropicMessages);
    const QJsonArray calls =
        json(OpenAICompletionsAdapter().buildRequest(converted, google, {}).body)["messages"][1]["tool_calls"]
            .toArray();
    QCOMPARE(calls.size(), 2);
    QCOMPARE(calls[0]["extra_content"]["google"]["thought_signature"].toString(),
             QStringLiteral("skip_thought_signature_validator"));
    QVERIFY(!calls[1].toObject().contains("extra_content"));
    QVERIFY(!OpenAICompletionsAdapter().buildRequest(converted, target(), {}).body.contains("extra_content"));
    // The same turn from a Chat client (probe P3 2: its first turn answered by another API, then a
    // failover to Google's Chat endpoint): the client's body, with the skip value on the first call.
    const QJsonArray sameApiCalls =
        json(OpenAICompletionsAdapter().buildRequest(*foreign, google, {}).body)["messages"][1]["tool_calls"].toArray();
    QCOMPARE(sameApiCalls.size(), 2);
    QCOMPARE(sameApiCalls[0]["extra_content"]["google"]["thought_signature"].toString(),
             QStringLiteral("skip_thought_signature_validator"));
    QVERIFY(!sameApiCalls[1].toObject().contains("extra_content"));

    // The endpoint refused a signature (probe P3 3: another Google provider's): the one retry without
    // signed reasoning sends every call with the skip value, whichever way the body was made.
    Target refused = google;
    refused.replayReasoning = false;
    const auto chatHistory = OpenAIChatCodec().decode(
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\","
        "\"function\":{\"name\":\"f\",\"arguments\":\"{}\"},"
        "\"extra_content\":{\"google\":{\"thought_signature\":\"R0VNLWZj\"}}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"ok\"}]}",
        nullptr);
    QVERIFY(chatHistory);
    for (const ChatRequest &history : {*next, *chatHistory}) {
        const QByteArray retried = OpenAICompletionsAdapter().buildRequest(history, refused, {}).body;
        QVERIFY2(!retried.contains("R0VNLWZj"), retried.constData());
        QCOMPARE(
            json(retried)["messages"][1]["tool_calls"][0]["extra_content"]["google"]["thought_signature"].toString(),
            QStringLiteral("skip_thought_signature_validator"));
        // The first try still sends it.
        QVERIFY(OpenAICompletionsAdapter().buildRequest(history, google, {}).body.contains("R0VNLWZj"));
    }
}

void TestOpenAICompletionsAdapter::aSameApiHistorysOverLongCallIdsGoBounded() {
    // vLLM names a call "chatcmpl-tool-" and 32 hex digits (46): a Chat client streamed that answer
    // keeps the id and sends it back. When the turn then fails over to OpenAI, the id went up as
    // the client wrote it and OpenAI refused the conversation ("string too long. Expected a string
    // with maximum length 40"), every turn after. The call's and its result's id go bounded alike.
    const QString vllm = QStringLiteral("chatcmpl-tool-0123456789abcdef0123456789abcdef");
    const QByteArray body =
        "{\"model\":\"m\",\"x_custom\":1,\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"" +
        vllm.toLatin1() +
        "\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}},"
        "{\"id\":\"call_2\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"" +
        vllm.toLatin1() +
        "\",\"content\":\"ok\"},"
        "{\"role\":\"tool\",\"tool_call_id\":\"call_2\",\"content\":\"ok\"}]}";
    const auto req = sw::formats::OpenAIChatCodec().decode(body, nullptr);
    QVERIFY(req);
    const QByteArray sent = OpenAICompletionsAdapter().buildRequest(*req, target(), {}).body;
    QVERIFY2(!sent.contains(vllm.toLatin1()), sent.constData());
    const QJsonArray messages = json(sent).value("messages").toArray();
    QCOMPARE(messages.size(), 4);
    const QJsonArray calls = messages[1].toObject().value("tool_calls").toArray();
    const QString bounded = calls[0].toObject().value("id").toString();
    QCOMPARE(bounded, sw::wire::boundedToolCallId(vllm, OpenAICompletionsAdapter::kMaxToolIdLength));
    QVERIFY(bounded.size() <= 40);
    QCOMPARE(messages[2].toObject().value("tool_call_id").toString(), bounded); // still its result
    QCOMPARE(calls[1].toObject().value("id").toString(), QStringLiteral("call_2"));
    QCOMPARE(messages[3].toObject().value("tool_call_id").toString(), QStringLiteral("call_2"));
    QCOMPARE(calls[0].toObject().value("function").toObject().value("name").toString(), QStringLiteral("f"));
    QCOMPARE(json(sent).value("x_custom").toInt(), 1); // the rest as the client wrote it
}

namespace {
// The calls of a Chat body and how each pairs with its results, in the calls' order: "id name=result"
// when exactly one tool turn answers it, else the results that do.
QStringList pairsOf(const QJsonArray &messages) {
    QStringList out;
    for (qsizetype i = 0; i < messages.size(); ++i)
        for (const QJsonValue &call : messages[i]["tool_calls"].toArray()) {
            const QString id = call["id"].toString();
            QStringList answers; // the tool turns right after the call's turn
            for (qsizetype j = i + 1; j < messages.size() && messages[j]["role"].toString() == QLatin1String("tool");
                 ++j)
                if (messages[j]["tool_call_id"].toString() == id)
                    answers << messages[j]["content"].toString();
            out << id + ' ' + call["function"]["name"].toString() +
                       (answers.size() == 1 ? '=' + answers[0]
                                            : QStringLiteral(" answered by [%1]").arg(answers.join(',')));
        }
    return out;
}
} // namespace

void TestOpenAICompletionsAdapter::repeatedCallIdsGoUniqueEachResultWithItsCall_data() {
    QTest::addColumn<wire::Api>("inbound");
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<QStringList>("pairs");
    // Kimi's Anthropic-compatible endpoint gives two calls of one answer the id "grep:3"; its client
    // (Claude Code) answers each, and the turn goes to a Chat server converted.
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
    // DeepSeek and GLM do the same in Chat; a client that talked to them directly sends the ids
    // back, and the same-API request goes on to OpenAI after a failover.
    QTest::newRow("chat client, passthrough") << wire::Api::OpenAICompletions << QByteArray(R"({"model":"m",
            "x_custom":1,"messages":[{"role":"user","content":"go"},
            {"role":"assistant","content":null,"tool_calls":[
              {"id":"call_0","type":"function","function":{"name":"get_weather","arguments":"{}"}},
              {"id":"call_0","type":"function","function":{"name":"read_file","arguments":"{}"}}]},
            {"role":"tool","tool_call_id":"call_0","content":"WEATHER"},
            {"role":"tool","tool_call_id":"call_0","content":"FILE"}]})")
                                              << QStringList{"call_0 get_weather=WEATHER", "call_0_2 read_file=FILE"};
    QTest::newRow("responses client") << wire::Api::OpenAIResponses << QByteArray(R"({"model":"m","input":[
            {"role":"user","content":"go"},
            {"type":"function_call","call_id":"call_0","name":"get_weather","arguments":"{}"},
            {"type":"function_call","call_id":"call_0","name":"read_file","arguments":"{}"},
            {"type":"function_call_output","call_id":"call_0","output":"WEATHER"},
            {"type":"function_call_output","call_id":"call_0","output":"FILE"}]})")
                                      << QStringList{"call_0 get_weather=WEATHER", "call_0_2 read_file=FILE"};
    // A server that names every turn's call "call_0": each turn's result still goes with its own call.
    QTest::newRow("chat client, one id every turn")
        << wire::Api::OpenAICompletions << QByteArray(R"({"model":"m","messages":[{"role":"user","content":"go"},
            {"role":"assistant","content":null,"tool_calls":[
              {"id":"call_0","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
            {"role":"tool","tool_call_id":"call_0","content":"WEATHER"},
            {"role":"assistant","content":null,"tool_calls":[
              {"id":"call_0","type":"function","function":{"name":"read_file","arguments":"{}"}}]},
            {"role":"tool","tool_call_id":"call_0","content":"FILE"}]})")
        << QStringList{"call_0 get_weather=WEATHER", "call_0_2 read_file=FILE"};
}

void TestOpenAICompletionsAdapter::repeatedCallIdsGoUniqueEachResultWithItsCall() {
    // The two tool turns went to the Chat server under one tool_call_id, and OpenAI refused the
    // conversation ("Invalid parameter: Duplicate value for 'tool_call_id'"), a 400 that ends the
    // failover, on every turn after (probe JV M4). Each call goes with an id of its own, each result
    // with its call's, in order.
    QFETCH(wire::Api, inbound);
    QFETCH(QByteArray, body);
    QFETCH(QStringList, pairs);
    sw::model::GatewayError error;
    const auto req = codecFor(inbound).decode(body, &error);
    QVERIFY2(req, qPrintable(error.message));
    const QByteArray sent = OpenAICompletionsAdapter().buildRequest(*req, target(), {}).body;
    QCOMPARE(pairsOf(json(sent).value("messages").toArray()), pairs);
    if (inbound == wire::Api::OpenAICompletions)
        QCOMPARE(json(sent).value("x_custom"), json(body).value("x_custom")); // the rest as the client wrote it
}

void TestOpenAICompletionsAdapter::repeatedCallIdsOfOneAnswerReachTheClientUnique() {
    // DeepSeek and GLM stream two parallel calls under one id. Every client is told the second by
    // the next free id (a relayed chunk too), so its next turn pairs each result with its own call
    // whichever API answers, and a client that keys calls by id (pi's transformMessages) keeps both.
    const QByteArray sse =
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_0\","
        "\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]}}]}\n\n"
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_0\","
        "\"function\":{\"arguments\":\"{}\"}}]}}]}\n\n"
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_0\","
        "\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"\"}}]}}]}\n\n"
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_0\","
        "\"function\":{\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n"
        "data: [DONE]\n\n";
    auto decoder = OpenAICompletionsAdapter().makeDecoder(target());
    QList<StreamEvent> events;
    QStringList relayed; // each chunk's call ids as a same-API client reads them
    for (const SseEvent &e : sw::test::splitSse(sse)) {
        events << decoder->feed(e);
        const QByteArray data = decoder->lastRelayData().isEmpty() ? e.data : decoder->lastRelayData();
        for (const QJsonValue &call : json(data)["choices"][0]["delta"]["tool_calls"].toArray())
            relayed << call["id"].toString();
    }
    events << decoder->finish();
    EventAccumulator acc;
    acc.addAll(events);
    const AssistantMessage &m = acc.message();
    QCOMPARE(m.content.size(), 2);
    QCOMPARE(m.content[0].toolCallId, QStringLiteral("call_0"));
    QCOMPARE(m.content[0].toolName, QStringLiteral("get_weather"));
    QCOMPARE(m.content[1].toolCallId, QStringLiteral("call_0_2"));
    QCOMPARE(m.content[1].toolName, QStringLiteral("read_file"));
    // The server's id again on a later chunk of the second call is that call, told by its new id.
    QCOMPARE(relayed, (QStringList{"call_0", "call_0", "call_0_2", "call_0_2"}));
}

void TestOpenAICompletionsAdapter::aConvertedToolTurnCarriesOnlyItsOwnReasoningBack() {
    // A Claude Code client whose first tool turn a Chat server answered (its reasoning_content came
    // as a thinking block tagged with the Chat API) and whose second Anthropic answered (signed
    // thinking). To DeepSeek each turn with calls goes with reasoning_content: the first its own
    // words, the second an empty one (another API's thinking is never replayed). To any other Chat
    // server no reasoning at all.
    const QByteArray body = R"({"model":"m","max_tokens":1024,"messages":[
        {"role":"user","content":"go"},
        {"role":"assistant","content":[{"type":"thinking","thinking":"Chat server reasoning.","signature":"swsig1.openai-completions."},
                                       {"type":"tool_use","id":"call_1","name":"f","input":{}}]},
        {"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"ok"}]},
        {"role":"assistant","content":[{"type":"thinking","thinking":"Anthropic reasoning.","signature":"c2lnbmVk"},
                                       {"type":"tool_use","id":"toolu_2","name":"f","input":{}}]},
        {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":"ok"}]}]})";
    const auto req = AnthropicMessagesCodec().decode(body, nullptr);
    QVERIFY(req);
    const model::ChatRequest spoken = spokenIn(*req, wire::Api::AnthropicMessages);
    const QByteArray plain = OpenAICompletionsAdapter().buildRequest(spoken, target(), {}).body;
    QVERIFY2(!plain.contains("reasoning_content"), plain.constData());
    QVERIFY(!plain.contains("reasoning."));

    const QByteArray deepseek =
        OpenAICompletionsAdapter().buildRequest(spoken, target(QStringLiteral("https://api.deepseek.com")), {}).body;
    const QJsonArray messages = json(deepseek).value("messages").toArray();
    QCOMPARE(rolesOf(messages), (QStringList{"user", "assistant", "tool", "assistant", "tool"}));
    QCOMPARE(messages[1].toObject().value("reasoning_content").toString(), QStringLiteral("Chat server reasoning."));
    QVERIFY(messages[3].toObject().value("reasoning_content").isString());
    QCOMPARE(messages[3].toObject().value("reasoning_content").toString(), QString());
    QVERIFY2(!deepseek.contains("Anthropic reasoning."), deepseek.constData());
    QVERIFY(!deepseek.contains("c2lnbmVk"));
}

namespace {
bool nineAlphanumerics(const QString &id) {
    static const QRegularExpression form(QStringLiteral("^[a-zA-Z0-9]{9}$"));
    return form.match(id).hasMatch();
}
// Every call id and result id of a Chat body, in order.
QStringList toolIdsOf(const QJsonArray &messages) {
    QStringList out;
    for (const QJsonValue &m : messages) {
        for (const QJsonValue &call : m["tool_calls"].toArray())
            out << call["id"].toString();
        if (m["role"].toString() == QLatin1String("tool"))
            out << m["tool_call_id"].toString();
    }
    return out;
}
} // namespace

void TestOpenAICompletionsAdapter::aNineCharToolIdIsMadeFromTheIdAlone() {
    // Mistral takes only nine characters of [a-zA-Z0-9]: an alias of the id, the same in every request
    // of the conversation (a call and its result, and each later turn, name it alike).
    const QString alias = wire::nineCharToolId(QStringLiteral("toolu_01AAA"));
    QVERIFY2(nineAlphanumerics(alias), qPrintable(alias));
    QCOMPARE(wire::nineCharToolId(QStringLiteral("toolu_01AAA")), alias);
    QVERIFY(wire::nineCharToolId(QStringLiteral("toolu_01AAB")) != alias);
    QVERIFY(wire::nineCharToolId(QStringLiteral("toolu_01AAA"), 1) != alias);
    QVERIFY(nineAlphanumerics(wire::nineCharToolId(QString())));
    QVERIFY(wire::isNineCharToolId(QStringView(u"Zx9Qw2Lp7")));
    QVERIFY(wire::isNineCharToolId(std::string_view("Zx9Qw2Lp7")));
    QVERIFY(!wire::isNineCharToolId(std::string_view("Zx9Qw2Lp")));
    QVERIFY(!wire::isNineCharToolId(QStringView(u"Zx9Qw_Lp7")));

    // Within one request: an id already of the form keeps it, every id keeps its alias, and no two
    // ids share one, whichever comes first.
    wire::NineCharToolIds ids;
    QCOMPARE(ids.alias(QStringLiteral("Zx9Qw2Lp7")), QStringLiteral("Zx9Qw2Lp7")); // Mistral's own
    QCOMPARE(ids.alias(QStringLiteral("toolu_01AAA")), alias);
    QCOMPARE(ids.alias(QStringLiteral("toolu_01AAA")), alias);
    const QString taken = ids.alias(alias); // an id that is the alias already given another
    QVERIFY(taken != alias);
    QVERIFY(nineAlphanumerics(taken));
    QCOMPARE(ids.alias(alias), taken);
    wire::NineCharToolIds other;
    QCOMPARE(other.alias(alias), alias); // the id of that form first: the other id takes the next hash
    const QString next = other.alias(QStringLiteral("toolu_01AAA"));
    QVERIFY(next != alias);
    QCOMPARE(next, wire::nineCharToolId(QStringLiteral("toolu_01AAA"), 1));
}

void TestOpenAICompletionsAdapter::aMistralTargetGetsEveryToolIdAsNineAlphanumerics() {
    // A Claude Code tool loop fails over to a Mistral model on a Chat server: Mistral refused the
    // history ("Tool call id was toolu_01AAA but must be a-z, A-Z, 0-9, with a length of 9."), a 400
    // that ended the chain. Each call's and result's id goes by its nine-character alias; the two
    // calls Kimi named alike ("grep:3") stay apart, each result with its own call.
    const QByteArray body =
        "{\"model\":\"m\",\"max_tokens\":100,\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"toolu_01AAA\",\"name\":\"read_file\","
        "\"input\":{}}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_01AAA\",\"content\":"
        "\"FIRST\"}]},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"grep:3\",\"name\":\"get_weather\","
        "\"input\":{}},{\"type\":\"tool_use\",\"id\":\"grep:3\",\"name\":\"read_file\",\"input\":{}}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"grep:3\",\"content\":"
        "\"WEATHER\"},{\"type\":\"tool_result\",\"tool_use_id\":\"grep:3\",\"content\":\"FILE\"}]}]}";
    const auto req = AnthropicMessagesCodec().decode(body, nullptr);
    QVERIFY(req);
    const model::ChatRequest spoken = spokenIn(*req, wire::Api::AnthropicMessages);
    const auto sentTo = [&spoken](const Target &t) {
        return json(OpenAICompletionsAdapter().buildRequest(spoken, t, {}).body).value("messages").toArray();
    };
    Target byModel = target(QStringLiteral("https://llm.example.internal/v1"));
    byModel.modelId = QStringLiteral("mistral-large-latest");
    const QJsonArray messages = sentTo(byModel);
    const QStringList ids = toolIdsOf(messages);
    QCOMPARE(ids.size(), 6);
    for (const QString &id : ids)
        QVERIFY2(nineAlphanumerics(id), qPrintable(id));
    const QString first = wire::nineCharToolId(QStringLiteral("toolu_01AAA"));
    QCOMPARE(pairsOf(messages),
             (QStringList{first + QStringLiteral(" read_file=FIRST"),
                          wire::nineCharToolId(QStringLiteral("grep:3")) + QStringLiteral(" get_weather=WEATHER"),
                          wire::nineCharToolId(QStringLiteral("grep:3_2")) + QStringLiteral(" read_file=FILE")}));
    QCOMPARE(toolIdsOf(sentTo(byModel)), ids); // the next request of the conversation names them alike

    // Mistral's API by its host, whatever the model's name; a Mistral model by its family's name
    // behind any server (a provider's prefix too); a server that refused another id once.
    Target byHost = target(QStringLiteral("https://api.mistral.ai/v1"));
    byHost.modelId = QStringLiteral("ft:open-mistral-7b:abc:20240531");
    QCOMPARE(toolIdsOf(sentTo(byHost)), ids);
    for (const char *model : {"mistralai/Devstral-Small-2505", "codestral-latest", "magistral-medium-2506",
                              "ministral-8b-latest", "pixtral-large-latest", "open-mixtral-8x22b", "Mistral-Small-3.2"})
        QVERIFY2(OpenAICompletionsAdapter::isMistralModel(QLatin1String(model)), model);
    for (const char *model : {"gpt-4o", "deepseek-chat", "llama-3.3-70b", "qwen3-coder"})
        QVERIFY2(!OpenAICompletionsAdapter::isMistralModel(QLatin1String(model)), model);
    Target learned = target(QStringLiteral("http://127.0.0.1:8000/v1"));
    learned.modelId = QStringLiteral("local");
    QCOMPARE(toolIdsOf(sentTo(learned)).first(), QStringLiteral("toolu_01AAA"));
    learned.nineCharToolIds = true;
    QCOMPARE(toolIdsOf(sentTo(learned)), ids);

    // Any other server keeps the ids as they came (made unique).
    QCOMPARE(toolIdsOf(sentTo(target())),
             (QStringList{"toolu_01AAA", "toolu_01AAA", "grep:3", "grep:3_2", "grep:3", "grep:3_2"}));
}

void TestOpenAICompletionsAdapter::aSameApiHistoryGoesToMistralWithNineCharIds() {
    // A Chat client's history (OpenAI's call_… ids) fails over to Mistral: the same-API body goes as
    // the client wrote it but for each call's and result's id. Mistral's own ids, already of the form,
    // keep theirs, and a body that holds no other is spliced as it came.
    const QByteArray body =
        "{\"model\":\"m\",\"x_custom\":1,\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
        "{\"id\":\"call_abc\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}},"
        "{\"id\":\"Zx9Qw2Lp7\",\"type\":\"function\",\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"call_abc\",\"content\":\"F\"},"
        "{\"role\":\"tool\",\"tool_call_id\":\"Zx9Qw2Lp7\",\"content\":\"G\"}]}";
    const auto req = sw::formats::OpenAIChatCodec().decode(body, nullptr);
    QVERIFY(req);
    const Target mistral = target(QStringLiteral("https://api.mistral.ai/v1"));
    const QByteArray sent = OpenAICompletionsAdapter().buildRequest(*req, mistral, {}).body;
    const QJsonArray messages = json(sent).value("messages").toArray();
    const QString alias = wire::nineCharToolId(QStringLiteral("call_abc"));
    QCOMPARE(pairsOf(messages), (QStringList{alias + QStringLiteral(" f=F"), QStringLiteral("Zx9Qw2Lp7 g=G")}));
    QCOMPARE(json(sent).value("x_custom").toInt(), 1);
    QCOMPARE(json(sent).value("model").toString(), mistral.modelId);
    // To any other server, the client's bytes.
    QVERIFY(OpenAICompletionsAdapter().buildRequest(*req, target(), {}).body.contains("\"id\":\"call_abc\""));
    // Ids of the form already: the client's bytes to Mistral too.
    QByteArray valid = body;
    valid.replace("call_abc", "AbCdEf123");
    const auto own = sw::formats::OpenAIChatCodec().decode(valid, nullptr);
    QVERIFY(own);
    QVERIFY(OpenAICompletionsAdapter()
                .buildRequest(*own, mistral, {})
                .body.contains("{\"role\":\"tool\",\"tool_call_id\":\"AbCdEf123\",\"content\":\"F\"}"));
}

void TestOpenAICompletionsAdapter::mistralsApiGetsNoMemberItRefuses() {
    // Mistral's validator refuses a member its schema does not name with a 422 (extra_forbidden) that
    // ended the chain: every request carried the gateway's stream_options, and one asking to reason
    // max_completion_tokens. Mistral's API gets neither (its stream ends with the usage unasked), the
    // cap as max_tokens, converted or the client's own body.
    const Target mistral = [] {
        Target t = target(QStringLiteral("https://api.mistral.ai/v1"));
        t.modelId = QStringLiteral("magistral-medium-latest");
        return t;
    }();
    const auto req = AnthropicMessagesCodec().decode(
        "{\"model\":\"m\",\"max_tokens\":1000,\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":2048},"
        "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
        nullptr);
    QVERIFY(req);
    const model::ChatRequest spoken = spokenIn(*req, wire::Api::AnthropicMessages);
    const QJsonObject converted = json(OpenAICompletionsAdapter().buildRequest(spoken, mistral, {}).body);
    QVERIFY(!converted.contains("stream_options"));
    QVERIFY(!converted.contains("max_completion_tokens"));
    QCOMPARE(converted.value("max_tokens").toInt(), 1000);
    // A Mistral model behind another server (vLLM counts usage only when asked) keeps both.
    Target vllm = mistral;
    vllm.baseUrl = QStringLiteral("http://127.0.0.1:8000/v1");
    const QJsonObject local = json(OpenAICompletionsAdapter().buildRequest(spoken, vllm, {}).body);
    QVERIFY(local.value("stream_options").toObject().value("include_usage").toBool());
    QCOMPARE(local.value("max_completion_tokens").toInt(), 1000);

    // A Chat client's own body: its bytes without stream_options, and its max_completion_tokens as
    // max_tokens (the smaller of two caps).
    const auto passthrough = [&](const QByteArray &body) {
        const auto chat = sw::formats::OpenAIChatCodec().decode(body, nullptr);
        return OpenAICompletionsAdapter().buildRequest(*chat, mistral, {}).body;
    };
    const QByteArray plain = passthrough("{\"model\":\"m\",\"x_custom\":1,\"stream_options\":{\"include_usage\":true},"
                                         "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    QVERIFY2(!plain.contains("stream_options"), plain.constData());
    QVERIFY2(plain.contains("\"x_custom\":1,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"),
             plain.constData()); // the client's bytes
    for (const QByteArray &caps : {QByteArray("\"max_completion_tokens\":700"),
                                   QByteArray("\"max_completion_tokens\":700,\"max_tokens\":900")}) {
        const QJsonObject sent =
            json(passthrough("{\"model\":\"m\"," + caps + ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"));
        QVERIFY(!sent.contains("max_completion_tokens"));
        QVERIFY(!sent.contains("stream_options"));
        QCOMPARE(sent.value("max_tokens").toInt(), 700);
    }
    // OpenAI's own members and a turn's name, which Mistral's schema has not either, go without and are
    // named; a tool turn's name, which it has, stays.
    const auto openAIs = sw::formats::OpenAIChatCodec().decode(
        "{\"model\":\"m\",\"user\":\"u-1\",\"seed\":7,\"logprobs\":true,\"service_tier\":\"auto\","
        "\"temperature\":0.5,\"messages\":[{\"role\":\"user\",\"name\":\"alice\",\"content\":\"hi\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"AbCdEf123\",\"type\":"
        "\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},"
        "{\"role\":\"tool\",\"name\":\"f\",\"tool_call_id\":\"AbCdEf123\",\"content\":\"done\"}]}",
        nullptr);
    QVERIFY(openAIs);
    const QJsonObject cleaned = json(OpenAICompletionsAdapter().buildRequest(*openAIs, mistral, {}).body);
    for (const char *key : {"user", "seed", "logprobs", "service_tier", "stream_options"})
        QVERIFY2(!cleaned.contains(QLatin1String(key)), key);
    QCOMPARE(cleaned.value("temperature").toDouble(), 0.5);
    const QJsonArray turns = cleaned.value("messages").toArray();
    QCOMPARE(turns[0].toObject(), QJsonObject({{"role", "user"}, {"content", "alice: hi"}}));
    QCOMPARE(turns[2].toObject().value("name").toString(), QStringLiteral("f"));
    QCOMPARE(OpenAICompletionsAdapter().droppedFor(*openAIs, mistral),
             QStringList({"user", "seed", "logprobs", "service_tier", "messages[].name"}));
    QVERIFY(OpenAICompletionsAdapter().droppedFor(*openAIs, vllm).isEmpty());

    // Any other server still gets the gateway's stream_options.
    const auto chat = sw::formats::OpenAIChatCodec().decode(
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", nullptr);
    QVERIFY(json(OpenAICompletionsAdapter().buildRequest(*chat, vllm, {}).body)
                .value("stream_options")
                .toObject()
                .value("include_usage")
                .toBool());
}

void TestOpenAICompletionsAdapter::aUserTurnAfterToolTurnsGetsAnAssistantTurnBeforeItForMistral() {
    // Mistral refuses a user turn right after a tool turn ("Unexpected role 'user' after role 'tool'"),
    // a 400 that ended the chain: Claude Code writes its reminder beside every tool_result, and a Codex
    // user speaks after a function_call_output. An assistant turn goes between; the user's words stay
    // whole in their own turn.
    const QByteArray claudeCode =
        "{\"model\":\"m\",\"max_tokens\":100,\"messages\":[{\"role\":\"user\",\"content\":\"list\"},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"toolu_01AAA\",\"name\":\"Bash\","
        "\"input\":{}}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_01AAA\",\"content\":"
        "\"a.txt\"},{\"type\":\"text\",\"text\":\"<system-reminder>The todo list is empty.</system-reminder>\"}]}]}";
    const auto req = AnthropicMessagesCodec().decode(claudeCode, nullptr);
    QVERIFY(req);
    const model::ChatRequest spoken = spokenIn(*req, wire::Api::AnthropicMessages);
    Target mistral = target(QStringLiteral("https://api.mistral.ai/v1"));
    mistral.modelId = QStringLiteral("mistral-large-latest");
    const QJsonArray messages =
        json(OpenAICompletionsAdapter().buildRequest(spoken, mistral, {}).body).value("messages").toArray();
    QCOMPARE(rolesOf(messages), (QStringList{"user", "assistant", "tool", "assistant", "user"}));
    QCOMPARE(messages[2].toObject().value("content").toString(), QStringLiteral("a.txt"));
    QCOMPARE(messages[4].toObject().value("content").toString(),
             QStringLiteral("<system-reminder>The todo list is empty.</system-reminder>"));
    // A Mistral model behind vLLM has the same validator; another server takes the order as it is.
    Target vllm = mistral;
    vllm.baseUrl = QStringLiteral("http://127.0.0.1:8000/v1");
    QCOMPARE(rolesOf(json(OpenAICompletionsAdapter().buildRequest(spoken, vllm, {}).body).value("messages").toArray()),
             (QStringList{"user", "assistant", "tool", "assistant", "user"}));
    QCOMPARE(
        rolesOf(json(OpenAICompletionsAdapter().buildRequest(spoken, target(), {}).body).value("messages").toArray()),
        (QStringList{"user", "assistant", "tool", "user"}));

    // A Chat client's own history, as it talked to another server before.
    const QByteArray chatBody =
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"list\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
        "{\"id\":\"AbCdEf123\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"AbCdEf123\",\"content\":\"a.txt\"},"
        "{\"role\":\"user\",\"content\":\"only the txt ones\"}]}";
    const auto chat = sw::formats::OpenAIChatCodec().decode(chatBody, nullptr);
    QVERIFY(chat);
    const QJsonArray sent =
        json(OpenAICompletionsAdapter().buildRequest(*chat, mistral, {}).body).value("messages").toArray();
    QCOMPARE(rolesOf(sent), (QStringList{"user", "assistant", "tool", "assistant", "user"}));
    QCOMPARE(sent[4].toObject().value("content").toString(), QStringLiteral("only the txt ones"));
    QCOMPARE(
        rolesOf(json(OpenAICompletionsAdapter().buildRequest(*chat, target(), {}).body).value("messages").toArray()),
        (QStringList{"user", "assistant", "tool", "user"}));
}

void TestOpenAICompletionsAdapter::mistralsContentChunksAreRead() {
    // Magistral streams delta.content as a list of chunks: its reasoning as thinking chunks, its words
    // as strings or text chunks. Read as a string, the reasoning was lost and words in chunks gave an
    // empty answer reported as finished.
    const QByteArray thinking =
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":[{\"type\":\"thinking\",\"thinking\":"
        "[{\"type\":\"text\",\"text\":\"The user asks \"}]}]}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":[{\"type\":\"thinking\",\"thinking\":"
        "[{\"type\":\"text\",\"text\":\"for a capital.\"}]}]}}]}\n\n";
    const QByteArray end = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],"
                           "\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":30}}\n\ndata: [DONE]\n\n";
    for (const QByteArray &words :
         {QByteArray("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Paris is \"}}]}\n\n"
                     "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"the capital.\"}}]}\n\n"),
          QByteArray("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":[{\"type\":\"text\",\"text\":"
                     "\"Paris is \"}]}}]}\n\n"
                     "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":[{\"type\":\"text\",\"text\":"
                     "\"the capital.\"}]}}]}\n\n")}) {
        EventAccumulator acc;
        acc.addAll(decode(thinking + words + end));
        const AssistantMessage &m = acc.message();
        QCOMPARE(m.stopReason, StopReason::Stop);
        QCOMPARE(m.content.size(), 2);
        QCOMPARE(m.content[0].type, BlockType::Thinking);
        QCOMPARE(m.content[0].text, QStringLiteral("The user asks for a capital."));
        QCOMPARE(m.content[1].type, BlockType::Text);
        QCOMPARE(m.content[1].text, QStringLiteral("Paris is the capital."));
    }
    // An answer only in parts the gateway does not read is a failure (the next candidate answers),
    // never an empty answer reported as finished.
    const QList<StreamEvent> unread =
        decode("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":[{\"type\":\"audio\",\"data\":"
               "\"AAAA\"}]}}]}\n\n" +
               end);
    QCOMPARE(unread.last().type, EventType::Error);
    QVERIFY2(unread.last().errorMessage.contains(QStringLiteral("\"audio\"")), qPrintable(unread.last().errorMessage));
}

void TestOpenAICompletionsAdapter::passthroughSplicesTheClientBytes() {
    const QByteArray conversation =
        R"("messages":[{"role":"system","content":"Be {brief} \"ok\""},{"role":"user","content":[)"
        R"({"type":"text","text":"what is in \u00e9 this?"},{"type":"image_url","image_url":)"
        R"({"url":"data:image/png;base64,iVBORw0KGgo=","detail":"low"}}]},{"role":"assistant","content":null,)"
        R"("tool_calls":[{"id":"call_1","type":"function","function":{"name":"look","arguments":"{\"a\":1}"}}]},)"
        R"({"role":"tool","tool_call_id":"call_1","content":"a cat"}],"tools":[{"type":"function","function":)"
        R"({"name":"look","parameters":{"type":"object","properties":{"a":{"type":"integer"}}}}}])";
    struct Case {
        const char *name;
        QByteArray body;
        bool spliced;
        const char *baseUrl = nullptr; // OpenRouter's when none
    };
    const QList<Case> cases{
        // Its developer message goes as it is to OpenAI's own hosts alone.
        {"sdk fixture", readTestData(QStringLiteral("openai_chat_request_sdk.json")), true,
         "https://my-resource.openai.azure.com/openai/v1"},
        {"tools, image, unknown fields", "{\"model\":\"gpt-4o\",\"x_vendor\":{\"k\":[1,2]}," + conversation + "}",
         true},
        {"stream_options merged",
         "{\"model\":\"m\",\"stream_options\":{\"include_usage\":false,\"x\":1}," + conversation + "}", true},
        {"stream_options not an object", "{\"model\":\"m\",\"stream_options\":\"yes\"," + conversation + "}", true},
        {"stream_options null", "{\"model\":\"m\",\"stream_options\":null," + conversation + "}", true},
        {"big integer", "{\"model\":\"m\",\"seed\":12345678901234567890," + conversation + "}", true},
        {"duplicate key", "{\"model\":\"m\",\"temperature\":1,\"temperature\":0.5," + conversation + "}", false},
        {"escaped key", "{\"model\":\"m\",\"t\\u0065mperature\":1," + conversation + "}", false},
    };
    for (const Case &c : cases) {
        Target to = target();
        if (c.baseUrl)
            to.baseUrl = QLatin1String(c.baseUrl);
        const BothPaths both = bothPaths(c.body, to);
        QVERIFY2(!both.whole.isEmpty(), c.name);
        QCOMPARE(json(both.spliced), json(both.whole));
        QCOMPARE(json(both.spliced).value(QStringLiteral("model")).toString(), QStringLiteral("deepseek/deepseek-r1"));
        QVERIFY2(json(both.spliced).value(QStringLiteral("stream_options")).toObject().value("include_usage").toBool(),
                 c.name);
        if (c.spliced)
            QVERIFY2(both.spliced != both.whole, c.name); // the client's key order, not Qt's
        else
            QCOMPARE(both.spliced, both.whole);
    }
    // The splice keeps a number the client wrote beyond a double's precision exactly; the
    // whole-object path writes the double it parsed (both read back as the same double).
    const BothPaths big = bothPaths(cases[5].body);
    QVERIFY(big.spliced.contains("12345678901234567890"));
    QVERIFY(!big.whole.contains("12345678901234567890"));
    // Other stream options the client set stay beside include_usage.
    QCOMPARE(json(bothPaths(cases[2].body).spliced).value(QStringLiteral("stream_options")).toObject(),
             (QJsonObject{{QStringLiteral("include_usage"), true}, {QStringLiteral("x"), 1}}));
}

void TestOpenAICompletionsAdapter::imagesOfParallelToolResultsFollowTheRun() {
    // Claude Code reads a screenshot as one of three parallel calls: every call is answered by a
    // tool message before any user turn, then the image comes as one user turn.
    const QByteArray body = R"({"model":"m","max_tokens":100,"messages":[
        {"role":"user","content":"look"},
        {"role":"assistant","content":[
            {"type":"tool_use","id":"toolu_a","name":"Read","input":{"p":"a.png"}},
            {"type":"tool_use","id":"toolu_b","name":"Read","input":{"p":"b.txt"}},
            {"type":"tool_use","id":"toolu_c","name":"Read","input":{"p":"c.png"}}]},
        {"role":"user","content":[
            {"type":"tool_result","tool_use_id":"toolu_a","content":[{"type":"text","text":"a"},
                {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]},
            {"type":"tool_result","tool_use_id":"toolu_b","content":"b"},
            {"type":"tool_result","tool_use_id":"toolu_c","content":[
                {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgoA"}}]},
            {"type":"text","text":"and?"}]}]})";
    const auto req = AnthropicMessagesCodec().decode(body, nullptr);
    QVERIFY(req);
    const HttpRequest http =
        OpenAICompletionsAdapter().buildRequest(spokenIn(*req, wire::Api::AnthropicMessages), target(), {});
    const QJsonArray msgs = json(http.body).value(QStringLiteral("messages")).toArray();
    QCOMPARE(rolesOf(msgs), (QStringList{"user", "assistant", "tool", "tool", "tool", "user", "user"}));
    const QJsonArray images = msgs[5].toObject().value(QStringLiteral("content")).toArray();
    QCOMPARE(images.size(), 3); // the note and both images, in the order of the results
    QVERIFY(str(images[1].toObject().value(QStringLiteral("image_url")).toObject().value(QStringLiteral("url")))
                .endsWith(QStringLiteral("iVBORw0KGgo=")));
    QVERIFY(str(images[2].toObject().value(QStringLiteral("image_url")).toObject().value(QStringLiteral("url")))
                .endsWith(QStringLiteral("iVBORw0KGgoA")));
}

void TestOpenAICompletionsAdapter::documentsOfToolResults() {
    // A tool that read a PDF and one that read a text file: the text file's words are the tool's
    // output; the PDF follows the run as a file part with its name (Chat's tool messages are text).
    const QByteArray body = R"({"model":"m","max_tokens":100,"messages":[
        {"role":"user","content":"read both"},
        {"role":"assistant","content":[
            {"type":"tool_use","id":"toolu_a","name":"Read","input":{"p":"a.pdf"}},
            {"type":"tool_use","id":"toolu_b","name":"Read","input":{"p":"b.txt"}}]},
        {"role":"user","content":[
            {"type":"tool_result","tool_use_id":"toolu_a","content":[
                {"type":"document","title":"a.pdf","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0xLjQK"}}]},
            {"type":"tool_result","tool_use_id":"toolu_b","content":[
                {"type":"document","title":"b.txt","source":{"type":"text","media_type":"text/plain","data":"line one"}}]}]}]})";
    const auto req = AnthropicMessagesCodec().decode(body, nullptr);
    QVERIFY(req);
    const HttpRequest http =
        OpenAICompletionsAdapter().buildRequest(spokenIn(*req, wire::Api::AnthropicMessages), target(), {});
    const QJsonArray msgs = json(http.body).value(QStringLiteral("messages")).toArray();
    QCOMPARE(rolesOf(msgs), (QStringList{"user", "assistant", "tool", "tool", "user"}));
    QCOMPARE(str(msgs[2].toObject().value(QStringLiteral("content"))), QString());
    QCOMPARE(str(msgs[3].toObject().value(QStringLiteral("content"))), QStringLiteral("Document: b.txt\n\nline one"));
    const QJsonArray attached = msgs[4].toObject().value(QStringLiteral("content")).toArray();
    QCOMPARE(attached.size(), 2);
    QCOMPARE(str(attached[0].toObject().value(QStringLiteral("text"))),
             QStringLiteral("Attached file(s) from tool result:"));
    QCOMPARE(attached[1].toObject(),
             QJsonObject({{"type", "file"},
                          {"file", QJsonObject{{"file_data", "data:application/pdf;base64,JVBERi0xLjQK"},
                                               {"filename", "a.pdf"}}}}));
}

void TestOpenAICompletionsAdapter::crossFormatFromClaudeCode() {
    const auto req =
        AnthropicMessagesCodec().decode(readTestData(QStringLiteral("anthropic_request_claude_code.json")), nullptr);
    QVERIFY(req);
    const HttpRequest http = OpenAICompletionsAdapter().buildRequest(
        spokenIn(*req, wire::Api::AnthropicMessages), target(), {{"anthropic-beta", "x"}, {"OpenAI-Beta", "y"}});
    QCOMPARE(http.url.toString(), QStringLiteral("https://openrouter.ai/api/v1/chat/completions"));
    const QJsonObject body = json(http.body);
    QCOMPARE(str(body.value(QStringLiteral("model"))), QStringLiteral("deepseek/deepseek-r1"));
    QCOMPARE(body.value(QStringLiteral("stream")).toBool(), true);
    QCOMPARE(body.value(QStringLiteral("stream_options")).toObject().value(QStringLiteral("include_usage")).toBool(),
             true);
    QVERIFY(!http.body.contains("cache_control"));
    QVERIFY(!http.body.contains("metadata"));
    QVERIFY(!http.body.contains("web_search")); // server tools cannot run elsewhere
    QVERIFY(headerValue(http.headers, "openai-beta").isEmpty());

    const QJsonArray msgs = body.value(QStringLiteral("messages")).toArray();
    QCOMPARE(rolesOf(msgs), (QStringList{"system", "user", "assistant", "tool", "user", "assistant", "tool"}));
    QVERIFY(str(msgs[0].toObject().value(QStringLiteral("content"))).startsWith(QStringLiteral("You are Claude Code")));
    const QJsonArray userParts = msgs[1].toObject().value(QStringLiteral("content")).toArray();
    QCOMPARE(userParts.size(), 3);
    QVERIFY(str(userParts[2].toObject().value(QStringLiteral("image_url")).toObject().value(QStringLiteral("url")))
                .startsWith(QStringLiteral("data:image/jpeg;base64,/9j/")));
    const QJsonObject assistant = msgs[2].toObject();
    // Anthropic thinking is dropped, never replayed as text; its signature and the redacted block never leave.
    QVERIFY(!http.body.contains("I should read foo.cpp first."));
    QCOMPARE(str(assistant.value(QStringLiteral("content"))), QStringLiteral("Reading the file."));
    QVERIFY(!http.body.contains("EqQBCkYIBBgCKkDsig"));
    QVERIFY(!http.body.contains("EmwKAhgB"));
    const QJsonObject call = assistant.value(QStringLiteral("tool_calls")).toArray()[0].toObject();
    QCOMPARE(str(call.value(QStringLiteral("id"))), QStringLiteral("toolu_01A09q90qw90lq917835lq9"));
    const QJsonObject fn = call.value(QStringLiteral("function")).toObject();
    QCOMPARE(str(fn.value(QStringLiteral("name"))), QStringLiteral("Read"));
    QCOMPARE(str(json(str(fn.value(QStringLiteral("arguments"))).toUtf8()).value(QStringLiteral("file_path"))),
             QStringLiteral("/repo/foo.cpp"));
    QCOMPARE(str(msgs[3].toObject().value(QStringLiteral("tool_call_id"))),
             QStringLiteral("toolu_01A09q90qw90lq917835lq9"));
    QCOMPARE(str(msgs[3].toObject().value(QStringLiteral("content"))), QStringLiteral("int main() { return 1; }"));
    QCOMPARE(str(msgs[4].toObject().value(QStringLiteral("content"))), QStringLiteral("Go ahead."));
    // is_error has no Chat field: the failure is said in the tool message's text.
    QCOMPARE(str(msgs[6].toObject().value(QStringLiteral("content"))),
             OpenAICompletionsAdapter::toolErrorText(QStringLiteral("exit code 8")));

    const QJsonArray tools = body.value(QStringLiteral("tools")).toArray();
    QCOMPARE(tools.size(), 2);
    QCOMPARE(str(tools[0].toObject().value(QStringLiteral("type"))), QStringLiteral("function"));
    QCOMPARE(str(tools[0].toObject().value(QStringLiteral("function")).toObject().value(QStringLiteral("name"))),
             QStringLiteral("Read"));
    QCOMPARE(str(body.value(QStringLiteral("tool_choice"))), QStringLiteral("auto"));
    QCOMPARE(str(body.value(QStringLiteral("reasoning_effort"))), QStringLiteral("medium")); // budget 10000
    QCOMPARE(body.value(QStringLiteral("max_completion_tokens")).toInt(), 32000); // reasoning: never max_tokens
    QCOMPARE(body.value(QStringLiteral("temperature")).toDouble(), 1.0);
}

void TestOpenAICompletionsAdapter::maxTokensFieldDependsOnHost() {
    model::ChatRequest req;
    req.options.maxTokens = 77;
    const QJsonObject openai = json(OpenAICompletionsAdapter()
                                        .buildRequest(spokenIn(req, wire::Api::AnthropicMessages),
                                                      target(QStringLiteral("https://api.openai.com/v1")), {})
                                        .body);
    QCOMPARE(openai.value(QStringLiteral("max_completion_tokens")).toInt(), 77);
    QVERIFY(!openai.contains(QStringLiteral("max_tokens")));
    // A Chat client's own max_tokens, passed through: gpt-5 and the o-series refuse the name
    // ("Use 'max_completion_tokens' instead"), so a failover from a server that took it reached them
    // as a 400 that ended the chain. To OpenAI it goes as max_completion_tokens; elsewhere as sent.
    const auto chat = OpenAIChatCodec().decode(
        R"({"model":"m","max_tokens":321,"messages":[{"role":"user","content":"hi"}]})", nullptr);
    QVERIFY(chat);
    const QJsonObject renamed = json(OpenAICompletionsAdapter()
                                         .buildRequest(spokenIn(*chat, wire::Api::OpenAICompletions),
                                                       target(QStringLiteral("https://api.openai.com/v1")), {})
                                         .body);
    QCOMPARE(renamed.value(QStringLiteral("max_completion_tokens")).toInt(), 321);
    QVERIFY(!renamed.contains(QStringLiteral("max_tokens")));
    const QJsonObject kept = json(OpenAICompletionsAdapter()
                                      .buildRequest(spokenIn(*chat, wire::Api::OpenAICompletions),
                                                    target(QStringLiteral("http://127.0.0.1:8000/v1")), {})
                                      .body);
    QCOMPARE(kept.value(QStringLiteral("max_tokens")).toInt(), 321);
    QVERIFY(!kept.contains(QStringLiteral("max_completion_tokens")));
    const QJsonObject local = json(OpenAICompletionsAdapter()
                                       .buildRequest(spokenIn(req, wire::Api::AnthropicMessages),
                                                     target(QStringLiteral("http://127.0.0.1:11434/v1")), {})
                                       .body);
    QCOMPARE(local.value(QStringLiteral("max_tokens")).toInt(), 77);
    // With reasoning: max_completion_tokens everywhere, the client's cap as given, and
    // OpenAI's reasoning models get no sampling change they would reject.
    req.options.maxTokens = 1000;
    req.options.reasoning = QStringLiteral("high");
    req.options.temperature = 0.2;
    const QJsonObject reasoning = json(OpenAICompletionsAdapter()
                                           .buildRequest(spokenIn(req, wire::Api::AnthropicMessages),
                                                         target(QStringLiteral("https://api.openai.com/v1")), {})
                                           .body);
    QCOMPARE(reasoning.value(QStringLiteral("max_completion_tokens")).toInt(), 1000);
    QVERIFY(!reasoning.contains(QStringLiteral("max_tokens")));
    QVERIFY(!reasoning.contains(QStringLiteral("temperature")));
    const QJsonObject reasoningLocal = json(OpenAICompletionsAdapter()
                                                .buildRequest(spokenIn(req, wire::Api::AnthropicMessages),
                                                              target(QStringLiteral("http://127.0.0.1:8000/v1")), {})
                                                .body);
    QCOMPARE(reasoningLocal.value(QStringLiteral("max_completion_tokens")).toInt(), 1000);
    QCOMPARE(reasoningLocal.value(QStringLiteral("temperature")).toDouble(), 0.2);

    // Stop sequences: OpenAI takes 4, its reasoning models none; the gateway cuts at the rest.
    req.options.stop = {"s1", "s2", "s3", "s4", "s5", "s6"};
    const Target openaiTarget = target(QStringLiteral("https://api.openai.com/v1"));
    const model::ChatRequest messages = spokenIn(req, wire::Api::AnthropicMessages);
    QVERIFY(!json(OpenAICompletionsAdapter().buildRequest(messages, openaiTarget, {}).body).contains("stop"));
    QCOMPARE(OpenAICompletionsAdapter().stopSequencesSent(messages, openaiTarget), 0);
    req.options.reasoning.clear();
    const model::ChatRequest plain = spokenIn(req, wire::Api::AnthropicMessages);
    QCOMPARE(json(OpenAICompletionsAdapter().buildRequest(plain, openaiTarget, {}).body).value("stop").toArray(),
             (QJsonArray{"s1", "s2", "s3", "s4"}));
    QCOMPARE(OpenAICompletionsAdapter().stopSequencesSent(plain, openaiTarget), 4);
    // A Chat client's own body goes as it sent it: OpenAI's answer to it is the client's own.
    QCOMPARE(OpenAICompletionsAdapter().stopSequencesSent(spokenIn(req, wire::Api::OpenAICompletions), openaiTarget),
             6);
}

void TestOpenAICompletionsAdapter::decodesFullTranscript() {
    const QList<StreamEvent> events = decode(readTestData(QStringLiteral("openai_upstream_full.sse")));
    QCOMPARE(events.first().type, EventType::Start);
    QCOMPARE(events.last().type, EventType::Done);
    // The role chunk with empty content commits nothing; the reasoning does.
    const auto firstMeaningful =
        std::find_if(events.begin(), events.end(), [](const StreamEvent &e) { return e.isMeaningful(); });
    QCOMPARE(firstMeaningful->type, EventType::ThinkingDelta);
    // Blocks never overlap: each start comes after the previous block's end.
    int open = 0;
    for (const StreamEvent &e : events) {
        if (e.type == EventType::TextStart || e.type == EventType::ThinkingStart || e.type == EventType::ToolCallStart)
            QCOMPARE(open++, 0);
        if (e.type == EventType::TextEnd || e.type == EventType::ThinkingEnd || e.type == EventType::ToolCallEnd)
            QCOMPARE(--open, 0);
    }
    QCOMPARE(open, 0);

    EventAccumulator acc;
    acc.addAll(events);
    const AssistantMessage m = acc.message();
    QCOMPARE(m.content.size(), 4);
    QCOMPARE(m.content[0].type, BlockType::Thinking);
    QCOMPARE(m.content[0].text, QStringLiteral("Weather needs a lookup."));
    QCOMPARE(m.content[1].text, QStringLiteral("Checking now."));
    QCOMPARE(m.content[2].toolCallId, QStringLiteral("call_DdmO9pD3xa9XTPNJ32zg2hcA"));
    QCOMPARE(m.content[2].arguments.value(QStringLiteral("location")).toString(), QStringLiteral("Paris, France"));
    QCOMPARE(m.content[3].toolName, QStringLiteral("get_time"));
    QCOMPARE(m.content[3].arguments.value(QStringLiteral("tz")).toString(), QStringLiteral("Europe/Paris"));
    QCOMPARE(m.stopReason, StopReason::ToolUse);
    QCOMPARE(m.usage.input, 56); // prompt 120 minus 64 cached
    QCOMPARE(m.usage.cacheRead, 64);
    QCOMPARE(m.usage.output, 48);
}

void TestOpenAICompletionsAdapter::inBandErrorChunkBecomesErrorEvent() {
    const QList<StreamEvent> events = decode(readTestData(QStringLiteral("openai_upstream_error.sse")));
    int terminals = 0;
    for (const StreamEvent &e : events)
        terminals += e.type == EventType::Error || e.type == EventType::Done;
    QCOMPARE(terminals, 1);
    const StreamEvent &err = events.last();
    QCOMPARE(err.type, EventType::Error);
    QCOMPARE(err.errorType, QStringLiteral("rate_limit_exceeded"));
    QCOMPARE(err.errorStatus, std::optional<int>(429));
    QCOMPARE(err.errorMessage,
             QStringLiteral("OpenAI stream error (rate_limit_exceeded): Rate limit exceeded: free-models-per-min"));
    // Numeric codes (OpenRouter) are statuses.
    const QList<StreamEvent> numeric =
        decode("data: {\"error\":{\"code\":502,\"message\":\"Provider returned error\"}}\n\n");
    QCOMPARE(numeric.last().errorStatus, std::optional<int>(502));
    // vLLM's frame is the error object itself: its words and status, not a stream cut short.
    const QList<StreamEvent> vllm =
        decode("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
               "\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
               "data: {\"object\":\"error\",\"message\":\"This model's maximum context length is 8192 tokens.\","
               "\"type\":\"BadRequestError\",\"param\":null,\"code\":400}\n\n");
    QCOMPARE(vllm.last().type, EventType::Error);
    QCOMPARE(vllm.last().errorStatus, std::optional<int>(400));
    QVERIFY2(vllm.last().errorMessage.contains(QStringLiteral("maximum context length is 8192")),
             qPrintable(vllm.last().errorMessage));
}

void TestOpenAICompletionsAdapter::streamCutShortIsAnError() {
    const QList<StreamEvent> events = decode(readTestData(QStringLiteral("openai_upstream_cut.sse")));
    QCOMPARE(events.last().type, EventType::Error);
    QCOMPARE(events.last().errorMessage, QStringLiteral("stream ended before completion"));
    EventAccumulator acc;
    acc.addAll(events);
    QCOMPARE(acc.message().content.value(0).text, QStringLiteral("Half an ans"));
}

void TestOpenAICompletionsAdapter::finishReasonWithoutDoneIsClean() {
    const QList<StreamEvent> events =
        decode("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n"
               "data: "
               "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":5,"
               "\"completion_tokens\":1}}\n\n");
    QCOMPARE(events.last().type, EventType::Done);
    QCOMPARE(events.last().reason, StopReason::Length);
    QCOMPARE(events.last().usage.input, 5);
}

void TestOpenAICompletionsAdapter::contentFilterIsARefusal() {
    const QList<StreamEvent> events = decode(
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"content_filter\"}]}\n\ndata: [DONE]\n\n");
    QCOMPARE(events.last().type, EventType::Done);
    QCOMPARE(events.last().reason, StopReason::Refusal);
}

void TestOpenAICompletionsAdapter::finishReasonErrorIsAFailure() {
    // OpenRouter ends a stream whose provider broke off with finish_reason "error", DeepSeek one whose
    // inference system ran out with "insufficient_system_resource", z.ai with "network_error": never an answer.
    for (const QByteArray reason : {"error", "insufficient_system_resource", "network_error"})
        for (const QByteArray &before :
             {QByteArray(), QByteArray("data: {\"choices\":[{\"index\":0,\"delta\":{"
                                       "\"content\":\"Half\"},\"finish_reason\":null}]}\n\n")}) {
            const QList<StreamEvent> events =
                decode(before + "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"" + reason +
                       "\"}]}\n\n"
                       "data: [DONE]\n\n");
            int terminals = 0;
            for (const StreamEvent &e : events)
                terminals += e.type == EventType::Error || e.type == EventType::Done;
            QCOMPARE(terminals, 1);
            QCOMPARE(events.last().type, EventType::Error);
            QVERIFY(events.last().errorMessage.contains(QStringLiteral("finish_reason \"%1\"").arg(reason)));
        }
    // Other servers' names for reasons the gateway knows: z.ai's filter is a refusal, Mistral's full
    // context a length stop (both were "stop").
    const auto reasonOf = [this](const char *finish) {
        return decode(
                   QByteArray("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":\"") +
                   finish + "\"}]}\n\ndata: [DONE]\n\n")
            .last()
            .reason;
    };
    // A reason it does not know, on an answer that said nothing, is a failure, not an empty turn reported
    // as finished (probe BV); after content it is the model's stop.
    const QList<StreamEvent> aborted =
        decode("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"},\"finish_reason\":\"abort\"}]}"
               "\n\ndata: [DONE]\n\n");
    QCOMPARE(aborted.last().type, EventType::Error);
    QCOMPARE(aborted.last().errorStatus, std::optional<int>(503));
    QCOMPARE(reasonOf("abort"), StopReason::Stop);
    QCOMPARE(reasonOf("sensitive"), StopReason::Refusal);
    QCOMPARE(reasonOf("model_length"), StopReason::Length);
    QCOMPARE(reasonOf("stop"), StopReason::Stop);

    // Calls that a server ends with "stop" (OpenAI for a forced tool_choice, SGLang, older Ollama): the
    // answer asks for its tools to run; an Anthropic SDK's tool runner read end_turn and stopped with
    // the call unrun (probe D1 2). Cut by the length, it stays a length stop.
    const auto callsEndedBy = [this](const char *finish) {
        return decode(QByteArray("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
                                 "\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"f\","
                                 "\"arguments\":\"{}\"}}]},\"finish_reason\":\"") +
                      finish + "\"}]}\n\ndata: [DONE]\n\n")
            .last()
            .reason;
    };
    QCOMPARE(callsEndedBy("stop"), StopReason::ToolUse);
    QCOMPARE(callsEndedBy("eos"), StopReason::ToolUse);
    QCOMPARE(callsEndedBy("tool_calls"), StopReason::ToolUse);
    QCOMPARE(callsEndedBy("length"), StopReason::Length);
    // A fragment that names no call is no call to run (probe DV R5).
    QCOMPARE(decode("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\",\"tool_calls\":[{\"index\":0,"
                    "\"function\":{\"arguments\":\"\"}}]},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
                 .last()
                 .reason,
             StopReason::Stop);
}

void TestOpenAICompletionsAdapter::aSchemaOfManyPropertiesIsJudgedInOnePass() {
    // A strict schema whose `required` names every one of its properties: each was looked up by a scan
    // of the list, and a 960 KB schema froze the engine thread for 15 s (probe D2 H1). Now one set.
    const int count = 20000;
    QJsonObject properties;
    QJsonArray required;
    for (int i = 0; i < count; ++i) {
        const QString name = QStringLiteral("p%1").arg(i, 5, 10, QLatin1Char('0'));
        properties.insert(name, QJsonObject{{"type", "string"}});
        required.append(name);
    }
    QJsonObject schema{{"type", "object"}, {"properties", properties}, {"additionalProperties", false}};
    schema.insert("required", required);
    QCOMPARE(sw::upstream::openai_schema::strictRefusal(schema), std::nullopt);
    QCOMPARE(sw::upstream::anthropic_schema::complexity(schema).optionalParameters, 0);
    required.removeAt(count / 2);
    schema.insert("required", required);
    QCOMPARE(sw::upstream::openai_schema::strictRefusal(schema).value_or(QString()).contains(QStringLiteral("p10000")),
             true);
    QCOMPARE(sw::upstream::anthropic_schema::complexity(schema).optionalParameters, 1);
}

void TestOpenAICompletionsAdapter::toolCallIdsFitOpenAIsLimit() {
    // pi keeps a Responses call as "call_id|item_id" (about 80 characters); OpenAI refuses a tool
    // call id over 40. Each call still pairs with its result, and long ids stay apart. Another
    // server's ids with a bar in them ("call_1|a", "call_1|b") are not pi's: cut at the bar, two
    // calls became one id and their results could no longer be told apart.
    const QString piId = QStringLiteral("call_AAAAAAAAAAAAAAAAAAAAAAAA|fc_") + QString(48, QLatin1Char('b'));
    const QString longA = QString(60, QLatin1Char('x')) + QStringLiteral("A");
    const QString longB = QString(60, QLatin1Char('x')) + QStringLiteral("B");
    sw::model::ChatRequest req;
    Message assistant;
    assistant.role = Role::Assistant;
    for (const QString &id :
         {piId, longA, longB, QStringLiteral("call_short"), QStringLiteral("call_1|a"), QStringLiteral("call_1|b")}) {
        ContentBlock call;
        call.type = BlockType::ToolCall;
        call.toolCallId = id;
        call.toolName = QStringLiteral("f");
        assistant.content << call;
    }
    req.context.messages << assistant;
    for (const QString &id :
         {piId, longA, longB, QStringLiteral("call_short"), QStringLiteral("call_1|a"), QStringLiteral("call_1|b")}) {
        Message result;
        result.role = Role::ToolResult;
        result.toolCallId = id;
        result.content << ContentBlock::makeText(QStringLiteral("ok"));
        req.context.messages << result;
    }
    const QJsonArray msgs = json(OpenAICompletionsAdapter()
                                     .buildRequest(sw::test::spokenIn(req, sw::wire::Api::AnthropicMessages),
                                                   target(QStringLiteral("https://api.openai.com/v1")), {})
                                     .body)
                                .value("messages")
                                .toArray();
    const QJsonArray calls = msgs[0].toObject().value("tool_calls").toArray();
    QCOMPARE(calls.size(), 6);
    QSet<QString> ids;
    for (int i = 0; i < 6; ++i) {
        const QString id = calls[i].toObject().value("id").toString();
        QVERIFY2(!id.isEmpty() && id.size() <= 40, qPrintable(id));
        QCOMPARE(msgs[i + 1].toObject().value("tool_call_id").toString(), id);
        ids.insert(id);
    }
    QCOMPARE(ids.size(), 6);
    QCOMPARE(calls[0].toObject().value("id").toString(), QStringLiteral("call_AAAAAAAAAAAAAAAAAAAAAAAA"));
    QCOMPARE(calls[3].toObject().value("id").toString(), QStringLiteral("call_short"));
    QCOMPARE(calls[4].toObject().value("id").toString(), QStringLiteral("call_1|a"));
}

void TestOpenAICompletionsAdapter::otherChoicesAreNotMergedIntoTheFirst() {
    // n = 2: the upstream interleaves the choices' chunks, each naming its index. The answer is the
    // first choice alone; the second's text, tool call and earlier finish never reach it.
    const QList<StreamEvent> events =
        decode("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"choice \"}}]}\n\n"
               "data: {\"choices\":[{\"index\":1,\"delta\":{\"role\":\"assistant\",\"content\":\"other \"}}]}\n\n"
               "data: {\"choices\":[{\"index\":1,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c9\",\"type\":"
               "\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}\n\n"
               "data: {\"choices\":[{\"index\":1,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
               "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"zero\"}}]}\n\n"
               "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
               "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":4}}\n\ndata: [DONE]\n\n");
    EventAccumulator acc;
    acc.addAll(events);
    QVERIFY(acc.isFinished());
    QCOMPARE(acc.message().content.size(), 1);
    QCOMPARE(acc.message().content[0].type, BlockType::Text);
    QCOMPARE(acc.message().content[0].text, QStringLiteral("choice zero"));
    QCOMPARE(acc.message().stopReason, StopReason::Stop);
    QCOMPARE(acc.message().usage.output, 4);
}

void TestOpenAICompletionsAdapter::alternativeReasoningFieldNames() {
    for (const char *field : {"reasoning", "reasoning_text"}) {
        const QByteArray sse = QByteArray("data: {\"choices\":[{\"index\":0,\"delta\":{\"") + field +
                               "\":\"think\"},\"finish_reason\":null}]}\n\ndata: "
                               "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}"
                               "\n\ndata: [DONE]\n\n";
        EventAccumulator acc;
        acc.addAll(decode(sse));
        QCOMPARE(acc.message().content.size(), 2);
        QCOMPARE(acc.message().content[0].type, BlockType::Thinking);
        QCOMPARE(acc.message().content[0].text, QStringLiteral("think"));
        QCOMPARE(acc.message().content[1].text, QStringLiteral("ok"));
    }
}

void TestOpenAICompletionsAdapter::parsesErrorBodies() {
    const OpenAICompletionsAdapter a;
    const UpstreamErrorInfo openai = a.parseError(
        401,
        R"({"error":{"message":"Incorrect API key provided: sk-abc.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}})");
    QCOMPARE(openai.errorType, QStringLiteral("invalid_api_key"));
    QVERIFY(openai.message.startsWith(QStringLiteral("Incorrect API key")));
    QCOMPARE(a.parseError(404, R"({"error":"model 'llama9' not found"})").message,
             QStringLiteral("model 'llama9' not found"));
    QCOMPARE(a.parseError(400, R"({"detail":"max_tokens too large"})").message, QStringLiteral("max_tokens too large"));
    QCOMPARE(
        a.parseError(400, R"([{"error":{"code":400,"message":"Invalid JSON payload","status":"INVALID_ARGUMENT"}}])")
            .message,
        QStringLiteral("Invalid JSON payload"));
    QCOMPARE(a.parseError(503, "upstream connect error").message, QStringLiteral("upstream connect error"));
}

void TestOpenAICompletionsAdapter::interleavedToolCallDeltasAssembleByIndex() {
    // vLLM-style: two parallel calls whose deltas alternate (index 0, 1, 0, 1).
    const QList<StreamEvent> events = decode(readTestData(QStringLiteral("openai_upstream_interleaved_tools.sse")));
    QVERIFY2(interleaving(events).isEmpty(), qPrintable(interleaving(events)));
    EventAccumulator acc;
    acc.addAll(events);
    const AssistantMessage &m = acc.message();
    QCOMPARE(m.stopReason, StopReason::ToolUse);
    QCOMPARE(m.content.size(), 2);
    QCOMPARE(m.content[0].toolCallId, QStringLiteral("chatcmpl-tool-a1"));
    QCOMPARE(m.content[0].toolName, QStringLiteral("get_weather"));
    QCOMPARE(m.content[0].arguments, QJsonObject({{"location", "Paris"}}));
    QCOMPARE(m.content[1].toolCallId, QStringLiteral("chatcmpl-tool-b2"));
    QCOMPARE(m.content[1].toolName, QStringLiteral("get_time"));
    QCOMPARE(m.content[1].arguments, QJsonObject({{"zone", "CET"}}));
    // A server that numbers every call 0 but gives each its own id still yields two calls.
    const QList<StreamEvent> zeroed =
        decode("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":"
               "{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}\n\n"
               "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c2\",\"function\":"
               "{\"name\":\"g\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
    EventAccumulator two;
    two.addAll(zeroed);
    QCOMPARE(two.message().content.size(), 2);
    QCOMPARE(two.message().content[1].toolName, QStringLiteral("g"));
}

void TestOpenAICompletionsAdapter::aToolCallNamedWithControlCharactersFails() {
    // Probe T3 (SPEC 10): a same-API stream relayed a tool call's id and name as the upstream
    // wrote them, and a CLI agent prints the name to a terminal (escapes run) and sends the id
    // back on the next turn (100 KB of it). The frame is refused whole, as a bad model name is.
    const auto lastFrame = [](const QByteArray &sse) {
        auto decoder = OpenAICompletionsAdapter().makeDecoder(target());
        return sw::test::feedLastFrame(*decoder, sse);
    };
    const auto callChunk = [](const QByteArray &id, const QByteArray &name, int choice = 0) {
        return "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{"
               "\"index\":" +
               QByteArray::number(choice) +
               ",\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"" + id +
               "\",\"type\":\"function\",\"function\":{\"name\":\"" + name + "\",\"arguments\":\"\"}}]}}]}\n\n";
    };
    const sw::test::LastFrame model =
        lastFrame(R"(data: {"id":"c","object":"chat.completion.chunk","model":"gpt\u001b[31m","choices":[]})"
                  "\n\n");
    QCOMPARE(model.events.size(), 1);
    QCOMPARE(model.events[0].type, EventType::Error);

    const sw::test::LastFrame good = lastFrame(callChunk("call_" + QByteArray(251, 'x'), "get_weather"));
    QVERIFY(!good.unreadable);
    QCOMPARE(good.events.last().type, EventType::ToolCallStart);
    QCOMPARE(good.events.last().block.toolCallId.size(), 256);
    QCOMPARE(good.events.last().block.toolName, QStringLiteral("get_weather"));
    QCOMPARE(lastFrame(callChunk("call_1", "h\u00e9t\u00e9_\u2013")).events.last().type, EventType::ToolCallStart);

    for (const QByteArray &bad : sw::test::unechoableToolCallNames()) {
        // In the first chunk, in a later one, and in another choice's (relayed as well).
        for (const QByteArray &sse :
             {callChunk("call_1", bad), callChunk(bad, "get_weather"), callChunk("call_0", "ok") + callChunk(bad, "ok"),
              callChunk("call_0", "ok") + callChunk("call_1", bad, 1)}) {
            const QString problem = sw::test::unechoableToolCallProblem(lastFrame(sse));
            QVERIFY2(problem.isEmpty(), qPrintable(problem + QLatin1Char(' ') + QString::fromUtf8(sse)));
        }
    }
    // The deprecated function_call and a custom tool's call are relayed as well.
    QCOMPARE(lastFrame(R"(data: {"id":"c","model":"m","choices":[{"index":0,"delta":{"function_call":)"
                       R"({"name":"f\u001b[2J","arguments":""}}}]})"
                       "\n\n")
                 .events.last()
                 .type,
             EventType::Error);
    QCOMPARE(lastFrame(R"(data: {"id":"c","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,)"
                       R"("id":"c1","type":"custom","custom":{"name":"f\u202e","input":""}}]}}]})"
                       "\n\n")
                 .events.last()
                 .type,
             EventType::Error);
}

void TestOpenAICompletionsAdapter::reasoningUsesMaxCompletionTokens() {
    // Reasoning models reject max_tokens; a plain request to a compatible server keeps it.
    Target t;
    t.api = QStringLiteral("openai-completions");
    t.baseUrl = QStringLiteral("http://127.0.0.1:8000/v1");
    t.modelId = QStringLiteral("m");
    auto sent = [&](const char *body) {
        const auto req = AnthropicMessagesCodec().decode(body, nullptr);
        return QJsonDocument::fromJson(
                   OpenAICompletionsAdapter().buildRequest(spokenIn(*req, wire::Api::AnthropicMessages), t, {}).body)
            .object();
    };
    const QJsonObject thinking =
        sent(R"({"model":"m","max_tokens":1000,"thinking":{"type":"enabled","budget_tokens":2048},
      "messages":[{"role":"user","content":"hi"}]})");
    QCOMPARE(thinking.value("max_completion_tokens").toInt(), 1000); // never raised either
    QVERIFY(!thinking.contains("max_tokens"));
    const QJsonObject plain = sent(R"({"model":"m","max_tokens":1000,"messages":[{"role":"user","content":"hi"}]})");
    QCOMPARE(plain.value("max_tokens").toInt(), 1000);
}

void TestOpenAICompletionsAdapter::usageOnlyChunkIsRecognised() {
    // The frame a passthrough must hold back from a client that did not set include_usage,
    // as the decoder reports it after each event it read.
    auto usageOnlyFrames = [](const QByteArray &transcript) {
        OpenAICompletionsStreamDecoder decoder;
        QList<int> frames;
        const auto events = sw::test::splitSse(transcript);
        for (int i = 0; i < events.size(); ++i) {
            decoder.feed(events[i]);
            if (decoder.lastWasUsageOnly())
                frames << i;
        }
        return frames;
    };
    const QByteArray transcript = readTestData(QStringLiteral("openai_upstream_logprobs.sse"));
    const auto events = sw::test::splitSse(transcript);
    const QList<int> found = usageOnlyFrames(transcript);
    QCOMPARE(found.size(), 1);
    QVERIFY(events[found[0]].data.contains("\"usage\"")); // the chunk that carries the usage
    QVERIFY(events[found[0]].data.contains("\"choices\":[]"));
    // Not: a content chunk whose text says "usage" with a null usage, [DONE], an error that
    // carries usage, and a usage chunk after the stream ended.
    QCOMPARE(usageOnlyFrames("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"usage\"},"
                             "\"finish_reason\":null}],\"usage\":null}\n\ndata: [DONE]\n\n"),
             QList<int>{});
    QCOMPARE(usageOnlyFrames(
                 "data: {\"error\":{\"message\":\"overloaded\"},\"choices\":[],\"usage\":{\"prompt_tokens\":1}}\n\n"),
             QList<int>{});
    QCOMPARE(usageOnlyFrames("data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":1}}\n\n"
                             "data: [DONE]\n\n"
                             "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":1}}\n\n"),
             QList<int>{0});
}

void TestOpenAICompletionsAdapter::sameApiExtrasRideOnDone() {
    auto decoder = OpenAICompletionsAdapter().makeDecoder(Target());
    const QList<StreamEvent> events =
        sw::test::decodeTranscript(*decoder, readTestData(QStringLiteral("openai_upstream_logprobs.sse")));
    QCOMPARE(events.last().type, EventType::Done);
    const QJsonObject native = events.last().native;
    QCOMPARE(native.value(QStringLiteral("logprobs")).toObject().value(QStringLiteral("content")).toArray().size(), 3);
    QCOMPARE(native.value(QStringLiteral("annotations")).toArray().size(), 1);
    QCOMPARE(str(native.value(QStringLiteral("system_fingerprint"))), QStringLiteral("fp_f33640a400"));
    // The usage object as the upstream sent it, as compact text in Qt's member order.
    const QByteArray usageText = events.last().nativeUsageJson;
    const QJsonObject usage = QJsonDocument::fromJson(usageText).object();
    QCOMPARE(usage.value(QStringLiteral("total_tokens")).toInt(), 13);
    QCOMPARE(QJsonDocument(usage).toJson(QJsonDocument::Compact), usageText);
    QVERIFY(!native.contains(QStringLiteral("usage")));
}

void TestOpenAICompletionsAdapter::resultsComeBeforeWordsTypedWhileTheToolRan() {
    // A Responses history with the user's words between a call and its output: Chat wants the tool
    // messages right after the assistant message with the calls, so the words come after them.
    const auto req = OpenAIResponsesCodec().decode(
        "{\"model\":\"m\",\"max_tokens\":100,\"input\":[{\"role\":\"user\",\"content\":\"go\"},"
        "{\"type\":\"function_call\",\"call_id\":\"call_s1\",\"name\":\"get_time\",\"arguments\":\"{}\"},"
        "{\"type\":\"function_call\",\"call_id\":\"call_s2\",\"name\":\"screenshot\",\"arguments\":\"{}\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"call_s1\",\"output\":\"noon\"},"
        "{\"role\":\"user\",\"content\":\"hurry\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"call_s2\",\"output\":\"shot\"}]}",
        nullptr);
    QVERIFY(req);
    const QJsonArray messages =
        OpenAICompletionsAdapter::buildBody(spokenIn(*req, wire::Api::OpenAIResponses), "gpt", false)
            .value("messages")
            .toArray();
    QCOMPARE(rolesOf(messages), QStringList({"user", "assistant", "tool", "tool", "user"}));
    QCOMPARE(str(messages[2].toObject().value("tool_call_id")), QStringLiteral("call_s1"));
    QCOMPARE(str(messages[3].toObject().value("tool_call_id")), QStringLiteral("call_s2"));
    QCOMPARE(str(messages[4].toObject().value("content")), QStringLiteral("hurry"));
    // A server that names every turn's call "call_0": a later call of the same id answers its own
    // result, which never moves to an earlier turn.
    const auto repeated = OpenAIChatCodec().decode(
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_0\",\"type\":\"function\","
        "\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"call_0\",\"content\":\"first\"},"
        "{\"role\":\"user\",\"content\":\"b\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_0\",\"type\":\"function\","
        "\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},"
        "{\"role\":\"user\",\"content\":\"c\"},"
        "{\"role\":\"tool\",\"tool_call_id\":\"call_0\",\"content\":\"second\"}]}",
        nullptr);
    QVERIFY(repeated);
    const QJsonArray again =
        OpenAICompletionsAdapter::buildBody(spokenIn(*repeated, wire::Api::OpenAIResponses), "gpt", false)
            .value("messages")
            .toArray();
    QCOMPARE(rolesOf(again), QStringList({"user", "assistant", "tool", "user", "assistant", "tool", "user"}));
    QCOMPARE(str(again[2].toObject().value("content")), QStringLiteral("first"));
    QCOMPARE(str(again[5].toObject().value("content")), QStringLiteral("second"));
}

// Probe G2 4: an Anthropic client's temperature, with no thinking asked, went to gpt-5, which always
// reasons and refuses it ("Unsupported parameter: 'temperature' is not supported with this model."):
// the 400 ended the chain. Such a model (o-series, gpt-5 and its mini, nano, pro and codex models)
// goes without the client's sampling and stop sequences on any server, asked to reason or not,
// converted or the client's own body, and the answer names what it went without.
void TestOpenAICompletionsAdapter::aModelThatAlwaysReasonsGetsNoSampling() {
    for (const char *id : {"gpt-5", "gpt-5-mini", "openai/gpt-5-nano", "gpt-5-pro", "gpt-5-codex", "gpt-5.1-codex-max",
                           "gpt-5.2-pro", "o1", "o3", "o3-mini", "o4-mini", "O4-MINI-2025-04-16"})
        QVERIFY2(OpenAICompletionsAdapter::alwaysReasons(QLatin1String(id)), id);
    for (const char *id : {"gpt-5.1", "gpt-5.2", "gpt-5-chat-latest", "gpt-4.1", "gpt-4o", "openai/gpt-oss-120b",
                           "omni-moderation-latest", "deepseek/deepseek-r1", ""})
        QVERIFY2(!OpenAICompletionsAdapter::alwaysReasons(QLatin1String(id)), id);

    const auto req = AnthropicMessagesCodec().decode(
        R"({"model":"claude","max_tokens":1000,"temperature":0.7,"top_p":0.9,"stop_sequences":["END"],)"
        R"("messages":[{"role":"user","content":"hi"}]})",
        nullptr);
    QVERIFY(req);
    const ChatRequest converted = spokenIn(*req, wire::Api::AnthropicMessages);
    Target t = target(QStringLiteral("https://example.openai.azure.com/openai/v1"));
    t.modelId = QStringLiteral("gpt-5");
    const QJsonObject sent = json(OpenAICompletionsAdapter().buildRequest(converted, t, {}).body);
    QVERIFY(!sent.contains("temperature"));
    QVERIFY(!sent.contains("top_p"));
    QVERIFY(!sent.contains("stop")); // the gateway cuts at it itself
    QCOMPARE(OpenAICompletionsAdapter().stopSequencesSent(converted, t), 0);
    QCOMPARE(sent.value("max_completion_tokens").toInt(), 1000); // a reasoning model refuses max_tokens
    QVERIFY(!sent.contains("reasoning_effort"));                 // the client asked for none
    QCOMPARE(OpenAICompletionsAdapter().droppedFor(converted, t), QStringList({"temperature", "top_p"}));

    // gpt-5.1 reasons only when asked (its default effort is none) and takes sampling then; a model
    // configured not to reason keeps the client's sampling too (an operator's say).
    Target gpt51 = t;
    gpt51.modelId = QStringLiteral("gpt-5.1");
    Target configuredNot = t;
    configuredNot.modelReasons = false;
    for (const Target &other : {gpt51, configuredNot}) {
        const QJsonObject kept = json(OpenAICompletionsAdapter().buildRequest(converted, other, {}).body);
        QCOMPARE(kept.value("temperature").toDouble(), 0.7);
        QVERIFY(OpenAICompletionsAdapter().droppedFor(converted, other).isEmpty());
    }

    // A Chat client's own body to o3: its sampling goes, the rest as it wrote it. A zero penalty is the
    // default: it goes too, unnamed.
    const QByteArray own = R"({"model":"m","temperature":0.2,"presence_penalty":0,"frequency_penalty":0.4,)"
                           R"("seed":7,"messages":[{"role":"user","content":"hi"}]})";
    const auto chat = OpenAIChatCodec().decode(own, nullptr);
    QVERIFY(chat);
    const ChatRequest spoken = spokenIn(*chat, wire::Api::OpenAICompletions);
    t.modelId = QStringLiteral("o3");
    const QJsonObject passed = json(OpenAICompletionsAdapter().buildRequest(spoken, t, {}).body);
    for (const char *key : {"temperature", "presence_penalty", "frequency_penalty"})
        QVERIFY2(!passed.contains(QLatin1String(key)), key);
    QCOMPARE(passed.value("seed").toInt(), 7);
    QCOMPARE(passed.value("model").toString(), QStringLiteral("o3"));
    // Its max_tokens goes by the name such a model takes, on any server (Azure's too): a failover from
    // a server that took max_tokens reached o3 as a 400 that ended the chain (probe GV 1).
    const auto capped = OpenAIChatCodec().decode(
        R"({"model":"m","max_tokens":500,"messages":[{"role":"user","content":"hi"}]})", nullptr);
    QVERIFY(capped);
    const QJsonObject renamed =
        json(OpenAICompletionsAdapter().buildRequest(spokenIn(*capped, wire::Api::OpenAICompletions), t, {}).body);
    QCOMPARE(renamed.value("max_completion_tokens").toInt(), 500);
    QVERIFY(!renamed.contains("max_tokens"));
    QCOMPARE(OpenAICompletionsAdapter().droppedFor(spoken, t), QStringList({"temperature", "frequency_penalty"}));
    t.modelId = QStringLiteral("gpt-4.1"); // a model that takes them: the client's bytes as they were
    const QByteArray asSent = OpenAICompletionsAdapter().buildRequest(spoken, t, {}).body;
    QCOMPARE(json(asSent).value("temperature").toDouble(), 0.2);
    QVERIFY(asSent.startsWith(R"({"model":"gpt-4.1","temperature":0.2,"presence_penalty":0,)"));
    QVERIFY(OpenAICompletionsAdapter().droppedFor(spoken, t).isEmpty());
}

// Probe L1 LOW 2: OpenAI's reasoning models take only the default sampling, so a converted request that
// asks api.openai.com to reason goes without the client's temperature and top_p (and pi's presence
// penalty); the answer said nothing of it. A compatible server that reasons takes them.
void TestOpenAICompletionsAdapter::samplingLeftOutForReasoningIsNamed() {
    const auto pi = PiNativeCodec().decode(
        R"({"model":"m","context":{"messages":[{"role":"user","content":"hi","timestamp":1}]},)"
        R"("options":{"reasoning":"medium","temperature":0.2,"topP":0.5,"presencePenalty":0.3}})",
        nullptr);
    QVERIFY(pi);
    const ChatRequest converted = spokenIn(*pi, wire::Api::Pi);
    Target openai = target(QStringLiteral("https://api.openai.com/v1"));
    openai.modelId = QStringLiteral("gpt-5.1");
    const QJsonObject sent = json(OpenAICompletionsAdapter().buildRequest(converted, openai, {}).body);
    QCOMPARE(sent.value("reasoning_effort").toString(), QStringLiteral("medium"));
    for (const char *key : {"temperature", "top_p", "presence_penalty"})
        QVERIFY2(!sent.contains(QLatin1String(key)), key);
    QCOMPARE(OpenAICompletionsAdapter().droppedFor(converted, openai),
             QStringList({"options.temperature", "options.topP", "options.presencePenalty"}));
    const Target other = target(); // OpenRouter: takes them
    QCOMPARE(json(OpenAICompletionsAdapter().buildRequest(converted, other, {}).body).value("temperature").toDouble(),
             0.2);
    QVERIFY(OpenAICompletionsAdapter().droppedFor(converted, other).isEmpty());
    Target configuredNot = openai; // no reasoning asked of it: sampling kept
    configuredNot.modelReasons = false;
    QCOMPARE(json(OpenAICompletionsAdapter().buildRequest(converted, configuredNot, {}).body)
                 .value("temperature")
                 .toDouble(),
             0.2);
    QVERIFY(OpenAICompletionsAdapter().droppedFor(converted, configuredNot).isEmpty());
}

// Probe G2 7: a Chat client's logprobs, top_logprobs, logit_bias or a turn's name (multi-agent
// frameworks set it) went to Groq byte for byte, and Groq refuses each with a 400 that ended the
// chain. Groq gets the body without them, a turn's name in front of its words (as a conversion
// writes it), and the answer names them; any other server gets them as the client wrote them.
void TestOpenAICompletionsAdapter::groqGoesWithoutWhatItRefuses() {
    const QByteArray body =
        R"({"model":"m","logprobs":true,"top_logprobs":3,"logit_bias":{"50256":-100},)"
        R"("temperature":0.5,"messages":[)"
        R"({"role":"system","name":"rules","content":"Be brief."},)"
        R"({"role":"user","name":"alice","content":"hi"},)"
        R"({"role":"user","name":"bob","content":[{"type":"image_url","image_url":{"url":"https://x.test/a.png"}}]},)"
        R"({"role":"assistant","name":"planner","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},)"
        R"({"role":"tool","name":"f","tool_call_id":"call_1","content":"done"},)"
        R"({"role":"assistant","name":"planner","content":[{"type":"text","text":"Done."}]}]})";
    const auto req = OpenAIChatCodec().decode(body, nullptr);
    QVERIFY(req);
    const ChatRequest spoken = spokenIn(*req, wire::Api::OpenAICompletions);
    Target groq = target(QStringLiteral("https://api.groq.com/openai/v1"));
    groq.modelId = QStringLiteral("openai/gpt-oss-120b");
    const QJsonObject sent = json(OpenAICompletionsAdapter().buildRequest(spoken, groq, {}).body);
    for (const char *key : {"logprobs", "top_logprobs", "logit_bias"})
        QVERIFY2(!sent.contains(QLatin1String(key)), key);
    QCOMPARE(sent.value("temperature").toDouble(), 0.5);
    const QJsonArray messages = sent.value("messages").toArray();
    QCOMPARE(messages.size(), 6);
    for (const QJsonValue &m : messages)
        QVERIFY(!m.toObject().contains("name"));
    QCOMPARE(str(messages[0].toObject().value("content")), QStringLiteral("rules: Be brief."));
    QCOMPARE(str(messages[1].toObject().value("content")), QStringLiteral("alice: hi"));
    const QJsonArray bobs = messages[2].toObject().value("content").toArray();
    QCOMPARE(bobs.size(), 2);
    QCOMPARE(bobs[0].toObject(), QJsonObject({{"type", "text"}, {"text", "bob:"}}));
    QVERIFY(messages[3].toObject().value("content").isNull()); // a call without words: no words added
    QCOMPARE(str(messages[4].toObject().value("content")), QStringLiteral("done"));
    QCOMPARE(str(messages[5].toObject().value("content").toArray()[0].toObject().value("text")),
             QStringLiteral("planner: Done."));
    QCOMPARE(OpenAICompletionsAdapter().droppedFor(spoken, groq),
             QStringList({"logprobs", "top_logprobs", "logit_bias", "messages[].name"}));

    // Another server takes them: the client's bytes, nothing said.
    Target openai = target(QStringLiteral("https://api.openai.com/v1"));
    openai.modelId = QStringLiteral("gpt-4.1");
    const QByteArray asSent = OpenAICompletionsAdapter().buildRequest(spoken, openai, {}).body;
    QVERIFY(asSent.startsWith(R"({"model":"gpt-4.1","logprobs":true,"top_logprobs":3,)"));
    QCOMPARE(json(asSent).value("messages").toArray()[1].toObject().value("name").toString(), QStringLiteral("alice"));
    QVERIFY(OpenAICompletionsAdapter().droppedFor(spoken, openai).isEmpty());
}

// Probe AB3-F3: a Chat client that spoke as to OpenAI (pi-ai at an unknown base URL: its system prompt
// as `developer` for a reasoning model, `store: false`) got its body through as it was to DeepSeek, which
// refuses the role, and Cerebras, which refuses `store`; each 400 ended the chain. Another server than
// OpenAI's gets `developer` as `system` and no `store` (named unless `false`, the default); OpenAI's own
// hosts get the client's bytes.
void TestOpenAICompletionsAdapter::openAIsOwnMembersGoOnlyToOpenAI() {
    const QByteArray body = R"({"model":"m","store":false,"stream":true,"messages":[)"
                            R"({"role":"developer","content":"Answer in one line."},{"role":"user","content":"hi"},)"
                            R"({"role":"assistant","content":"Hello."},{"role":"developer","content":"Be kind."},)"
                            R"({"role":"user","content":"again"}]})";
    const auto req = OpenAIChatCodec().decode(body, nullptr);
    QVERIFY(req);
    const ChatRequest spoken = spokenIn(*req, wire::Api::OpenAICompletions);
    const auto roles = [](const QJsonObject &sent) {
        QStringList out;
        for (const QJsonValue &m : sent.value("messages").toArray())
            out << m.toObject().value("role").toString();
        return out;
    };
    for (const char *host : {"https://api.deepseek.com", "https://api.cerebras.ai/v1", "http://localhost:8000/v1",
                             "https://openrouter.ai/api/v1"}) {
        Target t = target(QLatin1String(host));
        t.modelId = QStringLiteral("deepseek-chat");
        const QJsonObject sent = json(OpenAICompletionsAdapter().buildRequest(spoken, t, {}).body);
        QVERIFY2(!sent.contains("store"), host);
        QCOMPARE(roles(sent), QStringList({"system", "user", "assistant", "system", "user"}));
        QCOMPARE(str(sent.value("messages").toArray()[0].toObject().value("content")),
                 QStringLiteral("Answer in one line."));
        QVERIFY(OpenAICompletionsAdapter().droppedFor(spoken, t).isEmpty()); // nothing lost
    }
    // `store: true` asked OpenAI to keep the answer: another server cannot, and the answer says so.
    QByteArray stored = body;
    stored.replace(R"("store":false)", R"("store":true)");
    const auto storedReq = OpenAIChatCodec().decode(stored, nullptr);
    QVERIFY(storedReq);
    const ChatRequest storedSpoken = spokenIn(*storedReq, wire::Api::OpenAICompletions);
    Target cerebras = target(QStringLiteral("https://api.cerebras.ai/v1"));
    cerebras.modelId = QStringLiteral("gpt-oss-120b");
    QVERIFY(!json(OpenAICompletionsAdapter().buildRequest(storedSpoken, cerebras, {}).body).contains("store"));
    QCOMPARE(OpenAICompletionsAdapter().droppedFor(storedSpoken, cerebras), QStringList{"store"});
    // OpenAI's and Azure's hosts take both: the client's bytes.
    for (const char *host : {"https://api.openai.com/v1", "https://my-resource.openai.azure.com/openai/v1"}) {
        Target t = target(QLatin1String(host));
        t.modelId = QStringLiteral("gpt-4.1");
        const QByteArray sent = OpenAICompletionsAdapter().buildRequest(storedSpoken, t, {}).body;
        QVERIFY2(sent.startsWith(R"({"model":"gpt-4.1","store":true,"stream":true,"messages":[{"role":"developer",)"),
                 sent.constData());
        QVERIFY(OpenAICompletionsAdapter().droppedFor(storedSpoken, t).isEmpty());
    }
}

// Review of AB3-F3: pi-ai sends `store: false` on every request, and its 1-4 MB conversations to Groq,
// OpenRouter or vLLM were decoded and written again whole to leave it (and a `developer` turn) out. The
// body now goes by the splice: what the client wrote stays byte for byte, key order and spacing too,
// with `store` taken out and each `developer` role written `system`.
void TestOpenAICompletionsAdapter::openAIsOwnMembersLeaveByTheSplice() {
    const QByteArray body = "{ \"model\": \"m\", \"store\": false,\n \"messages\": [ {\"content\": \"Be brief.\", "
                            "\"role\" : \"developer\"},\n  {\"role\": \"user\", \"content\": \"2.50\"} ],"
                            " \"temperature\": 1.0, \"seed\": 12345678901234567890 }";
    const auto req = OpenAIChatCodec().decode(body, nullptr);
    QVERIFY(req);
    const ChatRequest spoken = spokenIn(*req, wire::Api::OpenAICompletions);
    for (const char *host :
         {"https://api.groq.com/openai/v1", "https://openrouter.ai/api/v1", "http://localhost:8000/v1"}) {
        Target t = target(QLatin1String(host));
        t.modelId = QStringLiteral("up");
        const QByteArray sent = OpenAICompletionsAdapter().buildRequest(spoken, t, {}).body;
        QCOMPARE(sent, QByteArray("{ \"model\": \"up\",\n \"messages\": [ {\"content\": \"Be brief.\", "
                                  "\"role\" : \"system\"},\n  {\"role\": \"user\", \"content\": \"2.50\"} ],"
                                  " \"temperature\": 1.0, \"seed\": 12345678901234567890,\"stream\":true,"
                                  "\"stream_options\":{\"include_usage\":true} }"));
        QVERIFY(OpenAICompletionsAdapter().droppedFor(spoken, t).isEmpty());
    }
    // OpenAI's own host keeps both, as the client wrote them.
    Target openai = target(QStringLiteral("https://api.openai.com/v1"));
    openai.modelId = QStringLiteral("gpt-4.1");
    const QByteArray sent = OpenAICompletionsAdapter().buildRequest(spoken, openai, {}).body;
    QVERIFY2(sent.startsWith("{ \"model\": \"gpt-4.1\", \"store\": false,\n \"messages\": [ {\"content\": "
                             "\"Be brief.\", \"role\" : \"developer\"},"),
             sent.constData());
    // A role the bytes do not show plainly (an escape in it) still goes as `system`, written again.
    QByteArray escaped = body;
    escaped.replace("\"developer\"", "\"develop\\u0065r\"");
    const auto escapedReq = OpenAIChatCodec().decode(escaped, nullptr);
    QVERIFY(escapedReq);
    Target groq = target(QStringLiteral("https://api.groq.com/openai/v1"));
    const QJsonObject rewritten = json(
        OpenAICompletionsAdapter().buildRequest(spokenIn(*escapedReq, wire::Api::OpenAICompletions), groq, {}).body);
    QVERIFY(!rewritten.contains("store"));
    QCOMPARE(rewritten.value("messages").toArray()[0].toObject().value("role").toString(), QStringLiteral("system"));
}

// Probe AC3 F5: a Chat client's reasoning_effort, written for the chain's first model, reached the next
// as it was: minimal, gpt-5's lowest, is refused by gpt-5.1 with a 400 that ends the request. The
// model gets the nearest word it takes, in the client's bytes, and the answer names it.
void TestOpenAICompletionsAdapter::aPassthroughEffortGoesAsTheAnsweringModelTakesIt() {
    const QByteArray body = "{\"model\": \"m\", \"reasoning_effort\": \"minimal\", "
                            "\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}";
    const auto req = OpenAIChatCodec().decode(body, nullptr);
    QVERIFY(req);
    const ChatRequest spoken = spokenIn(*req, wire::Api::OpenAICompletions);
    Target t = target(QStringLiteral("https://api.openai.com/v1"));
    t.modelId = QStringLiteral("gpt-5.1");
    QCOMPARE(
        OpenAICompletionsAdapter().buildRequest(spoken, t, {}).body,
        QByteArray("{\"model\": \"gpt-5.1\", \"reasoning_effort\": \"low\", \"messages\": [{\"role\": "
                   "\"user\", \"content\": \"hi\"}],\"stream\":true,\"stream_options\":{\"include_usage\":true}}"));
    QCOMPARE(OpenAICompletionsAdapter().droppedFor(spoken, t), QStringList{QStringLiteral("reasoning_effort")});
    // Written whole (a body the splice declines), the same.
    ChatRequest whole = spoken;
    whole.rawBody.clear();
    QCOMPARE(json(OpenAICompletionsAdapter().buildRequest(whole, t, {}).body).value("reasoning_effort").toString(),
             QStringLiteral("low"));
    // gpt-5 takes minimal, and a model the gateway does not know gets the client's word.
    for (const char *id : {"gpt-5", "qwen3-32b"}) {
        t.modelId = QLatin1String(id);
        QCOMPARE(json(OpenAICompletionsAdapter().buildRequest(spoken, t, {}).body).value("reasoning_effort").toString(),
                 QStringLiteral("minimal"));
        QVERIFY(!OpenAICompletionsAdapter().droppedFor(spoken, t).contains(QStringLiteral("reasoning_effort")));
    }
}

// A converted request to a model configured `"reasoning": false` (gpt-4o) goes without
// reasoning_effort, which such a model refuses with a 400 no failover passes; the client's
// sampling then goes as asked. Unknown (the default) and true send it as before; a same-API
// client's own body is never changed.
void TestOpenAICompletionsAdapter::modelConfiguredNotToReasonGetsNoReasoningEffort() {
    const auto req = AnthropicMessagesCodec().decode("{\"model\":\"claude\",\"max_tokens\":8000,\"temperature\":0.5,"
                                                     "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":4000},"
                                                     "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
                                                     nullptr);
    QVERIFY(req);
    const ChatRequest converted = spokenIn(*req, wire::Api::AnthropicMessages);
    Target t = target(QStringLiteral("https://api.openai.com/v1"));
    t.modelId = QStringLiteral("gpt-4o");
    const QJsonObject reasons = json(OpenAICompletionsAdapter().buildRequest(converted, t, {}).body);
    QCOMPARE(str(reasons.value(QStringLiteral("reasoning_effort"))), QStringLiteral("low"));
    QVERIFY(!reasons.contains(QStringLiteral("temperature")));

    t.modelReasons = false;
    const QJsonObject body = json(OpenAICompletionsAdapter().buildRequest(converted, t, {}).body);
    QVERIFY(!body.contains(QStringLiteral("reasoning_effort")));
    QCOMPARE(body.value(QStringLiteral("temperature")).toDouble(), 0.5);
    QCOMPARE(body.value(QStringLiteral("max_completion_tokens")).toInt(), 8000);
    QCOMPARE(str(body.value(QStringLiteral("messages")).toArray()[0].toObject().value(QStringLiteral("content"))),
             QStringLiteral("hi"));
    // "none" is a reasoning setting too: gpt-4o refuses reasoning_effort whatever its value.
    const auto off = OpenAIResponsesCodec().decode(
        "{\"model\":\"m\",\"input\":\"hi\",\"reasoning\":{\"effort\":\"none\"}}", nullptr);
    QVERIFY(off);
    QVERIFY(!json(OpenAICompletionsAdapter().buildRequest(spokenIn(*off, wire::Api::OpenAIResponses), t, {}).body)
                 .contains(QStringLiteral("reasoning_effort")));

    // A Chat client's own body goes as it sent it.
    const auto same = OpenAIChatCodec().decode(
        "{\"model\":\"m\",\"reasoning_effort\":\"high\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
        nullptr);
    QVERIFY(same);
    QCOMPARE(
        str(json(OpenAICompletionsAdapter().buildRequest(spokenIn(*same, wire::Api::OpenAICompletions), t, {}).body)
                .value(QStringLiteral("reasoning_effort"))),
        QStringLiteral("high"));
}

// A same-API answer's usage object is the upstream's, written exactly as the codec writes any
// embedded JSON value (what a client saw before the usage was kept as text): integers, the
// *_details, doubles such as a cost (which are not kept as text), names outside ASCII, and an
// integer past int64.
void TestOpenAICompletionsAdapter::usageIsWrittenAsTheUpstreamSentIt_data() {
    QTest::addColumn<QByteArray>("usage");
    QTest::addColumn<bool>("asText");
    QTest::newRow("counts and details")
        << QByteArray(R"({"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,)"
                      R"("prompt_tokens_details":{"cached_tokens":4,"audio_tokens":0},)"
                      R"("completion_tokens_details":{"reasoning_tokens":2,"accepted_prediction_tokens":0}})")
        << true;
    QTest::newRow("a cost") << QByteArray(R"({"prompt_tokens":1,"completion_tokens":2,"cost":0.00001234})") << false;
    QTest::newRow("a large double") << QByteArray(R"({"prompt_tokens":1,"big":1e20})") << false;
    QTest::newRow("past int64") << QByteArray(R"({"prompt_tokens":18446744073709551615})") << false;
    QTest::newRow("a name outside ASCII")
        << QByteArray("{\"prompt_tokens\":1,\"\xef\xbf\xbf\":1,\"\xf0\x9f\x98\x80\":2}") << false;
    QTest::newRow("escapes") << QByteArray(R"({"prompt_tokens":1,"note":"a\"b\u0001\n"})") << true;
    QTest::newRow("a string outside ASCII") << QByteArray("{\"prompt_tokens\":1,\"note\":\"caf\xc3\xa9\"}") << false;
}

void TestOpenAICompletionsAdapter::usageIsWrittenAsTheUpstreamSentIt() {
    QFETCH(QByteArray, usage);
    QFETCH(bool, asText);
    EventAccumulator acc;
    acc.addAll(decode("data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},"
                      "\"finish_reason\":\"stop\"}]}\n\ndata: {\"id\":\"c1\",\"choices\":[],\"usage\":" +
                      usage + "}\n\ndata: [DONE]\n\n"));
    QVERIFY(acc.isFinished());
    QCOMPARE(!acc.message().nativeUsageJson.isEmpty(), asText);
    QCOMPARE(acc.message().native.contains(QStringLiteral("usage")), !asText);
    sw::formats::EncodeInfo info;
    info.upstreamApi = sw::wire::apiName(sw::wire::Api::OpenAICompletions);
    info.model = QStringLiteral("m");
    const QByteArray answer = OpenAIChatCodec().encodeResponse(acc.message(), info);
    // What the codec wrote before: the usage taken into Qt's JSON (rj::toQt), then written.
    sw::wire::rj::ParsedJson parsed;
    QVERIFY(parsed.parse(usage));
    sw::wire::JsonWriter expected;
    expected.value(sw::wire::rj::toQtObject(parsed.object()));
    const QByteArray want = "\"usage\":" + expected.take();
    QVERIFY2(answer.contains(want), (answer + "\nwanted: " + want).constData());
}

// A model that writes at most N tokens refuses a request asking for more with a 400: each of the
// client's caps that asks for more goes down to N, in the client's own bytes or a converted body.
// When the server named N after refusing its own default (vLLM: the context left), N goes even to a
// client that asked for no maximum.
void TestOpenAICompletionsAdapter::aModelsOutputCapLowersTheRequestsMax() {
    Target t = target();
    t.maxOutputTokens = 16384;
    const auto own = OpenAIChatCodec().decode(
        "{\"model\":\"m\",\"max_completion_tokens\":100000,\"max_tokens\":9000,\"x_extra\":true,"
        "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
        nullptr);
    QVERIFY(own);
    const QByteArray spliced =
        OpenAICompletionsAdapter().buildRequest(spokenIn(*own, wire::Api::OpenAICompletions), t, {}).body;
    // The smaller of the client's two caps is the request's (9000, under the model's 16384): under both names.
    QCOMPARE(json(spliced).value(QStringLiteral("max_completion_tokens")).toInt(), 9000);
    QCOMPARE(json(spliced).value(QStringLiteral("max_tokens")).toInt(), 9000);
    QVERIFY(spliced.contains("\"x_extra\":true"));
    const auto over = OpenAIChatCodec().decode("{\"model\":\"m\",\"max_completion_tokens\":100000,\"x_extra\":true,"
                                               "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
                                               nullptr);
    QVERIFY(over);
    const QByteArray lowered =
        OpenAICompletionsAdapter().buildRequest(spokenIn(*over, wire::Api::OpenAICompletions), t, {}).body;
    QCOMPARE(json(lowered).value(QStringLiteral("max_completion_tokens")).toInt(), 16384);
    QVERIFY(!json(lowered).contains(QStringLiteral("max_tokens")));
    QVERIFY(lowered.contains("\"x_extra\":true"));

    const auto anthropic = AnthropicMessagesCodec().decode(
        "{\"model\":\"m\",\"max_tokens\":64000,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", nullptr);
    QVERIFY(anthropic);
    QCOMPARE(
        json(OpenAICompletionsAdapter().buildRequest(spokenIn(*anthropic, wire::Api::AnthropicMessages), t, {}).body)
            .value(QStringLiteral("max_tokens"))
            .toInt(),
        16384);

    const auto none =
        OpenAIChatCodec().decode("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", nullptr);
    QVERIFY(none);
    const ChatRequest plain = spokenIn(*none, wire::Api::OpenAICompletions);
    QVERIFY(!json(OpenAICompletionsAdapter().buildRequest(plain, t, {}).body).contains(QStringLiteral("max_tokens")));
    t.maxOutputTokens = 32718;
    t.outputCapNamed = true;
    QCOMPARE(
        json(OpenAICompletionsAdapter().buildRequest(plain, t, {}).body).value(QStringLiteral("max_tokens")).toInt(),
        32718);
}

// OpenAI's strict mode requires every property in `required` (400 "'required' is required to be
// supplied and to be an array including every key in properties"), which ended the chain: such a
// schema goes with strict: false, as it is (never made nullable-required: the client's validator
// would get nulls). One strict mode takes stays strict.
void TestOpenAICompletionsAdapter::anotherApisStrictSchemaIsStrictOnlyWhereStrictModeTakesIt() {
    for (const bool noteRequired : {false, true}) {
        const auto req = AnthropicMessagesCodec().decode(sw::test::anthropicStrictSchemas(noteRequired), nullptr);
        QVERIFY(req);
        const QJsonObject sent = json(
            OpenAICompletionsAdapter().buildRequest(spokenIn(*req, wire::Api::AnthropicMessages), target(), {}).body);
        const QJsonObject format = sent.value("response_format").toObject().value("json_schema").toObject();
        const QJsonObject fn = sent.value("tools").toArray()[0].toObject().value("function").toObject();
        QCOMPARE(format.value("strict"), QJsonValue(noteRequired));
        QCOMPARE(fn.value("strict"), QJsonValue(noteRequired));
        QCOMPARE(format.value("schema").toObject().value("required").toArray().size(), noteRequired ? 2 : 1);
        QCOMPARE(fn.value("parameters"), format.value("schema"));
    }
}

namespace {
// A description of the kind Claude Code gives its Bash tool: sentences, thousands of characters.
QString longDescription() {
    QString d;
    for (int i = 0; d.size() < 2256; ++i)
        d += QStringLiteral("Sentence %1 says how the tool is used, and why. ").arg(i);
    return d.trimmed();
}
} // namespace

void TestOpenAICompletionsAdapter::aLongToolDescriptionIsCutForOpenAI() {
    // OpenAI's Chat API refuses a function description over 1024 characters with a 400
    // (string_above_max_length) no failover gets past: Claude Code failing over to gpt-4.1 lost every
    // request. The candidate gets the description cut at a sentence's end; the rest is named.
    const QString description = longDescription();
    QJsonObject claudeCode{{"model", "claude"},
                           {"max_tokens", 1000},
                           {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "ls"}}}},
                           {"tools", QJsonArray{QJsonObject{{"name", "Bash"},
                                                            {"description", description},
                                                            {"input_schema", QJsonObject{{"type", "object"}}}}}}};
    const auto req = AnthropicMessagesCodec().decode(QJsonDocument(claudeCode).toJson(QJsonDocument::Compact), nullptr);
    QVERIFY(req);
    const ChatRequest converted = spokenIn(*req, wire::Api::AnthropicMessages);
    const auto sentDescription = [&](const Target &t) {
        return json(OpenAICompletionsAdapter().buildRequest(converted, t, {}).body)
            .value("tools")
            .toArray()[0]
            .toObject()
            .value("function")
            .toObject()
            .value("description")
            .toString();
    };
    Target openai = target(QStringLiteral("https://api.openai.com/v1"));
    openai.modelId = QStringLiteral("gpt-4.1");
    Target azure = target(QStringLiteral("https://example.openai.azure.com/openai/v1"));
    azure.modelId = QStringLiteral("my-deployment");
    Target proxied = target(QStringLiteral("http://litellm.internal:4000/v1"));
    proxied.modelId = QStringLiteral("openai/gpt-4o");
    for (const Target &t : {openai, azure, proxied}) {
        const QString cut = sentDescription(t);
        QVERIFY2(cut.size() <= OpenAICompletionsAdapter::kMaxToolDescription, qPrintable(t.baseUrl));
        QVERIFY(cut.size() > OpenAICompletionsAdapter::kMaxToolDescription * 3 / 4);
        QVERIFY(description.startsWith(cut));
        QVERIFY2(cut.endsWith(QLatin1String("why.")), qPrintable(cut.right(20))); // a sentence's end
        QCOMPARE(OpenAICompletionsAdapter().droppedFor(converted, t), QStringList{"tools[].description"});
    }
    // A server without the limit (vLLM, DeepSeek, gpt-oss anywhere) gets the whole description.
    Target vllm = target(QStringLiteral("http://localhost:8000/v1"));
    vllm.modelId = QStringLiteral("Qwen/Qwen3-Coder-30B");
    Target oss = target(QStringLiteral("https://api.groq.com/openai/v1"));
    oss.modelId = QStringLiteral("openai/gpt-oss-120b");
    for (const Target &t : {vllm, oss, target()}) {
        QCOMPARE(sentDescription(t), description);
        QVERIFY(OpenAICompletionsAdapter().droppedFor(converted, t).isEmpty());
    }

    // A Chat client's own body (it talked to another server before) to OpenAI: cut alike, the rest of
    // its body as it was; to the other server, its bytes as they came.
    QJsonObject own{
        {"model", "m"},
        {"seed", 7},
        {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "ls"}}}},
        {"tools", QJsonArray{QJsonObject{{"type", "function"},
                                         {"function", QJsonObject{{"name", "Bash"}, {"description", description}}}}}}};
    const QByteArray ownBytes = QJsonDocument(own).toJson(QJsonDocument::Compact);
    const auto chat = OpenAIChatCodec().decode(ownBytes, nullptr);
    QVERIFY(chat);
    const ChatRequest spoken = spokenIn(*chat, wire::Api::OpenAICompletions);
    const QJsonObject passed = json(OpenAICompletionsAdapter().buildRequest(spoken, openai, {}).body);
    const QString cut =
        passed.value("tools").toArray()[0].toObject().value("function").toObject().value("description").toString();
    QVERIFY(cut.size() <= OpenAICompletionsAdapter::kMaxToolDescription);
    QVERIFY(description.startsWith(cut));
    QCOMPARE(passed.value("seed").toInt(), 7);
    QCOMPARE(OpenAICompletionsAdapter().droppedFor(spoken, openai), QStringList{"tools[].function.description"});
    const QJsonObject whole = json(OpenAICompletionsAdapter().buildRequest(spoken, vllm, {}).body);
    QCOMPARE(whole.value("tools").toArray()[0].toObject().value("function").toObject().value("description").toString(),
             description);
    QVERIFY(OpenAICompletionsAdapter().droppedFor(spoken, vllm).isEmpty());
}

void TestOpenAICompletionsAdapter::aToolDescriptionIsCutAtASentenceNeverInACharacter() {
    const qsizetype max = OpenAICompletionsAdapter::kMaxToolDescription;
    const QString fits(max, QLatin1Char('a'));
    QCOMPARE(OpenAICompletionsAdapter::boundedToolDescription(fits), fits);
    // No space to cut at, and an emoji (a surrogate pair) across the bound: it goes whole.
    const QString emoji =
        QString(max - 1, QLatin1Char('a')) + QString::fromUtf8("\xF0\x9F\x98\x80") + QStringLiteral("bbb");
    const QString cut = OpenAICompletionsAdapter::boundedToolDescription(emoji);
    QCOMPARE(cut, QString(max - 1, QLatin1Char('a')));
    // Words with no sentence end: at the last space, never inside a word.
    QString words;
    while (words.size() < 2000)
        words += QStringLiteral("word ");
    const QString atWord = OpenAICompletionsAdapter::boundedToolDescription(words);
    QVERIFY(atWord.size() <= max);
    QVERIFY(atWord.endsWith(QLatin1String("word")));
    // A line's end counts as a sentence's.
    const QString lines = QString(600, QLatin1Char('x')) + QStringLiteral("\n") + QString(600, QLatin1Char('y'));
    QCOMPARE(OpenAICompletionsAdapter::boundedToolDescription(lines), QString(600, QLatin1Char('x')));
}

QTEST_GUILESS_MAIN(TestOpenAICompletionsAdapter)
#include "test_openai_completions_adapter.moc"
