#include "core/redis/redis_client.h"

#include <QSslConfiguration>
#include <QSslSocket>

#include <hiredis/hiredis.h>
#include <hiredis/read.h>

#include <algorithm>
#include <cstdlib>
#include <utility>
#include <vector>

namespace sw::redis {

namespace {
// hiredis's own reply objects, built through these: each counts what it adds to the reply being
// read (the reader's privdata, a ReplyBudget) and refuses past the bounds. hiredis then reports
// "out of memory", frees the unfinished reply and stops reading. hiredis 0.14 trims the bytes it
// parsed from its buffer while the reply tree grows, so the buffer's size alone bounds nothing.
const redisReplyObjectFunctions &defaultFunctions() {
    static const redisReplyObjectFunctions fn = []() {
        redisReader *r = redisReaderCreate();
        const redisReplyObjectFunctions copy = *r->fn;
        redisReaderFree(r);
        return copy;
    }();
    return fn;
}

bool take(const redisReadTask *task, qsizetype elements, qsizetype bytes) {
    auto *b = static_cast<ReplyBudget *>(task->privdata);
    if (!b)
        return true;
    // An array's announced size is checked before hiredis allocates its slots.
    if (elements > RedisClient::kMaxReplyElements - b->elements - 1 ||
        bytes > RedisClient::kMaxReplyBuffer - b->bytes) {
        b->exceeded = true;
        return false;
    }
    b->elements += 1;
    b->bytes += bytes;
    return true;
}

void *boundedString(const redisReadTask *task, char *str, size_t len) {
    if (len > size_t(RedisClient::kMaxReplyBuffer) || !take(task, 0, qsizetype(len)))
        return nullptr;
    return defaultFunctions().createString(task, str, len);
}

void *boundedArray(const redisReadTask *task, int elements) {
    if (!take(task, std::max(elements, 0), 0))
        return nullptr;
    return defaultFunctions().createArray(task, elements);
}

void *boundedInteger(const redisReadTask *task, long long value) {
    if (!take(task, 0, 0))
        return nullptr;
    return defaultFunctions().createInteger(task, value);
}

void *boundedNil(const redisReadTask *task) {
    if (!take(task, 0, 0))
        return nullptr;
    return defaultFunctions().createNil(task);
}

redisReplyObjectFunctions *boundedFunctions() {
    static redisReplyObjectFunctions fn = []() {
        redisReplyObjectFunctions f = defaultFunctions(); // any member a later hiredis adds stays its own
        f.createString = boundedString;
        f.createArray = boundedArray;
        f.createInteger = boundedInteger;
        f.createNil = boundedNil;
        return f;
    }();
    return &fn;
}

RedisValue convert(const redisReply *r) {
    RedisValue v;
    switch (r->type) {
    case REDIS_REPLY_STRING:
        v.type = RedisValue::Type::String;
        v.str = QByteArray(r->str, qsizetype(r->len));
        break;
    case REDIS_REPLY_STATUS:
        v.type = RedisValue::Type::Status;
        v.str = QByteArray(r->str, qsizetype(r->len));
        break;
    case REDIS_REPLY_ERROR:
        v.type = RedisValue::Type::Error;
        v.str = QByteArray(r->str, qsizetype(r->len));
        break;
    case REDIS_REPLY_INTEGER:
        v.type = RedisValue::Type::Integer;
        v.integer = r->integer;
        break;
    case REDIS_REPLY_ARRAY:
        v.type = RedisValue::Type::Array;
        v.elements.reserve(qsizetype(r->elements));
        for (size_t i = 0; i < r->elements; ++i)
            v.elements.append(convert(r->element[i]));
        break;
    default:
        break;
    }
    return v;
}
} // namespace

RedisValue RedisValue::error(const QByteArray &message) {
    RedisValue v;
    v.type = Type::Error;
    v.str = message;
    v.local = true;
    return v;
}

RedisClient::RedisClient(RedisEndpoint endpoint, util::Clock &clock, QObject *parent)
    : QObject(parent), m_endpoint(std::move(endpoint)), m_clock(clock) {
    // Checked when the configuration was read (marks.caFile): a file that holds none now fails the
    // handshake, which says so.
    if (m_endpoint.tls && !m_endpoint.caFile.isEmpty())
        m_caCertificates = QSslCertificate::fromPath(m_endpoint.caFile, QSsl::Pem);
}

RedisClient::~RedisClient() {
    // Nothing runs from here on: aborting a connected socket emits disconnected(), which would
    // take fail() through its callbacks and lost() while this object and its owner are being
    // destroyed. The callbacks of commands still waiting are dropped with their owner.
    m_open = false;
    m_failing = true;
    m_clock.cancel(std::exchange(m_watchdog, 0));
    m_clock.cancel(std::exchange(m_reconnect, 0));
    if (QSslSocket *s = std::exchange(m_socket, nullptr)) {
        s->disconnect(this);
        s->abort();
        delete s;
    }
    m_pending.clear();
    if (m_reader)
        redisReaderFree(std::exchange(m_reader, nullptr));
}

void RedisClient::open() {
    if (m_open)
        return;
    m_open = true;
    connectNow();
}

void RedisClient::close() {
    m_open = false;
    m_clock.cancel(std::exchange(m_reconnect, 0));
    fail(QStringLiteral("closed"));
}

void RedisClient::connectNow() {
    m_reconnect = 0;
    if (!m_open)
        return;
    if (m_socket) {
        m_socket->disconnect(this);
        m_socket->abort();
        m_socket->deleteLater();
    }
    if (m_reader)
        redisReaderFree(std::exchange(m_reader, nullptr));
    m_reader = redisReaderCreateWithFunctions(boundedFunctions());
    m_budget = {};
    m_reader->privdata = &m_budget;
    m_socket = new QSslSocket(this);
    m_socket->setSocketOption(QAbstractSocket::LowDelayOption, 1);
    m_failing = false;
    connect(m_socket, &QSslSocket::readyRead, this, &RedisClient::onReadyRead);
    connect(m_socket, &QSslSocket::disconnected, this, [this]() { fail(QStringLiteral("connection closed")); });
    connect(m_socket, &QSslSocket::errorOccurred, this, [this](QAbstractSocket::SocketError error) {
        // A certificate Redis's TLS presents and this replica does not trust is not Redis being
        // down: said as what it is, so the operator looks at marks.caFile, not at the network.
        const bool tls = error == QAbstractSocket::SslHandshakeFailedError ||
                         error == QAbstractSocket::SslInternalError ||
                         error == QAbstractSocket::SslInvalidUserDataError;
        fail(m_socket ? m_socket->errorString() : QStringLiteral("socket error"),
             tls ? Loss::TlsFailed : Loss::Unreachable);
    });
    if (m_endpoint.tls) {
        if (!m_caCertificates.isEmpty()) {
            QSslConfiguration tls = QSslConfiguration::defaultConfiguration();
            tls.addCaCertificates(m_caCertificates);
            m_socket->setSslConfiguration(tls);
        }
        connect(m_socket, &QSslSocket::encrypted, this, &RedisClient::onConnected);
        m_socket->connectToHostEncrypted(m_endpoint.host, m_endpoint.port);
    } else {
        connect(m_socket, &QSslSocket::connected, this, &RedisClient::onConnected);
        m_socket->connectToHost(m_endpoint.host, m_endpoint.port);
    }
    // A connect that hangs counts as a timeout too.
    m_pending.push_back({Callback(), m_clock.nowMs(), true});
    m_handshakeLeft = 1;
    armWatchdog();
}

void RedisClient::onConnected() {
    // The connect placeholder is answered; now the handshake commands.
    m_pending.pop_front();
    m_handshakeLeft = 0;
    auto expectOk = [this](const RedisValue &v) {
        if (!v.isError())
            return;
        // A wrong password (WRONGPASS; "ERR invalid password" before Redis 6) or none where one is
        // required (NOAUTH, to the PING): Redis is there and turns this replica away.
        const bool password = v.str.startsWith("WRONGPASS") || v.str.startsWith("NOAUTH") ||
                              v.str.startsWith("ERR invalid password") || v.str.startsWith("ERR invalid username");
        fail(QStringLiteral("handshake refused: %1").arg(QString::fromUtf8(v.str.left(200))),
             password ? Loss::PasswordRefused : Loss::Unreachable);
    };
    if (!m_endpoint.password.isEmpty()) {
        QList<QByteArray> auth{"AUTH"};
        if (!m_endpoint.username.isEmpty())
            auth.append(m_endpoint.username.toUtf8());
        auth.append(m_endpoint.password);
        send(auth, expectOk, true);
    }
    if (m_endpoint.db != 0)
        send({"SELECT", QByteArray::number(m_endpoint.db)}, expectOk, true);
    // A connect is the kernel's answer, not Redis's: a stopped server accepts connections and
    // answers nothing. Ready waits for a reply, so there is always at least one command.
    send({"PING"}, expectOk, true);
    for (const QByteArray &ch : std::as_const(m_channels))
        send({"SUBSCRIBE", ch}, expectOk, true);
}

void RedisClient::send(const QList<QByteArray> &argv, Callback done, bool handshake) {
    if (!m_socket || (!m_ready && !handshake) || m_pending.size() >= size_t(kMaxPending)) {
        if (done)
            done(RedisValue::error(m_ready ? "ERR too many commands in flight" : "ERR not connected to Redis"));
        return;
    }
    std::vector<const char *> args;
    std::vector<size_t> lens;
    for (const QByteArray &a : argv) {
        args.push_back(a.constData());
        lens.push_back(size_t(a.size()));
    }
    char *out = nullptr;
    const int n = redisFormatCommandArgv(&out, int(args.size()), args.data(), lens.data());
    if (n < 0 || !out) {
        if (done)
            done(RedisValue::error("ERR cannot format command"));
        return;
    }
    m_socket->write(out, n);
    std::free(out);
    m_pending.push_back({std::move(done), m_clock.nowMs(), handshake});
    if (handshake)
        ++m_handshakeLeft;
}

void RedisClient::command(const QList<QByteArray> &argv, Callback done) {
    send(argv, std::move(done), false);
}

void RedisClient::subscribe(const QByteArray &channel) {
    if (m_channels.contains(channel))
        return;
    m_channels.append(channel);
    if (m_ready)
        send({"SUBSCRIBE", channel}, {}, true);
}

void RedisClient::onReadyRead() {
    const QByteArray bytes = m_socket->readAll();
    if (redisReaderFeed(m_reader, bytes.constData(), size_t(bytes.size())) != REDIS_OK)
        return fail(QStringLiteral("protocol error"));
    if (m_reader->len > size_t(kMaxReplyBuffer))
        return fail(QStringLiteral("reply over %1 bytes").arg(kMaxReplyBuffer));
    for (;;) {
        void *raw = nullptr;
        if (redisReaderGetReply(m_reader, &raw) != REDIS_OK) {
            if (m_budget.exceeded)
                return fail(QStringLiteral("protocol error: a reply over %1 elements or %2 bytes")
                                .arg(kMaxReplyElements)
                                .arg(kMaxReplyBuffer));
            return fail(QStringLiteral("protocol error: %1").arg(QString::fromLatin1(m_reader->errstr)));
        }
        if (!raw) {
            // What is left unparsed is the value still arriving (hiredis trims what it parsed).
            if (m_reader->len - m_reader->pos > size_t(kMaxValueBytes))
                return fail(QStringLiteral("protocol error: a value over %1 bytes").arg(kMaxValueBytes));
            return;
        }
        m_budget = {}; // the next reply starts
        RedisValue v = convert(static_cast<redisReply *>(raw));
        freeReplyObject(raw);
        onReply(std::move(v));
        if (!m_socket)
            return; // a callback closed us
    }
}

void RedisClient::onReply(RedisValue reply) {
    // Pushed messages of a subscribed connection answer no command.
    if (reply.type == RedisValue::Type::Array && reply.elements.size() == 3 && reply.elements[0].str == "message") {
        Q_EMIT message(reply.elements[1].str, reply.elements[2].str);
        return;
    }
    if (m_pending.empty())
        return fail(QStringLiteral("unexpected reply"));
    Pending p = std::move(m_pending.front());
    m_pending.pop_front();
    if (p.handshake && --m_handshakeLeft == 0 && !m_ready && !m_failing) {
        if (p.done)
            p.done(reply);
        if (m_failing || !m_socket)
            return;
        m_ready = true;
        m_backoffMs = 250;
        Q_EMIT ready();
        return;
    }
    if (p.done)
        p.done(reply);
}

void RedisClient::armWatchdog() {
    if (m_watchdog == 0)
        m_watchdog = m_clock.schedule(250, [this]() {
            m_watchdog = 0;
            checkTimeouts();
        });
}

void RedisClient::checkTimeouts() {
    if (!m_socket)
        return;
    if (m_pending.empty() || m_clock.nowMs() - m_pending.front().sentAtMs <= m_commandTimeoutMs)
        return armWatchdog();
    // Connected and silent is not the same as nothing there (connect refused or never completed).
    const bool connected = m_socket->state() == QAbstractSocket::ConnectedState;
    fail(QStringLiteral("no answer from Redis within %1 ms").arg(m_commandTimeoutMs),
         connected ? Loss::NotAnswering : Loss::Unreachable);
}

void RedisClient::fail(const QString &why, Loss loss) {
    if (m_failing)
        return;
    m_failing = true;
    const bool wasReady = m_ready;
    m_ready = false;
    m_clock.cancel(std::exchange(m_watchdog, 0));
    if (m_socket) {
        QSslSocket *s = m_socket;
        m_socket = nullptr;
        s->disconnect(this);
        s->abort();
        s->deleteLater();
    }
    auto pending = std::move(m_pending);
    m_pending.clear();
    m_handshakeLeft = 0;
    for (auto &p : pending)
        if (p.done)
            p.done(RedisValue::error("ERR connection lost: " + why.toUtf8()));
    if (wasReady || m_open)
        Q_EMIT lost(why, loss);
    if (m_open && m_reconnect == 0) {
        m_reconnect = m_clock.schedule(m_backoffMs, [this]() { connectNow(); });
        m_backoffMs = std::min(m_backoffMs * 2, 5000);
    }
}

} // namespace sw::redis
