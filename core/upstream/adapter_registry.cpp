// The upstream adapter registry: one shared, stateless adapter per upstream API.
#include "core/upstream/anthropic_adapter.h"
#include "core/upstream/anthropic_schema.h"
#include "core/upstream/claude_models.h"
#include "core/upstream/google_adapter.h"
#include "core/upstream/openai_completions_adapter.h"
#include "core/upstream/openai_responses_adapter.h"
#include "core/upstream/upstream_adapter.h"
#include "core/wire/client_body.h"
#include "core/wire/document_part.h"
#include "core/wire/dropped_members.h"
#include "core/wire/image_size.h"

#include <QHash>
#include <QJsonArray>
#include <QJsonObject>
#include <QMimeDatabase>
#include <QUrl>
#include <algorithm>
#include <array>
#include <functional>
#include <span>
#include <string_view>
#include <utility>

namespace sw::upstream {

ToolResultContent splitToolResult(const model::Message &result) {
    ToolResultContent out;
    for (const model::ContentBlock &b : result.content) {
        if (b.isAttachment()) {
            out.attachments.append(b);
            continue;
        }
        QString words;
        if (b.type == model::BlockType::Text)
            words = b.text;
        else if (b.isTextDocument())
            words = model::textDocumentAsText(b);
        else
            continue;
        out.text += (out.text.isEmpty() ? QString() : QStringLiteral("\n")) + words;
    }
    return out;
}

QString documentFileName(const model::ContentBlock &document) {
    if (!document.title.isEmpty())
        return document.title;
    const QString suffix = QMimeDatabase().mimeTypeForName(document.mimeType).preferredSuffix();
    return suffix.isEmpty() ? QStringLiteral("document") : QStringLiteral("document.") + suffix;
}

QList<model::ContentBlock> takeToolResultAttachments(QList<model::ContentBlock> &pending) {
    if (pending.isEmpty())
        return {};
    const bool onlyImages = std::all_of(pending.begin(), pending.end(),
                                        [](const model::ContentBlock &b) { return b.type == model::BlockType::Image; });
    QList<model::ContentBlock> blocks{
        model::ContentBlock::makeText(onlyImages ? QStringLiteral("Attached image(s) from tool result:")
                                                 : QStringLiteral("Attached file(s) from tool result:"))};
    blocks.append(std::exchange(pending, {}));
    return blocks;
}

namespace {
// The characters of a plain event name: letters, digits, '_', '.', '-'. A table: this runs on every
// streamed event, and a chain of comparisons a character cost 2 k instructions a request.
constexpr std::array<bool, 256> kEventNameChar = [] {
    std::array<bool, 256> t{};
    for (int c = 0; c < 256; ++c)
        t[size_t(c)] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                       c == '.' || c == '-';
    return t;
}();
} // namespace

std::optional<QByteArray> relayEventName(std::string_view type, const QByteArray &eventLine) {
    const bool plain = !type.empty() && type.size() <= 64 && std::all_of(type.begin(), type.end(), [](char c) {
        return kEventNameChar[static_cast<unsigned char>(c)];
    });
    if (plain && type == std::string_view(eventLine.constData(), size_t(eventLine.size())))
        return std::nullopt;
    return plain ? QByteArray(type.data(), qsizetype(type.size())) : QByteArray();
}

QList<model::Message> resultsAfterTheirCalls(const QList<model::Message> &messages) {
    using model::Role;
    // Where each call id is made (assistant turns, in order) and answered (tool results, in order).
    QHash<QString, QList<qsizetype>> callTurns;
    QHash<QString, QList<qsizetype>> results;
    for (qsizetype i = 0; i < messages.size(); ++i) {
        const model::Message &m = messages[i];
        if (m.role == Role::ToolResult && !m.toolCallId.isEmpty()) {
            results[callIdOf(m.toolCallId)].append(i);
        } else if (m.role == Role::Assistant) {
            for (const model::ContentBlock &b : m.content)
                if (b.type == model::BlockType::ToolCall && !b.toolCallId.isEmpty()) {
                    QList<qsizetype> &turns = callTurns[callIdOf(b.toolCallId)];
                    if (turns.isEmpty() || turns.last() != i)
                        turns.append(i);
                }
        }
    }
    if (results.isEmpty())
        return messages;
    QList<bool> moved(messages.size(), false);
    // Per id, the first of its results not yet passed: the turns are read in order, so a result at or
    // before this turn, or one already moved, is never wanted again. With a cursor and a binary search,
    // thousands of calls of one id ("call_0") cost linear time (probe D2: 16 000 of them froze the
    // engine thread for 3.6 s).
    QHash<QString, qsizetype> nextAnswer;
    QList<model::Message> out;
    out.reserve(messages.size());
    for (qsizetype i = 0; i < messages.size(); ++i) {
        if (moved[i])
            continue;
        const model::Message &m = messages[i];
        out.append(m);
        if (m.role != Role::Assistant)
            continue;
        for (const model::ContentBlock &b : m.content) {
            if (b.type != model::BlockType::ToolCall || b.toolCallId.isEmpty())
                continue;
            const QString id = callIdOf(b.toolCallId);
            const auto found = results.constFind(id);
            if (found == results.constEnd())
                continue;
            const QList<qsizetype> &answers = *found;
            // A later turn calling the same id again (a server that names every turn's first call
            // "call_0") answers its own: the search ends there.
            const QList<qsizetype> &turns = callTurns[id];
            const auto later = std::upper_bound(turns.begin(), turns.end(), i);
            const qsizetype end = later == turns.end() ? messages.size() : *later;
            qsizetype &next = nextAnswer[id];
            while (next < answers.size() && (answers[next] <= i || moved[answers[next]]))
                ++next;
            if (next < answers.size() && answers[next] < end) {
                const qsizetype j = answers[next++];
                moved[j] = true;
                out.append(messages[j]);
                // The result answers this call, so it has this call's name: a client's result names
                // none (Chat, Messages), and the name the decoder found by id is the latest call's,
                // another tool's when two calls of one answer share an id (probe J1 1). Gemini
                // pairs a response by its name.
                if (!b.toolName.isEmpty() && out.last().toolName != b.toolName)
                    out.last().toolName = b.toolName;
            }
        }
    }
    return out;
}

void MergedTurns::append(const QString &role, const QJsonArray &parts) {
    if (m_inRun && role == m_role) {
        // m_parts is this object's own (shared with the first turn's array at most, copied once on
        // the first merge), so each append is amortised constant time.
        for (const QJsonValue &p : parts)
            m_parts.append(p);
        return;
    }
    writeRun();
    m_role = role;
    m_parts = parts;
    m_inRun = true;
}

void MergedTurns::writeRun() {
    if (!m_inRun)
        return;
    m_turns.append(QJsonObject{{QLatin1String("role"), m_role}, {m_partsKey, m_parts}});
    m_parts = QJsonArray();
    m_inRun = false;
}

QJsonArray MergedTurns::take() {
    writeRun();
    m_role.clear();
    return std::exchange(m_turns, QJsonArray());
}

QString modelPathSegment(const QString &modelId) {
    // Everything but RFC 3986 unreserved characters is encoded: "/" is %2F, "?" %3F, "#" %23.
    return QString::fromLatin1(QUrl::toPercentEncoding(modelId));
}

namespace {

namespace rj = wire::rj;

using TypeList = std::span<const std::string_view>;

// The part types a converted request carries, by where they stand (what the inbound codec
// decodes there). Anything else, a future type or one of another API's shapes (a Chat turn
// with Responses' `input_text`), would be left out of a converted request without a word.
// Chat: user and tool turns read text, images and files; system, developer and assistant
// turns read their words (rj::textOfContent).
constexpr std::string_view kChatUserParts[] = {"text", "image_url", "file"};
constexpr std::string_view kTextParts[] = {"text", "input_text", "output_text", "refusal"};
// Messages: a user turn's blocks, and a tool result's.
constexpr std::string_view kAnthropicUserBlocks[] = {"text", "image", "document", "tool_result"};
constexpr std::string_view kAnthropicToolResultBlocks[] = {"text", "image", "document"};
// A system message between the turns: its text (a tool change, tool_addition or tool_removal, is not).
constexpr std::string_view kAnthropicSystemBlocks[] = {"text"};
// Responses: a message's parts and a tool output's; instructions are read as text only.
constexpr std::string_view kResponsesParts[] = {"input_text", "output_text", "text",
                                                "refusal",    "input_image", "input_file"};
constexpr std::string_view kResponsesInstructionParts[] = {"input_text", "text"};
// Responses input items a conversion carries; the records of the provider's own tool runs
// (wire::isResponsesToolRun) it leaves out by rule, as Messages' server tool blocks.
constexpr std::string_view kResponsesItems[] = {"message",          "function_call",           "function_call_output",
                                                "custom_tool_call", "custom_tool_call_output", "reasoning"};

bool oneOf(std::string_view type, TypeList types) {
    return std::find(types.begin(), types.end(), type) != types.end();
}

// An assistant turn of a Messages history: what the model said and called, and the record of
// the provider's own tool runs (server_tool_use, web_search_tool_result, mcp_tool_use, …),
// which a converted request leaves out as documented (translation_rules.md).
bool anthropicAssistantBlock(std::string_view type) {
    static constexpr std::string_view carried[] = {"text", "thinking", "redacted_thinking", "tool_use"};
    return oneOf(type, carried) || wire::isServerToolRecord(type);
}

// The first content part of the client's messages that a converted request would go without:
// a type the conversion does not carry (audio, a search result, a future or foreign type), or
// a document in a shape wire::isTranslatableDocument does not carry. An allow-list, so that a
// part nobody foresaw makes the candidate incompatible rather than vanish.
QString unmappedPart(const rj::Value *body, wire::Api inbound) {
    auto named = [](std::string_view type) {
        return QStringLiteral("content part \"%1\"")
            .arg(type.empty() ? QStringLiteral("(no type)") : QString::fromUtf8(type.data(), qsizetype(type.size())));
    };
    // The first part of `content` (an array; a string is words) whose type is not in `carried`.
    std::function<QString(const rj::Value *, TypeList)> scan = [&](const rj::Value *content,
                                                                   TypeList carried) -> QString {
        for (const rj::Value &part : rj::elements(content)) {
            const std::string_view type = rj::bytes(rj::member(&part, "type"));
            if (!oneOf(type, carried))
                return named(type);
            if ((type == "file" || type == "document" || type == "input_file") && !wire::isTranslatableDocument(part))
                return named(type);
            if (type == "tool_result") // Messages: the blocks inside a tool result too
                if (const QString inner = scan(rj::member(&part, "content"), kAnthropicToolResultBlocks);
                    !inner.isEmpty())
                    return inner;
        }
        return {};
    };
    switch (inbound) {
    case wire::Api::OpenAICompletions:
        for (const rj::Value &m : rj::elements(rj::member(body, "messages"))) {
            const rj::Value *role = rj::member(&m, "role");
            const bool turnOfWords =
                rj::equals(role, "system") || rj::equals(role, "developer") || rj::equals(role, "assistant");
            if (const QString found =
                    scan(rj::member(&m, "content"), turnOfWords ? TypeList(kTextParts) : TypeList(kChatUserParts));
                !found.isEmpty())
                return found;
        }
        return {};
    case wire::Api::AnthropicMessages:
        for (const rj::Value &m : rj::elements(rj::member(body, "messages"))) {
            const rj::Value *role = rj::member(&m, "role");
            if (rj::equals(role, "assistant")) {
                for (const rj::Value &block : rj::elements(rj::member(&m, "content")))
                    if (const std::string_view type = rj::bytes(rj::member(&block, "type"));
                        !anthropicAssistantBlock(type))
                        return named(type);
            } else if (rj::equals(role, "user")) {
                if (const QString found = scan(rj::member(&m, "content"), kAnthropicUserBlocks); !found.isEmpty())
                    return found;
            } else if (rj::equals(role, "system")) { // its words join the system prompt
                if (const QString found = scan(rj::member(&m, "content"), kAnthropicSystemBlocks); !found.isEmpty())
                    return found;
            }
        }
        return {};
    case wire::Api::OpenAIResponses:
        for (const rj::Value &item : rj::elements(rj::member(body, "input"))) {
            const rj::Value *type = rj::member(&item, "type");
            const rj::Value *role = rj::member(&item, "role");
            QString found;
            if (rj::equals(type, "message") || (rj::isAbsent(type) && role)) {
                // Instructions are read as text: a file or image in a system or developer
                // message has no place in a converted request.
                const bool instructions = rj::equals(role, "system") || rj::equals(role, "developer");
                found = scan(rj::member(&item, "content"),
                             instructions ? TypeList(kResponsesInstructionParts) : TypeList(kResponsesParts));
            } else if (rj::equals(type, "function_call_output") || rj::equals(type, "custom_tool_call_output")) {
                found = scan(rj::member(&item, "output"), kResponsesParts); // an output given as parts
            } else if (const std::string_view t = rj::bytes(type);
                       !oneOf(t, kResponsesItems) && !wire::isResponsesToolRun(t)) {
                // A reference to a stored item, a compaction, a shell or computer call and its
                // output: what they hold is not in the request, or no other API has it.
                found = QStringLiteral("input item \"%1\"").arg(QString::fromUtf8(t.data(), qsizetype(t.size())));
            }
            if (!found.isEmpty())
                return found;
        }
        return {};
    case wire::Api::Pi:
    case wire::Api::Google:
        return {};
    }
    return {};
}

// Why `target` cannot read a document, or nullopt when it can. Plain text goes everywhere as
// words; a file goes inline as a PDF to every API (any type to Responses, which reads many),
// by URL to Messages, Responses and Gemini (one it can fetch), by file id only to the API of the
// provider that issued it (`file_…` Messages, `file-…` Responses: a Chat server is as often not
// OpenAI's, and a Chat client's own ids pass through untranslated).
std::optional<QString> documentIncompatibility(const model::ContentBlock &doc, const QString &target) {
    if (doc.isTextDocument())
        return std::nullopt;
    const bool toAnthropic = target == wire::apiName(AnthropicAdapter::kApi);
    const bool toGoogle = target == wire::apiName(GoogleAdapter::kApi);
    const bool toChat = target == wire::apiName(OpenAICompletionsAdapter::kApi);
    const QString name =
        doc.title.isEmpty() ? QStringLiteral("document") : QStringLiteral("document \"%1\"").arg(doc.title.left(64));
    if (!doc.data.isEmpty()) {
        if (target == wire::apiName(OpenAIResponsesAdapter::kApi) || doc.mimeType == QLatin1String("application/pdf"))
            return std::nullopt;
        return QStringLiteral("%1: %2 reads no %3 file").arg(name, target, doc.mimeType.left(64));
    }
    const bool web = doc.url.startsWith(QLatin1String("http://")) || doc.url.startsWith(QLatin1String("https://"));
    // Messages reads only a PDF by URL, and Gemini is told the file's type: a URL that does not
    // name a PDF (report.docx, data.csv) would be a 400 that no failover gets past.
    const bool pdf = doc.mimeType == QLatin1String("application/pdf") ||
                     QUrl(doc.url).path().endsWith(QLatin1String(".pdf"), Qt::CaseInsensitive);
    if ((toAnthropic || toGoogle) && (web || doc.url.startsWith(QLatin1String("gs://"))) && !pdf)
        return QStringLiteral("%1: %2 reads a file by URL only as a PDF, and \"%3\" does not name one")
            .arg(name, target, doc.url.left(64));
    bool readable = false;
    if (toAnthropic)
        readable = web || doc.url.startsWith(QLatin1String("file_"));
    else if (toGoogle)
        readable = GoogleAdapter::isFetchableUrl(doc.url);
    else if (toChat)
        readable = false;
    else
        readable = web || doc.url.startsWith(QLatin1String("file-"));
    if (readable)
        return std::nullopt;
    if (toChat && web)
        return QStringLiteral("%1: %2 reads no file by URL").arg(name, target);
    return QStringLiteral("%1: %2 cannot resolve \"%3\"").arg(name, target, doc.url.left(64));
}

constexpr qsizetype kAnthropicImageBytes = 5 * 1024 * 1024;
constexpr qsizetype kAnthropicMaxMedia = 100;
// The longest image side Messages takes, and the longest in a request of more than
// kAnthropicManyImages images: past them a 400 ("At least one of the image dimensions exceed max
// allowed size[ for many-image requests]: 8000 pixels") no failover gets past.
constexpr qint64 kAnthropicImageSide = 8000;
constexpr qint64 kAnthropicManyImagesSide = 2000;
constexpr qsizetype kAnthropicManyImages = 20;

// Present and saying something: not missing, null or an empty string.
bool present(const rj::Value *v) {
    return v && !v->IsNull() && !(v->IsString() && v->GetStringLength() == 0);
}

// A conversation that ends with the assistant's own words (no call awaiting a result): Messages and
// Gemini continue those words (a prefill: "The answer is" → " 7"), Chat and Responses read them as a
// finished turn and answer anew. Carried from one kind to the other, the answer would mean
// something else, so such a candidate is incompatible. pi's own route states no intent.
std::optional<QString> prefillIncompatibility(const model::Context &context, wire::Api inbound, const QString &target) {
    if (context.messages.isEmpty() || inbound == wire::Api::Pi)
        return std::nullopt;
    const model::Message &last = context.messages.last();
    if (last.role != model::Role::Assistant)
        return std::nullopt;
    const auto said = [](const model::ContentBlock &b) {
        return b.type == model::BlockType::Text && !b.text.isEmpty();
    };
    if (std::any_of(last.content.begin(), last.content.end(),
                    [](const model::ContentBlock &b) { return b.type == model::BlockType::ToolCall; }) ||
        std::none_of(last.content.begin(), last.content.end(), said))
        return std::nullopt;
    const auto continues = [](const QString &api) {
        return api == wire::apiName(wire::Api::AnthropicMessages) || api == wire::apiName(wire::Api::Google);
    };
    const QString source = wire::apiName(inbound);
    if (continues(source) == continues(target))
        return std::nullopt;
    return continues(source)
               ? QStringLiteral("messages: the conversation ends with an assistant turn, a prefill %1 continues "
                                "and %2 would answer as a new turn")
                     .arg(source, target)
               : QStringLiteral("messages: the conversation ends with an assistant turn, which %1 answers as a "
                                "new turn and %2 would continue as a prefill")
                     .arg(source, target);
}

} // namespace

namespace {
// A web search restriction (which sites, how many searches) that the target's search has no field for,
// by the client's name, or nullptr: Gemini's googleSearch takes none (its excludeDomains is Vertex
// AI's alone), Responses' filters allow sites only (max_uses goes as its max_tool_calls, web search
// being the one built-in tool that passes), Messages takes them all. Location and context size only
// steer the search: carried where the target has them, else named (wire::droppedMembers).
const char *searchRestrictionWithout(const QJsonObject &config, bool toGoogle, bool toResponses) {
    const auto given = [](const QJsonValue &v) {
        return v.isArray() ? !v.toArray().isEmpty() : !v.isNull() && !v.isUndefined();
    };
    if (toGoogle) {
        if (given(config.value(QLatin1String("allowed_domains"))))
            return "allowed_domains";
        if (given(config.value(QLatin1String("filters")).toObject().value(QLatin1String("allowed_domains"))))
            return "filters.allowed_domains";
        if (given(config.value(QLatin1String("max_uses"))))
            return "max_uses";
    }
    if ((toGoogle || toResponses) && given(config.value(QLatin1String("blocked_domains"))))
        return "blocked_domains";
    return nullptr;
}

// The image types each API reads (its documentation's list): Messages and OpenAI's take PNG, JPEG,
// GIF and WebP; Gemini PNG, JPEG, WebP, HEIC and HEIF, and refuses GIF with a 400.
bool readsImageType(const QString &api, const QString &mimeType) {
    if (mimeType.isEmpty())
        return true; // not said, and not one the bytes show: the target judges it
    const QString type = mimeType.toLower();
    if (type == QLatin1String("image/png") || type == QLatin1String("image/jpeg") ||
        type == QLatin1String("image/webp"))
        return true;
    if (api == wire::apiName(GoogleAdapter::kApi))
        return type == QLatin1String("image/heic") || type == QLatin1String("image/heif");
    return type == QLatin1String("image/gif");
}
} // namespace

std::optional<QString> UpstreamAdapter::incompatibility(const model::ChatRequest &request,
                                                        const QString &modelId) const {
    const wire::Api inbound = request.sourceApi;
    // The client's own fields, as it sent them.
    const rj::Value *raw = wire::clientBody(request);
    // Several choices (Chat's n): the canonical answer is one message. Streamed to the same API,
    // the upstream's frames pass through with every choice; a JSON answer is folded from the
    // upstream's stream into that one message, so the other choices would be lost.
    const int choices = inbound == wire::Api::OpenAICompletions ? rj::toInt(rj::member(raw, "n"), 1) : 1;
    // A forced tool call (any tool, or a named one) that Claude since Opus and Sonnet 5.5 and Fable 5.1
    // refuses with a 400, whichever format asked: a request error that would end the chain.
    if (const QString &choice = request.options.toolChoice;
        !request.context.tools.isEmpty() && !choice.isEmpty() && choice != QLatin1String("auto") &&
        choice != QLatin1String("none") && wire::isApi(api(), wire::Api::AnthropicMessages) &&
        ClaudeModel::of(modelId).refusesForcedToolUse())
        return QStringLiteral("tool_choice: %1 refuses a forced tool call (%2)")
            .arg(modelId, choice == QLatin1String("required") ? QStringLiteral("any tool") : choice);
    if (wire::apiName(inbound) == api()) {
        if (choices > 1 && !request.stream)
            return QStringLiteral("n: %1 choices in one JSON answer cannot pass this gateway, which folds the "
                                  "answer into one choice; ask for them with stream: true")
                .arg(choices);
        // A model that refuses stop sequences (o3, gpt-5): the gateway cuts the answer at them itself,
        // from the decoded stream, which holds the first choice alone (probe GV2 1).
        if (choices > 1 && !request.options.stop.isEmpty() && wire::isApi(api(), wire::Api::OpenAICompletions) &&
            OpenAICompletionsAdapter::alwaysReasons(modelId))
            return QStringLiteral("n: %1 choices with stop sequences cannot reach %2, which refuses stop: the "
                                  "gateway cuts the answer at them itself, into one choice")
                .arg(choices)
                .arg(modelId);
        // A tool change in a system message between the turns, to a Claude that takes no such
        // message: only its words can join the system prompt.
        if (wire::isApi(api(), wire::Api::AnthropicMessages))
            if (auto why = AnthropicAdapter::systemMessageIncompatibility(raw, modelId))
                return why;
        return std::nullopt; // passthrough: every field reaches the API that defines it
    }
    // Conversation state lives at OpenAI: another API would answer without the earlier turns.
    for (const char *field : {"previous_response_id", "conversation"})
        if (present(rj::member(raw, field)))
            return QStringLiteral("%1: only an openai-responses upstream holds that conversation state, not %2")
                .arg(QLatin1String(field), api());
    // A Chat history's audio answer given by its id alone, with no words of the turn beside it (no
    // transcript, no content): only OpenAI knows what the model said there, and another API would get
    // the conversation without that turn. One with its transcript goes as its words (OpenAIChatCodec).
    if (inbound == wire::Api::OpenAICompletions) {
        qsizetype i = 0;
        for (const rj::Value &m : rj::elements(rj::member(raw, "messages"))) {
            if (const rj::Value *audio = rj::asObject(rj::member(&m, "audio"));
                audio && rj::equals(rj::member(&m, "role"), "assistant") &&
                rj::toString(rj::member(audio, "transcript")).isEmpty() &&
                rj::textOfContent(rj::member(&m, "content")).isEmpty() &&
                rj::toString(rj::member(&m, "refusal")).isEmpty())
                return QStringLiteral("messages[%1].audio: an audio answer without its transcript, which only an "
                                      "openai-completions upstream resolves, not %2")
                    .arg(i)
                    .arg(api());
            ++i;
        }
    }
    const QString target = api();
    const bool toAnthropic = target == wire::apiName(AnthropicAdapter::kApi);
    const bool toGoogle = target == wire::apiName(GoogleAdapter::kApi);
    const bool toChat = target == wire::apiName(OpenAICompletionsAdapter::kApi);
    const bool toResponses = target == wire::apiName(OpenAIResponsesAdapter::kApi);
    // Provider-run tools: web search has an equivalent on Messages, Gemini and Responses;
    // the others run only at the provider that defines them.
    for (const model::BuiltinTool &b : request.context.builtinTools) {
        if (b.kind == QLatin1String("web_search")) {
            if (toChat)
                return QStringLiteral("tools: web_search has no equivalent on %1").arg(target);
            // Gemini refuses grounding with Google Search beside function declarations (400 "Tool
            // use with function calling is unsupported"), a request error no failover gets past.
            if (toGoogle && !request.context.tools.isEmpty())
                return QStringLiteral("tools: web_search together with function tools, which %1 refuses in one "
                                      "request")
                    .arg(target);
            if (const char *field = searchRestrictionWithout(b.config, toGoogle, toResponses))
                return QStringLiteral("tools: web_search's %1 has no equivalent on %2, whose search would not keep "
                                      "to it")
                    .arg(QLatin1String(field), target);
            continue;
        }
        return QStringLiteral("tools: the built-in tool \"%1\" runs only on its own provider's API, not %2")
            .arg(b.kind, target);
    }
    // Structured output is mapped everywhere but "any JSON object" to Messages, whose
    // structured outputs need a schema.
    if (toAnthropic && request.options.outputFormat.type == QLatin1String("json_object"))
        return QStringLiteral("response_format: json_object (JSON without a schema) has no equivalent on %1")
            .arg(target);
    if (toAnthropic && request.options.outputFormat.type == QLatin1String("json_schema")) {
        if (const auto why = anthropic_schema::unsupported(request.options.outputFormat.schema))
            return QStringLiteral("structured output: %1 on %2").arg(*why, target);
        // Messages compiles it within limits on the request as a whole (strict tools past them go
        // without strict; the structured output has no form without its schema).
        const anthropic_schema::Complexity c =
            anthropic_schema::complexity(anthropic_schema::shape(request.options.outputFormat.schema));
        if (!c.withinLimits())
            return QStringLiteral("structured output: the schema has %1 optional parameters and %2 of a union type, "
                                  "past the %3 and %4 that %5 compiles in one request")
                .arg(c.optionalParameters)
                .arg(c.unionParameters)
                .arg(anthropic_schema::kMaxOptionalParameters)
                .arg(anthropic_schema::kMaxUnionParameters)
                .arg(target);
    }
    // Gemini before 3 refuses function calling beside a JSON answer (400 "Function calling with a
    // response mime type: 'application/json' is unsupported"), a request error no failover gets past.
    if (toGoogle && request.options.outputFormat.isSet() && !request.context.tools.isEmpty() &&
        GoogleAdapter::generation(modelId) < 3)
        return QStringLiteral("tools together with a JSON answer, which %1 refuses in one request before "
                              "Gemini 3 (model \"%2\")")
            .arg(target, modelId);
    // More function tools than the API takes in one request: Chat 128 ("A max of 128 functions are
    // supported"), Gemini 512 ("At most 512 function declarations can be specified"). An MCP-heavy
    // agent passes 128; the 400 would end the chain, and a candidate of another API may take them all.
    if (const qsizetype most = toChat     ? OpenAICompletionsAdapter::kMaxTools
                               : toGoogle ? GoogleAdapter::kMaxFunctionDeclarations
                                          : 0;
        most > 0 && request.context.tools.size() > most)
        return QStringLiteral("tools: %1 function tools, past the %2 that %3 takes in one request")
            .arg(request.context.tools.size())
            .arg(most)
            .arg(target);
    // Messages refuses a tool whose input schema names a top-level property outside
    // ^[a-zA-Z0-9_.-]{1,64}$ ("filter[id]", "Account Number": OpenAPI-made MCP tools), a 400 no
    // failover gets past. An alias would have to be mapped back in every call's arguments, streamed
    // as partial JSON a key may be cut across; the candidate is incompatible instead.
    if (toAnthropic)
        for (const model::Tool &t : request.context.tools)
            if (const auto name = anthropic_schema::refusedPropertyName(t.parameters); name)
                return QStringLiteral("tools: \"%1\" has a parameter named \"%2\", and %3 takes parameter names "
                                      "of letters, digits, '_', '.' and '-' alone, up to 64")
                    .arg(t.name.left(64), name->left(64), target);
    // At most one tool call per turn: Gemini has no such switch.
    if (toGoogle && request.options.parallelToolCalls == false && !request.context.tools.isEmpty())
        return QStringLiteral("parallel_tool_calls: false has no equivalent on %1").arg(target);
    if (const QString part = unmappedPart(raw, inbound); !part.isEmpty())
        return QStringLiteral("%1: no translation to %2").arg(part, target);
    if (const auto why = prefillIncompatibility(request.context, inbound, target); why)
        return why;
    // Sampling controls the target has no field for. Zero penalties are the default and
    // change nothing (SDKs often send them), so only a real change counts. (Gemini has the
    // penalties, but its models from 2.5 on refuse them: those go without, named in the answer,
    // GoogleAdapter::droppedFor.)
    const model::Options &opt = request.options;
    if (opt.topK && (toChat || toResponses))
        return QStringLiteral("top_k has no equivalent on %1").arg(target);
    for (const auto &[value, name] :
         {std::pair{opt.presencePenalty, "presence_penalty"}, std::pair{opt.frequencyPenalty, "frequency_penalty"}})
        if (value && *value != 0.0 && (toAnthropic || toResponses))
            return QStringLiteral("%1 has no equivalent on %2").arg(QLatin1String(name), target);
    // A tool choice the canonical request cannot say (allowed_tools, a forced built-in tool).
    const rj::Value *choice = rj::asObject(rj::member(raw, "tool_choice"));
    const rj::Value *choiceType = rj::member(choice, "type");
    if (inbound != wire::Api::AnthropicMessages && choice && !rj::equals(choiceType, "function") &&
        !rj::equals(choiceType, "custom"))
        return QStringLiteral("tool_choice: \"%1\" has no translation to %2").arg(rj::toString(choiceType), target);
    // Several answers per request: the canonical answer is one choice.
    if (choices > 1)
        return QStringLiteral("n: %1 choices cannot come from %2").arg(choices).arg(target);
    // Remote MCP servers: Anthropic's MCP connector calls them; no other API has the field.
    if (rj::arraySize(rj::asArray(rj::member(raw, "mcp_servers"))) > 0)
        return QStringLiteral("mcp_servers: only an anthropic-messages upstream connects to MCP servers, not %1")
            .arg(target);
    // Responses' cap on built-in tool calls: web search is the one built-in tool that passes, and
    // only Anthropic's search has a cap (max_uses, which the adapter sets from a count of 1 or more).
    // Without a built-in tool it limits nothing.
    if (const rj::Value *cap = rj::member(raw, "max_tool_calls");
        present(cap) && !request.context.builtinTools.isEmpty() &&
        !(toAnthropic && AnthropicAdapter::searchCapOf(raw) > 0))
        return QStringLiteral("max_tool_calls has no equivalent on %1").arg(target);
    // Responses features whose state or execution lives at OpenAI.
    for (const char *field : {"prompt", "background"})
        if (const rj::Value *v = rj::member(raw, field); present(v) && !(v->IsBool() && !v->GetBool()))
            return QStringLiteral("%1: only an openai-responses upstream runs it, not %2")
                .arg(QLatin1String(field), target);
    // Spoken answers: no canonical audio output.
    for (const rj::Value &m : rj::elements(rj::member(raw, "modalities")))
        if (rj::equals(&m, "audio"))
            return QStringLiteral("modalities: audio output has no translation to %1").arg(target);
    // Images and files the target could not read would otherwise be left out of the request.
    qsizetype media = 0; // images and files (a file is one page at least) that go to Messages as such
    qsizetype images = 0;
    qint64 longestSide = 0; // of the images whose size their bytes say
    for (const model::Message &m : request.context.messages)
        for (const model::ContentBlock &b : m.content) {
            if (b.type == model::BlockType::Image || (b.type == model::BlockType::Document && !b.isTextDocument()))
                ++media;
            if (b.type == model::BlockType::Document) {
                if (const auto why = documentIncompatibility(b, target); why)
                    return why;
                continue;
            }
            // An image type the target does not read is a 400 no failover gets past: an iPhone's HEIC
            // photo reaches Gemini, never Messages or OpenAI. (The type is the one the bytes say
            // when they are PNG, JPEG, GIF or WebP: wire::sniffedImageType.)
            if (b.type == model::BlockType::Image && !b.data.isEmpty() && !readsImageType(target, b.mimeType))
                return QStringLiteral("image of type \"%1\": %2 does not read it").arg(b.mimeType.left(64), target);
            // Messages refuses an image over 5 MB (its base64 text) with a 400 no failover gets past.
            if (b.type == model::BlockType::Image && toAnthropic && b.data.size() > kAnthropicImageBytes)
                return QStringLiteral("image of %1 bytes (base64): over the %2 bytes %3 takes")
                    .arg(b.data.size())
                    .arg(kAnthropicImageBytes)
                    .arg(target);
            // And one too large in pixels: a full-page screenshot (1440x8570), or a Retina screen in a
            // long agent session. OpenAI and Gemini take it and scale it down. An image by URL, or
            // one whose header says no size, goes as it is.
            if (b.type == model::BlockType::Image && toAnthropic) {
                ++images;
                if (const auto size = wire::imageSize(b.data)) {
                    if (qMax(size->width, size->height) > kAnthropicImageSide)
                        return QStringLiteral("image of %1x%2 pixels: over the %3 pixels a side %4 takes")
                            .arg(size->width)
                            .arg(size->height)
                            .arg(kAnthropicImageSide)
                            .arg(target);
                    longestSide = qMax(longestSide, qMax(size->width, size->height));
                }
            }
            if (b.type != model::BlockType::Image || b.url.isEmpty())
                continue;
            const bool web = b.url.startsWith(QLatin1String("http://")) || b.url.startsWith(QLatin1String("https://"));
            bool readable = web;
            if (toAnthropic)
                readable |= b.url.startsWith(QLatin1String("file_")); // Anthropic Files API id
            else if (toGoogle)
                readable = GoogleAdapter::isFetchableUrl(b.url);
            else if (toResponses)
                readable |= b.url.startsWith(QLatin1String("file-")) || b.url.startsWith(QLatin1String("data:"));
            else if (toChat)
                readable |= b.url.startsWith(QLatin1String("data:"));
            if (!readable)
                return QStringLiteral("image \"%1\": a file id %2 cannot resolve").arg(b.url.left(64), target);
        }
    // Messages takes at most 100 images and document pages in one request (400 "Too much media: 0
    // document pages + 102 images > 100"); a screenshot-taking agent's history passes that, and OpenAI
    // and Gemini take more.
    if (toAnthropic && media > kAnthropicMaxMedia)
        return QStringLiteral("messages: %1 images and files, past the %2 that %3 takes in one request")
            .arg(media)
            .arg(kAnthropicMaxMedia)
            .arg(target);
    if (toAnthropic && images > kAnthropicManyImages && longestSide > kAnthropicManyImagesSide)
        return QStringLiteral("messages: %1 images, one of them %2 pixels a side, past the %3 pixels a side "
                              "%4 takes in a request of more than %5 images")
            .arg(images)
            .arg(longestSide)
            .arg(kAnthropicManyImagesSide)
            .arg(target)
            .arg(kAnthropicManyImages);
    // Messages and Gemini refuse a conversation with nothing in it (empty text is left out on the
    // way there), with a 400 that no failover gets past.
    if (toAnthropic || toGoogle) {
        const auto holdsSomething = [](const model::Message &m) {
            return m.role == model::Role::ToolResult ||
                   std::any_of(m.content.begin(), m.content.end(), [](const model::ContentBlock &b) {
                       return b.type != model::BlockType::Text || !b.text.isEmpty();
                   });
        };
        const auto &messages = request.context.messages;
        if (std::none_of(messages.begin(), messages.end(), holdsSomething))
            return QStringLiteral("messages: the conversation holds no content, which %1 refuses").arg(target);
        // Messages refuses text of whitespace alone, and Gemini empty text: either is left out on the
        // way there. A last user turn of nothing else would leave the conversation ending with the
        // assistant, a prefill the API continues where the client asked for an answer: Messages
        // refuses that unless tool results precede the turn; Gemini takes it and continues the
        // model's words, so a turn with nothing after the model's is no answer it can give.
        // (Gemini takes whitespace, which goes as it is.)
        const auto leftOut = [toAnthropic](const model::Message &m) {
            return m.role == model::Role::User &&
                   std::all_of(m.content.begin(), m.content.end(), [toAnthropic](const model::ContentBlock &b) {
                       return b.type == model::BlockType::Text &&
                              (toAnthropic ? AnthropicAdapter::isBlank(b.text) : b.text.isEmpty());
                   });
        };
        if (!messages.isEmpty() && leftOut(messages.last())) {
            if (toAnthropic &&
                (messages.size() < 2 || messages.at(messages.size() - 2).role != model::Role::ToolResult))
                return QStringLiteral("messages: the last user turn is whitespace alone, which %1 refuses").arg(target);
            const auto kept = std::find_if_not(messages.rbegin(), messages.rend(), leftOut);
            if (toGoogle && kept != messages.rend() && kept->role == model::Role::Assistant)
                return QStringLiteral("messages: the last user turn is empty, which %1 goes without: the "
                                      "conversation would end with the model's turn, which it continues as a "
                                      "prefill")
                    .arg(target);
        }
    }
    return std::nullopt;
}

qsizetype UpstreamAdapter::stopSequencesSent(const model::ChatRequest &request, const Target &) const {
    return request.options.stop.size();
}

NativeBody UpstreamAdapter::nativeBodyFor(const model::ChatRequest &request) const {
    return !request.stream && wire::apiName(request.sourceApi) == api() ? NativeBody::Keep : NativeBody::Skip;
}

const UpstreamAdapter *adapterFor(const QString &api) {
    static const AnthropicAdapter anthropic;
    static const OpenAICompletionsAdapter openAICompletions;
    static const OpenAIResponsesAdapter openAIResponses;
    static const GoogleAdapter google;
    // Adding an API: a static instance above and one line here.
    static const UpstreamAdapter *const adapters[] = {&anthropic, &openAICompletions, &openAIResponses, &google};
    for (const UpstreamAdapter *a : adapters)
        if (a->api() == api)
            return a;
    return nullptr;
}

} // namespace sw::upstream
