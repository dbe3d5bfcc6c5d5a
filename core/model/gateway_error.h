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

    static GatewayError make(int status, ErrorCategory c, const QString &m) { return {status, c, m, {}}; }
    // Category that fits an HTTP status from an upstream.
    static ErrorCategory categoryForStatus(int status);
};

} // namespace sw::model
