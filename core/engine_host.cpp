#include "core/engine_host.h"

#include "core/util/epoll_dispatcher.h"

#include <QCoreApplication>
#include <QEventLoop>
#include <QMetaObject>
#include <QtCore/private/qeventdispatcher_unix_p.h>

#include <dlfcn.h>

namespace sw {

namespace {

// Frees what OpenSSL keeps for the calling thread, if OpenSSL is loaded at all (Qt's
// TLS plugin loads it on first use; this never loads it). Qt's threads are detached:
// QThread::wait() returns before the thread's thread-local destructors run, so a
// process that exits right after stopping the engine had the engine thread free its
// OpenSSL state while the main thread's exit handler freed it too (caught by
// AddressSanitizer as a double free in libcrypto, from a thread-local destructor of
// switchman-engine). Freed here, on the thread, before it ends: nothing is left
// for the destructor.
void releaseThreadOpenSsl() {
    // Sockets the engine let go with deleteLater() would be deleted after this (Qt runs
    // the thread's deferred deletes after finished), and a TLS socket's end calls into
    // OpenSSL again: deleted first.
    QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
    void *crypto = dlopen("libcrypto.so.3", RTLD_LAZY | RTLD_NOLOAD);
    if (!crypto)
        return;
    if (auto stop = reinterpret_cast<void (*)()>(dlsym(crypto, "OPENSSL_thread_stop")))
        stop();
    dlclose(crypto);
}

} // namespace

EngineHost::EngineHost() {
    m_thread.setObjectName(QStringLiteral("switchman-engine"));
    // finished is emitted on the ending thread itself, after its event loop returned.
    QObject::connect(&m_thread, &QThread::finished, &m_thread, releaseThreadOpenSsl, Qt::DirectConnection);
}

QAbstractEventDispatcher *EngineHost::createEventDispatcher() {
    // An epoll dispatcher (core/util/epoll_dispatcher.h): the kernel keeps the list of sockets
    // and reports only the ready ones, where Qt's UNIX dispatcher polls every socket on every
    // turn (its cost grows with the connections open). Qt's UNIX dispatcher in turn wakes its
    // thread once for any number of posted events where glib's writes its eventfd for every
    // posted event and notifier change. Nothing on the engine thread needs a glib main loop:
    // keychain jobs run on a thread of their own (core/credentials/keychain_store.h).
    // SWITCHMAN_ENGINE_DISPATCHER=unix or =glib picks the others, to tell them apart when
    // diagnosing or measuring.
    const QString kind = qEnvironmentVariable("SWITCHMAN_ENGINE_DISPATCHER");
    if (kind == QLatin1String("glib"))
        return nullptr;
    if (kind == QLatin1String("unix"))
        return new QEventDispatcherUNIX;
    return new util::EpollDispatcher;
}

EngineHost::~EngineHost() {
    stop();
}

bool EngineHost::start(Engine::Options options, const QString &listenOverride, QString *error) {
    // A finished thread drops its dispatcher, so it is given one on every start.
    if (QAbstractEventDispatcher *dispatcher = createEventDispatcher())
        m_thread.setEventDispatcher(dispatcher);
    m_thread.start();
    // A context object living on the engine thread to run the construction there.
    QObject context;
    context.moveToThread(&m_thread);
    bool ok = false;
    QString why;
    QMetaObject::invokeMethod(
        &context,
        [&]() {
            m_engine = new Engine(std::move(options));
            ok = m_engine->start(&why, listenOverride);
            if (ok)
                m_baseUrl = m_engine->baseUrl();
        },
        Qt::BlockingQueuedConnection);
    // `context` must not be destroyed from this thread while it lives on another.
    QMetaObject::invokeMethod(
        &context, [&]() { context.moveToThread(nullptr); }, Qt::BlockingQueuedConnection);
    if (!ok && error)
        *error = why;
    return ok;
}

void EngineHost::runBlocking(const std::function<void(Engine &)> &fn) {
    if (!m_engine)
        return;
    QMetaObject::invokeMethod(
        m_engine, [this, &fn]() { fn(*m_engine); }, Qt::BlockingQueuedConnection);
}

void EngineHost::post(std::function<void(Engine &)> fn) {
    if (!m_engine)
        return;
    QMetaObject::invokeMethod(
        m_engine, [this, fn = std::move(fn)]() { fn(*m_engine); }, Qt::QueuedConnection);
}

void EngineHost::requestShutdown() {
    post([](Engine &engine) { engine.requestShutdown(); });
}

void EngineHost::drain() {
    if (!m_engine)
        return;
    QEventLoop loop;
    QObject::connect(m_engine, &Engine::drained, &loop, &QEventLoop::quit, Qt::QueuedConnection);
    requestShutdown();
    loop.exec();
}

void EngineHost::stop() {
    if (!m_thread.isRunning())
        return;
    if (m_engine) {
        Engine *engine = m_engine;
        m_engine = nullptr;
        QMetaObject::invokeMethod(
            engine, [engine]() { delete engine; }, Qt::BlockingQueuedConnection);
    }
    m_thread.quit();
    m_thread.wait();
}

} // namespace sw
