#pragma once
// Canonical events -> Anthropic Messages SSE (event: + data: frames).

#include "core/formats/inbound_codec.h"

namespace sw::formats {

class AnthropicMessagesStreamEncoder final : public StreamEncoder {
public:
    explicit AnthropicMessagesStreamEncoder(const EncodeInfo &info) : m_info(info) {}
    QByteArray encode(const model::StreamEvent &event) override;
    QByteArray encodeError(const model::GatewayError &error) override;

private:
    QByteArray messageStartOnce(const model::Usage &usage);
    QByteArray openBlock(int contentIndex, const QJsonObject &contentBlock);
    QByteArray ensureOpen(int contentIndex, model::BlockType type);
    QByteArray closeBlock();
    QByteArray delta(const QJsonObject &delta);
    QByteArray openThenDelta(int contentIndex, model::BlockType type, const QJsonObject &payload);

    EncodeInfo m_info;
    bool m_started = false;
    bool m_finished = false;
    int m_openContentIndex = -1; // canonical index of the open block, -1 when none
    bool m_openHadDelta = false;
    int m_nextWireIndex = 0; // Anthropic's block index counts only blocks actually sent
};

} // namespace sw::formats
