#include "core/credentials/keychain_store.h"

#include <qt6keychain/keychain.h>

namespace sw::credentials {

namespace {
QString explain(QKeychain::Error e, const QString &detail) {
    switch (e) {
    case QKeychain::NoBackendAvailable:
    case QKeychain::OtherError:
        return QStringLiteral("the OS keychain (Secret Service) is not available or locked: %1. "
                              "Use an env:VAR credential reference instead.")
            .arg(detail);
    case QKeychain::AccessDenied:
    case QKeychain::AccessDeniedByUser:
        return QStringLiteral("the OS keychain refused access; it may be locked (unlock it, e.g. by logging in to "
                              "the desktop session): %1")
            .arg(detail);
    case QKeychain::EntryNotFound:
        return QStringLiteral("no such keychain entry");
    default:
        return detail;
    }
}
} // namespace

void KeychainStore::read(const QString &name, QObject *context, std::function<void(const SecretResult &)> done) {
    auto *job = new QKeychain::ReadPasswordJob(serviceName());
    job->setAutoDelete(true);
    job->setInsecureFallback(false);
    job->setKey(name);
    QObject::connect(job, &QKeychain::Job::finished, context, [job, done = std::move(done)]() {
        SecretResult r;
        if (job->error() == QKeychain::NoError) {
            r.ok = true;
            r.secret = job->binaryData();
        } else {
            r.notFound = job->error() == QKeychain::EntryNotFound;
            r.error = explain(job->error(), job->errorString());
        }
        done(r);
    });
    job->start();
}

void KeychainStore::write(const QString &name, const QByteArray &secret, QObject *context,
                          std::function<void(const SecretResult &)> done) {
    auto *job = new QKeychain::WritePasswordJob(serviceName());
    job->setAutoDelete(true);
    job->setInsecureFallback(false);
    job->setKey(name);
    job->setBinaryData(secret);
    QObject::connect(job, &QKeychain::Job::finished, context, [job, done = std::move(done)]() {
        SecretResult r;
        r.ok = job->error() == QKeychain::NoError;
        if (!r.ok)
            r.error = explain(job->error(), job->errorString());
        done(r);
    });
    job->start();
}

} // namespace sw::credentials
