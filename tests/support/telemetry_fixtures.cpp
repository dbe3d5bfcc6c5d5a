#include "telemetry_fixtures.h"

#include <QDateTime>

namespace sw::test {

telemetry::AttemptRecord refusedRecord(const QString &requestId, const QString &message, const QString &reason,
                                       int status) {
    telemetry::AttemptRecord r;
    r.requestId = requestId;
    r.tenant = QStringLiteral("alice");
    r.requestedModel = QStringLiteral("sonnet");
    r.outcome = telemetry::AttemptOutcome::Refused;
    r.failure = reason;
    r.status = status;
    r.message = message;
    r.startedAtEpochMs = QDateTime::currentMSecsSinceEpoch();
    return r;
}

} // namespace sw::test
