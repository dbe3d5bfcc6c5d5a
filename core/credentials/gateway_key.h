#pragma once
// The one gateway key format, for `switchman key create` and the window's
// tenant editor alike, and the one place a key becomes its stored form.
//
// A key is "sm-" followed by the unpadded base64url of 32 bytes from the system
// CSPRNG (256 bits, 46 characters in all). The prefix is Switchman's own: no
// provider issues "sm-" keys, so a gateway key pasted where a provider key
// belongs (or the other way round) is told apart at a glance, and scanners that
// look for provider "sk-" keys do not report it as one. The configuration keeps
// only "sha256:<64 lowercase hex>" of the key's UTF-8 bytes, so any key, of this
// format or an older one ("sk-sw-…" from earlier windows), still matches its
// configured hash.

#include <QByteArrayView>
#include <QString>
#include <QStringView>

namespace sw::credentials {

inline constexpr char kGatewayKeyPrefix[] = "sm-";
inline constexpr char kGatewayKeyHashPrefix[] = "sha256:";

// A new random gateway key, shown to the user once.
QString newGatewayKey();
// "sha256:<hex>" as tenants store it.
// The key as the client sends it (bytes) or as it was made (text, hashed as UTF-8).
QString gatewayKeyHash(QByteArrayView key);
QString gatewayKeyHash(const QString &key);
inline QString gatewayKeyHash(const QByteArray &key) {
    return gatewayKeyHash(QByteArrayView(key));
}

// Whether two stored forms name the same key: the hex compared case-insensitively
// (hand-edited configs may hold upper case) and in constant time over the digest,
// so how far a presented key's hash matches is not told by the time taken.
bool sameGatewayKeyHash(QStringView presented, QStringView stored);

} // namespace sw::credentials
