#pragma once
// The one redaction every byte bound for a client, a log, the admin API or the
// GUI passes: the attempt's own secret, anything after
// "Bearer ", and tokens shaped like provider keys. Apply it before truncating,
// so a key across the cut cannot leak its start.

#include <QByteArray>
#include <QString>
#include <QStringList>

namespace sw::util {

inline constexpr char kRedacted[] = "[redacted]";

// `secret` is the credential the attempt sent (may be empty). Short secrets
// (under 8 bytes) are not replaced verbatim: they would match ordinary words.
QString redactSecrets(const QString &text, QByteArrayView secret = {});
QByteArray redactSecrets(const QByteArray &bytes, QByteArrayView secret = {});

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
