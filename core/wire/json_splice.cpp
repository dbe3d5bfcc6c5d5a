#include "core/wire/json_splice.h"

#include <QVarLengthArray>

#include <algorithm>
#include <bitset>
#include <cstring>
#include <vector>

namespace sw::wire {

namespace {

bool isSpace(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r'; // JSON's whitespace, no more
}

qsizetype skipSpace(QByteArrayView s, qsizetype at) {
    while (at < s.size() && isSpace(s[at]))
        ++at;
    return at;
}

// `at` is an opening quote: one past the closing quote, or -1 when the string never ends.
// A quote closes the string unless an odd run of backslashes stands right before it (each
// pair is one escaped backslash); memchr keeps long strings, most of a conversation, fast.
qsizetype skipString(QByteArrayView s, qsizetype at) {
    const char *const begin = s.data();
    const char *const end = begin + s.size();
    const char *const first = begin + at + 1;
    const char *p = first;
    while (p < end) {
        const char *quote = static_cast<const char *>(std::memchr(p, '"', size_t(end - p)));
        if (!quote)
            return -1;
        const char *b = quote;
        while (b > first && b[-1] == '\\')
            --b;
        if ((quote - b) % 2 == 0)
            return quote - begin + 1;
        p = quote + 1;
    }
    return -1;
}

// The characters of a number, true, false or null.
bool isScalarChar(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '+' || c == '.' || c == 'E';
}

// `at` is a value's first byte: one past its last byte, or -1. Nesting is followed with a
// bit stack (object or array per level), so depth costs no recursion and no allocation.
qsizetype skipValue(QByteArrayView s, qsizetype at) {
    const char c = s[at];
    if (c == '"')
        return skipString(s, at);
    if (c != '{' && c != '[') {
        qsizetype end = at;
        while (end < s.size() && isScalarChar(s[end]))
            ++end;
        return end > at ? end : -1;
    }
    std::bitset<JsonObjectSpans::kMaxDepth> isObject;
    int depth = 0;
    for (qsizetype i = at; i < s.size();) {
        switch (s[i]) {
        case '"':
            i = skipString(s, i);
            if (i < 0)
                return -1;
            continue;
        case '{':
        case '[':
            // The top-level object is one level already.
            if (depth + 1 >= JsonObjectSpans::kMaxDepth)
                return -1;
            isObject[size_t(depth++)] = s[i] == '{';
            break;
        case '}':
        case ']':
            if (isObject[size_t(--depth)] != (s[i] == '}'))
                return -1;
            if (depth == 0)
                return i + 1;
            break;
        default:
            break;
        }
        ++i;
    }
    return -1;
}

} // namespace

std::optional<JsonObjectSpans> JsonObjectSpans::scan(QByteArrayView json) {
    JsonObjectSpans spans;
    spans.m_json = json;
    qsizetype at = skipSpace(json, 0);
    if (at >= json.size() || json[at] != '{')
        return std::nullopt;
    at = skipSpace(json, at + 1);
    if (at < json.size() && json[at] == '}') {
        spans.m_closeBrace = at;
    } else {
        for (;;) {
            if (at >= json.size() || json[at] != '"')
                return std::nullopt;
            JsonMemberSpan m;
            m.keyBegin = at;
            m.keyEnd = skipString(json, at);
            if (m.keyEnd < 0 || spans.key(m).contains('\\'))
                return std::nullopt;
            at = skipSpace(json, m.keyEnd);
            if (at >= json.size() || json[at] != ':')
                return std::nullopt;
            at = skipSpace(json, at + 1);
            if (at >= json.size())
                return std::nullopt;
            m.valueBegin = at;
            m.valueEnd = skipValue(json, at);
            if (m.valueEnd < 0)
                return std::nullopt;
            spans.m_members.append(m);
            at = skipSpace(json, m.valueEnd);
            if (at >= json.size())
                return std::nullopt;
            if (json[at] == '}') {
                spans.m_closeBrace = at;
                break;
            }
            if (json[at] != ',')
                return std::nullopt;
            at = skipSpace(json, at + 1);
        }
    }
    if (skipSpace(json, spans.m_closeBrace + 1) != json.size())
        return std::nullopt;
    return spans;
}

std::optional<QList<JsonValueSpan>> scanArray(QByteArrayView json) {
    QList<JsonValueSpan> out;
    qsizetype at = skipSpace(json, 0);
    if (at >= json.size() || json[at] != '[')
        return std::nullopt;
    at = skipSpace(json, at + 1);
    if (at < json.size() && json[at] == ']') {
        ++at;
    } else {
        for (;;) {
            if (at >= json.size())
                return std::nullopt;
            const qsizetype end = skipValue(json, at);
            if (end < 0)
                return std::nullopt;
            out.append({at, end});
            at = skipSpace(json, end);
            if (at >= json.size())
                return std::nullopt;
            if (json[at] == ']') {
                ++at;
                break;
            }
            if (json[at] != ',')
                return std::nullopt;
            at = skipSpace(json, at + 1);
        }
    }
    if (skipSpace(json, at) != json.size())
        return std::nullopt;
    return out;
}

const JsonMemberSpan *JsonObjectSpans::find(QByteArrayView key) const {
    for (const JsonMemberSpan &m : m_members)
        if (this->key(m) == key)
            return &m;
    return nullptr;
}

bool JsonObjectSpans::hasDuplicateKeys() const {
    const qsizetype n = m_members.size();
    if (n <= 16) { // a request's usual handful: no allocation
        for (qsizetype i = 0; i < n; ++i)
            for (qsizetype j = i + 1; j < n; ++j)
                if (key(m_members[i]) == key(m_members[j]))
                    return true;
        return false;
    }
    std::vector<QByteArrayView> keys;
    keys.reserve(size_t(m_members.size()));
    for (const JsonMemberSpan &m : m_members)
        keys.push_back(key(m));
    std::sort(keys.begin(), keys.end());
    return std::adjacent_find(keys.begin(), keys.end()) != keys.end();
}

std::optional<QByteArray> spliceTopLevel(QByteArrayView json, std::span<const JsonMemberEdit> edits) {
    const std::optional<JsonObjectSpans> spans = JsonObjectSpans::scan(json);
    if (!spans || spans->hasDuplicateKeys())
        return std::nullopt;
    const QList<JsonMemberSpan> &members = spans->members();
    // Each edit is a range of the bytes and what goes there instead; they are applied in order.
    struct Change {
        qsizetype begin;
        qsizetype end;
        QByteArrayView text;
    };
    QVarLengthArray<Change, 8> changes;
    QVarLengthArray<bool, 16> removed(members.size(), false);
    QVarLengthArray<const JsonMemberEdit *, 8> appended;
    qsizetype extra = 0;
    for (const JsonMemberEdit &e : edits) {
        const JsonMemberSpan *m = spans->find(e.key);
        if (e.removes()) {
            if (m)
                removed[m - members.constData()] = true;
        } else if (m) {
            changes.append({m->valueBegin, m->valueEnd, e.value});
            extra += e.value.size() - (m->valueEnd - m->valueBegin);
        } else {
            appended.append(&e);
            extra += e.key.size() + e.value.size() + 4; // ,"key":
        }
    }
    // A removed member goes with the comma before it; the first ones, having none, with the
    // comma after them up to the first member kept; all of them, with nothing left to join.
    const auto kept = std::find(removed.cbegin(), removed.cend(), false) - removed.cbegin();
    if (kept == members.size() && kept > 0)
        changes.append({members.constFirst().keyBegin, members.constLast().valueEnd, {}});
    else if (kept > 0)
        changes.append({members.constFirst().keyBegin, members[kept].keyBegin, {}});
    for (qsizetype i = kept + 1; i < members.size(); ++i)
        if (removed[i])
            changes.append({members[i - 1].valueEnd, members[i].valueEnd, {}});

    // New members go right after the last one (or the opening brace of an empty object),
    // so whatever whitespace the client put before its closing brace stays there.
    QByteArray tail;
    bool first = kept == members.size();
    for (const JsonMemberEdit *e : appended) {
        if (!first)
            tail.append(',');
        first = false;
        tail.append('"').append(e->key).append("\":").append(e->value);
    }
    if (!tail.isEmpty()) {
        const qsizetype at = members.isEmpty() ? json.indexOf('{') + 1 : members.constLast().valueEnd;
        changes.append({at, at, QByteArrayView(tail)});
    }
    std::sort(changes.begin(), changes.end(), [](const Change &a, const Change &b) { return a.begin < b.begin; });

    QByteArray out;
    out.reserve(json.size() + std::max<qsizetype>(extra, 0));
    qsizetype copied = 0;
    for (const Change &c : changes) {
        out.append(json.constData() + copied, c.begin - copied);
        out.append(c.text);
        copied = c.end;
    }
    out.append(json.constData() + copied, json.size() - copied);
    return out;
}

QByteArray jsonString(QStringView text) {
    const QByteArray utf8 = text.toUtf8();
    QByteArray out;
    out.reserve(utf8.size() + 2);
    out.append('"');
    static const char hex[] = "0123456789abcdef";
    for (const char c : utf8) {
        const auto u = static_cast<unsigned char>(c);
        switch (c) {
        case '"':
            out.append("\\\"");
            break;
        case '\\':
            out.append("\\\\");
            break;
        case '\n':
            out.append("\\n");
            break;
        case '\r':
            out.append("\\r");
            break;
        case '\t':
            out.append("\\t");
            break;
        case '\b':
            out.append("\\b");
            break;
        case '\f':
            out.append("\\f");
            break;
        default:
            if (u < 0x20)
                out.append("\\u00").append(hex[u >> 4]).append(hex[u & 0xf]);
            else
                out.append(c);
        }
    }
    out.append('"');
    return out;
}

} // namespace sw::wire
