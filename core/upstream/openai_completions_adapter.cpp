#include "core/upstream/openai_completions_adapter.h"

#include "core/upstream/openai_completions_stream_decoder.h"
#include "core/upstream/openai_responses_adapter.h"
#include "core/upstream/openai_schema.h"
#include "core/upstream/tool_names.h"
#include "core/wire/client_body.h"
#include "core/wire/dropped_members.h"
#include "core/wire/json.h"
#include "core/wire/json_splice.h"
#include "core/wire/tool_id_pairing.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QUrl>
#include <QVarLengthArray>
#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>

namespace sw::upstream {

using namespace sw::model;

namespace {

const QLatin1String kSkipSignature("skip_thought_signature_validator");

// A call's `extra_content` holding Gemini's signature (wire::googleCallSignature reads it).
QJsonObject callSignatureMember(const QString &signature) {
    return QJsonObject{{QLatin1String("google"), QJsonObject{{QLatin1String("thought_signature"), signature}}}};
}

// A turn's calls' `extra_content` (Google's call signature) as the server takes it. A server that
// does not take it (takesCallSignatures) gets none: a strict one refuses the member with a 400, and
// the signature is Google's. Gemini refuses a turn whose first call has none (Gemini 3 signs only the
// first of parallel calls): a call Gemini did not make gets the value Google documents for history
// from elsewhere, and after the server refused a signature (`replay` false), the signatures go and
// the first call of each turn carries that value alone.
void signCalls(QJsonObject &turn, bool toGoogle, bool replay) {
    QJsonArray calls = turn.value(QLatin1String("tool_calls")).toArray();
    if (calls.isEmpty())
        return;
    for (qsizetype i = 0; i < calls.size(); ++i) {
        QJsonObject call = calls.at(i).toObject();
        if ((!toGoogle || !replay) && call.contains(QLatin1String("extra_content"))) {
            call.remove(QLatin1String("extra_content"));
            calls.replace(i, call);
        }
    }
    if (QJsonObject first = calls.first().toObject(); toGoogle && !first.contains(QLatin1String("extra_content"))) {
        first.insert(QLatin1String("extra_content"), callSignatureMember(kSkipSignature));
        calls.replace(0, first);
    }
    turn.insert(QLatin1String("tool_calls"), calls);
}

// A turn's call ids (an assistant turn's tool_calls, a tool turn's tool_call_id) within Chat's
// length, bounded as a converted request's are.
void boundToolCallIds(QJsonObject &turn) {
    using wire::boundedToolCallId;
    constexpr qsizetype most = OpenAICompletionsAdapter::kMaxToolIdLength;
    if (const QJsonValue id = turn.value(QLatin1String("tool_call_id")); id.isString())
        turn.insert(QLatin1String("tool_call_id"), boundedToolCallId(id.toString(), most));
    const QJsonValue calls = turn.value(QLatin1String("tool_calls"));
    if (!calls.isArray())
        return;
    QJsonArray bounded;
    for (const QJsonValue &v : calls.toArray()) {
        QJsonObject call = v.toObject();
        if (const QJsonValue id = call.value(QLatin1String("id")); id.isString())
            call.insert(QLatin1String("id"), boundedToolCallId(id.toString(), most));
        bounded.append(v.isObject() ? QJsonValue(call) : v); // anything else as the client wrote it
    }
    turn.insert(QLatin1String("tool_calls"), bounded);
}

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

// Each tool call id once in the conversation, and each tool turn under the id of the call it answers
// (wire::ToolIdPairing): OpenAI refuses a second tool turn under one id ("Invalid parameter: Duplicate
// value for 'tool_call_id'"), a 400 no failover gets past and every later turn repeats, and DeepSeek,
// GLM and Kimi give two calls of one answer one id (probe JV M4). For a conversation whose ids repeat
// (wire::sortedIdsRepeat first). An empty id (a server that names its calls by none) or one that
// is no string stays as it is.
void uniqueToolCallIds(QJsonArray &messages) {
    wire::ToolIdPairing ids(OpenAICompletionsAdapter::kMaxToolIdLength);
    for (qsizetype i = 0; i < messages.size(); ++i) {
        QJsonObject turn = messages.at(i).toObject();
        const QString role = turn.value(L("role")).toString();
        if (role == L("tool")) {
            const QJsonValue id = turn.value(L("tool_call_id"));
            if (id.toString().isEmpty())
                continue;
            const QString paired = ids.result(id.toString());
            if (paired == id.toString())
                continue;
            turn.insert(L("tool_call_id"), paired);
            messages.replace(i, turn);
        } else if (role == L("assistant") && turn.value(L("tool_calls")).isArray()) {
            QJsonArray calls = turn.value(L("tool_calls")).toArray();
            ids.beginCallingTurn();
            bool changed = false;
            for (qsizetype j = 0; j < calls.size(); ++j) {
                QJsonObject call = calls.at(j).toObject();
                const QJsonValue id = call.value(L("id"));
                if (id.toString().isEmpty())
                    continue;
                const QString unique = ids.call(id.toString());
                if (unique == id.toString())
                    continue;
                call.insert(L("id"), unique);
                calls.replace(j, call);
                changed = true;
            }
            if (changed) {
                turn.insert(L("tool_calls"), calls);
                messages.replace(i, turn);
            }
        }
    }
}

// Every call's and result's id as nine characters of [a-zA-Z0-9], for a server that takes no other
// (OpenAICompletionsAdapter::takesOnlyNineCharToolIds). Run on ids already unique (uniqueToolCallIds),
// each id by one alias, so each result still names its call's.
void nineCharToolCallIds(QJsonArray &messages) {
    wire::NineCharToolIds ids;
    for (qsizetype i = 0; i < messages.size(); ++i) {
        QJsonObject turn = messages.at(i).toObject();
        bool changed = false;
        if (const QJsonValue id = turn.value(L("tool_call_id")); id.isString()) {
            if (const QString alias = ids.alias(id.toString()); alias != id.toString()) {
                turn.insert(L("tool_call_id"), alias);
                changed = true;
            }
        }
        if (QJsonArray calls = turn.value(L("tool_calls")).toArray(); !calls.isEmpty()) {
            bool callsChanged = false;
            for (qsizetype j = 0; j < calls.size(); ++j) {
                QJsonObject call = calls.at(j).toObject();
                const QJsonValue id = call.value(L("id"));
                if (!id.isString())
                    continue;
                if (const QString alias = ids.alias(id.toString()); alias != id.toString()) {
                    call.insert(L("id"), alias);
                    calls.replace(j, call);
                    callsChanged = true;
                }
            }
            if (callsChanged) {
                turn.insert(L("tool_calls"), calls);
                changed = true;
            }
        }
        if (changed)
            messages.replace(i, turn);
    }
}

// A short assistant turn between tool turns and the user turn after them, for a server that refuses a
// user turn right there (OpenAICompletionsAdapter::wantsAssistantAfterToolTurns). Claude Code's reminder
// beside a tool_result, a Codex user message after a function_call_output and a tool result's images
// all make one. The user's words stay whole in their own turn: folded into the tool's result they would
// read as the tool's output. The words of the bridge are what pi-ai sends to Mistral for the same rule.
void bridgeToolTurnsToUser(QJsonArray &messages) {
    for (qsizetype i = 1; i < messages.size(); ++i) {
        if (messages.at(i).toObject().value(L("role")).toString() != L("user") ||
            messages.at(i - 1).toObject().value(L("role")).toString() != L("tool"))
            continue;
        messages.insert(i, QJsonObject{{L("role"), L("assistant")},
                                       {L("content"), QStringLiteral("I have processed the tool results.")}});
    }
}

// A converted Chat body as Mistral's API takes it: its validator refuses any member its schema does
// not name with a 422 (`extra_forbidden`) that ends the chain. `stream_options` goes (Mistral puts the
// usage in a stream's last chunk unasked) and the output cap goes as `max_tokens`, its only name for it.
void asMistralsApiTakesIt(QJsonObject &body) {
    body.remove(L("stream_options"));
    if (const QJsonValue cap = body.take(L("max_completion_tokens")); !cap.isUndefined())
        body.insert(L("max_tokens"), cap);
}

// Whether a request's history names any tool call (a call, or a result).
bool hasToolIds(const model::ChatRequest &request) {
    return std::any_of(request.context.messages.begin(), request.context.messages.end(), [](const Message &m) {
        return m.role == Role::ToolResult || std::any_of(m.content.begin(), m.content.end(), [](const ContentBlock &b) {
                   return b.type == BlockType::ToolCall;
               });
    });
}

void addHeader(HttpRequest &http, const QByteArray &name, const QByteArray &value) {
    http.headers.append(qMakePair(name, value));
}

QJsonObject imagePart(const ContentBlock &b) {
    const QString url = b.url.isEmpty() ? wire::makeDataUri(b.mimeType, b.data) : b.url;
    QJsonObject image{{L("url"), url}};
    if (!b.detail.isEmpty())
        image.insert(L("detail"), b.detail); // the client's resolution choice (low, high, auto)
    return QJsonObject{{L("type"), L("image_url")}, {L("image_url"), image}};
}

// A file as Chat's `file` part: its data as a data: URI, with its file name. A file by URL or by
// file id makes the request incompatible (UpstreamAdapter::incompatibility), never sent without it.
QJsonObject filePart(const ContentBlock &b) {
    return QJsonObject{{L("type"), L("file")},
                       {L("file"), QJsonObject{{L("file_data"), wire::makeDataUri(b.mimeType, b.data)},
                                               {L("filename"), documentFileName(b)}}}};
}

// A string when the turn is plain text (what every compatible server accepts), else parts.
QJsonValue userContent(const QList<ContentBlock> &blocks) {
    bool hasAttachment = false;
    QString text;
    QJsonArray parts;
    const auto addText = [&](const QString &words) {
        text += (text.isEmpty() ? QString() : QStringLiteral("\n")) + words;
        parts.append(QJsonObject{{L("type"), L("text")}, {L("text"), words}});
    };
    for (const ContentBlock &b : blocks) {
        if (b.type == BlockType::Text) {
            addText(b.text);
        } else if (b.isTextDocument()) {
            addText(textDocumentAsText(b));
        } else if (b.type == BlockType::Image) {
            // A provider file id (Anthropic Files API) means nothing to another server.
            if (!b.url.isEmpty() && !b.url.startsWith(L("http")) && !b.url.startsWith(L("data:")))
                continue;
            hasAttachment = true;
            parts.append(imagePart(b));
        } else if (b.type == BlockType::Document) {
            hasAttachment = true;
            parts.append(filePart(b));
        }
    }
    return hasAttachment ? QJsonValue(parts) : QJsonValue(text);
}

} // namespace

QString OpenAICompletionsAdapter::toolErrorText(const QString &text) {
    return QStringLiteral("Error (the tool reported a failure): ") + text;
}

QJsonObject OpenAICompletionsAdapter::responseFormat(const OutputFormat &format, wire::Api source) {
    if (format.type == L("json_object"))
        return QJsonObject{{L("type"), L("json_object")}};
    QJsonObject schema{{L("name"), format.name.isEmpty() ? QStringLiteral("response") : format.name},
                       {L("schema"), format.schema}};
    if (!format.description.isEmpty())
        schema.insert(L("description"), format.description);
    // Strict only for a schema strict mode takes (openai_schema.h): another API's strict schema may
    // hold optional properties, which OpenAI refuses with a 400; it goes as a hint instead.
    if (format.strict)
        schema.insert(L("strict"), openai_schema::strict(*format.strict, format.schema, source));
    return QJsonObject{{L("type"), L("json_schema")}, {L("json_schema"), schema}};
}

namespace {
bool asksToReason(const Options &opt) {
    return (!opt.reasoning.isEmpty() && opt.reasoning != L("none")) || opt.thinkingBudget.has_value();
}
// OpenAI's reasoning models accept only the default sampling and no stop sequences (as
// Messages and Responses with reasoning); compatible servers that reason (DeepSeek, vLLM) take them.
// A model that always reasons (OpenAICompletionsAdapter::alwaysReasons) takes neither, whether the
// request asks it to reason or not, on any server.
bool defaultSamplingOnly(const Options &opt, bool useMaxCompletionTokens, bool reasonsAlways) {
    return reasonsAlways || (asksToReason(opt) && useMaxCompletionTokens);
}
qsizetype stopsCarried(const Options &opt, bool useMaxCompletionTokens, bool reasonsAlways) {
    if (defaultSamplingOnly(opt, useMaxCompletionTokens, reasonsAlways))
        return 0;
    return std::min(opt.stop.size(), OpenAICompletionsAdapter::kMaxStopSequences);
}

namespace rj = wire::rj;

// A same-API body's sampling members that a model which always reasons refuses.
constexpr const char *kSamplingMembers[] = {"temperature", "top_p", "presence_penalty", "frequency_penalty"};

// The top-level members of a same-API body that `target` refuses with a 400 and that go without:
// Groq's unsupported fields, OpenAI's own members Mistral's API refuses with a 422, an always-reasoning
// model's sampling, and OpenAI's `store` to another server
// (OpenAICompletionsAdapter::takesOpenAIOnlyMembers).
QList<const char *> refusedTopLevel(const rj::Value *body, const Target &target) {
    QList<const char *> out;
    const auto take = [&](const char *key) {
        if (rj::member(body, key))
            out.append(key);
    };
    if (OpenAICompletionsAdapter::isGroq(target.baseUrl))
        for (const char *key : OpenAICompletionsAdapter::kGroqRefusedMembers)
            take(key);
    if (OpenAICompletionsAdapter::isMistral(target.baseUrl))
        for (const char *key : OpenAICompletionsAdapter::kMistralRefusedMembers)
            take(key);
    if (!OpenAICompletionsAdapter::takesOpenAIOnlyMembers(target))
        take("store");
    if (OpenAICompletionsAdapter::alwaysReasons(target)) {
        for (const char *key : kSamplingMembers)
            take(key);
        // "Unsupported parameter: 'stop' is not supported with this model": the gateway cuts at the
        // client's stop sequences itself (stopSequencesSent), so nothing is lost.
        take("stop");
    }
    return out;
}

// The turns whose `name` a server refuses with a 400 (a participant's name): Groq's API refuses it on
// a system, developer, user, assistant or tool turn; Mistral's on all but a tool turn, which its
// schema gives one ("Extra inputs are not permitted"). The deprecated `role: "function"` needs its
// name, and is left as it is. No turn's for any other server.
struct RefusedTurnNames {
    bool any = false;
    bool onToolTurns = false;
    bool operator()(const rj::Value &m) const {
        return any && rj::member(&m, "name") && !rj::equals(rj::member(&m, "role"), "function") &&
               (onToolTurns || !rj::equals(rj::member(&m, "role"), "tool"));
    }
};
RefusedTurnNames refusedTurnNames(const Target &target) {
    if (OpenAICompletionsAdapter::isGroq(target.baseUrl))
        return {true, true};
    return {OpenAICompletionsAdapter::isMistral(target.baseUrl), false};
}

// A turn without its `name`, which goes in front of what the participant said ("alice: ..."), as a
// conversion to another API writes it (the Chat codec's foldSpeakerName): who said what survives.
// An assistant turn with no words, or a tool turn, just loses it.
void foldName(QJsonObject &turn) {
    const QString name = turn.take(L("name")).toString();
    const QString role = turn.value(L("role")).toString();
    if (name.isEmpty() || role == L("tool"))
        return;
    const QString label = name + QStringLiteral(": ");
    const QJsonValue content = turn.value(L("content"));
    if (content.isString() && !content.toString().isEmpty()) {
        turn.insert(L("content"), label + content.toString());
    } else if (content.isArray() && !content.toArray().isEmpty()) {
        QJsonArray parts = content.toArray();
        QJsonObject first = parts.first().toObject();
        if (first.value(L("type")).toString() == L("text")) {
            first.insert(L("text"), label + first.value(L("text")).toString());
            parts.replace(0, first);
        } else {
            parts.prepend(QJsonObject{{L("type"), L("text")}, {L("text"), name + L(":")}});
        }
        turn.insert(L("content"), parts);
    } else if (role != L("assistant")) {
        turn.insert(L("content"), name + L(":"));
    }
}

// The client's `messages` bytes with the role of each turn `renames` picks (a `developer` one)
// written `system`, everything else as it came: the body goes on by splice, not decoded and written
// again. Nullopt when the bytes do not show that role plainly (an escape in it, a second `role`), so
// the caller writes the body again.
template <typename Renames>
std::optional<QByteArray> developersAsSystem(QByteArrayView body, const rj::Value *messages, Renames renames) {
    const std::optional<wire::JsonObjectSpans> top = wire::JsonObjectSpans::scan(body);
    const wire::JsonMemberSpan *sent = top ? top->find("messages") : nullptr;
    if (!sent)
        return std::nullopt;
    const QByteArrayView bytes = top->value(*sent);
    const std::optional<QList<wire::JsonValueSpan>> turns = wire::scanArray(bytes);
    const auto parsed = rj::elements(messages);
    if (!turns || turns->size() != qsizetype(parsed.Size()))
        return std::nullopt;
    QByteArray out;
    out.reserve(bytes.size());
    qsizetype copied = 0;
    qsizetype i = 0;
    for (const rj::Value &m : parsed) {
        const wire::JsonValueSpan turn = turns->at(i++);
        if (!renames(m))
            continue;
        const std::optional<wire::JsonObjectSpans> members =
            wire::JsonObjectSpans::scan(bytes.sliced(turn.begin, turn.end - turn.begin));
        const wire::JsonMemberSpan *role = members ? members->find("role") : nullptr;
        if (!role || members->hasDuplicateKeys() || members->value(*role) != "\"developer\"")
            return std::nullopt;
        const qsizetype at = turn.begin + role->valueBegin;
        out.append(bytes.sliced(copied, at - copied)).append("\"system\"");
        copied = turn.begin + role->valueEnd;
    }
    out.append(bytes.sliced(copied));
    return out;
}

// Whether `baseUrl`'s host is `host`, read without a QUrl: a parse is about 4 k instructions, and
// a request asks several of these (probe of stop 47: five parses a Chat request, 21 k in all). The
// authority is what follows "scheme://" up to the path, query or fragment; its host what follows
// any user info, up to a port (an IPv6 literal, in brackets, is never one of these names).
QStringView hostOf(QStringView baseUrl) {
    const qsizetype scheme = baseUrl.indexOf(u"://");
    QStringView authority = baseUrl.mid(scheme < 0 ? 0 : scheme + 3);
    for (qsizetype i = 0; i < authority.size(); ++i)
        if (authority[i] == u'/' || authority[i] == u'?' || authority[i] == u'#') {
            authority.truncate(i);
            break;
        }
    if (const qsizetype at = authority.lastIndexOf(u'@'); at >= 0)
        authority = authority.mid(at + 1);
    if (const qsizetype colon = authority.indexOf(u':'); colon >= 0)
        authority.truncate(colon);
    if (authority.endsWith(u'.')) // the fully qualified form names the same host
        authority.chop(1);
    return authority;
}

bool hostIs(QStringView baseUrl, QLatin1String host) {
    return hostOf(baseUrl).compare(host, Qt::CaseInsensitive) == 0;
}

// Azure OpenAI's resource hosts (its own, the Cognitive Services and the AI Foundry ones).
bool isAzureOpenAI(QStringView baseUrl) {
    const QStringView host = hostOf(baseUrl);
    return host.endsWith(QLatin1String(".openai.azure.com"), Qt::CaseInsensitive) ||
           host.endsWith(QLatin1String(".cognitiveservices.azure.com"), Qt::CaseInsensitive) ||
           host.endsWith(QLatin1String(".services.ai.azure.com"), Qt::CaseInsensitive);
}

// An OpenAI model told by its id (a provider's prefix such as "openai/" or "azure/" allowed).
bool isOpenAIModel(const QString &modelId) {
    const QString id = modelId.mid(modelId.lastIndexOf(QLatin1Char('/')) + 1).toLower();
    if (id.startsWith(QLatin1String("gpt-oss")))
        return false; // open weights, served by vLLM, Groq, Ollama, …
    if (id.startsWith(QLatin1String("gpt-")) || id.startsWith(QLatin1String("chatgpt-")))
        return true;
    return id.size() >= 2 && id.at(0) == QLatin1Char('o') && id.at(1).isDigit() &&
           (id.size() == 2 || id.at(2) == QLatin1Char('-'));
}

// Each function description of a Chat body (tools[].function, the legacy functions[]) within
// kMaxToolDescription. True when one was cut.
bool boundToolDescriptions(QJsonObject &body) {
    bool cut = false;
    const auto bound = [&cut](QJsonObject &fn) {
        const QString description = fn.value(QLatin1String("description")).toString();
        if (description.size() <= OpenAICompletionsAdapter::kMaxToolDescription)
            return false;
        fn.insert(QLatin1String("description"), OpenAICompletionsAdapter::boundedToolDescription(description));
        cut = true;
        return true;
    };
    if (QJsonArray tools = body.value(QLatin1String("tools")).toArray(); !tools.isEmpty()) {
        bool changed = false;
        for (qsizetype i = 0; i < tools.size(); ++i) {
            QJsonObject tool = tools.at(i).toObject();
            QJsonObject fn = tool.value(QLatin1String("function")).toObject();
            if (bound(fn)) {
                tool.insert(QLatin1String("function"), fn);
                tools.replace(i, tool);
                changed = true;
            }
        }
        if (changed)
            body.insert(QLatin1String("tools"), tools);
    }
    if (QJsonArray functions = body.value(QLatin1String("functions")).toArray(); !functions.isEmpty()) {
        bool changed = false;
        for (qsizetype i = 0; i < functions.size(); ++i) {
            QJsonObject fn = functions.at(i).toObject();
            if (bound(fn)) {
                functions.replace(i, fn);
                changed = true;
            }
        }
        if (changed)
            body.insert(QLatin1String("functions"), functions);
    }
    return cut;
}

// Whether a Chat client's own body holds a function description over the bound (its length in
// UTF-8 bytes first: a description of no more bytes has no more characters).
bool holdsLongToolDescription(const rj::Value *body) {
    const auto tooLong = [](const rj::Value *description) {
        const std::string_view bytes = rj::bytes(description);
        return qsizetype(bytes.size()) > OpenAICompletionsAdapter::kMaxToolDescription &&
               QString::fromUtf8(bytes.data(), qsizetype(bytes.size())).size() >
                   OpenAICompletionsAdapter::kMaxToolDescription;
    };
    for (const rj::Value &tool : rj::elements(rj::member(body, "tools")))
        if (tooLong(rj::member(rj::member(&tool, "function"), "description")))
            return true;
    for (const rj::Value &fn : rj::elements(rj::member(body, "functions")))
        if (tooLong(rj::member(&fn, "description")))
            return true;
    return false;
}
} // namespace

bool OpenAICompletionsAdapter::boundsToolDescriptions(const Target &target) {
    return isOpenAI(target.baseUrl) || isAzureOpenAI(target.baseUrl) || isOpenAIModel(target.modelId);
}

QString OpenAICompletionsAdapter::boundedToolDescription(const QString &description) {
    if (description.size() <= kMaxToolDescription)
        return description;
    qsizetype bound = kMaxToolDescription;
    if (description.at(bound).isLowSurrogate()) // the pair would be split: it goes whole
        --bound;
    // The last sentence's or line's end in the bound's last half, else the last space there.
    qsizetype sentence = -1, space = -1;
    for (qsizetype i = bound - 1; i >= bound / 2 && sentence < 0; --i) {
        const QChar c = description.at(i);
        if (c == QLatin1Char('\n'))
            sentence = i;
        else if ((c == QLatin1Char('.') || c == QLatin1Char('!') || c == QLatin1Char('?')) &&
                 description.at(i + 1).isSpace())
            sentence = i + 1;
        else if (space < 0 && c.isSpace())
            space = i;
    }
    const qsizetype end = sentence >= 0 ? sentence : space >= 0 ? space : bound;
    QString out = description.left(end);
    while (!out.isEmpty() && out.back().isSpace())
        out.chop(1);
    return out;
}

bool OpenAICompletionsAdapter::isMistral(const QString &baseUrl) {
    const QStringView host = hostOf(baseUrl);
    return host.compare(L("mistral.ai"), Qt::CaseInsensitive) == 0 ||
           host.endsWith(L(".mistral.ai"), Qt::CaseInsensitive);
}

bool OpenAICompletionsAdapter::isMistralModel(const QString &modelId) {
    const QStringView id = QStringView(modelId).mid(modelId.lastIndexOf(QLatin1Char('/')) + 1);
    for (const char *family : {"mistral", "open-mistral", "open-mixtral", "mixtral", "codestral", "devstral",
                               "magistral", "ministral", "pixtral", "voxtral"})
        if (id.startsWith(QLatin1String(family), Qt::CaseInsensitive))
            return true;
    return false;
}

bool OpenAICompletionsAdapter::takesOnlyNineCharToolIds(const Target &target) {
    return target.nineCharToolIds || isMistral(target.baseUrl) || isMistralModel(target.modelId);
}

bool OpenAICompletionsAdapter::isOpenAI(const QString &baseUrl) {
    return hostIs(baseUrl, L("api.openai.com"));
}

bool OpenAICompletionsAdapter::takesOpenAIOnlyMembers(const Target &target) {
    return isOpenAI(target.baseUrl) || isAzureOpenAI(target.baseUrl);
}

bool OpenAICompletionsAdapter::isGoogle(const QString &baseUrl) {
    return hostOf(baseUrl).endsWith(L(".googleapis.com"), Qt::CaseInsensitive);
}

bool OpenAICompletionsAdapter::takesCallSignatures(const Target &target) {
    return isGoogle(target.baseUrl) ||
           (target.modelId.contains(L("gemini"), Qt::CaseInsensitive) && !takesReasoningDetailsBack(target));
}

bool OpenAICompletionsAdapter::isGroq(const QString &baseUrl) {
    return hostIs(baseUrl, L("api.groq.com"));
}

bool OpenAICompletionsAdapter::alwaysReasons(const QString &modelId) {
    const QString id = modelId.mid(modelId.lastIndexOf(QLatin1Char('/')) + 1).toLower();
    // o1, o3, o3-mini, o4-mini, o1-pro, ...: "o", a digit, then the end or a dash.
    if (id.size() >= 2 && id.at(0) == QLatin1Char('o') && id.at(1).isDigit() &&
        (id.size() == 2 || id.at(2) == QLatin1Char('-')))
        return true;
    // gpt-5 and its mini, nano, pro and codex models; gpt-5-chat does not reason.
    if (id == L("gpt-5") || (id.startsWith(L("gpt-5-")) && !id.startsWith(L("gpt-5-chat"))))
        return true;
    // gpt-5.1 and later default to effort none, but for their codex and pro models.
    if (id.startsWith(L("gpt-5.")))
        return id.contains(L("-codex")) || id.contains(L("-pro"));
    return false;
}

QStringList OpenAICompletionsAdapter::samplingMembers(const model::ChatRequest &request) {
    QStringList out;
    if (request.options.temperature)
        out << (request.sourceApi == wire::Api::Pi ? QStringLiteral("options.temperature")
                                                   : QStringLiteral("temperature"));
    if (request.options.topP)
        out << (request.sourceApi == wire::Api::Pi ? QStringLiteral("options.topP") : QStringLiteral("top_p"));
    return out;
}

QStringList OpenAICompletionsAdapter::droppedFor(const model::ChatRequest &request, const Target &target) const {
    // Converted: the body carries no member Groq refuses, and stop sequences not sent are cut at by the
    // gateway itself (stopSequencesSent), which loses nothing. Sampling goes as buildBody leaves it out
    // (defaultSamplingOnly; a model configured not to reason is asked no reasoning).
    if (request.sourceApi != kApi) {
        QStringList out;
        if (alwaysReasons(target) ||
            (target.modelReasons && asksToReason(request.options) && isOpenAI(target.baseUrl))) {
            out = samplingMembers(request);
            if (request.options.presencePenalty.value_or(0.0) != 0.0) // pi's; a Chat client's is its own body
                out << QStringLiteral("options.presencePenalty");
        }
        // What of a long description a candidate that takes 1024 characters goes without (the rest of it).
        const auto longDescription = [](const Tool &t) {
            return (t.custom ? customToolDescription(t) : t.description).size() > kMaxToolDescription;
        };
        if (std::any_of(request.context.tools.begin(), request.context.tools.end(), longDescription) &&
            boundsToolDescriptions(target))
            out << (request.sourceApi == wire::Api::Pi ? QStringLiteral("context.tools[].description")
                                                       : QStringLiteral("tools[].description"));
        if (const QString effort = OpenAIResponsesAdapter::effortChanged(request, target, kApi); !effort.isEmpty())
            out << effort;
        return out;
    }
    const rj::Value *body = wire::clientBody(request);
    QStringList out;
    if (holdsLongToolDescription(body) && boundsToolDescriptions(target))
        out << QStringLiteral("tools[].function.description");
    for (const char *key : refusedTopLevel(body, target)) {
        if (std::string_view(key) == "stop")
            continue; // cut at by the gateway itself: kept, not dropped
        // A penalty of 0 is the default: nothing is lost with it; so is `store: false`.
        const rj::Value *v = rj::member(body, key);
        if (std::string_view(key).ends_with("_penalty") && rj::isNumber(v) && rj::toDouble(v) == 0.0)
            continue;
        if (std::string_view(key) == "store" && v->IsBool() && !v->GetBool())
            continue;
        out << QLatin1String(key);
    }
    if (const RefusedTurnNames named = refusedTurnNames(target); named.any) {
        const auto messages = rj::elements(rj::member(body, "messages"));
        if (std::any_of(messages.begin(), messages.end(), named))
            out << QStringLiteral("messages[].name");
    }
    if (const QString effort = OpenAIResponsesAdapter::effortChanged(request, target, kApi); !effort.isEmpty())
        out << effort;
    return out;
}

bool OpenAICompletionsAdapter::takesReasoningBack(const Target &target) {
    return target.reasoningBack || hostIs(target.baseUrl, L("api.deepseek.com"));
}

bool OpenAICompletionsAdapter::takesReasoningDetailsBack(const Target &target) {
    return hostIs(target.baseUrl, L("openrouter.ai"));
}

qsizetype OpenAICompletionsAdapter::stopSequencesSent(const model::ChatRequest &request, const Target &target) const {
    if (request.sourceApi == kApi) // the client's own body, as it sent it, but to a model that refuses stop
        return alwaysReasons(target) ? 0 : request.options.stop.size();
    return stopsCarried(target.modelReasons ? request.options : withoutReasoning(request).options,
                        isOpenAI(target.baseUrl), alwaysReasons(target));
}

QJsonObject OpenAICompletionsAdapter::buildBody(const model::ChatRequest &request, const QString &modelId,
                                                bool useMaxCompletionTokens, bool reasoningBack, bool reasonsAlways,
                                                bool googleCalls) {
    const Context &ctx = request.context;
    const Options &opt = request.options;
    QJsonArray messages;
    if (!ctx.systemPrompt.isEmpty())
        messages.append(QJsonObject{{L("role"), L("system")}, {L("content"), ctx.systemPrompt}});
    // Tool messages carry text only: the images and files of a run of tool results follow it as one user
    // turn. Between two tool messages a user turn would break the run that must answer every
    // call of the assistant turn before it ("An assistant message with 'tool_calls' must be
    // followed by tool messages responding to each 'tool_call_id'").
    QList<ContentBlock> resultAttachments;
    const auto flushResultAttachments = [&] {
        if (const auto blocks = takeToolResultAttachments(resultAttachments); !blocks.isEmpty())
            messages.append(QJsonObject{{L("role"), L("user")}, {L("content"), userContent(blocks)}});
    };
    // Tool messages must follow the assistant message with their calls: each result goes right
    // after it, the user's words typed while the tool ran after them.
    const QList<Message> history = resultsAfterTheirCalls(ctx.messages);
    QVarLengthArray<QString, 16> callIds; // as sent: a repeat is made unique below
    for (const Message &m : history) {
        if (m.role != Role::ToolResult)
            flushResultAttachments();
        switch (m.role) {
        case Role::User:
            messages.append(QJsonObject{{L("role"), L("user")}, {L("content"), userContent(m.content)}});
            break;
        case Role::Assistant: {
            // Thinking is dropped, never replayed as text (formats/translation_rules.md), but
            // for a server that asks for a tool-call turn's reasoning back: the turn's own
            // reasoning_content when a Chat server made it, else an empty one.
            QString text;
            QString reasoning;
            QJsonArray calls;
            bool firstCall = true;
            for (const ContentBlock &b : m.content) {
                if (b.type == BlockType::Text) {
                    text += b.text;
                } else if (b.type == BlockType::Thinking) {
                    if (reasoningBack && model::signatureOwner(m, b) == apiNameString<kApi>())
                        reasoning += b.text;
                } else if (b.type == BlockType::ToolCall) {
                    const QString args = b.arguments.isEmpty() && !b.argumentsJson.isEmpty()
                                             ? b.argumentsJson
                                             : QString::fromUtf8(wire::compactJson(b.arguments));
                    callIds.append(boundedToolCallId(b.toolCallId, kMaxToolIdLength));
                    QJsonObject call{{L("id"), callIds.last()},
                                     {L("type"), L("function")},
                                     {L("function"), QJsonObject{{L("name"), b.toolName}, {L("arguments"), args}}}};
                    // To Google's own Chat endpoint, Gemini's signature as that endpoint wrote it;
                    // a call Gemini did not sign, first of its turn, gets the value Google documents
                    // for history from elsewhere (as the Gemini API's own adapter sends).
                    if (googleCalls) {
                        const bool own =
                            model::signatureOwner(m, b) == wire::apiName(wire::Api::Google) && !b.signature.isEmpty();
                        if (own || firstCall)
                            call.insert(L("extra_content"),
                                        callSignatureMember(own ? b.signature : QString(kSkipSignature)));
                    }
                    firstCall = false;
                    calls.append(call);
                }
            }
            if (text.isEmpty() && calls.isEmpty())
                break;
            QJsonObject msg{{L("role"), L("assistant")},
                            {L("content"), text.isEmpty() ? QJsonValue() : QJsonValue(text)}};
            if (!calls.isEmpty()) {
                msg.insert(L("tool_calls"), calls);
                if (reasoningBack)
                    msg.insert(L("reasoning_content"), reasoning);
            }
            messages.append(msg);
            break;
        }
        case Role::ToolResult: {
            const ToolResultContent result = splitToolResult(m);
            // Tool messages have no error flag: the model learns of a failure from the text.
            messages.append(QJsonObject{{L("role"), L("tool")},
                                        {L("tool_call_id"), boundedToolCallId(m.toolCallId, kMaxToolIdLength)},
                                        {L("content"), m.isError ? toolErrorText(result.text) : result.text}});
            resultAttachments.append(result.attachments);
            break;
        }
        }
    }
    flushResultAttachments();
    if (wire::sortedIdsRepeat(callIds))
        uniqueToolCallIds(messages);
    QJsonObject body{{L("model"), modelId},
                     {L("messages"), messages},
                     {L("stream"), true},
                     {L("stream_options"), QJsonObject{{L("include_usage"), true}}}};
    // Reasoning models reject max_tokens and want max_completion_tokens; older compatible
    // servers know only max_tokens, so it stays for them when no reasoning is asked.
    // "none" is a reasoning model asked not to reason: it takes max_completion_tokens, and the
    // client's sampling (OpenAI accepts temperature and top_p at effort none).
    const bool reasoningOff = opt.reasoning == L("none");
    if (opt.maxTokens)
        body.insert(useMaxCompletionTokens || asksToReason(opt) || reasoningOff || reasonsAlways
                        ? L("max_completion_tokens")
                        : L("max_tokens"),
                    *opt.maxTokens);
    // A model that always reasons goes without the client's sampling, named in the answer (droppedFor).
    const bool samplingDefault = defaultSamplingOnly(opt, useMaxCompletionTokens, reasonsAlways);
    if (opt.temperature && !samplingDefault)
        body.insert(L("temperature"), *opt.temperature);
    if (opt.topP && !samplingDefault)
        body.insert(L("top_p"), *opt.topP);
    if (opt.presencePenalty && !samplingDefault)
        body.insert(L("presence_penalty"), *opt.presencePenalty);
    if (opt.frequencyPenalty && !samplingDefault)
        body.insert(L("frequency_penalty"), *opt.frequencyPenalty);
    // The rest the gateway cuts at itself (stopSequencesSent).
    if (const qsizetype stops = stopsCarried(opt, useMaxCompletionTokens, reasonsAlways); stops > 0)
        body.insert(L("stop"), QJsonArray::fromStringList(opt.stop.mid(0, stops)));
    if (const QString effort = model::openAIEffort(opt, modelId); !effort.isEmpty())
        body.insert(L("reasoning_effort"), effort);
    if (!ctx.tools.isEmpty()) {
        QJsonArray tools;
        for (const Tool &t : ctx.tools) {
            const QJsonObject parameters = t.parameters.isEmpty()
                                               ? QJsonObject{{L("type"), L("object")}, {L("properties"), QJsonObject()}}
                                               : t.parameters;
            QJsonObject fn{{L("name"), t.name}, {L("parameters"), parameters}};
            const QString description = t.custom ? customToolDescription(t) : t.description;
            if (!description.isEmpty())
                fn.insert(L("description"), description);
            if (t.strict) // as for response_format
                fn.insert(L("strict"), openai_schema::strict(*t.strict, parameters, request.sourceApi));
            tools.append(QJsonObject{{L("type"), L("function")}, {L("function"), fn}});
        }
        body.insert(L("tools"), tools);
        if (opt.parallelToolCalls == false)
            body.insert(L("parallel_tool_calls"), false);
        if (opt.toolChoice == L("auto") || opt.toolChoice == L("none") || opt.toolChoice == L("required"))
            body.insert(L("tool_choice"), opt.toolChoice);
        else if (!opt.toolChoice.isEmpty())
            body.insert(L("tool_choice"), QJsonObject{{L("type"), L("function")},
                                                      {L("function"), QJsonObject{{L("name"), opt.toolChoice}}}});
    }
    if (opt.outputFormat.isSet())
        body.insert(L("response_format"), responseFormat(opt.outputFormat, request.sourceApi));
    return body;
}

HttpRequest OpenAICompletionsAdapter::buildRequest(const model::ChatRequest &request, const Target &target,
                                                   const HeaderList &forwardHeaders) const {
    const bool passthrough = request.sourceApi == kApi;
    HttpRequest http;
    http.url = joinUrl(target.baseUrl, QStringLiteral("/chat/completions"));

    if (passthrough) {
        // Usage is needed for accounting even when the client did not ask for it: the client's
        // other stream options stay, a value that is no object is replaced.
        const wire::rj::Value *sentOptions = wire::rj::member(wire::clientBody(request), "stream_options");
        const auto streamOptions = [sentOptions] {
            QJsonObject options = wire::rj::toQtObject(sentOptions);
            options.insert(L("include_usage"), true);
            return options;
        };
        // The usual stream_options (none, or only include_usage) is a constant, not written.
        QByteArray merged;
        if (wire::rj::asObject(sentOptions))
            if (const QJsonObject options = streamOptions(); options.size() > 1)
                merged = wire::compactJson(options);
        // The client's bytes as they are, with only these three members set; the whole object
        // written again when the bytes cannot be spliced (see wire::spliceTopLevel).
        // An assistant turn with nothing in it (content null, no call: what the SDK keeps of an
        // answer that was reasoning only, or a refusal another API gave) is refused by OpenAI
        // ("expected a string, got null"): it is left out, the rest goes as the client wrote it.
        const auto emptyAssistant = [](const rj::Value &m) {
            const rj::Value *content = rj::member(&m, "content");
            const rj::Value *calls = rj::member(&m, "tool_calls");
            const rj::Value *refusal = rj::member(&m, "refusal");
            return rj::equals(rj::member(&m, "role"), "assistant") && (!content || content->IsNull()) &&
                   (!calls || calls->IsNull() || (calls->IsArray() && calls->Empty())) &&
                   !rj::member(&m, "function_call") && !rj::member(&m, "audio") && (!refusal || refusal->IsNull());
        };
        // reasoning_content goes only to a server that takes it back (takesReasoningBack), which
        // gets it on every turn with calls: the client's own, else an empty one.
        const bool reasoningBack = takesReasoningBack(target);
        const auto reasoningContentEdit = [reasoningBack](const rj::Value &m) {
            const rj::Value *reasoning = rj::member(&m, "reasoning_content");
            if (!reasoningBack)
                return reasoning != nullptr;
            const rj::Value *calls = rj::member(&m, "tool_calls");
            return calls && calls->IsArray() && !calls->Empty() && !(reasoning && reasoning->IsString());
        };
        // The other names a Chat server gives its reasoning (OpenRouter's `reasoning` and signed
        // `reasoning_details`, vLLM's `reasoning`, `reasoning_text`) reach the client on a streamed
        // passthrough byte for byte, and the SDK keeps them in the turn it sends back. Groq, Cerebras
        // and Mistral refuse such a member with a 400, and the signature is another server's: they go
        // only to OpenRouter, the one server that asks for them back (takesReasoningDetailsBack).
        std::optional<bool> detailsBack; // the host looked at only when a turn holds one
        const auto otherReasoningEdit = [&](const rj::Value &m) {
            const bool holds = std::any_of(std::begin(kOtherReasoningMembers), std::end(kOtherReasoningMembers),
                                           [&](const char *key) { return rj::member(&m, key) != nullptr; });
            if (holds && !detailsBack)
                detailsBack = takesReasoningDetailsBack(target);
            return holds && (!*detailsBack || !target.replayReasoning);
        };
        // Google's function-call signature on a call (`extra_content.google.thought_signature`: what the
        // gateway writes for a Chat client when Gemini answered, and Google's own Chat endpoint too),
        // as signCalls leaves it: the server looked at only when a turn has calls.
        std::optional<bool> toGoogle;
        const auto callSignatureEdit = [&](const rj::Value &m) {
            const auto calls = rj::elements(rj::member(&m, "tool_calls"));
            if (calls.begin() == calls.end())
                return false;
            if (!toGoogle)
                toGoogle = takesCallSignatures(target);
            const bool holds = std::any_of(calls.begin(), calls.end(), [](const rj::Value &call) {
                return rj::member(&call, "extra_content") != nullptr;
            });
            if (!*toGoogle || !target.replayReasoning)
                return holds || *toGoogle;
            return rj::member(&*calls.begin(), "extra_content") == nullptr;
        };
        const auto reasoningEdit = [&](const rj::Value &m) {
            return rj::equals(rj::member(&m, "role"), "assistant") &&
                   (reasoningContentEdit(m) || otherReasoningEdit(m) || callSignatureEdit(m));
        };
        // A call id over Chat's 40 (a server of the same API named it: vLLM's are 46 long, and a
        // streamed answer reaches the client with them as they came) is refused by OpenAI ("string
        // too long"): the call's and its result's go bounded alike (wire::boundedToolCallId), so
        // they still pair, as on a converted request.
        const auto overLong = [](const rj::Value *id) { return rj::bytes(id).size() > kMaxToolIdLength; };
        const auto longIds = [&](const rj::Value &m) {
            if (overLong(rj::member(&m, "tool_call_id")))
                return true;
            const auto calls = rj::elements(rj::member(&m, "tool_calls"));
            return std::any_of(calls.begin(), calls.end(),
                               [&](const rj::Value &call) { return overLong(rj::member(&call, "id")); });
        };
        // What this server or model refuses with a 400 (named in the answer: droppedFor): Groq's
        // logprobs, top_logprobs, logit_bias and a turn's name (which goes in front of the turn's
        // words, as on a conversion), OpenAI's own members and a turn's name to Mistral's API, an
        // always-reasoning model's sampling, OpenAI's `store` to another server.
        const QList<const char *> refused = refusedTopLevel(wire::clientBody(request), target);
        const RefusedTurnNames nameEdit = refusedTurnNames(target);
        // OpenAI's `developer` role, which other Chat servers refuse with a 400 (DeepSeek: "unknown
        // variant `developer`"): there it goes as `system`, as a converted request writes it and as
        // OpenAI itself reads a system message. The server looked at only when a turn holds one.
        std::optional<bool> toOpenAI;
        const auto developerEdit = [&](const rj::Value &m) {
            if (!rj::equals(rj::member(&m, "role"), "developer"))
                return false;
            if (!toOpenAI)
                toOpenAI = takesOpenAIOnlyMembers(target);
            return !*toOpenAI;
        };
        const auto messages = rj::elements(rj::member(wire::clientBody(request), "messages"));
        // A `developer` turn alone is renamed in the bytes (developersAsSystem); any other change to a
        // turn writes the messages again.
        bool renamesDevelopers = false;
        const bool reworksTurns = std::any_of(messages.begin(), messages.end(), [&](const rj::Value &m) {
            if (emptyAssistant(m) || reasoningEdit(m) || longIds(m) || nameEdit(m))
                return true;
            renamesDevelopers = developerEdit(m) || renamesDevelopers;
            return false;
        });
        // Two calls under one id, which OpenAI refuses: a client that talked to DeepSeek, GLM or Kimi
        // directly keeps them as they came. Each is made unique, each tool turn takes its call's
        // (uniqueToolCallIds); the ids are looked at first, and only a body that repeats one pays.
        const bool repeatsIds = [&messages] {
            QVarLengthArray<std::string_view, 32> ids;
            for (const rj::Value &m : messages)
                for (const rj::Value &call : rj::elements(rj::member(&m, "tool_calls")))
                    if (const std::string_view id = rj::bytes(rj::member(&call, "id")); !id.empty())
                        ids.push_back(id);
            return wire::sortedIdsRepeat(ids);
        }();
        // Tool call ids that are not nine characters of [a-zA-Z0-9], to a server that takes no other
        // (takesOnlyNineCharToolIds, told only when the history holds one): each call's and result's
        // go by an alias (nineCharToolCallIds), so they still pair.
        const bool aliasesIds = [&] {
            const auto other = [](const rj::Value *id) {
                return id && id->IsString() && !wire::isNineCharToolId(rj::bytes(id));
            };
            const bool holds = std::any_of(messages.begin(), messages.end(), [&](const rj::Value &m) {
                if (other(rj::member(&m, "tool_call_id")))
                    return true;
                const auto calls = rj::elements(rj::member(&m, "tool_calls"));
                return std::any_of(calls.begin(), calls.end(),
                                   [&](const rj::Value &call) { return other(rj::member(&call, "id")); });
            });
            return holds && takesOnlyNineCharToolIds(target);
        }();
        // A user turn right after a tool turn, to a server that refuses it (wantsAssistantAfterToolTurns,
        // told only when the history holds one): an assistant turn goes between (bridgeToolTurnsToUser).
        const bool bridgesToolTurns = [&] {
            bool afterTool = false;
            for (const rj::Value &m : messages) {
                const rj::Value *role = rj::member(&m, "role");
                if (afterTool && rj::equals(role, "user"))
                    return wantsAssistantAfterToolTurns(target);
                afterTool = rj::equals(role, "tool");
            }
            return false;
        }();
        // OpenAI's models from the o-series and gpt-5 on refuse `max_tokens` ("Use
        // 'max_completion_tokens' instead"), which every OpenAI chat model takes: to api.openai.com, and
        // to such a model on any server (Azure's too), the client's cap goes by that name, so a failover
        // from a server that took max_tokens (vLLM, Groq, gpt-4o) reaches gpt-5 whole, as a converted
        // request does (maxTokensFieldDependsOnHost).
        const bool openAIHost = isOpenAI(target.baseUrl) || alwaysReasons(target);
        const bool renamesMaxTokens = openAIHost && rj::member(wire::clientBody(request), "max_tokens") &&
                                      !rj::member(wire::clientBody(request), "max_completion_tokens");
        const char *capName = openAIHost ? "max_completion_tokens" : "max_tokens";
        // Mistral's API refuses what its schema does not name (isMistral): no `stream_options` (the usage
        // comes in the last chunk unasked, so a client that asked for it still gets it), and the client's
        // `max_completion_tokens` as `max_tokens`.
        const bool toMistral = isMistral(target.baseUrl);
        const bool renamesMaxCompletionTokens =
            toMistral && rj::member(wire::clientBody(request), "max_completion_tokens");
        const QByteArray model = wire::jsonString(target.modelId);
        // A model that takes fewer output tokens than asked (Target::maxOutputTokens): each of the
        // client's two caps that asks for more goes down to it.
        std::optional<int> cap = loweredOutputCap(request, target);
        if (!cap && request.options.maxTokens)
            cap = request.options.maxTokens; // the smaller of two caps that disagree (the codec's), for both
        const QByteArray capText = cap ? QByteArray::number(*cap) : QByteArray();
        const auto overCap = [&](const char *key) {
            const rj::Value *v = rj::member(wire::clientBody(request), key);
            return cap && rj::isNumber(v) && rj::toDouble(v) > *cap;
        };
        // A function description over what OpenAI takes (a client that talked to another server
        // before): cut for a candidate that has the limit, as on a conversion (boundsToolDescriptions).
        const bool boundsDescriptions =
            holdsLongToolDescription(wire::clientBody(request)) && boundsToolDescriptions(target);
        // The client's effort as this model takes it (gpt-5.2's xhigh to gpt-5.1 after a failover:
        // high), named in the answer (droppedFor).
        const QString clientEffort = rj::toString(rj::member(wire::clientBody(request), "reasoning_effort"));
        const QString effort = model::openAIEffortFor(clientEffort, target.modelId);
        const bool refitsEffort = effort != clientEffort;
        const QByteArray effortText = refitsEffort ? wire::jsonString(effort) : QByteArray();
        std::optional<QByteArray> spliced;
        const bool splices = !reworksTurns && !repeatsIds && !aliasesIds && !bridgesToolTurns && !renamesMaxTokens &&
                             !renamesMaxCompletionTokens && !boundsDescriptions;
        std::optional<QByteArray> systemTurns;
        if (splices && renamesDevelopers)
            systemTurns =
                developersAsSystem(request.rawBody, rj::member(wire::clientBody(request), "messages"), developerEdit);
        if (splices && (!renamesDevelopers || systemTurns)) {
            QVarLengthArray<wire::JsonMemberEdit, 8> edits{
                {"model", model},
                {"stream", "true"},
                toMistral ? wire::JsonMemberEdit::removal("stream_options")
                          : wire::JsonMemberEdit{"stream_options", merged.isEmpty()
                                                                       ? QByteArrayView(R"({"include_usage":true})")
                                                                       : QByteArrayView(merged)}};
            for (const char *key : {"max_tokens", "max_completion_tokens"})
                if (overCap(key))
                    edits.append({key, capText});
            if (cap && edits.size() == 3 && !request.options.maxTokens)
                edits.append({capName, capText}); // none asked, and the server's own default refused
            if (refitsEffort)
                edits.append({"reasoning_effort", effortText});
            // What the server refuses goes out of the bytes too (pi-ai's `store:false` on every request
            // to a server not OpenAI's): the rest stays as the client wrote it.
            for (const char *key : refused)
                edits.append(wire::JsonMemberEdit::removal(key));
            if (systemTurns)
                edits.append({"messages", *systemTurns});
            spliced = wire::spliceTopLevel(request.rawBody, std::span(edits.data(), edits.size()));
        }
        if (spliced) {
            http.body = std::move(*spliced);
        } else {
            QJsonObject body = wire::clientBodyQt(request); // everything the client sent, unknown fields included
            body.insert(L("model"), target.modelId);
            body.insert(L("stream"), true);
            if (toMistral)
                body.remove(L("stream_options"));
            else
                body.insert(L("stream_options"), streamOptions());
            for (const char *key : {"max_tokens", "max_completion_tokens"})
                if (overCap(key))
                    body.insert(QLatin1String(key), *cap);
            if (cap && !request.options.maxTokens)
                body.insert(QLatin1String(capName), *cap);
            if (renamesMaxTokens)
                body.insert(L("max_completion_tokens"), body.take(L("max_tokens")));
            if (renamesMaxCompletionTokens) { // the smaller of the client's two caps when it sent both
                const QJsonValue asked = body.take(L("max_completion_tokens"));
                body.insert(L("max_tokens"), cap ? QJsonValue(*cap) : asked);
            }
            for (const char *key : refused)
                body.remove(QLatin1String(key));
            if (refitsEffort)
                body.insert(L("reasoning_effort"), effort);
            if (reworksTurns || renamesDevelopers) {
                const QJsonArray sent = body.value(L("messages")).toArray();
                QJsonArray kept;
                qsizetype i = 0;
                for (const rj::Value &m : messages) {
                    const bool edit = reasoningEdit(m), bound = longIds(m), named = nameEdit(m),
                               developer = developerEdit(m);
                    if (emptyAssistant(m)) {
                        // left out
                    } else if (edit || bound || named || developer) {
                        QJsonObject turn = sent.at(i).toObject();
                        if (edit && reasoningContentEdit(m)) {
                            if (reasoningBack)
                                turn.insert(L("reasoning_content"), QString());
                            else
                                turn.remove(L("reasoning_content"));
                        }
                        if (edit && otherReasoningEdit(m))
                            for (const char *key : kOtherReasoningMembers)
                                turn.remove(QLatin1String(key));
                        if (edit && callSignatureEdit(m))
                            signCalls(turn, *toGoogle, target.replayReasoning);
                        if (bound)
                            boundToolCallIds(turn);
                        if (named)
                            foldName(turn);
                        if (developer)
                            turn.insert(L("role"), L("system"));
                        kept.append(turn);
                    } else {
                        kept.append(sent.at(i));
                    }
                    ++i;
                }
                body.insert(L("messages"), kept);
            }
            if (repeatsIds || aliasesIds || bridgesToolTurns) {
                QJsonArray turns = body.value(L("messages")).toArray();
                if (repeatsIds)
                    uniqueToolCallIds(turns);
                if (aliasesIds)
                    nineCharToolCallIds(turns);
                if (bridgesToolTurns)
                    bridgeToolTurnsToUser(turns);
                body.insert(L("messages"), turns);
            }
            if (boundsDescriptions)
                boundToolDescriptions(body);
            http.body = wire::compactJson(body);
        }
    } else {
        // Tool names OpenAI refuses go by an alias; the answer's calls come back by the client's.
        const ToolNameAliases aliases = ToolNameAliases::forRequest(request, kApi);
        std::optional<model::ChatRequest> aliased;
        const model::ChatRequest &converted = withToolAliases(request, aliases, aliased);
        http.toolNameOriginals = aliases.originals();
        // A model configured not to reason gets no reasoning_effort (gpt-4o refuses it with a 400);
        // one that takes fewer output tokens than asked gets its maximum.
        model::ChatRequest scratch;
        const bool toGoogle = takesCallSignatures(target);
        QJsonObject body =
            buildBody(requestForTarget(converted, target, scratch), target.modelId, isOpenAI(target.baseUrl),
                      takesReasoningBack(target), alwaysReasons(target), toGoogle);
        // Claude Code's tool descriptions run to thousands of characters; OpenAI refuses more than 1024.
        // The body is looked at first: telling the target (its host, its model id) costs more.
        if (!converted.context.tools.isEmpty() && boundsToolDescriptions(target))
            boundToolDescriptions(body);
        // Mistral's validator takes only nine characters of [a-zA-Z0-9] for an id: a Claude history's
        // toolu_… and OpenAI's call_… go by an alias (nineCharToolCallIds), a call's and its result's
        // alike. The same validator refuses a user turn right after tool turns
        // (wantsAssistantAfterToolTurns): an assistant turn goes between (bridgeToolTurnsToUser).
        if (hasToolIds(converted) && takesOnlyNineCharToolIds(target)) {
            QJsonArray turns = body.value(L("messages")).toArray();
            nineCharToolCallIds(turns);
            bridgeToolTurnsToUser(turns);
            body.insert(L("messages"), turns);
        }
        if (isMistral(target.baseUrl))
            asMistralsApiTakesIt(body);
        if (toGoogle && !target.replayReasoning) {
            // Google's Chat endpoint refused a signature: the history once more with none (signCalls).
            QJsonArray turns = body.value(L("messages")).toArray();
            for (qsizetype i = 0; i < turns.size(); ++i)
                if (QJsonObject turn = turns.at(i).toObject(); turn.contains(L("tool_calls"))) {
                    signCalls(turn, true, false);
                    turns.replace(i, turn);
                }
            body.insert(L("messages"), turns);
        }
        // A Responses client's text.verbosity is Chat's verbosity, the same setting: to the Chat
        // servers that take it (OpenAI's, OpenRouter's). Another server may refuse a member it does not
        // know with a 400; there it goes without, a documented drop (translation_rules.md).
        if (request.sourceApi == wire::Api::OpenAIResponses &&
            (isOpenAI(target.baseUrl) || takesReasoningDetailsBack(target)))
            if (const QString verbosity = wire::verbosityOf(wire::clientBody(request), request.sourceApi);
                !verbosity.isEmpty())
                body.insert(L("verbosity"), verbosity);
        http.body = wire::compactJson(body);
    }

    addHeader(http, "content-type", "application/json");
    addHeader(http, "accept", "text/event-stream");
    if (!target.credential.isEmpty())
        addHeader(http, "authorization", "Bearer " + target.credential);
    if (passthrough) {
        const QByteArray beta = headerValue(forwardHeaders, "openai-beta");
        if (!beta.isEmpty())
            addHeader(http, "OpenAI-Beta", beta);
    }
    return http;
}

std::unique_ptr<StreamDecoder> OpenAICompletionsAdapter::makeDecoder(const Target &, NativeBody native) const {
    return std::make_unique<OpenAICompletionsStreamDecoder>(native);
}

UpstreamErrorInfo OpenAICompletionsAdapter::parseError(int, const QByteArray &body) const {
    return wire::parseErrorBody(kApi, body);
}

} // namespace sw::upstream
