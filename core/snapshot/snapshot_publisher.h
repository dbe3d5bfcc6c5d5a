#pragma once
// Lives on the engine thread, next to the Engine. Collects what changed
// (attempts, marks, failures, usage, log lines, pause, configuration) and emits
// one EngineSnapshot at most every `intervalMs` (default 250 ms: ~4 per second)
// and only when something changed, plus a 1 s heartbeat so rates decay. Connect
// snapshotReady from a GUI-thread object: the connection is queued.

#include "core/snapshot/engine_snapshot.h"
#include "core/telemetry/telemetry.h"

#include <QObject>
#include <QSet>
#include <QTimer>
#include <deque>

namespace sw {
class Engine;
}

namespace sw::snapshot {

class SnapshotPublisher final : public QObject {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(SnapshotPublisher)
public:
    static constexpr int kMaxAttemptsPerSnapshot = 2000;
    static constexpr int kMaxLogLinesPerSnapshot = 500;
    static constexpr int kFailureMinutes = 30;

    // Must be created on the engine's thread; parented to the engine by default.
    explicit SnapshotPublisher(Engine &engine, int intervalMs = 250);
    ~SnapshotPublisher() override;

    // Emits a snapshot now (engine thread). Also used for the first one.
    void publishNow();

Q_SIGNALS:
    void snapshotReady(const sw::snapshot::EngineSnapshot &snapshot);

private:
    void onAttempt(const telemetry::AttemptRecord &record);
    void onUsage(const telemetry::UsageRow &row);
    void onLogLine(const telemetry::LogRecord &line);
    void onTick();
    void noteRequest(const QString &requestId, qint64 nowWallMs);
    int requestsInLastMinute(qint64 nowWallMs);

    Engine &m_engine;
    QTimer m_timer;
    bool m_dirty = true;
    qint64 m_lastPublishWallMs = 0;
    quint64 m_sequence = 0;
    quint64 m_configGeneration = 1;
    QList<telemetry::AttemptRecord> m_pendingAttempts;
    int m_droppedAttempts = 0;
    QList<telemetry::BudgetState> m_pendingBudgetWarnings;
    QList<telemetry::LogRecord> m_pendingLog;
    int m_droppedLog = 0;
    QMap<QString, UsageTotals> m_usageByTenant;
    QMap<QString, UsageTotals> m_usageByProvider;
    std::deque<FailureMinute> m_failureMinutes;
    // Requests per minute: new request ids per wall second over the last 60 s.
    QSet<QString> m_recentRequestIds;
    std::deque<QString> m_recentRequestOrder;
    std::deque<std::pair<qint64, int>> m_requestsPerSecond; // (second, count)
    qint64 m_lastUnansweredWallMs = 0;
    QString m_lastUnansweredReason;
};

} // namespace sw::snapshot
