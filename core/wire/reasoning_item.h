#pragma once
// The OpenAI Responses reasoning item: what a client of that API gets in an answer and
// what an upstream of that API gets back in the next turn's input.

#include "core/model/chat.h"

#include <QJsonObject>
#include <QString>

namespace sw::wire {

class JsonWriter;

// A thinking block as a Responses reasoning item. A block whose signature is a whole
// reasoning item (decoded from this API) keeps its id and encrypted_content; any other
// signature is dropped, except in an answer (`upstreamApi` = the API that made it), where
// another API's signature goes in encrypted_content tagged with its maker
// (model::tagSignature) so only that API ever receives it back.
QJsonObject responsesReasoningItem(const model::ContentBlock &thinking, const QString &fallbackId,
                                   const QString &upstreamApi = {});
// The same item written into an answer: {id, type, summary, encrypted_content?}.
void writeResponsesReasoningItem(JsonWriter &w, const model::ContentBlock &thinking, const QString &fallbackId,
                                 const QString &upstreamApi = {});

} // namespace sw::wire
