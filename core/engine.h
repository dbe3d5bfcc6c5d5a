#pragma once
// The one facade app/ and ui/ talk to. Lives on the engine thread and creates
// and wires its parts: the listener (server::HttpFront on a GuardedTcpServer),
// the router that answers every request (server::Router, which owns the admin
// API), the transport and the upstream side of each request's failover loop,
// marks, credentials, telemetry, usage and budgets. It routes and
// authenticates nothing itself; the server layer reaches it only through
// server::EngineControl.

#include "core/config/config.h"
#include "core/credentials/credential_pools.h"
#include "core/failover/provider_down_marks.h"
#include "core/server/engine_context.h"
#include "core/server/engine_control.h"
#include "core/telemetry/budget_tracker.h"

#include "core/util/clock.h"

#include <QDeadlineTimer>
#include <QHostAddress>
#include <QJsonObject>
#include <QObject>
#include <QPointer>
#include <QTimer>
#include <functional>
#include <memory>

namespace sw::upstream {
class Transport;
class ServerTraits;
} // namespace sw::upstream
namespace sw::credentials {
class SecretStore;
class CredentialPools;
} // namespace sw::credentials
namespace sw::telemetry {
class Telemetry;
class UsageLedger;
struct UsageQuery;
struct UsageReport;
} // namespace sw::telemetry
namespace sw::demo {
class FakeUpstream;
}
namespace sw::redis {
class RedisMarkSync;
}

namespace sw::server {
class HttpFront;
class IdempotencyStore;
class GuardedTcpServer;
class Router;
} // namespace sw::server

namespace sw::util {
class ByteBudget;
}

namespace sw {

class Engine final : public QObject, public server::EngineControl {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(Engine)
public:
    struct Options {
        config::Config config;
        QString configPath;                       // for /admin/reload; empty = no file
        QString listenGiven;                      // --listen at start: the listener, whatever the file says at a reload
        util::Clock *clock = nullptr;             // default: the system clock of the engine thread
        upstream::Transport *transport = nullptr; // default: DefaultTransport (our HTTP/1.1 sockets)
        credentials::SecretStore *secrets = nullptr; // default: the OS keychain
        bool jsonLogToStderr = false;
        bool demo = false; // start simulated upstreams for providers with demo: true
        // The usage ledger's SQLite file; empty = kept in memory (tests, --demo). The app passes
        // telemetry::UsageDatabase::defaultPath().
        QString usageLedgerPath;
        qint64 usageLedgerMaxPages = 0; // > 0: cap the file (tests stand in for a full disk)
    };

    explicit Engine(Options options, QObject *parent = nullptr);
    ~Engine() override;

    // Binds the listener (config.listen unless overridden). Returns false with a reason.
    bool start(QString *error, const QString &listenOverride = {});
    quint16 port() const { return m_port; }
    QString baseUrl() const;

    // Commands.
    int clearMarks(const failover::MarkFilter &filter) override;
    QList<failover::MarkInfo> marks() const override;
    // Credential health: every configured credential's state; clear parking (and re-read the
    // keychain for the matching ones); a new secret stored for a reference.
    QList<credentials::CredentialStatus> credentialStates() const override;
    int clearCredentials(const credentials::CredentialFilter &filter) override;
    int credentialChanged(const QString &ref);
    bool reload(QString *error) override; // re-read configPath
    QStringList waitingForRestart() const override;
    HealthNote configHealth() const override; // a refused reload, until one succeeds
    HealthNote usageHealth() const override;
    // In-flight requests keep the config they started with. False, with the reason, when the
    // configuration would not be safe on the listener in effect (refusalOf); nothing changes then.
    bool applyConfig(const config::Config &config, QString *error = nullptr);
    void setPaused(bool paused);
    bool paused() const override { return m_paused; }
    std::shared_ptr<const config::Config> config() const override { return m_ctx.config; }
    demo::FakeUpstream *demoUpstream(const QString &providerId) const;
    QStringList demoProviders() const;

    telemetry::Telemetry *telemetry() const override { return m_telemetry; }
    telemetry::UsageLedger *usageLedger() const { return m_ledger.get(); }
    // Usage from the ledger; `done` runs on `context`'s thread once every row recorded so far is in.
    void queryUsage(const telemetry::UsageQuery &query, QObject *context,
                    std::function<void(const telemetry::UsageReport &)> done) override;
    // Tenants with a budget: spend in the current period (engine clock's wall time).
    QList<telemetry::BudgetState> budgets() const;
    // Every 80 % budget notice given since start, oldest first (the snapshot publisher passes them on).
    const QList<telemetry::BudgetState> &budgetWarnings() const { return m_budgetWarnings; }
    // The first lines logged when the log does not go to stderr (the window's): the start logs
    // before the window's publisher listens. Taking them ends the keeping; at most kEarlyLogLines.
    QList<QJsonObject> takeEarlyLog();
    static constexpr int kEarlyLogLines = 200;
    failover::ProviderDownMarks &markTable() { return *m_marks; }
    credentials::CredentialPools &pools() { return *m_pools; }
    int activeRequests() const;
    int openConnections() const; // client connections the listener holds now

    // Graceful shutdown (SIGTERM, SIGINT, the window's Quit). The first call closes the listener
    // (a new connection is refused; a chat request on a connection still open gets 503 with
    // Retry-After in its format) and gives the requests in flight limits.shutdownGraceMs to finish;
    // those left then end as a cut does (the format's in-band error once a stream is open, else a
    // whole 503) and are billed. drained() follows once no request is left and what was written to
    // the clients is out (at most kShutdownFlushMs more). A second call ends the grace at once and
    // does not wait for the bytes.
    void requestShutdown();
    bool shuttingDown() const { return m_shutdown.started; }
    static constexpr int kShutdownFlushMs = 2000;
    // Where marks live: "memory", "shared via redis://…, N replicas seen", or
    // "local only (Redis unreachable)" or "local only (Redis not answering)"; marksStoreUp() is
    // false only in those last two cases.
    QString marksStoreDescription() const override;
    bool marksStoreUp() const override;
    // Marks go through Redis: the store started with the process (a reload does not change it).
    bool marksShared() const;
    redis::RedisMarkSync *markSync() const { return m_markSync; }
    util::Clock &clock() const override { return *m_ctx.clock; }

Q_SIGNALS:
    void marksChanged();
    void credentialsChanged(); // a credential was parked, rejected or cleared
    void pausedChanged(bool paused);
    void configApplied();
    void marksStoreChanged();
    void budgetWarning(const sw::telemetry::BudgetState &state); // a tenant reached 80 % of its budget
    void drained();                                              // requestShutdown() is done: the engine may be deleted

private:
    void startDemoUpstreams(config::Config &config);
    bool reloadFromFile(QString *error);
    // Why `next` may not run on this gateway's listener (a reload's file or the window's Save), or "".
    QString refusalOf(const config::Config &next) const;
    void prewarmCredentials();
    void dropUnconfiguredMarks(const config::Config &cfg); // after a reload
    void startMarkSync();
    void configurePools();
    void logCredentialChanges();
    // Some provider's credential `ref` was "ok" when the credential log last looked.
    bool wasInUse(const QString &ref) const;
    void startUsage();
    // Idempotency-Key answers kept in the ledger file: loaded at start, written as they complete,
    // and read from the replicas sharing the file every kReplayReadMs.
    void startReplays();
    void scheduleReplayRead();
    static constexpr qint64 kReplayReadMs = 1000;
    util::Clock::TimerId m_replayReadTimer = 0;
    util::Clock::TimerId m_markExpiryTimer = 0; // at the next mark's end: the marks feed says it went
    // Set when m_bytesInFlight empties after a large request or answer; when it fires with nothing
    // held, the allocator's free memory goes back to the system (util/heap_release.h).
    util::Clock::TimerId m_heapReleaseTimer = 0;
    void armMarkExpiry();
    void endShutdownGrace();
    void checkDrained();
    void emitDrained();

    Options m_options;
    std::unique_ptr<util::Clock> m_ownedClock;
    std::unique_ptr<upstream::Transport> m_ownedTransport;
    upstream::Transport *m_transport = nullptr; // the options' or the owned one
    std::unique_ptr<credentials::SecretStore> m_ownedSecrets;
    std::unique_ptr<failover::ProviderDownMarks> m_marks;
    std::unique_ptr<credentials::CredentialPools> m_pools;
    std::unique_ptr<server::IdempotencyStore> m_idempotency;
    // limits.maxBodyBytesInFlight: request bodies (the listener) and non-streaming answers (the
    // upstream layer) held at once.
    std::shared_ptr<util::ByteBudget> m_bytesInFlight;
    std::shared_ptr<upstream::ServerTraits> m_serverTraits; // what upstream servers said of themselves
    telemetry::Telemetry *m_telemetry = nullptr;
    std::unique_ptr<telemetry::UsageLedger> m_ledger;
    telemetry::BudgetTracker *m_budgets = nullptr;
    QList<telemetry::BudgetState> m_budgetWarnings;
    QList<QJsonObject> m_earlyLog;
    QMetaObject::Connection m_earlyLogKeeper;
    server::EngineContext m_ctx;
    server::HttpFront *m_front = nullptr;
    server::Router *m_router = nullptr;
    QPointer<server::GuardedTcpServer> m_tcp;
    QHash<QString, demo::FakeUpstream *> m_demo;
    redis::RedisMarkSync *m_markSync = nullptr;
    config::MarksConfig m_marksStarted; // the `marks` the store was started with
    QHostAddress m_host;
    quint16 m_port = 0;
    bool m_paused = false;
    QString m_reloadRefused;    // why the file's configuration is not the one running; empty when it is
    QByteArray m_requestPrefix; // names this process: request ids and the Redis replica id
    QHash<QString, credentials::CredentialHealth> m_credentialHealth; // as last logged
    struct Shutdown {
        bool started = false;
        bool graceOver = false; // what was left has been ended
        bool flushing = false;  // no request left: the clients' connections are closing
        bool done = false;      // drained() emitted
        int inFlight = 0;       // chat requests in flight when it started
        int cut = 0;            // of them, ended when the grace was over
        qint64 startMs = 0;
        util::Clock::TimerId graceTimer = 0;
        QTimer *flushTimer = nullptr;
        QDeadlineTimer flushDeadline; // real time: it waits on sockets, not on request timers
    } m_shutdown;
};

} // namespace sw
