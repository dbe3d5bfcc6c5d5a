#include "core/wire/reasoning_item.h"

#include "core/wire/api.h"

#include <QJsonArray>
#include <QJsonDocument>

namespace sw::wire {

QJsonObject responsesReasoningItem(const model::ContentBlock &thinking, const QString &fallbackId,
                                   const QString &upstreamApi) {
    const auto L = [](const char *s) { return QLatin1String(s); };
    const QLatin1String responses = apiName(Api::OpenAIResponses);
    const QString maker = thinking.signatureApi.isEmpty() ? upstreamApi : thinking.signatureApi;
    const QJsonObject original = maker.isEmpty() || maker == responses
                                     ? QJsonDocument::fromJson(thinking.signature.toUtf8()).object()
                                     : QJsonObject();
    const bool fromResponses = original.value(L("type")).toString() == L("reasoning");
    QJsonArray summary;
    if (!thinking.text.isEmpty())
        summary.append(QJsonObject{{L("type"), L("summary_text")}, {L("text"), thinking.text}});
    QJsonObject item{{L("id"), fromResponses ? original.value(L("id")).toString(fallbackId) : fallbackId},
                     {L("type"), L("reasoning")},
                     {L("summary"), summary}};
    if (fromResponses && original.value(L("encrypted_content")).isString())
        item.insert(L("encrypted_content"), original.value(L("encrypted_content")));
    else if (!fromResponses && !maker.isEmpty() && maker != responses && !thinking.signature.isEmpty())
        // Another API's signature rides in encrypted_content, tagged with its maker, so a
        // Codex-style client sends it back and only that API ever receives it.
        item.insert(L("encrypted_content"), model::tagSignature(maker, thinking.signature));
    return item;
}

} // namespace sw::wire
