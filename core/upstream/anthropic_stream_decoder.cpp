#include "core/upstream/anthropic_stream_decoder.h"

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

// A content block's id and name (tool_use, server_tool_use, mcp_tool_use), and the call a tool
// result answers (tool_use_id), may be echoed: a same-API stream relays content_block_start as
// it is, and the client's next turn sends them back.
bool blockNamesAreEchoable(const Value *block) {
    return wire::membersAreEchoable(block, "id", "name", "tool_use_id");
}

// The same for the blocks a message_start may already hold (a stream's is empty).
bool contentNamesAreEchoable(const Value *message) {
    if (const Value *content = rj::asArray(member(message, "content")))
        for (const Value &block : content->GetArray())
            if (!blockNamesAreEchoable(&block))
                return false;
    return true;
}

} // namespace

void AnthropicStreamDecoder::readUsage(const Value *usage) {
    // message_delta repeats the counts cumulatively; only the fields present are updated. A count no
    // upstream could mean (negative, past 2^32) is unknown, never passed on to a client or billed.
    Usage &u = m_out.usage();
    if (const Value *v = member(usage, "input_tokens"))
        u.input = model::saneTokens(rj::toInteger(v));
    if (const Value *v = member(usage, "output_tokens"))
        u.output = model::saneTokens(rj::toInteger(v));
    if (const Value *v = member(usage, "cache_read_input_tokens"))
        u.cacheRead = model::saneTokens(rj::toInteger(v));
    if (const Value *v = member(usage, "cache_creation_input_tokens"))
        u.cacheWrite = model::saneTokens(rj::toInteger(v));
}

void AnthropicStreamDecoder::nativeFeed(std::string_view type, const Value *data) {
    if (!m_keepNative || m_nativeOverflow)
        return;
    const int index = rj::toInt(member(data, "index"), -1);
    if (type == "message_start") {
        m_nativeMessage = rj::toQtObject(member(data, "message"));
    } else if (type == "content_block_start") {
        NativeBlock b;
        b.block = rj::toQtObject(member(data, "content_block"));
        b.text =
            b.block.value(b.block.value(L("type")).toString() == L("thinking") ? L("thinking") : L("text")).toString();
        b.signature = b.block.value(L("signature")).toString();
        m_nativeBlocks.insert(index, b);
    } else if (type == "content_block_delta") {
        auto it = m_nativeBlocks.find(index);
        if (it == m_nativeBlocks.end())
            return;
        const Value *delta = member(data, "delta");
        const Value *dType = member(delta, "type");
        QString piece;
        if (equals(dType, "text_delta")) {
            piece = toString(member(delta, "text"));
            it->text += piece;
        } else if (equals(dType, "thinking_delta")) {
            piece = toString(member(delta, "thinking"));
            it->text += piece;
        } else if (equals(dType, "input_json_delta")) {
            piece = toString(member(delta, "partial_json"));
            it->partialJson += piece;
        } else if (equals(dType, "signature_delta")) {
            piece = toString(member(delta, "signature"));
            it->signature += piece;
        } else if (equals(dType, "citations_delta")) {
            // Appended to the block's own list, counted by its size: taking the block's array out and
            // putting it back copied every citation so far on each delta, and counting each as a few
            // characters left a 64 MiB answer of them outside kMaxNativeChars (probe Z2 F2: 80 000
            // citations took 39 s of the engine).
            if (it->citations.isEmpty() && it->block.value(L("citations")).isArray())
                it->citations = it->block.take(L("citations")).toArray();
            const Value *citation = member(delta, "citation");
            it->citations.append(rj::toQt(citation));
            m_nativeChars += citation ? rj::compact(*citation).size() : 0;
        }
        m_nativeChars += piece.size();
        if (m_nativeChars > kMaxNativeChars) {
            m_nativeOverflow = true;
            m_nativeBlocks.clear();
        }
    } else if (type == "message_delta") {
        const QJsonObject delta = rj::toQtObject(member(data, "delta"));
        for (auto it = delta.begin(); it != delta.end(); ++it)
            m_nativeMessage.insert(it.key(), it.value()); // stop_reason, stop_sequence, container
        QJsonObject usage = m_nativeMessage.value(L("usage")).toObject();
        const QJsonObject more = rj::toQtObject(member(data, "usage"));
        for (auto it = more.begin(); it != more.end(); ++it)
            if (!it.value().isNull())
                usage.insert(it.key(), it.value()); // cumulative: output_tokens, server_tool_use, …
        m_nativeMessage.insert(L("usage"), usage);
    }
}

QJsonObject AnthropicStreamDecoder::nativeMessage() const {
    if (m_nativeOverflow || m_nativeMessage.isEmpty())
        return {};
    QJsonObject message = m_nativeMessage;
    QJsonArray content;
    for (const NativeBlock &n : m_nativeBlocks) {
        QJsonObject b = n.block;
        const QString type = b.value(L("type")).toString();
        if (!n.citations.isEmpty())
            b.insert(L("citations"), n.citations);
        if (type == L("text")) {
            b.insert(L("text"), n.text);
        } else if (type == L("thinking")) {
            b.insert(L("thinking"), n.text);
            b.insert(L("signature"), n.signature);
        } else if (b.contains(L("input"))) { // tool_use, server_tool_use, mcp_tool_use
            if (!n.partialJson.trimmed().isEmpty())
                b.insert(L("input"), QJsonDocument::fromJson(n.partialJson.toUtf8()).object());
        }
        content.append(b);
    }
    message.insert(L("content"), content);
    return message;
}

void AnthropicStreamDecoder::end() {
    for (const int index : m_startInputs.keys()) // blocks the stream never said stopped
        sayStartInput(index);
    StopReason reason = StopReason::Stop; // end_turn, stop_sequence, pause_turn
    if (m_stopReason == L("max_tokens") || m_stopReason == L("model_context_window_exceeded"))
        reason = StopReason::Length;
    else if (m_stopReason == L("tool_use"))
        reason = StopReason::ToolUse;
    else if (m_stopReason == L("refusal"))
        reason = StopReason::Refusal; // an answer, not an outage: no mark, no failover
    // The sequence rides on Done too: a Messages client whose answer was too large to keep whole
    // (nativeMessage() is empty then) still learns which one ended it.
    if (reason == StopReason::Refusal)
        return m_out.refuse(QStringLiteral("Anthropic refused the answer (stop_reason refusal)"), nativeMessage());
    m_out.done(reason, nativeMessage(), {}, m_stopReason == L("stop_sequence") ? m_stopSequence : QString());
}

void AnthropicStreamDecoder::openBlock(int index, const Value *cb) {
    const Value *cbType = member(cb, "type");
    ContentBlock block;
    if (equals(cbType, "text")) {
        block.type = BlockType::Text;
    } else if (equals(cbType, "thinking")) {
        block.type = BlockType::Thinking;
    } else if (equals(cbType, "redacted_thinking")) {
        block.type = BlockType::Thinking;
        block.redacted = true;
        block.signature = toString(member(cb, "data"));
    } else if (equals(cbType, "tool_use")) {
        block.type = BlockType::ToolCall;
        block.toolCallId = toString(member(cb, "id"));
        block.toolName = toString(member(cb, "name"));
        // An Anthropic-compatible server that names a call by none: an id made up here, the one every
        // client is told (the relayed frame and the same-API JSON answer too), so the call's result
        // pairs with it in the next turn (Messages refuses a tool_result with an empty tool_use_id).
        if (block.toolCallId.isEmpty())
            block.toolCallId = m_relayedId = wire::madeUpToolCallId();
        // One an earlier call of this answer has (Kimi's "grep:3" twice): the next free one
        // ("grep:3_2"), told to every client as above, so each result pairs with its own call in
        // every later turn and no server of the next turn refuses the repeat (probe JV M4).
        else if (m_callIds.contains(block.toolCallId))
            block.toolCallId = m_relayedId =
                wire::uniqueToolId(block.toolCallId, m_callIds, wire::kAnthropicMaxToolIdLength, m_callIdSuffixes);
        m_callIds.insert(block.toolCallId);
        if (const Value *input = rj::asObject(member(cb, "input")); input && input->MemberCount() > 0) {
            m_startInputs.insert(index, QString::fromUtf8(rj::compact(*input)));
            m_lastKept = true; // held until the block ends: charged as a signature delta is
        }
    } else {
        return; // server tool blocks have no canonical form
    }
    m_out.open(index, block);
    if (equals(cbType, "text"))
        m_out.append(index, toString(member(cb, "text")));
}

void AnthropicStreamDecoder::appendDelta(int index, const Value *delta) {
    const Value *dType = member(delta, "type");
    if (equals(dType, "text_delta"))
        m_out.append(index, toString(member(delta, "text")));
    else if (equals(dType, "thinking_delta"))
        m_out.append(index, toString(member(delta, "thinking")));
    else if (equals(dType, "input_json_delta"))
        m_out.append(index, toString(member(delta, "partial_json")));
    else if (equals(dType, "signature_delta"))
        if (ContentBlock *b = m_out.find(index)) {
            const QString piece = toString(member(delta, "signature"));
            b->signature += piece; // carried by ThinkingEnd
            m_lastKept = !piece.isEmpty();
        }
    // citations_delta and future kinds have no canonical form
}

void AnthropicStreamDecoder::sayStartInput(int index) {
    // A server that gives the whole input at the start (the Anthropic SDK keeps it; its deltas, when
    // any come, replace it): without it the call reached Chat and Responses clients as "{}".
    const QString input = m_startInputs.take(index);
    if (!input.isEmpty() && !m_out.hasText(index))
        m_out.append(index, input);
}

QList<StreamEvent> AnthropicStreamDecoder::feed(const SseEvent &sse) {
    m_lastUnreadable = false;
    m_lastUsageOnly = false;
    m_lastKept = false;
    m_lastRelayData.clear();
    m_lastEventName.reset();
    if (!m_out.finished())
        decode(sse);
    return m_out.take();
}

void AnthropicStreamDecoder::decode(const SseEvent &sse) {
    rj::ParsedJson json;
    m_lastUnreadable = !json.parseUtf8(sse.data);
    const Value *data = json.object();
    const std::string_view type = rj::eventType(data, sse.event);
    m_lastEventName = relayEventName(type, sse.event);
    if (type == "ping" || type.empty())
        return;
    // A frame the parser refused says nothing by its event line alone (a stream cut inside its
    // message_stop, a frame of garbage): acted on, an empty message_stop or content_block_start
    // would end the answer as a success or add a block of nothing (probe H2 2). Only an error stays
    // an error: the gateway's own failure, worded from the frame's text.
    if (m_lastUnreadable && type != "error")
        return;
    nativeFeed(type, data);
    if (type == "error") {
        const Value *err = member(data, "error");
        const QString errorType = toString(member(err, "type"));
        const QString message = toString(member(err, "message"), QString::fromUtf8(sse.data));
        m_out.fail(wire::inBandErrorText(QLatin1String("Anthropic stream error"), errorType, message), errorType,
                   wire::statusForAnthropicError(errorType), StopReason::Error, {},
                   !rj::toBool(member(err, wire::kShouldRetryMember), true));
        return;
    }
    if (type == "message_start") {
        const Value *message = member(data, "message");
        if (!wire::namesAreEchoable(message)) {
            m_lastUnreadable = true; // the frame is not relayed; the gateway's error is
            m_out.failUnechoableNames();
            return;
        }
        if (!contentNamesAreEchoable(message)) {
            m_lastUnreadable = true;
            m_out.failUnechoableNames(CanonicalStreamBuilder::Unechoable::ToolCall);
            return;
        }
        readUsage(member(message, "usage"));
        m_out.start(toString(member(message, "id")));
        return;
    }
    const Value *block = type == "content_block_start" ? member(data, "content_block") : nullptr;
    if (block && !blockNamesAreEchoable(block)) {
        m_lastUnreadable = true; // the frame is not relayed; the gateway's error is
        m_out.failUnechoableNames(CanonicalStreamBuilder::Unechoable::ToolCall);
        return;
    }
    m_out.start(); // tolerate a server that skips message_start
    const int index = rj::toInt(member(data, "index"), -1);
    if (type == "content_block_start") {
        openBlock(index, block);
        if (!m_relayedId.isEmpty()) {
            const QString id = std::exchange(m_relayedId, QString());
            if (auto it = m_nativeBlocks.find(index); it != m_nativeBlocks.end())
                it->block.insert(L("id"), id);
            QJsonObject frame = QJsonDocument::fromJson(sse.data).object();
            QJsonObject started = frame.value(L("content_block")).toObject();
            started.insert(L("id"), id);
            frame.insert(L("content_block"), started);
            m_lastRelayData = QJsonDocument(frame).toJson(QJsonDocument::Compact);
        }
    } else if (type == "content_block_delta") {
        appendDelta(index, member(data, "delta"));
    } else if (type == "content_block_stop") {
        sayStartInput(index);
        m_out.close(index);
    } else if (type == "message_delta") {
        const Value *stop = member(member(data, "delta"), "stop_reason");
        if (rj::isString(stop))
            m_stopReason = toString(stop);
        else
            m_lastUsageOnly = true; // counts alone move no answer on: not upstream activity (probe IV 1)
        if (const Value *sequence = member(member(data, "delta"), "stop_sequence"); rj::isString(sequence))
            m_stopSequence = toString(sequence);
        readUsage(member(data, "usage"));
    } else if (type == "message_stop") {
        end();
    }
}

QList<StreamEvent> AnthropicStreamDecoder::finish() {
    if (!m_out.finished() && !m_stopReason.isEmpty())
        end(); // message_delta said why it stopped; only message_stop was lost
    m_out.endOfBody();
    return m_out.take();
}

} // namespace sw::upstream
