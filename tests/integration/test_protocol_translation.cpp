// What a converted request carries to each upstream API, and what a same-API JSON
// answer keeps: the real engine on loopback in front of
// the fake upstreams, which record the body they were sent and can replay real
// provider streams from tests/data. Every request names one candidate, so an
// incompatible one answers 400 naming the field whether the loop reports the first
// incompatibility or skips to the next candidate and finds none.

#include "core/upstream/default_transport.h"
#include "gateway_fixture.h"
#include "wire_fixtures.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QtTest>

#include <functional>
#include <optional>

using namespace sw;
using namespace sw::test;

namespace {

QJsonObject sentTo(const demo::FakeUpstream &fake) {
    return QJsonDocument::fromJson(fake.requests().last().body).object();
}

QJsonObject shellTool() {
    return QJsonObject{
        {"type", "function"},
        {"name", "shell"},
        {"description", "Runs a shell command and returns its output."},
        {"strict", false},
        {"parameters",
         QJsonObject{{"type", "object"},
                     {"properties", QJsonObject{{"command", QJsonObject{{"type", "array"},
                                                                        {"items", QJsonObject{{"type", "string"}}}}}}},
                     {"required", QJsonArray{"command"}}}}};
}

const char *kGrammar = "start: begin_patch hunk+ end_patch\nbegin_patch: \"*** Begin Patch\" LF\n"
                       "end_patch: \"*** End Patch\" LF?\n";
const char *kPatch = "*** Begin Patch\n*** Update File: src/main.c\n@@\n-  return 1;\n+  return 0;\n*** End Patch\n";

QJsonObject applyPatchTool() {
    return QJsonObject{{"type", "custom"},
                       {"name", "apply_patch"},
                       {"description", "Use the `apply_patch` tool to edit files."},
                       {"format", QJsonObject{{"type", "grammar"}, {"syntax", "lark"}, {"definition", kGrammar}}}};
}

// A Codex turn after one apply_patch call: reasoning on, its own tools, no parallel calls.
QJsonObject codexBody(const QString &model) {
    return QJsonObject{
        {"model", model},
        {"stream", false},
        {"instructions", "You are a coding agent."},
        {"parallel_tool_calls", false},
        {"reasoning", QJsonObject{{"effort", "medium"}}},
        {"tools", QJsonArray{shellTool(), applyPatchTool(), QJsonObject{{"type", "web_search"}}}},
        {"input",
         QJsonArray{
             QJsonObject{{"type", "message"},
                         {"role", "user"},
                         {"content", QJsonArray{QJsonObject{{"type", "input_text"}, {"text", "fix main"}}}}},
             QJsonObject{{"type", "custom_tool_call"},
                         {"id", "ctc_01"},
                         {"call_id", "call_patch1"},
                         {"name", "apply_patch"},
                         {"input", kPatch}},
             QJsonObject{{"type", "custom_tool_call_output"}, {"call_id", "call_patch1"}, {"output", "Done!"}}}}};
}

enum class Inbound { Chat, Anthropic, Responses };

const std::pair<Inbound, const char *> kInbound[] = {
    {Inbound::Chat, "chat"}, {Inbound::Anthropic, "anthropic"}, {Inbound::Responses, "responses"}};
const std::pair<const char *, const char *> kTargets[] = {{"pa/claude-a", "anthropic-messages"},
                                                          {"pb/gpt-b", "openai-completions"},
                                                          {"pd/resp-d", "openai-responses"},
                                                          {"pe/gemini-e", "google-generative-ai"}};

QString pathFor(Inbound f) {
    return f == Inbound::Chat        ? QStringLiteral("/v1/chat/completions")
           : f == Inbound::Anthropic ? QStringLiteral("/v1/messages")
                                     : QStringLiteral("/v1/responses");
}

QJsonObject weatherSchema() {
    return QJsonObject{{"type", "object"},
                       {"properties", QJsonObject{{"city", QJsonObject{{"type", "string"}}},
                                                  {"celsius", QJsonObject{{"type", "number"}}}}},
                       {"required", QJsonArray{"city", "celsius"}},
                       {"additionalProperties", false}};
}

// One question in the inbound format, asking for JSON that follows weatherSchema().
QJsonObject structuredRequest(Inbound f, const QString &model, bool stream) {
    switch (f) {
    case Inbound::Chat:
        return QJsonObject{{"model", model},
                           {"stream", stream},
                           {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "weather in Paris"}}}},
                           {"response_format", QJsonObject{{"type", "json_schema"},
                                                           {"json_schema", QJsonObject{{"name", "weather"},
                                                                                       {"strict", true},
                                                                                       {"schema", weatherSchema()}}}}}};
    case Inbound::Anthropic:
        return QJsonObject{{"model", model},
                           {"stream", stream},
                           {"max_tokens", 512},
                           {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "weather in Paris"}}}},
                           {"output_config", QJsonObject{{"format", QJsonObject{{"type", "json_schema"},
                                                                                {"schema", weatherSchema()}}}}}};
    case Inbound::Responses:
        return QJsonObject{{"model", model},
                           {"stream", stream},
                           {"input", "weather in Paris"},
                           {"text", QJsonObject{{"format", QJsonObject{{"type", "json_schema"},
                                                                       {"name", "weather"},
                                                                       {"strict", true},
                                                                       {"schema", weatherSchema()}}}}}};
    }
    return {};
}

// The schema the upstream was asked to follow, read from its own API's field.
QJsonObject schemaSent(const QString &api, const QJsonObject &sent) {
    if (api == QLatin1String("anthropic-messages"))
        return sent.value("output_config").toObject().value("format").toObject().value("schema").toObject();
    if (api == QLatin1String("openai-completions"))
        return sent.value("response_format").toObject().value("json_schema").toObject().value("schema").toObject();
    if (api == QLatin1String("openai-responses"))
        return sent.value("text").toObject().value("format").toObject().value("schema").toObject();
    if (sent.value("generationConfig").toObject().value("responseMimeType").toString() !=
        QLatin1String("application/json"))
        return {};
    return sent.value("generationConfig").toObject().value("responseJsonSchema").toObject();
}

// A PDF the user attached (a real PDF header, base64), with the question, in the inbound format.
const char *const kPdfBase64 = "JVBERi0xLjQKJcOkw7zDtsOfCjEgMCBvYmoKPDwvVHlwZS9DYXRhbG9nPj4KZW5kb2JqCg==";
QJsonObject pdfRequest(Inbound f, const QString &model) {
    const QString dataUri = QStringLiteral("data:application/pdf;base64,") + QLatin1String(kPdfBase64);
    switch (f) {
    case Inbound::Chat:
        return QJsonObject{
            {"model", model},
            {"messages",
             QJsonArray{QJsonObject{
                 {"role", "user"},
                 {"content",
                  QJsonArray{QJsonObject{{"type", "file"},
                                         {"file", QJsonObject{{"file_data", dataUri}, {"filename", "report.pdf"}}}},
                             QJsonObject{{"type", "text"}, {"text", "summarise the report"}}}}}}}};
    case Inbound::Anthropic:
        return QJsonObject{
            {"model", model},
            {"max_tokens", 512},
            {"messages",
             QJsonArray{QJsonObject{
                 {"role", "user"},
                 {"content", QJsonArray{QJsonObject{{"type", "document"},
                                                    {"title", "report.pdf"},
                                                    {"source", QJsonObject{{"type", "base64"},
                                                                           {"media_type", "application/pdf"},
                                                                           {"data", kPdfBase64}}}},
                                        QJsonObject{{"type", "text"}, {"text", "summarise the report"}}}}}}}};
    case Inbound::Responses:
        return QJsonObject{
            {"model", model},
            {"input",
             QJsonArray{QJsonObject{
                 {"role", "user"},
                 {"content",
                  QJsonArray{QJsonObject{{"type", "input_file"}, {"file_data", dataUri}, {"filename", "report.pdf"}},
                             QJsonObject{{"type", "input_text"}, {"text", "summarise the report"}}}}}}}};
    }
    return {};
}

// The PDF the upstream received in its own API's shape, as "<mime> <name> <base64>" ("" when
// there was none); Gemini's inline data has no name.
QString pdfSent(const QString &api, const QJsonObject &sent) {
    const QJsonArray turns = sent.value(api == QLatin1String("openai-responses")       ? "input"
                                        : api == QLatin1String("google-generative-ai") ? "contents"
                                                                                       : "messages")
                                 .toArray();
    for (const QJsonValue &turn : turns) {
        const QJsonObject t = turn.toObject();
        for (const QJsonValue &part : t.value(t.contains("parts") ? "parts" : "content").toArray()) {
            const QJsonObject o = part.toObject();
            if (o.value("type") == QLatin1String("document")) {
                const QJsonObject source = o.value("source").toObject();
                return source.value("media_type").toString() + ' ' + o.value("title").toString() + ' ' +
                       source.value("data").toString();
            }
            const QJsonObject file = o.value("type") == QLatin1String("file") ? o.value("file").toObject() : o;
            if (file.contains("file_data")) {
                const QString uri = file.value("file_data").toString();
                const qsizetype comma = uri.indexOf(',');
                return uri.mid(5, comma - 5 - 7) + ' ' + file.value("filename").toString() + ' ' + uri.mid(comma + 1);
            }
            if (o.contains("inlineData")) {
                const QJsonObject inline_ = o.value("inlineData").toObject();
                return inline_.value("mimeType").toString() + " - " + inline_.value("data").toString();
            }
        }
    }
    return {};
}

// A tool and "at most one call per turn", in the inbound format.
QJsonObject oneCallRequest(Inbound f, const QString &model) {
    const QJsonObject schema{{"type", "object"},
                             {"properties", QJsonObject{{"city", QJsonObject{{"type", "string"}}}}}};
    const QJsonArray userTurn{QJsonObject{{"role", "user"}, {"content", "use the tool for Paris and Rome"}}};
    switch (f) {
    case Inbound::Chat:
        return QJsonObject{
            {"model", model},
            {"parallel_tool_calls", false},
            {"messages", userTurn},
            {"tools", QJsonArray{QJsonObject{{"type", "function"},
                                             {"function", QJsonObject{{"name", "weather"}, {"parameters", schema}}}}}}};
    case Inbound::Anthropic:
        return QJsonObject{{"model", model},
                           {"max_tokens", 512},
                           {"tool_choice", QJsonObject{{"type", "auto"}, {"disable_parallel_tool_use", true}}},
                           {"messages", userTurn},
                           {"tools", QJsonArray{QJsonObject{{"name", "weather"}, {"input_schema", schema}}}}};
    case Inbound::Responses:
        return QJsonObject{
            {"model", model},
            {"parallel_tool_calls", false},
            {"input", "use the tool for Paris and Rome"},
            {"tools", QJsonArray{QJsonObject{{"type", "function"}, {"name", "weather"}, {"parameters", schema}}}}};
    }
    return {};
}

bool oneCallSent(const QString &api, const QJsonObject &sent) {
    if (api == QLatin1String("anthropic-messages"))
        return sent.value("tool_choice").toObject().value("disable_parallel_tool_use").toBool();
    return sent.contains("parallel_tool_calls") && !sent.value("parallel_tool_calls").toBool(true);
}

// Each object node of a JSON Schema, at every depth (properties, items, compositions, definitions).
void forEachSchemaNode(const QJsonValue &schema, const std::function<void(const QJsonObject &)> &visit) {
    if (!schema.isObject())
        return;
    const QJsonObject node = schema.toObject();
    visit(node);
    for (const char *key : {"properties", "$defs", "definitions"}) {
        const QJsonObject members = node.value(key).toObject();
        for (auto it = members.begin(); it != members.end(); ++it)
            forEachSchemaNode(it.value(), visit);
    }
    for (const char *key : {"anyOf", "oneOf", "allOf"})
        for (const QJsonValue &v : node.value(key).toArray())
            forEachSchemaNode(v, visit);
    forEachSchemaNode(node.value("items"), visit);
}

demo::Fault refusal(const QByteArray &body) {
    demo::Fault f;
    f.kind = demo::Fault::Status;
    f.status = 400;
    f.body = body;
    return f;
}

// What Anthropic's Messages API refuses with a 400 (its own words): a message with empty content but
// a last assistant one, tool blocks in a request that defines no tools, and strict schemas past the
// limits of one request (20 strict tools, 24 optional and 16 union-typed parameters across the strict
// tools and output_config.format).
std::optional<demo::Fault> anthropicRefuses(const demo::RecordedRequest &request) {
    const QJsonObject body = QJsonDocument::fromJson(request.body).object();
    const auto refused = [](const QString &message) {
        return refusal(
            QJsonDocument(QJsonObject{{"type", "error"},
                                      {"error", QJsonObject{{"type", "invalid_request_error"}, {"message", message}}}})
                .toJson(QJsonDocument::Compact));
    };
    const QJsonArray messages = body.value("messages").toArray();
    for (qsizetype i = 0; i < messages.size(); ++i) {
        const QJsonObject m = messages.at(i).toObject();
        const QJsonValue content = m.value("content");
        const bool prefill = i + 1 == messages.size() && m.value("role").toString() == "assistant";
        if (!prefill && (content == QJsonValue(QJsonArray()) || content == QJsonValue("")))
            return refused(QStringLiteral("messages.%1: all messages must have non-empty content except for the "
                                          "optional final assistant message")
                               .arg(i));
    }
    const QJsonArray tools = body.value("tools").toArray();
    for (const QJsonValue &m : body.value("messages").toArray())
        for (const QJsonValue &b : m.toObject().value("content").toArray()) {
            const QString type = b.toObject().value("type").toString();
            if (tools.isEmpty() && (type == "tool_use" || type == "tool_result"))
                return refused("Requests which include `tool_use` or `tool_result` blocks must define tools.");
        }
    QJsonArray strictSchemas;
    for (const QJsonValue &t : tools)
        if (t.toObject().value("strict").toBool())
            strictSchemas.append(t.toObject().value("input_schema"));
    if (strictSchemas.size() > 20)
        return refused(QStringLiteral("Too many strict tools (%1). The maximum number of strict tools supported is 20.")
                           .arg(strictSchemas.size()));
    strictSchemas.append(body.value("output_config").toObject().value("format").toObject().value("schema"));
    int optional = 0;
    int unions = 0;
    for (const QJsonValue &schema : std::as_const(strictSchemas))
        forEachSchemaNode(schema, [&](const QJsonObject &node) {
            const QJsonObject properties = node.value("properties").toObject();
            for (auto it = properties.begin(); it != properties.end(); ++it) {
                optional += node.value("required").toArray().contains(it.key()) ? 0 : 1;
                const QJsonObject p = it.value().toObject();
                unions += p.contains("anyOf") || p.value("type").isArray() ? 1 : 0;
            }
        });
    if (optional > 24 || unions > 16)
        return refused("Schema is too complex for compilation. Try reducing the number of tools or simplifying "
                       "tool schemas.");
    return std::nullopt;
}

// What OpenAI's strict mode refuses with a 400 (Chat and Responses alike): a strict schema with an
// object that does not list every property in `required` or allows other members.
std::optional<demo::Fault> openAIRefuses(const demo::RecordedRequest &request) {
    const QJsonObject body = QJsonDocument::fromJson(request.body).object();
    QList<std::pair<QString, QJsonValue>> strictSchemas;
    const QJsonObject chatFormat = body.value("response_format").toObject().value("json_schema").toObject();
    if (chatFormat.value("strict").toBool())
        strictSchemas.append({"response_format", chatFormat.value("schema")});
    const QJsonObject responsesFormat = body.value("text").toObject().value("format").toObject();
    if (responsesFormat.value("strict").toBool())
        strictSchemas.append({"text.format", responsesFormat.value("schema")});
    const bool responses = request.path.contains("/responses");
    // The Chat reference, tools: "A max of 128 functions are supported."
    if (const qsizetype tools = body.value("tools").toArray().size(); !responses && tools > 128)
        return refusal(
            QJsonDocument(QJsonObject{{"error", QJsonObject{{"message", QStringLiteral("Invalid 'tools': array too "
                                                                                       "long. Expected an array with "
                                                                                       "maximum length 128, but got an "
                                                                                       "array with length %1 instead.")
                                                                            .arg(tools)},
                                                            {"type", "invalid_request_error"},
                                                            {"param", "tools"},
                                                            {"code", "array_above_max_length"}}}})
                .toJson(QJsonDocument::Compact));
    for (const QJsonValue &t : body.value("tools").toArray()) {
        const QJsonObject tool = t.toObject();
        const QJsonObject fn = responses ? tool : tool.value("function").toObject();
        // A Responses function tool is strict unless it says otherwise.
        if (fn.value("strict").toBool(responses))
            strictSchemas.append({"function '" + fn.value("name").toString() + "'", fn.value("parameters")});
    }
    for (const auto &[where, schema] : std::as_const(strictSchemas)) {
        bool closed = true;
        forEachSchemaNode(schema, [&](const QJsonObject &node) {
            if (node.value("type") != QJsonValue("object"))
                return;
            const QJsonArray required = node.value("required").toArray();
            const QStringList keys = node.value("properties").toObject().keys();
            closed = closed && node.value("additionalProperties") == QJsonValue(false) &&
                     std::all_of(keys.begin(), keys.end(), [&](const QString &k) { return required.contains(k); });
        });
        if (!closed)
            return refusal(
                QJsonDocument(QJsonObject{{"error", QJsonObject{{"message", "Invalid schema for " + where +
                                                                                ": In context=(), 'required' is "
                                                                                "required to be supplied and to be "
                                                                                "an array including every key in "
                                                                                "properties."},
                                                                {"type", "invalid_request_error"},
                                                                {"param", QJsonValue::Null},
                                                                {"code", QJsonValue::Null}}}})
                    .toJson(QJsonDocument::Compact));
    }
    return std::nullopt;
}

// What a model or a server refuses with a 400 although its API has the field (probe G2), in the
// provider's words: Gemini 2.5 on a non-zero penalty, gpt-5 and the o-series on sampling, Groq
// (its path: /openai/v1) on logprobs, top_logprobs, logit_bias and a message's name.
std::optional<demo::Fault> modelRefuses(const demo::RecordedRequest &request) {
    const QJsonObject body = QJsonDocument::fromJson(request.body).object();
    const auto openAI = [](const QString &message, const QString &param) {
        return refusal(QJsonDocument(QJsonObject{{"error", QJsonObject{{"message", message},
                                                                       {"type", "invalid_request_error"},
                                                                       {"param", param},
                                                                       {"code", QJsonValue::Null}}}})
                           .toJson(QJsonDocument::Compact));
    };
    if (request.path.contains(":streamGenerateContent")) {
        const QJsonObject generation = body.value("generationConfig").toObject();
        if (generation.value("presencePenalty").toDouble() != 0 || generation.value("frequencyPenalty").toDouble() != 0)
            return refusal(R"({"error":{"code":400,"message":"Penalty is not enabled for models/gemini-e",)"
                           R"("status":"INVALID_ARGUMENT"}})");
        return std::nullopt;
    }
    if (request.path.startsWith("/openai/v1/")) { // Groq
        for (const char *key : {"logprobs", "top_logprobs", "logit_bias"})
            if (body.contains(QLatin1String(key)))
                return openAI(QStringLiteral("'%1' : property '%1' is unsupported").arg(QLatin1String(key)), key);
        const QJsonArray messages = body.value("messages").toArray();
        for (qsizetype i = 0; i < messages.size(); ++i)
            if (messages[i].toObject().contains("name"))
                return openAI(QStringLiteral("'messages.%1' : property 'name' is unsupported").arg(i), "messages");
    }
    const QString model = body.value("model").toString();
    if (model == QLatin1String("gpt-5") || model == QLatin1String("o3"))
        for (const char *key : {"temperature", "top_p", "stop", "max_tokens"})
            if (body.contains(QLatin1String(key)))
                return openAI(QStringLiteral("Unsupported parameter: '%1' is not supported with this model.")
                                  .arg(QLatin1String(key)),
                              key);
    return openAIRefuses(request);
}

// The engine's transport, with a provider's host (Groq's api.groq.com, DeepSeek's api.deepseek.com)
// answered by a fake on loopback.
class HostsOnLoopback final : public upstream::Transport {
public:
    HostsOnLoopback(const QString &fakeBaseUrl, QStringList hosts) : m_fake(fakeBaseUrl), m_hosts(std::move(hosts)) {}
    upstream::UpstreamCall *start(const upstream::HttpRequest &request, QObject *parent) override {
        upstream::HttpRequest r = request;
        if (m_hosts.contains(r.url.host())) {
            r.url.setScheme(m_fake.scheme());
            r.url.setHost(m_fake.host());
            r.url.setPort(m_fake.port());
        }
        return m_real.start(r, parent);
    }

private:
    QUrl m_fake;
    QStringList m_hosts;
    upstream::DefaultTransport m_real;
};

// An Anthropic error body with `message`, as a 400.
demo::Fault anthropicRefusal(const QString &message) {
    return refusal(
        QJsonDocument(QJsonObject{{"type", "error"},
                                  {"error", QJsonObject{{"type", "invalid_request_error"}, {"message", message}}}})
            .toJson(QJsonDocument::Compact));
}

// Messages on a system message between the turns (probe AB3), in Anthropic's words: only Opus 4.8 and
// later take one (here claude-opus-4-8), and only last or before an assistant turn.
std::optional<demo::Fault> claudeRefusesSystemMessages(const demo::RecordedRequest &request) {
    const QJsonObject body = QJsonDocument::fromJson(request.body).object();
    const bool takes = body.value("model").toString() == QLatin1String("claude-opus-4-8");
    const QJsonArray messages = body.value("messages").toArray();
    for (qsizetype i = 0; i < messages.size(); ++i) {
        if (messages[i].toObject().value("role").toString() != QLatin1String("system"))
            continue;
        if (!takes)
            return anthropicRefusal(
                QStringLiteral("messages.%1.role: role 'system' is not supported on this model").arg(i));
        if (i + 1 < messages.size() &&
            messages[i + 1].toObject().value("role").toString() != QLatin1String("assistant"))
            return anthropicRefusal(
                QStringLiteral("messages.%1: a system message must be the last message or be followed by an "
                               "assistant message")
                    .arg(i));
    }
    return anthropicRefuses(request);
}

// Chat servers that are not OpenAI's on OpenAI's own members (probe AB3), in their words: DeepSeek's
// API refuses the `developer` role, Cerebras' `store` (the model deepseek-chat refuses both here).
std::optional<demo::Fault> strictChatServerRefuses(const demo::RecordedRequest &request) {
    const QJsonObject body = QJsonDocument::fromJson(request.body).object();
    if (body.value("model").toString() != QLatin1String("deepseek-chat"))
        return openAIRefuses(request);
    if (body.contains("store"))
        return refusal(QJsonDocument(QJsonObject{{"message", "body.store: property 'body.store' is unsupported"},
                                                 {"type", "invalid_request_error"},
                                                 {"param", "validation_error"},
                                                 {"code", "wrong_api_format"}})
                           .toJson(QJsonDocument::Compact));
    const QJsonArray messages = body.value("messages").toArray();
    for (qsizetype i = 0; i < messages.size(); ++i)
        if (const QString role = messages[i].toObject().value("role").toString();
            !QStringList{"system", "user", "assistant", "tool"}.contains(role))
            return refusal(
                QJsonDocument(QJsonObject{{"error", QJsonObject{{"message", QStringLiteral("Failed to deserialize the "
                                                                                           "JSON body into the target "
                                                                                           "type: messages[%1].role: "
                                                                                           "unknown variant `%2`")
                                                                                .arg(i)
                                                                                .arg(role)},
                                                                {"type", "invalid_request_error"}}}})
                    .toJson(QJsonDocument::Compact));
    return std::nullopt;
}

// Mistral's API (probe AC3) in its words: its validator refuses a member its chat request does not
// name with a 422 (extra_forbidden), an id other than nine characters of [a-zA-Z0-9], and a user turn
// right after a tool turn.
std::optional<demo::Fault> mistralRefuses(const demo::RecordedRequest &request) {
    const QJsonObject body = QJsonDocument::fromJson(request.body).object();
    static const QStringList schema{"model",
                                    "temperature",
                                    "top_p",
                                    "max_tokens",
                                    "stream",
                                    "stop",
                                    "random_seed",
                                    "metadata",
                                    "messages",
                                    "response_format",
                                    "tools",
                                    "tool_choice",
                                    "presence_penalty",
                                    "frequency_penalty",
                                    "n",
                                    "prediction",
                                    "parallel_tool_calls",
                                    "prompt_mode",
                                    "safe_prompt",
                                    "reasoning_effort"};
    for (auto it = body.begin(); it != body.end(); ++it)
        if (!schema.contains(it.key())) {
            demo::Fault f = refusal(
                QJsonDocument(
                    QJsonObject{
                        {"object", "error"},
                        {"message", QJsonObject{{"detail", QJsonArray{QJsonObject{{"type", "extra_forbidden"},
                                                                                  {"loc", QJsonArray{"body", it.key()}},
                                                                                  {"msg", "Extra inputs are not "
                                                                                          "permitted"}}}}}},
                        {"type", "invalid_request_error"}})
                    .toJson(QJsonDocument::Compact));
            f.status = 422;
            return f;
        }
    const auto mistral400 = [](const QString &message, const char *type) {
        return refusal(QJsonDocument(QJsonObject{{"object", "error"}, {"message", message}, {"type", type}})
                           .toJson(QJsonDocument::Compact));
    };
    const QRegularExpression nineChars(QStringLiteral("^[a-zA-Z0-9]{9}$"));
    QString before;
    for (const QJsonValue &v : body.value("messages").toArray()) {
        const QJsonObject m = v.toObject();
        for (const QJsonValue &call : m.value("tool_calls").toArray())
            if (const QString id = call.toObject().value("id").toString(); !nineChars.match(id).hasMatch())
                return mistral400(
                    QStringLiteral("Tool call id was %1 but must be a-z, A-Z, 0-9, with a length of 9.").arg(id),
                    "invalid_request_error");
        const QString role = m.value("role").toString();
        if (before == QLatin1String("tool") && role == QLatin1String("user"))
            return mistral400(QStringLiteral("Unexpected role 'user' after role 'tool'"),
                              "invalid_request_message_order");
        before = role;
    }
    return std::nullopt;
}

// An Anthropic client's question with `n` tools (an MCP-heavy Claude Code).
QJsonObject anthropicWithTools(const QString &model, int n) {
    QJsonArray tools;
    for (int i = 0; i < n; ++i)
        tools.append(QJsonObject{{"name", QStringLiteral("mcp__srv__tool_%1").arg(i)},
                                 {"description", "An MCP tool."},
                                 {"input_schema", QJsonObject{{"type", "object"}}}});
    return QJsonObject{{"model", model},
                       {"max_tokens", 256},
                       {"tools", tools},
                       {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "list the files"}}}}};
}

// An agent's last call: one tool round, then "sum it up", with its tools dropped.
QJsonObject summaryWithoutTools(Inbound f, const QString &model) {
    if (f == Inbound::Responses)
        return QJsonObject{
            {"model", model},
            {"input",
             QJsonArray{QJsonObject{{"role", "user"}, {"content", "weather in Paris?"}},
                        QJsonObject{{"type", "function_call"},
                                    {"call_id", "call_1"},
                                    {"name", "get_weather"},
                                    {"arguments", "{\"city\":\"Paris\"}"}},
                        QJsonObject{{"type", "function_call_output"}, {"call_id", "call_1"}, {"output", "sunny"}},
                        QJsonObject{{"role", "user"}, {"content", "Sum it up in one line."}}}}};
    return QJsonObject{
        {"model", model},
        {"messages",
         QJsonArray{QJsonObject{{"role", "user"}, {"content", "weather in Paris?"}},
                    QJsonObject{{"role", "assistant"},
                                {"content", QJsonValue::Null},
                                {"tool_calls", QJsonArray{QJsonObject{
                                                   {"id", "call_1"},
                                                   {"type", "function"},
                                                   {"function", QJsonObject{{"name", "get_weather"},
                                                                            {"arguments", "{\"city\":\"Paris\"}"}}}}}}},
                    QJsonObject{{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "sunny"}},
                    QJsonObject{{"role", "user"}, {"content", "Sum it up in one line."}}}}};
}

// A Chat client's tools as the OpenAI Agents SDK writes them: strict, optional fields nullable.
QJsonObject chatWithStrictTools(const QString &model, int count, int nullable) {
    QJsonArray tools;
    for (int i = 0; i < count; ++i) {
        QJsonObject properties{{"q", QJsonObject{{"type", "string"}}}};
        for (int k = 0; k < nullable; ++k)
            properties.insert(QStringLiteral("opt%1").arg(k), QJsonObject{{"type", QJsonArray{"string", "null"}}});
        tools.append(QJsonObject{
            {"type", "function"},
            {"function",
             QJsonObject{{"name", QStringLiteral("tool_%1").arg(i)},
                         {"strict", true},
                         {"parameters", QJsonObject{{"type", "object"},
                                                    {"properties", properties},
                                                    {"required", QJsonArray::fromStringList(properties.keys())},
                                                    {"additionalProperties", false}}}}}});
    }
    return QJsonObject{
        {"model", model}, {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "go"}}}}, {"tools", tools}};
}

// An Anthropic client's strict schema with an optional property (zodOutputFormat makes them), as
// structured output or as a strict tool.
QJsonObject anthropicOptionalField(const QString &model, bool asTool) {
    const QJsonObject schema{{"type", "object"},
                             {"properties", QJsonObject{{"city", QJsonObject{{"type", "string"}}},
                                                        {"note", QJsonObject{{"type", "string"}}}}},
                             {"required", QJsonArray{"city"}},
                             {"additionalProperties", false}};
    QJsonObject body{{"model", model},
                     {"max_tokens", 512},
                     {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "Paris weather as JSON"}}}}};
    if (asTool)
        body.insert("tools",
                    QJsonArray{QJsonObject{{"name", "get_weather"}, {"input_schema", schema}, {"strict", true}}});
    else
        body.insert("output_config", QJsonObject{{"format", QJsonObject{{"type", "json_schema"}, {"schema", schema}}}});
    return body;
}

// A Pydantic-style strict answer of 17 Optional fields: 17 union-typed parameters.
QJsonObject chatWithNullableAnswer(const QString &model) {
    QJsonObject fields;
    for (int k = 0; k < 17; ++k)
        fields.insert(QStringLiteral("f%1").arg(k), QJsonObject{{"type", QJsonArray{"string", "null"}}});
    return QJsonObject{
        {"model", model},
        {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "go"}}}},
        {"response_format",
         QJsonObject{
             {"type", "json_schema"},
             {"json_schema", QJsonObject{{"name", "out"},
                                         {"strict", true},
                                         {"schema", QJsonObject{{"type", "object"},
                                                                {"properties", fields},
                                                                {"required", QJsonArray::fromStringList(fields.keys())},
                                                                {"additionalProperties", false}}}}}}}};
}

} // namespace

Q_DECLARE_METATYPE(Inbound)

class TestProtocolTranslation : public QObject {
    Q_OBJECT

private:
    GatewayFixture *m_gw = nullptr;

    demo::FakeUpstream &fakeFor(const QString &model) {
        return model.startsWith("pa/")   ? m_gw->anthropicA
               : model.startsWith("pb/") ? m_gw->openaiB
               : model.startsWith("pd/") ? m_gw->responsesD
                                         : m_gw->googleE;
    }
    static void addPairs(bool withStream) {
        QTest::addColumn<Inbound>("inbound");
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("api");
        QTest::addColumn<bool>("stream");
        for (const auto &[inbound, name] : kInbound)
            for (const auto &[model, api] : kTargets)
                for (bool stream : {false, true}) {
                    if (stream && !withStream)
                        continue;
                    QTest::addRow("%s->%s%s", name, api, stream ? " stream" : "")
                        << inbound << QString::fromLatin1(model) << QString::fromLatin1(api) << stream;
                }
    }

private Q_SLOTS:
    void init() {
        m_gw = new GatewayFixture;
        m_gw->start();
    }
    void cleanup() {
        delete m_gw;
        m_gw = nullptr;
    }

    // Item 6, every inbound format with structured output x every upstream API: the
    // schema reaches the upstream in its own field (same API: as sent).
    void structuredOutputEveryPair_data() { addPairs(true); }
    void structuredOutputEveryPair() {
        QFETCH(Inbound, inbound);
        QFETCH(QString, model);
        QFETCH(QString, api);
        QFETCH(bool, stream);
        const HttpResult r = m_gw->post(pathFor(inbound), structuredRequest(inbound, model, stream));
        QVERIFY2(r.status == 200, r.body.constData());
        QCOMPARE(schemaSent(api, sentTo(fakeFor(model))), weatherSchema());
    }

    // A client's text cut inside an emoji (a lone "\\ud83d" escape, what a JS client writes when it
    // truncates a string mid-pair) reaches every other API as well-formed UTF-8, the half a U+FFFD:
    // Anthropic refuses a body holding the escape ("no low surrogate in string"), and that 400 ended
    // the chain with a healthy candidate untried (probe R1 5).
    void aTextCutInsideAnEmojiReachesEveryOtherApiWellFormed_data() { addPairs(false); }
    void aTextCutInsideAnEmojiReachesEveryOtherApiWellFormed() {
        QFETCH(Inbound, inbound);
        QFETCH(QString, model);
        QFETCH(QString, api);
        const QByteArray m = model.toUtf8();
        const QByteArray body =
            inbound == Inbound::Chat
                ? "{\"model\":\"" + m + "\",\"messages\":[{\"role\":\"user\",\"content\":\"cut: \\ud83d!\"}]}"
            : inbound == Inbound::Anthropic
                ? "{\"model\":\"" + m +
                      "\",\"max_tokens\":64,\"messages\":[{\"role\":\"user\",\"content\":\"cut: \\ud83d!\"}]}"
                : "{\"model\":\"" + m + "\",\"input\":\"cut: \\ud83d!\"}";
        const HttpResult r = m_gw->postRaw(pathFor(inbound), body);
        QVERIFY2(r.status == 200, r.body.constData());
        const QByteArray sent = fakeFor(model).requests().last().body;
        const bool sameApi = (inbound == Inbound::Chat && api == QLatin1String("openai-completions")) ||
                             (inbound == Inbound::Anthropic && api == QLatin1String("anthropic-messages")) ||
                             (inbound == Inbound::Responses && api == QLatin1String("openai-responses"));
        if (sameApi) { // the client's own bytes, as its API would get them from it
            QVERIFY2(sent.contains("cut: \\ud83d!"), sent.constData());
            return;
        }
        QVERIFY2(!sent.toLower().contains("\\ud83d"), sent.constData());
        QVERIFY2(sent.contains("cut: \xef\xbf\xbd!"), sent.constData());
        QStringDecoder utf8(QStringDecoder::Utf8);
        const QString text = utf8.decode(sent);
        QVERIFY(!utf8.hasError() && !text.isEmpty());
    }

    // A PDF a user attached goes to every API in that API's own document shape, with its name
    // where the API has a field for one: a failover never drops it, and never refuses it.
    void pdfEveryPair_data() { addPairs(false); }
    void pdfEveryPair() {
        QFETCH(Inbound, inbound);
        QFETCH(QString, model);
        QFETCH(QString, api);
        const HttpResult r = m_gw->post(pathFor(inbound), pdfRequest(inbound, model));
        QVERIFY2(r.status == 200, r.body.constData());
        const QString name =
            api == QLatin1String("google-generative-ai") ? QStringLiteral("-") : QStringLiteral("report.pdf");
        QCOMPARE(pdfSent(api, sentTo(fakeFor(model))),
                 QStringLiteral("application/pdf %1 %2").arg(name, QLatin1String(kPdfBase64)));
    }

    // The Responses API has no stop sequences: the gateway ends the answer at the client's own, as
    // the API the client spoke would have, streamed and not; the other APIs get the field.
    void stopSequencesOnEveryApi_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<bool>("stream");
        for (const char *model : {"pd/resp-d", "pb/gpt-b", "pa/claude-a", "pe/gemini-e"})
            for (bool stream : {false, true})
                QTest::addRow("%s%s", model, stream ? " stream" : "") << QString::fromLatin1(model) << stream;
    }
    void stopSequencesOnEveryApi() {
        QFETCH(QString, model);
        QFETCH(bool, stream);
        const QJsonObject body{{"model", model},
                               {"stream", stream},
                               {"stop", QJsonArray{"STOP"}},
                               {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "alpha STOP beta"}}}}};
        const HttpResult r = m_gw->post(QStringLiteral("/v1/chat/completions"), body);
        QVERIFY2(r.status == 200, r.body.constData());
        QString text;
        QString finish;
        if (stream) {
            for (const QByteArray &line : r.body.split('\n')) {
                if (!line.startsWith("data: {"))
                    continue;
                const QJsonObject choice =
                    QJsonDocument::fromJson(line.mid(6)).object().value("choices").toArray().at(0).toObject();
                text += choice.value("delta").toObject().value("content").toString();
                if (choice.value("finish_reason").isString())
                    finish = choice.value("finish_reason").toString();
            }
            QVERIFY2(r.body.trimmed().endsWith("data: [DONE]"), r.body.constData());
        } else {
            const QJsonObject choice =
                QJsonDocument::fromJson(r.body).object().value("choices").toArray().at(0).toObject();
            text = choice.value("message").toObject().value("content").toString();
            finish = choice.value("finish_reason").toString();
        }
        QCOMPARE(finish, QStringLiteral("stop"));
        if (model == QLatin1String("pd/resp-d")) {
            // The demo upstream echoes the words, STOP included: the gateway cut them there.
            QVERIFY2(text.endsWith(QStringLiteral("You said: alpha ")), qPrintable(text));
            QVERIFY(!sentTo(m_gw->responsesD).contains("stop"));
            return;
        }
        // The API stops itself (the demo upstream does not): the field reached it.
        const QJsonObject sent = sentTo(fakeFor(model));
        const QJsonValue stops = model.startsWith("pb/") ? sent.value("stop")
                                 : model.startsWith("pa/")
                                     ? sent.value("stop_sequences")
                                     : sent.value("generationConfig").toObject().value("stopSequences");
        QCOMPARE(stops.toArray(), QJsonArray{"STOP"});
    }

    // Cut by the gateway (the Responses API has no stop sequences), a Messages client is told what
    // Anthropic would have said: stop_reason "stop_sequence", and which of its sequences it was.
    void messagesClientIsToldWhichStopSequence_data() {
        QTest::addColumn<bool>("stream");
        QTest::newRow("json") << false;
        QTest::newRow("stream") << true;
    }
    void messagesClientIsToldWhichStopSequence() {
        QFETCH(bool, stream);
        const QJsonObject body{{"model", "pd/resp-d"},
                               {"max_tokens", 64},
                               {"stream", stream},
                               {"stop_sequences", QJsonArray{"NEVER", "STOP"}},
                               {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "alpha STOP beta"}}}}};
        const HttpResult r = m_gw->post(QStringLiteral("/v1/messages"), body);
        QVERIFY2(r.status == 200, r.body.constData());
        QJsonObject stop; // the object that carries stop_reason and stop_sequence
        QString text;
        if (stream) {
            for (const sw::upstream::SseEvent &e : sw::test::splitSse(r.body)) {
                const QJsonObject data = QJsonDocument::fromJson(e.data).object();
                if (e.event == "content_block_delta")
                    text += data.value("delta").toObject().value("text").toString();
                if (e.event == "message_delta")
                    stop = data.value("delta").toObject();
            }
        } else {
            stop = r.json();
            for (const QJsonValue &b : stop.value("content").toArray())
                text += b.toObject().value("text").toString();
        }
        QVERIFY2(text.endsWith(QStringLiteral("You said: alpha ")), qPrintable(text));
        QCOMPARE(stop.value("stop_reason").toString(), QStringLiteral("stop_sequence"));
        QCOMPARE(stop.value("stop_sequence").toString(), QStringLiteral("STOP"));
    }

    // OpenAI takes at most 4 stop sequences, Gemini 5: the first go in the body (more would be a
    // 400 no failover gets past), the gateway cuts at the others itself, so none is dropped.
    void moreStopSequencesThanTheApiTakes_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("sent");
        QTest::newRow("openai-completions") << QStringLiteral("pb/gpt-b") << 4;
        QTest::newRow("google") << QStringLiteral("pe/gemini-e") << 5;
    }
    void moreStopSequencesThanTheApiTakes() {
        QFETCH(QString, model);
        QFETCH(int, sent);
        const QJsonArray stops{"s1", "s2", "s3", "s4", "s5", "STOP"};
        const QJsonObject body{{"model", model},
                               {"max_tokens", 64},
                               {"stop_sequences", stops},
                               {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "alpha STOP beta"}}}}};
        const HttpResult r = m_gw->post(QStringLiteral("/v1/messages"), body);
        QVERIFY2(r.status == 200, r.body.constData());
        const QJsonObject upstream = sentTo(fakeFor(model));
        const QJsonArray carried = model.startsWith("pb/")
                                       ? upstream.value("stop").toArray()
                                       : upstream.value("generationConfig").toObject().value("stopSequences").toArray();
        QJsonArray first;
        for (int i = 0; i < sent; ++i)
            first.append(stops.at(i));
        QCOMPARE(carried, first);
        QString text;
        for (const QJsonValue &b : r.json().value("content").toArray())
            text += b.toObject().value("text").toString();
        // The demo upstream echoes the words, STOP (the sixth) included: the gateway cut them there.
        QVERIFY2(text.endsWith(QStringLiteral("You said: alpha ")), qPrintable(text));
        QCOMPARE(r.json().value("stop_reason").toString(), QStringLiteral("stop_sequence"));
        QCOMPARE(r.json().value("stop_sequence").toString(), QStringLiteral("STOP"));
    }

    // Messages refuses a stop sequence of whitespace alone with a 400 ("each stop sequence must
    // contain non-whitespace"), which no failover gets past: a Chat client's "\n\n" stays with the
    // gateway, which ends the answer there itself; the others go in the body.
    void whitespaceStopSequenceIsCutByTheGateway_data() {
        QTest::addColumn<bool>("stream");
        QTest::newRow("json") << false;
        QTest::newRow("stream") << true;
    }
    void whitespaceStopSequenceIsCutByTheGateway() {
        QFETCH(bool, stream);
        const QJsonObject body{{"model", "pa/claude-a"},
                               {"stream", stream},
                               {"stop", QJsonArray{"\n\n", "NEVER"}},
                               {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "alpha\n\nbeta"}}}}};
        const HttpResult r = m_gw->post(QStringLiteral("/v1/chat/completions"), body);
        QVERIFY2(r.status == 200, r.body.constData());
        QCOMPARE(sentTo(m_gw->anthropicA).value("stop_sequences").toArray(), QJsonArray{"NEVER"});
        QString text;
        QString finish;
        if (stream) {
            for (const QByteArray &line : r.body.split('\n')) {
                if (!line.startsWith("data: {"))
                    continue;
                const QJsonObject choice =
                    QJsonDocument::fromJson(line.mid(6)).object().value("choices").toArray().at(0).toObject();
                text += choice.value("delta").toObject().value("content").toString();
                if (choice.value("finish_reason").isString())
                    finish = choice.value("finish_reason").toString();
            }
        } else {
            const QJsonObject choice =
                QJsonDocument::fromJson(r.body).object().value("choices").toArray().at(0).toObject();
            text = choice.value("message").toObject().value("content").toString();
            finish = choice.value("finish_reason").toString();
        }
        // The demo upstream echoes the words, the blank line included: the gateway cut them there.
        QVERIFY2(text.endsWith(QStringLiteral("You said: alpha")), qPrintable(text));
        QVERIFY2(!text.contains(QStringLiteral("beta")), qPrintable(text));
        QCOMPARE(finish, QStringLiteral("stop"));
    }

    // A response another API answered has the gateway's own id ("req_…"), stored nowhere: a Responses
    // client that continues from it with previous_response_id gets a 400 from the gateway that says
    // so and what to do, in the Responses error shape, and the OpenAI upstream is not asked (it
    // would answer "Previous response with id 'req_…' not found").
    void previousResponseIdTheGatewayMadeIsAClear400() {
        const HttpResult first = m_gw->post(QStringLiteral("/v1/responses"),
                                            QJsonObject{{"model", "pa/claude-a"}, {"input", "remember 42"}});
        QVERIFY2(first.status == 200, first.body.constData());
        const QString id = first.json().value("id").toString();
        QVERIFY2(id.startsWith(QStringLiteral("req_")), qPrintable(id));
        for (bool stream : {false, true}) {
            const HttpResult r = m_gw->post(QStringLiteral("/v1/responses"), QJsonObject{{"model", "pd/resp-d"},
                                                                                         {"stream", stream},
                                                                                         {"previous_response_id", id},
                                                                                         {"input", "which number?"}});
            QCOMPARE(r.status, 400);
            const QJsonObject error = r.json().value("error").toObject();
            QCOMPARE(error.value("type").toString(), QStringLiteral("invalid_request_error"));
            QCOMPARE(error.value("param").toString(), QStringLiteral("previous_response_id"));
            QCOMPARE(error.value("code").toString(), QStringLiteral("previous_response_not_found"));
            const QString message = error.value("message").toString();
            QVERIFY2(message.contains(id) && message.contains(QStringLiteral("another provider")) &&
                         message.contains(QStringLiteral("full conversation")),
                     qPrintable(message));
        }
        QVERIFY(m_gw->responsesD.requests().isEmpty());
        // OpenAI's own ids still go to OpenAI.
        const HttpResult own = m_gw->post(
            QStringLiteral("/v1/responses"),
            QJsonObject{{"model", "pd/resp-d"}, {"previous_response_id", "resp_0123abcd"}, {"input", "go on"}});
        QVERIFY2(own.status == 200, own.body.constData());
        QCOMPARE(sentTo(m_gw->responsesD).value("previous_response_id").toString(), QStringLiteral("resp_0123abcd"));
    }

    // Item 10: at most one tool call per turn, every pair; Gemini has no switch for it.
    void parallelToolCallsOffEveryPair_data() { addPairs(false); }
    void parallelToolCallsOffEveryPair() {
        QFETCH(Inbound, inbound);
        QFETCH(QString, model);
        QFETCH(QString, api);
        const qsizetype before = fakeFor(model).requests().size();
        const HttpResult r = m_gw->post(pathFor(inbound), oneCallRequest(inbound, model));
        if (api == QLatin1String("google-generative-ai")) {
            QCOMPARE(r.status, 400);
            QVERIFY2(r.body.contains("parallel_tool_calls"), r.body.constData());
            QCOMPARE(fakeFor(model).requests().size(), before);
            return;
        }
        QVERIFY2(r.status == 200, r.body.constData());
        QVERIFY2(oneCallSent(api, sentTo(fakeFor(model))), fakeFor(model).requests().last().body.constData());
    }

    // Item 9: a JSON answer from the client's own API is that API's body, not one rebuilt
    // from canonical events.
    void sameApiJsonKeepsEveryField() {
        m_gw->anthropicA.setRawReply(readTestData(QStringLiteral("anthropic_upstream_web_search.sse")));
        const HttpResult search =
            m_gw->post(QStringLiteral("/v1/messages"), GatewayFixture::anthropicBody("pa/claude-a", "weather?", false));
        QCOMPARE(search.status, 200);
        const QJsonObject m = search.json();
        QCOMPARE(m.value("id").toString(), QStringLiteral("msg_01G8dMkWH4tCzrPFgzW6fTqU"));
        const QJsonArray content = m.value("content").toArray();
        QStringList types;
        for (const QJsonValue &b : content)
            types << b.toObject().value("type").toString();
        QCOMPARE(types, (QStringList{"server_tool_use", "web_search_tool_result", "text", "text"}));
        QCOMPARE(content[0].toObject().value("input").toObject().value("query").toString(),
                 QStringLiteral("weather Paris today"));
        QCOMPARE(content[1].toObject().value("content").toArray()[0].toObject().value("url").toString(),
                 QStringLiteral("https://weather.example.org/paris"));
        const QJsonObject citation = content[3].toObject().value("citations").toArray()[0].toObject();
        QCOMPARE(citation.value("type").toString(), QStringLiteral("web_search_result_location"));
        QCOMPARE(citation.value("cited_text").toString(), QStringLiteral("Paris: 12 °C, light rain in the afternoon."));
        QCOMPARE(content[3].toObject().value("text").toString(),
                 QStringLiteral("12 °C with light rain in the afternoon."));
        QCOMPARE(m.value("usage").toObject().value("server_tool_use").toObject().value("web_search_requests").toInt(),
                 1);
        QCOMPARE(m.value("usage").toObject().value("output_tokens").toInt(), 112);
        QCOMPARE(m.value("stop_reason").toString(), QStringLiteral("end_turn"));
        QCOMPARE(m.value("model").toString(), QStringLiteral("pa/claude-a")); // the name the client asked for

        m_gw->anthropicA.setRawReply(readTestData(QStringLiteral("anthropic_upstream_stop_sequence.sse")));
        const QJsonObject stopped =
            m_gw->post(QStringLiteral("/v1/messages"), GatewayFixture::anthropicBody("pa/claude-a", "count", false))
                .json();
        QCOMPARE(stopped.value("stop_reason").toString(), QStringLiteral("stop_sequence"));
        QCOMPARE(stopped.value("stop_sequence").toString(), QStringLiteral("###"));

        m_gw->openaiB.setRawReply(readTestData(QStringLiteral("openai_upstream_logprobs.sse")));
        QJsonObject chat = GatewayFixture::openaiBody("pb/gpt-b", "weather?", false);
        chat.insert("logprobs", true);
        chat.insert("top_logprobs", 1);
        const QJsonObject c = m_gw->post(QStringLiteral("/v1/chat/completions"), chat).json();
        const QJsonObject choice = c.value("choices").toArray()[0].toObject();
        QCOMPARE(choice.value("message").toObject().value("content").toString(), QStringLiteral("Paris is 12 °C."));
        QStringList tokens;
        for (const QJsonValue &t : choice.value("logprobs").toObject().value("content").toArray())
            tokens << t.toObject().value("token").toString();
        QCOMPARE(tokens, (QStringList{"Paris", " is", " 12 °C."}));
        const QJsonObject annotation = choice.value("message").toObject().value("annotations").toArray()[0].toObject();
        QCOMPARE(annotation.value("type").toString(), QStringLiteral("url_citation"));
        QCOMPARE(annotation.value("url_citation").toObject().value("url").toString(),
                 QStringLiteral("https://weather.example.org/paris"));
        QCOMPARE(c.value("system_fingerprint").toString(), QStringLiteral("fp_f33640a400"));
        QVERIFY(c.value("usage").toObject().value("completion_tokens_details").toObject().contains("reasoning_tokens"));
        QCOMPARE(c.value("id").toString(), QStringLiteral("chatcmpl-CY2mX4vHq9LrT0aPz1bK7dN3wE5sF"));

        m_gw->responsesD.setRawReply(readTestData(QStringLiteral("responses_upstream_full.sse")));
        const QJsonObject r =
            m_gw->post(QStringLiteral("/v1/responses"),
                       QJsonObject{{"model", "pd/resp-d"}, {"input", "weather in Paris?"}, {"stream", false}})
                .json();
        QCOMPARE(
            r.value("usage").toObject().value("output_tokens_details").toObject().value("reasoning_tokens").toInt(),
            40);
        QCOMPARE(r.value("output").toArray().size(), 3); // reasoning, message, function_call as streamed
    }

    // OpenRouter streams its reasoning as delta.reasoning and a signed delta.reasoning_details, in
    // pieces, the signature last, and asks for the details back on a tool loop (Claude's and Gemini
    // 3's signatures ride there). A streaming client got them in the relayed frames; a JSON answer
    // had only reasoning_content, and the next turn went back without the signature (probe E2 1).
    void anOpenRouterJsonAnswerKeepsItsSignedReasoning() {
        const auto chunk = [](const char *delta) {
            return QByteArray(
                       R"(data: {"id":"gen-1","object":"chat.completion.chunk","model":"gpt-b","choices":[{"index":0,"delta":)") +
                   delta + "}]}\n\n";
        };
        m_gw->openaiB.setRawReply(
            chunk(
                R"({"role":"assistant","reasoning":"Read ","reasoning_details":[{"type":"reasoning.text","text":"Read ","format":"anthropic-claude-v1","index":0}]})") +
            chunk(R"({"reasoning":"it.","reasoning_details":[{"type":"reasoning.text","text":"it.","index":0}]})") +
            chunk(R"({"reasoning_details":[{"type":"reasoning.text","signature":"SIG-or-7","index":0}]})") +
            chunk(R"({"reasoning_details":[{"type":"reasoning.encrypted","data":"ENC","index":1}]})") +
            chunk(R"({"content":"Done."},"finish_reason":"stop")") + "data: [DONE]\n\n");
        const QJsonObject c =
            m_gw->post(QStringLiteral("/v1/chat/completions"), GatewayFixture::openaiBody("pb/gpt-b", "think", false))
                .json();
        const QJsonObject message = c.value("choices").toArray()[0].toObject().value("message").toObject();
        QCOMPARE(message.value("content").toString(), QStringLiteral("Done."));
        const QJsonArray details = message.value("reasoning_details").toArray();
        QCOMPARE(details.size(), 2);
        QCOMPARE(details[0].toObject(), (QJsonObject{{"type", "reasoning.text"},
                                                     {"text", "Read it."},
                                                     {"signature", "SIG-or-7"},
                                                     {"format", "anthropic-claude-v1"},
                                                     {"index", 0}}));
        QCOMPARE(details[1].toObject().value("data").toString(), QStringLiteral("ENC"));
        // Another API's client has no such field: only its own reasoning form.
        const QJsonObject m =
            m_gw->post(QStringLiteral("/v1/messages"), GatewayFixture::anthropicBody("pb/gpt-b", "think", false))
                .json();
        QVERIFY(!QJsonDocument(m).toJson().contains("SIG-or-7"));
    }

    // OpenAI's refusal (structured outputs) has its own field in both OpenAI formats: Chat's
    // message.refusal / delta.refusal with finish_reason "stop", a Responses "refusal" part in a
    // completed response. It reached OpenAI clients as answer text with content_filter /
    // incomplete, so the SDKs' parse helpers threw (ContentFilterFinishReasonError, or a JSON
    // SyntaxError on the refusal's words) where talking to OpenAI returns the refusal (probe Z3 3).
    void anOpenAIRefusalReachesOpenAIClientsAsARefusal() {
        const QString words = QStringLiteral("I cannot help with that.");
        const auto data = [](const QJsonObject &o) {
            return "data: " + QJsonDocument(o).toJson(QJsonDocument::Compact) + "\n\n";
        };
        const auto chunk = [&](const QJsonObject &delta, const QJsonValue &finish) {
            return data(QJsonObject{
                {"id", "chatcmpl-r1"},
                {"object", "chat.completion.chunk"},
                {"created", 1},
                {"model", "gpt-b"},
                {"choices", QJsonArray{QJsonObject{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}});
        };
        const QByteArray chatRefusal =
            chunk(QJsonObject{{"role", "assistant"}, {"content", QJsonValue()}}, QJsonValue()) +
            chunk(QJsonObject{{"refusal", words}}, QJsonValue()) + chunk(QJsonObject{}, QStringLiteral("stop")) +
            "data: [DONE]\n\n";
        const auto event = [&](const QString &type, QJsonObject o) {
            o.insert("type", type);
            return "event: " + type.toUtf8() + "\n" + data(o);
        };
        const QJsonObject refusalPart{{"type", "refusal"}, {"refusal", words}};
        const QJsonObject message{{"id", "msg_r1"},
                                  {"type", "message"},
                                  {"status", "completed"},
                                  {"role", "assistant"},
                                  {"content", QJsonArray{refusalPart}}};
        const QByteArray responsesRefusal =
            event("response.created", {{"response", QJsonObject{{"id", "resp_r1"}, {"status", "in_progress"}}}}) +
            event("response.output_item.added",
                  {{"output_index", 0},
                   {"item",
                    QJsonObject{
                        {"id", "msg_r1"}, {"type", "message"}, {"role", "assistant"}, {"content", QJsonArray()}}}}) +
            event("response.content_part.added", {{"output_index", 0},
                                                  {"item_id", "msg_r1"},
                                                  {"content_index", 0},
                                                  {"part", QJsonObject{{"type", "refusal"}, {"refusal", ""}}}}) +
            event("response.refusal.delta",
                  {{"output_index", 0}, {"item_id", "msg_r1"}, {"content_index", 0}, {"delta", words}}) +
            event("response.refusal.done",
                  {{"output_index", 0}, {"item_id", "msg_r1"}, {"content_index", 0}, {"refusal", words}}) +
            event("response.content_part.done",
                  {{"output_index", 0}, {"item_id", "msg_r1"}, {"content_index", 0}, {"part", refusalPart}}) +
            event("response.output_item.done", {{"output_index", 0}, {"item", message}}) +
            event("response.completed",
                  {{"response", QJsonObject{{"id", "resp_r1"},
                                            {"status", "completed"},
                                            {"output", QJsonArray{message}},
                                            {"usage", QJsonObject{{"input_tokens", 5}, {"output_tokens", 6}}}}}});

        // Chat upstream, Chat client, one JSON answer: the refusal field and OpenAI's "stop".
        m_gw->openaiB.setRawReply(chatRefusal);
        const QJsonObject choice =
            m_gw->post(QStringLiteral("/v1/chat/completions"), GatewayFixture::openaiBody("pb/gpt-b", "as JSON", false))
                .json()
                .value("choices")
                .toArray()[0]
                .toObject();
        QCOMPARE(choice.value("message").toObject().value("refusal").toString(), words);
        QVERIFY(choice.value("message").toObject().value("content").isNull());
        QCOMPARE(choice.value("finish_reason").toString(), QStringLiteral("stop"));

        // Chat upstream, Responses client: a refusal part in a completed response.
        const QJsonObject r = m_gw->post(QStringLiteral("/v1/responses"),
                                         QJsonObject{{"model", "pb/gpt-b"}, {"input", "as JSON"}, {"stream", false}})
                                  .json();
        QCOMPARE(r.value("status").toString(), QStringLiteral("completed"));
        const QJsonObject part = r.value("output").toArray()[0].toObject().value("content").toArray()[0].toObject();
        QCOMPARE(part.value("type").toString(), QStringLiteral("refusal"));
        QCOMPARE(part.value("refusal").toString(), words);

        // Chat upstream, Responses client, streamed: the refusal events, then response.completed.
        const QByteArray streamed =
            m_gw->post(QStringLiteral("/v1/responses"),
                       QJsonObject{{"model", "pb/gpt-b"}, {"input", "as JSON"}, {"stream", true}})
                .body;
        QVERIFY2(streamed.contains("event: response.refusal.delta") &&
                     streamed.contains("event: response.refusal.done") &&
                     streamed.contains("event: response.completed") && !streamed.contains("output_text.delta"),
                 streamed.constData());

        // Responses upstream, Chat client, streamed: delta.refusal chunks and finish_reason "stop".
        m_gw->responsesD.setRawReply(responsesRefusal);
        const QByteArray chatStream =
            m_gw->post(QStringLiteral("/v1/chat/completions"), GatewayFixture::openaiBody("pd/resp-d", "as JSON", true))
                .body;
        QVERIFY2(chatStream.contains("\"refusal\":\"I cannot help with that.\"") &&
                     chatStream.contains("\"finish_reason\":\"stop\"") && !chatStream.contains("content_filter"),
                 chatStream.constData());
    }

    // Item 7, same API: a Codex turn whose only content is an apply_patch custom_tool_call
    // commits on the patch's first delta, as text would, and is never held whole (a long
    // patch would outgrow limits.maxHoldBytes and fail over as "nothing meaningful yet").
    void codexCustomCallStreamsThroughAtOnce() {
        delete m_gw;
        m_gw = new GatewayFixture;
        m_gw->config.limits.maxHoldBytes = 2000; // the frames before the first delta fit; the whole patch does not
        m_gw->start();
        // The recorded stream without its reasoning item (output_index 0): only the call is content.
        const QByteArray sse = readTestData(QStringLiteral("responses_upstream_custom_tool.sse"));
        QByteArray onlyTheCall;
        for (qsizetype at = 0; at < sse.size();) {
            qsizetype end = sse.indexOf("\n\n", at);
            end = end < 0 ? sse.size() : end + 2;
            const QByteArray frame = sse.mid(at, end - at);
            if (!frame.trimmed().isEmpty() && !frame.contains("\"output_index\":0"))
                onlyTheCall += frame;
            at = end;
        }
        m_gw->responsesD.setRawReply(onlyTheCall);
        QJsonObject body = codexBody("pd/resp-d");
        body.insert("stream", true);
        const HttpResult r = m_gw->post(QStringLiteral("/v1/responses"), body);
        QCOMPARE(r.status, 200);
        QVERIFY2(r.body.contains("response.custom_tool_call_input.done"), r.body.constData());
        QVERIFY2(r.body.contains("response.completed"), r.body.constData());
        QVERIFY2(!r.body.contains("response.failed"), r.body.constData());
        QCOMPARE(m_gw->responsesD.requests().size(), 1);
    }

    // Item 7: Codex's own tools and history on a Messages upstream.
    void codexToolsReachAnthropic() {
        const HttpResult r = m_gw->post(QStringLiteral("/v1/responses"), codexBody("pa/claude-a"));
        QCOMPARE(r.status, 200);
        const QJsonObject sent = sentTo(m_gw->anthropicA);
        const QJsonArray tools = sent.value("tools").toArray();
        QCOMPARE(tools.size(), 3);
        const QJsonObject patch = tools[1].toObject();
        QCOMPARE(patch.value("name").toString(), QStringLiteral("apply_patch"));
        const QJsonObject schema = patch.value("input_schema").toObject();
        QCOMPARE(schema.value("properties").toObject().value("input").toObject().value("type").toString(),
                 QStringLiteral("string"));
        QCOMPARE(schema.value("required").toArray(), QJsonArray{"input"});
        QVERIFY2(patch.value("description").toString().contains(QLatin1String(kGrammar)),
                 qPrintable(patch.value("description").toString()));
        QVERIFY(!tools[0].toObject().contains("strict")); // Codex said strict: false
        QCOMPARE(tools[2].toObject().value("type").toString(), QStringLiteral("web_search_20250305"));
        QCOMPARE(sent.value("tool_choice").toObject(),
                 QJsonObject({{"type", "auto"}, {"disable_parallel_tool_use", true}}));
        // The history: the custom call as a tool_use whose one input is the patch, and its output.
        const QJsonArray messages = sent.value("messages").toArray();
        QCOMPARE(messages.size(), 3);
        const QJsonObject call = messages[1].toObject().value("content").toArray().last().toObject();
        QCOMPARE(call.value("type").toString(), QStringLiteral("tool_use"));
        QCOMPARE(call.value("id").toString(), QStringLiteral("call_patch1"));
        QCOMPARE(call.value("input").toObject().value("input").toString(), QLatin1String(kPatch));
        const QJsonObject result = messages[2].toObject().value("content").toArray()[0].toObject();
        QCOMPARE(result.value("tool_use_id").toString(), QStringLiteral("call_patch1"));
        QCOMPARE(result.value("content").toArray()[0].toObject().value("text").toString(), QStringLiteral("Done!"));
        // The last assistant turn was answered by OpenAI: no Anthropic signature, so this
        // tool-loop turn goes with thinking off, as Messages requires.
        QCOMPARE(sent.value("thinking").toObject().value("type").toString(), QStringLiteral("disabled"));

        // Gemini: the same one-string function. Codex's web search beside it Gemini cannot take (it
        // refuses grounding with Google Search beside function declarations); alone, it is grounding.
        QJsonObject gemini = codexBody("pe/gemini-e");
        gemini.remove("parallel_tool_calls");
        const qsizetype before = m_gw->googleE.requests().size();
        const HttpResult withSearch = m_gw->post(QStringLiteral("/v1/responses"), gemini);
        QCOMPARE(withSearch.status, 400);
        QVERIFY2(withSearch.body.contains("web_search together with function tools"), withSearch.body.constData());
        QCOMPARE(m_gw->googleE.requests().size(), before);
        gemini.insert("tools", QJsonArray{shellTool(), applyPatchTool()});
        QCOMPARE(m_gw->post(QStringLiteral("/v1/responses"), gemini).status, 200);
        const QJsonArray googleTools = sentTo(m_gw->googleE).value("tools").toArray();
        QCOMPARE(googleTools.size(), 1);
        const QJsonArray declarations = googleTools[0].toObject().value("functionDeclarations").toArray();
        QCOMPARE(declarations[1].toObject().value("name").toString(), QStringLiteral("apply_patch"));
        gemini.insert("tools", QJsonArray{QJsonObject{{"type", "web_search"}}});
        QCOMPARE(m_gw->post(QStringLiteral("/v1/responses"), gemini).status, 200);
        QCOMPARE(sentTo(m_gw->googleE).value("tools").toArray(),
                 QJsonArray{QJsonObject({{"googleSearch", QJsonObject()}})});
    }

    // The rule's other half: no mapping means the candidate cannot serve, never a silent drop.
    void unmappableFieldsNameThemselves() {
        auto refused = [&](const QString &path, const QJsonObject &body, const char *field) {
            const HttpResult r = m_gw->post(path, body);
            QVERIFY2(r.status == 400 && r.body.contains(field),
                     qPrintable(QStringLiteral("%1: %2").arg(r.status).arg(QString::fromUtf8(r.body))));
        };
        const qsizetype before =
            m_gw->googleE.requests().size() + m_gw->openaiB.requests().size() + m_gw->anthropicA.requests().size();
        QJsonObject serial = codexBody("pe/gemini-e");
        serial.insert("tools", QJsonArray{shellTool(), applyPatchTool()}); // web search would be named first
        refused(QStringLiteral("/v1/responses"), serial, "parallel_tool_calls");
        QJsonObject search = codexBody("pb/gpt-b");
        search.remove("parallel_tool_calls");
        refused(QStringLiteral("/v1/responses"), search, "web_search");
        QJsonObject files = codexBody("pa/claude-a");
        files.insert("tools",
                     QJsonArray{QJsonObject{{"type", "file_search"}, {"vector_store_ids", QJsonArray{"vs_1"}}}});
        refused(QStringLiteral("/v1/responses"), files, "file_search");
        QJsonObject fileImage = GatewayFixture::anthropicBody("pb/gpt-b", "what is this?", false);
        fileImage.insert(
            "messages",
            QJsonArray{QJsonObject{
                {"role", "user"},
                {"content",
                 QJsonArray{QJsonObject{{"type", "image"},
                                        {"source",
                                         QJsonObject{{"type", "file"}, {"file_id", "file_011CNha8iCJcU1wXNR6q4V8w"}}}},
                            QJsonObject{{"type", "text"}, {"text", "what is this?"}}}}}});
        refused(QStringLiteral("/v1/messages"), fileImage, "file_011CNha8iCJcU1wXNR6q4V8w");
        QJsonObject pdf = GatewayFixture::anthropicBody("pe/gemini-e", "summarise", false);
        pdf.insert(
            "messages",
            QJsonArray{QJsonObject{
                {"role", "user"},
                {"content", QJsonArray{QJsonObject{{"type", "document"},
                                                   {"source", QJsonObject{{"type", "url"},
                                                                          {"url", "https://docs.example.org/a.pdf"}}},
                                                   {"citations", QJsonObject{{"enabled", true}}}},
                                       QJsonObject{{"type", "text"}, {"text", "summarise"}}}}}});
        refused(QStringLiteral("/v1/messages"), pdf, "document");
        QCOMPARE(m_gw->googleE.requests().size() + m_gw->openaiB.requests().size() + m_gw->anthropicA.requests().size(),
                 before);
    }

    // Item 10: the smaller fields, each across formats.
    void smallerFieldsCrossFormats() {
        const QString url = QStringLiteral("https://images.example.org/cat.png");
        QJsonObject chat{
            {"model", "pd/resp-d"},
            {"parallel_tool_calls", false},
            {"messages",
             QJsonArray{QJsonObject{
                 {"role", "user"},
                 {"content", QJsonArray{QJsonObject{{"type", "text"}, {"text", "describe"}},
                                        QJsonObject{{"type", "image_url"},
                                                    {"image_url", QJsonObject{{"url", url}, {"detail", "high"}}}}}}}}},
            {"tools",
             QJsonArray{QJsonObject{
                 {"type", "function"},
                 {"function",
                  QJsonObject{{"name", "tag"}, {"strict", true}, {"parameters", QJsonObject{{"type", "object"}}}}}}}}};
        QCOMPARE(m_gw->post(QStringLiteral("/v1/chat/completions"), chat).status, 200);
        const QJsonObject toResponses = sentTo(m_gw->responsesD);
        const QJsonObject image =
            toResponses.value("input").toArray()[0].toObject().value("content").toArray()[1].toObject();
        QCOMPARE(image.value("detail").toString(), QStringLiteral("high"));
        QCOMPARE(image.value("image_url").toString(), url);
        QCOMPARE(toResponses.value("tools").toArray()[0].toObject().value("strict").toBool(), true);
        QCOMPARE(toResponses.value("parallel_tool_calls").toBool(true), false);

        // strict as the client wrote it, both ways; none written, none sent.
        QJsonObject responses{{"model", "pb/gpt-b"},
                              {"input", "tag it"},
                              {"tools", QJsonArray{QJsonObject{{"type", "function"},
                                                               {"name", "tag"},
                                                               {"strict", true},
                                                               {"parameters", QJsonObject{{"type", "object"}}}},
                                                   QJsonObject{{"type", "function"},
                                                               {"name", "note"},
                                                               {"parameters", QJsonObject{{"type", "object"}}}}}}};
        QCOMPARE(m_gw->post(QStringLiteral("/v1/responses"), responses).status, 200);
        const QJsonArray chatTools = sentTo(m_gw->openaiB).value("tools").toArray();
        QCOMPARE(chatTools[0].toObject().value("function").toObject().value("strict").toBool(), true);
        QVERIFY(!chatTools[1].toObject().value("function").toObject().contains("strict"));

        // Anthropic: disable_parallel_tool_use and a failed tool result, to Chat.
        QJsonObject claude{
            {"model", "pb/gpt-b"},
            {"max_tokens", 512},
            {"tool_choice", QJsonObject{{"type", "auto"}, {"disable_parallel_tool_use", true}}},
            {"tools", QJsonArray{QJsonObject{{"name", "Bash"}, {"input_schema", QJsonObject{{"type", "object"}}}}}},
            {"messages",
             QJsonArray{QJsonObject{{"role", "user"}, {"content", "run the tests"}},
                        QJsonObject{{"role", "assistant"},
                                    {"content", QJsonArray{QJsonObject{{"type", "tool_use"},
                                                                       {"id", "toolu_01"},
                                                                       {"name", "Bash"},
                                                                       {"input", QJsonObject{{"command", "ctest"}}}}}}},
                        QJsonObject{{"role", "user"},
                                    {"content", QJsonArray{QJsonObject{{"type", "tool_result"},
                                                                       {"tool_use_id", "toolu_01"},
                                                                       {"is_error", true},
                                                                       {"content", "exit code 8"}}}}}}}};
        QCOMPARE(m_gw->post(QStringLiteral("/v1/messages"), claude).status, 200);
        const QJsonObject toChat = sentTo(m_gw->openaiB);
        QCOMPARE(toChat.value("parallel_tool_calls").toBool(true), false);
        const QString toolText = toChat.value("messages").toArray().last().toObject().value("content").toString();
        QVERIFY2(toolText.startsWith(QLatin1String("Error")) && toolText.endsWith(QLatin1String("exit code 8")),
                 qPrintable(toolText));

        // Gemini reads a URL image itself (fileData), and strict tools get VALIDATED calls.
        chat.insert("model", "pe/gemini-e");
        chat.remove("parallel_tool_calls");
        QCOMPARE(m_gw->post(QStringLiteral("/v1/chat/completions"), chat).status, 200);
        const QJsonObject toGemini = sentTo(m_gw->googleE);
        const QJsonObject file = toGemini.value("contents")
                                     .toArray()[0]
                                     .toObject()
                                     .value("parts")
                                     .toArray()[1]
                                     .toObject()
                                     .value("fileData")
                                     .toObject();
        QCOMPARE(file.value("fileUri").toString(), url);
        QCOMPARE(file.value("mimeType").toString(), QStringLiteral("image/png"));
        QCOMPARE(
            toGemini.value("toolConfig").toObject().value("functionCallingConfig").toObject().value("mode").toString(),
            QStringLiteral("VALIDATED"));

        // Responses text.format to Messages: structured outputs.
        const QJsonObject city{{"type", "object"},
                               {"properties", QJsonObject{{"city", QJsonObject{{"type", "string"}}}}}};
        QJsonObject format{{"model", "pa/claude-a"},
                           {"input", "the weather as JSON"},
                           {"text", QJsonObject{{"format", QJsonObject{{"type", "json_schema"},
                                                                       {"name", "weather"},
                                                                       {"strict", true},
                                                                       {"schema", city}}}}}};
        QCOMPARE(m_gw->post(QStringLiteral("/v1/responses"), format).status, 200);
        // Closed on the way, as Messages' structured outputs require (anthropic_schema.h).
        QJsonObject closed = city;
        closed.insert("additionalProperties", false);
        QCOMPARE(sentTo(m_gw->anthropicA).value("output_config").toObject().value("format").toObject(),
                 QJsonObject({{"type", "json_schema"}, {"schema", closed}}));
    }

    // Probe G2 8: a Claude client's effort with thinking off turned reasoning on at the other APIs
    // (gpt-5.1's default is none; Gemini showed thoughts) and cost a Responses client its
    // temperature. Without thinking the effort governs only how much Claude writes, which no other API
    // controls: it goes unmapped, and the answer says so.
    void anEffortWithThinkingOffTurnsNoReasoningOn() {
        QJsonObject claude{{"model", "pb/gpt-b"},
                           {"max_tokens", 1000},
                           {"temperature", 0.3},
                           {"thinking", QJsonObject{{"type", "disabled"}}},
                           {"output_config", QJsonObject{{"effort", "low"}}},
                           {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "hi"}}}}};
        const HttpResult toChat = m_gw->post(QStringLiteral("/v1/messages"), claude);
        QCOMPARE(toChat.status, 200);
        QCOMPARE(toChat.header("x-switchman-dropped"), QByteArray("output_config.effort"));
        QVERIFY(!sentTo(m_gw->openaiB).contains("reasoning_effort"));
        QCOMPARE(sentTo(m_gw->openaiB).value("temperature").toDouble(), 0.3);

        claude.insert("model", "pd/resp-d");
        QCOMPARE(m_gw->post(QStringLiteral("/v1/messages"), claude).status, 200);
        QVERIFY(!sentTo(m_gw->responsesD).contains("reasoning"));
        QCOMPARE(sentTo(m_gw->responsesD).value("temperature").toDouble(), 0.3);

        claude.insert("model", "pe/gemini-e");
        QCOMPARE(m_gw->post(QStringLiteral("/v1/messages"), claude).status, 200);
        QVERIFY(!sentTo(m_gw->googleE).value("generationConfig").toObject().contains("thinkingConfig"));

        // With thinking on, the effort is how hard to think: mapped, nothing said.
        claude.insert("model", "pb/gpt-b");
        claude.insert("thinking", QJsonObject{{"type", "adaptive"}});
        const HttpResult thinking = m_gw->post(QStringLiteral("/v1/messages"), claude);
        QCOMPARE(thinking.status, 200);
        QVERIFY(thinking.header("x-switchman-dropped").isEmpty());
        QCOMPARE(sentTo(m_gw->openaiB).value("reasoning_effort").toString(), QStringLiteral("low"));
    }

    // Fields a converted request cannot carry went without a word: Anthropic's context_management
    // and a tool's input_examples, a Chat client's prompt_cache_retention to Responses (probe C2 1).
    // Each is now carried where the target has it, said in the tool's description, or named in the
    // answer (x-switchman-dropped, the stream's first comment); the same API carries all of them.
    void whatAConvertedRequestGoesWithoutIsSaid() {
        QJsonObject claude{
            {"model", "pb/gpt-b"},
            {"max_tokens", 512},
            {"context_management",
             QJsonObject{{"edits", QJsonArray{QJsonObject{{"type", "clear_tool_uses_20250919"}}}}}},
            {"tools", QJsonArray{QJsonObject{{"name", "Bash"},
                                             {"description", "Runs a command."},
                                             {"input_schema", QJsonObject{{"type", "object"}}},
                                             {"input_examples", QJsonArray{QJsonObject{{"command", "ls -la"}}}}}}},
            {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "list the files"}}}}};
        const HttpResult json = m_gw->post(QStringLiteral("/v1/messages"), claude);
        QCOMPARE(json.status, 200);
        QCOMPARE(json.header("x-switchman-dropped"), QByteArray("context_management"));
        const QJsonObject toChat = sentTo(m_gw->openaiB);
        QVERIFY(!toChat.contains("context_management"));
        QCOMPARE(toChat.value("tools").toArray()[0].toObject().value("function").toObject().value("description"),
                 QJsonValue(QStringLiteral("Runs a command.\n\nExamples of valid input:\n{\"command\":\"ls -la\"}")));

        claude.insert("stream", true);
        const HttpResult streamed = m_gw->post(QStringLiteral("/v1/messages"), claude);
        QCOMPARE(streamed.status, 200);
        QVERIFY2(streamed.body.contains(" dropped=context_management\n"), streamed.body.left(300).constData());

        claude.insert("model", "pa/claude-a"); // the same API: every field as sent, nothing said
        const HttpResult same = m_gw->post(QStringLiteral("/v1/messages"), claude);
        QCOMPARE(same.status, 200);
        QVERIFY(!same.body.contains("dropped="));
        const QJsonObject toAnthropic = sentTo(m_gw->anthropicA);
        QVERIFY(toAnthropic.contains("context_management"));
        QVERIFY(toAnthropic.value("tools").toArray()[0].toObject().contains("input_examples"));

        QJsonObject chat{{"model", "pd/resp-d"},
                         {"prompt_cache_retention", "24h"},
                         {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "hi"}}}}};
        const HttpResult toResponses = m_gw->post(QStringLiteral("/v1/chat/completions"), chat);
        QCOMPARE(toResponses.status, 200);
        QVERIFY(toResponses.header("x-switchman-dropped").isEmpty());
        QCOMPARE(sentTo(m_gw->responsesD).value("prompt_cache_retention").toString(), QStringLiteral("24h"));
        chat.insert("model", "pa/claude-a");
        QCOMPARE(m_gw->post(QStringLiteral("/v1/chat/completions"), chat).header("x-switchman-dropped"),
                 QByteArray("prompt_cache_retention"));

        // A member's name is the client's text: it reaches the header as plain characters only.
        chat.remove("prompt_cache_retention");
        chat.insert("evil\r\nX-Injected: 1", true);
        const HttpResult evil = m_gw->post(QStringLiteral("/v1/chat/completions"), chat);
        QCOMPARE(evil.status, 200);
        QCOMPARE(evil.header("x-switchman-dropped"), QByteArray("evil??X-Injected??1"));
        QVERIFY(evil.header("x-injected").isEmpty());

        // A tool definition's members too, Chat's nested function among them.
        QJsonObject tooled{{"model", "pa/claude-a"},
                           {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "hi"}}}},
                           {"tools", QJsonArray{QJsonObject{{"type", "function"},
                                                            {"function", QJsonObject{{"name", "f"},
                                                                                     {"parameters", QJsonObject{}},
                                                                                     {"examples", QJsonArray{}}}}}}}};
        QCOMPARE(m_gw->post(QStringLiteral("/v1/chat/completions"), tooled).header("x-switchman-dropped"),
                 QByteArray("tools[].function.examples"));

        // The records of a provider's own tool runs in the history (an image it generated, an MCP
        // call's output, a page it fetched) are left out of a converted request: a later turn that
        // asks about them went to the next provider without them and without a word (probe E2 2).
        const QJsonObject codex{
            {"model", "pa/claude-a"},
            {"input", QJsonArray{QJsonObject{{"role", "user"}, {"content", "draw a cat, then look it up"}},
                                 QJsonObject{{"type", "image_generation_call"},
                                             {"id", "ig_1"},
                                             {"status", "completed"},
                                             {"result", "iVBORw0KGgo="}},
                                 QJsonObject{{"type", "mcp_call"},
                                             {"id", "mcp_1"},
                                             {"server_label", "kb"},
                                             {"name", "lookup"},
                                             {"arguments", "{}"},
                                             {"output", "KB SAYS 42"}},
                                 QJsonObject{{"role", "user"}, {"content", "describe the image you made"}}}}};
        const HttpResult runs = m_gw->post(QStringLiteral("/v1/responses"), codex);
        QCOMPARE(runs.status, 200);
        QCOMPARE(runs.header("x-switchman-dropped"), QByteArray("input[].image_generation_call, input[].mcp_call"));
        QVERIFY(!QJsonDocument(sentTo(m_gw->anthropicA)).toJson().contains("KB SAYS 42"));
        QJsonObject toOwn = codex;
        toOwn.insert("model", "pd/resp-d"); // its own API: every item as sent, nothing said
        const HttpResult own = m_gw->post(QStringLiteral("/v1/responses"), toOwn);
        QCOMPARE(own.status, 200);
        QVERIFY(own.header("x-switchman-dropped").isEmpty());
        QCOMPARE(sentTo(m_gw->responsesD).value("input").toArray().size(), 4);

        const QJsonObject fetched{
            {"model", "pb/gpt-b"},
            {"max_tokens", 256},
            {"messages",
             QJsonArray{QJsonObject{{"role", "user"}, {"content", "read example.com"}},
                        QJsonObject{{"role", "assistant"},
                                    {"content",
                                     QJsonArray{QJsonObject{{"type", "server_tool_use"},
                                                            {"id", "srvtoolu_1"},
                                                            {"name", "web_fetch"},
                                                            {"input", QJsonObject{{"url", "https://example.com"}}}},
                                                QJsonObject{{"type", "web_fetch_tool_result"},
                                                            {"tool_use_id", "srvtoolu_1"},
                                                            {"content", QJsonObject{{"type", "web_fetch_result"},
                                                                                    {"url", "https://example.com"}}}},
                                                QJsonObject{{"type", "text"}, {"text", "It is a placeholder page."}}}}},
                        QJsonObject{{"role", "user"}, {"content", "quote its first line"}}}}};
        const HttpResult page = m_gw->post(QStringLiteral("/v1/messages"), fetched);
        QCOMPARE(page.status, 200);
        QCOMPARE(page.header("x-switchman-dropped"),
                 QByteArray("messages[].content[].server_tool_use, messages[].content[].web_fetch_tool_result"));
    }

    // Probe Y3-F1: a voice app's history holds the model's audio answer as the openai SDK keeps it. After a
    // failover to another API that turn was left out in silence, the user's turns around it merged, and
    // the model was asked to explain a joke it never told ("Which joke?").
    void aChatAudioAnswerGoesAsItsTranscriptOrNotAtAll() {
        const QString transcript =
            QStringLiteral("Why did the scarecrow win an award? He was outstanding in his field.");
        const auto voice = [](const QString &model, const QJsonObject &audio) {
            return QJsonObject{{"model", model},
                               {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "Tell me a joke."}},
                                                       QJsonObject{{"role", "assistant"},
                                                                   {"content", QJsonValue::Null},
                                                                   {"refusal", QJsonValue::Null},
                                                                   {"audio", audio}},
                                                       QJsonObject{{"role", "user"},
                                                                   {"content", "Explain the joke you just told."}}}}};
        };
        const QJsonObject said{{"id", "audio_abc123"},
                               {"data", "UklGRiQAAABXQVZF"},
                               {"expires_at", 1999999999},
                               {"transcript", transcript}};
        // To Messages: the transcript is the assistant's turn, and the audio is named as left out.
        const HttpResult claude = m_gw->post(QStringLiteral("/v1/chat/completions"), voice("pa/claude-a", said));
        QCOMPARE(claude.status, 200);
        QCOMPARE(claude.header("x-switchman-dropped"), QByteArray("messages[].audio"));
        const QJsonArray turns = sentTo(m_gw->anthropicA).value("messages").toArray();
        QCOMPARE(turns.size(), 3);
        QCOMPARE(turns[1].toObject().value("role").toString(), QStringLiteral("assistant"));
        QVERIFY2(QJsonDocument(turns[1].toObject()).toJson().contains(transcript.toUtf8()),
                 QJsonDocument(turns).toJson().constData());
        // To Responses and Gemini alike.
        QCOMPARE(m_gw->post(QStringLiteral("/v1/chat/completions"), voice("pd/resp-d", said)).status, 200);
        QVERIFY(QJsonDocument(sentTo(m_gw->responsesD)).toJson().contains(transcript.toUtf8()));
        QCOMPARE(m_gw->post(QStringLiteral("/v1/chat/completions"), voice("pe/gemini-e", said)).status, 200);
        QVERIFY(QJsonDocument(sentTo(m_gw->googleE)).toJson().contains(transcript.toUtf8()));
        // To a Chat upstream, the same API: the audio goes as the client sent it, nothing said.
        const HttpResult chat = m_gw->post(QStringLiteral("/v1/chat/completions"), voice("pb/gpt-b", said));
        QCOMPARE(chat.status, 200);
        QVERIFY(chat.header("x-switchman-dropped").isEmpty());
        QCOMPARE(sentTo(m_gw->openaiB).value("messages").toArray()[1].toObject().value("audio").toObject(), said);

        // Given by its id alone (OpenAI's audio guide), only OpenAI knows what was said: another API's
        // candidate is passed over for one that does...
        const QJsonObject byId{{"id", "audio_abc123"}};
        const qsizetype toClaude = m_gw->anthropicA.requests().size();
        const HttpResult chain = m_gw->post(QStringLiteral("/v1/chat/completions"), voice("chain", byId));
        QCOMPARE(chain.status, 200);
        QCOMPARE(m_gw->anthropicA.requests().size(), toClaude);
        QCOMPARE(sentTo(m_gw->openaiB).value("messages").toArray()[1].toObject().value("audio").toObject(), byId);
        // ...and with none left, the client gets a 400 that names the turn.
        const HttpResult refused = m_gw->post(QStringLiteral("/v1/chat/completions"), voice("pa/claude-a", byId));
        QCOMPARE(refused.status, 400);
        const QString message = refused.json().value("error").toObject().value("message").toString();
        QVERIFY2(message.contains(QStringLiteral("messages[1].audio")) &&
                     message.contains(QStringLiteral("without its transcript")),
                 qPrintable(message));
        QCOMPARE(m_gw->anthropicA.requests().size(), toClaude);
    }

    // Probe L1 1, 2 and LOW 2: after a failover to another API, a web search's restrictions, OpenRouter's
    // reasoning object and the sampling left out for thinking went without a word. A restriction the
    // candidate's search has no field for passes it over for one that has; a setting that only steers
    // is carried where the API has it, else named; the reasoning object sets the thinking; and what a
    // converted request goes without is named in the answer.
    void webSearchReasoningAndSamplingAreCarriedOrNamed() {
        GatewayFixture gw;
        config::RouteConfig search;
        search.name = QStringLiteral("search");
        search.candidates = {QStringLiteral("pe/gemini-e"), QStringLiteral("pd/resp-d")};
        gw.config.routes.insert(search.name, search);
        gw.start();

        // Search only these sites: Gemini's googleSearch takes no domain filter, Responses' takes it.
        QJsonObject claude = GatewayFixture::anthropicBody(QStringLiteral("search"), "news?", false);
        claude.insert("tools", QJsonArray{QJsonObject{{"type", "web_search_20250305"},
                                                      {"name", "web_search"},
                                                      {"allowed_domains", QJsonArray{"docs.python.org"}},
                                                      {"max_uses", 2}}});
        const HttpResult allowed = gw.post(QStringLiteral("/v1/messages"), claude);
        QVERIFY2(allowed.status == 200, allowed.body.constData());
        QCOMPARE(allowed.header("x-switchman-candidate"), QByteArray("pd/resp-d"));
        QCOMPARE(gw.googleE.requests().size(), 0);
        QCOMPARE(
            sentTo(gw.responsesD).value("tools").toArray(),
            QJsonArray{QJsonObject({{"type", "web_search"},
                                    {"filters", QJsonObject{{"allowed_domains", QJsonArray{"docs.python.org"}}}}})});
        QCOMPARE(sentTo(gw.responsesD).value("max_tool_calls").toInt(), 2);
        QVERIFY(allowed.header("x-switchman-dropped").isEmpty());
        // Never these sites: no candidate of the route has the field, and the client is told which.
        claude.insert("tools", QJsonArray{QJsonObject{{"type", "web_search_20250305"},
                                                      {"name", "web_search"},
                                                      {"blocked_domains", QJsonArray{"evil.example"}}}});
        const HttpResult blocked = gw.post(QStringLiteral("/v1/messages"), claude);
        QVERIFY2(blocked.status == 400 && blocked.body.contains("blocked_domains"), blocked.body.constData());
        QCOMPARE(gw.googleE.requests().size(), 0);
        // Only a location: Gemini answers without it, and says so.
        claude.insert("tools", QJsonArray{QJsonObject{
                                   {"type", "web_search_20250305"},
                                   {"name", "web_search"},
                                   {"user_location", QJsonObject{{"type", "approximate"}, {"country", "GB"}}}}});
        const HttpResult located = gw.post(QStringLiteral("/v1/messages"), claude);
        QVERIFY2(located.status == 200, located.body.constData());
        QCOMPARE(located.header("x-switchman-candidate"), QByteArray("pe/gemini-e"));
        QCOMPARE(located.header("x-switchman-dropped"), QByteArray("tools[].user_location"));

        // A Chat client's search context size: Responses has the field, Messages has none.
        QJsonObject chat{{"model", "pd/resp-d"},
                         {"web_search_options", QJsonObject{{"search_context_size", "high"}}},
                         {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "news?"}}}}};
        const HttpResult toResponses = gw.post(QStringLiteral("/v1/chat/completions"), chat);
        QVERIFY2(toResponses.status == 200, toResponses.body.constData());
        QVERIFY(toResponses.header("x-switchman-dropped").isEmpty());
        QCOMPARE(sentTo(gw.responsesD).value("tools").toArray()[0].toObject().value("search_context_size").toString(),
                 QStringLiteral("high"));
        chat.insert("model", "pa/claude-a");
        const HttpResult toClaude = gw.post(QStringLiteral("/v1/chat/completions"), chat);
        QVERIFY2(toClaude.status == 200, toClaude.body.constData());
        QCOMPARE(toClaude.header("x-switchman-dropped"), QByteArray("web_search_options.search_context_size"));

        // OpenRouter's reasoning object: its budget is Claude's thinking budget. Thinking leaves the
        // client's temperature out, named.
        QJsonObject reasoning{{"model", "pa/claude-a"},
                              {"temperature", 0.2},
                              {"max_completion_tokens", 8000},
                              {"reasoning", QJsonObject{{"max_tokens", 3000}}},
                              {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "hi"}}}}};
        const HttpResult thought = gw.post(QStringLiteral("/v1/chat/completions"), reasoning);
        QVERIFY2(thought.status == 200, thought.body.constData());
        QCOMPARE(sentTo(gw.anthropicA).value("thinking").toObject(),
                 QJsonObject({{"type", "enabled"}, {"budget_tokens", 3000}}));
        QVERIFY(!sentTo(gw.anthropicA).contains("temperature"));
        QCOMPARE(thought.header("x-switchman-dropped"), QByteArray("temperature"));
        QVERIFY(thought.json()["choices"][0]["message"].toObject().contains("reasoning_content"));
        // exclude: the client is not sent the reasoning, in a JSON answer or a stream.
        reasoning.insert("reasoning", QJsonObject{{"enabled", true}, {"exclude", true}});
        const HttpResult excluded = gw.post(QStringLiteral("/v1/chat/completions"), reasoning);
        QVERIFY2(excluded.status == 200, excluded.body.constData());
        QVERIFY(sentTo(gw.anthropicA).contains("thinking"));
        QVERIFY2(!excluded.json()["choices"][0]["message"].toObject().contains("reasoning_content"),
                 excluded.body.constData());
        QVERIFY(!excluded.json()["choices"][0]["message"]["content"].toString().isEmpty());
        reasoning.insert("stream", true);
        const HttpResult streamed = gw.post(QStringLiteral("/v1/chat/completions"), reasoning);
        QCOMPARE(streamed.status, 200);
        QVERIFY2(!streamed.body.contains("reasoning_content"), streamed.body.constData());
        QVERIFY(!openaiStreamText(streamed.body).isEmpty());
    }

    // Probe G2 3, 4, 7: a value the candidate's API has but its model or server refuses with a 400
    // (Gemini 2.5's penalties, gpt-5's sampling, what Groq does not take) went to it after a
    // failover, and the 400 ended the chain: the client got invalid_request_error for a request its
    // first provider takes, and a later candidate was never tried. Each now goes without it, and the
    // answer names it (x-switchman-dropped, the stream's first comment).
    void whatAModelRefusesGoesWithoutAndIsNamed() {
        GatewayFixture gw;
        auto model = [](const QString &provider, const QString &id) {
            config::ModelConfig m;
            m.provider = provider;
            m.id = id;
            m.reasoning = true;
            return m;
        };
        config::ProviderConfig groq = gw.config.providers.value(QStringLiteral("pb"));
        groq.id = QStringLiteral("pg");
        groq.baseUrl = QStringLiteral("https://api.groq.com/openai/v1");
        gw.config.providers.insert(groq.id, groq);
        for (const config::ModelConfig &m :
             {model("pd", "gpt-5"), model("pb", "o3"), model("pg", "llama-3.3-70b"), model("pa", "claude-sonnet-4-5")})
            gw.config.models.insert(m.key(), m);
        auto route = [&gw](const char *name, QStringList candidates) {
            config::RouteConfig r;
            r.name = QLatin1String(name);
            r.candidates = std::move(candidates);
            gw.config.routes.insert(r.name, r);
        };
        route("penalties", {"pe/gemini-e", "pb/gpt-b"});
        route("sampling", {"pd/gpt-5", "pe/gemini-e"});
        route("groq", {"pg/llama-3.3-70b", "pd/resp-d"});
        HostsOnLoopback transport(gw.openaiB.baseUrl(), {QStringLiteral("api.groq.com")});
        gw.transport = &transport;
        for (demo::FakeUpstream *fake : {&gw.openaiB, &gw.responsesD, &gw.googleE})
            fake->setJudge(modelRefuses);
        gw.start();

        // 3: a Chat client's presence_penalty to Gemini (gemini-e names no generation: a current one).
        const QJsonObject penalty{{"model", "penalties"},
                                  {"presence_penalty", 0.5},
                                  {"frequency_penalty", 0},
                                  {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "hi"}}}}};
        const HttpResult gemini = gw.post(QStringLiteral("/v1/chat/completions"), penalty);
        QVERIFY2(gemini.status == 200, gemini.body.constData());
        QCOMPARE(gemini.header("x-switchman-candidate"), QByteArray("pe/gemini-e"));
        QCOMPARE(gemini.header("x-switchman-dropped"), QByteArray("presence_penalty"));
        QVERIFY(!sentTo(gw.googleE).value("generationConfig").toObject().contains("presencePenalty"));
        QCOMPARE(gw.openaiB.requests().size(), 0);

        // 4: an Anthropic client's temperature, no thinking asked, to gpt-5 (Responses), streamed and not.
        QJsonObject warm{{"model", "sampling"},
                         {"max_tokens", 256},
                         {"temperature", 0.7},
                         {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "hi"}}}}};
        const HttpResult toGpt5 = gw.post(QStringLiteral("/v1/messages"), warm);
        QVERIFY2(toGpt5.status == 200, toGpt5.body.constData());
        QCOMPARE(toGpt5.header("x-switchman-candidate"), QByteArray("pd/gpt-5"));
        QCOMPARE(toGpt5.header("x-switchman-dropped"), QByteArray("temperature"));
        QVERIFY(!sentTo(gw.responsesD).contains("temperature"));
        warm.insert("stream", true);
        const HttpResult streamed = gw.post(QStringLiteral("/v1/messages"), warm);
        QCOMPARE(streamed.status, 200);
        QVERIFY2(streamed.body.contains(" dropped=temperature\n"), streamed.body.left(300).constData());
        QCOMPARE(gw.googleE.requests().size(), 1); // only the penalty's: gpt-5 answered both
        // A Responses client's own top_p, and a Chat client's own temperature to o3: the same.
        const HttpResult own = gw.post(QStringLiteral("/v1/responses"),
                                       QJsonObject{{"model", "pd/gpt-5"}, {"input", "hi"}, {"top_p", 0.5}});
        QVERIFY2(own.status == 200, own.body.constData());
        QCOMPARE(own.header("x-switchman-dropped"), QByteArray("top_p"));
        const HttpResult chat =
            gw.post(QStringLiteral("/v1/chat/completions"),
                    QJsonObject{{"model", "pb/o3"},
                                {"temperature", 0.2},
                                {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "hi"}}}}});
        QVERIFY2(chat.status == 200, chat.body.constData());
        QCOMPARE(chat.header("x-switchman-dropped"), QByteArray("temperature"));
        // Its own max_tokens and stop sequence to o3, which refuses both (probe GV 1): the cap goes as
        // max_completion_tokens, and the gateway cuts the streamed answer at the stop sequence itself, so
        // nothing is dropped.
        const QString whole = chat.json()["choices"][0]["message"]["content"].toString();
        const qsizetype cutAt = whole.size() / 2;
        const QString stop = whole.mid(cutAt, 4);
        QVERIFY2(stop.size() == 4 && whole.indexOf(stop) == cutAt, qPrintable(whole));
        const HttpResult stopped =
            gw.post(QStringLiteral("/v1/chat/completions"),
                    QJsonObject{{"model", "pb/o3"},
                                {"stream", true},
                                {"max_tokens", 300},
                                {"stop", QJsonArray{stop}},
                                {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "hi"}}}}});
        QVERIFY2(stopped.status == 200, stopped.body.constData());
        QVERIFY2(!stopped.body.contains(" dropped="), stopped.body.left(300).constData());
        const QJsonObject toO3 = sentTo(gw.openaiB);
        QVERIFY(!toO3.contains("stop") && !toO3.contains("max_tokens"));
        QCOMPARE(toO3.value("max_completion_tokens").toInt(), 300);
        QString streamedText;
        for (const QByteArray &line : stopped.body.split('\n'))
            if (line.startsWith("data: {"))
                streamedText +=
                    QJsonDocument::fromJson(line.mid(6)).object()["choices"][0]["delta"]["content"].toString();
        QCOMPARE(streamedText, whole.left(cutAt));
        QVERIFY2(stopped.body.contains("\"finish_reason\":\"stop\""), stopped.body.constData());

        // 7: a Chat client's logprobs and a named turn, passed through to Groq.
        const QJsonObject named{
            {"model", "groq"},
            {"logprobs", true},
            {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"name", "alice"}, {"content", "hi"}}}}};
        const qsizetype before = gw.openaiB.requests().size();
        const HttpResult toGroq = gw.post(QStringLiteral("/v1/chat/completions"), named);
        QVERIFY2(toGroq.status == 200, toGroq.body.constData());
        QCOMPARE(toGroq.header("x-switchman-candidate"), QByteArray("pg/llama-3.3-70b"));
        QCOMPARE(toGroq.header("x-switchman-dropped"), QByteArray("logprobs, messages[].name"));
        QCOMPARE(gw.openaiB.requests().size(), before + 1);
        QVERIFY(gw.openaiB.requests().last().path.startsWith("/openai/v1/"));
        const QJsonObject sent = sentTo(gw.openaiB);
        QVERIFY(!sent.contains("logprobs"));
        QCOMPARE(sent.value("messages").toArray()[0].toObject(),
                 QJsonObject({{"role", "user"}, {"content", "alice: hi"}}));
        QCOMPARE(gw.responsesD.requests().size(), 3); // gpt-5's three: Groq answered

        // Probe Y3-F2: an Anthropic client's effort (thinking off) to Sonnet 4.5, which refuses it: left
        // out, and named, streamed and not (it governs how many tokens Claude spends on the answer).
        QJsonObject effort{{"model", "pa/claude-sonnet-4-5"},
                           {"max_tokens", 2000},
                           {"output_config", QJsonObject{{"effort", "low"}}},
                           {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "Summarise Hamlet."}}}}};
        const HttpResult sonnet = gw.post(QStringLiteral("/v1/messages"), effort);
        QVERIFY2(sonnet.status == 200, sonnet.body.constData());
        QCOMPARE(sonnet.header("x-switchman-dropped"), QByteArray("output_config.effort"));
        QVERIFY(!sentTo(gw.anthropicA).contains("output_config"));
        effort.insert("stream", true);
        const HttpResult sonnetStreamed = gw.post(QStringLiteral("/v1/messages"), effort);
        QCOMPARE(sonnetStreamed.status, 200);
        QVERIFY2(sonnetStreamed.body.contains(" dropped=output_config.effort\n"),
                 sonnetStreamed.body.left(300).constData());
    }

    // Probe AB3: a shape one candidate takes and another refuses with a 400 went raw to the one that
    // refuses it, and the 400 ended the chain: Claude Code's system messages between the turns to a
    // Claude before Opus 4.8 (the starter route's Sonnet 4.5, on every request), a tool change in such a
    // message (the gateway's own 400, before any upstream), a Chat client's `developer` role and `store`
    // to DeepSeek and Cerebras. Each candidate now gets the shape it takes, and the answer names a move.
    void aShapeOnlySomeCandidatesTakeGoesAsEachTakesIt() {
        GatewayFixture gw;
        config::ProviderConfig deepseek = gw.config.providers.value(QStringLiteral("pb"));
        deepseek.id = QStringLiteral("pk");
        deepseek.baseUrl = QStringLiteral("https://api.deepseek.com/v1");
        gw.config.providers.insert(deepseek.id, deepseek);
        for (const auto &[provider, id] : {std::pair{"pa", "claude-opus-4-8"}, std::pair{"pa", "claude-sonnet-4-5"},
                                           std::pair{"pk", "deepseek-chat"}}) {
            config::ModelConfig m;
            m.provider = QLatin1String(provider);
            m.id = QLatin1String(id);
            gw.config.models.insert(m.key(), m);
        }
        auto route = [&gw](const char *name, QStringList candidates) {
            config::RouteConfig r;
            r.name = QLatin1String(name);
            r.candidates = std::move(candidates);
            gw.config.routes.insert(r.name, r);
        };
        route("starter", {"pa/claude-sonnet-4-5", "pb/gpt-b"}); // the starter configuration's route
        route("opus", {"pa/claude-opus-4-8"});
        route("deepseek", {"pk/deepseek-chat"});
        HostsOnLoopback transport(gw.openaiB.baseUrl(), {QStringLiteral("api.deepseek.com")});
        gw.transport = &transport;
        gw.anthropicA.setJudge(claudeRefusesSystemMessages);
        gw.openaiB.setJudge(strictChatServerRefuses);
        gw.start();
        const auto rolesSent = [](const demo::FakeUpstream &fake) {
            QStringList roles;
            for (const QJsonValue &m : sentTo(fake).value("messages").toArray())
                roles << m.toObject().value("role").toString();
            return roles;
        };

        // F1: the agent list Claude Code sends after the user's turn, to Sonnet 4.5: in its system prompt.
        const QJsonObject agents{{"role", "system"}, {"content", "Available agents: general."}};
        QJsonObject claudeCode{{"model", "starter"},
                               {"max_tokens", 256},
                               {"system", "You are Claude Code."},
                               {"messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "hi"}}, agents}}};
        const HttpResult sonnet = gw.post(QStringLiteral("/v1/messages"), claudeCode);
        QVERIFY2(sonnet.status == 200, sonnet.body.constData());
        QCOMPARE(sonnet.header("x-switchman-candidate"), QByteArray("pa/claude-sonnet-4-5"));
        QCOMPARE(sonnet.header("x-switchman-dropped"), QByteArray("messages[role=system]"));
        QCOMPARE(rolesSent(gw.anthropicA), QStringList{"user"});
        QCOMPARE(sentTo(gw.anthropicA).value("system").toArray().last().toObject().value("text").toString(),
                 QStringLiteral("Available agents: general."));
        QCOMPARE(gw.openaiB.requests().size(), 0);
        // Opus 4.8 takes it where the client put it.
        claudeCode.insert("model", "opus");
        const HttpResult opus = gw.post(QStringLiteral("/v1/messages"), claudeCode);
        QVERIFY2(opus.status == 200, opus.body.constData());
        QVERIFY(opus.header("x-switchman-dropped").isEmpty());
        QCOMPARE(rolesSent(gw.anthropicA), QStringList({"user", "system"}));
        // ...but not before a user turn, where the empty answer of another API's after it, left out,
        // would leave it.
        claudeCode.insert("messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", "hi"}}, agents,
                                                 QJsonObject{{"role", "assistant"}, {"content", QJsonArray()}},
                                                 QJsonObject{{"role", "user"}, {"content", "again"}}});
        const HttpResult bereft = gw.post(QStringLiteral("/v1/messages"), claudeCode);
        QVERIFY2(bereft.status == 200, bereft.body.constData());
        QCOMPARE(bereft.header("x-switchman-dropped"), QByteArray("messages[role=system]"));
        QCOMPARE(rolesSent(gw.anthropicA), QStringList({"user", "user"}));

        // F2: a tool change in a system message reaches the Claude that takes it as the client wrote it...
        const QJsonObject toolChange{{"type", "tool_addition"},
                                     {"tool", QJsonObject{{"type", "tool_reference"}, {"name", "get_weather"}}}};
        QJsonObject tools{
            {"model", "opus"},
            {"max_tokens", 256},
            {"tools",
             QJsonArray{QJsonObject{
                 {"name", "get_weather"}, {"input_schema", QJsonObject{{"type", "object"}}}, {"defer_loading", true}}}},
            {"messages",
             QJsonArray{QJsonObject{{"role", "user"}, {"content", "weather in Paris?"}},
                        QJsonObject{{"role", "system"},
                                    {"content", QJsonArray{QJsonObject{{"type", "text"}, {"text", "Weather is here."}},
                                                           toolChange}}}}}};
        const HttpResult changed = gw.post(QStringLiteral("/v1/messages"), tools);
        QVERIFY2(changed.status == 200, changed.body.constData());
        QCOMPARE(sentTo(gw.anthropicA).value("messages").toArray().last().toObject().value("content").toArray().last(),
                 QJsonValue(toolChange));
        // ...and passes over the candidates that cannot take it, with a 400 that names it.
        const qsizetype asked = gw.anthropicA.requests().size();
        tools.insert("model", "starter");
        const HttpResult nowhere = gw.post(QStringLiteral("/v1/messages"), tools);
        QCOMPARE(nowhere.status, 400);
        QVERIFY2(nowhere.body.contains("tool_addition"), nowhere.body.constData());
        QCOMPARE(gw.anthropicA.requests().size(), asked);
        QCOMPARE(gw.openaiB.requests().size(), 0);

        // F3: what pi-ai sends a reasoning model at a base URL it does not know, to DeepSeek.
        const QJsonObject piAi{{"model", "deepseek"},
                               {"store", false},
                               {"messages", QJsonArray{QJsonObject{{"role", "developer"}, {"content", "One line."}},
                                                       QJsonObject{{"role", "user"}, {"content", "hi"}}}}};
        const HttpResult toDeepSeek = gw.post(QStringLiteral("/v1/chat/completions"), piAi);
        QVERIFY2(toDeepSeek.status == 200, toDeepSeek.body.constData());
        QVERIFY(toDeepSeek.header("x-switchman-dropped").isEmpty()); // store: false, the default, loses nothing
        QCOMPARE(rolesSent(gw.openaiB), QStringList({"system", "user"}));
        QVERIFY(!sentTo(gw.openaiB).contains("store"));
    }

    // Requests the gateway converted that the provider would refuse with a 400, which ends the chain
    // (the next candidate never tried), each as the provider checks it (the fakes refuse in its
    // words): the first candidate takes the request as converted, or is skipped for one that can.
    void theProviderTakesWhatTheGatewayConverted_data() {
        QTest::addColumn<Inbound>("inbound");
        QTest::addColumn<QJsonObject>("body");
        QTest::addColumn<QString>("first");
        QTest::addColumn<QString>("answers");
        const QString claude = QStringLiteral("pa/claude-a");
        const QString chat = QStringLiteral("pb/gpt-b");
        const QString responses = QStringLiteral("pd/resp-d");
        const QString gemini = QStringLiteral("pe/gemini-e");
        QTest::addRow("Chat summary without tools to Messages")
            << Inbound::Chat << summaryWithoutTools(Inbound::Chat, "chain") << claude << claude;
        QTest::addRow("Responses summary without tools to Messages")
            << Inbound::Responses << summaryWithoutTools(Inbound::Responses, "chain") << claude << claude;
        QTest::addRow("21 strict tools to Messages")
            << Inbound::Chat << chatWithStrictTools("chain", 21, 0) << claude << claude;
        QTest::addRow("18 nullable strict parameters to Messages")
            << Inbound::Chat << chatWithStrictTools("chain", 6, 3) << claude << claude;
        QTest::addRow("17 nullable answer fields skip Messages")
            << Inbound::Chat << chatWithNullableAnswer("chain") << claude << gemini;
        QTest::addRow("Anthropic optional answer field to Chat")
            << Inbound::Anthropic << anthropicOptionalField("chain", false) << chat << chat;
        QTest::addRow("Anthropic optional answer field to Responses")
            << Inbound::Anthropic << anthropicOptionalField("chain", false) << responses << responses;
        QTest::addRow("Anthropic strict tool's optional field to Chat")
            << Inbound::Anthropic << anthropicOptionalField("chain", true) << chat << chat;
        QTest::addRow("Anthropic strict tool's optional field to Responses")
            << Inbound::Anthropic << anthropicOptionalField("chain", true) << responses << responses;
        // Probe G2 6: Chat takes at most 128 tools; the 400 ended the chain.
        QTest::addRow("150 tools skip Chat")
            << Inbound::Anthropic << anthropicWithTools("chain", 150) << chat << gemini;
        QTest::addRow("128 tools to Chat") << Inbound::Anthropic << anthropicWithTools("chain", 128) << chat << chat;
        // Probe AA3 F1: another API's empty answer (a Gemini SAFETY block), kept by an Anthropic client
        // as an assistant turn with empty content, goes back to Messages on the client's own API.
        const QJsonObject user{{"role", "user"}, {"content", "Summarise the report."}};
        const QJsonObject again{{"role", "user"}, {"content", "Please try again."}};
        for (const QJsonValue &empty : {QJsonValue(QJsonArray()), QJsonValue("")})
            QTest::addRow("Anthropic client's empty answer %s back to Messages", empty.isArray() ? "[]" : "\"\"")
                << Inbound::Anthropic
                << QJsonObject{{"model", "chain"},
                               {"max_tokens", 256},
                               {"messages",
                                QJsonArray{user, QJsonObject{{"role", "assistant"}, {"content", empty}}, again}}}
                << claude << claude;
    }
    void aClaudeCodeTurnFailsOverToMagistralWhole() {
        // Probe AC3: Claude's outage, and Mistral's API behind it. Mistral refused the gateway's
        // stream_options and max_completion_tokens (422), and the user's words right after a tool result
        // (400), each ending the chain; its answer, thinking and words in content chunk lists, came out
        // empty and successful.
        GatewayFixture gw;
        config::ProviderConfig mistral = gw.config.providers.value(QStringLiteral("pb"));
        mistral.id = QStringLiteral("pm");
        mistral.baseUrl = QStringLiteral("https://api.mistral.ai/v1");
        gw.config.providers.insert(mistral.id, mistral);
        config::ModelConfig magistral;
        magistral.provider = mistral.id;
        magistral.id = QStringLiteral("magistral-medium-latest");
        magistral.reasoning = true;
        gw.config.models.insert(magistral.key(), magistral);
        gw.config.routes[QStringLiteral("chain")].candidates = {QStringLiteral("pa/claude-a"), magistral.key()};
        HostsOnLoopback transport(gw.openaiB.baseUrl(), {QStringLiteral("api.mistral.ai")});
        gw.transport = &transport;
        demo::Fault overloaded;
        overloaded.kind = demo::Fault::Status;
        overloaded.status = 529;
        gw.anthropicA.setFault(overloaded);
        gw.openaiB.setJudge(mistralRefuses);
        const auto chunk = [](const QJsonValue &content, const char *finish = nullptr) {
            QJsonObject delta{{"content", content}};
            QJsonObject choice{{"index", 0}, {"delta", delta}, {"finish_reason", QJsonValue::Null}};
            QJsonObject frame{{"id", "7b1c"}, {"object", "chat.completion.chunk"}, {"choices", QJsonArray{choice}}};
            if (finish) {
                choice.insert("finish_reason", QLatin1String(finish));
                frame.insert("choices", QJsonArray{choice});
                frame.insert("usage", QJsonObject{{"prompt_tokens", 9}, {"completion_tokens", 30}});
            }
            return "data: " + QJsonDocument(frame).toJson(QJsonDocument::Compact) + "\n\n";
        };
        const auto thinking = [](const char *text) {
            return QJsonArray{QJsonObject{{"type", "thinking"},
                                          {"thinking", QJsonArray{QJsonObject{{"type", "text"}, {"text", text}}}}}};
        };
        const auto text = [](const char *words) { return QJsonArray{QJsonObject{{"type", "text"}, {"text", words}}}; };
        gw.openaiB.setRawReply(chunk(thinking("The files are listed. ")) + chunk(thinking("Nothing to do.")) +
                               chunk(text("Two files: ")) + chunk(text("a.txt and b.txt.")) + chunk("", "stop") +
                               "data: [DONE]\n\n");
        gw.start();

        const QJsonObject bash{{"type", "object"},
                               {"properties", QJsonObject{{"command", QJsonObject{{"type", "string"}}}}}};
        const QJsonObject claudeCode{
            {"model", "chain"},
            {"max_tokens", 4000},
            {"thinking", QJsonObject{{"type", "enabled"}, {"budget_tokens", 2048}}},
            {"tools", QJsonArray{QJsonObject{{"name", "Bash"}, {"input_schema", bash}}}},
            {"messages",
             QJsonArray{QJsonObject{{"role", "user"}, {"content", "list the files"}},
                        QJsonObject{{"role", "assistant"},
                                    {"content", QJsonArray{QJsonObject{{"type", "tool_use"},
                                                                       {"id", "toolu_01A09q90qw90lq917835lq9"},
                                                                       {"name", "Bash"},
                                                                       {"input", QJsonObject{{"command", "ls"}}}}}}},
                        QJsonObject{{"role", "user"},
                                    {"content", QJsonArray{QJsonObject{{"type", "tool_result"},
                                                                       {"tool_use_id", "toolu_01A09q90qw90lq917835lq9"},
                                                                       {"content", "a.txt\nb.txt"}},
                                                           QJsonObject{{"type", "text"},
                                                                       {"text", "<system-reminder>The todo list is "
                                                                                "empty.</system-reminder>"}}}}}}}};
        const HttpResult r = gw.post(QStringLiteral("/v1/messages"), claudeCode);
        QVERIFY2(r.status == 200, r.body.constData());
        QCOMPARE(r.header("x-switchman-candidate"), magistral.key().toUtf8());
        const QJsonArray content = QJsonDocument::fromJson(r.body).object().value("content").toArray();
        QCOMPARE(content.size(), 2);
        QCOMPARE(content[0].toObject().value("thinking").toString(),
                 QStringLiteral("The files are listed. Nothing to do."));
        QCOMPARE(content[1].toObject().value("text").toString(), QStringLiteral("Two files: a.txt and b.txt."));
        QCOMPARE(gw.openaiB.requests().size(), 1); // taken the first time
        const QJsonObject sent = sentTo(gw.openaiB);
        QCOMPARE(sent.value("max_tokens").toInt(), 4000);
        const QJsonArray messages = sent.value("messages").toArray();
        QCOMPARE(messages.last().toObject().value("content").toString(),
                 QStringLiteral("<system-reminder>The todo list is empty.</system-reminder>"));
    }

    void theProviderTakesWhatTheGatewayConverted() {
        QFETCH(Inbound, inbound);
        QFETCH(QJsonObject, body);
        QFETCH(QString, first);
        QFETCH(QString, answers);
        GatewayFixture gw;
        gw.config.routes[QStringLiteral("chain")].candidates = {first, QStringLiteral("pe/gemini-e")};
        gw.anthropicA.setJudge(anthropicRefuses);
        gw.openaiB.setJudge(openAIRefuses);
        gw.responsesD.setJudge(openAIRefuses);
        gw.start();
        const HttpResult r = gw.post(pathFor(inbound), body);
        QVERIFY2(r.status == 200, r.body.constData());
        const auto fake = [&gw](const QString &model) -> demo::FakeUpstream & {
            return model.startsWith("pa/")   ? gw.anthropicA
                   : model.startsWith("pb/") ? gw.openaiB
                   : model.startsWith("pd/") ? gw.responsesD
                                             : gw.googleE;
        };
        QCOMPARE(fake(answers).requests().size(), 1);
        if (answers != first)
            QCOMPARE(fake(first).requests().size(), 0); // skipped, never refused
        else
            QCOMPARE(gw.googleE.requests().size(), 0);
    }
};

QTEST_GUILESS_MAIN(TestProtocolTranslation)
#include "test_protocol_translation.moc"
