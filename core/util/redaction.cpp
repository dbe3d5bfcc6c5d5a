#include "core/util/redaction.h"

#include <QRegularExpression>

#include <cstring>
#include <string_view>

namespace sw::util {

namespace {

constexpr qsizetype kMinVerbatimSecret = 8;

// Key shapes of the providers Switchman speaks to (Anthropic/OpenAI "sk-…",
// Google "AIza…", Groq "gsk_", xAI "xai-"), Switchman's own gateway keys ("sm-"
// and base64url, see credentials/gateway_key.h), plus any bearer token. A token
// needs 16+ key characters after its prefix, so prose such as "sk-learn" stays.
const QRegularExpression &keyPattern() {
    static const QRegularExpression re(
        QStringLiteral("(?:\\b(?:sk|gsk|xai|rk|pk)[-_][A-Za-z0-9_\\-]{16,}|\\bsm-[A-Za-z0-9_\\-]{16,}"
                       "|\\bAIza[A-Za-z0-9_\\-]{20,})"));
    return re;
}

const QRegularExpression &bearerPattern() {
    static const QRegularExpression re(QStringLiteral("(\\bBearer\\s+)[A-Za-z0-9_\\-\\.=:+/~]{12,}"),
                                       QRegularExpression::CaseInsensitiveOption);
    return re;
}

} // namespace

bool mayHoldSecret(QByteArrayView bytes, QByteArrayView secret) {
    // Runs on every passthrough frame, so it is one pass over the bytes rather than a search per probe
    // (twelve searches cost ~20 k instructions on a 200-byte frame; this costs a few per byte).
    if (secret.size() >= kMinVerbatimSecret &&
        std::string_view(bytes.data(), size_t(bytes.size()))
                .find(std::string_view(secret.data(), size_t(secret.size()))) != std::string_view::npos)
        return true;
    // Every pattern above contains one of these probes: "sk-", "sk_", "sm-", "earer", "EARER", "AIza",
    // "xai-", "rk-", "rk_", "pk-", "pk_" (case as written). Scanning for them is far cheaper than a regex.
    const char *p = bytes.data();
    const qsizetype n = bytes.size();
    const auto dashOrUnderscore = [](char c) { return c == '-' || c == '_'; };
    for (qsizetype i = 0; i + 3 <= n; ++i) {
        switch (p[i]) {
        case 's':
            if ((p[i + 1] == 'k' && dashOrUnderscore(p[i + 2])) || (p[i + 1] == 'm' && p[i + 2] == '-'))
                return true;
            break;
        case 'r':
        case 'p':
            if (p[i + 1] == 'k' && dashOrUnderscore(p[i + 2]))
                return true;
            break;
        case 'x':
            if (i + 4 <= n && p[i + 1] == 'a' && p[i + 2] == 'i' && p[i + 3] == '-')
                return true;
            break;
        case 'A':
            if (i + 4 <= n && p[i + 1] == 'I' && p[i + 2] == 'z' && p[i + 3] == 'a')
                return true;
            break;
        case 'e':
            if (i + 5 <= n && std::memcmp(p + i + 1, "arer", 4) == 0)
                return true;
            break;
        case 'E':
            if (i + 5 <= n && std::memcmp(p + i + 1, "ARER", 4) == 0)
                return true;
            break;
        default:
            break;
        }
    }
    return false;
}

QString redactSecrets(const QString &textIn, QByteArrayView secret) {
    QString text = textIn;
    if (secret.size() >= kMinVerbatimSecret)
        text.replace(QString::fromUtf8(secret), QLatin1String(kRedacted));
    if (!mayHoldSecret(text.toUtf8()))
        return text;
    text.replace(bearerPattern(), QStringLiteral("\\1") + QLatin1String(kRedacted));
    text.replace(keyPattern(), QLatin1String(kRedacted));
    return text;
}

QByteArray redactSecrets(const QByteArray &bytes, QByteArrayView secret) {
    if (!mayHoldSecret(bytes, secret))
        return bytes;
    return redactSecrets(QString::fromUtf8(bytes), secret).toUtf8();
}

QString redactedAndTruncated(const QString &text, int maxChars, QByteArrayView secret) {
    const QString clean = redactSecrets(text, secret);
    return clean.size() > maxChars ? clean.left(maxChars) + QStringLiteral("…") : clean;
}

} // namespace sw::util
