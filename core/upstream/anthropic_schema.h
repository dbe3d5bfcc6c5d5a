#pragma once
// JSON Schemas for Anthropic's structured outputs (output_config.format and strict tools).
//
// Messages compiles such a schema into a grammar and accepts only a subset of JSON Schema: every
// object must say `additionalProperties: false`; numeric, string-length and most array bounds are
// refused with a 400 (e.g. "For 'integer' type, property 'minimum' is not supported"). OpenAI's
// non-strict schemas and Gemini's rarely fit. A schema translated from another API is shaped the
// way Anthropic's own SDKs shape one: every object closed, the keywords Messages cannot compile
// moved into the node's description as "{keyword: value}" so the model still reads them.
//
// Closing an object only narrows what the model may write, so an answer stays valid for the
// client's schema. A node that means "any object" or "any value" cannot be narrowed that way (it
// would only ever allow `{}`): such a schema has no Messages form, and the candidate is
// incompatible instead (formats/translation_rules.md).

#include <QJsonObject>
#include <QString>
#include <optional>

namespace sw::upstream::anthropic_schema {

// Why Messages cannot take `schema` in any shape, or nothing when shape() gives a form it takes.
std::optional<QString> unsupported(const QJsonObject &schema);

// The schema as Messages' structured outputs take it.
QJsonObject shape(const QJsonObject &schema);

} // namespace sw::upstream::anthropic_schema
