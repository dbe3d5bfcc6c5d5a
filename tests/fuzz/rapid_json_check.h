#pragma once
// The property core/wire/rapid_json promises, checked on one text against Qt's JSON: the same
// texts accepted, and every value read, converted and written the same way. The fuzz target
// fuzz_rapid_json aborts on a difference; the request-body parse tests report it.
#include "core/wire/rapid_json.h"

#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace sw::rjcheck {

namespace rj = sw::wire::rj;
inline constexpr int kMaxSameDepth = 2000;

// The same value as far as anything reads it: Qt's == also compares how a string is stored,
// and Qt stores a string written without escapes with a leading byte order mark that
// toString() and toJson() then drop.
inline bool same(const QJsonValue &a, const QJsonValue &b, int depth = 0) {
    if (a.type() != b.type() || depth > kMaxSameDepth)
        return a.type() == b.type();
    switch (a.type()) {
    case QJsonValue::String:
        return a.toString() == b.toString();
    case QJsonValue::Double:
        return a.toDouble() == b.toDouble() && a.toInteger(-7) == b.toInteger(-7);
    case QJsonValue::Array: {
        const QJsonArray x = a.toArray(), y = b.toArray();
        if (x.size() != y.size())
            return false;
        for (qsizetype i = 0; i < x.size(); ++i)
            if (!same(x.at(i), y.at(i), depth + 1))
                return false;
        return true;
    }
    case QJsonValue::Object: {
        // By name, not by position: see keyOrderAmbiguous().
        const QJsonObject x = a.toObject(), y = b.toObject();
        if (x.size() != y.size())
            return false;
        for (auto i = x.begin(); i != x.end(); ++i) {
            auto j = y.begin();
            while (j != y.end() && j.key() != i.key())
                ++j;
            if (j == y.end() || !same(i.value(), j.value(), depth + 1))
                return false;
        }
        return true;
    }
    default:
        return a == b;
    }
}

// Whether `objectHas` holds for any object in `v`, at any depth (up to kMaxSameDepth).
template <typename Predicate> bool anyObject(const QJsonValue &v, const Predicate &objectHas, int depth = 0) {
    if (depth > kMaxSameDepth)
        return false;
    if (v.isArray()) {
        for (const QJsonValue &e : v.toArray())
            if (anyObject(e, objectHas, depth + 1))
                return true;
        return false;
    }
    if (!v.isObject())
        return false;
    const QJsonObject o = v.toObject();
    if (objectHas(o))
        return true;
    for (auto it = o.begin(); it != o.end(); ++it)
        if (anyObject(it.value(), objectHas, depth + 1))
            return true;
    return false;
}

// Qt's order of an object's members is not one order: its parser sorts names written without
// escapes by code point and names with escapes by UTF-16 unit, and QJsonObject::insert sorts
// by UTF-16 unit. The orders part only between names with units from U+D800 up when one has a
// surrogate (a character past U+FFFF, or a lone one); for such an object any of them is Qt's.
inline bool keyOrderAmbiguous(const QJsonValue &v) {
    return anyObject(v, [](const QJsonObject &o) {
        int wide = 0;           // names with a UTF-16 unit from U+D800 up
        bool surrogate = false; // a name with a surrogate: a character past U+FFFF, or a lone one
        for (auto it = o.begin(); it != o.end(); ++it) {
            bool isWide = false;
            for (const QChar c : it.key()) {
                isWide |= c.unicode() >= 0xD800;
                surrogate |= c.isSurrogate();
            }
            wide += isWide;
        }
        return wide >= 2 && surrogate;
    });
}

// A member whose key() Qt cannot find again (a name read with a leading byte order mark dropped).
inline bool hasHiddenMarkName(const QJsonValue &v) {
    return anyObject(v, [](const QJsonObject &o) {
        for (auto it = o.begin(); it != o.end(); ++it)
            if (o.constFind(it.key()) != it)
                return true;
        return false;
    });
}

// Every read the decoders make, on Qt's value and on ours.
inline const char *compareReads(const QJsonValue &q, const rj::Value *v, int depth) {
    if (q.toString(QStringLiteral("-")) != rj::toString(v, QStringLiteral("-")))
        return "toString";
    if (q.toInteger(-7) != rj::toInteger(v, -7))
        return "toInteger";
    if (q.toInt(-7) != rj::toInt(v, -7))
        return "toInt";
    if (q.toBool(true) != rj::toBool(v, true) || q.isString() != rj::isString(v) || q.isDouble() != rj::isNumber(v))
        return "toBool/isString/isDouble";
    if ((q.isUndefined() || q.isNull()) != rj::isAbsent(v))
        return "isAbsent";
    if (q.toObject().isEmpty() != rj::isEmptyObject(v) || q.toArray().size() != rj::arraySize(v))
        return "object/array size";
    if (depth > 40)
        return nullptr;
    if (q.isObject()) {
        const QJsonObject o = q.toObject();
        QHash<QString, int> uses; // members per name
        for (auto it = o.begin(); it != o.end(); ++it)
            ++uses[it.key()];
        for (auto it = o.begin(); it != o.end(); ++it) {
            // Decoders look names up as Qt does. Qt cannot find a name it read with a leading byte
            // order mark dropped, nor some non-ASCII names where its two orders part (its binary
            // search runs over the other order); decoders look up neither. Where those orders part
            // Qt's parser may also keep two members of one name (its duplicate check runs in its
            // own order), and which one a lookup finds is its search's accident: not compared.
            if (o.constFind(it.key()) != it || it.key().startsWith(QChar(0xFEFF)) || uses.value(it.key()) > 1)
                continue;
            const QByteArray name = rj::toWtf8(it.key()); // may hold NULs
            const QJsonValue qv = o.value(it.key());
            if (const char *what =
                    compareReads(qv, rj::member(v, std::string_view(name.constData(), size_t(name.size()))), depth + 1))
                return what;
        }
    } else if (q.isArray()) {
        const QJsonArray a = q.toArray();
        for (qsizetype i = 0; i < a.size(); ++i)
            if (const char *what = compareReads(a.at(i), &(*v)[rapidjson::SizeType(i)], depth + 1))
                return what;
    }
    return nullptr;
}

// nullptr when ParsedJson reads `input` as QJsonDocument::fromJson does; else what differs.
inline const char *difference(const QByteArray &input) {
    const QJsonDocument qt = QJsonDocument::fromJson(input);
    rj::ParsedJson parsed;
    const bool ok = parsed.parse(input);
    if (ok == qt.isNull())
        return "accepted";
    if (!ok)
        return parsed.root().IsNull() ? nullptr : "root of a refused text";
    const QJsonValue root = qt.isObject() ? QJsonValue(qt.object()) : QJsonValue(qt.array());
    const QJsonValue converted = rj::toQt(&parsed.root());
    const QByteArray qtText = qt.toJson(QJsonDocument::Compact);
    // Qt can hold two members whose key() is the same name (one written with a leading byte
    // order mark that key() drops); no QJsonObject built by insert can, so toQt() keeps one.
    if (!same(converted, root) && !hasHiddenMarkName(root))
        return "toQt";
    // A name written with a leading byte order mark sorts with the mark in Qt's parse and is
    // read (and written) without it: QJsonObject::insert places it elsewhere.
    const bool anyOrder = keyOrderAmbiguous(root) || input.indexOf("\xEF\xBB\xBF", 1) > 0;
    const QByteArray convertedText =
        (converted.isObject() ? QJsonDocument(converted.toObject()) : QJsonDocument(converted.toArray()))
            .toJson(QJsonDocument::Compact);
    if (convertedText != qtText && !anyOrder)
        return "toQt written";
    const QByteArray written = rj::compact(parsed.root());
    if (written != qtText) {
        // Where the order may differ, the text must still read back as Qt's own text reads back
        // (not as the parse: Qt drops a string's leading byte order mark when it reads the text
        // it wrote, which holds the mark unescaped).
        const auto reread = [](const QByteArray &text) {
            const QJsonDocument d = QJsonDocument::fromJson(text);
            return d.isObject() ? QJsonValue(d.object()) : QJsonValue(d.array());
        };
        if (!anyOrder || (!same(reread(written), reread(qtText)) && !hasHiddenMarkName(root)))
            return "compact";
    }
    if (qt.isObject() != (parsed.object() != nullptr))
        return "object";
    return compareReads(root, &parsed.root(), 0);
}

} // namespace sw::rjcheck
