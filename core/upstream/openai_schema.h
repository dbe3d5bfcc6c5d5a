#pragma once
// JSON Schemas for OpenAI's strict mode (Chat `response_format` / a function's `strict`, Responses
// `text.format` / a function tool's `strict`).
//
// Strict mode compiles a schema and refuses the request with a 400 unless every object lists every
// one of its properties in `required` and says `additionalProperties: false`, the root is an object,
// and the schema keeps to the subset OpenAI's structured-outputs guide lists (no `allOf`, `oneOf`,
// `not`, `if`, `default`, nothing beside a `$ref`, …). Messages' structured outputs take optional
// properties (Anthropic's own zodOutputFormat makes them), and its strict tools too: such a schema
// goes to OpenAI with `strict: false` as it is. It is never made "all required, optional ones
// nullable" as OpenAI's SDKs make theirs: the model would write nulls the client's own validator
// refuses (formats/translation_rules.md).

#include "core/wire/api.h"

#include <QJsonObject>
#include <QString>
#include <optional>

namespace sw::upstream::openai_schema {

// Why OpenAI's strict mode would refuse `schema`, or nothing when it takes it as it is.
std::optional<QString> strictRefusal(const QJsonObject &schema);

// What a converted request tells OpenAI of a schema the client asked to be strict about (`asked`),
// from a client of `source`: a Chat or Responses client wrote it for this strict mode, which judges
// it as it would have without the gateway (the keyword list here is the guide's, narrower than what
// OpenAI may take); another API's client gets strict only where strict mode takes its schema.
inline bool strict(bool asked, const QJsonObject &schema, wire::Api source) {
    if (source == wire::Api::OpenAICompletions || source == wire::Api::OpenAIResponses)
        return asked;
    return asked && !strictRefusal(schema);
}

} // namespace sw::upstream::openai_schema
