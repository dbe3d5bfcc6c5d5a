#include "core/wire/api.h"

namespace sw::wire {

QLatin1String apiName(Api api) {
    switch (api) {
    case Api::OpenAICompletions:
        return QLatin1String("openai-completions");
    case Api::AnthropicMessages:
        return QLatin1String("anthropic-messages");
    case Api::OpenAIResponses:
        return QLatin1String("openai-responses");
    case Api::Google:
        return QLatin1String("google-generative-ai");
    case Api::Pi:
        return QLatin1String("pi");
    }
    return {};
}

std::optional<Api> apiFromName(const QString &name) {
    for (Api api : {Api::OpenAICompletions, Api::AnthropicMessages, Api::OpenAIResponses, Api::Google, Api::Pi})
        if (name == apiName(api))
            return api;
    return std::nullopt;
}

const QStringList &upstreamApiNames() {
    static const QStringList names{apiName(Api::AnthropicMessages), apiName(Api::OpenAICompletions),
                                   apiName(Api::OpenAIResponses), apiName(Api::Google)};
    return names;
}

std::optional<Api> apiOfChatRoute(QStringView path) {
    if (path == QLatin1String("/v1/chat/completions"))
        return Api::OpenAICompletions;
    if (path == QLatin1String("/v1/messages"))
        return Api::AnthropicMessages;
    if (path == QLatin1String("/v1/responses"))
        return Api::OpenAIResponses;
    if (path == QLatin1String("/v1/pi/stream"))
        return Api::Pi;
    return std::nullopt;
}

} // namespace sw::wire
