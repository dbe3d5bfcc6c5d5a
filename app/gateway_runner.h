#pragma once
// Starting the gateway once the command line and the configuration are known.

#include "app/cli_options.h"
#include "core/config/config.h"

#include <QString>

namespace sw::app {

// ENGINE AUTHOR: this is the seam to fill in (today it prints "not wired yet"
// and returns 1). By the time it is called main() has created the application
// object (QApplication for the GUI, QCoreApplication when options.headless or
// in a build without the GUI), validated `config`, and applied --listen and
// --demo to it. It must:
//  - start the engine thread and listen on config.listen (port 0 = any free
//    port); with --demo, start the simulated upstreams and replace the
//    placeholder baseUrl of every `demo: true` provider with their real URL;
//  - once listening, call printListening() with the real base URL: the SDK
//    client tests and scripts/run wait for that exact first line;
//  - run the event loop and return its exit code. SIGINT/SIGTERM (and the window's Quit) end it
//    with a drain (Engine::requestShutdown: requests in flight get limits.shutdownGraceMs, what
//    is left is ended and billed, the ledger written); a second signal ends the drain at once.
//    SIGHUP re-reads the configuration file (Engine::reload).
int runGateway(const CliOptions &options, const config::Config &config);

// "Switchman listening on http://HOST:PORT" and a curl example line, for the
// given base URL (no trailing slash).
QString listeningBanner(const QString &baseUrl, const config::Config &config);

// Writes listeningBanner() to stdout and flushes, so a parent process reading a
// pipe sees it at once.
void printListening(const QString &baseUrl, const config::Config &config);

} // namespace sw::app
