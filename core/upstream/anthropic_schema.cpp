#include "core/upstream/anthropic_schema.h"
#include "core/upstream/json_schema.h"

#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSet>
#include <QStringList>
#include <algorithm>

namespace sw::upstream::anthropic_schema {

namespace {

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

// String formats Messages compiles (Anthropic's structured-outputs documentation).
bool supportedFormat(const QString &format) {
    static const QStringList formats{L("date-time"), L("time"), L("date"), L("duration"), L("email"),
                                     L("hostname"),  L("uri"),  L("ipv4"), L("ipv6"),     L("uuid")};
    return formats.contains(format);
}

using json_schema::hasType;

QJsonValue shapeValue(const QJsonValue &value);

QJsonArray shapeAll(const QJsonArray &schemas) {
    QJsonArray out;
    for (const QJsonValue &s : schemas)
        out.append(shapeValue(s));
    return out;
}

QJsonObject shapeMembers(const QJsonObject &schemas) {
    QJsonObject out;
    for (auto it = schemas.begin(); it != schemas.end(); ++it)
        out.insert(it.key(), shapeValue(it.value()));
    return out;
}

QJsonValue shapeValue(const QJsonValue &value) {
    return value.isObject() ? QJsonValue(shape(value.toObject())) : value;
}

// A value as compact JSON, a string with its quotes.
QString compactJson(const QJsonValue &v) {
    const QByteArray json = v.isObject() ? QJsonDocument(v.toObject()).toJson(QJsonDocument::Compact)
                            : v.isArray()
                                ? QJsonDocument(v.toArray()).toJson(QJsonDocument::Compact)
                                : QJsonDocument(QJsonArray{v}).toJson(QJsonDocument::Compact).mid(1).chopped(1);
    return QString::fromUtf8(json);
}

// The schema a local reference names ("#/$defs/A", "#/definitions/A" of `root`), or `node` itself.
QJsonObject resolved(const QJsonObject &node, const QJsonObject &root) {
    const QString ref = node.value(L("$ref")).toString();
    for (const char *defs : {"$defs", "definitions"}) {
        const QString prefix = QStringLiteral("#/%1/").arg(QLatin1String(defs));
        if (ref.startsWith(prefix))
            if (const QJsonValue v = root.value(QLatin1String(defs)).toObject().value(ref.mid(prefix.size()));
                v.isObject())
                return v.toObject();
    }
    return node;
}

bool propertyNameChar(QChar c) {
    return (c >= QLatin1Char('a') && c <= QLatin1Char('z')) || (c >= QLatin1Char('A') && c <= QLatin1Char('Z')) ||
           (c >= QLatin1Char('0') && c <= QLatin1Char('9')) || c == QLatin1Char('_') || c == QLatin1Char('.') ||
           c == QLatin1Char('-');
}

} // namespace

QJsonObject toolInput(const QJsonObject &schema, bool *widened) {
    QJsonObject out = schema;
    out.insert(L("type"), L("object"));
    QJsonObject properties = out.value(L("properties")).toObject();
    // Every "seen before?" below is a hash lookup: a branch costs its own size, never the number of
    // branches before it. A linear search per branch held the engine thread, and every tenant's
    // request with it, for minutes on one schema of 50 000 branches (probe X2-F1).
    QStringList required;
    QSet<QString> requiredSet;
    const auto require = [&required, &requiredSet](const QString &name) {
        if (!requiredSet.contains(name)) {
            requiredSet.insert(name);
            required << name;
        }
    };
    for (const QJsonValue &name : out.value(L("required")).toArray())
        if (name.isString())
            require(name.toString());
    // Each property's schemas, in the order the branches give them, each once (told apart by
    // their compact JSON).
    struct Variants {
        QJsonArray schemas;
        QSet<QString> seen;
    };
    QHash<QString, Variants> variants;
    QStringList words;
    for (const char *combinator : {"allOf", "anyOf", "oneOf"}) {
        const QJsonValue branches = out.take(L(combinator));
        if (branches.isUndefined())
            continue;
        words << QLatin1String(combinator) + L(": ") + compactJson(branches);
        const bool every = qstrcmp(combinator, "allOf") == 0;
        std::optional<QStringList> common; // what every branch of anyOf / oneOf requires
        for (const QJsonValue &value : branches.toArray()) {
            const QJsonObject branch = resolved(value.toObject(), schema);
            const QJsonObject members = branch.value(L("properties")).toObject();
            for (auto it = members.begin(); it != members.end(); ++it) {
                if (properties.contains(it.key()))
                    continue; // the schema's own word on it holds in every branch
                Variants &v = variants[it.key()];
                const qsizetype before = v.seen.size();
                v.seen.insert(compactJson(it.value()));
                if (v.seen.size() != before)
                    v.schemas.append(it.value());
            }
            QStringList names;
            for (const QJsonValue &name : branch.value(L("required")).toArray())
                if (name.isString())
                    names << name.toString();
            if (every) {
                for (const QString &name : std::as_const(names))
                    require(name);
            } else if (!common) {
                common = names;
            } else {
                // What is still common is within the previous branch's names: this costs no more
                // than the branches' own lists.
                const QSet<QString> inBranch(names.cbegin(), names.cend());
                common->removeIf([&inBranch](const QString &name) { return !inBranch.contains(name); });
            }
        }
        for (const QString &name : common.value_or(QStringList()))
            require(name);
    }
    if (widened)
        *widened = !words.isEmpty();
    if (words.isEmpty())
        return out;
    // In key order: a QJsonObject keeps its keys sorted, and each key inserted before the last
    // moves every key after it.
    QStringList merged = variants.keys();
    std::sort(merged.begin(), merged.end());
    for (const QString &name : std::as_const(merged)) {
        const QJsonArray &schemas = variants.constFind(name)->schemas;
        properties.insert(name, schemas.size() == 1 ? schemas.first() : QJsonValue(QJsonObject{{L("anyOf"), schemas}}));
    }
    out.insert(L("properties"), properties);
    if (!required.isEmpty())
        out.insert(L("required"), QJsonArray::fromStringList(required));
    const QString description = out.value(L("description")).toString();
    out.insert(L("description"),
               (description.isEmpty() ? QString() : description + L("\n\n")) + L("{") + words.join(L(", ")) + L("}"));
    return out;
}

std::optional<QString> refusedPropertyName(const QJsonObject &schema) {
    // The names toolInput() gives the top level, read where they are rather than merged: this runs
    // for every tool of every request an Anthropic candidate is weighed for.
    const auto refused = [](const QJsonObject &node) -> std::optional<QString> {
        const QJsonObject properties = node.value(L("properties")).toObject();
        for (auto it = properties.begin(); it != properties.end(); ++it)
            if (const QString &name = it.key();
                name.isEmpty() || name.size() > 64 || !std::all_of(name.begin(), name.end(), propertyNameChar))
                return name;
        return std::nullopt;
    };
    if (const auto name = refused(schema))
        return name;
    for (const char *combinator : {"allOf", "anyOf", "oneOf"})
        for (const QJsonValue &branch : schema.value(L(combinator)).toArray())
            if (const auto name = refused(resolved(branch.toObject(), schema)))
                return name;
    return std::nullopt;
}

std::optional<QString> unsupported(const QJsonObject &schema) {
    const auto why = json_schema::findNode(schema, [](const QJsonObject &node, const QString &path) {
        if (node.contains(L("$ref")))
            return std::optional<QString>(); // Messages reads a reference alone (shape())
        if (!json_schema::constrains(node))
            return std::optional(QStringLiteral("%1 allows any value").arg(path));
        if (hasType(node, "object") && node.value(L("properties")).toObject().isEmpty() &&
            node.value(L("additionalProperties")) != QJsonValue(false))
            return std::optional(QStringLiteral("%1 is an object of any members").arg(path));
        return std::optional<QString>();
    });
    if (why)
        return QStringLiteral("the schema's node %1, which structured outputs there cannot express").arg(*why);
    return std::nullopt;
}

Complexity complexity(const QJsonObject &schema) {
    Complexity c;
    json_schema::findNode(schema, [&c](const QJsonObject &node, const QString &) {
        const QJsonObject properties = node.value(L("properties")).toObject();
        const QSet<QString> required = json_schema::requiredNames(node);
        for (auto it = properties.begin(); it != properties.end(); ++it) {
            if (!required.contains(it.key()))
                ++c.optionalParameters;
            const QJsonObject parameter = it.value().toObject();
            if (parameter.contains(L("anyOf")) || parameter.value(L("type")).isArray())
                ++c.unionParameters;
        }
        return std::optional<QString>();
    });
    return c;
}

QJsonObject shape(const QJsonObject &schema) {
    QJsonObject rest = schema;
    QJsonObject out;
    const auto take = [&rest](const char *key) { return rest.take(L(key)); };
    // Annotations that change nothing the model writes.
    for (const char *key : {"$schema", "$id", "$comment"})
        take(key);
    for (const char *key : {"$defs", "definitions"})
        if (const QJsonValue defs = take(key); defs.isObject())
            out.insert(L(key), shapeMembers(defs.toObject()));
    if (const QJsonValue ref = take("$ref"); !ref.isUndefined()) {
        // Messages reads a reference alone; what sits beside it is the referenced schema's to say.
        out.insert(L("$ref"), ref);
        return out;
    }
    for (const char *key : {"type", "enum", "const", "description", "title", "required"})
        if (const QJsonValue v = take(key); !v.isUndefined())
            out.insert(L(key), v);
    if (const QJsonValue anyOf = take("anyOf"); anyOf.isArray())
        out.insert(L("anyOf"), shapeAll(anyOf.toArray()));
    // One of: Messages has no exclusive choice; any of the same schemas holds every answer oneOf does.
    if (const QJsonValue oneOf = take("oneOf"); oneOf.isArray())
        out.insert(L("anyOf"), shapeAll(oneOf.toArray()));
    if (const QJsonValue allOf = take("allOf"); allOf.isArray())
        out.insert(L("allOf"), shapeAll(allOf.toArray()));
    if (hasType(schema, "object") || schema.contains(L("properties"))) {
        out.insert(L("properties"), shapeMembers(take("properties").toObject()));
        take("additionalProperties");
        out.insert(L("additionalProperties"), false);
    }
    if (const QJsonValue format = rest.value(L("format")); format.isString() && supportedFormat(format.toString()))
        out.insert(L("format"), take("format"));
    if (const QJsonValue items = rest.value(L("items")); items.isObject())
        out.insert(L("items"), shape(take("items").toObject()));
    if (const QJsonValue minItems = rest.value(L("minItems")); minItems == QJsonValue(0) || minItems == QJsonValue(1))
        out.insert(L("minItems"), take("minItems"));
    if (rest.isEmpty())
        return out;
    // What Messages cannot compile stays in the words the model reads, as Anthropic's SDKs put it.
    QStringList words;
    for (auto it = rest.begin(); it != rest.end(); ++it) {
        words << it.key() + L(": ") + compactJson(it.value());
    }
    const QString description = out.value(L("description")).toString();
    out.insert(L("description"),
               (description.isEmpty() ? QString() : description + L("\n\n")) + L("{") + words.join(L(", ")) + L("}"));
    return out;
}

} // namespace sw::upstream::anthropic_schema
