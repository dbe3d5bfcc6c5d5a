#include "core/credentials/park_policy.h"

#include "core/config/config.h"
#include "core/util/duration.h"

#include <QDateTime>
#include <QRegularExpression>

namespace sw::credentials {

namespace {
constexpr qint64 kMaxParkMs = 7LL * 24 * 3600 * 1000; // the longest a configured reset may be; hints too

// One reset header value as a delay: an RFC 3339 time, a duration, epoch ms / epoch s, or seconds.
std::optional<qint64> resetValue(const QByteArray &raw, qint64 nowEpochMs) {
    const QString v = QString::fromLatin1(raw).trimmed();
    if (v.isEmpty())
        return std::nullopt;
    const QDateTime when = QDateTime::fromString(v, Qt::ISODateWithMs);
    if (when.isValid())
        return when.toMSecsSinceEpoch() - nowEpochMs;
    if (auto d = util::parseGoDuration(v))
        return d;
    bool ok = false;
    const double n = v.toDouble(&ok);
    if (!ok)
        return std::nullopt;
    if (n > 1e12)
        return qint64(n) - nowEpochMs;
    if (n > 1e9)
        return qint64(n * 1000) - nowEpochMs;
    return qint64(n * 1000);
}

bool usable(std::optional<qint64> ms) {
    return ms && *ms > 0;
}

// The words a failure is judged by: the classification text when there is one (the upstream's own
// words, with what it echoed of the request masked), else the message, as the failover classifier reads them.
const QString &judgedText(const CredentialFailure &f) {
    return f.classification.isEmpty() ? f.message : f.classification;
}

// A 403 that blames the key itself (Anthropic's "Your API key does not have permission", a revoked
// or disabled key or account). A WAF page, "Country, region, or territory not supported" or "Project
// does not have access to model X" does not: another model, a minute later, may well pass. xAI names
// the "API key ID" in every refusal, its content check's too: naming the key is no word against it.
const QRegularExpression &keyWordingPattern() {
    static const QRegularExpression re(
        QStringLiteral(
            "api[ _-]?key(?![ _-]?id\\b)|access[ _-]?key|invalid[ _-]?(x-)?(api[ _-]?)?(key|token|credential)"
            "|(key|token|credential)s? (is |was |has been )?(invalid|revoked|disabled|expired|deactivated)"
            "|revoked|(account|organi[sz]ation|user)\\b.{0,40}\\b(disabled|suspended|deactivated|banned)"
            "|authentication_error|invalid authentication|oauth token"
            "|\\b(key|token)\\b.{0,30}\\b(lacks|does not (have|meet)|doesn't have|not (allowed|permitted))"),
        QRegularExpression::CaseInsensitiveOption);
    return re;
}
bool keyWording(const QString &text) {
    return keyWordingPattern().match(text).hasMatch();
}

const QRegularExpression &usageWordingPattern() {
    static const QRegularExpression re(
        QStringLiteral("usage.?limit|insufficient.?quota|quota.?exceeded|exceeded your current quota|credit balance"
                       "|spend(ing)?.?(cap|limit)|billing.?hard.?limit|plan and billing|billing details"
                       "|out of credits"),
        QRegularExpression::CaseInsensitiveOption);
    return re;
}

// A wrong, deleted or expired key refused with a 400: Google's ErrorInfo reason (API_KEY_INVALID,
// API_KEY_EXPIRED) and its words ("API key not valid", "API Key not found" for a deleted key, "API
// key expired"), and xAI's "Incorrect API key provided" (probe AA4 F4). Words no ordinary 400 (a
// bad model, a bad parameter) says of itself; where one quotes the request they are masked
// (FailureClassifier::withoutEchoes).
const QRegularExpression &keyRefusedWith400Pattern() {
    static const QRegularExpression re(
        QStringLiteral("API_KEY_(INVALID|EXPIRED)|API key (not valid|not found|expired)|incorrect API key provided"),
        QRegularExpression::CaseInsensitiveOption);
    return re;
}

// A refusal of what this request carries, its prompt or a file it names, by a provider whose key is in
// good standing: xAI's safety check ("Content violates usage guidelines. ... Failed check:
// SAFETY_CHECK_TYPE_BIO"), OpenRouter's moderation ("requires moderation on OpenRouter. Your input was
// flagged"), Gemini's file of another project ("You do not have permission to access the File X") or
// still processing ("The File X is not in an ACTIVE state").
const QRegularExpression &contentRefusalPattern() {
    static const QRegularExpression re(
        QStringLiteral("content violates|usage guidelines|violat\\w* (our |the )?(usage|content) polic"
                       "|content (management |moderation )?polic(y|ies)|safety[ _]?(check|system|filter)"
                       "|requires moderation|\\b(input|prompt|content|request|message|image|text)s?\\W{1,3}"
                       "(was |were |has been |is |are )?flagged\\b"
                       "|permission to access the file\\b|\\bfile\\b.{0,80}\\bnot in an active state"),
        QRegularExpression::CaseInsensitiveOption);
    return re;
}

const QRegularExpression &accountRefusedWith400Pattern() {
    // Google's status, which the judged text starts with ("FAILED_PRECONDITION: <message>"): never
    // the same words anywhere in a message that may quote the request (probe EV 2).
    static const QRegularExpression re(QStringLiteral("^FAILED_PRECONDITION\\b"));
    return re;
}

// An account or organisation the provider has shut, said with a 400: Anthropic's "This organization
// has been disabled.", Groq's "organization_restricted" ("Organization has been restricted"). The
// same words on a 403 are keyWording's. Masked where the request's own strings say them
// (FailureClassifier::withoutEchoes), as every pattern of credentialSignalPatterns is.
const QRegularExpression &accountShutWith400Pattern() {
    static const QRegularExpression re(
        // Not a limit on one model or feature ("organization is restricted from using …", "access to
        // this model is disabled for your account"): the words say what was shut, and nothing after.
        QStringLiteral("\\b(account|organi[sz]ation) (has been|was|is) (disabled|suspended|deactivated|banned"
                       "|restricted)\\b(?!\\s*(from|to|for)\\b)|\\borgani[sz]ation_(disabled|suspended|restricted)\\b"),
        QRegularExpression::CaseInsensitiveOption);
    return re;
}

// "try again in 1h 30m", "retry after 20 seconds", "resets in 3 hours".
const QRegularExpression &relativeResetPattern() {
    static const QRegularExpression re(
        QStringLiteral("(?:try again|retry|reset|resets|available)\\s+(?:in|after)\\s+((?:\\d+(?:\\.\\d+)?\\s*"
                       "(?:ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?)\\b[\\s,]*(?:and\\s+)?)+)"),
        QRegularExpression::CaseInsensitiveOption);
    return re;
}

// "resets at 2026-01-01T00:00:00Z"
const QRegularExpression &isoResetPattern() {
    static const QRegularExpression re(
        QStringLiteral("(?:resets?|available|again)\\s+(?:at|on)\\s+(\\d{4}-\\d{2}-\\d{2}"
                       "[T ]\\d{2}:\\d{2}(?::\\d{2}(?:\\.\\d+)?)?(?:Z|[+-]\\d{2}:?\\d{2})?)"),
        QRegularExpression::CaseInsensitiveOption);
    return re;
}

// Anthropic's spend limit: "You will regain access on 2026-12-01 at 00:00 UTC." A time without a
// zone is the provider's, read as UTC.
const QRegularExpression &dateAtResetPattern() {
    static const QRegularExpression re(
        QStringLiteral("(?:access|resets?|available|again)\\s+on\\s+(\\d{4}-\\d{2}-\\d{2})\\s+at\\s+(\\d{1,2}:\\d{2})"
                       "(?::\\d{2})?\\s*(?:utc|gmt|z)?\\b"),
        QRegularExpression::CaseInsensitiveOption);
    return re;
}

// "reset at 1767225600" / Claude's "usage limit reached|1767225600".
const QRegularExpression &epochResetPattern() {
    static const QRegularExpression re(
        QStringLiteral("(?:(?:resets?|available|again)\\s+at\\s+|\\|)(\\d{10}|\\d{13})\\b"),
        QRegularExpression::CaseInsensitiveOption);
    return re;
}

// "resets at 5pm", "resets at 17:30 UTC".
const QRegularExpression &clockResetPattern() {
    static const QRegularExpression re(
        QStringLiteral("(?:resets?|available|again)\\s+at\\s+(\\d{1,2})(?::(\\d{2}))?\\s*(am|pm)?\\s*(utc|gmt|z)?\\b"),
        QRegularExpression::CaseInsensitiveOption);
    return re;
}
} // namespace

const QList<const QRegularExpression *> &credentialSignalPatterns() {
    static const QList<const QRegularExpression *> all{&usageWordingPattern(),       &keyWordingPattern(),
                                                       &keyRefusedWith400Pattern(),  &accountRefusedWith400Pattern(),
                                                       &accountShutWith400Pattern(), &relativeResetPattern(),
                                                       &isoResetPattern(),           &epochResetPattern(),
                                                       &clockResetPattern(),         &dateAtResetPattern()};
    return all;
}

bool usageWording(const QString &text) {
    return usageWordingPattern().match(text).hasMatch();
}

bool keyRefusedWith400(const QString &text) {
    return keyRefusedWith400Pattern().match(text).hasMatch();
}

bool refusesTheContent(std::optional<int> status, const QString &text) {
    // Words against the key or the account win: a suspension may well cite the usage policies.
    return (status == 403 || status == 400) && contentRefusalPattern().match(text).hasMatch() && !keyWording(text) &&
           !keyRefusedWith400(text);
}

bool refusesTheAccount(std::optional<int> status, const QString &text) {
    return status == 400 &&
           (accountRefusedWith400Pattern().match(text).hasMatch() ||
            accountShutWith400Pattern().match(text).hasMatch()) &&
           !refusesTheContent(status, text);
}

bool rejectsTheKey(std::optional<int> status, const QString &text) {
    return (status == 401 && !usageWording(text)) || (status == 400 && keyRefusedWith400(text));
}

QString parkReasonName(ParkReason reason) {
    switch (reason) {
    case ParkReason::UsageLimit:
        return QStringLiteral("usage_limit");
    case ParkReason::RateLimit:
        return QStringLiteral("rate_limit");
    case ParkReason::Auth:
        return QStringLiteral("auth");
    case ParkReason::Forbidden:
        return QStringLiteral("forbidden");
    case ParkReason::None:
        break;
    }
    return {};
}

ParkDefaults parkDefaultsFor(const config::Config &config, const config::ProviderConfig &provider) {
    ParkDefaults d;
    d.rateLimitParkMs = config.failover.rateLimitParkMs;
    d.exhaustedResetMs = provider.exhaustedResetMs != config::ProviderConfig().exhaustedResetMs
                             ? provider.exhaustedResetMs
                             : config.failover.exhaustedResetMs;
    return d;
}

std::optional<qint64> resetHintFromHeaders(const upstream::HeaderList &headers, qint64 nowEpochMs) {
    // Prefer the budget that is used up (remaining 0); without one, the latest reset.
    std::optional<qint64> exhausted;
    std::optional<qint64> latest;
    for (const auto &[rawName, value] : headers) {
        const QByteArray name = rawName.toLower();
        QByteArray remainingName;
        if (name.startsWith("anthropic-ratelimit-") && name.endsWith("-reset"))
            remainingName = name.chopped(int(qstrlen("-reset"))) + "-remaining";
        else if (name.startsWith("x-ratelimit-reset-") && name != "x-ratelimit-reset-ms")
            remainingName = "x-ratelimit-remaining-" + name.mid(int(qstrlen("x-ratelimit-reset-")));
        else
            continue;
        const auto ms = resetValue(value, nowEpochMs);
        if (!usable(ms))
            continue;
        latest = std::max(latest.value_or(0), *ms);
        const QByteArray remaining = upstream::headerValue(headers, remainingName).trimmed();
        if (remaining == "0")
            exhausted = std::max(exhausted.value_or(0), *ms);
    }
    return exhausted ? exhausted : latest;
}

std::optional<qint64> resetHintFromText(const QString &text, qint64 nowEpochMs) {
    const QRegularExpression &relative = relativeResetPattern();
    static const QRegularExpression part(QStringLiteral("(\\d+(?:\\.\\d+)?)\\s*(ms|milli|s|sec|m|min|h|hr|hour)"),
                                         QRegularExpression::CaseInsensitiveOption);
    if (const auto m = relative.match(text); m.hasMatch()) {
        double ms = 0;
        for (auto it = part.globalMatch(m.captured(1)); it.hasNext();) {
            const auto p = it.next();
            const double v = p.captured(1).toDouble();
            const QString unit = p.captured(2).toLower();
            ms += unit.startsWith(QLatin1String("ms")) || unit.startsWith(QLatin1String("milli")) ? v
                  : unit.startsWith(QLatin1Char('h'))                                             ? v * 3600000
                  : unit.startsWith(QLatin1Char('m'))                                             ? v * 60000
                                                                                                  : v * 1000;
        }
        if (ms > 0)
            return qint64(ms);
    }
    // "resets at 2026-01-01T00:00:00Z" / "reset at 1767225600" / Claude's "usage limit reached|1767225600".
    const QRegularExpression &isoAt = isoResetPattern();
    if (const auto m = isoAt.match(text); m.hasMatch()) {
        QString iso = m.captured(1);
        iso.replace(QLatin1Char(' '), QLatin1Char('T'));
        QDateTime when = QDateTime::fromString(iso, Qt::ISODateWithMs);
        if (when.isValid())
            return when.toMSecsSinceEpoch() - nowEpochMs;
    }
    // Anthropic's "regain access on 2026-12-01 at 00:00 UTC": the key was parked an hour and asked
    // again every hour of a month's limit (probe K4 3).
    if (const auto m = dateAtResetPattern().match(text); m.hasMatch()) {
        const QDate day = QDate::fromString(m.captured(1), Qt::ISODate);
        const QTime time =
            QTime::fromString(m.captured(2).rightJustified(5, QLatin1Char('0')), QStringLiteral("HH:mm"));
        if (day.isValid() && time.isValid())
            return QDateTime(day, time, Qt::UTC).toMSecsSinceEpoch() - nowEpochMs;
    }
    const QRegularExpression &epochAt = epochResetPattern();
    if (const auto m = epochAt.match(text); m.hasMatch()) {
        const qint64 n = m.captured(1).toLongLong();
        return (m.captured(1).size() == 13 ? n : n * 1000) - nowEpochMs;
    }
    // "resets at 5pm", "resets at 17:30 UTC": the next such wall-clock time (local unless UTC is said).
    const QRegularExpression &clockAt = clockResetPattern();
    if (const auto m = clockAt.match(text); m.hasMatch()) {
        int hour = m.captured(1).toInt();
        const int minute = m.captured(2).isEmpty() ? 0 : m.captured(2).toInt();
        const QString ampm = m.captured(3).toLower();
        if (!ampm.isEmpty() && hour >= 1 && hour <= 12)
            hour = hour % 12 + (ampm == QLatin1String("pm") ? 12 : 0);
        if (hour > 23 || minute > 59 || (ampm.isEmpty() && m.captured(2).isEmpty()))
            return std::nullopt; // "resets at 5" alone is not a time
        const bool utc = !m.captured(4).isEmpty();
        const Qt::TimeSpec spec = utc ? Qt::UTC : Qt::LocalTime;
        const QDateTime now = QDateTime::fromMSecsSinceEpoch(nowEpochMs, spec);
        QDateTime when(now.date(), QTime(hour, minute), spec);
        if (when.toMSecsSinceEpoch() <= nowEpochMs)
            when = when.addDays(1);
        return when.toMSecsSinceEpoch() - nowEpochMs;
    }
    return std::nullopt;
}

ParkReason parkReasonFor(const CredentialFailure &f) {
    const int status = f.status.value_or(0);
    const QString &text = judgedText(f);
    if (f.usageLimit || usageWording(text))
        return ParkReason::UsageLimit;
    if (rejectsTheKey(f.status, text))
        return ParkReason::Auth;
    if (status == 403 || refusesTheAccount(f.status, text))
        return keyWording(text) ? ParkReason::Auth : ParkReason::Forbidden;
    if (status == 429)
        return ParkReason::RateLimit; // opaque: no usage wording, most often a per-minute limit
    return ParkReason::UsageLimit;    // in-band, no status: the classifier blamed the credential for its wording
}

qint64 parkDurationMs(ParkReason reason, const CredentialFailure &f, const ParkDefaults &d, qint64 nowEpochMs) {
    std::optional<qint64> hint;
    if (usable(f.retryAfterMs))
        hint = f.retryAfterMs;
    else if (auto h = resetHintFromHeaders(f.headers, nowEpochMs); usable(h))
        hint = h;
    else if (auto t = resetHintFromText(judgedText(f), nowEpochMs); usable(t))
        hint = t;
    if (hint)
        return std::min(*hint, kMaxParkMs);
    return reason == ParkReason::RateLimit || reason == ParkReason::Forbidden ? d.rateLimitParkMs : d.exhaustedResetMs;
}

CredentialVerdict judgeCredentialFailure(const CredentialFailure &f, const ParkDefaults &d, qint64 nowEpochMs) {
    CredentialVerdict v;
    const QString &text = judgedText(f);
    if (!f.usageLimit && !usageWording(text) && rejectsTheKey(f.status, text)) {
        v.reject = true; // a wrong key stays wrong: no timer brings it back, a new secret does
        v.reason = ParkReason::Auth;
        return v;
    }
    v.reason = parkReasonFor(f);
    v.durationMs = parkDurationMs(v.reason, f, d, nowEpochMs);
    return v;
}

QString redactCredentialError(QString text, const QList<QByteArray> &secrets) {
    static const QString mask = QStringLiteral("[redacted]");
    for (const QByteArray &s : secrets)
        if (s.size() >= 4)
            text.replace(QString::fromUtf8(s), mask);
    static const QRegularExpression shaped(
        QStringLiteral("(?:\\b(?:sk|pk|rk|sess|key|api)[-_][A-Za-z0-9_\\-]{6,})|(?:(?:Bearer|Basic)\\s+[^\\s\"',]+)"
                       "|(?:[A-Za-z0-9_\\-]{32,})"),
        QRegularExpression::CaseInsensitiveOption);
    text.replace(shaped, mask);
    if (text.size() > 300)
        text = text.left(299) + QChar(0x2026);
    return text;
}

} // namespace sw::credentials
