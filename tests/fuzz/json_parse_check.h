#pragma once
// The property sw::wire::parseJson promises, checked on one text: the result is the one
// QJsonDocument::fromJson gives. Shared by the fuzz target fuzz_json_parse and the unit test
// test_json_parse (which runs it over every corpus file and fixture).

#include "core/wire/json_parse.h"

#include <QByteArray>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonParseError>
#include <QJsonValue>
#include <QString>
#include <QVariant>
#include <cstring>

namespace sw::jsoncheck {

// Type by type, member by member in storage order: Qt's == takes an integer and a double of
// the same value as equal, and toJson writes 100 and 100.0 alike; a decoder reading
// toInteger() or toVariant() would tell them apart. Qt's parse nests at most 1024 levels, so
// the recursion is bounded.
inline bool sameTree(const QJsonValue &a, const QJsonValue &b) {
    if (a.type() != b.type())
        return false;
    switch (a.type()) {
    case QJsonValue::Double: {
        const QVariant x = a.toVariant(), y = b.toVariant();
        if (x.typeId() != y.typeId())
            return false;
        if (x.typeId() == QMetaType::Double) {
            const double dx = a.toDouble(), dy = b.toDouble();
            return std::memcmp(&dx, &dy, sizeof dx) == 0;
        }
        return a.toInteger() == b.toInteger();
    }
    case QJsonValue::String:
        return a.toString() == b.toString();
    case QJsonValue::Bool:
        return a.toBool() == b.toBool();
    case QJsonValue::Array: {
        const QJsonArray x = a.toArray(), y = b.toArray();
        if (x.size() != y.size())
            return false;
        for (qsizetype i = 0; i < x.size(); ++i)
            if (!sameTree(x.at(i), y.at(i)))
                return false;
        return true;
    }
    case QJsonValue::Object: {
        const QJsonObject x = a.toObject(), y = b.toObject();
        if (x.size() != y.size())
            return false;
        for (auto i = x.begin(), j = y.begin(); i != x.end(); ++i, ++j)
            if (i.key() != j.key() || !sameTree(i.value(), j.value()))
                return false;
        // A decoder's lookup by name finds the same member in both.
        for (auto i = x.begin(); i != x.end(); ++i)
            if (x.constFind(i.key()) - x.constBegin() != y.constFind(i.key()) - y.constBegin())
                return false;
        return true;
    }
    default:
        return true;
    }
}

// Empty when `ours` (a document, or nullopt for a text refused with `ourError`) is what
// QJsonDocument::fromJson gives for `text`; else what differs.
inline const char *differenceFromQt(const QByteArray &text, const QJsonDocument &ours,
                                    const QJsonParseError &ourError) {
    QJsonParseError qtError{};
    qtError.offset = -5;
    const QJsonDocument qt = QJsonDocument::fromJson(text, &qtError);
    if (qtError.error != ourError.error || qtError.offset != ourError.offset)
        return "parse error or offset";
    if (qtError.errorString() != ourError.errorString())
        return "error string";
    if (qt.isNull() != ours.isNull() || qt.isObject() != ours.isObject() || qt.isArray() != ours.isArray())
        return "kind of document";
    if (!(qt == ours))
        return "QJsonDocument ==";
    if (qt.toJson(QJsonDocument::Compact) != ours.toJson(QJsonDocument::Compact))
        return "toJson(Compact)";
    const QJsonValue qtRoot = qt.isObject() ? QJsonValue(qt.object()) : QJsonValue(qt.array());
    const QJsonValue ourRoot = ours.isObject() ? QJsonValue(ours.object()) : QJsonValue(ours.array());
    if (!qt.isNull() && !sameTree(qtRoot, ourRoot))
        return "types or members";
    return "";
}

// Empty when parseJson(text), and the fast path alone where it takes the text, give what
// QJsonDocument::fromJson(text) gives; else what differs.
inline const char *difference(const QByteArray &text) {
    QJsonParseError ourError{};
    ourError.offset = -5;
    const QJsonDocument ours = sw::wire::parseJson(text, &ourError);
    if (const char *what = differenceFromQt(text, ours, ourError); *what)
        return what;
    if (const std::optional<QJsonDocument> fast = sw::wire::parseJsonFast(text)) {
        QJsonParseError none{};
        none.offset = 0;
        none.error = QJsonParseError::NoError;
        if (const char *what = differenceFromQt(text, *fast, none); *what)
            return what;
    }
    return "";
}

} // namespace sw::jsoncheck
