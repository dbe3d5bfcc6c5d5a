#include "core/failover/retry_policy.h"

#include <QRandomGenerator>

#include <algorithm>

namespace sw::failover {

RetryPolicy::Random RetryPolicy::systemRandom() {
    return [](qint64 bound) { return bound > 0 ? QRandomGenerator::global()->bounded(bound) : 0; };
}

std::optional<qint64> RetryPolicy::nextDelay(const RetryInput &in, const Random &random) {
    const FailureKind k = in.failure.kind;
    if (k != FailureKind::ServerError && k != FailureKind::RateLimited && k != FailureKind::Transport)
        return std::nullopt; // credential, not-served and setup failures are not helped by waiting
    // SPEC 3: a 408, 429, 5xx or a connection's failure is retried; another 4xx never (a 403
    // concurrency cap is rate_limited, yet retrying it adds to the load that set it off).
    if (const auto s = in.failure.status; s && *s >= 400 && *s < 500 && *s != 408 && *s != 429)
        return std::nullopt;
    if (in.afterContent)
        return std::nullopt;
    // A gateway or proxy that already retried says so in its error's head (`x-should-retry: false`);
    // asked again, its upstreams are asked again, and each hop's retries multiply the next one's
    // (probe AB1 F2). The SDKs obey it over their own rules. A final failure that arrives inside a
    // 200 stream carries no head: a streaming Switchman behind another still has its walk retried.
    if (in.upstreamSaidFinal)
        return std::nullopt;
    const int allowed = in.hasFollower ? in.retriesBeforeFailover : in.maxRetries;
    if (in.retriesSoFar >= allowed)
        return std::nullopt;
    // 500 ms doubling; the shift is bounded so a huge retry count cannot overflow.
    qint64 delay = qint64(500) << std::min(in.retriesSoFar, 20);
    delay += random(delay / 4 + 1);
    if (in.failure.retryAfterMs) {
        if (*in.failure.retryAfterMs > in.maxRetryDelayMs)
            return std::nullopt; // a longer Retry-After ends the attempt as a classified failure
        delay = std::max(delay, *in.failure.retryAfterMs);
    }
    delay = std::min(delay, in.maxRetryDelayMs);
    if (in.deadlineAtMs && in.nowMs + delay >= *in.deadlineAtMs)
        return std::nullopt;
    if (in.budgetEndsAtMs && in.nowMs + delay >= *in.budgetEndsAtMs)
        return std::nullopt;
    return delay;
}

bool RetryPolicy::upstreamSaysFinal(const upstream::HeaderList &headers) {
    return upstream::headerValue(headers, "x-should-retry").trimmed().compare("false", Qt::CaseInsensitive) == 0;
}

} // namespace sw::failover
