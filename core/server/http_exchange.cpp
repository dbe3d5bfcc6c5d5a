#include "core/server/http_exchange.h"

#include <QHttpServerResponder>

#include <algorithm>
#include <cstring>

namespace sw::server {

namespace {
// The one gate between a value and the header block: a name must be a token and a value may not
// hold CR, LF, NUL or another control byte (RFC 9110 5.5), or one request's model name could
// end the header line and add its own (response splitting). Control bytes are percent-encoded,
// so a diagnostic header stays readable; a header whose name is not a token is left out.
bool isTokenChar(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

void writeSafeHeader(QHttpServerResponder &responder, const QByteArray &name, const QByteArray &value) {
    if (name.isEmpty() || !std::all_of(name.cbegin(), name.cend(), [](char c) { return c != 0 && isTokenChar(c); }))
        return;
    const auto isControl = [](char ch) {
        const auto c = static_cast<unsigned char>(ch);
        return (c < 0x20 && c != '\t') || c == 0x7f;
    };
    if (std::none_of(value.cbegin(), value.cend(), isControl)) {
        responder.writeHeader(name, value); // the common case: nothing to encode, no copy
        return;
    }
    QByteArray safe;
    safe.reserve(value.size());
    for (const char ch : value) {
        const auto c = static_cast<unsigned char>(ch);
        if (isControl(ch)) {
            safe += '%';
            safe += QByteArray::number(c, 16).rightJustified(2, '0').toUpper();
        } else {
            safe += ch;
        }
    }
    responder.writeHeader(name, safe);
}
} // namespace

HttpExchange::HttpExchange(QHttpServerResponder &&responder, QObject *parent)
    : QObject(parent), m_responder(std::make_unique<QHttpServerResponder>(std::move(responder))) {
    m_socket = m_responder->socket();
    if (m_socket) {
        // TCP_NODELAY is set once per connection when it is accepted (GuardedTcpServer).
        connect(m_socket, &QAbstractSocket::disconnected, this, [this]() {
            if (m_gone)
                return;
            m_gone = true;
            if (!m_finished)
                Q_EMIT clientGone();
        });
        connect(m_socket, &QAbstractSocket::bytesWritten, this, &HttpExchange::drained);
    } else {
        m_gone = true;
    }
}

HttpExchange::~HttpExchange() = default;

bool HttpExchange::isOpen() const {
    return !m_gone && m_socket && m_socket->state() == QAbstractSocket::ConnectedState;
}

void HttpExchange::respond(int status, const http::HeaderList &headers, const QByteArray &body) {
    if (m_headersSent || m_finished)
        return;
    m_headersSent = true;
    m_finished = true;
    if (!isOpen())
        return;
    m_responder->writeStatusLine(QHttpServerResponder::StatusCode(status));
    for (const auto &h : headers)
        writeSafeHeader(*m_responder, h.first, h.second);
    m_responder->writeHeader("Content-Length", QByteArray::number(body.size()));
    m_responder->writeBody(body);
    // The whole answer is in the socket's buffer: send it now, in one write, rather than on the
    // event loop's next turn (one poll round less on every answer).
    m_socket->flush();
}

void HttpExchange::beginStream(int status, const http::HeaderList &headers) {
    if (m_headersSent || m_finished)
        return;
    m_headersSent = true;
    if (!isOpen())
        return;
    m_responder->writeStatusLine(QHttpServerResponder::StatusCode(status));
    for (const auto &h : headers)
        writeSafeHeader(*m_responder, h.first, h.second);
    m_responder->writeHeader("Transfer-Encoding", "chunked");
    m_responder->writeBody(QByteArray()); // ends the header block now, so the client sees 200 at once
    m_socket->flush();
}

void HttpExchange::write(const QByteArray &bytes) {
    if (bytes.isEmpty() || m_finished || !m_headersSent || !isOpen())
        return;
    QByteArray frame = QByteArray::number(bytes.size(), 16);
    frame.reserve(frame.size() + bytes.size() + 4);
    frame += "\r\n";
    frame += bytes;
    frame += "\r\n";
    m_responder->writeBody(frame);
}

void HttpExchange::endStream() {
    if (m_finished)
        return;
    m_finished = true;
    if (m_headersSent && isOpen())
        m_responder->writeBody(QByteArrayLiteral("0\r\n\r\n"));
}

qint64 HttpExchange::pendingBytes() const {
    return m_socket ? m_socket->bytesToWrite() : 0;
}

void HttpExchange::abortConnection() {
    m_finished = true;
    if (m_socket)
        m_socket->abort();
}

} // namespace sw::server
