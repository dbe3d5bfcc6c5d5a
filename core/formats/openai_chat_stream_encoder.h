#pragma once
// Canonical events -> OpenAI chat.completion.chunk SSE frames.

#include "core/formats/inbound_codec.h"

#include <QHash>
#include <QSet>

namespace sw::wire {
class JsonWriter;
}

namespace sw::formats {

class OpenAIChatStreamEncoder final : public StreamEncoder {
public:
    explicit OpenAIChatStreamEncoder(const EncodeInfo &info) : m_info(info) {}
    QByteArray encode(const model::StreamEvent &event) override;
    QByteArray encodeError(const model::GatewayError &error) override;
    void followPassthrough(QByteArrayView frame) override {
        m_relayedDone = m_relayedDone || frame.startsWith(QByteArrayView("data: [DONE]"));
    }
    QByteArray endPassthrough() override { return m_relayedDone ? QByteArray() : QByteArray("data: [DONE]\n\n"); }

private:
    bool m_relayedDone = false;
    // One chat.completion.chunk frame: beginChunk writes up to the delta's opening brace,
    // the caller the delta's fields, endChunk the rest (finish_reason null when empty).
    void beginChunk(wire::JsonWriter &w) const;
    // The frame's envelope up to the opened "choices" array, shared with the usage chunk
    // (whose choices are empty).
    void beginEnvelope(wire::JsonWriter &w) const;
    static void endChunk(wire::JsonWriter &w, QLatin1String finishReason = {});
    // A chunk carrying (a piece of) function-call arguments for tool call `toolIndex`.
    void argumentsChunk(wire::JsonWriter &w, int toolIndex, const QString &arguments) const;
    void roleChunkOnce(wire::JsonWriter &w);

    EncodeInfo m_info;
    bool m_sentRole = false;
    bool m_finished = false;
    QHash<int, int> m_toolIndexByContentIndex;
    QSet<int> m_toolsWithArguments;                // content indexes whose arguments were streamed
    QSet<int> m_refusalBlocks;                     // content indexes of refusal text (delta.refusal)
    QHash<int, model::ContentBlock> m_customCalls; // calls of the client's custom tools, sent whole at their end
};

} // namespace sw::formats
