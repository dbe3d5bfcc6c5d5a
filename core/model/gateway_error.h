#pragma once
#include <QString>
#include <optional>

namespace sw::model {

// What went wrong, independent of wire format. Each inbound codec maps the
// category onto its own error type string and status.
enum class ErrorCategory {
    InvalidRequest,   // 400
    Authentication,   // 401
    Permission,       // 403
    NotFound,         // 404
    Conflict,         // 409
    PayloadTooLarge,  // 413
    UnsupportedMedia, // 415
    RateLimit,        // 429
    ServerError,      // 500 / 502
    Overloaded,       // 503 / 529
    Timeout,          // 504
};

struct GatewayError {
    int status = 500;
    ErrorCategory category = ErrorCategory::ServerError;
    QString message;
    std::optional<qint64> retryAfterMs;
    // An upstream's own error, so a client of the same API gets it as sent and a client of
    // another format gets the equivalent code (formats/translation_rules.md). Empty when
    // the gateway made the error.
    QString upstreamApi;  // the API that answered with it
    QString code;         // OpenAI `code` (else its `type`), Anthropic error type, Google status
    QString providerType; // OpenAI `type` when `code` was given
    QString param;        // OpenAI `param`
    // x-should-retry, which the OpenAI and Anthropic SDKs obey over their own rules: false when a
    // retry the SDK would make cannot be answered (a spent budget, every key parked for a usage
    // limit or refused), so the app hears of it now and not after sleeping the Retry-After.
    std::optional<bool> shouldRetry;
    // x-switchman-budget ("exceeded", "in-flight") when the tenant's budget refused the request or
    // its next try; empty otherwise.
    QByteArray budget;

    static GatewayError make(int status, ErrorCategory c, const QString &m) {
        return {status, c, m, {}, {}, {}, {}, {}, {}, {}};
    }

    // The meaning of an upstream error that every format can say, or Portable::None.
    enum class Portable { None, ContextLength, RateLimit, Overloaded, Authentication };
    Portable portable() const;
    // Category that fits an HTTP status from an upstream.
    static ErrorCategory categoryForStatus(int status);
};

} // namespace sw::model
