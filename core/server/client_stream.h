#pragma once
// What the client of one chat request sees (failover::ClientSink): the response
// headers, early SSE headers and keepalives, the committed attempt's passthrough
// frames or the format's encoder, the JSON answer, and the one final error in the
// client's format (whole, or in band once headers are out).

#include "core/failover/attempt_loop.h"
#include "core/formats/inbound_codec.h"
#include "core/http/headers.h"

#include <QPointer>
#include <functional>
#include <memory>

namespace sw::server {

class HttpExchange;

// The headers an error answer's hints to the client's SDK take (Retry-After, x-should-retry,
// x-switchman-budget), from the error: one place for the loop's final error and every refusal.
http::HeaderList errorHintHeaders(const model::GatewayError &error);

class ClientStream final : public failover::ClientSink {
public:
    // `answered` hears every whole 200 answer: a JSON one, and a stream that ended Answered when
    // keepStreams() was called (the idempotency store keeps them for a replay).
    ClientStream(HttpExchange *exchange, wire::Api format, formats::EncodeInfo info, http::HeaderList baseHeaders,
                 std::function<void(int, const http::HeaderList &, const QByteArray &)> answered = {});

    void openStream() override;
    void upstreamChosen(const QString &api, const QString &provider) override;
    bool streamOpen() const override;
    void keepalive() override;
    void commitStream(const failover::AnswerInfo &info, bool passthrough) override;
    void sendNow() override;
    void streamEvent(const model::StreamEvent &event) override;
    void streamFrame(const QByteArray &frame) override;
    void streamError(const model::GatewayError &error) override;
    void endStream(failover::StreamEnd end) override;
    void answer(model::AssistantMessage message, const failover::AnswerInfo &info) override;
    void fail(const model::GatewayError &error, int attempts) override;
    qint64 pendingBytes() const override;
    quint64 writes() const override { return m_writes; }

    // Once the body is parsed: the model the client asked for names the answer (and a header).
    void setRequest(const model::ChatRequest &request);
    // An error before the loop runs (bad body, unknown model, idempotency conflict).
    void respondError(const model::GatewayError &error, int attempts = 0);
    // Keep what the stream writes, up to `maxBytes` (past that nothing is kept), so a stream that
    // ends Answered reaches `answered` as its headers and body, for a replay.
    void keepStreams(qint64 maxBytes);

private:
    void write(const QByteArray &bytes); // to the open stream, and to the copy kept for a replay

    QPointer<HttpExchange> m_exchange;
    const formats::InboundCodec &m_codec;
    formats::EncodeInfo m_info;
    http::HeaderList m_baseHeaders;
    std::function<void(int, const http::HeaderList &, const QByteArray &)> m_answered;
    std::unique_ptr<formats::StreamEncoder> m_encoder;
    bool m_passthrough = false; // the committed stream relays the upstream's own frames
    qint64 m_keepMaxBytes = -1; // keepStreams(): the bound on the copy; -1 keeps nothing
    quint64 m_writes = 0;       // non-empty writes, for writes()
    http::HeaderList m_streamHeaders;
    QByteArray m_kept;
};

} // namespace sw::server
