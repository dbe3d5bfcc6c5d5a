#include "core/failover/failure_classifier.h"
#include "core/formats/anthropic_messages_codec.h"
#include "core/formats/inbound_codec.h"
#include "core/formats/openai_chat_codec.h"
#include "core/formats/openai_responses_codec.h"
#include "core/formats/pi_native_codec.h"
#include "core/model/event_accumulator.h"
#include "core/upstream/anthropic_adapter.h"
#include "core/upstream/google_adapter.h"
#include "core/upstream/openai_completions_adapter.h"
#include "core/upstream/openai_responses_adapter.h"
#include "core/wire/json.h"
#include "wire_fixtures.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QtTest>

using namespace sw::model;
using namespace sw::formats;
using namespace sw::upstream;
using sw::test::readTestData;
namespace wire = sw::wire;
namespace model = sw::model;
using sw::test::spokenIn;

Q_DECLARE_METATYPE(sw::wire::Api)

namespace {
Target target() {
    Target t;
    t.provider = QStringLiteral("google");
    t.modelId = QStringLiteral("gemini-2.5-pro");
    t.api = QStringLiteral("google-generative-ai");
    t.baseUrl = QStringLiteral("https://generativelanguage.googleapis.com/v1beta");
    t.credential = "AIza-secret";
    return t;
}
QJsonObject json(const QByteArray &b) {
    return QJsonDocument::fromJson(b).object();
}
QList<StreamEvent> decode(const QByteArray &sse) {
    auto decoder = GoogleAdapter().makeDecoder(target());
    return sw::test::decodeTranscript(*decoder, sse);
}
// What a client's encoder is told of an answer Gemini gave.
EncodeInfo answeredByGemini() {
    EncodeInfo info;
    info.responseId = QStringLiteral("req_1");
    info.model = QStringLiteral("gemini");
    info.upstreamApi = QStringLiteral("google-generative-ai");
    return info;
}
// Gemini's answer: a text, then a call it signed ("U0lHLWZj").
QList<StreamEvent> signedCallAnswer() {
    return decode(R"(data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Let me look."},)"
                  R"({"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"U0lHLWZj"}]},)"
                  R"("finishReason":"STOP"}]})"
                  "\n\n");
}
// The generationConfig the Gemini model `modelId` gets for a client's body: a Chat body when it has
// `messages` but no `max_tokens`, else an Anthropic one.
QJsonObject generationFor(const QByteArray &body, const char *modelId) {
    const bool anthropic = body.contains("\"max_tokens\"");
    const auto req =
        anthropic ? AnthropicMessagesCodec().decode(body, nullptr) : OpenAIChatCodec().decode(body, nullptr);
    if (!req)
        return QJsonObject{{"refused", true}};
    Target t = target();
    t.modelId = QLatin1String(modelId);
    const ChatRequest converted =
        spokenIn(*req, anthropic ? wire::Api::AnthropicMessages : wire::Api::OpenAICompletions);
    return json(GoogleAdapter().buildRequest(converted, t, {}).body).value("generationConfig").toObject();
}
QJsonObject thinkingFor(const QByteArray &body, const char *modelId) {
    return generationFor(body, modelId).value("thinkingConfig").toObject();
}
} // namespace

class TestGoogleAdapter : public QObject {
    Q_OBJECT
private slots:
    void aModelsOutputCapLowersTheRequestsMax();
    void penaltiesGoOnlyToModelsThatTakeThem();
    void modelConfiguredNotToReasonGetsNoThinkingConfig();
    void buildsStreamGenerateContentRequest();
    void signaturesGoBackOnlyToGoogle();
    void aCallsSignatureComesBackThroughAResponsesClient();
    void aCallsSignatureComesBackThroughAChatClient();
    void aTextsSignatureComesBackThroughAPiClient();
    void aRefusedThoughtSignatureSendsNone();
    void turnsAlternateBetweenUserAndModel();
    void aHistoryThatOpensWithTheModelGetsAUserTurnFirst();
    void documentsAsGeminiParts();
    void imageMimeTypesAsGeminiSpellsThem();
    void thinkingBudgetFitsUnderMaxOutputTokens();
    void thinkingBudgetIsOneTheModelTakes();
    void geminiThreeGetsAThinkingLevel();
    void thinkingAskedOffStaysOffWhereTheModelCanStop();
    void openRoutersReasoningObjectSetsTheBudget();
    void decodesFullTranscript();
    void inBandErrorAndSafetyStop();
    void streamWithoutFinishReasonIsAnError();
    void theStartCarriesTheFirstChunksUsage();
    void parsesErrorBody();
    void writerAndReaderAgree();
    void modelIdStaysOneSegmentForEveryAdapter();
    void resultsGoInTheOrderOfTheirCalls_data();
    void resultsGoInTheOrderOfTheirCalls();
    void geminisOwnCallIdsGoBackAndNoOther();
    void aFunctionCallNamedWithControlCharactersFails();
    void resultsComeBeforeWordsTypedWhileTheToolRan();
    void twoCallsUnderOneIdAreAnsweredUnderTheirOwnNames_data();
    void twoCallsUnderOneIdAreAnsweredUnderTheirOwnNames();
    void longRunsOfOneRoleAreOneTurnEach();
};

// Probe G2 3: a Chat client's presence_penalty went to Gemini 2.5 as presencePenalty, which it
// refuses with a 400 ("Penalty is not enabled for models/gemini-2.5-flash") that ended the chain.
// Gemini 2.5, 3 and an id naming no generation get no penalty, and the answer names it; Gemini 2.0
// and 1.5 still take them.
void TestGoogleAdapter::penaltiesGoOnlyToModelsThatTakeThem() {
    const auto req =
        OpenAIChatCodec().decode(R"({"model":"m","presence_penalty":0.5,"frequency_penalty":0,"temperature":0.3,)"
                                 R"("messages":[{"role":"user","content":"hi"}]})",
                                 nullptr);
    QVERIFY(req);
    const ChatRequest converted = spokenIn(*req, wire::Api::OpenAICompletions);
    for (const char *id : {"gemini-2.5-flash", "gemini-2.5-pro", "models/gemini-3-pro-preview", "gemini-flash-latest",
                           "gemini-2.0-flash-thinking-exp"}) {
        Target t = target();
        t.modelId = QLatin1String(id);
        const QJsonObject generation =
            json(GoogleAdapter().buildRequest(converted, t, {}).body).value("generationConfig").toObject();
        QVERIFY2(!generation.contains("presencePenalty"), id);
        QCOMPARE(generation.value("temperature").toDouble(), 0.3); // the rest as asked
        // The zero frequency penalty is the default, which Gemini does not check: it goes as before,
        // nothing lost, nothing said.
        QCOMPARE(generation.value("frequencyPenalty"), QJsonValue(0));
        QCOMPARE(GoogleAdapter().droppedFor(converted, t), QStringList{"presence_penalty"});
    }
    for (const char *id : {"gemini-2.0-flash", "gemini-2.0-flash-lite", "gemini-1.5-pro"}) {
        Target t = target();
        t.modelId = QLatin1String(id);
        const QJsonObject generation =
            json(GoogleAdapter().buildRequest(converted, t, {}).body).value("generationConfig").toObject();
        QCOMPARE(generation.value("presencePenalty").toDouble(), 0.5);
        QVERIFY(GoogleAdapter().droppedFor(converted, t).isEmpty());
    }
}

void TestGoogleAdapter::aFunctionCallNamedWithControlCharactersFails() {
    // Probe T3 (SPEC 10): a functionCall's name reached every client as Gemini wrote it, and a
    // CLI agent prints it to a terminal (escapes run); the id some models give goes back on the
    // next turn. The chunk is refused whole, as the other APIs' decoders refuse a bad model name.
    const auto lastFrame = [](const QByteArray &sse) {
        auto decoder = GoogleAdapter().makeDecoder(target());
        return sw::test::feedLastFrame(*decoder, sse);
    };
    const auto chunk = [](const QByteArray &call) {
        return R"(data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Let me look."},)"
               R"({"functionCall":)" +
               call + R"(}]}}],"modelVersion":"gemini-2.5-pro"})" + QByteArray("\n\n");
    };
    const sw::test::LastFrame good = lastFrame(chunk(R"({"name":"get_weather","args":{"city":"Paris"}})"));
    QVERIFY(std::any_of(good.events.begin(), good.events.end(), [](const StreamEvent &e) {
        return e.type == EventType::ToolCallStart && e.block.toolName == QStringLiteral("get_weather");
    }));
    const sw::test::LastFrame longId = lastFrame(chunk(R"({"id":")" + QByteArray(256, 'k') + R"(","name":"f"})"));
    QVERIFY(std::any_of(longId.events.begin(), longId.events.end(),
                        [](const StreamEvent &e) { return e.type == EventType::ToolCallStart; }));

    for (const QByteArray &bad : sw::test::unechoableToolCallNames()) {
        for (const QByteArray &sse : {chunk(R"({"name":")" + bad + R"(","args":{}})"),
                                      chunk(R"({"id":")" + bad + R"(","name":"get_weather","args":{}})")}) {
            // Nothing of the chunk is read first, not even its text (a Gemini stream is never relayed).
            const QString problem = sw::test::unechoableToolCallProblem(lastFrame(sse), false);
            QVERIFY2(problem.isEmpty(), qPrintable(problem + QLatin1Char(' ') + QString::fromUtf8(sse)));
        }
    }
}

void TestGoogleAdapter::modelIdStaysOneSegmentForEveryAdapter() {
    // A hostile id must not walk the URL: no "/admin", no query or fragment taken from it.
    const auto req = OpenAIChatCodec().decode(R"({"model":"m","messages":[{"role":"user","content":"hi"}]})", nullptr);
    QVERIFY(req);
    Target t = target();
    t.modelId = QStringLiteral("G/../../../admin?x=1#");
    const HttpRequest google = GoogleAdapter().buildRequest(spokenIn(*req, wire::Api::OpenAICompletions), t, {});
    QCOMPARE(google.url.path(QUrl::FullyEncoded),
             QStringLiteral("/v1beta/models/G%2F..%2F..%2F..%2Fadmin%3Fx%3D1%23:streamGenerateContent"));
    QCOMPARE(google.url.query(QUrl::FullyEncoded), QStringLiteral("alt=sse"));
    QVERIFY(!google.url.hasFragment());
    QCOMPARE(google.url.host(), QStringLiteral("generativelanguage.googleapis.com"));
    // The other APIs carry the id in the body only: their path is the API's, whatever the id.
    const std::pair<const char *, const char *> others[] = {{"anthropic-messages", "/v1beta/v1/messages"},
                                                            {"openai-completions", "/v1beta/chat/completions"},
                                                            {"openai-responses", "/v1beta/responses"}};
    for (const auto &[api, path] : others) {
        const HttpRequest http =
            adapterFor(QLatin1String(api))->buildRequest(spokenIn(*req, wire::Api::OpenAICompletions), t, {});
        QCOMPARE(http.url.path(QUrl::FullyEncoded), QLatin1String(path));
        QVERIFY(!http.url.hasQuery());
        QCOMPARE(json(http.body).value("model").toString(), t.modelId);
    }
}

void TestGoogleAdapter::buildsStreamGenerateContentRequest() {
    const QByteArray body = R"({"model":"m","max_tokens":1000,"temperature":0.3,"reasoning_effort":"low",
      "tool_choice":"required",
      "tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],
      "messages":[{"role":"system","content":"Be brief."},
        {"role":"user","content":[{"type":"text","text":"Weather?"},
          {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]},
        {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
          "function":{"name":"get_weather","arguments":"{\"location\":\"Paris\"}"}}]},
        {"role":"tool","tool_call_id":"call_1","content":"sunny"}]})";
    const auto req = OpenAIChatCodec().decode(body, nullptr);
    QVERIFY(req);
    const HttpRequest http =
        GoogleAdapter().buildRequest(spokenIn(*req, wire::Api::OpenAICompletions), target(), {{"OpenAI-Beta", "x"}});
    QCOMPARE(http.url.toString(), QStringLiteral("https://generativelanguage.googleapis.com/v1beta/models/"
                                                 "gemini-2.5-pro:streamGenerateContent?alt=sse"));
    QCOMPARE(headerValue(http.headers, "x-goog-api-key"), QByteArray("AIza-secret"));
    QVERIFY(headerValue(http.headers, "authorization").isEmpty());
    QVERIFY(headerValue(http.headers, "openai-beta").isEmpty());
    const QJsonObject sent = json(http.body);
    QCOMPARE(sent.value("systemInstruction").toObject().value("parts").toArray()[0].toObject().value("text").toString(),
             QStringLiteral("Be brief."));
    const QJsonArray contents = sent.value("contents").toArray();
    QCOMPARE(contents.size(), 3);
    QCOMPARE(contents[0]
                 .toObject()
                 .value("parts")
                 .toArray()[1]
                 .toObject()
                 .value("inlineData")
                 .toObject()
                 .value("data")
                 .toString(),
             QStringLiteral("iVBORw0KGgo="));
    QCOMPARE(contents[1].toObject().value("role").toString(), QStringLiteral("model"));
    const QJsonObject call =
        contents[1].toObject().value("parts").toArray()[0].toObject().value("functionCall").toObject();
    QCOMPARE(call.value("name").toString(), QStringLiteral("get_weather"));
    QCOMPARE(call.value("args").toObject().value("location").toString(), QStringLiteral("Paris"));
    const QJsonObject result =
        contents[2].toObject().value("parts").toArray()[0].toObject().value("functionResponse").toObject();
    QCOMPARE(result.value("name").toString(), QStringLiteral("get_weather")); // Google ties results by name
    QCOMPARE(result.value("response").toObject().value("output").toString(), QStringLiteral("sunny"));
    const QJsonObject gen = sent.value("generationConfig").toObject();
    QCOMPARE(gen.value("maxOutputTokens").toInt(), 1000);
    QCOMPARE(gen.value("temperature").toDouble(), 0.3);
    QCOMPARE(gen.value("thinkingConfig").toObject().value("thinkingBudget").toInt(),
             750); // 2048 asked, under a 1000 cap
    QCOMPARE(gen.value("thinkingConfig").toObject().value("includeThoughts").toBool(), true);
    const QJsonObject decl =
        sent.value("tools").toArray()[0].toObject().value("functionDeclarations").toArray()[0].toObject();
    QCOMPARE(decl.value("name").toString(), QStringLiteral("get_weather"));
    QCOMPARE(sent.value("toolConfig").toObject().value("functionCallingConfig").toObject().value("mode").toString(),
             QStringLiteral("ANY"));
}

void TestGoogleAdapter::signaturesGoBackOnlyToGoogle() {
    auto piBody = [](const char *api) {
        return QByteArray(R"({"modelId":"m","context":{"messages":[{"role":"user","content":"q"},
          {"role":"assistant","api":")") +
               api + R"(","content":[
            {"type":"thinking","thinking":"hm","thinkingSignature":"SIG-T"},
            {"type":"toolCall","id":"c1","name":"f","arguments":{},"thoughtSignature":"SIG-F"}]}]}})";
    };
    const auto same = PiNativeCodec().decode(piBody("google-generative-ai"), nullptr);
    QVERIFY(same);
    const QJsonArray sameParts =
        GoogleAdapter::buildBody(*same).value("contents").toArray()[1].toObject().value("parts").toArray();
    QCOMPARE(sameParts[0].toObject().value("thought").toBool(), true);
    QCOMPARE(sameParts[0].toObject().value("thoughtSignature").toString(), QStringLiteral("SIG-T"));
    QCOMPARE(sameParts[1].toObject().value("thoughtSignature").toString(), QStringLiteral("SIG-F"));
    const auto other = PiNativeCodec().decode(piBody("anthropic-messages"), nullptr);
    QVERIFY(other);
    const QJsonObject otherBody = GoogleAdapter::buildBody(*other);
    QVERIFY(!QJsonDocument(otherBody).toJson().contains("SIG-"));
    const QJsonArray otherParts = otherBody.value("contents").toArray()[1].toObject().value("parts").toArray();
    // Foreign thinking is dropped, never replayed as text; the call Gemini did not make gets
    // the value Google documents for history from elsewhere, so Gemini 3 accepts it.
    QCOMPARE(otherParts.size(), 1);
    QVERIFY(!QJsonDocument(otherBody).toJson().contains("hm"));
    QCOMPARE(otherParts[0].toObject().value("thoughtSignature").toString(),
             QStringLiteral("skip_thought_signature_validator"));
}

// A Gemini call's thoughtSignature went nowhere in a Responses answer, so Codex's next turn gave
// Gemini the skip value in its place and Gemini lost its reasoning at every tool step (probe N1
// 2). It rides in an empty reasoning item just before the call, as it does in an Anthropic
// thinking block, in the JSON answer and the stream alike, and goes back with its call.
void TestGoogleAdapter::aCallsSignatureComesBackThroughAResponsesClient() {
    const auto events = signedCallAnswer();
    EventAccumulator acc;
    acc.addAll(events);
    const EncodeInfo info = answeredByGemini();
    const OpenAIResponsesCodec codec;
    QJsonArray fromJson = json(codec.encodeResponse(acc.message(), info)).value("output").toArray();
    const auto encoder = codec.makeStreamEncoder(info);
    QByteArray stream;
    for (const StreamEvent &e : events)
        stream += encoder->encode(e);
    QJsonArray fromStream;
    for (const QByteArray &line : stream.split('\n'))
        if (line.startsWith("data: ") && line.contains("\"response.completed\""))
            fromStream = json(line.mid(6)).value("response").toObject().value("output").toArray();
    for (const QJsonArray &output : {fromJson, fromStream}) {
        QCOMPARE(output.size(), 3); // the message, the carrier, the call
        QCOMPARE(output[1].toObject().value("type").toString(), QStringLiteral("reasoning"));
        QCOMPARE(output[2].toObject().value("type").toString(), QStringLiteral("function_call"));
        const QString callId = output[2].toObject().value("call_id").toString();
        // Codex's next turn: its input, the answer's items as they came, then the call's output.
        QJsonArray input{QJsonObject{{"role", "user"}, {"content", "weather in Paris?"}}};
        for (const QJsonValue &item : output)
            input.append(item);
        input.append(QJsonObject{{"type", "function_call_output"}, {"call_id", callId}, {"output", "sunny"}});
        const auto next = codec.decode(wire::compactJson(QJsonObject{{"model", "gemini"}, {"input", input}}), nullptr);
        QVERIFY(next);
        const QJsonArray parts =
            GoogleAdapter::buildBody(*next).value("contents").toArray()[1].toObject().value("parts").toArray();
        QCOMPARE(parts.size(), 2); // the text and the call: the carrier is no thought of its own
        QCOMPARE(parts[1].toObject().value("functionCall").toObject().value("name").toString(),
                 QStringLiteral("get_weather"));
        QCOMPARE(parts[1].toObject().value("thoughtSignature").toString(), QStringLiteral("U0lHLWZj"));
    }
}

// A Gemini call's thoughtSignature went nowhere in a Chat answer, so a Chat client's next turn gave
// Gemini the skip value in its place and Gemini lost its reasoning at every tool step. It goes where
// Google's own Chat endpoint puts it, the call's extra_content.google.thought_signature (raw), in the
// JSON answer and the stream alike, and comes back to Gemini with its call; never on another API's call.
void TestGoogleAdapter::aCallsSignatureComesBackThroughAChatClient() {
    const auto events = signedCallAnswer();
    EventAccumulator acc;
    acc.addAll(events);
    const EncodeInfo info = answeredByGemini();
    const OpenAIChatCodec codec;
    const QJsonObject fromJson =
        json(codec.encodeResponse(acc.message(), info))["choices"][0]["message"]["tool_calls"][0].toObject();
    const auto encoder = codec.makeStreamEncoder(info);
    QByteArray stream;
    for (const StreamEvent &e : events)
        stream += encoder->encode(e);
    // The stream's call as a client puts it together: its first delta (id, name, extra_content),
    // the arguments from the deltas after it.
    QJsonObject fromStream;
    QString streamedArguments;
    for (const QByteArray &line : stream.split('\n')) {
        if (!line.startsWith("data: {"))
            continue;
        const QJsonArray calls = json(line.mid(6))
                                     .value("choices")
                                     .toArray()[0]
                                     .toObject()
                                     .value("delta")
                                     .toObject()
                                     .value("tool_calls")
                                     .toArray();
        for (const QJsonValue &c : calls) {
            if (c.toObject().contains("id"))
                fromStream = c.toObject();
            streamedArguments += c.toObject().value("function").toObject().value("arguments").toString();
        }
    }
    QVERIFY(!fromStream.isEmpty());
    QJsonObject streamFunction = fromStream.value("function").toObject();
    streamFunction.insert("arguments", streamedArguments);
    fromStream.remove("index");
    fromStream.insert("function", streamFunction);
    for (const QJsonObject &call : {fromJson, fromStream}) {
        QCOMPARE(
            call.value("extra_content").toObject().value("google").toObject().value("thought_signature").toString(),
            QStringLiteral("U0lHLWZj")); // raw: what Google's own endpoint writes
        // The client's next turn: the answer's call as it came, then the call's result.
        const QJsonArray messages{
            QJsonObject{{"role", "user"}, {"content", "weather in Paris?"}},
            QJsonObject{{"role", "assistant"}, {"content", "Let me look."}, {"tool_calls", QJsonArray{call}}},
            QJsonObject{{"role", "tool"}, {"tool_call_id", call.value("id")}, {"content", "sunny"}}};
        const auto next =
            codec.decode(wire::compactJson(QJsonObject{{"model", "gemini"}, {"messages", messages}}), nullptr);
        QVERIFY(next);
        const QJsonArray parts =
            GoogleAdapter::buildBody(*next).value("contents").toArray()[1].toObject().value("parts").toArray();
        QCOMPARE(parts.size(), 2);
        QCOMPARE(parts[1].toObject().value("functionCall").toObject().value("name").toString(),
                 QStringLiteral("get_weather"));
        QCOMPARE(parts[1].toObject().value("thoughtSignature").toString(), QStringLiteral("U0lHLWZj"));
        // Google's signature goes to no other API, nor to a Chat server that is not Google's (the
        // client's own body, which still holds the member, goes there on the same-API path).
        for (const QJsonObject &other : {AnthropicAdapter::buildBody(*next, QStringLiteral("m")),
                                         OpenAIResponsesAdapter::buildBody(*next, QStringLiteral("m"))})
            QVERIFY(!wire::compactJson(other).contains("U0lHLWZj"));
        Target openAI = target();
        openAI.api = QStringLiteral("openai-completions");
        openAI.modelId = QStringLiteral("gpt-5");
        openAI.baseUrl = QStringLiteral("https://api.openai.com/v1");
        QVERIFY(!OpenAICompletionsAdapter().buildRequest(*next, openAI, {}).body.contains("U0lHLWZj"));
    }
    // Another API's call signature is never written for a Chat client.
    EncodeInfo fromAnthropic = answeredByGemini();
    fromAnthropic.upstreamApi = QStringLiteral("anthropic-messages");
    QVERIFY(!codec.encodeResponse(acc.message(), fromAnthropic).contains("extra_content"));
    QByteArray otherStream;
    const auto otherEncoder = codec.makeStreamEncoder(fromAnthropic);
    for (const StreamEvent &e : events)
        otherStream += otherEncoder->encode(e);
    QVERIFY(!otherStream.contains("extra_content"));
}

// Gemini puts a thoughtSignature on an answer's last text part; pi-ai's own Google provider keeps
// it as the text block's textSignature and sends it back. The gateway's pi answer had none (probe
// N1 2). It goes out raw, in the JSON answer and the stream's text_end, and back to Gemini only.
void TestGoogleAdapter::aTextsSignatureComesBackThroughAPiClient() {
    const auto events = decode(R"(data: {"candidates":[{"content":{"role":"model","parts":[)"
                               R"({"text":"Answer text","thoughtSignature":"U0lHLXRleHQ="}]},"finishReason":"STOP"}]})"
                               "\n\n");
    EventAccumulator acc;
    acc.addAll(events);
    const EncodeInfo info = answeredByGemini();
    AssistantMessage answered = acc.message();
    answered.api = info.upstreamApi;
    const PiNativeCodec codec;
    const QByteArray whole = codec.encodeResponse(answered, info);
    QVERIFY2(whole.contains(R"("textSignature":"U0lHLXRleHQ=")"), whole.constData());
    const auto encoder = codec.makeStreamEncoder(info);
    QByteArray stream;
    for (const StreamEvent &e : events)
        stream += encoder->encode(e);
    QVERIFY2(stream.contains(R"("contentSignature":"U0lHLXRleHQ=")"), stream.constData());

    auto history = [](const char *api) {
        return QByteArray(R"({"modelId":"m","context":{"messages":[{"role":"user","content":"q"},
          {"role":"assistant","api":")") +
               api + R"(","content":[{"type":"text","text":"Answer text","textSignature":"U0lHLXRleHQ="}]},
          {"role":"user","content":"and then?"}]}})";
    };
    const auto same = codec.decode(history("google-generative-ai"), nullptr);
    QVERIFY(same);
    const QJsonObject part = GoogleAdapter::buildBody(*same)
                                 .value("contents")
                                 .toArray()[1]
                                 .toObject()
                                 .value("parts")
                                 .toArray()[0]
                                 .toObject();
    QCOMPARE(part.value("thoughtSignature").toString(), QStringLiteral("U0lHLXRleHQ="));
    const auto other = codec.decode(history("anthropic-messages"), nullptr);
    QVERIFY(other);
    QVERIFY(!QJsonDocument(GoogleAdapter::buildBody(*other)).toJson().contains("U0lHLXRleHQ="));
}

void TestGoogleAdapter::aRefusedThoughtSignatureSendsNone() {
    // After this upstream refused a thought signature ("Corrupted thought signature": another
    // Google provider made it), the retry sends no thought part, no text signature, and the
    // call with the value Google documents for history from elsewhere. A model turn of thoughts
    // alone goes, and the user turns around it are one.
    const QByteArray body = R"({"modelId":"m","context":{"messages":[{"role":"user","content":"q"},
      {"role":"assistant","api":"google-generative-ai","content":[
        {"type":"thinking","thinking":"hm","thinkingSignature":"SIG-T"},
        {"type":"text","text":"looking","textSignature":"SIG-X"},
        {"type":"toolCall","id":"c1","name":"f","arguments":{},"thoughtSignature":"SIG-F"}]},
      {"role":"toolResult","toolCallId":"c1","toolName":"f","content":[{"type":"text","text":"ok"}],"isError":false},
      {"role":"assistant","api":"google-generative-ai","content":[
        {"type":"thinking","thinking":"only thoughts","thinkingSignature":"SIG-O"}]},
      {"role":"user","content":"again"}]}})";
    const auto req = PiNativeCodec().decode(body, nullptr);
    QVERIFY(req);
    Target t;
    t.modelId = QStringLiteral("gemini-3-pro");
    t.api = QStringLiteral("google-generative-ai");
    t.baseUrl = QStringLiteral("https://generativelanguage.googleapis.com/v1beta");
    QVERIFY(GoogleAdapter().buildRequest(*req, t, {}).body.contains("SIG-F"));
    t.replayReasoning = false;
    const QJsonObject sent = QJsonDocument::fromJson(GoogleAdapter().buildRequest(*req, t, {}).body).object();
    const QByteArray text = QJsonDocument(sent).toJson();
    QVERIFY2(!text.contains("SIG-"), text.constData());
    QVERIFY2(!text.contains("hm") && !text.contains("only thoughts"), text.constData());
    const QJsonArray contents = sent.value("contents").toArray();
    QStringList roles;
    for (const QJsonValue &c : contents)
        roles << c.toObject().value("role").toString();
    QCOMPARE(roles, (QStringList{"user", "model", "user"}));
    const QJsonArray parts = contents[1].toObject().value("parts").toArray();
    QCOMPARE(parts.size(), 2);
    QCOMPARE(parts[0].toObject().value("text").toString(), QStringLiteral("looking"));
    QCOMPARE(parts[1].toObject().value("thoughtSignature").toString(),
             QStringLiteral("skip_thought_signature_validator"));
    QVERIFY(text.contains("again"));
}

void TestGoogleAdapter::thinkingBudgetFitsUnderMaxOutputTokens() {
    // Thoughts count against maxOutputTokens: a budget of 8192 under a cap of 2000 would leave
    // the answer empty. The cap stays the client's; the budget shrinks, or goes when no room is left.
    const auto budgetFor = [](int maxTokens, const char *effort) {
        const auto req = OpenAIChatCodec().decode(QByteArray(R"({"model":"m","max_completion_tokens":)") +
                                                      QByteArray::number(maxTokens) + R"(,"reasoning_effort":")" +
                                                      effort + R"(","messages":[{"role":"user","content":"hi"}]})",
                                                  nullptr);
        const QJsonObject generation = GoogleAdapter::buildBody(*req).value("generationConfig").toObject();
        if (generation.value("maxOutputTokens").toInt() != maxTokens)
            return -1;
        return generation.value("thinkingConfig").toObject().value("thinkingBudget").toInt(0);
    };
    QCOMPARE(budgetFor(2000, "medium"), 1500);
    QCOMPARE(budgetFor(100, "medium"), 0); // no room for Gemini's smallest budget
    QCOMPARE(budgetFor(64000, "low"), model::thinkingBudgetForEffort(QStringLiteral("low"))); // fits: unchanged
}

// Probe G2 1 and 5: Gemini refuses a thinkingBudget outside the model's range with a 400 ("The
// thinking budget (31999) is invalid."), which ended the request with a later candidate untried.
// 2.5 Pro takes 128 to 32768, 2.5 Flash up to 24576, 2.5 Flash-Lite 512 to 24576.
void TestGoogleAdapter::thinkingBudgetIsOneTheModelTakes() {
    const auto budget = [](const QByteArray &body, const char *modelId) {
        const QJsonObject thinking = thinkingFor(body, modelId);
        return thinking.contains("thinkingBudget") ? thinking.value("thinkingBudget").toInt() : -1;
    };
    const QByteArray chat = R"({"model":"m","messages":[{"role":"user","content":"hi"}],)";
    const QByteArray claude = R"({"model":"m","max_tokens":64000,"messages":[{"role":"user","content":"hi"}],)";
    // xhigh asks for 32000.
    const QByteArray xhigh = chat + R"("reasoning_effort":"xhigh"})";
    QCOMPARE(budget(xhigh, "gemini-2.5-flash"), 24576);
    QCOMPARE(budget(xhigh, "gemini-2.5-flash-lite"), 24576);
    QCOMPARE(budget(xhigh, "models/gemini-2.5-flash-preview-09-2025"), 24576);
    QCOMPARE(budget(xhigh, "gemini-flash-latest"), 24576);
    QCOMPARE(budget(xhigh, "gemini-2.5-pro"), 32000);
    // Claude Code's budget, and one above Pro's maximum.
    QCOMPARE(budget(claude + R"("thinking":{"type":"enabled","budget_tokens":31999}})", "gemini-2.5-flash"), 24576);
    QCOMPARE(budget(claude + R"("thinking":{"type":"enabled","budget_tokens":40000}})", "gemini-2.5-pro"), 32768);
    QCOMPARE(budget(claude + R"("thinking":{"type":"enabled","budget_tokens":40000}})", "tuned-model"), 24576);
    // Effort max (Opus 4.6+) got no thinking at all: the model's most.
    const QByteArray max = claude + R"("thinking":{"type":"adaptive"},"output_config":{"effort":"max"}})";
    QCOMPARE(budget(max, "gemini-2.5-flash"), 24576);
    QCOMPARE(budget(max, "gemini-2.5-pro"), 32000);
    QCOMPARE(thinkingFor(max, "gemini-2.5-pro").value("includeThoughts").toBool(), true);
    // Under a small cap the budget shrinks (to 450 here), never below the model's smallest: Flash
    // takes it, Flash-Lite (512 at least) thinks at its default instead.
    const QByteArray small = chat + R"("reasoning_effort":"low","max_completion_tokens":600})";
    QCOMPARE(budget(small, "gemini-2.5-flash"), 450);
    QCOMPARE(budget(small, "gemini-2.5-pro"), 450);
    QVERIFY(!generationFor(small, "gemini-2.5-flash-lite").contains("thinkingConfig"));
    QCOMPARE(generationFor(small, "gemini-2.5-flash-lite").value("maxOutputTokens").toInt(), 600);
    // A budget below the model's smallest is raised to it when it fits.
    const QByteArray lowBudget = claude + R"("thinking":{"type":"enabled","budget_tokens":300}})";
    QCOMPARE(budget(lowBudget, "gemini-2.5-flash-lite"), 512);
    QCOMPARE(budget(lowBudget, "gemini-2.5-flash"), 300);
}

// Gemini 3 takes thinkingLevel; a budget is only accepted for backwards compatibility. Gemini 3 Pro
// takes low and high alone (medium is refused with a 400), so between them the model's own default.
void TestGoogleAdapter::geminiThreeGetsAThinkingLevel() {
    const QByteArray chat = R"({"model":"m","messages":[{"role":"user","content":"hi"}],"reasoning_effort":")";
    const auto level = [&](const char *effort, const char *modelId) {
        const QJsonObject thinking = thinkingFor(chat + effort + R"("})", modelId);
        if (thinking.contains("thinkingBudget") || !thinking.value("includeThoughts").toBool())
            return QStringLiteral("(not a level)");
        return thinking.value("thinkingLevel").toString(QStringLiteral("(default)"));
    };
    QCOMPARE(level("minimal", "gemini-3-pro-preview"), QStringLiteral("low"));
    QCOMPARE(level("low", "gemini-3-flash-preview"), QStringLiteral("low"));
    QCOMPARE(level("medium", "gemini-3-pro-preview"), QStringLiteral("(default)"));
    QCOMPARE(level("high", "gemini-3.1-pro-preview"), QStringLiteral("high"));
    QCOMPARE(level("xhigh", "models/gemini-3-pro-preview"), QStringLiteral("high"));
    const QByteArray claudeCode = R"({"model":"m","max_tokens":64000,"messages":[{"role":"user","content":"hi"}],)"
                                  R"("thinking":{"type":"enabled","budget_tokens":31999}})";
    QCOMPARE(thinkingFor(claudeCode, "gemini-3-pro-preview").value("thinkingLevel").toString(), QStringLiteral("high"));
    // A budget that would not fit under the cap thinks at the lowest level.
    QCOMPARE(thinkingFor(R"({"model":"m","max_completion_tokens":1000,"reasoning_effort":"high",)"
                         R"("messages":[{"role":"user","content":"hi"}]})",
                         "gemini-3-pro-preview")
                 .value("thinkingLevel")
                 .toString(),
             QStringLiteral("low"));
    // The simulated provider reads the level back.
    const auto req = OpenAIChatCodec().decode(chat + R"(high"})", nullptr);
    QCOMPARE(GoogleAdapter::decodeBody(QJsonDocument(GoogleAdapter::buildBody(*req, "gemini-3-pro-preview")).toJson())
                 .options.reasoning,
             QStringLiteral("high"));
}

// Thinking asked off (effort none; Anthropic thinking disabled, probe G2 8) went to Gemini as
// nothing, or as a budget with thoughts shown when an Anthropic effort came along. 2.5 Flash and
// Flash-Lite stop thinking at budget 0; 2.5 Pro and Gemini 3 Pro cannot (0 is refused), and an alias
// may name either: those think at their default.
void TestGoogleAdapter::thinkingAskedOffStaysOffWhereTheModelCanStop() {
    const QByteArray none = R"({"model":"m","reasoning_effort":"none","messages":[{"role":"user","content":"hi"}]})";
    const QByteArray disabled = R"({"model":"m","max_tokens":1000,"messages":[{"role":"user","content":"hi"}],)"
                                R"("thinking":{"type":"disabled"},"output_config":{"effort":"low"}})";
    const QByteArray absent = R"({"model":"m","max_tokens":1000,"messages":[{"role":"user","content":"hi"}],)"
                              R"("output_config":{"effort":"low"}})";
    for (const QByteArray &body : {none, disabled}) {
        for (const char *model : {"gemini-2.5-flash", "gemini-2.5-flash-lite"})
            QCOMPARE(thinkingFor(body, model), QJsonObject({{"thinkingBudget", 0}}));
        for (const char *model : {"gemini-2.5-pro", "gemini-3-pro-preview", "gemini-flash-latest"})
            QVERIFY2(!generationFor(body, model).contains("thinkingConfig"), model);
    }
    // No `thinking` at all: each model's own default, an effort or not.
    for (const char *model : {"gemini-2.5-flash", "gemini-2.5-pro"})
        QVERIFY2(!generationFor(absent, model).contains("thinkingConfig"), model);
    // A model configured not to reason gets no thinkingConfig at all, not even 0.
    const auto req = OpenAIChatCodec().decode(none, nullptr);
    Target t = target();
    t.modelId = QStringLiteral("gemini-2.5-flash");
    t.modelReasons = false;
    QVERIFY(!json(GoogleAdapter().buildRequest(spokenIn(*req, wire::Api::OpenAICompletions), t, {}).body)
                 .value("generationConfig")
                 .toObject()
                 .contains("thinkingConfig"));
}

void TestGoogleAdapter::documentsAsGeminiParts() {
    // Codex attaches a PDF by URL and a text file inline; a tool returns a PDF. Gemini gets the
    // URL as fileData, the text file as words, the tool's PDF as inline data beside its response.
    const auto req = OpenAIResponsesCodec().decode(R"({"model":"m","input":[
        {"role":"user","content":[
            {"type":"input_file","file_url":"https://docs.example.test/spec.pdf"},
            {"type":"input_file","filename":"notes.txt","file_data":"data:text/plain;base64,aGVsbG8gd29ybGQ="},
            {"type":"input_text","text":"compare"}]},
        {"type":"function_call","call_id":"c1","name":"fetch","arguments":"{}"},
        {"type":"function_call_output","call_id":"c1","output":[
            {"type":"input_file","filename":"r.pdf","file_data":"data:application/pdf;base64,JVBERi0xLjQK"}]}]})",
                                                   nullptr);
    QVERIFY(req);
    QVERIFY(!GoogleAdapter().incompatibility(spokenIn(*req, wire::Api::OpenAIResponses)));
    const QJsonArray contents = GoogleAdapter::buildBody(*req).value("contents").toArray();
    QCOMPARE(contents.size(), 3);
    const QJsonArray user = contents[0].toObject().value("parts").toArray();
    QCOMPARE(user.size(), 3);
    QCOMPARE(user[0].toObject(),
             QJsonObject({{"fileData", QJsonObject{{"fileUri", "https://docs.example.test/spec.pdf"},
                                                   {"mimeType", "application/pdf"}}}}));
    QCOMPARE(user[1].toObject(), QJsonObject({{"text", "Document: notes.txt\n\nhello world"}}));
    const QJsonArray results = contents[2].toObject().value("parts").toArray();
    QCOMPARE(results.size(), 2);
    QVERIFY(results[0].toObject().contains("functionResponse"));
    QCOMPARE(results[1].toObject(),
             QJsonObject({{"inlineData", QJsonObject{{"mimeType", "application/pdf"}, {"data", "JVBERi0xLjQK"}}}}));
}

void TestGoogleAdapter::imageMimeTypesAsGeminiSpellsThem() {
    // "data:image/jpg;…" as clients write it: Gemini knows image/jpeg.
    const auto req = OpenAIChatCodec().decode(
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\","
        "\"image_url\":{\"url\":\"data:image/jpg;base64,/9j/4AAQ\"}},{\"type\":\"image_url\",\"image_url\":"
        "{\"url\":\"data:image/PNG;base64,iVBORw0KGgo=\"}}]}]}",
        nullptr);
    QVERIFY(req);
    const QJsonArray parts =
        GoogleAdapter::buildBody(*req).value("contents").toArray()[0].toObject().value("parts").toArray();
    QCOMPARE(parts.size(), 2);
    QCOMPARE(parts[0].toObject().value("inlineData").toObject().value("mimeType").toString(),
             QStringLiteral("image/jpeg"));
    QCOMPARE(parts[1].toObject().value("inlineData").toObject().value("mimeType").toString(),
             QStringLiteral("image/png"));
}

void TestGoogleAdapter::turnsAlternateBetweenUserAndModel() {
    // Gemini answers 400 to two turns of one role side by side. A pi history whose aborted turn is
    // left out has two user turns; a Chat client that speaks after a tool result without an answer
    // between has a function response turn, then words. The first are merged; the second keep
    // their own turns with a model turn between them, since Gemini reads words in a function
    // response turn as part of the tool output.
    const auto req = PiNativeCodec().decode(R"({"modelId":"m","context":{"messages":[
        {"role":"user","content":"weather?"},
        {"role":"assistant","stopReason":"aborted","content":[{"type":"text","text":"Let me"}]},
        {"role":"user","content":"in Oslo"},
        {"role":"assistant","stopReason":"toolUse","content":[
            {"type":"toolCall","id":"c1","name":"get_weather","arguments":{"city":"Oslo"}}]},
        {"role":"toolResult","toolCallId":"c1","toolName":"get_weather","content":[{"type":"text","text":"rain"}]},
        {"role":"user","content":"and tomorrow?"}]}})",
                                            nullptr);
    QVERIFY(req);
    const QJsonArray contents = GoogleAdapter::buildBody(*req).value("contents").toArray();
    QStringList roles;
    for (const QJsonValue &c : contents)
        roles << c.toObject().value("role").toString();
    QCOMPARE(roles, QStringList({"user", "model", "user", "model", "user"}));
    const QJsonArray first = contents[0].toObject().value("parts").toArray();
    QCOMPARE(first.size(), 2); // both user turns, in order
    QCOMPARE(first[0].toObject().value("text").toString(), QStringLiteral("weather?"));
    QCOMPARE(first[1].toObject().value("text").toString(), QStringLiteral("in Oslo"));
    QVERIFY(contents[2].toObject().value("parts").toArray()[0].toObject().contains("functionResponse"));
    QCOMPARE(contents[2].toObject().value("parts").toArray().size(), 1); // the words are not in it
    QVERIFY(contents[3].toObject().value("parts").toArray()[0].toObject().value("text").toString().contains(
        QStringLiteral("interrupted")));
    QCOMPARE(contents[4].toObject().value("parts").toArray()[0].toObject().value("text").toString(),
             QStringLiteral("and tomorrow?"));
}

// Probe Q4-4: a history that opens with the assistant's tool call (trimmed from the front, or
// seeded) went to Gemini with a model turn first, which Gemini refuses with a 400 ("Please ensure
// that function call turn comes immediately after a user turn or after a function response
// turn."). A short user turn goes before it, also before a model turn of words; a history that
// opens with the user's words gets none.
void TestGoogleAdapter::aHistoryThatOpensWithTheModelGetsAUserTurnFirst() {
    const auto bodyFor = [](const QByteArray &messages, bool replayReasoning = true) {
        const auto req = OpenAIChatCodec().decode(R"({"model":"m","messages":)" + messages + "}", nullptr);
        Target t = target();
        t.replayReasoning = replayReasoning;
        return json(GoogleAdapter().buildRequest(*req, t, {}).body);
    };
    const auto contentsFor = [&bodyFor](const QByteArray &messages) {
        return bodyFor(messages).value("contents").toArray();
    };
    const auto roles = [](const QJsonArray &contents) {
        QStringList out;
        for (const QJsonValue &c : contents)
            out << c.toObject().value("role").toString();
        return out;
    };
    const auto onlyText = [](const QJsonValue &turn) {
        const QJsonArray parts = turn.toObject().value("parts").toArray();
        return parts.size() == 1 && parts[0].toObject().keys() == QStringList{"text"}
                   ? parts[0].toObject().value("text").toString()
                   : QString();
    };
    const QByteArray callFirst = R"J([
        {"role":"system","content":"You are a coding agent."},
        {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
            "function":{"name":"read_file","arguments":"{\"path\":\"a.py\"}"}}]},
        {"role":"tool","tool_call_id":"call_1","content":"print('hi')"},
        {"role":"assistant","content":"The file prints hi."},
        {"role":"user","content":"Now make it print bye."}])J";
    for (const bool replay : {true, false}) {
        const QJsonObject sent = bodyFor(callFirst, replay);
        // the client's system prompt stays where it was, not in the added turn
        QCOMPARE(onlyText(sent.value("systemInstruction")), QStringLiteral("You are a coding agent."));
        const QJsonArray contents = sent.value("contents").toArray();
        QCOMPARE(roles(contents), QStringList({"user", "model", "user", "model", "user"}));
        const QString added = onlyText(contents[0]);
        QVERIFY(!added.isEmpty());
        QVERIFY(added.size() < 40); // short and neutral: no instruction to the model
        const QJsonObject call = contents[1].toObject().value("parts").toArray()[0].toObject();
        QCOMPARE(call.value("functionCall").toObject().value("name").toString(), QStringLiteral("read_file"));
        QVERIFY(contents[2].toObject().value("parts").toArray()[0].toObject().contains("functionResponse"));
        QCOMPARE(onlyText(contents[4]), QStringLiteral("Now make it print bye."));
    }

    // A seeded greeting: a model turn of words first.
    const QJsonArray greeting = contentsFor(R"([{"role":"assistant","content":"How can I help?"},
        {"role":"user","content":"Fix a.py."}])");
    QCOMPARE(roles(greeting), QStringList({"user", "model", "user"}));
    QVERIFY(!onlyText(greeting[0]).isEmpty());
    QCOMPARE(onlyText(greeting[1]), QStringLiteral("How can I help?"));
    QCOMPARE(onlyText(greeting[2]), QStringLiteral("Fix a.py."));

    // The user's words first: nothing added.
    const QJsonArray userFirst = contentsFor(R"([{"role":"user","content":"Fix a.py."},
        {"role":"assistant","content":"Done."},{"role":"user","content":"Thanks."}])");
    QCOMPARE(roles(userFirst), QStringList({"user", "model", "user"}));
    QCOMPARE(onlyText(userFirst[0]), QStringLiteral("Fix a.py."));
}

// Probe L1 2: OpenRouter's reasoning object (max_tokens, enabled) turned no thinking on after a
// failover to Gemini; only its effort was read.
void TestGoogleAdapter::openRoutersReasoningObjectSetsTheBudget() {
    const auto thinking = [](const char *reasoning) {
        const auto req = OpenAIChatCodec().decode(
            R"({"model":"m","messages":[{"role":"user","content":"hi"}],"reasoning":)" + QByteArray(reasoning) + "}",
            nullptr);
        Target t = target();
        t.modelId = QStringLiteral("gemini-2.5-flash");
        return json(GoogleAdapter().buildRequest(spokenIn(*req, wire::Api::OpenAICompletions), t, {}).body)
            .value("generationConfig")
            .toObject()
            .value("thinkingConfig")
            .toObject();
    };
    QCOMPARE(thinking(R"({"max_tokens":3000})"), QJsonObject({{"includeThoughts", true}, {"thinkingBudget", 3000}}));
    QCOMPARE(thinking(R"({"enabled":true})"), QJsonObject({{"includeThoughts", true}, {"thinkingBudget", 8192}}));
    QCOMPARE(thinking(R"({"enabled":false})"), QJsonObject({{"thinkingBudget", 0}}));
}

void TestGoogleAdapter::decodesFullTranscript() {
    const auto events = decode(readTestData(QStringLiteral("google_upstream_full.sse")));
    EventAccumulator acc;
    acc.addAll(events);
    QVERIFY(acc.isFinished());
    const AssistantMessage &m = acc.message();
    QCOMPARE(m.stopReason, StopReason::ToolUse); // STOP with a function call
    QCOMPARE(m.content.size(), 3);
    QCOMPARE(m.content[0].type, BlockType::Thinking);
    QCOMPARE(m.content[0].text, QStringLiteral("Need the weather."));
    QCOMPARE(m.content[1].text, QStringLiteral("Checking now."));
    QCOMPARE(m.content[2].toolName, QStringLiteral("get_weather"));
    QCOMPARE(m.content[2].arguments.value("location").toString(), QStringLiteral("Paris"));
    QCOMPARE(m.content[2].signature, QStringLiteral("CiQB0e2Kb-opaque"));
    QVERIFY(!m.content[2].toolCallId.isEmpty());
    QCOMPARE(m.usage.input, 472);
    QCOMPARE(m.usage.cacheRead, 2048);
    QCOMPARE(m.usage.output, 89); // candidates + thoughts
}

void TestGoogleAdapter::inBandErrorAndSafetyStop() {
    const auto error = decode(
        "data: {\"error\":{\"code\":503,\"message\":\"The model is overloaded.\",\"status\":\"UNAVAILABLE\"}}\n\n");
    QCOMPARE(error.last().type, EventType::Error);
    QCOMPARE(error.last().errorStatus, std::optional<int>(503));
    QVERIFY(error.last().errorMessage.contains(QStringLiteral("overloaded")));
    const auto safety =
        decode("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}],\"role\":\"model\"},"
               "\"finishReason\":\"SAFETY\"}]}\n\n");
    QCOMPARE(safety.last().type, EventType::Done); // a refusal is an answer, not an outage
    QCOMPARE(safety.last().reason, StopReason::Refusal);
    const auto blocked = decode("data: {\"promptFeedback\":{\"blockReason\":\"PROHIBITED_CONTENT\"},"
                                "\"usageMetadata\":{\"promptTokenCount\":9}}\n\n");
    QCOMPARE(blocked.last().type, EventType::Done);
    QCOMPARE(blocked.last().reason, StopReason::Refusal);
    const auto malformed = decode("data: {\"candidates\":[{\"content\":{\"parts\":[]},"
                                  "\"finishReason\":\"MALFORMED_FUNCTION_CALL\"}]}\n\n");
    QCOMPARE(malformed.last().type, EventType::Error);
    QVERIFY(!malformed.last().errorStatus); // the model's own stop, no outage: the record stops it
    QCOMPARE(malformed.last().errorType, QStringLiteral("MALFORMED_FUNCTION_CALL"));

    // A quota error in band carries Google's RetryInfo beside its words: the key is set aside for
    // its delay, as for the same body on an HTTP 429 (probe N1 3), not for an hour. The words alone
    // are classified: a delay whose digits hold "500" or "429" changes nothing.
    auto inBand = [](const char *delay) {
        return decode(QByteArray(R"(data: {"error":{"code":429,"message":"Resource has been exhausted (e.g. check )"
                                 R"(quota).","status":"RESOURCE_EXHAUSTED","details":[{"@type":)"
                                 R"("type.googleapis.com/google.rpc.RetryInfo","retryDelay":")") +
                      delay + "\"}]}}\n\n")
            .last();
    };
    auto classified = [](const StreamEvent &e) {
        sw::failover::FailureInput in;
        in.message = e.errorMessage;
        in.classificationMessage = e.errorType + QStringLiteral(": ") + e.errorMessage;
        in.status = e.errorStatus;
        in.statedRetryAfterMs = e.errorRetryAfterMs;
        return sw::failover::FailureClassifier::classify(in);
    };
    const StreamEvent quota = inBand("17s");
    QCOMPARE(quota.type, EventType::Error);
    QCOMPARE(quota.errorRetryAfterMs, std::optional<qint64>(17000));
    const auto seventeen = classified(quota);
    QVERIFY(seventeen);
    QCOMPARE(seventeen->retryAfterMs, std::optional<qint64>(17000));
    for (const char *delay : {"5s", "15s", "42.9s"}) {
        const auto other = classified(inBand(delay));
        QVERIFY(other);
        QCOMPARE(other->kind, seventeen->kind);
    }
}

void TestGoogleAdapter::streamWithoutFinishReasonIsAnError() {
    const auto events =
        decode("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}],\"role\":\"model\"}}]}\n\n");
    QCOMPARE(events.last().type, EventType::Error);
    QVERIFY(events.last().errorMessage.contains(QStringLiteral("before completion")));
    // The cut text stays open, as with every other upstream: closed, a Responses client would get
    // its message item `completed` (a pi client its text_end) just before the failure.
    for (const StreamEvent &e : events)
        QVERIFY2(e.type != EventType::TextEnd, "a cut answer's text was closed as if whole");
}

// Gemini gives its usageMetadata on the first chunk: Start was made before it was read, so an
// Anthropic client answered by Gemini got message_start.usage all zero, and the open row of a
// committed answer (what a crash bills) the request's estimate (probe H1 4).
void TestGoogleAdapter::theStartCarriesTheFirstChunksUsage() {
    const auto events =
        decode("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}],\"role\":\"model\"}}],"
               "\"usageMetadata\":{\"promptTokenCount\":3000,\"cachedContentTokenCount\":2500,"
               "\"candidatesTokenCount\":2,\"thoughtsTokenCount\":450}}\n\n");
    QCOMPARE(events.first().type, EventType::Start);
    QCOMPARE(events.first().usage.input, qint64(500));
    QCOMPARE(events.first().usage.cacheRead, qint64(2500));
    QCOMPARE(events.first().usage.output, qint64(452));
    // And the decoder tells what it read to a try that ends without its terminator (a reset).
    auto decoder = GoogleAdapter().makeDecoder(target());
    decoder->feed({QByteArray(), QByteArray("{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}]}}],"
                                            "\"usageMetadata\":{\"promptTokenCount\":9,\"thoughtsTokenCount\":40}}")});
    QCOMPARE(decoder->usage().input, qint64(9));
    QCOMPARE(decoder->usage().output, qint64(40));
}

void TestGoogleAdapter::parsesErrorBody() {
    const auto info = GoogleAdapter().parseError(
        429, R"({"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}})");
    QCOMPARE(info.message, QStringLiteral("Resource has been exhausted"));
    QCOMPARE(info.errorType, QStringLiteral("RESOURCE_EXHAUSTED"));
}

void TestGoogleAdapter::writerAndReaderAgree() {
    // The simulated provider writes with encodeStream; the decoder must read it back whole.
    QByteArray sse;
    for (const QByteArray &frame : GoogleAdapter::encodeStream(sw::test::sampleAssistantStream()))
        sse += frame;
    EventAccumulator acc;
    acc.addAll(decode(sse));
    QCOMPARE(acc.message().stopReason, StopReason::ToolUse);
    QCOMPARE(acc.message().content.size(), 3);
    QCOMPARE(acc.message().content[0].signature, QStringLiteral("sig-abc"));
    QCOMPARE(acc.message().content[1].text, QStringLiteral("Checking now."));
    QCOMPARE(acc.message().usage.output, 89);
    // And the request reader inverts buildBody.
    const auto req = OpenAIChatCodec().decode(
        R"({"model":"m","reasoning_effort":"low","tools":[{"type":"function","function":{"name":"f"}}],
            "messages":[{"role":"system","content":"S"},{"role":"user","content":"q"}]})",
        nullptr);
    const model::ChatRequest back = GoogleAdapter::decodeBody(QJsonDocument(GoogleAdapter::buildBody(*req)).toJson());
    QCOMPARE(back.context.systemPrompt, QStringLiteral("S"));
    QCOMPARE(back.context.messages.size(), 1);
    QCOMPARE(back.context.tools[0].name, QStringLiteral("f"));
    QCOMPARE(back.options.thinkingBudget, std::optional<int>(2048));
}

namespace {
// Each client format's history: get_weather(Paris) and get_weather(Tokyo) in one turn, the results
// returned as the tools finished, Tokyo's first. `paris` and `tokyo` are the calls' ids.
QByteArray parallelCallsAnsweredOutOfOrder(wire::Api api, const QString &paris, const QString &tokyo) {
    QString body;
    switch (api) {
    case wire::Api::OpenAICompletions:
        body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"weather in Paris and Tokyo\"},"
               "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
               "{\"id\":\"P\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
               "\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}},"
               "{\"id\":\"T\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
               "\"arguments\":\"{\\\"city\\\":\\\"Tokyo\\\"}\"}}]},"
               "{\"role\":\"tool\",\"tool_call_id\":\"T\",\"content\":\"weather for Tokyo\"},"
               "{\"role\":\"tool\",\"tool_call_id\":\"P\",\"content\":\"weather for Paris\"}]}";
        break;
    case wire::Api::AnthropicMessages:
        body = "{\"model\":\"m\",\"max_tokens\":100,\"messages\":[{\"role\":\"user\",\"content\":\"weather in "
               "Paris and Tokyo\"},{\"role\":\"assistant\",\"content\":["
               "{\"type\":\"tool_use\",\"id\":\"P\",\"name\":\"get_weather\",\"input\":{\"city\":\"Paris\"}},"
               "{\"type\":\"tool_use\",\"id\":\"T\",\"name\":\"get_weather\",\"input\":{\"city\":\"Tokyo\"}}]},"
               "{\"role\":\"user\",\"content\":["
               "{\"type\":\"tool_result\",\"tool_use_id\":\"T\",\"content\":\"weather for Tokyo\"},"
               "{\"type\":\"tool_result\",\"tool_use_id\":\"P\",\"content\":\"weather for Paris\"}]}]}";
        break;
    default: // Responses
        body = "{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":\"weather in Paris and Tokyo\"},"
               "{\"type\":\"function_call\",\"call_id\":\"P\",\"name\":\"get_weather\","
               "\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"},"
               "{\"type\":\"function_call\",\"call_id\":\"T\",\"name\":\"get_weather\","
               "\"arguments\":\"{\\\"city\\\":\\\"Tokyo\\\"}\"},"
               "{\"type\":\"function_call_output\",\"call_id\":\"T\",\"output\":\"weather for Tokyo\"},"
               "{\"type\":\"function_call_output\",\"call_id\":\"P\",\"output\":\"weather for Paris\"}]}";
        break;
    }
    body.replace(QLatin1String("\"P\""), QLatin1Char('"') + paris + QLatin1Char('"'));
    body.replace(QLatin1String("\"T\""), QLatin1Char('"') + tokyo + QLatin1Char('"'));
    return body.toUtf8();
}

ChatRequest decoded(wire::Api api, const QByteArray &body) {
    GatewayError error;
    const auto req = codecFor(api).decode(body, &error);
    if (!req)
        qWarning("%s", qPrintable(error.message));
    return req ? spokenIn(*req, api) : ChatRequest();
}

// The parts of the turn `index` of a generateContent body that hold `key` (functionCall, ...).
QList<QJsonObject> partsWith(const QJsonArray &contents, qsizetype index, const char *key) {
    QList<QJsonObject> found;
    for (const QJsonValue &p : contents.at(index).toObject().value("parts").toArray())
        if (p.toObject().contains(QLatin1String(key)))
            found << p.toObject().value(QLatin1String(key)).toObject();
    return found;
}
} // namespace

void TestGoogleAdapter::resultsGoInTheOrderOfTheirCalls_data() {
    QTest::addColumn<wire::Api>("api");
    QTest::newRow("chat") << wire::Api::OpenAICompletions;
    QTest::newRow("messages") << wire::Api::AnthropicMessages;
    QTest::newRow("responses") << wire::Api::OpenAIResponses;
}

void TestGoogleAdapter::resultsGoInTheOrderOfTheirCalls() {
    // Two calls of one function, answered as the tools finished (Tokyo first). Gemini pairs a
    // response without an id with the call in its position: in the client's order it would read
    // Tokyo's weather as Paris's.
    QFETCH(wire::Api, api);
    const ChatRequest req = decoded(api, parallelCallsAnsweredOutOfOrder(api, "call_p", "call_t"));
    QCOMPARE(req.context.messages.size(), 4);
    const QJsonArray contents = GoogleAdapter::buildBody(req).value("contents").toArray();
    QCOMPARE(contents.size(), 3);
    const QList<QJsonObject> calls = partsWith(contents, 1, "functionCall");
    const QList<QJsonObject> responses = partsWith(contents, 2, "functionResponse");
    QCOMPARE(calls.size(), 2);
    QCOMPARE(responses.size(), 2);
    for (int i = 0; i < 2; ++i) {
        const QString city = calls[i].value("args").toObject().value("city").toString();
        QCOMPARE(responses[i].value("response").toObject().value("output").toString(),
                 QStringLiteral("weather for ") + city);
        QVERIFY(!calls[i].contains("id")); // ids Gemini did not give never go there
        QVERIFY(!responses[i].contains("id"));
    }
    QCOMPARE(calls[0].value("args").toObject().value("city").toString(), QStringLiteral("Paris"));
}

void TestGoogleAdapter::geminisOwnCallIdsGoBackAndNoOther() {
    // Gemini named its calls: the client gets the ids tagged, and they go back on the calls and on
    // their responses, in the calls' order.
    const auto events =
        decode("data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":["
               "{\"functionCall\":{\"id\":\"k7m2\",\"name\":\"get_weather\",\"args\":{\"city\":\"Paris\"}}},"
               "{\"functionCall\":{\"id\":\"q9x4\",\"name\":\"get_weather\",\"args\":{\"city\":\"Tokyo\"}}}]},"
               "\"finishReason\":\"STOP\"}]}\n\n");
    EventAccumulator acc;
    acc.addAll(events);
    QCOMPARE(acc.message().content.size(), 2);
    const QString paris = acc.message().content[0].toolCallId;
    const QString tokyo = acc.message().content[1].toolCallId;
    QCOMPARE(paris, GoogleAdapter::toolCallIdFor("k7m2"));
    QCOMPARE(GoogleAdapter::geminiCallId(paris), QStringLiteral("k7m2"));
    for (const wire::Api api :
         {wire::Api::OpenAICompletions, wire::Api::AnthropicMessages, wire::Api::OpenAIResponses}) {
        const QJsonArray contents =
            GoogleAdapter::buildBody(decoded(api, parallelCallsAnsweredOutOfOrder(api, paris, tokyo)))
                .value("contents")
                .toArray();
        const QList<QJsonObject> calls = partsWith(contents, 1, "functionCall");
        const QList<QJsonObject> responses = partsWith(contents, 2, "functionResponse");
        QCOMPARE(calls.size(), 2);
        QCOMPARE(responses.size(), 2);
        QCOMPARE(calls[0].value("id").toString(), QStringLiteral("k7m2"));
        QCOMPARE(calls[1].value("id").toString(), QStringLiteral("q9x4"));
        QCOMPARE(responses[0].value("id").toString(), QStringLiteral("k7m2"));
        QCOMPARE(responses[0].value("response").toObject().value("output").toString(),
                 QStringLiteral("weather for Paris"));
        QCOMPARE(responses[1].value("id").toString(), QStringLiteral("q9x4"));
    }
    // A call Gemini did not name gets an id made up, which never goes there.
    const auto unnamed = decode("data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":["
                                "{\"functionCall\":{\"name\":\"f\",\"args\":{}}}]},\"finishReason\":\"STOP\"}]}\n\n");
    EventAccumulator other;
    other.addAll(unnamed);
    QVERIFY(!other.message().content[0].toolCallId.isEmpty());
    QVERIFY(GoogleAdapter::geminiCallId(other.message().content[0].toolCallId).isEmpty());
    QVERIFY(GoogleAdapter::geminiCallId(QStringLiteral("toolu_01")).isEmpty());
    // And the simulated provider pairs a response by its id.
    const ChatRequest sent = GoogleAdapter::decodeBody(wire::compactJson(GoogleAdapter::buildBody(decoded(
        wire::Api::OpenAICompletions, parallelCallsAnsweredOutOfOrder(wire::Api::OpenAICompletions, paris, tokyo)))));
    QCOMPARE(sent.context.messages.size(), 4);
    QCOMPARE(sent.context.messages[2].toolCallId, sent.context.messages[1].content[0].toolCallId);
    QCOMPARE(sent.context.messages[3].toolCallId, sent.context.messages[1].content[1].toolCallId);
}

void TestGoogleAdapter::twoCallsUnderOneIdAreAnsweredUnderTheirOwnNames_data() {
    QTest::addColumn<wire::Api>("api");
    QTest::newRow("chat") << wire::Api::OpenAICompletions;
    QTest::newRow("messages") << wire::Api::AnthropicMessages;
}

void TestGoogleAdapter::twoCallsUnderOneIdAreAnsweredUnderTheirOwnNames() {
    // DeepSeek and GLM give every call of one answer the same id. The results come back in the calls'
    // order under that id; each is named by the call it answers, where both took the latest call's
    // name and Gemini read the weather as read_file's output (probe J1 1).
    QFETCH(wire::Api, api);
    QByteArray body;
    if (api == wire::Api::OpenAICompletions)
        body = R"({"model":"m","messages":[{"role":"user","content":"go"},
            {"role":"assistant","content":null,"tool_calls":[
              {"id":"call_0","type":"function","function":{"name":"get_weather","arguments":"{}"}},
              {"id":"call_0","type":"function","function":{"name":"read_file","arguments":"{}"}}]},
            {"role":"tool","tool_call_id":"call_0","content":"WEATHER: sunny"},
            {"role":"tool","tool_call_id":"call_0","content":"FILE: hello"}]})";
    else
        body = R"({"model":"m","max_tokens":100,"messages":[{"role":"user","content":"go"},
            {"role":"assistant","content":[
              {"type":"tool_use","id":"grep:3","name":"get_weather","input":{}},
              {"type":"tool_use","id":"grep:3","name":"read_file","input":{}}]},
            {"role":"user","content":[
              {"type":"tool_result","tool_use_id":"grep:3","content":"WEATHER: sunny"},
              {"type":"tool_result","tool_use_id":"grep:3","content":"FILE: hello"}]}]})";
    const QJsonArray contents = GoogleAdapter::buildBody(decoded(api, body)).value("contents").toArray();
    QCOMPARE(contents.size(), 3);
    const QList<QJsonObject> calls = partsWith(contents, 1, "functionCall");
    const QList<QJsonObject> responses = partsWith(contents, 2, "functionResponse");
    QCOMPARE(calls.size(), 2);
    QCOMPARE(responses.size(), 2);
    QCOMPARE(responses[0].value("name").toString(), QStringLiteral("get_weather"));
    QCOMPARE(responses[0].value("response").toObject().value("output").toString(), QStringLiteral("WEATHER: sunny"));
    QCOMPARE(responses[1].value("name").toString(), QStringLiteral("read_file"));
    QCOMPARE(responses[1].value("response").toObject().value("output").toString(), QStringLiteral("FILE: hello"));
}

void TestGoogleAdapter::resultsComeBeforeWordsTypedWhileTheToolRan() {
    // A Responses history may hold the user's words between a call and its output. Gemini gets the
    // responses right after the calls, together and in the calls' order, then the words.
    const ChatRequest req =
        decoded(wire::Api::OpenAIResponses,
                "{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":\"go\"},"
                "{\"type\":\"function_call\",\"call_id\":\"s1\",\"name\":\"get_time\",\"arguments\":\"{}\"},"
                "{\"type\":\"function_call\",\"call_id\":\"s2\",\"name\":\"screenshot\",\"arguments\":\"{}\"},"
                "{\"type\":\"function_call_output\",\"call_id\":\"s1\",\"output\":\"noon\"},"
                "{\"role\":\"user\",\"content\":\"hurry\"},"
                "{\"type\":\"function_call_output\",\"call_id\":\"s2\",\"output\":\"shot\"}]}");
    const QJsonArray contents = GoogleAdapter::buildBody(req).value("contents").toArray();
    QStringList roles;
    for (const QJsonValue &c : contents)
        roles << c.toObject().value("role").toString();
    QCOMPARE(roles, QStringList({"user", "model", "user", "model", "user"}));
    const QList<QJsonObject> responses = partsWith(contents, 2, "functionResponse");
    QCOMPARE(responses.size(), 2);
    QCOMPARE(responses[0].value("name").toString(), QStringLiteral("get_time"));
    QCOMPARE(responses[1].value("name").toString(), QStringLiteral("screenshot"));
    QCOMPARE(contents[2].toObject().value("parts").toArray().size(), 2); // the words are not in it
    QCOMPARE(contents[4].toObject().value("parts").toArray()[0].toObject().value("text").toString(),
             QStringLiteral("hurry"));
}

// Probe D2 H2: a history of many turns of one role in a row (40 000 user messages, 4.3 MB) froze
// the engine thread, every tenant's requests and /healthz, for 42 s while it was converted: each
// merge copied the whole merged turn, and the alternation check rescanned it. Each run is one turn
// holding every part in order; with the merge linear this test builds the body in well under a
// second (the quadratic merge alone took about ten seconds here).
void TestGoogleAdapter::longRunsOfOneRoleAreOneTurnEach() {
    constexpr int kWords = 40000; // user words after a function response
    constexpr int kAnswers = 20000;
    ChatRequest req;
    Message question;
    question.content << ContentBlock::makeText(QStringLiteral("weather?"));
    req.context.messages << question;
    Message call;
    call.role = Role::Assistant;
    ContentBlock c;
    c.type = BlockType::ToolCall;
    c.toolCallId = QStringLiteral("c1");
    c.toolName = QStringLiteral("get_weather");
    call.content << c;
    req.context.messages << call;
    Message result;
    result.role = Role::ToolResult;
    result.toolCallId = QStringLiteral("c1");
    result.toolName = QStringLiteral("get_weather");
    result.content << ContentBlock::makeText(QStringLiteral("rain"));
    req.context.messages << result;
    sw::test::appendRoleRuns(req, kWords, kAnswers);
    const QJsonArray contents = GoogleAdapter::buildBody(req).value("contents").toArray();
    QStringList roles;
    for (const QJsonValue &t : contents)
        roles << t.toObject().value("role").toString();
    // the words after the function response keep a turn of their own, after the interrupted answer
    QCOMPARE(roles, QStringList({"user", "model", "user", "model", "user", "model"}));
    QCOMPARE(contents[2].toObject().value("parts").toArray().size(), 1);
    QVERIFY(contents[3].toObject().value("parts").toArray()[0].toObject().value("text").toString().contains(
        QStringLiteral("interrupted")));
    const auto checkRun = [&](int turn, const char *prefix, int count) {
        const QJsonArray parts = contents[turn].toObject().value("parts").toArray();
        QCOMPARE(parts.size(), count);
        const QString outOfPlace = sw::test::runOutOfPlace(parts, prefix);
        QVERIFY2(outOfPlace.isEmpty(),
                 qPrintable(QStringLiteral("%1 of turn %2 is out of place").arg(outOfPlace).arg(turn)));
    };
    checkRun(4, "u", kWords);
    checkRun(5, "a", kAnswers);
}

// A request to a model configured `"reasoning": false` (gemini-2.0-flash) goes without
// thinkingConfig, which it refuses with a 400 (every request to Google is converted); the rest of
// generationConfig stays. Unknown and true send it as before.
void TestGoogleAdapter::modelConfiguredNotToReasonGetsNoThinkingConfig() {
    const auto req = OpenAIChatCodec().decode(
        "{\"model\":\"m\",\"max_tokens\":32000,\"temperature\":0.5,\"reasoning_effort\":\"high\","
        "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
        nullptr);
    QVERIFY(req);
    const ChatRequest converted = spokenIn(*req, wire::Api::OpenAICompletions);
    Target t = target();
    t.modelId = QStringLiteral("gemini-2.0-flash");
    const QJsonObject reasons =
        json(GoogleAdapter().buildRequest(converted, t, {}).body).value(QStringLiteral("generationConfig")).toObject();
    QVERIFY(reasons.value(QStringLiteral("thinkingConfig")).toObject().value(QStringLiteral("thinkingBudget")).toInt() >
            0);

    t.modelReasons = false;
    const QJsonObject generation =
        json(GoogleAdapter().buildRequest(converted, t, {}).body).value(QStringLiteral("generationConfig")).toObject();
    QVERIFY(!generation.contains(QStringLiteral("thinkingConfig")));
    QCOMPARE(generation.value(QStringLiteral("temperature")).toDouble(), 0.5);
    QCOMPARE(generation.value(QStringLiteral("maxOutputTokens")).toInt(), 32000);
}

QTEST_GUILESS_MAIN(TestGoogleAdapter)
#include "test_google_adapter.moc"

// A model that writes at most N tokens: a request asking for more gets maxOutputTokens N; one asking
// for less keeps its own.
void TestGoogleAdapter::aModelsOutputCapLowersTheRequestsMax() {
    Target t = target();
    t.maxOutputTokens = 8192;
    const auto req = OpenAIChatCodec().decode(
        "{\"model\":\"m\",\"max_tokens\":65536,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", nullptr);
    QVERIFY(req);
    const QJsonObject body =
        json(GoogleAdapter().buildRequest(spokenIn(*req, wire::Api::OpenAICompletions), t, {}).body);
    QCOMPARE(body.value(QStringLiteral("generationConfig")).toObject().value(QStringLiteral("maxOutputTokens")).toInt(),
             8192);
    t.maxOutputTokens = 100000; // more than asked: the client's own
    QCOMPARE(json(GoogleAdapter().buildRequest(spokenIn(*req, wire::Api::OpenAICompletions), t, {}).body)
                 .value(QStringLiteral("generationConfig"))
                 .toObject()
                 .value(QStringLiteral("maxOutputTokens"))
                 .toInt(),
             65536);
}
