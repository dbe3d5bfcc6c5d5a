#include "core/util/redaction.h"

#include <QRegularExpression>

#include <algorithm>
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

namespace {
// A backslash at `at` that begins "\u" (any character) or "\/": the escapes that can spell a key's
// characters. The others stand for a quote, a backslash or a control character, which no key holds.
// Read without pairing backslashes ("\\u" counts): such text decodes to an escape a parser of JSON
// within the string (a call's arguments) reads again.
bool spellsACharacter(const char *at, const char *end) {
    return at + 1 < end && (at[1] == 'u' || at[1] == '/');
}

bool holdsSpellingEscape(const char *p, const char *end) {
    return anyOf(p, end, '\\', [end](const char *at) { return spellsACharacter(at, end); });
}

int hexDigit(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

// A string literal's content [p, end) as a JSON parser reads it; nothing when an escape is not JSON's
// (no parser reads the literal then, so it spells nothing).
std::optional<QString> decodedLiteral(const char *p, const char *end) {
    QString out;
    const char *run = p;
    while (p < end) {
        if (*p != '\\') {
            ++p;
            continue;
        }
        out += QString::fromUtf8(run, p - run); // a UTF-8 sequence holds no backslash: runs are whole
        if (end - p < 2)
            return std::nullopt;
        const char c = p[1];
        p += 2;
        switch (c) {
        case '"':
        case '\\':
        case '/':
            out += QLatin1Char(c);
            break;
        case 'b':
            out += u'\b';
            break;
        case 'f':
            out += u'\f';
            break;
        case 'n':
            out += u'\n';
            break;
        case 'r':
            out += u'\r';
            break;
        case 't':
            out += u'\t';
            break;
        case 'u': {
            if (end - p < 4)
                return std::nullopt;
            int unit = 0;
            for (int i = 0; i < 4; ++i) {
                const int digit = hexDigit(p[i]);
                if (digit < 0)
                    return std::nullopt;
                unit = unit * 16 + digit;
            }
            out += QChar(char16_t(unit)); // a surrogate pair is two escapes, joined as UTF-16 units
            p += 4;
            break;
        }
        default:
            return std::nullopt;
        }
        run = p;
    }
    out += QString::fromUtf8(run, p - run);
    return out;
}

// `text` as a JSON string literal: ASCII as it is, the rest escaped, so that whatever it holds (a lone
// surrogate included) is read back the same.
void appendLiteral(QByteArray &out, const QString &text) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += '"';
    for (const QChar ch : text) {
        const char16_t unit = ch.unicode();
        if (unit == u'"' || unit == u'\\') {
            out += '\\';
            out += char(unit);
        } else if (unit >= 0x20 && unit < 0x7f) {
            out += char(unit);
        } else {
            const char escape[] = {
                '\\', 'u', kHex[unit >> 12], kHex[(unit >> 8) & 0xf], kHex[(unit >> 4) & 0xf], kHex[unit & 0xf]};
            out.append(escape, sizeof escape);
        }
    }
    out += '"';
}

// Whether `text` is shorter in UTF-8 than anything redactSecrets finds.
bool underMinimum(const QString &text) {
    return text.size() < kMinVerbatimSecret &&
           std::all_of(text.cbegin(), text.cend(), [](QChar c) { return c.unicode() < 0x80; });
}

// How many times a literal is decoded on the way to the text that is read: a call's arguments are
// JSON in a string of the frame (one), whose strings a client's parser decodes again (two); one more
// is room for JSON within those.
constexpr int kDecodedLevels = 3;

std::optional<QByteArray> redactLiteralsAt(const QByteArray &json, const std::function<bool(QString &)> &redact,
                                           int level) {
    const char *const begin = json.constData();
    const char *const end = begin + json.size();
    if (!holdsSpellingEscape(begin, end))
        return std::nullopt;
    // A literal ends at its line: JSON holds no raw line break in a string, and an SSE frame's lines
    // are read apart (a stray quote in an event line starts nothing). JSON within a decoded literal
    // is read the same way, one level down, to kDecodedLevels levels. Nesting alone would not stop
    // soon: a backslash written "\u005c" adds one backslash a level rather than doubling them, so n
    // bytes nest about sqrt(n) levels, and reading every one cost n * sqrt(n) (a 5 MB frame of 1000
    // levels took a minute and 14 GB). A level reads about what the one above read (a decoded
    // literal is no longer than its escapes; a redaction writes 10 bytes for 8 or more), so a call
    // costs a few passes over its input.
    QByteArray out;
    const char *copied = begin;
    for (const char *open = begin; (open = static_cast<const char *>(std::memchr(open, '"', size_t(end - open))));) {
        const char *close = open + 1;
        while (close < end && *close != '"' && *close != '\n')
            close += *close == '\\' && close + 1 < end && close[1] != '\n' ? 2 : 1;
        if (close == end || *close != '"') { // no literal: the line goes on as plain bytes
            open = close;
            continue;
        }
        // Under 8 bytes a literal holds nothing a redaction finds (a secret form, a key shape, a
        // bearer token): a run of short escaped names costs a scan, not a redaction each.
        if (close - open > kMinVerbatimSecret && holdsSpellingEscape(open + 1, close)) {
            if (level == kDecodedLevels) {
                // Deeper than any answer nests: the literal goes whole, unread, so that what it
                // spells never reaches a client.
                out.append(copied, open - copied);
                appendLiteral(out, QLatin1String(kRedacted));
                copied = close + 1;
            } else if (std::optional<QString> text = decodedLiteral(open + 1, close); text && !underMinimum(*text)) {
                bool changed = redact(*text);
                if (const std::optional<QByteArray> inner = redactLiteralsAt(text->toUtf8(), redact, level + 1)) {
                    *text = QString::fromUtf8(*inner);
                    changed = true;
                }
                if (changed) {
                    out.append(copied, open - copied);
                    appendLiteral(out, *text);
                    copied = close + 1;
                }
            }
        }
        open = close + 1;
    }
    if (copied == begin)
        return std::nullopt;
    out.append(copied, end - copied);
    return out;
}
} // namespace

std::optional<QByteArray> redactEscapedLiterals(const QByteArray &json, const std::function<bool(QString &)> &redact) {
    return redactLiteralsAt(json, redact, 0);
}

QByteArray redactSecretsInJson(const QByteArray &json, QByteArrayView secret) {
    const std::optional<QByteArray> literals = redactEscapedLiterals(json, [secret](QString &text) {
        QString clean = redactSecrets(text, secret);
        if (clean == text)
            return false;
        text = std::move(clean);
        return true;
    });
    // The text between the literals, and every plain literal, as redactSecrets reads bytes.
    return redactSecrets(literals ? *literals : json, secret);
}

QString redactedAndTruncated(const QString &text, int maxChars, QByteArrayView secret) {
    const QString clean = redactSecrets(text, secret);
    return clean.size() > maxChars ? clean.left(maxChars) + QStringLiteral("…") : clean;
}

} // namespace sw::util
