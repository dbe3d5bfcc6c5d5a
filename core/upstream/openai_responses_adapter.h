#pragma once
// Upstream API "openai-responses": POST {baseUrl}/responses (baseUrl includes /v1), streaming.

#include "core/upstream/upstream_adapter.h"

namespace sw::upstream {

class OpenAIResponsesAdapter final : public UpstreamAdapter {
public:
    static constexpr wire::Api kApi = wire::Api::OpenAIResponses;

    const QString &api() const override { return apiNameString<kApi>(); }
    HttpRequest buildRequest(const model::ChatRequest &request, const Target &target,
                             const HeaderList &forwardHeaders) const override;
    std::unique_ptr<StreamDecoder> makeDecoder(const Target &target,
                                               NativeBody native = NativeBody::Keep) const override;
    UpstreamErrorInfo parseError(int status, const QByteArray &body) const override;
    // No `stop` in the Responses API: the gateway cuts at every one.
    qsizetype stopSequencesSent(const model::ChatRequest &, const Target &) const override { return 0; }

    // What a model that always reasons goes without (OpenAICompletionsAdapter::alwaysReasons): the
    // client's temperature and top_p.
    QStringList droppedFor(const model::ChatRequest &request, const Target &target) const override;

    // The member of the client's request that names its reasoning effort ("reasoning_effort",
    // "reasoning.effort", "output_config.effort", "options.reasoning", ...) when OpenAI model
    // target.modelId takes another effort than it asks (model::openAIEffortFor: gpt-5.1 gets high for
    // xhigh), so the answer names what changed; "" when the effort goes as asked. `upstream`: the
    // candidate's API, one of the two OpenAI ones (the same as the client's: the passthrough's).
    static QString effortChanged(const model::ChatRequest &request, const Target &target, wire::Api upstream);

    // The Responses body for a request that came in another format (see formats/translation_rules.md).
    // reasonsAlways: the model takes only the default sampling, asked to reason or not
    // (OpenAICompletionsAdapter::alwaysReasons).
    static QJsonObject buildBody(const model::ChatRequest &request, const QString &modelId, bool reasonsAlways = false);
};

} // namespace sw::upstream
