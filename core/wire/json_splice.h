#pragma once
// Editing a JSON object's top-level members in its bytes, without parsing and writing the
// whole document again: a same-API request is forwarded as the client sent it, with only the
// members the gateway sets (model, stream, ...) replaced or appended. The client's numbers,
// key order and spacing stay as they were, and a large conversation costs one scan.

#include <QByteArray>
#include <QByteArrayView>
#include <QList>
#include <QStringView>
#include <initializer_list>
#include <optional>
#include <span>

namespace sw::wire {

// Where one top-level member of an object's bytes lies (offsets into the scanned bytes).
struct JsonMemberSpan {
    qsizetype keyBegin = 0;   // the key's opening quote
    qsizetype keyEnd = 0;     // one past its closing quote
    qsizetype valueBegin = 0; // the value's first byte
    qsizetype valueEnd = 0;   // one past the value's last byte
};

// The top-level members of one JSON object, found by a scanner that follows strings (with
// their escapes) and bracket nesting, with no recursion and no copy of the bytes. It locates
// spans in bytes a JSON parser has already accepted; it does not check everything a parser
// checks (number syntax, string escapes and encoding inside values), so it is no validator.
class JsonObjectSpans {
public:
    // Nesting deeper than this is declined (Qt's parser refuses deeper input too).
    static constexpr int kMaxDepth = 1024;

    // The members of `json`, or nullopt when the scanner cannot vouch for them: not exactly one
    // object (whitespace around it allowed), a key with an escape in it (its text would need
    // decoding to compare), nesting over kMaxDepth, or anything malformed or truncated.
    static std::optional<JsonObjectSpans> scan(QByteArrayView json);

    const QList<JsonMemberSpan> &members() const { return m_members; }
    // The key's text between its quotes (never escaped: scan() declines escaped keys).
    QByteArrayView key(const JsonMemberSpan &m) const {
        return m_json.sliced(m.keyBegin + 1, m.keyEnd - m.keyBegin - 2);
    }
    QByteArrayView value(const JsonMemberSpan &m) const {
        return m_json.sliced(m.valueBegin, m.valueEnd - m.valueBegin);
    }
    // The first member named `key`, or nullptr.
    const JsonMemberSpan *find(QByteArrayView key) const;
    // True when some key is there more than once.
    bool hasDuplicateKeys() const;
    // The offset of the object's closing brace.
    qsizetype closeBrace() const { return m_closeBrace; }

private:
    QByteArrayView m_json;
    QList<JsonMemberSpan> m_members;
    qsizetype m_closeBrace = 0;
};

// Where one value lies in the bytes that were scanned.
struct JsonValueSpan {
    qsizetype begin = 0; // the value's first byte
    qsizetype end = 0;   // one past its last byte
};

// The elements of one JSON array's bytes (whitespace around it allowed), found as
// JsonObjectSpans finds an object's members; nullopt when not exactly one well-formed array.
std::optional<QList<JsonValueSpan>> scanArray(QByteArrayView json);

// One member to set: its key (plain text that needs no escaping) and the JSON text of its value,
// or no value (JsonMemberEdit::removal) to take the member out. Views: the bytes are the
// caller's and only read during the splice.
struct JsonMemberEdit {
    QByteArrayView key;
    QByteArrayView value;

    static JsonMemberEdit removal(QByteArrayView key) { return {key, {}}; }
    bool removes() const { return value.isEmpty(); }
};

// `json` with every edit applied: an existing member's value replaced where it stands, a
// missing member appended after the last one, a removed member taken out with the comma that
// joined it to its neighbour (a removal of a missing member changes nothing). Nullopt ("cannot splice": the caller
// builds the body another way) when JsonObjectSpans::scan() declines, or when any top-level key is there twice: a peer
// may read a duplicate differently from the parser that read it here (Qt keeps the last), so only a body with one
// reading is forwarded as it is. Edits must name distinct keys and carry valid JSON values.
std::optional<QByteArray> spliceTopLevel(QByteArrayView json, std::span<const JsonMemberEdit> edits);
inline std::optional<QByteArray> spliceTopLevel(QByteArrayView json, std::initializer_list<JsonMemberEdit> edits) {
    return spliceTopLevel(json, std::span<const JsonMemberEdit>(edits.begin(), edits.size()));
}

// `text` as a JSON string literal, quotes included (UTF-8; quote, backslash and control
// characters escaped).
QByteArray jsonString(QStringView text);

} // namespace sw::wire
