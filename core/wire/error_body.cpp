#include "core/wire/error_body.h"

#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>

namespace sw::wire {

namespace {

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

// Some compatible servers and proxies answer a list with one error object.
QJsonObject topObject(const QByteArray &body) {
    const QJsonDocument doc = QJsonDocument::fromJson(body);
    return doc.isArray() ? doc.array().at(0).toObject() : doc.object();
}

void readOpenAI(const QJsonObject &o, ErrorBody &info) {
    const QJsonValue err = o.value(L("error"));
    if (err.isObject()) {
        const QJsonObject e = err.toObject();
        info.message = e.value(L("message")).toString();
        const QJsonValue code = e.value(L("code"));
        info.errorType = code.isString() ? code.toString() : e.value(L("type")).toString();
        if (code.isString())
            info.providerType = e.value(L("type")).toString();
        info.param = e.value(L("param")).toString();
    } else if (err.isString()) {
        info.message = err.toString(); // Ollama, llama.cpp
    } else if (o.value(L("message")).isString()) {
        info.message = o.value(L("message")).toString();
    } else if (o.value(L("detail")).isString()) {
        info.message = o.value(L("detail")).toString(); // vLLM / FastAPI
    }
}

void readAnthropic(const QJsonObject &o, ErrorBody &info) {
    const QJsonValue err = o.value(L("error"));
    if (err.isObject()) {
        info.errorType = err.toObject().value(L("type")).toString();
        info.message = err.toObject().value(L("message")).toString();
    } else if (err.isString()) {
        info.message = err.toString();
    } else if (o.value(L("message")).isString()) {
        info.message = o.value(L("message")).toString();
    }
}

void readGoogle(const QJsonObject &o, ErrorBody &info) {
    const QJsonObject err = o.value(L("error")).toObject();
    info.message = err.value(L("message")).toString();
    info.errorType = err.value(L("status")).toString();
}

std::optional<int> lookup(const QHash<QString, int> &statuses, const QString &key) {
    const auto it = statuses.constFind(key);
    if (it == statuses.constEnd())
        return std::nullopt;
    return *it;
}

const char *googleStatusName(int status) {
    switch (status) {
    case 400:
        return "INVALID_ARGUMENT";
    case 401:
        return "UNAUTHENTICATED";
    case 403:
        return "PERMISSION_DENIED";
    case 404:
        return "NOT_FOUND";
    case 429:
        return "RESOURCE_EXHAUSTED";
    case 503:
        return "UNAVAILABLE";
    case 504:
        return "DEADLINE_EXCEEDED";
    default:
        return status >= 500 ? "INTERNAL" : "FAILED_PRECONDITION";
    }
}

} // namespace

ErrorBody parseErrorBody(Api api, const QByteArray &body) {
    ErrorBody info;
    switch (api) {
    case Api::AnthropicMessages:
        // Anthropic never wraps its error in a list.
        readAnthropic(QJsonDocument::fromJson(body).object(), info);
        break;
    case Api::Google:
        readGoogle(topObject(body), info);
        break;
    case Api::OpenAICompletions:
    case Api::OpenAIResponses:
    case Api::Pi:
        readOpenAI(topObject(body), info);
        break;
    }
    if (info.message.isEmpty())
        info.message = QString::fromUtf8(body.left(2000)).trimmed();
    return info;
}

std::optional<int> statusForAnthropicError(const QString &type) {
    static const QHash<QString, int> statuses{
        {QStringLiteral("invalid_request_error"), 400}, {QStringLiteral("authentication_error"), 401},
        {QStringLiteral("billing_error"), 402},         {QStringLiteral("permission_error"), 403},
        {QStringLiteral("not_found_error"), 404},       {QStringLiteral("request_too_large"), 413},
        {QStringLiteral("rate_limit_error"), 429},      {QStringLiteral("api_error"), 500},
        {QStringLiteral("timeout_error"), 504},         {QStringLiteral("overloaded_error"), 529},
    };
    return lookup(statuses, type);
}

std::optional<int> statusForOpenAIError(const QJsonObject &error) {
    const QJsonValue code = error.value(L("code"));
    if (code.isDouble() && code.toInt() >= 400) // OpenRouter and others put the status here
        return code.toInt();
    static const QHash<QString, int> statuses{
        {QStringLiteral("invalid_request_error"), 400},
        {QStringLiteral("context_length_exceeded"), 400},
        {QStringLiteral("invalid_api_key"), 401},
        {QStringLiteral("authentication_error"), 401},
        {QStringLiteral("permission_error"), 403},
        {QStringLiteral("model_not_found"), 404},
        {QStringLiteral("rate_limit_exceeded"), 429},
        {QStringLiteral("rate_limit_error"), 429},
        {QStringLiteral("insufficient_quota"), 429},
        {QStringLiteral("server_error"), 500},
        {QStringLiteral("api_error"), 500},
        {QStringLiteral("overloaded"), 503},
        {QStringLiteral("service_unavailable"), 503},
        {QStringLiteral("timeout"), 504},
    };
    return lookup(statuses, code.isString() ? code.toString() : error.value(L("type")).toString());
}

std::optional<int> statusForGoogleStatus(const QString &status) {
    static const QHash<QString, int> statuses{
        {QStringLiteral("INVALID_ARGUMENT"), 400},  {QStringLiteral("FAILED_PRECONDITION"), 400},
        {QStringLiteral("UNAUTHENTICATED"), 401},   {QStringLiteral("PERMISSION_DENIED"), 403},
        {QStringLiteral("NOT_FOUND"), 404},         {QStringLiteral("RESOURCE_EXHAUSTED"), 429},
        {QStringLiteral("INTERNAL"), 500},          {QStringLiteral("UNAVAILABLE"), 503},
        {QStringLiteral("DEADLINE_EXCEEDED"), 504},
    };
    return lookup(statuses, status);
}

QJsonObject googleErrorJson(int status, const QString &message) {
    return QJsonObject{{L("error"), QJsonObject{{L("code"), status},
                                                {L("message"), message},
                                                {L("status"), QString::fromLatin1(googleStatusName(status))}}}};
}

} // namespace sw::wire
