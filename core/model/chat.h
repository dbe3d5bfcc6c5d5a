#pragma once
// The canonical chat model every inbound format decodes into and every upstream
// stream decodes into. Shaped after pi-ai's Context / AssistantMessageEvent.

#include <QByteArray>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <optional>

namespace sw::model {

// Document: a file the user attached (a PDF, or plain text), in a user turn or a tool
// result: `mimeType` + base64 `data`, or `url` (http(s) or a provider file id), or for
// plain text `text` itself; `title` is its file name when the client gave one.
enum class BlockType { Text, Thinking, Image, ToolCall, Document };

struct ContentBlock {
    BlockType type = BlockType::Text;
    QString text;          // Text and Thinking; Document: a plain-text document's text
    QString signature;     // Thinking (ToolCall: Google thoughtSignature): opaque, valid only for its API
    QString signatureApi;  // the upstream API that made `signature` ("" = the message's api)
    bool redacted = false; // Thinking: Anthropic redacted_thinking (data in `signature`)
    QString mimeType;      // Image, Document
    QByteArray data;       // Image, Document: base64 payload (not decoded)
    QString url;           // Image, Document given by URL (http(s) or file id) instead of data
    QString title;         // Document: its file name or title, when the client gave one
    QString toolCallId;    // ToolCall
    QString toolName;      // ToolCall
    QJsonObject arguments; // ToolCall: parsed arguments
    QString argumentsJson; // ToolCall: raw argument text as streamed (may be partial while streaming)
    QString itemId;        // the upstream's own id for this block (Responses output item), when it gave one
    QString detail;        // Image: OpenAI's detail (low, high, auto) when the client gave one
    bool custom = false;   // ToolCall: a call of a free-form (Codex `custom`) tool; its text is arguments["input"]
    // Text: the model's refusal in OpenAI's own field (Chat `refusal`, a Responses `refusal`
    // part), which OpenAI clients read apart from the answer (the SDKs' structured-output
    // helpers return it rather than parse it); other formats have no such field and read text.
    bool refusal = false;

    // A plain-text document: its text is here, neither data nor a URL.
    bool isTextDocument() const { return type == BlockType::Document && data.isEmpty() && url.isEmpty(); }
    // What a user or a tool result attaches beside its words: an image, or a document that is
    // a file (a plain-text one reads as words).
    bool isAttachment() const { return type == BlockType::Image || (type == BlockType::Document && !isTextDocument()); }

    static ContentBlock makeText(const QString &t) {
        ContentBlock b;
        b.text = t;
        return b;
    }
};

enum class Role { User, Assistant, ToolResult };

struct Message {
    Role role = Role::User;
    QList<ContentBlock> content; // User and ToolResult: Text/Image/Document; Assistant: the others
    QString toolCallId;          // ToolResult
    QString toolName;            // ToolResult
    bool isError = false;        // ToolResult
    QString api;                 // Assistant: the upstream API that produced it ("" = unknown)
};

struct Tool {
    QString name;
    QString description;
    QJsonObject parameters;     // JSON schema
    std::optional<bool> strict; // the client's strict-schema wish, when it said
    // A free-form tool (OpenAI `custom`, Codex's apply_patch): it takes one text input,
    // optionally constrained by `format` (a grammar). APIs without such tools get a
    // function with one string parameter "input" (customToolParameters) and the grammar
    // in its description; calls come back as custom calls (translation_rules.md).
    bool custom = false;
    QJsonObject format; // custom: {type: text} or {type: grammar, syntax, definition}
};

// A plain-text document as the words an API without document blocks reads: its title on a
// line of its own, then its text.
QString textDocumentAsText(const ContentBlock &document);

// The one-string schema a custom tool becomes on APIs that only know function tools.
QJsonObject customToolParameters();
// Its description there: the client's words plus the grammar the input must follow.
QString customToolDescription(const Tool &tool);

// A provider-run tool the client asked for by kind (Responses `web_search`, Anthropic
// `web_search_…`): mapped to the target's own equivalent or the candidate is incompatible.
struct BuiltinTool {
    QString kind;       // "web_search", or the client's own type name for ones with no mapping
    QJsonObject config; // the client's tool object as sent
};

struct Context {
    QString systemPrompt;
    QList<Message> messages;
    QList<Tool> tools;
    QList<BuiltinTool> builtinTools;
};

// Structured output: the answer must be JSON (json_object) or follow a schema (json_schema).
struct OutputFormat {
    QString type; // "" (free text), "json_object", "json_schema"
    QString name; // json_schema: the schema's name (Chat / Responses require one)
    QString description;
    QJsonObject schema;
    std::optional<bool> strict;
    bool isSet() const { return !type.isEmpty(); }
};

struct Options {
    std::optional<int> maxTokens;
    std::optional<double> temperature;
    std::optional<double> topP;
    std::optional<int> topK;                // Anthropic / Gemini
    std::optional<double> presencePenalty;  // Chat / Gemini
    std::optional<double> frequencyPenalty; // Chat / Gemini
    QStringList stop;
    QString reasoning;                 // "", none (asked off), minimal, low, medium, high, xhigh, max
    std::optional<int> thinkingBudget; // tokens, when the client gave one
    // The client turned thinking off by name (Anthropic `thinking: {type: "disabled"}`) in an API
    // whose models think only when asked: a model that can stop thinking is told to (Gemini 2.5
    // Flash), and no other gets a reasoning setting (an OpenAI model that takes no "none" would
    // refuse it).
    bool thinkingOff = false;
    QString toolChoice;                    // "", auto, none, required, or a tool name
    std::optional<bool> parallelToolCalls; // false: at most one tool call per turn
    OutputFormat outputFormat;
};

// The most tokens one count of one attempt can sanely be: 2^32 (4.3 billion), over 400 times the
// largest context window offered today. A count an upstream reports beyond it (an int64-max
// input_tokens was seen) is a peer's nonsense, not a bill: it counts as unknown (0), as a
// negative, fractional or unrepresentable count (1e30, NaN) already does. Unchecked, one such
// row cost $1.66e14, overflowed every SUM over the ledger and locked its tenant's budget.
inline constexpr qint64 kMaxReportedTokens = qint64(1) << 32;
constexpr qint64 saneTokens(qint64 n) {
    return n >= 0 && n <= kMaxReportedTokens ? n : 0;
}

struct Usage {
    qint64 input = 0;
    qint64 output = 0;
    qint64 cacheRead = 0;
    qint64 cacheWrite = 0;
    // Of output: the tokens the model spent reasoning (Chat's and Responses' reasoning_tokens,
    // Gemini's thoughtsTokenCount), told to a client whose format has the field; never added again.
    qint64 reasoning = 0;
    // Of the sane counts: never overflows, whatever the upstream said.
    qint64 totalTokens() const {
        return saneTokens(input) + saneTokens(output) + saneTokens(cacheRead) + saneTokens(cacheWrite);
    }
    bool isZero() const { return input == 0 && output == 0 && cacheRead == 0 && cacheWrite == 0; }
    // Every count through saneTokens(): what the gateway records and bills.
    Usage sane() const {
        return {saneTokens(input), saneTokens(output), saneTokens(cacheRead), saneTokens(cacheWrite),
                saneTokens(reasoning)};
    }
};

// Refusal: the model (or the provider's safety filter) declined to answer. It is a
// completed answer, never an outage: no mark, no failover (Anthropic `refusal`,
// OpenAI `content_filter`, Google SAFETY and its kin).
enum class StopReason { Stop, Length, ToolUse, Error, Aborted, Refusal };

struct AssistantMessage {
    QList<ContentBlock> content;
    Usage usage;
    StopReason stopReason = StopReason::Stop;
    QString errorMessage;           // Error; Refusal: the provider's reason in words (StreamEvent::errorMessage)
    std::optional<int> errorStatus; // HTTP-like status for an in-band error, when known
    QString api;
    QString provider;
    QString model;
    QString responseId;
    // The client's stop sequence the answer ended at: the one Anthropic reports, or the one the
    // gateway cut the answer at for an upstream without stop sequences (StopSequenceDecoder).
    // A Messages client is told "stop_sequence" and which one.
    QString stopSequence;
    // The upstream API's own non-streaming answer, assembled from its stream by the
    // decoder (every field that API defines), for a client of that same API.
    QJsonObject native;
    // A Chat Completions upstream's usage object as compact JSON text, written as it is into a
    // same-API answer (OpenAICompletionsStreamDecoder::keepNativeUsage); empty: none kept so.
    QByteArray nativeUsageJson;
};

enum class EventType {
    Start,
    TextStart,
    TextDelta,
    TextEnd,
    ThinkingStart,
    ThinkingDelta,
    ThinkingEnd,
    ToolCallStart,
    ToolCallDelta,
    ToolCallEnd,
    Image,
    Done,
    Error,
};

// One event of an assistant message stream. `contentIndex` names the block in
// the message being built. *_End and Image carry the complete block.
struct StreamEvent {
    EventType type = EventType::Start;
    int contentIndex = -1;
    QString delta;                           // *_Delta
    ContentBlock block;                      // *_Start (ToolCall: id + name), *_End, Image
    StopReason reason = StopReason::Stop;    // Done: stop/length/toolUse/refusal; Error: error/aborted
    QString errorMessage;                    // Error; Done with Refusal: the provider's reason in words
    std::optional<int> errorStatus;          // Error
    QString errorType;                       // Error: provider's error type when it gave one (e.g. overloaded_error)
    std::optional<qint64> errorRetryAfterMs; // Error: a delay the error states in its structure (Google's RetryInfo)
    bool errorQuotaOfOneModel = false;       // Error: its structure names a quota of one model (Google's QuotaFailure)
    bool errorFinal = false;                 // Error: the upstream said not to ask it again (wire::kShouldRetryMember)
    Usage usage;                             // Start (input known up front), Done, Error: usage so far
    QString responseId;         // Start: the upstream's id for the answer (resp_…, msg_…, chatcmpl-…)
    QString stopSequence;       // Done: the stop sequence the answer ended at (AssistantMessage::stopSequence)
    QJsonObject native;         // Done: the upstream API's own non-streaming answer (AssistantMessage::native)
    QByteArray nativeUsageJson; // Done: AssistantMessage::nativeUsageJson

    // The commit point: start, empty block starts and toolcall_start never commit.
    bool isMeaningful() const {
        switch (type) {
        case EventType::TextDelta:
        case EventType::ThinkingDelta:
        case EventType::ToolCallDelta:
            return !delta.isEmpty();
        case EventType::Image:
            return true;
        default:
            return false;
        }
    }
};

// pi names: stop, length, toolUse, error, aborted. pi has no refusal reason: a refusal is "error",
// as pi-ai makes Anthropic's refusal, Chat's content_filter and Google's SAFETY, with an
// errorMessage that says why (PiNativeCodec::refusalMessage), so a pi agent never takes it for
// a finished turn. It is still an answer to the gateway (no mark, no failover, billed).
QString stopReasonName(StopReason r);

// A signature (or Google thoughtSignature, or Responses reasoning item) written into
// an answer for a client whose API did not make it carries its maker, so that at the
// next request the gateway replays it only to that API: "swsig1.<api>.<signature>".
// A signature without the prefix belongs to the client format's own API.
// A redacted block's payload (Anthropic's redacted_thinking data) is tagged as
// "swsig1.<api>.redacted.<data>", so it goes back as redacted, not as a signed thinking block.
// No provider's signature starts with "redacted." (base64 has no dot; a Responses item is JSON).
QString tagSignature(const QString &api, const QString &signature, bool redacted = false);
struct TaggedSignature {
    QString api;           // "" when the text had no tag
    QString signature;     // the provider's own signature (a redacted block's data)
    bool redacted = false; // tagged as a redacted block's payload
};
TaggedSignature untagSignature(const QString &text);

// Google's function-call thoughtSignature has no field in an Anthropic or Responses answer: it goes
// in a thinking block (a reasoning item) of its own, empty, just before the call, signed
// "swsig1.google-generative-ai.fc.<sig>", and comes back to its call from there. Gemini signatures
// are base64, so none starts with "fc.". nullopt when the call carries no Google signature.
std::optional<QString> functionCallCarrier(const ContentBlock &call, const QString &upstreamApi);
// The call signature an untagged carrier holds (`tagged`, the thinking block's text empty); empty
// for any other thinking block.
QString carriedCallSignature(const TaggedSignature &tagged, const QString &thinkingText);

// The API whose upstream may receive this block's signature back: the block's own
// signatureApi, else the message's api.
inline const QString &signatureOwner(const Message &m, const ContentBlock &b) {
    return b.signatureApi.isEmpty() ? m.api : b.signatureApi;
}

// The one mapping between reasoning effort names and thinking-token budgets,
// used wherever one API speaks effort and the other budget (translation_rules.md).
int thinkingBudgetForEffort(const QString &effort); // 0 for "" or an unknown name
QString effortForThinkingBudget(int budget);        // never "minimal": low, medium or high
// The effort an OpenAI model gets for the client's `effort`: the nearest word it takes (xhigh as
// high for gpt-5.1, minimal as low, none as minimal for gpt-5 and as low for o3), read from its id
// after any provider prefix; the client's word as it is for an effort word the gateway does not
// know or a model id it does not (a later generation, another server's model), whose server decides.
QString openAIEffortFor(const QString &effort, const QString &modelId);
// The reasoning effort OpenAI model `modelId` (Chat, Responses) gets for a converted request: the
// client's effort, or one for its thinking budget, as that model takes it (openAIEffortFor); a word
// above high (Anthropic's max, pi's xhigh) to a model id it does not know goes as high; "" when no
// reasoning was asked.
QString openAIEffort(const Options &options, const QString &modelId);

} // namespace sw::model
