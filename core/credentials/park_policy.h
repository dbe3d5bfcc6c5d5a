#pragma once
// How long a credential sits out after the provider refused it.
// Pure functions: no clock, no state; the caller passes the wall time.
//
// Order: Retry-After (the family the classifier already read) when given; else
// the provider's own reset hint (Anthropic `anthropic-ratelimit-*-reset`,
// OpenAI `x-ratelimit-reset-*`, "try again in 20s" / "resets at ..." text);
// else per reason: a usage limit `exhaustedResetMs`, an opaque 429
// `rateLimitParkMs`. A 401 is not parked at all: it is rejected until the
// secret changes. A 403 is `Auth` (parked `exhaustedResetMs`, un-parked by a new
// secret) only when its text is about the key; any other 403 (a WAF page, a
// region block) is `Forbidden`: set aside `rateLimitParkMs`,
// like an opaque 429, since it says nothing about the key. A 401 or 403 that names the model asked for
// never reaches the pools (FailureClassifier::namesTheModel): it is about that model alone.

#include "core/upstream/http_types.h"

#include <QList>
#include <QRegularExpression>
#include <QString>
#include <optional>

namespace sw::config {
struct Config;
struct ProviderConfig;
} // namespace sw::config

namespace sw::credentials {

enum class ParkReason { None, UsageLimit, RateLimit, Auth, Forbidden };
QString parkReasonName(ParkReason reason); // usage_limit, rate_limit, auth, forbidden; empty for None

struct ParkDefaults {
    qint64 rateLimitParkMs = 60 * 1000;
    qint64 exhaustedResetMs = 3600 * 1000;
};
// failover.* of the configuration; a provider's own exhaustedResetMs wins when it was changed from the default.
ParkDefaults parkDefaultsFor(const config::Config &config, const config::ProviderConfig &provider);

// What the failover loop knows of a failure that was blamed on the credential.
struct CredentialFailure {
    std::optional<int> status; // HTTP status when the upstream answered with one
    QString message;           // the (already redacted) error text: kept as lastError
    // Whose request the failure answered. The provider's words may quote that request: while the key
    // is out, they reach that tenant's errors alone; every other tenant reads the status and reason.
    QString tenant;
    // Text read only for the reason and hints, never kept (e.g. errorType: message, echoes of the
    // request masked); when set, it is judged instead of the message.
    QString classification;
    bool usageLimit = false;            // the adapter already knows it is a usage limit
    std::optional<qint64> retryAfterMs; // Retry-After family from the headers (thrown errors only)
    upstream::HeaderList headers;       // the error response's headers, when there were any
};

struct CredentialVerdict {
    bool reject = false; // rejectsTheKey: out until the secret changes; durationMs is then 0
    ParkReason reason = ParkReason::None;
    qint64 durationMs = 0;
};

// The reset time a provider announced in its rate-limit headers, as a delay from now (the largest wins:
// the credential is usable only once every exhausted budget refilled). Anthropic sends RFC 3339 times,
// OpenAI durations such as "6m0s", "1.5s" or "120ms".
std::optional<qint64> resetHintFromHeaders(const upstream::HeaderList &headers, qint64 nowEpochMs);
// "try again in 20s", "retry after 2 minutes", "resets in 3h", "resets at 2026-01-01T00:00:00Z",
// "resets at 1767225600" (epoch seconds), "resets at 5pm" / "resets at 17:30 UTC" (next such time).
std::optional<qint64> resetHintFromText(const QString &text, qint64 nowEpochMs);

// Words an upstream uses for a spent quota, credit or plan (a usage limit), never for a per-minute
// rate limit: OpenAI's rate-limit text links to its billing page and is no such thing.
bool usageWording(const QString &text);
// A 400 that refuses the key itself, as Google reports a wrong, deleted or expired key
// (INVALID_ARGUMENT, reason API_KEY_INVALID: "API key not valid", "API Key not found", "API key
// expired") and xAI a wrong or revoked one ("Incorrect API key provided").
bool keyRefusedWith400(const QString &text);
// The key is wrong (401, or Google's 400 above) rather than spent: out until its secret changes.
bool rejectsTheKey(std::optional<int> status, const QString &text);
// A 403 (or 400) that refuses what this request carries, not the key: a provider's content check
// (xAI's "Content violates usage guidelines", OpenRouter's "Your input was flagged", moderation,
// a safety check) or a file the request names (Gemini's "You do not have permission to access the
// File X", "The File X is not in an ACTIVE state"). Never with words against the key or account
// (which win). The requester's refusal alone: the shared key stays in service for every tenant.
bool refusesTheContent(std::optional<int> status, const QString &text);
// A 400 that refuses the account or project behind the key rather than the request, as Google
// reports a region it does not serve or a project without billing (FAILED_PRECONDITION: "User
// location is not supported for the API use", "... without a billing account linked"): judged
// as a 403 that is not about the key (a refusal: the key set aside, the next candidate tried).
// Not a FAILED_PRECONDITION about a file the request names (refusesTheContent).
bool refusesTheAccount(std::optional<int> status, const QString &text);

// The patterns the functions above read a credential's fate from (usage and key wording, reset
// hints). A key is shared by every tenant, so none of them may be read from words the upstream only
// echoed from the request (FailureClassifier::withoutEchoes masks such matches first).
const QList<const QRegularExpression *> &credentialSignalPatterns();

ParkReason parkReasonFor(const CredentialFailure &failure);
// The parking time for a reason that is already decided.
qint64 parkDurationMs(ParkReason reason, const CredentialFailure &failure, const ParkDefaults &defaults,
                      qint64 nowEpochMs);
// Reject or park, why, and for how long.
CredentialVerdict judgeCredentialFailure(const CredentialFailure &failure, const ParkDefaults &defaults,
                                         qint64 nowEpochMs);

// Error text safe to keep and show: known secrets and anything shaped like a key are masked.
QString redactCredentialError(QString text, const QList<QByteArray> &secrets = {});

} // namespace sw::credentials
