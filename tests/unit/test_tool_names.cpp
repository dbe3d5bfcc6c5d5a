// Tool names a converted request gives its upstream: valid there, one alias per name, the same
// in the definitions, the tool choice and the history, and the calls of the answer back by the
// client's names (core/upstream/tool_names.h).

#include "core/upstream/anthropic_adapter.h"
#include "core/upstream/google_adapter.h"
#include "core/upstream/openai_completions_adapter.h"
#include "core/upstream/openai_responses_adapter.h"
#include "core/upstream/tool_names.h"
#include "wire_fixtures.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QSet>
#include <QtTest>

using namespace sw;
using namespace sw::upstream;
using wire::Api;

namespace {

const QString kLong = QStringLiteral("mcp__a_very_long_server_name__") + QString(50, QLatin1Char('x')); // 80 chars

model::Tool tool(const QString &name) {
    model::Tool t;
    t.name = name;
    t.description = QStringLiteral("does ") + name;
    t.parameters = QJsonObject{{"type", "object"}, {"properties", QJsonObject()}};
    return t;
}

// A pi client's request: three tools, one of them forced, and a turn that called one of them.
model::ChatRequest piRequest(const QStringList &tools, const QString &choice, const QString &called) {
    model::ChatRequest req;
    req.sourceApi = Api::Pi;
    req.model = QStringLiteral("m");
    req.options.maxTokens = 100;
    for (const QString &name : tools)
        req.context.tools << tool(name);
    req.options.toolChoice = choice;
    model::Message user;
    user.content << model::ContentBlock::makeText(QStringLiteral("list the files"));
    req.context.messages << user;
    if (!called.isEmpty()) {
        model::Message assistant;
        assistant.role = model::Role::Assistant;
        model::ContentBlock call;
        call.type = model::BlockType::ToolCall;
        call.toolCallId = QStringLiteral("call_1");
        call.toolName = called;
        call.arguments = QJsonObject{{"path", "."}};
        call.argumentsJson = QStringLiteral("{\"path\":\".\"}");
        assistant.content << call;
        model::Message result;
        result.role = model::Role::ToolResult;
        result.toolCallId = QStringLiteral("call_1");
        result.toolName = called;
        result.content << model::ContentBlock::makeText(QStringLiteral("a.txt"));
        req.context.messages << assistant << result;
    }
    return req;
}

Target targetFor(Api api) {
    Target t;
    t.provider = QStringLiteral("p");
    t.modelId = QStringLiteral("model-x");
    t.api = wire::apiName(api);
    t.baseUrl = QStringLiteral("https://upstream.example/v1");
    t.credential = "secret";
    return t;
}

QString str(const QJsonValue &v) {
    return v.toString();
}

// The tool names a body of `api` carries, by where they stand.
struct BodyNames {
    QStringList definitions;
    QString choice;
    QStringList calls;   // the history's calls
    QStringList results; // the history's results, where the API names them (Gemini)
};

BodyNames namesIn(Api api, const QJsonObject &body) {
    BodyNames out;
    switch (api) {
    case Api::OpenAICompletions:
        for (const QJsonValue &t : body.value("tools").toArray())
            out.definitions << str(t.toObject().value("function").toObject().value("name"));
        out.choice = str(body.value("tool_choice").toObject().value("function").toObject().value("name"));
        for (const QJsonValue &m : body.value("messages").toArray())
            for (const QJsonValue &c : m.toObject().value("tool_calls").toArray())
                out.calls << str(c.toObject().value("function").toObject().value("name"));
        break;
    case Api::OpenAIResponses:
        for (const QJsonValue &t : body.value("tools").toArray())
            out.definitions << str(t.toObject().value("name"));
        out.choice = str(body.value("tool_choice").toObject().value("name"));
        for (const QJsonValue &i : body.value("input").toArray())
            if (str(i.toObject().value("type")) == QLatin1String("function_call"))
                out.calls << str(i.toObject().value("name"));
        break;
    case Api::AnthropicMessages:
        for (const QJsonValue &t : body.value("tools").toArray())
            out.definitions << str(t.toObject().value("name"));
        out.choice = str(body.value("tool_choice").toObject().value("name"));
        for (const QJsonValue &m : body.value("messages").toArray())
            for (const QJsonValue &b : m.toObject().value("content").toArray())
                if (str(b.toObject().value("type")) == QLatin1String("tool_use"))
                    out.calls << str(b.toObject().value("name"));
        break;
    case Api::Google:
        for (const QJsonValue &t : body.value("tools").toArray())
            for (const QJsonValue &d : t.toObject().value("functionDeclarations").toArray())
                out.definitions << str(d.toObject().value("name"));
        out.choice = str(body.value("toolConfig")
                             .toObject()
                             .value("functionCallingConfig")
                             .toObject()
                             .value("allowedFunctionNames")
                             .toArray()
                             .at(0));
        for (const QJsonValue &c : body.value("contents").toArray())
            for (const QJsonValue &p : c.toObject().value("parts").toArray()) {
                const QJsonObject part = p.toObject();
                if (part.contains("functionCall"))
                    out.calls << str(part.value("functionCall").toObject().value("name"));
                if (part.contains("functionResponse"))
                    out.results << str(part.value("functionResponse").toObject().value("name"));
            }
        break;
    case Api::Pi:
        break;
    }
    return out;
}

const UpstreamAdapter &adapterOf(Api api) {
    return *adapterFor(wire::apiName(api));
}

QByteArray chatChunk(const QJsonObject &delta, const QJsonValue &finish = QJsonValue::Null) {
    const QJsonObject chunk{
        {"id", "chatcmpl-1"},
        {"object", "chat.completion.chunk"},
        {"created", 1},
        {"model", "m"},
        {"choices", QJsonArray{QJsonObject{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
    return "data: " + QJsonDocument(chunk).toJson(QJsonDocument::Compact) + "\n\n";
}

QByteArray chatCall(int index, const QString &id, const QString &name) {
    return chatChunk(QJsonObject{
        {"tool_calls", QJsonArray{QJsonObject{{"index", index},
                                              {"id", id},
                                              {"type", "function"},
                                              {"function", QJsonObject{{"name", name}, {"arguments", "{}"}}}}}}});
}

} // namespace

class TestToolNames : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void validity_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<int>("api");
        QTest::addColumn<bool>("valid");
        const int chat = int(Api::OpenAICompletions), responses = int(Api::OpenAIResponses),
                  messages = int(Api::AnthropicMessages), gemini = int(Api::Google), pi = int(Api::Pi);
        QTest::newRow("plain, chat") << QStringLiteral("get_weather-2") << chat << true;
        QTest::newRow("dot, chat") << QStringLiteral("files.read") << chat << false;
        QTest::newRow("dot, responses") << QStringLiteral("files.read") << responses << false;
        QTest::newRow("dot, messages") << QStringLiteral("files.read") << messages << false;
        QTest::newRow("dot, gemini") << QStringLiteral("files.read") << gemini << true;
        QTest::newRow("colon, gemini") << QStringLiteral("ns:tool") << gemini << true;
        QTest::newRow("slash, gemini") << QStringLiteral("a/b") << gemini << false;
        QTest::newRow("space, messages") << QStringLiteral("shell run") << messages << false;
        QTest::newRow("non-ASCII, chat") << QStringLiteral("café") << chat << false;
        QTest::newRow("digit first, chat") << QStringLiteral("9lives") << chat << true;
        QTest::newRow("digit first, gemini") << QStringLiteral("9lives") << gemini << false;
        QTest::newRow("dash first, gemini") << QStringLiteral("-x") << gemini << false;
        QTest::newRow("underscore first, gemini") << QStringLiteral("_x") << gemini << true;
        QTest::newRow("64, chat") << QString(64, QLatin1Char('a')) << chat << true;
        QTest::newRow("65, chat") << QString(65, QLatin1Char('a')) << chat << false;
        QTest::newRow("65, gemini") << QString(65, QLatin1Char('a')) << gemini << false;
        QTest::newRow("128, messages") << QString(128, QLatin1Char('a')) << messages << true;
        QTest::newRow("129, messages") << QString(129, QLatin1Char('a')) << messages << false;
        QTest::newRow("empty, chat") << QString() << chat << false;
        QTest::newRow("anything, pi") << QStringLiteral("files.read / all") << pi << true;
    }
    void validity() {
        QFETCH(QString, name);
        QFETCH(int, api);
        QFETCH(bool, valid);
        QCOMPARE(isValidToolName(name, Api(api)), valid);
    }

    // Valid names everywhere: nothing aliased, the request used as it is.
    void validNamesAreLeftAlone() {
        const model::ChatRequest req = piRequest({QStringLiteral("read_file"), QStringLiteral("write-file")},
                                                 QStringLiteral("read_file"), QStringLiteral("read_file"));
        for (Api api : {Api::OpenAICompletions, Api::OpenAIResponses, Api::AnthropicMessages, Api::Google}) {
            const ToolNameAliases aliases = ToolNameAliases::forRequest(req, api);
            QVERIFY(aliases.isEmpty());
            std::optional<model::ChatRequest> storage;
            QCOMPARE(&withToolAliases(req, aliases, storage), &req); // no copy
            QVERIFY(!storage);
            const HttpRequest http = adapterOf(api).buildRequest(req, targetFor(api), {});
            QVERIFY(http.toolNameOriginals.isEmpty());
            const BodyNames names = namesIn(api, QJsonDocument::fromJson(http.body).object());
            QCOMPARE(names.definitions, (QStringList{"read_file", "write-file"}));
            QCOMPARE(names.choice, QStringLiteral("read_file"));
            QCOMPARE(names.calls, QStringList{"read_file"});
        }
    }

    // A same-API client's body goes as it sent it, whatever its names.
    void sameApiClientIsNotAliased() {
        model::ChatRequest req = piRequest({QStringLiteral("files.read")}, {}, {});
        req.sourceApi = Api::OpenAICompletions;
        QVERIFY(ToolNameAliases::forRequest(req, Api::OpenAICompletions).isEmpty());
        QVERIFY(!ToolNameAliases::forRequest(req, Api::AnthropicMessages).isEmpty());
    }

    void aliasesAreReadable() {
        const model::ChatRequest req =
            piRequest({QStringLiteral("files.read"), QStringLiteral("9lives"), kLong}, {}, {});
        const ToolNameAliases chat = ToolNameAliases::forRequest(req, Api::OpenAICompletions);
        QCOMPARE(chat.alias(QStringLiteral("files.read")), QStringLiteral("files_read"));
        QCOMPARE(chat.alias(QStringLiteral("9lives")), QStringLiteral("9lives")); // valid there
        const QString longAlias = chat.alias(kLong);
        QCOMPARE(longAlias.size(), 64);
        QVERIFY(longAlias.startsWith(kLong.left(55) + QLatin1Char('_')));
        QCOMPARE(chat.original(longAlias), kLong);
        QCOMPARE(chat.original(QStringLiteral("something_else")), QStringLiteral("something_else"));

        const ToolNameAliases gemini = ToolNameAliases::forRequest(req, Api::Google);
        QCOMPARE(gemini.alias(QStringLiteral("files.read")), QStringLiteral("files.read"));
        QCOMPARE(gemini.alias(QStringLiteral("9lives")), QStringLiteral("_9lives"));

        const ToolNameAliases messages = ToolNameAliases::forRequest(req, Api::AnthropicMessages);
        QCOMPARE(messages.alias(kLong), kLong); // 80 characters: within Messages' 128
        QCOMPARE(messages.originals().size(), 1);
    }

    // Aliases never take another tool's name or each other's, are valid, go back to their name,
    // and come out the same whatever order the request lists the tools in.
    void aliasesAreDistinctValidAndStable_data() {
        QTest::addColumn<int>("api");
        QTest::newRow("chat") << int(Api::OpenAICompletions);
        QTest::newRow("responses") << int(Api::OpenAIResponses);
        QTest::newRow("messages") << int(Api::AnthropicMessages);
        QTest::newRow("gemini") << int(Api::Google);
    }
    void aliasesAreDistinctValidAndStable() {
        QFETCH(int, api);
        const Api target = Api(api);
        const QString longA = QString(200, QLatin1Char('a')) + QStringLiteral(".one");
        const QString longB = QString(200, QLatin1Char('a')) + QStringLiteral(".two");
        QStringList names{QStringLiteral("files.read"),
                          QStringLiteral("files_read"),
                          QStringLiteral("files read"),
                          QStringLiteral("files/read"),
                          QStringLiteral("_files_read"),
                          QStringLiteral("1.x"),
                          QStringLiteral("é"),
                          longA,
                          longB};
        const ToolNameAliases aliases = ToolNameAliases::forRequest(piRequest(names, {}, {}), target);
        QVERIFY(!aliases.isEmpty());
        QSet<QString> sent;
        for (const QString &n : names) {
            const QString a = aliases.alias(n);
            QVERIFY2(isValidToolName(a, target), qPrintable(n + QStringLiteral(" → ") + a));
            QVERIFY2(!sent.contains(a), qPrintable(QStringLiteral("two tools named ") + a));
            sent.insert(a);
            QCOMPARE(aliases.original(a), n);
        }
        std::reverse(names.begin(), names.end());
        const ToolNameAliases again = ToolNameAliases::forRequest(piRequest(names, {}, {}), target);
        QCOMPARE(again.originals(), aliases.originals());
    }

    // Each adapter's converted body: every name valid there, the one alias of a name in the
    // definitions, the tool choice and the history alike, and the way back for the answer.
    void eachAdapterSendsTheAliases_data() { aliasesAreDistinctValidAndStable_data(); }
    void eachAdapterSendsTheAliases() {
        QFETCH(int, api);
        const Api target = Api(api);
        const QStringList tools{QStringLiteral("files.read"), QStringLiteral("shell run"), QStringLiteral("files_read"),
                                kLong};
        const model::ChatRequest req = piRequest(tools, QStringLiteral("shell run"), QStringLiteral("shell run"));
        const ToolNameAliases aliases = ToolNameAliases::forRequest(req, target);
        const HttpRequest http = adapterOf(target).buildRequest(req, targetFor(target), {});
        const BodyNames names = namesIn(target, QJsonDocument::fromJson(http.body).object());

        QStringList expected;
        for (const QString &n : tools)
            expected << aliases.alias(n);
        QCOMPARE(names.definitions, expected);
        for (const QString &n : names.definitions)
            QVERIFY2(isValidToolName(n, target), qPrintable(n));
        const QString shell = aliases.alias(QStringLiteral("shell run"));
        QCOMPARE(shell, QStringLiteral("shell_run"));
        QCOMPARE(names.choice, shell);
        QCOMPARE(names.calls, QStringList{shell});
        if (target == Api::Google)
            QCOMPARE(names.results, QStringList{shell});
        QVERIFY(!http.body.contains("\"shell run\"")); // only the description says it
        QCOMPARE(http.toolNameOriginals, aliases.originals());
        QCOMPARE(http.toolNameOriginals.value(shell), QStringLiteral("shell run"));
        // The names valid there go as they are.
        QCOMPARE(aliases.alias(QStringLiteral("files_read")), QStringLiteral("files_read"));
    }

    // The answer's calls reach the client by its names, in every event that names the call; a name
    // that is no alias (the model's own, or one valid as it was) passes as it is.
    void decoderRestoresTheClientsNames() {
        const model::ChatRequest req =
            piRequest({QStringLiteral("files.read"), QStringLiteral("list")}, {}, QStringLiteral("files.read"));
        const ToolNameAliases aliases = ToolNameAliases::forRequest(req, Api::OpenAICompletions);
        QCOMPARE(aliases.alias(QStringLiteral("files.read")), QStringLiteral("files_read"));
        const QByteArray sse = chatChunk(QJsonObject{{"role", "assistant"}, {"content", QJsonValue::Null}}) +
                               chatCall(0, QStringLiteral("call_a"), QStringLiteral("files_read")) +
                               chatCall(1, QStringLiteral("call_b"), QStringLiteral("list")) +
                               chatCall(2, QStringLiteral("call_c"), QStringLiteral("made_up")) +
                               chatChunk(QJsonObject{}, QStringLiteral("tool_calls")) + "data: [DONE]\n\n";
        ToolNameRestoringDecoder decoder(
            adapterOf(Api::OpenAICompletions).makeDecoder(targetFor(Api::OpenAICompletions)), aliases.originals());
        const QList<model::StreamEvent> events = test::decodeTranscript(decoder, sse);
        QStringList started, ended;
        for (const model::StreamEvent &e : events) {
            if (e.type == model::EventType::ToolCallStart)
                started << e.block.toolName;
            if (e.type == model::EventType::ToolCallEnd)
                ended << e.block.toolName;
        }
        const QStringList expected{QStringLiteral("files.read"), QStringLiteral("list"), QStringLiteral("made_up")};
        QCOMPARE(started, expected);
        QCOMPARE(ended, expected);
    }
};

QTEST_GUILESS_MAIN(TestToolNames)
#include "test_tool_names.moc"
