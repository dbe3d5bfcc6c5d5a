#pragma once
// SPEC section 8: JSON admin API on the listener (headless parity with the GUI).

#include "server/inbound_request.h"

#include <QList>
#include <QObject>
#include <QPointer>

namespace sw { class Engine; }

namespace sw::server {

class HttpExchange;

class AdminApi final : public QObject {
    Q_OBJECT
public:
    explicit AdminApi(Engine &engine, QObject *parent = nullptr);
    // Handles any /admin/ path; always answers.
    void handle(const InboundRequest &request, HttpExchange *exchange);

    static QByteArray marksJson(const Engine &engine);
    // GET /admin/credentials body (admin_credentials.cpp): references and states, never a secret.
    static QByteArray credentialsJson(const Engine &engine);

private:
    // GET / DELETE /admin/credentials (issue 13).
    void handleCredentials(const InboundRequest &request, HttpExchange *exchange);
    void json(HttpExchange *exchange, int status, const QByteArray &body);
    void broadcast(const QByteArray &event, const QByteArray &json);
    Engine &m_engine;
    QList<QPointer<HttpExchange>> m_feeds;
};

} // namespace sw::server
