#include "core/demo/fake_upstream.h"

#include "core/demo/demo_reply.h"
#include "core/http/body_decoder.h"
#include "core/http/head_parser.h"
#include "core/wire/api.h"

#include <QHostAddress>
#include <QPointer>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTimer>

#include <sys/socket.h>
#include <utility>

namespace sw::demo {

std::optional<wire::Api> demoApiForPath(QByteArrayView path) {
    if (const qsizetype q = path.indexOf('?'); q >= 0)
        path = path.first(q);
    if (path.endsWith("/v1/messages") || path == "/messages")
        return wire::Api::AnthropicMessages;
    if (path.endsWith("/chat/completions"))
        return wire::Api::OpenAICompletions;
    if (path.endsWith("/responses"))
        return wire::Api::OpenAIResponses;
    if (path.contains("/models/") && (path.endsWith(":streamGenerateContent") || path.endsWith(":generateContent")))
        return wire::Api::Google;
    return std::nullopt;
}

// Per-connection parse state. One request is answered at a time; bytes of a
// pipelined next request wait in `buffer` until the current answer is done.
struct FakeUpstream::Connection {
    static constexpr qsizetype kMaxHeadBytes = 64 * 1024;
    QByteArray buffer;
    http::HeadParser head{kMaxHeadBytes, http::HeadParser::FieldLines::Skip};
    http::BodyDecoder body; // Reading while `request` waits for the rest of its body
    RecordedRequest request;
    bool inBody = false;
    bool broken = false; // bytes that are no request: the connection is dropped
    bool busy = false;   // an answer is being written (or stalled)
    bool keepAlive = true;
    bool chunked = false; // the current answer uses chunked framing
};

FakeUpstream::FakeUpstream(QObject *parent) : QObject(parent), m_server(new QTcpServer(this)) {
    m_server->setMaxPendingConnections(4096);
    m_server->setListenBacklogSize(4096); // Qt's default 50 drops SYNs when hundreds of clients connect at once
    connect(m_server, &QTcpServer::newConnection, this, &FakeUpstream::onNewConnection);
}

FakeUpstream::~FakeUpstream() {
    for (auto it = m_connections.begin(); it != m_connections.end(); ++it) {
        it.key()->disconnect(this);
        delete it.value();
    }
    m_connections.clear();
}

bool FakeUpstream::listen(quint16 port) {
    if (!m_server->listen(QHostAddress::LocalHost, port))
        return false;
    m_port = m_server->serverPort();
    return true;
}

QString FakeUpstream::baseUrl() const {
    return QStringLiteral("http://127.0.0.1:%1").arg(m_port);
}

void FakeUpstream::setFault(const Fault &fault) {
    m_fault = fault;
    applyListening();
}

void FakeUpstream::pushFault(const Fault &fault) {
    if (fault.kind == Fault::Refuse) {
        setFault(fault);
        return;
    }
    m_queue.append(fault);
}

void FakeUpstream::applyListening() {
    if (m_fault.kind == Fault::Refuse) {
        m_server->close(); // new connections are refused by the kernel; answers in flight live on
        // A server that is down holds no idle keep-alive connections either: without
        // this, a client's pooled connection would still be served while "refusing".
        // (Collected first: a close may emit disconnected at once, which edits m_connections.)
        QList<QTcpSocket *> idle;
        for (auto it = m_connections.cbegin(); it != m_connections.cend(); ++it)
            if (!it.value()->busy)
                idle.append(it.key());
        for (QTcpSocket *socket : idle)
            socket->disconnectFromHost();
    } else if (!m_server->isListening() && m_port != 0) {
        // The port was ours a moment ago; re-listen so clients see the same upstream come back.
        m_server->listen(QHostAddress::LocalHost, m_port);
    }
}

void FakeUpstream::onNewConnection() {
    while (QTcpSocket *socket = m_server->nextPendingConnection()) {
        ++m_accepted;
        socket->setSocketOption(QAbstractSocket::LowDelayOption, 1);
        m_connections.insert(socket, new Connection);
        connect(socket, &QTcpSocket::readyRead, this, [this, socket]() { onReadyRead(socket); });
        connect(socket, &QTcpSocket::disconnected, this, [this, socket]() { onDisconnected(socket); });
        if (socket->bytesAvailable() > 0)
            onReadyRead(socket);
    }
}

void FakeUpstream::onDisconnected(QTcpSocket *socket) {
    delete m_connections.take(socket);
    socket->disconnect(this);
    socket->deleteLater();
    Q_EMIT connectionClosed();
}

void FakeUpstream::onReadyRead(QTcpSocket *socket) {
    Connection *c = m_connections.value(socket);
    if (!c)
        return;
    c->buffer += socket->readAll();
    if (c->busy)
        return;
    const qsizetype before = m_requests.size();
    if (!parseRequest(*c)) {
        if (c->broken)
            socket->disconnectFromHost(); // as a strict server would; onDisconnected may run at once
        return;
    }
    Q_ASSERT(m_requests.size() == before + 1);
    const RecordedRequest request = m_requests.last();
    std::optional<Fault> refused = m_judge ? m_judge(request) : std::nullopt;
    const Fault fault = refused ? *refused : m_queue.isEmpty() ? m_fault : m_queue.takeFirst();
    c->busy = true;
    Q_EMIT requestReceived(request);
    respond(socket, request, fault);
}

bool FakeUpstream::parseRequest(Connection &c) {
    if (!c.inBody) {
        switch (c.head.parse(c.buffer)) {
        case http::HeadParser::Status::Incomplete:
            return false;
        case http::HeadParser::Status::TooLarge:
        case http::HeadParser::Status::Malformed:
            c.broken = true; // not a request a client of ours sends
            return false;
        case http::HeadParser::Status::Complete:
            break;
        }
        RecordedRequest r;
        const QList<QByteArray> requestLine = c.head.startLine().trimmed().split(' ');
        r.method = requestLine.value(0);
        r.path = requestLine.value(1);
        r.headers = c.head.headers();
        const QByteArray connection = r.header("connection").toLower();
        c.keepAlive =
            requestLine.value(2) == "HTTP/1.0" ? connection.contains("keep-alive") : !connection.contains("close");
        c.buffer.remove(0, c.head.headBytes());
        c.head.reset();
        if (r.header("transfer-encoding").toLower().contains("chunked"))
            c.body.start(http::BodyDecoder::Framing::Chunked);
        else
            c.body.start(http::BodyDecoder::Framing::Length, r.header("content-length").toLongLong());
        c.request = r;
        c.inBody = true;
    }
    c.buffer.remove(0, c.body.feed(c.buffer, &c.request.body));
    if (c.body.failed()) {
        c.broken = true;
        return false;
    }
    if (!c.body.done())
        return false;
    c.inBody = false;
    m_requests.append(std::exchange(c.request, RecordedRequest()));
    return true;
}

void FakeUpstream::respond(QTcpSocket *socket, const RecordedRequest &request, const Fault &fault) {
    // A fault is served on any path; one that names no API gets Google's shapes.
    const wire::Api api = demoApiForPath(request.path).value_or(wire::Api::Google);
    switch (fault.kind) {
    case Fault::None:
    case Fault::Refuse: // a connection that got in before the listener closed is served normally
        sendNormal(socket, request, fault);
        return;
    case Fault::Reset:
        resetConnection(socket);
        return;
    case Fault::Status: {
        const QByteArray body = fault.body.isEmpty() ? demoErrorBody(api, fault.status) : fault.body;
        QByteArray head = "HTTP/1.1 " + QByteArray::number(fault.status) +
                          " Error\r\nContent-Type: application/json\r\n"
                          "Content-Length: " +
                          QByteArray::number(body.size()) + "\r\n";
        if (!fault.retryAfter.isEmpty())
            head += "Retry-After: " + fault.retryAfter + "\r\n";
        if (!fault.location.isEmpty())
            head += "Location: " + fault.location + "\r\n";
        for (const auto &[name, value] : fault.headers)
            head += name + ": " + value + "\r\n";
        auto answer = [this, socket, bytes = head + "\r\n" + body]() {
            if (!m_connections.contains(socket))
                return; // the client left meanwhile
            socket->write(bytes);
            m_connections.value(socket)->chunked = false;
            finishResponse(socket);
        };
        // chunkDelayMs delays an error status too: a slow-failing upstream, so parallel tries overlap.
        if (fault.chunkDelayMs > 0)
            QTimer::singleShot(fault.chunkDelayMs, socket, answer);
        else
            answer();
        return;
    }
    case Fault::StallBeforeHeaders:
        return; // busy forever: the connection only ends when the client leaves
    case Fault::StallAfter200:
        socket->write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n");
        return;
    case Fault::InBandErrorBeforeContent:
    case Fault::InBandErrorAfterContent:
    case Fault::ResetAfterContent: {
        QList<QByteArray> events;
        QByteArray error = demoInBandError(api, QStringLiteral("Overloaded"));
        if (fault.kind == Fault::ResetAfterContent && !fault.body.isEmpty()) {
            events << fault.body;
        } else if (fault.kind != Fault::InBandErrorBeforeContent) {
            if (!m_rawReply.isEmpty()) {
                const qsizetype end = m_rawReply.indexOf("\n\n");
                if (end >= 0)
                    events << m_rawReply.left(end + 2);
            } else {
                DemoReply reply = buildDemoReply(api, request, m_label);
                events = reply.frames.mid(0, reply.firstContentFrame + 1);
                if (!reply.inBandErrorAfterContent.isEmpty())
                    error = reply.inBandErrorAfterContent;
            }
        }
        socket->write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n");
        m_connections.value(socket)->chunked = true;
        if (fault.kind == Fault::ResetAfterContent) {
            writeEvents(socket, events, 0, false);
            // After the content is on the wire, a reset: the gateway has committed by then.
            QTimer::singleShot(std::max(fault.chunkDelayMs, 50), socket, [this, socket]() {
                if (m_connections.contains(socket))
                    resetConnection(socket);
            });
            return;
        }
        events << error;
        writeEvents(socket, events, fault.chunkDelayMs, true);
        return;
    }
    }
}

void FakeUpstream::sendNormal(QTcpSocket *socket, const RecordedRequest &request, const Fault &fault) {
    Connection *c = m_connections.value(socket);
    QList<QByteArray> events;
    if (!m_rawReply.isEmpty()) {
        qsizetype start = 0;
        while (start < m_rawReply.size()) {
            const qsizetype end = m_rawReply.indexOf("\n\n", start);
            const qsizetype stop = end < 0 ? m_rawReply.size() : end + 2;
            events << m_rawReply.mid(start, stop - start);
            start = stop;
        }
    } else {
        const std::optional<wire::Api> api = demoApiForPath(request.path);
        if (!api) {
            const QByteArray body = "{\"error\":{\"message\":\"no such route\"}}";
            socket->write("HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: " +
                          QByteArray::number(body.size()) + "\r\n\r\n" + body);
            c->chunked = false;
            finishResponse(socket);
            return;
        }
        DemoReply reply = buildDemoReply(*api, request, m_label);
        if (!reply.stream) {
            socket->write("HTTP/1.1 " + QByteArray::number(reply.status) + (reply.status == 200 ? " OK" : " Error") +
                          "\r\nContent-Type: application/json\r\nContent-Length: " +
                          QByteArray::number(reply.json.size()) + "\r\n\r\n" + reply.json);
            c->chunked = false;
            finishResponse(socket);
            return;
        }
        events = reply.frames;
    }
    c->chunked = true;
    socket->write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                  "Transfer-Encoding: chunked\r\n\r\n");
    writeEvents(socket, std::move(events), fault.chunkDelayMs, true);
}

void FakeUpstream::writeEvents(QTcpSocket *socket, QList<QByteArray> events, int delayMs, bool endStream) {
    auto chunk = [](const QByteArray &e) { return QByteArray::number(e.size(), 16) + "\r\n" + e + "\r\n"; };
    if (delayMs <= 0) {
        QByteArray all;
        for (const auto &e : events)
            all += chunk(e);
        socket->write(all);
        if (endStream)
            finishResponse(socket);
        return;
    }
    // Paced: one event per delay, the socket as context so a closed connection stops the timers.
    QTimer::singleShot(delayMs, socket,
                       [this, socket, events = std::move(events), delayMs, endStream, chunk]() mutable {
                           if (!m_connections.contains(socket))
                               return;
                           if (events.isEmpty()) {
                               if (endStream)
                                   finishResponse(socket);
                               return;
                           }
                           socket->write(chunk(events.takeFirst()));
                           if (events.isEmpty()) {
                               if (endStream)
                                   finishResponse(socket);
                               return;
                           }
                           writeEvents(socket, std::move(events), delayMs, endStream);
                       });
}

void FakeUpstream::finishResponse(QTcpSocket *socket) {
    Connection *c = m_connections.value(socket);
    if (!c)
        return;
    if (c->chunked)
        socket->write("0\r\n\r\n");
    c->busy = false;
    c->chunked = false;
    if (!c->keepAlive) {
        socket->disconnectFromHost();
        return;
    }
    // A pipelined request may already be waiting.
    if (!c->buffer.isEmpty())
        QTimer::singleShot(0, socket, [this, socket]() { onReadyRead(socket); });
}

void FakeUpstream::resetConnection(QTcpSocket *socket) {
    // SO_LINGER 0 turns close into an RST: the client sees "connection reset", not a clean end.
    const struct linger lin { 1, 0 };
    ::setsockopt(int(socket->socketDescriptor()), SOL_SOCKET, SO_LINGER, &lin, sizeof lin);
    socket->abort();
}

} // namespace sw::demo
