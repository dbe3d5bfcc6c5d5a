#pragma once
// The listener: Qt's HTTP server machinery with our own dispatch, so every
// request (any path, any method) reaches one handler as an InboundRequest and
// an HttpExchange.

#include "server/inbound_request.h"

#include <QAbstractHttpServer>
#include <functional>

namespace sw::server {

class HttpExchange;

class HttpFront final : public QAbstractHttpServer {
    Q_OBJECT
public:
    using Handler = std::function<void(InboundRequest &&request, HttpExchange *exchange)>;
    explicit HttpFront(Handler handler, QObject *parent = nullptr);

protected:
    bool handleRequest(const QHttpServerRequest &request, QTcpSocket *socket) override;
    void missingHandler(const QHttpServerRequest &request, QTcpSocket *socket) override;

private:
    Handler m_handler;
};

} // namespace sw::server
