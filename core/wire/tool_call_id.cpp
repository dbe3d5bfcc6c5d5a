#include "core/wire/tool_call_id.h"

#include <QCryptographicHash>
#include <QUuid>

#include <algorithm>

namespace sw::wire {

namespace {
constexpr qsizetype kToolIdHashChars = 10; // 40 bits of SHA-256: apart for any conversation's ids
thread_local qint64 t_uniqueToolIdLookups = 0;

bool anthropicIdChar(QChar c) {
    return (c >= QLatin1Char('a') && c <= QLatin1Char('z')) || (c >= QLatin1Char('A') && c <= QLatin1Char('Z')) ||
           (c >= QLatin1Char('0') && c <= QLatin1Char('9')) || c == QLatin1Char('_') || c == QLatin1Char('-');
}
} // namespace

QString googleCallSignature(const rj::Value *call) {
    const rj::Value *extra = rj::member(call, "extra_content");
    return extra ? rj::toString(rj::member(rj::member(extra, "google"), "thought_signature")) : QString();
}

QString callIdOf(const QString &toolCallId) {
    const qsizetype bar = toolCallId.indexOf(QLatin1Char('|'));
    if (bar > 0 && QStringView(toolCallId).mid(bar + 1).startsWith(QLatin1String("fc_")))
        return toolCallId.left(bar);
    return toolCallId;
}

QString boundedToolCallId(const QString &id, qsizetype maxLength) {
    const QString callId = callIdOf(id);
    if (callId.size() <= maxLength)
        return callId;
    const QByteArray hash =
        QCryptographicHash::hash(callId.toUtf8(), QCryptographicHash::Sha256).toHex().left(kToolIdHashChars);
    return callId.left(maxLength - kToolIdHashChars - 1) + QLatin1Char('_') + QLatin1String(hash);
}

bool isNineCharToolId(QStringView id) {
    return id.size() == kNineCharToolIdLength && std::all_of(id.begin(), id.end(), [](QChar c) {
               return (c >= QLatin1Char('a') && c <= QLatin1Char('z')) ||
                      (c >= QLatin1Char('A') && c <= QLatin1Char('Z')) ||
                      (c >= QLatin1Char('0') && c <= QLatin1Char('9'));
           });
}

bool isNineCharToolId(std::string_view id) {
    return qsizetype(id.size()) == kNineCharToolIdLength && std::all_of(id.begin(), id.end(), [](char c) {
               return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
           });
}

QString nineCharToolId(const QString &id, int attempt) {
    static constexpr char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    QByteArray input = id.toUtf8();
    if (attempt > 0)
        input += '\0' + QByteArray::number(attempt); // another input than the id alone
    const QByteArray hash = QCryptographicHash::hash(input, QCryptographicHash::Sha256);
    quint64 v = 0;
    for (int i = 0; i < 8; ++i) // 64 bits: 62^9 is about 2^53.6
        v = (v << 8) | quint8(hash.at(i));
    QString out(kNineCharToolIdLength, Qt::Uninitialized);
    for (qsizetype i = 0; i < kNineCharToolIdLength; ++i, v /= 62)
        out[i] = QLatin1Char(kDigits[v % 62]);
    return out;
}

QString clientToolCallId(const QString &id, qsizetype maxLength) {
    return id.size() <= maxLength ? id : boundedToolCallId(id, maxLength);
}

bool isAnthropicToolId(std::string_view id) {
    return !id.empty() && qsizetype(id.size()) <= kAnthropicMaxToolIdLength &&
           std::all_of(id.begin(), id.end(), [](char c) { return anthropicIdChar(QLatin1Char(c)); });
}

QString anthropicToolId(const QString &id) {
    if (!id.isEmpty() && id.size() <= kAnthropicMaxToolIdLength && std::all_of(id.begin(), id.end(), anthropicIdChar))
        return id; // the common case: an id Anthropic made, or one already mapped
    QString out;
    out.reserve(id.size());
    for (QChar c : id)
        out += anthropicIdChar(c) ? c : QLatin1Char('_');
    if (out.size() > kAnthropicMaxToolIdLength)
        out = boundedToolCallId(out, kAnthropicMaxToolIdLength);
    return out.isEmpty() ? QStringLiteral("toolu_missing") : out;
}

QString uniqueToolId(const QString &id, const QSet<QString> &taken, qsizetype maxLength,
                     QHash<QString, int> &nextSuffix) {
    ++t_uniqueToolIdLookups;
    if (!taken.contains(id))
        return id;
    // A candidate is the id's stem (as much of it as fits before the suffix) and "_<n>". The search
    // is remembered by stem and count of digits, not by id: ids as long as the limit that differ only
    // in their last two characters share every stem, and remembered by id each repeat of one of them
    // walked again through the suffixes the others took. Each candidate has one such key, and each
    // key's search only goes forward: every lookup that finds an id taken finds a different one.
    QString key;
    qsizetype keyDigits = 0;
    for (int n = 2;; ++n) {
        const QString number = QString::number(n);
        const QString stem = id.left(maxLength - 1 - number.size());
        if (number.size() != keyDigits) { // the first candidate, or one digit more: maybe a shorter stem
            if (keyDigits > 0)
                nextSuffix.insert(key, n); // every candidate of the last key is taken
            keyDigits = number.size();
            key = stem + QChar(char16_t(keyDigits)); // its last character says the count: one key a pair
            if (const int known = nextSuffix.value(key); known > n) {
                n = known - 1;
                continue;
            }
        }
        ++t_uniqueToolIdLookups;
        const QString unique = stem + QLatin1Char('_') + number;
        if (!taken.contains(unique)) {
            nextSuffix.insert(key, n + 1);
            return unique;
        }
    }
}

qint64 uniqueToolIdLookups() {
    return t_uniqueToolIdLookups;
}

QString madeUpToolCallId() {
    return QStringLiteral("call_") + QUuid::createUuid().toString(QUuid::Id128).left(24);
}

QString historyToolCallId(qsizetype messageIndex, qsizetype callIndex) {
    const QByteArray place = "history call " + QByteArray::number(messageIndex) + ' ' + QByteArray::number(callIndex);
    return QStringLiteral("call_") +
           QLatin1String(QCryptographicHash::hash(place, QCryptographicHash::Sha256).toHex().left(24));
}

} // namespace sw::wire
