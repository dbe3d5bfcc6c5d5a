#include "core/telemetry/attempt_reporter.h"

#include "core/telemetry/telemetry.h"
#include "core/util/redaction.h"

#include <QDateTime>

namespace sw::telemetry {

namespace {
AttemptOutcome outcomeOf(failover::AttemptOutcome o) {
    switch (o) {
    case failover::AttemptOutcome::Committed:
        return AttemptOutcome::Committed;
    case failover::AttemptOutcome::Failed:
        return AttemptOutcome::Failed;
    case failover::AttemptOutcome::Skipped:
        return AttemptOutcome::Skipped;
    case failover::AttemptOutcome::Aborted:
        return AttemptOutcome::Aborted;
    }
    return AttemptOutcome::Failed;
}
} // namespace

void recordRefusal(Telemetry &telemetry, const RequestFacts &facts, int status, const QString &reason,
                   const QString &message, qint64 nowMs) {
    if (!telemetry.admitRefusalRecord(facts.tenant, nowMs)) {
        telemetry.countRefusal(status); // a record counts itself; this one is not made
        return;
    }
    // The model is the client's text, quoted back in the 404: a key pasted there is not logged.
    const QString model = util::redactedAndTruncated(facts.requestedModel, 300, {});
    const QString text = util::redactedAndTruncated(message, 300, {});
    AttemptRecord r;
    r.requestId = facts.requestId;
    r.attempt = 0; // none was made
    r.tenant = facts.tenant;
    r.requestedModel = model;
    r.outcome = AttemptOutcome::Refused;
    r.failure = reason;
    r.status = status;
    r.startedAtEpochMs = QDateTime::currentMSecsSinceEpoch();
    r.format = facts.format;
    r.logOutcome = QStringLiteral("refused");
    r.message = text;
    telemetry.recordAttempt(r);

    util::LogFields o;
    o.reserve(9);
    o.append({QLatin1String("requestId"), facts.requestId});
    o.append({QLatin1String("format"), facts.format});
    o.append({QLatin1String("model"), model});
    o.append({QLatin1String("tenant"), facts.tenant});
    o.append({QLatin1String("peer"), facts.peer});
    o.append({QLatin1String("outcome"), r.logOutcome});
    o.append({QLatin1String("status"), status});
    o.append({QLatin1String("reason"), reason});
    o.append({QLatin1String("error"), text});
    // A budget or a pause is the gateway doing as configured; anything else is a request (or a
    // configuration) to fix.
    const bool policy = status == 429 || status == 503;
    telemetry.log(policy ? QStringLiteral("info") : QStringLiteral("warn"), QStringLiteral("request refused"),
                  std::move(o));
}

AttemptReporter::AttemptReporter(Telemetry &telemetry, RequestFacts facts, std::function<void()> marksChanged)
    : m_telemetry(telemetry), m_facts(std::move(facts)), m_marksChanged(std::move(marksChanged)) {}

void AttemptReporter::attemptRecorded(const failover::AttemptReport &report) {
    AttemptRecord r;
    r.requestId = m_facts.requestId;
    r.attempt = report.attemptNo;
    r.tenant = m_facts.tenant;
    r.requestedModel = m_facts.requestedModel;
    if (report.candidate) {
        r.candidate = report.candidate->name();
        r.provider = report.candidate->provider.id;
    }
    r.outcome = outcomeOf(report.outcome);
    r.failure = report.failure;
    r.status = report.status;
    r.elapsedMs = report.elapsedMs;
    r.ttftMs = report.ttftMs;
    r.startedAtEpochMs = QDateTime::currentMSecsSinceEpoch() - r.elapsedMs;
    r.format = m_facts.format;
    r.logOutcome = report.logOutcome;
    r.message = util::redactedAndTruncated(report.message, 300, {});
    r.dropped = report.dropped;
    m_telemetry.recordAttempt(r);
}

void AttemptReporter::attemptLogged(const failover::AttemptReport &report, const util::LogFields &extra) {
    // The request's keys plus the attempt's, so one log line tells the whole try.
    util::LogFields o;
    o.reserve(9 + extra.size());
    o.append({QLatin1String("requestId"), m_facts.requestId});
    o.append({QLatin1String("format"), m_facts.format});
    o.append({QLatin1String("model"), m_facts.requestedModel});
    o.append({QLatin1String("tenant"), m_facts.tenant});
    o.append({QLatin1String("resolvedProvider"), report.candidate ? report.candidate->provider.id : QString()});
    o.append({QLatin1String("resolvedModel"), report.candidate ? report.candidate->model.id : QString()});
    o.append({QLatin1String("peer"), m_facts.peer});
    o.append({QLatin1String("attempt"), report.attemptNo});
    o.append({QLatin1String("outcome"), report.logOutcome});
    o.append(extra);
    m_telemetry.log(QStringLiteral("warn"), QStringLiteral("candidate failover"), std::move(o));
}

UsageRow AttemptReporter::rowOf(const failover::UsageReport &u) const {
    UsageRow row;
    row.requestId = u.rowId;
    row.tenant = m_facts.tenant;
    // The route the client asked for, known from the start: a try's row written before its attempt
    // ended (a retry's, in an earlier batch) had none, so grouping by route split one request.
    row.route = m_facts.requestedModel;
    row.candidate = u.candidate.name();
    row.provider = u.candidate.provider.id;
    row.input = u.usage.input;
    row.output = u.usage.output;
    row.cacheRead = u.usage.cacheRead;
    row.cacheWrite = u.usage.cacheWrite;
    const config::ModelConfig &m = u.candidate.model;
    row.cost = (double(u.usage.input) * m.costInput + double(u.usage.cacheRead) * m.cacheReadPrice() +
                double(u.usage.cacheWrite) * m.cacheWritePrice() + double(u.usage.output) * m.costOutput) /
               1e6;
    row.atEpochMs = QDateTime::currentMSecsSinceEpoch();
    return row;
}

void AttemptReporter::usageRecorded(const failover::UsageReport &u) {
    UsageRow row = rowOf(u);
    // ok: the whole answer; cut: an answer broken off after its content began; aborted: the client
    // left (or read nothing) before the end; error: a try that did not answer.
    using End = failover::UsageReport::End;
    row.outcome = u.end == End::ClientGone ? QStringLiteral("aborted")
                  : !u.answered            ? QStringLiteral("error")
                  : u.end == End::Cut      ? QStringLiteral("cut")
                                           : QStringLiteral("ok");
    m_telemetry.recordUsage(row);
    if (m_costRecorded)
        m_costRecorded(row.cost);
}

void AttemptReporter::answerOpened(const failover::UsageReport &u) {
    UsageRow row = rowOf(u);
    row.outcome = QStringLiteral("interrupted"); // what it is billed as, if it ever is
    m_telemetry.recordOpenAnswer(row);
}

void AttemptReporter::answerUnbilled() {
    m_telemetry.closeOpenAnswer(m_facts.requestId);
}

void AttemptReporter::note(const QString &message, const QJsonObject &fields) {
    QJsonObject o{{QStringLiteral("requestId"), m_facts.requestId}, {QStringLiteral("tenant"), m_facts.tenant}};
    for (auto it = fields.begin(); it != fields.end(); ++it)
        o.insert(it.key(), it.value());
    m_telemetry.log(QStringLiteral("info"), message, o);
}

void AttemptReporter::failureCounted(const failover::Candidate &candidate, failover::FailureKind kind) {
    m_telemetry.countFailure(candidate.provider.id, failover::failureKindName(kind));
}

void AttemptReporter::marked(const failover::Candidate &candidate, qint64 ttlMs) {
    Q_UNUSED(candidate);
    Q_UNUSED(ttlMs);
    if (m_marksChanged)
        m_marksChanged();
}

void AttemptReporter::marksLifted(const failover::Candidate &candidate, int count) {
    // A mark gone because its provider answered: the marks feed and the window drop it now, and the
    // log says why it went before its time.
    note(QStringLiteral("marks lifted: the provider answered"),
         {{QStringLiteral("candidate"), candidate.name()}, {QStringLiteral("count"), count}});
    if (m_marksChanged)
        m_marksChanged();
}

void AttemptReporter::ttftObserved(qint64 ms) {
    m_telemetry.observeTtft(ms);
}

} // namespace sw::telemetry
