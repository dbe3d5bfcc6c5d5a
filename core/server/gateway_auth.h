#pragma once
// Who is calling: the one place a request's gateway key is read from its
// headers and matched against the tenants' stored key hashes, and the one place
// the caller's own provider key (the passthrough key) is told apart from it.
//
// Where a gateway key is read, first present wins:
//   1. x-switchman-key: KEY   (then x-api-key / Authorization carry the caller's
//                               own provider key, forwarded to passthrough providers)
//   2. x-api-key: KEY         (what Anthropic SDKs send)
//   3. Authorization: Bearer KEY (what OpenAI SDKs send; the scheme is case-insensitive)
// With no tenants configured the listener is loopback-only and every caller is
// the admin tenant "local".

#include "core/config/config.h"
#include "core/server/inbound_request.h"
#include "core/server/request_head.h"

#include <optional>

namespace sw::server {

class GatewayAuth {
public:
    // The tenant name every caller gets when no tenants are configured.
    static constexpr char kLocalTenant[] = "local";

    explicit GatewayAuth(const QMap<QString, config::TenantConfig> &tenants) : m_tenants(tenants) {}

    // The caller the request's gateway key names; nullopt when it presents no key or one no tenant holds.
    std::optional<Caller> authenticate(const InboundRequest &request) const;
    // The same from a request's head, before its body is read (its fields are read only when
    // tenants are configured).
    std::optional<Caller> authenticate(const RequestHead &head) const;
    // The gateway key the request presents (x-switchman-key, else x-api-key, else the bearer token); empty when none.
    static QByteArray presentedKey(const InboundRequest &request);
    // The tenant holding `key`. Every stored hash is compared, each in constant time, so neither
    // how much of a key matched nor which tenant holds it is told by the time taken.
    std::optional<Caller> callerForKey(QByteArrayView key) const;

    // The key the caller sends for the provider itself (x-api-key, else Authorization's bearer
    // token, else its raw value); empty when the auth headers hold the gateway key instead, i.e.
    // tenants are configured and x-switchman-key is absent.
    QByteArray providerKey(const InboundRequest &request) const;
    // Why the request must be refused: a gateway key in a header that is forwarded to the provider
    // (x-api-key or Authorization while x-switchman-key names the tenant). SDKs send their
    // configured key by default, so without this check a gateway key would leave the machine.
    // Any tenant's key counts, not only the caller's, and so does any key in the gateway format
    // (credentials/gateway_key.h). nullopt: nothing to refuse.
    std::optional<QString> gatewayKeyInProviderSlot(const InboundRequest &request) const;

    // "Bearer TOKEN" (scheme case-insensitive, surrounding spaces dropped) → TOKEN; anything else → empty.
    static QByteArray bearerToken(QByteArrayView authorization);

private:
    std::optional<Caller> callerFor(QByteArrayView key) const; // nullopt for no key
    const QMap<QString, config::TenantConfig> &m_tenants;
};

} // namespace sw::server
