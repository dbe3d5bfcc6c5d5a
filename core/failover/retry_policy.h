#pragma once
// In-attempt retries (docs/failover.md): whether one more try of the same candidate
// is allowed, and after how long. Pure; the random source is injected so the
// jitter is testable.

#include "core/failover/upstream_failure.h"
#include "core/upstream/http_types.h"

#include <functional>
#include <optional>

namespace sw::failover {

struct RetryInput {
    UpstreamFailure failure;
    bool hasFollower = false;       // with a follower: retriesBeforeFailover, else maxRetries
    int retriesSoFar = 0;           // tries of this attempt already retried
    int retriesBeforeFailover = 0;  // provider setting
    int maxRetries = 0;             // provider setting
    qint64 maxRetryDelayMs = 10000; // failover.maxRetryDelayMs
    qint64 nowMs = 0;
    std::optional<qint64> deadlineAtMs; // no retry that would start at or after it
    // The attempt budget's end, while it is armed: a wait that would not end before it is not
    // begun (SPEC 3: every in-attempt wait lies inside the budget); the attempt fails over now.
    std::optional<qint64> budgetEndsAtMs;
    // The failed try had said something (text, thinking, a tool call): a non-streaming answer that
    // broke after content is not asked for again from the same candidate, which would bill the
    // generation twice (SPEC 3: never retried after the attempt committed).
    bool afterContent = false;
    // The upstream said its failure is final (x-should-retry: false on its error answer: a gateway or
    // proxy that already retried, the SDKs' own convention): not asked again. The follower still is.
    bool upstreamSaidFinal = false;
};

class RetryPolicy {
public:
    // Returns a value in [0, bound) (QRandomGenerator in production).
    using Random = std::function<qint64(qint64 bound)>;
    static Random systemRandom();

    // The delay before the next try, or nullopt when the attempt must end now (the
    // failure is then classified for failover). Backoff 500 ms · 2^n plus up to 25 %
    // jitter; a Retry-After raises it; one longer than maxRetryDelayMs ends the attempt.
    static std::optional<qint64> nextDelay(const RetryInput &in, const Random &random);

    // An error answer's `x-should-retry: false`: the upstream's word that asking it again is useless.
    // Only `false` counts: a `true` never makes a retry of what SPEC 3 does not retry (a 400).
    static bool upstreamSaysFinal(const upstream::HeaderList &headers);
};

} // namespace sw::failover
