#include "core/wire/rapid_json.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QLocale>
#include <QVarLengthArray>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <rapidjson/encodedstream.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

namespace sw::wire::rj {

namespace {

// Recursive (RapidJSON's default, a fifth fewer instructions than its iterative parser on a
// stream chunk): Builder refuses the 1025th level before the parser goes deeper, so the stack
// holds at most Qt's nesting limit, as Qt's own recursive parser does
// (test_rapid_json::nestingToTheLimitFitsASmallStack). In place (kParseInsituFlag): no
// copy of each string through the parser's stack. Numbers as text: Builder converts them the
// way Qt's parser does (RapidJSON's own conversion rounds some doubles differently, e.g.
// 2e-324 to 5e-324 where Qt refuses it). UTF-8 is checked before, over the whole text.
constexpr unsigned kParseFlags = rapidjson::kParseInsituFlag | rapidjson::kParseNumbersAsStringsFlag;

bool startsWithBom(const char *s, size_t n) {
    return n >= 3 && uchar(s[0]) == 0xEF && uchar(s[1]) == 0xBB && uchar(s[2]) == 0xBF;
}

// A number literal as Qt's parser reads it (readNumber). Integral doubles stay doubles here and
// are read as integers later (qtInteger()).
bool convertNumber(const char *s, size_t n, Document &doc) {
    qint64 i = 0;
    double d = 0;
    switch (readNumber(s, n, &i, &d)) {
    case NumberKind::IntegerLiteral:
        return doc.Int64(i);
    case NumberKind::Integral:
    case NumberKind::Double:
        return doc.Double(d);
    case NumberKind::Refused:
        break;
    }
    return false;
}

// Builds the document from the reader's events, and stops the parse where RapidJSON and Qt
// part ways: past Qt's nesting limit and at a number Qt refuses (Qt refuses the text), and at
// a string that starts with a byte order mark (Qt drops the mark from a string written
// without escapes and keeps it in one with escapes; the decoded bytes cannot tell which, Qt's
// own parse can).
struct Builder {
    Document &doc;
    size_t valuesLeft; // ParsedJson::maxValuesFor the text: each value and key takes one
    int depth = 0;
    bool refused = false;
    bool askQt = false;
    bool tooMany = false;

    bool Null() { return take() && doc.Null(); }
    bool Bool(bool b) { return take() && doc.Bool(b); }
    bool Int(int i) { return take() && doc.Int(i); }
    bool Uint(unsigned i) { return take() && doc.Uint(i); }
    bool Int64(int64_t i) { return take() && doc.Int64(i); }
    bool Uint64(uint64_t i) { return take() && doc.Uint64(i); }
    bool Double(double d) { return take() && doc.Double(d); }
    bool RawNumber(const char *s, rapidjson::SizeType n, bool) {
        if (!take())
            return false;
        refused = !convertNumber(s, n, doc);
        return !refused;
    }
    bool String(const char *s, rapidjson::SizeType n, bool copy) {
        if (!take())
            return false;
        if (startsWithBom(s, n)) {
            askQt = true;
            return false;
        }
        return doc.String(s, n, copy);
    }
    bool Key(const char *s, rapidjson::SizeType n, bool copy) { return String(s, n, copy); }
    bool StartObject() { return take() && enter() && doc.StartObject(); }
    bool EndObject(rapidjson::SizeType n) {
        --depth;
        return doc.EndObject(n);
    }
    bool StartArray() { return take() && enter() && doc.StartArray(); }
    bool take() {
        if (valuesLeft == 0) {
            tooMany = refused = true;
            return false;
        }
        --valuesLeft;
        return true;
    }
    bool EndArray(rapidjson::SizeType n) {
        --depth;
        return doc.EndArray(n);
    }
    bool enter() {
        refused = ++depth > kMaxDepth;
        return !refused;
    }
};

// A surrogate code point encoded on its own: ED A0..BF xx.
bool hasLoneSurrogate(const char *s, size_t n) {
    for (const char *p = s; (p = static_cast<const char *>(std::memchr(p, 0xED, n - size_t(p - s))));) {
        if (p + 1 < s + n && uchar(p[1]) >= 0xA0)
            return true;
        ++p;
    }
    return false;
}

// UTF-8 (with lone surrogates as toWtf8 writes them) to UTF-16, keeping a leading byte order
// mark. Bytes that are not UTF-8 (never produced by the parse) become U+FFFD.
QString decodeExactly(const char *s, size_t n) {
    QString out;
    out.reserve(qsizetype(n));
    const auto *p = reinterpret_cast<const uchar *>(s);
    const uchar *const end = p + n;
    while (p < end) {
        const uchar b = *p++;
        int more = b < 0x80 ? 0 : b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : b >= 0xC0 ? 1 : -1;
        char32_t c = more == 0 ? b : more == 1 ? b & 0x1F : more == 2 ? b & 0x0F : b & 0x07;
        if (more < 0 || end - p < more) {
            out += QChar::ReplacementCharacter;
            continue;
        }
        for (; more > 0; --more)
            c = (c << 6) | (*p++ & 0x3F);
        if (c >= 0x10000) {
            out += QChar(QChar::highSurrogate(c));
            out += QChar(QChar::lowSurrogate(c));
        } else {
            out += QChar(char16_t(c));
        }
    }
    return out;
}

QString decode(const char *s, size_t n) {
    if (startsWithBom(s, n) || hasLoneSurrogate(s, n))
        return decodeExactly(s, n); // QString::fromUtf8 would drop the mark, replace the surrogate
    return QString::fromUtf8(s, qsizetype(n));
}

// A member's name as Qt's key() reads it (see fromQt: a leading mark there is one Qt hides).
std::string_view nameText(const Value &name) {
    std::string_view n = bytes(&name);
    if (!n.empty() && uchar(n.back()) == 0xFF)
        n.remove_suffix(1);
    else if (startsWithBom(n.data(), n.size()))
        n.remove_prefix(3);
    return n;
}

// Qt's parser keeps a number as an integer when its value is integral and fits in qint64.
bool integral(double d, qint64 *out) {
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || std::trunc(d) != d)
        return false;
    *out = qint64(d);
    return true;
}

// The number as Qt holds it: an integer (true, *i) or a double (false, *d).
bool qtInteger(const Value &v, qint64 *i, double *d) {
    if (v.IsInt64()) {
        *i = v.GetInt64();
        return true;
    }
    *d = v.GetDouble(); // a Uint64 past qint64 is a double to Qt too
    return integral(*d, i);
}

void fromQt(const QJsonValue &q, Value &out, Allocator &a) {
    switch (q.type()) {
    case QJsonValue::Bool:
        out.SetBool(q.toBool());
        break;
    case QJsonValue::Double: {
        const qint64 i = q.toInteger();
        if (i != 0 || q.toDouble() == 0)
            out.SetInt64(i); // Qt keeps integral values as integers
        else
            out.SetDouble(q.toDouble());
        break;
    }
    case QJsonValue::String: {
        const QByteArray s = toWtf8(q.toString());
        out.SetString(s.constData(), rapidjson::SizeType(s.size()), a);
        break;
    }
    case QJsonValue::Array: {
        out.SetArray();
        const QJsonArray array = q.toArray();
        out.Reserve(rapidjson::SizeType(array.size()), a);
        for (const QJsonValue &e : array) {
            Value v;
            fromQt(e, v, a);
            out.PushBack(v, a);
        }
        break;
    }
    case QJsonValue::Object: {
        out.SetObject();
        const QJsonObject object = q.toObject();
        for (auto it = object.begin(); it != object.end(); ++it) {
            // A name that starts with a byte order mark: Qt finds and sorts it with the mark, and
            // gives key() without it when the name has no escapes (then looking up key() does not
            // find this member), with it otherwise. Kept with the mark either way, so no plain
            // name finds it and it sorts where Qt sorts it; nameText() gives key() back.
            QByteArray k = toWtf8(it.key());
            if (object.constFind(it.key()) != it)
                k.prepend("\xEF\xBB\xBF"); // the mark key() hides
            else if (startsWithBom(k.constData(), size_t(k.size())))
                k.append('\xFF'); // the mark key() shows: a byte no UTF-8 text has says so, sorting last

            Value name(k.constData(), rapidjson::SizeType(k.size()), a);
            Value v;
            fromQt(it.value(), v, a);
            out.AddMember(name, v, a);
        }
        break;
    }
    default:
        out.SetNull();
    }
}

char hexDigit(unsigned u) {
    return char(u < 10 ? '0' + u : 'a' + u - 10);
}

} // namespace

QByteArray toWtf8(QStringView s) {
    QByteArray out;
    out.reserve(s.size());
    for (qsizetype i = 0; i < s.size(); ++i) {
        char32_t c = s[i].unicode();
        if (QChar::isHighSurrogate(c) && i + 1 < s.size() && QChar::isLowSurrogate(s[i + 1].unicode()))
            c = QChar::surrogateToUcs4(char16_t(c), s[++i].unicode());
        if (c < 0x80) {
            out += char(c);
        } else if (c < 0x800) {
            out += char(0xC0 | (c >> 6));
            out += char(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            out += char(0xE0 | (c >> 12));
            out += char(0x80 | ((c >> 6) & 0x3F));
            out += char(0x80 | (c & 0x3F));
        } else {
            out += char(0xF0 | (c >> 18));
            out += char(0x80 | ((c >> 12) & 0x3F));
            out += char(0x80 | ((c >> 6) & 0x3F));
            out += char(0x80 | (c & 0x3F));
        }
    }
    return out;
}

namespace {

// The bytes of the UTF-8 sequence at `p` (a byte of 0x80 or more) that are well formed as Qt's
// parser requires it (no overlong forms, no surrogates, nothing past U+10FFFF): the whole
// sequence's length when it is valid, else the negated length of its maximal subpart (the valid
// prefix, at least the first byte), which WHATWG's decoder reads as one U+FFFD.
int utf8Sequence(const uchar *p, const uchar *end) {
    const uchar b = *p;
    int more;
    uchar lo = 0x80, hi = 0xBF; // the range of the second byte
    if (b >= 0xC2 && b <= 0xDF) {
        more = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
        more = 2;
        lo = b == 0xE0 ? 0xA0 : 0x80; // overlong
        hi = b == 0xED ? 0x9F : 0xBF; // surrogates
    } else if (b >= 0xF0 && b <= 0xF4) {
        more = 3;
        lo = b == 0xF0 ? 0x90 : 0x80; // overlong
        hi = b == 0xF4 ? 0x8F : 0xBF; // past U+10FFFF
    } else {
        return -1; // a byte no sequence begins with
    }
    int have = 1;
    while (have <= more && p + have < end && (have == 1 ? p[1] >= lo && p[1] <= hi : (p[have] & 0xC0) == 0x80))
        ++have;
    return have == more + 1 ? have : -have;
}

} // namespace

// Well-formed UTF-8 as Qt's parser requires it. ASCII, the common case, eight bytes at a time.
bool isUtf8(QByteArrayView text) {
    const auto *p = reinterpret_cast<const uchar *>(text.data());
    const uchar *const end = p + text.size();
    while (p < end) {
        if (end - p >= 8) {
            quint64 word;
            std::memcpy(&word, p, 8);
            if (!(word & 0x8080808080808080ULL)) {
                p += 8;
                continue;
            }
        }
        if (*p < 0x80) {
            ++p;
            continue;
        }
        const int n = utf8Sequence(p, end);
        if (n < 0)
            return false;
        p += n;
    }
    return true;
}

QByteArray repairedUtf8(QByteArrayView text) {
    static constexpr char kReplacement[] = "\xEF\xBF\xBD";
    const auto *p = reinterpret_cast<const uchar *>(text.data());
    const uchar *const end = p + text.size();
    QByteArray out;
    out.reserve(text.size() + 16);
    while (p < end) {
        if (*p < 0x80) {
            out.append(char(*p++));
            continue;
        }
        const int n = utf8Sequence(p, end);
        if (n > 0)
            out.append(reinterpret_cast<const char *>(p), n);
        else
            out.append(kReplacement, 3); // one for the maximal subpart
        p += n > 0 ? n : -n;
    }
    return out;
}

NumberKind readNumber(const char *s, size_t n, qint64 *i, double *d) {
    const bool minus = n > 0 && s[0] == '-';
    if (n - minus <= 18 && std::all_of(s + minus, s + n, [](char c) { return c >= '0' && c <= '9'; })) {
        qint64 v = 0; // up to 18 digits: always fits
        for (const char *p = s + minus; p < s + n; ++p)
            v = v * 10 + (*p - '0');
        *i = minus ? -v : v;
        return NumberKind::IntegerLiteral;
    }
    const QByteArray literal = QByteArray::fromRawData(s, qsizetype(n));
    bool ok = false;
    if (std::none_of(s, s + n, [](char c) { return c == '.' || c == 'e' || c == 'E'; })) {
        *i = literal.toLongLong(&ok);
        if (ok)
            return NumberKind::IntegerLiteral;
    }
    *d = literal.toDouble(&ok);
    if (!ok)
        return NumberKind::Refused;
    return integral(*d, i) ? NumberKind::Integral : NumberKind::Double;
}

ParsedJson::ParsedJson(size_t chunkBytes) : m_pool(m_first, sizeof m_first, chunkBytes), m_doc(&m_pool, 512, &m_pool) {}

size_t ParsedJson::heldBytes() const {
    // Capacity() counts the buffer inside the object too, which sizeof counts already.
    const size_t chunks = m_pool.Capacity();
    return sizeof(*this) + (chunks > sizeof m_first ? chunks - sizeof m_first : 0);
}

ParsedJson::~ParsedJson() = default;

bool ParsedJson::parse(QByteArrayView text) {
    return parse(text, false);
}

bool ParsedJson::parseUtf8(QByteArrayView text) {
    return parse(text, true);
}

bool ParsedJson::parse(QByteArrayView text, bool knownUtf8) {
    switch (parseFast(text, knownUtf8)) {
    case Fast::Parsed:
        return true;
    case Fast::Refused:
        return false;
    case Fast::AskQt:
        break;
    }
    return parseWithQt(text);
}

ParsedJson::Fast ParsedJson::parseFast(QByteArrayView text, bool knownUtf8) {
    QByteArrayView body = text;
    if (startsWithBom(body.data(), size_t(body.size())))
        body = body.sliced(3); // Qt skips one byte order mark before the document
    if (body.isEmpty())
        return Fast::Refused;
    // RapidJSON is told not to check UTF-8 (it would, character by character): one check over
    // the whole text instead. Qt refuses bytes that are not UTF-8 in a string and anywhere else,
    // except one right after a backslash in a string ("\\<0x96>" is U+0096 to Qt): Qt decides.
    if (!knownUtf8 && !isUtf8(body))
        return Fast::AskQt;
    // Parsed in place in a copy that lives in the pool: strings are unescaped where they are,
    // and the document points into it. The copy ends with a NUL and is padded to 16 zeroed bytes
    // past the text: RapidJSON's SIMD scan (RAPIDJSON_SSE2, core/CMakeLists.txt) loads aligned
    // 16-byte blocks, and the one holding a string's closing quote may reach past the text.
    constexpr size_t kPadding = 16;
    char *copy = static_cast<char *>(m_pool.Malloc(size_t(body.size()) + kPadding));
    std::memcpy(copy, body.data(), size_t(body.size()));
    std::memset(copy + body.size(), 0, kPadding);
    rapidjson::InsituStringStream stream(copy);
    rapidjson::GenericReader<rapidjson::UTF8<>, rapidjson::UTF8<>, Allocator> reader(&m_pool);
    Builder builder{m_doc, maxValuesFor(size_t(body.size()))};
    bool parsed = false;
    auto generate = [&](Document &) {
        parsed = !reader.Parse<kParseFlags>(stream, builder).IsError();
        return parsed;
    };
    m_doc.Populate(generate);
    if (!parsed) {
        m_doc.SetNull();
        m_tooManyValues = builder.tooMany;
        // Past the nesting limit, or at a number out of range, Qt refuses the text too; anything
        // else may be one Qt takes.
        return builder.refused ? Fast::Refused : Fast::AskQt;
    }
    // A NUL byte ends RapidJSON's input where Qt sees garbage after the document; Qt refuses a
    // scalar at the top.
    if (stream.Tell() != size_t(body.size()) || !(m_doc.IsObject() || m_doc.IsArray())) {
        m_doc.SetNull();
        return Fast::Refused;
    }
    return Fast::Parsed;
}

bool ParsedJson::parseWithQt(QByteArrayView text) {
    // Qt's tree costs more a value than this one: the values are counted first (no tree, no copy
    // kept), so that text with a byte that is not UTF-8 is bounded as any other.
    struct Counter : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, Counter> {
        size_t left;
        bool tooMany = false;
        bool Default() {
            tooMany = left == 0;
            return left-- > 0;
        }
        bool EndObject(rapidjson::SizeType) { return true; } // counted at the start, as Builder does
        bool EndArray(rapidjson::SizeType) { return true; }
    } counter;
    const size_t most = maxValuesFor(size_t(text.size()));
    counter.left = most;
    QByteArrayView body = text;
    if (startsWithBom(body.data(), size_t(body.size())))
        body = body.sliced(3); // as Qt skips it
    rapidjson::MemoryStream bytes(body.data(), size_t(body.size()));
    rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> stream(bytes);
    rapidjson::Reader reader;
    reader.Parse<rapidjson::kParseNumbersAsStringsFlag | rapidjson::kParseStopWhenDoneFlag>(stream, counter);
    // Where RapidJSON stopped early on what Qt may still take, the count is what may start a
    // value or a key, strings included: more than there are, and this path is only for text
    // that is not UTF-8, which no real client sends.
    size_t counted = most - counter.left;
    if (reader.HasParseError() && !counter.tooMany)
        counted = size_t(std::count_if(body.begin(), body.end(),
                                       [](char c) { return c == ',' || c == ':' || c == '[' || c == '{'; }));
    if (counter.tooMany || counted > most) {
        m_tooManyValues = true;
        return false;
    }
    const QJsonDocument doc = QJsonDocument::fromJson(text.toByteArray());
    if (doc.isObject())
        fromQt(doc.object(), m_doc, m_pool);
    else if (doc.isArray())
        fromQt(doc.array(), m_doc, m_pool);
    else
        return false;
    return true;
}

const Value *member(const Value *object, std::string_view name) {
    if (!object || !object->IsObject())
        return nullptr;
    for (auto it = object->MemberEnd(); it != object->MemberBegin();) {
        --it; // from the end: the last of duplicate names counts
        if (it->name.GetStringLength() == name.size() &&
            std::memcmp(it->name.GetString(), name.data(), name.size()) == 0)
            return &it->value;
    }
    return nullptr;
}

QString toString(const Value *v, const QString &defaultValue) {
    return isString(v) ? decode(v->GetString(), v->GetStringLength()) : defaultValue;
}

QByteArray toLatin1(const Value *v) {
    const std::string_view text = bytes(v);
    if (std::all_of(text.begin(), text.end(), [](char c) { return uchar(c) < 0x80; }))
        return QByteArray(text.data(), qsizetype(text.size()));
    return toString(v).toLatin1();
}

QString textOfContent(const Value *content) {
    if (isString(content))
        return toString(content);
    QString out;
    for (const Value &part : elements(content)) {
        const std::string_view type = bytes(member(&part, "type"));
        if (type == "text" || type == "input_text" || type == "output_text" || type == "refusal") {
            if (!out.isEmpty())
                out += QLatin1Char('\n');
            out += toString(member(&part, type == "refusal" ? "refusal" : "text"));
        }
    }
    return out;
}

qint64 toInteger(const Value *v, qint64 defaultValue) {
    qint64 i = 0;
    double d = 0;
    return v && v->IsNumber() && qtInteger(*v, &i, &d) ? i : defaultValue;
}

int toInt(const Value *v, int defaultValue) {
    qint64 i = 0;
    double d = 0;
    return v && v->IsNumber() && qtInteger(*v, &i, &d) && qint64(int(i)) == i ? int(i) : defaultValue;
}

namespace {

// The escaper and the compact writer below write into a QByteArray or, for a whole value, into a
// std::string, whose appends are inline (QByteArray's cost a library call each: 5 k instructions
// for a usage object of 15 members, against 1.5 k); the text is copied out once.
template <typename Out> void escapeInto(Out &out, std::string_view utf8) {
    const char *p = utf8.data();
    const char *const end = p + utf8.size();
    const char *run = p;
    auto flush = [&](const char *to) {
        if (to > run)
            out.append(run, to - run);
    };
    while (p < end) {
        const uchar c = uchar(*p);
        if (c >= 0x20 && c != '"' && c != '\\' && !(c == 0xED && p + 1 < end && uchar(p[1]) >= 0xA0)) {
            ++p;
            continue;
        }
        flush(p);
        out += '\\';
        switch (c) {
        case '"':
            out += '"';
            break;
        case '\\':
            out += '\\';
            break;
        case 0x08:
            out += 'b';
            break;
        case 0x0C:
            out += 'f';
            break;
        case 0x0A:
            out += 'n';
            break;
        case 0x0D:
            out += 'r';
            break;
        case 0x09:
            out += 't';
            break;
        case 0xED: { // a lone surrogate: Qt writes it as an escape
            const unsigned u = 0xD000 | ((uchar(p[1]) & 0x3F) << 6) | (p + 2 < end ? uchar(p[2]) & 0x3F : 0);
            out += 'u';
            for (int shift = 12; shift >= 0; shift -= 4)
                out += hexDigit((u >> shift) & 0xF);
            p += 2;
            break;
        }
        default:
            out += "u00";
            out += hexDigit(c >> 4);
            out += hexDigit(c & 0xF);
        }
        ++p;
        run = p;
    }
    flush(end);
}

} // namespace

void appendEscaped(QByteArray &out, std::string_view utf8) {
    escapeInto(out, utf8);
}

namespace {

bool writeCompact(std::string &out, const Value &v, int maxDepth) {
    switch (v.GetType()) {
    case rapidjson::kNullType:
        out += "null";
        return true;
    case rapidjson::kFalseType:
        out += "false";
        return true;
    case rapidjson::kTrueType:
        out += "true";
        return true;
    case rapidjson::kNumberType: {
        qint64 i = 0;
        double d = 0;
        if (qtInteger(v, &i, &d)) { // as QByteArray::number(i) writes it, without its allocation
            char digits[24];
            out.append(digits, std::to_chars(digits, digits + sizeof digits, i).ptr - digits);
        } else {
            out += QByteArray::number(d, 'g', QLocale::FloatingPointShortest).toStdString();
        }
        return true;
    }
    case rapidjson::kStringType:
        out += '"';
        escapeInto(out, bytes(&v));
        out += '"';
        return true;
    case rapidjson::kArrayType: {
        if (maxDepth <= 0)
            return false;
        out += '[';
        bool first = true;
        for (const Value &e : v.GetArray()) {
            if (!first)
                out += ',';
            first = false;
            if (!writeCompact(out, e, maxDepth - 1))
                return false;
        }
        out += ']';
        return true;
    }
    case rapidjson::kObjectType: {
        if (maxDepth <= 0)
            return false;
        // Qt holds an object's members sorted by name, the last of duplicate names kept.
        QVarLengthArray<const Value::Member *, 16> members;
        for (const Value::Member &m : v.GetObject())
            members.append(&m);
        const auto name = [](const Value::Member *m) { return bytes(&m->name); };
        std::stable_sort(members.begin(), members.end(),
                         [&](const Value::Member *a, const Value::Member *b) { return name(a) < name(b); });
        out += '{';
        bool first = true;
        for (qsizetype i = 0; i < members.size(); ++i) {
            if (i + 1 < members.size() && name(members[i]) == name(members[i + 1]))
                continue;
            if (!first)
                out += ',';
            first = false;
            out += '"';
            escapeInto(out, nameText(members[i]->name));
            out += "\":";
            if (!writeCompact(out, members[i]->value, maxDepth - 1))
                return false;
        }
        out += '}';
        return true;
    }
    }
    return false;
}

} // namespace

bool appendCompact(QByteArray &out, const Value &v, int maxDepth) {
    std::string text;
    text.reserve(256);
    if (!writeCompact(text, v, maxDepth))
        return false;
    out.append(text.data(), qsizetype(text.size()));
    return true;
}

QByteArray compact(const Value &v) {
    QByteArray out;
    if (!appendCompact(out, v))
        out.clear();
    return out;
}

// Members past this count are sorted by name before they go into a QJsonObject (toQt).
constexpr rapidjson::SizeType kSortBeforeInsert = 32;

QJsonValue toQt(const Value *v, int maxDepth) {
    if (!v)
        return QJsonValue(QJsonValue::Undefined);
    switch (v->GetType()) {
    case rapidjson::kNullType:
        return QJsonValue(QJsonValue::Null);
    case rapidjson::kFalseType:
        return false;
    case rapidjson::kTrueType:
        return true;
    case rapidjson::kNumberType: {
        qint64 i = 0;
        double d = 0;
        return qtInteger(*v, &i, &d) ? QJsonValue(i) : QJsonValue(d);
    }
    case rapidjson::kStringType:
        return toString(v);
    case rapidjson::kArrayType: {
        if (maxDepth <= 0)
            return QJsonValue(QJsonValue::Undefined);
        QJsonArray array;
        for (const Value &e : v->GetArray())
            array.append(toQt(&e, maxDepth - 1));
        return array;
    }
    case rapidjson::kObjectType: {
        if (maxDepth <= 0)
            return QJsonValue(QJsonValue::Undefined);
        QJsonObject object;
        const auto members = v->GetObject();
        if (members.MemberCount() <= kSortBeforeInsert) {
            for (const Value::Member &m : members) {
                const std::string_view name = nameText(m.name);
                object.insert(decode(name.data(), name.size()),
                              toQt(&m.value, maxDepth - 1)); // a later duplicate replaces
            }
            return object;
        }
        // QJsonObject keeps its keys sorted: each insert moves every key after its place, so
        // members in any other order cost the square of their count. A tool schema with 200 000
        // properties in reverse order held the engine thread for 10 s, and every other client with
        // it (probe T3 F1). Sorted first (stably: a later duplicate still replaces), each insert
        // lands at the end.
        std::vector<std::pair<QString, const Value *>> sorted;
        sorted.reserve(members.MemberCount());
        for (const Value::Member &m : members) {
            const std::string_view name = nameText(m.name);
            sorted.emplace_back(decode(name.data(), name.size()), &m.value);
        }
        std::stable_sort(sorted.begin(), sorted.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
        for (const auto &[name, value] : sorted)
            object.insert(name, toQt(value, maxDepth - 1));
        return object;
    }
    }
    return QJsonValue(QJsonValue::Undefined);
}

QJsonObject toQtObject(const Value *v) {
    return v && v->IsObject() ? toQt(v).toObject() : QJsonObject();
}

QJsonObject parseToolArguments(const QString &json) {
    if (std::all_of(json.cbegin(), json.cend(), [](QChar c) { return c.isSpace(); }))
        return {}; // QString::trimmed() would leave nothing
    ParsedJson parsed;
    if (!parsed.parse(json.toUtf8())) // the UTF-8 copy goes once the parse holds its own
        return {};
    return toQtObject(parsed.object());
}

} // namespace sw::wire::rj
