#include "core/wire/json_parse.h"

#include "core/wire/rapid_json.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QJsonValue>
#include <QLatin1StringView>
#include <QString>
#include <QVarLengthArray>

#include <cstring>
#include <vector>

#include <rapidjson/reader.h>

namespace sw::wire {

namespace {

namespace rj = sw::wire::rj;

// Iterative: nesting costs heap (and stops at Qt's limit), never stack. In place: strings are
// unescaped where they stand in a copy of the text, so a name stays valid until its value is
// built. Numbers as text: converted as Qt's parser converts them (rj::readNumber). UTF-8 is
// checked before the parse, over the whole text (rj::isUtf8), as strictly as Qt checks it.
constexpr unsigned kParseFlags =
    rapidjson::kParseIterativeFlag | rapidjson::kParseInsituFlag | rapidjson::kParseNumbersAsStringsFlag;

bool isAscii(const char *s, size_t n) {
    const char *const end = s + n;
    for (; end - s >= 8; s += 8) {
        quint64 word;
        std::memcpy(&word, s, 8);
        if (word & 0x8080808080808080ULL)
            return false;
    }
    for (; s < end; ++s)
        if (uchar(*s) & 0x80)
            return false;
    return true;
}

// A string value Qt's parser holds as QString::fromUtf8 reads it: not one with a leading byte
// order mark (Qt keeps or drops the mark depending on how the string was written, which the
// unescaped bytes no longer tell) nor one with a lone surrogate ("\udc00", which RapidJSON
// writes as ED B0 80 and fromUtf8 would replace).
bool plainString(const char *s, size_t n) {
    if (n >= 3 && uchar(s[0]) == 0xEF && uchar(s[1]) == 0xBB && uchar(s[2]) == 0xBF)
        return false;
    for (const char *p = s; (p = static_cast<const char *>(std::memchr(p, 0xED, n - size_t(p - s))));) {
        if (p + 1 < s + n && uchar(p[1]) >= 0xA0)
            return false;
        ++p;
    }
    return true;
}

// A member name whose place in a QJsonObject built by insert is the place Qt's parser gives
// it: every character below U+D000 (lead bytes below 0xED). From U+D800 up Qt's parser sorts
// some names by code point and others by UTF-16 unit, and a leading byte order mark is sorted
// with and read without the mark.
bool plainName(const char *s, size_t n) {
    for (const char *end = s + n; s < end; ++s)
        if (uchar(*s) >= 0xED)
            return false;
    return true;
}

QJsonValue stringValue(const char *s, size_t n) {
    if (isAscii(s, n))
        return QJsonValue(QLatin1StringView(s, qsizetype(n)));
    return QJsonValue(QString::fromUtf8(s, qsizetype(n)));
}

// Builds Qt's containers from the reader's events, with an explicit stack of the open ones.
// Returning false stops the parse; the text then goes to Qt.
class Builder {
public:
    Builder() { m_stack.reserve(16); }

    bool Null() { return add(QJsonValue(QJsonValue::Null)); }
    bool Bool(bool b) { return add(QJsonValue(b)); }
    // With numbers as text the reader reports every number through RawNumber.
    bool Int(int) { return false; }
    bool Uint(unsigned) { return false; }
    bool Int64(int64_t) { return false; }
    bool Uint64(uint64_t) { return false; }
    bool Double(double) { return false; }
    bool RawNumber(const char *s, rapidjson::SizeType n, bool) {
        qint64 i = 0;
        double d = 0;
        switch (rj::readNumber(s, n, &i, &d)) {
        case rj::NumberKind::IntegerLiteral:
        case rj::NumberKind::Integral:
            return add(QJsonValue(i));
        case rj::NumberKind::Double:
            return add(QJsonValue(d));
        case rj::NumberKind::Refused:
            break;
        }
        return false;
    }
    bool String(const char *s, rapidjson::SizeType n, bool) { return plainString(s, n) && add(stringValue(s, n)); }
    bool Key(const char *s, rapidjson::SizeType n, bool) {
        if (!plainName(s, n))
            return false;
        Frame &top = m_stack.back();
        top.name = s;
        top.nameLength = n;
        return true;
    }
    bool StartObject() { return open(true); }
    bool EndObject(rapidjson::SizeType) { return close(); }
    bool StartArray() { return open(false); }
    bool EndArray(rapidjson::SizeType) { return close(); }

    QJsonDocument document() const { return m_document; }
    bool done() const { return m_done; }

private:
    struct Frame {
        bool isObject = false;
        QJsonObject object;
        QJsonArray array;
        const char *name = nullptr;
        size_t nameLength = 0;
    };

    bool open(bool isObject) {
        if (m_done || m_stack.size() >= size_t(rj::kMaxDepth)) // past Qt's limit: Qt says why
            return false;
        m_stack.emplace_back().isObject = isObject;
        return true;
    }

    bool close() {
        Frame &top = m_stack.back();
        if (m_stack.size() == 1) {
            m_document = top.isObject ? QJsonDocument(std::move(top.object)) : QJsonDocument(std::move(top.array));
            m_stack.pop_back();
            m_done = true;
            return true;
        }
        QJsonValue value = top.isObject ? QJsonValue(std::move(top.object)) : QJsonValue(std::move(top.array));
        m_stack.pop_back();
        return add(value);
    }

    bool add(const QJsonValue &value) {
        if (m_stack.empty()) // a scalar at the top, which Qt refuses
            return false;
        Frame &top = m_stack.back();
        if (!top.isObject) {
            top.array.append(value);
        } else if (isAscii(top.name, top.nameLength)) {
            // insert() replaces a duplicate: the last one counts, as in Qt's parse.
            top.object.insert(QLatin1StringView(top.name, qsizetype(top.nameLength)), value);
        } else {
            top.object.insert(QString::fromUtf8(top.name, qsizetype(top.nameLength)), value);
        }
        return true;
    }

    std::vector<Frame> m_stack;
    QJsonDocument m_document;
    bool m_done = false;
};

// Whether the fast path is faster for this text. Qt's parser is slow only on strings with
// escapes (it rebuilds them a character at a time) and fast on the rest; building through
// QJsonObject/QJsonArray costs more per string than Qt's parser does. So Qt keeps small texts
// and texts with few escapes (less than one backslash per 4 KiB); a conversation's texts, dense
// with "\n" and "\"", go the fast way. Either way the result is the same.
bool worthTheFastPath(QByteArrayView text) {
    if (text.size() < 512)
        return false;
    const qsizetype wanted = 1 + text.size() / 4096;
    qsizetype found = 0;
    const char *const end = text.data() + text.size();
    for (const char *p = text.data(); (p = static_cast<const char *>(std::memchr(p, '\\', size_t(end - p)))); ++p)
        if (++found >= wanted)
            return true;
    return false;
}

} // namespace

std::optional<QJsonDocument> parseJsonFast(QByteArrayView text) {
    // Qt skips a leading byte order mark and reads some texts with one differently: Qt decides.
    if (text.isEmpty() || !rj::isUtf8(text) || text.startsWith("\xEF\xBB\xBF"))
        return std::nullopt;
    // The copy the parse unescapes in place; the reader's stack from a small pool.
    QVarLengthArray<char, 2048> copy(text.size() + 1);
    std::memcpy(copy.data(), text.data(), size_t(text.size()));
    copy[text.size()] = '\0';
    alignas(std::max_align_t) char first[1024];
    rj::Allocator pool(first, sizeof first);
    rapidjson::GenericReader<rapidjson::UTF8<>, rapidjson::UTF8<>, rj::Allocator> reader(&pool, 256);
    rapidjson::InsituStringStream stream(copy.data());
    Builder builder;
    if (reader.Parse<kParseFlags>(stream, builder).IsError() || !builder.done())
        return std::nullopt;
    // A NUL byte ends RapidJSON's input where Qt sees more text.
    if (stream.Tell() != size_t(text.size()))
        return std::nullopt;
    return builder.document();
}

QJsonDocument parseJson(const QByteArray &text, QJsonParseError *error) {
    if (std::optional<QJsonDocument> doc = worthTheFastPath(text) ? parseJsonFast(text) : std::nullopt) {
        if (error) {
            error->offset = 0;
            error->error = QJsonParseError::NoError;
        }
        return *std::move(doc);
    }
    return QJsonDocument::fromJson(text, error);
}

} // namespace sw::wire
