#include "core/credentials/gateway_key.h"

#include <QCryptographicHash>
#include <QRandomGenerator>

namespace sw::credentials {

namespace {
constexpr qsizetype kRandomBytes = 32;
} // namespace

QString newGatewayKey() {
    QByteArray bytes(kRandomBytes, Qt::Uninitialized);
    QRandomGenerator::system()->generate(reinterpret_cast<quint32 *>(bytes.data()),
                                         reinterpret_cast<quint32 *>(bytes.data() + bytes.size()));
    return QLatin1String(kGatewayKeyPrefix) +
           QString::fromLatin1(bytes.toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals));
}

QString gatewayKeyHash(QByteArrayView key) {
    return QLatin1String(kGatewayKeyHashPrefix) +
           QString::fromLatin1(QCryptographicHash::hash(key, QCryptographicHash::Sha256).toHex());
}

QString gatewayKeyHash(const QString &key) {
    return gatewayKeyHash(QByteArrayView(key.toUtf8()));
}

bool sameGatewayKeyHash(QStringView presented, QStringView stored) {
    const QStringView prefix(u"sha256:");
    if (!presented.startsWith(prefix) || !stored.startsWith(prefix, Qt::CaseInsensitive) ||
        presented.size() != stored.size())
        return false;
    char16_t diff = 0;
    for (qsizetype i = prefix.size(); i < presented.size(); ++i) {
        char16_t a = presented[i].unicode();
        char16_t b = stored[i].unicode();
        // ASCII case folding without a branch on the data: hex letters differ from their capitals in bit 0x20.
        a |= char16_t((a >= u'A' && a <= u'F') ? 0x20 : 0);
        b |= char16_t((b >= u'A' && b <= u'F') ? 0x20 : 0);
        diff |= char16_t(a ^ b);
    }
    return diff == 0;
}

} // namespace sw::credentials
