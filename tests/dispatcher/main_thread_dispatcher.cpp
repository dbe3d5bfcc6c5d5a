// Linked into the unit and integration tests (not the keychain ones): their main thread, which
// hosts the engine and its parts (GatewayFixture, transports, Redis), gets the event dispatcher the
// product's engine thread runs on (EngineHost::createEventDispatcher: the epoll one, or the one
// SWITCHMAN_ENGINE_DISPATCHER names), so every test runs the engine on the dispatcher it ships
// with. It must be installed before QCoreApplication exists, hence a static initializer.

#include "core/engine_host.h"

#include <QCoreApplication>

namespace {

const bool g_installed = [] {
    if (QAbstractEventDispatcher *dispatcher = sw::EngineHost::createEventDispatcher()) {
        QCoreApplication::setEventDispatcher(dispatcher);
        return true;
    }
    return false; // glib's, Qt's default
}();

} // namespace
