#pragma once
// Waiting on real I/O in tests: run the event loop (blocking, not spinning) until a condition holds or
// a generous deadline passes. Used only where real sockets are involved.

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QEventLoop>
#include <functional>

namespace sw::test {

// True when `condition` became true before `timeoutMs`.
bool waitUntil(const std::function<bool()> &condition, int timeoutMs = 5000);

} // namespace sw::test
