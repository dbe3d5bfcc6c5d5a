#include "core/server/client_stream.h"

#include "core/formats/pi_native_codec.h"
#include "core/server/http_exchange.h"

#include <algorithm>

namespace sw::server {

using model::GatewayError;

namespace {
// A model name as a header value: ASCII, as RFC 9110 asks of new fields. Every byte of its UTF-8 past
// ASCII, and '%', is percent-encoded (a client decodes it as a URL's path): SDKs read header bytes as
// Latin-1, so "oa/mödel" reached them as "oa/mÃ¶del" (probe J3 2). A plain name passes unchanged.
QByteArray asciiHeaderValue(const QString &name) {
    const QByteArray utf8 = name.toUtf8();
    if (std::none_of(utf8.begin(), utf8.end(), [](char c) { return (c & 0x80) || c == '%'; }))
        return utf8;
    return utf8.toPercentEncoding(QByteArray(" !\"#$&'()*+,/:;<=>?@[\\]^`{|}"));
}
} // namespace

ClientStream::ClientStream(HttpExchange *exchange, wire::Api format, formats::EncodeInfo info,
                           http::HeaderList baseHeaders,
                           std::function<void(int, const http::HeaderList &, const QByteArray &)> answered)
    : m_exchange(exchange), m_codec(formats::codecFor(format)), m_info(std::move(info)),
      m_baseHeaders(std::move(baseHeaders)), m_answered(std::move(answered)) {}

void ClientStream::setRequest(const model::ChatRequest &request) {
    m_info.model = request.model;
    m_info.includeUsage = request.includeUsage;
    m_info.hideReasoning = request.hideReasoning;
    m_info.customTools = request.customToolNames(); // their calls go back as custom calls
    if (request.sourceApi == wire::Api::AnthropicMessages)
        m_info.takenToolIds = request.historyToolIds(); // an answer's call never repeats one of them
    if (request.sourceApi == wire::Api::Pi)
        m_info.clientApi = formats::PiNativeCodec::proxyModelApi(request); // where the proxy files signatures
    m_baseHeaders.emplace_back("x-litellm-model-id", asciiHeaderValue(request.model));
}

void ClientStream::openStream() {
    if (!m_exchange || m_exchange->headersSent())
        return;
    auto headers = m_baseHeaders;
    headers.emplace_back("Content-Type", "text/event-stream; charset=utf-8");
    headers.emplace_back("Cache-Control", "no-cache");
    headers.emplace_back("Connection", "keep-alive");
    m_exchange->beginStream(200, headers);
    if (m_keepMaxBytes >= 0)
        m_streamHeaders = headers;
}

void ClientStream::keepStreams(qint64 maxBytes) {
    m_keepMaxBytes = maxBytes;
}

void ClientStream::write(const QByteArray &bytes) {
    if (!m_exchange)
        return;
    m_writes += bytes.isEmpty() ? 0 : 1;
    m_exchange->write(bytes);
    if (m_keepMaxBytes < 0)
        return;
    if (m_kept.size() + bytes.size() > m_keepMaxBytes) {
        m_keepMaxBytes = -1; // too long to keep: the key is let go and a retry runs again
        m_kept = {};
        return;
    }
    m_kept += bytes;
}

void ClientStream::upstreamChosen(const QString &api, const QString &provider) {
    // pi answers name the API that produced them, so the client's next turn keeps its signatures.
    m_info.upstreamApi = api;
    m_info.upstreamProvider = provider;
}

bool ClientStream::streamOpen() const {
    return m_exchange && m_exchange->headersSent();
}

void ClientStream::keepalive() {
    write(QByteArrayLiteral(": keepalive\n\n"));
}

void ClientStream::commitStream(const failover::AnswerInfo &info, bool passthrough) {
    if (!m_exchange)
        return;
    // What a converted request went without is said where a person reading the stream sees it, and so
    // is the candidate it fell back from (a stream's headers went out before any failover).
    QString line = QStringLiteral(": switchman candidate=%1 attempt=%2").arg(info.candidate).arg(info.attempts);
    if (!info.dropped.isEmpty())
        line += QStringLiteral(" dropped=") + info.dropped.join(QLatin1Char(','));
    if (!info.fallbackFrom.isEmpty())
        line += QStringLiteral(" fallback-from=%1 fallback-reason=%2").arg(info.fallbackFrom, info.fallbackReason);
    line += QLatin1String("\n\n");
    write(line.toUtf8());
    m_info.upstreamApi = info.upstreamApi;
    m_info.upstreamProvider = info.upstreamProvider;
    m_info.costInput = info.costInput;
    m_info.costOutput = info.costOutput;
    m_info.costCacheRead = info.costCacheRead;
    m_info.costCacheWrite = info.costCacheWrite;
    // Passthrough: the upstream's frames go out as they are, and the encoder only follows them
    // (followPassthrough) for an error the gateway may have to write after a cut.
    m_passthrough = passthrough;
    m_encoder = m_codec.makeStreamEncoder(m_info);
}

void ClientStream::sendNow() {
    if (m_exchange)
        m_exchange->sendNow();
}

void ClientStream::streamEvent(const model::StreamEvent &event) {
    if (!m_encoder || !m_exchange || m_passthrough)
        return;
    if (event.type == model::EventType::Error && !event.errorStatus) {
        // Through encode(), as any event: an encoder whose error tells the usage so far (pi's
        // error message) reads it from the event. Untyped, the break is the gateway's 502.
        model::StreamEvent error = event;
        error.errorStatus = 502;
        write(m_encoder->encode(error));
        return;
    }
    write(m_encoder->encode(event));
}

void ClientStream::streamFrame(const QByteArray &frame) {
    if (m_encoder)
        m_encoder->followPassthrough(frame);
    write(frame);
}

void ClientStream::streamError(const GatewayError &error) {
    if (!m_exchange)
        return;
    if (!m_encoder)
        m_encoder = m_codec.makeStreamEncoder(m_info);
    write(m_encoder->encodeError(error));
}

void ClientStream::endStream(failover::StreamEnd end) {
    // A same-API answer whose upstream closed after its stop reason, without the format's last
    // frame: the client gets that frame, as for any whole answer (an SDK may wait for it).
    if (end == failover::StreamEnd::Answered && m_passthrough && m_encoder && m_exchange)
        if (const QByteArray last = m_encoder->endPassthrough(); !last.isEmpty())
            write(last);
    if (m_exchange)
        m_exchange->endStream();
    if (end == failover::StreamEnd::Answered && m_keepMaxBytes >= 0 && m_answered)
        m_answered(200, m_streamHeaders, m_kept);
}

void ClientStream::answer(model::AssistantMessage message, const failover::AnswerInfo &info) {
    message.model = m_info.model;
    message.provider = info.upstreamProvider;
    message.api = info.upstreamApi;
    m_info.upstreamApi = info.upstreamApi;
    m_info.upstreamProvider = info.upstreamProvider;
    m_info.costInput = info.costInput;
    m_info.costOutput = info.costOutput;
    m_info.costCacheRead = info.costCacheRead;
    m_info.costCacheWrite = info.costCacheWrite;
    const QByteArray body = m_codec.encodeResponse(message, m_info);
    auto headers = m_baseHeaders;
    headers.emplace_back("Content-Type", "application/json");
    headers.emplace_back("x-switchman-candidate", asciiHeaderValue(info.candidate));
    headers.emplace_back("x-switchman-attempts", QByteArray::number(info.attempts));
    if (!info.dropped.isEmpty())
        headers.emplace_back("x-switchman-dropped", info.dropped.join(QStringLiteral(", ")).toLatin1());
    if (!info.fallbackFrom.isEmpty()) {
        headers.emplace_back("x-switchman-fallback-from", asciiHeaderValue(info.fallbackFrom));
        headers.emplace_back("x-switchman-fallback-reason", info.fallbackReason.toUtf8());
    }
    if (m_exchange)
        m_exchange->respond(200, headers, body);
    if (m_answered)
        m_answered(200, headers, body);
}

void ClientStream::fail(const GatewayError &error, int attempts) {
    if (m_exchange && m_exchange->headersSent()) {
        // Headers are out: the format's in-band error, never a fake [DONE] / message_stop.
        streamError(error);
        m_exchange->endStream();
        return;
    }
    respondError(error, attempts);
}

http::HeaderList errorHintHeaders(const GatewayError &error) {
    http::HeaderList headers;
    if (error.retryAfterMs && *error.retryAfterMs > 0)
        headers.emplace_back("Retry-After", QByteArray::number((*error.retryAfterMs + 999) / 1000));
    if (error.shouldRetry)
        headers.emplace_back("x-should-retry", *error.shouldRetry ? "true" : "false");
    if (!error.budget.isEmpty())
        headers.emplace_back("x-switchman-budget", error.budget);
    return headers;
}

void ClientStream::respondError(const GatewayError &error, int attempts) {
    if (!m_exchange)
        return;
    auto headers = m_baseHeaders;
    headers.emplace_back("Content-Type", "application/json");
    headers += errorHintHeaders(error);
    if (attempts > 0)
        headers.emplace_back("x-switchman-attempts", QByteArray::number(attempts));
    m_exchange->respond(error.status, headers, m_codec.encodeError(error));
}

qint64 ClientStream::pendingBytes() const {
    return m_exchange ? m_exchange->pendingBytes() : 0;
}

} // namespace sw::server
