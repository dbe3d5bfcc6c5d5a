#pragma once
// What the client gets when the loop ends without an answer. A failure reaches
// the client only when no follower remains or the deadline has passed.

#include "core/failover/upstream_failure.h"
#include "core/model/gateway_error.h"

#include <QList>

namespace sw::failover {

class FailureResponse {
public:
    // The last failure as the client's error: status and category per kind, the
    // candidate that failed named in the message. `answering`: the candidate had answered (a 2xx
    // head) when it failed, so a connection-level failure is a broken answer, not an unreachable host.
    static model::GatewayError forFailure(const UpstreamFailure &failure, const QString &candidate,
                                          bool answering = false);
    // Every candidate marked: Retry-After is the shortest remaining mark. `remainingMs`
    // holds one entry per chain candidate (0 = not marked); nullopt when any is unmarked.
    // The keys a request needed are set aside after a usage or rate limit (seed 004: a spend cap
    // stays 429): 429 with Retry-After when the first is back, the reason in the message.
    // No key the request could use (every one refused, or none given for a passthrough provider):
    // 502 that tells SDKs not to retry it.
    static model::GatewayError forNoCredential(const QString &message);
    // The longest wait an SDK sleeps through on a Retry-After (the openai and Anthropic SDKs honour
    // one under 60 s, and back off on their own past it).
    static constexpr qint64 kShortWaitMs = 60 * 1000;
    static model::GatewayError forCredentialWait(const QString &message, const CredentialWait &wait);
    static std::optional<qint64> retryAfterWhenAllMarked(const QList<qint64> &remainingMs);
};

} // namespace sw::failover
