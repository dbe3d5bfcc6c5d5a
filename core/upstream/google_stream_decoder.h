#pragma once
// Google Generative AI streamGenerateContent SSE -> canonical events.

#include "core/upstream/canonical_stream_builder.h"
#include "core/upstream/upstream_adapter.h"

#include <rapidjson/fwd.h>

namespace sw::upstream {

class GoogleStreamDecoder final : public StreamDecoder {
public:
    // Google's answer is never rebuilt in its own shape (no client speaks it): the decoder
    // keeps nothing for it whatever it is told.
    QList<model::StreamEvent> feed(const SseEvent &event) override;
    QList<model::StreamEvent> finish() override;
    void setKeepsText(bool keeps) override { m_out.setKeepsText(keeps); }
    model::Usage usage() const override { return m_out.usage(); }
    bool endSeen() const override { return !m_finishReason.isEmpty(); }
    bool lastWasUsageOnly() const override { return m_lastUsageOnly; }

private:
    // Google streams parts with no block boundaries: text and thought share one open block
    // (kProse), a part of the other kind closes it. A function call is a whole block (kCall).
    static constexpr int kProse = 0;
    static constexpr int kCall = 1;
    void decode(const SseEvent &event);
    void functionCall(const rapidjson::Value *call, const QString &signature);
    void end();

    CanonicalStreamBuilder m_out;
    int m_toolCalls = 0;
    QString m_finishReason;
    bool m_promptBlocked = false; // m_finishReason is promptFeedback.blockReason
    bool m_lastUsageOnly = false; // a chunk of usageMetadata alone, no candidate
};

} // namespace sw::upstream
