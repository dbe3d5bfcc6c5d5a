#pragma once
// Shares a process's provider-down marks with the other replicas through
// Redis. The local table stays the one the resolver reads, so a request never
// waits on the network; this class keeps it in step:
//
// - A local mark goes to Redis, where one Lua script applies the ladder
//   atomically (strikes, 20/40/80/160/300 s, never below Retry-After, one
//   strike per burst, expiry never shortened) and publishes the result; the
//   authoritative answer replaces the local guess. A failure whose attempt
//   started before this replica heard of the mark's last strike adds none (one
//   replica knowing the mark would not have tried), however slow Redis is.
// - Marks and clears published by other replicas are applied locally.
// - A clear on any replica deletes the marks in Redis and is published.
// - Redis down, not answering, or refusing writes (an error reply to any of this
//   class's commands: READONLY on a replica after a failover, OOM at maxmemory
//   with noeviction, MISCONF...): marks stay local (one log line per outage,
//   storeUp() false). The store is shared again only once Redis has answered
//   on both connections (commands and subscription) and taken a write (the
//   heartbeat, tried every heartbeatMs while writes are refused); then this
//   replica sends the clears it made meanwhile, pushes the marks it set
//   meanwhile, and takes Redis's state: every mark Redis holds, and none it
//   does not (a clear published while this replica was not subscribed is not
//   lost). A clear leaves a tombstone in Redis: between a clear and a mark made
//   on different replicas during an outage, the later one wins.
// - A mark read from Redis is checked as a local one is made: its times within
//   the ladder's cap, its texts cut to the local bounds, and (Options::accepts)
//   only for a tenant, provider and model this gateway's configuration has.
// - Redis losing its keys with both connections up (FLUSHALL, FLUSHDB) restarts its sequence: a
//   set's number at or below one read before, or the heartbeat's sequence or epoch key, says so,
//   and the replica takes Redis's state again as after a reconnect.

#include "core/config/config.h"
#include "core/failover/provider_down_marks.h"
#include "core/redis/redis_client.h"
#include "core/util/clock.h"

#include <QHash>
#include <QJsonObject>
#include <QObject>
#include <QSet>
#include <QTimer>
#include <functional>

namespace sw::redis {

class RedisMarkSync final : public QObject, public failover::MarkObserver {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(RedisMarkSync)
public:
    struct Options {
        RedisEndpoint endpoint;
        QString prefix = QStringLiteral("switchman");
        QString replicaId;                 // unique per process
        std::function<qint64()> wallClock; // epoch ms; default: the system clock
        std::function<void(const QString &level, const QString &message, const QJsonObject &fields)> log;
        int heartbeatMs = 2000;
        // Times Redis's answers (a command unanswered for 2 s drops the connection) and the
        // reconnects; default: the system clock. Marks and their ladder read the clock given to
        // the constructor.
        util::Clock *connectionClock = nullptr;
        // Whether a mark read from Redis concerns this gateway (unset: every mark does). The engine
        // keeps those of its configuration (configures()): the number of marks another replica, or
        // anything that can publish on the channel, makes this one hold is bounded by its own
        // configuration.
        std::function<bool(const failover::MarkInfo &)> accepts;
    };
    // True when `config` could have set `m` itself: its tenant (or the one tenant-less callers
    // get), a provider with the mark's base URL, and for a model's mark a model the config lists
    // (a provider/id selector of an unlisted model is a single candidate, which ignores marks).
    static bool configures(const config::Config &config, const failover::MarkInfo &m);
    // True when `after` configures a mark `before` does not: a tenant, provider (or its base URL)
    // or model it adds.
    static bool configuresMore(const config::Config &before, const config::Config &after);
    // The channel marks and clears are published on: "<prefix>:marks" in database 0,
    // "<prefix>:marks:<db>" in the others (pub/sub ignores SELECT).
    static QByteArray channelFor(const QString &prefix, int db);
    // The most marks one pull reads (a reply stays far below RedisClient's bounds).
    static constexpr int kMaxPulledMarks = 20000;
    // Clears made while Redis is away and sent when it returns: bounded as the marks pulled are.
    static constexpr int kMaxClearsKept = kMaxPulledMarks;
    // The longest replica id kept from another replica's mark, its last error (as a local mark
    // keeps it), its strikes, and the highest sequence number taken (2^53: exact as a JSON number).
    static constexpr int kMaxReplicaIdChars = 200;
    static constexpr int kMaxLastErrorChars = 500;
    static constexpr qint64 kMaxStrikes = 1000;
    static constexpr double kMaxSequence = 9007199254740992.0;

    RedisMarkSync(failover::ProviderDownMarks &marks, util::Clock &clock, Options options, QObject *parent = nullptr);
    ~RedisMarkSync() override;

    void start();
    // After a reload: the marks the engine dropped (no longer configured) are forgotten, so that
    // Redis's copy is taken again if they come back; pullAgain() takes the marks of what the
    // configuration added (ignored when they came: see Options::accepts).
    void forget(const QList<failover::MarkInfo> &dropped);
    void pullAgain();
    bool storeUp() const { return m_up; }
    int replicasSeen() const { return m_replicas; }
    QString replicaId() const { return m_options.replicaId; }
    QString endpointDisplay() const { return m_options.endpoint.display(); }
    // "shared via redis://host:port/0, 2 replicas seen", "local only (Redis unreachable)",
    // "local only (Redis not answering)" (connected, but a command went unanswered),
    // "local only (Redis refused the password)" (WRONGPASS, NOAUTH) or
    // "local only (Redis refuses writes: READONLY You can't write against a read only replica.)".
    QString describe() const;
    // How many marks' last sequence numbers are remembered (bounded: see kSequenceMemoryMs).
    int rememberedSequences() const { return int(m_lastSeq.size()); }
    // A mark's last applied number is kept this long after it was applied: a message is read late
    // by milliseconds (two connections), never by minutes. Past kMaxRememberedSequences the oldest
    // go first whatever their age, so that no stream of new mark ids grows the table.
    static constexpr qint64 kSequenceMemoryMs = 10 * 60 * 1000;
    static constexpr int kMaxRememberedSequences = 16384;

    // failover::MarkObserver
    void markSet(const failover::MarkInfo &mark, const failover::UpstreamFailure &failure,
                 std::optional<qint64> attemptStartedAtMs) override;
    void marksCleared(const QList<failover::MarkInfo> &removed) override;
    // How long a clear's tombstone stays in Redis: past it, any mark struck before the clear has
    // expired (the cap, plus the longest attempt that could extend it, within the strike reset).
    static constexpr qint64 kTombstoneMs =
        failover::ProviderDownMarks::kCapMs + failover::ProviderDownMarks::kStrikeResetMs;

Q_SIGNALS:
    void marksChanged();
    void storeUpChanged(bool up);

private:
    QByteArray idFor(const failover::MarkInfo &m) const;
    QByteArray key(const char *kind, const QByteArray &id) const;
    qint64 wallNow() const;
    // Both connections answering: a heartbeat (a write) decides; goUp() pushes and pulls, logs.
    void updateState();
    void goUp();
    // Takes Redis's state as after a reconnect: forgets its numbers, sends the clears and marks
    // made while it was away, pulls.
    void resync();
    // What this replica had read of Redis's sequence when it sent a command.
    struct Numbering {
        quint64 ups = 0;     // m_ups then
        quint64 highest = 0; // m_highestSeq then
    };
    Numbering numberingNow() const;
    // False (and Redis's state taken again) when `seq`, the number a set sent at `before` took, says
    // the sequence started over: Redis lost its keys.
    bool sequenceHeld(const Numbering &before, double seq);
    void keysLost();
    void checkSequenceSoon();
    void onLost(const QString &why, RedisClient::Loss loss);
    void goDown(const QString &reason, const QString &why);
    // False for an error: Redis's own (the store goes down: it refuses writes) or a lost
    // connection's (onLost takes the store down).
    bool accepted(const RedisValue &reply);
    // The heartbeat; `probe`: the write that decides whether the store is shared.
    void sendHeartbeat(bool probe);
    void onMessage(const QByteArray &channel, const QByteArray &payload);
    void applyRemote(const QJsonObject &o);
    // True (and remembered) when `o`'s sequence number is above the last one applied for mark `id`.
    bool isNewer(const QByteArray &id, const QJsonObject &o);
    QByteArray sequenceKey() const;
    QByteArray indexKey() const; // the sorted set of mark keys a pull reads
    void pushLocalMarks();
    struct Clear {
        failover::MarkInfo mark;
        qint64 atWall = 0; // when it was made
        qint64 atMs = 0;   // the same, on this process's clock (the marks table's)
        // Redis's number of the last set or clear of it this replica applied (-1 none): a mark
        // another replica set after that version is spared (kClearScript).
        qint64 seenSeq = -1;
    };
    // Whether this process struck the one mark `mark` names after `madeAt` (its clock; a clear's
    // "madeAt"): a clear of its own read back never saw that strike.
    bool struckHereSince(const failover::MarkFilter &mark, const QJsonValue &madeAt) const;
    // Into m_clearedWhileDown (bounded): sent when Redis is back.
    void clearLater(const QList<Clear> &clears);
    // Sends clears to Redis. `late`: made while Redis was away, each deletes only a mark struck at
    // or before it (a later failure, another replica's meanwhile, stands); else whatever is there.
    void sendClears(const QList<Clear> &clears, bool late);
    // Takes Redis's marks, and drops the local marks of m_reconcile that Redis does not hold.
    void pullAll();
    void onPulled(const RedisValue &reply, quint64 ups); // `ups`: m_ups when the pull was sent
    // What this replica heard of a mark's last strike (its setAt in Redis), and when.
    void heard(const QByteArray &id, qint64 setAtWall);
    void heartbeat();
    QJsonObject describeMark(const failover::MarkInfo &m) const;

    failover::ProviderDownMarks &m_marks;
    util::Clock &m_clock;
    Options m_options;
    RedisClient *m_commands = nullptr;
    RedisClient *m_subscriber = nullptr;
    QTimer m_heartbeat;
    QByteArray m_channel;
    bool m_up = false;
    bool m_probing = false; // a heartbeat decides whether both answering connections are shared
    bool m_loggedDown = false;
    QString m_downReason = QStringLiteral("Redis unreachable");
    bool m_applyingRemote = false;
    // Counts clears (local, or another replica's): a set's own reply that comes back after a clear
    // is stale (see markSet).
    quint64 m_clears = 0;
    // While Redis is away: the marks this replica set (pushed when it returns, and only those: a
    // mark learned before the outage is Redis's or its maker's to hold) and the ones it cleared
    // (cleared in Redis when it returns, so an operator's clear is not undone by an older copy).
    // Each with the wall time of its last failure here (the clear it must come after).
    QHash<QByteArray, qint64> m_setWhileDown;
    QList<Clear> m_clearedWhileDown;
    // The local marks held when the store came back that nothing has touched since (no local set,
    // nothing applied from Redis): the pull then sent drops those Redis does not hold.
    QSet<QByteArray> m_reconcile;
    quint64 m_ups = 0; // times the store came back: a pull reconciles only for its own return
    // The last set or clear applied per mark id, by Redis's sequence (see kStoreMarkLua), and when;
    // and the last strike heard of (Redis's setAt, -1 none) and when (local clock), which decides
    // whether a failure is a new strike (see kSetLua).
    struct Applied {
        quint64 seq = 0;
        qint64 atMs = 0;
        qint64 heardSetAt = -1;
        qint64 heardAtMs = 0;
    };
    QHash<QByteArray, Applied> m_lastSeq;
    // Redis losing its keys with the connections up (FLUSHALL, FLUSHDB) restarts the sequence:
    // the highest number read from Redis on the command connection, and the epoch key's value
    // (see kHeartbeatScript), since the store came back.
    quint64 m_highestSeq = 0;
    QByteArray m_epoch;
    bool m_checkInFlight = false;
    quint64 m_heartbeats = 0;
    qsizetype m_forgetAt = 1024; // the size at which old numbers are next looked for
    void forgetOldSequences();
    int m_replicas = 0;
};

} // namespace sw::redis
