#include "core/formats/decode_prologue.h"

#include "core/wire/json_parse.h"

#include <QJsonDocument>

namespace sw::formats {

bool rejectRequest(model::GatewayError *error, const QString &message) {
    if (error)
        *error = model::GatewayError::make(400, model::ErrorCategory::InvalidRequest, message);
    return false;
}

std::optional<model::ChatRequest> rejected(model::GatewayError *error, const QString &message) {
    rejectRequest(error, message);
    return std::nullopt;
}

std::optional<QString> identifierProblem(const QString &value) {
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

std::optional<model::ChatRequest> beginDecode(wire::Api api, const QByteArray &body, model::GatewayError *error,
                                              bool requireModel) {
    // Qt's document and Qt's error, parsed faster (a coding agent's body is hundreds of KB).
    QJsonParseError pe;
    const QJsonDocument doc = wire::parseJson(body, &pe);
    if (pe.error != QJsonParseError::NoError) {
        rejectRequest(error, QStringLiteral("Request body is not valid JSON: ") + pe.errorString());
        return std::nullopt;
    }
    if (!doc.isObject()) {
        rejectRequest(error, QStringLiteral("Request body must be a JSON object"));
        return std::nullopt;
    }
    model::ChatRequest req;
    req.sourceApi = api;
    req.raw = doc.object();
    req.rawBody = body;
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
