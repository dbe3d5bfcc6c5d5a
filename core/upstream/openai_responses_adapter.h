#pragma once
// Upstream API "openai-responses": POST {baseUrl}/responses (baseUrl includes /v1), streaming.

#include "upstream/upstream_adapter.h"

namespace sw::upstream {

class OpenAIResponsesAdapter final : public UpstreamAdapter {
public:
    static constexpr const char *kApi = "openai-responses";

    QString api() const override { return QString::fromLatin1(kApi); }
    HttpRequest buildRequest(const formats::ParsedRequest &request, formats::InboundFormat inbound,
                             const Target &target, const HeaderList &forwardHeaders) const override;
    std::unique_ptr<StreamDecoder> makeDecoder(const Target &target) const override;
    UpstreamErrorInfo parseError(int status, const QByteArray &body) const override;

    // The Responses body for a request that came in another format (see formats/translation_rules.md).
    static QJsonObject buildBody(const formats::ParsedRequest &request, const QString &modelId);
};

} // namespace sw::upstream
