#pragma once
// The one redaction every byte bound for a client, a log, the admin API or the
// GUI passes: the attempt's own secret, anything after
// "Bearer ", and tokens shaped like provider keys. Apply it before truncating,
// so a key across the cut cannot leak its start.

#include <QByteArray>
#include <QString>
#include <QStringList>

#include <functional>
#include <optional>

namespace sw::util {

inline constexpr char kRedacted[] = "[redacted]";

// `secret` is the credential the attempt sent (may be empty). Short secrets
// (under 8 bytes) are not replaced verbatim: they would match ordinary words.
QString redactSecrets(const QString &text, QByteArrayView secret = {});
QByteArray redactSecrets(const QByteArray &bytes, QByteArrayView secret = {});

// redactSecrets for JSON text a client will parse (an upstream's frame relayed as it came, a usage
// object written as the upstream sent it). A parser reads "\u002B" as "+" and "\/" as "/", so a key
// written with escapes passes redactSecrets: each string literal that holds "\u" or "\/" is also
// redacted on its decoded text (and so is JSON text within it, such as a call's arguments, three
// levels down at most: deeper, a literal with such escapes goes whole as "[redacted]"), and written
// again, escaped plainly, when that removes something. Text without such escapes costs what
// redactSecrets costs and a memchr for backslashes; text with them a few passes over it.
QByteArray redactSecretsInJson(const QByteArray &json, QByteArrayView secret = {});

// The step of redactSecretsInJson that reads escapes, with another redaction: each string literal of
// `json` written with "\u" or "\/" escapes goes decoded through `redact` (true when it took something
// out; never given under 8 bytes, where no secret form fits), and JSON within it the same way, to the
// same three levels; the literals it changed are written again, escaped plainly. Nothing when none
// changed. For an answer's own text, which loses the attempt's key alone (a call's arguments a client
// parses as JSON).
std::optional<QByteArray> redactEscapedLiterals(const QByteArray &json, const std::function<bool(QString &)> &redact);

// The forms of `secret` redactSecrets looks for (as sent, percent-encoded, base64, JSON-escaped, hex),
// as text, one per form whatever its case (each is to be matched case-insensitively); none for a
// secret under 8 bytes. For text that is matched often (every event of an answer).
QStringList secretTextForms(QByteArrayView secret);

// redactSecrets, and every key quoted masked ("sk-ab12****wxyz", "tes****"): for an upstream's
// error text, never for an answer (where a rule about masks could be played as an oracle).
QString redactErrorText(const QString &text, QByteArrayView secret = {});

// Cheap pre-check for the hot path (every passthrough frame): false means
// redactSecrets would return the input unchanged.
bool mayHoldSecret(QByteArrayView bytes, QByteArrayView secret = {});

// Redacts, then cuts to `maxChars` characters with an ellipsis.
QString redactedAndTruncated(const QString &text, int maxChars, QByteArrayView secret = {});

} // namespace sw::util
