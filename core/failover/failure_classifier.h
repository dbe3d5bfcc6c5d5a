#pragma once
// Which failures fail over: the table of docs/failover.md, applied in order, to a
// failure that is not an abort.

#include "core/failover/upstream_failure.h"
#include "core/upstream/http_types.h"

#include <QStringList>

#include <functional>

namespace sw::failover {

// parseRateLimitReason: a substring reading of an error text.
enum class RateLimitReason { Unknown, RateLimitExceeded, ConcurrentLimit, ModelCapacityExhausted, ServerError };

struct FailureInput {
    // The transport's typed cause when the connection failed (never our own abort): read
    // instead of any text, so a DNS, TLS or parse failure fails over whatever Qt calls it.
    std::optional<upstream::TransportError> transportError;
    std::optional<int> status;     // HTTP status when the upstream answered with one
    QString message;               // errorMessage
    QString classificationMessage; // errorClassificationMessage; preferred when set
    bool usageLimit = false;       // the adapter already knows it is a usage limit
    // When the upstream says to come back, three places, in this order (statedDelayMs, and the
    // classifier's text hint after them):
    // - retryAfterMs: the error answer's headers (retryAfterFromHeaders), or the gateway's own
    //   Retry-After for a limit of its own; never set for an in-band error;
    // - statedRetryAfterMs: the error body's structured delay (Google's RetryInfo), over HTTP or in
    //   band, kept apart from the words so its digits never read as a status.
    std::optional<qint64> retryAfterMs;
    std::optional<qint64> statedRetryAfterMs;
    // The headers' delay, else the body's stated one: what a credential is parked for and what a
    // classified failure carries when the text says nothing.
    std::optional<qint64> statedDelayMs() const { return retryAfterMs ? retryAfterMs : statedRetryAfterMs; }
    // A 401 or 403 that names the model the try asked for ("Project … does not have access to model
    // …", LiteLLM's "key not allowed to access model … Tried to access gpt-5"): a verdict on that model
    // for this key, not on the key (FailureClassifier::namesTheModel).
    bool modelOutOfReach = false;
    // The error answer's rate-limit headers show a token budget at its full limit and none spent
    // (FailureClassifier::quotaUntouched): a 429 then refuses this request's size, not a rate.
    bool quotaUntouched = false;
    // The error's structure names a quota of one model (Google's QuotaFailure, wire::GoogleLimit):
    // a 429 then limits the model on this key, not the key.
    bool quotaOfOneModel = false;
};

class FailureClassifier {
public:
    // Retry-After and reset hints beyond this are a peer's nonsense, not a plan: clamped
    // so a non-finite or huge value can never overflow a qint64 (a week covers weekly quotas).
    static constexpr qint64 kMaxRetryAfterMs = 7LL * 24 * 3600 * 1000;

    // nullopt means stop: the failure goes to the client, no failover.
    static std::optional<UpstreamFailure> classify(const FailureInput &input);

    // The strings of the request as the upstream read them (member names and values, the URL's path
    // segments), made only when a match needs them.
    using RequestStrings = std::function<const QStringList &()>;
    // `text` with every match of a pattern that decides more than this request (a shared key's fate
    // or park time, what a base URL is taught: credentials::credentialSignalPatterns, the ask for
    // reasoning back) masked as "…" where it is a quote of the request: a request string holds the
    // matched words and `text` holds that string from its start through them. A 400 or 404 quotes
    // the field names, values and model id it refused, so words one tenant wrote would otherwise
    // take a key out of service for every tenant; a prompt that only mentions the words ("my credit
    // balance is low") is no quote, and the provider's own message still counts.
    // Only the text's first 4096 characters are judged, and returned: a provider's refusal says what
    // decides in a sentence or two, and the check's cost is about the request's size and the text's,
    // not their product (probe AB2 F3).
    static QString withoutEchoes(const QString &text, const RequestStrings &strings);
    // How many characters of errors and requests withoutEchoes has examined on this thread so far:
    // what judging an error costs, as a test counts it.
    static qint64 echoCheckSteps();

    static RateLimitReason parseRateLimitReason(const QString &text);
    // isProviderRetryableError: numbers match only as whole words, so "205000" is not a 500.
    static bool isRetryable(const QString &text);
    static bool isUsageLimit(std::optional<int> status, const QString &text);
    // A 402 that refuses this request's size, not the account: OpenRouter's "This request requires
    // more credits, or fewer max_tokens. You requested up to N tokens, but can only afford M" and
    // "Prompt tokens limit exceeded: N > M". A smaller request on the same key is served: nothing is
    // set aside for the other tenants (probe G3 1). The output form names the cap that fits.
    static bool refusesTheRequestsSize(std::optional<int> status, const QString &text);
    // The least output an affordable cap may leave (outputMaximum of a 402): below it, the next
    // candidate answers instead.
    static constexpr int kLeastAffordableOutput = 1024;
    static bool isConcurrencyCap(const QString &text);
    // A 400 that refuses a signature in the history: Anthropic's "Invalid `signature` in
    // `thinking` block", OpenAI's invalid_encrypted_content, Gemini's "Corrupted thought
    // signature". Another provider of the same API made it (a turn answered after a failover);
    // the history can go without it.
    static bool refusesReplayedReasoning(const FailureInput &input);
    // A 400 that asks for the reasoning of an earlier tool-call turn back: DeepSeek's thinking
    // mode ("Missing `reasoning_content` field in the assistant message at message index 2",
    // "The `reasoning_content` in the thinking mode must be passed back to the API").
    static bool asksForReasoningBack(const FailureInput &input);
    // A 400 that refuses the request's reasoning summary: OpenAI's "Your organization must be verified
    // to generate reasoning summaries" (param reasoning.summary), or a model that takes none. The
    // answer is the same kind without it; the summary only shows the reasoning.
    static bool refusesReasoningSummary(const FailureInput &input);
    // A 400 that refuses to stream this model to this account: OpenAI's "Your organization must be
    // verified to stream this model" (o3, gpt-5 for an organisation not verified; param stream).
    // Every upstream request streams, so the model cannot serve this account here.
    static bool refusesToStream(const FailureInput &input);
    // A 400 that says this provider does not serve the model (retired, not loaded, not found): the
    // 404's meaning, sent as a 400 by Groq, LM Studio and some OpenAI-compatible servers.
    static bool refusesTheModel(const FailureInput &input);
    // A 400 that says this provider does not hold the conversation state the request names
    // (previous_response_id, a conversation): another provider of the same API made it.
    static bool lacksTheConversation(const FailureInput &input);
    // A 400 (422, or a 500 of a template) that refuses a tool call id for not being nine characters of
    // [a-zA-Z0-9]: Mistral's validator and chat templates, behind a server not told by its host or
    // model id (a loopback vLLM). The same request with every id so goes through.
    static bool refusesToolCallIds(const FailureInput &input);
    // A 400 (or 422) that refuses the request's output cap and names the most the model takes:
    // that number. Anthropic's "max_tokens: 64000 > 8192, which is the maximum allowed", OpenAI's
    // "supports at most 16384 completion tokens", vLLM's "(100000 > 32768 - 50)" (the context left),
    // and the forms of Groq, DeepSeek and Vertex; OpenRouter's 402 "can only afford 5000" (what the
    // credit left pays for). Nothing when no maximum can be read.
    static std::optional<int> outputMaximum(const FailureInput &input);
    // 508 Loop Detected: a gateway on the way (this one, or another Switchman: server::HopMarker)
    // saw the request come back. As the status, or in band (no status, or a 5xx the decoder read
    // from the error's type) in the words Switchman's own 508s carry.
    static bool reportsALoop(const FailureInput &input);
    // The answer refuses the key itself (401, a 403 that is not a concurrency cap), as opposed to
    // a usage limit or spend cap on it, which a credit top-up or time ends.
    static bool refusesTheKey(const FailureInput &input);
    // A 403 (or Google's 400) that refuses what this request carries, not the key
    // (credentials::refusesTheContent: a content check's "Content violates usage guidelines", "Your input
    // was flagged", Gemini's "permission to access the File X"): the requester's refusal, as a 400
    // content_filter is. Not a page.
    static bool refusesTheContent(const FailureInput &input);
    // A 429 that refuses one request larger than a per-minute token limit, the quota untouched: OpenAI's
    // "Request too large for gpt-4o ... The input or output tokens must be reduced", or a limit's words
    // ("Please reduce the prompt length") with quotaUntouched. Smaller requests are served: no mark;
    // another candidate (a larger limit) may take it; alone, the client's request error (413).
    static bool tooLargeForTheRateLimit(const FailureInput &input);
    // Rate-limit headers of an error answer that show a token budget at its limit and no budget at 0.
    static bool quotaUntouched(const upstream::HeaderList &headers);
    // A page (HTML) rather than an API's error: a WAF's or CDN's words, no verdict on the key.
    static bool isPage(const QString &text);
    // A 403 or 401 whose text speaks of access and names `modelId` as a word of its own (OpenAI's
    // "Project `proj_…` does not have access to model `gpt-5`", LiteLLM's 401 key_model_access_denied
    // "key not allowed to access model. … Tried to access gpt-5"): that model is out of this key's
    // reach, the key itself is fine. Not a 401 that also says the key is invalid, revoked or expired.
    static bool namesTheModel(int status, const QString &text, const QString &modelId);

    // The wait an error answer's headers ask for. The provider's own word first: retry-after-ms
    // (OpenAI's, to the millisecond), else retry-after (seconds or an HTTP date). Without either, and
    // only on a 429 (`status`), the rate-limit headers: x-ratelimit-reset-ms, x-ratelimit-reset
    // (epoch ms / epoch s / delta) and OpenAI's per-dimension resets, the spent dimension's (or the
    // soonest, when no remaining count is sent). nowEpochMs is injectable for tests.
    static std::optional<qint64> retryAfterFromHeaders(const upstream::HeaderList &headers, qint64 nowEpochMs,
                                                       int status);
    // extractProviderRetryHint: "try again in 20s", "retry after 1.5 seconds", "in 300ms".
    static std::optional<qint64> retryHintFromText(const QString &text);
};

} // namespace sw::failover
