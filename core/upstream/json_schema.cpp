#include "core/upstream/json_schema.h"

#include <QJsonArray>

namespace sw::upstream::json_schema {

namespace {

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

std::optional<QString> findAt(const QJsonValue &value, const QString &path, const NodeCheck &check);

std::optional<QString> findIn(const QJsonObject &node, const char *key, const QString &path, const NodeCheck &check) {
    const QJsonValue v = node.value(L(key));
    if (v.isArray()) {
        const QJsonArray items = v.toArray();
        for (qsizetype i = 0; i < items.size(); ++i)
            if (auto why = findAt(items[i], QStringLiteral("%1.%2[%3]").arg(path, L(key)).arg(i), check))
                return why;
    } else if (v.isObject()) {
        const QJsonObject members = v.toObject();
        for (auto it = members.begin(); it != members.end(); ++it)
            if (auto why = findAt(it.value(), QStringLiteral("%1.%2.%3").arg(path, L(key), it.key()), check))
                return why;
    }
    return std::nullopt;
}

std::optional<QString> findAt(const QJsonValue &value, const QString &path, const NodeCheck &check) {
    if (!value.isObject())
        return QStringLiteral("%1 is not a schema object").arg(path);
    const QJsonObject node = value.toObject();
    if (auto why = check(node, path))
        return why;
    for (const char *key : {"$defs", "definitions"})
        if (auto why = findIn(node, key, path, check))
            return why;
    if (node.contains(L("$ref")))
        return std::nullopt;
    for (const char *key : {"properties", "anyOf", "oneOf", "allOf"})
        if (auto why = findIn(node, key, path, check))
            return why;
    if (const QJsonValue items = node.value(L("items")); items.isObject())
        return findAt(items, path + L(".items"), check);
    return std::nullopt;
}

} // namespace

QSet<QString> requiredNames(const QJsonObject &node) {
    QSet<QString> names;
    for (const QJsonValue &name : node.value(QLatin1String("required")).toArray())
        if (name.isString())
            names.insert(name.toString());
    return names;
}

bool hasType(const QJsonObject &node, const char *type) {
    const QJsonValue t = node.value(L("type"));
    if (t.isArray())
        return t.toArray().contains(QJsonValue(L(type)));
    return t.toString() == L(type);
}

bool constrains(const QJsonObject &node) {
    for (const char *key : {"type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref"})
        if (node.contains(L(key)))
            return true;
    return false;
}

std::optional<QString> findNode(const QJsonObject &schema, const NodeCheck &check) {
    return findAt(schema, QStringLiteral("$"), check);
}

} // namespace sw::upstream::json_schema
