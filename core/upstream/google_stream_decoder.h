#pragma once
// Google Generative AI streamGenerateContent SSE -> canonical events.

#include "upstream/upstream_adapter.h"

namespace sw::upstream {

class GoogleStreamDecoder final : public StreamDecoder {
public:
    QList<model::StreamEvent> feed(const SseEvent &event) override;
    QList<model::StreamEvent> finish() override;

private:
    // Google streams parts with no block boundaries: a part of another kind closes the open block.
    void closeBlock(QList<model::StreamEvent> &out);
    model::StreamEvent terminalEvent();

    std::optional<std::pair<int, model::ContentBlock>> m_open; // content index, block
    int m_nextContentIndex = 0;
    int m_toolCalls = 0;
    model::Usage m_usage;
    QString m_finishReason;
    bool m_started = false;
    bool m_terminal = false;
};

} // namespace sw::upstream
