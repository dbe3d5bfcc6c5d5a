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
#include <initializer_list>
#include <utility>

namespace sw::wire {

// Appends `s` as a quoted JSON string. Any QString gives valid JSON: control characters,
// quote and backslash are escaped, a lone surrogate (which has no UTF-8 form) becomes its
// \uXXXX escape, everything else is UTF-8.
void appendJsonString(QByteArray &out, QStringView s);

class JsonWriter {
public:
    // Deepest nesting written; an embedded value nested deeper is written as null. Parsers
    // that read a peer's JSON refuse more than 1024 levels, so a value parsed from a peer
    // always fits inside the few levels of an answer's envelope.
    static constexpr int kMaxDepth = 1100;

    explicit JsonWriter(qsizetype reserve = 512) { m_out.reserve(reserve); }

    JsonWriter &beginObject();
    JsonWriter &endObject();
    JsonWriter &beginArray();
    JsonWriter &endArray();

    // A key: `name` is a Latin-1 literal (ASCII, so its bytes are written as they are).
    JsonWriter &key(QLatin1String name);
    template <qsizetype N> JsonWriter &key(const char (&name)[N]) { return key(QLatin1String(name, N - 1)); }
    JsonWriter &key(QStringView name);

    JsonWriter &value(QStringView s);
    JsonWriter &value(const QString &s) { return value(QStringView(s)); }
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
        m_out.append(json);
        m_needComma = true;
        return *this;
    }
    // Text outside any JSON value (e.g. "data: [DONE]\n\n"), written as it is.
    JsonWriter &appendRaw(QByteArrayView bytes);

    int depth() const { return m_depth; }
    const QByteArray &bytes() const { return m_out; }
    QByteArray take() {
        m_needComma = false;
        return std::move(m_out);
    }

private:
    void separator() {
        if (m_needComma)
            m_out.append(',');
    }
    void writeEmbedded(const QJsonValue &v, int depth);
    void writeEmbedded(const QJsonObject &o, int depth);
    void writeEmbedded(const QJsonArray &a, int depth);

    QByteArray m_out;
    int m_depth = 0;
    bool m_needComma = false;
};

} // namespace sw::wire
