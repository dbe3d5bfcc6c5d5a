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

namespace {
// The probes that end in '-' or '_' ("sk-", "sk_", "sm-", "rk-", "rk_", "pk-", "pk_", "xai-"),
// seen from that last byte at `i`.
bool probeEndsAt(const char *p, qsizetype i) {
    if (i >= 2 && p[i - 1] == 'k' && (p[i - 2] == 's' || p[i - 2] == 'r' || p[i - 2] == 'p'))
        return true;
    if (p[i] != '-')
        return false;
    return (i >= 2 && p[i - 2] == 's' && p[i - 1] == 'm') ||
           (i >= 3 && p[i - 3] == 'x' && p[i - 2] == 'a' && p[i - 1] == 'i');
}

// Calls `found` with each position of `c` in [p, end) until it returns true.
template <typename Found> bool anyOf(const char *p, const char *end, char c, Found found) {
    for (const char *at = p; at < end;) {
        const auto *hit = static_cast<const char *>(std::memchr(at, c, size_t(end - at)));
        if (!hit)
            return false;
        if (found(hit))
            return true;
        at = hit + 1;
    }
    return false;
}
} // namespace

namespace {
// The forms an upstream may quote a key back in: as sent, lower- and upper-cased, percent-encoded
// (a key with "/", "+" or "="), base64 (some echo the header they got), JSON-escaped ("\/"), and
// hex in either case. Made once per key and thread: frames of one answer share its key.
const QList<QByteArray> &secretForms(QByteArrayView secret) {
    thread_local QByteArray key;
    thread_local QList<QByteArray> forms;
    if (key != secret) {
        key = secret.toByteArray();
        forms.clear();
        for (const QByteArray &form : {key, key.toLower(), key.toUpper(), key.toPercentEncoding(), key.toBase64(),
                                       QByteArray(key).replace("/", "\\/"), key.toHex(), key.toHex().toUpper()})
            if (form.size() >= kMinVerbatimSecret && !forms.contains(form))
                forms << form;
    }
    return forms;
}
} // namespace

QStringList secretTextForms(QByteArrayView secret) {
    QStringList out;
    if (secret.size() < kMinVerbatimSecret)
        return out;
    for (const QByteArray &form : secretForms(secret)) {
        const QString text = QString::fromUtf8(form);
        if (!out.contains(text, Qt::CaseInsensitive))
            out << text;
    }
    return out;
}

bool mayHoldSecret(QByteArrayView bytes, QByteArrayView secret) {
    // Runs on every passthrough frame. Every pattern above contains one of these probes (case as
    // written): "sk-", "sk_", "sm-", "rk-", "rk_", "pk-", "pk_", "xai-", "AIza", "earer", "EARER".
    // They are found from one of their bytes with memchr (the separators, 'z', the last 'r' or
    // 'R'), rather than by a search per probe: far cheaper than a regex, and than
    // eleven searches (~20 k instructions on a 200-byte frame).
    if (secret.size() >= kMinVerbatimSecret) {
        const std::string_view text(bytes.data(), size_t(bytes.size()));
        for (const QByteArray &form : secretForms(secret))
            if (text.find(std::string_view(form.constData(), size_t(form.size()))) != std::string_view::npos)
                return true;
    }
    const char *p = bytes.data();
    const char *const end = p + bytes.size();
    const auto separator = [p](const char *at) { return probeEndsAt(p, at - p); };
    if (anyOf(p, end, '-', separator) || anyOf(p, end, '_', separator))
        return true;
    if (anyOf(p, end, 'z', [p, end](const char *z) {
            return z - p >= 2 && z + 1 < end && z[-2] == 'A' && z[-1] == 'I' && z[1] == 'a';
        }))
        return true;
    // "earer" and "EARER", from their last byte.
    return anyOf(p, end, 'r', [p](const char *r) { return r - p >= 4 && std::memcmp(r - 4, "earer", 5) == 0; }) ||
           anyOf(p, end, 'R', [p](const char *r) { return r - p >= 4 && std::memcmp(r - 4, "EARER", 5) == 0; });
}

QString redactSecrets(const QString &textIn, QByteArrayView secret) {
    QString text = textIn;
    if (secret.size() >= kMinVerbatimSecret)
        // Any case of each form: an upstream that lower-cased or hex-encoded the key still quotes it.
        for (const QByteArray &form : secretForms(secret))
            text.replace(QString::fromUtf8(form), QLatin1String(kRedacted), Qt::CaseInsensitive);
    if (!mayHoldSecret(text.toUtf8()))
        return text;
    text.replace(bearerPattern(), QStringLiteral("\\1") + QLatin1String(kRedacted));
    text.replace(keyPattern(), QLatin1String(kRedacted));
    return text;
}

QString redactErrorText(const QString &text, QByteArrayView secret) {
    // A provider that quotes the key it refused masked shows its start and end around stars
    // (OpenAI's 401: "sk-ab12****…****wxyz"). Every such token in an error text goes, whosever key it
    // masks: a rule that looked for this attempt's key would answer, for each guess a model was
    // made to write, whether it was a start and end of the key (probe EV 1).
    static const QRegularExpression masked(
        QStringLiteral("[A-Za-z0-9_\\-]{2,}\\*{4,}[A-Za-z0-9_\\-]*|\\*{4,}[A-Za-z0-9_\\-]{4,}"));
    QString out = redactSecrets(text, secret);
    if (out.contains(QLatin1String("****")))
        out.replace(masked, QLatin1String(kRedacted));
    return out;
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
