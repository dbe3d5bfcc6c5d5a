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

bool needsEscape(char16_t c) {
    return c < 0x20 || c == u'"' || c == u'\\';
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

void appendJsonString(QByteArray &out, QStringView s) {
    const char16_t *p = s.utf16();
    const char16_t *const end = p + s.size();
    // Converted in chunks into room reserved for the worst case (6 bytes per UTF-16 unit,
    // "\uXXXX"), so the loop writes through a pointer with no per-character bounds check
    // and a long string never reserves six times its size at once.
    constexpr qsizetype kChunk = 512;
    qsizetype used = out.size();
    out.resize(used + 1 + qMin<qsizetype>(s.size(), kChunk) * 6 + 8);
    char *d = out.data() + used;
    *d++ = '"';
    while (p < end) {
        const char16_t *const chunkEnd = p + qMin<qsizetype>(end - p, kChunk);
        while (p < chunkEnd) {
            const char16_t c = *p++;
            if (c < 0x80) {
                if (needsEscape(c))
                    d = escapeUnit(d, c);
                else
                    *d++ = char(c);
            } else if (c < 0x800) {
                *d++ = char(0xc0 | (c >> 6));
                *d++ = char(0x80 | (c & 0x3f));
            } else if (c >= 0xd800 && c <= 0xdfff) {
                // A pair may straddle the chunk's end: the low half is read from the string.
                if (c < 0xdc00 && p < end && *p >= 0xdc00 && *p <= 0xdfff) {
                    const char32_t u = 0x10000 + ((char32_t(c) - 0xd800) << 10) + (char32_t(*p++) - 0xdc00);
                    *d++ = char(0xf0 | (u >> 18));
                    *d++ = char(0x80 | ((u >> 12) & 0x3f));
                    *d++ = char(0x80 | ((u >> 6) & 0x3f));
                    *d++ = char(0x80 | (u & 0x3f));
                } else {
                    d = escapeUnit(d, c); // lone surrogate: no UTF-8 form
                }
            } else {
                *d++ = char(0xe0 | (c >> 12));
                *d++ = char(0x80 | ((c >> 6) & 0x3f));
                *d++ = char(0x80 | (c & 0x3f));
            }
        }
        used = d - out.data();
        if (p < end) {
            out.resize(used + qMin<qsizetype>(end - p, kChunk) * 6 + 8);
            d = out.data() + used;
        }
    }
    *d++ = '"';
    out.resize(d - out.data());
}

JsonWriter &JsonWriter::beginObject() {
    separator();
    m_out.append('{');
    ++m_depth;
    m_needComma = false;
    return *this;
}

JsonWriter &JsonWriter::endObject() {
    m_out.append('}');
    --m_depth;
    m_needComma = true;
    return *this;
}

JsonWriter &JsonWriter::beginArray() {
    separator();
    m_out.append('[');
    ++m_depth;
    m_needComma = false;
    return *this;
}

JsonWriter &JsonWriter::endArray() {
    m_out.append(']');
    --m_depth;
    m_needComma = true;
    return *this;
}

JsonWriter &JsonWriter::key(QLatin1String name) {
    separator();
    if (plainAscii(name)) {
        m_out.append('"');
        m_out.append(name.data(), name.size());
        m_out.append("\":", 2);
    } else {
        appendJsonString(m_out, QString(name));
        m_out.append(':');
    }
    m_needComma = false;
    return *this;
}

JsonWriter &JsonWriter::key(QStringView name) {
    separator();
    appendJsonString(m_out, name);
    m_out.append(':');
    m_needComma = false;
    return *this;
}

JsonWriter &JsonWriter::value(QStringView s) {
    separator();
    appendJsonString(m_out, s);
    m_needComma = true;
    return *this;
}

JsonWriter &JsonWriter::value(QLatin1String s) {
    separator();
    if (plainAscii(s)) {
        m_out.append('"');
        m_out.append(s.data(), s.size());
        m_out.append('"');
    } else {
        appendJsonString(m_out, QString(s));
    }
    m_needComma = true;
    return *this;
}

JsonWriter &JsonWriter::value(qint64 n) {
    separator();
    char buffer[24];
    const char *end = rapidjson::internal::i64toa(n, buffer);
    m_out.append(buffer, end - buffer);
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
    char buffer[32];
    const char *end = rapidjson::internal::dtoa(d, buffer);
    m_out.append(buffer, end - buffer);
    m_needComma = true;
    return *this;
}

JsonWriter &JsonWriter::boolean(bool b) {
    separator();
    if (b)
        m_out.append("true", 4);
    else
        m_out.append("false", 5);
    m_needComma = true;
    return *this;
}

JsonWriter &JsonWriter::null() {
    separator();
    m_out.append("null", 4);
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
    m_out.append('{');
    m_needComma = false;
    for (auto it = o.constBegin(); it != o.constEnd(); ++it) {
        key(QStringView(it.key()));
        writeEmbedded(it.value(), depth + 1);
    }
    m_out.append('}');
    m_needComma = true;
}

void JsonWriter::writeEmbedded(const QJsonArray &a, int depth) {
    if (depth >= kMaxDepth) {
        null();
        return;
    }
    separator();
    m_out.append('[');
    m_needComma = false;
    for (const QJsonValue &v : a)
        writeEmbedded(v, depth + 1);
    m_out.append(']');
    m_needComma = true;
}

JsonWriter &JsonWriter::beginSseEvent(QByteArrayView eventName) {
    if (!eventName.isEmpty()) {
        m_out.append("event: ", 7);
        m_out.append(eventName);
        m_out.append('\n');
    }
    m_out.append("data: ", 6);
    m_needComma = false;
    return *this;
}

JsonWriter &JsonWriter::endSseEvent() {
    m_out.append("\n\n", 2);
    m_needComma = false;
    return *this;
}

JsonWriter &JsonWriter::appendRaw(QByteArrayView bytes) {
    m_out.append(bytes);
    return *this;
}

} // namespace sw::wire
