#include "core/redis/redis_mark_sync.h"

#include "core/server/gateway_auth.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <algorithm>

namespace sw::redis {

using failover::FailureKind;
using failover::MarkInfo;
using failover::ProviderDownMarks;

namespace {
// Stores a mark and its strike history, lists it in the index, and tells every
// replica: shared by the set and import scripts (KEYS: mark, history, sequence,
// and the index last). The index (a sorted set of mark keys by expiry) is what a
// pull reads: never KEYS, which walks the whole database while Redis serves no
// one else (probe W3 F1), and reads keys of other programs. The history keeps the
// last strike (setAt, for the strike rule) and the last failure that touched the
// mark (changedAt: a clear made before it does not undo it). The history key outlives
// the mark by the strike-reset window, so strikes survive a short gap between
// failures and reset after a long one. Every set and clear takes the next number of
// one sequence: a replica reads replies and messages on two connections, and
// applies nothing older than what it already applied for that mark.
constexpr char kStoreMarkLua[] = R"lua(
redis.replicate_commands() -- TIME, then writes: effects replication (the default since Redis 5)
local function storeMark(mark, strikes, setAt, expiresAt, now, reset, channel, changedAt)
  mark.seq = redis.call('INCR', KEYS[3])
  -- Scored on Redis's clock, as the pull prunes it: a replica whose clock is behind would list
  -- a live mark that every pull then deletes.
  local t = redis.call('TIME')
  local redisNow = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZADD', KEYS[#KEYS], string.format('%.0f', redisNow + expiresAt - now), KEYS[1])
  redis.call('HSET', KEYS[2], 'strikes', strikes, 'setAt', string.format('%.0f', setAt),
             'expiresAt', string.format('%.0f', expiresAt), 'changedAt', string.format('%.0f', changedAt))
  redis.call('PEXPIRE', KEYS[2], expiresAt - now + reset)
  mark.op = 'set'
  mark.strikes = strikes
  mark.ttlMs = expiresAt - now
  mark.expiresAt = string.format('%.0f', expiresAt)
  mark.setAt = string.format('%.0f', setAt)
  local payload = cjson.encode(mark)
  redis.call('SET', KEYS[1], payload, 'PX', expiresAt - now)
  redis.call('PUBLISH', channel, payload)
  return payload
end
)lua";

// Sets or extends one mark: the new expiry is never earlier than the current one.
// KEYS: mark, history, sequence, index. ARGV: now, base TTL, cap, strike reset, Retry-After (-1
// none), attempt start (-1 unknown), mark JSON, channel, and the last strike
// (its setAt) the failing replica had heard of when the attempt started (-1 none).
constexpr char kSetLua[] = R"lua(
local now = tonumber(ARGV[1])
local base = tonumber(ARGV[2])
local cap = tonumber(ARGV[3])
local reset = tonumber(ARGV[4])
local retryAfter = tonumber(ARGV[5])
local started = tonumber(ARGV[6])
local mark = cjson.decode(ARGV[7])
local h = redis.call('HMGET', KEYS[2], 'strikes', 'setAt', 'expiresAt')
local strikes = tonumber(h[1]) or 0
local setAt = tonumber(h[2]) or 0
local expiresAt = tonumber(h[3]) or 0
if expiresAt > 0 and now - expiresAt > reset then strikes = 0 end
-- A failure of an attempt that started at or before the last strike is the
-- same blip (parallel requests failing together): no new strike. So is one
-- that started while the mark stood on a replica that had not heard of it yet
-- (Redis slow or far): one replica knowing the mark would not have tried.
local known = tonumber(ARGV[9]) or -1
local unheard = started < expiresAt and known < setAt
local burst = strikes > 0 and started >= 0 and (started <= setAt or unheard)
-- Nor one that began while the mark stood and ends while it still stands: the
-- candidate was tried in spite of it (a lone one, or every one marked), and
-- failing says what the mark says. Only its own Retry-After lengthens the mark;
-- the next failure after it ran out is the next strike (probe H4 1, HV 1).
local during = strikes > 0 and started >= 0 and started < expiresAt and now < expiresAt
if not burst and not during then
  strikes = strikes + 1
  setAt = now
end
local ttl = base
for i = 2, strikes do
  ttl = ttl * 2
  if ttl >= cap then break end
end
if ttl > cap then ttl = cap end
if retryAfter >= 0 then
  local r = math.min(retryAfter, cap)
  if r > ttl then ttl = r end
end
local expiry = math.max(expiresAt, now + ttl)
if during and not burst then
  expiry = expiresAt
  if retryAfter >= 0 then expiry = math.max(expiresAt, now + math.min(retryAfter, cap)) end
end
return storeMark(mark, strikes, setAt, expiry, now, reset, ARGV[8], now)
)lua";

// Puts back a mark this replica learned while Redis was away: the later
// expiry and the higher strike count win; a clear made after the last failure
// that touched it (the tombstone a clear leaves) wins over it. KEYS: mark,
// history, sequence, tombstone, index. ARGV: now, strike reset, mark JSON (with
// expiresAt, strikes, setAt, changedAt: that failure's time), channel.
constexpr char kImportLua[] = R"lua(
local now = tonumber(ARGV[1])
local reset = tonumber(ARGV[2])
local mark = cjson.decode(ARGV[3])
local changed = tonumber(mark.changedAt) or tonumber(mark.setAt) or 0
mark.changedAt = nil
local cleared = tonumber(redis.call('GET', KEYS[4]))
if cleared and changed < cleared then return false end
local h = redis.call('HMGET', KEYS[2], 'strikes', 'setAt', 'expiresAt', 'changedAt')
local strikes = math.max(tonumber(h[1]) or 0, tonumber(mark.strikes))
local expiresAt = math.max(tonumber(h[3]) or 0, tonumber(mark.expiresAt))
local setAt = tonumber(h[2]) or tonumber(mark.setAt) or now
changed = math.max(changed, tonumber(h[4]) or tonumber(h[2]) or 0)
if expiresAt <= now then return false end
return storeMark(mark, strikes, setAt, expiresAt, now, reset, ARGV[4], changed)
)lua";

// Deletes marks and their strike history, leaves a tombstone (the clear's time)
// that a replica coming back with an older copy meets, and tells every replica
// with the clear's sequence number. KEYS: mark, history and tombstone keys per
// mark, then the sequence and the index. ARGV: channel, payload (its ids in KEYS' order),
// tombstone TTL, then per mark: the latest last failure (changedAt, else setAt:
// the history of a version before) it deletes (-1: any, but a mark the clearing replica
// changed after the clear's time; a clear sent late spares a mark a failure touched after
// it), the clear's time, and the number of the version of it the clearing replica saw (-1
// unknown): a live clear spares a mark another replica set after that version and changed after
// the clear's time (that replica's clock against the clearing one's: keep them in sync).
constexpr char kClearScript[] = R"lua(
local payload = cjson.decode(ARGV[2])
local ids = {}
for i = 1, (#KEYS - 2) / 3 do
  local upTo = tonumber(ARGV[1 + 3 * i])
  local at = tonumber(ARGV[2 + 3 * i])
  local seen = tonumber(ARGV[3 + 3 * i]) or -1
  local h = redis.call('HMGET', KEYS[3 * i - 1], 'changedAt', 'setAt')
  local changedAt = tonumber(h[1]) or tonumber(h[2])
  local gone = upTo < 0 or not changedAt or changedAt <= upTo
  -- A clear sent live deletes whatever is there, but not a mark changed after the clear was made:
  -- Redis ran it late (it sat in a stalled Redis's socket, or in a link that stalled with it),
  -- and a failure since struck anew. The mark's own replica's: both times are its clock. Another
  -- replica's: only a version the clearing replica had not seen (Redis's numbers), so that a clock
  -- ahead never spares what the clear was made against, and one the clear came after still goes.
  if gone and upTo < 0 and changedAt and changedAt > at then
    local v = redis.pcall('GET', KEYS[3 * i - 2])
    local ok, cur = pcall(cjson.decode, type(v) == 'string' and v or 'null')
    if ok and type(cur) == 'table' then
      if cur.replica == payload.replica or (seen > 0 and (tonumber(cur.seq) or 0) > seen) then gone = false end
    end
  end
  if gone then
    redis.call('DEL', KEYS[3 * i - 2], KEYS[3 * i - 1])
    redis.call('ZREM', KEYS[#KEYS], KEYS[3 * i - 2])
    ids[#ids + 1] = payload.ids[i]
  end
  local before = tonumber(redis.call('GET', KEYS[3 * i])) or 0
  if at > before then
    redis.call('SET', KEYS[3 * i], string.format('%.0f', at), 'PX', tonumber(ARGV[3]))
  end
end
if #ids == 0 then return 0 end
payload.ids = ids
payload.seq = redis.call('INCR', KEYS[#KEYS - 1])
redis.call('PUBLISH', ARGV[1], cjson.encode(payload))
return #ids
)lua";

const QByteArray kSetScript = QByteArray(kStoreMarkLua) + kSetLua;
const QByteArray kImportScript = QByteArray(kStoreMarkLua) + kImportLua;

// Every live mark in the index, at most ARGV[1] of them, after a 1 if there were more
// (else 0). Entries whose mark is gone (expired, deleted by another program) or is no
// string of ours leave the index, and so do those a minute past their expiry by Redis's
// clock (the mark's own PX is what ends it). A key of another type under the prefix is
// passed over: it failed the whole pull, every 2 s (probe W3 F2). KEYS: index. ARGV: limit.
constexpr char kPullScript[] = R"lua(
local out = {0}
local limit = tonumber(ARGV[1])
redis.replicate_commands()
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. string.format('%.0f', now - 60000))
local listed = redis.call('ZRANGE', KEYS[1], 0, 2 * limit)
if #listed > 2 * limit then out[1] = 1 end
for _, k in ipairs(listed) do
  local v = redis.pcall('GET', k)
  if type(v) == 'string' then
    if #out > limit then
      out[1] = 1
      break
    end
    out[#out + 1] = v
  else
    redis.call('ZREM', KEYS[1], k)
  end
end
return out
)lua";

// Announces this replica (a sorted set of replicas by the time each is gone unless it
// beats again, on Redis's clock), counts the live ones, and tells whether Redis still
// holds the keys the replicas' numbers came from: the epoch (made by the first heartbeat
// that finds none, so it goes with the rest in a FLUSHALL or FLUSHDB) and the sequence's
// value. KEYS: replicas, epoch, sequence. ARGV: TTL, this replica, a new epoch. Returns
// {replicas, epoch, sequence}.
constexpr char kHeartbeatScript[] = R"lua(
redis.replicate_commands()
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- The write Redis refuses when it refuses writes (OOM, READONLY) comes first: once a script has
-- written, Redis lets it finish, and the store would count as taking writes.
redis.call('ZADD', KEYS[1], string.format('%.0f', now + tonumber(ARGV[1])), ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', now))
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1])) end
local epoch = redis.call('GET', KEYS[2])
if not epoch then
  epoch = ARGV[3]
  redis.call('SET', KEYS[2], epoch)
end
return {redis.call('ZCARD', KEYS[1]), epoch, tonumber(redis.call('GET', KEYS[3])) or 0}
)lua";

QByteArray num(qint64 v) {
    return QByteArray::number(v);
}

// A JSON number as milliseconds within [lo, hi]: NaN, and anything a cast to an integer could not
// hold, land on a bound.
qint64 clampMs(double v, qint64 lo, qint64 hi) {
    if (!(v >= double(lo)))
        return lo;
    if (v >= double(hi))
        return hi;
    return qint64(v);
}

// An epoch time sent as a decimal string (int64 in Redis's Lua), within [lo, hi].
std::optional<qint64> epochMs(const QJsonValue &v, qint64 lo, qint64 hi) {
    bool ok = false;
    const qint64 t = v.toString().toLongLong(&ok);
    if (!ok)
        return std::nullopt;
    return std::clamp(t, lo, hi);
}
} // namespace

bool RedisMarkSync::configures(const config::Config &config, const MarkInfo &m) {
    const bool tenant = config.tenants.isEmpty() ? m.tenant == QLatin1String(server::GatewayAuth::kLocalTenant)
                                                 : config.tenants.contains(m.tenant);
    if (!tenant)
        return false;
    const auto provider = config.providers.constFind(m.provider);
    if (provider == config.providers.cend() || provider->baseUrl != m.baseUrl)
        return false;
    return m.model.isEmpty() || config.models.contains(m.provider + QLatin1Char('/') + m.model);
}

RedisMarkSync::RedisMarkSync(ProviderDownMarks &marks, util::Clock &clock, Options options, QObject *parent)
    : QObject(parent), m_marks(marks), m_clock(clock), m_options(std::move(options)) {
    if (!m_options.wallClock)
        m_options.wallClock = []() { return QDateTime::currentMSecsSinceEpoch(); };
    m_channel = channelFor(m_options.prefix, m_options.endpoint.db);
    util::Clock &connectionClock = m_options.connectionClock ? *m_options.connectionClock : util::systemClock();
    m_commands = new RedisClient(m_options.endpoint, connectionClock, this);
    m_subscriber = new RedisClient(m_options.endpoint, connectionClock, this);
    m_subscriber->subscribe(m_channel);
    // A subscriber that was away missed messages: it takes the store down, and its return pulls all.
    connect(m_commands, &RedisClient::ready, this, &RedisMarkSync::updateState);
    connect(m_subscriber, &RedisClient::ready, this, &RedisMarkSync::updateState);
    connect(m_commands, &RedisClient::lost, this, &RedisMarkSync::onLost);
    connect(m_subscriber, &RedisClient::lost, this, &RedisMarkSync::onLost);
    connect(m_subscriber, &RedisClient::message, this, &RedisMarkSync::onMessage);
    m_heartbeat.setInterval(m_options.heartbeatMs);
    connect(&m_heartbeat, &QTimer::timeout, this, &RedisMarkSync::heartbeat);
    m_marks.setObserver(this);
}

bool RedisMarkSync::configuresMore(const config::Config &before, const config::Config &after) {
    auto tenants = [](const config::Config &c) {
        return c.tenants.isEmpty() ? QStringList{QString::fromLatin1(server::GatewayAuth::kLocalTenant)}
                                   : c.tenants.keys();
    };
    const QStringList had = tenants(before);
    for (const QString &t : tenants(after))
        if (!had.contains(t))
            return true;
    for (const auto &p : after.providers) {
        const auto old = before.providers.constFind(p.id);
        if (old == before.providers.cend() || old->baseUrl != p.baseUrl)
            return true;
    }
    for (auto it = after.models.cbegin(); it != after.models.cend(); ++it)
        if (!before.models.contains(it.key()))
            return true;
    return false;
}

QByteArray RedisMarkSync::channelFor(const QString &prefix, int db) {
    // Keys live in a database, channels in the whole server: deployments kept apart by database
    // (redis://host/0 and /1, one prefix) heard each other's marks and clears (probe J4 1). Database
    // 0 keeps the name it always had, so replicas of both versions share marks during an upgrade.
    const QByteArray channel = (prefix + QStringLiteral(":marks")).toUtf8();
    return db == 0 ? channel : channel + ':' + QByteArray::number(db);
}

RedisMarkSync::~RedisMarkSync() {
    m_marks.setObserver(nullptr);
}

void RedisMarkSync::start() {
    m_commands->open();
    m_subscriber->open();
    m_heartbeat.start();
}

void RedisMarkSync::forget(const QList<MarkInfo> &dropped) {
    for (const MarkInfo &m : dropped) {
        const QByteArray id = idFor(m);
        m_lastSeq.remove(id);
        m_reconcile.remove(id);
        m_setWhileDown.remove(id);
    }
}

void RedisMarkSync::pullAgain() {
    if (m_up)
        pullAll(); // else the pull when Redis is back takes them
}

QString RedisMarkSync::describe() const {
    if (!m_up)
        return QStringLiteral("local only (%1)").arg(m_downReason);
    return QStringLiteral("shared via %1, %2 replica%3 seen")
        .arg(m_options.endpoint.display())
        .arg(m_replicas)
        .arg(m_replicas == 1 ? QString() : QStringLiteral("s"));
}

qint64 RedisMarkSync::wallNow() const {
    return m_options.wallClock();
}

QByteArray RedisMarkSync::idFor(const MarkInfo &m) const {
    const QString raw = m.tenant + QChar(0) + m.provider + QChar(0) + m.baseUrl + QChar(0) + m.model;
    return raw.toUtf8().toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals);
}

QByteArray RedisMarkSync::key(const char *kind, const QByteArray &id) const {
    return m_options.prefix.toUtf8() + ':' + kind + ':' + id;
}

QJsonObject RedisMarkSync::describeMark(const MarkInfo &m) const {
    QJsonObject o{{QStringLiteral("tenant"), m.tenant},
                  {QStringLiteral("provider"), m.provider},
                  {QStringLiteral("baseUrl"), m.baseUrl},
                  {QStringLiteral("model"), m.model},
                  {QStringLiteral("kind"), failover::failureKindName(m.kind)},
                  {QStringLiteral("lastError"), m.lastError.left(kMaxLastErrorChars)},
                  {QStringLiteral("replica"), m.setBy.isEmpty() ? m_options.replicaId : m.setBy}};
    if (m.retryAfterMs)
        o.insert(QStringLiteral("retryAfterMs"), double(*m.retryAfterMs));
    return o;
}

void RedisMarkSync::markSet(const MarkInfo &mark, const failover::UpstreamFailure &failure,
                            std::optional<qint64> attemptStartedAtMs) {
    if (m_applyingRemote)
        return;
    const QByteArray id = idFor(mark);
    m_reconcile.remove(id); // a new failure: this replica's, whatever Redis held
    const qint64 now = wallNow();
    if (!m_up) {
        m_setWhileDown.insert(id, now); // down: the mark stays local and is pushed on reconnect
        return;
    }
    const qint64 started = attemptStartedAtMs ? now - (m_clock.nowMs() - *attemptStartedAtMs) : -1;
    const qint64 base = failure.kind == FailureKind::RateLimited ? ProviderDownMarks::kRateLimitedBaseMs
                                                                 : ProviderDownMarks::kServerErrorBaseMs;
    // The last strike this replica had heard of when the attempt started: the script counts a new
    // strike only for an attempt made knowing the mark (or after it ended), as one replica would.
    qint64 known = -1;
    const auto heardOf = m_lastSeq.constFind(id);
    if (heardOf != m_lastSeq.cend() && attemptStartedAtMs && heardOf->heardAtMs <= *attemptStartedAtMs)
        known = heardOf->heardSetAt;
    // This replica's table holds the mark from now on: a later attempt here is made knowing it.
    heard(id, now);
    const QByteArray json = QJsonDocument(describeMark(mark)).toJson(QJsonDocument::Compact);
    // The script publishes the mark it stores, and this replica reads that message in order with
    // every other replica's messages on its subscription. Its reply comes on the command
    // connection, which may be read later: when a clear came in meanwhile (another replica's,
    // published after this set, or a local one), applying the reply would bring back a mark that
    // Redis and every other replica no longer hold. The published message has applied it already.
    const quint64 clearsBefore = m_clears;
    const Numbering numbering = numberingNow();
    m_commands->command({"EVAL", kSetScript, "4", key("mark", id), key("hist", id), sequenceKey(), indexKey(), num(now),
                         num(base), num(ProviderDownMarks::kCapMs), num(ProviderDownMarks::kStrikeResetMs),
                         num(failure.retryAfterMs.value_or(-1)), num(started), json, m_channel, num(known)},
                        [this, clearsBefore, id, numbering, now](const RedisValue &v) {
                            if (!accepted(v)) {
                                m_setWhileDown.insert(id, now); // lost or refused: pushed when shared again
                                return;
                            }
                            if (v.type != RedisValue::Type::String)
                                return;
                            const QJsonObject o = QJsonDocument::fromJson(v.str).object();
                            if (!sequenceHeld(numbering, o.value(QStringLiteral("seq")).toDouble()))
                                return; // Redis lost its keys: its state is taken again
                            if (m_clears != clearsBefore)
                                return; // cleared since: stale
                            applyRemote(o);
                        });
}

void RedisMarkSync::marksCleared(const QList<MarkInfo> &removed) {
    if (!removed.isEmpty())
        ++m_clears;
    if (m_applyingRemote || removed.isEmpty())
        return;
    const qint64 now = wallNow();
    QList<Clear> clears;
    for (const MarkInfo &m : removed) {
        const QByteArray id = idFor(m);
        m_setWhileDown.remove(id);
        const auto it = m_lastSeq.find(id);
        qint64 seenSeq = -1;
        if (it != m_lastSeq.end()) {
            it->heardSetAt = -1; // its strikes went with it
            if (it->seq > 0 && it->seq <= kMaxSequence)
                seenSeq = qint64(it->seq);
        }
        clears.append({m, now, m_clock.nowMs(), seenSeq});
    }
    if (!m_up)
        return clearLater(clears);
    sendClears(clears, false);
}

void RedisMarkSync::sendClears(const QList<Clear> &clears, bool late) {
    if (clears.isEmpty())
        return;
    QList<QByteArray> argv{"EVAL", kClearScript, QByteArray::number(clears.size() * 3 + 2)};
    QList<QByteArray> times;
    QJsonArray ids;
    qint64 earliest = clears.first().atMs;
    for (const Clear &c : clears) {
        earliest = std::min(earliest, c.atMs);
        const QByteArray id = idFor(c.mark);
        argv << key("mark", id) << key("hist", id) << key("cleared", id);
        ids.append(QString::fromLatin1(id));
        times << num(late ? c.atWall : -1) << num(c.atWall) << num(c.seenSeq);
    }
    argv << sequenceKey() << indexKey();
    const QJsonObject payload{{QStringLiteral("op"), QStringLiteral("clear")},
                              {QStringLiteral("ids"), ids},
                              {QStringLiteral("replica"), m_options.replicaId},
                              {QStringLiteral("madeAt"), double(earliest)}};
    argv << m_channel << QJsonDocument(payload).toJson(QJsonDocument::Compact) << num(kTombstoneMs) << times;
    m_commands->command(argv, [this, clears](const RedisValue &v) {
        if (!accepted(v)) // lost or refused: cleared in Redis when it takes writes again
            clearLater(clears);
    });
}

void RedisMarkSync::clearLater(const QList<Clear> &clears) {
    for (const Clear &c : clears)
        if (m_clearedWhileDown.size() < kMaxClearsKept)
            m_clearedWhileDown.append(c);
}

void RedisMarkSync::heard(const QByteArray &id, qint64 setAtWall) {
    Applied &a = m_lastSeq[id];
    a.atMs = std::max(a.atMs, m_clock.nowMs());
    if (setAtWall > a.heardSetAt) {
        a.heardSetAt = setAtWall;
        a.heardAtMs = m_clock.nowMs();
    }
    if (m_lastSeq.size() >= m_forgetAt)
        forgetOldSequences();
}

void RedisMarkSync::applyRemote(const QJsonObject &o) {
    // Checked as a local mark is made: anything that can publish on the channel, or write a mark
    // key, is read here. Numbers outside the ladder's range are clamped to it (never cast as they
    // come: 1e300 or 2^63 ms are undefined as integers), texts cut to the local bounds, and a mark
    // this gateway's configuration could not have set is ignored (Options::accepts).
    MarkInfo m;
    m.tenant = o.value(QStringLiteral("tenant")).toString();
    m.provider = o.value(QStringLiteral("provider")).toString();
    m.baseUrl = o.value(QStringLiteral("baseUrl")).toString();
    m.model = o.value(QStringLiteral("model")).toString();
    const auto kind = failover::failureKindFromName(o.value(QStringLiteral("kind")).toString());
    if (m.provider.isEmpty() || !kind)
        return;
    m.kind = *kind;
    // The kinds that set marks, keyed as ProviderDownMarks::mark keys them: a transport mark
    // covers the base URL (no model), the others one model.
    const bool transport = m.kind == FailureKind::Transport;
    if (!transport && m.kind != FailureKind::ServerError && m.kind != FailureKind::RateLimited)
        return;
    if (transport != m.model.isEmpty())
        return;
    if (m_options.accepts && !m_options.accepts(m))
        return;
    const qint64 wall = wallNow();
    const qint64 local = m_clock.nowMs();
    // At most the ladder's cap from now; one long expired is as good as expired.
    const auto expiresAt = epochMs(o.value(QStringLiteral("expiresAt")), wall - ProviderDownMarks::kStrikeResetMs,
                                   wall + ProviderDownMarks::kCapMs);
    if (!expiresAt)
        return;
    m.expiresAtMs = local + (*expiresAt - wall);
    m.ttlMs = clampMs(o.value(QStringLiteral("ttlMs")).toDouble(), 0, ProviderDownMarks::kCapMs);
    m.strikes = int(clampMs(o.value(QStringLiteral("strikes")).toDouble(), 1, kMaxStrikes));
    // The last strike's time, so the local table keeps the burst rule for the next failure too:
    // never in the future (every later failure would be the same blip).
    const qint64 oldest = wall - ProviderDownMarks::kCapMs - ProviderDownMarks::kStrikeResetMs;
    const auto setAt = epochMs(o.value(QStringLiteral("setAt")), oldest, wall);
    m.struckAtMs = setAt && *setAt > oldest ? local + (*setAt - wall) : std::min(local, m.expiresAtMs - m.ttlMs);
    if (o.contains(QStringLiteral("retryAfterMs"))) {
        const double retryAfter = o.value(QStringLiteral("retryAfterMs")).toDouble();
        if (retryAfter >= 0)
            m.retryAfterMs = clampMs(retryAfter, 0, ProviderDownMarks::kCapMs);
    }
    m.lastError = o.value(QStringLiteral("lastError")).toString().left(kMaxLastErrorChars);
    const QString replica = o.value(QStringLiteral("replica")).toString().left(kMaxReplicaIdChars);
    m.setBy = replica == m_options.replicaId ? QString() : replica;
    const QByteArray id = idFor(m);
    // Nothing older than a set or clear already applied for this mark.
    if (!isNewer(id, o))
        return;
    // Redis's word, newer than the pull's or the pull's own: a local mark it names is not stale.
    m_reconcile.remove(id);
    // Redis's own number (not clamped: it is only ever compared with Redis's).
    bool setAtOk = false;
    const qint64 setAtWall = o.value(QStringLiteral("setAt")).toString().toLongLong(&setAtOk);
    if (setAtOk)
        heard(id, setAtWall);
    m_applyingRemote = true;
    m_marks.apply(m);
    m_applyingRemote = false;
    Q_EMIT marksChanged();
}

void RedisMarkSync::onMessage(const QByteArray &channel, const QByteArray &payload) {
    if (channel != m_channel)
        return;
    const QJsonObject o = QJsonDocument::fromJson(payload).object();
    const QString op = o.value(QStringLiteral("op")).toString();
    if (op == QLatin1String("set")) {
        applyRemote(o);
    } else if (op == QLatin1String("clear")) {
        // This replica's own clear too: it records the clear's number, so a set published before
        // it and read after it (on the subscription or as a reply) does not bring the mark back.
        const bool own = o.value(QStringLiteral("replica")).toString() == m_options.replicaId;
        if (!own)
            ++m_clears;
        int n = 0;
        m_applyingRemote = true;
        for (const QJsonValue &v : o.value(QStringLiteral("ids")).toArray()) {
            const QByteArray id = v.toString().toLatin1();
            if (!isNewer(id, o))
                continue;
            const auto heardOf = m_lastSeq.find(id);
            if (heardOf != m_lastSeq.end())
                heardOf->heardSetAt = -1; // its strikes went with it
            const QList<QByteArray> parts =
                QByteArray::fromBase64(v.toString().toLatin1(), QByteArray::Base64UrlEncoding).split('\0');
            if (parts.size() != 4)
                continue;
            failover::MarkFilter f;
            f.tenant = QString::fromUtf8(parts[0]);
            f.provider = QString::fromUtf8(parts[1]);
            f.baseUrl = QString::fromUtf8(parts[2]);
            f.model = QString::fromUtf8(parts[3]);
            f.exactModel = true;
            // This replica's own clear, read back: it was applied here when made, and a mark struck here
            // since is one it never saw. Redis may run it long after (it stalled with the clear in its
            // socket, and the replica gave up waiting and struck anew), and that mark must go on to
            // Redis, not vanish from every replica (probe Y4 F1).
            if (own && struckHereSince(f, o.value(QStringLiteral("madeAt"))))
                continue;
            n += m_marks.applyClear(f);
        }
        m_applyingRemote = false;
        if (n > 0)
            Q_EMIT marksChanged();
    }
}

bool RedisMarkSync::struckHereSince(const failover::MarkFilter &mark, const QJsonValue &madeAt) const {
    if (!madeAt.isDouble())
        return false; // a version that did not say when
    const auto at = qint64(madeAt.toDouble());
    const QList<MarkInfo> marks = m_marks.active();
    return std::any_of(marks.cbegin(), marks.cend(),
                       [&](const MarkInfo &m) { return mark.matches(m) && m.setBy.isEmpty() && m.struckAtMs > at; });
}

bool RedisMarkSync::isNewer(const QByteArray &id, const QJsonObject &o) {
    const double number = o.value(QStringLiteral("seq")).toDouble();
    if (!(number > 0))
        return true; // a replica of a version without sequence numbers: as before, last one read wins
    if (number > kMaxSequence)
        return false; // no INCR gets there: a number that would order every later set or clear out
    const auto seq = quint64(number);
    Applied &last = m_lastSeq[id];
    if (seq < last.seq)
        checkSequenceSoon(); // read late (two connections), or Redis's numbers started over
    if (seq <= last.seq)
        return false;
    last = {seq, m_clock.nowMs()};
    if (m_lastSeq.size() >= m_forgetAt)
        forgetOldSequences();
    return true;
}

void RedisMarkSync::forgetOldSequences() {
    const qint64 before = m_clock.nowMs() - kSequenceMemoryMs;
    m_lastSeq.removeIf([before](const auto &entry) { return entry.value().atMs < before; });
    if (m_lastSeq.size() > kMaxRememberedSequences) {
        // Young, and too many: the older half goes.
        QList<qint64> times;
        times.reserve(m_lastSeq.size());
        for (const Applied &a : std::as_const(m_lastSeq))
            times.append(a.atMs);
        std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
        const qint64 median = times.at(times.size() / 2);
        m_lastSeq.removeIf([median](const auto &entry) { return entry.value().atMs < median; });
    }
    // Looked at again when the table has doubled: each look costs its size once.
    m_forgetAt = std::max<qsizetype>(1024, 2 * m_lastSeq.size());
}

QByteArray RedisMarkSync::sequenceKey() const {
    return m_options.prefix.toUtf8() + ":seq";
}

QByteArray RedisMarkSync::indexKey() const {
    return m_options.prefix.toUtf8() + ":index";
}

void RedisMarkSync::updateState() {
    if (m_up || m_probing || !m_commands->isReady() || !m_subscriber->isReady())
        return;
    // Both connections answer, which a server that refuses every write does too (a replica after
    // a failover, OOM at maxmemory with noeviction): shared only once a write went through.
    sendHeartbeat(true);
}

void RedisMarkSync::goUp() {
    m_up = true;
    m_loggedDown = false;
    if (m_options.log)
        m_options.log(QStringLiteral("info"), QStringLiteral("marks shared through Redis"),
                      {{QStringLiteral("store"), m_options.endpoint.display()},
                       {QStringLiteral("replica"), m_options.replicaId}});
    resync();
    Q_EMIT storeUpChanged(true);
}

RedisMarkSync::Numbering RedisMarkSync::numberingNow() const {
    return {m_ups, m_highestSeq};
}

bool RedisMarkSync::sequenceHeld(const Numbering &before, double seq) {
    if (!(seq > 0) || seq > kMaxSequence || before.ups != m_ups || !m_up)
        return true; // no number, or one from before the store last came back
    // Every number this replica had read from Redis when it sent the set is at most the sequence's
    // value then, and the set's INCR takes one above it: one at or below means it started over.
    if (quint64(seq) <= before.highest) {
        keysLost();
        return false;
    }
    m_highestSeq = std::max(m_highestSeq, quint64(seq));
    return true;
}

void RedisMarkSync::keysLost() {
    // FLUSHALL or FLUSHDB with the connections up (or the keys evicted): the sequence starts over
    // at 1, and every replica would ignore each set and clear of a mark it had applied a higher
    // number for (probe J4 2). Taken as a reconnect is: Redis's state again.
    if (m_options.log)
        m_options.log(QStringLiteral("warn"), QStringLiteral("marks: Redis lost its keys; taking its state again"),
                      {{QStringLiteral("store"), m_options.endpoint.display()}});
    resync();
}

void RedisMarkSync::checkSequenceSoon() {
    // A message older than one applied for its mark: the heartbeat, sent now, says whether Redis
    // still holds its keys (one check in flight at a time).
    if (m_up && !m_checkInFlight) {
        m_checkInFlight = true;
        sendHeartbeat(false);
    }
}

void RedisMarkSync::resync() {
    // Redis may have restarted or lost its keys, its sequence with them: numbers start over.
    m_lastSeq.clear();
    m_highestSeq = 0;
    m_epoch.clear();
    // Redis's state wins over what this replica held before the outage: a peer's clear published
    // while this replica was not subscribed reaches it no other way (probe E4 4). The marks held
    // now that nothing touches before the pull's answer are dropped unless Redis holds them.
    ++m_ups;
    m_reconcile.clear();
    for (const MarkInfo &m : m_marks.active())
        m_reconcile.insert(idFor(m));
    // What an operator cleared meanwhile is cleared in Redis too (a mark struck after the clear, on
    // any replica, stands), then this replica's own new marks go (a clear made after their last
    // strike, on any replica, wins), then the rest is pulled: all on one connection, in order.
    sendClears(std::exchange(m_clearedWhileDown, {}), true);
    pushLocalMarks();
    m_setWhileDown.clear();
    pullAll();
}

void RedisMarkSync::onLost(const QString &why, RedisClient::Loss loss) {
    switch (loss) {
    case RedisClient::Loss::NotAnswering:
        return goDown(QStringLiteral("Redis not answering"), why);
    case RedisClient::Loss::PasswordRefused:
        return goDown(QStringLiteral("Redis refused the password"), why);
    case RedisClient::Loss::TlsFailed:
        return goDown(QStringLiteral("Redis TLS handshake failed: %1 (marks.caFile trusts a private CA)").arg(why),
                      why);
    case RedisClient::Loss::Unreachable:
        break;
    }
    goDown(QStringLiteral("Redis unreachable"), why);
}

void RedisMarkSync::goDown(const QString &reason, const QString &why) {
    const bool was = m_up;
    const bool newReason = reason != m_downReason;
    m_up = false;
    m_downReason = reason;
    // One line per outage, not one per request or reconnect attempt.
    if (!m_loggedDown && m_options.log) {
        m_loggedDown = true;
        m_options.log(QStringLiteral("warn"), QStringLiteral("marks: %1").arg(describe()),
                      {{QStringLiteral("store"), m_options.endpoint.display()}, {QStringLiteral("error"), why}});
    }
    if (was || newReason)
        Q_EMIT storeUpChanged(false); // down, or down for another reason: the description changed
}

bool RedisMarkSync::accepted(const RedisValue &reply) {
    if (!reply.isError())
        return true;
    if (reply.isServerError()) {
        // Redis answers and takes nothing: whatever this replica sends reaches no other.
        const QString error = QString::fromUtf8(reply.str.left(200));
        goDown(QStringLiteral("Redis refuses writes: %1").arg(error), error);
    }
    return false;
}

void RedisMarkSync::pushLocalMarks() {
    // Marks this replica set while Redis was away go to it, so the others learn them too. Older
    // ones are not pushed again: one another replica or an operator cleared meanwhile would come
    // back (probe Z4 5); Redis or the replica that made it holds it.
    const qint64 nowLocal = m_clock.nowMs();
    const qint64 now = wallNow();
    for (const MarkInfo &m : m_marks.active()) {
        const QByteArray id = idFor(m);
        const auto changed = m_setWhileDown.constFind(id);
        if (!m.setBy.isEmpty() || changed == m_setWhileDown.cend())
            continue; // another replica's (Redis is its source), or not new
        QJsonObject o = describeMark(m);
        o.insert(QStringLiteral("strikes"), m.strikes);
        o.insert(QStringLiteral("ttlMs"), double(m.ttlMs));
        o.insert(QStringLiteral("expiresAt"), QString::number(now + (m.expiresAtMs - nowLocal)));
        // The last strike, for the strike rule; and the last failure, which a failure that added no
        // strike (a try begun while the mark stood) moves too: a clear made before it does not
        // undo it (probe J4 6).
        o.insert(QStringLiteral("setAt"), QString::number(now + (m.struckAtMs - nowLocal)));
        o.insert(QStringLiteral("changedAt"), QString::number(*changed));
        m_commands->command({"EVAL", kImportScript, "5", key("mark", id), key("hist", id), sequenceKey(),
                             key("cleared", id), indexKey(), num(now), num(ProviderDownMarks::kStrikeResetMs),
                             QJsonDocument(o).toJson(QJsonDocument::Compact), m_channel},
                            [this, id, at = *changed](const RedisValue &v) {
                                if (!accepted(v))
                                    m_setWhileDown.insert(id, at); // pushed again when Redis takes writes
                            });
    }
}

void RedisMarkSync::pullAll() {
    const quint64 ups = m_ups;
    m_commands->command({"EVAL", kPullScript, "1", indexKey(), num(kMaxPulledMarks)},
                        [this, ups](const RedisValue &v) { onPulled(v, ups); });
}

void RedisMarkSync::onPulled(const RedisValue &v, quint64 ups) {
    if (!accepted(v) || v.type != RedisValue::Type::Array || v.elements.isEmpty())
        return;
    const bool complete = v.elements.first().type == RedisValue::Type::Integer && v.elements.first().integer == 0;
    QSet<QByteArray> held;
    for (qsizetype i = 1; i < v.elements.size(); ++i) {
        if (v.elements[i].type != RedisValue::Type::String)
            continue;
        const QJsonObject o = QJsonDocument::fromJson(v.elements[i].str).object();
        MarkInfo m;
        m.tenant = o.value(QStringLiteral("tenant")).toString();
        m.provider = o.value(QStringLiteral("provider")).toString();
        m.baseUrl = o.value(QStringLiteral("baseUrl")).toString();
        m.model = o.value(QStringLiteral("model")).toString();
        held.insert(idFor(m));
        applyRemote(o);
    }
    // Only for the return this pull was sent for (its pushes came first), and from a whole
    // answer: a mark past the pull's limit is not known to be gone.
    if (ups != m_ups || !m_up)
        return;
    const QSet<QByteArray> stale = std::exchange(m_reconcile, {});
    if (!complete)
        return;
    int n = 0;
    for (const MarkInfo &m : m_marks.active()) {
        if (!stale.contains(idFor(m)) || held.contains(idFor(m)))
            continue;
        n += m_marks.applyClear(failover::MarkFilter::exactly(m));
    }
    if (n > 0)
        Q_EMIT marksChanged();
}

void RedisMarkSync::heartbeat() {
    if (!m_up)
        return updateState(); // both connections answering but writes refused: try again
    sendHeartbeat(false);
}

void RedisMarkSync::sendHeartbeat(bool probe) {
    m_probing = m_probing || probe;
    const QByteArray newEpoch =
        m_options.replicaId.toUtf8() + ':' + num(wallNow()) + ':' + QByteArray::number(++m_heartbeats);
    const Numbering numbering = numberingNow();
    m_commands->command(
        {"EVAL", kHeartbeatScript, "3", m_options.prefix.toUtf8() + ":replicas", m_options.prefix.toUtf8() + ":epoch",
         sequenceKey(), num(m_options.heartbeatMs * 3), m_options.replicaId.toUtf8(), newEpoch},
        [this, probe, numbering](const RedisValue &v) {
            if (probe)
                m_probing = false;
            else
                m_checkInFlight = false;
            if (!accepted(v) || v.type != RedisValue::Type::Array || v.elements.size() != 3 ||
                v.elements[0].type != RedisValue::Type::Integer || v.elements[1].type != RedisValue::Type::String ||
                v.elements[2].type != RedisValue::Type::Integer)
                return;
            const int replicas = int(std::clamp<qint64>(v.elements[0].integer, 0, 1 << 20));
            const bool replicasChanged = replicas != m_replicas;
            m_replicas = replicas;
            const QByteArray &epoch = v.elements[1].str;
            const quint64 seq = quint64(std::clamp<qint64>(v.elements[2].integer, 0, qint64(kMaxSequence)));
            if (probe) {
                // The subscription may have dropped while the write was on its way.
                if (!m_up && m_commands->isReady() && m_subscriber->isReady()) {
                    goUp();
                    m_epoch = epoch; // the keys whose state goUp() takes
                    m_highestSeq = seq;
                }
                return;
            }
            if (replicasChanged && m_up)
                Q_EMIT storeUpChanged(m_up); // the description changed
            if (!m_up || numbering.ups != m_ups)
                return;
            // Another epoch than the one this replica took its state under, or a sequence below a
            // number read before: Redis lost its keys since.
            if ((!m_epoch.isEmpty() && epoch != m_epoch) || seq < numbering.highest) {
                keysLost();
                m_epoch = epoch;
                m_highestSeq = seq;
                return;
            }
            m_epoch = epoch;
            m_highestSeq = std::max(m_highestSeq, seq);
        });
}

} // namespace sw::redis
