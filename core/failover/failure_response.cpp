#include "core/failover/failure_response.h"

#include <algorithm>

namespace sw::failover {

using model::ErrorCategory;
using model::GatewayError;

GatewayError FailureResponse::forFailure(const UpstreamFailure &f, const QString &who, bool answering) {
    switch (f.kind) {
    case FailureKind::Transport:
        // "Unreachable" sends a user to the DNS and the base URL; a cut answer's upstream was reached.
        return GatewayError::make(502, ErrorCategory::ServerError,
                                  (answering ? QStringLiteral("upstream %1 broke off its answer: %2")
                                             : QStringLiteral("upstream %1 unreachable: %2"))
                                      .arg(who, f.message));
    case FailureKind::ServerError:
        if (f.status && *f.status >= 500) {
            // A 503's own Retry-After stands as a 429's does (RFC 9110 10.2.3; probe Q2 F4): with
            // every candidate marked the shortest mark replaces it (AttemptLoop::finishWithFailure).
            auto e = GatewayError::make(*f.status, GatewayError::categoryForStatus(*f.status),
                                        QStringLiteral("upstream %1: %2").arg(who, f.message));
            e.retryAfterMs = f.retryAfterMs;
            return e;
        }
        if (f.status && *f.status >= 400 && *f.status != 408 &&
            !f.message.contains(QStringLiteral("HTTP %1").arg(*f.status)))
            // Told as a 502: the upstream's own status stays in the words (a WAF's 403 page).
            return GatewayError::make(
                502, ErrorCategory::ServerError,
                QStringLiteral("upstream %1: HTTP %2: %3").arg(who).arg(*f.status).arg(f.message));
        return GatewayError::make(f.status == 408 ? 504 : 502,
                                  f.status == 408 ? ErrorCategory::Timeout : ErrorCategory::ServerError,
                                  QStringLiteral("upstream %1: %2").arg(who, f.message));
    case FailureKind::RateLimited: {
        auto e =
            GatewayError::make(429, ErrorCategory::RateLimit, QStringLiteral("upstream %1: %2").arg(who, f.message));
        e.retryAfterMs = f.retryAfterMs;
        return e;
    }
    case FailureKind::CredentialExhausted:
        return forNoCredential(QStringLiteral("no usable credential for %1: %2").arg(who, f.message));
    case FailureKind::NotServed:
        if (f.status == 402) { // this request too large for the credit left (refusesTheRequestsSize)
            auto e = GatewayError::make(402, ErrorCategory::InvalidRequest,
                                        QStringLiteral("upstream %1: %2").arg(who, f.message));
            e.code = QStringLiteral("insufficient_quota");
            e.shouldRetry = false; // the same request is refused the same way; a smaller one is not
            return e;
        }
        if (f.status == 429 || f.status == 413) {
            // One request over a per-minute token limit (tooLargeForTheRateLimit), or over the
            // provider's size limit: the request's own error. A 429 is retried by every SDK (and a
            // Retry-After slept): the same request would be refused the same way forever. A 413,
            // Anthropic's request_too_large and a Chat client's invalid_request_error, is not; the
            // provider's words say what limit it passed.
            auto e = GatewayError::make(413, ErrorCategory::PayloadTooLarge,
                                        QStringLiteral("upstream %1: %2").arg(who, f.message));
            e.shouldRetry = false;
            return e;
        }
        if (f.status == 400) {
            // A 400 that meant the 404 (refusesTheModel, lacksTheConversation) stays a 400 for the
            // client, with the upstream's code and param (AttemptLoop::finishWithFailure): an app
            // that restarts a conversation on previous_response_not_found still reads it.
            return GatewayError::make(400, ErrorCategory::InvalidRequest,
                                      QStringLiteral("upstream %1: %2").arg(who, f.message));
        }
        return GatewayError::make(404, ErrorCategory::NotFound, QStringLiteral("upstream %1: %2").arg(who, f.message));
    case FailureKind::SetupError:
        return GatewayError::make(502, ErrorCategory::ServerError,
                                  QStringLiteral("could not set up %1: %2").arg(who, f.message));
    }
    return GatewayError::make(502, ErrorCategory::ServerError, f.message);
}

GatewayError FailureResponse::forNoCredential(const QString &message) {
    // Only a new secret helps: an SDK's retry would be refused the same way.
    auto e = GatewayError::make(502, ErrorCategory::ServerError, message);
    e.shouldRetry = false;
    return e;
}

GatewayError FailureResponse::forCredentialWait(const QString &message, const CredentialWait &wait) {
    const QString text = QStringLiteral("%1 (every key set aside for another %2 s after %3)")
                             .arg(message)
                             .arg((wait.remainingMs + 999) / 1000)
                             .arg(wait.why);
    // A refusal that is not about rate (a region block, a project without billing) is no limit to
    // wait out: a 502 like a refused key, which an SDK does not report as "slow down".
    const bool refusal = wait.cause == CredentialWait::Cause::Refusal;
    auto e = refusal ? GatewayError::make(502, ErrorCategory::ServerError, text)
                     : GatewayError::make(429, ErrorCategory::RateLimit, text);
    e.retryAfterMs = wait.remainingMs;
    // A key back within a minute is a limit to wait out, whatever its words said (Gemini's
    // per-minute limit reads "You exceeded your current quota"): the SDKs wait a Retry-After under
    // 60 s and ask again, which answers (probe V1 F1).
    if (!refusal && wait.remainingMs <= kShortWaitMs)
        return e;
    // A spent quota or credit is OpenAI's insufficient_quota (a 429 too): what apps read to say
    // "top up the account" rather than "slow down".
    if (wait.cause == CredentialWait::Cause::UsageLimit)
        e.code = QStringLiteral("insufficient_quota");
    // Minutes to hours: an SDK honours any Retry-After (twice, by default) before the app hears
    // of the limit. The Retry-After still says when the first key is back.
    e.shouldRetry = false;
    return e;
}

std::optional<qint64> FailureResponse::retryAfterWhenAllMarked(const QList<qint64> &remainingMs) {
    if (remainingMs.isEmpty())
        return std::nullopt;
    qint64 shortest = remainingMs.first();
    for (qint64 left : remainingMs) {
        if (left <= 0)
            return std::nullopt; // one candidate is usable now: no reason to make the client wait
        shortest = std::min(shortest, left);
    }
    return shortest;
}

} // namespace sw::failover
