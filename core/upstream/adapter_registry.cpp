// The upstream adapter registry: one shared, stateless adapter per upstream API.
#include "core/upstream/anthropic_adapter.h"
#include "core/upstream/google_adapter.h"
#include "core/upstream/openai_completions_adapter.h"
#include "core/upstream/openai_responses_adapter.h"
#include "core/upstream/upstream_adapter.h"

#include <QJsonArray>
#include <QJsonObject>

#include <QUrl>
#include <functional>

namespace sw::upstream {

QString modelPathSegment(const QString &modelId) {
    // Everything but RFC 3986 unreserved characters is encoded: "/" is %2F, "?" %3F, "#" %23.
    return QString::fromLatin1(QUrl::toPercentEncoding(modelId));
}

namespace {

// The first content part of the client's messages whose type has no canonical form
// (a document, a file, audio): a converted request would go without it.
QString unmappedPart(const QJsonObject &raw, wire::Api inbound) {
    static const QStringList chat{QStringLiteral("input_audio"), QStringLiteral("file")};
    static const QStringList anthropic{QStringLiteral("document"), QStringLiteral("search_result"),
                                       QStringLiteral("container_upload")};
    static const QStringList responses{QStringLiteral("input_file"), QStringLiteral("input_audio")};
    const QStringList *unmapped = nullptr;
    QJsonArray items;
    switch (inbound) {
    case wire::Api::OpenAICompletions:
        unmapped = &chat;
        items = raw.value(QLatin1String("messages")).toArray();
        break;
    case wire::Api::AnthropicMessages:
        unmapped = &anthropic;
        items = raw.value(QLatin1String("messages")).toArray();
        break;
    case wire::Api::OpenAIResponses:
        unmapped = &responses;
        items = raw.value(QLatin1String("input")).toArray();
        break;
    case wire::Api::Pi:
    case wire::Api::Google:
        return {};
    }
    std::function<QString(const QJsonValue &)> scan = [&](const QJsonValue &content) -> QString {
        for (const QJsonValue &v : content.toArray()) {
            const QJsonObject part = v.toObject();
            const QString type = part.value(QLatin1String("type")).toString();
            if (unmapped->contains(type))
                return type;
            if (type == QLatin1String("tool_result")) // Anthropic: parts inside a tool result too
                if (const QString inner = scan(part.value(QLatin1String("content"))); !inner.isEmpty())
                    return inner;
        }
        return {};
    };
    for (const QJsonValue &item : items) {
        const QJsonObject o = item.toObject();
        if (const QString found = scan(o.value(QLatin1String("content"))); !found.isEmpty())
            return found;
        if (const QString found = scan(o.value(QLatin1String("output"))); !found.isEmpty())
            return found; // Responses function_call_output given as parts
    }
    return {};
}

} // namespace

std::optional<QString> UpstreamAdapter::incompatibility(const model::ChatRequest &request) const {
    const wire::Api inbound = request.sourceApi;
    if (wire::apiName(inbound) == api())
        return std::nullopt; // passthrough: every field reaches the API that defines it
    const QJsonObject &raw = request.raw;
    auto present = [](const QJsonValue &v) {
        return !v.isUndefined() && !v.isNull() && !(v.isString() && v.toString().isEmpty());
    };
    // Conversation state lives at OpenAI: another API would answer without the earlier turns.
    for (const char *field : {"previous_response_id", "conversation"})
        if (present(raw.value(QLatin1String(field))))
            return QStringLiteral("%1: only an openai-responses upstream holds that conversation state, not %2")
                .arg(QLatin1String(field), api());
    const QString target = api();
    const bool toAnthropic = target == wire::apiName(AnthropicAdapter::kApi);
    const bool toGoogle = target == wire::apiName(GoogleAdapter::kApi);
    const bool toChat = target == wire::apiName(OpenAICompletionsAdapter::kApi);
    const bool toResponses = target == wire::apiName(OpenAIResponsesAdapter::kApi);
    // Provider-run tools: web search has an equivalent on Messages, Gemini and Responses;
    // the others run only at the provider that defines them.
    for (const model::BuiltinTool &b : request.context.builtinTools) {
        if (b.kind == QLatin1String("web_search")) {
            if (toChat)
                return QStringLiteral("tools: web_search has no equivalent on %1").arg(target);
            continue;
        }
        return QStringLiteral("tools: the built-in tool \"%1\" runs only on its own provider's API, not %2")
            .arg(b.kind, target);
    }
    // Structured output is mapped everywhere but "any JSON object" to Messages, whose
    // structured outputs need a schema.
    if (toAnthropic && request.options.outputFormat.type == QLatin1String("json_object"))
        return QStringLiteral("response_format: json_object (JSON without a schema) has no equivalent on %1")
            .arg(target);
    // At most one tool call per turn: Gemini has no such switch.
    if (toGoogle && request.options.parallelToolCalls == false && !request.context.tools.isEmpty())
        return QStringLiteral("parallel_tool_calls: false has no equivalent on %1").arg(target);
    if (const QString part = unmappedPart(raw, inbound); !part.isEmpty())
        return QStringLiteral("content part \"%1\": no translation to %2").arg(part, target);
    // Sampling controls the target has no field for. Zero penalties are the default and
    // change nothing (SDKs often send them), so only a real change counts.
    const model::Options &opt = request.options;
    if (opt.topK && (toChat || toResponses))
        return QStringLiteral("top_k has no equivalent on %1").arg(target);
    for (const auto &[value, name] :
         {std::pair{opt.presencePenalty, "presence_penalty"}, std::pair{opt.frequencyPenalty, "frequency_penalty"}})
        if (value && *value != 0.0 && (toAnthropic || toResponses))
            return QStringLiteral("%1 has no equivalent on %2").arg(QLatin1String(name), target);
    // A tool choice the canonical request cannot say (allowed_tools, a forced built-in tool).
    const QJsonValue choice = raw.value(QLatin1String("tool_choice"));
    const QString choiceType = choice.toObject().value(QLatin1String("type")).toString();
    if (inbound != wire::Api::AnthropicMessages && choice.isObject() && choiceType != QLatin1String("function") &&
        choiceType != QLatin1String("custom"))
        return QStringLiteral("tool_choice: \"%1\" has no translation to %2").arg(choiceType, target);
    // Several answers per request: the canonical answer is one choice.
    if (raw.value(QLatin1String("n")).toInt(1) > 1)
        return QStringLiteral("n: %1 choices cannot come from %2")
            .arg(raw.value(QLatin1String("n")).toInt())
            .arg(target);
    // Responses features whose state or execution lives at OpenAI.
    for (const char *field : {"prompt", "background"})
        if (present(raw.value(QLatin1String(field))) && raw.value(QLatin1String(field)) != QJsonValue(false))
            return QStringLiteral("%1: only an openai-responses upstream runs it, not %2")
                .arg(QLatin1String(field), target);
    // Spoken answers: no canonical audio output.
    for (const QJsonValue &m : raw.value(QLatin1String("modalities")).toArray())
        if (m.toString() == QLatin1String("audio"))
            return QStringLiteral("modalities: audio output has no translation to %1").arg(target);
    // Images the target could not read would otherwise be left out of the request.
    for (const model::Message &m : request.context.messages)
        for (const model::ContentBlock &b : m.content) {
            if (b.type != model::BlockType::Image || b.url.isEmpty())
                continue;
            const bool web = b.url.startsWith(QLatin1String("http://")) || b.url.startsWith(QLatin1String("https://"));
            bool readable = web;
            if (toAnthropic)
                readable |= b.url.startsWith(QLatin1String("file_")); // Anthropic Files API id
            else if (toGoogle)
                readable = GoogleAdapter::isFetchableUrl(b.url);
            else if (toResponses)
                readable |= b.url.startsWith(QLatin1String("file-")) || b.url.startsWith(QLatin1String("data:"));
            else if (toChat)
                readable |= b.url.startsWith(QLatin1String("data:"));
            if (!readable)
                return QStringLiteral("image \"%1\": a file id %2 cannot resolve").arg(b.url.left(64), target);
        }
    return std::nullopt;
}

NativeBody UpstreamAdapter::nativeBodyFor(const model::ChatRequest &request) const {
    return !request.stream && wire::apiName(request.sourceApi) == api() ? NativeBody::Keep : NativeBody::Skip;
}

const UpstreamAdapter *adapterFor(const QString &api) {
    static const AnthropicAdapter anthropic;
    static const OpenAICompletionsAdapter openAICompletions;
    static const OpenAIResponsesAdapter openAIResponses;
    static const GoogleAdapter google;
    // Adding an API: a static instance above and one line here.
    static const UpstreamAdapter *const adapters[] = {&anthropic, &openAICompletions, &openAIResponses, &google};
    for (const UpstreamAdapter *a : adapters)
        if (a->api() == api)
            return a;
    return nullptr;
}

} // namespace sw::upstream
