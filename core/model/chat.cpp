#include "core/model/chat.h"

#include <QJsonArray>

#include <cstdlib>
#include <iterator>

namespace sw::model {

QString stopReasonName(StopReason r) {
    switch (r) {
    case StopReason::Stop:
        return QStringLiteral("stop");
    case StopReason::Length:
        return QStringLiteral("length");
    case StopReason::ToolUse:
        return QStringLiteral("toolUse");
    case StopReason::Error:
    case StopReason::Refusal:
        return QStringLiteral("error");
    case StopReason::Aborted:
        return QStringLiteral("aborted");
    }
    return QStringLiteral("stop");
}

namespace {
constexpr QLatin1String kSignatureTag("swsig1.");
constexpr QLatin1String kRedactedMark("redacted.");
} // namespace

QString tagSignature(const QString &api, const QString &signature, bool redacted) {
    return kSignatureTag + api + QLatin1Char('.') + (redacted ? kRedactedMark : QLatin1String()) + signature;
}

namespace {
const QLatin1String kGoogleApi("google-generative-ai");
const QLatin1String kFunctionCallCarrier("fc.");
} // namespace

std::optional<QString> functionCallCarrier(const ContentBlock &call, const QString &upstreamApi) {
    const QString &maker = call.signatureApi.isEmpty() ? upstreamApi : call.signatureApi;
    if (call.type != BlockType::ToolCall || call.signature.isEmpty() || maker != kGoogleApi)
        return std::nullopt;
    return tagSignature(maker, kFunctionCallCarrier + call.signature);
}

QString carriedCallSignature(const TaggedSignature &tagged, const QString &thinkingText) {
    if (tagged.api != kGoogleApi || tagged.redacted || !thinkingText.isEmpty() ||
        !tagged.signature.startsWith(kFunctionCallCarrier))
        return {};
    return tagged.signature.mid(kFunctionCallCarrier.size());
}

TaggedSignature untagSignature(const QString &text) {
    if (!text.startsWith(kSignatureTag))
        return {QString(), text};
    const qsizetype dot = text.indexOf(QLatin1Char('.'), kSignatureTag.size());
    if (dot < 0)
        return {QString(), text};
    TaggedSignature out{text.mid(kSignatureTag.size(), dot - kSignatureTag.size()), text.mid(dot + 1)};
    if (out.signature.startsWith(kRedactedMark)) {
        out.signature.remove(0, kRedactedMark.size());
        out.redacted = true;
    }
    return out;
}

int thinkingBudgetForEffort(const QString &effort) {
    if (effort == QLatin1String("minimal"))
        return 1024;
    if (effort == QLatin1String("low"))
        return 2048;
    if (effort == QLatin1String("medium"))
        return 8192;
    if (effort == QLatin1String("high"))
        return 16384;
    // Anthropic's max (Opus 4.6+) is its most thinking: as xhigh, the most a budget asks for; a
    // model that takes less gets its own maximum (GoogleAdapter::thinkingRange).
    if (effort == QLatin1String("xhigh") || effort == QLatin1String("max"))
        return 32000;
    return 0;
}

QString effortForThinkingBudget(int budget) {
    // Not "minimal", even for Anthropic's smallest budget (1024): gpt-5.1 and later take none, low,
    // medium and high, o3 and o4-mini low to high, and each refuses minimal with a 400 that would end
    // the request; a model the gateway does not know gets the word as it is (openAIEffortFor). low is
    // taken by nearly every OpenAI model that takes an effort at all.
    if (budget <= 4096)
        return QStringLiteral("low");
    if (budget <= 16384)
        return QStringLiteral("medium");
    return QStringLiteral("high");
}

namespace {
// OpenAI's effort words, least thinking first; Anthropic's max is above them all.
constexpr const char *kEffortLadder[] = {"none", "minimal", "low", "medium", "high", "xhigh", "max"};
// Bit i stands for kEffortLadder[i].
enum EffortBit : unsigned { None = 1, Minimal = 2, Low = 4, Medium = 8, High = 16, XHigh = 32 };

int effortRank(const QString &effort) {
    for (int i = 0; i < int(std::size(kEffortLadder)); ++i)
        if (effort == QLatin1String(kEffortLadder[i]))
            return i;
    return -1;
}

// The efforts one OpenAI model takes (a set of EffortBit), read from its id after any provider
// prefix ("openai/gpt-5.1"); 0 for an id the gateway does not know (a later generation, another
// server's model, an Azure deployment's own name), which gets the client's word as it is. Each of
// these models refuses the other words with a 400 ("Unsupported value: 'xhigh' is not supported
// with the 'gpt-5.1' model"), a request error that ends a failover chain.
unsigned effortsTaken(const QString &modelId) {
    const QString id = modelId.mid(modelId.lastIndexOf(QLatin1Char('/')) + 1).toLower();
    // The o-series reasoning models (o1, o3, o3-mini, o4-mini, o3-pro): low to high.
    if (id.size() >= 2 && id.at(0) == QLatin1Char('o') && id.at(1).isDigit() &&
        (id.size() == 2 || id.at(2) == QLatin1Char('-')))
        return Low | Medium | High;
    QString version;
    if (id == QLatin1String("gpt-5") || id.startsWith(QLatin1String("gpt-5-")))
        version = QStringLiteral("5");
    else if (id.startsWith(QLatin1String("gpt-5.1")) || id.startsWith(QLatin1String("gpt-5.2")))
        version = id.mid(4, 3);
    if (version.isEmpty() || (id.size() > 4 + version.size() && id.at(4 + version.size()) != QLatin1Char('-')))
        return 0;
    const auto named = [&id](const char *word) {
        return id.contains(QLatin1Char('-') + QLatin1String(word) + QLatin1Char('-')) ||
               id.endsWith(QLatin1Char('-') + QLatin1String(word));
    };
    if (named("chat")) // the chat models do not reason as the others do: not known here
        return 0;
    // The codex models always reason (no none, no minimal); Codex's own model list gives codex-mini
    // medium and high, and codex-max and gpt-5.2-codex xhigh too.
    if (named("codex")) {
        if (version == QLatin1String("5.1") && named("mini"))
            return Medium | High;
        return Low | Medium | High | (named("max") || version == QLatin1String("5.2") ? unsigned(XHigh) : 0u);
    }
    if (version == QLatin1String("5"))
        return named("pro") ? High : Minimal | Low | Medium | High; // gpt-5-pro thinks at high only
    if (version == QLatin1String("5.1"))
        return named("pro") ? 0 : None | Low | Medium | High;
    return named("pro") ? Medium | High | XHigh : None | Low | Medium | High | XHigh;
}
} // namespace

QString openAIEffortFor(const QString &effort, const QString &modelId) {
    const int asked = effortRank(effort);
    const unsigned taken = asked < 0 ? 0 : effortsTaken(modelId);
    if (!taken)
        return effort;
    // The nearest word the model takes; between two as near, the one that thinks more (minimal to
    // a model that has none and low: low, as minimal still thinks).
    int best = -1;
    for (int i = 0; i < int(std::size(kEffortLadder)); ++i)
        if ((taken & (1u << i)) && (best < 0 || std::abs(i - asked) <= std::abs(best - asked)))
            best = i;
    return QLatin1String(kEffortLadder[best]);
}

QString openAIEffort(const Options &options, const QString &modelId) {
    if (options.reasoning.isEmpty())
        return options.thinkingBudget ? openAIEffortFor(effortForThinkingBudget(*options.thinkingBudget), modelId)
                                      : QString();
    // A word from another API (Anthropic's max, pi's xhigh) going to a model the gateway does not
    // know: high, which every server of an OpenAI API that takes an effort takes (vLLM, Groq and
    // the like refuse xhigh and max with a 400 that ends the chain). A client's own word to its
    // own API (the passthrough) still goes as written.
    if (!effortsTaken(modelId) && effortRank(options.reasoning) > effortRank(QStringLiteral("high")))
        return QStringLiteral("high");
    return openAIEffortFor(options.reasoning, modelId);
}

} // namespace sw::model

namespace sw::model {

QJsonObject customToolParameters() {
    return QJsonObject{
        {QStringLiteral("type"), QStringLiteral("object")},
        {QStringLiteral("properties"),
         QJsonObject{{QStringLiteral("input"),
                      QJsonObject{{QStringLiteral("type"), QStringLiteral("string")},
                                  {QStringLiteral("description"), QStringLiteral("The tool's whole input text.")}}}}},
        {QStringLiteral("required"), QJsonArray{QStringLiteral("input")}},
        {QStringLiteral("additionalProperties"), false}};
}

QString textDocumentAsText(const ContentBlock &document) {
    if (document.title.isEmpty())
        return document.text;
    return QStringLiteral("Document: %1\n\n%2").arg(document.title, document.text);
}

QString customToolDescription(const Tool &tool) {
    QString out = tool.description;
    if (tool.format.value(QStringLiteral("type")).toString() == QLatin1String("grammar")) {
        // The grammar is what the model must write; without it the function's one string
        // parameter would invite any text.
        const QString syntax = tool.format.value(QStringLiteral("syntax")).toString();
        out += QStringLiteral("%1The `input` string must follow this %2 grammar:\n%3")
                   .arg(out.isEmpty() ? QString() : QStringLiteral("\n\n"),
                        syntax.isEmpty() ? QStringLiteral("lark") : syntax,
                        tool.format.value(QStringLiteral("definition")).toString());
    }
    return out;
}

} // namespace sw::model
