#pragma once
// One walk over a JSON Schema's nodes, for the checks each API's strict mode asks of a schema
// (upstream/anthropic_schema.h for Messages, upstream/openai_schema.h for Chat and Responses).

#include <QJsonObject>
#include <QJsonValue>
#include <QSet>
#include <QString>
#include <functional>
#include <optional>

namespace sw::upstream::json_schema {

// Whether `node` says `type` is `type`, alone or in a type array.
bool hasType(const QJsonObject &node, const char *type);

// The names `node`'s `required` lists, as a set: a schema of N properties is judged in N lookups, not
// N scans of the list (a strict schema of thousands of required properties froze the engine thread).
QSet<QString> requiredNames(const QJsonObject &node);

// Whether `node` says what a value may be (type, enum, const, a composition or a reference); a
// node with none of them allows any value.
bool constrains(const QJsonObject &node);

// What a check finds wrong with one node ("$.properties.city allows any value"), or nothing.
using NodeCheck = std::function<std::optional<QString>(const QJsonObject &node, const QString &path)>;

// `check` on every node of `schema`, the root ("$") first, until one is found wrong: the members
// of `$defs`, `definitions` and `properties`, the entries of `anyOf`, `oneOf` and `allOf`, and an
// `items` schema. A node with a `$ref` is read alone (what sits beside a reference is the
// referenced schema's to say): only its `$defs` / `definitions` are walked. A subschema that is not
// an object (`true`, `false`) is found wrong as such; `items` given as an array is the check's to
// judge.
std::optional<QString> findNode(const QJsonObject &schema, const NodeCheck &check);

} // namespace sw::upstream::json_schema
