#include "formats/wire_json.h"

#include <QJsonArray>
#include <QJsonDocument>

namespace sw::formats {

QByteArray compactJson(const QJsonObject &object) {
    return QJsonDocument(object).toJson(QJsonDocument::Compact);
}

QByteArray sseFrame(const QJsonObject &object, QByteArrayView eventName) {
    QByteArray out;
    if (!eventName.isEmpty()) {
        out += "event: ";
        out += eventName;
        out += '\n';
    }
    out += "data: ";
    out += compactJson(object);
    out += "\n\n";
    return out;
}

bool splitDataUri(const QString &uri, QString *mimeType, QByteArray *base64) {
    if (!uri.startsWith(QLatin1String("data:"), Qt::CaseInsensitive))
        return false;
    const qsizetype comma = uri.indexOf(QLatin1Char(','));
    if (comma < 0)
        return false;
    const QString header = uri.mid(5, comma - 5);
    if (!header.endsWith(QLatin1String(";base64"), Qt::CaseInsensitive))
        return false;
    *mimeType = header.left(header.size() - 7);
    *base64 = uri.mid(comma + 1).toLatin1();
    return true;
}

QString makeDataUri(const QString &mimeType, const QByteArray &base64) {
    return QLatin1String("data:") + mimeType + QLatin1String(";base64,") + QString::fromLatin1(base64);
}

QString textOfContent(const QJsonValue &content) {
    if (content.isString())
        return content.toString();
    QString out;
    if (content.isArray()) {
        for (const QJsonValue &part : content.toArray()) {
            const QJsonObject o = part.toObject();
            const QString type = o.value(QLatin1String("type")).toString();
            if (type == QLatin1String("text") || type == QLatin1String("input_text") ||
                type == QLatin1String("output_text") || type == QLatin1String("refusal")) {
                if (!out.isEmpty())
                    out += QLatin1Char('\n');
                out += o.value(type == QLatin1String("refusal") ? QLatin1String("refusal") : QLatin1String("text"))
                           .toString();
            }
        }
    }
    return out;
}

bool rejectRequest(model::GatewayError *error, const QString &message)
{
    if (error)
        *error = model::GatewayError::make(400, model::ErrorCategory::InvalidRequest, message);
    return false;
}

std::optional<ParsedRequest> rejected(model::GatewayError *error, const QString &message)
{
    rejectRequest(error, message);
    return std::nullopt;
}

std::optional<QString> identifierProblem(const QString &value)
{
    if (value.toUtf8().size() > kMaxIdentifierBytes)
        return QStringLiteral("is longer than %1 bytes").arg(kMaxIdentifierBytes);
    for (const QChar c : value) {
        // C0, DEL and C1 controls, and the Unicode line and paragraph separators: any of them
        // could end a header line or an SSE field wherever the identifier is echoed.
        if (c.category() == QChar::Other_Control || c == QChar(0x2028) || c == QChar(0x2029))
            return QStringLiteral("contains a control character");
    }
    return std::nullopt;
}

std::optional<ParsedRequest> beginDecode(const QByteArray &body, model::GatewayError *error, bool requireModel)
{
    QJsonParseError pe;
    const QJsonDocument doc = QJsonDocument::fromJson(body, &pe);
    if (pe.error != QJsonParseError::NoError) {
        rejectRequest(error, QStringLiteral("Request body is not valid JSON: ") + pe.errorString());
        return std::nullopt;
    }
    if (!doc.isObject()) {
        rejectRequest(error, QStringLiteral("Request body must be a JSON object"));
        return std::nullopt;
    }
    ParsedRequest req;
    req.raw = doc.object();
    // Every way a client names the model (pi adds modelId and a Model object) is kept in the
    // attempt history and echoed in headers: checked once here, before anything stores it.
    const QJsonValue modelValue = req.raw.value(QLatin1String("model"));
    const std::pair<QString, QJsonValue> names[] = {
        {QStringLiteral("model"), modelValue},
        {QStringLiteral("modelId"), req.raw.value(QLatin1String("modelId"))},
        {QStringLiteral("model.id"), modelValue.toObject().value(QLatin1String("id"))},
    };
    for (const auto &[field, value] : names) {
        if (!value.isString())
            continue;
        if (const auto problem = identifierProblem(value.toString())) {
            rejectRequest(error, field + QLatin1Char(' ') + *problem);
            return std::nullopt;
        }
    }
    if (requireModel) {
        const QJsonValue model = req.raw.value(QLatin1String("model"));
        if (!model.isString() || model.toString().isEmpty()) {
            rejectRequest(error, QStringLiteral("model: required string"));
            return std::nullopt;
        }
        req.model = model.toString();
    }
    return req;
}

} // namespace sw::formats
