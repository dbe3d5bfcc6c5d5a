#include "core/server/admin_api.h"

#include "core/credentials/gateway_key.h"
#include "core/server/engine_control.h"
#include "core/server/gateway_auth.h"
#include "core/server/http_exchange.h"
#include "core/telemetry/telemetry.h"
#include "core/telemetry/usage_report.h"
#include "core/util/clock.h"
#include "core/wire/sse.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <utility>

namespace sw::server {

namespace {
QJsonObject markToJson(const failover::MarkInfo &m, qint64 now, qint64 epochNow) {
    return {{QStringLiteral("tenant"), m.tenant},
            {QStringLiteral("provider"), m.provider},
            {QStringLiteral("baseUrl"), m.baseUrl},
            {QStringLiteral("model"), m.model.isEmpty() ? QJsonValue() : QJsonValue(m.model)},
            {QStringLiteral("kind"), failover::failureKindName(m.kind)},
            {QStringLiteral("strikes"), m.strikes},
            {QStringLiteral("remainingMs"), std::max<qint64>(0, m.expiresAtMs - now)},
            // When it runs out, as wall-clock time: a feed's frame stays right however late it is read.
            {QStringLiteral("expiresAtMs"), double(epochNow + std::max<qint64>(0, m.expiresAtMs - now))},
            {QStringLiteral("retryAfterMs"), m.retryAfterMs ? QJsonValue(double(*m.retryAfterMs)) : QJsonValue()},
            {QStringLiteral("lastError"), m.lastError},
            // With Redis-shared marks: the replica that set it (null = this one).
            {QStringLiteral("setBy"), m.setBy.isEmpty() ? QJsonValue() : QJsonValue(m.setBy)}};
}

QJsonObject attemptToJson(const telemetry::AttemptRecord &a) {
    return {
        {QStringLiteral("requestId"), a.requestId},
        // When the attempt began, as the log's timestamps and the window's Time column say it.
        {QStringLiteral("at"), QDateTime::fromMSecsSinceEpoch(a.startedAtEpochMs, Qt::UTC).toString(Qt::ISODateWithMs)},
        {QStringLiteral("atMs"), double(a.startedAtEpochMs)},
        {QStringLiteral("attempt"), a.attempt},
        {QStringLiteral("tenant"), a.tenant},
        {QStringLiteral("requestedModel"), a.requestedModel},
        // null for a request refused before any attempt (outcome "refused")
        {QStringLiteral("candidate"), a.candidate.isEmpty() ? QJsonValue() : QJsonValue(a.candidate)},
        {QStringLiteral("outcome"), telemetry::outcomeName(a.outcome)},
        {QStringLiteral("failure"), a.failure.isEmpty() ? QJsonValue() : QJsonValue(a.failure)},
        {QStringLiteral("status"), a.status ? QJsonValue(a.status) : QJsonValue()},
        {QStringLiteral("elapsedMs"), double(a.elapsedMs)},
        {QStringLiteral("ttftMs"), a.ttftMs ? QJsonValue(double(*a.ttftMs)) : QJsonValue()},
        {QStringLiteral("message"), a.message},
        // What the answer's request went without (x-switchman-dropped): [] for nothing, and every other row
        {QStringLiteral("dropped"), QJsonArray::fromStringList(a.dropped)}};
}
} // namespace

AdminApi::AdminApi(EngineControl &engine, QObject *parent) : QObject(parent), m_engine(engine) {
    connect(m_engine.telemetry(), &telemetry::Telemetry::attemptRecorded, this,
            [this](const telemetry::AttemptRecord &a) {
                if (!m_feeds.isEmpty()) // no JSON work on the request path when nobody listens
                    broadcast("attempt", QJsonDocument(attemptToJson(a)).toJson(QJsonDocument::Compact));
            });
    // The engine calls configChanged() at every reload (Engine wires its configApplied signal to
    // it); a frame going out checks the configuration too (recheckIfConfigChanged).
    m_checkedConfig = m_engine.config().get();
}

AdminApi::Opener AdminApi::openerOf(const InboundRequest &req) const {
    const auto config = m_engine.config();
    if (!config)
        return {};
    const GatewayAuth auth(config->tenants);
    const std::optional<Caller> caller = auth.authenticate(req);
    if (!caller)
        return {};
    const QByteArray key = GatewayAuth::presentedKey(req);
    return {caller->tenant, key.isEmpty() ? QString() : credentials::gatewayKeyHash(key), true};
}

bool AdminApi::stillAdmin(const Opener &opener, const config::Config &config) {
    if (!opener.known)
        return true;
    // No tenants: a loopback-only listener where every caller is the local admin.
    if (config.tenants.isEmpty())
        return true;
    const auto it = config.tenants.constFind(opener.tenant);
    if (it == config.tenants.cend() || !it->admin || opener.keyHash.isEmpty())
        return false;
    bool held = false;
    for (const QString &stored : it->keyHashes)
        held = credentials::sameGatewayKeyHash(opener.keyHash, stored) || held;
    return held;
}

void AdminApi::recheckIfConfigChanged() {
    if (m_engine.config().get() != m_checkedConfig)
        configChanged();
}

void AdminApi::configChanged() {
    const auto config = m_engine.config();
    m_checkedConfig = config.get();
    if (!config)
        return;
    for (auto it = m_feeds.begin(); it != m_feeds.end();) {
        if (!it->exchange || !it->exchange->isOpen()) {
            it = m_feeds.erase(it);
            continue;
        }
        if (stillAdmin(it->opener, *config)) {
            ++it;
            continue;
        }
        const QString tenant = it->opener.tenant;
        HttpExchange *exchange = it->exchange;
        it = m_feeds.erase(it);
        const QString why = config->tenants.contains(tenant) && !config->tenants.value(tenant).admin
                                ? QStringLiteral("tenant %1 is no longer an admin").arg(tenant)
                            : config->tenants.contains(tenant)
                                ? QStringLiteral("the key that opened this feed was removed from tenant %1").arg(tenant)
                                : QStringLiteral("tenant %1 was removed from the configuration").arg(tenant);
        m_engine.telemetry()->log(QStringLiteral("info"), QStringLiteral("admin event feed ended"),
                                  {{QStringLiteral("tenant"), tenant}, {QStringLiteral("reason"), why}});
        // The last frame says why, then the stream ends (even one that is behind gets it: it is small).
        exchange->write(wire::sseFrameOfText(
            QJsonDocument(QJsonObject{{QStringLiteral("reason"), why}}).toJson(QJsonDocument::Compact), "revoked"));
        exchange->endStream();
        exchange->deleteLater();
    }
}

void AdminApi::publishMarks() {
    recheckIfConfigChanged();
    if (!m_feeds.isEmpty())
        broadcast("marks", marksJson(m_engine));
}

QByteArray AdminApi::marksJson(const EngineControl &engine) {
    QJsonArray arr;
    const qint64 now = engine.clock().nowMs();
    const qint64 epochNow = engine.clock().epochMs();
    for (const auto &m : engine.marks())
        arr.append(markToJson(m, now, epochNow));
    return QJsonDocument(QJsonObject{{QStringLiteral("marks"), arr}}).toJson(QJsonDocument::Compact);
}

void AdminApi::json(HttpExchange *exchange, int status, const QByteArray &body, const http::HeaderList &extra) {
    http::HeaderList headers{{"Content-Type", "application/json"}, {"Cache-Control", "no-store"}};
    headers += extra;
    exchange->respond(status, headers, body);
}

void AdminApi::wrongMethod(HttpExchange *exchange, const QByteArray &allowed) {
    json(exchange, 405,
         QJsonDocument(QJsonObject{{QStringLiteral("error"),
                                    QJsonObject{{QStringLiteral("message"),
                                                 QStringLiteral("use %1").arg(QString::fromLatin1(allowed))}}}})
             .toJson(QJsonDocument::Compact),
         {{"Allow", allowed}});
}

qint64 AdminApi::unsent(const Feed &feed) {
    return feed.socket ? feed.socket->bytesToWrite() : 0;
}

void AdminApi::broadcast(const QByteArray &event, const QByteArray &json) {
    // Every frame goes to the socket's write buffer: a subscriber that does not read must not
    // grow it without bound (each marks change carries every mark, to every subscriber).
    recheckIfConfigChanged(); // a revoked opener never gets one more frame
    const bool marks = event == "marks";
    const QByteArray frame = wire::sseFrameOfText(json, event);
    for (auto it = m_feeds.begin(); it != m_feeds.end();) {
        if (!it->exchange || !it->exchange->isOpen()) {
            it = m_feeds.erase(it);
            continue;
        }
        if (unsent(*it) > kFeedSoftLimitBytes) {
            // Behind: marks changes fold into one snapshot for later; attempt events cannot be
            // folded, so one that misses too many is dropped (it reconnects and starts afresh).
            if (marks) {
                it->marksPending = true;
            } else {
                it->skippedBytes += frame.size();
                ++it->skippedAttempts;
            }
            if (it->skippedBytes > kFeedHardLimitBytes) {
                m_engine.telemetry()->log(QStringLiteral("warn"), QStringLiteral("admin event subscriber dropped"),
                                          {{QStringLiteral("reason"), QStringLiteral("not reading its events")}});
                HttpExchange *exchange = it->exchange;
                it = m_feeds.erase(it);
                exchange->abortConnection();
                exchange->deleteLater();
                continue;
            }
        } else {
            writeGap(*it);
            it->exchange->write(frame);
            if (marks)
                it->marksPending = false;
        }
        ++it;
    }
}

void AdminApi::writeGap(Feed &feed) {
    // The attempt events a subscriber missed while behind are gone: before the next frame it gets,
    // it is told how many, so that it reads /admin/attempts again rather than show a history with a
    // hole in it (probe I3 4: 1 420 events lost without a word).
    if (feed.skippedAttempts == 0)
        return;
    const double lost = double(std::exchange(feed.skippedAttempts, 0));
    m_engine.telemetry()->log(QStringLiteral("warn"), QStringLiteral("admin event subscriber missed events"),
                              {{QStringLiteral("lostAttempts"), lost}});
    feed.exchange->write(wire::sseFrameOfText(
        QJsonDocument(QJsonObject{{QStringLiteral("lostAttempts"), lost}}).toJson(QJsonDocument::Compact), "gap"));
}

void AdminApi::catchUp(HttpExchange *exchange) {
    recheckIfConfigChanged();
    for (auto &feed : m_feeds) {
        if (feed.exchange != exchange || unsent(feed) > kFeedSoftLimitBytes / 2)
            continue;
        feed.skippedBytes = 0;
        writeGap(feed);
        if (feed.marksPending) {
            feed.marksPending = false;
            exchange->write(wire::sseFrameOfText(marksJson(m_engine), "marks"));
        }
    }
}

void AdminApi::handleUsage(const InboundRequest &req, HttpExchange *exchange) {
    // ?since=&until=&tenant=&groupBy=day|provider|model|tenant, answered from the ledger once
    // every row recorded so far is written (on the ledger's thread, off the request path).
    auto bad = [&](const QString &message) {
        json(exchange, 400,
             QJsonDocument(QJsonObject{{QStringLiteral("error"), QJsonObject{{QStringLiteral("message"), message}}}})
                 .toJson(QJsonDocument::Compact));
    };
    telemetry::UsageQuery q;
    const qint64 now = m_engine.clock().epochMs();
    for (const auto &[name, target] :
         {std::pair{QStringLiteral("since"), &q.sinceMs}, std::pair{QStringLiteral("until"), &q.untilMs}}) {
        const QString value = req.query.queryItemValue(name, QUrl::FullyDecoded);
        if (value.isEmpty())
            continue;
        const auto parsed = telemetry::parseTimeBound(value, now);
        if (!parsed)
            return bad(QStringLiteral("%1=%2 is not a time: use 7d, 24h, 30m, 2026-01-05, an ISO date-time or epoch "
                                      "milliseconds")
                           .arg(name, value));
        *target = *parsed;
    }
    q.tenant = req.query.queryItemValue(QStringLiteral("tenant"), QUrl::FullyDecoded);
    const auto grouping = telemetry::groupingFromName(req.query.queryItemValue(QStringLiteral("groupBy")));
    if (!grouping)
        return bad(QStringLiteral("groupBy must be day, provider, model or tenant"));
    q.groupBy = *grouping;
    bool ok = false;
    const int limit = req.query.queryItemValue(QStringLiteral("limit")).toInt(&ok);
    // Ungrouped: the newest `limit` rows, at most 10 000 (the whole answer is built in memory, about
    // ten bytes for each byte sent: a million rows asked for would hold gigabytes; probe I1 2; older
    // ones are read by `until`). Grouped (not by day): the `limit` groups that cost most, the rest
    // as one "(other)" row; 100 unless asked, at most 10 000.
    if (ok && limit > 0) {
        q.limit = std::min(limit, telemetry::UsageQuery::kMaxRows);
        q.maxGroups = std::min(limit, telemetry::UsageQuery::kMaxMaxGroups);
    }
    // The exchange outlives this call: kept under the API until the ledger answers or the client leaves.
    exchange->setParent(this);
    QPointer<HttpExchange> target(exchange);
    connect(exchange, &HttpExchange::clientGone, exchange, &QObject::deleteLater);
    m_engine.queryUsage(q, this, [this, target, opener = openerOf(req)](const telemetry::UsageReport &report) {
        if (!target)
            return;
        // A reload while the ledger worked may have taken the caller's admin right away.
        if (const auto config = m_engine.config(); config && !stillAdmin(opener, *config)) {
            json(target, 403,
                 QJsonDocument(QJsonObject{{QStringLiteral("error"),
                                            QJsonObject{{QStringLiteral("message"),
                                                         QStringLiteral("admin key required: this key's admin right "
                                                                        "was taken away by a reload")}}}})
                     .toJson(QJsonDocument::Compact));
            target->deleteLater();
            return;
        }
        json(target, 200, QJsonDocument(report.toJson()).toJson(QJsonDocument::Compact));
        target->deleteLater();
    });
}

void AdminApi::handle(const InboundRequest &req, HttpExchange *exchange) {
    const QString path = req.path;
    auto error = [&](int status, const QString &message) {
        json(exchange, status,
             QJsonDocument(QJsonObject{{QStringLiteral("error"), QJsonObject{{QStringLiteral("message"), message}}}})
                 .toJson(QJsonDocument::Compact));
    };
    if (path == QLatin1String("/admin/marks")) {
        if (req.method == "GET")
            return json(exchange, 200, marksJson(m_engine));
        if (req.method == "DELETE") {
            failover::MarkFilter f;
            f.tenant = req.query.queryItemValue(QStringLiteral("tenant"), QUrl::FullyDecoded);
            f.provider = req.query.queryItemValue(QStringLiteral("provider"), QUrl::FullyDecoded);
            f.baseUrl = req.query.queryItemValue(QStringLiteral("baseUrl"), QUrl::FullyDecoded);
            f.model = req.query.queryItemValue(QStringLiteral("model"), QUrl::FullyDecoded);
            const int n = m_engine.clearMarks(f);
            return json(exchange, 200,
                        QJsonDocument(QJsonObject{{QStringLiteral("cleared"), n}}).toJson(QJsonDocument::Compact));
        }
        return wrongMethod(exchange, "GET, HEAD, DELETE");
    }
    if (path == QLatin1String("/admin/credentials"))
        return handleCredentials(req, exchange);
    if (path == QLatin1String("/admin/attempts") && req.method == "GET") {
        bool ok = false;
        int limit = req.query.queryItemValue(QStringLiteral("limit")).toInt(&ok);
        if (!ok || limit <= 0)
            limit = 100;
        QJsonArray arr;
        for (const auto &a : m_engine.telemetry()->attempts(limit))
            arr.append(attemptToJson(a));
        return json(exchange, 200,
                    QJsonDocument(QJsonObject{{QStringLiteral("attempts"), arr}}).toJson(QJsonDocument::Compact));
    }
    if (path == QLatin1String("/admin/usage") && req.method == "GET")
        return handleUsage(req, exchange);
    if (path == QLatin1String("/admin/events") && req.method == "GET") {
        // HttpFront makes every exchange a child of its connection's socket; taken before the
        // exchange moves under this API for the life of the feed.
        Feed feed{exchange, openerOf(req), qobject_cast<QTcpSocket *>(exchange->parent())};
        exchange->beginStream(200, {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}});
        exchange->write(wire::sseFrameOfText(marksJson(m_engine), "marks"));
        exchange->setParent(this);
        connect(exchange, &HttpExchange::clientGone, exchange, &QObject::deleteLater);
        if (feed.socket)
            connect(feed.socket, &QIODevice::bytesWritten, exchange, [this, exchange]() { catchUp(exchange); });
        m_feeds.append(feed);
        return;
    }
    if (path == QLatin1String("/admin/events") && req.method != "GET")
        return wrongMethod(exchange, "GET"); // a HEAD too: the feed has no end to send headers for
    if (path == QLatin1String("/admin/reload") && req.method == "POST") {
        QString why;
        if (!m_engine.reload(&why))
            return error(400, why);
        // What the file changed that only a restart applies is said here, not only in a log line
        // (probe R3 F3: a marks store moved to Redis answered as if applied, and the other replica
        // never saw this one's marks).
        const QStringList later = m_engine.waitingForRestart();
        if (later.isEmpty())
            return json(exchange, 200, QByteArrayLiteral("{\"reloaded\":true}"));
        return json(exchange, 200,
                    QJsonDocument(QJsonObject{{QStringLiteral("reloaded"), true},
                                              {QStringLiteral("atNextStart"), QJsonArray::fromStringList(later)}})
                        .toJson(QJsonDocument::Compact));
    }
    error(404, QStringLiteral("unknown admin endpoint %1 %2").arg(QString::fromLatin1(req.method), path));
}

} // namespace sw::server
