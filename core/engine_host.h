#pragma once
// Runs an Engine on its own thread, so the window's thread never waits on a
// socket or the keychain: created and started there, deleted there, then the
// thread quits. The caller's thread only talks to it with queued calls.

#include "core/engine.h"

#include <QAbstractEventDispatcher>
#include <QThread>
#include <functional>

namespace sw {

class EngineHost final {
    Q_DISABLE_COPY_MOVE(EngineHost)
public:
    EngineHost();
    ~EngineHost(); // stops the engine and joins the thread

    // Creates the engine on the engine thread and binds the listener. Blocks until done.
    bool start(Engine::Options options, const QString &listenOverride, QString *error);
    // Graceful stop: Engine::requestShutdown, then this thread's events run until the engine is
    // drained (limits.shutdownGraceMs, and a moment for the last bytes). requestShutdown() from
    // this thread meanwhile (a second signal) ends the grace at once. stop() follows.
    void drain();
    void requestShutdown(); // Engine::requestShutdown on the engine thread, without waiting
    void stop();
    Engine *engine() const { return m_engine; } // use only through queued calls from other threads
    QString baseUrl() const { return m_baseUrl; }
    // Runs fn on the engine thread and waits for it.
    void runBlocking(const std::function<void(Engine &)> &fn);
    // Runs fn on the engine thread without waiting.
    void post(std::function<void(Engine &)> fn);

    // The event dispatcher the engine thread runs on: util::EpollDispatcher; Qt's UNIX one when
    // SWITCHMAN_ENGINE_DISPATCHER=unix asks for it, nullptr (Qt's default, glib's) for =glib, to
    // tell them apart when diagnosing or measuring. For any thread that hosts an engine itself
    // (tests).
    static QAbstractEventDispatcher *createEventDispatcher();

private:
    QThread m_thread;
    Engine *m_engine = nullptr;
    QString m_baseUrl;
};

} // namespace sw
