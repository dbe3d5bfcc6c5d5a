#pragma once
#include <QString>
#include <optional>

namespace sw::failover {

// What went wrong with one upstream try; docs/failover.md, "Which failures fail over", has the table.
enum class FailureKind { Transport, ServerError, RateLimited, CredentialExhausted, NotServed, SetupError };

QString failureKindName(FailureKind k); // transport, server_error, rate_limited, ...
std::optional<FailureKind> failureKindFromName(const QString &name);

struct UpstreamFailure {
    FailureKind kind = FailureKind::ServerError;
    std::optional<int> status;
    std::optional<qint64> retryAfterMs;
    QString message;
};

// No credential of a candidate's provider can be used now, and waiting ends it (each is set aside
// after a usage or rate limit): how long until the first is back, and why, in words for the client.
struct CredentialWait {
    // What set the soonest key aside: a per-minute limit, a spent quota or credit, or a refusal that
    // is not about the key (a region block, a WAF's page, a project without billing).
    enum class Cause { RateLimit, UsageLimit, Refusal };
    qint64 remainingMs = 0;
    QString why;
    Cause cause = Cause::RateLimit;
};

} // namespace sw::failover
