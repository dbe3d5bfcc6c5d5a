#include "config/tenant_key.h"

#include <QCryptographicHash>
#include <QRandomGenerator>

namespace sw::ui {

QString TenantKey::generate() {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    QString key = QStringLiteral("sk-sw-");
    auto *rng = QRandomGenerator::system(); // cryptographically secure source
    for (int i = 0; i < 40; ++i)
        key += QLatin1Char(alphabet[rng->bounded(62)]);
    return key;
}

QString TenantKey::hashReference(const QString &key) {
    return QStringLiteral("sha256:") +
           QString::fromLatin1(QCryptographicHash::hash(key.toUtf8(), QCryptographicHash::Sha256).toHex());
}

} // namespace sw::ui
