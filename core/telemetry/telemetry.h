#pragma once
// Engine-thread sink for attempts, usage, failure counters and the structured
// log. Bounded: attempts and usage are ring buffers; counters are maps.

#include "core/telemetry/engine_events.h"
#include "core/util/log_fields.h"

#include <QHash>
#include <QJsonObject>
#include <QObject>
#include <deque>

namespace sw::telemetry {

// One structured log line as logged: cheap to make on the engine thread (copies by reference
// count); the JSON object is built by whoever reads it.
struct LogRecord {
    qint64 atMs = 0; // wall clock, ms since the epoch
    QString level;   // info, warn, error
    QString message;
    QJsonObject fields;       // a caller's ready-made fields
    util::LogFields gathered; // fields gathered on the request path; a name here replaces one in `fields`

    // {"ts": ISO 8601 UTC with ms, "level", "msg", the fields}: the line's JSON form.
    QJsonObject toJson() const;
    // The same as one line of compact JSON ("ts", "level", "msg" first), ending in '\n'.
    QByteArray toJsonLine() const;
};

// Qt's own messages (a qWarning from inside Qt, a logging category the user turned on with
// QT_LOGGING_RULES) as JSON log lines on stderr, {"ts", "level", "msg", "source": "qt",
// "category"}, redacted like every other line: the headless log is JSON lines only. Installs a
// process-wide message handler; for the headless run, from its start to the process's end.
void logQtMessagesAsJsonLines();

class Telemetry final : public QObject {
    Q_OBJECT
public:
    static constexpr int kAttemptCapacity = 2000;
    static constexpr int kUsageCapacity = 10000;

    explicit Telemetry(QObject *parent = nullptr);

    void recordAttempt(const AttemptRecord &record);
    void recordUsage(const UsageRow &row);
    // A committed answer's cost so far (its open row in the ledger), and an answer that ended
    // with no usage row: neither is usage (no budget, no ring buffer), only the ledger's.
    void recordOpenAnswer(const UsageRow &row) { Q_EMIT answerOpened(row); }
    void closeOpenAnswer(const QString &requestId) { Q_EMIT answerClosed(requestId); }
    void countFailure(const QString &provider, const QString &failureKind);
    // A chat request answered with the gateway's own error before any attempt, by status: a
    // refused request's record counts itself (recordAttempt); a caller with no or an unknown key
    // (401) is only counted, never recorded: a peer without a key must not flush the bounded
    // attempts and log with lines of its own making.
    void countRefusal(int status) { ++m_refusedByStatus[status]; }
    // Whether a refused request of `tenant` at `nowMs` (the engine's clock) is recorded and logged:
    // at most kRefusalRecordsPerWindow in each kRefusalWindowMs a tenant, the rest only counted, so
    // requests that cost a tenant nothing (an unknown model's 404) cannot push every other tenant's
    // records out of the bounded attempts list and flood the log (probe EV 3). The first one held
    // back in a window says so in one log line.
    static constexpr int kRefusalRecordsPerWindow = 20;
    static constexpr qint64 kRefusalWindowMs = 10'000;
    bool admitRefusalRecord(const QString &tenant, qint64 nowMs);
    void requestStarted() { ++m_inFlight; }
    void requestFinished(qint64 durationMs);
    void observeTtft(qint64 ms);
    // One structured log line (JSON); level: info, warn, error.
    void log(const QString &level, const QString &message, QJsonObject fields = {});
    // The same, with fields gathered on the request path: no JSON is built unless someone
    // listens to logLine or the line goes to stderr.
    void log(const QString &level, const QString &message, util::LogFields fields);
    void setJsonLogToStderr(bool on) { m_stderrLog = on; }

    QList<AttemptRecord> attempts(int limit) const; // newest first
    QList<UsageRow> usage() const;                  // oldest first
    // The model or route a recent request asked for (from its attempts), for usage rows that
    // do not carry it; "REQ:aN" ids name their request. Empty when unknown or long gone.
    QString routeOf(const QString &requestId) const;
    QString metricsText(const QHash<QString, int> &marksByTenantHashAndKind) const;
    QHash<QString, qint64> failureCounts() const { return m_failures; } // "provider\x1ffailure" -> n
    int inFlight() const { return m_inFlight; }

Q_SIGNALS:
    void attemptRecorded(const sw::telemetry::AttemptRecord &record);
    void usageRecorded(const sw::telemetry::UsageRow &row);
    void answerOpened(const sw::telemetry::UsageRow &row);
    void answerClosed(const QString &requestId);
    // Every log line as JSON. Building it costs a few microseconds per line: only made
    // when something is connected (tests, tools); the product's readers use `logged`.
    void logLine(const QJsonObject &line);
    void logged(const sw::telemetry::LogRecord &record);

private:
    void emitLog(LogRecord record);
    struct Histogram {
        QList<double> bounds; // seconds
        QList<qint64> counts; // per bound, plus +Inf at the end
        double sum = 0;
        qint64 count = 0;
        void observe(double v);
    };
    std::deque<AttemptRecord> m_attempts;
    std::deque<UsageRow> m_usage;
    // requestId -> requested model; two generations so a lookup soon after the request finds it.
    QHash<QString, QString> m_routes;
    QHash<QString, QString> m_oldRoutes;
    QHash<QString, qint64> m_failures;
    QHash<QString, qint64> m_attemptsByOutcome;
    QHash<int, qint64> m_refusedByStatus;
    struct RefusalWindow {
        qint64 startMs = 0;
        int recorded = 0;
        bool toldHeldBack = false;
    };
    QHash<QString, RefusalWindow> m_refusalWindows; // by tenant: as many as the configuration has
    int m_inFlight = 0;
    Histogram m_requestSeconds;
    Histogram m_ttftSeconds;
    bool m_stderrLog = false;
};

} // namespace sw::telemetry

Q_DECLARE_METATYPE(sw::telemetry::LogRecord)
