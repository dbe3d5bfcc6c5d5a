// eventsOfJsonAnswer: an upstream's whole JSON answer (a server that ignored `stream: true`) as
// the SSE events its API's stream carries, read by the same stream decoder. The answer decoded
// that way is the one its stream would have given: the same blocks, stop reason and usage, and
// (Messages, Responses) the same native answer for a same-API client.

#include "core/upstream/json_answer.h"
#include "core/upstream/upstream_adapter.h"
#include "wire_fixtures.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

using namespace sw;
using namespace sw::model;
using namespace sw::upstream;

namespace {

std::unique_ptr<StreamDecoder> decoderFor(wire::Api api) {
    Target target;
    target.api = wire::apiName(api);
    target.modelId = QStringLiteral("m");
    return adapterFor(target.api)->makeDecoder(target, NativeBody::Keep);
}

QList<StreamEvent> decode(wire::Api api, const QList<SseEvent> &events) {
    auto decoder = decoderFor(api);
    QList<StreamEvent> out;
    for (const SseEvent &e : events)
        out += decoder->feed(e);
    out += decoder->finish();
    return out;
}

// What a client gets of an answer: each finished block, then how it ended.
QStringList summary(const QList<StreamEvent> &events, bool withCallIds = true) {
    QStringList out;
    for (const StreamEvent &e : events) {
        switch (e.type) {
        case EventType::TextEnd:
            out << QStringLiteral("text:") + e.block.text;
            break;
        case EventType::ThinkingEnd:
            out << QStringLiteral("thinking:%1|%2|%3").arg(e.block.text, e.block.signature).arg(e.block.redacted);
            break;
        case EventType::ToolCallEnd:
            out << QStringLiteral("call:%1|%2|%3")
                       .arg(withCallIds ? e.block.toolCallId : QString(), e.block.toolName,
                            QString::fromUtf8(QJsonDocument(e.block.arguments).toJson(QJsonDocument::Compact)));
            break;
        case EventType::Done:
            out << QStringLiteral("done:%1 in=%2 out=%3 cache=%4")
                       .arg(stopReasonName(e.reason))
                       .arg(e.usage.input)
                       .arg(e.usage.output)
                       .arg(e.usage.cacheRead);
            break;
        case EventType::Error:
            out << QStringLiteral("error:") + e.errorMessage;
            break;
        default:
            break;
        }
    }
    return out;
}

QJsonObject nativeOf(const QList<StreamEvent> &events) {
    for (const StreamEvent &e : events)
        if (e.type == EventType::Done)
            return e.native;
    return {};
}

QByteArray json(const QJsonObject &o) {
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

} // namespace

class TestJsonAnswer : public QObject {
    Q_OBJECT
private slots:
    // The non-streaming answer a stream stands for (its native answer) read back as events gives
    // the stream's own answer: thinking with its signature, text, tool calls, reason, usage.
    void theNativeAnswerOfAStreamDecodesAsThatStream_data() {
        QTest::addColumn<int>("api");
        QTest::addColumn<QString>("transcript");
        QTest::newRow("messages") << int(wire::Api::AnthropicMessages) << QStringLiteral("anthropic_upstream_full.sse");
        QTest::newRow("messages web search")
            << int(wire::Api::AnthropicMessages) << QStringLiteral("anthropic_upstream_web_search.sse");
        QTest::newRow("responses") << int(wire::Api::OpenAIResponses) << QStringLiteral("responses_upstream_full.sse");
        QTest::newRow("responses custom tool")
            << int(wire::Api::OpenAIResponses) << QStringLiteral("responses_upstream_custom_tool.sse");
    }
    void theNativeAnswerOfAStreamDecodesAsThatStream() {
        QFETCH(int, api);
        QFETCH(QString, transcript);
        const auto a = wire::Api(api);
        const QList<StreamEvent> streamed = decode(a, test::splitSse(test::readTestData(transcript)));
        const QJsonObject native = nativeOf(streamed);
        QVERIFY(!native.isEmpty());
        const auto events = eventsOfJsonAnswer(a, json(native));
        QVERIFY(events);
        for (const SseEvent &e : *events)
            QVERIFY2(QJsonDocument::fromJson(e.data).isObject(), e.data.constData());
        if (a == wire::Api::OpenAIResponses) // its id first: what a passthrough client's encoder reads
            QVERIFY2(events->first().data.startsWith("{\"response\":{\"id\":\"resp_"),
                     events->first().data.constData());
        const QList<StreamEvent> answered = decode(a, *events);
        QVERIFY2(summary(streamed).size() >= 2, qPrintable(summary(streamed).join(QLatin1Char('\n'))));
        QVERIFY2(summary(streamed).last().startsWith(QLatin1String("done:")), qPrintable(summary(streamed).last()));
        QCOMPARE(summary(answered), summary(streamed));
        QCOMPARE(nativeOf(answered), native);
    }

    void aChatCompletionIsOneChunk() {
        const auto s = [](const char *v) { return QString::fromLatin1(v); };
        const auto call = [&s](const char *id, const char *name, const char *args) {
            return QJsonObject{{s("id"), s(id)},
                               {s("type"), s("function")},
                               {s("function"), QJsonObject{{s("name"), s(name)}, {s("arguments"), s(args)}}}};
        };
        const QJsonObject completion{
            {s("id"), s("chatcmpl-1")},
            {s("object"), s("chat.completion")},
            {s("model"), s("m")},
            {s("choices"),
             QJsonArray{QJsonObject{
                 {s("index"), 0},
                 {s("message"),
                  QJsonObject{{s("role"), s("assistant")},
                              {s("reasoning_content"), s("thinking first")},
                              {s("content"), s("Checking.")},
                              {s("tool_calls"), QJsonArray{call("call_1", "get_weather", "{\"city\":\"Paris\"}"),
                                                           call("call_2", "get_time", "{\"tz\":\"CET\"}")}}}},
                 {s("finish_reason"), s("tool_calls")}}}},
            {s("usage"), QJsonObject{{s("prompt_tokens"), 30},
                                     {s("completion_tokens"), 9},
                                     {s("prompt_tokens_details"), QJsonObject{{s("cached_tokens"), 10}}}}}};
        const auto events = eventsOfJsonAnswer(wire::Api::OpenAICompletions, json(completion));
        QVERIFY(events);
        QCOMPARE(events->last().data, QByteArray("[DONE]"));
        QCOMPARE(summary(decode(wire::Api::OpenAICompletions, *events)),
                 QStringList({s("thinking:thinking first||0"), s("text:Checking."),
                              s("call:call_1|get_weather|{\"city\":\"Paris\"}"),
                              s("call:call_2|get_time|{\"tz\":\"CET\"}"), s("done:toolUse in=20 out=9 cache=10")}));
        // The chunk a same-API streaming client is relayed is a chunk.
        QVERIFY(events->first().data.contains("\"object\":\"chat.completion.chunk\""));
        QVERIFY(events->first().data.contains("\"delta\":{"));
    }

    void aGeminiAnswerIsAChunkOrAnArrayOfThem() {
        const QByteArray one = "{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hello "
                               "there\"},{\"functionCall\":{\"name\":\"get_weather\",\"args\":{\"city\":\"Paris\"}}}]},"
                               "\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":5,"
                               "\"candidatesTokenCount\":4}}";
        const QStringList expected{QStringLiteral("text:Hello there"),
                                   QStringLiteral("call:|get_weather|{\"city\":\"Paris\"}"),
                                   QStringLiteral("done:toolUse in=5 out=4 cache=0")};
        const auto single = eventsOfJsonAnswer(wire::Api::Google, one);
        QVERIFY(single);
        QCOMPARE(summary(decode(wire::Api::Google, *single), false), expected);
        const QByteArray array =
            "[{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hello "
            "\"}]}}]},{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":"
            "\"there\"},{\"functionCall\":{\"name\":\"get_weather\",\"args\":{\"city\":\"Paris\"}}}"
            "]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":5,"
            "\"candidatesTokenCount\":4}}]";
        const auto chunks = eventsOfJsonAnswer(wire::Api::Google, array);
        QVERIFY(chunks);
        QCOMPARE(chunks->size(), 2);
        QCOMPARE(summary(decode(wire::Api::Google, *chunks), false), expected);
    }

    // An error object, a response that failed or is not finished, or another API's answer is no
    // answer: the body stays the upstream's error.
    void whatIsNoAnswerStaysAnError_data() {
        QTest::addColumn<int>("api");
        QTest::addColumn<QByteArray>("body");
        const int chat = int(wire::Api::OpenAICompletions), messages = int(wire::Api::AnthropicMessages),
                  responses = int(wire::Api::OpenAIResponses), google = int(wire::Api::Google);
        QTest::newRow("chat error") << chat
                                    << QByteArray("{\"error\":{\"message\":\"busy\",\"type\":\"server_error\"}}");
        QTest::newRow("chat no choices") << chat << QByteArray("{\"object\":\"chat.completion\",\"choices\":[]}");
        QTest::newRow("chat given a message")
            << chat << QByteArray("{\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}");
        QTest::newRow("messages error")
            << messages
            << QByteArray("{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}");
        QTest::newRow("messages given a completion")
            << messages
            << QByteArray("{\"object\":\"chat.completion\",\"choices\":[{\"message\":{\"content\":\"x\"}}]}");
        QTest::newRow("responses failed") << responses
                                          << QByteArray("{\"object\":\"response\",\"status\":\"failed\",\"error\":{"
                                                        "\"code\":\"server_error\",\"message\":\"x\"},\"output\":[]}");
        QTest::newRow("responses queued")
            << responses << QByteArray("{\"object\":\"response\",\"status\":\"queued\",\"output\":[]}");
        QTest::newRow("responses error") << responses << QByteArray("{\"error\":{\"message\":\"x\"}}");
        QTest::newRow("google error") << google
                                      << QByteArray("{\"error\":{\"code\":429,\"status\":\"RESOURCE_EXHAUSTED\"}}");
        QTest::newRow("google error in array")
            << google << QByteArray("[{\"error\":{\"code\":500,\"status\":\"INTERNAL\"}}]");
        QTest::newRow("not json") << chat << QByteArray("{\"choices\":[");
    }
    void whatIsNoAnswerStaysAnError() {
        QFETCH(int, api);
        QFETCH(QByteArray, body);
        QVERIFY(!eventsOfJsonAnswer(wire::Api(api), body));
    }

    // Each API's answer lists its blocks its own way; past the bound none of its events is made
    // and the count says why (the attempt fails on it instead of reading the body as an error).
    void moreBlocksThanTheBoundMakeNoEvents_data() {
        QTest::addColumn<int>("api");
        QTest::addColumn<QByteArray>("item");   // one block, repeated in `list`
        QTest::addColumn<QByteArray>("answer"); // %1 is the list
        QTest::addColumn<int>("extra");         // blocks it has besides the list (the message item)
        QTest::newRow("anthropic content[]")
            << int(wire::Api::AnthropicMessages)
            << QByteArray("{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{}}")
            << QByteArray("{\"type\":\"message\",\"role\":\"assistant\",\"content\":[%1],\"stop_reason\":\"tool_use\"}")
            << 0;
        QTest::newRow("chat tool_calls")
            << int(wire::Api::OpenAICompletions)
            << QByteArray("{\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}")
            << QByteArray("{\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":"
                          "\"assistant\",\"tool_calls\":[%1]},\"finish_reason\":\"tool_calls\"}]}")
            << 0;
        QTest::newRow("responses output[]")
            << int(wire::Api::OpenAIResponses)
            << QByteArray("{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"f\",\"arguments\":\"{}\"}")
            << QByteArray("{\"object\":\"response\",\"status\":\"completed\",\"output\":[%1]}") << 0;
        QTest::newRow("responses message content[]")
            << int(wire::Api::OpenAIResponses) << QByteArray("{\"type\":\"output_text\",\"text\":\"x\"}")
            << QByteArray("{\"object\":\"response\",\"status\":\"completed\",\"output\":[{\"type\":"
                          "\"message\",\"role\":\"assistant\",\"content\":[%1]}]}")
            << 1;
        QTest::newRow("gemini parts") << int(wire::Api::Google)
                                      << QByteArray("{\"functionCall\":{\"name\":\"f\",\"args\":{}}}")
                                      << QByteArray(
                                             "{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[%1]}}]}")
                                      << 0;
    }
    void moreBlocksThanTheBoundMakeNoEvents() {
        QFETCH(int, api);
        QFETCH(QByteArray, item);
        QFETCH(QByteArray, answer);
        auto body = [&](int n) {
            QByteArrayList items;
            for (int i = 0; i < n; ++i)
                items << item;
            return QByteArray(answer).replace("%1", items.join(','));
        };
        QFETCH(int, extra);
        qsizetype blocks = -1;
        QVERIFY(eventsOfJsonAnswer(wire::Api(api), body(10 - extra), 10, &blocks));
        QCOMPARE(blocks, 10);
        QVERIFY(!eventsOfJsonAnswer(wire::Api(api), body(11 - extra), 10, &blocks));
        QCOMPARE(blocks, 11);
        QVERIFY(eventsOfJsonAnswer(wire::Api(api), body(11))); // unbounded
        // A text RapidJSON refuses and Qt takes (a raw control character) is counted all the same.
        QVERIFY(
            !eventsOfJsonAnswer(wire::Api(api), QByteArray(body(11 - extra)).replace("\"f\"", "\"f\t\""), 10, &blocks));
        QCOMPARE(blocks, 11);
    }

    // An answer's values are bounded as a request body's are (rj::ParsedJson::maxValuesFor): one
    // whose bulk is tiny values makes no event and no tree, and says why (probe AA2-F3: 60 MB of
    // `0,` held 621 MB in Qt's tree before the decoder refused the event made of it).
    void anAnswerOfTinyValuesIsRefused() {
        const auto answer = [](const QByteArray &content, int values) {
            QByteArray zeros;
            for (int i = 0; i < values; ++i)
                zeros += i ? ",0" : "0";
            return "{\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":"
                   "\"assistant\",\"content\":\"" +
                   content + "\"},\"finish_reason\":\"stop\"}],\"x\":[" + zeros + "]}";
        };
        const QByteArray tiny = answer("hi", 200000); // 400 KB: 125 000 values at most
        QVERIFY(!eventsOfJsonAnswer(wire::Api::OpenAICompletions, tiny));
        bool tooMany = false;
        qsizetype blocks = -1;
        QVERIFY(!eventsOfJsonAnswer(wire::Api::OpenAICompletions, tiny, 10, &blocks, &tooMany));
        QVERIFY(tooMany);
        // RapidJSON refuses a raw control character in a string, where Qt takes it: the values
        // after it are bounded all the same.
        tooMany = false;
        QVERIFY(!eventsOfJsonAnswer(wire::Api::OpenAICompletions, answer("h\ti", 200000), 10, &blocks, &tooMany));
        QVERIFY(tooMany);
        // Within the bound, and as large with its bytes in one string, it is the answer.
        QVERIFY(eventsOfJsonAnswer(wire::Api::OpenAICompletions, answer("hi", 100000), 10, &blocks, &tooMany));
        QVERIFY(!tooMany);
        QVERIFY(eventsOfJsonAnswer(wire::Api::OpenAICompletions, answer(QByteArray(400000, 'w'), 1), 10, &blocks,
                                   &tooMany));
        QVERIFY(!tooMany);
        QVERIFY(eventsOfJsonAnswer(wire::Api::OpenAICompletions, answer("h\ti", 100000), 10, &blocks, &tooMany));
        QVERIFY(!tooMany);
    }
};

QTEST_GUILESS_MAIN(TestJsonAnswer)
#include "test_json_answer.moc"
