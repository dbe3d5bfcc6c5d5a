#pragma once
// The one adapter over QHttpServerResponder: a response that is either written
// whole (Content-Length) or streamed with chunked framing. Writing after the
// client left is a no-op; clientGone() tells the owner at once. Bytes go to the
// kernel directly while it takes them (http::writeThrough); chunks written inside
// an http::WriteBatch leave together when the batch ends.

#include "core/http/headers.h"
#include "core/http/socket_write.h"

#include <QObject>
#include <QPointer>
#include <QTcpSocket>
#include <memory>

class QHttpServerResponder;

namespace sw::server {

class HttpExchange final : public QObject, private http::BatchedWriter {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(HttpExchange)
public:
    HttpExchange(QHttpServerResponder &&responder, QObject *parent = nullptr);
    ~HttpExchange() override;

    bool isOpen() const;
    // Before the answer: end the connection once the answer is written (it says "Connection:
    // close"). For an HTTP/1.0 client a whole answer that keeps the connection says
    // "Connection: keep-alive", and a streamed one has no chunked framing: the close ends it.
    // Set from the request's head by HttpFront.
    void setConnectionEnd(bool closeAfterAnswer, bool http10) {
        m_closeAfter = closeAfterAnswer;
        m_http10 = http10;
    }
    // Before the answer: end the connection once it is written, whatever the request said (the
    // gateway is shutting down).
    void endConnectionAfterAnswer() { m_closeAfter = true; }
    // A HEAD request: an answer's header block says what a GET's would, and no body follows.
    void setHeadRequest(bool head) { m_head = head; }
    bool headersSent() const { return m_headersSent; }
    bool finished() const { return m_finished; }

    void respond(int status, const http::HeaderList &headers, const QByteArray &body);
    void beginStream(int status, const http::HeaderList &headers);
    void write(const QByteArray &bytes); // one chunk; empty is ignored
    void endStream();
    // What an open WriteBatch holds of this exchange leaves now; what is written after it waits
    // for the batch's end again.
    void sendNow() { flushBatch(); }
    // Closes the connection without a proper end (used for a broken stream).
    void abortConnection();
    // Bytes written that wait in Qt's buffer for the kernel to take them (backpressure).
    qint64 pendingBytes() const;
    // A whole answer as respond() writes it, with "Connection: close": for a request answered
    // before Qt's server has it (ConnectionGuard, on the head). Without the body for HEAD.
    static QByteArray closingResponse(int status, const http::HeaderList &headers, const QByteArray &body,
                                      bool headRequest);

Q_SIGNALS:
    void clientGone();
    // The client's socket took bytes out of Qt's buffer; pendingBytes() tells how many are still
    // queued. Bytes the kernel took at once never were in it: only a queue that built up drains.
    void drained();

private:
    // The status line, the header fields (made safe), then `framing` and the blank line; `extra` bytes are reserved
    // for a body.
    // With `ownConnection` (`framing` says how the connection ends), a caller's Connection field is left out.
    static QByteArray headBlock(int status, const http::HeaderList &headers, QByteArrayView framing, bool ownConnection,
                                qsizetype extra = 0);
    void send(const QByteArray &bytes, bool flushQueued = false);
    void flushBatch() override;
    // The answer is written: with Connection: close, the connection ends once its bytes are out.
    void closeIfAnswered();

    std::unique_ptr<QHttpServerResponder> m_responder;
    QPointer<QTcpSocket> m_socket;
    bool m_headersSent = false;
    bool m_finished = false;
    bool m_gone = false;
    bool m_closeAfter = false;
    bool m_http10 = false;
    bool m_head = false;
    QByteArray m_batched; // chunks held while a WriteBatch is open
};

} // namespace sw::server
