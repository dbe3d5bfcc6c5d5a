// GET / DELETE /admin/credentials: credential health for a headless user. Kept apart from admin_api.cpp so the
// endpoints of other subsystems grow there without touching these.
#include "core/server/admin_api.h"

#include "core/config/config.h"
#include "core/server/engine_control.h"
#include "core/server/http_exchange.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <algorithm>

namespace sw::server {

namespace {
QJsonObject credentialToJson(const credentials::CredentialStatus &c) {
    const QString reason = credentials::parkReasonName(c.reason);
    return {{QStringLiteral("provider"), c.provider},
            {QStringLiteral("ref"), c.ref},
            {QStringLiteral("position"), c.position},
            {QStringLiteral("state"), credentials::credentialHealthName(c.state)},
            {QStringLiteral("reason"), reason.isEmpty() ? QJsonValue() : QJsonValue(reason)},
            {QStringLiteral("status"), c.status ? QJsonValue(c.status) : QJsonValue()},
            {QStringLiteral("remainingMs"),
             c.remainingMs ? QJsonValue(double(std::max<qint64>(0, *c.remainingMs))) : QJsonValue()},
            {QStringLiteral("lastError"), c.lastError.isEmpty() ? QJsonValue() : QJsonValue(c.lastError)},
            {QStringLiteral("leases"), c.leases}};
}
} // namespace

QByteArray AdminApi::credentialsJson(const EngineControl &engine) {
    QJsonArray arr;
    for (const auto &c : engine.credentialStates())
        arr.append(credentialToJson(c));
    return QJsonDocument(QJsonObject{{QStringLiteral("credentials"), arr}}).toJson(QJsonDocument::Compact);
}

void AdminApi::handleCredentials(const InboundRequest &req, HttpExchange *exchange) {
    if (req.method == "GET")
        return json(exchange, 200, credentialsJson(m_engine));
    if (req.method == "DELETE") {
        credentials::CredentialFilter f;
        f.provider = req.query.queryItemValue(QStringLiteral("provider"), QUrl::FullyDecoded);
        f.ref = req.query.queryItemValue(QStringLiteral("ref"), QUrl::FullyDecoded);
        // A provider (or reference) the configuration does not have is a typo, not "nothing to retry".
        const auto config = m_engine.config();
        const auto states = m_engine.credentialStates();
        const bool knownProvider = f.provider.isEmpty() || !config || config->providers.contains(f.provider);
        const bool knownRef =
            f.ref.isEmpty() || std::any_of(states.begin(), states.end(),
                                           [&](const credentials::CredentialStatus &c) { return c.ref == f.ref; });
        if (!knownProvider || !knownRef) {
            const QString message =
                !knownProvider ? QStringLiteral("no provider \"%1\" in the configuration").arg(f.provider)
                               : QStringLiteral("no credential reference \"%1\" in the configuration").arg(f.ref);
            return json(
                exchange, 404,
                QJsonDocument(QJsonObject{{QStringLiteral("error"), QJsonObject{{QStringLiteral("message"), message}}}})
                    .toJson(QJsonDocument::Compact));
        }
        const int n = m_engine.clearCredentials(f);
        return json(exchange, 200,
                    QJsonDocument(QJsonObject{{QStringLiteral("cleared"), n}}).toJson(QJsonDocument::Compact));
    }
    wrongMethod(exchange, "GET, HEAD, DELETE");
}

} // namespace sw::server
