#include "core/server/connection_guard.h"

#include "core/formats/inbound_codec.h"
#include "core/http/socket_read.h"
#include "core/http/socket_write.h"
#include "core/util/byte_budget.h"

#include <QMetaMethod>
#include <QTcpSocket>
#include <QTimer>
#include <QUrl>
#include <algorithm>
#include <atomic>
#include <poll.h>
#include <utility>

namespace sw::server {

namespace {
constexpr int kDrainMs = 500;       // keep reading after a refusal so the client sees the answer
constexpr int kMaxChunkLine = 4096; // a chunk-size line with extensions
// What the connection reads beyond the request it is reading or answering: the rest waits in the
// kernel (the client's sends stall), outside limits.maxBodyBytesInFlight and every other request's
// memory. A client that pipelines small requests once had up to maxBodyBytes of them read ahead
// (32 MiB a connection, charged to no budget), and each request then cost a copy of all of it
// (probe Y2 F1: 15 requests a second instead of 1 430). Every copy the guard makes of the unread
// bytes (onReadyRead's peek, parkPipelined's read) is bounded by this, plus the request itself.
constexpr qint64 kReadAheadBytes = 16 * 1024;
// What onReadyRead copies of the unread bytes first: a request an SDK sends whole, head and body.
constexpr qint64 kFirstLookBytes = 4 * 1024;
// Chunk framing a chunked body may carry beyond a sixteenth of its own size (consumeBody).
constexpr qint64 kFreeFramingBytes = 64 * 1024;
constexpr int kHangupCheckMs = 1000;
// What an answer may leave unsent before the connection reads the client's next request (SPEC 10:
// at most 1 MiB queued per client): a client that pipelines requests and reads no answer
// would otherwise grow the socket's write buffer one answer at a time, without bound.
constexpr qint64 kMaxUnsentBytes = 1024 * 1024;
constexpr int kMaxHeaderFields = 100; // what Qt 6.4's header parser takes (HeaderConstants::MAX_HEADER_FIELDS)

// The bytes of a request line so far could still become a valid one: garbage
// (binary, a TLS hello, NULs) is refused at its first byte instead of after the
// header timeout.
bool plausibleRequestLineStart(QByteArrayView partial) {
    if (partial == "\r")
        return true; // the first half of a stray CRLF between kept-alive requests
    qsizetype i = 0;
    while (i < partial.size() && i < 16 && partial[i] >= 'A' && partial[i] <= 'Z')
        ++i;
    if (i == partial.size())
        return true;
    if (i == 0 || partial[i] != ' ')
        return false;
    ++i;
    const qsizetype targetStart = i;
    while (i < partial.size() && partial[i] >= 0x21 && partial[i] <= 0x7e)
        ++i;
    if (i == partial.size())
        return true;
    if (i == targetStart || partial[i] != ' ')
        return false;
    const QByteArrayView version = partial.sliced(i + 1);
    const QByteArrayView expected("HTTP/1.1\r");
    if (version.size() > expected.size())
        return false;
    if (version.size() == expected.size()) // HTTP/1.0 or HTTP/1.1, then CR
        return version.startsWith("HTTP/1.") && (version[7] == '0' || version[7] == '1') && version[8] == '\r';
    return expected.startsWith(version) || QByteArrayView("HTTP/1.0").startsWith(version);
}

bool validRequestLine(QByteArrayView line) {
    // METHOD SP request-target SP HTTP/1.x ; an upper-case method of 1 to 16 letters, a target of
    // 1 to 8192 visible ASCII bytes, nothing else. Checked by hand: it runs on every request.
    qsizetype i = 0;
    while (i < line.size() && i < 17 && line[i] >= 'A' && line[i] <= 'Z')
        ++i;
    if (i == 0 || i > 16 || i == line.size() || line[i] != ' ')
        return false;
    const qsizetype targetStart = ++i;
    while (i < line.size() && line[i] >= 0x21 && line[i] <= 0x7e)
        ++i;
    const qsizetype targetSize = i - targetStart;
    if (targetSize < 1 || targetSize > 8192 || i == line.size() || line[i] != ' ')
        return false;
    const QByteArrayView version = line.sliced(i + 1);
    return version == "HTTP/1.1" || version == "HTTP/1.0";
}

// Where the first control byte of a head is (a bare CR, a NUL, ESC, DEL...; a tab and the line
// ends aside), or -1.
qsizetype controlByteAt(QByteArrayView head) {
    for (qsizetype i = 0; i < head.size(); ++i) {
        const auto c = static_cast<unsigned char>(head[i]);
        if ((c >= 0x20 && c != 0x7f) || c == '\t' || c == '\n' ||
            (c == '\r' && i + 1 < head.size() && head[i + 1] == '\n'))
            continue;
        return i;
    }
    return -1;
}

std::atomic<quint64> g_unreadBytesCopied{0};

// A request target up to its query or fragment.
QByteArrayView pathOfTarget(QByteArrayView target) {
    for (qsizetype i = 0; i < target.size(); ++i)
        if (target[i] == '?' || target[i] == '#')
            return target.first(i);
    return target;
}
} // namespace

ConnectionGuard::ConnectionGuard(QTcpSocket *socket, const config::LimitsConfig &limits, QObject *httpServer,
                                 std::function<void()> onGone)
    : QObject(socket), m_socket(socket), m_httpServer(httpServer), m_limits(limits), m_onGone(std::move(onGone)),
      // Qt 6.4 reads a line without a colon as a header anyway: a malformed field line is refused here.
      m_headParser(limits.maxHeaderBytes, http::HeadParser::FieldLines::Refuse) {
    setObjectName(QStringLiteral("sw-connection-guard"));
    // Qt's parser keeps a whole request in the socket buffer: what this one may hold, and no more
    // than kReadAheadBytes of what follows it (fitReadBuffer).
    fitReadBuffer();
    m_timer = new QTimer(this);
    m_timer->setSingleShot(true);
    connect(m_timer, &QTimer::timeout, this, &ConnectionGuard::onTimeout);
    // Connected before the HTTP server's own readyRead handler, so it runs first.
    m_readConnection = connect(socket, &QIODevice::readyRead, this, &ConnectionGuard::onReadyRead);
    // A client reading a large answer slowly is making progress: the idle clock that started when
    // the answer was handed to the socket starts again each time the kernel takes more of it.
    connect(socket, &QIODevice::bytesWritten, this, [this]() {
        releaseWritten();
        if (m_awaitingDrain) {
            if (m_socket->bytesToWrite() <= kMaxUnsentBytes)
                return responseDone();
            m_timer->start(); // the client takes its answer, slowly: not idle
            return;
        }
        if (m_timer->isActive() &&
            ((m_phase == Phase::Head && m_head.isEmpty() && !m_busy) || m_phase == Phase::Rejected))
            m_timer->start();
    });
    connect(socket, &QAbstractSocket::disconnected, this, &ConnectionGuard::releaseWritten); // nothing more leaves
    if (auto *guarded = dynamic_cast<GuardedSocket *>(socket)) {
        guarded->setGuard(this);
        m_socketTellsCuts = true;
    }
    rearm();
}

ConnectionGuard::~ConnectionGuard() {
    giveBack(m_bodyTaken);
    giveBack(m_dispatchedTaken);
    giveBack(m_unsentHeld);
    if (m_onGone)
        m_onGone();
}

ConnectionGuard *ConnectionGuard::of(QTcpSocket *socket) {
    return socket
               ? socket->findChild<ConnectionGuard *>(QStringLiteral("sw-connection-guard"), Qt::FindDirectChildrenOnly)
               : nullptr;
}

void ConnectionGuard::onReadyRead() {
    if (!m_socket)
        return;
    if (m_phase == Phase::Rejected)
        return dropUnread(); // draining: Qt's parser is cut off
    if (m_busy) {
        // A pipelined request while an answer is pending: Qt's server would parse and answer it
        // at once, before the pending one (out of order). Hide its bytes from Qt inside a read
        // transaction until responseDone(), which rolls them back for both parsers. The socket's
        // read buffer bounds what a pipelining client can park.
        parkPipelined();
        return;
    }
    // Qt's handler reads all it is given of a request, so what is unread now is new, or a
    // pipelining client's next requests: a first look at its front often holds the whole request,
    // and the rest is looked at only when the request goes on past it. What comes after a complete
    // request is left for the next one (Phase::Complete).
    qint64 available = m_socket->bytesAvailable();
    if (available <= 0)
        return;
    m_everSpoke = true;
    // Nothing of the unread bytes has been read by Qt's parser when no read transaction is open: a
    // head at their start is at the start of the socket's buffer.
    const bool atBufferStart = !m_socket->isTransactionStarted();
    qint64 seen = 0; // of the unread bytes, those consumed
    for (qint64 look = std::min(available, kFirstLookBytes); seen < available;) {
        const QByteArray fresh = m_socket->peek(look);
        g_unreadBytesCopied.fetch_add(quint64(fresh.size()), std::memory_order_relaxed);
        if (fresh.size() <= seen)
            break;
        m_readStart = atBufferStart && seen == 0 ? fresh.constData() : nullptr;
        m_headShrunk = 0;
        consume(QByteArrayView(fresh).sliced(seen));
        m_readStart = nullptr;
        if (!m_socket || (m_phase != Phase::Head && m_phase != Phase::Body))
            break;
        // All of it consumed; a head handed over (handOverHead) left the buffer shorter.
        seen = fresh.size() - m_headShrunk;
        available -= m_headShrunk;
        look = available;
    }
    fitReadBuffer();
    continueIfWaiting();
    // A plain socket cannot say when Qt's parser gave up on these bytes: look after this read.
    if (!m_socketTellsCuts && m_phase != Phase::Rejected && !m_parserCheckQueued) {
        m_parserCheckQueued = true;
        QMetaObject::invokeMethod(this, &ConnectionGuard::checkParserAlive, Qt::QueuedConnection);
    }
}

GuardedSocket::~GuardedSocket() {
    if (m_guard)
        m_guard->socketGoing();
}

void GuardedSocket::disconnectNotify(const QMetaMethod &signal) {
    // An invalid method: every connection of a signal (or of all of them) was cut.
    if (!signal.isValid() && m_guard)
        m_guard->signalsCut();
}

void ConnectionGuard::socketGoing() {
    // The signals QAbstractSocket's destructor still emits (disconnected, on abort) find no
    // socket here; what the answers held of the budget goes back now, the rest with the guard.
    m_socket.clear();
    m_awaitingDrain = false;
    releaseWritten();
}

void ConnectionGuard::signalsCut() {
    // Looked at once Qt's handler has returned, as after a read on a plain socket.
    if (!m_readConnection && m_phase != Phase::Rejected && !m_parserCheckQueued) {
        m_parserCheckQueued = true;
        QMetaObject::invokeMethod(this, &ConnectionGuard::checkParserAlive, Qt::QueuedConnection);
    }
}

void ConnectionGuard::checkParserAlive() {
    m_parserCheckQueued = false;
    // Qt 6.4's server answers a parse error by disconnecting every signal of the
    // socket (ours included) and leaving it open: answer 400 and close instead.
    if (!m_readConnection && m_phase != Phase::Rejected)
        reject({400, "invalid_request_error", QStringLiteral("malformed HTTP request")});
}

void ConnectionGuard::consume(QByteArrayView bytes) {
    while (!bytes.isEmpty() && m_phase != Phase::Rejected) {
        switch (m_phase) {
        case Phase::Head: {
            const bool headAtBufferStart = m_head.isEmpty() && m_readStart && bytes.data() == m_readStart;
            const bool wasEmpty = m_head.isEmpty();
            const qsizetype before = m_head.size();
            m_head.append(bytes.data(), bytes.size());
            if (wasEmpty)
                rearm(); // the header clock starts with the request's first byte
            // Allow a stray CRLF between keep-alive requests (RFC 9112 2.2).
            qsizetype stripped = 0;
            while (m_head.startsWith("\r\n")) {
                m_head.remove(0, 2);
                stripped += 2;
            }
            const qsizetype firstLineEnd = m_head.indexOf("\r\n");
            if (firstLineEnd < 0 && !m_head.isEmpty() && m_head[0] == '\x16')
                return reject({400, "invalid_request_error",
                               QStringLiteral("this listener speaks plain HTTP, not TLS: use an http:// base URL")});
            if ((firstLineEnd >= 0 && !validRequestLine(QByteArrayView(m_head).first(firstLineEnd))) ||
                (firstLineEnd < 0 && !plausibleRequestLineStart(m_head)))
                return reject({400, "invalid_request_error", QStringLiteral("malformed HTTP request line")});
            if (firstLineEnd < 0 && m_head.size() > 16 + 8192 + 10)
                return reject(
                    {431, "invalid_request_error",
                     QStringLiteral("request line too long (limit %1 header bytes)").arg(m_limits.maxHeaderBytes)});
            if (stripped > 0)
                m_headParser.reset(); // what it searched has moved
            switch (m_headParser.parse(m_head)) {
            case http::HeadParser::Status::Incomplete:
                return;
            case http::HeadParser::Status::TooLarge:
                return reject({431, "invalid_request_error",
                               QStringLiteral("request headers are over limits.maxHeaderBytes (%1 bytes)")
                                   .arg(m_limits.maxHeaderBytes)});
            case http::HeadParser::Status::Malformed:
                return reject({400, "invalid_request_error", QStringLiteral("malformed HTTP header line")});
            case http::HeadParser::Status::Complete:
                break;
            }
            const qsizetype headSize = m_headParser.headBytes();
            const qsizetype used = headSize + stripped - before;
            m_head.truncate(headSize);
            bytes = bytes.sliced(std::min<qsizetype>(bytes.size(), std::max<qsizetype>(0, used)));
            m_requestBytes = headSize;
            onHeadComplete();
            if (headAtBufferStart && m_phase != Phase::Rejected)
                handOverHead(stripped + headSize);
            break;
        }
        case Phase::Body:
            consumeBody(bytes);
            return;
        case Phase::Complete:
            // A pipelined next request, before this one was dispatched: read again from the
            // start once this one is answered (requestDispatched parks it until then).
            return;
        case Phase::Rejected:
            return;
        }
    }
}

void ConnectionGuard::continueIfWaiting() {
    // A client that waits for "100 Continue" before its body (curl does past 1 MiB) is told to go
    // on once its head passed every check, instead of waiting out its own timeout (curl: 1 s);
    // one whose body came with the head gets no interim answer.
    if (!std::exchange(m_continuePending, false) || m_phase != Phase::Body || m_body.decodedBytes() > 0 || !m_socket)
        return;
    http::writeThrough(m_socket, QByteArrayLiteral("HTTP/1.1 100 Continue\r\n\r\n"), true);
}

void ConnectionGuard::onHeadComplete() {
    // A control byte in a field (RFC 9110 5.5: a bare CR, a NUL...) makes the head malformed, and
    // whatever reads it after us (a proxy in front) may frame it otherwise, a bare CR ending a line
    // there. Answered 400 by the router once, and the connection kept: the next request was then
    // read where the refused head's Content-Length said it starts. Refused here, connection closed.
    if (const qsizetype at = controlByteAt(m_head); at >= 0) {
        const qsizetype lineStart = m_head.lastIndexOf('\n', at) + 1;
        const qsizetype lineEnd = m_head.indexOf('\n', at);
        const QByteArray line = m_head.mid(lineStart, lineEnd - lineStart);
        const qsizetype colon = line.indexOf(':'); // a field line (parsed), the request line being visible ASCII
        const auto problem = RequestGuard::controlByteProblem({{line.left(colon).trimmed(), line.mid(colon + 1)}});
        return reject({400, "invalid_request_error",
                       problem ? *problem : QStringLiteral("a header contains a control character; remove it")});
    }
    qint64 contentLength = 0;
    bool haveLength = false;
    bool chunked = false;
    int hostCount = 0;
    QByteArrayView host;
    QByteArrayView name;
    QByteArrayView value;
    int fields = 0;
    m_http10 = m_headParser.startLine().endsWith(" HTTP/1.0");
    m_closeAfterAnswer = false;
    bool keepAlive = false; // an HTTP/1.0 client's opt-in (RFC 9112 C.2.2)
    bool expectContinue = false;
    for (qsizetype pos = 0; m_headParser.nextField(pos, name, value);) {
        // Qt 6.4's parser gives up past 100 fields and its server then dispatches the request with
        // the fields it had (no Host: a 403), and the guard answers the parse error too: two
        // answers to one request. Refused here, once.
        if (++fields > kMaxHeaderFields)
            return reject(
                {431, "invalid_request_error", QStringLiteral("more than %1 header fields").arg(kMaxHeaderFields)});
        if (http::sameName(name, "host")) {
            ++hostCount;
            host = value;
        } else if (http::sameName(name, "content-length")) {
            // 1*DIGIT (RFC 9110 8.6): Qt's parser reads "+5" or " 5" as it likes, and a length two
            // parsers read differently is how requests are smuggled.
            bool ok = !value.isEmpty() &&
                      std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
            const qint64 n = ok ? value.toLongLong(&ok) : -1;
            if (!ok || n < 0 || (haveLength && n != contentLength))
                return reject({400, "invalid_request_error", QStringLiteral("invalid Content-Length")});
            haveLength = true;
            contentLength = n;
        } else if (http::sameName(name, "connection")) {
            // A list of options: "close" among them ends the connection after this answer.
            for (qsizetype at = 0; at <= value.size();) {
                qsizetype comma = value.indexOf(',', at);
                if (comma < 0)
                    comma = value.size();
                const QByteArrayView option = value.sliced(at, comma - at).trimmed();
                m_closeAfterAnswer |= option.compare("close", Qt::CaseInsensitive) == 0;
                keepAlive |= option.compare("keep-alive", Qt::CaseInsensitive) == 0;
                at = comma + 1;
            }
        } else if (http::sameName(name, "expect")) {
            expectContinue |= value.trimmed().compare("100-continue", Qt::CaseInsensitive) == 0;
        } else if (http::sameName(name, "upgrade")) {
            // Qt 6.4's server takes a WebSocket upgrade for itself and, with no WebSocket handler,
            // drops the connection without a word (after the request already ran): refused here.
            if (value.toByteArray().toLower().contains("websocket"))
                return reject({400, "invalid_request_error",
                               QStringLiteral("WebSocket upgrades are not supported: send plain HTTP requests "
                                              "(streaming answers come as server-sent events)")});
        } else if (http::sameName(name, "transfer-encoding")) {
            if (value.compare("chunked", Qt::CaseInsensitive) != 0)
                return reject({400, "invalid_request_error",
                               QStringLiteral("unsupported Transfer-Encoding (only chunked is accepted)")});
            // Two lines are one list, "chunked, chunked": a coding applied twice (RFC 9112 6.1), which a
            // proxy in front may read differently from us.
            if (chunked)
                return reject(
                    {400, "invalid_request_error", QStringLiteral("Transfer-Encoding names chunked more than once")});
            chunked = true;
        }
    }
    if (m_http10 && !keepAlive)
        m_closeAfterAnswer = true;
    // Qt takes the first Host and lets it override an absolute-form target's authority: two Hosts,
    // or a target naming another host, would be answered as if sent to us (RFC 9112 3.2).
    if (hostCount > 1)
        return reject({400, "invalid_request_error", QStringLiteral("more than one Host header")});
    // The request line was checked (validRequestLine): METHOD SP target SP version.
    const QByteArray &line = m_headParser.startLine();
    const qsizetype targetStart = line.indexOf(' ') + 1;
    const qsizetype targetEnd = targetStart > 0 ? line.indexOf(' ', targetStart) : -1;
    const QByteArrayView target =
        targetEnd < 0 ? QByteArrayView() : QByteArrayView(line).sliced(targetStart, targetEnd - targetStart);
    // Qt reads the path of the request's URL: "//x/admin/marks" as the authority x and the path
    // /admin/marks, and "/admin%2Fmarks" decoded. Both are paths of their own (RFC 9112 3.2.1, RFC 3986
    // 2.2) that no route has; served as the shorter one, a proxy in front that guards /admin by prefix
    // would be walked past. A doubled slash is what a base URL ending in '/' makes: said so.
    const QByteArrayView targetPath = pathOfTarget(target);
    if (target.startsWith("//"))
        return reject({400, "invalid_request_error",
                       QStringLiteral("the request path %1 starts with \"//\"; check the client's base URL (one "
                                      "ending in '/' doubles the slash)")
                           .arg(QString::fromLatin1(targetPath.first(std::min<qsizetype>(targetPath.size(), 64))))});
    if (targetPath.contains("%2F") || targetPath.contains("%2f"))
        return reject({400, "invalid_request_error",
                       QStringLiteral("the request path holds an encoded '/' (%2F), which no route has")});
    if (!target.startsWith('/') && target != "*") {
        const QUrl url = QUrl::fromEncoded(target.toByteArray(), QUrl::StrictMode);
        if (!url.isValid() || url.scheme() != QLatin1String("http") ||
            url.authority().toLower() != QString::fromLatin1(host).toLower())
            return reject({400, "invalid_request_error",
                           QStringLiteral("the request target names another host than the Host header; send an "
                                          "origin-form target (a path) to this gateway")});
    }
    if (chunked && haveLength) // request smuggling shape (RFC 9112 6.1)
        return reject({400, "invalid_request_error", QStringLiteral("both Content-Length and Transfer-Encoding")});
    if (contentLength > m_limits.maxBodyBytes)
        return reject({413, "request_too_large",
                       QStringLiteral("request body of %1 bytes is over limits.maxBodyBytes (%2 bytes)")
                           .arg(contentLength)
                           .arg(m_limits.maxBodyBytes)});
    if (m_judge) {
        // Who is calling, from the head: a request its body cannot help (no key, an unknown one)
        // is answered now, before a byte of that body is taken from the budget or "100 Continue"
        // invites it. Else a peer without a key could hold limits.maxBodyBytesInFlight from
        // every tenant for limits.idleTimeoutMs by sending bodies and stopping one byte short.
        RequestHead head;
        head.method = QByteArrayView(line).first(targetStart - 1);
        head.target = target;
        head.hasBody = chunked || contentLength > 0;
        head.bodyBytes = chunked ? 1 : contentLength;
        head.fields = &m_headParser;
        HeadVerdict verdict = m_judge(head);
        if (verdict.answer)
            return answerAndClose(verdict.answer->closingResponse(head.method == "HEAD"));
        m_key = std::move(verdict.key);
    }
    // Refused on the head when it cannot fit now; taken as its bytes arrive, so that a head with a
    // large Content-Length and no body holds nothing of the budget.
    if (!chunked && m_budget && contentLength > 0 && contentLength > m_budget->room())
        return refuseOverBudget();
    if (chunked) {
        http::BodyDecoder::Limits limits;
        limits.maxLineBytes = kMaxChunkLine;
        limits.maxTrailerBytes = kMaxChunkLine;
        limits.maxBodyBytes = m_limits.maxBodyBytes;
        // Qt 6.4's parser expects CRLF right after the last chunk: a trailer would leave
        // the request undispatched (or its rest parsed as a next request).
        limits.trailers = false;
        limits.crlfOnly = true; // and it waits for a CR after every chunk line: a bare LF is refused now
        m_body.start(http::BodyDecoder::Framing::Chunked, 0, limits);
    } else {
        m_body.start(http::BodyDecoder::Framing::Length, contentLength);
        m_bodyLength = contentLength;
    }
    // HTTP/1.0 has no chunked framing: a body sent so is answered, then the connection closes
    // (RFC 9112 6.1), so nothing after it is read with framing that may be faulty.
    if (chunked && m_http10)
        m_closeAfterAnswer = true;
    m_phase = m_body.done() ? Phase::Complete : Phase::Body;
    // Never to an HTTP/1.0 client (RFC 9110 15.2); sent once this read is consumed (continueIfWaiting).
    m_continuePending = expectContinue && m_phase == Phase::Body && !m_http10;
    rearm();
}

namespace {
std::atomic<bool> g_headHandover{true};
std::atomic<quint64> g_headsHandedOver{0};

// The fields Qt 6.4's server acts on (QHttpServerRequestPrivate): the body's framing, keep-alive
// and upgrade, and 100-continue. Not Host: Qt only makes the request URL's authority from it,
// which HttpFront does not read (the Host check reads the guard's fields).
bool qtReadsField(QByteArrayView name) {
    for (const char *field : {"content-length", "transfer-encoding", "connection", "expect", "upgrade"})
        if (http::sameName(name, field))
            return true;
    return false;
}

// A request target Qt's URL reading gives back unchanged as the path: origin-form, segments of
// letters, digits, '-' and '_' only. No query, no percent escape, no dot segment, no empty
// segment ("//host/x" would read as an authority).
bool plainPath(QByteArrayView target) {
    if (target.size() < 2 || target.front() != '/')
        return false;
    char previous = 0;
    for (const char c : target) {
        const bool word =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
        if (!word && !(c == '/' && previous != '/'))
            return false;
        previous = c;
    }
    return true;
}
} // namespace

void ConnectionGuard::setHeadHandoverEnabled(bool on) {
    g_headHandover = on;
}
quint64 ConnectionGuard::headsHandedOver() {
    return g_headsHandedOver;
}
quint64 ConnectionGuard::unreadBytesCopied() {
    return g_unreadBytesCopied;
}

bool ConnectionGuard::takeHeaders(http::HeaderList *out, QString *path) {
    if (!m_haveHeaders)
        return false;
    m_haveHeaders = false;
    *out = std::move(m_headers);
    m_headers = {};
    if (!m_path.isEmpty())
        *path = std::exchange(m_path, QString());
    return true;
}

void ConnectionGuard::handOverHead(qsizetype bufferedHeadBytes) {
    // Qt 6.4's QHttpHeaderParser limits (qhttpheaderparser_p.h): past them it refuses the head. The
    // field count is refused before this (onHeadComplete); the sizes are left for Qt to judge.
    constexpr qsizetype kQtMaxFieldBytes = 100 * 1024;
    constexpr qsizetype kQtMaxHeadBytes = 256 * 1024;
    if (!m_handsOverHeads || !g_headHandover || !m_socket || bufferedHeadBytes > kQtMaxHeadBytes)
        return;
    QByteArray shortHead;
    const QByteArrayView startLine = m_headParser.startLine();
    shortHead.reserve(startLine.size() + 128);
    // METHOD SP target SP HTTP/1.x (validRequestLine): a plain path is kept here, Qt reads "/".
    const qsizetype targetStart = startLine.indexOf(' ') + 1;
    const qsizetype targetEnd = startLine.lastIndexOf(' ');
    const QByteArrayView target = startLine.sliced(targetStart, targetEnd - targetStart);
    const bool keepPath = plainPath(target);
    if (keepPath) {
        shortHead += startLine.first(targetStart);
        shortHead += '/';
        shortHead += startLine.sliced(targetEnd);
    } else {
        shortHead += startLine;
    }
    shortHead += "\r\n";
    QByteArrayView name;
    QByteArrayView value;
    // HTTP/1.1 keeps the connection open without asking, and Qt's server reads Connection only
    // to look for "upgrade": "Connection: keep-alive", which every SDK sends, is left out there.
    const bool http11 = startLine.endsWith(" HTTP/1.1");
    for (qsizetype pos = 0; m_headParser.nextField(pos, name, value);) {
        if (name.size() + value.size() + 2 > kQtMaxFieldBytes)
            return;
        if (!qtReadsField(name))
            continue;
        if (http11 && http::sameName(name, "connection") && value.compare("keep-alive", Qt::CaseInsensitive) == 0)
            continue;
        shortHead += name;
        shortHead += ": ";
        shortHead += value;
        shortHead += "\r\n";
    }
    shortHead += "\r\n";
    if (shortHead.size() >= bufferedHeadBytes)
        return; // nothing to save
    if (!http::replaceUnreadPrefix(m_socket, bufferedHeadBytes, shortHead))
        return;
    m_headShrunk = bufferedHeadBytes - shortHead.size();
    m_headers = m_headParser.headers();
    m_haveHeaders = true;
    m_path = keepPath ? QString::fromLatin1(target) : QString();
    ++g_headsHandedOver;
}

void ConnectionGuard::consumeBody(QByteArrayView bytes) {
    const qsizetype used = m_body.feed(bytes);
    m_requestBytes += used;
    // Every body byte that arrives is taken from the budget before Qt's parser keeps it.
    if (m_body.decodedBytes() > m_bodyTaken && !takeBody(m_body.decodedBytes() - m_bodyTaken))
        return;
    // Chunk framing is no body: the budget and maxBodyBytes count decoded bytes, but Qt's parser
    // keeps every byte of the framing until the request is whole, and each chunk as an array of its
    // own. A body of 1-byte chunks, or of long chunk extensions, made a connection hold 6 to 4000
    // times its size, 635 MB and rising from one client (review of probe Y2 F1). Framing past a
    // sixteenth of the body, after the first kFreeFramingBytes, is refused: a client sending chunks
    // of 100 bytes or more never meets it.
    if (m_body.framing() == http::BodyDecoder::Framing::Chunked) {
        const qint64 framing = m_requestBytes - m_head.size() - m_body.decodedBytes();
        if (framing > kFreeFramingBytes + m_body.decodedBytes() / 16)
            return reject({400, "invalid_request_error",
                           QStringLiteral("chunked request body: %1 bytes of chunk framing for %2 bytes of body; "
                                          "send larger chunks, or the body with a Content-Length")
                               .arg(framing)
                               .arg(m_body.decodedBytes())});
    }
    switch (m_body.status()) {
    case http::BodyDecoder::Status::Reading:
        return;
    case http::BodyDecoder::Status::Done:
        m_phase = Phase::Complete;
        rearm();
        return consume(bytes.sliced(used));
    case http::BodyDecoder::Status::BodyTooLarge:
        return reject(
            {413, "request_too_large",
             QStringLiteral("chunked request body is over limits.maxBodyBytes (%1 bytes)").arg(m_limits.maxBodyBytes)});
    case http::BodyDecoder::Status::TrailerRefused:
        return reject({400, "invalid_request_error",
                       QStringLiteral("trailer fields after a chunked request body are not supported")});
    case http::BodyDecoder::Status::Malformed:
    case http::BodyDecoder::Status::TooLarge:
        return reject({400, "invalid_request_error", QStringLiteral("malformed chunked body")});
    }
}

bool ConnectionGuard::takeBody(qint64 bytes) {
    if (!m_budget || bytes <= 0)
        return true;
    if (m_budget->take(bytes)) {
        m_bodyTaken += bytes;
        return true;
    }
    refuseOverBudget();
    return false;
}

void ConnectionGuard::refuseOverBudget() {
    reject(
        {503, "overloaded_error",
         QStringLiteral("the gateway holds %1 of request bodies and answers in flight (limits.maxBodyBytesInFlight = "
                        "%2); retry shortly")
             .arg(util::ByteBudget::describe(m_budget->held()), util::ByteBudget::describe(m_budget->cap())),
         1});
}

void ConnectionGuard::giveBack(qint64 &bytes) {
    if (m_budget && bytes > 0)
        m_budget->give(bytes);
    bytes = 0;
}

void ConnectionGuard::fitReadBuffer() {
    if (!m_socket)
        return;
    // The socket's buffer holds what Qt's parser has read of the current request (until it has all
    // of it) and what nobody has read yet; Qt reads the kernel only while it holds less than this.
    // A request's own bytes are let in as the guard counts them (a chunked body's framing bounded
    // by consumeBody), its body's as a Content-Length announced (and the budget allowed) them; past
    // that, kReadAheadBytes. While an answer is
    // pending, a pipelined next request is not read (parkPipelined): what the buffer holds of it
    // stays, and the kernel is read no further (up to kReadAheadBytes when the buffer is empty).
    qint64 bytes = kReadAheadBytes;
    if (m_busy) {
        if (const qint64 held = http::bufferedBytes(m_socket); held > 0)
            bytes = held;
    } else if (m_phase == Phase::Head) {
        bytes += m_head.size(); // stray line ends before it are not let in: they make no request
    } else {
        bytes += m_requestBytes;
        if (m_phase == Phase::Body && m_body.framing() == http::BodyDecoder::Framing::Length)
            bytes += std::max<qint64>(0, m_bodyLength - m_body.decodedBytes());
    }
    if (m_socket->readBufferSize() != bytes)
        m_socket->setReadBufferSize(bytes);
}

void ConnectionGuard::requestDispatched() {
    m_busy = true;
    fitReadBuffer();
    if (m_socket && http::bufferedBytes(m_socket) >= m_socket->readBufferSize())
        startHangupCheck(); // not read while this answer is pending
    // What this request took is held until its answer is complete (responseDone).
    m_dispatchedTaken += std::exchange(m_bodyTaken, 0);
    startNextRequest();
}

void ConnectionGuard::parkPipelined() {
    if (!m_parked) {
        if (m_socket->isTransactionStarted())
            return; // Qt's own, mid-request: cannot happen while busy; leave it be
        m_socket->startTransaction();
        m_parked = true;
    }
    g_unreadBytesCopied.fetch_add(quint64(m_socket->read(m_socket->bytesAvailable()).size()),
                                  std::memory_order_relaxed);
    startHangupCheck();
}

void ConnectionGuard::startHangupCheck() {
    // Once its buffer is full, Qt reads the connection no more, so a client that pipelined and
    // then left went unnoticed until the answer was written: a stream's upstream ran to its budget
    // and was marked, a JSON answer's was asked three times (probe V3 1). The kernel still knows:
    // it is asked every kHangupCheckMs while the answer runs.
    if (!m_hangupCheck) {
        m_hangupCheck = new QTimer(this);
        m_hangupCheck->setInterval(kHangupCheckMs);
        connect(m_hangupCheck, &QTimer::timeout, this, &ConnectionGuard::checkHangup);
    }
    if (!m_hangupCheck->isActive())
        m_hangupCheck->start();
}

void ConnectionGuard::stopHangupCheck() {
    if (m_hangupCheck)
        m_hangupCheck->stop();
}

void ConnectionGuard::checkHangup() {
    if (!m_socket || !m_busy || m_socket->state() != QAbstractSocket::ConnectedState) {
        stopHangupCheck();
        return;
    }
    // POLLRDHUP: the client closed its side, whatever it sent before that still waits unread.
    pollfd p{int(m_socket->socketDescriptor()), POLLRDHUP, 0};
    if (::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
        stopHangupCheck();
        m_socket->abort(); // disconnected: the answer's request hears its client is gone
    }
}

void ConnectionGuard::holdUnsent() {
    // An answer whose request is done stays in memory until the client reads it: its unread bytes
    // count where its upstream bytes did (limits.maxBodyBytesInFlight), so that clients that stop
    // reading large answers (or Idempotency-Key replays of one) meet the budget's 503 instead of
    // growing the process. Held whether it fits or not (the bytes exist): past the cap, new
    // bodies and answers are refused until the kernel takes these or the idle timeout closes the
    // connection.
    const qint64 unsent = m_socket ? m_socket->bytesToWrite() : 0; // an abort empties the buffer
    if (!m_budget || unsent <= m_unsentHeld)
        return;
    m_budget->hold(unsent - m_unsentHeld);
    m_unsentHeld = unsent;
}

void ConnectionGuard::releaseWritten() {
    if (m_unsentHeld <= 0)
        return;
    const qint64 unsent = m_socket ? m_socket->bytesToWrite() : 0; // an abort empties the buffer
    if (unsent >= m_unsentHeld)
        return;
    m_budget->give(m_unsentHeld - unsent);
    m_unsentHeld = unsent;
}

void ConnectionGuard::responseDone() {
    holdUnsent();
    // The answer is in the socket's buffer, not yet with the client: the next request waits until
    // what is unsent is back under kMaxUnsentBytes (bytesWritten resumes it); a client that takes
    // nothing of it for limits.idleTimeoutMs loses the connection (onTimeout).
    m_awaitingDrain = m_socket && m_socket->state() == QAbstractSocket::ConnectedState && m_phase != Phase::Rejected &&
                      m_socket->bytesToWrite() > kMaxUnsentBytes;
    if (m_awaitingDrain) {
        m_timer->start(m_limits.idleTimeoutMs);
        return;
    }
    m_busy = false;
    giveBack(m_dispatchedTaken);
    if (m_socket && m_socket->state() != QAbstractSocket::ConnectedState && m_phase != Phase::Rejected) {
        // The answer ended the connection (Connection: close, an HTTP/1.0 stream), and Qt's socket
        // may still be sending its last bytes: what the client pipelined after it is never read,
        // by Qt's parser or by the guard, so no request runs whose answer cannot be sent.
        m_phase = Phase::Rejected;
        m_timer->stop();
        cutOffQtParser();
        // A client that never reads the rest would hold the closing socket: it gets the idle
        // timeout to do so (progress restarts it, see bytesWritten), then the connection goes.
        m_timer->start(m_limits.idleTimeoutMs);
        return;
    }
    if (m_parked && m_socket) {
        m_parked = false;
        m_socket->rollbackTransaction();
    }
    stopHangupCheck();
    fitReadBuffer(); // the next request's head, as it comes
    rearm();
    if (m_socket && m_socket->bytesAvailable() > 0 && m_phase != Phase::Rejected)
        QMetaObject::invokeMethod(this, &ConnectionGuard::readWaiting, Qt::QueuedConnection);
}

void ConnectionGuard::readWaiting() {
    // What waited in the buffer is read as if it had just come. Not when a read of the socket came
    // first and the next request is answered already: its bytes would then be parked for nothing.
    if (m_socket && !m_busy && m_phase != Phase::Rejected && m_socket->bytesAvailable() > 0)
        Q_EMIT m_socket->readyRead();
}

void ConnectionGuard::startNextRequest() {
    m_key = {};
    m_haveHeaders = false;
    m_headers = {};
    m_path.clear();
    if (m_phase == Phase::Rejected)
        return;
    m_phase = Phase::Head;
    m_head.clear();
    m_headParser.reset();
    m_requestBytes = 0;
    m_bodyLength = 0;
    rearm();
}

void ConnectionGuard::rearm() {
    if (m_phase == Phase::Rejected)
        return;
    m_timer->stop();
    if (m_busy)
        return; // an answer is on its way (the request's own deadline bounds it); the next request's clock starts after
                // it
    if (m_phase == Phase::Head && m_head.isEmpty()) {
        // Silent: a fresh connection gets the header timeout, a kept-alive one the idle timeout.
        m_timer->start(m_everSpoke ? m_limits.idleTimeoutMs : m_limits.headerTimeoutMs);
    } else if (m_phase == Phase::Head) {
        m_timer->start(m_limits.headerTimeoutMs); // from the first byte, not reset by more bytes
    } else {
        m_timer->start(m_limits.idleTimeoutMs); // the body, from the end of the head, as a whole
    }
}

void ConnectionGuard::onTimeout() {
    if (m_phase == Phase::Rejected || m_awaitingDrain) {
        closeQuietly();
        return;
    }
    if (m_phase == Phase::Head && m_head.isEmpty())
        return closeQuietly(); // idle: nothing to answer
    reject({408, "timeout_error",
            m_phase == Phase::Head
                ? QStringLiteral("request headers not received within limits.headerTimeoutMs (%1 ms)")
                      .arg(m_limits.headerTimeoutMs)
                : QStringLiteral("request body not received within limits.idleTimeoutMs (%1 ms)")
                      .arg(m_limits.idleTimeoutMs)});
}

std::optional<wire::Api> ConnectionGuard::routeOfHead() const {
    QByteArrayView line = m_headParser.startLine();
    if (line.isEmpty()) { // a head refused before its end (too large, too slow): its first line, if whole
        const qsizetype end = m_head.indexOf('\n');
        if (end < 0)
            return std::nullopt;
        line = QByteArrayView(m_head).first(end);
    }
    const qsizetype start = line.indexOf(' ') + 1;
    if (start <= 0)
        return std::nullopt;
    QByteArrayView target = line.sliced(start);
    target = target.first(std::min({target.indexOf(' ') < 0 ? target.size() : target.indexOf(' '),
                                    target.indexOf('?') < 0 ? target.size() : target.indexOf('?')}));
    return wire::apiOfChatRoute(QString::fromLatin1(target));
}

void ConnectionGuard::reject(const Rejection &rejection) {
    if (!m_socket || m_phase == Phase::Rejected)
        return;
    if (m_onReject)
        m_onReject(rejection.status);
    // A chat route's client reads the limit's refusal in its own format, as every other error it
    // gets (probe R1 2: a 413, 431 or 408 came in one shape on every route).
    QByteArray formatted;
    if (const auto api = routeOfHead())
        formatted = formats::codecFor(*api).encodeError(model::GatewayError::make(
            rejection.status, model::GatewayError::categoryForStatus(rejection.status), rejection.message));
    answerAndClose(RequestGuard::responseBytes(rejection, formatted));
}

void ConnectionGuard::answerAndClose(const QByteArray &response) {
    if (!m_socket || m_phase == Phase::Rejected)
        return;
    m_phase = Phase::Rejected;
    m_timer->stop();
    giveBack(m_bodyTaken); // never read now
    if (m_busy) {
        // A response is being written on this connection: no second status line in
        // the middle of it. Only an abusive pipelining client gets here.
        m_socket->abort();
        return;
    }
    // Qt's parser must never see these bytes (it would buffer a huge body).
    cutOffQtParser();
    if (m_socket->state() == QAbstractSocket::ConnectedState)
        http::writeThrough(m_socket, response, true);
    m_timer->start(kDrainMs);
}

void ConnectionGuard::cutOffQtParser() {
    if (m_httpServer)
        disconnect(m_socket, &QIODevice::readyRead, m_httpServer, nullptr);
    if (!m_readConnection)
        m_readConnection = connect(m_socket, &QIODevice::readyRead, this, &ConnectionGuard::onReadyRead);
    dropUnread();
}

void ConnectionGuard::dropUnread() {
    m_parked = false;
    // Qt's read transaction (a parked pipelined request's, if any) is dropped with the bytes.
    if (m_socket->isTransactionStarted())
        m_socket->commitTransaction();
    m_socket->readAll();
}

void ConnectionGuard::closeQuietly() {
    if (!m_socket)
        return;
    m_timer->stop();
    QTcpSocket *socket = m_socket;
    socket->disconnectFromHost();
    // Qt's server deletes its sockets on disconnected, but not after a parse error
    // (it cut every connection of the socket); make sure it goes either way.
    QTimer::singleShot(kDrainMs, socket, [socket]() {
        socket->abort();
        socket->deleteLater();
    });
}

} // namespace sw::server
