#include "core/upstream/upstream_attempt.h"

#include "core/credentials/credential_pools.h"
#include "core/credentials/park_policy.h"
#include "core/failover/failure_classifier.h"
#include "core/failover/retry_policy.h"
#include "core/http/content_coding.h"
#include "core/upstream/canonical_stream_builder.h"
#include "core/upstream/delta_secret_scrub.h"
#include "core/upstream/http1_response_parser.h"
#include "core/upstream/json_answer.h"
#include "core/upstream/stop_sequence_decoder.h"
#include "core/upstream/tool_names.h"
#include "core/util/byte_budget.h"
#include "core/util/redaction.h"
#include "core/wire/client_body.h"
#include "core/wire/dropped_members.h"
#include "core/wire/rapid_json.h"

#include <QDateTime>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QSet>
#include <QUrl>
#include <algorithm>

#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace sw::upstream {

namespace {
constexpr qint64 kMaxErrorBody = 64 * 1024;
// An event still arriving counts as upstream activity once it holds this much (onBodyData).
constexpr qsizetype kEventInProgressBytes = 4 * 1024;
// What the SSE reader may hold of an event still arriving (or an unfinished line) before its bytes
// take from limits.maxBodyBytesInFlight (holdUnfinishedEvent): more than an ordinary event or a
// chunk's unfinished tail, so a healthy stream never touches the budget for them.
constexpr qsizetype kFreeUnfinishedEventBytes = 64 * 1024;
// What a character a Responses or pi client's answer keeps costs: the encoder's copy of the message
// and the builder's of each open block, UTF-16 both; a finished block leaves them for the encoder's
// output, as UTF-8 JSON (the closing events that repeat the text leave as the client reads them, held
// as its unread bytes are). A Chat client's custom call, kept until its end and then read and
// written whole, costs as much.
constexpr qint64 kKeptStreamCost = 4;

// The characters (a block's base64 data: bytes) a frame's events bring for an encoder or builder to
// keep: the deltas, and the blocks as they open or arrive whole. Not the upstream's framing: a Chat
// chunk of 320 bytes carries a token of four characters, and charged by its bytes twelve ordinary
// answers took the whole shared budget (probe AC2 F1). A block's End carries it whole, and the
// encoder writes it into the finished output as the builder lets it go: only what its Start and
// deltas did not bring counts then (`charged` follows the open blocks, by content index; at most
// CanonicalStreamBuilder::kMaxContentBlocks). What a frame holds beyond what it brings is charged
// as held (kHeldStreamCost).
qint64 keptChars(const QList<model::StreamEvent> &events, QHash<int, qint64> &charged) {
    qint64 total = 0;
    for (const model::StreamEvent &ev : events) {
        const model::ContentBlock &b = ev.block;
        const qint64 chars = ev.delta.size() + ev.errorMessage.size() + ev.responseId.size() + b.text.size() +
                             b.signature.size() + b.argumentsJson.size() + b.toolCallId.size() + b.toolName.size() +
                             b.itemId.size() + b.url.size() + b.title.size() + b.mimeType.size() + b.data.size();
        switch (ev.type) {
        case model::EventType::TextStart:
        case model::EventType::TextDelta:
        case model::EventType::ThinkingStart:
        case model::EventType::ThinkingDelta:
        case model::EventType::ToolCallStart:
        case model::EventType::ToolCallDelta:
            charged[ev.contentIndex] += chars;
            total += chars;
            break;
        case model::EventType::TextEnd:
        case model::EventType::ThinkingEnd:
        case model::EventType::ToolCallEnd:
            total += std::max<qint64>(0, chars - charged.take(ev.contentIndex));
            break;
        default:
            total += chars;
            break;
        }
    }
    return total;
}

// The characters of a JSON text's string values (a member's value or an array's element, not its
// names), escapes counted as one: what a broken JSON answer had said, for the estimate it is billed by.
qint64 stringValueChars(const QByteArray &json) {
    qint64 chars = 0;
    bool inString = false;
    bool isValue = false;
    char before = 0;        // the last byte outside strings that is not whitespace
    std::vector<char> open; // the containers around, '{' or '['
    for (qsizetype i = 0; i < json.size(); ++i) {
        const char c = json.at(i);
        if (inString) {
            if (c == '\\') {
                ++i;
                chars += isValue;
            } else if (c == '"') {
                inString = false;
            } else if ((uchar(c) & 0xC0) != 0x80) { // a character, not a continuation byte of UTF-8
                chars += isValue;
            }
            continue;
        }
        switch (c) {
        case '"':
            inString = true;
            // After ':' a member's value; in an array, after '[' or ',', an element.
            isValue = before == ':' || (!open.empty() && open.back() == '[' && (before == '[' || before == ','));
            continue;
        case '{':
        case '[':
            open.push_back(c);
            break;
        case '}':
        case ']':
            if (!open.empty())
                open.pop_back();
            break;
        case ' ':
        case '\n':
        case '\r':
        case '\t':
            continue;
        default:
            break;
        }
        before = c;
    }
    return chars;
}

// Whether a response's head says where its body ends, as Http1ResponseParser reads it (RFC 9112
// 6.3): chunked as the last transfer coding, or a Content-Length and no Transfer-Encoding. A body
// that ended cleanly ended there, whole, and not with its connection.
bool headFramesItsBody(const HeaderList &headers) {
    const QByteArray codings = headerValue(headers, "transfer-encoding").trimmed();
    if (!codings.isEmpty())
        return Http1ResponseParser::chunkedIsLast(codings);
    return !headerValue(headers, "content-length").trimmed().isEmpty();
}

// Whether a JSON text stops before its end: read to its last byte, it wants more (a close-delimited
// answer whose connection ended mid-way). Iterative: a hostile nesting costs no stack.
bool endsBeforeComplete(const QByteArray &json) {
    // RapidJSON's SSE2 scan loads 16 aligned bytes at a time, which may reach past the text's end:
    // it reads a copy padded with 16 zeroed bytes, as rj::ParsedJson's.
    QByteArray padded = json;
    padded.append(QByteArray(16, '\0'));
    rapidjson::Reader reader;
    rapidjson::BaseReaderHandler<> ignore;
    rapidjson::StringStream in(padded.constData());
    reader.Parse<rapidjson::kParseIterativeFlag>(in, ignore);
    return reader.HasParseError() && reader.GetErrorOffset() >= size_t(json.size());
}

// Whether `events` add to the input of a custom tool's call that a Chat client's encoder keeps
// until the call ends; `open` follows the calls (their content indexes) from start to end.
bool addsToCustomCall(const QList<model::StreamEvent> &events, const QStringList &customTools, QSet<int> &open) {
    bool adds = false;
    for (const model::StreamEvent &ev : events) {
        if (ev.type == model::EventType::ToolCallStart && customTools.contains(ev.block.toolName))
            open.insert(ev.contentIndex);
        else if (ev.type == model::EventType::ToolCallDelta && !ev.delta.isEmpty())
            adds = adds || open.contains(ev.contentIndex);
        else if (ev.type == model::EventType::ToolCallEnd)
            open.remove(ev.contentIndex);
    }
    return adds;
}

// What a streamed byte costs while the loop holds it before the commit: the decoded event, the raw
// frame kept for a same-API client, and the block's text in the builder (an outside probe measured
// 22 MB of RSS for 7.2 MB of held signature deltas).
constexpr qint64 kHeldStreamCost = 3;

// Two base URLs naming one API root: `http://h:8080/v1` and `HTTP://H:8080/v1/`, `https://h` and
// `https://h:443`. The caller's key is bound to one root; a root written twice was told apart by a
// trailing slash, and the second provider at the same server skipped (probe JV L3).
bool sameBaseUrl(const QString &a, const QString &b) {
    if (a == b)
        return true;
    const auto root = [](const QString &s) {
        const QUrl url(s);
        QString path = url.path();
        while (path.endsWith(QLatin1Char('/')))
            path.chop(1);
        return hostKeyOf(url) + path;
    };
    return root(a) == root(b);
}

// Every string of a request body as the upstream reads it (member names and values, escapes
// decoded): what a 400 can quote back.
void appendStrings(const wire::rj::Value &v, QStringList &out, int depth) {
    if (depth > wire::rj::kMaxDepth)
        return;
    if (v.IsString()) {
        out += QString::fromUtf8(v.GetString(), qsizetype(v.GetStringLength()));
    } else if (v.IsObject()) {
        for (const auto &m : v.GetObject()) {
            out += QString::fromUtf8(m.name.GetString(), qsizetype(m.name.GetStringLength()));
            appendStrings(m.value, out, depth + 1);
        }
    } else if (v.IsArray()) {
        for (const auto &e : v.GetArray())
            appendStrings(e, out, depth + 1);
    }
}

// The forms a server writes a request string in when it quotes it escaped: JSON's (`\n`, `\"`,
// `\u00e9` where ASCII only), and Python's repr (`\n`, `\'`, `\x07`), which vLLM and other
// Python servers put in their 400s. A tenant's "\ncredit balance" quoted as `'\ncredit balance'` is
// still a quote (probe R3 F2: read as the provider's own words, it parked a shared key for an hour).
// Only strings holding a character some form escapes get them.
void appendEscapedForms(const QString &s, QStringList &out) {
    const auto needsEscape = [](QChar c) {
        return c.unicode() < 0x20 || c.unicode() >= 0x7f || c == u'\\' || c == u'"' || c == u'\'';
    };
    if (std::none_of(s.begin(), s.end(), needsEscape))
        return;
    const auto hex = [](uint v, int digits) { return QStringLiteral("%1").arg(v, digits, 16, QLatin1Char('0')); };
    QString json, jsonAscii, python;
    for (const QChar c : s) {
        const char16_t u = c.unicode();
        QString shortForm;
        switch (u) {
        case u'\n':
            shortForm = QStringLiteral("\\n");
            break;
        case u'\r':
            shortForm = QStringLiteral("\\r");
            break;
        case u'\t':
            shortForm = QStringLiteral("\\t");
            break;
        case u'\\':
            shortForm = QStringLiteral("\\\\");
            break;
        default:
            break;
        }
        if (!shortForm.isEmpty()) {
            json += shortForm;
            jsonAscii += shortForm;
            python += shortForm;
        } else if (u < 0x20 || u == 0x7f) {
            json += QStringLiteral("\\u") + hex(u, 4);
            jsonAscii += QStringLiteral("\\u") + hex(u, 4);
            python += QStringLiteral("\\x") + hex(u, 2);
        } else if (u == u'"') {
            json += QStringLiteral("\\\"");
            jsonAscii += QStringLiteral("\\\"");
            python += c;
        } else if (u == u'\'') {
            json += c;
            jsonAscii += c;
            python += QStringLiteral("\\'");
        } else if (u >= 0x80) {
            json += c;
            jsonAscii += QStringLiteral("\\u") + hex(u, 4); // each half of a pair as its own escape
            python += c;
        } else {
            json += c;
            jsonAscii += c;
            python += c;
        }
    }
    if (jsonAscii != json && jsonAscii != s)
        out += jsonAscii;
    if (python != json && python != s)
        out += python;
    if (json != s)
        out += json;
}

// What an error answer could quote of the request (failover::FailureClassifier::withoutEchoes): the
// body's strings and the URL's path segments and query values (Gemini's model id), decoded. Read once,
// only when an error's words would otherwise decide a shared key's fate.
failover::FailureClassifier::RequestStrings stringsOf(const QByteArray &body, const QUrl &url) {
    auto sent = std::make_shared<std::optional<QStringList>>();
    return [sent, body, url]() -> const QStringList & {
        if (!*sent) {
            static const QRegularExpression segment(QStringLiteral("[/:&=?]"));
            QStringList all = (url.path(QUrl::FullyDecoded) + QLatin1Char('?') + url.query(QUrl::FullyDecoded))
                                  .split(segment, Qt::SkipEmptyParts);
            wire::rj::ParsedJson json(size_t(std::max<qsizetype>(body.size(), 4096)));
            if (json.parse(body))
                appendStrings(json.root(), all, 0);
            else
                all += QString::fromUtf8(body);
            for (qsizetype i = 0, n = all.size(); i < n; ++i)
                appendEscapedForms(QString(all.at(i)), all);
            *sent = std::move(all);
        }
        return **sent;
    };
}

// Whether `needle` occurs in `text`: glibc's memmem, several times faster than
// QByteArray::contains on the short frames every upstream event is tested with.
bool has(QByteArrayView text, QByteArrayView needle) {
    if (text.size() < needle.size())
        return false; // also an empty (null) text: memmem's pointers must not be null
    return ::memmem(text.data(), size_t(text.size()), needle.data(), size_t(needle.size())) != nullptr;
}

// Data of white space alone: an empty `data:` line. Stops at the first other byte, which in a JSON
// frame is the first.
bool isBlank(QByteArrayView data) {
    return std::all_of(data.begin(), data.end(),
                       [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; });
}

// Anthropic's `event: ping`, and the {"type":"ping"} others copy.
bool isPingFrame(const upstream::SseEvent &r) {
    return r.event == "ping" || (r.data.size() < 128 && has(r.data, "\"ping\""));
}

// Frames that cannot change what the client sees, so they are never kept for replay
// before commit: keepalive pings and empty deltas (a flood of them once took RSS to 1 GiB).
bool isNoiseFrame(const upstream::SseEvent &r, const QList<model::StreamEvent> &events) {
    if (isPingFrame(r))
        return true;
    // An event whose data is empty (`data: ` sent as is, or a last line cut after `data:`) says
    // nothing, and relayed as it came it is no JSON: the OpenAI SDKs threw a SyntaxError on it and
    // lost an answer the gateway had ended with [DONE] (probe Y1 F1).
    if (events.isEmpty() && isBlank(r.data))
        return true;
    if (!events.isEmpty())
        return false; // decided by the hold, per event
    // A frame that decoded to nothing may still carry content a decoder defers (a second
    // tool call's deltas while the first is open), so only a provably empty delta is
    // noise: a delta holding no more than its type or role and empty strings (Anthropic
    // content_block_delta, Responses *.delta, Chat choices), with no finish reason or usage.
    // Anything else is held, and counted against maxHoldBytes.
    if (r.data.size() > 1024 || !has(r.data, "\"delta\""))
        return false;
    // Read with RapidJSON as QJsonDocument would read it (core/wire/rapid_json.h); Qt's parser
    // here was 15 k instructions a stream, for the message_delta every Anthropic stream sends.
    const auto emptyString = [](const wire::rj::Value *v) { return v && v->IsString() && v->GetStringLength() == 0; };
    const auto emptyDelta = [&emptyString](const wire::rj::Value *d) {
        if (!d)
            return false; // undefined
        if (d->IsNull() || emptyString(d))
            return true;
        if (!d->IsObject())
            return false;
        for (auto it = d->MemberBegin(); it != d->MemberEnd(); ++it) {
            const std::string_view name(it->name.GetString(), it->name.GetStringLength());
            if (name == "type" || name == "role")
                continue;
            const wire::rj::Value *value = wire::rj::member(d, name); // the last duplicate counts
            if (!value->IsNull() && !emptyString(value))
                return false;
        }
        return true;
    };
    wire::rj::ParsedJson parsed;
    parsed.parse(r.data);
    const wire::rj::Value *frame = parsed.object(); // nullptr: refused, or not an object
    if (!wire::rj::isAbsent(wire::rj::member(frame, "usage")))
        return false;
    const wire::rj::Value *choices = wire::rj::member(frame, "choices");
    if (!choices)
        return emptyDelta(wire::rj::member(frame, "delta"));
    for (const wire::rj::Value &c : wire::rj::elements(choices)) {
        const wire::rj::Value *choice = wire::rj::asObject(&c);
        // Another choice than the first (a client's `n`) is none of the decoder's: its role-only first
        // frame is what an SDK builds the choice from, and relayed ("missing role for choice 1").
        if (const wire::rj::Value *index = wire::rj::member(choice, "index");
            wire::rj::isNumber(index) && wire::rj::toDouble(index) != 0)
            return false;
        // No finish reason: null, or left out (as some servers do on every chunk but the last).
        if (!wire::rj::isAbsent(wire::rj::member(choice, "finish_reason")) ||
            !emptyDelta(wire::rj::member(choice, "delta")))
            return false;
    }
    return wire::rj::arraySize(choices) > 0;
}

// `"choices"` as an empty array, by the text (a parse is then made only of such a chunk).
bool hasNoChoice(QByteArrayView data) {
    const qsizetype at = data.indexOf("\"choices\"");
    if (at < 0)
        return false;
    const auto skipSpace = [&data](qsizetype i) {
        while (i < data.size() && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r'))
            ++i;
        return i;
    };
    qsizetype i = skipSpace(at + 9);
    if (i >= data.size() || data[i] != ':')
        return false;
    i = skipSpace(i + 1);
    if (i >= data.size() || data[i] != '[')
        return false;
    i = skipSpace(i + 1);
    return i < data.size() && data[i] == ']';
}

// A frame that decoded to nothing, is not noise, and still only says the upstream is there: a
// Responses in_progress event (it repeats what response.created said), or a Gemini chunk (the
// decoder makes an event of every part that says something; code the model runs is work).
bool isKeepaliveFrame(const upstream::SseEvent &r) {
    if (has(r.data, "\"candidates\""))
        return !has(r.data, "\"executableCode\"") && !has(r.data, "\"codeExecutionResult\"");
    if (hasNoChoice(r.data)) {
        // A Chat chunk of no choice and no usage (Azure's prompt_filter_results, or a server that
        // sends only these): the server is there, the answer no further. As activity, a stream of
        // them every second held a last candidate until the hold bound, hours on (probe H4 3).
        wire::rj::ParsedJson parsed;
        parsed.parse(r.data);
        const wire::rj::Value *chunk = parsed.object();
        const wire::rj::Value *choices = wire::rj::member(chunk, "choices");
        if (choices && choices->IsArray() && choices->Empty() && wire::rj::isAbsent(wire::rj::member(chunk, "usage")))
            return true;
    }
    return r.event == "response.in_progress" || r.data.startsWith(R"({"type":"response.in_progress")");
}

// A frame that decoded to nothing, yet shows the upstream at work on this answer: a Responses item
// or part that is not the message's own text (a tool the server runs, a reasoning item, their
// progress and ends), an Anthropic block's start or end, the message's closing delta. A frame of a
// kind not known, a start again, a queued event or an empty message item or part shows nothing.
// By its type alone: whether such a frame shows work; nullopt for a new output item, which its
// item's type decides.
std::optional<bool> typeShowsWork(std::string_view type) {
    if (type.substr(0, 9) == "response.") {
        if (type == "response.output_item.added")
            return std::nullopt;
        // A server tool's or reasoning item's progress, an item or part's end; not created, queued,
        // an empty part or a kind not known.
        return type.find("_call") != type.npos || type.find("reasoning") != type.npos ||
               type == "response.output_item.done" || type == "response.content_part.done";
    }
    return type == "content_block_start" || type == "content_block_stop" || type == "message_delta";
}

bool showsWork(const upstream::SseEvent &r) {
    // Named on its event line (Anthropic, most Responses servers): no parse, but for a new item.
    const std::string_view line(r.event.constData(), size_t(r.event.size()));
    if (!line.empty() && line != "message")
        if (const auto known = typeShowsWork(line))
            return *known;
    // Else read whole, once: some Responses servers send no event line (the payload's "type" is
    // authoritative, as for the decoders), and a writer may put blanks after its colons.
    wire::rj::ParsedJson parsed;
    parsed.parse(r.data);
    const wire::rj::Value *frame = parsed.object();
    const std::string_view type = wire::rj::eventType(frame, r.event);
    if (const auto known = typeShowsWork(type))
        return *known;
    // A new item of the model's own message, empty yet, says nothing; a tool call or a reasoning
    // item is work.
    const wire::rj::Value *item = wire::rj::asObject(wire::rj::member(frame, "item"));
    return !wire::rj::equals(wire::rj::member(item, "type"), "message");
}

bool is2xx(int status) {
    return status >= 200 && status < 300;
}

// Every upstream request asks for an event stream. A 2xx answer typed as JSON or HTML is never
// one: a compatible server's error sent with 200, a proxy's or a captive portal's page, or (JSON)
// the whole answer of a server that ignores `stream`. Its media type is returned; empty for a
// stream, text/plain, or no Content-Type (read as a stream).
QByteArray notAStream(const HeaderList &headers) {
    QByteArray type = headerValue(headers, "content-type");
    if (const qsizetype semicolon = type.indexOf(';'); semicolon >= 0)
        type.truncate(semicolon);
    type = type.trimmed().toLower();
    const bool json = type == "application/json" || (type.startsWith("application/") && type.endsWith("+json"));
    return json || type == "text/html" ? type.left(64) : QByteArray();
}

// The request as it asks for its answer whole (Target::noStream): `stream` false and no
// `stream_options`, accepting JSON. Only on the rare try after a refusal to stream (probe V1 F4), so
// the body is parsed again rather than every adapter made to write it both ways. A body that is not a
// JSON object (Gemini's streams by its URL) is left as it is: the refusal then comes again.
void askForTheAnswerWhole(HttpRequest &req) {
    QJsonObject body = QJsonDocument::fromJson(req.body).object();
    if (body.isEmpty() || !body.contains(QLatin1String("stream")))
        return;
    body.insert(QLatin1String("stream"), false);
    body.remove(QLatin1String("stream_options"));
    req.body = QJsonDocument(body).toJson(QJsonDocument::Compact);
    for (auto &[name, value] : req.headers)
        if (name.compare("accept", Qt::CaseInsensitive) == 0)
            value = QByteArrayLiteral("application/json");
}

// Every string in `value` through `scrub` (true when it took something out); true when any did.
template <typename Scrub> bool scrubStrings(QJsonValue &value, const Scrub &scrub) {
    // Rebuilt only along a path that held the key: an answer without it is not copied.
    if (value.isString()) {
        QString text = value.toString();
        if (!scrub(text))
            return false;
        value = text;
        return true;
    }
    bool changed = false;
    if (value.isObject()) {
        QJsonObject object = value.toObject();
        QList<std::pair<QString, QJsonValue>> scrubbed;
        for (auto it = object.constBegin(); it != object.constEnd(); ++it) {
            QJsonValue member = it.value();
            if (scrubStrings(member, scrub))
                scrubbed.append({it.key(), std::move(member)});
        }
        for (auto &[key, member] : scrubbed)
            object.insert(key, member);
        changed = !scrubbed.isEmpty();
        if (changed)
            value = object;
    } else if (value.isArray()) {
        QJsonArray array = value.toArray();
        for (qsizetype i = 0; i < array.size(); ++i) {
            QJsonValue item = std::as_const(array).at(i);
            if (scrubStrings(item, scrub)) {
                array.replace(i, item);
                changed = true;
            }
        }
        if (changed)
            value = array;
    }
    return changed;
}

} // namespace

// One attempt's tries: the credential it holds and the call in flight.
struct UpstreamAttempts::Try {
    failover::AttemptId id = 0;
    failover::Candidate candidate;
    quint64 generation = 0; // bumped by abort(): callbacks of an older try are not heard
    bool started = false;
    int credentialIndex = 0;
    // target.credential as answer text would quote it (8 bytes or more: as sent, base64, hex...,
    // each in any case), for redactEvents; and the shortest of them.
    QStringList secretForms;
    qsizetype shortestSecretForm = 0;
    // A streamed answer's deltas, followed for the key split across them (absent when there is no
    // key to look for, or the answer is not streamed: a JSON answer is scrubbed whole).
    std::optional<DeltaSecretScrub> deltaScrub;
    credentials::Lease lease;
    Target target;
    const UpstreamAdapter *adapter = nullptr;
    bool passthrough = false;
    QPointer<UpstreamCall> call;
    SseReader sse;
    std::unique_ptr<StreamDecoder> decoder;
    int status = 0;
    QByteArray errorBody;
    HeaderList errorHeaders; // a non-2xx answer's headers: credential reset hints
    std::optional<qint64> headerRetryAfter;
    QByteArray sentBody; // the request as sent (shared with the call): what an error may quote back
    QUrl sentUrl;
    QByteArray location;   // a 3xx's Location, to name the redirect
    QByteArray notAStream; // a 2xx answer's media type when it is not an event stream (HTML, JSON error)
    // A 2xx stream whose first visible byte is not read yet (an HTML page?): its Content-Type.
    std::optional<QByteArray> unsniffedType;
    QByteArray jsonType;      // a 2xx JSON answer's media type: read whole, then an answer or an error
    QByteArray jsonBody;      // that answer so far, bounded as a JSON answer to a client is
    qint64 bodyBytes = 0;     // this try's answer so far (JSON or stream), bounded by limits.maxResponseBytes
    bool answerBegan = false; // a JSON answer's first meaningful event came: until then maxHoldBytes bounds it
    // The size of the event still arriving (or of the JSON answer) when its growth last counted as
    // upstream activity: it counts again only 4 KiB further on.
    qsizetype grownAtActivity = 0;
    // A Responses or pi client's stream: its encoder keeps the whole message for the closing events, and
    // the builder each block's text (kKeptStreamCost a character it keeps, taken from
    // limits.maxBodyBytesInFlight: keptChars).
    bool keepsMessage = false;
    QHash<int, qint64> keptOfOpenBlocks; // what each open block brought to keep so far (keptChars)
    // A Chat client's custom tools (ChatRequest::customToolNames), on a stream its encoder writes:
    // the encoder keeps each call's input until the call ends, as its one custom chunk
    // (OpenAIChatStreamEncoder). The content indexes of those calls still open.
    QStringList customTools;
    QSet<int> openCustomCalls;
    // This try's answer started (message_start, response.created): another start begins nothing new,
    // and repeated it moves the idle timer no more than a ping does (probe M3 1).
    bool startHeard = false;
    qint64 streamBytes = 0; // this try's stream body as it came, events or not
    // What the SSE reader holds of an event still arriving, past kFreeUnfinishedEventBytes, taken
    // from limits.maxBodyBytesInFlight (holdUnfinishedEvent); given back as the event completes or
    // the reader is dropped (dropSseReader).
    qint64 unfinishedEventTaken = 0;

    // The body is an error to classify, not an answer to decode.
    bool errorAnswer() const { return !is2xx(status) || !notAStream.isEmpty(); }
    // A 2xx stream that said its answer is complete (StreamDecoder::endSeen): a break or a
    // silence after that is the answer's end, not a failure.
    bool answerSaidItsEnd() const { return !errorAnswer() && jsonType.isEmpty() && decoder && decoder->endSeen(); }
};

UpstreamAttempts::UpstreamAttempts(UpstreamAttemptSetup setup, QObject *parent)
    : QObject(parent), m_setup(std::move(setup)) {}

UpstreamAttempts::~UpstreamAttempts() {
    for (auto &[id, t] : m_tries)
        abort(id);
    if (m_setup.bytesInFlight)
        m_setup.bytesInFlight->give(m_answerBytesTaken);
}

UpstreamAttempts::Try *UpstreamAttempts::current(failover::AttemptId id, quint64 generation) {
    const auto it = m_tries.find(id);
    return it == m_tries.end() || it->second->generation != generation ? nullptr : it->second.get();
}

void UpstreamAttempts::redactEvents(const Try &t, QList<model::StreamEvent> &events) const {
    // An error's words are redacted whole (the key, a bearer token, key-shaped tokens). The answer's
    // own text, which a client of another API (or a JSON answer) gets re-encoded rather than as the
    // upstream's frames, loses the attempt's key wherever it stands: an upstream that writes the key
    // it was sent into its answer shows it to no client (a passthrough frame is redacted whole).
    // In every form redactSecrets looks for in a raw frame (probe Q3 F3: a base64, upper-case or hex
    // echo of the key reached every client but a streaming same-API one).
    const QStringList &forms = t.secretForms;
    const qsizetype shortest = t.shortestSecretForm;
    const auto scrubForms = [&forms, shortest](QString &text) {
        if (forms.isEmpty() || text.size() < shortest)
            return false;
        bool hit = false;
        for (const QString &form : forms)
            if (text.size() >= form.size() && text.contains(form, Qt::CaseInsensitive)) {
                text.replace(form, QLatin1String(util::kRedacted), Qt::CaseInsensitive);
                hit = true;
            }
        return hit;
    };
    // JSON text a client parses again (a call's arguments, such a string of the native answer) holds
    // the key for it when written with escapes ("sk\u002d…"): its escaped strings are read decoded too
    // (probe AB2 F2). A text without a backslash costs one scan for it.
    const auto scrub = [&scrubForms, &forms, shortest](QString &text) {
        if (forms.isEmpty() || text.size() < shortest)
            return false;
        bool hit = scrubForms(text);
        if (text.contains(u'\\'))
            if (const auto decoded = util::redactEscapedLiterals(text.toUtf8(), scrubForms)) {
                text = QString::fromUtf8(*decoded);
                hit = true;
            }
        return hit;
    };
    for (model::StreamEvent &ev : events) {
        if (ev.type == model::EventType::Error) {
            ev.errorMessage = redacted(t, ev.errorMessage);
            ev.errorType = redacted(t, ev.errorType); // it reaches the client as the error's code
            continue;
        }
        scrub(ev.delta);
        scrub(ev.block.text);
        // What the upstream names and signs reaches a client re-encoded too: the answer's id, a
        // call's id and name, an item's id, a signature, a refusal's words (probe P2 1).
        scrub(ev.responseId);
        scrub(ev.errorMessage);
        scrub(ev.block.signature);
        scrub(ev.block.toolCallId);
        scrub(ev.block.toolName);
        scrub(ev.block.itemId);
        scrub(ev.block.url);
        if (scrub(ev.block.argumentsJson) && !ev.block.arguments.isEmpty()) // parsed from the text: again
            ev.block.arguments = QJsonDocument::fromJson(ev.block.argumentsJson.toUtf8()).object();
        // A JSON answer to a client of the upstream's own API is written from the upstream's whole
        // answer (every field it defines), not from the blocks above: its strings lose the key too.
        if (ev.type == model::EventType::Done && !ev.native.isEmpty() && !forms.isEmpty()) {
            QJsonValue native(std::move(ev.native));
            scrubStrings(native, scrub);
            ev.native = native.toObject();
        }
        // A Chat answer's usage object goes into it as the text the upstream wrote: redacted as that
        // text streamed in a frame is (probe AB2 F2: a JSON client got the key a usage field quoted).
        if (ev.type == model::EventType::Done && !ev.nativeUsageJson.isEmpty())
            ev.nativeUsageJson = util::redactSecretsInJson(ev.nativeUsageJson, t.target.credential);
    }
}

QString UpstreamAttempts::redirectTarget(const Try &t) const {
    // Where it points, enough to fix a baseUrl by: scheme, host, port and path. Its query,
    // fragment and user info may carry a signature or a token, and are left out.
    QUrl url(QString::fromUtf8(t.location.left(2048)));
    url.setUserInfo(QString());
    url.setQuery(QString());
    url.setFragment(QString());
    return redacted(t, url.toString(QUrl::FullyEncoded).left(512));
}

QString UpstreamAttempts::ownWords(const Try &t, const UpstreamErrorInfo &info) const {
    // What the failure is judged by: "type: message", redacted, with what it quotes of the request
    // masked where it would decide for every tenant (a shared key, a base URL's traits).
    const QString text = info.errorType.isEmpty() ? info.message : info.errorType + QStringLiteral(": ") + info.message;
    if (text.isEmpty())
        return {};
    const QString words =
        failover::FailureClassifier::withoutEchoes(redacted(t, text), stringsOf(t.sentBody, t.sentUrl));
    // Google's ErrorInfo reason when it refuses the key (API_KEY_INVALID, API_KEY_EXPIRED), after the
    // masking: an identifier of the provider's own (wire::ErrorBody::reason), no quote of the request,
    // and sure where the message says it in words no pattern knows ("API Key not found": probe AA4
    // F4). Other reasons are left out: their messages say them, and RATE_LIMIT_EXCEEDED or
    // SERVICE_DISABLED added to the words could tip how the rest is read.
    if (!credentials::keyRefusedWith400(info.reason))
        return words;
    return words + QStringLiteral(" (reason ") + info.reason + QLatin1Char(')');
}

QString UpstreamAttempts::redacted(const Try &t, const QString &text) const {
    // Some providers quote the key they rejected, whole or masked; it must not reach the client, a
    // log or the GUI.
    return util::redactErrorText(text, t.target.credential);
}

const QByteArray &UpstreamAttempts::callerAuthFor(const failover::Candidate &c) const {
    static const QByteArray kNone;
    if (m_setup.callerAuth.isEmpty() || m_setup.callerAuthBaseUrl.isEmpty())
        return kNone; // no passthrough provider in the chain: no URL to compare (a try asks up to four times)
    return sameBaseUrl(c.provider.baseUrl, m_setup.callerAuthBaseUrl) ? m_setup.callerAuth : kNone;
}

bool UpstreamAttempts::hasUsableCredential(const failover::Candidate &c) const {
    return m_setup.pools->hasUsable(c.provider.id, c.provider.credentials, !callerAuthFor(c).isEmpty());
}

QString UpstreamAttempts::whyNoCredential(const failover::Candidate &c) const {
    if (!m_setup.callerAuth.isEmpty() && callerAuthFor(c).isEmpty() &&
        c.provider.credentials.contains(QLatin1String("passthrough")))
        return QStringLiteral("provider \"%1\" forwards the caller's own key, which this request sends only to "
                              "provider \"%2\" (%3): a key goes to one provider's base URL")
            .arg(c.provider.id, m_setup.callerAuthProvider, m_setup.callerAuthBaseUrl);
    return m_setup.pools->whyNoneUsable(c.provider.id, c.provider.credentials, m_setup.tenant);
}

std::optional<failover::CredentialWait> UpstreamAttempts::credentialWait(const failover::Candidate &c) const {
    const auto wait =
        m_setup.pools->waitFor(c.provider.id, c.provider.credentials, !callerAuthFor(c).isEmpty(), m_setup.tenant);
    if (!wait)
        return std::nullopt;
    failover::CredentialWait out;
    out.remainingMs = wait->remainingMs;
    const QString reason = wait->reason == credentials::ParkReason::UsageLimit  ? QStringLiteral("a usage limit")
                           : wait->reason == credentials::ParkReason::Forbidden ? QStringLiteral("a refusal")
                                                                                : QStringLiteral("a rate limit");
    using Cause = failover::CredentialWait::Cause;
    out.cause = wait->reason == credentials::ParkReason::UsageLimit  ? Cause::UsageLimit
                : wait->reason == credentials::ParkReason::Forbidden ? Cause::Refusal
                                                                     : Cause::RateLimit;
    out.why = !wait->status ? reason
              : wait->lastError.isEmpty()
                  ? QStringLiteral("%1 (HTTP %2)").arg(reason).arg(wait->status)
                  : QStringLiteral("%1 (HTTP %2: %3)").arg(reason).arg(wait->status).arg(wait->lastError.left(300));
    return out;
}

void UpstreamAttempts::start(const failover::TryStart &s) {
    auto &slot = m_tries[s.id];
    if (!slot) {
        slot = std::make_unique<Try>();
        slot->id = s.id;
        slot->candidate = s.candidate;
    }
    Try &t = *slot;
    // The first try starts at the pool's first usable credential; a provider retry keeps
    // the one it used, a rotation takes the one after it.
    const auto &p = t.candidate.provider;
    int startIndex = !t.started ? 0 : s.nextCredential ? t.credentialIndex + 1 : std::max(0, t.credentialIndex);
    // Past the keys known not to reach this model (a 403 naming it, CredentialPools::noteOutOfReach);
    // when none is left, the first is asked once more: access may have been granted since.
    if (const int inReach = m_setup.pools->firstInReach(p.id, p.credentials, t.candidate.model.id, startIndex);
        inReach >= 0)
        startIndex = inReach;
    t.started = true;
    t.decoder.reset(); // the last try's counts are billed; this one's start at launch
    t.startHeard = false;
    t.streamBytes = 0;
    t.target.replayReasoning = !s.withoutReplayedReasoning;
    // A model that asked for the reasoning of tool-call turns back once gets it from then on (its own
    // rule, kept per base URL and model: ServerTraits).
    const QString &baseUrl = t.candidate.provider.baseUrl;
    if (s.withReasoningBack && m_setup.traits)
        m_setup.traits->learnAsksForReasoningBack(baseUrl, t.candidate.model.id);
    t.target.reasoningBack =
        s.withReasoningBack || (m_setup.traits && m_setup.traits->asksForReasoningBack(baseUrl, t.candidate.model.id));
    // A key refused a reasoning summary is asked for none from then on, and one a model would not
    // stream to is asked for that model's answers whole: its organisation's rules (ServerTraits, per
    // credential). Learned from the key the last try sent, by the first try that mends its refusal
    // (the mend then stays for the request, whichever key a later try of it takes); whether the key
    // this try gets was told so is asked once it is known (acquire, below).
    if (s.withoutReasoningSummary && t.target.reasoningSummary && m_setup.traits)
        m_setup.traits->learnRefusesReasoningSummary(t.target.baseUrl, t.target.credential);
    t.target.reasoningSummary = !s.withoutReasoningSummary;
    if (s.withoutStreaming && !t.target.noStream && m_setup.traits)
        m_setup.traits->learnRefusesToStream(t.target.baseUrl, t.target.credential, t.target.modelId);
    t.target.noStream = s.withoutStreaming;
    // A model that refused a tool call id not of nine characters of [a-zA-Z0-9] gets every id so from then on.
    if (s.withNineCharToolIds && m_setup.traits)
        m_setup.traits->learnTakesOnlyNineCharToolIds(baseUrl, t.candidate.model.id);
    t.target.nineCharToolIds =
        s.withNineCharToolIds ||
        (m_setup.traits && m_setup.traits->takesOnlyNineCharToolIds(baseUrl, t.candidate.model.id));
    // The model's configured maximum, or the lower one its upstream named when it refused more.
    t.target.maxOutputTokens = t.candidate.model.maxTokens;
    t.target.outputCapNamed = false;
    if (s.outputCap && (!t.target.maxOutputTokens || *s.outputCap < *t.target.maxOutputTokens)) {
        t.target.maxOutputTokens = s.outputCap;
        t.target.outputCapNamed = true;
    }
    // A tenant with a budget: a client's maximum above what the request's reservation counted goes down
    // to it (probe K3 1). A request that names none goes without one, as for any tenant: forcing the cap
    // on it made a model of a smaller context refuse every request (probe JV M2); it is reserved for
    // the cap's worth of output instead (server::ChatAdmission::costEstimate).
    if (m_setup.outputCap && (!t.target.maxOutputTokens || *m_setup.outputCap < *t.target.maxOutputTokens))
        t.target.maxOutputTokens = m_setup.outputCap;
    const quint64 generation = ++t.generation;
    const failover::AttemptId id = s.id;
    m_setup.pools->acquire(
        p.id, p.credentials, callerAuthFor(t.candidate), startIndex, this,
        [this, id, generation](const credentials::AcquireResult &r) {
            Try *t = current(id, generation);
            if (!t || t->call) {
                // the setup was cut by the deadline or the client left
                if (r.kind == credentials::AcquireResult::Kind::Ok)
                    m_setup.pools->release(r.lease);
                return;
            }
            if (r.kind != credentials::AcquireResult::Kind::Ok) {
                const auto kind = r.kind == credentials::AcquireResult::Kind::NoCredential
                                      ? failover::FailureKind::CredentialExhausted
                                      : failover::FailureKind::SetupError;
                return m_loop->onSetupFailed(id, kind, r.error);
            }
            t->lease = r.lease;
            t->credentialIndex = r.lease.index;
            t->target.provider = t->candidate.provider.id;
            t->target.modelId = t->candidate.model.id;
            t->target.modelReasons = t->candidate.model.reasoning.value_or(true);
            t->target.api = t->candidate.provider.api;
            t->target.baseUrl = t->candidate.provider.baseUrl;
            t->target.credential = r.secret;
            if (m_setup.traits) {
                t->target.reasoningSummary =
                    t->target.reasoningSummary && !m_setup.traits->refusesReasoningSummary(t->target.baseUrl, r.secret);
                t->target.noStream = t->target.noStream ||
                                     m_setup.traits->refusesToStream(t->target.baseUrl, r.secret, t->target.modelId);
            }
            // The key as answer text would hold it: looked for in every decoded
            // event (redactEvents); a short one would match ordinary words.
            t->secretForms = util::secretTextForms(r.secret);
            t->shortestSecretForm = t->secretForms.isEmpty() ? 0 : t->secretForms.first().size();
            for (const QString &form : std::as_const(t->secretForms))
                t->shortestSecretForm = std::min(t->shortestSecretForm, form.size());
            if (m_setup.request->stream && !t->secretForms.isEmpty())
                t->deltaScrub.emplace(t->secretForms);
            t->target.passthroughAuth = r.passthrough;
            t->adapter = adapterFor(t->target.api);
            // The upstream's frames go to the client as they are, unless the gateway must cut the answer
            // at a stop sequence it could not send (StopSequenceDecoder): then from the decoded events.
            const QStringList &stops = m_setup.request->options.stop;
            t->passthrough = m_setup.request->stream && wire::apiName(m_setup.request->sourceApi) == t->target.api &&
                             (stops.isEmpty() || !t->adapter ||
                              t->adapter->stopSequencesSent(*m_setup.request, t->target) >= stops.size());
            failover::TryReady ready;
            ready.passthrough = t->passthrough;
            ready.upstreamApi = t->target.api;
            ready.upstreamProvider = t->target.provider;
            if (const auto target = wire::apiFromName(t->target.api); target && *target != m_setup.request->sourceApi)
                ready.dropped =
                    wire::droppedMembers(wire::clientBody(*m_setup.request), m_setup.request->sourceApi, *target);
            // And what this model or server refuses although its API has it (passthrough included).
            if (t->adapter)
                for (const QString &name : t->adapter->droppedFor(*m_setup.request, t->target))
                    if (ready.dropped.size() < wire::kMaxDropped && !ready.dropped.contains(name))
                        ready.dropped << name;
            m_loop->onSetupDone(id, ready);
        });
}

void UpstreamAttempts::launch(failover::AttemptId id) {
    const auto it = m_tries.find(id);
    if (it == m_tries.end() || !it->second->adapter)
        return;
    Try &t = *it->second;
    HttpRequest req = t.adapter->buildRequest(*m_setup.request, t.target, m_setup.forwardHeaders);
    if (t.target.noStream)
        askForTheAnswerWhole(req);
    if (!m_setup.via.isEmpty())
        req.headers.append({QByteArrayLiteral("Via"), m_setup.via});
    req.trust = t.candidate.provider.caFile; // this provider's own CA bundle verifies its connection
    // Fresh per-try state.
    dropSseReader(t);
    t.decoder = t.adapter->makeDecoder(t.target, t.adapter->nativeBodyFor(*m_setup.request));
    // Tools the request named by an alias (tool_names.h): their calls reach the client by its names.
    if (!req.toolNameOriginals.isEmpty())
        t.decoder = std::make_unique<ToolNameRestoringDecoder>(std::move(t.decoder), req.toolNameOriginals);
    if (const QStringList &stops = m_setup.request->options.stop;
        !stops.isEmpty() && t.adapter->stopSequencesSent(*m_setup.request, t.target) < stops.size())
        t.decoder = std::make_unique<StopSequenceDecoder>(std::move(t.decoder), stops, (req.body.size() + 3) / 4);
    // An Anthropic or Chat client is streamed each delta and never a block whole (a same-API client
    // gets the upstream's frames): the builder need not keep the text or a call's arguments. A pi or Responses client's
    // encoder keeps the message itself; a JSON answer is made from the Ends.
    const wire::Api client = m_setup.request->sourceApi;
    t.keepsMessage =
        m_setup.request->stream && !(client == wire::Api::AnthropicMessages || client == wire::Api::OpenAICompletions);
    t.decoder->setKeepsText(!m_setup.request->stream || t.keepsMessage);
    t.customTools = m_setup.request->stream && client == wire::Api::OpenAICompletions && !t.passthrough
                        ? m_setup.request->customToolNames()
                        : QStringList();
    t.openCustomCalls.clear();
    t.keptOfOpenBlocks.clear();
    t.status = 0;
    t.errorBody.clear();
    t.errorHeaders.clear();
    t.headerRetryAfter.reset();
    t.location.clear();
    t.notAStream.clear();
    t.unsniffedType.reset();
    // Tries run one at a time: a new one means what earlier ones read is dropped (the loop keeps
    // only the answering try's events), and so are the answer bytes they held.
    restartAnswer(t);
    const quint64 generation = t.generation;
    t.sentBody = req.body;
    t.sentUrl = req.url;
    t.call = m_setup.transport->start(req, this);
    connect(t.call, &UpstreamCall::responseStarted, this,
            [this, id, generation](int status, const HeaderList &headers) {
                if (Try *t = current(id, generation))
                    onResponseStarted(*t, status, headers);
            });
    connect(t.call, &UpstreamCall::bodyData, this, [this, id, generation](const QByteArray &chunk) {
        if (Try *t = current(id, generation))
            onBodyData(*t, chunk);
    });
    connect(t.call, &UpstreamCall::finished, this, [this, id, generation](const TransportResult &result) {
        if (Try *t = current(id, generation))
            onFinished(*t, result);
    });
}

void UpstreamAttempts::abort(failover::AttemptId id) {
    const auto it = m_tries.find(id);
    if (it == m_tries.end())
        return;
    Try &t = *it->second;
    ++t.generation;
    dropSseReader(t);
    if (t.call) {
        auto *call = t.call.data();
        t.call = nullptr;
        call->disconnect(this);
        call->abort();
        call->deleteLater();
    }
    m_setup.pools->release(t.lease);
    t.lease = {};
}

model::Usage UpstreamAttempts::reportedUsage(failover::AttemptId id) const {
    const auto it = m_tries.find(id);
    return it == m_tries.end() || !it->second->decoder ? model::Usage{} : it->second->decoder->usage();
}

void UpstreamAttempts::setReadPaused(failover::AttemptId id, bool paused) {
    const auto it = m_tries.find(id);
    if (it != m_tries.end() && it->second->call)
        it->second->call->setReadPaused(paused);
}

void UpstreamAttempts::endErrorBody(failover::AttemptId id) {
    const auto it = m_tries.find(id);
    if (it == m_tries.end() || !it->second->call || !it->second->errorAnswer())
        return;
    Try &t = *it->second;
    // The connection goes with the unread rest of the body (abort); the try's failure is what the
    // head and the body so far say.
    abort(id);
    reportErrorAnswer(t);
}

bool UpstreamAttempts::endAnswered(failover::AttemptId id) {
    const auto it = m_tries.find(id);
    if (it == m_tries.end() || !it->second->call)
        return false;
    Try &t = *it->second;
    if (!t.answerSaidItsEnd())
        return false;
    abort(id); // the connection goes; the answer is what came (onFinished's break after the end)
    endOfBody(id, t.generation);
    return true;
}

bool UpstreamAttempts::hasUnreadBytes(failover::AttemptId id) const {
    const auto it = m_tries.find(id);
    return it != m_tries.end() && it->second->call && it->second->call->hasUnreadBytes();
}

std::optional<int> UpstreamAttempts::rotateCredential(failover::AttemptId id, const failover::TryFailure &failure) {
    // refreshGatewayApiKeyAfterAuthError. A caller's own (passthrough) key is that caller's
    // business: it never exhausts the pool for others.
    const auto it = m_tries.find(id);
    if (it == m_tries.end())
        return std::nullopt;
    Try &t = *it->second;
    const auto &p = t.candidate.provider;
    if (t.credentialIndex < 0 || t.target.passthroughAuth || p.credentials.isEmpty())
        return std::nullopt;
    // One model out of this key's reach says nothing about the key, which every tenant and model
    // share: it is not set aside. This request goes on with the pool's next key that may reach the
    // model, and later requests for the model start past this one for a while (noteOutOfReach).
    // So is a quota of one model used up on this key (Gemini's per-model quotas, per project): the key
    // serves the other models, and this one's requests start past it for the stated delay. With no
    // other key in reach, the model's rate limit marks it (FailureClassifier: rate_limited).
    if (failure.input.modelOutOfReach || failure.input.quotaOfOneModel) {
        m_setup.pools->noteOutOfReach(p.id, t.credentialIndex, t.candidate.model.id,
                                      failure.input.modelOutOfReach ? credentials::CredentialPools::kOutOfReachMs
                                                                    : failure.input.statedDelayMs().value_or(
                                                                          credentials::CredentialPools::kOutOfReachMs));
        if (!m_setup.pools->hasUsable(p.id, p.credentials, !callerAuthFor(t.candidate).isEmpty(),
                                      t.credentialIndex + 1) ||
            m_setup.pools->firstInReach(p.id, p.credentials, t.candidate.model.id, t.credentialIndex + 1) < 0)
            return std::nullopt;
        return t.credentialIndex;
    }
    // The pools judge: a 401 is rejected until the key changes; anything else is parked for
    // Retry-After, the provider's reset hint, or the configured default for its reason.
    credentials::CredentialFailure cf;
    cf.status = failure.input.status;
    cf.message = failure.input.message; // already redacted: kept as the credential's last error
    cf.tenant = m_setup.tenant;
    cf.classification = failure.input.classificationMessage;
    cf.usageLimit = failure.input.usageLimit;
    cf.retryAfterMs = failure.input.statedDelayMs();
    if (failure.fromHeaders)
        cf.headers = t.errorHeaders;
    credentials::Lease lease;
    lease.provider = p.id;
    lease.index = t.credentialIndex;
    m_setup.pools->recordFailure(lease, cf, credentials::parkDefaultsFor(*m_setup.config, p));
    if (!m_setup.pools->hasUsable(p.id, p.credentials, !callerAuthFor(t.candidate).isEmpty()))
        return std::nullopt;
    return t.credentialIndex;
}

void UpstreamAttempts::onResponseStarted(Try &t, int status, const HeaderList &headers) {
    t.status = status;
    if (status >= 300 && status < 400)
        t.location = headerValue(headers, "location");
    t.notAStream = is2xx(status) ? notAStream(headers) : QByteArray();
    if (is2xx(status) && t.notAStream.isEmpty()) // an event stream, said or not: its first byte tells
        t.unsniffedType = headerValue(headers, "content-type").trimmed();
    if (!t.notAStream.isEmpty() && t.notAStream != "text/html") {
        // JSON where a stream was asked for: the whole answer of a server that ignores `stream`,
        // or its error. Only the whole body tells (finishJsonAnswer); it is read as an answer.
        t.jsonType = std::exchange(t.notAStream, QByteArray());
    }
    if (t.errorAnswer() || !t.jsonType.isEmpty()) {
        t.errorHeaders = headers;
        t.headerRetryAfter =
            failover::FailureClassifier::retryAfterFromHeaders(headers, QDateTime::currentMSecsSinceEpoch(), status);
    }
    m_loop->onResponseHead(t.id, status, t.errorAnswer());
}

void UpstreamAttempts::onBodyData(Try &t, const QByteArray &chunk) {
    const failover::AttemptId id = t.id;
    const quint64 generation = t.generation;
    if (t.unsniffedType && t.jsonType.isEmpty()) {
        // A 2xx without a Content-Type, or typed as an event stream, is read as the stream asked
        // for, unless its first byte (past a byte order mark and blank lines) opens markup, which
        // no event stream does: a captive portal's or a proxy's page, answered as one typed
        // text/html is (its words quoted, a server error), not "unreachable: stream ended before
        // completion" with a transport mark on the whole base URL (probes A1 3, AV).
        const auto visible = std::find_if(chunk.cbegin(), chunk.cend(), [](char c) {
            return !QChar::isSpace(c) && c != '\xEF' && c != '\xBB' && c != '\xBF'; // a BOM's bytes
        });
        if (visible != chunk.cend()) {
            const QByteArray type = *std::exchange(t.unsniffedType, std::nullopt);
            if (*visible == '<') {
                t.notAStream = type.isEmpty() ? QByteArrayLiteral("(none; an HTML page)")
                                              : type.left(64) + QByteArrayLiteral(" (an HTML page)");
                m_loop->onResponseHead(id, t.status, true); // the error body's window
            }
        }
    }
    if (t.errorAnswer()) {
        m_loop->onActivity(id); // an error body has its own window besides (kErrorBodyWindowMs)
        t.errorBody += chunk.left(kMaxErrorBody - t.errorBody.size());
        if (t.errorBody.size() >= kMaxErrorBody)
            endErrorBody(id); // enough to classify: the rest is not read
        return;
    }
    if (!t.jsonType.isEmpty()) {
        // A JSON answer is kept whole until it ends, bounded as one to a client is: by
        // limits.maxResponseBytes and limits.maxBodyBytesInFlight (keepAnswerBytes). Its bytes count
        // as upstream activity as a large event's do on a stream: once it holds 4 KiB.
        const qsizetype before = t.jsonBody.size();
        t.jsonBody += chunk;
        t.bodyBytes = t.jsonBody.size();
        t.answerBegan = true; // the body is bounded whole here; maxHoldBytes bounds its events (finishJsonAnswer)
        if (!keepAnswerBytes(t, chunk.size()))
            return;
        if (t.jsonBody.size() != before && grewEnough(t, t.jsonBody.size()))
            m_loop->onActivity(id);
        return;
    }
    const qsizetype pendingBefore = t.sse.pendingEventBytes();
    t.streamBytes += chunk.size();
    const QList<SseEvent> events = t.sse.feed(chunk);
    if (!events.isEmpty())
        t.grownAtActivity = 0; // what arrives now is a new event's
    // Settled before the events are fed: what completed leaves the reader (and gives its room back)
    // before it is charged as frames, and the events that came whole go out before a stream whose
    // unfinished event does not fit is ended.
    const bool unfinishedFits = holdUnfinishedEvent(t);
    feedSse(t, events);
    Try *again = current(id, generation);
    if (again && again->sse.overflowed()) {
        // One SSE event over the reader's bound: a hostile or broken upstream. The reader
        // keeps nothing more; the attempt ends as a connection-level failure (transport).
        abort(id);
        m_loop->onTransportError(id, TransportError::TooLarge, QStringLiteral("one upstream SSE event over 8 MiB"));
    } else if (again && !unfinishedFits) {
        endStream(*again, bytesInFlightSpent(*again), true);
    } else if (again) {
        // A large event still arriving is not silence (a 100 KiB delta or tool call on a slow
        // link takes longer than the idle limit); a ping sent in pieces, a few dozen bytes, still is.
        const qsizetype pending = again->sse.pendingEventBytes();
        if (pending != pendingBefore && grewEnough(*again, pending))
            m_loop->onActivity(id);
    }
}

bool UpstreamAttempts::holdUnfinishedEvent(Try &t) {
    // An event that never ends produces no frame, so the client's queue never fills and nothing
    // pauses the read: up to SseReader::kMaxEventBytes a stream, charged to nothing, and many
    // streams at once grew the process past every configured bound (probe AA2 F2: 16 streams held
    // 130 MB under a 16 MiB budget). Past a small allowance it takes from the budget all requests
    // share, by its growth only: O(1) a chunk.
    if (!m_setup.bytesInFlight)
        return true;
    const qint64 cost = qMax<qint64>(0, t.sse.heldBytes() - kFreeUnfinishedEventBytes);
    if (cost < t.unfinishedEventTaken) {
        m_setup.bytesInFlight->give(t.unfinishedEventTaken - cost);
    } else if (cost > t.unfinishedEventTaken && !m_setup.bytesInFlight->take(cost - t.unfinishedEventTaken)) {
        return false;
    }
    t.unfinishedEventTaken = cost;
    return true;
}

void UpstreamAttempts::dropSseReader(Try &t) {
    t.sse = SseReader();
    if (m_setup.bytesInFlight)
        m_setup.bytesInFlight->give(std::exchange(t.unfinishedEventTaken, 0));
}

QString UpstreamAttempts::bytesInFlightSpent(const Try &t) const {
    return QStringLiteral("the gateway holds %1 of request bodies and answers in flight "
                          "(limits.maxBodyBytesInFlight = %2); the streamed answer of %3 does not fit; retry shortly")
        .arg(util::ByteBudget::describe(m_setup.bytesInFlight->held()),
             util::ByteBudget::describe(m_setup.bytesInFlight->cap()))
        .arg(t.candidate.name());
}

bool UpstreamAttempts::grewEnough(Try &t, qsizetype size) {
    // Activity once the unfinished event (or JSON answer) holds 4 KiB, then at each further 4 KiB.
    // Any growth counted, an upstream trickling one byte a second into one endless event held a
    // request forever, its last candidate's too (probe H4 2); a slow link's large delta still
    // brings 4 KiB well within any idle limit.
    if (size < t.grownAtActivity)
        t.grownAtActivity = 0; // a new event, smaller than the last
    if (size < kEventInProgressBytes || size < t.grownAtActivity + kEventInProgressBytes)
        return false;
    t.grownAtActivity = size;
    return true;
}

bool UpstreamAttempts::keepAnswerBytes(Try &t, qint64 bytes) {
    // A non-streaming answer is kept whole until it is done: bounded by configuration, before its
    // first token by limits.maxHoldBytes (a provider's failure, as on a stream), then one answer
    // by limits.maxResponseBytes, all requests' bodies and answers together by
    // limits.maxBodyBytesInFlight. Neither of the last two is a provider's failure: no failover, no mark.
    if (!t.answerBegan && t.bodyBytes > m_setup.config->limits.maxHoldBytes) {
        // Before its first token a JSON answer is bounded as a stream's hold is: past it, nothing
        // the client will get soon, so the attempt fails as server_error and the next candidate
        // may answer. (It read on to maxResponseBytes, then stopped with a 502 and no failover.)
        failover::TryFailure f;
        f.input.status = 502;
        f.input.message =
            QStringLiteral("%1 bytes held before the first token, over limits.maxHoldBytes").arg(t.bodyBytes);
        const failover::AttemptId id = t.id;
        abort(id);
        m_loop->onFailure(id, f);
        return false;
    }
    const bool tooLarge = t.bodyBytes > m_setup.config->limits.maxResponseBytes;
    if (!tooLarge && (!m_setup.bytesInFlight || m_setup.bytesInFlight->take(bytes))) {
        if (m_setup.bytesInFlight)
            m_answerBytesTaken += bytes;
        return true;
    }
    failover::TryFailure f;
    f.stop = true;
    if (tooLarge) {
        f.input.message = QStringLiteral("the upstream answer of %1 exceeds limits.maxResponseBytes (%2 bytes)")
                              .arg(t.candidate.name())
                              .arg(m_setup.config->limits.maxResponseBytes);
    } else {
        f.input.status = 503;
        f.fromHeaders = true; // the Retry-After is the gateway's own: the SDKs retry on it
        f.input.retryAfterMs = 1000;
        f.input.message =
            QStringLiteral("the gateway holds %1 of request bodies and answers in flight "
                           "(limits.maxBodyBytesInFlight = %2); the answer of %3 does not fit; retry shortly")
                .arg(util::ByteBudget::describe(m_setup.bytesInFlight->held()),
                     util::ByteBudget::describe(m_setup.bytesInFlight->cap()))
                .arg(t.candidate.name());
    }
    const failover::AttemptId id = t.id;
    abort(id);
    m_loop->onFailure(id, f);
    return false;
}

void UpstreamAttempts::feedSse(Try &t, const QList<SseEvent> &events) {
    const failover::AttemptId id = t.id;
    const quint64 generation = t.generation;
    for (const auto &e : events) {
        Try *live = current(id, generation);
        if (!live)
            return;
        failover::TryFrame frame;
        frame.events = live->decoder->feed(e);
        // Before the per-event scrub: a same-API frame is rewritten from the deltas as the upstream wrote them.
        const bool splitScrubbed = live->deltaScrub && live->deltaScrub->apply(frame.events);
        redactEvents(*live, frame.events);
        // The idle timeout counts from the last event that changes the answer, starts (once) or
        // ends it, or shows work the canonical model has no event for (showsWork: a server tool
        // searching, a reasoning item with no summary): an upstream that only pings, sends SSE
        // comments, empty deltas, empty blocks, in_progress events, its start again or frames of
        // no known kind holds no request forever, not even one on its last candidate.
        bool changesAnswer = false;
        for (const model::StreamEvent &ev : frame.events) {
            if (ev.type == model::EventType::Start)
                changesAnswer = changesAnswer || !std::exchange(live->startHeard, true);
            else if (ev.isMeaningful() || ev.type == model::EventType::Done || ev.type == model::EventType::Error)
                changesAnswer = true;
        }
        // A frame that decoded to nothing is judged once (it may take a JSON parse): the idle
        // timer asks here, the replay hold below.
        const bool decodedToNothing = frame.events.isEmpty();
        // Data the decoder could not parse said nothing to the gateway: noise, never relayed. (A
        // frame it refused for what it names fails the attempt; the client gets the gateway's error.)
        const bool unreadable = live->decoder->lastWasUnreadable();
        const bool noise = decodedToNothing && (unreadable || isNoiseFrame(e, frame.events));
        // A Chat chunk of usage alone moves no answer on either: sent again and again before any
        // content, it held a last candidate past the idle limit (probe HV 3).
        const bool keepalive = decodedToNothing && !noise && (live->decoder->lastWasUsageOnly() || isKeepaliveFrame(e));
        if (changesAnswer || (decodedToNothing && !noise && !keepalive && showsWork(e)))
            m_loop->onActivity(id);
        frame.frameBytes = e.event.size() + e.data.size();
        // A JSON answer is kept until it is done: what a frame adds to it counts against the bounds.
        // Pings, empty deltas and in_progress events add nothing, so a flood of them is the idle
        // timer's and the budget's to end (and fail over), as on a stream, not a "too large" stop.
        if (!m_setup.request->stream && !noise && !keepalive) {
            live->bodyBytes += frame.frameBytes;
            live->answerBegan =
                live->answerBegan || std::any_of(frame.events.cbegin(), frame.events.cend(),
                                                 [](const model::StreamEvent &ev) { return ev.isMeaningful(); });
            if (!keepAnswerBytes(*live, frame.frameBytes))
                return;
        }
        if (m_setup.request->stream && !noise && !keepalive) {
            // A stream is not kept whole, but what the gateway keeps of it grows with it (each open
            // block's text, the whole message for a pi or Responses client): bounded as a JSON
            // answer is. The frame past the bound is not relayed; the answer ends with the
            // client format's error naming the limit (cut, no failover: the limit is the gateway's).
            live->bodyBytes += frame.frameBytes;
            if (live->bodyBytes > m_setup.config->limits.maxResponseBytes)
                return endStream(*live,
                                 QStringLiteral("the streamed answer of %1 exceeds limits.maxResponseBytes (%2 bytes)")
                                     .arg(live->candidate.name())
                                     .arg(m_setup.config->limits.maxResponseBytes));
            // What a Responses or pi client's answer keeps takes from the budget all requests share,
            // so that many large answers at once are bounded by configuration as JSON answers are.
            // So does what any stream holds before its commit (events and raw frames that change
            // nothing the client sees yet, such as signature deltas): up to limits.maxHoldBytes a
            // request, which many requests at once would otherwise multiply past any bound.
            // Before the commit, only a frame the loop may hold is charged: one that decoded to
            // nothing is held only as a same-API client's raw frame (probe Q3 F2: 80 MiB of frames
            // held by nobody took the whole shared budget, and other clients got 503s). What the
            // decoder keeps of a frame without an event (a signature delta, for its block's End) is
            // charged before and after the commit alike: a Chat client is sent none of it, so no
            // backpressure paces it (probe X2 F4: 40 MB a Chat stream, neither held nor charged).
            frame.keptByDecoder = live->decoder->lastWasKept();
            // A Chat client's custom call is sent whole at its end: its input, kept until then,
            // costs as a kept message does (probe X2 F5: 60 MB a stream, charged to nothing).
            const bool keptByEncoder = !live->customTools.isEmpty() &&
                                       addsToCustomCall(frame.events, live->customTools, live->openCustomCalls);
            // Both are charged by what they bring to keep, and a frame held (or kept by the decoder)
            // by its bytes besides.
            const bool mayBeHeld = live->passthrough || !decodedToNothing;
            const qint64 held = frame.frameBytes + (live->passthrough ? failover::TryFrame::kHeldFrameOverhead : 0);
            const qint64 cost =
                (live->keepsMessage || keptByEncoder ? keptChars(frame.events, live->keptOfOpenBlocks) * kKeptStreamCost
                                                     : 0) +
                (frame.keptByDecoder || (!m_loop->isCommitted(id) && mayBeHeld) ? held * kHeldStreamCost : 0);
            if (cost > 0 && m_setup.bytesInFlight) {
                if (!m_setup.bytesInFlight->take(cost))
                    return endStream(*live, bytesInFlightSpent(*live), true);
                m_answerBytesTaken += cost;
            }
        }
        // An empty data line is not relayed either: see isNoiseFrame.
        if (live->passthrough && !unreadable && !isBlank(e.data)) {
            // Raw frames skip the encoder, so they take the redaction here (an upstream
            // error event may quote the key it rejected), on the strings the client's parser
            // reads: a key written with JSON escapes ("\u002B") is the key to it (probe AB2 F2).
            // The gateway asks a Chat upstream for usage; its usage-only chunk is not the
            // client's unless it set stream_options.include_usage (the usage is still counted).
            if (!(m_setup.request->sourceApi == wire::Api::OpenAICompletions && !m_setup.request->includeUsage &&
                  live->decoder->lastWasUsageOnly())) {
                // A frame the decoder bounds an id of goes as the client's encoder would write it,
                // under the event line of the type the decoder read it as.
                const QByteArray relayData = live->decoder->lastRelayData();
                const std::optional<QByteArray> renamed = live->decoder->lastEventName();
                const auto relayed = [&]() {
                    return upstream::SseEvent{renamed.value_or(e.event), relayData.isEmpty() ? e.data : relayData};
                };
                // A frame whose deltas the split-key scrub changed is written again from them.
                std::optional<QByteArray> rewritten;
                if (splitScrubbed)
                    rewritten = live->deltaScrub->rewriteFrame(relayed(), frame.events);
                frame.raw = util::redactSecretsInJson(rewritten                         ? *rewritten
                                                      : relayData.isEmpty() && !renamed ? upstream::sseText(e)
                                                                                        : upstream::sseText(relayed()),
                                                      live->target.credential);
            }
            frame.rawHidesError = live->decoder->lastFailedOnAPlainFrame();
            frame.isNoise = [&e, &frame, decodedToNothing, noise]() {
                return decodedToNothing ? noise : isNoiseFrame(e, frame.events);
            };
        }
        m_loop->onFrame(id, frame);
    }
}

void UpstreamAttempts::endStream(Try &t, const QString &why, bool busy) {
    // A limit of the gateway's, not the provider's failure: no failover, no mark. Before the commit
    // the client gets an error answer (a 503 with Retry-After when the shared budget is spent); after
    // it, the client format's in-band error ends the answer.
    const failover::AttemptId id = t.id;
    abort(id);
    if (!m_loop->isCommitted(id)) {
        failover::TryFailure f;
        f.stop = true;
        f.input.message = why;
        if (busy) {
            f.input.status = 503;
            f.fromHeaders = true; // the Retry-After is the gateway's own: the SDKs retry on it
            f.input.retryAfterMs = 1000;
        }
        return m_loop->onFailure(id, f);
    }
    model::StreamEvent cut;
    cut.type = model::EventType::Error;
    cut.reason = model::StopReason::Error;
    cut.errorMessage = why;
    cut.usage = reportedUsage(id); // what the upstream said it cost so far, as the decoder's own end carries
    failover::TryFrame frame;
    frame.events = {cut};
    m_loop->onFrame(id, frame);
}

void UpstreamAttempts::onFinished(Try &t, const TransportResult &result) {
    t.call = nullptr;
    const failover::AttemptId id = t.id;
    const quint64 generation = t.generation;
    if (result.error != TransportError::None) {
        // The stream said its answer is complete, then broke (Gemini sends nothing but the end of
        // the body after its finish reason): the answer, as a clean end gives it, not an outage to
        // fail over from and mark (probe P1 1: a follower billed for an answer made twice).
        if (t.answerSaidItsEnd())
            return endOfBody(id, generation);
        if (result.error == TransportError::Protocol && is2xx(t.status) && t.streamBytes == 0 && t.jsonBody.isEmpty()) {
            // The host answered, in a form this gateway does not read (a compressed body, an
            // HTTP/2 status line, Content-Lengths that disagree): generated and billed, and the
            // same again if asked again (probe T2 F3: three calls). The next candidate is asked.
            failover::TryFailure f;
            f.noRetry = true;
            f.input.transportError = TransportError::Protocol;
            f.input.message = redacted(t, result.message);
            return m_loop->onFailure(id, f);
        }
        // A 2xx JSON answer (a server that ignores stream: true) broken in its body: what it had said
        // is not readable, but it was generated (and is billed) all the same.
        const qint64 answerChars = t.jsonType.isEmpty() || t.errorAnswer() ? 0 : stringValueChars(t.jsonBody);
        return m_loop->onTransportError(id, result.error, redacted(t, result.message), answerChars);
    }
    if (t.errorAnswer())
        return reportErrorAnswer(t);
    if (!t.jsonType.isEmpty())
        return finishJsonAnswer(t);
    const QList<SseEvent> last = t.sse.finish();
    holdUnfinishedEvent(t); // the reader holds nothing now: only gives back
    feedSse(t, last);
    endOfBody(id, generation);
}

void UpstreamAttempts::restartAnswer(Try &t) {
    t.jsonType.clear();
    t.jsonBody.clear();
    t.bodyBytes = 0;
    t.answerBegan = false;
    if (m_setup.bytesInFlight)
        m_setup.bytesInFlight->give(std::exchange(m_answerBytesTaken, 0));
}

void UpstreamAttempts::finishJsonAnswer(Try &t) {
    const failover::AttemptId id = t.id;
    const quint64 generation = t.generation;
    const auto api = wire::apiFromName(t.target.api);
    qsizetype blocks = 0;
    bool tooManyValues = false;
    // Bytes that are not UTF-8 are read as U+FFFD, as on a stream (SseReader): Qt's parser refused the
    // whole answer for one, and the client was told the upstream's media type was wrong (probe HV 2).
    if (!wire::rj::isUtf8(t.jsonBody))
        t.jsonBody = wire::rj::repairedUtf8(t.jsonBody);
    auto events =
        api ? eventsOfJsonAnswer(*api, t.jsonBody, CanonicalStreamBuilder::kMaxContentBlocks, &blocks, &tooManyValues)
            : std::nullopt;
    if (blocks > CanonicalStreamBuilder::kMaxContentBlocks || tooManyValues) {
        // The answer's shape, counted before a single event or tree is made (a million tiny tool
        // calls once cost 1.5 GB and an 18 s stall; 60 MB of `0,` held 621 MB and the engine 3.5 s,
        // then was told as a stream with no answer, probe AA2-F3): the bounds a stream meets in the
        // decoder. Asking the same candidate again gets the same answer: no retry, but the next
        // candidate may answer.
        failover::TryFailure f;
        f.noRetry = true;
        f.input.status = 502;
        f.input.message =
            tooManyValues ? QStringLiteral(
                                "the upstream's answer holds more than %1 JSON values (keys included) for its %2 bytes")
                                .arg(wire::rj::ParsedJson::maxValuesFor(size_t(t.jsonBody.size())))
                                .arg(t.jsonBody.size())
                          : QStringLiteral("the upstream's answer has more than %1 content blocks (it lists %2)")
                                .arg(CanonicalStreamBuilder::kMaxContentBlocks)
                                .arg(blocks);
        restartAnswer(t);
        return m_loop->onFailure(id, f);
    }
    if (!events && t.jsonBody.isEmpty()) {
        // No byte (Content-Length: 0, a chunked body of no chunk, a close right after the head): the
        // server answered with nothing, as an event stream of no byte does (TryFrame::emptyBody),
        // not a cut connection marking the whole base URL (probe AA1-F2).
        restartAnswer(t);
        return endOfBody(id, generation);
    }
    const bool stopsMidway = !events && endsBeforeComplete(t.jsonBody);
    if (stopsMidway && !headFramesItsBody(t.errorHeaders)) {
        // Cut, not malformed: a body framed by its connection's end (HTTP/1.0, no Content-Length)
        // that stopped mid-way. It broke off as a framed one does (onFinished), not "an answer of
        // the wrong type" marking the model (probe Q1 L1).
        const qint64 chars = stringValueChars(t.jsonBody);
        restartAnswer(t);
        return m_loop->onTransportError(id, TransportError::Reset,
                                        QStringLiteral("connection closed before the JSON answer ended"), chars);
    }
    if (stopsMidway) {
        // Whole by its Content-Length or its last chunk: the server sent half an answer over a
        // connection that worked, a fault of this model's server and not of the network's (probe
        // AA1-F2: the whole base URL was marked). A server that cuts its answers so (a proxy's
        // buffer) cuts the next one too, and each is generated: no retry.
        failover::TryFailure f;
        f.noRetry = true;
        f.input.status = 502;
        f.input.message =
            QStringLiteral("answered HTTP %1 with a JSON body that stops mid-way: %2 bytes, the whole body its head "
                           "announced")
                .arg(t.status)
                .arg(t.jsonBody.size());
        restartAnswer(t);
        return m_loop->onFailure(id, f);
    }
    if (!events) {
        // Not an answer of the upstream's API: its error, as a JSON body where a stream was asked
        // for always was (reportErrorAnswer).
        t.notAStream = std::exchange(t.jsonType, QByteArray());
        t.errorBody = std::exchange(t.jsonBody, QByteArray()).left(kMaxErrorBody);
        return reportErrorAnswer(t);
    }
    // The answer is read as the stream it stands for: its events count against the bounds as a
    // stream's frames do (feedSse). The body's own bytes stay counted until they are read: the
    // events made of them are held until then too.
    const qint64 bodyTaken = std::exchange(m_answerBytesTaken, 0);
    restartAnswer(t);
    feedSse(t, *events);
    events.reset();
    if (m_setup.bytesInFlight)
        m_setup.bytesInFlight->give(bodyTaken);
    endOfBody(id, generation);
}

void UpstreamAttempts::endOfBody(failover::AttemptId id, quint64 generation) {
    Try *live = current(id, generation);
    if (!live)
        return;
    // The upstream closed cleanly: an error the decoder makes now means the body ended early.
    failover::TryFrame end;
    end.events = live->decoder->finish();
    redactEvents(*live, end.events);
    end.afterEnd = true;
    end.emptyBody = live->bodyBytes == 0;
    if (end.emptyBody)
        for (model::StreamEvent &e : end.events)
            if (e.type == model::EventType::Error && e.errorType.isEmpty())
                // A reset of a close-delimited body reads as its end (Qt's socket reads ECONNRESET as end
                // of stream): the words say both (probe JV L2).
                // Bytes that held no event (a JSON answer typed as an event stream) are no empty body
                // (probe M2 4).
                e.errorMessage =
                    live->streamBytes > 0
                        ? QStringLiteral("answered HTTP %1 with %2 bytes that hold no event: not an event stream")
                              .arg(live->status)
                              .arg(live->streamBytes)
                        : QStringLiteral("answered HTTP %1 with an empty body (no byte before the body or the "
                                         "connection ended)")
                              .arg(live->status);
    m_loop->onFrame(id, end);
}

void UpstreamAttempts::reportErrorAnswer(Try &t) {
    const failover::AttemptId id = t.id;
    if (t.status >= 300 && t.status < 400) {
        failover::TryFailure f;
        f.fromHeaders = true;
        f.input.status = t.status;
        f.input.message =
            t.status == 304
                ? QStringLiteral("upstream %1 answered HTTP 304 Not Modified to a request that was not conditional")
                      .arg(t.candidate.name())
                : QStringLiteral("upstream %1 answered HTTP %2, a redirect to %3; Switchman does not follow "
                                 "redirects: check the provider's baseUrl")
                      .arg(t.candidate.name())
                      .arg(t.status)
                      .arg(t.location.isEmpty() ? QStringLiteral("(no Location)") : redirectTarget(t));
        return m_loop->onFailure(id, f);
    }
    // A compressed error page (the request asked for identity): its words, not its bytes, are the
    // client's error and what the classifier reads. A body that already reads as text (Qt's HTTPS
    // stack inflates what it asked for and keeps the header) is left as it is.
    const auto readsAsText = [](const QByteArray &body) {
        const QByteArrayView start = QByteArrayView(body).first(qMin<qsizetype>(body.size(), 64));
        return std::all_of(start.begin(), start.end(),
                           [](char c) { return uchar(c) >= 0x20 || c == '\t' || c == '\n' || c == '\r'; });
    };
    // A coding sent as a transfer coding ("gzip, chunked", probe T2 F1) is read the same way.
    QByteArray coding = headerValue(t.errorHeaders, "content-encoding").trimmed();
    if (coding.isEmpty())
        coding = Http1ResponseParser::transferCodingsBeforeChunked(headerValue(t.errorHeaders, "transfer-encoding"))
                     .toByteArray();
    if (!coding.isEmpty() && coding.compare("identity", Qt::CaseInsensitive) != 0 && !readsAsText(t.errorBody)) {
        if (auto words = http::decodeContent(t.errorBody, coding, kMaxErrorBody))
            t.errorBody = *words;
        else
            t.errorBody = QByteArrayLiteral("an error body in Content-Encoding ") + coding.left(64) +
                          QByteArrayLiteral(", which Switchman does not read (it asked for identity)");
    }
    const auto info = t.adapter->parseError(t.status, t.errorBody);
    if (!t.notAStream.isEmpty()) {
        // A 2xx with a body where a stream was asked for: an error in the upstream's own words when
        // it sent one, else its first bytes. Classified as what its error type says (502 without
        // one), never as a cut connection: the host answered.
        failover::TryFailure f;
        f.fromHeaders = true; // its Retry-After counts
        const auto api = wire::apiFromName(t.target.api);
        f.input.status = (api ? wire::statusForErrorBody(*api, info) : std::nullopt).value_or(502);
        // The client's error puts "upstream NAME: " before it (FailureResponse::forFailure).
        f.input.message = redacted(t, QStringLiteral("answered HTTP %1 with Content-Type %2 instead of "
                                                     "an event stream: %3")
                                          .arg(t.status)
                                          .arg(QString::fromLatin1(t.notAStream), info.message.left(512)));
        f.input.classificationMessage = ownWords(t, info);
        f.input.retryAfterMs = t.headerRetryAfter;
        f.input.statedRetryAfterMs = info.retryAfterMs;
        f.input.quotaOfOneModel = info.quotaOfOneModel;
        return m_loop->onFailure(id, f);
    }
    failover::TryFailure f;
    f.fromHeaders = true;
    f.callersCredential = t.target.passthroughAuth;
    model::GatewayError upstream = model::GatewayError::make(t.status, {}, {});
    upstream.upstreamApi = t.target.api;
    // Every field of the body reaches the client (the code and param in its own format): an
    // upstream may quote the key it refused in any of them, not only in the message.
    upstream.code = redacted(t, info.errorType);
    upstream.providerType = redacted(t, info.providerType);
    upstream.param = redacted(t, info.param);
    // x-should-retry: false, the upstream's word that its failure is final (a gateway or proxy that
    // already retried): the same candidate is not asked again, and the client is told so too.
    if (failover::RetryPolicy::upstreamSaysFinal(t.errorHeaders))
        upstream.shouldRetry = false;
    f.upstreamError = upstream;
    f.input.status = t.status;
    // An empty body says nothing: the status is what the client can act on.
    f.input.message =
        info.message.isEmpty() ? QStringLiteral("HTTP %1 with an empty body").arg(t.status) : redacted(t, info.message);
    f.input.classificationMessage = ownWords(t, info);
    f.input.modelOutOfReach = failover::FailureClassifier::namesTheModel(t.status, info.message, t.candidate.model.id);
    f.input.quotaUntouched = failover::FailureClassifier::quotaUntouched(t.errorHeaders);
    f.input.retryAfterMs = t.headerRetryAfter;
    f.input.statedRetryAfterMs = info.retryAfterMs; // Google's RetryInfo
    f.input.quotaOfOneModel = info.quotaOfOneModel; // and QuotaFailure
    m_loop->onFailure(id, f);
}

} // namespace sw::upstream
