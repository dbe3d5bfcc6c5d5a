#pragma once
// Compact JSON written straight into bytes, for the answers and stream frames the
// gateway sends to clients. Building a QJsonObject tree only to serialise it costs a
// sorted insert and a few allocations per field; this writer appends each field in
// the order the caller writes it (the order the provider's own API documents).

#include <QByteArray>
#include <QByteArrayView>
#include <QJsonArray>
#include <QJsonObject>
#include <QJsonValue>
#include <QLatin1String>
#include <QString>
#include <QStringView>

#include <concepts>
#include <cstring>
#include <initializer_list>
#include <utility>

namespace sw::wire {

class JsonWriter {
public:
    // Deepest nesting written; an embedded value nested deeper is written as null. Parsers
    // that read a peer's JSON refuse more than 1024 levels, so a value parsed from a peer
    // always fits inside the few levels of an answer's envelope.
    static constexpr int kMaxDepth = 1100;

    explicit JsonWriter(qsizetype reserve = 512) {
        m_out.resize(reserve);
        m_cur = m_out.data();
        m_end = m_cur + m_out.size();
    }
    JsonWriter(const JsonWriter &) = delete;
    JsonWriter &operator=(const JsonWriter &) = delete;

    JsonWriter &beginObject();
    JsonWriter &endObject();
    JsonWriter &beginArray();
    JsonWriter &endArray();

    // A key: `name` is a Latin-1 literal (ASCII, so its bytes are written as they are).
    JsonWriter &key(QLatin1String name);
    template <qsizetype N> JsonWriter &key(const char (&name)[N]) { return key(QLatin1String(name, N - 1)); }
    JsonWriter &key(QStringView name);

    // A string: any QString gives valid JSON. Control characters, quote and backslash are
    // escaped, a lone surrogate (which has no UTF-8 form) becomes its \uXXXX escape (as Qt
    // writes it), everything else is UTF-8.
    JsonWriter &value(QStringView s);
    JsonWriter &value(const QString &s) { return value(QStringView(s)); }
    // From here on a lone surrogate is written as U+FFFD, as a body another server parses must have
    // it: a client's text cut inside an emoji ("\ud83d") is kept as its escape by the decoders, as
    // Qt keeps it, and Anthropic refuses a body holding one ("no low surrogate in string").
    void setWellFormedText() { m_wellFormed = true; }
    JsonWriter &value(QLatin1String s);
    template <qsizetype N> JsonWriter &value(const char (&s)[N]) { return value(QLatin1String(s, N - 1)); }
    JsonWriter &value(int n) { return value(qint64(n)); }
    JsonWriter &value(qint64 n);
    JsonWriter &value(double d); // non-finite numbers have no JSON form: null, as Qt writes them
    // Only a real bool: a pointer would otherwise convert to one silently.
    template <typename B>
    requires std::same_as<B, bool> JsonWriter &value(B b) { return boolean(b); }
    JsonWriter &boolean(bool b);
    JsonWriter &value(const QJsonValue &v);
    JsonWriter &value(const QJsonObject &o);
    JsonWriter &value(const QJsonArray &a);
    JsonWriter &null();
    // The object `o` with string fields set: each of `fields` replaces o's own value of
    // that name in place, or is added after o's own fields when o has none.
    JsonWriter &objectWith(const QJsonObject &o, std::initializer_list<std::pair<QLatin1String, QStringView>> fields);

    template <typename T> JsonWriter &field(QLatin1String name, const T &v) { return key(name).value(v); }
    template <qsizetype N, typename T> JsonWriter &field(const char (&name)[N], const T &v) {
        return key(name).value(v);
    }

    // Server-sent event framing around the next value: "event: <name>\n" (when given),
    // "data: ", the value, then a blank line. Compact JSON holds no raw line break, so
    // the value is always one data: line. One writer may hold several frames.
    JsonWriter &beginSseEvent(QByteArrayView eventName = {});
    JsonWriter &endSseEvent();
    // One JSON value already serialised (by this writer), written as it is.
    JsonWriter &rawValue(QByteArrayView json) {
        separator();
        put(json);
        m_needComma = true;
        return *this;
    }
    // Text outside any JSON value (e.g. "data: [DONE]\n\n"), written as it is.
    JsonWriter &appendRaw(QByteArrayView bytes);

    int depth() const { return m_depth; }
    qsizetype size() const { return m_cur - m_out.constData(); }
    QByteArrayView view() const { return QByteArrayView(m_out.constData(), size()); }
    // The text written; the writer is empty afterwards.
    QByteArray take();

private:
    // The bytes are written through m_cur into m_out's own buffer, which is kept larger
    // than the text (m_out.size() is its capacity until take()): an append is a bounds
    // check and a copy, not a QByteArray call.
    void ensure(qsizetype n) {
        if (m_end - m_cur < n)
            grow(n);
    }
    void grow(qsizetype n);
    void put(char c) {
        ensure(1);
        *m_cur++ = c;
    }
    void put(QByteArrayView bytes) {
        if (bytes.isEmpty())
            return; // an empty view may have no data pointer, which memcpy must not see
        ensure(bytes.size());
        memcpy(m_cur, bytes.data(), size_t(bytes.size()));
        m_cur += bytes.size();
    }
    void separator() {
        if (m_needComma)
            put(',');
    }
    void writeString(QStringView s);
    void writeEmbedded(const QJsonValue &v, int depth);
    void writeEmbedded(const QJsonObject &o, int depth);
    void writeEmbedded(const QJsonArray &a, int depth);

    QByteArray m_out;
    char *m_cur = nullptr;
    char *m_end = nullptr;
    int m_depth = 0;
    bool m_needComma = false;
    bool m_wellFormed = false;
};

} // namespace sw::wire
