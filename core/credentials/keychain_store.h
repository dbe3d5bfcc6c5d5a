#pragma once
// The OS keychain as a SecretStore.
//
// QtKeychain's libsecret backend completes its jobs through the glib main loop of the thread
// that started them, and it serialises every job of the process through one executor object
// bound to the thread that ran the first one. So every KeychainStore runs its jobs on one
// process-wide keychain thread (Qt's default, glib, dispatcher), started on the first job and
// stopped when the QCoreApplication goes: the thread that calls read/write (the engine's, on
// Qt's own UNIX dispatcher; the window's; the command line's) only posts the job and gets the
// result back queued on `context`'s thread.

#include "core/credentials/secret_store.h"

#include <atomic>
#include <memory>

QT_FORWARD_DECLARE_CLASS(QThread)

namespace sw::credentials {

// QtKeychain, service "switchman", never the insecure fallback.
class KeychainStore final : public SecretStore {
public:
    KeychainStore();
    // Callbacks of jobs still in flight never run after this; the jobs themselves finish on
    // the keychain thread (QtKeychain cannot cancel one) and are dropped there.
    ~KeychainStore() override;
    Q_DISABLE_COPY_MOVE(KeychainStore)

    // `done` runs on `context`'s thread, queued, never inside the call; not at all when
    // `context` or this store is destroyed first.
    void read(const QString &name, QObject *context, std::function<void(const SecretResult &)> done) override;
    void write(const QString &name, const QByteArray &secret, QObject *context,
               std::function<void(const SecretResult &)> done) override;
    static QString serviceName() { return QStringLiteral("switchman"); }

    // The keychain thread, for tests: nullptr before the first job and after shutdown.
    static QThread *jobThread();

private:
    using Finish = std::function<void(const SecretResult &)>;
    void run(QObject *context, std::function<void(const SecretResult &)> done, std::function<void(Finish)> startJob);

    std::shared_ptr<std::atomic<bool>> m_alive;
};

} // namespace sw::credentials
