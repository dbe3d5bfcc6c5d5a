#include "core/upstream/openai_schema.h"

#include "core/upstream/json_schema.h"

#include <QJsonArray>
#include <QStringList>

#include <algorithm>

namespace sw::upstream::openai_schema {

namespace {

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

// The keywords OpenAI's structured-outputs guide lists as supported in strict mode.
bool supportedKeyword(const QString &key) {
    static const QStringList keywords{L("type"),
                                      L("properties"),
                                      L("required"),
                                      L("additionalProperties"),
                                      L("items"),
                                      L("enum"),
                                      L("const"),
                                      L("anyOf"),
                                      L("$ref"),
                                      L("$defs"),
                                      L("definitions"),
                                      L("description"),
                                      L("title"),
                                      L("pattern"),
                                      L("format"),
                                      L("minimum"),
                                      L("maximum"),
                                      L("exclusiveMinimum"),
                                      L("exclusiveMaximum"),
                                      L("multipleOf"),
                                      L("minItems"),
                                      L("maxItems")};
    return keywords.contains(key);
}

// The string formats it lists.
bool supportedFormat(const QString &format) {
    static const QStringList formats{L("date-time"), L("time"), L("date"), L("duration"), L("email"),
                                     L("hostname"),  L("ipv4"), L("ipv6"), L("uuid")};
    return formats.contains(format);
}

bool supportedType(const QJsonValue &type) {
    static const QStringList types{L("string"), L("number"), L("integer"), L("boolean"),
                                   L("object"), L("array"),  L("null")};
    if (type.isString())
        return types.contains(type.toString());
    if (!type.isArray() || type.toArray().isEmpty())
        return false;
    const QJsonArray all = type.toArray();
    return std::all_of(all.begin(), all.end(),
                       [](const QJsonValue &t) { return t.isString() && types.contains(t.toString()); });
}

std::optional<QString> refusalAt(const QJsonObject &node, const QString &path) {
    for (auto it = node.begin(); it != node.end(); ++it)
        if (!supportedKeyword(it.key()))
            return QStringLiteral("%1 says `%2`").arg(path, it.key());
    if (node.contains(L("$ref"))) {
        // OpenAI reads a reference alone (its SDKs inline the referenced schema to add a description).
        for (auto it = node.begin(); it != node.end(); ++it)
            if (it.key() != L("$ref") && it.key() != L("$defs") && it.key() != L("definitions"))
                return QStringLiteral("%1 has `%2` beside its `$ref`").arg(path, it.key());
        return std::nullopt;
    }
    if (!json_schema::constrains(node))
        return QStringLiteral("%1 allows any value").arg(path);
    if (node.contains(L("type")) && !supportedType(node.value(L("type"))))
        return QStringLiteral("%1 has a type strict mode does not know").arg(path);
    if (const QJsonValue format = node.value(L("format")); !format.isUndefined() && !supportedFormat(format.toString()))
        return QStringLiteral("%1 has the format %2").arg(path, format.toString());
    if (node.contains(L("items")) && !node.value(L("items")).isObject())
        return QStringLiteral("%1 has items that are not one schema").arg(path);
    if (!json_schema::hasType(node, "object") && !node.contains(L("properties")))
        return std::nullopt;
    if (!node.value(L("properties")).isObject())
        return QStringLiteral("%1 is an object without properties").arg(path);
    if (node.value(L("additionalProperties")) != QJsonValue(false))
        return QStringLiteral("%1 is an object without additionalProperties: false").arg(path);
    const QJsonObject properties = node.value(L("properties")).toObject();
    const QSet<QString> required = json_schema::requiredNames(node);
    for (auto it = properties.begin(); it != properties.end(); ++it)
        if (!required.contains(it.key()))
            return QStringLiteral("%1.properties.%2 is optional").arg(path, it.key());
    return std::nullopt;
}

} // namespace

std::optional<QString> strictRefusal(const QJsonObject &schema) {
    if (schema.value(L("type")) != QJsonValue(L("object")))
        return QStringLiteral("$ is not an object");
    return json_schema::findNode(schema, refusalAt);
}

} // namespace sw::upstream::openai_schema
