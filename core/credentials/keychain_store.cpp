#include "core/credentials/keychain_store.h"

#include <QCoreApplication>
#include <QDBusConnection>
#include <QDBusMessage>
#include <QDBusPendingCallWatcher>
#include <QDBusPendingReply>
#include <QDBusVariant>
#include <QDeadlineTimer>
#include <QMutex>
#include <QThread>
#include <QTimer>
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

// How long the Secret Service has to say whether its collection is locked. It has just answered the
// lookup, so it is there; a property read never prompts.
constexpr int kLockedProbeMs = 5000;

// Tells `then` (on this thread) whether the Secret Service's default collection, where QtKeychain
// keeps its entries, is locked: its Locked property, read without unlocking anything. QtKeychain's
// libsecret backend answers a lookup in a locked collection that nobody unlocked (no display for
// the prompt, a prompt dismissed) with EntryNotFound, as it answers an entry never written: the
// user was told to store a key that was there (probe AA4 F2). No Secret Service, no default
// collection or no answer reads as not locked: the lookup's own answer stands.
void whetherLocked(std::function<void(bool)> then) {
    QDBusMessage get = QDBusMessage::createMethodCall(
        QStringLiteral("org.freedesktop.secrets"), QStringLiteral("/org/freedesktop/secrets/aliases/default"),
        QStringLiteral("org.freedesktop.DBus.Properties"), QStringLiteral("Get"));
    get << QStringLiteral("org.freedesktop.Secret.Collection") << QStringLiteral("Locked");
    auto *watcher = new QDBusPendingCallWatcher(QDBusConnection::sessionBus().asyncCall(get, kLockedProbeMs));
    QObject::connect(watcher, &QDBusPendingCallWatcher::finished, watcher, [watcher, then = std::move(then)]() {
        const QDBusPendingReply<QDBusVariant> reply = *watcher;
        watcher->deleteLater();
        then(reply.isValid() && reply.value().variant().toBool());
    });
}

// How long the application's exit waits for the keychain thread. Its jobs are asynchronous
// (D-Bus), so the thread leaves its event loop at once unless a backend blocks it; a blocked
// one (an unanswered synchronous D-Bus call) must not hold the exit hostage.
constexpr int kStopWaitMs = 2000;

// The process-wide keychain thread. Started by the first job; stopped from QCoreApplication's
// destructor. Never restarted: QtKeychain's executor stays bound to the first thread.
struct KeychainThread {
    QMutex mutex;
    QThread *thread = nullptr;
    QObject *worker = nullptr; // lives on `thread`: the context jobs are posted to
    bool stopped = false;
};

KeychainThread &keychainThread() {
    static KeychainThread state;
    return state;
}

void stopKeychainThread() {
    KeychainThread &kt = keychainThread();
    QThread *thread = nullptr;
    {
        QMutexLocker lock(&kt.mutex);
        kt.stopped = true;
        thread = std::exchange(kt.thread, nullptr);
        kt.worker = nullptr; // deleted on its thread when that finishes
    }
    if (!thread)
        return;
    thread->quit();
    if (!thread->wait(QDeadlineTimer(kStopWaitMs))) {
        // Left running on purpose: deleting a running QThread aborts the process, and the
        // process is on its way out anyway.
        qWarning("switchman: the OS keychain did not let go within %d ms; exiting without it", kStopWaitMs);
        return;
    }
    delete thread;
}

// Posts fn to the keychain thread (starting it when needed), with `follower` moved there first.
// False after shutdown.
bool postToKeychainThread(QObject *follower, std::function<void()> fn) {
    KeychainThread &kt = keychainThread();
    QMutexLocker lock(&kt.mutex);
    if (kt.stopped)
        return false;
    if (!kt.thread) {
        // Qt's default dispatcher for a new thread: glib's, whose main context QtKeychain's
        // libsecret backend completes its calls through.
        kt.thread = new QThread;
        kt.thread->setObjectName(QStringLiteral("switchman-keychain"));
        kt.worker = new QObject;
        kt.worker->moveToThread(kt.thread);
        QObject::connect(kt.thread, &QThread::finished, kt.worker, &QObject::deleteLater);
        // Stopped and deleted from the application's destructor, on the application's thread.
        if (QCoreApplication *app = QCoreApplication::instance())
            kt.thread->moveToThread(app->thread());
        kt.thread->start();
        qAddPostRoutine(stopKeychainThread);
    }
    follower->moveToThread(kt.thread);
    QMetaObject::invokeMethod(kt.worker, std::move(fn), Qt::QueuedConnection);
    return true;
}
} // namespace

// One job's way back: created on the caller's thread, connected there to the caller's context
// (so a context destroyed meanwhile takes the delivery with it), then signalled and deleted
// on the keychain thread.
class KeychainReply final : public QObject {
    Q_OBJECT
Q_SIGNALS:
    void finished();
};

KeychainStore::KeychainStore() : m_alive(std::make_shared<std::atomic<bool>>(true)) {}

KeychainStore::~KeychainStore() {
    m_alive->store(false);
}

QThread *KeychainStore::jobThread() {
    KeychainThread &kt = keychainThread();
    QMutexLocker lock(&kt.mutex);
    return kt.thread;
}

void KeychainStore::run(QObject *context, std::function<void(const SecretResult &)> done,
                        std::function<void(Finish)> startJob) {
    auto result = std::make_shared<SecretResult>();
    auto *reply = new KeychainReply;
    QObject::connect(
        reply, &KeychainReply::finished, context,
        [alive = m_alive, result, done = std::move(done)]() {
            if (alive->load())
                done(*result);
        },
        Qt::QueuedConnection);
    const bool posted = postToKeychainThread(reply, [reply, result, startJob = std::move(startJob)]() {
        startJob([reply, result](const SecretResult &r) {
            *result = r; // published to the context's thread by the queued signal below
            Q_EMIT reply->finished();
            delete reply;
        });
    });
    if (!posted) {
        *result = {};
        result->error = explain(QKeychain::OtherError, QStringLiteral("the application is shutting down"));
        QTimer::singleShot(0, reply, [reply]() {
            Q_EMIT reply->finished();
            reply->deleteLater();
        });
    }
}

void KeychainStore::read(const QString &name, QObject *context, std::function<void(const SecretResult &)> done) {
    run(context, std::move(done), [name](Finish finish) {
        auto *job = new QKeychain::ReadPasswordJob(serviceName());
        job->setAutoDelete(true);
        job->setInsecureFallback(false);
        job->setKey(name);
        QObject::connect(job, &QKeychain::Job::finished, job, [job, finish = std::move(finish)]() {
            SecretResult r;
            if (job->error() == QKeychain::NoError) {
                r.ok = true;
                r.secret = job->binaryData();
            } else if (job->error() == QKeychain::EntryNotFound) {
                whetherLocked([finish](bool locked) {
                    SecretResult missing;
                    missing.locked = locked;
                    missing.notFound = !locked;
                    missing.error = locked ? QStringLiteral("the OS keychain is locked (the Secret Service's default "
                                                            "collection): unlock it, e.g. by logging in to the "
                                                            "desktop session; its entries cannot be read until then")
                                           : explain(QKeychain::EntryNotFound, {});
                    finish(missing);
                });
                return;
            } else {
                r.error = explain(job->error(), job->errorString());
            }
            finish(r);
        });
        job->start();
    });
}

void KeychainStore::write(const QString &name, const QByteArray &secret, QObject *context,
                          std::function<void(const SecretResult &)> done) {
    run(context, std::move(done), [name, secret](Finish finish) {
        auto *job = new QKeychain::WritePasswordJob(serviceName());
        job->setAutoDelete(true);
        job->setInsecureFallback(false);
        job->setKey(name);
        job->setBinaryData(secret);
        QObject::connect(job, &QKeychain::Job::finished, job, [job, finish = std::move(finish)]() {
            SecretResult r;
            r.ok = job->error() == QKeychain::NoError;
            if (!r.ok)
                r.error = explain(job->error(), job->errorString());
            finish(r);
        });
        job->start();
    });
}

} // namespace sw::credentials

#include "keychain_store.moc"
