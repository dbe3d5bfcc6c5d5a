#include "core/util/redaction.h"

#include <QRegularExpression>

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
    if (secret.size() >= kMinVerbatimSecret && bytes.indexOf(secret) >= 0)
        return true;
    // Every pattern above contains one of these; scanning for them is far cheaper than a regex.
    for (const char *probe : {"sk-", "sk_", "sm-", "earer", "EARER", "AIza", "xai-", "rk-", "rk_", "pk-", "pk_"})
        if (bytes.indexOf(QByteArrayView(probe)) >= 0)
            return true;
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
