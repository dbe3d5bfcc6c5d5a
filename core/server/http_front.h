#pragma once
// The listener: Qt's HTTP server machinery with our own dispatch, so every
// request (any path, any method) reaches one handler as an InboundRequest and
// an HttpExchange.

#include "core/config/config.h"
#include "core/server/inbound_request.h"
#include "core/server/request_guard.h"
#include "core/server/request_head.h"

#include <QAbstractHttpServer>
#include <functional>

namespace sw::server {

class HttpExchange;

class HttpFront final : public QAbstractHttpServer {
    Q_OBJECT
public:
    using Handler = std::function<void(InboundRequest &&request, HttpExchange *exchange)>;
    explicit HttpFront(Handler handler, QObject *parent = nullptr);
    // What is decided on a request's head, before its body is read (Router::judgeHead): its
    // connection's guard asks judgeHead(). Without one, every request is read whole.
    using HeadHandler = std::function<HeadVerdict(const RequestHead &head, const ListenerIdentity &listener)>;
    void setHeadHandler(HeadHandler handler) { m_headHandler = std::move(handler); }
    HeadVerdict judgeHead(const RequestHead &head) const {
        return m_headHandler ? m_headHandler(head, m_listener) : HeadVerdict{};
    }
    // The listener's own refusal of a request (Host, Origin, Content-Type, Content-Encoding:
    // RequestGuard::check), in the chat route's format on a chat route, else the listener's.
    static std::optional<Answer> listenerRefusal(const ListenerIdentity &listener, const InboundRequest &request,
                                                 qint64 bodyBytes);
    // Who we are, for the Host and Origin checks; set once listening.
    void setListener(const ListenerIdentity &listener) { m_listener = listener; }
    void setLimits(const config::LimitsConfig &limits) { m_limits = limits; }

Q_SIGNALS:
    // A whole request refused by the listener (listenerRefusal, or a body over limits.maxBodyBytes),
    // by status: counted in /metrics.
    void refused(int status);

protected:
    bool handleRequest(const QHttpServerRequest &request, QTcpSocket *socket) override;
    void missingHandler(const QHttpServerRequest &request, QTcpSocket *socket) override;

private:
    Handler m_handler;
    HeadHandler m_headHandler;
    ListenerIdentity m_listener;
    config::LimitsConfig m_limits;
};

} // namespace sw::server
