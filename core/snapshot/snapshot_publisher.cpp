#include "core/snapshot/snapshot_publisher.h"

#include "core/engine.h"
#include "core/telemetry/telemetry.h"

#include <QDateTime>

namespace sw::snapshot {

namespace {
constexpr qint64 kMinuteMs = 60'000;
constexpr int kRecentIdsKept = 8192; // enough to tell a request's 2nd attempt from a new request at 2000 req/s

void add(UsageTotals &t, const telemetry::UsageRow &row) {
    ++t.attempts;
    t.input += row.input;
    t.output += row.output;
    t.cacheRead += row.cacheRead;
    t.cacheWrite += row.cacheWrite;
    t.cost += row.cost;
}
} // namespace

SnapshotPublisher::SnapshotPublisher(Engine &engine, int intervalMs) : QObject(&engine), m_engine(engine) {
    qRegisterMetaType<EngineSnapshot>();
    auto *telemetry = engine.telemetry();
    connect(telemetry, &telemetry::Telemetry::attemptRecorded, this, &SnapshotPublisher::onAttempt);
    connect(telemetry, &telemetry::Telemetry::usageRecorded, this, &SnapshotPublisher::onUsage);
    connect(telemetry, &telemetry::Telemetry::logged, this, &SnapshotPublisher::onLogLine);
    connect(&engine, &Engine::marksChanged, this, [this]() { m_dirty = true; });
    connect(&engine, &Engine::marksStoreChanged, this, [this]() { m_dirty = true; });
    connect(&engine, &Engine::credentialsChanged, this, [this]() { m_dirty = true; });
    connect(&engine, &Engine::pausedChanged, this, [this]() {
        m_dirty = true;
        publishNow(); // the tray and the status line answer a click at once
    });
    connect(&engine, &Engine::configApplied, this, [this]() {
        ++m_configGeneration;
        m_dirty = true;
    });
    // Budget notices given before the window existed (at start, from the ledger's spend) still show.
    m_pendingBudgetWarnings = engine.budgetWarnings();
    connect(&engine, &Engine::budgetWarning, this, [this](const telemetry::BudgetState &s) {
        m_pendingBudgetWarnings.append(s);
        m_dirty = true;
    });
    // Usage history from before the publisher existed still counts.
    for (const auto &row : telemetry->usage()) {
        add(m_usageByTenant[row.tenant], row);
        add(m_usageByProvider[row.provider], row);
    }
    m_timer.setInterval(intervalMs);
    connect(&m_timer, &QTimer::timeout, this, &SnapshotPublisher::onTick);
    m_timer.start();
}

SnapshotPublisher::~SnapshotPublisher() = default;

void SnapshotPublisher::onAttempt(const telemetry::AttemptRecord &record) {
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    if (m_pendingAttempts.size() < kMaxAttemptsPerSnapshot)
        m_pendingAttempts.append(record);
    else
        ++m_droppedAttempts;
    noteRequest(record.requestId, now);
    if (record.outcome == telemetry::AttemptOutcome::Failed && !record.failure.isEmpty()) {
        // The same events the /metrics counter counts, bucketed per wall minute for the chart.
        const qint64 minute = now - now % kMinuteMs;
        if (m_failureMinutes.empty() || m_failureMinutes.back().minuteEpochMs != minute)
            m_failureMinutes.push_back(FailureMinute{minute, {}});
        ++m_failureMinutes.back().counts[record.provider + QChar(0x1f) + record.failure];
        while (m_failureMinutes.size() > size_t(kFailureMinutes) ||
               (!m_failureMinutes.empty() &&
                m_failureMinutes.front().minuteEpochMs < minute - kFailureMinutes * kMinuteMs))
            m_failureMinutes.pop_front();
    }
    if (record.outcome == telemetry::AttemptOutcome::Failed &&
        (record.logOutcome == QLatin1String("exhausted") || record.logOutcome == QLatin1String("deadline"))) {
        m_lastUnansweredWallMs = now;
        m_lastUnansweredReason = record.failure.isEmpty() ? record.message : record.failure;
    }
    m_dirty = true;
}

void SnapshotPublisher::onUsage(const telemetry::UsageRow &row) {
    add(m_usageByTenant[row.tenant], row);
    add(m_usageByProvider[row.provider], row);
    m_dirty = true;
}

void SnapshotPublisher::onLogLine(const telemetry::LogRecord &line) {
    if (m_pendingLog.size() < kMaxLogLinesPerSnapshot)
        m_pendingLog.append(line);
    else
        ++m_droppedLog;
    m_dirty = true;
}

void SnapshotPublisher::noteRequest(const QString &requestId, qint64 nowWallMs) {
    if (m_recentRequestIds.contains(requestId))
        return;
    m_recentRequestIds.insert(requestId);
    m_recentRequestOrder.push_back(requestId);
    if (m_recentRequestOrder.size() > size_t(kRecentIdsKept)) {
        m_recentRequestIds.remove(m_recentRequestOrder.front());
        m_recentRequestOrder.pop_front();
    }
    const qint64 second = nowWallMs / 1000;
    if (m_requestsPerSecond.empty() || m_requestsPerSecond.back().first != second)
        m_requestsPerSecond.emplace_back(second, 0);
    ++m_requestsPerSecond.back().second;
}

int SnapshotPublisher::requestsInLastMinute(qint64 nowWallMs) {
    const qint64 oldest = nowWallMs / 1000 - 59;
    while (!m_requestsPerSecond.empty() && m_requestsPerSecond.front().first < oldest)
        m_requestsPerSecond.pop_front();
    int n = 0;
    for (const auto &[second, count] : m_requestsPerSecond)
        n += count;
    return n;
}

void SnapshotPublisher::onTick() {
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    // Heartbeat: rates, open streams and mark expiry move even when nothing is recorded.
    if (m_dirty || now - m_lastPublishWallMs >= 1000)
        publishNow();
}

void SnapshotPublisher::publishNow() {
    EngineSnapshot s;
    s.sequence = ++m_sequence;
    s.wallMs = QDateTime::currentMSecsSinceEpoch();
    s.baseUrl = m_engine.baseUrl();
    s.paused = m_engine.paused();
    s.openStreams = m_engine.activeRequests();
    s.requestsPerMinute = requestsInLastMinute(s.wallMs);
    s.lastUnansweredWallMs = m_lastUnansweredWallMs;
    s.lastUnansweredReason = m_lastUnansweredReason;
    s.newAttempts = std::move(m_pendingAttempts);
    m_pendingAttempts = {};
    s.droppedAttempts = std::exchange(m_droppedAttempts, 0);
    const qint64 engineNow = m_engine.clock().nowMs();
    const auto marks = m_engine.marks();
    s.marks.reserve(marks.size());
    for (const auto &m : marks)
        s.marks.append(MarkRow{m, std::max<qint64>(0, m.expiresAtMs - engineNow)});
    s.credentials = m_engine.credentialStates();
    s.marksStore = m_engine.marksStoreDescription();
    s.marksStoreShared = m_engine.marksShared();
    s.marksStoreUp = m_engine.marksStoreUp();
    s.failureTotals = m_engine.telemetry()->failureCounts();
    s.failuresByMinute = QList<FailureMinute>(m_failureMinutes.begin(), m_failureMinutes.end());
    s.usageByTenant = m_usageByTenant;
    s.usageByProvider = m_usageByProvider;
    s.budgets = m_engine.budgets();
    s.newBudgetWarnings = std::exchange(m_pendingBudgetWarnings, {});
    // The lines become JSON here, once per snapshot, not on the request that logged them.
    s.newLogLines.reserve(m_pendingLog.size());
    for (const auto &line : std::as_const(m_pendingLog))
        s.newLogLines.append(line.toJson());
    m_pendingLog = {};
    s.droppedLogLines = std::exchange(m_droppedLog, 0);
    s.config = m_engine.config();
    s.configGeneration = m_configGeneration;
    s.demoProviders = m_engine.demoProviders();
    m_dirty = false;
    m_lastPublishWallMs = s.wallMs;
    Q_EMIT snapshotReady(s);
}

} // namespace sw::snapshot
