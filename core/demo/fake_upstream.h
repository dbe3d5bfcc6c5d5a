#pragma once
// A scriptable HTTP/1.1 upstream on loopback, speaking the four upstream APIs:
// used by tests, benchmarks and --demo. It answers with the demo brain's reply
// in the API of the request path, or with a raw SSE body, and can be told to
// misbehave (refuse, reset, error status, stall, in-band error) globally or for
// the next requests one at a time.

#include "core/http/headers.h"
#include "core/wire/api.h"

#include <QByteArray>
#include <QHash>
#include <QList>
#include <QObject>
#include <QString>
#include <functional>
#include <optional>

class QTcpServer;
class QTcpSocket;

namespace sw::demo {

// The upstream API a request path belongs to (it may carry a query); nullopt for none.
std::optional<wire::Api> demoApiForPath(QByteArrayView path);

struct RecordedRequest {
    QByteArray method;
    QByteArray path; // with query, as sent
    http::HeaderList headers;
    QByteArray body;
    QByteArray header(QByteArrayView name) const { return http::headerValue(headers, name); }
};

struct Fault {
    enum Kind {
        None,                     // normal answer (paced by chunkDelayMs)
        Refuse,                   // listening socket closed: connections are refused (global only)
        Reset,                    // request read, then the connection is reset (RST)
        Status,                   // `status` with optional Retry-After and the API's JSON error body
        StallBeforeHeaders,       // request read, nothing ever answered
        StallAfter200,            // 200 + SSE headers, then nothing
        InBandErrorBeforeContent, // 200, then the API's stream error event before any content
        InBandErrorAfterContent,  // 200, content up to the first delta, then the stream error event
        ResetAfterContent,        // 200, content up to the first delta, then the connection is reset (RST)
    };
    Kind kind = None;
    int status = 0;
    QByteArray retryAfter; // Retry-After header value, sent when non-empty
    QByteArray body;       // Status: body to send instead of the API-shaped default; ResetAfterContent: the
                           // SSE bytes sent before the reset, instead of the answer up to its first delta
    QByteArray location;   // Status: Location header, sent when non-empty (a 3xx)
    int chunkDelayMs = 0;  // pause between SSE events (and before the first one)
    // Status: further headers to send (a provider's rate-limit headers).
    QList<QPair<QByteArray, QByteArray>> headers;
};

class FakeUpstream final : public QObject {
    Q_OBJECT
public:
    explicit FakeUpstream(QObject *parent = nullptr);
    ~FakeUpstream() override;
    Q_DISABLE_COPY_MOVE(FakeUpstream)

    bool listen(quint16 port = 0); // 127.0.0.1; port 0 picks a free one
    quint16 port() const { return m_port; }
    QString baseUrl() const; // http://127.0.0.1:<port>

    // Global behaviour for every request with no queued one-shot fault.
    // Refuse stops listening; any other kind re-listens on the same port.
    void setFault(const Fault &fault);
    void clearFault() { setFault(Fault{}); }
    // One-shot faults, consumed one per request in order. Refuse is global only
    // (there is no request to consume it): pushing one acts as setFault(Refuse).
    void pushFault(const Fault &fault);
    int pendingFaults() const { return int(m_queue.size()); }

    // A provider's own check of what it is sent: a fault `judge` returns for a request (a 400 with
    // the provider's words) answers it in place of the queued or global one, which stays.
    using Judge = std::function<std::optional<Fault>(const RecordedRequest &request)>;
    void setJudge(Judge judge) { m_judge = std::move(judge); }

    // Raw mode: every normal answer is this SSE body (200, text/event-stream),
    // sent event by event (split at blank lines). Empty = demo brain mode.
    void setRawReply(const QByteArray &sseBody) { m_rawReply = sseBody; }
    void setLabel(const QString &label) { m_label = label; } // the demo brain's name for itself

    QList<RecordedRequest> requests() const { return m_requests; }
    void clearRequests() { m_requests.clear(); }
    int openConnections() const { return int(m_connections.size()); }
    int acceptedConnections() const { return m_accepted; }

Q_SIGNALS:
    void requestReceived(const sw::demo::RecordedRequest &request);
    void connectionClosed(); // the client (or we) closed one connection

private:
    struct Connection;
    void onNewConnection();
    void onReadyRead(QTcpSocket *socket);
    void onDisconnected(QTcpSocket *socket);
    bool parseRequest(Connection &c); // true when one complete request was taken from the buffer
    void respond(QTcpSocket *socket, const RecordedRequest &request, const Fault &fault);
    void sendNormal(QTcpSocket *socket, const RecordedRequest &request, const Fault &fault);
    void writeEvents(QTcpSocket *socket, QList<QByteArray> events, int delayMs, bool endStream);
    void finishResponse(QTcpSocket *socket);
    void resetConnection(QTcpSocket *socket);
    void applyListening();

    QTcpServer *m_server = nullptr;
    quint16 m_port = 0;
    Fault m_fault;
    QList<Fault> m_queue;
    Judge m_judge;
    QByteArray m_rawReply;
    QString m_label = QStringLiteral("demo");
    QList<RecordedRequest> m_requests;
    QHash<QTcpSocket *, Connection *> m_connections;
    int m_accepted = 0;
};

} // namespace sw::demo
