#pragma once
// What the admin window sees of the engine: a copyable value the engine thread
// publishes a few times per second (docs/gui.md, "Threads"). Everything in it is
// plain data or implicitly shared and immutable, so it crosses threads by
// queued signal and the GUI never touches an engine object.

#include "core/config/config.h"
#include "core/credentials/credential_pools.h"
#include "core/failover/provider_down_marks.h"
#include "core/telemetry/budget_tracker.h"
#include "core/telemetry/engine_events.h"

#include <QHash>
#include <QJsonObject>
#include <QList>
#include <QMap>
#include <QMetaType>
#include <memory>

namespace sw::snapshot {

// A mark as it stood when the snapshot was taken. remainingMs is measured on the
// engine clock at `EngineSnapshot::wallMs`, so the GUI counts down on its own.
struct MarkRow {
    failover::MarkInfo info;
    qint64 remainingMs = 0;
};

struct UsageTotals {
    qint64 attempts = 0; // usage rows (one per attempt with nonzero usage)
    qint64 input = 0;
    qint64 output = 0;
    qint64 cacheRead = 0;
    qint64 cacheWrite = 0;
    double cost = 0;
};

// Candidate failures in one wall-clock minute, "provider\x1ffailure" -> count.
struct FailureMinute {
    qint64 minuteEpochMs = 0; // start of the minute
    QHash<QString, qint64> counts;
};

struct EngineSnapshot {
    quint64 sequence = 0;
    qint64 wallMs = 0; // wall time (ms since epoch) the snapshot was taken
    QString baseUrl;
    bool paused = false;
    int openStreams = 0;             // chat requests being served
    int requestsPerMinute = 0;       // requests seen in the last 60 s
    qint64 lastUnansweredWallMs = 0; // last request that got no answer from any candidate (0 = none)
    QString lastUnansweredReason;

    QList<telemetry::AttemptRecord> newAttempts;   // since the previous snapshot, oldest first
    int droppedAttempts = 0;                       // more than fit in one batch (the GUI ring is bounded anyway)
    QList<MarkRow> marks;                          // every active mark
    QString marksStore = QStringLiteral("memory"); // Engine::marksStoreDescription()
    bool marksStoreShared = false;                 // marks go through Redis (store "redis")
    bool marksStoreUp = true;                      // false: Redis unreachable or silent, marks are local only
    // Every configured credential and its health; remainingMs of a parked one is measured at `wallMs`.
    QList<credentials::CredentialStatus> credentials;
    QHash<QString, qint64> failureTotals;  // the /metrics counter: "provider\x1ffailure" -> n
    QList<FailureMinute> failuresByMinute; // the last 30 minutes that had failures, oldest first
    QMap<QString, UsageTotals> usageByTenant;
    QMap<QString, UsageTotals> usageByProvider;
    QList<telemetry::BudgetState> budgets;           // tenants with a budget: spend in the current period
    QList<telemetry::BudgetState> newBudgetWarnings; // 80 % notices since the previous snapshot (once per period)
    QList<QJsonObject> newLogLines;                  // since the previous snapshot, oldest first
    int droppedLogLines = 0;
    std::shared_ptr<const config::Config> config; // the running configuration (immutable)
    quint64 configGeneration = 0;                 // bumps on every applied configuration
    QStringList demoProviders;                    // simulated providers (--demo), sorted
};

} // namespace sw::snapshot

Q_DECLARE_METATYPE(sw::snapshot::EngineSnapshot)
