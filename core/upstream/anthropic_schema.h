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

// A tool's input schema as Messages takes it (structured outputs or not): Messages refuses one
// that is not an object schema at the top (400 "input_schema does not support oneOf, allOf, or anyOf
// at the top level"), which MCP servers and zod unions publish readily and Gemini and OpenAI take.
// A top-level combinator's object branches are merged into the one object (every branch's
// properties; required, what allOf's branches require and what every branch of anyOf / oneOf
// requires), and the combinator itself stays in the schema's description as "{oneOf: [...]}" so the
// model still reads the choice; a schema that names no type gets `type: object`. `widened` says
// whether a combinator was merged: the schema then allows more than the client's, so it cannot go
// as a strict tool, whose inputs would follow the wider schema.
QJsonObject toolInput(const QJsonObject &schema, bool *widened = nullptr);

// The first of the top-level property names of a tool input schema as toolInput() gives it (its
// own and its top-level combinator's branches') that Messages refuses (400 "Property keys should
// match pattern '^[a-zA-Z0-9_.-]{1,64}$'": "filter[id]", "Account Number"), or nothing. Only the
// top level is checked, as Messages does.
std::optional<QString> refusedPropertyName(const QJsonObject &schema);

// Why Messages cannot take `schema` in any shape, or nothing when shape() gives a form it takes.
std::optional<QString> unsupported(const QJsonObject &schema);

// The schema as Messages' structured outputs take it.
QJsonObject shape(const QJsonObject &schema);

// Messages compiles every strict schema of a request (the strict tools' and output_config.format)
// into one grammar, within limits it sets on the request as a whole; past one it refuses the
// request with a 400 ("Schema is too complex for compilation"). Anthropic's structured-outputs
// documentation: at most 20 strict tools, and across all strict schemas at most 24 optional
// parameters (each property not in its object's `required`, at every depth) and 16 parameters of
// a union type (`anyOf` or a type array, `["string", "null"]` included).
constexpr int kMaxStrictTools = 20;
constexpr int kMaxOptionalParameters = 24;
constexpr int kMaxUnionParameters = 16;

// What one strict schema (as shape() gives it) spends of those request-wide limits.
struct Complexity {
    int optionalParameters = 0;
    int unionParameters = 0;
    Complexity &operator+=(const Complexity &o) {
        optionalParameters += o.optionalParameters;
        unionParameters += o.unionParameters;
        return *this;
    }
    bool withinLimits() const {
        return optionalParameters <= kMaxOptionalParameters && unionParameters <= kMaxUnionParameters;
    }
};
Complexity complexity(const QJsonObject &schema);

} // namespace sw::upstream::anthropic_schema
