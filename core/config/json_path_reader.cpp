#include "core/config/json_path_reader.h"

#include "core/util/redaction.h"

#include <QJsonArray>
#include <QRegularExpression>

#include <cmath>
#include <limits>

namespace sw::config {

namespace {

QString jsonTypeName(const QJsonValue &value) {
    switch (value.type()) {
    case QJsonValue::Null:
        return QStringLiteral("null");
    case QJsonValue::Bool:
        return QStringLiteral("a boolean");
    case QJsonValue::Double:
        return QStringLiteral("a number");
    case QJsonValue::String:
        return QStringLiteral("a string");
    case QJsonValue::Array:
        return QStringLiteral("an array");
    case QJsonValue::Object:
        return QStringLiteral("an object");
    case QJsonValue::Undefined:
        break;
    }
    return QStringLiteral("nothing");
}

} // namespace

QString ValidationError::toString() const {
    return path.isEmpty() ? reason : path + QStringLiteral(": ") + reason;
}

QString keyPath(const QString &parent, const QString &key) {
    static const QRegularExpression plain(QStringLiteral("^[A-Za-z0-9_/-]+$"));
    if (!plain.match(key).hasMatch()) {
        QString escaped = key;
        escaped.replace(QLatin1Char('\\'), QStringLiteral("\\\\")).replace(QLatin1Char('"'), QStringLiteral("\\\""));
        return parent + QStringLiteral("[\"") + escaped + QStringLiteral("\"]");
    }
    return parent.isEmpty() ? key : parent + QLatin1Char('.') + key;
}

void JsonPathReader::error(const QString &path, const QString &reason) {
    m_errors.append({util::redactSecrets(path), util::redactSecrets(reason)});
}

QString indexPath(const QString &parent, qsizetype index) {
    return parent + QLatin1Char('[') + QString::number(index) + QLatin1Char(']');
}

QString quoted(const QString &text) {
    return QLatin1Char('"') + text + QLatin1Char('"');
}

bool isCommentKey(const QString &key) {
    return key.startsWith(QLatin1Char('_'));
}

void JsonPathReader::wrongType(const QString &path, const QString &expected, const QJsonValue &got) {
    error(path, QStringLiteral("expected %1, got %2").arg(expected, jsonTypeName(got)));
}

std::optional<JsonObjectReader> JsonObjectReader::of(JsonPathReader &reader, const QJsonValue &value,
                                                     const QString &path) {
    if (!value.isObject()) {
        reader.wrongType(path, QStringLiteral("an object"), value);
        return std::nullopt;
    }
    return JsonObjectReader(reader, value.toObject(), path);
}

QStringList JsonObjectReader::entryKeys() const {
    QStringList keys;
    for (const QString &key : m_object.keys())
        if (!isCommentKey(key))
            keys.append(key);
    return keys;
}

bool JsonObjectReader::require(const QString &key, const QString &reason) {
    if (has(key))
        return true;
    error(key, reason);
    return false;
}

void JsonObjectReader::allowOnly(const QStringList &allowed) {
    for (auto it = m_object.begin(); it != m_object.end(); ++it) {
        if (!allowed.contains(it.key()) && !isCommentKey(it.key()))
            error(it.key(),
                  QStringLiteral("unknown key (expected one of: %1)").arg(allowed.join(QStringLiteral(", "))));
    }
}

std::optional<JsonObjectReader> JsonObjectReader::object(const QString &key) {
    if (!has(key))
        return std::nullopt;
    return of(*m_reader, m_object.value(key), pathOf(key));
}

std::optional<QJsonValue> JsonObjectReader::typed(const QString &key, QJsonValue::Type type, const QString &expected) {
    if (!has(key))
        return std::nullopt;
    const QJsonValue value = m_object.value(key);
    if (value.type() != type) {
        m_reader->wrongType(pathOf(key), expected, value);
        return std::nullopt;
    }
    return value;
}

bool JsonObjectReader::text(const QString &key, QString &out) {
    const auto value = typed(key, QJsonValue::String, QStringLiteral("a string"));
    if (value)
        out = value->toString();
    return bool(value);
}

bool JsonObjectReader::flag(const QString &key, bool &out) {
    const auto value = typed(key, QJsonValue::Bool, QStringLiteral("a boolean (true or false)"));
    if (value)
        out = value->toBool();
    return bool(value);
}

bool JsonObjectReader::number(const QString &key, double &out, double min, const QString &rangeReason) {
    const auto value = typed(key, QJsonValue::Double, QStringLiteral("a number"));
    if (!value)
        return false;
    const double d = value->toDouble();
    if (!std::isfinite(d) || d < min) {
        error(key, rangeReason);
        return false;
    }
    out = d;
    return true;
}

bool JsonObjectReader::integer(const QString &key, qint64 &out, qint64 min, qint64 max, const QString &rangeReason) {
    const auto value = typed(key, QJsonValue::Double, QStringLiteral("an integer"));
    if (!value)
        return false;
    const double d = value->toDouble();
    if (!std::isfinite(d) || std::floor(d) != d) {
        error(key, QStringLiteral("expected an integer, got %1").arg(d));
        return false;
    }
    if (d < double(min)) {
        error(key, rangeReason);
        return false;
    }
    if (d > double(max)) {
        error(key, QStringLiteral("must be at most %1").arg(max));
        return false;
    }
    out = qint64(d);
    return true;
}

bool JsonObjectReader::integer(const QString &key, int &out, int min, const QString &rangeReason) {
    qint64 value = 0;
    if (!integer(key, value, min, std::numeric_limits<int>::max(), rangeReason))
        return false;
    out = int(value);
    return true;
}

bool JsonObjectReader::strings(const QString &key, QStringList &out) {
    const auto value = typed(key, QJsonValue::Array, QStringLiteral("an array of strings"));
    if (!value)
        return false;
    const QJsonArray array = value->toArray();
    QStringList result;
    bool ok = true;
    for (qsizetype i = 0; i < array.size(); ++i) {
        if (!array.at(i).isString()) {
            m_reader->wrongType(indexPath(pathOf(key), i), QStringLiteral("a string"), array.at(i));
            ok = false;
            continue;
        }
        result.append(array.at(i).toString());
    }
    if (ok)
        out = result;
    return ok;
}

} // namespace sw::config
