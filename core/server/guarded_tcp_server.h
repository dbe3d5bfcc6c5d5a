#pragma once
// The listening socket of the HTTP front: every accepted connection gets a
// ConnectionGuard before Qt's HTTP server sees it, and connections over
// limits.maxConnections are answered 503 and closed. Accepting is its own (not
// Qt's loop), so that a process out of descriptors answers 503 instead of
// spinning on a listener that stays readable.

#include "core/config/config.h"

#include <QElapsedTimer>
#include <QPointer>
#include <QTcpServer>
#include <memory>

class QSocketNotifier;

namespace sw::util {
class ByteBudget;
}

namespace sw::server {

class GuardedTcpServer final : public QTcpServer {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(GuardedTcpServer)
public:
    // `httpServer` is the QAbstractHttpServer this server is bound to. Request bodies are taken from
    // `bytesInFlight` (limits.maxBodyBytesInFlight), which the engine shares with the upstream layer.
    GuardedTcpServer(const config::LimitsConfig &limits, std::shared_ptr<util::ByteBudget> bytesInFlight,
                     QObject *httpServer, QObject *parent = nullptr);
    ~GuardedTcpServer() override;
    // QTcpServer::listen, then the accepting is taken over (QTcpServer's is not virtual: called on
    // a GuardedTcpServer, this one runs).
    bool listen(const QHostAddress &address = QHostAddress::Any, quint16 port = 0);
    // New connections use the new limits; open ones keep theirs.
    void setLimits(const config::LimitsConfig &limits);
    int openConnections() const { return m_open; }
    static constexpr int kMinListenBacklog = 1024;
    // Out of descriptors, a connection is accepted on the spare one, answered 503 and closed; a
    // failure with no descriptor to spare (ENOBUFS, ENOMEM) rests the listener this long.
    static constexpr int kAcceptRestMs = 100;
    static constexpr qint64 kShedLogEveryMs = 10'000;

Q_SIGNALS:
    // Connections answered 503 because the process is out of descriptors (EMFILE, ENFILE): the
    // first one, then at most once each kShedLogEveryMs, with how many since it was last said.
    void descriptorsExhausted(int connectionsShed);
    // Connections answered 503 because limits.maxConnections are open: the first one, then at most
    // once each kShedLogEveryMs, with how many since it was last said (a burst's rest included,
    // said when its window ends).
    void connectionLimitReached(int connectionsRefused, int maxConnections);
    // Each connection or request the listener answers with its own error before the HTTP server
    // takes it (the two 503s above; a connection guard's 400, 408, 413, 431 or 503), by status:
    // without it an operator saw nothing of clients turned away (probe AC4 F4).
    void refused(int status);

protected:
    void incomingConnection(qintptr handle) override;
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    void acceptPending();
    bool shedOneConnection(); // false when no connection was waiting
    void restAccepting();
    void openSpare();
    void sayConnectionLimit();

    config::LimitsConfig m_limits;
    QObject *m_httpServer;
    int m_open = 0;
    std::shared_ptr<util::ByteBudget> m_bytesInFlight;
    QPointer<QSocketNotifier> m_acceptNotifier; // Qt's, for the listener; its activations are taken here
    bool m_resting = false;
    int m_spare = -1; // a descriptor held back for the moment the process has none left
    int m_shedUnsaid = 0;
    QElapsedTimer m_shedSaid;
    int m_overLimitUnsaid = 0;
    QElapsedTimer m_overLimitSaid;
    bool m_overLimitSayPending = false; // a line for the refusals held back is due when the window ends
};

} // namespace sw::server
