#include "core/upstream/openai_responses_stream_decoder.h"

#include "core/wire/echoed_identifier.h"
#include "core/wire/error_body.h"
#include "core/wire/rapid_json.h"
#include "core/wire/tool_call_id.h"

#include <QJsonArray>
#include <QJsonDocument>

namespace sw::upstream {

using namespace sw::model;
using wire::rj::equals;
using wire::rj::member;
using wire::rj::toString;
using wire::rj::Value;
namespace rj = wire::rj;

namespace {

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

// An output item's id, call_id and name (a function_call's, a custom_tool_call's, any other
// call's) may be echoed: a same-API stream relays the item as it is, and the client's next turn
// sends it back.
bool itemNamesAreEchoable(const Value *item) {
    return wire::membersAreEchoable(item, "id", "call_id", "name");
}

// The same for an event's own item (output_item.added, .done), the item its deltas name
// (item_id, and name on function_call_arguments.done), and the items a response lists
// (response.completed's output, in full).
bool toolCallsAreEchoable(const Value *data, const Value *response) {
    if (!wire::membersAreEchoable(data, "item_id", "name") || !itemNamesAreEchoable(member(data, "item")))
        return false;
    if (const Value *output = rj::asArray(member(response, "output")))
        for (const Value &item : output->GetArray())
            if (!itemNamesAreEchoable(&item))
                return false;
    return true;
}

} // namespace

void OpenAIResponsesStreamDecoder::readUsage(const Value *usage) {
    if (rj::isEmptyObject(usage))
        return;
    // A count no upstream could mean (negative, past 2^32) is unknown, never passed on or billed.
    const auto count = [](const Value *v) { return model::saneTokens(rj::toInteger(v)); };
    const qint64 input = count(member(usage, "input_tokens"));
    const qint64 cached = count(member(member(usage, "input_tokens_details"), "cached_tokens"));
    Usage &u = m_out.usage();
    u.input = qMax<qint64>(0, input - cached);
    u.cacheRead = cached;
    u.cacheWrite = 0;
    u.output = count(member(usage, "output_tokens"));
    u.reasoning = count(member(member(usage, "output_tokens_details"), "reasoning_tokens"));
}

void OpenAIResponsesStreamDecoder::fail(const QString &code, const QString &message) {
    m_out.fail(wire::inBandErrorText(QLatin1String("OpenAI Responses stream error"), code, message), code,
               wire::statusForOpenAIError(QJsonObject{{L("code"), code}}), StopReason::Error, {}, m_pendingErrorFinal);
}

QList<StreamEvent> OpenAIResponsesStreamDecoder::feed(const SseEvent &sse) {
    const QByteArray raw = sse.data.trimmed();
    m_lastUnreadable = false;
    m_lastRelayData.clear();
    m_lastEventName = raw.isEmpty() || raw == "[DONE]" ? relayEventName({}, sse.event) : std::nullopt;
    if (!m_out.finished() && !raw.isEmpty() && raw != "[DONE]")
        decode(sse, raw);
    return m_out.take();
}

QList<StreamEvent> OpenAIResponsesStreamDecoder::finish() {
    // An error event with no response.failed after it: still the upstream's own error, typed
    // (an untyped error at the end of the body is read as the connection cutting it short).
    if (!m_out.finished() && !m_pendingErrorMessage.isEmpty())
        fail(m_pendingErrorCode.isEmpty() ? QStringLiteral("error") : m_pendingErrorCode, m_pendingErrorMessage);
    m_out.endOfBody();
    return m_out.take();
}

QJsonObject OpenAIResponsesStreamDecoder::withMadeUpCallId(QJsonObject item, int outputIndex) const {
    const QString type = item.value(L("type")).toString();
    if (type != L("function_call") && type != L("custom_tool_call"))
        return item;
    const QString itemId = item.value(L("id")).toString();
    const QString madeUp = !itemId.isEmpty() ? m_madeUpCallIdsByItem.value(itemId) : m_madeUpCallIds.value(outputIndex);
    if (!madeUp.isEmpty())
        item.insert(L("call_id"), madeUp);
    return item;
}

QJsonArray OpenAIResponsesStreamDecoder::withMadeUpCallIds(QJsonArray output) const {
    for (qsizetype i = 0; i < output.size(); ++i)
        output.replace(i, withMadeUpCallId(output.at(i).toObject(), int(i)));
    return output;
}

QByteArray OpenAIResponsesStreamDecoder::withMadeUpCallIds(const QByteArray &raw, int outputIndex) const {
    QJsonObject data = QJsonDocument::fromJson(raw).object();
    const QJsonValue item = data.value(L("item"));
    QJsonObject response = data.value(L("response")).toObject();
    if (item.isObject()) {
        const QJsonObject relayed = withMadeUpCallId(item.toObject(), outputIndex);
        if (relayed == item.toObject())
            return {};
        data.insert(L("item"), relayed);
    } else if (response.value(L("output")).isArray()) {
        response.insert(L("output"), withMadeUpCallIds(response.value(L("output")).toArray()));
        data.insert(L("response"), response);
    } else {
        return {};
    }
    return QJsonDocument(data).toJson(QJsonDocument::Compact);
}

void OpenAIResponsesStreamDecoder::itemAdded(int oi, const Value *item) {
    const Value *itemType = member(item, "type");
    if (equals(itemType, "reasoning")) {
        m_out.open(oi, BlockType::Thinking).itemId = toString(member(item, "id"));
    } else if (equals(itemType, "function_call") || equals(itemType, "custom_tool_call")) {
        m_sawToolCall = true;
        ContentBlock b;
        b.type = BlockType::ToolCall;
        b.custom = equals(itemType, "custom_tool_call");
        b.itemId = toString(member(item, "id"));
        b.toolCallId = toString(member(item, "call_id"));
        b.toolName = toString(member(item, "name"));
        // A Responses-compatible server that names its calls by none (`"call_id": ""`, Gemini
        // behind a Responses shim): an id made up here, the one every client is told (a relayed
        // event and the same-API JSON answer too), so each call pairs with its own output.
        // One an earlier call of this answer has (DeepSeek, GLM, Kimi behind a Responses shim give
        // parallel calls one id; OpenAI refuses the repeat in the next turn): the next free one, told
        // the same way (probe JV M4).
        QString told;
        if (b.toolCallId.isEmpty())
            told = wire::madeUpToolCallId();
        else if (m_callIds.contains(b.toolCallId))
            told = wire::uniqueToolId(b.toolCallId, m_callIds, wire::kResponsesMaxCallIdLength, m_callIdSuffixes);
        if (!told.isEmpty()) {
            b.toolCallId = told;
            m_madeUpCallIds.insert(oi, told);
            if (!b.itemId.isEmpty())
                m_madeUpCallIdsByItem.insert(b.itemId, told);
        }
        m_callIds.insert(b.toolCallId);
        m_out.open(oi, b);
    }
    // a message item opens its block with its content part
}

void OpenAIResponsesStreamDecoder::itemDone(int oi, const Value *item) {
    const Value *itemType = member(item, "type");
    ContentBlock *open = m_out.find(oi);
    if (equals(itemType, "reasoning")) {
        ContentBlock &b = open ? *open : m_out.open(oi, BlockType::Thinking);
        b.type = BlockType::Thinking;
        if (!m_out.hasText(oi)) {
            QStringList summary;
            if (const Value *parts = rj::asArray(member(item, "summary")))
                for (const Value &s : parts->GetArray())
                    summary << toString(member(&s, "text"));
            b.text = summary.join(QStringLiteral("\n\n"));
        }
        // The whole item is kept as the signature: only this API can take it back.
        b.signature = QString::fromUtf8(rj::compact(*item));
    } else if (equals(itemType, "message") && !m_textSaid.contains(oi)) {
        // Text that never streamed as deltas (a server that sends the finished item alone; LiteLLM's
        // fake stream for a model that cannot stream sends the whole response.completed alone): the
        // item's own. Lost, the client was told of an empty answer that finished normally, and no
        // other candidate was asked (probe AC1-F2). A block its content part opened takes it.
        for (const Value &part : rj::elements(member(item, "content"))) {
            const bool refusal = equals(member(&part, "type"), "refusal");
            if (!refusal && !equals(member(&part, "type"), "output_text"))
                continue;
            m_sawRefusal |= refusal;
            const QString said = toString(member(&part, refusal ? "refusal" : "text"));
            if (said.isEmpty())
                continue; // no empty block: Messages refuses one in a later turn
            ContentBlock text;
            text.refusal = refusal;
            text.itemId = toString(member(item, "id"));
            m_out.open(oi, text);
            m_out.append(oi, said);
            m_out.close(oi);
        }
    } else if (equals(itemType, "function_call") && open) {
        if (!m_out.hasText(oi)) // arguments not streamed (the builder may keep none of them)
            m_out.append(oi, toString(member(item, "arguments")));
    } else if (equals(itemType, "custom_tool_call") && open) {
        QByteArray arguments;
        if (!m_out.hasText(oi)) {
            // {"input": …} with the item's input as sent (nothing when it has none)
            arguments = "{";
            if (const Value *input = member(item, "input")) {
                arguments += "\"input\":";
                rj::appendCompact(arguments, *input);
            }
            arguments += '}';
        } else {
            arguments = "\"}";
        }
        m_out.append(oi, QString::fromUtf8(arguments));
    }
    m_out.close(oi);
}

void OpenAIResponsesStreamDecoder::completed(std::string_view type, const Value *response) {
    readUsage(member(response, "usage"));
    const Value *output = rj::asArray(member(response, "output"));
    // Output items no event announced (LiteLLM's fake stream: this event alone) are read here as
    // their events would have said them. None when an event named its item by no index or no id:
    // which items it streamed cannot be told, and read again their text would be said twice.
    if (output && !m_streamedUnknown)
        for (rapidjson::SizeType i = 0; i < output->Size(); ++i) {
            const Value &item = (*output)[i];
            const QString id = toString(member(&item, "id"));
            // An item with no id after items that streamed may be one of them, at another place.
            if (m_announced.contains(int(i)) || (!id.isEmpty() && m_announcedIds.contains(qHash(id))) ||
                (id.isEmpty() && !m_announced.isEmpty()))
                continue;
            itemAdded(int(i), &item);
            itemDone(int(i), &item);
        }
    if (output)
        for (const Value &item : output->GetArray())
            m_sawToolCall |=
                equals(member(&item, "type"), "function_call") || equals(member(&item, "type"), "custom_tool_call");
    QJsonObject native;
    if (m_keepNative) {
        native = rj::toQtObject(response); // the whole answer as the Responses API defines it
        if (rj::arraySize(output) < m_doneItems.size()) {
            if (m_doneItemBytes > kMaxNativeChars) {
                native = {}; // too large to keep whole: the canonical answer is used
            } else {
                QJsonArray items;
                for (const QJsonObject &item : std::as_const(m_doneItems))
                    items.append(item);
                native.insert(L("output"), items);
            }
        }
        if (!m_madeUpCallIds.isEmpty() && native.value(L("output")).isArray())
            native.insert(L("output"), withMadeUpCallIds(native.value(L("output")).toArray()));
    }
    const bool incomplete = type == "response.incomplete" || equals(member(response, "status"), "incomplete");
    const bool filtered = equals(member(member(response, "incomplete_details"), "reason"), "content_filter");
    StopReason reason = m_sawRefusal ? StopReason::Refusal : StopReason::Stop;
    if (incomplete && filtered)
        reason = StopReason::Refusal; // the filter answered: not an outage
    else if (incomplete)
        reason = StopReason::Length;
    else if (m_sawToolCall)
        reason = StopReason::ToolUse;
    if (reason == StopReason::Refusal)
        return m_out.refuse(incomplete && filtered
                                ? QStringLiteral("OpenAI's filter stopped the answer (incomplete_details.reason "
                                                 "content_filter)")
                                : QStringLiteral("The model refused to answer"),
                            native);
    m_out.done(reason, native);
}

void OpenAIResponsesStreamDecoder::decode(const SseEvent &sse, const QByteArray &raw) {
    rj::ParsedJson json;
    m_lastUnreadable = !json.parseUtf8(raw);
    const Value *data = json.object();
    const std::string_view type = rj::eventType(data, sse.event);
    m_lastEventName = relayEventName(type, sse.event);
    if (type.empty())
        return;
    // A frame the parser refused says nothing by its event line alone: a stream cut inside its
    // response.completed must not complete the answer (with no id, status or usage), nor an
    // unreadable output_item.added add an empty item (probe H2 2). An error stays an error.
    if (m_lastUnreadable && type != "error")
        return;

    if (type == "error") {
        // {type:error, code, message} (older servers nest it in "error")
        const Value *nested = member(data, "error");
        const Value *err = nested && nested->IsObject() ? nested : data;
        const Value *code = member(err, "code");
        // response.failed follows: the error ends the stream there (or at the end of the body),
        // so a passthrough client gets both frames.
        m_pendingErrorCode = rj::isString(code) ? toString(code) : toString(member(err, "type"));
        m_pendingErrorMessage = toString(member(err, "message"), QStringLiteral("unknown error"));
        m_pendingErrorFinal = !rj::toBool(member(err, wire::kShouldRetryMember), true);
        return;
    }
    if (type == "response.failed") {
        const Value *response = member(data, "response");
        readUsage(member(response, "usage"));
        const Value *err = member(response, "error");
        m_pendingErrorFinal |= !rj::toBool(member(err, wire::kShouldRetryMember), true);
        const QString message = toString(member(err, "message"));
        if (message.isEmpty() && !m_pendingErrorMessage.isEmpty())
            fail(m_pendingErrorCode, m_pendingErrorMessage);
        else
            fail(toString(member(err, "code"), m_pendingErrorCode),
                 message.isEmpty() ? QStringLiteral("the response failed") : message);
        return;
    }
    const Value *response = member(data, "response");
    if (!wire::namesAreEchoable(response)) {
        m_lastUnreadable = true; // the frame is not relayed; the gateway's error is
        m_out.failUnechoableNames();
        return;
    }
    if (!toolCallsAreEchoable(data, response)) {
        m_lastUnreadable = true;
        m_out.failUnechoableNames(CanonicalStreamBuilder::Unechoable::ToolCall);
        return;
    }
    m_out.start(toString(member(response, "id")));
    const int oi = rj::toInt(member(data, "output_index"), -1);
    if (type != "response.created" && type != "response.in_progress" && type != "response.queued" &&
        type != "response.completed" && type != "response.incomplete") {
        const QString itemId = toString(member(data, "item_id"), toString(member(member(data, "item"), "id")));
        if (oi < 0 || itemId.isEmpty() || m_announced.size() >= kMaxAnnounced) {
            m_streamedUnknown = true;
            m_announced.clear();
            m_announcedIds.clear();
        } else if (!m_streamedUnknown) {
            m_announced.insert(oi);
            m_announcedIds.insert(qHash(itemId));
        }
    }
    const auto relayMadeUpCallIds = [&] {
        if (!m_madeUpCallIds.isEmpty())
            m_lastRelayData = withMadeUpCallIds(raw, oi);
    };
    if (type == "response.output_item.added") {
        itemAdded(oi, member(data, "item"));
        relayMadeUpCallIds();
    } else if (type == "response.content_part.added") {
        const Value *partType = member(member(data, "part"), "type");
        m_sawRefusal |= equals(partType, "refusal");
        if (equals(partType, "output_text") || equals(partType, "refusal")) {
            ContentBlock text;
            text.refusal = equals(partType, "refusal");
            text.itemId = toString(member(data, "item_id"));
            m_out.open(oi, text);
        }
    } else if (type == "response.output_text.delta" || type == "response.refusal.delta" ||
               type == "response.reasoning_summary_text.delta" || type == "response.reasoning_text.delta" ||
               type == "response.function_call_arguments.delta") {
        const BlockType kind = type.substr(0, 18) == "response.reasoning"         ? BlockType::Thinking
                               : type == "response.function_call_arguments.delta" ? BlockType::ToolCall
                                                                                  : BlockType::Text;
        m_sawRefusal |= type == "response.refusal.delta";
        const QString delta = toString(member(data, "delta"));
        if (!delta.isEmpty()) {
            if (kind == BlockType::Text)
                m_textSaid.insert(oi);
            ContentBlock block;
            block.type = kind;
            block.refusal = type == "response.refusal.delta";
            m_out.open(oi, block);
            m_out.append(oi, delta);
        }
    } else if (type == "response.custom_tool_call_input.delta") {
        // A custom tool's input is text; canonically it is the argument JSON {"input": "…"},
        // streamed as escaped fragments so the call commits and counts as it arrives.
        const Value *piece = member(data, "delta");
        const ContentBlock *open = m_out.find(oi);
        if (rj::isString(piece) && !toString(piece).isEmpty() && open && open->custom) {
            QByteArray escaped;
            rj::appendEscaped(escaped, rj::bytes(piece));
            m_out.append(oi, (!m_out.hasText(oi) ? QStringLiteral("{\"input\":\"") : QString()) +
                                 QString::fromUtf8(escaped));
        }
    } else if (type == "response.reasoning_summary_part.added") {
        m_out.open(oi, BlockType::Thinking);
        if (m_summaryParts[oi]++ > 0 && m_out.hasText(oi)) // parts of one summary, as paragraphs
            m_out.append(oi, QStringLiteral("\n\n"));
    } else if (type == "response.content_part.done") {
        // A part whose text came with no delta: its finished text, in the block it opened.
        const Value *part = member(data, "part");
        const ContentBlock *open = m_out.find(oi);
        if (open && open->type == BlockType::Text && !m_out.hasText(oi)) {
            const QString text = toString(member(part, open->refusal ? "refusal" : "text"));
            if (!text.isEmpty())
                m_textSaid.insert(oi);
            m_out.append(oi, text);
        }
        m_out.close(oi);
    } else if (type == "response.output_item.done") {
        const Value *item = member(data, "item");
        if (m_keepNative) {
            m_doneItemBytes += raw.size();
            if (m_doneItemBytes <= kMaxNativeChars)
                m_doneItems.insert(oi, rj::toQtObject(item));
        }
        itemDone(oi, item);
        relayMadeUpCallIds();
    } else if (type == "response.completed" || type == "response.incomplete") {
        completed(type, response);
        relayMadeUpCallIds();
    }
    // created, in_progress, *.done texts, annotations, built-in tool progress: nothing to say
}

} // namespace sw::upstream
