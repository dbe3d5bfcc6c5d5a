#pragma once
// Where secrets come from (the interface; core/credentials/keychain_store.h is the OS keychain's). The keychain is
// asynchronous (D-Bus), so reads take a callback; the engine never blocks on them.

#include <QByteArray>
#include <QObject>
#include <QString>
#include <functional>

namespace sw::credentials {

struct SecretResult {
    bool ok = false;
    QByteArray secret;
    QString error;         // why not, in words the user can act on (never the secret)
    bool notFound = false; // the store works but holds no such entry
    bool locked = false;   // the store is locked: its entries cannot be read until it is unlocked
};

class SecretStore {
public:
    virtual ~SecretStore() = default;
    virtual void read(const QString &name, QObject *context, std::function<void(const SecretResult &)> done) = 0;
    virtual void write(const QString &name, const QByteArray &secret, QObject *context,
                       std::function<void(const SecretResult &)> done) = 0;
};

} // namespace sw::credentials
