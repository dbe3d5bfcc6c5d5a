#pragma once
// One asynchronous connection to a Redis server on the calling thread's event
// loop. The RESP protocol (framing commands, parsing replies) is hiredis's
// reader and formatter; the socket is Qt's, so TLS (rediss://) and the event
// loop come from Qt and no call ever blocks the thread.
//
// Nothing is queued while the connection is down: a command then fails at
// once, so a dead Redis costs a caller nothing but the error.
//
// The connection is ready only once Redis has answered its handshake (AUTH and
// SELECT when configured, then always a PING): a server that accepts the TCP
// connection and never answers (a stopped process) is never ready.

#include "core/redis/redis_endpoint.h"
#include "core/util/clock.h"

#include <QList>
#include <QObject>
#include <QSslCertificate>
#include <deque>
#include <functional>

class QSslSocket;
struct redisReader;

namespace sw::redis {

struct RedisValue {
    enum class Type { Nil, String, Status, Error, Integer, Array };
    Type type = Type::Nil;
    QByteArray str; // String, Status, Error
    qint64 integer = 0;
    QList<RedisValue> elements;

    // An Error made here (not connected, connection lost), not an answer of Redis's.
    bool local = false;

    bool isError() const { return type == Type::Error; }
    // Redis answered, with an error (READONLY, OOM, NOAUTH, a script's error...).
    bool isServerError() const { return type == Type::Error && !local; }
    static RedisValue error(const QByteArray &message); // a local error
};

// What the reply being read holds so far: its elements at any depth and its string bytes.
struct ReplyBudget {
    qsizetype elements = 0;
    qsizetype bytes = 0;
    bool exceeded = false;
};

class RedisClient final : public QObject {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(RedisClient)
public:
    using Callback = std::function<void(const RedisValue &)>;
    static constexpr int kMaxPending = 4096; // commands awaiting a reply
    // What one reply may make us hold, whoever the peer: the unparsed bytes buffered, the string
    // bytes of one reply, and its elements (arrays, strings, integers and nils, at any depth; an
    // array's announced size counts before its elements arrive, so no count is trusted for an
    // allocation). Past either bound the connection is dropped as a protocol error and reconnected.
    static constexpr qsizetype kMaxReplyBuffer = 64 << 20;
    static constexpr qsizetype kMaxReplyElements = 1 << 18;
    // And one value of a reply (a string, or a line), while it arrives: a mark's JSON is under 2 KB,
    // and a replica's message with megabytes in its fields is still read, then cut down
    // (RedisMarkSync). hiredis holds a string until its last byte and copies its buffer as it
    // grows, so a 60 MB string cost seconds of the engine thread's time before any bound above
    // was reached (probe R3 F1).
    static constexpr qsizetype kMaxValueBytes = 4 << 20;

    // Why a connection went down: nothing there (refused, reset, no route, connect timed out),
    // a connection that stays open and leaves commands unanswered, a handshake Redis refused
    // for want of the right password (WRONGPASS, NOAUTH, "invalid password"), or a TLS handshake
    // that failed (a certificate not trusted or for another name: Redis answered, TLS refused it).
    enum class Loss { Unreachable, NotAnswering, PasswordRefused, TlsFailed };

    // `clock` times commands and reconnects.
    explicit RedisClient(RedisEndpoint endpoint, util::Clock &clock = util::systemClock(), QObject *parent = nullptr);
    ~RedisClient() override;

    // Connects, and reconnects after any loss until close(): 250 ms after the first, doubling to
    // 5 s, back to 250 ms only once Redis has answered the handshake.
    void open();
    void close();
    bool isReady() const { return m_ready; }
    const RedisEndpoint &endpoint() const { return m_endpoint; }
    // A command unanswered for this long drops the connection (default 2000 ms).
    void setCommandTimeoutMs(int ms) { m_commandTimeoutMs = ms; }

    // Sends one command. `done` gets the reply, or an Error value when the
    // connection is not ready or drops before the reply.
    void command(const QList<QByteArray> &argv, Callback done = {});
    // Subscribes this connection to a channel (now if ready, and after every
    // reconnect). A subscribed connection takes no other command.
    void subscribe(const QByteArray &channel);

Q_SIGNALS:
    void ready();
    void lost(const QString &why, sw::redis::RedisClient::Loss loss);
    void message(const QByteArray &channel, const QByteArray &payload);

private:
    struct Pending {
        Callback done;
        qint64 sentAtMs = 0;
        bool handshake = false;
    };
    void connectNow();
    void onConnected();
    void onReadyRead();
    void onReply(RedisValue reply);
    void fail(const QString &why, Loss loss = Loss::Unreachable);
    void send(const QList<QByteArray> &argv, Callback done, bool handshake);
    void checkTimeouts();
    void armWatchdog();

    RedisEndpoint m_endpoint;
    util::Clock &m_clock;
    QSslSocket *m_socket = nullptr;
    redisReader *m_reader = nullptr;
    std::deque<Pending> m_pending;
    QList<QByteArray> m_channels;
    util::Clock::TimerId m_reconnect = 0; // 0: none scheduled
    util::Clock::TimerId m_watchdog = 0;
    int m_backoffMs = 250;
    int m_commandTimeoutMs = 2000;
    int m_handshakeLeft = 0;
    bool m_open = false;
    bool m_ready = false;
    bool m_failing = false;
    ReplyBudget m_budget;                    // the reply being read
    QList<QSslCertificate> m_caCertificates; // the endpoint's caFile, read once
};

} // namespace sw::redis
