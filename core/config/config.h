#pragma once
// The configuration file, as plain data. Reading and validation live in
// config_reader, JSON and atomic saving in config_writer.

#include <QMap>
#include <QString>
#include <QStringList>
#include <optional>

namespace sw::config {

struct ProviderConfig {
    QString id;
    QString api; // anthropic-messages | openai-completions | openai-responses | google-generative-ai
    QString baseUrl;
    QStringList credentials; // references: keychain:NAME, env:VAR, passthrough; empty = send no auth header
    QString region;
    int maxRetries = 2;
    int retriesBeforeFailover = 0;
    qint64 exhaustedResetMs = 3600 * 1000; // how long a credential that hit 401/403/usage limit is skipped
    bool demo = false;                     // a simulated provider of --demo (baseUrl is filled in at start)
    // Absolute path of a PEM bundle trusted for this provider's https:// in addition
    // to the system store (a corporate TLS proxy's CA, a self-hosted server's own CA).
    QString caFile;
    // The forward proxy this provider is reached through: an http://HOST:PORT URL, or "none" to go
    // direct; empty, the environment's HTTPS_PROXY / HTTP_PROXY / ALL_PROXY / NO_PROXY decide
    // (core/upstream/proxy_settings.h).
    QString proxy;

    bool operator==(const ProviderConfig &) const = default;
};

struct ModelConfig {
    QString provider;
    QString id;                                // the upstream's model id (after "provider/")
    QString kind = QStringLiteral("chat");     // chat | embedding
    QStringList input{QStringLiteral("text")}; // text, image
    // Whether the model reasons: absent is unknown (the client's reasoning settings go as asked);
    // false, a request converted from another API goes without them (formats/translation_rules.md).
    std::optional<bool> reasoning;
    // The most output tokens the model writes in one answer (`maxTokens`): a request that asks it for
    // more goes with this (a fallback model with a smaller cap would refuse it with a 400). Absent,
    // the client's own max goes; an upstream that refuses it and says its maximum gets one more try
    // with that maximum (docs/failover.md).
    std::optional<int> maxTokens;
    double costInput = 0; // per million tokens
    double costOutput = 0;
    // Cache reads and writes per million tokens (`cost.cacheRead`, `cost.cacheWrite`); absent, the
    // input price. Providers charge a tenth to a half of it for a read (probe K3 4: a Claude Code turn,
    // 90 000 tokens read from the cache, was billed 7x the provider's price).
    std::optional<double> costCacheRead;
    std::optional<double> costCacheWrite;
    double cacheReadPrice() const { return costCacheRead.value_or(costInput); }
    double cacheWritePrice() const { return costCacheWrite.value_or(costInput); }
    bool freeOfCharge = false; // `cost` given as 0 (a local model); no `cost` is an unknown price
    QString tier;
    QString key() const { return provider + QLatin1Char('/') + id; }

    bool operator==(const ModelConfig &) const = default;
};

struct RouteConfig {
    QString name;
    QStringList candidates; // "provider/id", in order
    QStringList aliases;    // glob patterns
    std::optional<double> maxFallbackCostMultiplier;

    bool operator==(const RouteConfig &) const = default;
};

// A spend limit per calendar period in local time: a tenant whose cost in the current period has
// reached `usd` gets 429 until the period turns.
struct BudgetConfig {
    double usd = 0;
    QString period = QStringLiteral("month"); // day | week | month

    bool operator==(const BudgetConfig &) const = default;
};

struct TenantConfig {
    QString name;
    QStringList keyHashes; // "sha256:<hex>"
    QStringList providers; // empty = all
    QStringList regions;   // empty = all
    bool admin = false;
    std::optional<BudgetConfig> budget;

    bool operator==(const TenantConfig &) const = default;
};

struct FailoverConfig {
    bool enabled = true;
    int deadlineMs = 120000;
    int maxRetryDelayMs = 10000;
    int keepaliveMs = 15000;
    // How long a credential is parked when the provider gives no Retry-After or reset hint.
    qint64 rateLimitParkMs = 60 * 1000;    // an opaque 429: usually a per-minute limit
    qint64 exhaustedResetMs = 3600 * 1000; // a usage limit: resets slowly
    // No upstream byte for this long ends the attempt as server_error: no request lives forever.
    int upstreamIdleTimeoutMs = 300000;
    // A connection to an upstream (TLS handshake included) that does not complete in this long fails
    // the try as a transport timeout: its base URL's failure (upstream::SocketTransport).
    int connectTimeoutMs = 10000;

    bool operator==(const FailoverConfig &) const = default;
};

struct LimitsConfig {
    qint64 maxBodyBytes = 32LL * 1024 * 1024;
    // Request bodies and whole non-streaming answers held at once by all requests together, taken
    // as their bytes arrive and given back when each request is done: a Content-Length that does
    // not fit is answered 503 (Retry-After) on its head, an answer that does not fit ends in a 503.
    // At least maxBodyBytes and maxResponseBytes (the largest of each fits); unset, never less.
    qint64 maxBodyBytesInFlight = 128LL * 1024 * 1024;
    int maxHeaderBytes = 64 * 1024;
    int headerTimeoutMs = 10000;
    int idleTimeoutMs = 120000;
    int maxConnections = 2048;
    // What one upstream answer may make us keep: the replay held before commit (past it the
    // attempt fails as server_error) and a whole non-streaming answer (past it, an error).
    qint64 maxHoldBytes = 8LL * 1024 * 1024;
    qint64 maxResponseBytes = 64LL * 1024 * 1024;
    // The answers kept for Idempotency-Key replays, all tenants together: past it the oldest
    // are let go. One answer over maxHoldBytes is never kept (its key is let go at once).
    qint64 maxReplayBytes = 64LL * 1024 * 1024;
    // Idempotency-Key keys one tenant holds at once (in flight or answered, 24 h): past it a new
    // key lets that tenant's oldest answered key go. Every tenant has its own share: one tenant's
    // keys never turn idempotency off for another.
    int maxIdempotencyKeysPerTenant = 10000;
    // On SIGTERM/SIGINT (Engine::requestShutdown) the listener closes and requests in flight get this
    // long to finish; what is left then is ended in band (a stream) or with 503 (an answer not yet
    // given), and billed. 0 ends them at once.
    int shutdownGraceMs = 10000;

    bool operator==(const LimitsConfig &) const = default;
};

// Where provider-down marks live: this process only, or shared by replicas through Redis.
struct MarksConfig {
    QString store = QStringLiteral("memory"); // memory | redis
    QString url;                              // redis://HOST:PORT/DB or rediss://…
    QString prefix = QStringLiteral("switchman");
    QString password; // a reference: keychain:NAME or env:VAR; never inline
    // Absolute path of a PEM bundle trusted for a rediss:// url in addition to the system store
    // (a self-hosted Redis's own CA), as providers.NAME.caFile is for a provider.
    QString caFile;

    bool operator==(const MarksConfig &) const = default;
};

// The usage ledger ($XDG_DATA_HOME/switchman/usage.sqlite): rows older than this are pruned daily.
struct UsageConfig {
    int retentionDays = 400;

    bool operator==(const UsageConfig &) const = default;
};

struct Config {
    QString listen = QStringLiteral("127.0.0.1:4141");
    QMap<QString, ProviderConfig> providers; // by id
    QMap<QString, ModelConfig> models;       // by "provider/id"
    QMap<QString, RouteConfig> routes;       // by name
    QMap<QString, TenantConfig> tenants;     // by name
    FailoverConfig failover;
    LimitsConfig limits;
    MarksConfig marks;
    UsageConfig usage;

    bool operator==(const Config &) const = default;
};

} // namespace sw::config
