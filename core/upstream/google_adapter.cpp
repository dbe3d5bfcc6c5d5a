#include "core/upstream/google_adapter.h"

#include "core/model/event_accumulator.h"
#include "core/upstream/google_stream_decoder.h"
#include "core/upstream/tool_names.h"
#include "core/wire/client_body.h"
#include "core/wire/json.h"
#include "core/wire/sse.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QUrl>
#include <algorithm>
#include <limits>
#include <optional>

namespace sw::upstream {

using namespace sw::model;

namespace {

constexpr const char *kGeminiIdTag = "gemini_"; // GoogleAdapter::toolCallIdFor

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

void addHeader(HttpRequest &http, const QByteArray &name, const QByteArray &value) {
    http.headers.append(qMakePair(name, value));
}

// The image type Gemini is told for a URL, from its extension ("" when it does not say).
QString mimeTypeForUrl(const QString &url) {
    const QString path = QUrl(url).path().toLower();
    if (path.endsWith(L(".png")))
        return QStringLiteral("image/png");
    if (path.endsWith(L(".jpg")) || path.endsWith(L(".jpeg")))
        return QStringLiteral("image/jpeg");
    if (path.endsWith(L(".webp")))
        return QStringLiteral("image/webp");
    if (path.endsWith(L(".gif")))
        return QStringLiteral("image/gif");
    if (path.endsWith(L(".heic")))
        return QStringLiteral("image/heic");
    return {};
}

// Text, images and documents: inline data as inlineData, an http(s) URL as fileData (Gemini
// reads public URLs itself), a plain-text document as text. A provider file id cannot be
// resolved here: such a request is incompatible (UpstreamAdapter::incompatibility), never sent
// without the image or the file.
QJsonArray userParts(const QList<ContentBlock> &blocks) {
    QJsonArray parts;
    for (const ContentBlock &b : blocks) {
        if (b.type == BlockType::Text && !b.text.isEmpty()) {
            parts.append(QJsonObject{{L("text"), b.text}});
        } else if (b.isTextDocument()) {
            parts.append(QJsonObject{{L("text"), textDocumentAsText(b)}});
        } else if (b.isAttachment() && b.url.isEmpty()) {
            parts.append(QJsonObject{
                {L("inlineData"), QJsonObject{{L("mimeType"), b.mimeType}, {L("data"), QString::fromLatin1(b.data)}}}});
        } else if (b.type == BlockType::Document) {
            // A document by URL reaches Gemini only as a PDF (UpstreamAdapter::incompatibility).
            parts.append(QJsonObject{
                {L("fileData"),
                 QJsonObject{{L("fileUri"), b.url},
                             {L("mimeType"), b.mimeType.isEmpty() ? QStringLiteral("application/pdf") : b.mimeType}}}});
        } else if (b.type == BlockType::Image && GoogleAdapter::isFetchableUrl(b.url)) {
            QJsonObject file{{L("fileUri"), b.url}};
            const QString mime = b.mimeType.isEmpty() ? mimeTypeForUrl(b.url) : b.mimeType;
            if (!mime.isEmpty())
                file.insert(L("mimeType"), mime);
            parts.append(QJsonObject{{L("fileData"), file}});
        }
    }
    return parts;
}

QString finishReasonFor(StopReason r) {
    return r == StopReason::Length ? QStringLiteral("MAX_TOKENS") : QStringLiteral("STOP");
}

QJsonObject usageMetadata(const Usage &u) {
    return QJsonObject{{L("promptTokenCount"), u.input + u.cacheRead},
                       {L("cachedContentTokenCount"), u.cacheRead},
                       {L("candidatesTokenCount"), u.output},
                       {L("totalTokenCount"), u.input + u.cacheRead + u.output}};
}

QJsonObject candidateChunk(const QJsonArray &parts, const QString &finishReason = {}) {
    QJsonObject candidate{{L("content"), QJsonObject{{L("role"), L("model")}, {L("parts"), parts}}}, {L("index"), 0}};
    if (!finishReason.isEmpty())
        candidate.insert(L("finishReason"), finishReason);
    return QJsonObject{{L("candidates"), QJsonArray{candidate}}};
}

QJsonObject partFor(const ContentBlock &b) {
    QJsonObject part;
    if (b.type == BlockType::ToolCall) {
        part.insert(L("functionCall"), QJsonObject{{L("name"), b.toolName}, {L("args"), b.arguments}});
    } else {
        part.insert(L("text"), b.text);
        if (b.type == BlockType::Thinking)
            part.insert(L("thought"), true);
    }
    if (!b.signature.isEmpty())
        part.insert(L("thoughtSignature"), b.signature);
    return part;
}

} // namespace

QString GoogleAdapter::toolCallIdFor(const QString &geminiId) {
    return QLatin1String(kGeminiIdTag) + geminiId;
}

QString GoogleAdapter::geminiCallId(const QString &toolCallId) {
    const QLatin1String tag(kGeminiIdTag);
    return toolCallId.startsWith(tag) && toolCallId.size() > tag.size() ? toolCallId.mid(tag.size()) : QString();
}

int GoogleAdapter::generation(const QString &modelId) {
    static const QLatin1String prefix("gemini-");
    const qsizetype at = modelId.indexOf(prefix, 0, Qt::CaseInsensitive);
    if (at < 0 || (at > 0 && modelId.at(at - 1) != QLatin1Char('/')))
        return kNewestGeneration;
    qsizetype end = at + prefix.size();
    int major = 0;
    while (end < modelId.size() && modelId.at(end).isDigit() && major < kNewestGeneration)
        major = major * 10 + modelId.at(end++).digitValue();
    return end == at + prefix.size() ? kNewestGeneration : major;
}

GoogleAdapter::ThinkingRange GoogleAdapter::thinkingRange(const QString &modelId) {
    const int major = generation(modelId);
    if (major >= 3 && major < kNewestGeneration)
        return ThinkingRange{1, std::numeric_limits<int>::max(), false, true};
    const bool named = major < kNewestGeneration; // "gemini-2.5-…", not an alias or a tuned model
    if (modelId.contains(L("flash-lite"), Qt::CaseInsensitive))
        return ThinkingRange{512, 24576, named, false};
    if (modelId.contains(L("flash"), Qt::CaseInsensitive))
        return ThinkingRange{1, 24576, named, false};
    if (modelId.contains(L("pro"), Qt::CaseInsensitive))
        return ThinkingRange{128, 32768, false, false};
    return ThinkingRange{};
}

bool GoogleAdapter::takesPenalties(const QString &modelId) {
    static const QLatin1String prefix("gemini-");
    const QString id = modelId.mid(modelId.lastIndexOf(QLatin1Char('/')) + 1).toLower();
    if (!id.startsWith(prefix))
        return false;
    const QStringView version = QStringView(id).mid(prefix.size());
    return version.startsWith(u"1.") || (version.startsWith(u"2.0-") && !version.contains(u"thinking"));
}

QStringList GoogleAdapter::droppedFor(const model::ChatRequest &request, const Target &target) const {
    QStringList out;
    if (takesPenalties(target.modelId))
        return out;
    // Only a Chat client has penalties; one of 0 is the default, and nothing is lost with it.
    if (request.options.presencePenalty.value_or(0.0) != 0.0)
        out << QStringLiteral("presence_penalty");
    if (request.options.frequencyPenalty.value_or(0.0) != 0.0)
        out << QStringLiteral("frequency_penalty");
    return out;
}

bool GoogleAdapter::isFetchableUrl(const QString &url) {
    return url.startsWith(L("https://")) || url.startsWith(L("http://")) || url.startsWith(L("gs://"));
}

namespace {
bool hasFunctionResponse(const QJsonObject &turn) {
    const QJsonArray parts = turn.value(L("parts")).toArray();
    return std::any_of(parts.cbegin(), parts.cend(),
                       [](const QJsonValue &p) { return p.toObject().contains(L("functionResponse")); });
}

// Gemini takes turns that alternate between user and model and answers 400 otherwise ("Please
// ensure that multiturn requests alternate between user and model"). Turns of one role side by
// side come from other APIs' histories: a turn left out (foreign thinking only, a pi turn that
// was aborted), or words a client sent after tool results without an answer between them. They
// are merged, but for a user's words after function responses: in one turn, Gemini reads them as
// part of the tool output (an empty answer, or the text continued), so a model turn saying the
// answer was interrupted goes between them, as Google's gemini-cli does.
// The turns also start with the user's. A history that opens with the model's turn (one an SDK
// trimmed from the front, or one seeded with the assistant's tool call) is valid for Chat,
// Responses and Messages, but Gemini refuses a first turn with a function call (400 "Please ensure
// that function call turn comes immediately after a user turn or after a function response
// turn.", a request error that ends the chain), and Google's SDKs any model turn first ("First
// content should be with role 'user'"). A short, neutral user turn goes before it, as gemini-cli
// puts one before a history it trimmed; the model's turn and everything after stay as they were.
QJsonArray alternating(const QJsonArray &contents) {
    MergedTurns out(L("parts"));
    if (!contents.isEmpty() && contents.first().toObject().value(L("role")).toString() == L("model"))
        out.append(L("user"), QJsonArray{QJsonObject{{L("text"), L("[Conversation history follows.]")}}});
    bool lastHasFunctionResponse = false; // the last turn of `out`, merged, has one
    for (const QJsonValue &v : contents) {
        const QJsonObject turn = v.toObject();
        const QString role = turn.value(L("role")).toString();
        const bool hasResponse = hasFunctionResponse(turn); // this turn's own parts, once
        if (role == L("user") && out.lastRole() == role && lastHasFunctionResponse && !hasResponse) {
            out.append(L("model"),
                       QJsonArray{QJsonObject{
                           {L("text"), L("[The previous response was interrupted before it completed.]")}}});
            lastHasFunctionResponse = false;
        }
        lastHasFunctionResponse = (out.lastRole() == role && lastHasFunctionResponse) || hasResponse;
        out.append(role, turn.value(L("parts")).toArray());
    }
    return out.take();
}
} // namespace

QJsonObject GoogleAdapter::buildBody(const model::ChatRequest &request, const QString &modelId) {
    const Context &ctx = request.context;
    const Options &opt = request.options;
    QJsonArray contents;
    QJsonArray pendingResults; // consecutive tool results travel in one user turn
    auto flushResults = [&] {
        if (!pendingResults.isEmpty())
            contents.append(QJsonObject{{L("role"), L("user")}, {L("parts"), pendingResults}});
        pendingResults = {};
    };
    // Gemini pairs a response without an id with the call in the same position: the results go in
    // the order of the calls they answer (a client returns them as its tools finish), right after
    // the turn of the calls.
    const QList<Message> history = resultsAfterTheirCalls(ctx.messages);
    for (const Message &m : history) {
        if (m.role == Role::ToolResult) {
            const ToolResultContent result = splitToolResult(m);
            QJsonObject response{{L("name"), m.toolName},
                                 {L("response"), QJsonObject{{m.isError ? L("error") : L("output"), result.text}}}};
            if (const QString id = geminiCallId(m.toolCallId); !id.isEmpty())
                response.insert(L("id"), id);
            pendingResults.append(QJsonObject{{L("functionResponse"), response}});
            for (const QJsonValue &p : userParts(result.attachments))
                pendingResults.append(p);
            continue;
        }
        flushResults();
        if (m.role == Role::User) {
            const QJsonArray parts = userParts(m.content);
            if (!parts.isEmpty())
                contents.append(QJsonObject{{L("role"), L("user")}, {L("parts"), parts}});
            continue;
        }
        auto ownSignature = [&](const ContentBlock &b) {
            return signatureOwner(m, b) == wire::apiName(kApi) && !b.signature.isEmpty();
        };
        QJsonArray parts;
        bool firstCall = true;
        for (const ContentBlock &b : m.content) {
            switch (b.type) {
            case BlockType::Text:
                if (!b.text.isEmpty()) {
                    QJsonObject p{{L("text"), b.text}};
                    if (ownSignature(b))
                        p.insert(L("thoughtSignature"), b.signature);
                    parts.append(p);
                }
                break;
            case BlockType::Thinking:
                // Thought parts (and their signatures) go back only to Google; other APIs'
                // thinking is dropped, never replayed as text.
                if (!b.redacted && ownSignature(b))
                    parts.append(
                        QJsonObject{{L("text"), b.text}, {L("thought"), true}, {L("thoughtSignature"), b.signature}});
                break;
            case BlockType::ToolCall: {
                QJsonObject call{{L("name"), b.toolName}, {L("args"), b.arguments}};
                if (const QString id = geminiCallId(b.toolCallId); !id.isEmpty())
                    call.insert(L("id"), id); // Gemini named it: its response goes back under that id
                QJsonObject p{{L("functionCall"), call}};
                if (ownSignature(b))
                    p.insert(L("thoughtSignature"), b.signature);
                else if (firstCall)
                    // Gemini 3 validates the first call of a step; for a call it did not make,
                    // Google documents this value to skip the check.
                    p.insert(L("thoughtSignature"), QStringLiteral("skip_thought_signature_validator"));
                firstCall = false;
                parts.append(p);
                break;
            }
            case BlockType::Image:
            case BlockType::Document:
                break;
            }
        }
        if (!parts.isEmpty())
            contents.append(QJsonObject{{L("role"), L("model")}, {L("parts"), parts}});
    }
    flushResults();

    QJsonObject body{{L("contents"), alternating(contents)}};
    if (!ctx.systemPrompt.isEmpty())
        body.insert(L("systemInstruction"),
                    QJsonObject{{L("parts"), QJsonArray{QJsonObject{{L("text"), ctx.systemPrompt}}}}});
    QJsonObject generation;
    if (opt.maxTokens)
        generation.insert(L("maxOutputTokens"), *opt.maxTokens);
    if (opt.temperature)
        generation.insert(L("temperature"), *opt.temperature);
    if (opt.topP)
        generation.insert(L("topP"), *opt.topP);
    if (opt.topK)
        generation.insert(L("topK"), *opt.topK);
    if (opt.presencePenalty)
        generation.insert(L("presencePenalty"), *opt.presencePenalty);
    if (opt.frequencyPenalty)
        generation.insert(L("frequencyPenalty"), *opt.frequencyPenalty);
    if (!opt.stop.isEmpty()) // the rest the gateway cuts at itself (stopSequencesSent)
        generation.insert(L("stopSequences"), QJsonArray::fromStringList(opt.stop.mid(0, kMaxStopSequences)));
    // Thinking asked off (effort none, Anthropic's thinking disabled) stays off where the model can
    // stop; elsewhere it thinks at its default.
    const ThinkingRange range = thinkingRange(modelId);
    const bool askedOff = opt.reasoning == L("none") || opt.thinkingOff;
    int budget = askedOff ? 0 : opt.thinkingBudget.value_or(model::thinkingBudgetForEffort(opt.reasoning));
    if (budget > 0) {
        // Within what the model takes: a budget outside it is refused with a 400 that would end the
        // request (xhigh's 32000 to Flash, Claude Code's 31999).
        budget = std::clamp(budget, range.min, range.max);
        if (opt.maxTokens && *opt.maxTokens <= budget) {
            // Gemini counts thoughts against maxOutputTokens: a budget as large as the cap leaves no
            // room for the answer (empty, finishReason MAX_TOKENS). The client's cap is never raised;
            // the budget shrinks under it, as for Messages, and below the model's smallest budget
            // none is asked for.
            budget = *opt.maxTokens - qMin(*opt.maxTokens / 4, 4096);
            if (budget < range.min)
                budget = 0;
        }
    }
    if (budget > 0 && range.levels) {
        // Gemini 3: a level for the budget. Between low and high, the model's own default level
        // (Gemini 3 Pro refuses medium; newer models default to it).
        QJsonObject config{{L("includeThoughts"), true}};
        if (budget <= 4096)
            config.insert(L("thinkingLevel"), L("low"));
        else if (budget >= model::thinkingBudgetForEffort(QStringLiteral("high")))
            config.insert(L("thinkingLevel"), L("high"));
        generation.insert(L("thinkingConfig"), config);
    } else if (budget > 0) {
        generation.insert(L("thinkingConfig"),
                          QJsonObject{{L("includeThoughts"), true}, {L("thinkingBudget"), budget}});
    } else if (askedOff && range.canStop) {
        generation.insert(L("thinkingConfig"), QJsonObject{{L("thinkingBudget"), 0}});
    }
    if (!generation.isEmpty())
        body.insert(L("generationConfig"), generation);
    if (opt.outputFormat.isSet()) {
        // Structured output: JSON, following the client's JSON Schema when it gave one.
        generation.insert(L("responseMimeType"), L("application/json"));
        if (opt.outputFormat.type == L("json_schema"))
            generation.insert(L("responseJsonSchema"), opt.outputFormat.schema);
        body.insert(L("generationConfig"), generation);
    }
    QJsonArray tools;
    bool strict = false;
    if (!ctx.tools.isEmpty()) {
        QJsonArray declarations;
        for (const Tool &t : ctx.tools) {
            QJsonObject d{{L("name"), t.name},
                          {L("parametersJsonSchema"),
                           t.parameters.isEmpty()
                               ? QJsonObject{{L("type"), L("object")}, {L("properties"), QJsonObject()}}
                               : t.parameters}};
            const QString description = t.custom ? customToolDescription(t) : t.description;
            if (!description.isEmpty())
                d.insert(L("description"), description);
            strict |= t.strict.value_or(false);
            declarations.append(d);
        }
        tools.append(QJsonObject{{L("functionDeclarations"), declarations}});
    }
    for (const BuiltinTool &b : ctx.builtinTools)
        if (b.kind == L("web_search"))
            tools.append(QJsonObject{{L("googleSearch"), QJsonObject()}}); // grounding with Google Search
    if (!tools.isEmpty())
        body.insert(L("tools"), tools);
    if (!ctx.tools.isEmpty()) {
        QJsonObject config;
        if (opt.toolChoice == L("none"))
            config.insert(L("mode"), L("NONE"));
        else if (opt.toolChoice == L("required"))
            config.insert(L("mode"), L("ANY"));
        else if (!opt.toolChoice.isEmpty() && opt.toolChoice != L("auto"))
            config = QJsonObject{{L("mode"), L("ANY")}, {L("allowedFunctionNames"), QJsonArray{opt.toolChoice}}};
        else if (strict)
            // strict: calls must follow their schema, which Gemini's VALIDATED mode ensures.
            config.insert(L("mode"), L("VALIDATED"));
        else if (opt.toolChoice == L("auto"))
            config.insert(L("mode"), L("AUTO"));
        if (!config.isEmpty())
            body.insert(L("toolConfig"), QJsonObject{{L("functionCallingConfig"), config}});
    }
    return body;
}

HttpRequest GoogleAdapter::buildRequest(const model::ChatRequest &request, const Target &target,
                                        const HeaderList &) const {
    HttpRequest http;
    // The id is one encoded segment: "G/../../admin?x=1#" must not walk out of /models/.
    QUrl url = joinUrl(target.baseUrl, QStringLiteral("/models/") + modelPathSegment(target.modelId) +
                                           QStringLiteral(":streamGenerateContent"));
    url.setQuery(QStringLiteral("alt=sse"));
    http.url = url;
    // No client speaks Google's API: the request is always converted. Tool names Gemini refuses go
    // by an alias; the answer's calls come back by the client's.
    const ToolNameAliases aliases = ToolNameAliases::forRequest(request, kApi);
    std::optional<model::ChatRequest> aliased;
    const model::ChatRequest &converted = withToolAliases(request, aliases, aliased);
    http.toolNameOriginals = aliases.originals();
    // A model configured not to reason gets no thinkingConfig (gemini-2.0-flash refuses it); one
    // that takes fewer output tokens than asked gets its maximum; one that refuses penalties
    // (Gemini 2.5 on) goes without them, named in the answer (droppedFor). A penalty of 0 (an
    // SDK's default) is not checked and goes as before.
    model::ChatRequest scratch;
    const model::ChatRequest *forModel = &requestForTarget(converted, target, scratch);
    model::ChatRequest withoutPenalties;
    const auto penalises = [](const std::optional<double> &penalty) { return penalty.value_or(0.0) != 0.0; };
    if ((penalises(forModel->options.presencePenalty) || penalises(forModel->options.frequencyPenalty)) &&
        !takesPenalties(target.modelId)) {
        withoutPenalties = *forModel;
        for (std::optional<double> *penalty :
             {&withoutPenalties.options.presencePenalty, &withoutPenalties.options.frequencyPenalty})
            if (penalises(*penalty))
                penalty->reset();
        forModel = &withoutPenalties;
    }
    QJsonObject body = buildBody(*forModel, target.modelId);
    if (!target.replayReasoning) {
        // This upstream refused a thought signature (another Google provider's): the model's turns
        // go without thought parts, and a call with the value Google documents to skip the check.
        MergedTurns contents(L("parts"));
        for (const QJsonValue &t : body.value(L("contents")).toArray()) {
            QJsonObject turn = t.toObject();
            if (turn.value(L("role")).toString() != L("model")) {
                // merged with the user turn before it when a turn of thoughts alone went between
                contents.append(turn.value(L("role")).toString(), turn.value(L("parts")).toArray());
                continue;
            }
            QJsonArray parts;
            for (const QJsonValue &v : turn.value(L("parts")).toArray()) {
                QJsonObject part = v.toObject();
                if (part.value(L("thought")).toBool())
                    continue;
                if (part.contains(L("thoughtSignature"))) {
                    if (part.contains(L("functionCall")))
                        part.insert(L("thoughtSignature"), QStringLiteral("skip_thought_signature_validator"));
                    else
                        part.remove(L("thoughtSignature"));
                }
                parts.append(part);
            }
            if (parts.isEmpty())
                continue;                       // a turn of thoughts alone
            contents.append(L("model"), parts); // never after a model turn: alternating() merged those
        }
        body.insert(L("contents"), contents.take());
    }
    http.body = wire::compactJson(body);
    addHeader(http, "content-type", "application/json");
    addHeader(http, "accept", "text/event-stream");
    if (!target.credential.isEmpty())
        addHeader(http, "x-goog-api-key", target.credential);
    return http;
}

std::unique_ptr<StreamDecoder> GoogleAdapter::makeDecoder(const Target &, NativeBody) const {
    return std::make_unique<GoogleStreamDecoder>();
}

UpstreamErrorInfo GoogleAdapter::parseError(int, const QByteArray &body) const {
    return wire::parseErrorBody(kApi, body);
}

model::ChatRequest GoogleAdapter::decodeBody(const QByteArray &body) {
    model::ChatRequest req;
    req.sourceApi = kApi;
    req.json = wire::parseClientBody(body);
    const QJsonObject o = QJsonDocument::fromJson(body).object();
    Context &ctx = req.context;
    for (const QJsonValue &p : o.value(L("systemInstruction")).toObject().value(L("parts")).toArray())
        ctx.systemPrompt += p.toObject().value(L("text")).toString();
    QHash<QString, QString> unansweredIds; // tool name -> id of its latest call
    QHash<QString, QString> namedCalls;    // Gemini's own id of a call -> its id here
    int calls = 0;
    for (const QJsonValue &cv : o.value(L("contents")).toArray()) {
        const QJsonObject c = cv.toObject();
        const bool model = c.value(L("role")).toString() == L("model");
        Message turn;
        turn.role = model ? Role::Assistant : Role::User;
        turn.api = model ? QString(wire::apiName(kApi)) : QString();
        for (const QJsonValue &pv : c.value(L("parts")).toArray()) {
            const QJsonObject p = pv.toObject();
            ContentBlock b;
            if (p.contains(L("functionCall"))) {
                const QJsonObject fc = p.value(L("functionCall")).toObject();
                b.type = BlockType::ToolCall;
                b.toolName = fc.value(L("name")).toString();
                b.toolCallId = QStringLiteral("call_%1").arg(++calls);
                unansweredIds.insert(b.toolName, b.toolCallId);
                if (const QString id = fc.value(L("id")).toString(); !id.isEmpty())
                    namedCalls.insert(id, b.toolCallId);
                b.arguments = fc.value(L("args")).toObject();
                b.argumentsJson = QString::fromUtf8(wire::compactJson(b.arguments));
            } else if (p.contains(L("functionResponse"))) {
                const QJsonObject fr = p.value(L("functionResponse")).toObject();
                Message r;
                r.role = Role::ToolResult;
                r.toolName = fr.value(L("name")).toString();
                // by the call's id when it has one, else by name
                r.toolCallId = namedCalls.value(fr.value(L("id")).toString(), unansweredIds.value(r.toolName));
                const QJsonObject response = fr.value(L("response")).toObject();
                r.isError = response.contains(L("error"));
                const QJsonValue v = response.value(r.isError ? L("error") : L("output"));
                r.content.append(ContentBlock::makeText(v.isString() ? v.toString()
                                                                     : QString::fromUtf8(wire::compactJson(response))));
                ctx.messages.append(r);
                continue;
            } else if (p.contains(L("inlineData"))) {
                const QJsonObject d = p.value(L("inlineData")).toObject();
                b.type =
                    d.value(L("mimeType")).toString().startsWith(L("image/")) ? BlockType::Image : BlockType::Document;
                b.mimeType = d.value(L("mimeType")).toString();
                b.data = d.value(L("data")).toString().toLatin1();
            } else {
                b.type = p.value(L("thought")).toBool() ? BlockType::Thinking : BlockType::Text;
                b.text = p.value(L("text")).toString();
            }
            b.signature = p.value(L("thoughtSignature")).toString();
            turn.content.append(b);
        }
        if (!turn.content.isEmpty())
            ctx.messages.append(turn);
    }
    for (const QJsonValue &tv : o.value(L("tools")).toArray())
        for (const QJsonValue &dv : tv.toObject().value(L("functionDeclarations")).toArray()) {
            const QJsonObject d = dv.toObject();
            const QJsonValue schema =
                d.contains(L("parametersJsonSchema")) ? d.value(L("parametersJsonSchema")) : d.value(L("parameters"));
            Tool tool;
            tool.name = d.value(L("name")).toString();
            tool.description = d.value(L("description")).toString();
            tool.parameters = schema.toObject();
            ctx.tools.append(tool);
        }
    const QJsonObject fcc = o.value(L("toolConfig")).toObject().value(L("functionCallingConfig")).toObject();
    const QString mode = fcc.value(L("mode")).toString();
    const QJsonArray allowed = fcc.value(L("allowedFunctionNames")).toArray();
    if (mode == L("ANY"))
        req.options.toolChoice = allowed.size() == 1 ? allowed.at(0).toString() : QStringLiteral("required");
    else if (mode == L("NONE"))
        req.options.toolChoice = QStringLiteral("none");
    else if (mode == L("AUTO"))
        req.options.toolChoice = QStringLiteral("auto");
    const QJsonObject generation = o.value(L("generationConfig")).toObject();
    if (generation.value(L("maxOutputTokens")).isDouble())
        req.options.maxTokens = generation.value(L("maxOutputTokens")).toInt();
    const QJsonObject thinking = generation.value(L("thinkingConfig")).toObject();
    if (thinking.value(L("thinkingBudget")).toInt() > 0)
        req.options.thinkingBudget = thinking.value(L("thinkingBudget")).toInt();
    else if (thinking.value(L("thinkingBudget")).toInt(-1) == 0) // asked off
        req.options.reasoning = QStringLiteral("none");
    else if (const QString level = thinking.value(L("thinkingLevel")).toString(); !level.isEmpty())
        req.options.reasoning = level.toLower();
    else if (thinking.value(L("includeThoughts")).toBool())
        req.options.reasoning = QStringLiteral("medium");
    return req;
}

QList<QByteArray> GoogleAdapter::encodeStream(const QList<StreamEvent> &events) {
    QList<QByteArray> out;
    for (const StreamEvent &e : events) {
        switch (e.type) {
        case EventType::TextDelta:
        case EventType::ThinkingDelta:
            if (!e.delta.isEmpty()) {
                QJsonObject part{{L("text"), e.delta}};
                if (e.type == EventType::ThinkingDelta)
                    part.insert(L("thought"), true);
                out << wire::sseFrame(candidateChunk(QJsonArray{part}));
            }
            break;
        case EventType::ThinkingEnd:
            if (!e.block.signature.isEmpty()) // the signature closes the thought, on an empty part
                out << wire::sseFrame(candidateChunk(QJsonArray{QJsonObject{
                    {L("text"), QString()}, {L("thought"), true}, {L("thoughtSignature"), e.block.signature}}}));
            break;
        case EventType::ToolCallEnd: {
            ContentBlock b = e.block;
            if (b.arguments.isEmpty())
                b.arguments = parseToolArguments(b.argumentsJson);
            out << wire::sseFrame(candidateChunk(QJsonArray{partFor(b)}));
            break;
        }
        case EventType::Done: {
            QJsonObject last =
                candidateChunk(QJsonArray{QJsonObject{{L("text"), QString()}}}, finishReasonFor(e.reason));
            last.insert(L("usageMetadata"), usageMetadata(e.usage));
            out << wire::sseFrame(last);
            break;
        }
        case EventType::Error: {
            const int status = e.errorStatus.value_or(500);
            out << wire::sseFrame(errorJson(status, e.errorMessage));
            break;
        }
        default:
            break; // Google has no start / block boundary events
        }
    }
    return out;
}

QByteArray GoogleAdapter::encodeResponse(const AssistantMessage &message) {
    QJsonArray parts;
    for (const ContentBlock &b : message.content)
        if (b.type != BlockType::Image)
            parts.append(partFor(b));
    QJsonObject body = candidateChunk(parts, finishReasonFor(message.stopReason));
    body.insert(L("usageMetadata"), usageMetadata(message.usage));
    return wire::compactJson(body);
}

QJsonObject GoogleAdapter::errorJson(int status, const QString &message) {
    return wire::googleErrorJson(status, message);
}

} // namespace sw::upstream
