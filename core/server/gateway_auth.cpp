#include "core/server/gateway_auth.h"

#include "core/credentials/gateway_key.h"
#include "core/http/head_parser.h"

namespace sw::server {

namespace {
// "Bearer TOKEN" → TOKEN, a view into `authorization`; empty for anything else.
QByteArrayView bearerTokenOf(QByteArrayView authorization) {
    const QByteArrayView value = authorization.trimmed();
    constexpr QByteArrayView scheme("bearer");
    if (value.size() <= scheme.size() || value.first(scheme.size()).compare(scheme, Qt::CaseInsensitive) != 0)
        return {};
    const char separator = value.at(scheme.size());
    if (separator != ' ' && separator != '\t')
        return {};
    return value.sliced(scheme.size()).trimmed();
}

QByteArrayView keyOf(QByteArrayView switchmanKey, QByteArrayView apiKey, QByteArrayView authorization) {
    if (!switchmanKey.isEmpty())
        return switchmanKey;
    if (!apiKey.isEmpty())
        return apiKey;
    return bearerTokenOf(authorization);
}
} // namespace

QByteArray GatewayAuth::bearerToken(QByteArrayView authorization) {
    return bearerTokenOf(authorization).toByteArray();
}

QByteArray GatewayAuth::presentedKey(const InboundRequest &request) {
    return keyOf(request.header("x-switchman-key"), request.header("x-api-key"), request.header("authorization"))
        .toByteArray();
}

std::optional<Caller> GatewayAuth::authenticate(const InboundRequest &request) const {
    if (m_tenants.isEmpty())
        return Caller{QString::fromLatin1(kLocalTenant), true};
    return callerFor(
        keyOf(request.header("x-switchman-key"), request.header("x-api-key"), request.header("authorization")));
}

std::optional<Caller> GatewayAuth::authenticate(const RequestHead &head) const {
    if (m_tenants.isEmpty())
        return Caller{QString::fromLatin1(kLocalTenant), true};
    if (!head.fields)
        return std::nullopt;
    // The first field of each name, as InboundRequest::header() reads it: one walk over the head.
    QByteArrayView found[3];
    bool seen[3] = {false, false, false};
    QByteArrayView name;
    QByteArrayView value;
    for (qsizetype pos = 0; head.fields->nextField(pos, name, value);) {
        const int slot = http::sameName(name, "x-switchman-key") ? 0
                         : http::sameName(name, "x-api-key")     ? 1
                         : http::sameName(name, "authorization") ? 2
                                                                 : -1;
        if (slot >= 0 && !seen[slot]) {
            seen[slot] = true;
            found[slot] = value;
        }
    }
    return callerFor(keyOf(found[0], found[1], found[2]));
}

std::optional<Caller> GatewayAuth::callerFor(QByteArrayView key) const {
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
