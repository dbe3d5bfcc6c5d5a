#include "core/wire/json_writer.h"

#include <rapidjson/internal/dtoa.h>
#include <rapidjson/internal/itoa.h>

#include <QVarLengthArray>

#include <algorithm>
#include <cmath>
#include <limits>

namespace sw::wire {

namespace {

constexpr char kHex[] = "0123456789abcdef";

char *escapeUnit(char *d, char16_t c) {
    *d++ = '\\';
    switch (c) {
    case u'"':
        *d++ = '"';
        return d;
    case u'\\':
        *d++ = '\\';
        return d;
    case u'\b':
        *d++ = 'b';
        return d;
    case u'\f':
        *d++ = 'f';
        return d;
    case u'\n':
        *d++ = 'n';
        return d;
    case u'\r':
        *d++ = 'r';
        return d;
    case u'\t':
        *d++ = 't';
        return d;
    default:
        break;
    }
    *d++ = 'u';
    *d++ = kHex[(c >> 12) & 0xf];
    *d++ = kHex[(c >> 8) & 0xf];
    *d++ = kHex[(c >> 4) & 0xf];
    *d++ = kHex[c & 0xf];
    return d;
}

// Escaped UTF-8 of the units [*p, chunkEnd) written at d, which has room for 6 bytes per
// unit. A surrogate pair that starts before chunkEnd is read whole (its low half may lie
// beyond chunkEnd, up to end): 4 bytes for 2 units, within the room of one.
// `wellFormed`: a lone surrogate is U+FFFD (JsonWriter::setWellFormedText).
char *escapeChunk(char *d, const char16_t *&p, const char16_t *chunkEnd, const char16_t *end, bool wellFormed) {
    const char16_t *s = p;
    while (s < chunkEnd) {
        const char16_t c = *s++;
        if (c < 0x80) {
            if (c < 0x20 || c == u'"' || c == u'\\')
                d = escapeUnit(d, c);
            else
                *d++ = char(c);
        } else if (c < 0x800) {
            *d++ = char(0xc0 | (c >> 6));
            *d++ = char(0x80 | (c & 0x3f));
        } else if (c >= 0xd800 && c <= 0xdfff) {
            if (c < 0xdc00 && s < end && *s >= 0xdc00 && *s <= 0xdfff) {
                const char32_t u = 0x10000 + ((char32_t(c) - 0xd800) << 10) + (char32_t(*s++) - 0xdc00);
                *d++ = char(0xf0 | (u >> 18));
                *d++ = char(0x80 | ((u >> 12) & 0x3f));
                *d++ = char(0x80 | ((u >> 6) & 0x3f));
                *d++ = char(0x80 | (u & 0x3f));
            } else if (wellFormed) {
                *d++ = char(0xef); // U+FFFD
                *d++ = char(0xbf);
                *d++ = char(0xbd);
            } else {
                d = escapeUnit(d, c); // lone surrogate: no UTF-8 form
            }
        } else {
            *d++ = char(0xe0 | (c >> 12));
            *d++ = char(0x80 | ((c >> 6) & 0x3f));
            *d++ = char(0x80 | (c & 0x3f));
        }
    }
    p = s;
    return d;
}

// A key literal is written byte for byte when it is printable ASCII without quote or backslash.
bool plainAscii(QLatin1String s) {
    for (char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\')
            return false;
    }
    return true;
}

} // namespace

void JsonWriter::grow(qsizetype n) {
    const qsizetype used = size();
    const qsizetype capacity = std::max({used + n, m_out.size() * 2, qsizetype(64)});
    m_out.resize(capacity);
    m_cur = m_out.data() + used;
    m_end = m_out.data() + capacity;
}

QByteArray JsonWriter::take() {
    m_out.resize(size());
    QByteArray out = std::move(m_out);
    m_out = QByteArray();
    m_cur = m_end = nullptr;
    m_needComma = false;
    return out;
}

void JsonWriter::writeString(QStringView s) {
    const char16_t *p = s.utf16();
    const char16_t *const end = p + s.size();
    // Converted in chunks into room for the worst case (6 bytes per unit, "\uXXXX"), so the
    // loop has no per-character bounds check and a long string never reserves six times its size.
    constexpr qsizetype kChunk = 512;
    ensure(2 + std::min<qsizetype>(s.size(), kChunk) * 6);
    *m_cur++ = '"';
    while (p < end) {
        const qsizetype n = std::min<qsizetype>(end - p, kChunk);
        ensure(n * 6 + 1);
        m_cur = escapeChunk(m_cur, p, p + n, end, m_wellFormed);
    }
    put('"');
}

JsonWriter &JsonWriter::beginObject() {
    separator();
    put('{');
    ++m_depth;
    m_needComma = false;
    return *this;
}

JsonWriter &JsonWriter::endObject() {
    put('}');
    --m_depth;
    m_needComma = true;
    return *this;
}

JsonWriter &JsonWriter::beginArray() {
    separator();
    put('[');
    ++m_depth;
    m_needComma = false;
    return *this;
}

JsonWriter &JsonWriter::endArray() {
    put(']');
    --m_depth;
    m_needComma = true;
    return *this;
}

JsonWriter &JsonWriter::key(QLatin1String name) {
    separator();
    if (plainAscii(name)) {
        ensure(name.size() + 3);
        *m_cur++ = '"';
        if (!name.isEmpty()) // an empty string may have no data pointer
            memcpy(m_cur, name.data(), size_t(name.size()));
        m_cur += name.size();
        *m_cur++ = '"';
        *m_cur++ = ':';
    } else {
        writeString(QString(name));
        put(':');
    }
    m_needComma = false;
    return *this;
}

JsonWriter &JsonWriter::key(QStringView name) {
    separator();
    writeString(name);
    put(':');
    m_needComma = false;
    return *this;
}

JsonWriter &JsonWriter::value(QStringView s) {
    separator();
    writeString(s);
    m_needComma = true;
    return *this;
}

JsonWriter &JsonWriter::value(QLatin1String s) {
    separator();
    if (plainAscii(s)) {
        ensure(s.size() + 2);
        *m_cur++ = '"';
        if (!s.isEmpty()) // an empty string may have no data pointer
            memcpy(m_cur, s.data(), size_t(s.size()));
        m_cur += s.size();
        *m_cur++ = '"';
    } else {
        writeString(QString(s));
    }
    m_needComma = true;
    return *this;
}

JsonWriter &JsonWriter::value(qint64 n) {
    separator();
    ensure(24);
    m_cur = rapidjson::internal::i64toa(n, m_cur);
    m_needComma = true;
    return *this;
}

JsonWriter &JsonWriter::value(double d) {
    if (!std::isfinite(d))
        return null();
    // Integral values within the exact range of a double are written as integers, as Qt writes them.
    constexpr double kExact = 9007199254740992.0; // 2^53
    if (d == std::floor(d) && std::fabs(d) <= kExact)
        return value(qint64(d));
    separator();
    ensure(32);
    m_cur = rapidjson::internal::dtoa(d, m_cur);
    m_needComma = true;
    return *this;
}

JsonWriter &JsonWriter::boolean(bool b) {
    separator();
    put(b ? QByteArrayView("true") : QByteArrayView("false"));
    m_needComma = true;
    return *this;
}

JsonWriter &JsonWriter::null() {
    separator();
    put(QByteArrayView("null"));
    m_needComma = true;
    return *this;
}

JsonWriter &JsonWriter::value(const QJsonValue &v) {
    writeEmbedded(v, m_depth);
    return *this;
}

JsonWriter &JsonWriter::value(const QJsonObject &o) {
    writeEmbedded(o, m_depth);
    return *this;
}

JsonWriter &JsonWriter::value(const QJsonArray &a) {
    writeEmbedded(a, m_depth);
    return *this;
}

JsonWriter &JsonWriter::objectWith(const QJsonObject &o,
                                   std::initializer_list<std::pair<QLatin1String, QStringView>> fields) {
    if (m_depth >= kMaxDepth)
        return null();
    QVarLengthArray<bool, 8> written(qsizetype(fields.size()));
    std::fill(written.begin(), written.end(), false);
    beginObject();
    for (auto it = o.constBegin(); it != o.constEnd(); ++it) {
        const QString name = it.key();
        key(QStringView(name));
        qsizetype i = 0;
        for (; i < qsizetype(fields.size()); ++i)
            if (!written[i] && name == fields.begin()[i].first)
                break;
        if (i < qsizetype(fields.size())) {
            written[i] = true;
            value(fields.begin()[i].second);
        } else {
            writeEmbedded(it.value(), m_depth);
        }
    }
    qsizetype i = 0;
    for (const auto &[name, text] : fields)
        if (!written[i++])
            key(name).value(text);
    return endObject();
}

void JsonWriter::writeEmbedded(const QJsonValue &v, int depth) {
    switch (v.type()) {
    case QJsonValue::Null:
    case QJsonValue::Undefined:
        null();
        return;
    case QJsonValue::Bool:
        boolean(v.toBool());
        return;
    case QJsonValue::Double: {
        // Integers (Qt keeps them as qint64) exactly, whatever their size; others as doubles.
        constexpr qint64 kNone = std::numeric_limits<qint64>::min();
        const qint64 i = v.toInteger(kNone);
        if (i != kNone || v.toInteger(0) == kNone)
            value(i);
        else
            value(v.toDouble());
        return;
    }
    case QJsonValue::String:
        value(v.toString());
        return;
    case QJsonValue::Array:
        writeEmbedded(v.toArray(), depth);
        return;
    case QJsonValue::Object:
        writeEmbedded(v.toObject(), depth);
        return;
    }
    null();
}

void JsonWriter::writeEmbedded(const QJsonObject &o, int depth) {
    if (depth >= kMaxDepth) {
        null();
        return;
    }
    separator();
    put('{');
    m_needComma = false;
    for (auto it = o.constBegin(); it != o.constEnd(); ++it) {
        key(QStringView(it.key()));
        writeEmbedded(it.value(), depth + 1);
    }
    put('}');
    m_needComma = true;
}

void JsonWriter::writeEmbedded(const QJsonArray &a, int depth) {
    if (depth >= kMaxDepth) {
        null();
        return;
    }
    separator();
    put('[');
    m_needComma = false;
    for (const QJsonValue &v : a)
        writeEmbedded(v, depth + 1);
    put(']');
    m_needComma = true;
}

JsonWriter &JsonWriter::beginSseEvent(QByteArrayView eventName) {
    if (!eventName.isEmpty()) {
        put(QByteArrayView("event: "));
        put(eventName);
        put('\n');
    }
    put(QByteArrayView("data: "));
    m_needComma = false;
    return *this;
}

JsonWriter &JsonWriter::endSseEvent() {
    put(QByteArrayView("\n\n"));
    m_needComma = false;
    return *this;
}

JsonWriter &JsonWriter::appendRaw(QByteArrayView bytes) {
    put(bytes);
    return *this;
}

} // namespace sw::wire
