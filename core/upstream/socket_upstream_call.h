#pragma once
// One HTTP/1.1 exchange made by SocketTransport.

#include "upstream/http1_response_parser.h"
#include "upstream/transport.h"

#include <QAbstractSocket>
#include <QPointer>

namespace sw::upstream {

class SocketTransport;

class SocketUpstreamCall final : public UpstreamCall {
    Q_OBJECT
public:
    SocketUpstreamCall(SocketTransport *transport, const HttpRequest &request, QObject *parent);
    ~SocketUpstreamCall() override;
    Q_DISABLE_COPY_MOVE(SocketUpstreamCall)

    void abort() override;

    static TransportError errorFor(QAbstractSocket::SocketError error);

private:
    void begin(bool allowReuse);
    void attach(QAbstractSocket *socket);
    void sendRequest();
    void onReadyRead();
    void onSocketError(QAbstractSocket::SocketError error);
    void onDisconnected();
    void consume(QByteArrayView bytes);
    void connectionLost(TransportError error, const QString &message);
    void complete(const TransportResult &result, bool reusable);
    void releaseSocket(bool reusable);

    QPointer<SocketTransport> m_transport;
    HttpRequest m_request;
    QString m_hostKey;
    QAbstractSocket *m_socket = nullptr;
    Http1ResponseParser m_parser;
    bool m_reused = false;
    bool m_gotBytes = false;
    bool m_started = false;
    bool m_done = false;
    bool m_sent = false;
};

} // namespace sw::upstream
