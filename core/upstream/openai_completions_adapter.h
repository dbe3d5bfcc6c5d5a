#pragma once
// Upstream API "openai-completions": POST {baseUrl}/chat/completions (baseUrl includes /v1),
// for OpenAI and every OpenAI-compatible server.

#include "core/upstream/upstream_adapter.h"

namespace sw::upstream {

class OpenAICompletionsAdapter final : public UpstreamAdapter {
public:
    static constexpr wire::Api kApi = wire::Api::OpenAICompletions;
    // OpenAI refuses a longer tool_calls[].id or tool_call_id ("string too long ... maximum length
    // 40"); pi's "call_id|item_id" ids from a Responses turn are twice that.
    static constexpr qsizetype kMaxToolIdLength = wire::kChatMaxToolIdLength;

    const QString &api() const override { return apiNameString<kApi>(); }
    HttpRequest buildRequest(const model::ChatRequest &request, const Target &target,
                             const HeaderList &forwardHeaders) const override;
    std::unique_ptr<StreamDecoder> makeDecoder(const Target &target,
                                               NativeBody native = NativeBody::Keep) const override;
    UpstreamErrorInfo parseError(int status, const QByteArray &body) const override;
    // OpenAI takes at most 4, and its reasoning models none ("stop is not supported with this model").
    qsizetype stopSequencesSent(const model::ChatRequest &request, const Target &target) const override;
    static constexpr qsizetype kMaxStopSequences = 4;

    // The chat body for a request that came in another format (see formats/translation_rules.md).
    // useMaxCompletionTokens: api.openai.com wants max_completion_tokens; most compatible servers max_tokens
    // (isOpenAI).
    // reasoningBack: each assistant turn with tool calls carries reasoning_content
    // (takesReasoningBack).
    // reasonsAlways: the model takes only the default sampling and no stop, asked to reason or not
    // (alwaysReasons).
    // googleCalls: Google's own Chat endpoint, whose calls carry Gemini's signature as
    // `extra_content.google.thought_signature` (takesCallSignatures).
    static QJsonObject buildBody(const model::ChatRequest &request, const QString &modelId, bool useMaxCompletionTokens,
                                 bool reasoningBack = false, bool reasonsAlways = false, bool googleCalls = false);
    static bool isOpenAI(const QString &baseUrl);
    // Whether this Chat server is OpenAI's own (api.openai.com, Azure OpenAI's hosts), which alone
    // take OpenAI's `developer` role and `store`: other servers refuse them with a 400 (DeepSeek:
    // "unknown variant `developer`"; Cerebras: "property 'body.store' is unsupported"), a request
    // error that ends a failover chain. A same-API body goes there with `developer` as `system` (what
    // OpenAI reads alike) and without `store` (named in the answer but `false`, the default).
    static bool takesOpenAIOnlyMembers(const Target &target);
    // A Google host (generativelanguage.googleapis.com, Vertex AI's *-aiplatform.googleapis.com).
    static bool isGoogle(const QString &baseUrl);
    // Whether a Chat server takes Gemini's call signatures as the calls' `extra_content` (Google's
    // convention, which a Chat client sends back): a Google host, or a Gemini model behind another
    // (a proxy, a custom domain), except OpenRouter, which carries them in reasoning_details. Every
    // other server gets calls without the member: a strict one refuses it with a 400.
    static bool takesCallSignatures(const Target &target);
    // Groq's API, which refuses `logprobs`, `top_logprobs`, `logit_bias` and a message's `name` with a
    // 400 (console.groq.com/docs/openai, "Currently Unsupported OpenAI Features").
    static bool isGroq(const QString &baseUrl);
    static constexpr const char *kGroqRefusedMembers[] = {"logprobs", "top_logprobs", "logit_bias"};
    // An OpenAI model that always reasons and has no `none` effort to stop it, told by its id (a
    // provider's prefix such as "openai/" allowed): the o-series (o1, o3, o4-mini, ...), gpt-5,
    // gpt-5-mini, gpt-5-nano, gpt-5-pro, and the codex and pro models of gpt-5.1 and later. Such a
    // model takes only the default sampling whether the request asks it to reason or not ("Unsupported
    // parameter: 'temperature' is not supported with this model."). gpt-5.1 and later reason only
    // when asked (their default effort is none) and take sampling then; gpt-5-chat does not reason.
    static bool alwaysReasons(const QString &modelId);
    // The same for a candidate, unless its model is configured `"reasoning": false`
    // (Target::modelReasons): an operator's way to keep sampling for a server that takes it.
    static bool alwaysReasons(const Target &target) { return target.modelReasons && alwaysReasons(target.modelId); }
    // The sampling members of the client's body that such a model goes without (temperature, top_p;
    // pi's options.temperature), as the client named them.
    static QStringList samplingMembers(const model::ChatRequest &request);
    // Chat takes at most 128 function tools ("A max of 128 functions are supported").
    static constexpr qsizetype kMaxTools = 128;
    // OpenAI's Chat API refuses a function's description over 1024 characters with a 400
    // (`string_above_max_length`, param `tools[0].function.description`) that no failover gets past;
    // Claude Code's Bash and Task tools, and many MCP servers', describe themselves in thousands.
    static constexpr qsizetype kMaxToolDescription = 1024;
    // Whether this candidate has that limit: api.openai.com, Azure OpenAI's hosts, and an OpenAI model
    // (gpt-…, o1, o3, …; not the open-weights gpt-oss) behind any other server, as proxies in front of
    // OpenAI or Azure (LiteLLM, SAP AI Core, …) answer with their 400. Other Chat servers (vLLM,
    // DeepSeek, Groq, …) take a long description and get the client's whole.
    static bool boundsToolDescriptions(const Target &target);
    // A description within kMaxToolDescription UTF-16 units (so within as many characters), never
    // splitting a surrogate pair: cut at the last sentence's or line's end in the bound's last half,
    // else at the last space there, else at the bound.
    static QString boundedToolDescription(const QString &description);
    // Whether this Chat server gets the reasoning of earlier turns back, as reasoning_content on each
    // assistant turn with tool calls (that turn's own reasoning when this API made it, else empty):
    // DeepSeek's API, whose thinking mode refuses a tool-call turn without it, and a server that
    // refused the history for want of it (Target::reasoningBack). Every other Chat server gets no
    // reasoning_content at all: Groq and Cerebras refuse the field ("property 'reasoning_content' is
    // unsupported"), and what a Chat client holds there may be another API's thinking.
    static bool takesReasoningBack(const Target &target);
    // Whether a same-API history keeps the other members a Chat server names its reasoning by
    // (kOtherReasoningMembers): OpenRouter's API, which asks for its signed reasoning_details back
    // on a tool loop. Every other server gets an assistant turn without them.
    static bool takesReasoningDetailsBack(const Target &target);
    static constexpr const char *kOtherReasoningMembers[] = {"reasoning", "reasoning_text", "reasoning_details"};
    // Whether this Chat server takes only tool call ids of nine characters of [a-zA-Z0-9] (Mistral's
    // validator: "Tool call id was toolu_01AAA but must be a-z, A-Z, 0-9, with a length of 9", a 400
    // no failover gets past): Mistral's API (*.mistral.ai), a Mistral model told by its id (mistral-…,
    // codestral, devstral, magistral, ministral, pixtral, mixtral, open-mistral…, a provider's prefix
    // allowed) behind any server, as vLLM and llama.cpp serve it with Mistral's template, and a server
    // that refused another id (Target::nineCharToolIds). Its history's ids go by an alias
    // (wire::NineCharToolIds); the ids of its own answer reach the client as it wrote them.
    static bool takesOnlyNineCharToolIds(const Target &target);
    // Whether a Chat server refuses a user turn right after a tool turn ("Unexpected role 'user' after
    // role 'tool'", a 400 no failover gets past): Mistral's validator, which its API and its chat
    // templates behind vLLM or llama.cpp share with the nine-character id rule, so the same servers.
    // There an assistant turn goes between the tool turns and the user's words.
    static bool wantsAssistantAfterToolTurns(const Target &target) { return takesOnlyNineCharToolIds(target); }
    // Mistral's API (mistral.ai and its subdomains), told by its host alone. Its validator refuses with a
    // 422 (`extra_forbidden`) any member its schema does not name: the gateway's `stream_options` and
    // `max_completion_tokens` go there without (a stream's last chunk carries the usage unasked;
    // `max_tokens` is its name for the cap). A Mistral model behind another server (vLLM, llama.cpp,
    // OpenRouter) takes both, and vLLM counts usage only when asked, so its model id does not count here.
    static bool isMistral(const QString &baseUrl);
    // OpenAI's members of a Chat client's own body that Mistral's API refuses that way (its chat request
    // has none of them; `seed` is its `random_seed`): they go without, named in the answer, as Groq's.
    static constexpr const char *kMistralRefusedMembers[] = {
        "user",       "seed",         "logprobs",         "top_logprobs",
        "logit_bias", "service_tier", "prompt_cache_key", "safety_identifier"};
    static bool isMistralModel(const QString &modelId);
    QStringList droppedFor(const model::ChatRequest &request, const Target &target) const override;
    // A failed tool result's text as it goes to an API with no is_error flag (Chat, Responses).
    static QString toolErrorText(const QString &text);
    // Chat's response_format for a structured-output request from a client of `source` (its `strict`:
    // openai_schema::strict).
    static QJsonObject responseFormat(const model::OutputFormat &format, wire::Api source);
};

} // namespace sw::upstream
