#include "core/config/demo_config.h"

#include "core/wire/api.h"

namespace sw::config {

Config demoConfig() {
    Config config;
    config.listen = QStringLiteral("127.0.0.1:4141");

    const auto provider = [](const QString &id, wire::Api api) {
        ProviderConfig p;
        p.id = id;
        p.api = wire::apiName(api);
        p.baseUrl = QStringLiteral("http://127.0.0.1:0"); // replaced by the simulated upstream's URL at start
        p.demo = true;                                    // credentials stay empty: no auth header
        return p;
    };
    config.providers.insert(QStringLiteral("sim-anthropic"),
                            provider(QStringLiteral("sim-anthropic"), wire::Api::AnthropicMessages));
    config.providers.insert(QStringLiteral("sim-openai"),
                            provider(QStringLiteral("sim-openai"), wire::Api::OpenAICompletions));
    // One simulated provider per upstream API, so --demo reaches every adapter.
    config.providers.insert(QStringLiteral("sim-responses"),
                            provider(QStringLiteral("sim-responses"), wire::Api::OpenAIResponses));
    config.providers.insert(QStringLiteral("sim-google"), provider(QStringLiteral("sim-google"), wire::Api::Google));

    const auto model = [](const QString &providerId, const QString &id, double costInput, double costOutput) {
        ModelConfig m;
        m.provider = providerId;
        m.id = id;
        m.input = {QStringLiteral("text"), QStringLiteral("image")};
        m.reasoning = true;
        m.costInput = costInput;
        m.costOutput = costOutput;
        return m;
    };
    const ModelConfig claude = model(QStringLiteral("sim-anthropic"), QStringLiteral("claude-sim"), 3, 15);
    const ModelConfig gpt = model(QStringLiteral("sim-openai"), QStringLiteral("gpt-sim"), 1.25, 10);
    config.models.insert(claude.key(), claude);
    config.models.insert(gpt.key(), gpt);
    const ModelConfig responses = model(QStringLiteral("sim-responses"), QStringLiteral("gpt-responses-sim"), 1.25, 10);
    const ModelConfig gemini = model(QStringLiteral("sim-google"), QStringLiteral("gemini-sim"), 1.25, 10);
    config.models.insert(responses.key(), responses);
    config.models.insert(gemini.key(), gemini);

    RouteConfig route;
    route.name = QStringLiteral("demo");
    route.candidates = {claude.key(), gpt.key()};
    route.aliases = {QStringLiteral("claude-*"), QStringLiteral("gpt-*")};
    config.routes.insert(route.name, route);
    return config;
}

} // namespace sw::config
