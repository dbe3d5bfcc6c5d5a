#pragma once
// Canonical events -> OpenAI chat.completion.chunk SSE frames.

#include "core/formats/inbound_codec.h"

#include <QHash>
#include <QSet>

namespace sw::formats {

class OpenAIChatStreamEncoder final : public StreamEncoder {
public:
    explicit OpenAIChatStreamEncoder(const EncodeInfo &info) : m_info(info) {}
    QByteArray encode(const model::StreamEvent &event) override;
    QByteArray encodeError(const model::GatewayError &error) override;

private:
    QByteArray chunk(const QJsonObject &delta, const QJsonValue &finishReason = QJsonValue::Null);
    QByteArray roleChunkOnce();

    EncodeInfo m_info;
    bool m_sentRole = false;
    bool m_finished = false;
    QHash<int, int> m_toolIndexByContentIndex;
    QSet<int> m_toolsWithArguments;                // content indexes whose arguments were streamed
    QHash<int, model::ContentBlock> m_customCalls; // calls of the client's custom tools, sent whole at their end
};

} // namespace sw::formats
