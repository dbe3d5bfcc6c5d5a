#pragma once
// One chat request on one of the four chat routes, from body to last byte:
// the record's attempt loop (Approach) with the commit hold, attempt budget,
// deadline, in-attempt retries, credential rotation, marks and accounting.

#include "credentials/credential_pools.h"
#include "failover/attempt_budget.h"
#include "failover/candidate_resolver.h"
#include "failover/commit_hold.h"
#include "failover/failure_classifier.h"
#include "formats/inbound_codec.h"
#include "model/event_accumulator.h"
#include "server/engine_context.h"
#include "server/inbound_request.h"
#include "telemetry/engine_events.h"
#include "upstream/sse_reader.h"
#include "upstream/transport.h"
#include "upstream/upstream_adapter.h"

#include <QElapsedTimer>
#include <QJsonObject>
#include <QObject>
#include <QPointer>
#include <QSet>
#include <memory>

namespace sw::server {

class HttpExchange;

class ChatRequest final : public QObject {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(ChatRequest)
public:
    ChatRequest(EngineContext &ctx, formats::InboundFormat format, InboundRequest &&request, HttpExchange *exchange,
                QString tenant, QString requestId, QObject *parent = nullptr);
    ~ChatRequest() override;
    void start();

Q_SIGNALS:
    void done();

private:
    enum class Phase { Idle, Setup, Upstream, Waiting, Finished };

    // loop
    void nextCandidate();
    void recordSkips(const QList<failover::Skip> &skipped);
    void beginAttempt(const failover::Candidate &candidate);
    void acquireCredential(int startIndex);
    void onCredential(const credentials::AcquireResult &result);
    void launchUpstream();
    bool hasFollower() const;
    failover::CandidateResolver::State resolverState() const;
    QByteArray callerAuth() const;
    std::optional<QString> ineligibleReason(const failover::Candidate &c) const;
    std::optional<QString> precheckRejection(const failover::Candidate &c) const;

    // upstream call
    void onResponseStarted(int status, const upstream::HeaderList &headers);
    void onBodyData(const QByteArray &chunk);
    void onFinished(const upstream::TransportResult &result);
    void handleEvents(const QList<model::StreamEvent> &events, const QList<upstream::SseEvent> *raw);
    void commit(const QList<model::StreamEvent> &released);
    void applyBackpressure();
    void onClientDrained();
    void deliver(const model::StreamEvent &event);
    void succeed();

    // failures
    void attemptFailed(failover::FailureInput input, bool fromHeaders);
    void settleAttempt();
    void afterFailure(const failover::UpstreamFailure &failure);
    bool tryInAttemptRetry(const failover::UpstreamFailure &failure);
    void finishWithFailure(const model::GatewayError &error, bool markedRetryAfter);
    QString redacted(QString text) const;
    model::GatewayError withCostCeilingNote(model::GatewayError error) const;
    model::GatewayError clientErrorFor(const failover::UpstreamFailure &failure) const;
    void stopWithUpstreamError(const failover::FailureInput &input);
    void onDeadline();
    void onBudgetExpired();
    void armIdleTimer(qint64 delayMs);
    void onIdleTimer();
    void retireBudget();
    void onClientGone();

    // output
    void ensureStreamHeaders();
    void writeKeepalive();
    void respondError(const model::GatewayError &error);
    upstream::HeaderList baseHeaders() const;
    void recordAttempt(telemetry::AttemptOutcome outcome, const QString &failure, const QString &logOutcome,
                       const QString &message);
    void recordUsage(bool answered);
    void logFailure(const failover::UpstreamFailure &failure, const QString &logOutcome, const QString &next);
    void logSkip(const QString &reason, const QString &failure = {});
    void writeStreamError(const model::GatewayError &error);
    QJsonObject attemptLogFields(const QString &logOutcome) const;
    void finish();

    EngineContext &m_ctx;
    std::shared_ptr<const config::Config> m_config;
    formats::InboundFormat m_format;
    const formats::InboundCodec &m_codec;
    InboundRequest m_request;
    QPointer<HttpExchange> m_exchange;
    QString m_tenant;
    QString m_requestId;
    formats::ParsedRequest m_parsed;
    failover::Resolution m_resolution;
    formats::EncodeInfo m_encodeInfo;

    Phase m_phase = Phase::Idle;
    qint64 m_startMs = 0;
    qint64 m_deadlineAtMs = 0;
    util::Clock::TimerId m_deadlineTimer = 0;
    util::Clock::TimerId m_keepaliveTimer = 0;
    util::Clock::TimerId m_retryTimer = 0;
    util::Clock::TimerId m_idleTimer = 0; // failover.upstreamIdleTimeoutMs: no request lives forever
    bool m_deadlinePassed = false;
    bool m_clientGone = false;
    bool m_overCostCeiling = false; // some candidate was skipped for the route's cost ceiling
    QSet<QString> m_tried;
    int m_attemptNo = 0;
    int m_failedAttempts = 0;

    // the current attempt
    std::optional<failover::Candidate> m_candidate;
    const upstream::UpstreamAdapter *m_adapter = nullptr;
    upstream::Target m_target;
    credentials::Lease m_lease;
    int m_credentialIndex = 0;
    int m_retries = 0;
    int m_usageRows = 0; // usage rows this attempt wrote: each id must be unique
    bool m_follower = false;
    QPointer<upstream::UpstreamCall> m_call;
    std::unique_ptr<failover::AttemptBudget> m_budget;
    std::unique_ptr<failover::AttemptBudget> m_retiredBudget;
    failover::CommitHold m_hold;
    upstream::SseReader m_sse;
    std::unique_ptr<upstream::StreamDecoder> m_decoder;
    model::EventAccumulator m_accumulator;
    model::Usage m_attemptUsage;
    QByteArray m_errorBody;
    model::GatewayError m_upstreamError; // the last upstream error body's code/param, for the client's error
    int m_status = 0;
    std::optional<qint64> m_headerRetryAfter;
    upstream::HeaderList m_errorHeaders; // a non-2xx answer's headers: credential reset hints
    qint64 m_attemptStartMs = 0;
    qint64 m_tryStartMs = 0;   // this upstream call's launch (a strike needs a try newer than the mark)
    qint64 m_lastByteMs = 0;   // the upstream's last byte, for the idle timeout
    bool m_idleFired = false;  // our abort() for silence: server_error, not the client's or a transport's
    bool m_streamEnded = false; // the upstream closed cleanly; errors the decoder makes now are a socket close
    QByteArray m_location;     // a 3xx's Location, to name the redirect
    std::optional<qint64> m_ttftMs;
    bool m_rawPassthrough = false;
    QList<QByteArray> m_heldRaw;
    qint64 m_heldRawBytes = 0; // with the hold's own count, bounded by limits.maxHoldBytes
    qint64 m_bodyBytes = 0;    // this try's 2xx body, bounded by limits.maxResponseBytes when not streaming
    bool m_readPaused = false; // backpressure: the upstream is not read while the client lags
    bool m_terminalSeen = false;

    // across attempts
    std::optional<failover::UpstreamFailure> m_lastFailure;
    QString m_lastFailureWho; // the candidate m_lastFailure came from
    std::optional<model::GatewayError> m_stopError;
    std::optional<QString> m_noCredential; // the first candidate skipped for want of a credential, and why
    QString m_fallbackFrom;
    QString m_fallbackReason;
    std::unique_ptr<formats::StreamEncoder> m_encoder;
    bool m_committed = false;
    bool m_budgetFailure = false;
    QByteArray m_idempotencyKey;
};

} // namespace sw::server
