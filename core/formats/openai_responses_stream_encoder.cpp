#include "core/formats/openai_responses_stream_encoder.h"
#include "core/wire/tool_call_id.h"

#include "core/formats/openai_responses_codec.h"
#include "core/wire/error_body.h"
#include "core/wire/json.h"
#include "core/wire/json_writer.h"
#include "core/wire/reasoning_item.h"

#include <algorithm>
#include <climits>

namespace sw::formats {

using namespace sw::model;

namespace {
QLatin1String L(const char *s) {
    return QLatin1String(s);
}

// A message's part: the answer's text, or the model's refusal in the part OpenAI gives it.
void writeTextPart(wire::JsonWriter &w, const QString &text, bool refusal = false) {
    if (refusal) {
        w.beginObject().field("type", "refusal").field("refusal", text).endObject();
        return;
    }
    w.beginObject()
        .field("type", "output_text")
        .field("text", text)
        .key("annotations")
        .beginArray()
        .endArray()
        .endObject();
}

void writeSummaryPart(wire::JsonWriter &w, const QString &text) {
    w.beginObject().field("type", "summary_text").field("text", text).endObject();
}
} // namespace

void OpenAIResponsesStreamEncoder::beginEvent(wire::JsonWriter &w, QLatin1String type) {
    w.beginSseEvent(QByteArrayView(type.data(), type.size()))
        .beginObject()
        .field("type", type)
        .field("sequence_number", m_sequence++);
}

void OpenAIResponsesStreamEncoder::endEvent(wire::JsonWriter &w) {
    w.endObject().endSseEvent();
}

void OpenAIResponsesStreamEncoder::itemDone(wire::JsonWriter &w, int outputIndex, const QByteArray &itemJson) {
    if (!m_output.isEmpty())
        m_output += ',';
    m_output += itemJson;
    beginEvent(w, L("response.output_item.done"));
    w.field("output_index", outputIndex).key("item").rawValue(itemJson);
    endEvent(w);
}

void OpenAIResponsesStreamEncoder::followPassthrough(QByteArrayView frame) {
    // The upstream wrote these frames: found by plain search, no parse, on every frame. A key's
    // text inside a string value would be escaped (\"), so the quoted key names the field.
    static const QByteArrayView seqKey("\"sequence_number\":");
    if (const qsizetype at = frame.indexOf(seqKey); at >= 0) {
        qsizetype i = at + seqKey.size();
        while (i < frame.size() && frame[i] == ' ')
            ++i;
        qint64 n = 0;
        qsizetype digits = 0;
        for (; i < frame.size() && frame[i] >= '0' && frame[i] <= '9' && digits < 12; ++i, ++digits)
            n = n * 10 + (frame[i] - '0');
        if (digits > 0)
            m_sequence = int(std::max<qint64>(m_sequence, std::min<qint64>(n + 1, INT_MAX)));
    }
    // The upstream's own `error` event went out: the failure the gateway writes when the stream
    // then ends (encodeError) is that one, and is not told twice.
    if (frame.startsWith(QByteArrayView("event: error\n")) ||
        frame.startsWith(QByteArrayView("data: {\"type\":\"error\"")) ||
        frame.startsWith(QByteArrayView("data: {\"type\": \"error\"")))
        m_errorRelayed = true;
    if (m_started || !frame.contains(QByteArrayView("\"response.created\"")))
        return;
    m_started = true; // the client has its response.created: never a second one
    static const QByteArrayView idKey("\"id\":");
    const qsizetype response = frame.indexOf(QByteArrayView("\"response\":"));
    const qsizetype at = response < 0 ? -1 : frame.indexOf(idKey, response);
    if (at < 0)
        return;
    qsizetype begin = at + idKey.size();
    while (begin < frame.size() && (frame[begin] == ' ' || frame[begin] == '\t'))
        ++begin; // JSON allows space after the colon (Python's json.dumps writes one)
    if (begin >= frame.size() || frame[begin] != '"')
        return;
    ++begin;
    const qsizetype end = frame.indexOf('"', begin);
    if (end > begin && end - begin <= 256)
        m_info.responseId = QString::fromUtf8(frame.sliced(begin, end - begin));
}

void OpenAIResponsesStreamEncoder::startOnce(wire::JsonWriter &w) {
    if (m_started)
        return;
    m_started = true;
    for (const char *type : {"response.created", "response.in_progress"}) {
        beginEvent(w, L(type));
        w.key("response");
        OpenAIResponsesCodec::beginResponse(w, m_info, L("in_progress"));
        OpenAIResponsesCodec::endResponse(w, nullptr);
        endEvent(w);
    }
}

void OpenAIResponsesStreamEncoder::reasoningItemAdded(wire::JsonWriter &w, int outputIndex, const QString &id) {
    beginEvent(w, L("response.output_item.added"));
    w.field("output_index", outputIndex)
        .key("item")
        .beginObject()
        .field("id", id)
        .field("type", "reasoning")
        .key("summary")
        .beginArray()
        .endArray()
        .endObject();
    endEvent(w);
}

void OpenAIResponsesStreamEncoder::openItem(wire::JsonWriter &w, int contentIndex, BlockType type,
                                            const ContentBlock &start) {
    startOnce(w);
    if (m_open.contains(contentIndex))
        return;
    Item item;
    item.outputIndex = m_nextOutputIndex++;
    item.type = type;
    item.block = start;
    item.block.type = type;
    item.block.text.clear(); // what was streamed is accumulated from the deltas
    item.block.argumentsJson.clear();
    const QString suffix = m_info.responseId + QLatin1Char('_') + QString::number(item.outputIndex);
    switch (type) {
    case BlockType::Text:
        item.id = L("msg_") + suffix;
        beginEvent(w, L("response.output_item.added"));
        w.field("output_index", item.outputIndex)
            .key("item")
            .beginObject()
            .field("id", item.id)
            .field("type", "message")
            .field("status", "in_progress")
            .field("role", "assistant")
            .key("content")
            .beginArray()
            .endArray()
            .endObject();
        endEvent(w);
        beginEvent(w, L("response.content_part.added"));
        w.field("item_id", item.id).field("output_index", item.outputIndex).field("content_index", 0).key("part");
        writeTextPart(w, QString(), start.refusal);
        endEvent(w);
        m_refused |= start.refusal;
        break;
    case BlockType::Thinking:
        item.id = L("rs_") + suffix;
        reasoningItemAdded(w, item.outputIndex, item.id);
        beginEvent(w, L("response.reasoning_summary_part.added"));
        w.field("item_id", item.id).field("output_index", item.outputIndex).field("summary_index", 0).key("part");
        writeSummaryPart(w, QString());
        endEvent(w);
        break;
    case BlockType::ToolCall:
        if (const auto carrier = model::functionCallCarrier(start, m_info.upstreamApi)) {
            // Google's signature for the call, in a reasoning item of its own just before it.
            const int oi = item.outputIndex;
            item.outputIndex = m_nextOutputIndex++;
            const QString id = L("rs_") + suffix + L("s");
            reasoningItemAdded(w, oi, id);
            wire::JsonWriter done(carrier->size() + 96);
            OpenAIResponsesCodec::writeCallSignatureCarrier(done, id, *carrier);
            itemDone(w, oi, done.take());
        }
        item.custom = m_info.customTools.contains(start.toolName);
        // A free-form tool the client declared: its call goes back as the client's own item.
        item.id = (item.custom ? L("ctc_") : L("fc_")) + suffix;
        beginEvent(w, L("response.output_item.added"));
        w.field("output_index", item.outputIndex)
            .key("item")
            .beginObject()
            .field("id", item.id)
            .field("type", item.custom ? L("custom_tool_call") : L("function_call"))
            .field("status", "in_progress")
            .field("call_id", wire::clientToolCallId(start.toolCallId, wire::kResponsesMaxCallIdLength))
            .field("name", start.toolName)
            .field(item.custom ? L("input") : L("arguments"), QString())
            .endObject();
        endEvent(w);
        break;
    case BlockType::Image:
    case BlockType::Document:
        --m_nextOutputIndex;
        return;
    }
    m_open.insert(contentIndex, item);
}

void OpenAIResponsesStreamEncoder::closeItem(wire::JsonWriter &w, int contentIndex, const ContentBlock &end) {
    const auto it = m_open.find(contentIndex);
    if (it == m_open.end())
        return;
    Item item = *it;
    m_open.erase(it);
    flushPendingCall(w, L("completed")); // the item before this one was whole
    const int oi = item.outputIndex;
    switch (item.type) {
    case BlockType::Text: {
        const QString text = end.text.isEmpty() ? item.block.text : end.text;
        const bool refusal = item.block.refusal;
        beginEvent(w, refusal ? L("response.refusal.done") : L("response.output_text.done"));
        w.field("item_id", item.id)
            .field("output_index", oi)
            .field("content_index", 0)
            .field(refusal ? L("refusal") : L("text"), text);
        endEvent(w);
        beginEvent(w, L("response.content_part.done"));
        w.field("item_id", item.id).field("output_index", oi).field("content_index", 0).key("part");
        writeTextPart(w, text, refusal);
        endEvent(w);
        PendingCall message{oi, item.id, QString(), QString(), text};
        message.message = true;
        message.refusal = refusal;
        m_pendingCall = std::move(message);
        break;
    }
    case BlockType::Thinking: {
        ContentBlock block = end;
        if (block.text.isEmpty())
            block.text = item.block.text;
        beginEvent(w, L("response.reasoning_summary_text.done"));
        w.field("item_id", item.id).field("output_index", oi).field("summary_index", 0).field("text", block.text);
        endEvent(w);
        beginEvent(w, L("response.reasoning_summary_part.done"));
        w.field("item_id", item.id).field("output_index", oi).field("summary_index", 0).key("part");
        writeSummaryPart(w, block.text);
        endEvent(w);
        wire::JsonWriter done(block.text.size() * 2 + block.signature.size() + 160);
        wire::writeResponsesReasoningItem(done, block, item.id, m_info.upstreamApi);
        itemDone(w, oi, done.take());
        break;
    }
    case BlockType::ToolCall: {
        const QString callId = wire::clientToolCallId(end.toolCallId.isEmpty() ? item.block.toolCallId : end.toolCallId,
                                                      wire::kResponsesMaxCallIdLength);
        const QString &name = end.toolName.isEmpty() ? item.block.toolName : end.toolName;
        if (item.custom) {
            // The upstream streamed {"input": "…"} as JSON; the client gets the text, whole.
            ContentBlock call = end;
            if (call.argumentsJson.isEmpty() && call.arguments.isEmpty())
                call.argumentsJson = item.block.argumentsJson;
            const QString input = OpenAIResponsesCodec::customInput(call);
            beginEvent(w, L("response.custom_tool_call_input.delta"));
            w.field("item_id", item.id).field("output_index", oi).field("delta", input);
            endEvent(w);
            beginEvent(w, L("response.custom_tool_call_input.done"));
            w.field("item_id", item.id).field("output_index", oi).field("input", input);
            endEvent(w);
            m_pendingCall = PendingCall{oi, item.id, callId, name, input, true};
            break;
        }
        QString args = item.block.argumentsJson;
        if (!item.argumentsStreamed) {
            // Arguments given whole (or none at all): one delta, so clients that only read deltas see them.
            args =
                end.argumentsJson.isEmpty() ? QString::fromUtf8(wire::compactJson(end.arguments)) : end.argumentsJson;
            beginEvent(w, L("response.function_call_arguments.delta"));
            w.field("item_id", item.id).field("output_index", oi).field("delta", args);
            endEvent(w);
        }
        beginEvent(w, L("response.function_call_arguments.done"));
        w.field("item_id", item.id).field("output_index", oi).field("arguments", args);
        endEvent(w);
        m_pendingCall = PendingCall{oi, item.id, callId, name, args, false};
        break;
    }
    case BlockType::Image:
    case BlockType::Document:
        break;
    }
}

void OpenAIResponsesStreamEncoder::flushPendingCall(wire::JsonWriter &w, QLatin1String status) {
    if (!m_pendingCall)
        return;
    const PendingCall call = *std::exchange(m_pendingCall, std::nullopt);
    wire::JsonWriter done(call.value.size() * 2 + 192);
    if (call.message) {
        done.beginObject()
            .field("id", call.id)
            .field("type", "message")
            .field("status", status)
            .field("role", "assistant")
            .key("content")
            .beginArray();
        writeTextPart(done, call.value, call.refusal);
        done.endArray().endObject();
        return itemDone(w, call.outputIndex, done.take());
    }
    done.beginObject()
        .field("id", call.id)
        .field("type", call.custom ? L("custom_tool_call") : L("function_call"))
        .field("status", status)
        .field("call_id", call.callId)
        .field("name", call.name)
        .field(call.custom ? L("input") : L("arguments"), call.value)
        .endObject();
    itemDone(w, call.outputIndex, done.take());
}

void OpenAIResponsesStreamEncoder::closeAll(wire::JsonWriter &w) {
    QList<int> keys = m_open.keys();
    std::sort(keys.begin(), keys.end());
    for (int k : keys)
        closeItem(w, k, ContentBlock());
}

qsizetype OpenAIResponsesStreamEncoder::roomFor(const StreamEvent &event) const {
    // The closing events repeat what was streamed: a text's done events twice and its item once
    // more, the response's output again at the end. Written into a buffer of that size, a long
    // answer's end is not copied over and over as the buffer doubles (and never holds up to
    // twice what it needs): one MB of UTF-16 is a MB and a bit of UTF-8 when it is code or prose.
    const auto utf8 = [](qsizetype units) { return units + units / 8; };
    const auto streamed = [&](const Item &item) {
        return utf8(std::max(item.block.text.size(), item.block.argumentsJson.size()));
    };
    qsizetype room = event.delta.size() + 512;
    if (m_pendingCall)
        room += 2 * utf8(m_pendingCall->value.size());
    switch (event.type) {
    case EventType::TextEnd:
    case EventType::ThinkingEnd:
    case EventType::ToolCallEnd:
        if (const auto it = m_open.constFind(event.contentIndex); it != m_open.cend())
            room +=
                2 * std::max(streamed(*it), utf8(std::max(event.block.text.size(), event.block.argumentsJson.size())));
        break;
    case EventType::Done:
        room += m_output.size();
        for (const Item &item : m_open)
            room += 3 * streamed(item);
        break;
    default:
        break;
    }
    return room;
}

QByteArray OpenAIResponsesStreamEncoder::encode(const StreamEvent &event) {
    if (m_finished)
        return {};
    wire::JsonWriter w(roomFor(event));
    // More content came after the held call: it was whole. (Done says how it ended; an empty
    // delta or an image, which these items do not carry, says nothing.)
    const bool delta = event.type == EventType::TextDelta || event.type == EventType::ThinkingDelta ||
                       event.type == EventType::ToolCallDelta;
    if (event.type != EventType::Done && event.type != EventType::Error && event.type != EventType::Image &&
        !(delta && event.delta.isEmpty()))
        flushPendingCall(w, L("completed"));
    switch (event.type) {
    case EventType::Start:
        startOnce(w);
        break;
    case EventType::TextStart:
        openItem(w, event.contentIndex, BlockType::Text, event.block);
        break;
    case EventType::ThinkingStart:
        openItem(w, event.contentIndex, BlockType::Thinking, event.block);
        break;
    case EventType::ToolCallStart:
        openItem(w, event.contentIndex, BlockType::ToolCall, event.block);
        break;
    case EventType::TextDelta:
    case EventType::ThinkingDelta:
    case EventType::ToolCallDelta: {
        if (event.delta.isEmpty())
            return {};
        const BlockType type = event.type == EventType::TextDelta       ? BlockType::Text
                               : event.type == EventType::ThinkingDelta ? BlockType::Thinking
                                                                        : BlockType::ToolCall;
        openItem(w, event.contentIndex, type, ContentBlock());
        Item &item = m_open[event.contentIndex];
        if (type == BlockType::Text) {
            // The model's refusal streams in its own events, which carry no logprobs.
            const bool refusal = item.block.refusal;
            item.block.text += event.delta;
            beginEvent(w, refusal ? L("response.refusal.delta") : L("response.output_text.delta"));
            w.field("item_id", item.id)
                .field("output_index", item.outputIndex)
                .field("content_index", 0)
                .field("delta", event.delta);
            if (!refusal)
                w.key("logprobs").beginArray().endArray();
            endEvent(w);
        } else if (type == BlockType::Thinking) {
            item.block.text += event.delta;
            beginEvent(w, L("response.reasoning_summary_text.delta"));
            w.field("item_id", item.id)
                .field("output_index", item.outputIndex)
                .field("summary_index", 0)
                .field("delta", event.delta);
            endEvent(w);
        } else if (item.custom) {
            item.block.argumentsJson += event.delta; // sent as text when the call ends
        } else {
            item.block.argumentsJson += event.delta;
            item.argumentsStreamed = true;
            beginEvent(w, L("response.function_call_arguments.delta"));
            w.field("item_id", item.id).field("output_index", item.outputIndex).field("delta", event.delta);
            endEvent(w);
        }
        break;
    }
    case EventType::TextEnd:
    case EventType::ThinkingEnd:
    case EventType::ToolCallEnd:
        closeItem(w, event.contentIndex, event.block);
        break;
    case EventType::Image:
        return {};
    case EventType::Done: {
        startOnce(w);
        closeAll(w);
        m_finished = true;
        // The last item, when the answer stopped at its token cap, is the one the cap cut. A
        // refusal in its own part is a completed answer, as OpenAI ends it.
        const StopReason reason = m_refused ? StopReason::Stop : event.reason;
        flushPendingCall(w, OpenAIResponsesCodec::lastItemStatusFor(reason));
        const auto [status, why] = OpenAIResponsesCodec::statusFor(reason);
        beginEvent(w, why.isEmpty() ? L("response.completed") : L("response.incomplete"));
        w.key("response");
        OpenAIResponsesCodec::beginResponse(w, m_info, status, nullptr, why);
        w.appendRaw(m_output);
        OpenAIResponsesCodec::endResponse(w, &event.usage);
        endEvent(w);
        break;
    }
    case EventType::Error: {
        const int status = event.errorStatus.value_or(500);
        return encodeError(GatewayError::make(status, GatewayError::categoryForStatus(status), event.errorMessage));
    }
    }
    return w.take();
}

QByteArray OpenAIResponsesStreamEncoder::encodeError(const GatewayError &error) {
    // `error` then `response.failed`; never response.completed after a failure. After the upstream's
    // own `error` (passthrough), only response.failed: one failure, told once.
    wire::JsonWriter w(1024 + m_output.size());
    startOnce(w);
    flushPendingCall(w, L("completed")); // as before the error came: the error says the rest
    m_finished = true;
    if (!m_errorRelayed) {
        beginEvent(w, L("error"));
        w.field("code", OpenAIResponsesCodec::errorCode(error)).field("message", error.message).key("param").null();
        if (error.shouldRetry == false) // as OpenAIChatCodec::writeError's in band
            w.field(wire::kShouldRetryMember, false);
        endEvent(w);
    }
    beginEvent(w, L("response.failed"));
    w.key("response");
    OpenAIResponsesCodec::beginResponse(w, m_info, L("failed"), &error);
    w.appendRaw(m_output);
    OpenAIResponsesCodec::endResponse(w, nullptr);
    endEvent(w);
    return w.take();
}

} // namespace sw::formats
