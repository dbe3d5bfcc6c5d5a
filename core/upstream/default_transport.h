#pragma once
// The production transport: plain http:// (loopback servers, Ollama, vLLM,
// llama.cpp, the demo) over our own HTTP/1.1 sockets with TCP_NODELAY, which
// adds ~40 µs where QNetworkAccessManager adds ~300 µs (bench_gateway); https://
// providers over QNAM, which negotiates HTTP/2 and handles TLS.

#include "upstream/qt_transport.h"
#include "upstream/socket_transport.h"

namespace sw::upstream {

class DefaultTransport final : public Transport {
public:
    UpstreamCall *start(const HttpRequest &request, QObject *parent) override;
    void setExtraCaCertificates(const CaTable &table) override;

private:
    SocketTransport m_plain;
    QtTransport m_tls;
};

} // namespace sw::upstream
