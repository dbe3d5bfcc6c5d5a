#pragma once

#include "core/http/headers.h"
#include "core/wire/api.h"

#include <QByteArray>
#include <QString>

#include <array>

namespace sw::server {

// The ids that name each chat request ("req_" + this process's prefix + 13 characters): unique in
// the process and unguessable. They were a counter, so any tenant could count the other tenants'
// requests between two of its own from the ids it was given. Now the counter goes through a keyed
// permutation of 64 bits (a Feistel network with a key drawn at start), which keeps every id distinct
// and tells nothing about how many came before.
class RequestIds {
public:
    explicit RequestIds(QByteArray prefix);
    QString next();

private:
    QByteArray m_prefix;
    quint64 m_counter = 0;
    std::array<quint64, 4> m_keys{};
};

// The headers that carry a request's id to its client: the gateway's own, and the one the client's
// SDK reads as the request id it shows in errors and logs (`x-request-id` for OpenAI's SDKs,
// `request-id` for Anthropic's).
http::HeaderList requestIdHeaders(wire::Api format, const QString &id);

} // namespace sw::server
