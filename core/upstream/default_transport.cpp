#include "upstream/default_transport.h"

namespace sw::upstream {

UpstreamCall *DefaultTransport::start(const HttpRequest &request, QObject *parent)
{
    if (request.url.scheme() == QLatin1String("http"))
        return m_plain.start(request, parent);
    return m_tls.start(request, parent);
}

void DefaultTransport::setExtraCaCertificates(const CaTable &table)
{
    m_plain.setExtraCaCertificates(table);
    m_tls.setExtraCaCertificates(table);
}

} // namespace sw::upstream
