#pragma once
// Typed reads of a JSON document that name the dotted path of every value they
// reject, and collect every problem instead of stopping at the first. The
// configuration reader is written on top of it; nothing here knows the schema.

#include <QJsonObject>
#include <QJsonValue>
#include <QList>
#include <QString>
#include <QStringList>
#include <optional>

namespace sw::config {

// One problem in a configuration. path is a dotted JSON path such as
// `routes.sonnet.candidates[1]`; object keys that contain anything besides
// letters, digits, '_', '-' and '/' are quoted: `models["zai/glm-4.6"].cost`.
// An empty path means the document as a whole (unreadable file, bad JSON).
struct ValidationError {
    QString path;
    QString reason;

    // `routes.sonnet.candidates[1]: unknown model "zai/glm-4"`, or just the
    // reason when the path is empty.
    QString toString() const;
    bool operator==(const ValidationError &) const = default;
};

// `parent.key`, or `parent["key"]` when the key needs quoting; just `key` at the top level.
QString keyPath(const QString &parent, const QString &key);
// `parent[index]`.
QString indexPath(const QString &parent, qsizetype index);
// `"text"`: how values are quoted in reasons.
QString quoted(const QString &text);

// Keys that start with '_' are comments ("_comment": "..."), in every object of
// the file: JSON has none, and the starter configuration explains itself this
// way. They are skipped and never validated; save() drops them (a Config has
// no place for them), config_edit keeps them.
bool isCommentKey(const QString &key);

// Where the problems of one document go.
class JsonPathReader final {
public:
    const QList<ValidationError> &errors() const { return m_errors; }
    // Redacted where it is kept (util::redactSecrets): the reason quotes the value it refused, and a key
    // pasted into the wrong field (a route's candidate) reached the log, /healthz and the reload answer
    // whole (probe K1 7). The fields meant for secrets refuse them without quoting them.
    void error(const QString &path, const QString &reason);
    // "expected <expected>, got <what value is>".
    void wrongType(const QString &path, const QString &expected, const QJsonValue &got);

private:
    QList<ValidationError> m_errors;
};

// One JSON object at a known path. Every read of a key is optional: an absent
// key leaves `out` as it was (its default) and returns false; a present key of
// the wrong type or out of range is reported at `path.key` and also returns
// false, leaving `out` untouched.
class JsonObjectReader final {
public:
    // `value` must be an object; otherwise the wrong type is reported and the
    // result is nullopt.
    static std::optional<JsonObjectReader> of(JsonPathReader &reader, const QJsonValue &value, const QString &path);

    const QString &path() const { return m_path; }
    QString pathOf(const QString &key) const { return keyPath(m_path, key); }
    bool has(const QString &key) const { return m_object.contains(key); }
    // The keys of a map-like object (providers by id, routes by name), comments left out.
    QStringList entryKeys() const;
    QJsonValue value(const QString &key) const { return m_object.value(key); }
    void error(const QString &key, const QString &reason) { m_reader->error(pathOf(key), reason); }
    // A key present in the object and not missing when it is required.
    bool require(const QString &key, const QString &reason = QStringLiteral("missing (required)"));

    // Reports every key besides `allowed` and comments as unknown.
    void allowOnly(const QStringList &allowed);
    // The object at `key`: nullopt when absent (nothing to read) or not an object (reported).
    std::optional<JsonObjectReader> object(const QString &key);

    bool text(const QString &key, QString &out);
    bool flag(const QString &key, bool &out);
    // A finite number of at least `min`; otherwise `rangeReason`.
    bool number(const QString &key, double &out, double min, const QString &rangeReason);
    // A whole number in [min, max]; below min gives `rangeReason`, above max says the bound.
    bool integer(const QString &key, qint64 &out, qint64 min, qint64 max, const QString &rangeReason);
    bool integer(const QString &key, int &out, int min, const QString &rangeReason);
    // An array of strings; each wrong element is reported at `path.key[i]`.
    bool strings(const QString &key, QStringList &out);

private:
    JsonObjectReader(JsonPathReader &reader, QJsonObject object, QString path)
        : m_reader(&reader), m_object(std::move(object)), m_path(std::move(path)) {}
    // The value at `key` when present and of the expected type (reported otherwise).
    std::optional<QJsonValue> typed(const QString &key, QJsonValue::Type type, const QString &expected);

    JsonPathReader *m_reader;
    QJsonObject m_object;
    QString m_path;
};

} // namespace sw::config
