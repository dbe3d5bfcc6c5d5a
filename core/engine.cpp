#include "core/engine.h"

#include "core/config/config_loader.h"
#include "core/credentials/credential_pools.h"
#include "core/credentials/keychain_store.h"
#include "core/demo/fake_upstream.h"
#include "core/redis/redis_mark_sync.h"
#include "core/server/admin_api.h"
#include "core/server/guarded_tcp_server.h"
#include "core/server/http_front.h"
#include "core/server/idempotency_store.h"
#include "core/server/router.h"
#include "core/telemetry/budget_tracker.h"
#include "core/telemetry/telemetry.h"
#include "core/telemetry/usage_ledger.h"
#include "core/telemetry/usage_report.h"
#include "core/upstream/default_transport.h"
#include "core/upstream/upstream_attempt.h"
#include "core/util/byte_budget.h"
#include "core/util/clock.h"
#include "core/util/heap_release.h"
#include "core/wire/api.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QSslCertificate>
#include <QSysInfo>
#include <QTcpSocket>
#include <algorithm>
#include <utility>

namespace sw {

namespace {
// A request or answer that held this much of limits.maxBodyBytesInFlight at once leaves enough free
// heap behind to be worth giving back (about ten times its size for a long conversation), and
// kHeapReleaseDelayMs after the budget empties lets its last objects be deleted first.
constexpr qint64 kLargeHoldBytes = 4LL << 20;
constexpr int kHeapReleaseDelayMs = 1000;

// What a request still in flight when Switchman shuts down ends with: in band for a stream that
// is open, a whole 503 (with Retry-After, which the SDKs honour) for an answer not yet given.
model::GatewayError shutdownError() {
    auto error = model::GatewayError::make(503, model::ErrorCategory::Overloaded,
                                           QStringLiteral("Switchman shut down before this answer was complete "
                                                          "(limits.shutdownGraceMs); retry the request"));
    error.retryAfterMs = 1000;
    return error;
}

// providers.NAME.caFile → the transport's trust table (the loader has checked each file);
// providers.NAME.proxy → its proxy table, by the base URL's host key; failover.connectTimeoutMs.
void applyCaFiles(upstream::Transport *transport, const config::Config &cfg) {
    upstream::Transport::CaTable table;
    upstream::Transport::ProxyTable proxies;
    for (const auto &p : cfg.providers) {
        if (!p.caFile.isEmpty())
            table[p.caFile] = QSslCertificate::fromPath(p.caFile, QSsl::Pem);
        if (!p.proxy.isEmpty() && !p.demo)
            proxies[upstream::hostKeyOf(QUrl(p.baseUrl))] = p.proxy;
    }
    transport->setExtraCaCertificates(table);
    transport->setProxies(proxies);
    transport->setConnectTimeoutMs(cfg.failover.connectTimeoutMs);
}
} // namespace

Engine::Engine(Options options, QObject *parent) : QObject(parent), m_options(std::move(options)) {
    util::Clock *clock = m_options.clock ? m_options.clock : &util::systemClock();
    if (!m_options.transport)
        m_ownedTransport = std::make_unique<upstream::DefaultTransport>();
    if (!m_options.secrets)
        m_ownedSecrets = std::make_unique<credentials::KeychainStore>();
    m_marks = std::make_unique<failover::ProviderDownMarks>(*clock);
    m_pools = std::make_unique<credentials::CredentialPools>(
        m_options.secrets ? m_options.secrets : m_ownedSecrets.get(), *clock);
    m_idempotency = std::make_unique<server::IdempotencyStore>(*clock);
    m_idempotency->setBounds(m_options.config.limits.maxReplayBytes, m_options.config.limits.maxHoldBytes);
    m_idempotency->setMaxKeysPerTenant(m_options.config.limits.maxIdempotencyKeysPerTenant);
    m_telemetry = new telemetry::Telemetry(this);
    m_telemetry->setJsonLogToStderr(m_options.jsonLogToStderr);
    // With the window, nothing reads the log until its publisher exists, after the start: the start's
    // lines ("usage: N answers cut by a crash billed by estimate", "listening", Redis unreachable)
    // were written nowhere (probe AB4 F3). The first ones wait here for it.
    if (!m_options.jsonLogToStderr)
        m_earlyLogKeeper =
            connect(m_telemetry, &telemetry::Telemetry::logged, this, [this](const telemetry::LogRecord &line) {
                m_earlyLog.append(line.toJson());
                if (m_earlyLog.size() >= kEarlyLogLines)
                    disconnect(m_earlyLogKeeper);
            });

    config::Config cfg = m_options.config;
    if (m_options.demo)
        startDemoUpstreams(cfg);
    m_ctx.config = std::make_shared<const config::Config>(cfg);
    m_bytesInFlight = std::make_shared<util::ByteBudget>(cfg.limits.maxBodyBytesInFlight);
    // A body of many megabytes decodes into several times its size in small blocks. Once its request
    // is done they are free but stay cached in the allocator (mimalloc keeps freed pages), and a
    // desktop gateway would keep hundreds of megabytes resident after one large turn. A second after
    // the budget empties, what is free goes back, at most once a second. Not while bytes are held
    // again: the heap is in use then, and the request holding them arms the release anew if it is large.
    m_bytesInFlight->onEmptiedAfterLarge(kLargeHoldBytes, [this, clock]() {
        if (m_heapReleaseTimer)
            return;
        m_heapReleaseTimer = clock->schedule(kHeapReleaseDelayMs, [this]() {
            m_heapReleaseTimer = 0;
            if (m_bytesInFlight->held() == 0)
                util::releaseFreeHeap();
        });
    });
    m_serverTraits = std::make_shared<upstream::ServerTraits>();
    m_ctx.clock = clock;
    m_transport = m_options.transport ? m_options.transport : m_ownedTransport.get();
    applyCaFiles(m_transport, cfg);
    m_ctx.marks = m_marks.get();
    m_ctx.telemetry = m_telemetry;
    m_ctx.idempotency = m_idempotency.get();
    m_ctx.marksChanged = [this]() { Q_EMIT marksChanged(); };
    // The upstream side of each chat request: our transport and credential pools behind the failover loop.
    m_ctx.makeAttemptRunner = [this](server::AttemptRunnerSetup s, QObject *parent) {
        upstream::UpstreamAttemptSetup setup;
        setup.pools = m_pools.get();
        setup.transport = m_transport;
        setup.config = std::move(s.config);
        setup.request = s.request;
        setup.forwardHeaders = std::move(s.forwardHeaders);
        setup.callerAuth = std::move(s.callerAuth);
        setup.callerAuthProvider = std::move(s.callerAuthProvider);
        setup.callerAuthBaseUrl = std::move(s.callerAuthBaseUrl);
        setup.outputCap = s.outputCap;
        setup.via = std::move(s.via);
        setup.tenant = std::move(s.tenant);
        setup.bytesInFlight = m_bytesInFlight;
        setup.traits = m_serverTraits;
        auto *runner = new upstream::UpstreamAttempts(std::move(setup), parent);
        return server::AttemptRunnerHandle{runner, [runner](failover::AttemptLoop *loop) { runner->setLoop(loop); }};
    };
    m_pools->setChangedCallback([this]() {
        logCredentialChanges();
        Q_EMIT credentialsChanged();
    });
    configurePools();
    startUsage();

    const quint64 r = QRandomGenerator::global()->generate64();
    m_requestPrefix = QByteArray::number(r, 36).left(6);
    m_router = new server::Router(m_ctx, *this, m_budgets, m_requestPrefix, this);
    connect(this, &Engine::marksChanged, &m_router->admin(), &server::AdminApi::publishMarks);
    connect(this, &Engine::marksChanged, this, &Engine::armMarkExpiry);
    // A reload that takes an admin right away ends that admin's open event feed.
    connect(this, &Engine::configApplied, &m_router->admin(), &server::AdminApi::configChanged);
    m_front =
        new server::HttpFront([router = m_router](server::InboundRequest &&req,
                                                  server::HttpExchange *ex) { router->dispatch(std::move(req), ex); },
                              this);
    m_front->setHeadHandler(
        [router = m_router](const server::RequestHead &head, const server::ListenerIdentity &listener) {
            return router->judgeHead(head, listener);
        });
    startMarkSync();
}

namespace {
server::IdempotencyStore::Kept keptOf(telemetry::ReplayRow row) {
    server::IdempotencyStore::Kept k;
    k.tenant = std::move(row.tenant);
    k.key = std::move(row.key);
    k.requestDigest = std::move(row.requestDigest);
    k.atEpochMs = row.atEpochMs;
    k.hit.status = row.status;
    k.hit.headers = server::IdempotencyStore::decodeHeaders(row.headers);
    k.hit.body = std::move(row.body);
    return k;
}
} // namespace

void Engine::startReplays() {
    // A retry within the Idempotency-Key window is answered once, across a restart, and on any
    // replica sharing the ledger file (within a read): one billable interaction (seed 003). An
    // answer held only in memory was answered afresh, and billed again, after every restart.
    const qint64 maxBytes = m_ctx.config->limits.maxReplayBytes;
    const qint64 since = m_ctx.clock->epochMs() - server::IdempotencyStore::kRetentionMs;
    for (telemetry::ReplayRow &row : m_ledger->loadReplays(since, maxBytes))
        m_idempotency->adopt(keptOf(std::move(row)));
    if (!m_ledger->persistent())
        return; // in memory (nothing outlives this process) or read-only (nothing can be kept)
    m_idempotency->setJournal([this](server::IdempotencyStore::Kept k) {
        if (!m_ledger) // gone at shutdown
            return;
        telemetry::ReplayRow row;
        row.tenant = std::move(k.tenant);
        row.key = std::move(k.key);
        row.dropped = k.dropped;
        row.requestDigest = std::move(k.requestDigest);
        row.status = k.hit.status;
        row.headers = server::IdempotencyStore::encodeHeaders(k.hit.headers);
        row.body = std::move(k.hit.body);
        row.atEpochMs = k.atEpochMs;
        m_ledger->keepReplay(std::move(row));
    });
    scheduleReplayRead();
}

void Engine::scheduleReplayRead() {
    m_replayReadTimer = m_ctx.clock->schedule(kReplayReadMs, [this]() {
        m_replayReadTimer = 0;
        if (!m_ledger)
            return;
        const qint64 since = m_ctx.clock->epochMs() - server::IdempotencyStore::kRetentionMs;
        m_ledger->readNewReplays(since, m_ctx.config->limits.maxReplayBytes, this,
                                 [this](QList<telemetry::ReplayRow> rows) {
                                     for (telemetry::ReplayRow &row : rows)
                                         m_idempotency->adopt(keptOf(std::move(row)));
                                 });
        scheduleReplayRead();
    });
}

void Engine::startUsage() {
    telemetry::UsageLedger::Options lo;
    lo.path = m_options.usageLedgerPath;
    lo.retentionDays = m_ctx.config->usage.retentionDays;
    lo.maxPages = m_options.usageLedgerMaxPages;
    lo.routeOf = [this](const QString &requestId) { return m_telemetry->routeOf(requestId); };
    m_ledger = std::make_unique<telemetry::UsageLedger>(
        std::move(lo), *m_ctx.clock, [this](const QString &level, const QString &message, const QJsonObject &fields) {
            m_telemetry->log(level, message, fields);
        });
    telemetry::BudgetTracker::Store store;
    store.spentSince = [this](const QString &tenant, qint64 since, qint64 until) -> std::optional<double> {
        bool ok = false;
        const double spent = m_ledger->spentSince(tenant, since, until, &ok);
        return ok ? std::optional<double>(spent) : std::nullopt;
    };
    store.available = [this]() { return m_ledger->readable(); };
    store.noticeGiven = [this](const QString &tenant, qint64 start) {
        return m_ledger->budgetNoticeGiven(tenant, start);
    };
    store.rememberNotice = [this](const QString &tenant, qint64 start) {
        m_ledger->rememberBudgetNotice(tenant, start);
    };
    // A ledger file may be shared (replicas with one data folder): what the others spend is read
    // from it. One held in memory is this process's alone.
    if (m_ledger->persistent() || m_ledger->readOnly())
        store.readSpend = [this](const QList<telemetry::SpendWindow> &windows,
                                 telemetry::BudgetTracker::Store::SpendAnswer done) {
            if (m_ledger) // gone at shutdown: the tracker reads no more
                m_ledger->readSpend(windows, m_budgets, std::move(done));
        };
    m_budgets = new telemetry::BudgetTracker(*m_ctx.clock, std::move(store), this);
    m_ctx.budgets = m_budgets;
    startReplays();
    connect(m_telemetry, &telemetry::Telemetry::usageRecorded, this, [this](const telemetry::UsageRow &row) {
        // Counted before the ledger holds it: a budget entering a new period reads the ledger, which
        // must not hold this row yet, or its cost would count twice.
        m_budgets->add(row.tenant, row.cost);
        m_ledger->append(row);
    });
    // A committed answer's open row: billed ("interrupted") at the next start if this process dies first.
    connect(m_telemetry, &telemetry::Telemetry::answerOpened, this,
            [this](const telemetry::UsageRow &row) { m_ledger->openAnswer(row); });
    connect(m_telemetry, &telemetry::Telemetry::answerClosed, this,
            [this](const QString &requestId) { m_ledger->closeAnswer(requestId); });
    connect(m_budgets, &telemetry::BudgetTracker::warning, this, [this](const telemetry::BudgetState &s) {
        m_telemetry->log(QStringLiteral("warn"), QStringLiteral("budget at 80 %"),
                         {{QStringLiteral("tenant"), s.tenant},
                          {QStringLiteral("budget"), telemetry::budgetDescription(s)},
                          {QStringLiteral("spentUsd"), s.spent}});
        if (m_budgetWarnings.size() >= 100)
            m_budgetWarnings.removeFirst();
        m_budgetWarnings.append(s);
        Q_EMIT budgetWarning(s);
    });
    connect(m_budgets, &telemetry::BudgetTracker::reached, this, [this](const telemetry::BudgetState &s) {
        m_telemetry->log(
            QStringLiteral("warn"), QStringLiteral("budget reached: requests refused until the period resets"),
            {{QStringLiteral("tenant"), s.tenant},
             {QStringLiteral("budget"), telemetry::budgetDescription(s)},
             {QStringLiteral("spentUsd"), s.spent},
             {QStringLiteral("resetsAt"), QDateTime::fromMSecsSinceEpoch(s.periodEndMs).toString(Qt::ISODate)}});
    });
    m_budgets->configure(m_ctx.config->tenants);
}

void Engine::queryUsage(const telemetry::UsageQuery &query, QObject *context,
                        std::function<void(const telemetry::UsageReport &)> done) {
    m_ledger->query(query, context, std::move(done));
}

QList<telemetry::BudgetState> Engine::budgets() const {
    return m_budgets->states();
}

void Engine::startMarkSync() {
    // Redis-shared marks are chosen at start: a reload that changes `marks` takes effect on restart
    // (applyConfig says so), and the store's status describes this one.
    m_marksStarted = m_ctx.config->marks;
    const config::MarksConfig &mc = m_marksStarted;
    if (mc.store != QLatin1String("redis"))
        return;
    auto endpoint = redis::RedisEndpoint::parse(mc.url, nullptr);
    if (!endpoint)
        return; // the loader already refused such a file
    redis::RedisMarkSync::Options o;
    o.endpoint = *endpoint;
    o.endpoint.caFile = mc.caFile;
    o.prefix = mc.prefix;
    o.replicaId = QStringLiteral("%1-%2-%3")
                      .arg(QSysInfo::machineHostName())
                      .arg(QCoreApplication::applicationPid())
                      .arg(QString::fromLatin1(m_requestPrefix));
    o.log = [this](const QString &level, const QString &message, const QJsonObject &fields) {
        m_telemetry->log(level, message, fields);
    };
    // Marks read from Redis for what this configuration (as reloaded) has; the rest is ignored.
    o.accepts = [this](const failover::MarkInfo &m) { return redis::RedisMarkSync::configures(*m_ctx.config, m); };
    auto begin = [this](redis::RedisMarkSync::Options options) {
        m_markSync = new redis::RedisMarkSync(*m_marks, *m_ctx.clock, std::move(options), this);
        connect(m_markSync, &redis::RedisMarkSync::marksChanged, this, &Engine::marksChanged);
        connect(m_markSync, &redis::RedisMarkSync::storeUpChanged, this, &Engine::marksStoreChanged);
        m_markSync->start();
    };
    if (mc.password.startsWith(QLatin1String("env:"))) {
        o.endpoint.password = qgetenv(mc.password.mid(4).toLocal8Bit().constData());
        begin(std::move(o));
    } else if (mc.password.startsWith(QLatin1String("keychain:"))) {
        credentials::SecretStore *store = m_options.secrets ? m_options.secrets : m_ownedSecrets.get();
        store->read(mc.password.mid(9), this, [this, o, begin](const credentials::SecretResult &r) mutable {
            if (!r.ok)
                m_telemetry->log(QStringLiteral("warn"), QStringLiteral("marks: cannot read the Redis password"),
                                 {{QStringLiteral("error"), r.error}});
            o.endpoint.password = r.secret;
            begin(std::move(o));
        });
    } else {
        begin(std::move(o));
    }
}

QString Engine::marksStoreDescription() const {
    if (!marksShared())
        return QStringLiteral("memory");
    return m_markSync ? m_markSync->describe() : QStringLiteral("local only (Redis unreachable)");
}

bool Engine::marksStoreUp() const {
    return !marksShared() || (m_markSync && m_markSync->storeUp());
}

bool Engine::marksShared() const {
    return m_marksStarted.store == QLatin1String("redis");
}

namespace {
// A marks store as the log names it: never a password (a URL may hold one).
QString marksStoreName(const config::MarksConfig &m) {
    if (m.store != QLatin1String("redis"))
        return QStringLiteral("memory");
    const auto endpoint = redis::RedisEndpoint::parse(m.url, nullptr);
    return QStringLiteral("%1, prefix %2").arg(endpoint ? endpoint->display() : QStringLiteral("?"), m.prefix);
}
} // namespace

Engine::~Engine() {
    // The listener's connections give their bytes back to the budget as Qt deletes them, after this
    // body: an emptied budget must not call into an engine that is gone.
    m_bytesInFlight->onEmptiedAfterLarge(0, nullptr);
    // Requests first (they reference the context), then the listener. Each is ended as a cut is
    // (its client told, its answer billed) before it goes.
    if (m_shutdown.graceTimer)
        m_ctx.clock->cancel(m_shutdown.graceTimer);
    m_router->shutDownRequests(shutdownError());
    m_router->closeRequests();
    // Then the ledger: what is pending is written before the worker stops (telemetry still lives).
    if (m_replayReadTimer)
        m_ctx.clock->cancel(std::exchange(m_replayReadTimer, 0));
    if (m_markExpiryTimer)
        m_ctx.clock->cancel(std::exchange(m_markExpiryTimer, 0));
    if (m_heapReleaseTimer)
        m_ctx.clock->cancel(std::exchange(m_heapReleaseTimer, 0));
    m_ledger.reset();
    // The Redis sync is a child (deleted by ~QObject, after the members) and detaches
    // itself from the mark table in its destructor: it must go while m_marks still exists
    // (ASan: heap-use-after-free on every exit with marks.store redis).
    delete std::exchange(m_markSync, nullptr);
}

void Engine::startDemoUpstreams(config::Config &cfg) {
    for (auto it = cfg.providers.begin(); it != cfg.providers.end(); ++it) {
        if (!it->demo)
            continue;
        auto *fake = new demo::FakeUpstream(this);
        fake->setObjectName(it->id);
        fake->listen();
        for (const auto &m : std::as_const(cfg.models))
            if (m.provider == it->id) {
                fake->setLabel(m.key());
                break;
            }
        m_demo.insert(it->id, fake);
        const QString base = fake->baseUrl();
        // Base URLs as the real providers spell them: OpenAI's include /v1, Google's /v1beta.
        if (wire::isApi(it->api, wire::Api::OpenAICompletions) || wire::isApi(it->api, wire::Api::OpenAIResponses))
            it->baseUrl = base + QStringLiteral("/v1");
        else if (wire::isApi(it->api, wire::Api::Google))
            it->baseUrl = base + QStringLiteral("/v1beta");
        else
            it->baseUrl = base;
    }
}

demo::FakeUpstream *Engine::demoUpstream(const QString &providerId) const {
    return m_demo.value(providerId);
}

QStringList Engine::demoProviders() const {
    QStringList ids = m_demo.keys();
    ids.sort();
    return ids;
}

bool Engine::start(QString *error, const QString &listenOverride) {
    const QString listen = listenOverride.isEmpty() ? m_ctx.config->listen : listenOverride;
    const qsizetype colon = listen.lastIndexOf(QLatin1Char(':'));
    bool ok = false;
    const int port = colon > 0 ? listen.mid(colon + 1).toInt(&ok) : -1;
    QString host = colon > 0 ? listen.left(colon) : QString();
    if (host.startsWith(QLatin1Char('[')) && host.endsWith(QLatin1Char(']')))
        host = host.mid(1, host.size() - 2);
    if (!ok || port < 0 || port > 65535) {
        if (error)
            *error = QStringLiteral("listen address \"%1\" is not HOST:PORT").arg(listen);
        return false;
    }
    m_host = host == QLatin1String("localhost") ? QHostAddress(QHostAddress::LocalHost) : QHostAddress(host);
    if (m_host.isNull()) {
        if (error)
            *error = QStringLiteral("listen host \"%1\" is not an IP address").arg(host);
        return false;
    }
    if (!m_host.isLoopback() && m_ctx.config->tenants.isEmpty()) {
        if (error)
            *error = QStringLiteral("refusing to listen on non-loopback %1 with no tenants configured: anyone on the "
                                    "network could use your provider keys. Add a tenant with `switchman key create`.")
                         .arg(listen);
        return false;
    }
    auto *tcp = new server::GuardedTcpServer(m_ctx.config->limits, m_bytesInFlight, m_front, m_front);
    if (!tcp->listen(m_host, quint16(port))) {
        if (error)
            *error = QStringLiteral("cannot listen on %1: %2").arg(listen, tcp->errorString());
        delete tcp;
        return false;
    }
    connect(tcp, &server::GuardedTcpServer::descriptorsExhausted, this, [this](int shed) {
        m_telemetry->log(QStringLiteral("warn"),
                         QStringLiteral("out of file descriptors: new connections are answered 503 and closed; raise "
                                        "the open-files limit (ulimit -n, systemd's LimitNOFILE) or lower "
                                        "limits.maxConnections"),
                         QJsonObject{{QStringLiteral("connectionsShed"), shed}});
    });
    connect(tcp, &server::GuardedTcpServer::connectionLimitReached, this, [this](int refused, int max) {
        m_telemetry->log(
            QStringLiteral("warn"),
            QStringLiteral("connections refused: limits.maxConnections (%2) are open, and %1 more were "
                           "answered 503 and closed; raise it, or look for a client that holds "
                           "connections open without using them")
                .arg(refused)
                .arg(max),
            QJsonObject{{QStringLiteral("connectionsRefused"), refused}, {QStringLiteral("maxConnections"), max}});
    });
    const auto countRefusal = [this](int status) { m_telemetry->countRefusal(status); };
    connect(tcp, &server::GuardedTcpServer::refused, this, countRefusal);
    connect(m_front, &server::HttpFront::refused, this, countRefusal);
    m_front->bind(tcp);
    m_tcp = tcp;
    m_port = tcp->serverPort();
    m_front->setListener({m_host, m_port});
    m_front->setLimits(m_ctx.config->limits);
    prewarmCredentials();
    m_telemetry->log(QStringLiteral("info"), QStringLiteral("listening"), {{QStringLiteral("url"), baseUrl()}});
    return true;
}

int Engine::activeRequests() const {
    return m_router->activeRequests();
}

int Engine::openConnections() const {
    return m_tcp ? m_tcp->openConnections() : 0;
}

void Engine::requestShutdown() {
    Shutdown &s = m_shutdown;
    if (s.started) {
        // Asked again (a second SIGTERM or Ctrl-C): end what is left now, and do not wait for it.
        m_telemetry->log(QStringLiteral("info"), QStringLiteral("shutdown asked again: ending requests now"));
        endShutdownGrace();
        return emitDrained();
    }
    s.started = true;
    s.startMs = m_ctx.clock->nowMs();
    s.inFlight = activeRequests();
    if (m_tcp)
        m_tcp->close(); // new connections are refused
    m_router->setDraining(true);
    const int graceMs = m_ctx.config->limits.shutdownGraceMs;
    m_telemetry->log(QStringLiteral("info"),
                     QStringLiteral("shutting down: listener closed, requests in flight may finish"),
                     {{QStringLiteral("inFlight"), s.inFlight}, {QStringLiteral("graceMs"), graceMs}});
    connect(m_router, &server::Router::requestEnded, this, &Engine::checkDrained, Qt::QueuedConnection);
    s.graceTimer = m_ctx.clock->schedule(graceMs, [this]() {
        m_shutdown.graceTimer = 0;
        endShutdownGrace();
    });
    checkDrained();
}

void Engine::endShutdownGrace() {
    Shutdown &s = m_shutdown;
    if (s.graceTimer)
        m_ctx.clock->cancel(std::exchange(s.graceTimer, 0));
    if (s.graceOver || s.flushing)
        return;
    s.graceOver = true;
    s.cut = activeRequests();
    m_router->shutDownRequests(shutdownError());
    checkDrained();
}

void Engine::checkDrained() {
    Shutdown &s = m_shutdown;
    if (!s.started || s.flushing || s.done || activeRequests() > 0)
        return;
    s.flushing = true;
    if (s.graceTimer)
        m_ctx.clock->cancel(std::exchange(s.graceTimer, 0));
    m_telemetry->log(QStringLiteral("info"), QStringLiteral("shut down: no request in flight"),
                     {{QStringLiteral("finished"), s.inFlight - s.cut},
                      {QStringLiteral("cut"), s.cut},
                      {QStringLiteral("elapsedMs"), m_ctx.clock->nowMs() - s.startMs}});
    // What was written to each client leaves before its connection ends: an answer's last bytes
    // may still wait in Qt's buffer for a slow reader, and deleting a socket drops them.
    QList<QPointer<QTcpSocket>> sockets;
    if (m_tcp)
        for (QTcpSocket *socket : m_tcp->findChildren<QTcpSocket *>()) {
            sockets.append(socket);
            socket->disconnectFromHost();
        }
    s.flushDeadline = QDeadlineTimer(kShutdownFlushMs);
    s.flushTimer = new QTimer(this);
    s.flushTimer->setInterval(10);
    const auto poll = [this, sockets]() {
        const bool out = std::all_of(sockets.cbegin(), sockets.cend(), [](const QPointer<QTcpSocket> &socket) {
            return !socket || socket->state() == QAbstractSocket::UnconnectedState;
        });
        if (out || m_shutdown.flushDeadline.hasExpired())
            emitDrained();
    };
    connect(s.flushTimer, &QTimer::timeout, this, poll);
    s.flushTimer->start();
    poll();
}

void Engine::emitDrained() {
    Shutdown &s = m_shutdown;
    if (s.done)
        return;
    s.done = true;
    if (s.flushTimer)
        s.flushTimer->stop();
    Q_EMIT drained();
}

QString Engine::baseUrl() const {
    const QString host = m_host.protocol() == QAbstractSocket::IPv6Protocol
                             ? QStringLiteral("[%1]").arg(m_host.toString())
                             : m_host.toString();
    return QStringLiteral("http://%1:%2").arg(host).arg(m_port);
}

void Engine::armMarkExpiry() {
    // A mark that runs out changes what /admin/events, /admin/marks and the window show, as a set or
    // a cleared one does: the feed hears of it when it happens (probe I3 3), not at the next change.
    if (m_markExpiryTimer)
        m_ctx.clock->cancel(std::exchange(m_markExpiryTimer, 0));
    qint64 next = -1;
    const qint64 now = m_ctx.clock->nowMs();
    for (const failover::MarkInfo &m : m_marks->active())
        next = next < 0 ? m.expiresAtMs - now : std::min(next, m.expiresAtMs - now);
    if (next < 0)
        return;
    m_markExpiryTimer = m_ctx.clock->schedule(next + 1, [this]() {
        m_markExpiryTimer = 0;
        Q_EMIT marksChanged();
    });
}

int Engine::clearMarks(const failover::MarkFilter &filter) {
    const int n = m_marks->clear(filter);
    if (n > 0) {
        // Who cleared what, for whoever asks later why a provider came back early.
        m_telemetry->log(QStringLiteral("info"), QStringLiteral("marks cleared"),
                         {{QStringLiteral("count"), n},
                          {QStringLiteral("tenant"), filter.tenant},
                          {QStringLiteral("provider"), filter.provider},
                          {QStringLiteral("model"), filter.model}});
        Q_EMIT marksChanged();
    }
    return n;
}

void Engine::dropUnconfiguredMarks(const config::Config &cfg) {
    // A mark of a tenant, provider, base URL or model the configuration no longer has is shown in
    // /admin/marks and the window as if it were down, and would be applied again to one of the same
    // name that came back within its TTL (probe G1 5). Dropped here alone: another replica sharing
    // the marks through Redis may still have it (RedisMarkSync drops what it receives the same way).
    QList<failover::MarkInfo> dropped;
    for (const failover::MarkInfo &m : m_marks->active())
        if (!redis::RedisMarkSync::configures(cfg, m) && m_marks->applyClear(failover::MarkFilter::exactly(m)) > 0)
            dropped.append(m);
    if (!dropped.isEmpty()) {
        // Redis's copy is taken again if a later reload brings them back (probe J4 5).
        if (m_markSync)
            m_markSync->forget(dropped);
        m_telemetry->log(QStringLiteral("info"), QStringLiteral("marks dropped: no longer configured"),
                         {{QStringLiteral("count"), int(dropped.size())}});
        Q_EMIT marksChanged();
    }
}

QList<failover::MarkInfo> Engine::marks() const {
    return m_marks->active();
}

void Engine::configurePools() {
    QMap<QString, QStringList> pools;
    for (const auto &p : m_ctx.config->providers)
        pools.insert(p.id, p.credentials);
    m_pools->configure(pools);
}

void Engine::logCredentialChanges() {
    // One line per credential that went out of use or came back, so a headless log says why a
    // provider is passed over. By reference and position, never by value.
    QHash<QString, credentials::CredentialHealth> now;
    for (const auto &c : m_pools->states()) {
        const QString key = c.provider + QChar(0) + QString::number(c.position);
        now.insert(key, c.state);
        if (c.state == m_credentialHealth.value(key, credentials::CredentialHealth::Ok))
            continue;
        if (c.state == credentials::CredentialHealth::Missing)
            continue; // said once per start or reload, with the way out (prewarmCredentials)
        QJsonObject fields{{QStringLiteral("provider"), c.provider},
                           {QStringLiteral("credentialIndex"), c.position},
                           {QStringLiteral("ref"), c.ref}};
        if (c.state == credentials::CredentialHealth::Unavailable) {
            // The keychain could not be read (no Secret Service, locked): nothing the provider did,
            // so no reason or status. prewarmCredentials leaves this line to here.
            fields.insert(QStringLiteral("credential"), c.ref);
            fields.insert(QStringLiteral("hint"), c.lastError);
            m_telemetry->log(QStringLiteral("warn"), QStringLiteral("keychain unavailable"), fields);
            continue;
        }
        if (c.state != credentials::CredentialHealth::Ok) {
            fields.insert(QStringLiteral("reason"), credentials::parkReasonName(c.reason));
            fields.insert(QStringLiteral("status"), c.status);
            if (c.remainingMs)
                fields.insert(QStringLiteral("parkedForMs"), double(*c.remainingMs));
            fields.insert(QStringLiteral("lastError"), c.lastError);
        }
        m_telemetry->log(c.state == credentials::CredentialHealth::Ok ? QStringLiteral("info") : QStringLiteral("warn"),
                         c.state == credentials::CredentialHealth::Parked ? QStringLiteral("credential parked")
                         : c.state == credentials::CredentialHealth::Rejected
                             ? QStringLiteral("credential rejected")
                             : QStringLiteral("credential back in use"),
                         fields);
    }
    m_credentialHealth = now;
}

bool Engine::wasInUse(const QString &ref) const {
    for (const auto &p : m_ctx.config->providers)
        for (int i = 0; i < p.credentials.size(); ++i)
            if (p.credentials.at(i) == ref &&
                m_credentialHealth.value(p.id + QChar(0) + QString::number(i), credentials::CredentialHealth::Ok) ==
                    credentials::CredentialHealth::Ok)
                return true;
    return false;
}

QList<credentials::CredentialStatus> Engine::credentialStates() const {
    return m_pools->states();
}

int Engine::clearCredentials(const credentials::CredentialFilter &filter) {
    const int n = m_pools->clear(filter);
    m_telemetry->log(QStringLiteral("info"), QStringLiteral("credentials cleared"),
                     {{QStringLiteral("provider"), filter.provider},
                      {QStringLiteral("ref"), filter.ref},
                      {QStringLiteral("cleared"), n}});
    return n;
}

int Engine::credentialChanged(const QString &ref) {
    const int n = m_pools->credentialChanged(ref);
    m_telemetry->log(QStringLiteral("info"), QStringLiteral("credential changed"),
                     {{QStringLiteral("ref"), ref}, {QStringLiteral("cleared"), n}});
    return n;
}

QStringList Engine::waitingForRestart() const {
    QStringList out;
    if (m_ctx.config->marks != m_marksStarted)
        out << QStringLiteral("marks");
    return out;
}

QList<QJsonObject> Engine::takeEarlyLog() {
    disconnect(m_earlyLogKeeper);
    return std::exchange(m_earlyLog, {});
}

QString Engine::refusalOf(const config::Config &next) const {
    // The listener never moves while the gateway runs: what it is bound to decides what a
    // configuration may take away. One that says loopback (or a start given --listen) must not turn
    // off the keys of a listener the network can reach.
    if (m_tcp && !m_host.isLoopback() && next.tenants.isEmpty())
        return QStringLiteral("refused: this gateway listens on %1, which the network can reach, and the "
                              "configuration has no tenants, so anyone could use your provider keys and the admin "
                              "API. Add a tenant (`switchman key create`), or restart it on a loopback address")
            .arg(baseUrl());
    // Nor is a provider at the gateway's own address judged by the configuration's `listen`: with
    // --listen at start, or a `listen` edited since, it is not where the gateway listens, and a
    // provider pointing back here was applied and then answered every request 508 (probe K1 6).
    const QString listening =
        m_tcp ? baseUrl().mid(7) : (m_options.listenGiven.isEmpty() ? m_ctx.config->listen : m_options.listenGiven);
    QStringList problems;
    for (const auto &e : config::providersAtListener(next, listening))
        problems << e.toString();
    return problems.join(QStringLiteral("; "));
}

bool Engine::applyConfig(const config::Config &incoming, QString *error) {
    // Every configuration passes here, from the file (a reload) or from the window's Save: the
    // window once applied what it saved unchecked, and a file that said loopback with its last
    // tenant removed opened a --listen LAN listener to callers with no key (probe AB4 F1).
    if (const QString why = refusalOf(incoming); !why.isEmpty()) {
        if (error)
            *error = why;
        return false; // the running configuration stays as it was
    }
    config::Config cfg = incoming;
    // Given --listen at start, the same command line gives it again: the file's address is not the
    // next start's, and the configuration keeps saying where the gateway listens (the first reload
    // once warned of a change that would never come: probe I3 5).
    if (!m_options.listenGiven.isEmpty())
        cfg.listen = m_options.listenGiven;
    else if (cfg.listen != m_ctx.config->listen)
        m_telemetry->log(QStringLiteral("warn"), QStringLiteral("listen address changes at the next start"),
                         {{QStringLiteral("listening"), baseUrl()}, {QStringLiteral("file"), cfg.listen}});
    // Simulated providers keep the loopback URL of their running fake.
    for (auto it = cfg.providers.begin(); it != cfg.providers.end(); ++it)
        if (auto *fake = m_demo.value(it->id))
            it->baseUrl = m_ctx.config->providers.value(it->id).baseUrl.isEmpty()
                              ? fake->baseUrl()
                              : m_ctx.config->providers.value(it->id).baseUrl;
    const std::shared_ptr<const config::Config> before =
        std::exchange(m_ctx.config, std::make_shared<const config::Config>(cfg));
    if (cfg.marks != m_marksStarted)
        m_telemetry->log(QStringLiteral("warn"), QStringLiteral("marks store changes at the next start"),
                         {{QStringLiteral("running"), marksStoreName(m_marksStarted)},
                          {QStringLiteral("file"), marksStoreName(cfg.marks)}});
    dropUnconfiguredMarks(cfg);
    // The live marks of a tenant, provider or model added (or back after a reload took it away)
    // were ignored while this configuration did not have it: Redis holds them (probe J4 5).
    if (m_markSync && redis::RedisMarkSync::configuresMore(*before, cfg))
        m_markSync->pullAgain();
    configurePools(); // a pool that changed starts over: its positions may hold other secrets now
    m_ledger->setRetentionDays(cfg.usage.retentionDays);
    m_budgets->configure(cfg.tenants);
    applyCaFiles(m_transport, cfg);
    m_front->setLimits(cfg.limits);
    m_bytesInFlight->setCap(cfg.limits.maxBodyBytesInFlight); // what is held stays held
    m_idempotency->setBounds(cfg.limits.maxReplayBytes, cfg.limits.maxHoldBytes);
    m_idempotency->setMaxKeysPerTenant(cfg.limits.maxIdempotencyKeysPerTenant);
    if (m_tcp)
        m_tcp->setLimits(cfg.limits);
    prewarmCredentials();
    m_reloadRefused.clear(); // what runs now is what was read (or saved by the window)
    m_telemetry->log(QStringLiteral("info"), QStringLiteral("configuration applied"));
    Q_EMIT configApplied();
    return true;
}

void Engine::prewarmCredentials() {
    // Keychain reads go over D-Bus: do them now, in the background, not on a request's path.
    // A key behind a set environment variable is a fallback, read when the pool first reaches it: the
    // starter's `["env:ANTHROPIC_API_KEY", "keychain:anthropic"]` with the variable set read the keychain
    // at every start, and with no Secret Service said "keychain unavailable" and "keys out of use" on a
    // healthy setup (probe L3 M2).
    QStringList refs;
    for (const auto &p : m_ctx.config->providers)
        for (const QString &ref : p.credentials) {
            refs += ref;
            if (ref.startsWith(QLatin1String("env:")) && !credentials::isUnsetEnvRef(ref))
                break;
        }
    for (const QString &ref : std::as_const(refs))
        if (credentials::isUnsetEnvRef(ref))
            m_telemetry->log(
                QStringLiteral("warn"), QStringLiteral("environment credential missing"),
                {{QStringLiteral("credential"), ref},
                 {QStringLiteral("hint"), QStringLiteral("set %1 before starting Switchman").arg(ref.mid(4))}});
    m_pools->prewarm(refs, this, [this](const QString &name, const credentials::SecretResult &result) {
        // Said once per start or reload, in words that name the way out; never the secret.
        // A key that was in use and has no secret cached becomes "unavailable" with this failed
        // read: logCredentialChanges says so, once per provider that uses it. One already
        // unavailable (or missing, rejected) is said here, once per reload.
        const QString ref = QStringLiteral("keychain:") + name;
        const bool cached = m_pools->isCached(name);
        if (!result.notFound && !cached && wasInUse(ref))
            return;
        QJsonObject fields{{QStringLiteral("credential"), ref}};
        if (result.notFound) {
            fields.insert(QStringLiteral("hint"),
                          QStringLiteral("store it with: switchman credential set %1").arg(name));
        } else {
            fields.insert(QStringLiteral("hint"), result.error);
            if (cached) // a reload's read failed: the secret read before stays in use
                fields.insert(QStringLiteral("inUse"), QStringLiteral("the secret read before"));
        }
        m_telemetry->log(QStringLiteral("warn"),
                         result.notFound ? QStringLiteral("keychain credential missing")
                                         : QStringLiteral("keychain unavailable"),
                         fields);
    });
}

void Engine::setPaused(bool paused) {
    if (m_paused == paused)
        return;
    m_paused = paused;
    Q_EMIT pausedChanged(paused);
}

bool Engine::reload(QString *error) {
    QString why;
    if (m_options.configPath.isEmpty())
        why = QStringLiteral("no configuration file to reload (started with --demo or defaults)");
    else if (reloadFromFile(&why))
        return true;
    else
        m_reloadRefused = why; // /healthz says so until a reload succeeds (SIGHUP has no one to answer)
    // The admin API answers the caller; the log keeps it for whoever looks later.
    m_telemetry->log(QStringLiteral("warn"), QStringLiteral("configuration reload refused"),
                     {{QStringLiteral("reason"), why}});
    if (error)
        *error = why;
    return false;
}

server::EngineControl::HealthNote Engine::configHealth() const {
    if (m_reloadRefused.isEmpty())
        return {QStringLiteral("ok"), {}};
    return {QStringLiteral("reload refused"),
            QStringLiteral("%1; the configuration loaded before is running").arg(m_reloadRefused)};
}

server::EngineControl::HealthNote Engine::usageHealth() const {
    if (!m_ledger)
        return {QStringLiteral("memory"), {}};
    const telemetry::UsageLedger::Health h = m_ledger->health();
    return {h.state, h.error};
}

bool Engine::reloadFromFile(QString *error) {
    QString why;
    if (const auto loaded = config::load(m_options.configPath); !loaded.ok()) {
        QStringList lines;
        for (const auto &e : loaded.errors)
            lines << e.toString();
        why = lines.join(QStringLiteral("; "));
    } else if (applyConfig(*loaded.config, &why)) {
        return true;
    }
    if (error)
        *error = QStringLiteral("%1: %2").arg(m_options.configPath, why);
    return false; // the running configuration stays as it was
}

} // namespace sw
