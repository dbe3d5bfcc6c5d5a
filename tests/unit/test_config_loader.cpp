#include "core/config/config_loader.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <sys/stat.h>

#include <csignal>
#include <sys/resource.h>
#include <unistd.h>

using namespace sw::config;

// Declared before the raw-string test data: moc does not follow raw string literals.
class TestConfigLoader final : public QObject {
    Q_OBJECT

private slots:
    void specExampleParses();
    void defaultsApplyWhenFieldsAreMissing();
    void validationRules_data();
    void validationRules();
    void aProviderBesideTheGatewayIsNoLoop();
    void bodiesInFlightFollowARaisedBodyLimit();
    void collectsEveryError();
    void secretsAreNeverEchoed();
    void badJsonReportsLineAndColumn();
    void aNameGivenTwiceInOneObjectIsAnError();
    void topLevelMustBeAnObject();
    void errorPathQuotesKeysWithDots();
    void loadMissingFileIsUnreadable();
    void loadDirectoryIsUnreadable();
    void loadAPipeOrDeviceIsUnreadable();
    void loadInvalidFileIsInvalid();
    void listenAddresses_data();
    void listenAddresses();
    void validateCatchesOverrides();
    void listenBeyondLoopbackNeedsATenant();
    void roundTripSaveLoad();
    void roundTripSpecExample();
    void saveCreatesDirectory();
    void saveRefusesInvalidConfigAndKeepsOldFile();
    void saveThatCannotCreateItsFileKeepsOldFile();
    void saveOntoADirectoryLeavesItAlone();
    void saveCutShortByFileSizeLimitKeepsOldFile_data();
    void saveCutShortByFileSizeLimitKeepsOldFile();
    void defaultConfigPathIsUnderSwitchman();
    void demoConfigIsValidAndComplete();
};

namespace {

// The documented example configuration, verbatim: every section, every kind of credential reference.
const char *const kSpecExample = R"({
  "listen": "127.0.0.1:4141",
  "providers": {
    "anthropic": { "api": "anthropic-messages", "baseUrl": "https://api.anthropic.com",
                   "credentials": ["keychain:anthropic-main", "keychain:anthropic-spare"] },
    "openai":    { "api": "openai-completions", "baseUrl": "https://api.openai.com/v1",
                   "credentials": ["env:OPENAI_API_KEY"], "maxRetries": 2 },
    "zai":       { "api": "anthropic-messages", "baseUrl": "https://api.z.ai/api/anthropic",
                   "credentials": ["keychain:zai"], "region": "sg" },
    "claude-login": { "api": "anthropic-messages", "baseUrl": "https://api.anthropic.com",
                   "credentials": ["passthrough"] }
  },
  "models": {
    "anthropic/claude-sonnet-4-5": { "tier": "sonnet", "input": ["text", "image"], "reasoning": true,
                                     "cost": { "input": 3, "output": 15 } },
    "zai/glm-4.6":                 { "tier": "sonnet", "cost": { "input": 0.6, "output": 2.2 } },
    "openai/gpt-5":                { "input": ["text", "image"], "reasoning": true,
                                     "cost": { "input": 1.25, "output": 10 } },
    "openai/text-embedding-3-small": { "kind": "embedding" }
  },
  "routes": {
    "sonnet": { "candidates": ["anthropic/claude-sonnet-4-5", "zai/glm-4.6", "openai/gpt-5"],
                "aliases": ["claude-sonnet-*"], "maxFallbackCostMultiplier": 5 }
  },
  "tenants": {
    "alice": { "keys": ["sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"],
               "providers": ["anthropic", "zai"], "admin": true }
  },
  "failover": { "enabled": true, "deadlineMs": 120000 }
})";

const QString kAliceKey = QStringLiteral("sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");

QJsonObject specObject() {
    return QJsonDocument::fromJson(kSpecExample).object();
}

// Sets (or, for an undefined value, removes) the value at a key path.
QJsonValue setAt(const QJsonValue &node, const QStringList &keys, const QJsonValue &value) {
    if (keys.isEmpty())
        return value;
    QJsonObject object = node.toObject();
    const QString key = keys.first();
    if (keys.size() == 1 && value.isUndefined())
        object.remove(key);
    else
        object.insert(key, setAt(object.value(key), keys.mid(1), value));
    return object;
}

// A patch is [[key, key, ...], value]; a missing value removes the key.
QByteArray patchedSpec(const QJsonArray &patches) {
    QJsonValue root = specObject();
    for (const QJsonValue &patch : patches) {
        const QJsonArray p = patch.toArray();
        QStringList keys;
        for (const QJsonValue &k : p.at(0).toArray())
            keys.append(k.toString());
        root = setAt(root, keys, p.size() > 1 ? p.at(1) : QJsonValue(QJsonValue::Undefined));
    }
    return QJsonDocument(root.toObject()).toJson();
}

QStringList errorStrings(const QList<ValidationError> &errors) {
    QStringList lines;
    for (const ValidationError &e : errors)
        lines.append(e.toString());
    return lines;
}

QByteArray readFile(const QString &path) {
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

bool writeFile(const QString &path, const QByteArray &data) {
    QFile file(path);
    return file.open(QIODevice::WriteOnly) && file.write(data) == data.size();
}

} // namespace

void TestConfigLoader::specExampleParses() {
    const ParseResult result = parse(kSpecExample);
    QVERIFY2(result.ok(), qPrintable(errorStrings(result.errors).join(QLatin1Char('\n'))));
    const Config &c = *result.config;
    QCOMPARE(c.listen, QStringLiteral("127.0.0.1:4141"));
    QCOMPARE(c.providers.size(), 4);
    const ProviderConfig &anthropic = c.providers.value(QStringLiteral("anthropic"));
    QCOMPARE(anthropic.id, QStringLiteral("anthropic"));
    QCOMPARE(anthropic.api, QStringLiteral("anthropic-messages"));
    QCOMPARE(anthropic.baseUrl, QStringLiteral("https://api.anthropic.com"));
    QCOMPARE(anthropic.credentials,
             QStringList({QStringLiteral("keychain:anthropic-main"), QStringLiteral("keychain:anthropic-spare")}));
    QCOMPARE(c.providers.value(QStringLiteral("zai")).region, QStringLiteral("sg"));
    QCOMPARE(c.providers.value(QStringLiteral("claude-login")).credentials, QStringList{QStringLiteral("passthrough")});

    QCOMPARE(c.models.size(), 4);
    const ModelConfig &sonnet = c.models.value(QStringLiteral("anthropic/claude-sonnet-4-5"));
    QCOMPARE(sonnet.provider, QStringLiteral("anthropic"));
    QCOMPARE(sonnet.id, QStringLiteral("claude-sonnet-4-5"));
    QCOMPARE(sonnet.tier, QStringLiteral("sonnet"));
    QCOMPARE(sonnet.input, QStringList({QStringLiteral("text"), QStringLiteral("image")}));
    QVERIFY(sonnet.reasoning == true);
    QVERIFY(!c.models.value(QStringLiteral("zai/glm-4.6")).reasoning); // absent: unknown
    QCOMPARE(sonnet.costInput, 3.0);
    QCOMPARE(sonnet.costOutput, 15.0);
    QVERIFY(!sonnet.costCacheRead); // no cache prices: cache tokens at the input price
    QCOMPARE(sonnet.cacheReadPrice(), 3.0);
    QCOMPARE(sonnet.cacheWritePrice(), 3.0);
    QCOMPARE(c.models.value(QStringLiteral("zai/glm-4.6")).id, QStringLiteral("glm-4.6"));
    QCOMPARE(c.models.value(QStringLiteral("zai/glm-4.6")).costOutput, 2.2);
    QCOMPARE(c.models.value(QStringLiteral("openai/text-embedding-3-small")).kind, QStringLiteral("embedding"));

    const RouteConfig &route = c.routes.value(QStringLiteral("sonnet"));
    QCOMPARE(route.name, QStringLiteral("sonnet"));
    QCOMPARE(route.candidates, QStringList({QStringLiteral("anthropic/claude-sonnet-4-5"),
                                            QStringLiteral("zai/glm-4.6"), QStringLiteral("openai/gpt-5")}));
    QCOMPARE(route.aliases, QStringList{QStringLiteral("claude-sonnet-*")});
    QCOMPARE(route.maxFallbackCostMultiplier, std::optional<double>(5));

    const TenantConfig &alice = c.tenants.value(QStringLiteral("alice"));
    QCOMPARE(alice.name, QStringLiteral("alice"));
    QCOMPARE(alice.keyHashes, QStringList{kAliceKey});
    QCOMPARE(alice.providers, QStringList({QStringLiteral("anthropic"), QStringLiteral("zai")}));
    QVERIFY(alice.admin);
    QVERIFY(c.failover.enabled);
    QCOMPARE(c.failover.deadlineMs, 120000);
}

void TestConfigLoader::defaultsApplyWhenFieldsAreMissing() {
    const ParseResult result = parse(R"({"providers": {"p": {"api": "openai-responses",
        "baseUrl": "http://localhost:8080"}}, "models": {"p/m": {}}})");
    QVERIFY2(result.ok(), qPrintable(errorStrings(result.errors).join(QLatin1Char('\n'))));
    const Config &c = *result.config;
    QCOMPARE(c.listen, QStringLiteral("127.0.0.1:4141"));
    QVERIFY(c.providers.value(QStringLiteral("p")).credentials.isEmpty());
    QCOMPARE(c.providers.value(QStringLiteral("p")).maxRetries, 2);
    QCOMPARE(c.providers.value(QStringLiteral("p")).exhaustedResetMs,
             qint64(3600 * 1000)); // a usage limit resets in about an hour
    QCOMPARE(c.models.value(QStringLiteral("p/m")).kind, QStringLiteral("chat"));
    QCOMPARE(c.models.value(QStringLiteral("p/m")).input, QStringList{QStringLiteral("text")});
    QVERIFY(c.failover.enabled);
    QCOMPARE(c.failover.deadlineMs, 120000);
    QCOMPARE(c.limits.maxBodyBytes, 32LL * 1024 * 1024);
    QCOMPARE(c.limits.maxBodyBytesInFlight, 128LL * 1024 * 1024);
    QCOMPARE(c.limits.shutdownGraceMs, 10000);
}

void TestConfigLoader::validationRules_data() {
    QTest::addColumn<QByteArray>("patches"); // JSON array of [[keys...], value?]
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("reason"); // a fragment of the reason

    const auto row = [](const char *name, const char *patches, const char *path, const char *reason) {
        QTest::newRow(name) << QByteArray(patches) << QString::fromUtf8(path) << QString::fromUtf8(reason);
    };
    // listen
    row("listen without port", R"([[["listen"], "localhost"]])", "listen", "expected HOST:PORT");
    row("listen port out of range", R"([[["listen"], "127.0.0.1:70000"]])", "listen", "expected HOST:PORT");
    row("listen wrong type", R"([[["listen"], 4141]])", "listen", "expected a string, got a number");
    row("listen non-loopback without tenants", R"([[["tenants"]], [["listen"], "0.0.0.0:4141"]])", "listen",
        "not a loopback address");
    // providers
    row("providers wrong type", R"([[["providers"], []]])", "providers", "expected an object, got an array");
    row("provider wrong type", R"([[["providers", "openai"], "x"]])", "providers.openai", "expected an object");
    row("provider id with slash", R"([[["providers", "a/b"], {"api": "openai-completions", "baseUrl": "http://x"}]])",
        "providers.a/b", "provider ids may only use");
    row("api unknown", R"([[["providers", "openai", "api"], "openai-chat"]])", "providers.openai.api",
        "unknown api \"openai-chat\"");
    row("api missing", R"([[["providers", "openai", "api"]]])", "providers.openai.api", "missing (required)");
    row("baseUrl missing", R"([[["providers", "openai", "baseUrl"]]])", "providers.openai.baseUrl", "missing");
    row("baseUrl not http", R"([[["providers", "openai", "baseUrl"], "ftp://api.openai.com"]])",
        "providers.openai.baseUrl", "expected an http:// or https:// URL");
    row("baseUrl without scheme", R"([[["providers", "openai", "baseUrl"], "api.openai.com/v1"]])",
        "providers.openai.baseUrl", "expected an http:// or https:// URL");
    row("baseUrl with password", R"([[["providers", "openai", "baseUrl"], "https://u:p@api.openai.com/v1"]])",
        "providers.openai.baseUrl", "secrets don't go in the config");
    row("baseUrl with a query", R"([[["providers", "openai", "baseUrl"], "https://api.openai.com/v1?api-key=x"]])",
        "providers.openai.baseUrl", "must not contain a query");
    row("baseUrl with a fragment", R"([[["providers", "openai", "baseUrl"], "https://api.openai.com/v1#top"]])",
        "providers.openai.baseUrl", "or fragment");
    row("proxy not http", R"([[["providers", "openai", "proxy"], "socks5://proxy.corp:1080"]])",
        "providers.openai.proxy", "only an http:// proxy is supported");
    row("proxy with password", R"([[["providers", "openai", "proxy"], "http://u:p@proxy.corp:3128"]])",
        "providers.openai.proxy", "secrets don't go in the config");
    row("proxy not a string", R"([[["providers", "openai", "proxy"], 3128]])", "providers.openai.proxy",
        "expected a string");
    // anthropic and claude-login share https://api.anthropic.com, and so its connections.
    row("proxies disagree at one host", R"([[["providers", "anthropic", "proxy"], "none"]])",
        "providers.claude-login.proxy", "has another proxy setting");
    row("baseUrl with port 0", R"([[["providers", "openai", "baseUrl"], "http://127.0.0.1:0/v1"]])",
        "providers.openai.baseUrl", "port 0 names no server");
    row("baseUrl with a .. segment", R"([[["providers", "openai", "baseUrl"], "http://127.0.0.1:8080/v1/../admin"]])",
        "providers.openai.baseUrl", "must not contain . or .. path segments");
    row("baseUrl with an encoded .. segment",
        R"([[["providers", "openai", "baseUrl"], "http://127.0.0.1:8080/v1/%2e%2E/admin"]])",
        "providers.openai.baseUrl", "must not contain . or .. path segments");
    row("baseUrl with a . segment", R"([[["providers", "openai", "baseUrl"], "https://api.openai.com/./v1"]])",
        "providers.openai.baseUrl", "must not contain . or .. path segments");
    // A provider at the gateway's own listen address: every request would come back to it.
    row("baseUrl at the gateway itself", R"([[["providers", "openai", "baseUrl"], "http://127.0.0.1:4141/v1"]])",
        "providers.openai.baseUrl", "points at Switchman itself");
    row("baseUrl at the gateway as localhost", R"([[["providers", "openai", "baseUrl"], "http://localhost:4141/v1"]])",
        "providers.openai.baseUrl", "points at Switchman itself");
    row("baseUrl at the gateway on another loopback address",
        R"([[["listen"], "[::1]:5005"], [["providers", "zai", "baseUrl"], "http://127.0.0.2:5005"]])",
        "providers.zai.baseUrl", "points at Switchman itself");
    row("baseUrl at a gateway listening everywhere",
        R"([[["listen"], "0.0.0.0:80"], [["providers", "openai", "baseUrl"], "http://127.0.0.1/v1"]])",
        "providers.openai.baseUrl", "points at Switchman itself");
    row("baseUrl at the gateway as 0.0.0.0", R"([[["providers", "openai", "baseUrl"], "http://0.0.0.0:4141/v1"]])",
        "providers.openai.baseUrl", "points at Switchman itself");
    row("credential literal sk- key", R"([[["providers", "openai", "credentials"], ["sk-proj-abc123"]]])",
        "providers.openai.credentials[0]", "looks like a literal secret; secrets don't go in the config");
    row("credential not a reference", R"([[["providers", "openai", "credentials"], ["env:OK", "hunter2"]]])",
        "providers.openai.credentials[1]", "not a credential reference");
    row("credential not a reference mentions secrets", R"([[["providers", "openai", "credentials"], ["hunter2"]]])",
        "providers.openai.credentials[0]", "secrets don't go in the config");
    row("credential long token", R"([[["providers", "zai", "credentials"], ["0123456789abcdef0123456789abcdef"]]])",
        "providers.zai.credentials[0]", "looks like a literal secret");
    row("credential empty keychain name",
        R"([[["providers", "anthropic", "credentials"], ["keychain:a", "keychain:"]]])",
        "providers.anthropic.credentials[1]", "invalid keychain reference");
    row("credential bad env name", R"([[["providers", "openai", "credentials"], ["env:1BAD"]]])",
        "providers.openai.credentials[0]", "invalid env reference");
    row("credentials not an array", R"([[["providers", "openai", "credentials"], "env:OPENAI_API_KEY"]])",
        "providers.openai.credentials", "expected an array of strings, got a string");
    row("credential not a string", R"([[["providers", "openai", "credentials"], [42]]])",
        "providers.openai.credentials[0]", "expected a string, got a number");
    row("maxRetries negative", R"([[["providers", "openai", "maxRetries"], -1]])", "providers.openai.maxRetries",
        "must be 0 or more");
    row("maxRetries fractional", R"([[["providers", "openai", "maxRetries"], 1.5]])", "providers.openai.maxRetries",
        "expected an integer");
    row("retriesBeforeFailover wrong type", R"([[["providers", "openai", "retriesBeforeFailover"], "1"]])",
        "providers.openai.retriesBeforeFailover", "expected an integer, got a string");
    row("connectTimeoutMs zero", R"([[["failover", "connectTimeoutMs"], 0]])", "failover.connectTimeoutMs",
        "must be greater than 0");
    row("exhaustedResetMs too short", R"([[["providers", "openai", "exhaustedResetMs"], 10]])",
        "providers.openai.exhaustedResetMs", "must be at least 1000");
    row("exhaustedResetMs wrong type", R"([[["providers", "openai", "exhaustedResetMs"], "1h"]])",
        "providers.openai.exhaustedResetMs", "expected an integer, got a string");
    row("demo wrong type", R"([[["providers", "openai", "demo"], 1]])", "providers.openai.demo", "expected a boolean");
    row("provider typo key", R"([[["providers", "openai", "baseURL"], "https://api.openai.com"]])",
        "providers.openai.baseURL", "unknown key");
    // top level
    row("top-level typo", R"([[["failovr"], {}]])", "failovr", "unknown key");
    // models
    row("model unknown provider", R"([[["models", "nope/x"], {}]])", "models.nope/x", "unknown provider \"nope\"");
    row("model key without slash", R"([[["models", "gpt"], {}]])", "models.gpt", "\"provider/id\"");
    row("model wrong type", R"([[["models", "openai/gpt-5"], true]])", "models.openai/gpt-5", "expected an object");
    row("model kind unknown", R"([[["models", "openai/gpt-5", "kind"], "completion"]])", "models.openai/gpt-5.kind",
        "unknown kind \"completion\"");
    row("model input unknown", R"([[["models", "openai/gpt-5", "input"], ["text", "audio"]]])",
        "models.openai/gpt-5.input[1]", "unknown input \"audio\"");
    row("model input empty", R"([[["models", "openai/gpt-5", "input"], []]])", "models.openai/gpt-5.input",
        "at least one");
    row("model input not an array", R"([[["models", "openai/gpt-5", "input"], "text"]])", "models.openai/gpt-5.input",
        "expected an array of strings");
    row("model reasoning wrong type", R"([[["models", "openai/gpt-5", "reasoning"], "yes"]])",
        "models.openai/gpt-5.reasoning", "expected a boolean (true or false), got a string");
    row("model maxTokens zero", R"([[["models", "openai/gpt-5", "maxTokens"], 0]])", "models.openai/gpt-5.maxTokens",
        "must be 1 or more (output tokens)");
    row("model maxTokens fraction", R"([[["models", "openai/gpt-5", "maxTokens"], 1.5]])",
        "models.openai/gpt-5.maxTokens", "expected an integer");
    row("model cost negative", R"([[["models", "openai/gpt-5", "cost", "input"], -1]])",
        "models.openai/gpt-5.cost.input", "must be 0 or more");
    row("model cost wrong type", R"([[["models", "openai/gpt-5", "cost", "output"], "cheap"]])",
        "models.openai/gpt-5.cost.output", "expected a number, got a string");
    row("model cost typo", R"([[["models", "openai/gpt-5", "cost", "inputs"], 1]])", "models.openai/gpt-5.cost.inputs",
        "unknown key");
    row("model cache price negative", R"([[["models", "openai/gpt-5", "cost", "cacheRead"], -0.1]])",
        "models.openai/gpt-5.cost.cacheRead", "must be 0 or more");
    row("model key with dot is quoted", R"([[["models", "zai/glm-4.6", "cost", "output"], -2]])",
        "models[\"zai/glm-4.6\"].cost.output", "must be 0 or more");
    // routes
    row("route unknown candidate",
        R"([[["routes", "sonnet", "candidates"], ["anthropic/claude-sonnet-4-5", "zai/glm-4"]]])",
        "routes.sonnet.candidates[1]", "unknown model \"zai/glm-4\"");
    row("route empty candidates", R"([[["routes", "sonnet", "candidates"], []]])", "routes.sonnet.candidates",
        "at least one");
    row("route missing candidates", R"([[["routes", "sonnet", "candidates"]]])", "routes.sonnet.candidates",
        "missing (required)");
    row("route duplicate candidate", R"([[["routes", "sonnet", "candidates"], ["openai/gpt-5", "openai/gpt-5"]]])",
        "routes.sonnet.candidates[1]", "duplicate candidate");
    row("route name with slash", R"([[["routes", "a/b"], {"candidates": ["openai/gpt-5"]}]])", "routes.a/b",
        "must not contain \"/\"");
    row("route cost multiplier below 1", R"([[["routes", "sonnet", "maxFallbackCostMultiplier"], 0.5]])",
        "routes.sonnet.maxFallbackCostMultiplier", "must be 1 or more");
    row("route cost multiplier wrong type", R"([[["routes", "sonnet", "maxFallbackCostMultiplier"], "5"]])",
        "routes.sonnet.maxFallbackCostMultiplier", "expected a number");
    row("route empty alias", R"([[["routes", "sonnet", "aliases"], [""]]])", "routes.sonnet.aliases[0]",
        "glob pattern");
    row("route alias with unclosed set", R"([[["routes", "sonnet", "aliases"], ["claude-[34*"]]])",
        "routes.sonnet.aliases[0]", "no closing ']'");
    row("route aliases not an array", R"([[["routes", "sonnet", "aliases"], "claude-*"]])", "routes.sonnet.aliases",
        "expected an array of strings");
    row("route typo key", R"([[["routes", "sonnet", "candidate"], []]])", "routes.sonnet.candidate", "unknown key");
    row("one alias in two routes",
        R"([[["routes", "zz"], {"candidates": ["zai/glm-4.6"], "aliases": ["x-*", "Claude-Sonnet-*"]}]])",
        "routes.zz.aliases[1]", "route \"sonnet\" has the same alias");
    // tenants
    row("tenant key not a hash", R"([[["tenants", "alice", "keys"], ["sha256:abc"]]])", "tenants.alice.keys[0]",
        "64 hex digits");
    row("tenant raw key", R"([[["tenants", "alice", "keys"], ["sw-0123456789"]]])", "tenants.alice.keys[0]",
        "never the key itself");
    row("tenant keys missing", R"([[["tenants", "alice", "keys"]]])", "tenants.alice.keys", "missing (required)");
    row("tenant keys empty", R"([[["tenants", "alice", "keys"], []]])", "tenants.alice.keys", "at least one");
    row("tenant unknown provider", R"([[["tenants", "alice", "providers"], ["anthropic", "nope"]]])",
        "tenants.alice.providers[1]", "unknown provider \"nope\"");
    row("tenant admin wrong type", R"([[["tenants", "alice", "admin"], "true"]])", "tenants.alice.admin",
        "expected a boolean");
    row("tenant shared key",
        R"([[["tenants", "bob"], {"keys": ["sha256:9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08"]}]])",
        "tenants.bob.keys[0]", "already listed for tenant \"alice\"");
    row("tenant regions wrong type", R"([[["tenants", "alice", "regions"], [1]]])", "tenants.alice.regions[0]",
        "expected a string");
    // failover and limits
    row("failover enabled wrong type", R"([[["failover", "enabled"], "yes"]])", "failover.enabled",
        "expected a boolean");
    row("failover deadline zero", R"([[["failover", "deadlineMs"], 0]])", "failover.deadlineMs",
        "must be greater than 0");
    row("failover deadline string", R"([[["failover", "deadlineMs"], "120000"]])", "failover.deadlineMs",
        "expected an integer, got a string");
    row("failover keepalive negative", R"([[["failover", "keepaliveMs"], -5]])", "failover.keepaliveMs",
        "must be greater than 0");
    row("failover deadline too large", R"([[["failover", "deadlineMs"], 1e12]])", "failover.deadlineMs",
        "must be at most 2147483647");
    row("failover typo", R"([[["failover", "deadline"], 5]])", "failover.deadline", "unknown key");
    row("failover wrong type", R"([[["failover"], true]])", "failover", "expected an object, got a boolean");
    row("limits body zero", R"([[["limits"], {"maxBodyBytes": 0}]])", "limits.maxBodyBytes", "must be greater than 0");
    row("limits typo", R"([[["limits"], {"maxBody": 10}]])", "limits.maxBody", "unknown key");
    row("limits in flight under one body", R"([[["limits"], {"maxBodyBytes": 4096, "maxBodyBytesInFlight": 1024}]])",
        "limits.maxBodyBytesInFlight", "must be at least limits.maxBodyBytes (4096)");
    row("limits in flight under one answer",
        R"([[["limits"], {"maxBodyBytes": 4096, "maxResponseBytes": 8192, "maxBodyBytesInFlight": 6000}]])",
        "limits.maxBodyBytesInFlight", "must be at least limits.maxResponseBytes (8192)");
    row("limits shutdown grace negative", R"([[["limits"], {"shutdownGraceMs": -1}]])", "limits.shutdownGraceMs",
        "must be 0 (end requests in flight at once) or more");
    row("limits shutdown grace over an hour", R"([[["limits"], {"shutdownGraceMs": 3600001}]])",
        "limits.shutdownGraceMs", "must be at most 3600000");
}

void TestConfigLoader::validationRules() {
    QFETCH(QByteArray, patches);
    QFETCH(QString, path);
    QFETCH(QString, reason);
    const ParseResult result = parse(patchedSpec(QJsonDocument::fromJson(patches).array()));
    QVERIFY(!result.ok());
    QVERIFY(!result.config.has_value());
    const QStringList all = errorStrings(result.errors);
    bool found = false;
    for (const ValidationError &e : result.errors)
        found = found || (e.path == path && e.reason.contains(reason));
    QVERIFY2(found,
             qPrintable(QStringLiteral("want %1: …%2…\ngot:\n%3").arg(path, reason, all.join(QLatin1Char('\n')))));
}

void TestConfigLoader::aProviderBesideTheGatewayIsNoLoop() {
    // A local server on another port, or the same port on another machine, is not the gateway.
    for (const char *url : {"http://127.0.0.1:4142/v1", "https://localhost/v1", "http://10.1.2.3:4141/v1"}) {
        const QJsonArray patch{
            QJsonArray{QJsonArray{QStringLiteral("providers"), QStringLiteral("openai"), QStringLiteral("baseUrl")},
                       QString::fromLatin1(url)}};
        const ParseResult result = parse(patchedSpec(patch));
        QVERIFY2(result.ok(), qPrintable(url + QStringLiteral(": ") + errorStrings(result.errors).join(u'\n')));
    }
    // The desktop gateway on 4141 as the provider of a headless one started with --listen elsewhere: the
    // address judged is the one the gateway will have (probe DV R1: it refused to start).
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("chain.json"));
    QVERIFY(writeFile(file,
                      patchedSpec(QJsonArray{QJsonArray{
                          QJsonArray{QStringLiteral("providers"), QStringLiteral("openai"), QStringLiteral("baseUrl")},
                          QStringLiteral("http://127.0.0.1:4141/v1")}})));
    QCOMPARE(load(file).status, LoadStatus::Invalid); // itself, at the default address
    const LoadResult elsewhere = load(file, QStringLiteral("127.0.0.1:5005"));
    QVERIFY2(elsewhere.ok(), qPrintable(errorStrings(elsewhere.errors).join(u'\n')));
    QCOMPARE(elsewhere.config->listen, QStringLiteral("127.0.0.1:5005"));
}

void TestConfigLoader::collectsEveryError() {
    const QByteArray json = patchedSpec(QJsonDocument::fromJson(R"([
        [["providers", "openai", "api"], "nope"],
        [["models", "openai/gpt-5", "kind"], "x"],
        [["routes", "sonnet", "candidates"], ["anthropic/claude-sonnet-4-5", "zai/glm-4"]],
        [["failover", "deadlineMs"], -1]
    ])")
                                            .array());
    const ParseResult result = parse(json);
    QStringList paths;
    for (const ValidationError &e : result.errors)
        paths.append(e.path);
    paths.sort();
    QCOMPARE(paths,
             QStringList({QStringLiteral("failover.deadlineMs"), QStringLiteral("models.openai/gpt-5.kind"),
                          QStringLiteral("providers.openai.api"), QStringLiteral("routes.sonnet.candidates[1]")}));
    QVERIFY(errorStrings(result.errors)
                .contains(QStringLiteral("routes.sonnet.candidates[1]: unknown model \"zai/glm-4\"")));
}

void TestConfigLoader::secretsAreNeverEchoed() {
    const QString secret = QStringLiteral("sk-") + QStringLiteral("ant-api03-notarealkey");
    const QString hashLike = QStringLiteral("my-real-gateway-key-value");
    QJsonArray patches;
    patches.append(
        QJsonArray{QJsonArray{QStringLiteral("providers"), QStringLiteral("anthropic"), QStringLiteral("credentials")},
                   QJsonArray{secret}});
    patches.append(QJsonArray{QJsonArray{QStringLiteral("tenants"), QStringLiteral("alice"), QStringLiteral("keys")},
                              QJsonArray{hashLike}});
    const QString password = QStringLiteral("hunter2password");
    patches.append(
        QJsonArray{QJsonArray{QStringLiteral("providers"), QStringLiteral("openai"), QStringLiteral("baseUrl")},
                   QStringLiteral("ftp://user:") + password + QStringLiteral("@api.openai.com")});
    // A key pasted where a value is quoted back (a route's candidate, a provider's api): the reason
    // quoted it whole, into the log, /healthz and the reload answer (probe K1 7).
    const QString pasted = QStringLiteral("sk-proj-") + QStringLiteral("Zq8xNOTAREALKEY0123456789abcd");
    patches.append(
        QJsonArray{QJsonArray{QStringLiteral("routes"), QStringLiteral("sonnet"), QStringLiteral("candidates")},
                   QJsonArray{pasted}});
    patches.append(
        QJsonArray{QJsonArray{QStringLiteral("providers"), QStringLiteral("zai"), QStringLiteral("api")}, pasted});
    const ParseResult result = parse(patchedSpec(patches));
    QCOMPARE(result.errors.size(), 5);
    for (const QString &line : errorStrings(result.errors)) {
        QVERIFY2(!line.contains(pasted), qPrintable(line));
        QVERIFY2(!line.contains(secret), qPrintable(line));
        QVERIFY2(!line.contains(hashLike), qPrintable(line));
        QVERIFY2(!line.contains(password), qPrintable(line));
    }
}

void TestConfigLoader::badJsonReportsLineAndColumn() {
    const ParseResult result = parse("{\n  \"listen\": \"127.0.0.1:4141\",\n  \"providers\": {,\n}\n");
    QCOMPARE(result.errors.size(), 1);
    QVERIFY(result.errors.first().path.isEmpty());
    QVERIFY2(result.errors.first().reason.startsWith(QStringLiteral("invalid JSON at line 3, column")),
             qPrintable(result.errors.first().reason));
}

// Probe K1 8: Qt's parser keeps the last of two equal names, so a copied route block not yet renamed,
// or "enabled": false ... "enabled": true, passed check-config and the first was dropped unsaid.
void TestConfigLoader::aNameGivenTwiceInOneObjectIsAnError() {
    const ParseResult result = parse("{\n"
                                     "  \"_\": \"comment keys may repeat\", \"_\": \"as here\",\n"
                                     "  \"routes\": {\"r1\": {\"candidates\": [\"a/b\"]},\n"
                                     "             \"r1\": {\"candidates\": [\"c/d\", {\"x\": 1, \"x\": 2}]}},\n"
                                     "  \"failover\": {\"enabled\": false, \"enabled\": true}\n"
                                     "}\n");
    QCOMPARE(result.errors.size(), 3);
    QCOMPARE(result.errors.at(0).path, QStringLiteral("routes.r1"));
    QVERIFY2(
        result.errors.at(0).reason.startsWith(QStringLiteral("given twice in one object (again at line 4, column 14)")),
        qPrintable(result.errors.at(0).reason));
    QCOMPARE(result.errors.at(1).path, QStringLiteral("routes.r1.candidates[1].x"));
    QCOMPARE(result.errors.at(2).path, QStringLiteral("failover.enabled"));
    QVERIFY2(result.errors.at(2).reason.contains(QStringLiteral("line 5")), qPrintable(result.errors.at(2).reason));
    // The same names in different objects are no repeat.
    for (const ValidationError &e :
         parse(R"({"routes": {"a": {"candidates": ["p/m"]}, "b": {"candidates": ["p/m"]}}})").errors)
        QVERIFY2(!e.reason.contains(QStringLiteral("twice")), qPrintable(e.toString()));
}

void TestConfigLoader::topLevelMustBeAnObject() {
    const ParseResult result = parse("[1, 2]");
    QCOMPARE(result.errors.size(), 1);
    QCOMPARE(result.errors.first().toString(), QStringLiteral("expected a JSON object at the top level"));
}

void TestConfigLoader::errorPathQuotesKeysWithDots() {
    const ValidationError e{QStringLiteral("routes.sonnet.candidates[1]"),
                            QStringLiteral("unknown model \"zai/glm-4\"")};
    QCOMPARE(e.toString(), QStringLiteral("routes.sonnet.candidates[1]: unknown model \"zai/glm-4\""));
    const ParseResult result = parse(R"({"routes": {"my.route": {"candidates": ["x/y"]}}})");
    QCOMPARE(errorStrings(result.errors),
             QStringList{QStringLiteral("routes[\"my.route\"].candidates[0]: unknown model \"x/y\"")});
}

void TestConfigLoader::loadMissingFileIsUnreadable() {
    QTemporaryDir dir;
    const LoadResult result = load(dir.filePath(QStringLiteral("nope.json")));
    QCOMPARE(result.status, LoadStatus::Unreadable);
    QVERIFY(!result.config);
    QCOMPARE(result.errors.size(), 1);
    QCOMPARE(result.errors.first().reason, QStringLiteral("no such file"));
}

void TestConfigLoader::loadDirectoryIsUnreadable() {
    QTemporaryDir dir;
    const LoadResult result = load(dir.path());
    QCOMPARE(result.status, LoadStatus::Unreadable);
    QVERIFY(!result.errors.isEmpty());
}

void TestConfigLoader::loadAPipeOrDeviceIsUnreadable() {
    // A reload reads on the engine's thread: a FIFO with no writer froze every request, and
    // /dev/zero was read without end (probe K1 3). Neither is read at all now.
    QTemporaryDir dir;
    const QString fifo = dir.filePath(QStringLiteral("config.json"));
    QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
    QElapsedTimer timer;
    timer.start();
    const LoadResult pipe = load(fifo);
    QVERIFY(timer.elapsed() < 5000);
    QCOMPARE(pipe.status, LoadStatus::Unreadable);
    QVERIFY2(pipe.errors.first().reason.contains(QStringLiteral("not a regular file")),
             qPrintable(pipe.errors.first().reason));
    QCOMPARE(load(QStringLiteral("/dev/zero")).status, LoadStatus::Unreadable);
    // A symlink to a regular file is read as the file.
    const QString real = dir.filePath(QStringLiteral("real.json"));
    QFile f(real);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(kSpecExample);
    f.close();
    const QString link = dir.filePath(QStringLiteral("link.json"));
    QVERIFY(QFile::link(real, link));
    QCOMPARE(load(link).status, LoadStatus::Ok);
}

void TestConfigLoader::loadInvalidFileIsInvalid() {
    QTemporaryDir dir;
    const QString bad = dir.filePath(QStringLiteral("bad.json"));
    QVERIFY(writeFile(bad, "{\"listen\": }"));
    LoadResult result = load(bad);
    QCOMPARE(result.status, LoadStatus::Invalid);
    QVERIFY(result.errors.first().reason.contains(QStringLiteral("line 1, column")));

    const QString good = dir.filePath(QStringLiteral("good.json"));
    QVERIFY(writeFile(good, kSpecExample));
    result = load(good);
    QCOMPARE(result.status, LoadStatus::Ok);
    QVERIFY(result.config);
    QCOMPARE(*result.config, *parse(kSpecExample).config);
}

void TestConfigLoader::listenAddresses_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<bool>("valid");
    QTest::addColumn<QString>("host");
    QTest::addColumn<int>("port");
    QTest::newRow("ipv4") << "127.0.0.1:4141" << true << "127.0.0.1" << 4141;
    QTest::newRow("port 0") << "127.0.0.1:0" << true << "127.0.0.1" << 0;
    QTest::newRow("hostname") << "localhost:8080" << true << "localhost" << 8080;
    QTest::newRow("ipv6") << "[::1]:4141" << true << "::1" << 4141;
    QTest::newRow("no port") << "127.0.0.1" << false << "" << 0;
    QTest::newRow("empty port") << "127.0.0.1:" << false << "" << 0;
    QTest::newRow("port too big") << "127.0.0.1:65536" << false << "" << 0;
    QTest::newRow("ipv6 without brackets") << "::1:4141" << false << "" << 0;
    QTest::newRow("bad ipv6") << "[zz]:4141" << false << "" << 0;
    QTest::newRow("url") << "http://127.0.0.1:4141" << false << "" << 0;
    QTest::newRow("space") << "127.0.0.1: 4141" << false << "" << 0;
}

void TestConfigLoader::listenAddresses() {
    QFETCH(QString, text);
    QFETCH(bool, valid);
    QFETCH(QString, host);
    QFETCH(int, port);
    const auto address = parseListenAddress(text);
    QCOMPARE(address.has_value(), valid);
    if (valid) {
        QCOMPARE(address->host, host);
        QCOMPARE(int(address->port), port);
    }
}

void TestConfigLoader::validateCatchesOverrides() {
    Config config = demoConfig();
    QVERIFY(validate(config).isEmpty());
    config.listen = QStringLiteral("0.0.0.0:4141"); // e.g. --listen with no tenants
    const QList<ValidationError> errors = validate(config);
    QCOMPARE(errors.size(), 1);
    QCOMPARE(errors.first().path, QStringLiteral("listen"));
    QVERIFY(isLoopbackHost(QStringLiteral("127.0.0.2")));
    QVERIFY(isLoopbackHost(QStringLiteral("::1")));
    QVERIFY(isLoopbackHost(QStringLiteral("LOCALHOST")));
    QVERIFY(!isLoopbackHost(QStringLiteral("0.0.0.0")));
    QVERIFY(!isLoopbackHost(QStringLiteral("example.com")));
}

void TestConfigLoader::listenBeyondLoopbackNeedsATenant() {
    // The same rule whether the address comes from the file or from --listen.
    QVERIFY(!listenAddressProblem(QStringLiteral("127.0.0.1:4141"), false));
    QVERIFY(!listenAddressProblem(QStringLiteral("[::1]:0"), false));
    QVERIFY(!listenAddressProblem(QStringLiteral("0.0.0.0:4141"), true));
    const auto open = listenAddressProblem(QStringLiteral("0.0.0.0:4141"), false);
    QVERIFY(open);
    QVERIFY2(open->contains(QStringLiteral("\"0.0.0.0\" is not a loopback address")), qPrintable(*open));
    const auto malformed = listenAddressProblem(QStringLiteral("localhost"), true);
    QVERIFY(malformed);
    QVERIFY2(malformed->startsWith(QStringLiteral("expected HOST:PORT")), qPrintable(*malformed));
}

void TestConfigLoader::roundTripSaveLoad() {
    Config config = *parse(kSpecExample).config;
    // Exercise every non-default field so none is dropped on the way.
    config.providers[QStringLiteral("openai")].retriesBeforeFailover = 1;
    config.providers[QStringLiteral("openai")].maxRetries = 5;
    config.providers[QStringLiteral("openai")].exhaustedResetMs = 90000;
    config.providers[QStringLiteral("zai")].demo = true;
    config.providers[QStringLiteral("openai")].proxy = QStringLiteral("http://proxy.corp:3128");
    config.models[QStringLiteral("zai/glm-4.6")].reasoning = false; // said, unlike an absent (unknown) one
    config.models[QStringLiteral("zai/glm-4.6")].maxTokens = 8192;
    config.models[QStringLiteral("anthropic/claude-sonnet-4-5")].costCacheRead = 0.3;
    config.models[QStringLiteral("anthropic/claude-sonnet-4-5")].costCacheWrite = 3.75;
    config.tenants[QStringLiteral("alice")].regions = {QStringLiteral("sg"), QStringLiteral("eu")};
    config.failover = {false, 5000, 2000, 1000};
    config.failover.connectTimeoutMs = 2500;
    config.limits = {1024, 2048, 3000, 4000, 50};
    config.limits.maxResponseBytes = 1024; // an answer fits in the 2048 in flight
    config.limits.shutdownGraceMs = 0;
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("config.json"));
    QString error;
    QVERIFY2(save(path, config, &error), qPrintable(error));
    const LoadResult loaded = load(path);
    QVERIFY2(loaded.ok(), qPrintable(errorStrings(loaded.errors).join(QLatin1Char('\n'))));
    QCOMPARE(*loaded.config, config);
    QCOMPARE(toJson(*loaded.config), toJson(config));
}

void TestConfigLoader::roundTripSpecExample() {
    const Config config = *parse(kSpecExample).config;
    const ParseResult again = parse(QJsonDocument(toJson(config)).toJson());
    QVERIFY(again.ok());
    QCOMPARE(*again.config, config);
}

void TestConfigLoader::saveCreatesDirectory() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("a/b/switchman/config.json"));
    QString error;
    QVERIFY2(save(path, demoConfig(), &error), qPrintable(error));
    QCOMPARE(*load(path).config, demoConfig());
}

void TestConfigLoader::saveRefusesInvalidConfigAndKeepsOldFile() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("config.json"));
    QVERIFY(save(path, demoConfig()));
    const QByteArray before = readFile(path);
    Config broken = demoConfig();
    broken.routes[QStringLiteral("demo")].candidates.append(QStringLiteral("nope/model"));
    QString error;
    QVERIFY(!save(path, broken, &error));
    QVERIFY2(error.contains(QStringLiteral("routes.demo.candidates[2]: unknown model \"nope/model\"")),
             qPrintable(error));
    QCOMPARE(readFile(path), before);
}

void TestConfigLoader::saveThatCannotCreateItsFileKeepsOldFile() {
    // The save's new file cannot be created (a read-only directory, no file
    // descriptors left): the old file stays as it was and nothing is left behind.
    // A read-only directory does not stop root (CI runs as root); the descriptor
    // limit fails the same open() for everyone: every descriptor from the lowest
    // free one up is over the limit.
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("config.json"));
    QVERIFY(save(path, demoConfig()));
    const QByteArray before = readFile(path);
    Config changed = demoConfig();
    changed.listen = QStringLiteral("127.0.0.1:5000");

    const int lowestFree = ::dup(0);
    QVERIFY(lowestFree >= 0);
    ::close(lowestFree);
    struct rlimit old {};
    QCOMPARE(getrlimit(RLIMIT_NOFILE, &old), 0);
    struct rlimit limited = old;
    limited.rlim_cur = rlim_t(lowestFree);
    QCOMPARE(setrlimit(RLIMIT_NOFILE, &limited), 0);
    QString error;
    const bool saved = save(path, changed, &error);
    setrlimit(RLIMIT_NOFILE, &old);

    QVERIFY(!saved);
    QVERIFY2(error.startsWith(QStringLiteral("cannot write ") + path), qPrintable(error));
    QCOMPARE(readFile(path), before);
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden), QStringList{QStringLiteral("config.json")});
    // With descriptors again the same save goes through.
    QVERIFY2(save(path, changed, &error), qPrintable(error));
    QVERIFY(readFile(path).contains("127.0.0.1:5000"));
}

void TestConfigLoader::saveOntoADirectoryLeavesItAlone() {
    // --config naming a directory by mistake: refused with the path named, the
    // directory and what is in it untouched, no temporary file next to it.
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("config.json"));
    QVERIFY(QDir().mkpath(path));
    QFile inside(path + QStringLiteral("/keep.txt"));
    QVERIFY(inside.open(QIODevice::WriteOnly));
    inside.write("mine");
    inside.close();

    QString error;
    QVERIFY(!save(path, demoConfig(), &error));
    QVERIFY2(error.contains(path), qPrintable(error));
    QVERIFY(QFileInfo(path).isDir());
    QCOMPARE(readFile(path + QStringLiteral("/keep.txt")), QByteArray("mine"));
    QCOMPARE(QDir(dir.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
             QStringList{QStringLiteral("config.json")});
}

void TestConfigLoader::saveCutShortByFileSizeLimitKeepsOldFile_data() {
    QTest::addColumn<int>("addedProviders");
    // Under QSaveFile's 16 KiB buffer the bytes reach write(2) only when the file is flushed:
    // a full disk there once renamed an empty file over the configuration, and save() said yes.
    QTest::newRow("a small file (buffered)") << 1;
    QTest::newRow("a big file (written at once)") << 200;
}

void TestConfigLoader::saveCutShortByFileSizeLimitKeepsOldFile() {
    // A write that fails half way (disk full, quota) must leave the old file
    // whole. RLIMIT_FSIZE makes the write fail part way, even for root.
    QFETCH(int, addedProviders);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("config.json"));
    QVERIFY(save(path, demoConfig()));
    const QByteArray before = readFile(path);

    Config big = demoConfig();
    for (int i = 0; i < addedProviders; ++i) {
        ProviderConfig p = big.providers.value(QStringLiteral("sim-openai"));
        p.id = QStringLiteral("provider-%1").arg(i);
        big.providers.insert(p.id, p);
    }
    const QByteArray bigJson = QJsonDocument(toJson(big)).toJson();
    QVERIFY(bigJson.size() > before.size() + 32);
    QCOMPARE(bigJson.size() > 16384, addedProviders > 1);

    struct rlimit old {};
    QCOMPARE(getrlimit(RLIMIT_FSIZE, &old), 0);
    const auto oldHandler = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limited = old;
    limited.rlim_cur = rlim_t(before.size() + bigJson.size()) / 2; // above the old file, below the new
    QCOMPARE(setrlimit(RLIMIT_FSIZE, &limited), 0);
    QString error;
    const bool saved = save(path, big, &error);
    setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, oldHandler);

    QVERIFY(!saved);
    // The system's reason (EFBIG), as the GUI's "Not saved: ..." and `key create` show it.
    QVERIFY2(error.startsWith(QStringLiteral("cannot write ") + path + QStringLiteral(": ")) &&
                 error.contains(QStringLiteral("too large"), Qt::CaseInsensitive),
             qPrintable(error));
    QCOMPARE(readFile(path), before);
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden), QStringList{QStringLiteral("config.json")});
    // And with the limit lifted the same save succeeds.
    QVERIFY2(save(path, big, &error), qPrintable(error));
    QCOMPARE(readFile(path), bigJson);
}

void TestConfigLoader::defaultConfigPathIsUnderSwitchman() {
    QStandardPaths::setTestModeEnabled(true);
    const QString expected = QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation) +
                             QStringLiteral("/switchman/config.json");
    QCOMPARE(defaultConfigPath(), expected);
    QStandardPaths::setTestModeEnabled(false);
}

void TestConfigLoader::demoConfigIsValidAndComplete() {
    const Config demo = demoConfig();
    QVERIFY(validate(demo).isEmpty());
    QCOMPARE(demo.listen, QStringLiteral("127.0.0.1:4141"));
    QCOMPARE(demo.providers.keys(), QStringList({QStringLiteral("sim-anthropic"), QStringLiteral("sim-google"),
                                                 QStringLiteral("sim-openai"), QStringLiteral("sim-responses")}));
    QCOMPARE(demo.providers.value(QStringLiteral("sim-anthropic")).api, QStringLiteral("anthropic-messages"));
    QCOMPARE(demo.providers.value(QStringLiteral("sim-openai")).api, QStringLiteral("openai-completions"));
    QCOMPARE(demo.providers.value(QStringLiteral("sim-responses")).api, QStringLiteral("openai-responses"));
    QCOMPARE(demo.providers.value(QStringLiteral("sim-google")).api, QStringLiteral("google-generative-ai"));
    QCOMPARE(demo.models.value(QStringLiteral("sim-responses/gpt-responses-sim")).provider,
             QStringLiteral("sim-responses"));
    QCOMPARE(demo.models.value(QStringLiteral("sim-google/gemini-sim")).provider, QStringLiteral("sim-google"));
    for (const ProviderConfig &p : demo.providers) {
        QVERIFY(p.demo);
        QVERIFY(p.credentials.isEmpty());
    }
    const ModelConfig claude = demo.models.value(QStringLiteral("sim-anthropic/claude-sim"));
    QCOMPARE(claude.id, QStringLiteral("claude-sim"));
    QCOMPARE(claude.input, QStringList({QStringLiteral("text"), QStringLiteral("image")}));
    QVERIFY(claude.reasoning == true);
    QCOMPARE(claude.costInput, 3.0);
    QCOMPARE(claude.costOutput, 15.0);
    const ModelConfig gpt = demo.models.value(QStringLiteral("sim-openai/gpt-sim"));
    QCOMPARE(gpt.provider, QStringLiteral("sim-openai"));
    QVERIFY(gpt.reasoning == true);
    QCOMPARE(gpt.costInput, 1.25);
    QCOMPARE(gpt.costOutput, 10.0);
    const RouteConfig route = demo.routes.value(QStringLiteral("demo"));
    QCOMPARE(route.candidates,
             QStringList({QStringLiteral("sim-anthropic/claude-sim"), QStringLiteral("sim-openai/gpt-sim")}));
    QCOMPARE(route.aliases, QStringList({QStringLiteral("claude-*"), QStringLiteral("gpt-*")}));
    QVERIFY(demo.tenants.isEmpty());
}

QTEST_GUILESS_MAIN(TestConfigLoader)
#include "test_config_loader.moc"

void TestConfigLoader::bodiesInFlightFollowARaisedBodyLimit() {
    // A config written before limits.maxBodyBytesInFlight existed, with a body limit over its
    // default, still loads: unset, the budget takes one whole body, or one whole answer.
    const ParseResult result =
        parse(patchedSpec(QJsonDocument::fromJson(R"([[["limits"], {"maxBodyBytes": 268435456}]])").array()));
    QVERIFY2(result.ok(), qPrintable(errorStrings(result.errors).join(u'\n')));
    QCOMPARE(result.config->limits.maxBodyBytesInFlight, 268435456LL);
    // The same for a raised answer limit: the budget never refuses what one request may hold.
    const ParseResult answers =
        parse(patchedSpec(QJsonDocument::fromJson(R"([[["limits"], {"maxResponseBytes": 134217728}]])").array()));
    QVERIFY2(answers.ok(), qPrintable(errorStrings(answers.errors).join(u'\n')));
    QCOMPARE(answers.config->limits.maxBodyBytesInFlight, 134217728LL);
    // A small machine's budget that holds one body or one answer, not both, is the operator's call.
    const ParseResult small =
        parse(patchedSpec(QJsonDocument::fromJson(R"([[["limits"], {"maxBodyBytesInFlight": 67108864}]])").array()));
    QVERIFY2(small.ok(), qPrintable(errorStrings(small.errors).join(u'\n')));
}
