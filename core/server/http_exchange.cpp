#include "core/server/http_exchange.h"

#include "core/http/headers.h"

#include <QHttpServerResponder>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace sw::server {

namespace {
// Copies `bytes` to `p`, which has room for them; returns their end.
char *put(char *p, QByteArrayView bytes) {
    std::memcpy(p, bytes.data(), size_t(bytes.size()));
    return p + bytes.size();
}

// The one gate between a value and the header block: a name must be a token and a value may not
// hold CR, LF, NUL or another control byte (RFC 9110 5.5), or one request's model name could
// end the header line and add its own (response splitting). Control bytes are percent-encoded,
// so a diagnostic header stays readable; a header whose name is not a token is left out.
// Writes the line at `p`, which has room for the name, three times the value and four bytes;
// returns its end.
char *putSafeHeader(char *p, QByteArrayView name, QByteArrayView value) {
    if (!http::isToken(name))
        return p;
    p = put(put(p, name), ": ");
    for (const char ch : value) {
        const auto c = static_cast<unsigned char>(ch);
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            *p++ = '%';
            *p++ = "0123456789ABCDEF"[c >> 4];
            *p++ = "0123456789ABCDEF"[c & 0xF];
        } else {
            *p++ = ch;
        }
    }
    return put(p, "\r\n");
}

// Below this size a body is copied into the head's block (one write); a larger one is handed to the
// socket on its own, which keeps it by reference instead of copying it.
constexpr qsizetype kInlineBody = 4096;

// The reason phrases of RFC 9110 (the ones Qt's responder writes); an unlisted code gets its class's name.
struct Reason {
    int status;
    const char *phrase;
};
constexpr Reason kReasons[] = {
    {100, "Continue"},
    {101, "Switching Protocols"},
    {200, "OK"},
    {201, "Created"},
    {202, "Accepted"},
    {204, "No Content"},
    {206, "Partial Content"},
    {301, "Moved Permanently"},
    {302, "Found"},
    {303, "See Other"},
    {304, "Not Modified"},
    {307, "Temporary Redirect"},
    {308, "Permanent Redirect"},
    {400, "Bad Request"},
    {401, "Unauthorized"},
    {402, "Payment Required"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {406, "Not Acceptable"},
    {408, "Request Timeout"},
    {409, "Conflict"},
    {410, "Gone"},
    {411, "Length Required"},
    {412, "Precondition Failed"},
    {413, "Payload Too Large"},
    {414, "URI Too Long"},
    {415, "Unsupported Media Type"},
    {416, "Range Not Satisfiable"},
    {417, "Expectation Failed"},
    {421, "Misdirected Request"},
    {422, "Unprocessable Entity"},
    {426, "Upgrade Required"},
    {428, "Precondition Required"},
    {429, "Too Many Requests"},
    {431, "Request Header Fields Too Large"},
    {451, "Unavailable For Legal Reasons"},
    {500, "Internal Server Error"},
    {501, "Not Implemented"},
    {502, "Bad Gateway"},
    {503, "Service Unavailable"},
    {504, "Gateway Timeout"},
    {505, "HTTP Version Not Supported"},
    {507, "Insufficient Storage"},
    {508, "Loop Detected"},
};

const char *reasonPhrase(int status) {
    for (const Reason &r : kReasons)
        if (r.status == status)
            return r.phrase;
    static const char *const kClasses[] = {"Informational", "Success", "Redirection", "Client Error", "Server Error"};
    return kClasses[std::clamp(status / 100, 1, 5) - 1];
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

HttpExchange::~HttpExchange() {
    flushBatch(); // chunks held for a batch still leave, in order
}

bool HttpExchange::isOpen() const {
    return !m_gone && m_socket && m_socket->state() == QAbstractSocket::ConnectedState;
}

// One block for the status line and the header fields, sent with the body in one write where it fits, rather
// than the responder's writeStatusLine() (nine small socket writes) and its header writes (four per field).
QByteArray HttpExchange::headBlock(int status, const http::HeaderList &headers, QByteArrayView framing,
                                   bool ownConnection, qsizetype extra) {
    const QByteArrayView reason(reasonPhrase(status));
    qsizetype size = 32 + reason.size() + framing.size();
    for (const auto &h : headers)
        size += h.first.size() + 3 * h.second.size() + 4; // a control byte is written as three
    // Written in place (one allocation, no append calls); `extra` stays free for the body.
    QByteArray block(size + extra, Qt::Uninitialized);
    char *p = put(block.data(), "HTTP/1.1 ");
    p = std::to_chars(p, p + 12, status).ptr;
    *p++ = ' ';
    p = put(put(p, reason), "\r\n");
    // The exchange's own "Connection: close" (or an HTTP/1.0 keep-alive) is the one that counts.
    for (const auto &h : headers)
        if (!ownConnection || !http::sameName(h.first, "connection"))
            p = putSafeHeader(p, h.first, h.second);
    p = put(put(p, framing), "\r\n");
    block.truncate(p - block.data()); // the allocation stays, with room for `extra`
    return block;
}

// Straight to the kernel while it takes the bytes (no event loop turn, no copy into Qt's buffer); while a
// WriteBatch is open, held and sent with the batch's other chunks in one write.
void HttpExchange::send(const QByteArray &bytes, bool flushQueued) {
    if (http::WriteBatch::open()) {
        if (m_batched.isEmpty())
            http::WriteBatch::enlist(this);
        m_batched.append(bytes);
        return;
    }
    http::writeThrough(m_socket, bytes, flushQueued);
}

void HttpExchange::flushBatch() {
    if (m_batched.isEmpty())
        return;
    QByteArray bytes;
    bytes.swap(m_batched);
    http::WriteBatch::forget(this);
    if (isOpen())
        http::writeThrough(m_socket, bytes);
    closeIfAnswered();
}

void HttpExchange::closeIfAnswered() {
    if (!m_closeAfter || !m_finished || !m_batched.isEmpty() || !isOpen())
        return;
    // Qt's socket sends what its buffer still holds, then the FIN (RFC 9112 9.6).
    m_socket->disconnectFromHost();
}

QByteArray HttpExchange::closingResponse(int status, const http::HeaderList &headers, const QByteArray &body,
                                         bool headRequest) {
    const QByteArray framing = "Content-Length: " + QByteArray::number(body.size()) + "\r\nConnection: close\r\n";
    QByteArray block = headBlock(status, headers, framing, true, headRequest ? 0 : body.size());
    if (!headRequest)
        block.append(body);
    return block;
}

void HttpExchange::respond(int status, const http::HeaderList &headers, const QByteArray &body) {
    if (m_headersSent || m_finished)
        return;
    m_headersSent = true;
    m_finished = true;
    if (!isOpen())
        return;
    // A HEAD request's answer is the header block alone, its Content-Length the body's.
    const bool withBody = !m_head;
    const bool inlineBody = body.size() < kInlineBody;
    char framing[80] = "Content-Length: ";
    char *end = std::to_chars(framing + 16, framing + 40, body.size()).ptr;
    const QByteArrayView connection =
        m_closeAfter ? QByteArrayView("\r\nConnection: close\r\n")
        : m_http10   ? QByteArrayView("\r\nConnection: keep-alive\r\n") // it asked; else it waits for a close
                     : QByteArrayView("\r\n");
    end = put(end, connection);
    QByteArray block = headBlock(status, headers, QByteArrayView(framing, end - framing), m_closeAfter || m_http10,
                                 withBody && inlineBody ? body.size() : 0);
    if (withBody && inlineBody)
        block.append(body);
    // The whole answer leaves now rather than on the event loop's next turn.
    http::writeThrough(m_socket, block, true);
    if (withBody && !inlineBody)
        http::writeThrough(m_socket, body, true);
    closeIfAnswered();
}

void HttpExchange::beginStream(int status, const http::HeaderList &headers) {
    if (m_headersSent || m_finished)
        return;
    m_headersSent = true;
    if (!isOpen())
        return;
    // The header block ends now, so the client sees 200 at once. An HTTP/1.0 client knows no
    // chunked framing: its answer's body ends when the connection does.
    m_closeAfter |= m_http10;
    send(headBlock(status, headers,
                   m_http10       ? QByteArrayView("Connection: close\r\n")
                   : m_closeAfter ? QByteArrayView("Transfer-Encoding: chunked\r\nConnection: close\r\n")
                                  : QByteArrayView("Transfer-Encoding: chunked\r\n"),
                   m_closeAfter),
         true);
}

void HttpExchange::write(const QByteArray &bytes) {
    if (bytes.isEmpty() || m_finished || !m_headersSent || !isOpen())
        return;
    if (m_http10)
        return send(bytes); // no framing: the body runs to the close
    // One chunk, "<size in hex>\r\n<bytes>\r\n": it runs on every streamed frame.
    char hex[2 * sizeof(qsizetype)];
    qsizetype digits = 0;
    for (auto n = quint64(bytes.size()); n != 0 || digits == 0; n >>= 4)
        hex[sizeof(hex) - 1 - digits++] = "0123456789abcdef"[n & 0xf];
    const qsizetype size = digits + 2 + bytes.size() + 2;
    QByteArray frame;
    char *out = nullptr;
    const bool batched = http::WriteBatch::open();
    if (batched) {
        // Written where it waits for the batch's end, without a buffer of its own; grown by doubling.
        if (m_batched.isEmpty())
            http::WriteBatch::enlist(this);
        const qsizetype at = m_batched.size();
        if (m_batched.capacity() < at + size)
            m_batched.reserve(std::max(at + size, 2 * m_batched.capacity()));
        m_batched.resize(at + size);
        out = m_batched.data() + at;
    } else {
        frame.resize(size);
        out = frame.data();
    }
    std::memcpy(out, hex + sizeof(hex) - digits, size_t(digits));
    out += digits;
    *out++ = '\r';
    *out++ = '\n';
    std::memcpy(out, bytes.constData(), size_t(bytes.size()));
    out += bytes.size();
    *out++ = '\r';
    *out = '\n';
    if (!batched)
        http::writeThrough(m_socket, frame);
}

void HttpExchange::endStream() {
    if (m_finished)
        return;
    m_finished = true;
    if (m_headersSent && isOpen() && !m_http10)
        send(QByteArrayLiteral("0\r\n\r\n"));
    closeIfAnswered(); // now, or when a write batch holding the end sends it (flushBatch)
}

// Only Qt's queue counts: the caller pauses the upstream past a bound and resumes on drained(), which only a
// queue in Qt's buffer ever emits. Held batch bytes leave (or join that queue) when the batch ends, and a batch
// lasts one upstream read.
qint64 HttpExchange::pendingBytes() const {
    return m_socket ? m_socket->bytesToWrite() : 0;
}

void HttpExchange::abortConnection() {
    m_finished = true;
    m_batched.clear(); // a broken stream's held chunks are not sent after all
    http::WriteBatch::forget(this);
    if (m_socket)
        m_socket->abort();
}

} // namespace sw::server
