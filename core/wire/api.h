#pragma once
// The LLM APIs the gateway speaks, on either side: a client's route is one of them, a
// provider's `api` is one of them. Their names are the strings configuration, telemetry
// and a pi AssistantMessage (`api`) use; nothing else spells them.

#include <QLatin1String>
#include <QString>
#include <QStringList>
#include <optional>

namespace sw::wire {

enum class Api {
    OpenAICompletions, // OpenAI Chat Completions (client route /v1/chat/completions)
    AnthropicMessages, // Anthropic Messages (client route /v1/messages)
    OpenAIResponses,   // OpenAI Responses (client route /v1/responses)
    Google,            // Google Generative AI streamGenerateContent (upstream only)
    Pi,                // pi's native stream (client route /v1/pi/stream only)
};

// "openai-completions", "anthropic-messages", "openai-responses", "google-generative-ai", "pi".
QLatin1String apiName(Api api);
// The API a name stands for; nullopt for an unknown name.
std::optional<Api> apiFromName(const QString &name);
// True when `name` is `api`'s name.
inline bool isApi(QStringView name, Api api) {
    return name == apiName(api);
}
// The APIs a provider may speak, by name, in a stable order (configuration, the editor).
const QStringList &upstreamApiNames();
// The API of a client chat route ("/v1/chat/completions", "/v1/messages", "/v1/responses",
// "/v1/pi/stream"): the format its requests, answers and errors are in. nullopt for any other path.
std::optional<Api> apiOfChatRoute(QStringView path);

} // namespace sw::wire
