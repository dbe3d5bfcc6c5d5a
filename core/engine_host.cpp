#include "core/engine_host.h"

#include <QMetaObject>
#include <QtCore/private/qeventdispatcher_unix_p.h>

namespace sw {

EngineHost::EngineHost() {
    m_thread.setObjectName(QStringLiteral("switchman-engine"));
}

QAbstractEventDispatcher *EngineHost::createEventDispatcher() {
    // Qt's own UNIX dispatcher: it wakes its thread once for any number of events posted while
    // it sleeps and registers socket notifiers without waking itself, where glib's writes its
    // eventfd for every posted event and every notifier change (most of a request's system
    // calls). Nothing on the engine thread needs a glib main loop: keychain jobs run on a
    // thread of their own (core/credentials/keychain_store.h).
    if (qEnvironmentVariable("SWITCHMAN_ENGINE_DISPATCHER") == QLatin1String("glib"))
        return nullptr;
    return new QEventDispatcherUNIX;
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
