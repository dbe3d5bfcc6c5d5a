#pragma once
// A client's request body parsed into Qt's JSON, faster than QJsonDocument::fromJson.
//
// Coding agents send their whole conversation (50-300 KB) on every turn; Qt's parser builds
// each string with an escape one character at a time, which made parsing the largest cost of a
// request. parseJson() parses with RapidJSON and builds the QJsonObject/QJsonArray from its
// events instead, and gives exactly what QJsonDocument::fromJson gives: the same documents
// accepted, the same values (an integral number is an integer, anything else a double; the
// last of duplicate names counts; members in Qt's order), and for a refused text Qt's own
// error, because every text the fast path is not sure of goes to Qt's parser:
//  - anything RapidJSON refuses (Qt takes some of it: raw control characters and "\q" escapes
//    in strings, "1." and ".5", a leading byte order mark) and anything that is not UTF-8;
//  - nesting deeper than Qt's 1024 levels, a root that is not an object or array, a NUL byte,
//    a number Qt refuses (out of double's range);
//  - a string that starts with a byte order mark, or holds a lone surrogate (from a "\udc00"
//    escape), and a member name with a character from U+D000 up: there Qt's parser stores, or
//    orders, the text in ways a QJsonObject built by insert does not.
// The fast path is iterative: no recursion, whatever the nesting. It is faster only on texts
// whose strings carry escapes (Qt's slow case); parseJson leaves small texts and texts with few
// escapes to Qt's parser, where they are faster.

#include <QByteArray>
#include <QByteArrayView>
#include <QJsonDocument>
#include <QJsonParseError>
#include <optional>

namespace sw::wire {

// QJsonDocument::fromJson(text, error), through the fast path where that is faster.
QJsonDocument parseJson(const QByteArray &text, QJsonParseError *error = nullptr);

// The fast path alone: the document, or nullopt where parseJson hands the text to Qt.
std::optional<QJsonDocument> parseJsonFast(QByteArrayView text);

} // namespace sw::wire
