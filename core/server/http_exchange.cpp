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

void appendSafeHeader(QByteArray &block, const QByteArray &name, const QByteArray &value) {
    if (name.isEmpty() || !std::all_of(name.cbegin(), name.cend(), [](char c) { return c != 0 && isTokenChar(c); }))
        return;
    const auto isControl = [](char ch) {
        const auto c = static_cast<unsigned char>(ch);
        return (c < 0x20 && c != '\t') || c == 0x7f;
    };
    block.append(name).append(": ");
    if (std::none_of(value.cbegin(), value.cend(), isControl)) {
        block.append(value).append("\r\n"); // the common case: nothing to encode
        return;
    }
    for (const char ch : value) {
        const auto c = static_cast<unsigned char>(ch);
        if (isControl(ch)) {
            block += '%';
            block += QByteArray::number(c, 16).rightJustified(2, '0').toUpper();
        } else {
            block += ch;
        }
    }
    block.append("\r\n");
}

// Below this size a body is copied into the head's block (one write); a larger one is handed to the
// socket on its own, which keeps it by reference instead of copying it.
constexpr qsizetype kInlineBody = 4096;
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

// The status line is Qt's (its reason phrases); the header block follows in one socket write
// rather than four per field (QHttpServerResponder::writeHeader), and the body goes straight to the
// socket: the responder's own writeBody() is never used, so it never adds a second blank line.
QByteArray HttpExchange::headBlock(const http::HeaderList &headers, QByteArrayView framing, qsizetype extra) {
    qsizetype size = framing.size() + 2 + extra;
    for (const auto &h : headers)
        size += h.first.size() + h.second.size() + 4;
    QByteArray block;
    block.reserve(size);
    for (const auto &h : headers)
        appendSafeHeader(block, h.first, h.second);
    block.append(framing).append("\r\n");
    return block;
}

void HttpExchange::respond(int status, const http::HeaderList &headers, const QByteArray &body) {
    if (m_headersSent || m_finished)
        return;
    m_headersSent = true;
    m_finished = true;
    if (!isOpen())
        return;
    m_responder->writeStatusLine(QHttpServerResponder::StatusCode(status));
    const bool inlineBody = body.size() < kInlineBody;
    QByteArray block =
        headBlock(headers, "Content-Length: " + QByteArray::number(body.size()) + "\r\n", inlineBody ? body.size() : 0);
    if (inlineBody)
        block.append(body);
    m_socket->write(block);
    if (!inlineBody)
        m_socket->write(body);
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
    // The header block ends now, so the client sees 200 at once.
    m_socket->write(headBlock(headers, "Transfer-Encoding: chunked\r\n"));
    m_socket->flush();
}

void HttpExchange::write(const QByteArray &bytes) {
    if (bytes.isEmpty() || m_finished || !m_headersSent || !isOpen())
        return;
    // One chunk, "<size in hex>\r\n<bytes>\r\n", built in one allocation: it runs on every streamed frame.
    char hex[2 * sizeof(qsizetype)];
    qsizetype digits = 0;
    for (auto n = quint64(bytes.size()); n != 0 || digits == 0; n >>= 4)
        hex[sizeof(hex) - 1 - digits++] = "0123456789abcdef"[n & 0xf];
    QByteArray frame(digits + 2 + bytes.size() + 2, Qt::Uninitialized);
    char *out = frame.data();
    std::memcpy(out, hex + sizeof(hex) - digits, size_t(digits));
    out += digits;
    *out++ = '\r';
    *out++ = '\n';
    std::memcpy(out, bytes.constData(), size_t(bytes.size()));
    out += bytes.size();
    *out++ = '\r';
    *out = '\n';
    m_socket->write(frame);
}

void HttpExchange::endStream() {
    if (m_finished)
        return;
    m_finished = true;
    if (m_headersSent && isOpen())
        m_socket->write("0\r\n\r\n", 5);
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
