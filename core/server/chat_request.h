#pragma once
// One chat request on one of the four chat routes: parse the body, resolve the
// route, honour the Idempotency-Key, then wire the failover loop
// (failover::AttemptLoop) to its three seams: the upstream tries (an
// AttemptRunner from EngineContext::makeAttemptRunner), the accounting (telemetry::AttemptReporter) and
// what the client sees (server::ClientStream). Every failover rule lives in
// core/failover/; docs/failover.md is the map.

#include "core/failover/attempt_loop.h"
#include "core/formats/inbound_codec.h"
#include "core/server/engine_context.h"
#include "core/server/inbound_request.h"
#include "core/telemetry/budget_tracker.h"

#include <QObject>
#include <QPointer>
#include <memory>

namespace sw::telemetry {
class AttemptReporter;
}

namespace sw::server {

class ClientStream;
class HttpExchange;

class ChatRequest final : public QObject {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(ChatRequest)
public:
    ChatRequest(EngineContext &ctx, wire::Api format, InboundRequest &&request, HttpExchange *exchange, QString tenant,
                QString requestId, QObject *parent = nullptr);
    ~ChatRequest() override;
    void start();
    // The gateway is shutting down and the grace is over: the request ends now with `error` (in
    // band once its stream is open, else whole) and is billed as cut (failover::AttemptLoop::onShutdown).
    void shutDown(const model::GatewayError &error) {
        if (!m_finished && m_loop)
            m_loop->onShutdown(error);
    }

Q_SIGNALS:
    void done();

private:
    bool reserveBudget(const failover::Resolution &resolution);
    // Answered with the gateway's own error before any attempt: its record and log line
    // (telemetry::recordRefusal).
    void recordRefusal(int status, const QString &reason, const QString &message, const QString &model);
    void releaseBudget();
    bool checkIdempotency();
    QByteArray callerAuth() const;
    void finish();

    EngineContext &m_ctx;
    std::shared_ptr<const config::Config> m_config;
    wire::Api m_format;
    InboundRequest m_request;
    QPointer<HttpExchange> m_exchange;
    QString m_tenant;
    QString m_requestId;
    model::ChatRequest m_parsed;
    QByteArray m_idempotencyKey;
    qint64 m_startMs = 0;
    bool m_finished = false;
    // What this request may still cost, held against its tenant's budget until it ends. A QPointer:
    // at shutdown the tracker may go before the requests.
    QPointer<telemetry::BudgetTracker> m_budgets;
    telemetry::BudgetTracker::ReservationId m_reservation = 0;
    double m_estimateUsd = 0; // what the reservation was made for: held again before a try after a costly one

    std::unique_ptr<ClientStream> m_client;
    std::unique_ptr<telemetry::AttemptReporter> m_reporter;
    failover::AttemptRunner *m_runner = nullptr; // a child: its calls are parented to it
    std::unique_ptr<failover::AttemptLoop> m_loop;
};

} // namespace sw::server
