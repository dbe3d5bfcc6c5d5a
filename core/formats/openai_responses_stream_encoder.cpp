#include "core/formats/openai_responses_stream_encoder.h"

#include "core/formats/openai_responses_codec.h"
#include "core/wire/json.h"
#include "core/wire/reasoning_item.h"
#include "core/wire/sse.h"

namespace sw::formats {

using namespace sw::model;

namespace {
QLatin1String L(const char *s) {
    return QLatin1String(s);
}

QJsonObject textPart(const QString &text) {
    return QJsonObject{{L("type"), L("output_text")}, {L("text"), text}, {L("annotations"), QJsonArray()}};
}
} // namespace

QByteArray OpenAIResponsesStreamEncoder::eventFrame(const char *type, QJsonObject payload) {
    payload.insert(L("type"), L(type));
    payload.insert(L("sequence_number"), m_sequence++);
    return wire::sseFrame(payload, type);
}

QByteArray OpenAIResponsesStreamEncoder::startOnce() {
    if (m_started)
        return {};
    m_started = true;
    const QJsonObject response =
        OpenAIResponsesCodec::responseJson(m_info, QStringLiteral("in_progress"), QJsonArray(), nullptr);
    QByteArray out = eventFrame("response.created", QJsonObject{{L("response"), response}});
    out += eventFrame("response.in_progress", QJsonObject{{L("response"), response}});
    return out;
}

QByteArray OpenAIResponsesStreamEncoder::openItem(int contentIndex, BlockType type, const ContentBlock &start) {
    QByteArray out = startOnce();
    if (m_open.contains(contentIndex))
        return out;
    Item item;
    item.outputIndex = m_nextOutputIndex++;
    item.type = type;
    item.block = start;
    item.block.type = type;
    item.block.text.clear(); // what was streamed is accumulated from the deltas
    item.block.argumentsJson.clear();
    const QString suffix = QStringLiteral("%1_%2").arg(m_info.responseId).arg(item.outputIndex);
    switch (type) {
    case BlockType::Text:
        item.id = L("msg_") + suffix;
        out += eventFrame("response.output_item.added",
                          QJsonObject{{L("output_index"), item.outputIndex},
                                      {L("item"), QJsonObject{{L("id"), item.id},
                                                              {L("type"), L("message")},
                                                              {L("status"), L("in_progress")},
                                                              {L("role"), L("assistant")},
                                                              {L("content"), QJsonArray()}}}});
        out += eventFrame("response.content_part.added", QJsonObject{{L("item_id"), item.id},
                                                                     {L("output_index"), item.outputIndex},
                                                                     {L("content_index"), 0},
                                                                     {L("part"), textPart(QString())}});
        break;
    case BlockType::Thinking:
        item.id = L("rs_") + suffix;
        out += eventFrame(
            "response.output_item.added",
            QJsonObject{{L("output_index"), item.outputIndex},
                        {L("item"),
                         QJsonObject{{L("id"), item.id}, {L("type"), L("reasoning")}, {L("summary"), QJsonArray()}}}});
        out +=
            eventFrame("response.reasoning_summary_part.added",
                       QJsonObject{{L("item_id"), item.id},
                                   {L("output_index"), item.outputIndex},
                                   {L("summary_index"), 0},
                                   {L("part"), QJsonObject{{L("type"), L("summary_text")}, {L("text"), QString()}}}});
        break;
    case BlockType::ToolCall:
        if (m_info.customTools.contains(start.toolName)) {
            // A free-form tool the client declared: its call goes back as the client's own item.
            item.custom = true;
            item.id = L("ctc_") + suffix;
            out += eventFrame("response.output_item.added",
                              QJsonObject{{L("output_index"), item.outputIndex},
                                          {L("item"), QJsonObject{{L("id"), item.id},
                                                                  {L("type"), L("custom_tool_call")},
                                                                  {L("status"), L("in_progress")},
                                                                  {L("call_id"), start.toolCallId},
                                                                  {L("name"), start.toolName},
                                                                  {L("input"), QString()}}}});
            break;
        }
        item.id = L("fc_") + suffix;
        out += eventFrame("response.output_item.added",
                          QJsonObject{{L("output_index"), item.outputIndex},
                                      {L("item"), QJsonObject{{L("id"), item.id},
                                                              {L("type"), L("function_call")},
                                                              {L("status"), L("in_progress")},
                                                              {L("arguments"), QString()},
                                                              {L("call_id"), start.toolCallId},
                                                              {L("name"), start.toolName}}}});
        break;
    case BlockType::Image:
        --m_nextOutputIndex;
        return out;
    }
    m_open.insert(contentIndex, item);
    return out;
}

QByteArray OpenAIResponsesStreamEncoder::closeItem(int contentIndex, const ContentBlock &end) {
    const auto it = m_open.find(contentIndex);
    if (it == m_open.end())
        return {};
    Item item = *it;
    m_open.erase(it);
    QByteArray out;
    const QJsonValue oi = item.outputIndex;
    switch (item.type) {
    case BlockType::Text: {
        const QString text = end.text.isEmpty() ? item.block.text : end.text;
        out += eventFrame(
            "response.output_text.done",
            QJsonObject{{L("item_id"), item.id}, {L("output_index"), oi}, {L("content_index"), 0}, {L("text"), text}});
        out += eventFrame("response.content_part.done", QJsonObject{{L("item_id"), item.id},
                                                                    {L("output_index"), oi},
                                                                    {L("content_index"), 0},
                                                                    {L("part"), textPart(text)}});
        const QJsonObject done{{L("id"), item.id},
                               {L("type"), L("message")},
                               {L("status"), L("completed")},
                               {L("role"), L("assistant")},
                               {L("content"), QJsonArray{textPart(text)}}};
        m_output.append(done);
        out += eventFrame("response.output_item.done", QJsonObject{{L("output_index"), oi}, {L("item"), done}});
        break;
    }
    case BlockType::Thinking: {
        ContentBlock block = end;
        if (block.text.isEmpty())
            block.text = item.block.text;
        out += eventFrame("response.reasoning_summary_text.done", QJsonObject{{L("item_id"), item.id},
                                                                              {L("output_index"), oi},
                                                                              {L("summary_index"), 0},
                                                                              {L("text"), block.text}});
        out +=
            eventFrame("response.reasoning_summary_part.done",
                       QJsonObject{{L("item_id"), item.id},
                                   {L("output_index"), oi},
                                   {L("summary_index"), 0},
                                   {L("part"), QJsonObject{{L("type"), L("summary_text")}, {L("text"), block.text}}}});
        const QJsonObject done = wire::responsesReasoningItem(block, item.id, m_info.upstreamApi);
        m_output.append(done);
        out += eventFrame("response.output_item.done", QJsonObject{{L("output_index"), oi}, {L("item"), done}});
        break;
    }
    case BlockType::ToolCall: {
        if (item.custom) {
            // The upstream streamed {"input": "…"} as JSON; the client gets the text, whole.
            ContentBlock call = end;
            if (call.argumentsJson.isEmpty() && call.arguments.isEmpty())
                call.argumentsJson = item.block.argumentsJson;
            const QString input = OpenAIResponsesCodec::customInput(call);
            out += eventFrame("response.custom_tool_call_input.delta",
                              QJsonObject{{L("item_id"), item.id}, {L("output_index"), oi}, {L("delta"), input}});
            out += eventFrame("response.custom_tool_call_input.done",
                              QJsonObject{{L("item_id"), item.id}, {L("output_index"), oi}, {L("input"), input}});
            const QJsonObject done{{L("id"), item.id},
                                   {L("type"), L("custom_tool_call")},
                                   {L("status"), L("completed")},
                                   {L("call_id"), end.toolCallId.isEmpty() ? item.block.toolCallId : end.toolCallId},
                                   {L("name"), end.toolName.isEmpty() ? item.block.toolName : end.toolName},
                                   {L("input"), input}};
            m_output.append(done);
            out += eventFrame("response.output_item.done", QJsonObject{{L("output_index"), oi}, {L("item"), done}});
            break;
        }
        QString args = item.block.argumentsJson;
        if (!item.argumentsStreamed) {
            // Arguments given whole (or none at all): one delta, so clients that only read deltas see them.
            args =
                end.argumentsJson.isEmpty() ? QString::fromUtf8(wire::compactJson(end.arguments)) : end.argumentsJson;
            out += eventFrame("response.function_call_arguments.delta",
                              QJsonObject{{L("item_id"), item.id}, {L("output_index"), oi}, {L("delta"), args}});
        }
        out += eventFrame("response.function_call_arguments.done",
                          QJsonObject{{L("item_id"), item.id}, {L("output_index"), oi}, {L("arguments"), args}});
        const QString callId = end.toolCallId.isEmpty() ? item.block.toolCallId : end.toolCallId;
        const QString name = end.toolName.isEmpty() ? item.block.toolName : end.toolName;
        const QJsonObject done{{L("id"), item.id},     {L("type"), L("function_call")}, {L("status"), L("completed")},
                               {L("arguments"), args}, {L("call_id"), callId},          {L("name"), name}};
        m_output.append(done);
        out += eventFrame("response.output_item.done", QJsonObject{{L("output_index"), oi}, {L("item"), done}});
        break;
    }
    case BlockType::Image:
        break;
    }
    return out;
}

QByteArray OpenAIResponsesStreamEncoder::closeAll() {
    QList<int> keys = m_open.keys();
    std::sort(keys.begin(), keys.end());
    QByteArray out;
    for (int k : keys)
        out += closeItem(k, ContentBlock());
    return out;
}

QByteArray OpenAIResponsesStreamEncoder::encode(const StreamEvent &event) {
    if (m_finished)
        return {};
    switch (event.type) {
    case EventType::Start:
        return startOnce();
    case EventType::TextStart:
        return openItem(event.contentIndex, BlockType::Text, event.block);
    case EventType::ThinkingStart:
        return openItem(event.contentIndex, BlockType::Thinking, event.block);
    case EventType::ToolCallStart:
        return openItem(event.contentIndex, BlockType::ToolCall, event.block);
    case EventType::TextDelta:
    case EventType::ThinkingDelta:
    case EventType::ToolCallDelta: {
        if (event.delta.isEmpty())
            return {};
        const BlockType type = event.type == EventType::TextDelta       ? BlockType::Text
                               : event.type == EventType::ThinkingDelta ? BlockType::Thinking
                                                                        : BlockType::ToolCall;
        QByteArray out = openItem(event.contentIndex, type, ContentBlock());
        Item &item = m_open[event.contentIndex];
        if (type == BlockType::Text) {
            item.block.text += event.delta;
            out += eventFrame("response.output_text.delta", QJsonObject{{L("item_id"), item.id},
                                                                        {L("output_index"), item.outputIndex},
                                                                        {L("content_index"), 0},
                                                                        {L("delta"), event.delta},
                                                                        {L("logprobs"), QJsonArray()}});
        } else if (type == BlockType::Thinking) {
            item.block.text += event.delta;
            out +=
                eventFrame("response.reasoning_summary_text.delta", QJsonObject{{L("item_id"), item.id},
                                                                                {L("output_index"), item.outputIndex},
                                                                                {L("summary_index"), 0},
                                                                                {L("delta"), event.delta}});
        } else if (item.custom) {
            item.block.argumentsJson += event.delta; // sent as text when the call ends
        } else {
            item.block.argumentsJson += event.delta;
            item.argumentsStreamed = true;
            out += eventFrame(
                "response.function_call_arguments.delta",
                QJsonObject{{L("item_id"), item.id}, {L("output_index"), item.outputIndex}, {L("delta"), event.delta}});
        }
        return out;
    }
    case EventType::TextEnd:
    case EventType::ThinkingEnd:
    case EventType::ToolCallEnd:
        return closeItem(event.contentIndex, event.block);
    case EventType::Image:
        return {};
    case EventType::Done: {
        QByteArray out = startOnce() + closeAll();
        m_finished = true;
        const auto [status, why] = OpenAIResponsesCodec::statusFor(event.reason);
        const QJsonObject response =
            OpenAIResponsesCodec::responseJson(m_info, status, m_output, &event.usage, nullptr, why);
        out += eventFrame(why.isEmpty() ? "response.completed" : "response.incomplete",
                          QJsonObject{{L("response"), response}});
        return out;
    }
    case EventType::Error: {
        const int status = event.errorStatus.value_or(500);
        return encodeError(GatewayError::make(status, GatewayError::categoryForStatus(status), event.errorMessage));
    }
    }
    return {};
}

QByteArray OpenAIResponsesStreamEncoder::encodeError(const GatewayError &error) {
    // `error` then `response.failed`; never response.completed after a failure.
    QByteArray out = startOnce();
    m_finished = true;
    out += eventFrame("error", QJsonObject{{L("code"), OpenAIResponsesCodec::errorCode(error)},
                                           {L("message"), error.message},
                                           {L("param"), QJsonValue()}});
    out += eventFrame("response.failed",
                      QJsonObject{{L("response"), OpenAIResponsesCodec::responseJson(m_info, QStringLiteral("failed"),
                                                                                     m_output, nullptr, &error)}});
    return out;
}

} // namespace sw::formats
