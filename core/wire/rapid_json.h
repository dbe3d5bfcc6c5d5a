#pragma once
// JSON a peer sent (an upstream's SSE events, a client's request body), parsed with RapidJSON
// and read the way Qt's JSON classes read it. The stream decoders parse every event of every
// stream, the request codecs every body (a coding agent's is hundreds of KB); a QJsonDocument
// for each was the largest cost on the engine thread (docs/performance.md).
//
// Equivalence with QJsonDocument::fromJson is the contract, because the decoders' output
// must not depend on which parser ran:
//  - the same texts are accepted: a top-level object or array, nesting at most 1024 deep,
//    UTF-8, nothing but whitespace after the value. What RapidJSON refuses but Qt takes (raw
//    control characters in strings, "\q" escapes, also of a byte that is not UTF-8, lone
//    surrogates, "1." or ".5") and the texts where the two would read a value differently (a
//    string that starts with a byte order mark) are parsed by Qt and copied over, so they
//    read as Qt reads them. Numbers are converted as Qt's parser converts them (RapidJSON's
//    own rounding differs in the last place for some, and it takes 1e-400 as 0);
//  - objects keep their members in the text's order; written (compact) they come out in
//    Qt's order. Qt itself has two orders (its parser and QJsonObject::insert disagree) for
//    names that differ at a surrogate (a character past U+FFFF, or a lone one) against a
//    character from U+D800 up; there toQt() follows insert and compact() the parser of a
//    text without escapes. A name written with a leading byte order mark is sorted and
//    found with the mark and read without it, as Qt does (no plain name finds it);
//  - duplicate names: the last one counts, as in a QJsonObject parsed by Qt;
//  - numbers read as QJsonValue reads them: an integral value that fits in 64 bits is an
//    integer (12, 12.0 and 1.2e1 alike), anything else a double;
//  - strings convert as QJsonValue::toString() converts them.
// core/wire, the stream decoders, the request codecs and the upstream adapters include this
// header; the model only carries a ParsedJson (ChatRequest::json): RapidJSON stays out of it.

#include <QByteArray>
#include <QByteArrayView>
#include <QJsonObject>
#include <QJsonValue>
#include <QString>
#include <cstddef>
#include <cstring>
#include <string_view>

#include <rapidjson/document.h>

namespace sw::wire::rj {

using Allocator = rapidjson::MemoryPoolAllocator<rapidjson::CrtAllocator>;
using Value = rapidjson::GenericValue<rapidjson::UTF8<>, Allocator>;
using Document = rapidjson::GenericDocument<rapidjson::UTF8<>, Allocator, Allocator>;

// QJsonDocument::fromJson refuses a document nested deeper than this; so does ParsedJson,
// and the walks below (serialise, convert) stop there.
inline constexpr int kMaxDepth = 1024;

// Well-formed UTF-8 as Qt's parser requires it: no overlong forms, no surrogates, nothing past
// U+10FFFF.
bool isUtf8(QByteArrayView text);
// `text` with each sequence that is not UTF-8 read as U+FFFD, one for each maximal subpart (as
// WHATWG's UTF-8 decode and the SDKs read it: "\xE2\x82" is one U+FFFD, "\xFF\xFF" two).
QByteArray repairedUtf8(QByteArrayView text);

// How Qt's parser holds a number literal (JSON's grammar): an integer literal that fits in
// qint64 is that integer (*i); anything else goes through QByteArray::toDouble (*d), which
// refuses a value that overflows or underflows to zero (then Qt refuses the text), and a double
// with an integral value that fits in qint64 is held as that integer (*i as well).
enum class NumberKind { IntegerLiteral, Integral, Double, Refused };
NumberKind readNumber(const char *s, size_t n, qint64 *i, double *d);

// One parsed text. Its first 4 KiB of nodes, strings and parser stack come from a buffer
// inside it, so a small event parsed on the stack allocates nothing; a larger text takes
// chunks from the heap (of `chunkBytes`, or one of the text's size for the copy parsed in
// place), all freed at once with the object (no recursive destructor, whatever the nesting).
// A parse kept for a while (a request's body) sizes its chunks to its text, so a small body
// holds no more than a few KiB and a big one about twice its size (heldBytes()).
class ParsedJson final {
public:
    static constexpr size_t kDefaultChunkBytes = 64 * 1024;
    explicit ParsedJson(size_t chunkBytes = kDefaultChunkBytes);
    ~ParsedJson();
    ParsedJson(const ParsedJson &) = delete;
    ParsedJson &operator=(const ParsedJson &) = delete;

    // Parses `text` once. False for a text QJsonDocument::fromJson refuses; the root is
    // then Null, as QJsonDocument's object() and array() are empty.
    bool parse(QByteArrayView text);
    // The same for a text already known to be UTF-8 (an SSE event's data: upstream::SseReader reads
    // what is not UTF-8 as U+FFFD): the check over the whole text is not made again.
    bool parseUtf8(QByteArrayView text);

    const Value &root() const { return m_doc; }
    // The most values (keys included) a text of `bytes` may hold: a value of this tree costs about
    // 80 bytes while it is built (RapidJSON's value stack, doubled as it grows, and the copy into
    // the pool), and one of a client's body as few as two ("1,"), so a body of tiny values held
    // forty times its size. A sixteenth of its bytes (plus room for any short text) keeps the tree
    // within about six times the text, what a request of real conversation holds at its peak
    // (README "Limits"); a real conversation has far fewer values (a message, a text block or a
    // tool call is tens to thousands of bytes). A quarter let 30 MB of 4-byte values hold 480 MB.
    static size_t maxValuesFor(size_t bytes) { return bytes / 16 + 100000; }
    // The text was refused for holding more than maxValuesFor its size.
    bool tooManyValues() const { return m_tooManyValues; }
    // The memory this parse holds: the object and every chunk taken from the heap.
    size_t heldBytes() const;
    // The root object; nullptr when the root is an array or the text was refused.
    const Value *object() const { return m_doc.IsObject() ? &m_doc : nullptr; }

private:
    enum class Fast { Parsed, Refused, AskQt };
    bool parse(QByteArrayView text, bool knownUtf8);
    Fast parseFast(QByteArrayView text, bool knownUtf8);
    bool parseWithQt(QByteArrayView text);

    bool m_tooManyValues = false;
    alignas(std::max_align_t) char m_first[4096];
    Allocator m_pool;
    Document m_doc;
};

// QJsonValue's view of a member: nullptr is "undefined", for a missing name or a lookup in
// something that is not an object, so lookups chain like QJsonValue::toObject().value().
// With duplicate names the last one counts.
const Value *member(const Value *object, std::string_view name);
// The same for a name written as a literal (nearly every lookup): its length is known where it
// is called, so each member costs a length check and a compare of that many bytes, not a call
// to memcmp (a streamed chunk's decode makes a dozen lookups).
template <std::size_t N> inline const Value *member(const Value *object, const char (&name)[N]) {
    static_assert(N > 1, "a member name");
    if (!object || !object->IsObject())
        return nullptr;
    for (auto it = object->MemberEnd(); it != object->MemberBegin();) {
        --it; // from the end: the last of duplicate names counts
        if (it->name.GetStringLength() == N - 1 && std::memcmp(it->name.GetString(), name, N - 1) == 0)
            return &it->value;
    }
    return nullptr;
}
// The value if it is an object (array), else nullptr: QJsonValue::toObject() (toArray())
// of anything else is empty.
inline const Value *asObject(const Value *v) {
    return v && v->IsObject() ? v : nullptr;
}
inline const Value *asArray(const Value *v) {
    return v && v->IsArray() ? v : nullptr;
}
// toObject().isEmpty(): not an object, or one without members.
inline bool isEmptyObject(const Value *v) {
    return !v || !v->IsObject() || v->MemberCount() == 0;
}
// toArray().size(): 0 for anything but an array.
inline qsizetype arraySize(const Value *v) {
    return v && v->IsArray() ? qsizetype(v->Size()) : 0;
}
inline bool isString(const Value *v) {
    return v && v->IsString();
}
// Undefined (nullptr) or null: QJsonValue::isUndefined() || isNull().
inline bool isAbsent(const Value *v) {
    return !v || v->IsNull();
}

// A QString as UTF-8, except that a lone surrogate (which Qt's parser keeps from an escape
// such as "\ud800") is encoded on its own (ED A0 80) rather than replaced: the form a parse
// stores it in, which decode and the writer give back as Qt would.
QByteArray toWtf8(QStringView s);

// The UTF-8 bytes of a string value, without converting; empty for anything else.
inline std::string_view bytes(const Value *v) {
    return isString(v) ? std::string_view(v->GetString(), v->GetStringLength()) : std::string_view();
}
// bytes(v) == text, without a QString: for the names and types an event is dispatched on.
inline bool equals(const Value *v, std::string_view text) {
    return isString(v) && bytes(v) == text;
}

// An SSE event's type: the payload's own "type" is authoritative, the event: line the
// fallback, read as QString::fromUtf8 would (which drops one leading byte order mark),
// without converting.
inline std::string_view eventType(const Value *data, const QByteArray &eventLine) {
    const std::string_view own = bytes(member(data, "type"));
    if (!own.empty())
        return own;
    std::string_view line(eventLine.constData(), size_t(eventLine.size()));
    if (line.substr(0, 3) == "\xEF\xBB\xBF")
        line.remove_prefix(3);
    return line;
}

// QJsonValue::toString(defaultValue).
QString toString(const Value *v, const QString &defaultValue = {});
// QJsonValue::toString().toLatin1(): base64 data, often megabytes, taken as it stands when it
// is ASCII (as valid base64 always is).
QByteArray toLatin1(const Value *v);
// QJsonValue::toInteger(defaultValue): an integer, or a double with an integral value
// that fits in qint64; anything else gives the default.
qint64 toInteger(const Value *v, qint64 defaultValue = 0);
// QJsonValue::toInt(defaultValue): the same, within int.
int toInt(const Value *v, int defaultValue = 0);
// QJsonValue::toBool(defaultValue).
inline bool toBool(const Value *v, bool defaultValue = false) {
    return v && v->IsBool() ? v->GetBool() : defaultValue;
}
// QJsonValue::isDouble(): any number.
inline bool isNumber(const Value *v) {
    return v && v->IsNumber();
}
// QJsonValue::toDouble(defaultValue): any number, as a double.
inline double toDouble(const Value *v, double defaultValue = 0) {
    return v && v->IsNumber() ? v->GetDouble() : defaultValue;
}
// The elements of an array, for a range-for; none for anything else (QJsonValue::toArray()).
inline Value::ConstArray elements(const Value *v) {
    static const Value empty(rapidjson::kArrayType);
    return (v && v->IsArray() ? *v : empty).GetArray();
}

// The text of a content value: a string, or the text parts (text, input_text, output_text,
// refusal) of an array of parts, joined by newlines.
QString textOfContent(const Value *content);

// The value as QJsonDocument(...).toJson(QJsonDocument::Compact) writes the same value
// parsed by Qt: members in Qt's order (sorted by name) with duplicates dropped, numbers and
// escapes as Qt writes them. Appends nothing and returns false past `maxDepth` levels.
bool appendCompact(QByteArray &out, const Value &v, int maxDepth = kMaxDepth);
QByteArray compact(const Value &v);
// A string's text escaped as the inside of a JSON string (no quotes), as Qt escapes it.
void appendEscaped(QByteArray &out, std::string_view utf8);

// The value as a QJsonValue, for the few parts an answer keeps in Qt's JSON (a same-API
// client's native fields). Undefined past `maxDepth` levels (the parse never gives one).
QJsonValue toQt(const Value *v, int maxDepth = kMaxDepth);
// toQt(v).toObject().
QJsonObject toQtObject(const Value *v);

// model::parseToolArguments with this parser: a tool call's argument text as an object; {} for
// blank text, a text Qt refuses, or JSON that is not an object. Linear in the text (Qt's parser
// grows each string value one character at a time: seconds for a 60 MB argument text).
QJsonObject parseToolArguments(const QString &json);

} // namespace sw::wire::rj
