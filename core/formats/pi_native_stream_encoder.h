#pragma once
// Canonical events -> pi AssistantMessageEvent JSON, one `data:` frame each, ended by `data: [DONE]`.

#include "core/formats/inbound_codec.h"
#include "core/model/event_accumulator.h"

#include <QHash>

namespace sw::wire {
class JsonWriter;
}

namespace sw::formats {

class PiNativeStreamEncoder final : public StreamEncoder {
public:
    explicit PiNativeStreamEncoder(const EncodeInfo &info) : m_info(info) {}
    QByteArray encode(const model::StreamEvent &event) override;
    QByteArray encodeError(const model::GatewayError &error) override;

private:
    void startOnce(wire::JsonWriter &w);
    // The `error` event that ends a failed stream (or a refusal): the message so far, as an error.
    void writeFailure(wire::JsonWriter &w, model::AssistantMessage message, const QString &errorMessage);
    int position(int contentIndex); // pi's contentIndex: the block's place in message.content

    EncodeInfo m_info;
    model::EventAccumulator m_accumulator;
    QHash<int, int> m_positionByIndex;
    QHash<int, model::ToolArgumentsGate> m_argumentsGates; // by contentIndex: a call's arguments are an object
    bool m_started = false;
    bool m_finished = false;
};

} // namespace sw::formats
