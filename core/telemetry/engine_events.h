#pragma once
// Plain records the engine publishes: to /admin, /metrics, the log and the GUI.

#include <QMetaType>
#include <QString>
#include <QStringList>
#include <optional>

namespace sw::telemetry {

// Refused: the gateway answered the request with its own error before any upstream attempt (an
// unknown model, a budget, a bad body...): the request's one record, with no candidate, attempt 0,
// the status the client got and the reason in `failure` (telemetry::recordRefusal).
enum class AttemptOutcome { Committed, Failed, Skipped, Aborted, Refused };
QString outcomeName(AttemptOutcome o); // committed, failed, skipped, aborted, refused

struct AttemptRecord {
    QString requestId;
    int attempt = 0;
    QString tenant;
    QString requestedModel;
    QString candidate; // provider/id; empty for a refused request
    QString provider;
    AttemptOutcome outcome = AttemptOutcome::Committed;
    QString failure; // failure kind name (a refusal's reason), empty when none
    int status = 0;  // upstream HTTP status (a refusal's own), 0 when none
    qint64 elapsedMs = 0;
    std::optional<qint64> ttftMs;
    qint64 startedAtEpochMs = 0;
    QString format;     // inbound format name
    QString logOutcome; // the log line's outcome: retrying, skipped, exhausted, deadline, budget, refused
    QString message;    // short error text (never a secret)
    // What the answering attempt's request went without (a field its model refuses, or its API
    // cannot carry: UpstreamAdapter::droppedFor, wire::droppedMembers); empty for other rows.
    QStringList dropped;
};

struct UsageRow {
    QString requestId; // REQ, or REQ:aN for an attempt that did not answer
    QString tenant;
    QString route; // the model or route the client asked for; filled from the attempts when empty
    QString candidate;
    QString provider;
    qint64 input = 0;
    qint64 output = 0;
    qint64 cacheRead = 0;
    qint64 cacheWrite = 0;
    double cost = 0;
    QString outcome; // ok | cut (broken off after content) | aborted (the client left) | error (no answer)
    qint64 atEpochMs = 0;
};

} // namespace sw::telemetry

Q_DECLARE_METATYPE(sw::telemetry::AttemptRecord)
Q_DECLARE_METATYPE(sw::telemetry::UsageRow)
