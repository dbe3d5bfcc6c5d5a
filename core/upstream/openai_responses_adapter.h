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

    // The Responses body for a request that came in another format (see formats/translation_rules.md).
    // reasonsAlways: the model takes only the default sampling, asked to reason or not
    // (OpenAICompletionsAdapter::alwaysReasons).
    static QJsonObject buildBody(const model::ChatRequest &request, const QString &modelId, bool reasonsAlways = false);
};

} // namespace sw::upstream
