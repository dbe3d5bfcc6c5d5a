#include "core/config/config_reader.h"

#include "core/config/config_writer.h"
#include "core/config/listen_address.h"
#include "core/redis/redis_endpoint.h"
#include "core/upstream/http_types.h"
#include "core/upstream/proxy_settings.h"
#include "core/util/glob_pattern.h"
#include "core/wire/api.h"

#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QHostAddress>
#include <QJsonDocument>
#include <QJsonParseError>
#include <QRegularExpression>
#include <QSet>
#include <QSslCertificate>
#include <QStandardPaths>
#include <QUrl>

#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

namespace sw::config {

namespace {

const QStringList kKinds = {QStringLiteral("chat"), QStringLiteral("embedding")};
const QStringList kInputs = {QStringLiteral("text"), QStringLiteral("image")};
const QStringList kPeriods = {QStringLiteral("day"), QStringLiteral("week"), QStringLiteral("month")};
const QString kSecretsAdvice = QStringLiteral(
    "secrets don't go in the config: store the secret with `switchman credential set NAME` and reference it as "
    "keychain:NAME, or use env:VAR");
constexpr qint64 kWeekMs = 7LL * 24 * 3600 * 1000;
constexpr qint64 kMaxBytes = qint64(1) << 53; // the largest integer a JSON number holds exactly

// Heuristic for a pasted API key: well-known key prefixes, or a long token
// without the ':' every reference has. The value itself is never echoed.
bool looksLikeSecret(const QString &value) {
    static const QRegularExpression prefixes(
        QStringLiteral("^(sk-|sk_|rk-|pk-|xai-|gsk_|AIza|ghp_|github_pat_|hf_|Bearer\\s)"));
    if (prefixes.match(value).hasMatch())
        return true;
    return !value.contains(QLatin1Char(':')) && value.size() >= 20;
}

// A "." or ".." segment in a URL path, as decoded ("%2e%2e" is ".." on the wire).
bool hasDotSegment(const QString &path) {
    const QStringList segments = path.split(QLatin1Char('/'));
    return segments.contains(QStringLiteral(".")) || segments.contains(QStringLiteral(".."));
}

// Each element of `list` (read from `path`) that is not one of `allowed`, or repeats an earlier one.
void checkMembers(JsonPathReader &reader, const QString &path, const QStringList &list, const QStringList &allowed,
                  const QString &what) {
    for (qsizetype i = 0; i < list.size(); ++i) {
        if (!allowed.contains(list.at(i)))
            reader.error(indexPath(path, i), QStringLiteral("unknown %1 %2").arg(what, quoted(list.at(i))));
        else if (list.indexOf(list.at(i)) != i)
            reader.error(indexPath(path, i), QStringLiteral("duplicate %1 %2").arg(what, quoted(list.at(i))));
    }
}

// Walks one JSON document, filling a Config and collecting every problem.
class ConfigReader final {
public:
    const QList<ValidationError> &errors() const { return m_reader.errors(); }

    void read(const QJsonObject &document, Config &config);
    void checkSelfReferences(const Config &config); // after readListen: a provider at the listen address

private:
    // Each entry of the map section `section` (providers by id, routes by name, …): `named` checks the
    // key and returns the entry with its name fields set; the entry's object, if it is one, is read
    // into it with the matching read() and the entry stored under its key.
    template <typename T, typename Named>
    void readEntries(JsonObjectReader &root, const QString &section, QMap<QString, T> &out, Named named) {
        auto map = root.object(section);
        if (!map)
            return;
        for (const QString &key : map->entryKeys()) {
            T entry = named(*map, key);
            if (auto o = map->object(key)) {
                read(*o, entry);
                out.insert(key, entry);
            }
        }
    }

    void readListen(JsonObjectReader &root, Config &config);
    void checkAliasesApart(const Config &config); // one alias, one route
    void checkProxiesAgree(const Config &config); // one proxy setting per provider host
    void readProviders(JsonObjectReader &root, Config &config);
    void read(JsonObjectReader &o, ProviderConfig &provider);
    void readBaseUrl(JsonObjectReader &o, ProviderConfig &provider);
    void readCredential(const QString &path, const QString &value);
    void readCaFile(const QString &path, const QString &file);
    void readProxy(const QString &path, const QString &proxy);
    void readModels(JsonObjectReader &root, Config &config);
    void read(JsonObjectReader &o, ModelConfig &model);
    void readRoutes(JsonObjectReader &root, Config &config);
    void read(JsonObjectReader &o, RouteConfig &route);
    void readTenants(JsonObjectReader &root, Config &config);
    void read(JsonObjectReader &o, TenantConfig &tenant);
    void readBudget(JsonObjectReader &tenant, TenantConfig &out);
    void readFailover(JsonObjectReader &root, Config &config);
    void readLimits(JsonObjectReader &root, Config &config);
    void readMarks(JsonObjectReader &root, Config &config);
    void readUsage(JsonObjectReader &root, Config &config);

    JsonPathReader m_reader;
    // Keys present in the document, valid or not: references to them are not
    // reported again as unknown, so one mistake gives one error.
    QSet<QString> m_providerIds;
    QSet<QString> m_modelKeys;
    QHash<QString, QString> m_keyOwners; // tenant key hash -> tenant
};

void ConfigReader::read(const QJsonObject &document, Config &config) {
    auto root = JsonObjectReader::of(m_reader, document, QString());
    root->allowOnly({QStringLiteral("listen"), QStringLiteral("providers"), QStringLiteral("models"),
                     QStringLiteral("routes"), QStringLiteral("tenants"), QStringLiteral("failover"),
                     QStringLiteral("limits"), QStringLiteral("marks"), QStringLiteral("usage")});
    // Order matters: models refer to providers, routes to models, tenants to providers.
    readProviders(*root, config);
    readModels(*root, config);
    readRoutes(*root, config);
    readTenants(*root, config);
    readFailover(*root, config);
    readLimits(*root, config);
    readMarks(*root, config);
    readUsage(*root, config);
    readListen(*root, config); // after tenants: a non-loopback listener needs them
    checkSelfReferences(config);
    checkAliasesApart(config);
    checkProxiesAgree(config);
}

void ConfigReader::checkAliasesApart(const Config &config) {
    // The most specific matching alias picks the route (CandidateResolver::resolve): two routes with
    // one alias (the same glob, whatever its case) would pick by name, silently (probe K1 1).
    QHash<QString, QString> owner; // alias, lowercased -> the route that has it
    for (const RouteConfig &route : config.routes)
        for (qsizetype i = 0; i < route.aliases.size(); ++i) {
            const QString alias = route.aliases.at(i).toLower();
            const auto it = owner.constFind(alias);
            if (it != owner.cend() && *it != route.name)
                m_reader.error(indexPath(keyPath(keyPath(keyPath(QString(), QStringLiteral("routes")), route.name),
                                                 QStringLiteral("aliases")),
                                         i),
                               QStringLiteral("route %1 has the same alias: a model it matches would go to one of "
                                              "them by name; keep it in one route")
                                   .arg(quoted(*it)));
            else
                owner.insert(alias, route.name);
        }
}

void ConfigReader::checkSelfReferences(const Config &config) {
    // A provider at the gateway's own address sends each request back to the gateway, which sends
    // it on again. The wire check (server::HopMarker) ends such a loop at the second hop whatever
    // the address; this one names the mistake before any request. Loopback reaches a listener on
    // loopback or on every address; any host reaches a listener on that host.
    const auto listen = parseListenAddress(config.listen);
    if (!listen || listen->port == 0)
        return; // a free port chosen at start: nothing to compare
    const QHostAddress listenAddress(listen->host);
    const bool reachedOnLoopback = isLoopbackHost(listen->host) || listenAddress == QHostAddress::AnyIPv4 ||
                                   listenAddress == QHostAddress::AnyIPv6;
    for (const ProviderConfig &p : config.providers) {
        const QUrl url(p.baseUrl, QUrl::StrictMode);
        if (p.demo || !url.isValid() || url.host().isEmpty())
            continue; // a simulated provider's URL is its fake's; a broken one is reported already
        const int port = url.port(url.scheme() == QLatin1String("https") ? 443 : 80);
        const QString host = url.host();
        // A connection to 0.0.0.0 (or ::) reaches this machine's listener, as loopback does (K1 6).
        const QHostAddress hostAddress(host);
        const bool local =
            isLoopbackHost(host) || hostAddress == QHostAddress::AnyIPv4 || hostAddress == QHostAddress::AnyIPv6;
        if (port != listen->port ||
            !((reachedOnLoopback && local) || host.compare(listen->host, Qt::CaseInsensitive) == 0))
            continue;
        m_reader.error(keyPath(keyPath(QStringLiteral("providers"), p.id), QStringLiteral("baseUrl")),
                       QStringLiteral("points at Switchman itself (listen is %1): each request would come back to "
                                      "the gateway; use the provider's own URL")
                           .arg(config.listen));
    }
}

void ConfigReader::readListen(JsonObjectReader &root, Config &config) {
    QString listen;
    if (!root.text(QStringLiteral("listen"), listen))
        return;
    // Any tenant, valid or not, counts: a broken tenant is reported once, where it is.
    const auto tenants = root.value(QStringLiteral("tenants")).toObject().keys();
    const bool anyTenant =
        std::any_of(tenants.begin(), tenants.end(), [](const QString &k) { return !isCommentKey(k); });
    if (const auto problem = listenAddressProblem(listen, anyTenant)) {
        root.error(QStringLiteral("listen"), *problem);
        return;
    }
    config.listen = listen;
}

void ConfigReader::readProviders(JsonObjectReader &root, Config &config) {
    static const QRegularExpression idPattern(QStringLiteral("^[A-Za-z0-9._-]+$"));
    readEntries(
        root, QStringLiteral("providers"), config.providers, [this](JsonObjectReader &providers, const QString &id) {
            m_providerIds.insert(id);
            if (!idPattern.match(id).hasMatch())
                providers.error(id, QStringLiteral("provider ids may only use letters, digits, '.', '_' and '-'"));
            ProviderConfig provider;
            provider.id = id;
            return provider;
        });
}

void ConfigReader::read(JsonObjectReader &o, ProviderConfig &provider) {
    o.allowOnly({QStringLiteral("api"), QStringLiteral("baseUrl"), QStringLiteral("credentials"),
                 QStringLiteral("region"), QStringLiteral("maxRetries"), QStringLiteral("retriesBeforeFailover"),
                 QStringLiteral("exhaustedResetMs"), QStringLiteral("demo"), QStringLiteral("caFile"),
                 QStringLiteral("proxy")});
    const QString api = QStringLiteral("api");
    if (o.require(api) && o.text(api, provider.api) && !wire::upstreamApiNames().contains(provider.api))
        o.error(api, QStringLiteral("unknown api %1 (expected one of: %2)")
                         .arg(quoted(provider.api), wire::upstreamApiNames().join(QStringLiteral(", "))));
    o.flag(QStringLiteral("demo"), provider.demo); // before the URL: a simulated provider's port is chosen at start
    readBaseUrl(o, provider);
    const QString credentials = QStringLiteral("credentials");
    if (o.strings(credentials, provider.credentials)) {
        for (qsizetype i = 0; i < provider.credentials.size(); ++i)
            readCredential(indexPath(o.pathOf(credentials), i), provider.credentials.at(i));
    }
    o.text(QStringLiteral("region"), provider.region);
    const QString zeroOrMore = QStringLiteral("must be 0 or more");
    o.integer(QStringLiteral("maxRetries"), provider.maxRetries, 0, zeroOrMore);
    o.integer(QStringLiteral("retriesBeforeFailover"), provider.retriesBeforeFailover, 0, zeroOrMore);
    // Usage limits reset slowly (hours); a bad key stays bad: at least a second, at most a week.
    o.integer(QStringLiteral("exhaustedResetMs"), provider.exhaustedResetMs, 1000, kWeekMs,
              QStringLiteral("must be at least 1000 (one second)"));
    if (o.text(QStringLiteral("caFile"), provider.caFile))
        readCaFile(o.pathOf(QStringLiteral("caFile")), provider.caFile);
    if (o.text(QStringLiteral("proxy"), provider.proxy))
        readProxy(o.pathOf(QStringLiteral("proxy")), provider.proxy);
}

void ConfigReader::readProxy(const QString &path, const QString &proxy) {
    if (proxy == upstream::kNoProxy)
        return;
    QString why;
    if (!upstream::parseProxyUrl(proxy, &why))
        m_reader.error(path, QStringLiteral("%1 (or \"none\" to go direct)").arg(why));
    else if (!QUrl(proxy.contains(QLatin1String("://")) ? proxy : QStringLiteral("http://") + proxy)
                  .userInfo()
                  .isEmpty())
        // Not echoed. An authenticating proxy's URL, password included, is read from HTTPS_PROXY /
        // HTTP_PROXY, where the user's other tools read it too.
        m_reader.error(path, QStringLiteral("must not contain a user name or password: give a proxy that wants them "
                                            "in HTTPS_PROXY / HTTP_PROXY (http://USER:PASSWORD@HOST:PORT) instead; ") +
                                 kSecretsAdvice);
}

void ConfigReader::checkProxiesAgree(const Config &config) {
    // Connections are pooled, and their proxy chosen, by scheme://host:port: two providers at one
    // host would otherwise share whichever way the first took.
    QHash<QString, const ProviderConfig *> byHost;
    for (const ProviderConfig &p : config.providers) {
        const QUrl url(p.baseUrl, QUrl::StrictMode);
        if (p.demo || !url.isValid() || url.host().isEmpty())
            continue;
        const QString host = upstream::hostKeyOf(url);
        const ProviderConfig *other = byHost.value(host);
        if (!other) {
            byHost.insert(host, &p);
            continue;
        }
        if (other->proxy != p.proxy)
            m_reader.error(keyPath(keyPath(QStringLiteral("providers"), p.id), QStringLiteral("proxy")),
                           QStringLiteral("provider %1 at the same host (%2) has another proxy setting: give both "
                                          "the same proxy, or none")
                               .arg(quoted(other->id), host));
    }
}

void ConfigReader::readBaseUrl(JsonObjectReader &o, ProviderConfig &provider) {
    const QString key = QStringLiteral("baseUrl");
    if (!o.require(key) || !o.text(key, provider.baseUrl))
        return;
    const QUrl url(provider.baseUrl, QUrl::StrictMode);
    const QString scheme = url.scheme();
    if (!url.isValid() || (scheme != QLatin1String("http") && scheme != QLatin1String("https")) || url.host().isEmpty())
        // Not echoed: a malformed URL may still carry a password.
        o.error(key, QStringLiteral("expected an http:// or https:// URL"));
    else if (!url.userInfo().isEmpty())
        o.error(key, QStringLiteral("must not contain a user name or password: ") + kSecretsAdvice);
    else if (url.hasQuery() || url.hasFragment())
        // Each request's path is joined after the base URL, so a query or fragment would end up
        // in front of it ("/v1?api-key=…/chat/completions"). Not echoed: a query may hold a key.
        o.error(key, QStringLiteral("must not contain a query (?…) or fragment (#…): it names the API's root, "
                                    "such as https://api.openai.com/v1; ") +
                         kSecretsAdvice);
    else if (url.port() == 0 && !provider.demo)
        // Port 0 names no server: every request would fail as "connection refused" and mark the provider.
        o.error(key, QStringLiteral("port 0 names no server; give the provider's port, or none for the scheme's "
                                    "default"));
    else if (hasDotSegment(url.path(QUrl::FullyDecoded)))
        // Sent as written, "/v1/../x" would reach another path on the provider than the one configured.
        o.error(key, QStringLiteral("must not contain . or .. path segments: give the API's root as the provider "
                                    "writes it, such as https://api.openai.com/v1"));
}

void ConfigReader::readCaFile(const QString &path, const QString &file) {
    // Checked now, so a typo is a configuration error naming the key, not a TLS
    // failure at the first request (which would read as the provider being down).
    if (file.isEmpty() || !QFileInfo(file).isAbsolute()) {
        m_reader.error(path, QStringLiteral("expected the absolute path of a PEM file of CA certificates"));
        return;
    }
    const QFileInfo info(file);
    if (!info.exists() || !info.isFile()) {
        m_reader.error(path, QStringLiteral("no such file: %1").arg(file));
        return;
    }
    if (QSslCertificate::fromPath(file, QSsl::Pem).isEmpty())
        m_reader.error(path, QStringLiteral("no PEM certificate could be read from %1").arg(file));
}

void ConfigReader::readCredential(const QString &path, const QString &value) {
    static const QRegularExpression keychain(QStringLiteral("^keychain:[A-Za-z0-9._@-]+$"));
    static const QRegularExpression env(QStringLiteral("^env:[A-Za-z_][A-Za-z0-9_]*$"));
    if (value == QLatin1String("passthrough") || keychain.match(value).hasMatch() || env.match(value).hasMatch())
        return;
    // Never echo the value: it may be a real key pasted by mistake.
    if (value.startsWith(QLatin1String("keychain:")))
        m_reader.error(path, QStringLiteral("invalid keychain reference: NAME after \"keychain:\" may only use "
                                            "letters, digits, '.', '_', '@' and '-'"));
    else if (value.startsWith(QLatin1String("env:")))
        m_reader.error(
            path, QStringLiteral("invalid env reference: VAR after \"env:\" must be an environment variable name"));
    else if (looksLikeSecret(value))
        m_reader.error(path, QStringLiteral("looks like a literal secret; ") + kSecretsAdvice);
    else
        m_reader.error(path, QStringLiteral("not a credential reference (expected keychain:NAME, env:VAR or "
                                            "passthrough); ") +
                                 kSecretsAdvice);
}

void ConfigReader::readModels(JsonObjectReader &root, Config &config) {
    readEntries(root, QStringLiteral("models"), config.models, [this](JsonObjectReader &models, const QString &key) {
        m_modelKeys.insert(key);
        ModelConfig model;
        const qsizetype slash = key.indexOf(QLatin1Char('/'));
        model.provider = key.left(slash);
        model.id = slash < 0 ? QString() : key.mid(slash + 1);
        if (slash <= 0 || model.id.isEmpty())
            models.error(key, QStringLiteral("model keys are \"provider/id\""));
        else if (!m_providerIds.contains(model.provider))
            models.error(key, QStringLiteral("unknown provider %1").arg(quoted(model.provider)));
        return model;
    });
}

void ConfigReader::read(JsonObjectReader &o, ModelConfig &model) {
    o.allowOnly({QStringLiteral("kind"), QStringLiteral("input"), QStringLiteral("reasoning"), QStringLiteral("cost"),
                 QStringLiteral("tier"), QStringLiteral("maxTokens")});
    if (o.text(QStringLiteral("kind"), model.kind) && !kKinds.contains(model.kind))
        o.error(QStringLiteral("kind"),
                QStringLiteral("unknown kind %1 (expected chat or embedding)").arg(quoted(model.kind)));
    const QString input = QStringLiteral("input");
    if (o.strings(input, model.input)) {
        if (model.input.isEmpty())
            o.error(input, QStringLiteral("must name at least one input (text, image)"));
        checkMembers(m_reader, o.pathOf(input), model.input, kInputs, QStringLiteral("input"));
    }
    if (bool reasoning = false; o.flag(QStringLiteral("reasoning"), reasoning))
        model.reasoning = reasoning;
    if (int maxTokens = 0;
        o.integer(QStringLiteral("maxTokens"), maxTokens, 1, QStringLiteral("must be 1 or more (output tokens)")))
        model.maxTokens = maxTokens;
    if (auto cost = o.object(QStringLiteral("cost"))) {
        cost->allowOnly({QStringLiteral("input"), QStringLiteral("output"), QStringLiteral("cacheRead"),
                         QStringLiteral("cacheWrite")});
        const QString nonNegative = QStringLiteral("must be 0 or more (price per million tokens)");
        cost->number(QStringLiteral("input"), model.costInput, 0, nonNegative);
        cost->number(QStringLiteral("output"), model.costOutput, 0, nonNegative);
        if (double price = 0; cost->number(QStringLiteral("cacheRead"), price, 0, nonNegative))
            model.costCacheRead = price;
        if (double price = 0; cost->number(QStringLiteral("cacheWrite"), price, 0, nonNegative))
            model.costCacheWrite = price;
        model.freeOfCharge = model.costInput == 0 && model.costOutput == 0;
    }
    o.text(QStringLiteral("tier"), model.tier);
}

void ConfigReader::readRoutes(JsonObjectReader &root, Config &config) {
    readEntries(root, QStringLiteral("routes"), config.routes, [](JsonObjectReader &routes, const QString &name) {
        if (name.trimmed().isEmpty())
            routes.error(name, QStringLiteral("route names must not be empty"));
        else if (name.contains(QLatin1Char('/')))
            routes.error(name,
                         QStringLiteral("route names must not contain \"/\" (that form selects one model directly)"));
        RouteConfig route;
        route.name = name;
        return route;
    });
}

void ConfigReader::read(JsonObjectReader &o, RouteConfig &route) {
    o.allowOnly({QStringLiteral("candidates"), QStringLiteral("aliases"), QStringLiteral("maxFallbackCostMultiplier")});
    const QString candidates = QStringLiteral("candidates");
    if (o.require(candidates) && o.strings(candidates, route.candidates)) {
        if (route.candidates.isEmpty())
            o.error(candidates, QStringLiteral("must list at least one model"));
        for (qsizetype i = 0; i < route.candidates.size(); ++i) {
            const QString &candidate = route.candidates.at(i);
            const QString at = indexPath(o.pathOf(candidates), i);
            if (!m_modelKeys.contains(candidate))
                m_reader.error(at, QStringLiteral("unknown model %1").arg(quoted(candidate)));
            else if (route.candidates.indexOf(candidate) != i)
                m_reader.error(at, QStringLiteral("duplicate candidate %1").arg(quoted(candidate)));
        }
    }
    const QString aliases = QStringLiteral("aliases");
    if (o.strings(aliases, route.aliases)) {
        for (qsizetype i = 0; i < route.aliases.size(); ++i) {
            const util::GlobPattern glob(route.aliases.at(i));
            if (!glob.isValid())
                m_reader.error(indexPath(o.pathOf(aliases), i),
                               QStringLiteral("expected a glob pattern such as \"claude-*\" or \"claude-[34]*\": %1")
                                   .arg(glob.errorString()));
        }
    }
    double multiplier = 0;
    if (o.number(QStringLiteral("maxFallbackCostMultiplier"), multiplier, 1,
                 QStringLiteral("must be 1 or more (a multiple of the first eligible candidate's price)")))
        route.maxFallbackCostMultiplier = multiplier;
}

void ConfigReader::readTenants(JsonObjectReader &root, Config &config) {
    readEntries(root, QStringLiteral("tenants"), config.tenants, [](JsonObjectReader &tenants, const QString &name) {
        if (name.trimmed().isEmpty())
            tenants.error(name, QStringLiteral("tenant names must not be empty"));
        TenantConfig tenant;
        tenant.name = name;
        return tenant;
    });
}

void ConfigReader::read(JsonObjectReader &o, TenantConfig &tenant) {
    static const QRegularExpression hashPattern(QStringLiteral("^sha256:[0-9a-fA-F]{64}$"));
    o.allowOnly({QStringLiteral("keys"), QStringLiteral("providers"), QStringLiteral("regions"),
                 QStringLiteral("admin"), QStringLiteral("budget")});
    const QString keys = QStringLiteral("keys");
    if (o.require(keys, QStringLiteral("missing (required): create a key with `switchman key create --tenant %1`")
                            .arg(tenant.name)) &&
        o.strings(keys, tenant.keyHashes)) {
        if (tenant.keyHashes.isEmpty())
            o.error(keys, QStringLiteral("must list at least one key hash"));
        for (qsizetype i = 0; i < tenant.keyHashes.size(); ++i) {
            QString &hash = tenant.keyHashes[i];
            const QString at = indexPath(o.pathOf(keys), i);
            if (!hashPattern.match(hash).hasMatch()) {
                // Never echo the value: it may be the key itself.
                m_reader.error(at, QStringLiteral("expected \"sha256:\" followed by 64 hex digits (the hash of a key, "
                                                  "never the key itself; `switchman key create --tenant NAME` makes "
                                                  "one)"));
                continue;
            }
            hash = hash.toLower(); // compare hashes case-insensitively
            const QString owner = m_keyOwners.value(hash);
            if (!owner.isNull())
                m_reader.error(at, QStringLiteral("the same key is already listed for tenant %1").arg(quoted(owner)));
            else
                m_keyOwners.insert(hash, tenant.name);
        }
    }
    const QString providers = QStringLiteral("providers");
    if (o.strings(providers, tenant.providers)) {
        for (qsizetype i = 0; i < tenant.providers.size(); ++i) {
            if (!m_providerIds.contains(tenant.providers.at(i)))
                m_reader.error(indexPath(o.pathOf(providers), i),
                               QStringLiteral("unknown provider %1").arg(quoted(tenant.providers.at(i))));
        }
    }
    o.strings(QStringLiteral("regions"), tenant.regions);
    o.flag(QStringLiteral("admin"), tenant.admin);
    readBudget(o, tenant);
}

void ConfigReader::readBudget(JsonObjectReader &tenant, TenantConfig &out) {
    auto o = tenant.object(QStringLiteral("budget"));
    if (!o)
        return;
    o->allowOnly({QStringLiteral("usd"), QStringLiteral("period")});
    BudgetConfig budget;
    const QString usd = QStringLiteral("usd");
    if (o->require(usd, QStringLiteral("missing (required): the spend limit in US dollars")) &&
        !o->number(usd, budget.usd, 0, QStringLiteral("must be 0 or more (US dollars per period)")))
        return;
    if (o->text(QStringLiteral("period"), budget.period) && !kPeriods.contains(budget.period))
        o->error(QStringLiteral("period"),
                 QStringLiteral("expected \"day\", \"week\" or \"month\", got %1").arg(quoted(budget.period)));
    out.budget = budget;
}

void ConfigReader::readFailover(JsonObjectReader &root, Config &config) {
    auto o = root.object(QStringLiteral("failover"));
    if (!o)
        return;
    o->allowOnly({QStringLiteral("enabled"), QStringLiteral("deadlineMs"), QStringLiteral("maxRetryDelayMs"),
                  QStringLiteral("keepaliveMs"), QStringLiteral("rateLimitParkMs"), QStringLiteral("exhaustedResetMs"),
                  QStringLiteral("upstreamIdleTimeoutMs"), QStringLiteral("connectTimeoutMs")});
    FailoverConfig &f = config.failover;
    o->flag(QStringLiteral("enabled"), f.enabled);
    const QString positive = QStringLiteral("must be greater than 0 (milliseconds)");
    o->integer(QStringLiteral("deadlineMs"), f.deadlineMs, 1, positive);
    o->integer(QStringLiteral("maxRetryDelayMs"), f.maxRetryDelayMs, 0, QStringLiteral("must be 0 or more"));
    o->integer(QStringLiteral("keepaliveMs"), f.keepaliveMs, 1, positive);
    const QString atLeastSecond = QStringLiteral("must be at least 1000 (one second)");
    o->integer(QStringLiteral("rateLimitParkMs"), f.rateLimitParkMs, 1000, kWeekMs, atLeastSecond);
    o->integer(QStringLiteral("exhaustedResetMs"), f.exhaustedResetMs, 1000, kWeekMs, atLeastSecond);
    o->integer(QStringLiteral("upstreamIdleTimeoutMs"), f.upstreamIdleTimeoutMs, 1, positive);
    o->integer(QStringLiteral("connectTimeoutMs"), f.connectTimeoutMs, 1, positive);
}

void ConfigReader::readLimits(JsonObjectReader &root, Config &config) {
    auto o = root.object(QStringLiteral("limits"));
    if (!o)
        return;
    o->allowOnly({QStringLiteral("maxBodyBytes"), QStringLiteral("maxHeaderBytes"), QStringLiteral("headerTimeoutMs"),
                  QStringLiteral("idleTimeoutMs"), QStringLiteral("maxConnections"), QStringLiteral("maxHoldBytes"),
                  QStringLiteral("maxResponseBytes"), QStringLiteral("maxBodyBytesInFlight"),
                  QStringLiteral("maxReplayBytes"), QStringLiteral("maxIdempotencyKeysPerTenant"),
                  QStringLiteral("shutdownGraceMs")});
    LimitsConfig &l = config.limits;
    const QString positive = QStringLiteral("must be greater than 0");
    o->integer(QStringLiteral("maxBodyBytes"), l.maxBodyBytes, 1, kMaxBytes, positive);
    o->integer(QStringLiteral("maxHeaderBytes"), l.maxHeaderBytes, 1, positive);
    o->integer(QStringLiteral("headerTimeoutMs"), l.headerTimeoutMs, 1, positive);
    o->integer(QStringLiteral("idleTimeoutMs"), l.idleTimeoutMs, 1, positive);
    o->integer(QStringLiteral("maxConnections"), l.maxConnections, 1, positive);
    o->integer(QStringLiteral("maxHoldBytes"), l.maxHoldBytes, 1, kMaxBytes, positive);
    o->integer(QStringLiteral("maxResponseBytes"), l.maxResponseBytes, 1, kMaxBytes, positive);
    o->integer(QStringLiteral("maxReplayBytes"), l.maxReplayBytes, 0, kMaxBytes,
               QStringLiteral("must be 0 (keep no answer) or more"));
    qint64 keysPerTenant = l.maxIdempotencyKeysPerTenant;
    if (o->integer(QStringLiteral("maxIdempotencyKeysPerTenant"), keysPerTenant, 1, 1000000,
                   QStringLiteral("must be at least 1")))
        l.maxIdempotencyKeysPerTenant = int(keysPerTenant);
    qint64 graceMs = l.shutdownGraceMs;
    if (o->integer(QStringLiteral("shutdownGraceMs"), graceMs, 0, 3600000,
                   QStringLiteral("must be 0 (end requests in flight at once) or more")))
        l.shutdownGraceMs = int(graceMs);
    // The largest body and the largest non-streaming answer must each fit, or every such request
    // would get a 503 that no retry fixes. (Both at once, one request's peak, is the default's
    // room; a smaller explicit budget is the operator's choice for a small machine.)
    const qint64 largest = std::max(l.maxBodyBytes, l.maxResponseBytes);
    if (!o->integer(QStringLiteral("maxBodyBytesInFlight"), l.maxBodyBytesInFlight, 1, kMaxBytes, positive))
        l.maxBodyBytesInFlight = std::max(l.maxBodyBytesInFlight, largest); // unset: the largest of each fits
    else if (l.maxBodyBytesInFlight < l.maxBodyBytes)
        o->error(QStringLiteral("maxBodyBytesInFlight"),
                 QStringLiteral("must be at least limits.maxBodyBytes (%1), or a body that may be sent could never be "
                                "taken")
                     .arg(l.maxBodyBytes));
    else if (l.maxBodyBytesInFlight < l.maxResponseBytes)
        o->error(QStringLiteral("maxBodyBytesInFlight"),
                 QStringLiteral("must be at least limits.maxResponseBytes (%1), or an answer the gateway accepts could "
                                "never be held")
                     .arg(l.maxResponseBytes));
}

void ConfigReader::readMarks(JsonObjectReader &root, Config &config) {
    auto o = root.object(QStringLiteral("marks"));
    if (!o)
        return;
    o->allowOnly({QStringLiteral("store"), QStringLiteral("url"), QStringLiteral("prefix"), QStringLiteral("password"),
                  QStringLiteral("caFile")});
    MarksConfig &m = config.marks;
    o->text(QStringLiteral("store"), m.store);
    o->text(QStringLiteral("url"), m.url);
    o->text(QStringLiteral("prefix"), m.prefix);
    o->text(QStringLiteral("password"), m.password);
    if (o->text(QStringLiteral("caFile"), m.caFile))
        readCaFile(o->pathOf(QStringLiteral("caFile")), m.caFile);
    if (m.store != QLatin1String("memory") && m.store != QLatin1String("redis")) {
        o->error(QStringLiteral("store"),
                 QStringLiteral("expected \"memory\" or \"redis\", got %1").arg(quoted(m.store)));
        return;
    }
    if (m.prefix.isEmpty() || m.prefix.contains(QLatin1Char('*')) || m.prefix.contains(QLatin1Char(':')))
        o->error(QStringLiteral("prefix"), QStringLiteral("must be a non-empty name without '*' or ':'"));
    if (!m.password.isEmpty() && !m.password.startsWith(QLatin1String("keychain:")) &&
        !m.password.startsWith(QLatin1String("env:")))
        o->error(QStringLiteral("password"),
                 QStringLiteral("must be a reference (keychain:NAME or env:VAR); a password is never written inline"));
    if (m.store != QLatin1String("redis"))
        return;
    QString why;
    if (m.url.isEmpty()) {
        o->error(QStringLiteral("url"), QStringLiteral("required when store is \"redis\" (redis://HOST:PORT/DB)"));
        return;
    }
    const auto endpoint = redis::RedisEndpoint::parse(m.url, &why);
    if (!endpoint)
        o->error(QStringLiteral("url"), why);
    else if (!m.caFile.isEmpty() && !endpoint->tls)
        // Said rather than ignored: a CA for a plain connection means the scheme is not the one meant.
        o->error(QStringLiteral("caFile"), QStringLiteral("only a rediss:// url uses TLS; this one is redis://"));
    else if (!endpoint->password.isEmpty())
        o->error(QStringLiteral("url"),
                 QStringLiteral("holds a password; put it in the keychain and name it in marks.password"));
}

void ConfigReader::readUsage(JsonObjectReader &root, Config &config) {
    auto o = root.object(QStringLiteral("usage"));
    if (!o)
        return;
    o->allowOnly({QStringLiteral("retentionDays")});
    if (!o->integer(QStringLiteral("retentionDays"), config.usage.retentionDays, 1,
                    QStringLiteral("must be at least 1 (days of usage rows kept)")))
        return;
    // The prune must never delete rows of a budget's current period: the budget would start again
    // from $0. A period and a day (DST makes a day 25 hours).
    for (const auto &t : std::as_const(config.tenants)) {
        if (!t.budget)
            continue;
        const int needed = t.budget->period == QLatin1String("month")  ? 32
                           : t.budget->period == QLatin1String("week") ? 8
                                                                       : 2;
        if (config.usage.retentionDays < needed) {
            o->error(QStringLiteral("retentionDays"),
                     QStringLiteral("%1 is shorter than tenant %2's budget period (%3): the prune would delete "
                                    "this period's spend; must be at least %4 days")
                         .arg(config.usage.retentionDays)
                         .arg(quoted(t.name), t.budget->period)
                         .arg(needed));
            return;
        }
    }
}

// Offset (in bytes) to "line L, column C", both 1-based.
QString lineColumn(const QByteArray &text, int offset) {
    offset = qBound(0, offset, int(text.size()));
    int line = 1;
    int lineStart = 0;
    for (int i = 0; i < offset; ++i) {
        if (text.at(i) == '\n') {
            ++line;
            lineStart = i + 1;
        }
    }
    return QStringLiteral("line %1, column %2").arg(line).arg(offset - lineStart + 1);
}

// The names an object gives twice. Qt's parser keeps the last and drops the first without a word: a
// copied "r1": {...} block not yet renamed, or "enabled": false, ... "enabled": true, passed as valid and
// the earlier one was gone (probe K1 8). Read once more with RapidJSON's event reader, which sees every
// name as written. Comment keys ("_…") may repeat. At most kMaxRepeated are told.
class RepeatedNames : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, RepeatedNames> {
public:
    static constexpr int kMaxRepeated = 8;

    static QList<ValidationError> find(const QByteArray &json) {
        RepeatedNames handler(json);
        rapidjson::MemoryStream stream(json.constData(), size_t(json.size()));
        handler.m_stream = &stream;
        rapidjson::Reader reader;
        reader.Parse<rapidjson::kParseIterativeFlag>(stream, handler);
        return handler.m_found; // a text only Qt reads (it parsed it first) tells what was found so far
    }

    bool Default() {
        nextChild();
        return true;
    }
    bool String(const char *, rapidjson::SizeType, bool) { return Default(); }
    bool StartObject() { return open(true); }
    bool StartArray() { return open(false); }
    bool EndObject(rapidjson::SizeType) { return close(); }
    bool EndArray(rapidjson::SizeType) { return close(); }
    bool Key(const char *name, rapidjson::SizeType length, bool) {
        Frame &f = m_frames.back();
        const QByteArray key(name, qsizetype(length));
        f.key = QString::fromUtf8(key);
        if (!f.names.contains(key)) {
            f.names.insert(key);
        } else if (!isCommentKey(f.key) && m_found.size() < kMaxRepeated) {
            m_found.append({keyPath(f.path, f.key),
                            QStringLiteral("given twice in one object (again at %1): only the last would count; "
                                           "rename or remove one")
                                .arg(lineColumn(m_json, int(m_stream->Tell()) - int(length) - 2))});
        }
        return m_found.size() < kMaxRepeated;
    }

private:
    struct Frame {
        bool object = false;
        QString path;
        QSet<QByteArray> names;
        QString key;         // an object's member being read
        qsizetype index = 0; // an array's next element
    };

    explicit RepeatedNames(const QByteArray &json) : m_json(json) {}

    // The path of the value starting now, counted as the next element of an array.
    QString nextChild() {
        if (m_frames.isEmpty())
            return {};
        Frame &f = m_frames.back();
        return f.object ? keyPath(f.path, f.key) : indexPath(f.path, f.index++);
    }
    bool open(bool object) {
        Frame f;
        f.object = object;
        f.path = nextChild();
        m_frames.append(std::move(f));
        return true;
    }
    bool close() {
        m_frames.removeLast();
        return true;
    }

    const QByteArray &m_json;
    rapidjson::MemoryStream *m_stream = nullptr;
    QList<Frame> m_frames;
    QList<ValidationError> m_found;
};

} // namespace

ParseResult parse(const QByteArray &json) {
    ParseResult result;
    QJsonParseError parseError;
    const QJsonDocument document = QJsonDocument::fromJson(json, &parseError);
    if (parseError.error != QJsonParseError::NoError) {
        result.errors.append({QString(), QStringLiteral("invalid JSON at %1: %2")
                                             .arg(lineColumn(json, parseError.offset), parseError.errorString())});
        return result;
    }
    if (!document.isObject()) {
        result.errors.append({QString(), QStringLiteral("expected a JSON object at the top level")});
        return result;
    }
    result.errors = RepeatedNames::find(json);
    if (!result.errors.isEmpty())
        return result;
    Config config;
    ConfigReader reader;
    reader.read(document.object(), config);
    result.errors = reader.errors();
    if (result.errors.isEmpty())
        result.config = config;
    return result;
}

LoadResult load(const QString &path, const QString &listenOverride) {
    LoadResult result;
    const QFileInfo info(path);
    if (!info.exists()) {
        result.errors.append({QString(), QStringLiteral("no such file")});
        return result;
    }
    if (info.isDir()) {
        result.errors.append({QString(), QStringLiteral("is a directory, not a configuration file")});
        return result;
    }
    // A regular file (a symlink to one is followed) of a bounded size: a reload reads on the engine's
    // thread, and a FIFO with no writer froze every request, /dev/zero grew without end (probe K1 3).
    if (!info.isFile()) {
        result.errors.append({QString(), QStringLiteral("is not a regular file (a pipe, a device or a socket)")});
        return result;
    }
    if (info.size() > kMaxConfigBytes) {
        result.errors.append({QString(), QStringLiteral("is %1 bytes, over the %2 a configuration file may hold")
                                             .arg(info.size())
                                             .arg(kMaxConfigBytes)});
        return result;
    }
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        result.errors.append({QString(), QStringLiteral("cannot read: %1").arg(file.errorString())});
        return result;
    }
    const QByteArray data = file.read(kMaxConfigBytes + 1);
    if (file.error() != QFileDevice::NoError) {
        result.errors.append({QString(), QStringLiteral("cannot read: %1").arg(file.errorString())});
        return result;
    }
    QByteArray text = data;
    if (!listenOverride.isEmpty()) {
        QJsonParseError error;
        QJsonDocument doc = QJsonDocument::fromJson(data, &error);
        if (error.error == QJsonParseError::NoError && doc.isObject()) {
            QJsonObject root = doc.object();
            root.insert(QStringLiteral("listen"), listenOverride);
            text = QJsonDocument(root).toJson(QJsonDocument::Compact);
        } // bad JSON: parse() below says where, in the file's own lines
    }
    ParseResult parsed = parse(text);
    result.status = parsed.ok() ? LoadStatus::Ok : LoadStatus::Invalid;
    result.config = std::move(parsed.config);
    result.errors = std::move(parsed.errors);
    return result;
}

QList<ValidationError> validate(const Config &config) {
    return parse(QJsonDocument(toJson(config)).toJson(QJsonDocument::Compact)).errors;
}

QList<ValidationError> providersAtListener(const Config &config, const QString &listening) {
    Config judged = config;
    judged.listen = listening;
    ConfigReader reader;
    reader.checkSelfReferences(judged);
    return reader.errors();
}

QString defaultConfigPath() {
    // Independent of whatever application name the caller set: the file's
    // place is part of the product contract.
    const QString configRoot = QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation);
    return configRoot + QStringLiteral("/switchman/config.json");
}

} // namespace sw::config
