#pragma once
// The failover loop's accounting (failover::AttemptObserver) for one request: attempt
// rows, usage rows priced by the candidate's model, the "candidate failover" log lines
// with the auth-gateway request log's keys, failure counters, TTFT, and the news that
// marks changed. Every text passes util::redactedAndTruncated first.

#include "core/failover/attempt_loop.h"
#include "core/telemetry/engine_events.h"

#include <functional>

namespace sw::telemetry {

class Telemetry;

struct RequestFacts {
    QString requestId;
    QString tenant;
    QString requestedModel;
    QString format; // inbound format name
    QString peer;
};

// A chat request the gateway answered with its own error before any upstream attempt (an
// unknown model, a budget, a bad body, a pause...): one record with outcome "refused", no
// candidate, attempt 0, `status` and `reason` (a short kind: budget, unknown_model...), and one
// "request refused" log line with the request's keys, `message` redacted like every log text.
// Called on the refusal's own path only; a served request never pays for it.
// Past Telemetry::admitRefusalRecord's limit a refusal is only counted. `nowMs`: the engine's clock.
void recordRefusal(Telemetry &telemetry, const RequestFacts &facts, int status, const QString &reason,
                   const QString &message, qint64 nowMs);

class AttemptReporter final : public failover::AttemptObserver {
public:
    AttemptReporter(Telemetry &telemetry, RequestFacts facts, std::function<void()> marksChanged = {});

    void attemptRecorded(const failover::AttemptReport &report) override;
    void attemptLogged(const failover::AttemptReport &report, const util::LogFields &extra) override;
    void usageRecorded(const failover::UsageReport &usage) override;
    void answerOpened(const failover::UsageReport &usage) override;
    void answerUnbilled() override;
    void note(const QString &message, const QJsonObject &fields) override;
    void failureCounted(const failover::Candidate &candidate, failover::FailureKind kind) override;
    void marked(const failover::Candidate &candidate, qint64 ttlMs) override;
    void marksLifted(const failover::Candidate &candidate, int count) override;
    void ttftObserved(qint64 ms) override;
    // Told each usage row's cost after Telemetry has it (the request's budget reservation shrinks).
    void setCostRecorded(std::function<void(double cost)> f) { m_costRecorded = std::move(f); }

private:
    UsageRow rowOf(const failover::UsageReport &usage) const; // priced by the candidate's model
    Telemetry &m_telemetry;
    RequestFacts m_facts;
    std::function<void()> m_marksChanged;
    std::function<void(double cost)> m_costRecorded;
};

} // namespace sw::telemetry
