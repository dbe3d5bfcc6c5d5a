#pragma once
// The listener: Qt's HTTP server machinery with our own dispatch, so every
// request (any path, any method) reaches one handler as an InboundRequest and
// an HttpExchange.

#include "core/config/config.h"
#include "core/server/inbound_request.h"
#include "core/server/request_guard.h"

#include <QAbstractHttpServer>
#include <functional>

namespace sw::server {

class HttpExchange;

class HttpFront final : public QAbstractHttpServer {
    Q_OBJECT
public:
    using Handler = std::function<void(InboundRequest &&request, HttpExchange *exchange)>;
    explicit HttpFront(Handler handler, QObject *parent = nullptr);
    // Who we are, for the Host and Origin checks; set once listening.
    void setListener(const ListenerIdentity &listener) { m_listener = listener; }
    void setLimits(const config::LimitsConfig &limits) { m_limits = limits; }

protected:
    bool handleRequest(const QHttpServerRequest &request, QTcpSocket *socket) override;
    void missingHandler(const QHttpServerRequest &request, QTcpSocket *socket) override;

private:
    Handler m_handler;
    ListenerIdentity m_listener;
    config::LimitsConfig m_limits;
};

} // namespace sw::server
