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

namespace {
bool keyChar(QChar c) {
    return c.isLetterOrNumber() || c == u'-' || c == u'_';
}

// A key quoted back masked, as OpenAI's 401 does ("Incorrect API key provided: sk-ab12***…***wxyz"):
// a run of three or more '*' between a start of `secret` and an end of it (at least two characters
// shown on each side, or four on the one side shown). Bound to the attempt's own secret, so a model's
// "**bold****text**" is never touched.
QString withoutMaskedSecret(QString text, QByteArrayView secret) {
    const QString key = QString::fromUtf8(secret);
    for (qsizetype at = text.indexOf(QLatin1String("***")); at >= 0; at = text.indexOf(QLatin1String("***"), at)) {
        qsizetype from = at, to = at;
        while (to < text.size() && text.at(to) == u'*')
            ++to;
        while (from > 0 && keyChar(text.at(from - 1)))
            --from;
        qsizetype end = to;
        while (end < text.size() && keyChar(text.at(end)))
            ++end;
        const QStringView shownStart = QStringView(text).mid(from, at - from);
        const QStringView shownEnd = QStringView(text).mid(to, end - to);
        const bool startsIt = !shownStart.isEmpty() && key.startsWith(shownStart);
        const bool endsIt = !shownEnd.isEmpty() && key.endsWith(shownEnd);
        const bool masked = (startsIt && endsIt && shownStart.size() >= 2 && shownEnd.size() >= 2) ||
                            (startsIt && shownEnd.isEmpty() && shownStart.size() >= 4) ||
                            (endsIt && shownStart.isEmpty() && shownEnd.size() >= 4);
        if (!masked) {
            at = to;
            continue;
        }
        text.replace(from, end - from, QLatin1String(kRedacted));
        at = from + qsizetype(std::strlen(kRedacted));
    }
    return text;
}

bool holdsAMask(QByteArrayView bytes) {
    const char *p = bytes.data();
    const char *const end = p + bytes.size();
    return anyOf(p, end, '*', [end](const char *star) { return end - star >= 3 && star[1] == '*' && star[2] == '*'; });
}
} // namespace

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
        if (holdsAMask(bytes))
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
    if (secret.size() >= kMinVerbatimSecret && text.contains(QLatin1String("***")))
        text = withoutMaskedSecret(std::move(text), secret);
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
