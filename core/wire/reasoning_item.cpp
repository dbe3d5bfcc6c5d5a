#include "core/wire/reasoning_item.h"

#include "core/wire/api.h"
#include "core/wire/json_writer.h"

#include <QJsonArray>
#include <QJsonDocument>

namespace sw::wire {

namespace {

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

// The item's id and encrypted_content (absent when `hasEncrypted` is false).
struct ReasoningFields {
    QString id;
    QString encrypted;
    bool hasEncrypted = false;
};

ReasoningFields reasoningFields(const model::ContentBlock &thinking, const QString &fallbackId,
                                const QString &upstreamApi) {
    const QLatin1String responses = apiName(Api::OpenAIResponses);
    const QString &maker = thinking.signatureApi.isEmpty() ? upstreamApi : thinking.signatureApi;
    ReasoningFields f{fallbackId, QString(), false};
    if (maker.isEmpty() || maker == responses) {
        // A signature that is a whole reasoning item (decoded from this API) keeps its id and encrypted_content.
        const QJsonObject original = QJsonDocument::fromJson(thinking.signature.toUtf8()).object();
        if (original.value(L("type")).toString() != L("reasoning"))
            return f;
        f.id = original.value(L("id")).toString(fallbackId);
        const QJsonValue encrypted = original.value(L("encrypted_content"));
        if (encrypted.isString()) {
            f.encrypted = encrypted.toString();
            f.hasEncrypted = true;
        }
    } else {
        // Another API's reasoning rides in encrypted_content, tagged with its maker (a redacted
        // block marked so), so a Codex-style client sends it back and only that API ever
        // receives it. Tagged even without a signature (Chat's reasoning_content): an item with
        // neither tag nor encrypted_content would read as one the Responses API stored, and
        // its made-up id would be sent there.
        f.encrypted = model::tagSignature(maker, thinking.signature, thinking.redacted);
        f.hasEncrypted = true;
    }
    return f;
}

} // namespace

QJsonObject responsesReasoningItem(const model::ContentBlock &thinking, const QString &fallbackId,
                                   const QString &upstreamApi) {
    const ReasoningFields f = reasoningFields(thinking, fallbackId, upstreamApi);
    QJsonArray summary;
    if (!thinking.text.isEmpty())
        summary.append(QJsonObject{{L("type"), L("summary_text")}, {L("text"), thinking.text}});
    QJsonObject item{{L("id"), f.id}, {L("type"), L("reasoning")}, {L("summary"), summary}};
    if (f.hasEncrypted)
        item.insert(L("encrypted_content"), f.encrypted);
    return item;
}

void writeResponsesReasoningItem(JsonWriter &w, const model::ContentBlock &thinking, const QString &fallbackId,
                                 const QString &upstreamApi) {
    const ReasoningFields f = reasoningFields(thinking, fallbackId, upstreamApi);
    w.beginObject().field("id", f.id).field("type", "reasoning").key("summary").beginArray();
    if (!thinking.text.isEmpty())
        w.beginObject().field("type", "summary_text").field("text", thinking.text).endObject();
    w.endArray();
    if (f.hasEncrypted)
        w.field("encrypted_content", f.encrypted);
    w.endObject();
}

} // namespace sw::wire
