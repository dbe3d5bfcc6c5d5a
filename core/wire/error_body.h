#pragma once
// Error bodies as each API writes them: reading one an upstream answered with, the HTTP
// status an API's error type stands for (in-stream errors carry a type, not a status),
// and writing Google's (the fake upstream answers with it).

#include "core/wire/api.h"
#include "core/wire/rapid_json.h"

#include <QByteArray>
#include <QJsonObject>
#include <QString>
#include <optional>

namespace sw::wire {

struct ErrorBody {
    QString message;      // the API's message text, or the body when unparseable
    QString errorType;    // the API's error type/code when given
    QString providerType; // OpenAI `type` when `code` was given too
    QString param;        // OpenAI `param`
    // Google's google.rpc.RetryInfo `retryDelay` ("47s"): when the limit lifts, as a Retry-After
    // would say it. Gemini's per-minute limits read "You exceeded your current quota" and carry it.
    std::optional<qint64> retryAfterMs;
    // Google's google.rpc.QuotaFailure names a quota of one model (GoogleLimit::oneModel).
    bool quotaOfOneModel = false;
    // Google's google.rpc.ErrorInfo `reason` ("API_KEY_INVALID"), when it has the documented shape
    // of one (UPPER_SNAKE_CASE): what the refusal is about, where the message may say it in words
    // no pattern knows ("API Key not found").
    QString reason;
};

// Reads an error body in `api`'s shape. OpenAI Chat and Responses share
// {"error":{message,type,param,code}}; Anthropic {"type":"error","error":{type,message}};
// Google {"error":{code,message,status}}. Compatible servers' variants (a one-element list,
// a bare string, FastAPI's `detail`) are read too.
ErrorBody parseErrorBody(Api api, const QByteArray &body);

// What a Google error object's `details` say of its limit (the `error` member of an HTTP error
// body, or of an in-band stream error):
// - retryAfterMs: google.rpc.RetryInfo's `retryDelay`, nullopt when it has none;
// - oneModel: a google.rpc.QuotaFailure violation is a quota of one model, its quotaId
//   "…PerModel…" or a `model` among its quotaDimensions. Gemini's per-minute and per-day quotas
//   are each model's own: another model on the same key has its own.
struct GoogleLimit {
    std::optional<qint64> retryAfterMs;
    bool oneModel = false;
};
GoogleLimit googleLimit(const rj::Value *error);

// HTTP-like status for an Anthropic error type (overloaded_error -> 529), nullopt when unknown.
std::optional<int> statusForAnthropicError(const QString &type);
// HTTP-like status for an OpenAI error object: its code ("rate_limit_exceeded" -> 429, a status as a
// number or a string), else its type ("invalid_request_error" -> 400).
std::optional<int> statusForOpenAIError(const QJsonObject &error);
// HTTP-like status for a Google error status name (RESOURCE_EXHAUSTED -> 429).
std::optional<int> statusForGoogleStatus(const QString &status);
// HTTP-like status for an error body read in `api`'s shape, by its error type (one of the three
// above); nullopt when it has no type or an unknown one.
std::optional<int> statusForErrorBody(Api api, const ErrorBody &info);

// The text of an error an upstream sent inside its stream: "<what> (<code>): <message>", each
// part once. A code the message already says (a server that sends the same text in both) or
// an empty message drops the parenthesis: "<what>: <message>", "<what>: <code>".
QString inBandErrorText(QLatin1String what, const QString &code, const QString &message);

// The member of an in-band error whose sender says its failure is final: "should_retry": false,
// the in-band form of the x-should-retry header, for a stream whose head was already out. A
// Switchman writes it on its own final failure (the stream encoders); a Switchman in front of it
// reads it (the stream decoders) and does not ask that upstream again, so that gateways in a row do
// not multiply each other's retries (probe AB1 F2).
inline constexpr char kShouldRetryMember[] = "should_retry";

// Google's error body for an HTTP status: {"error":{code, message, status}}.
QJsonObject googleErrorJson(int status, const QString &message);

} // namespace sw::wire
