// The same-API request path, old against new: the CPU an adapter's buildRequest spends to
// turn a client's request into the upstream's body when the client speaks the upstream's API.
// "whole" writes the parsed body out again (the path kept for bodies the splice declines, run
// here by clearing the request's rawBody); "splice" forwards the client's bytes with model and
// stream set (wire::spliceTopLevel). For the bench's tiny Chat request and for a 200 KB
// coding-agent conversation in each API, with the decode of the same body for scale. Thread
// CPU time, so a busy machine changes it less than wall time.
//
// The decode parses the body once into RapidJSON's document ("parse": wire::parseClientBody,
// read as Qt's parser reads it) and walks it; no Qt JSON tree is built ("Qt parse", what
// QJsonDocument::fromJson alone costs on the same body, is for scale).
//
//   bench_splice [--iterations 2000]
//   bench_splice --profile chat|anthropic|responses [--iterations N]
//       decodes that API's 200 KB conversation N times and nothing else (for callgrind or perf)

#include "bench/cpu_timing.h"
#include "core/formats/inbound_codec.h"
#include "core/upstream/upstream_adapter.h"
#include "core/wire/api.h"
#include "core/wire/client_body.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cstdio>
#include <functional>

namespace {

using sw::bench::perCallUs;

// Text like a coding agent's turns: code with quotes, braces, escapes and a little unicode.
QString codeText(int turn) {
    return QStringLiteral("Turn %1: in src/parser.cpp, `if (s[i] == '\"') { return \"\\\\\"; }` fails for "
                          "{\"key\": [1, 2, {\"nested\": \"va\\\"lue\"}]} — résumé ✓.\n")
        .arg(turn)
        .repeated(6);
}

// A conversation of about `bytes` in the client's API: user turns, assistant text with tool
// calls, tool results.
QByteArray conversation(sw::wire::Api api, qsizetype bytes) {
    QJsonArray items;
    QJsonObject body;
    int turn = 0;
    auto size = [&] { return QJsonDocument(items).toJson(QJsonDocument::Compact).size(); };
    while (size() < bytes) {
        const QString id = QStringLiteral("call_%1").arg(turn);
        const QString args = QStringLiteral("{\"path\":\"src/file%1.cpp\",\"line\":%1}").arg(turn);
        switch (api) {
        case sw::wire::Api::OpenAICompletions:
            items.append(QJsonObject{{"role", "user"}, {"content", codeText(turn)}});
            items.append(QJsonObject{
                {"role", "assistant"},
                {"content", codeText(turn + 1)},
                {"tool_calls",
                 QJsonArray{QJsonObject{{"id", id},
                                        {"type", "function"},
                                        {"function", QJsonObject{{"name", "read"}, {"arguments", args}}}}}}});
            items.append(QJsonObject{{"role", "tool"}, {"tool_call_id", id}, {"content", codeText(turn + 2)}});
            break;
        case sw::wire::Api::AnthropicMessages:
            items.append(QJsonObject{{"role", "user"}, {"content", codeText(turn)}});
            items.append(QJsonObject{
                {"role", "assistant"},
                {"content", QJsonArray{QJsonObject{{"type", "thinking"},
                                                   {"thinking", codeText(turn)},
                                                   {"signature", QString(300, QLatin1Char('S'))}},
                                       QJsonObject{{"type", "text"}, {"text", codeText(turn + 1)}},
                                       QJsonObject{{"type", "tool_use"},
                                                   {"id", id},
                                                   {"name", "read"},
                                                   {"input", QJsonDocument::fromJson(args.toUtf8()).object()}}}}});
            items.append(QJsonObject{
                {"role", "user"},
                {"content", QJsonArray{QJsonObject{
                                {"type", "tool_result"}, {"tool_use_id", id}, {"content", codeText(turn + 2)}}}}});
            break;
        default:
            items.append(QJsonObject{{"role", "user"}, {"content", codeText(turn)}});
            items.append(QJsonObject{{"type", "reasoning"},
                                     {"id", QStringLiteral("rs_%1").arg(turn)},
                                     {"summary", QJsonArray()},
                                     {"encrypted_content", QString(300, QLatin1Char('E'))}});
            items.append(
                QJsonObject{{"type", "function_call"}, {"call_id", id}, {"name", "read"}, {"arguments", args}});
            items.append(
                QJsonObject{{"type", "function_call_output"}, {"call_id", id}, {"output", codeText(turn + 2)}});
            break;
        }
        ++turn;
    }
    const QJsonObject tool{{"type", "object"}, {"properties", QJsonObject{{"path", QJsonObject{{"type", "string"}}}}}};
    switch (api) {
    case sw::wire::Api::OpenAICompletions:
        body = {{"model", "gpt-bench"},
                {"messages", items},
                {"tools", QJsonArray{QJsonObject{{"type", "function"},
                                                 {"function", QJsonObject{{"name", "read"}, {"parameters", tool}}}}}}};
        break;
    case sw::wire::Api::AnthropicMessages:
        body = {{"model", "claude-bench"},
                {"max_tokens", 32000},
                {"thinking", QJsonObject{{"type", "enabled"}, {"budget_tokens", 10000}}},
                {"messages", items},
                {"tools", QJsonArray{QJsonObject{{"name", "read"}, {"input_schema", tool}}}}};
        break;
    default:
        body = {{"model", "codex-bench"},
                {"input", items},
                {"tools", QJsonArray{QJsonObject{{"type", "function"}, {"name", "read"}, {"parameters", tool}}}}};
        break;
    }
    return QJsonDocument(body).toJson(QJsonDocument::Compact);
}

void measure(const char *name, sw::wire::Api api, const QByteArray &body, int n) {
    const auto &codec = sw::formats::codecFor(api);
    const sw::upstream::UpstreamAdapter *adapter = sw::upstream::adapterFor(sw::wire::apiName(api));
    sw::upstream::Target target;
    target.provider = QStringLiteral("bench");
    target.modelId = QStringLiteral("m");
    target.api = sw::wire::apiName(api);
    target.baseUrl = QStringLiteral("http://127.0.0.1:1/v1");
    sw::model::GatewayError error;
    auto spliced = codec.decode(body, &error);
    if (!spliced)
        qFatal("the bench body does not decode: %s", qPrintable(error.message));
    sw::model::ChatRequest whole = *spliced;
    whole.rawBody.clear();
    const QByteArray splicedBody = adapter->buildRequest(*spliced, target, {}).body;
    const QByteArray wholeBody = adapter->buildRequest(whole, target, {}).body;
    if (QJsonDocument::fromJson(splicedBody) != QJsonDocument::fromJson(wholeBody))
        qFatal("the spliced body is not the whole body's JSON");
    if (!sw::wire::parseClientBody(body))
        qFatal("the bench body does not parse");
    const double decodeUs = perCallUs(n, [&] { (void)codec.decode(body, &error); });
    const double parseUs = perCallUs(n, [&] { (void)sw::wire::parseClientBody(body); });
    const double qtParseUs = perCallUs(n, [&] { (void)QJsonDocument::fromJson(body); });
    const double wholeUs = perCallUs(n, [&] { (void)adapter->buildRequest(whole, target, {}); });
    const double spliceUs = perCallUs(n, [&] { (void)adapter->buildRequest(*spliced, target, {}); });
    std::printf("%-34s %8lld %10.2f %10.2f %10.2f %10.2f %10.2f %8.1fx\n", name, static_cast<long long>(body.size()),
                decodeUs, parseUs, qtParseUs, wholeUs, spliceUs, wholeUs / spliceUs);
}

} // namespace

int main(int argc, char **argv) {
    QCoreApplication app(argc, argv);
    QCommandLineParser parser;
    parser.addHelpOption();
    parser.addOption({QStringLiteral("iterations"), QStringLiteral("Calls per figure (default 2000)."),
                      QStringLiteral("n"), QStringLiteral("2000")});
    parser.addOption({QStringLiteral("profile"), QStringLiteral("Only decode this API's 200 KB conversation."),
                      QStringLiteral("api")});
    parser.process(app);
    if (parser.isSet(QStringLiteral("profile"))) {
        const QString which = parser.value(QStringLiteral("profile"));
        const sw::wire::Api api = which == QLatin1String("anthropic")   ? sw::wire::Api::AnthropicMessages
                                  : which == QLatin1String("responses") ? sw::wire::Api::OpenAIResponses
                                                                        : sw::wire::Api::OpenAICompletions;
        const QByteArray body = conversation(api, 200 * 1024);
        sw::model::GatewayError error;
        const int times = std::max(1, parser.value(QStringLiteral("iterations")).toInt());
        for (int i = 0; i < times; ++i)
            if (!sw::formats::codecFor(api).decode(body, &error))
                qFatal("the bench body does not decode: %s", qPrintable(error.message));
        return 0;
    }
    const int n = std::max(10, parser.value(QStringLiteral("iterations")).toInt());
    const int bigN = std::max(20, n / 10);

    std::printf("%-34s %8s %10s %10s %10s %10s %10s %9s\n", "request (same API)", "bytes", "decode us", "parse us",
                "Qt parse", "whole us", "splice us", "saved");
    measure("chat, the bench's request", sw::wire::Api::OpenAICompletions,
            R"({"model":"gpt-bench","stream":false,"messages":[{"role":"user","content":"ping"}]})", n);
    measure("chat, 200 KB conversation", sw::wire::Api::OpenAICompletions,
            conversation(sw::wire::Api::OpenAICompletions, 200 * 1024), bigN);
    measure("anthropic, 200 KB conversation", sw::wire::Api::AnthropicMessages,
            conversation(sw::wire::Api::AnthropicMessages, 200 * 1024), bigN);
    measure("responses, 200 KB conversation", sw::wire::Api::OpenAIResponses,
            conversation(sw::wire::Api::OpenAIResponses, 200 * 1024), bigN);
    return 0;
}
