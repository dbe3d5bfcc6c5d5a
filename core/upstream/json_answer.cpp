#include "core/upstream/json_answer.h"

#include "core/wire/rapid_json.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <algorithm>
#include <string>
#include <vector>

#include <limits>
#include <rapidjson/reader.h>

namespace sw::upstream {

namespace {

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

QByteArray compact(const QJsonObject &o) {
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

SseEvent event(const QByteArray &name, const QJsonObject &data) {
    SseEvent e;
    e.event = name;
    e.data = compact(data);
    return e;
}

SseEvent dataOnly(const QByteArray &data) {
    SseEvent e;
    e.data = data;
    return e;
}

bool hasError(const QJsonObject &o) {
    return o.contains(L("error")) && !o.value(L("error")).isNull();
}

// ---------------------------------------------------------------- OpenAI Chat

std::optional<QList<SseEvent>> chatEvents(const QJsonObject &completion) {
    const QJsonArray choices = completion.value(L("choices")).toArray();
    if (hasError(completion) || choices.isEmpty())
        return std::nullopt;
    QJsonObject chunk = completion;
    chunk.remove(L("usage"));
    chunk.insert(L("object"), L("chat.completion.chunk"));
    QJsonArray deltas;
    for (const QJsonValue &c : choices) {
        QJsonObject choice = c.toObject();
        if (!choice.value(L("message")).isObject())
            return std::nullopt;
        QJsonObject delta = choice.take(L("message")).toObject();
        // A chunk's tool calls name their index; a message's list them in order.
        if (delta.value(L("tool_calls")).isArray()) {
            QJsonArray calls;
            for (const QJsonValue &call : delta.value(L("tool_calls")).toArray()) {
                QJsonObject indexed = call.toObject();
                indexed.insert(L("index"), calls.size());
                calls.append(indexed);
            }
            delta.insert(L("tool_calls"), calls);
        }
        choice.insert(L("delta"), delta);
        deltas.append(choice);
    }
    chunk.insert(L("choices"), deltas);
    QList<SseEvent> out{dataOnly(compact(chunk))};
    // The usage in its own chunk with no choices, as a stream that was asked for it sends it.
    if (completion.value(L("usage")).isObject()) {
        QJsonObject usage;
        for (const char *key : {"id", "object", "created", "model", "system_fingerprint"})
            if (chunk.contains(L(key)))
                usage.insert(L(key), chunk.value(L(key)));
        usage.insert(L("choices"), QJsonArray());
        usage.insert(L("usage"), completion.value(L("usage")));
        out.append(dataOnly(compact(usage)));
    }
    out.append(dataOnly("[DONE]"));
    return out;
}

// ---------------------------------------------------------------- Anthropic Messages

std::optional<QList<SseEvent>> anthropicEvents(const QJsonObject &message) {
    if (message.value(L("type")).toString() != L("message") || !message.value(L("content")).isArray())
        return std::nullopt;
    QList<SseEvent> out;
    QJsonObject start = message;
    start.insert(L("content"), QJsonArray());
    start.insert(L("stop_reason"), QJsonValue::Null);
    start.insert(L("stop_sequence"), QJsonValue::Null);
    out.append(event("message_start", {{L("type"), L("message_start")}, {L("message"), start}}));
    const QJsonArray content = message.value(L("content")).toArray();
    for (qsizetype i = 0; i < content.size(); ++i) {
        QJsonObject block = content.at(i).toObject();
        const QString type = block.value(L("type")).toString();
        QList<QJsonObject> deltas;
        if (type == L("text")) {
            deltas.append({{L("type"), L("text_delta")}, {L("text"), block.value(L("text"))}});
            block.insert(L("text"), QString());
        } else if (type == L("thinking")) {
            deltas.append({{L("type"), L("thinking_delta")}, {L("thinking"), block.value(L("thinking"))}});
            if (!block.value(L("signature")).toString().isEmpty())
                deltas.append({{L("type"), L("signature_delta")}, {L("signature"), block.value(L("signature"))}});
            block.insert(L("thinking"), QString());
            block.insert(L("signature"), QString());
        } else if (block.value(L("input")).isObject()) { // tool_use, server_tool_use, mcp_tool_use
            const QByteArray input = compact(block.value(L("input")).toObject());
            deltas.append({{L("type"), L("input_json_delta")}, {L("partial_json"), QString::fromUtf8(input)}});
            block.insert(L("input"), QJsonObject());
        } // anything else (redacted_thinking, tool results) starts whole
        out.append(event("content_block_start",
                         {{L("type"), L("content_block_start")}, {L("index"), i}, {L("content_block"), block}}));
        for (const QJsonObject &delta : std::as_const(deltas))
            out.append(event("content_block_delta",
                             {{L("type"), L("content_block_delta")}, {L("index"), i}, {L("delta"), delta}}));
        out.append(event("content_block_stop", {{L("type"), L("content_block_stop")}, {L("index"), i}}));
    }
    QJsonObject delta{{L("stop_reason"), message.value(L("stop_reason"))},
                      {L("stop_sequence"), message.value(L("stop_sequence"))}};
    if (message.contains(L("container")))
        delta.insert(L("container"), message.value(L("container")));
    QJsonObject end{{L("type"), L("message_delta")}, {L("delta"), delta}};
    if (message.value(L("usage")).isObject())
        end.insert(L("usage"), message.value(L("usage")));
    out.append(event("message_delta", end));
    out.append(event("message_stop", {{L("type"), L("message_stop")}}));
    return out;
}

// ---------------------------------------------------------------- OpenAI Responses

class ResponsesEvents {
public:
    QList<SseEvent> out;
    void add(const char *type, QJsonObject data) {
        data.insert(L("type"), L(type));
        data.insert(L("sequence_number"), m_sequence++);
        if (!data.value(L("response")).isObject())
            return out.append(event(type, data));
        // The response's id comes first in it, as the API writes it: a passthrough client's
        // encoder takes the first "id" after "response" for its own (followPassthrough), and Qt
        // would put a nested id (a conversation's) before it.
        QJsonObject response = data.take(L("response")).toObject();
        const QJsonValue id = response.take(L("id"));
        QByteArray text = "{\"response\":{";
        if (!id.isUndefined()) {
            const QByteArray idText = QJsonDocument(QJsonArray{id}).toJson(QJsonDocument::Compact);
            text += "\"id\":" + idText.mid(1, idText.size() - 2);
            if (!response.isEmpty())
                text += ',';
        }
        text += compact(response).mid(1); // its members and the closing brace
        text += ',' + compact(data).mid(1);
        SseEvent e;
        e.event = type;
        e.data = text;
        out.append(e);
    }

private:
    int m_sequence = 0;
};

void messageItem(ResponsesEvents &ev, const QJsonObject &where, const QJsonArray &parts) {
    for (qsizetype ci = 0; ci < parts.size(); ++ci) {
        const QJsonObject part = parts.at(ci).toObject();
        const QString type = part.value(L("type")).toString();
        QJsonObject at = where;
        at.insert(L("content_index"), ci);
        QJsonObject empty = part;
        const char *field = type == L("refusal") ? "refusal" : "text";
        empty.insert(L(field), QString());
        if (type == L("output_text"))
            empty.insert(L("annotations"), QJsonArray());
        QJsonObject added = at;
        added.insert(L("part"), empty);
        ev.add("response.content_part.added", added);
        if (type == L("output_text") || type == L("refusal")) {
            const bool refusal = type == L("refusal");
            QJsonObject delta = at;
            delta.insert(L("delta"), part.value(L(field)));
            ev.add(refusal ? "response.refusal.delta" : "response.output_text.delta", delta);
            QJsonObject done = at;
            done.insert(L(field), part.value(L(field)));
            ev.add(refusal ? "response.refusal.done" : "response.output_text.done", done);
        }
        QJsonObject done = at;
        done.insert(L("part"), part);
        ev.add("response.content_part.done", done);
    }
}

void reasoningItem(ResponsesEvents &ev, const QJsonObject &where, const QJsonArray &summary) {
    for (qsizetype si = 0; si < summary.size(); ++si) {
        const QJsonObject part = summary.at(si).toObject();
        QJsonObject at = where;
        at.insert(L("summary_index"), si);
        QJsonObject added = at;
        added.insert(L("part"), QJsonObject{{L("type"), L("summary_text")}, {L("text"), QString()}});
        ev.add("response.reasoning_summary_part.added", added);
        QJsonObject delta = at;
        delta.insert(L("delta"), part.value(L("text")));
        ev.add("response.reasoning_summary_text.delta", delta);
        QJsonObject done = at;
        done.insert(L("text"), part.value(L("text")));
        ev.add("response.reasoning_summary_text.done", done);
        QJsonObject partDone = at;
        partDone.insert(L("part"), part);
        ev.add("response.reasoning_summary_part.done", partDone);
    }
}

std::optional<QList<SseEvent>> responsesEvents(const QJsonObject &response) {
    const QString status = response.value(L("status")).toString();
    // A failed, cancelled, queued or in-progress (background) response is no answer.
    if (hasError(response) || !response.value(L("output")).isArray() ||
        (response.value(L("object")).toString() != L("response") && status.isEmpty()) ||
        !(status.isEmpty() || status == L("completed") || status == L("incomplete")))
        return std::nullopt;
    ResponsesEvents ev;
    QJsonObject created = response;
    created.insert(L("status"), L("in_progress"));
    created.insert(L("output"), QJsonArray());
    created.remove(L("usage"));
    created.remove(L("incomplete_details"));
    ev.add("response.created", {{L("response"), created}});
    const QJsonArray output = response.value(L("output")).toArray();
    for (qsizetype oi = 0; oi < output.size(); ++oi) {
        const QJsonObject item = output.at(oi).toObject();
        const QString type = item.value(L("type")).toString();
        QJsonObject where{{L("output_index"), oi}};
        if (item.contains(L("id")))
            where.insert(L("item_id"), item.value(L("id")));
        QJsonObject added = item;
        if (item.contains(L("status")))
            added.insert(L("status"), L("in_progress"));
        if (type == L("message"))
            added.insert(L("content"), QJsonArray());
        else if (type == L("reasoning"))
            added.insert(L("summary"), QJsonArray());
        else if (type == L("function_call"))
            added.insert(L("arguments"), QString());
        else if (type == L("custom_tool_call"))
            added.insert(L("input"), QString());
        ev.add("response.output_item.added", {{L("output_index"), oi}, {L("item"), added}});
        if (type == L("message")) {
            messageItem(ev, where, item.value(L("content")).toArray());
        } else if (type == L("reasoning")) {
            reasoningItem(ev, where, item.value(L("summary")).toArray());
        } else if (type == L("function_call") || type == L("custom_tool_call")) {
            // A call's input arrives as one delta, then its done event, as a stream sends it.
            const bool custom = type == L("custom_tool_call");
            const QLatin1String field = custom ? L("input") : L("arguments");
            const QByteArray prefix = custom ? "response.custom_tool_call_input" : "response.function_call_arguments";
            QJsonObject delta = where;
            delta.insert(L("delta"), item.value(field));
            ev.add((prefix + ".delta").constData(), delta);
            QJsonObject done = where;
            done.insert(field, item.value(field));
            ev.add((prefix + ".done").constData(), done);
        }
        ev.add("response.output_item.done", {{L("output_index"), oi}, {L("item"), item}});
    }
    ev.add(status == L("incomplete") ? "response.incomplete" : "response.completed", {{L("response"), response}});
    return ev.out;
}

// ---------------------------------------------------------------- Google Generative AI

bool isGeminiChunk(const QJsonObject &chunk) {
    return !hasError(chunk) &&
           (!chunk.value(L("candidates")).toArray().isEmpty() || chunk.value(L("promptFeedback")).isObject());
}

std::optional<QList<SseEvent>> googleEvents(const QJsonDocument &doc) {
    // One GenerateContentResponse is a stream's chunk as it is; streamGenerateContent without
    // alt=sse answers a JSON array of them.
    QList<SseEvent> out;
    if (doc.isObject()) {
        if (!isGeminiChunk(doc.object()))
            return std::nullopt;
        out.append(dataOnly(compact(doc.object())));
        return out;
    }
    for (const QJsonValue &v : doc.array()) {
        if (!v.isObject() || hasError(v.toObject()))
            return std::nullopt;
        out.append(dataOnly(compact(v.toObject())));
    }
    const QJsonArray chunks = doc.array();
    if (std::none_of(chunks.begin(), chunks.end(), [](const QJsonValue &v) { return isGeminiChunk(v.toObject()); }))
        return std::nullopt;
    return out;
}

// ---------------------------------------------------------------- Counting blocks and values

// blocksOf without a document: the same lists counted in one SAX pass over the text, which holds
// nothing but the path to the current value (a QJsonDocument of a 57 MB answer of a million tool
// calls is half a gigabyte). The pass counts the values (keys included) too, as a request body's
// are (rj::ParsedJson::maxValuesFor), and stops at the first past `maxValues`.
class BlockCounter : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, BlockCounter> {
public:
    BlockCounter(wire::Api api, qsizetype maxValues) : m_api(api), m_valuesLeft(maxValues) {}
    qsizetype blocks = 0;
    bool tooManyValues = false;

    bool Default() { return counted() && value(); }
    bool StartObject() { return counted() && open(false); }
    bool StartArray() { return counted() && open(true); }
    bool EndObject(rapidjson::SizeType) { return close(); }
    bool EndArray(rapidjson::SizeType) { return close(); }
    bool Key(const char *name, rapidjson::SizeType length, bool) {
        if (!counted())
            return false;
        m_key.assign(name, length);
        if (m_api == wire::Api::Google && m_key == "functionCall" &&
            (m_path == "/candidates/[]/content/parts/[]" || m_path == "/[]/candidates/[]/content/parts/[]"))
            ++blocks;
        return true;
    }

private:
    struct Frame {
        std::size_t pathSize;
        bool array;
    };
    wire::Api m_api;
    qsizetype m_valuesLeft;
    std::string m_path; // "/content", "/choices/[]/message/tool_calls": how the current container was reached
    std::string m_key;  // the member name the next value has, in an object
    std::vector<Frame> m_frames;

    // One more value or key: past the bound the pass ends there.
    bool counted() {
        tooManyValues = m_valuesLeft == 0;
        return m_valuesLeft-- > 0;
    }
    // A value starts in the current container: counted when that container is a listed one.
    bool value() {
        if (m_frames.empty() || !m_frames.back().array)
            return true;
        switch (m_api) {
        case wire::Api::AnthropicMessages:
            blocks += m_path == "/content";
            break;
        case wire::Api::OpenAICompletions:
            blocks += m_path == "/choices/[]/message/tool_calls";
            break;
        case wire::Api::OpenAIResponses:
            blocks += m_path == "/output" || m_path == "/output/[]/content";
            break;
        case wire::Api::Google:
        case wire::Api::Pi:
            break;
        }
        return true;
    }
    bool open(bool array) {
        value();
        const std::size_t size = m_path.size();
        if (!m_frames.empty()) {
            m_path += '/';
            m_path += m_frames.back().array ? std::string("[]") : m_key;
        }
        m_frames.push_back({size, array});
        return true;
    }
    bool close() {
        m_path.resize(m_frames.back().pathSize);
        m_frames.pop_back();
        return true;
    }
};

// The blocks `body` lists; nullopt when RapidJSON refuses the text (Qt may still take it) or it
// holds more than `maxValues` values (then *tooManyValues is set).
std::optional<qsizetype> countBlocks(wire::Api api, const QByteArray &body, qsizetype maxValues, bool *tooManyValues) {
    BlockCounter handler(api, maxValues);
    rapidjson::Reader reader;
    // RapidJSON's SIMD scan (RAPIDJSON_SSE2) loads aligned 16-byte blocks, and the one holding a
    // string's closing quote may reach past the text: it reads a copy padded with 16 zeroed bytes.
    QByteArray padded;
    padded.reserve(body.size() + 16);
    padded.append(body).append(16, '\0');
    rapidjson::StringStream in(padded.constData());
    const bool parsed =
        !reader.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseStopWhenDoneFlag>(in, handler).IsError();
    *tooManyValues = handler.tooManyValues;
    if (!parsed)
        return std::nullopt;
    return handler.blocks;
}

// The most values (keys included) a JSON text holds, without parsing it: each but the first
// follows a '[', '{', ',' or ':' outside its strings. For a text RapidJSON refuses and Qt may take
// (a raw control character in a string), whose SAX count stopped at that byte.
qsizetype valuesAtMost(const QByteArray &json) {
    qsizetype n = 1;
    bool inString = false;
    bool escaped = false;
    for (const char c : json) {
        if (inString) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                inString = false;
        } else if (c == '"') {
            inString = true;
        } else if (c == '[' || c == '{' || c == ',' || c == ':') {
            ++n;
        }
    }
    return n;
}

// The content blocks `doc` must become at least (what each answer's shape lists), counted before
// a single event is made: an answer of a million tiny tool calls is refused for what it is
// instead of costing a million events first. Text that a stream may merge is not counted.
qsizetype blocksOf(wire::Api api, const QJsonDocument &doc) {
    qsizetype n = 0;
    switch (api) {
    case wire::Api::OpenAICompletions:
        for (const QJsonValue &c : doc.object().value(L("choices")).toArray())
            n += c.toObject().value(L("message")).toObject().value(L("tool_calls")).toArray().size();
        break;
    case wire::Api::AnthropicMessages:
        n = doc.object().value(L("content")).toArray().size();
        break;
    case wire::Api::OpenAIResponses:
        for (const QJsonValue &v : doc.object().value(L("output")).toArray())
            n += 1 + v.toObject().value(L("content")).toArray().size();
        break;
    case wire::Api::Google: {
        const QJsonArray chunks = doc.isObject() ? QJsonArray{doc.object()} : doc.array();
        for (const QJsonValue &chunk : chunks)
            for (const QJsonValue &candidate : chunk.toObject().value(L("candidates")).toArray())
                for (const QJsonValue &part :
                     candidate.toObject().value(L("content")).toObject().value(L("parts")).toArray())
                    n += part.toObject().contains(L("functionCall")) ? 1 : 0;
        break;
    }
    case wire::Api::Pi:
        break;
    }
    return n;
}

} // namespace

std::optional<QList<SseEvent>> eventsOfJsonAnswer(wire::Api api, const QByteArray &body) {
    return eventsOfJsonAnswer(api, body, std::numeric_limits<qsizetype>::max(), nullptr, nullptr);
}

std::optional<QList<SseEvent>> eventsOfJsonAnswer(wire::Api api, const QByteArray &body, qsizetype maxBlocks,
                                                  qsizetype *blocks, bool *tooManyValues) {
    if (blocks)
        *blocks = 0;
    if (tooManyValues)
        *tooManyValues = false;
    // Blocks and values are counted before any tree is made: Qt's tree of a 60 MB answer of `0,`
    // held 621 MB and the engine 3.5 s, on every retry, before the decoder's bound refused the
    // event made of it (probe AA2-F3). The blocks are counted in the document only when RapidJSON
    // does not read the text (Qt takes a few texts RapidJSON refuses).
    const auto maxValues = qsizetype(wire::rj::ParsedJson::maxValuesFor(size_t(body.size())));
    bool tooMany = false;
    const std::optional<qsizetype> counted = countBlocks(api, body, maxValues, &tooMany);
    if (!counted && !tooMany)
        tooMany = valuesAtMost(body) > maxValues;
    if (tooMany) {
        if (tooManyValues)
            *tooManyValues = true;
        return std::nullopt;
    }
    if (counted && blocks)
        *blocks = *counted;
    if (counted && *counted > maxBlocks)
        return std::nullopt;
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(body, &error);
    if (error.error != QJsonParseError::NoError)
        return std::nullopt;
    if (!counted) {
        const qsizetype n = blocksOf(api, doc);
        if (blocks)
            *blocks = n;
        if (n > maxBlocks)
            return std::nullopt;
    }
    switch (api) {
    case wire::Api::OpenAICompletions:
        return doc.isObject() ? chatEvents(doc.object()) : std::nullopt;
    case wire::Api::AnthropicMessages:
        return doc.isObject() ? anthropicEvents(doc.object()) : std::nullopt;
    case wire::Api::OpenAIResponses:
        return doc.isObject() ? responsesEvents(doc.object()) : std::nullopt;
    case wire::Api::Google:
        return googleEvents(doc);
    case wire::Api::Pi:
        break; // no upstream speaks it
    }
    return std::nullopt;
}

} // namespace sw::upstream
