#include "credentials/gateway_key.h"

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

} // namespace sw::credentials
