#pragma once
// One HTTP/1.1 exchange made by SocketTransport.

#include "core/upstream/http1_response_parser.h"
#include "core/upstream/proxy_settings.h"
#include "core/upstream/transport.h"
#include "core/util/clock.h"

#include <QAbstractSocket>
#include <QPointer>
#include <optional>

namespace sw::upstream {

class SocketLink;
class SocketTransport;

class SocketUpstreamCall final : public UpstreamCall {
    Q_OBJECT
public:
    // While paused, the socket buffers at most this much; the kernel's buffers and
    // then TCP flow control hold the rest at the upstream.
    // The most one read takes from the connection, paused or not. Unbounded, one read took what
    // the kernel had buffered (tens of MiB on loopback) before the caller could pause for a slow
    // client or drop pings; bounded, the next piece waits in the kernel, and the caller hears
    // each piece and may pause before the next is read.
    static constexpr qint64 kReadBuffer = 64 * 1024;
    // A request body up to this size is copied behind the head and sent in the same write; a larger one
    // is queued by reference.
    static constexpr qsizetype kInlineBodyBytes = 256 * 1024;
    // A larger body to a TLS upstream is handed to the socket this much at a time, the next piece
    // when what is queued (plain and encrypted) is below it: Qt's TLS socket copies what it is given
    // and queues all of its ciphertext, two more copies of a body of up to limits.maxBodyBytes.
    static constexpr qsizetype kTlsBodySlice = 64 * 1024;
    // A reused keep-alive connection that dies without a response byte is retried on a fresh one only
    // while the request could not have been read: it was still being written, or it died within this
    // long of the write. A server that had timed the idle connection out answers the request's first
    // segment with a reset one round trip later (under 300 ms between continents); a connection that
    // dies later was open and read the request, and may have processed it: re-sending it could bill
    // it twice, so that is a transport failure like on a fresh connection.
    static constexpr qint64 kStaleRetryMs = 400;
    // What a plain connection that failed while the request was being written still holds in the kernel
    // (an early answer, e.g. 413 to a body the server did not read, then a reset) is read up to this much.
    static constexpr qint64 kLeftoverBytes = 256 * 1024;

    SocketUpstreamCall(SocketTransport *transport, const HttpRequest &request, QObject *parent);
    ~SocketUpstreamCall() override;
    Q_DISABLE_COPY_MOVE(SocketUpstreamCall)

    void abort() override;
    void setReadPaused(bool paused) override;
    bool hasUnreadBytes() const override;

    static TransportError errorFor(QAbstractSocket::SocketError error);
    static TransportError errorFor(Http1ResponseParser::Failure failure);

    // The process can make no socket now (EMFILE, ENFILE): a socket of its own, made and closed,
    // tells, where Qt's error does not always say it. Also read by the transport's AddressRace.
    static bool outOfDescriptors();

private:
    friend class SocketLink; // delivers the connection's signals
    void begin(bool allowReuse);
    void attach(SocketLink *link);
    void sendRequest();
    void sendBodySlices(); // TLS: the next pieces of a large body, while little is queued
    bool bodySent() const { return m_bodyOffset >= m_request.body.size(); }
    // The kernel holds bytes of the upstream's that Qt has not read yet.
    bool bytesWaiting() const;
    void onReadyRead();
    // A read notification of a plain connection, before Qt's socket sees it: reads the connection
    // with one system call and returns true, or returns false to leave it to Qt (paused, bytes in
    // Qt's buffer, the connection's end or an error, which Qt reads and reports as always).
    bool readDirect();
    // One recv() of at most kReadBuffer from `fd`, consumed: the count, 0 at the end, or -1 with errno.
    ssize_t receive(int fd);
    void onSocketError(QAbstractSocket::SocketError error);
    void onDisconnected();
    void resumeReading();
    void consume(QByteArrayView bytes);
    void connectionLost(TransportError error, const QString &message);
    void complete(const TransportResult &result, bool reusable);
    void releaseSocket(bool reusable);
    bool requestUnwritten() const; // some of the request is still queued on our side
    // A reused connection that failed while the request was still being written, or at once after
    // (kStaleRetryMs): the server dropped it idle; the request goes again on a fresh connection.
    bool withinStaleWindow() const;
    void failedToOpen();
    void connectFailed(TransportError error, const QString &message); // every address of a host name failed
    void failForWantOfDescriptors();
    void keepSpareDescriptor();
    void closeSpareDescriptor();
    void readLeftover(); // what the kernel still holds, through the spare descriptor
    void cancelConnectTimer();

    QPointer<SocketTransport> m_transport;
    HttpRequest m_request;
    UrlParts m_urlParts; // the request URL's target, Host value and host key
    QString m_poolKey;   // the host key, the trust that verifies it when a provider has its own CA, and the proxy
    std::optional<ProxyServer> m_proxy; // the forward proxy the request goes through (SocketTransport::proxyFor)
    bool m_absoluteForm = false;        // an http:// request to a proxy: `POST http://host:port/path`

    QAbstractSocket *m_socket = nullptr;
    SocketLink *m_link = nullptr; // m_socket's link, held by this call
    Http1ResponseParser m_parser;
    bool m_reused = false;
    bool m_gotBytes = false;
    bool m_started = false;
    bool m_done = false;
    bool m_sent = false;
    qsizetype m_bodyOffset = 0; // how much of the body has been handed to the socket
    bool m_slicing = false;     // a TLS body in slices: the socket's encryptedBytesWritten is connected to this call
    bool m_sliceResumeQueued = false; // slices held while the upstream's bytes wait to be read (sendBodySlices)
    bool m_paused = false;
    // Noticed while paused, reported on resume after the bytes that came before it.
    bool m_closedWhilePaused = false;
    // Paused from a responseStarted slot: the body bytes (and the end) read with the head wait here.
    QByteArray m_heldBody;
    bool m_heldDone = false;
    std::optional<QAbstractSocket::SocketError> m_errorWhilePaused;
    // A duplicate of a plain connection's descriptor, held while Qt has request bytes to write: a write
    // that fails (the peer answered early and reset) makes Qt close its descriptor before it reports
    // the error, and the answer waiting in the kernel would go with it.
    int m_spareFd = -1;
    util::Clock *m_clock = nullptr;
    util::Clock::TimerId m_connectTimer = 0;
    qint64 m_sentAtMs = 0;
};

} // namespace sw::upstream
