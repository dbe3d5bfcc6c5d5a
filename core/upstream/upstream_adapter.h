#pragma once
// One adapter per upstream API: builds the HTTP request for a candidate and
// decodes that API's stream into canonical events.

#include "core/model/chat_request.h"
#include "core/upstream/http_types.h"
#include "core/upstream/sse_reader.h"
#include "core/wire/api.h"
#include "core/wire/error_body.h"
#include "core/wire/tool_call_id.h"

#include <QJsonArray>
#include <QString>

#include <memory>
#include <optional>

namespace sw::upstream {

struct Target {
    QString provider;
    QString modelId; // the upstream's model id
    QString api;     // anthropic-messages, openai-completions, openai-responses, google-generative-ai
    QString baseUrl;
    QByteArray credential;        // secret; empty means none (never logged)
    bool passthroughAuth = false; // credential came from the caller's own header
    // Whether the reasoning of earlier turns goes back signed (thinking signatures, encrypted
    // reasoning items, Gemini thought signatures). False for the one try after the upstream
    // refused such a signature (one another provider of the same API made): the history goes
    // without it, as it would to another API.
    bool replayReasoning = true;
    // True for the one try after a Chat server refused the history for want of an earlier tool-call
    // turn's reasoning_content (DeepSeek's thinking mode, OpenAICompletionsAdapter::takesReasoningBack):
    // each assistant turn with calls goes with it. A Chat server is otherwise sent no reasoning.
    bool reasoningBack = false;
    // Whether an OpenAI Responses request that reasons asks for a summary of the reasoning (the
    // converted body's `reasoning.summary`, and a client's own). False after the server refused one
    // for this key (an organisation not verified): the answer comes without, as OpenAI would give it.
    bool reasoningSummary = true;
    // True once this server refused a tool call id that is not nine characters of [a-zA-Z0-9] (a
    // Mistral chat template behind vLLM or llama.cpp, not told by its host or model id): every call's
    // and result's id goes by such an alias (OpenAICompletionsAdapter::takesOnlyNineCharToolIds).
    bool nineCharToolIds = false;
    // Ask for the answer whole, not streamed (an OpenAI model that will not stream to an organisation
    // not verified): UpstreamAttempts::launch rewrites the request; the JSON answer is read as the
    // stream it stands for (eventsOfJsonAnswer).
    bool noStream = false;
    // False when the model's config says `"reasoning": false`: a request converted from another
    // API goes without reasoning settings (effort, thinking budget), which such a model refuses
    // with a 400. A same-API client's own body goes as it sent it. Unknown counts as true.
    bool modelReasons = true;
    // The most output tokens this candidate takes: the model's configured `maxTokens`, or the
    // maximum its upstream named when it refused the request's max (the one try after that
    // refusal). A request asking for more goes with this; nothing when neither is known.
    std::optional<int> maxOutputTokens;
    // maxOutputTokens is what the upstream named when it refused the request's (or its own default):
    // it goes even when the client asked for no maximum.
    bool outputCapNamed = false;
};

// The output cap this candidate needs in place of the client's: set when the client asked for more
// than the candidate takes (Target::maxOutputTokens), or asked for none and the upstream refused
// its own default.
inline std::optional<int> loweredOutputCap(const model::ChatRequest &request, const Target &target) {
    if (!target.maxOutputTokens)
        return std::nullopt;
    if (!request.options.maxTokens)
        return target.outputCapNamed ? target.maxOutputTokens : std::nullopt;
    if (*request.options.maxTokens <= *target.maxOutputTokens)
        return std::nullopt;
    return target.maxOutputTokens;
}

// The request as a candidate of another API takes it: without the client's reasoning settings for
// a model that does not reason, and with at most the output tokens the candidate takes. `scratch`
// holds the copy when one is needed; otherwise the request itself is returned.
inline const model::ChatRequest &requestForTarget(const model::ChatRequest &request, const Target &target,
                                                  model::ChatRequest &scratch) {
    const std::optional<int> cap = loweredOutputCap(request, target);
    if (target.modelReasons && !cap)
        return request;
    scratch = request;
    if (!target.modelReasons) {
        scratch.options.reasoning.clear();
        scratch.options.thinkingBudget.reset();
        scratch.options.thinkingOff = false; // no thinking setting at all, not even "off"
    }
    if (cap)
        scratch.options.maxTokens = cap;
    return scratch;
}

// The request without the client's reasoning settings, for a model that does not reason.
inline model::ChatRequest withoutReasoning(model::ChatRequest request) {
    request.options.reasoning.clear();
    request.options.thinkingBudget.reset();
    request.options.thinkingOff = false;
    return request;
}

// The most answer text (or, for Chat logprobs, chunk bytes) a decoder keeps to rebuild a
// same-API JSON answer (StreamEvent::native); past it the canonical answer is used. A
// streaming client never needs it, so the bound also caps what a stream costs.
inline constexpr qint64 kMaxNativeChars = 8 * 1024 * 1024;

// Whether a decoder keeps what it needs to rebuild the upstream's own non-streaming answer
// (StreamEvent::native). Only a non-streaming client of the same API gets that answer;
// for any other the decoder keeps nothing of it, so a stream costs only what it streams.
enum class NativeBody { Keep, Skip };

// The event line a same-API client gets for a frame the decoder read as `type`: none when the
// event line says `type` and is a plain name (the frame goes as it came), else `type` when it is
// a plain name (letters, digits, '_', '.', '-'; at most 64), else an empty line.
std::optional<QByteArray> relayEventName(std::string_view type, const QByteArray &eventLine);

class StreamDecoder {
public:
    virtual ~StreamDecoder() = default;
    // One SSE event of the upstream stream in, zero or more canonical events out.
    virtual QList<model::StreamEvent> feed(const SseEvent &event) = 0;
    // End of body. Emits Done if the stream finished cleanly and Done was not yet
    // emitted, or an Error ("stream ended before completion") otherwise.
    virtual QList<model::StreamEvent> finish() = 0;
    // True when the event last fed carried nothing but the usage the gateway asked the upstream
    // for (OpenAI Chat's usage-only chunk: a usage object, no choices). A same-API stream holds
    // that frame back from a client that did not ask for usage; read from the decoder's own
    // parse, so the frame is not read twice.
    virtual bool lastWasUsageOnly() const { return false; }
    // True when the event last fed must not reach a same-API client as it is: its data was refused
    // by the decoder's JSON parser (an event cut off by the end of the body, lines run together by
    // a bare CR; the gateway read nothing from it, and an SDK would throw on it mid-answer), or it
    // named the model, the answer or a tool call with what may not be echoed (the decoder failed
    // the stream).
    virtual bool lastWasUnreadable() const { return false; }
    // Non-empty when a same-API client gets the event last fed with this data instead of its own:
    // what it names is bounded as the client's encoder would bound it (a Chat call id over 40,
    // wire::clientToolCallId), or is the id the decoder gave a call (made up for one the server
    // named by none, made unique for a repeat of an earlier call's), so the stream and the JSON
    // answer tell the client the same id.
    virtual QByteArray lastRelayData() const { return {}; }
    // Set when a same-API client must get the event last fed under another event line than the
    // upstream's: the type the decoder read it as (the data's own "type", which it acts on), or
    // none (empty) when that type is no plain name. An event line the data contradicts (`event:
    // error` over a text delta made the Anthropic SDK throw on an answer billed as a success), or
    // one with control bytes, never reaches a client as sent.
    virtual std::optional<QByteArray> lastEventName() const { return std::nullopt; }
    // True when the event last fed ended the stream with an Error although the frame is no error
    // in the API's own shape (a Chat chunk whose finish_reason is "error"): a same-API client that
    // gets the frame as it is still needs the gateway's error after it, as after a reset.
    virtual bool lastFailedOnAPlainFrame() const { return false; }
    // True when the event last fed added to what the decoder keeps without an event for it yet (an
    // Anthropic thinking block's signature, which the block's End carries): no client is sent it, so
    // no backpressure bounds it, and the gateway counts it as held (UpstreamAttempts::feedSse).
    virtual bool lastWasKept() const { return false; }
    // Before the first feed: false when no one needs a text block's End to carry its whole text
    // (a streaming client of a format that needs no block whole): CanonicalStreamBuilder::setKeepsText.
    virtual void setKeepsText(bool keeps) { Q_UNUSED(keeps); }
    // The usage the upstream has reported so far (CanonicalStreamBuilder::usage()), also what no
    // event carried yet: Gemini's cumulative usageMetadata on every chunk, Anthropic's
    // message_delta, a Chat usage chunk before [DONE]. A try that ends without its terminator (a
    // reset, the gateway's own cut) bills this, not an estimate (AttemptRunner::reportedUsage).
    virtual model::Usage usage() const { return {}; }
    // True once the stream said its answer is complete though no terminator followed yet (Gemini's
    // finish reason, after which only the end of the body comes; a Chat finish_reason before its
    // usage chunk and [DONE]): a body that breaks then ends as finish() ends it, not as a failure.
    virtual bool endSeen() const { return false; }
};

// A decoder around another (stop sequences, tool-name aliases): it changes the events, and passes
// what it learns of each fed event, and the text setting, on to and from the one it wraps.
class WrappingDecoder : public StreamDecoder {
public:
    explicit WrappingDecoder(std::unique_ptr<StreamDecoder> inner) : m_inner(std::move(inner)) {}
    bool lastWasUsageOnly() const override { return m_inner->lastWasUsageOnly(); }
    bool lastWasUnreadable() const override { return m_inner->lastWasUnreadable(); }
    QByteArray lastRelayData() const override { return m_inner->lastRelayData(); }
    std::optional<QByteArray> lastEventName() const override { return m_inner->lastEventName(); }
    bool lastFailedOnAPlainFrame() const override { return m_inner->lastFailedOnAPlainFrame(); }
    bool lastWasKept() const override { return m_inner->lastWasKept(); }
    void setKeepsText(bool keeps) override { m_inner->setKeepsText(keeps); }
    model::Usage usage() const override { return m_inner->usage(); }
    bool endSeen() const override { return m_inner->endSeen(); }

protected:
    std::unique_ptr<StreamDecoder> m_inner;
};

// An API's name as a QString, made once: a request asks its adapter's api() several times
// (choosing the adapter, the same-API checks).
template <wire::Api A> const QString &apiNameString() {
    static const QString name = wire::apiName(A);
    return name;
}

// An error body an upstream answered with, as its API writes it.
using UpstreamErrorInfo = wire::ErrorBody;

class UpstreamAdapter {
public:
    virtual ~UpstreamAdapter() = default;
    virtual const QString &api() const = 0;
    // Always a streaming request. When the client spoke this same API (request.sourceApi),
    // its raw body is forwarded with only `model` replaced (and `stream` forced on),
    // and `forwardHeaders` (anthropic-beta, anthropic-version, OpenAI-Beta) are kept.
    virtual HttpRequest buildRequest(const model::ChatRequest &request, const Target &target,
                                     const HeaderList &forwardHeaders) const = 0;
    virtual std::unique_ptr<StreamDecoder> makeDecoder(const Target &target,
                                                       NativeBody native = NativeBody::Keep) const = 0;
    // Keep for a non-streaming client that spoke this API, Skip for any other.
    NativeBody nativeBodyFor(const model::ChatRequest &request) const;
    virtual UpstreamErrorInfo parseError(int status, const QByteArray &body) const = 0;
    // How many of the client's stop sequences this API's body carries for `request`: all of them
    // by default; fewer where the API has a limit (the first ones), refuses some (Messages:
    // whitespace alone) or, for some models, has no such field. The gateway ends the answer at every stop sequence
    // itself (StopSequenceDecoder) when this is fewer than the client sent, so none is dropped.
    virtual qsizetype stopSequencesSent(const model::ChatRequest &request, const Target &target) const;
    // Why this API cannot serve the request as the client asked, naming the field, or
    // nullopt when it can. A field that changes what the model does and has no
    // mapping to this API makes the candidate incompatible, never silently dropped
    // (formats/translation_rules.md): failover skips it for one that can. `modelId` is the
    // upstream's id for the candidate's model, for what only some of an API's models refuse.
    std::optional<QString> incompatibility(const model::ChatRequest &request, const QString &modelId = {}) const;
    // Members of the client's body that buildRequest leaves out for this candidate's model or server
    // although the API has them, because that model or server refuses them with a 400 no failover
    // gets past (Gemini 2.5's penalties, an always-reasoning OpenAI model's sampling, what Groq's
    // Chat API does not take), passthrough included. Named in the answer with what a conversion
    // drops (wire::droppedMembers), so none goes in silence. Empty by default.
    virtual QStringList droppedFor(const model::ChatRequest &request, const Target &target) const {
        Q_UNUSED(request);
        Q_UNUSED(target);
        return {};
    }
};

// A model id as one percent-encoded path segment: "/", "?", "#" and "%" inside an id
// can never leave the API's model path (an id is configuration or client input). A
// caller appends its API suffix (":streamGenerateContent"), so ".." is never a segment.
QString modelPathSegment(const QString &modelId);

// Tool call ids: core/wire/tool_call_id.h.
using wire::boundedToolCallId;
using wire::callIdOf;

// A tool result's content as the APIs whose tool outputs carry text take it: its words (text
// blocks, and plain-text documents as text) joined by newlines, and its attachments (images,
// file documents) apart.
struct ToolResultContent {
    QString text;
    QList<model::ContentBlock> attachments;
};
ToolResultContent splitToolResult(const model::Message &result);

// The file name an API that asks for one is told for a document: the client's title, else
// "document" with the suffix of its type ("document.pdf").
QString documentFileName(const model::ContentBlock &document);

// For the OpenAI APIs, whose tool outputs carry text only: the attachments of a run of tool
// results, taken out of `pending`, as the content of the one user turn that follows the run (a
// note, then the images and files). Empty when there are none.
QList<model::ContentBlock> takeToolResultAttachments(QList<model::ContentBlock> &pending);

// A converted request's history with every tool result directly after the assistant turn whose
// call it answers, in the order of that turn's calls, and whatever stood between the call and its
// result (the user's words typed while the tool ran, which the Responses API takes anywhere)
// after the results. Messages, Chat and Gemini refuse a result that does not follow its call's
// turn (Messages: "tool_use ids were found without tool_result blocks immediately after"), and
// Gemini pairs results without ids with calls by position. A result is paired by its call id with
// the first call of that id before it (never across a later call of the same id); one with no
// such call stays where it is. Nothing is dropped. A result moved takes its call's tool name.
QList<model::Message> resultsAfterTheirCalls(const QList<model::Message> &messages);

// Turns ({"role": role, partsKey: parts}) appended one by one, where a turn of the same role as the
// last one is merged into it (its parts after that turn's own): Messages and Gemini take turns of
// one role side by side as one (Gemini refuses them unmerged). The parts of a run of one role are
// gathered in one array of their own and the turn is written when the role changes or at take(),
// so a history of 40 000 user messages in a row costs time linear in its parts. (Merging into the
// last turn of a QJsonArray copied the turn's whole parts array on each merge: seconds to minutes
// of the engine thread, every tenant waiting.)
class MergedTurns {
public:
    explicit MergedTurns(QLatin1String partsKey) : m_partsKey(partsKey) {}
    void append(const QString &role, const QJsonArray &parts);
    // The role of the last turn appended, empty while there is none.
    const QString &lastRole() const { return m_role; }
    // The turns so far; the list is empty afterwards.
    QJsonArray take();

private:
    void writeRun();
    QLatin1String m_partsKey;
    QJsonArray m_turns;
    QString m_role;     // of the run being gathered
    QJsonArray m_parts; // the run's parts, not yet in m_turns
    bool m_inRun = false;
};

// Registry; nullptr for an unknown api name.
const UpstreamAdapter *adapterFor(const QString &api);

} // namespace sw::upstream
