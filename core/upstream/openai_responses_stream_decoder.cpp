#include "core/upstream/openai_responses_stream_decoder.h"

#include "core/wire/json.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace sw::upstream {

using namespace sw::model;

namespace {

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

// `text` escaped as the inside of a JSON string (no quotes around it).
QString jsonStringBody(const QString &text) {
    const QByteArray quoted = QJsonDocument(QJsonArray{text}).toJson(QJsonDocument::Compact); // ["…"]
    return QString::fromUtf8(quoted.mid(2, quoted.size() - 4));
}

} // namespace

void OpenAIResponsesStreamDecoder::readUsage(const QJsonObject &usage) {
    if (usage.isEmpty())
        return;
    const qint64 input = usage.value(L("input_tokens")).toInteger();
    const qint64 cached = usage.value(L("input_tokens_details")).toObject().value(L("cached_tokens")).toInteger();
    Usage &u = m_out.usage();
    u.input = qMax<qint64>(0, input - cached);
    u.cacheRead = cached;
    u.cacheWrite = 0;
    u.output = usage.value(L("output_tokens")).toInteger();
}

void OpenAIResponsesStreamDecoder::fail(const QString &code, const QString &message) {
    m_out.fail(code.isEmpty() ? QStringLiteral("OpenAI Responses stream error: %1").arg(message)
                              : QStringLiteral("OpenAI Responses stream error (%1): %2").arg(code, message),
               code, wire::statusForOpenAIError(QJsonObject{{L("code"), code}}));
}

QList<StreamEvent> OpenAIResponsesStreamDecoder::feed(const SseEvent &sse) {
    const QByteArray raw = sse.data.trimmed();
    if (!m_out.finished() && !raw.isEmpty() && raw != "[DONE]")
        decode(sse, raw);
    return m_out.take();
}

QList<StreamEvent> OpenAIResponsesStreamDecoder::finish() {
    if (!m_out.finished() && !m_pendingErrorMessage.isEmpty())
        fail(m_pendingErrorCode, m_pendingErrorMessage);
    m_out.endOfBody();
    return m_out.take();
}

void OpenAIResponsesStreamDecoder::itemAdded(int oi, const QJsonObject &item) {
    const QString itemType = item.value(L("type")).toString();
    if (itemType == L("reasoning")) {
        m_out.open(oi, BlockType::Thinking).itemId = item.value(L("id")).toString();
    } else if (itemType == L("function_call") || itemType == L("custom_tool_call")) {
        m_sawToolCall = true;
        ContentBlock b;
        b.type = BlockType::ToolCall;
        b.custom = itemType == L("custom_tool_call");
        b.itemId = item.value(L("id")).toString();
        b.toolCallId = item.value(L("call_id")).toString();
        b.toolName = item.value(L("name")).toString();
        m_out.open(oi, b);
    }
    // a message item opens its block with its content part
}

void OpenAIResponsesStreamDecoder::itemDone(int oi, const QJsonObject &item) {
    const QString itemType = item.value(L("type")).toString();
    ContentBlock *open = m_out.find(oi);
    if (itemType == L("reasoning")) {
        ContentBlock &b = open ? *open : m_out.open(oi, BlockType::Thinking);
        b.type = BlockType::Thinking;
        if (b.text.isEmpty()) {
            QStringList summary;
            for (const QJsonValue &s : item.value(L("summary")).toArray())
                summary << s.toObject().value(L("text")).toString();
            b.text = summary.join(QStringLiteral("\n\n"));
        }
        // The whole item is kept as the signature: only this API can take it back.
        b.signature = QString::fromUtf8(wire::compactJson(item));
    } else if (itemType == L("function_call") && open) {
        if (open->argumentsJson.isEmpty())
            m_out.append(oi, item.value(L("arguments")).toString());
        if (open->toolCallId.isEmpty())
            open->toolCallId = item.value(L("call_id")).toString();
    } else if (itemType == L("custom_tool_call") && open) {
        m_out.append(oi, open->argumentsJson.isEmpty()
                             ? QString::fromUtf8(wire::compactJson(QJsonObject{{L("input"), item.value(L("input"))}}))
                             : QStringLiteral("\"}"));
    }
    m_out.close(oi);
}

void OpenAIResponsesStreamDecoder::completed(const QString &type, const QJsonObject &response) {
    readUsage(response.value(L("usage")).toObject());
    for (const QJsonValue &item : response.value(L("output")).toArray())
        m_sawToolCall |= item.toObject().value(L("type")).toString() == L("function_call") ||
                         item.toObject().value(L("type")).toString() == L("custom_tool_call");
    QJsonObject native;
    if (m_keepNative) {
        native = response; // the whole answer as the Responses API defines it
        if (response.value(L("output")).toArray().size() < m_doneItems.size()) {
            if (m_doneItemBytes > kMaxNativeChars) {
                native = {}; // too large to keep whole: the canonical answer is used
            } else {
                QJsonArray items;
                for (const QJsonObject &item : std::as_const(m_doneItems))
                    items.append(item);
                native.insert(L("output"), items);
            }
        }
    }
    const bool incomplete =
        type == L("response.incomplete") || response.value(L("status")).toString() == L("incomplete");
    const QString why = response.value(L("incomplete_details")).toObject().value(L("reason")).toString();
    StopReason reason = m_sawRefusal ? StopReason::Refusal : StopReason::Stop;
    if (incomplete && why == L("content_filter"))
        reason = StopReason::Refusal; // the filter answered: not an outage
    else if (incomplete)
        reason = StopReason::Length;
    else if (m_sawToolCall)
        reason = StopReason::ToolUse;
    m_out.done(reason, native);
}

void OpenAIResponsesStreamDecoder::decode(const SseEvent &sse, const QByteArray &raw) {
    const QJsonObject data = QJsonDocument::fromJson(raw).object();
    QString type = data.value(L("type")).toString();
    if (type.isEmpty())
        type = QString::fromUtf8(sse.event);
    if (type.isEmpty())
        return;

    if (type == L("error")) {
        // {type:error, code, message} (older servers nest it in "error")
        const QJsonObject err = data.value(L("error")).isObject() ? data.value(L("error")).toObject() : data;
        const QJsonValue code = err.value(L("code"));
        // response.failed follows: the error ends the stream there (or at the end of the body),
        // so a passthrough client gets both frames.
        m_pendingErrorCode = code.isString() ? code.toString() : err.value(L("type")).toString();
        m_pendingErrorMessage = err.value(L("message")).toString(QStringLiteral("unknown error"));
        return;
    }
    if (type == L("response.failed")) {
        const QJsonObject response = data.value(L("response")).toObject();
        readUsage(response.value(L("usage")).toObject());
        const QJsonObject err = response.value(L("error")).toObject();
        const QString message = err.value(L("message")).toString();
        if (message.isEmpty() && !m_pendingErrorMessage.isEmpty())
            fail(m_pendingErrorCode, m_pendingErrorMessage);
        else
            fail(err.value(L("code")).toString(m_pendingErrorCode),
                 message.isEmpty() ? QStringLiteral("the response failed") : message);
        return;
    }
    m_out.start(data.value(L("response")).toObject().value(L("id")).toString());
    const int oi = data.value(L("output_index")).toInt(-1);
    if (type == L("response.output_item.added")) {
        itemAdded(oi, data.value(L("item")).toObject());
    } else if (type == L("response.content_part.added")) {
        const QString partType = data.value(L("part")).toObject().value(L("type")).toString();
        m_sawRefusal |= partType == L("refusal");
        if (partType == L("output_text") || partType == L("refusal"))
            m_out.open(oi, BlockType::Text).itemId = data.value(L("item_id")).toString();
    } else if (type == L("response.output_text.delta") || type == L("response.refusal.delta") ||
               type == L("response.reasoning_summary_text.delta") || type == L("response.reasoning_text.delta") ||
               type == L("response.function_call_arguments.delta")) {
        const BlockType kind = type.startsWith(L("response.reasoning"))              ? BlockType::Thinking
                               : type == L("response.function_call_arguments.delta") ? BlockType::ToolCall
                                                                                     : BlockType::Text;
        m_sawRefusal |= type == L("response.refusal.delta");
        const QString delta = data.value(L("delta")).toString();
        if (!delta.isEmpty()) {
            m_out.open(oi, kind);
            m_out.append(oi, delta);
        }
    } else if (type == L("response.custom_tool_call_input.delta")) {
        // A custom tool's input is text; canonically it is the argument JSON {"input": "…"},
        // streamed as escaped fragments so the call commits and counts as it arrives.
        const QString piece = data.value(L("delta")).toString();
        const ContentBlock *open = m_out.find(oi);
        if (!piece.isEmpty() && open && open->custom)
            m_out.append(oi, (open->argumentsJson.isEmpty() ? QStringLiteral("{\"input\":\"") : QString()) +
                                 jsonStringBody(piece));
    } else if (type == L("response.reasoning_summary_part.added")) {
        const ContentBlock &b = m_out.open(oi, BlockType::Thinking);
        if (m_summaryParts[oi]++ > 0 && !b.text.isEmpty()) // parts of one summary, as paragraphs
            m_out.append(oi, QStringLiteral("\n\n"));
    } else if (type == L("response.content_part.done")) {
        m_out.close(oi);
    } else if (type == L("response.output_item.done")) {
        const QJsonObject item = data.value(L("item")).toObject();
        if (m_keepNative) {
            m_doneItemBytes += raw.size();
            if (m_doneItemBytes <= kMaxNativeChars)
                m_doneItems.insert(oi, item);
        }
        itemDone(oi, item);
    } else if (type == L("response.completed") || type == L("response.incomplete")) {
        completed(type, data.value(L("response")).toObject());
    }
    // created, in_progress, *.done texts, annotations, built-in tool progress: nothing to say
}

} // namespace sw::upstream
