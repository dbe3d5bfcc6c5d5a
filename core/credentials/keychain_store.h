#pragma once
// The OS keychain as a SecretStore.

#include "core/credentials/secret_store.h"

namespace sw::credentials {

// QtKeychain, service "switchman", never the insecure fallback.
class KeychainStore final : public SecretStore {
public:
    void read(const QString &name, QObject *context, std::function<void(const SecretResult &)> done) override;
    void write(const QString &name, const QByteArray &secret, QObject *context,
               std::function<void(const SecretResult &)> done) override;
    static QString serviceName() { return QStringLiteral("switchman"); }
};

} // namespace sw::credentials
