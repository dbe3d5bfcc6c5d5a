#pragma once
// Records as the engine's telemetry makes them, for the tests of the views that show them.
#include "core/telemetry/engine_events.h"

namespace sw::test {

// A request the gateway answered with its own error before any upstream: tenant alice, model
// "sonnet", a budget 429 unless told otherwise, started now.
telemetry::AttemptRecord refusedRecord(const QString &requestId, const QString &message,
                                       const QString &reason = QStringLiteral("budget"), int status = 429);

} // namespace sw::test
