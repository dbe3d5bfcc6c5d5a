#pragma once
// Watches one client connection's incoming bytes ahead of Qt's HTTP parser,
// which buffers a whole request before the gateway sees it and has no limits
// (Qt 6.4's QHttpServer). Enforces the listener's limits on the wire: header bytes
// (431), body bytes incl. chunked (413) before the request is dispatched, a
// header-read timeout (408), a body timeout, an idle timeout, and a parse error
// answered and closed instead of a connection left hanging; a request whose
// gateway key does not admit it is answered on its head (setHeadJudge), before any
// of its body is taken; a head with a control byte in a field is refused (400) and
// the connection closed. Pipelined requests are answered in request order: the next
// one is held back until the current answer is complete, and what the connection
// reads past the request it reads or answers is at most 16 KiB (the rest waits in
// the kernel), whatever the client queued behind it. A chunked body's framing is
// bounded too: past 64 KiB, at most a sixteenth of the body it carries.

#include "core/config/config.h"
#include "core/http/body_decoder.h"
#include "core/http/head_parser.h"
#include "core/server/request_guard.h"
#include "core/server/request_head.h"
#include "core/wire/api.h"

#include <QObject>
#include <QPointer>
#include <QTcpSocket>
#include <functional>
#include <memory>

class QTimer;

namespace sw::util {
class ByteBudget;
}

namespace sw::server {

class ConnectionGuard;

// The socket of a client connection (GuardedTcpServer makes them): it tells its guard when every
// signal connection of the socket is cut at once, which is how Qt 6.4's server gives up on a request
// it cannot parse. The guard then answers instead of leaving the client hanging, and needs no
// check queued after every read to notice.
class GuardedSocket final : public QTcpSocket {
public:
    using QTcpSocket::QTcpSocket;
    // QAbstractSocket's destructor aborts the connection and emits disconnected: by then this is
    // no longer a QTcpSocket, so the guard lets go of it first (socketGoing).
    ~GuardedSocket() override;
    void setGuard(ConnectionGuard *guard) { m_guard = guard; }

protected:
    void disconnectNotify(const QMetaMethod &signal) override;

private:
    QPointer<ConnectionGuard> m_guard;
};

class ConnectionGuard final : public QObject {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(ConnectionGuard)
public:
    // A child of `socket`. `httpServer` is the receiver of Qt's own readyRead
    // connection, cut when this guard refuses a request. `onGone` runs once in
    // the destructor (connection accounting).
    ConnectionGuard(QTcpSocket *socket, const config::LimitsConfig &limits, QObject *httpServer,
                    std::function<void()> onGone);
    // Read-head handover (HttpFront only). Qt 6.4's server reads a request head one byte at a
    // time through QIODevice::read, about 250 instructions a byte: the 600-byte head an SDK
    // sends cost more than the rest of the gateway's work on the request. The guard has parsed
    // the head already; with handover on, once a whole head is in the socket's buffer ahead of
    // anything Qt has read, the guard keeps its fields for takeHeaders() and leaves Qt only the
    // request line and the fields Qt's server acts on (Content-Length, Transfer-Encoding,
    // Connection but a plain HTTP/1.1 keep-alive, Expect, Upgrade). A head with a field Qt must
    // refuse (over 100 KiB) is left whole; one of over 100 fields is refused (431) before this.
    // A request target that is a plain path (letters, digits, '/', '-', '_'; no query, escape,
    // dot or empty segment, so that Qt's URL reading could not make it anything else) goes to Qt
    // as "/": Qt reads "/v1/chat/completions" a byte at a time too.
    void setHandsOverHeads(bool on) { m_handsOverHeads = on; }
    // The current request's header fields as sent (names and values trimmed), when the guard
    // took them from a head it shortened; each request's fields are taken once. `path` is set
    // when the guard also kept the request's path (a plain path, see above), else left alone.
    bool takeHeaders(http::HeaderList *out, QString *path);
    // The listener's budget of body bytes in flight: a request's body is taken from it as it arrives
    // and given back when its answer is complete; what the client has not read of an answer is held
    // in it from then until the kernel takes it, or the connection goes (a client that reads
    // nothing for limits.idleTimeoutMs is closed). A Content-Length that cannot fit is answered 503
    // on the head; a body that stops fitting as it arrives, at that point.
    void setBodyBudget(std::shared_ptr<util::ByteBudget> budget) { m_budget = std::move(budget); }
    // Asked on every request's head once the guard's own checks passed, before a byte of its body
    // is taken from the budget and before "100 Continue" (HttpFront::judgeHead: the gateway key).
    // A verdict with an answer is sent at once and the connection closed with the body unread;
    // otherwise its key lookup goes with the request (takeKey).
    using HeadJudge = std::function<HeadVerdict(const RequestHead &head)>;
    void setHeadJudge(HeadJudge judge) { m_judge = std::move(judge); }
    // Told the status of each refusal this guard answers (reject()): the listener counts them in /metrics.
    void setOnReject(std::function<void(int status)> onReject) { m_onReject = std::move(onReject); }
    // The current request's key lookup from its head (empty when none was made); taken once.
    KeyLookup takeKey() { return std::exchange(m_key, KeyLookup()); }
    // Test seam: handover off process-wide, to compare with Qt reading every head itself.
    static void setHeadHandoverEnabled(bool on);
    static quint64 headsHandedOver(); // since start, for tests
    // Since start, for tests: the bytes the guards copied of what Qt's parser had not read (to
    // look at a request's bytes first, or to hide a pipelined one), bounded per request.
    static quint64 unreadBytesCopied();
    ~ConnectionGuard() override;

    static ConnectionGuard *of(QTcpSocket *socket);

    // How the current request's connection ends (RFC 9112 9.3, 9.6, C.2.2): after its answer
    // when it said "Connection: close", or is HTTP/1.0 without "Connection: keep-alive". An
    // HTTP/1.0 client's streamed answer always ends with the connection (it knows no chunked
    // framing); HttpExchange::setConnectionEnd.
    bool closeAfterAnswer() const { return m_closeAfterAnswer; }
    bool http10() const { return m_http10; }

    // The HTTP server took a complete request: the connection is busy (no timers)
    // until responseDone().
    void requestDispatched();
    void responseDone();
    // Answers `rejection` at once, stops Qt's parser, drains what the client still
    // sends for a moment (so it reads the answer instead of a reset), then closes.
    void reject(const Rejection &rejection);
    // The chat route the current head names, as far as it was read (its request line): a limit's
    // refusal reaches that client in its own error shape.
    std::optional<wire::Api> routeOfHead() const;
    bool rejected() const { return m_phase == Phase::Rejected; }

private:
    enum class Phase { Head, Body, Complete, Rejected };
    void onReadyRead();
    void consume(QByteArrayView bytes);
    void onHeadComplete();
    void continueIfWaiting(); // "100 Continue" to a head that asked for it and came without its body
    void handOverHead(qsizetype bufferedHeadBytes);
    void consumeBody(QByteArrayView bytes);
    void checkParserAlive();
    void signalsCut();
    void socketGoing(); // the GuardedSocket's destructor: nothing of it may be used from now on
    friend class GuardedSocket;
    void parkPipelined();
    void startHangupCheck();
    void checkHangup(); // not read while an answer is pending: has the client closed its side?
    void stopHangupCheck();
    void startNextRequest();
    void readWaiting(); // after responseDone: the pipelined bytes that waited, to both parsers
    void rearm();
    void fitReadBuffer();        // the socket's read buffer: the current request, and little past it
    bool takeBody(qint64 bytes); // from the budget, for the request being read
    void refuseOverBudget();
    void giveBack(qint64 &bytes);
    void onTimeout();
    // Sends `response` (a whole answer saying "Connection: close") instead of Qt's server, then
    // drains and closes as reject() does.
    void answerAndClose(const QByteArray &response);
    void closeQuietly();
    // Qt's parser sees no further byte of this connection: the guard alone reads it from now on,
    // and drops what it reads (dropUnread).
    void cutOffQtParser();
    void dropUnread();

    QPointer<QTcpSocket> m_socket;
    QPointer<QObject> m_httpServer;
    config::LimitsConfig m_limits;
    std::function<void()> m_onGone;
    std::function<void(int status)> m_onReject;
    QTimer *m_timer = nullptr;
    QTimer *m_hangupCheck = nullptr; // while an answer is pending and the connection is not read
    QMetaObject::Connection m_readConnection;
    Phase m_phase = Phase::Head;
    bool m_busy = false;
    bool m_awaitingDrain = false; // an answer is done, but over kMaxUnsentBytes of it is not yet with the client
    bool m_everSpoke = false;     // any byte of this connection seen
    QByteArray m_head;            // the current request's head, up to the limit
    http::HeadParser m_headParser;
    http::BodyDecoder m_body;  // counts the current request's body; Qt's parser keeps the bytes
    qint64 m_requestBytes = 0; // of the current request on the wire once its head is whole (head, body so far)
    qint64 m_bodyLength = 0;   // its Content-Length (0 when chunked)
    bool m_parserCheckQueued = false;
    bool m_socketTellsCuts = false; // a GuardedSocket: signalsCut() comes when Qt's parser gives up
    bool m_parked = false;          // a read transaction of ours hides pipelined bytes from Qt
    bool m_handsOverHeads = false;
    bool m_closeAfterAnswer = false; // the current request's, set with its head
    bool m_http10 = false;
    bool m_continuePending = false;    // the current head asked for 100-continue (sent after this read)
    const char *m_readStart = nullptr; // onReadyRead's copy of the unread bytes, while consume() reads it
    qsizetype m_headShrunk = 0;        // what handOverHead took off the unread bytes in that consume()
    http::HeaderList m_headers;        // the current request's fields, when its head was handed over
    QString m_path;                    // and its path, when that was handed over too (else empty)
    bool m_haveHeaders = false;
    std::shared_ptr<util::ByteBudget> m_budget;
    HeadJudge m_judge;
    KeyLookup m_key;              // the current request's, from its head
    qint64 m_bodyTaken = 0;       // the request being read (or read and not yet dispatched)
    qint64 m_dispatchedTaken = 0; // the request being answered
    // The answers' bytes in the socket's write buffer that the client has not read: held in the
    // budget from the answer's end until the kernel takes them (holdUnsent, releaseWritten).
    qint64 m_unsentHeld = 0;
    void holdUnsent();
    void releaseWritten();
};

} // namespace sw::server
