// The upstream adapter registry: one shared, stateless adapter per upstream API.
#include "upstream/anthropic_adapter.h"
#include "upstream/google_adapter.h"
#include "upstream/openai_completions_adapter.h"
#include "upstream/openai_responses_adapter.h"
#include "upstream/upstream_adapter.h"

#include <QJsonObject>
#include <QUrl>

namespace sw::upstream {

QString modelPathSegment(const QString &modelId) {
    // Everything but RFC 3986 unreserved characters is encoded: "/" is %2F, "?" %3F, "#" %23.
    return QString::fromLatin1(QUrl::toPercentEncoding(modelId));
}

std::optional<QString> UpstreamAdapter::incompatibility(const formats::ParsedRequest &request,
                                                        formats::InboundFormat inbound) const {
    if (formats::sameApiName(inbound) == api())
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
    // Structured output has no translation yet: prose instead of the schema would break .parse().
    const QString chatFormat =
        raw.value(QLatin1String("response_format")).toObject().value(QLatin1String("type")).toString();
    if (!chatFormat.isEmpty() && chatFormat != QLatin1String("text"))
        return QStringLiteral("response_format: structured output is not translated to %1").arg(api());
    const QString textFormat = raw.value(QLatin1String("text"))
                                   .toObject()
                                   .value(QLatin1String("format"))
                                   .toObject()
                                   .value(QLatin1String("type"))
                                   .toString();
    if (!textFormat.isEmpty() && textFormat != QLatin1String("text"))
        return QStringLiteral("text.format: structured output is not translated to %1").arg(api());
    if (present(raw.value(QLatin1String("output_format"))) ||
        present(raw.value(QLatin1String("output_config")).toObject().value(QLatin1String("format"))))
        return QStringLiteral("output_format: structured output is not translated to %1").arg(api());
    return std::nullopt;
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
