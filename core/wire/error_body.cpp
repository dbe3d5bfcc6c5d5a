#include "core/wire/error_body.h"

#include "core/wire/rapid_json.h"

#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>

namespace sw::wire {

namespace {

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

using rj::isString;
using rj::member;
using rj::toString;
using rj::Value;

// Some compatible servers and proxies answer a list with one error object. nullptr reads as
// an empty object (as QJsonDocument's object() of anything else).
const Value *topObject(const rj::ParsedJson &json) {
    const Value &root = json.root();
    if (root.IsArray())
        return root.Size() > 0 && root[0].IsObject() ? &root[0] : nullptr;
    return json.object();
}

void readOpenAI(const Value *o, ErrorBody &info) {
    const Value *err = member(o, "error");
    if (err && err->IsObject()) {
        info.message = toString(member(err, "message"));
        const Value *code = member(err, "code");
        info.errorType = isString(code) ? toString(code) : toString(member(err, "type"));
        if (isString(code))
            info.providerType = toString(member(err, "type"));
        info.param = toString(member(err, "param"));
    } else if (isString(err)) {
        info.message = toString(err); // Ollama, llama.cpp
    } else if (isString(member(o, "message"))) {
        info.message = toString(member(o, "message"));
    } else if (isString(member(o, "detail"))) {
        info.message = toString(member(o, "detail")); // vLLM / FastAPI
    }
}

void readAnthropic(const Value *o, ErrorBody &info) {
    const Value *err = member(o, "error");
    if (err && err->IsObject()) {
        info.errorType = toString(member(err, "type"));
        info.message = toString(member(err, "message"));
    } else if (isString(err)) {
        info.message = toString(err);
    } else if (isString(member(o, "message"))) {
        info.message = toString(member(o, "message"));
    }
}

// A google.protobuf.Duration in JSON: decimal seconds with an "s" ("47s", "0.5s").
std::optional<qint64> durationMs(const Value *v) {
    if (!isString(v))
        return std::nullopt;
    const std::string_view text(v->GetString(), v->GetStringLength());
    if (text.size() < 2 || text.size() > 24 || text.back() != 's')
        return std::nullopt;
    bool ok = false;
    const double seconds = QByteArray(text.data(), qsizetype(text.size() - 1)).toDouble(&ok);
    if (!ok || !(seconds >= 0) || seconds > 86400.0 * 365)
        return std::nullopt;
    return qint64(seconds * 1000.0 + 0.5);
}

// google.rpc.ErrorInfo's `reason`: an identifier by its definition ([A-Z][A-Z0-9_]+[A-Z0-9], at most
// 63 characters), never prose, so it cannot carry what the request said. Anything else is left out.
QString errorInfoReason(const Value *error) {
    static const QRegularExpression shape(QStringLiteral("^[A-Z][A-Z0-9_]{0,61}[A-Z0-9]$"));
    const Value *details = rj::asArray(member(error, "details"));
    if (!details)
        return {};
    for (const Value &d : details->GetArray()) {
        if (!rj::bytes(member(&d, "@type")).ends_with("google.rpc.ErrorInfo"))
            continue;
        const QString reason = toString(member(&d, "reason"));
        return shape.match(reason).hasMatch() ? reason : QString();
    }
    return {};
}

void readGoogle(const Value *o, ErrorBody &info) {
    const Value *err = rj::asObject(member(o, "error"));
    info.message = toString(member(err, "message"));
    info.errorType = toString(member(err, "status"));
    info.reason = errorInfoReason(err);
    const GoogleLimit limit = googleLimit(err);
    info.retryAfterMs = limit.retryAfterMs;
    info.quotaOfOneModel = limit.oneModel;
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
    // Parsed by RapidJSON with Qt's reading of it (rj::ParsedJson): a 503's body is read on every
    // failover, and QJsonDocument made that 11 k instructions of it.
    ErrorBody info;
    rj::ParsedJson json;
    json.parse(body);
    switch (api) {
    case Api::AnthropicMessages:
        // Anthropic never wraps its error in a list.
        readAnthropic(json.object(), info);
        break;
    case Api::Google:
        readGoogle(topObject(json), info);
        break;
    case Api::OpenAICompletions:
    case Api::OpenAIResponses:
    case Api::Pi:
        readOpenAI(topObject(json), info);
        break;
    }
    if (info.message.isEmpty())
        info.message = QString::fromUtf8(body.left(2000)).trimmed();
    return info;
}

std::optional<int> statusForErrorBody(Api api, const ErrorBody &info) {
    if (info.errorType.isEmpty())
        return std::nullopt;
    switch (api) {
    case Api::AnthropicMessages:
        return statusForAnthropicError(info.errorType);
    case Api::Google:
        return statusForGoogleStatus(info.errorType);
    case Api::OpenAICompletions:
    case Api::OpenAIResponses:
    case Api::Pi:
        return statusForOpenAIError(
            QJsonObject{{L("code"), info.errorType},
                        {L("type"), info.providerType.isEmpty() ? info.errorType : info.providerType}});
    }
    return std::nullopt;
}

GoogleLimit googleLimit(const rj::Value *error) {
    GoogleLimit limit;
    const Value *details = rj::asArray(member(rj::asObject(error), "details"));
    if (!details)
        return limit;
    for (const Value &d : details->GetArray()) {
        const std::string_view type = rj::bytes(member(&d, "@type"));
        if (type.ends_with("google.rpc.RetryInfo")) {
            if (const auto ms = durationMs(member(&d, "retryDelay")))
                limit.retryAfterMs = ms;
        } else if (type.ends_with("google.rpc.QuotaFailure")) {
            if (const Value *violations = rj::asArray(member(&d, "violations")))
                for (const Value &v : violations->GetArray())
                    limit.oneModel |= rj::bytes(member(&v, "quotaId")).find("PerModel") != std::string_view::npos ||
                                      member(rj::asObject(member(&v, "quotaDimensions")), "model") != nullptr;
        }
    }
    return limit;
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
        // A Responses `response.failed` about the request itself (OpenAI's list of its error codes):
        // 400s, each a code Codex reads to stop rather than retry (probe JV M3).
        {QStringLiteral("invalid_prompt"), 400},
        {QStringLiteral("invalid_image"), 400},
        {QStringLiteral("invalid_image_format"), 400},
        {QStringLiteral("invalid_base64_image"), 400},
        {QStringLiteral("invalid_image_url"), 400},
        {QStringLiteral("image_too_large"), 400},
        {QStringLiteral("image_too_small"), 400},
        {QStringLiteral("image_parse_error"), 400},
        {QStringLiteral("image_content_policy_violation"), 400},
        {QStringLiteral("invalid_image_mode"), 400},
        {QStringLiteral("image_file_too_large"), 400},
        {QStringLiteral("unsupported_image_media_type"), 400},
        {QStringLiteral("empty_image_file"), 400},
        {QStringLiteral("failed_to_download_image"), 400},
        {QStringLiteral("image_file_not_found"), 400},
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
    // A code the table does not list ("unsupported_value", "invalid_value", Gemini's
    // "INVALID_ARGUMENT" behind a proxy) is no status: the status a gateway put there as a string
    // ("400", LiteLLM) is, and then the error's type ("invalid_request_error" -> 400). Without one,
    // an in-band request error was a 502 server_error to the client and, when its words sounded
    // transient, retried or failed over and marked as the provider's outage (probe AB1 F3).
    if (code.isString()) {
        if (const auto status = lookup(statuses, code.toString()))
            return status;
        bool number = false;
        if (const int status = code.toString().trimmed().toInt(&number); number && status >= 400 && status < 600)
            return status;
    }
    return lookup(statuses, error.value(L("type")).toString());
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

QString inBandErrorText(QLatin1String what, const QString &code, const QString &message) {
    const QString text = message.trimmed();
    if (text.isEmpty())
        return code.isEmpty() ? QString(what) : QStringLiteral("%1: %2").arg(what, code);
    if (code.isEmpty() || text.contains(code))
        return QStringLiteral("%1: %2").arg(what, message);
    return QStringLiteral("%1 (%2): %3").arg(what, code, message);
}

QJsonObject googleErrorJson(int status, const QString &message) {
    return QJsonObject{{L("error"), QJsonObject{{L("code"), status},
                                                {L("message"), message},
                                                {L("status"), QString::fromLatin1(googleStatusName(status))}}}};
}

} // namespace sw::wire
