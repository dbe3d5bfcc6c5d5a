#include "core/server/gateway_auth.h"

#include "core/credentials/gateway_key.h"

namespace sw::server {

QByteArray GatewayAuth::bearerToken(QByteArrayView authorization) {
    const QByteArrayView value = authorization.trimmed();
    constexpr QByteArrayView scheme("bearer");
    if (value.size() <= scheme.size() || value.first(scheme.size()).compare(scheme, Qt::CaseInsensitive) != 0)
        return {};
    const char separator = value.at(scheme.size());
    if (separator != ' ' && separator != '\t')
        return {};
    return value.sliced(scheme.size()).trimmed().toByteArray();
}

QByteArray GatewayAuth::presentedKey(const InboundRequest &request) {
    QByteArray key = request.header("x-switchman-key");
    if (key.isEmpty())
        key = request.header("x-api-key");
    if (key.isEmpty())
        key = bearerToken(request.header("authorization"));
    return key;
}

std::optional<Caller> GatewayAuth::authenticate(const InboundRequest &request) const {
    if (m_tenants.isEmpty())
        return Caller{QString::fromLatin1(kLocalTenant), true};
    const QByteArray key = presentedKey(request);
    if (key.isEmpty())
        return std::nullopt;
    return callerForKey(key);
}

std::optional<Caller> GatewayAuth::callerForKey(QByteArrayView key) const {
    const QString presented = credentials::gatewayKeyHash(key);
    std::optional<Caller> found;
    for (const auto &tenant : m_tenants)
        for (const QString &stored : tenant.keyHashes)
            if (credentials::sameGatewayKeyHash(presented, stored) && !found) // no early exit: see the header
                found = Caller{tenant.name, tenant.admin};
    return found;
}

QByteArray GatewayAuth::providerKey(const InboundRequest &request) const {
    if (!m_tenants.isEmpty() && request.header("x-switchman-key").isEmpty())
        return {};
    const QByteArray apiKey = request.header("x-api-key");
    if (!apiKey.isEmpty())
        return apiKey;
    const QByteArray authorization = request.header("authorization");
    const QByteArray bearer = bearerToken(authorization);
    return bearer.isEmpty() ? authorization : bearer;
}

std::optional<QString> GatewayAuth::gatewayKeyInProviderSlot(const InboundRequest &request) const {
    if (m_tenants.isEmpty() || request.header("x-switchman-key").isEmpty())
        return std::nullopt;
    // Both places are checked as they would be forwarded: the bearer token, or a bare Authorization value.
    const QByteArray authorization = request.header("authorization");
    const QByteArray bearer = bearerToken(authorization);
    const std::pair<const char *, QByteArray> places[] = {{"x-api-key", request.header("x-api-key")},
                                                          {"Authorization", bearer.isEmpty() ? authorization : bearer}};
    for (const auto &[header, value] : places) {
        // A key in the gateway format is refused even when no tenant holds it (revoked, another machine's):
        // no provider issues such keys, so forwarding it could only leak it.
        if (!value.isEmpty() && (value.startsWith(credentials::kGatewayKeyPrefix) || callerForKey(value)))
            return QStringLiteral("%1 carries a Switchman gateway key; with x-switchman-key set, %1 is forwarded to "
                                  "the provider as your own provider key. Send the gateway key only in "
                                  "x-switchman-key and remove it from %1")
                .arg(QLatin1String(header));
    }
    return std::nullopt;
}

} // namespace sw::server
