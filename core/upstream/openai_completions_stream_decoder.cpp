#include "core/upstream/openai_completions_stream_decoder.h"

#include "core/wire/echoed_identifier.h"
#include "core/wire/error_body.h"
#include "core/wire/rapid_json.h"
#include "core/wire/tool_call_id.h"

#include <QJsonDocument>

#include <algorithm>

namespace sw::upstream {

using namespace sw::model;
using wire::rj::member;
using wire::rj::toString;
using wire::rj::Value;
namespace rj = wire::rj;

namespace {

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

// The ids and names of the tool calls in every choice's delta (a same-API stream relays the
// other choices too) may be echoed: a chunk without calls pays three member lookups a choice.
bool toolCallsAreEchoable(const Value *choices) {
    if (!choices)
        return true;
    for (const Value &choice : choices->GetArray()) {
        const Value *delta = member(&choice, "delta");
        if (const Value *calls = rj::asArray(member(delta, "tool_calls"))) {
            for (const Value &call : calls->GetArray())
                if (!wire::membersAreEchoable(&call, "id") ||
                    !wire::membersAreEchoable(member(&call, "function"), "name") ||
                    !wire::membersAreEchoable(member(&call, "custom"), "name"))
                    return false;
        }
        if (!wire::membersAreEchoable(member(delta, "function_call"), "name")) // the deprecated single call
            return false;
    }
    return true;
}

// A call id in a chunk longer than a Chat client is told (wire::clientToolCallId): the byte
// count first, the rare chunk that has one pays the rest.
bool hasOverLongCallId(const Value *choices) {
    for (const Value &choice : rj::elements(choices))
        for (const Value &call : rj::elements(member(member(&choice, "delta"), "tool_calls")))
            if (rj::bytes(member(&call, "id")).size() > wire::kChatMaxToolIdLength)
                return true;
    return false;
}

// The chunk with every choice's call ids as the client's encoder writes them; the rest as it came
// (written again by Qt: the chunk is one a client reads as JSON, not as bytes). In the choice at
// `choiceAt` of `choices`, the call at each position `ids` names says the id given there instead
// (none when it is empty): the one the gateway made up for a call the server named by none.
QByteArray withClientCallIds(const QByteArray &data, qsizetype choiceAt = -1,
                             const QHash<qsizetype, QString> &ids = {}) {
    QJsonObject chunk = QJsonDocument::fromJson(data).object();
    QJsonArray choices = chunk.value(L("choices")).toArray();
    for (qsizetype i = 0; i < choices.size(); ++i) {
        QJsonObject choice = choices.at(i).toObject();
        QJsonObject delta = choice.value(L("delta")).toObject();
        QJsonArray calls = delta.value(L("tool_calls")).toArray();
        for (qsizetype j = 0; j < calls.size(); ++j) {
            QJsonObject call = calls.at(j).toObject();
            if (const auto given = ids.constFind(j); i == choiceAt && given != ids.cend()) {
                if (given->isEmpty())
                    call.remove(L("id"));
                else
                    call.insert(L("id"), *given);
            } else if (const QJsonValue id = call.value(L("id")); id.isString()) {
                call.insert(L("id"), wire::clientToolCallId(id.toString(), wire::kChatMaxToolIdLength));
            }
            calls.replace(j, call);
        }
        if (!calls.isEmpty()) {
            delta.insert(L("tool_calls"), calls);
            choice.insert(L("delta"), delta);
            choices.replace(i, choice);
        }
    }
    chunk.insert(L("choices"), choices);
    return QJsonDocument(chunk).toJson(QJsonDocument::Compact);
}

} // namespace

void OpenAICompletionsStreamDecoder::readUsage(const Value *usage) {
    // A count no upstream could mean (negative, past 2^32) is unknown, never passed on or billed:
    // a negative cached count once turned into a million billed input tokens.
    const auto count = [](const Value *v) { return model::saneTokens(rj::toInteger(v)); };
    const qint64 prompt = count(member(usage, "prompt_tokens"));
    const qint64 cached = count(member(member(usage, "prompt_tokens_details"), "cached_tokens"));
    Usage &u = m_out.usage();
    u.input = qMax<qint64>(0, prompt - cached);
    u.cacheRead = cached;
    u.cacheWrite = 0;
    u.output = count(member(usage, "completion_tokens"));
    u.reasoning = count(member(member(usage, "completion_tokens_details"), "reasoning_tokens"));
}

void OpenAICompletionsStreamDecoder::prose(BlockType type, const QString &text, bool refusal) {
    if (text.isEmpty())
        return;
    const ContentBlock *open = m_out.find(kProse);
    if (!open || open->type != type || open->refusal != refusal) {
        m_out.close(kProse);
        ContentBlock block;
        block.type = type;
        block.refusal = refusal;
        m_out.open(kProse, block);
    }
    m_out.append(kProse, text);
}

// Mistral's reasoning models (Magistral) stream `content` as a list of chunks, streamed and whole: their
// reasoning as {"type":"thinking","thinking":[{"type":"text","text":…}]}, their words as strings or as
// {"type":"text","text":…}. Read as a string the list was nothing: the reasoning was lost and an answer
// in chunks ended empty, as a success. Each part goes to its block; a part of another kind is not
// read, and its type is kept, so that an answer of nothing else fails (end()) rather than end empty.
void OpenAICompletionsStreamDecoder::contentParts(const Value &parts) {
    const auto unread = [this](const Value &part) {
        if (m_unreadPart.isEmpty())
            m_unreadPart = toString(member(&part, "type")).left(64);
        if (m_unreadPart.isEmpty())
            m_unreadPart = QStringLiteral("?"); // a part that names no type
    };
    for (const Value &part : parts.GetArray()) {
        const Value *type = member(&part, "type");
        if (part.IsString()) {
            prose(BlockType::Text, toString(&part));
        } else if (rj::equals(type, "text")) {
            prose(BlockType::Text, toString(member(&part, "text")));
        } else if (rj::equals(type, "thinking")) {
            const Value *thinking = member(&part, "thinking");
            if (rj::isString(thinking)) {
                prose(BlockType::Thinking, toString(thinking));
                continue;
            }
            for (const Value &inner : rj::elements(thinking)) {
                if (rj::equals(member(&inner, "type"), "text"))
                    prose(BlockType::Thinking, toString(member(&inner, "text")));
                else
                    unread(inner);
            }
        } else {
            unread(part);
        }
    }
}

// Gemini's signature on a call from Google's own OpenAI-compatible endpoint, which puts it in the
// call's first delta (`extra_content.google.thought_signature`): Google's, so it goes back to Gemini
// alone, whichever format the client reads (translation_rules.md).
void OpenAICompletionsStreamDecoder::callSignature(const Value *call, ContentBlock &block) {
    const QString signature = wire::googleCallSignature(call);
    if (signature.isEmpty())
        return;
    block.signature = signature;
    block.signatureApi = wire::apiName(wire::Api::Google);
}

std::optional<QString> OpenAICompletionsStreamDecoder::toolDelta(const Value *call) {
    const Value *fn = member(call, "function");
    const int toolIndex = rj::toInt(member(call, "index"), 0);
    const QString id = toString(member(call, "id"));
    ContentBlock *open = m_out.find(toolIndex);
    std::optional<QString> relayed;
    const auto renamed = open ? m_renamedIds.constFind(toolIndex) : m_renamedIds.cend();
    if (open && m_madeUpIds.contains(toolIndex)) {
        // The client was told the id made up for this call: an id the server sends later is not
        // a second one (a relayed chunk goes without it, as a client would join the two).
        if (!id.isEmpty())
            relayed = QString();
    } else if (open && !id.isEmpty() && renamed != m_renamedIds.cend() && id == *renamed) {
        relayed = open->toolCallId; // the server's id again, for a call the client knows by another
    } else if (open && !id.isEmpty() && !open->toolCallId.isEmpty() && id != open->toolCallId) {
        // A server that numbers every call 0 still gives each its own id: a new id is a new call.
        m_out.close(toolIndex);
        open = nullptr;
    }
    if (!open) {
        m_out.close(kProse); // text or thinking before the calls is finished
        ContentBlock b;
        b.type = BlockType::ToolCall;
        b.toolCallId = id;
        b.toolName = toString(member(fn, "name"));
        m_sawToolCall |= !b.toolName.isEmpty();
        // A server that names its calls by none (`"id": ""` or no id: Gemini's OpenAI-compatible
        // endpoint, LM Studio, older llama.cpp): an id made up here, the one every client is told
        // (a relayed chunk too), so each call pairs with its own result in every later turn.
        if (id.isEmpty()) {
            b.toolCallId = wire::madeUpToolCallId();
            relayed = b.toolCallId;
            m_madeUpIds.insert(toolIndex);
        } else {
            m_madeUpIds.remove(toolIndex);
        }
        // An id an earlier call of this answer has (DeepSeek, GLM and Kimi give parallel calls one
        // id): the client is told the next free one ("call_0_2"), so each result pairs with its own
        // call in every later turn and no server of the next turn refuses the repeat (probe JV M4).
        m_renamedIds.remove(toolIndex);
        if (!id.isEmpty() && m_callIds.contains(id)) {
            b.toolCallId = wire::uniqueToolId(id, m_callIds, wire::kChatMaxToolIdLength, m_callIdSuffixes);
            relayed = b.toolCallId;
            m_renamedIds.insert(toolIndex, id);
        }
        m_callIds.insert(b.toolCallId);
        callSignature(call, b);
        m_out.open(toolIndex, b);
    } else {
        if (open->toolName.isEmpty() && member(fn, "name")) {
            open->toolName = toString(member(fn, "name"));
            m_sawToolCall |= !open->toolName.isEmpty();
        }
        if (open->signature.isEmpty())
            callSignature(call, *open); // a server that signs a call in a later delta
    }
    const Value *args = member(fn, "arguments");
    // Some servers send the arguments as an object in one piece.
    m_out.append(toolIndex, args && args->IsObject() ? QString::fromUtf8(rj::compact(*args)) : toString(args));
    return relayed;
}

void OpenAICompletionsStreamDecoder::collectNative(const Value *chunk, const Value *choice, const Value *delta,
                                                   qsizetype chunkBytes) {
    if (!m_keepNative)
        return;
    // Sent on every chunk by OpenAI: kept as text here, put in the answer once.
    if (const Value *fingerprint = member(chunk, "system_fingerprint"); rj::isString(fingerprint))
        m_systemFingerprint = toString(fingerprint);
    if (const Value *tier = member(chunk, "service_tier"); rj::isString(tier))
        m_serviceTier = toString(tier);
    if (m_nativeOverflow)
        return;
    const Value *logprobs = rj::asObject(member(choice, "logprobs"));
    const Value *annotations = rj::asArray(member(delta, "annotations"));
    const Value *details = rj::asArray(member(delta, "reasoning_details"));
    if (!rj::isEmptyObject(logprobs) || rj::arraySize(annotations) > 0 || rj::arraySize(details) > 0) {
        // Logprobs grow with every token; past the bound the answer goes without them rather
        // than hold an unbounded copy (the client can stream to get them all).
        m_nativeBytes += chunkBytes;
        if (m_nativeBytes > kMaxNativeChars) {
            m_nativeOverflow = true;
            m_logprobsContent = {};
            m_logprobsRefusal = {};
            m_annotations = {};
            m_reasoningDetails = {};
            m_openDetail.reset();
            return;
        }
    }
    if (details)
        for (const Value &v : details->GetArray())
            mergeReasoningDetail(rj::toQtObject(&v));
    if (!rj::isEmptyObject(logprobs)) {
        m_sawLogprobs = true;
        if (const Value *content = rj::asArray(member(logprobs, "content")))
            for (const Value &v : content->GetArray())
                m_logprobsContent.append(rj::toQt(&v));
        if (const Value *refusal = rj::asArray(member(logprobs, "refusal")))
            for (const Value &v : refusal->GetArray())
                m_logprobsRefusal.append(rj::toQt(&v));
    }
    if (annotations)
        for (const Value &v : annotations->GetArray())
            m_annotations.append(rj::toQt(&v));
    m_refusal += toString(member(delta, "refusal"));
}

namespace {
// Whether rj::appendCompact writes `v` byte for byte as the codec's JsonWriter writes the same
// value taken through Qt's JSON: integers (doubles are formatted differently), names and strings
// in ASCII (Qt sorts names by UTF-16 units, appendCompact by bytes; any other text takes the
// object path, which writes it through Qt's UTF-16 as before).
bool isAscii(const Value &s) {
    const char *text = s.GetString();
    return std::none_of(text, text + s.GetStringLength(), [](char c) { return uchar(c) >= 0x80; });
}
bool compactsAsWritten(const Value &v) {
    switch (v.GetType()) {
    case rapidjson::kNumberType:
        return v.IsInt64();
    case rapidjson::kStringType:
        return isAscii(v);
    case rapidjson::kArrayType:
        return std::all_of(v.Begin(), v.End(), [](const Value &e) { return compactsAsWritten(e); });
    case rapidjson::kObjectType:
        for (const Value::Member &m : v.GetObject()) {
            if (!isAscii(m.name) || !compactsAsWritten(m.value))
                return false;
        }
        return true;
    default:
        return true;
    }
}
} // namespace

void OpenAICompletionsStreamDecoder::keepNativeUsage(const Value &usage) {
    // The usual usage object (integer counts and their *_details) is kept as its text, which the
    // codec writes as it is; anything else as a QJsonObject, as the codec writes any embedded value.
    QByteArray text;
    if (compactsAsWritten(usage) && rj::appendCompact(text, usage)) {
        m_usageJson = text;
        m_usage = {};
    } else {
        m_usageJson.clear();
        m_usage = rj::toQtObject(&usage);
    }
}

namespace {
constexpr std::array<QLatin1StringView, 3> kGrowingDetailKeys{QLatin1StringView("text"), QLatin1StringView("summary"),
                                                              QLatin1StringView("data")};
int growingDetailKey(QStringView key) {
    for (int i = 0; i < int(kGrowingDetailKeys.size()); ++i)
        if (key == kGrowingDetailKeys[i])
            return i;
    return -1;
}
} // namespace

QJsonObject OpenAICompletionsStreamDecoder::OpenDetail::whole() const {
    QJsonObject entry = rest;
    for (int i = 0; i < int(grown.size()); ++i)
        if (grown[i])
            entry.insert(kGrowingDetailKeys[i], *grown[i]);
    return entry;
}

QJsonArray OpenAICompletionsStreamDecoder::reasoningDetails() const {
    QJsonArray all = m_reasoningDetails;
    if (m_openDetail)
        all.append(m_openDetail->whole());
    return all;
}

void OpenAICompletionsStreamDecoder::mergeReasoningDetail(const QJsonObject &piece) {
    // A streamed entry goes on the one before it when it has the same type and index (OpenRouter
    // sends an entry's text in pieces and its signature last): its strings appended, the rest set.
    // The open entry's strings grow in place: taking the entry out of the array, joining its text
    // anew and putting it back cost the whole text per piece, and Qt's containers kept each
    // version (probe Z2 F1: 4 000 pieces held the engine for 43 s, 4 000 of 120 characters 858 MB).
    if (m_openDetail && piece.value(L("type")) == m_openDetail->rest.value(L("type")) &&
        piece.value(L("index")) == m_openDetail->rest.value(L("index"))) {
        OpenDetail &open = *m_openDetail;
        for (auto it = piece.begin(); it != piece.end(); ++it) {
            const int g = growingDetailKey(it.key());
            if (g >= 0 && it->isString() && open.grown[g]) {
                open.grown[g]->append(it->toString());
                continue;
            }
            const bool present = open.rest.contains(it.key()) || (g >= 0 && open.grown[g]);
            if (it->isNull() && present)
                continue;
            // Repeated on every piece (type, index, format): set again, Qt's container would keep
            // each copy until the entry is built.
            if (g < 0 && present && open.rest.value(it.key()) == *it)
                continue;
            if (g >= 0) {
                open.grown[g].reset();
                if (it->isString()) {
                    open.rest.remove(it.key());
                    open.grown[g] = it->toString();
                    continue;
                }
            }
            open.rest.insert(it.key(), *it);
        }
        return;
    }
    if (m_openDetail)
        m_reasoningDetails.append(m_openDetail->whole());
    OpenDetail open;
    open.rest = piece;
    for (int i = 0; i < int(kGrowingDetailKeys.size()); ++i) {
        const auto value = open.rest.constFind(kGrowingDetailKeys[i]);
        if (value != open.rest.constEnd() && value->isString()) {
            open.grown[i] = value->toString();
            open.rest.remove(kGrowingDetailKeys[i]);
        }
    }
    m_openDetail = std::move(open);
}

QJsonObject OpenAICompletionsStreamDecoder::nativeAnswer() const {
    QJsonObject native;
    if (m_usageJson.isEmpty() && !m_usage.isEmpty())
        native.insert(L("usage"), m_usage);
    if (!m_systemFingerprint.isNull())
        native.insert(L("system_fingerprint"), m_systemFingerprint);
    if (!m_serviceTier.isNull())
        native.insert(L("service_tier"), m_serviceTier);
    if (!m_nativeOverflow) {
        if (m_sawLogprobs)
            native.insert(L("logprobs"),
                          QJsonObject{{L("content"), m_logprobsContent},
                                      {L("refusal"), m_logprobsRefusal.isEmpty() ? QJsonValue(QJsonValue::Null)
                                                                                 : QJsonValue(m_logprobsRefusal)}});
        if (!m_annotations.isEmpty())
            native.insert(L("annotations"), m_annotations);
        if (!m_reasoningDetails.isEmpty() || m_openDetail)
            native.insert(L("reasoning_details"), reasoningDetails());
        if (!m_refusal.isEmpty())
            native.insert(L("refusal"), m_refusal);
    }
    return native;
}

void OpenAICompletionsStreamDecoder::end() {
    static const QStringList known{QStringLiteral("stop"),           QStringLiteral("length"),
                                   QStringLiteral("tool_calls"),     QStringLiteral("function_call"),
                                   QStringLiteral("content_filter"), QStringLiteral("sensitive"),
                                   QStringLiteral("model_length"),   QStringLiteral("eos"),
                                   QStringLiteral("eos_token"),      QStringLiteral("stop_sequence"),
                                   QStringLiteral("end_turn"),       QStringLiteral("max_tokens")};
    if (m_out.blockCount() == 0 && !m_finishReason.isEmpty() && !known.contains(m_finishReason)) {
        // A reason the gateway does not know ("abort", a server's own word for a failure) on an answer
        // that said nothing: an empty turn reported as finished would end an agent's turn for nothing.
        // A failure: the next candidate answers. After content the reason is the model's stop.
        m_out.fail(QStringLiteral("the upstream ended its answer with finish_reason \"%1\" and no content")
                       .arg(m_finishReason.left(64)),
                   m_finishReason.left(64), 503);
        return;
    }
    if (m_out.blockCount() == 0 && !m_unreadPart.isEmpty()) {
        // Content came, all of it in parts the gateway cannot read (contentParts): an empty answer
        // reported as finished would hide what the model said. A failure: the next candidate answers.
        m_out.fail(QStringLiteral("the upstream's answer held only content parts of a type the gateway does not "
                                  "read (\"%1\")")
                       .arg(m_unreadPart),
                   {}, 502);
        return;
    }
    StopReason reason = StopReason::Stop;
    if (m_finishReason == L("length") || m_finishReason == L("model_length")) // Mistral: the context is full
        reason = StopReason::Length;
    else if (m_finishReason == L("tool_calls") || m_finishReason == L("function_call"))
        reason = StopReason::ToolUse;
    else if (m_finishReason == L("content_filter") || m_finishReason == L("sensitive") || m_sawRefusal)
        reason = StopReason::Refusal; // the provider's filter (z.ai: "sensitive") or the model declined: not an outage
    else if (m_sawToolCall)
        // Calls ended by "stop" (OpenAI for a forced tool_choice, SGLang, older Ollama, mlx): an
        // Anthropic or pi client reads end_turn and its agent stops with the call unrun.
        reason = StopReason::ToolUse;
    if (reason == StopReason::Refusal)
        return m_out.refuse(m_sawRefusal && m_finishReason != L("content_filter") && m_finishReason != L("sensitive")
                                ? QStringLiteral("The model refused to answer")
                                : QStringLiteral("The provider's filter stopped the answer (finish_reason %1)")
                                      .arg(m_finishReason.left(64)),
                            nativeAnswer(), m_usageJson);
    m_out.done(reason, nativeAnswer(), m_usageJson);
}

QList<StreamEvent> OpenAICompletionsStreamDecoder::feed(const SseEvent &sse) {
    m_lastUsageOnly = false;
    m_lastUnreadable = false;
    m_lastRelayData.clear();
    m_lastFailedOnPlainFrame = false;
    m_lastHadEventLine = !sse.event.isEmpty();
    if (!m_out.finished())
        decode(sse);
    return m_out.take();
}

void OpenAICompletionsStreamDecoder::decode(const SseEvent &sse) {
    const QByteArray data = sse.data.trimmed();
    if (data.isEmpty())
        return;
    if (data == "[DONE]") {
        if (m_out.blockCount() == 0 && m_finishReason.isEmpty()) {
            // A stream of nothing but [DONE] (a proxy that lost the answer): no content and no reason
            // the model stopped. Made into a `stop` it was an empty turn reported as finished, and the
            // next candidate never asked (probe JV L1). This model's bad answer, as an empty body is.
            m_out.fail(QStringLiteral("the upstream ended its event stream with [DONE] and no answer in it"), {}, 502);
            m_lastFailedOnPlainFrame = true; // [DONE] is no error a Chat client reads
            return;
        }
        return end();
    }
    rj::ParsedJson json;
    m_lastUnreadable = !json.parseUtf8(data);
    const Value *chunk = json.object();
    const Value *choicesMember = member(chunk, "choices");
    const Value *error = member(chunk, "error");
    // vLLM and SGLang send the error object itself as the frame: {"object":"error","message":…,
    // "type":"BadRequestError","code":400}. Read as a chunk, it made no event, and the stream's
    // end without [DONE] hid its words behind "stream ended before completion". Only a frame
    // without choices is looked at for it: a content chunk pays nothing.
    bool bareError = false; // no `error` member, which is all a Chat client's SDK reads as one
    if (rj::isAbsent(error) && rj::isAbsent(choicesMember) && rj::equals(member(chunk, "object"), "error")) {
        error = chunk;
        bareError = true;
    }
    if (!rj::isAbsent(error)) {
        const Value *code = member(error, "code");
        const QString errorType = rj::isString(code) ? toString(code) : toString(member(error, "type"));
        const QString message = rj::isString(error) ? toString(error) : toString(member(error, "message"));
        m_out.fail(wire::inBandErrorText(QLatin1String("OpenAI stream error"), errorType, message), errorType,
                   wire::statusForOpenAIError(rj::toQtObject(error)), StopReason::Error, {},
                   !rj::toBool(member(error, wire::kShouldRetryMember), true));
        // Relayed after content, the frame would end a Chat client's stream with no error it reads (the
        // openai SDK iterates on; its stream helper throws "chunk.choices is not iterable" on the frame
        // itself): it is not relayed, and the gateway's error, in the upstream's words, goes instead.
        m_lastUnreadable |= bareError;
        return;
    }
    if (rj::isEmptyObject(chunk))
        return; // keep-alive or a line we do not understand
    if (!wire::namesAreEchoable(chunk)) {
        m_lastUnreadable = true; // the frame is not relayed; the gateway's error is
        m_out.failUnechoableNames();
        return;
    }
    if (!toolCallsAreEchoable(rj::asArray(choicesMember))) {
        m_lastUnreadable = true;
        m_out.failUnechoableNames(CanonicalStreamBuilder::Unechoable::ToolCall);
        return;
    }
    if (hasOverLongCallId(rj::asArray(choicesMember)))
        m_lastRelayData = withClientCallIds(data);
    if (!m_out.started()) // every chunk repeats the id: made a QString once
        m_out.start(toString(member(chunk, "id")));
    const Value *usage = member(chunk, "usage");
    if (usage && usage->IsObject()) {
        readUsage(usage);
        if (m_keepNative) // with its *_details as sent
            keepNativeUsage(*usage);
    }

    const Value *choices = rj::asArray(choicesMember);
    if (rj::arraySize(choices) == 0) {
        m_lastUsageOnly = usage && usage->IsObject();
        return;
    }
    // Only the first choice is decoded (an answer is one message); with n > 1 the other choices'
    // chunks come interleaved, each naming its index, and must not run into the first one's text.
    const Value *choice = nullptr;
    qsizetype choiceAt = 0;
    for (const Value &c : choices->GetArray()) {
        if (rj::toInt(member(&c, "index"), 0) == 0) {
            choice = &c;
            break;
        }
        ++choiceAt;
    }
    if (!choice)
        return;
    const Value *delta = rj::asObject(member(choice, "delta"));
    collectNative(chunk, choice, delta, data.size());

    for (const char *key : {"reasoning_content", "reasoning", "reasoning_text"}) {
        const QString thinking = toString(member(delta, key));
        if (!thinking.isEmpty()) {
            prose(BlockType::Thinking, thinking);
            break; // servers send one of the three names
        }
    }
    // A model refusal (structured outputs) arrives as delta.refusal: its text is the answer, in a
    // block of its own that an OpenAI client reads as its refusal.
    const QString refusal = toString(member(delta, "refusal"));
    m_sawRefusal |= !refusal.isEmpty();
    if (const Value *content = member(delta, "content"); content && content->IsArray())
        contentParts(*content);
    else
        prose(BlockType::Text, toString(content));
    prose(BlockType::Text, refusal, true);
    if (const Value *calls = rj::asArray(member(delta, "tool_calls"))) {
        QHash<qsizetype, QString> relayedIds; // by the call's position in the chunk
        qsizetype at = 0;
        for (const Value &call : calls->GetArray()) {
            if (const std::optional<QString> relayed = toolDelta(&call))
                relayedIds.insert(at, *relayed);
            ++at;
        }
        if (!relayedIds.isEmpty())
            m_lastRelayData = withClientCallIds(data, choiceAt, relayedIds);
    }
    const Value *finish = member(choice, "finish_reason");
    if (rj::isString(finish) && finish->GetStringLength() > 0) {
        // A reason that says the server broke off, not that the model finished: OpenRouter's
        // normalised "error", DeepSeek's "insufficient_system_resource" (its inference system ran
        // out), z.ai's "network_error" (inference failed). A failure, not an answer: before commit
        // it fails over; after it, the client's stream ends in its format's error.
        if (rj::equals(finish, "error") || rj::equals(finish, "insufficient_system_resource") ||
            rj::equals(finish, "network_error")) {
            const QString why = toString(finish);
            m_out.fail(QStringLiteral("the upstream ended its answer with finish_reason \"%1\"").arg(why), why,
                       why == QLatin1String("error") ? std::nullopt : std::optional<int>(503));
            m_lastFailedOnPlainFrame = true; // a Chat client reads no error in the chunk itself
            return;
        }
        m_finishReason = toString(finish);
        m_out.closeAll(); // the usage chunk and [DONE] may still follow
    }
}

QList<StreamEvent> OpenAICompletionsStreamDecoder::finish() {
    if (!m_out.finished() && !m_finishReason.isEmpty())
        end(); // finished cleanly, the server just never sent [DONE]
    m_out.endOfBody();
    return m_out.take();
}

} // namespace sw::upstream
