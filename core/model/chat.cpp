#include "core/model/chat.h"

#include <QJsonArray>

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
    // the request. low is taken by every OpenAI model that takes an effort at all.
    if (budget <= 4096)
        return QStringLiteral("low");
    if (budget <= 16384)
        return QStringLiteral("medium");
    return QStringLiteral("high");
}

QString openAIEffort(const Options &options) {
    if (options.reasoning == QLatin1String("xhigh") || options.reasoning == QLatin1String("max"))
        return QStringLiteral("high");
    if (!options.reasoning.isEmpty())
        return options.reasoning;
    return options.thinkingBudget ? effortForThinkingBudget(*options.thinkingBudget) : QString();
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
