#pragma once
// Canonical events -> OpenAI Responses SSE (event: + data: frames with sequence_number).

#include "core/formats/inbound_codec.h"

#include <QHash>
#include <QJsonArray>

namespace sw::formats {

class OpenAIResponsesStreamEncoder final : public StreamEncoder {
public:
    explicit OpenAIResponsesStreamEncoder(const EncodeInfo &info) : m_info(info) {}
    QByteArray encode(const model::StreamEvent &event) override;
    QByteArray encodeError(const model::GatewayError &error) override;

private:
    struct Item {
        int outputIndex = -1;
        QString id;
        model::BlockType type = model::BlockType::Text;
        model::ContentBlock block; // what was streamed so far
        bool argumentsStreamed = false;
        bool custom = false; // a call of a client `custom` tool: a custom_tool_call item
    };
    QByteArray eventFrame(const char *type, QJsonObject payload);
    QByteArray startOnce();
    QByteArray openItem(int contentIndex, model::BlockType type, const model::ContentBlock &start);
    QByteArray closeItem(int contentIndex, const model::ContentBlock &end);
    QByteArray closeAll();

    EncodeInfo m_info;
    int m_sequence = 0;
    bool m_started = false;
    bool m_finished = false;
    QHash<int, Item> m_open; // by canonical content index
    QJsonArray m_output;     // finished output items, in order
    int m_nextOutputIndex = 0;
};

} // namespace sw::formats
