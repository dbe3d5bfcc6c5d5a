#pragma once
// Upstream API "google-generative-ai": POST {baseUrl}/models/{model}:streamGenerateContent?alt=sse
// (baseUrl includes /v1beta), key in x-goog-api-key.

#include "core/upstream/upstream_adapter.h"

#include <algorithm>

namespace sw::upstream {

class GoogleAdapter final : public UpstreamAdapter {
public:
    static constexpr wire::Api kApi = wire::Api::Google;

    const QString &api() const override { return apiNameString<kApi>(); }
    HttpRequest buildRequest(const model::ChatRequest &request, const Target &target,
                             const HeaderList &forwardHeaders) const override;
    std::unique_ptr<StreamDecoder> makeDecoder(const Target &target,
                                               NativeBody native = NativeBody::Keep) const override;
    UpstreamErrorInfo parseError(int status, const QByteArray &body) const override;
    // generationConfig.stopSequences takes at most 5.
    qsizetype stopSequencesSent(const model::ChatRequest &request, const Target &) const override {
        return std::min(request.options.stop.size(), kMaxStopSequences);
    }
    static constexpr qsizetype kMaxStopSequences = 5;

    // The Gemini generation a model id names: "gemini-2.5-flash" 2, "models/gemini-3-pro-preview" 3.
    // An id that names none (an alias such as "gemini-flash-latest", a tuned model) counts as the
    // newest, kNewestGeneration: what only older models refuse is not held against it.
    static int generation(const QString &modelId);
    static constexpr int kNewestGeneration = 1000;
    // The thinking settings a Gemini model takes, told from its id (ai.google.dev/gemini-api/docs/
    // thinking#set-budget; a budget outside them is refused, "The thinking budget (N) is invalid"):
    // 2.5 Pro a thinkingBudget of 128 to 32768 and never 0 (it cannot stop thinking), 2.5 Flash 1 to
    // 24576 and 2.5 Flash-Lite 512 to 24576, where 0 stops thinking. An alias names its family but
    // not its generation ("gemini-flash-latest"): its family's range, and no 0. An id naming no family
    // gets the range every 2.5 model takes. Gemini 3 and later take thinkingLevel (`levels`) and
    // cannot all stop thinking; low and high are the levels every one of them takes.
    struct ThinkingRange {
        int min = 512;
        int max = 24576;
        bool canStop = false; // thinkingBudget 0 turns thinking off
        bool levels = false;  // thinkingLevel, not thinkingBudget
    };
    static ThinkingRange thinkingRange(const QString &modelId);
    // Whether the model takes presencePenalty / frequencyPenalty: Gemini 1.5 and 2.0 (but the 2.0
    // thinking model) do; 2.5, 3 and an id naming no generation refuse a non-zero one with a 400
    // ("Penalty is not enabled for models/gemini-2.5-flash"; google-gemini/cookbook#1290, vercel/ai#8943).
    // Those go without the client's penalties, named in the answer (droppedFor).
    static bool takesPenalties(const QString &modelId);
    QStringList droppedFor(const model::ChatRequest &request, const Target &target) const override;
    // At most 512 function declarations in one request ("At most 512 function declarations can be
    // specified").
    static constexpr qsizetype kMaxFunctionDeclarations = 512;
    // An image URL Gemini reads itself (fileData.fileUri): http(s) and Cloud Storage.
    static bool isFetchableUrl(const QString &url);
    // Gemini names a call (functionCall.id) on some models and pairs its response by that id;
    // other endpoints name none and refuse an `id` on a call or a response (400 "Unknown name
    // \"id\""). An id Gemini gave reaches the client tagged, "gemini_<id>" (toolCallIdFor), so that
    // only such an id goes back to Gemini (geminiCallId: "" for an id the gateway made up or
    // another API gave).
    static QString toolCallIdFor(const QString &geminiId);
    static QString geminiCallId(const QString &toolCallId);
    // The generateContent body for the model `modelId` (see formats/translation_rules.md).
    static QJsonObject buildBody(const model::ChatRequest &request, const QString &modelId = QString());

    // The other side of the wire, for the simulated provider (Google has no inbound
    // codec): a generateContent body read back into the canonical request, and
    // canonical events / a message written as Google's answer.
    static model::ChatRequest decodeBody(const QByteArray &body);
    static QList<QByteArray> encodeStream(const QList<model::StreamEvent> &events); // data-only SSE frames
    static QByteArray encodeResponse(const model::AssistantMessage &message);
    static QJsonObject errorJson(int status, const QString &message); // {"error":{code,message,status}}
};

} // namespace sw::upstream
