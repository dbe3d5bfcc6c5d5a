#include "config/config_loader.h"

#include "redis/redis_endpoint.h"
#include "util/glob_pattern.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHostAddress>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonParseError>
#include <QRegularExpression>
#include <QSaveFile>
#include <QSet>
#include <QSslCertificate>
#include <QStandardPaths>
#include <QUrl>

#include <algorithm>
#include <cmath>
#include <limits>

namespace sw::config {

namespace {

const QStringList kApis = {QStringLiteral("anthropic-messages"), QStringLiteral("openai-completions"),
                           QStringLiteral("openai-responses"), QStringLiteral("google-generative-ai")};
const QStringList kKinds = {QStringLiteral("chat"), QStringLiteral("embedding")};
const QStringList kInputs = {QStringLiteral("text"), QStringLiteral("image")};
const QString kSecretsAdvice = QStringLiteral(
    "secrets don't go in the config: store the secret with `switchman credential set NAME` and reference it as "
    "keychain:NAME, or use env:VAR");

QString keyPath(const QString &parent, const QString &key) {
    static const QRegularExpression plain(QStringLiteral("^[A-Za-z0-9_/-]+$"));
    if (!plain.match(key).hasMatch()) {
        QString escaped = key;
        escaped.replace(QLatin1Char('\\'), QStringLiteral("\\\\")).replace(QLatin1Char('"'), QStringLiteral("\\\""));
        return parent + QStringLiteral("[\"") + escaped + QStringLiteral("\"]");
    }
    return parent.isEmpty() ? key : parent + QLatin1Char('.') + key;
}

QString indexPath(const QString &parent, qsizetype index) {
    return parent + QLatin1Char('[') + QString::number(index) + QLatin1Char(']');
}

QString jsonTypeName(const QJsonValue &value) {
    switch (value.type()) {
    case QJsonValue::Null:
        return QStringLiteral("null");
    case QJsonValue::Bool:
        return QStringLiteral("a boolean");
    case QJsonValue::Double:
        return QStringLiteral("a number");
    case QJsonValue::String:
        return QStringLiteral("a string");
    case QJsonValue::Array:
        return QStringLiteral("an array");
    case QJsonValue::Object:
        return QStringLiteral("an object");
    case QJsonValue::Undefined:
        break;
    }
    return QStringLiteral("nothing");
}

QString quoted(const QString &text) {
    return QLatin1Char('"') + text + QLatin1Char('"');
}

// Heuristic for a pasted API key: well-known key prefixes, or a long token
// without the ':' every reference has. The value itself is never echoed.
bool looksLikeSecret(const QString &value) {
    static const QRegularExpression prefixes(
        QStringLiteral("^(sk-|sk_|rk-|pk-|xai-|gsk_|AIza|ghp_|github_pat_|hf_|Bearer\\s)"));
    if (prefixes.match(value).hasMatch())
        return true;
    return !value.contains(QLatin1Char(':')) && value.size() >= 20;
}

// Keys that start with '_' are comments ("_comment": "..."), in every object of
// the file, including the provider, model, route and tenant maps: JSON has no
// comments, and the starter configuration explains itself this way. They are
// skipped, not validated, and not written back by save().
bool isCommentKey(const QString &key) {
    return key.startsWith(QLatin1Char('_'));
}

// Walks one JSON document, filling a Config and collecting every problem.
class ConfigReader final {
public:
    const QList<ValidationError> &errors() const { return m_errors; }

    void read(const QJsonObject &root, Config &config);

private:
    void error(const QString &path, const QString &reason) { m_errors.append({path, reason}); }
    void wrongType(const QString &path, const QString &expected, const QJsonValue &got) {
        error(path, QStringLiteral("expected %1, got %2").arg(expected, jsonTypeName(got)));
    }

    void checkKeys(const QJsonObject &object, const QString &path, const QStringList &allowed);
    bool object(const QJsonValue &value, const QString &path, QJsonObject &out);
    // A top-level section: false when absent (nothing to read) or not an object (reported).
    bool section(const QJsonObject &root, const QString &name, QJsonObject &out);
    bool string(const QJsonObject &object, const QString &path, const QString &key, QString &out,
                bool required = false);
    bool boolean(const QJsonObject &object, const QString &path, const QString &key, bool &out);
    bool number(const QJsonObject &object, const QString &path, const QString &key, double &out, double min,
                const QString &rangeReason);
    bool integer(const QJsonObject &object, const QString &path, const QString &key, qint64 &out, qint64 min,
                 qint64 max, const QString &rangeReason);
    bool intField(const QJsonObject &object, const QString &path, const QString &key, int &out, int min,
                  const QString &rangeReason);
    // Each element must be a string; on success out holds them all.
    bool stringList(const QJsonObject &object, const QString &path, const QString &key, QStringList &out);

    void readListen(const QJsonObject &root, Config &config);
    void readProviders(const QJsonObject &root, Config &config);
    void readCredential(const QString &path, const QString &value);
    void readCaFile(const QString &path, const QString &file);
    void readModels(const QJsonObject &root, Config &config);
    void readRoutes(const QJsonObject &root, Config &config);
    void readTenants(const QJsonObject &root, Config &config);
    void readFailover(const QJsonObject &root, Config &config);
    void readLimits(const QJsonObject &root, Config &config);
    void readMarks(const QJsonObject &root, Config &config);
    void readUsage(const QJsonObject &root, Config &config);
    void readBudget(const QJsonObject &tenant, const QString &path, TenantConfig &out);

    // Keys present in the document, valid or not: references to them are not
    // reported again as unknown, so one mistake gives one error.
    QSet<QString> m_providerIds;
    QSet<QString> m_modelKeys;
    QList<ValidationError> m_errors;
};

void ConfigReader::checkKeys(const QJsonObject &object, const QString &path, const QStringList &allowed) {
    for (auto it = object.begin(); it != object.end(); ++it) {
        if (!allowed.contains(it.key()) && !isCommentKey(it.key()))
            error(keyPath(path, it.key()),
                  QStringLiteral("unknown key (expected one of: %1)").arg(allowed.join(QStringLiteral(", "))));
    }
}

bool ConfigReader::object(const QJsonValue &value, const QString &path, QJsonObject &out) {
    if (!value.isObject()) {
        wrongType(path, QStringLiteral("an object"), value);
        return false;
    }
    out = value.toObject();
    return true;
}

bool ConfigReader::section(const QJsonObject &root, const QString &name, QJsonObject &out) {
    return root.contains(name) && object(root.value(name), name, out);
}

bool ConfigReader::string(const QJsonObject &object, const QString &path, const QString &key, QString &out,
                          bool required) {
    const QString p = keyPath(path, key);
    if (!object.contains(key)) {
        if (required)
            error(p, QStringLiteral("missing (required)"));
        return false;
    }
    const QJsonValue value = object.value(key);
    if (!value.isString()) {
        wrongType(p, QStringLiteral("a string"), value);
        return false;
    }
    out = value.toString();
    return true;
}

bool ConfigReader::boolean(const QJsonObject &object, const QString &path, const QString &key, bool &out) {
    if (!object.contains(key))
        return false;
    const QJsonValue value = object.value(key);
    if (!value.isBool()) {
        wrongType(keyPath(path, key), QStringLiteral("a boolean (true or false)"), value);
        return false;
    }
    out = value.toBool();
    return true;
}

bool ConfigReader::number(const QJsonObject &object, const QString &path, const QString &key, double &out, double min,
                          const QString &rangeReason) {
    if (!object.contains(key))
        return false;
    const QString p = keyPath(path, key);
    const QJsonValue value = object.value(key);
    if (!value.isDouble()) {
        wrongType(p, QStringLiteral("a number"), value);
        return false;
    }
    const double d = value.toDouble();
    if (!std::isfinite(d) || d < min) {
        error(p, rangeReason);
        return false;
    }
    out = d;
    return true;
}

bool ConfigReader::integer(const QJsonObject &object, const QString &path, const QString &key, qint64 &out, qint64 min,
                           qint64 max, const QString &rangeReason) {
    if (!object.contains(key))
        return false;
    const QString p = keyPath(path, key);
    const QJsonValue value = object.value(key);
    if (!value.isDouble()) {
        wrongType(p, QStringLiteral("an integer"), value);
        return false;
    }
    const double d = value.toDouble();
    if (!std::isfinite(d) || std::floor(d) != d) {
        error(p, QStringLiteral("expected an integer, got %1").arg(d));
        return false;
    }
    if (d < double(min)) {
        error(p, rangeReason);
        return false;
    }
    if (d > double(max)) {
        error(p, QStringLiteral("must be at most %1").arg(max));
        return false;
    }
    out = qint64(d);
    return true;
}

bool ConfigReader::intField(const QJsonObject &object, const QString &path, const QString &key, int &out, int min,
                            const QString &rangeReason) {
    qint64 value = 0;
    if (!integer(object, path, key, value, min, std::numeric_limits<int>::max(), rangeReason))
        return false;
    out = int(value);
    return true;
}

bool ConfigReader::stringList(const QJsonObject &object, const QString &path, const QString &key, QStringList &out) {
    if (!object.contains(key))
        return false;
    const QString p = keyPath(path, key);
    const QJsonValue value = object.value(key);
    if (!value.isArray()) {
        wrongType(p, QStringLiteral("an array of strings"), value);
        return false;
    }
    const QJsonArray array = value.toArray();
    QStringList result;
    bool ok = true;
    for (qsizetype i = 0; i < array.size(); ++i) {
        if (!array.at(i).isString()) {
            wrongType(indexPath(p, i), QStringLiteral("a string"), array.at(i));
            ok = false;
            continue;
        }
        result.append(array.at(i).toString());
    }
    if (ok)
        out = result;
    return ok;
}

void ConfigReader::read(const QJsonObject &root, Config &config) {
    checkKeys(root, QString(),
              {QStringLiteral("listen"), QStringLiteral("providers"), QStringLiteral("models"),
               QStringLiteral("routes"), QStringLiteral("tenants"), QStringLiteral("failover"),
               QStringLiteral("limits"), QStringLiteral("marks"), QStringLiteral("usage")});
    // Order matters: models refer to providers, routes to models, tenants to providers.
    readProviders(root, config);
    readModels(root, config);
    readRoutes(root, config);
    readTenants(root, config);
    readFailover(root, config);
    readLimits(root, config);
    readMarks(root, config);
    readUsage(root, config);
    readListen(root, config); // after tenants: a non-loopback listener needs them
}

void ConfigReader::readListen(const QJsonObject &root, Config &config) {
    QString listen;
    if (!string(root, QString(), QStringLiteral("listen"), listen))
        return;
    const auto address = parseListenAddress(listen);
    if (!address) {
        error(QStringLiteral("listen"),
              QStringLiteral("expected HOST:PORT (e.g. 127.0.0.1:4141, [::1]:4141), got %1").arg(quoted(listen)));
        return;
    }
    // With no tenants every caller is trusted, so only loopback may reach it (SPEC 4).
    const QStringList tenantNames = root.value(QStringLiteral("tenants")).toObject().keys();
    // A tenants object holding only "_comment" keys has no tenant.
    const bool anyTenant =
        std::any_of(tenantNames.begin(), tenantNames.end(), [](const QString &name) { return !isCommentKey(name); });
    if (!isLoopbackHost(address->host) && !anyTenant) {
        error(QStringLiteral("listen"),
              QStringLiteral("%1 is not a loopback address: listening beyond this machine needs at least one tenant "
                             "with a key")
                  .arg(quoted(address->host)));
        return;
    }
    config.listen = listen;
}

void ConfigReader::readProviders(const QJsonObject &root, Config &config) {
    const QString path = QStringLiteral("providers");
    QJsonObject providers;
    if (!section(root, path, providers))
        return;
    static const QRegularExpression idPattern(QStringLiteral("^[A-Za-z0-9._-]+$"));
    for (auto it = providers.begin(); it != providers.end(); ++it) {
        if (isCommentKey(it.key()))
            continue;
        const QString id = it.key();
        const QString p = keyPath(path, id);
        m_providerIds.insert(id);
        if (!idPattern.match(id).hasMatch())
            error(p, QStringLiteral("provider ids may only use letters, digits, '.', '_' and '-'"));
        QJsonObject o;
        if (!object(it.value(), p, o))
            continue;
        checkKeys(o, p,
                  {QStringLiteral("api"), QStringLiteral("baseUrl"), QStringLiteral("credentials"),
                   QStringLiteral("region"), QStringLiteral("maxRetries"), QStringLiteral("retriesBeforeFailover"),
                   QStringLiteral("exhaustedResetMs"), QStringLiteral("demo"), QStringLiteral("caFile")});
        ProviderConfig provider;
        provider.id = id;
        if (string(o, p, QStringLiteral("api"), provider.api, true) && !kApis.contains(provider.api))
            error(keyPath(p, QStringLiteral("api")), QStringLiteral("unknown api %1 (expected one of: %2)")
                                                         .arg(quoted(provider.api), kApis.join(QStringLiteral(", "))));
        if (string(o, p, QStringLiteral("baseUrl"), provider.baseUrl, true)) {
            const QUrl url(provider.baseUrl, QUrl::StrictMode);
            const QString scheme = url.scheme();
            if (!url.isValid() || (scheme != QLatin1String("http") && scheme != QLatin1String("https")) ||
                url.host().isEmpty())
                // Not echoed: a malformed URL may still carry a password.
                error(keyPath(p, QStringLiteral("baseUrl")), QStringLiteral("expected an http:// or https:// URL"));
            else if (!url.userInfo().isEmpty())
                error(keyPath(p, QStringLiteral("baseUrl")),
                      QStringLiteral("must not contain a user name or password: ") + kSecretsAdvice);
        }
        if (stringList(o, p, QStringLiteral("credentials"), provider.credentials)) {
            for (qsizetype i = 0; i < provider.credentials.size(); ++i)
                readCredential(indexPath(keyPath(p, QStringLiteral("credentials")), i), provider.credentials.at(i));
        }
        string(o, p, QStringLiteral("region"), provider.region);
        intField(o, p, QStringLiteral("maxRetries"), provider.maxRetries, 0, QStringLiteral("must be 0 or more"));
        intField(o, p, QStringLiteral("retriesBeforeFailover"), provider.retriesBeforeFailover, 0,
                 QStringLiteral("must be 0 or more"));
        // Usage limits reset slowly (hours); a bad key stays bad: at least a second, at most a week.
        integer(o, p, QStringLiteral("exhaustedResetMs"), provider.exhaustedResetMs, 1000, 7LL * 24 * 3600 * 1000,
                QStringLiteral("must be at least 1000 (one second)"));
        boolean(o, p, QStringLiteral("demo"), provider.demo);
        if (string(o, p, QStringLiteral("caFile"), provider.caFile))
            readCaFile(keyPath(p, QStringLiteral("caFile")), provider.caFile);
        config.providers.insert(id, provider);
    }
}

void ConfigReader::readCaFile(const QString &path, const QString &file) {
    // Checked now, so a typo is a configuration error naming the key, not a TLS
    // failure at the first request (which would read as the provider being down).
    if (file.isEmpty() || !QFileInfo(file).isAbsolute()) {
        error(path, QStringLiteral("expected the absolute path of a PEM file of CA certificates"));
        return;
    }
    const QFileInfo info(file);
    if (!info.exists() || !info.isFile()) {
        error(path, QStringLiteral("no such file: %1").arg(file));
        return;
    }
    if (QSslCertificate::fromPath(file, QSsl::Pem).isEmpty())
        error(path, QStringLiteral("no PEM certificate could be read from %1").arg(file));
}

void ConfigReader::readCredential(const QString &path, const QString &value) {
    static const QRegularExpression keychain(QStringLiteral("^keychain:[A-Za-z0-9._@-]+$"));
    static const QRegularExpression env(QStringLiteral("^env:[A-Za-z_][A-Za-z0-9_]*$"));
    if (value == QLatin1String("passthrough") || keychain.match(value).hasMatch() || env.match(value).hasMatch())
        return;
    // Never echo the value: it may be a real key pasted by mistake.
    if (value.startsWith(QLatin1String("keychain:")))
        error(path, QStringLiteral("invalid keychain reference: NAME after \"keychain:\" may only use letters, "
                                   "digits, '.', '_', '@' and '-'"));
    else if (value.startsWith(QLatin1String("env:")))
        error(path, QStringLiteral("invalid env reference: VAR after \"env:\" must be an environment variable name"));
    else if (looksLikeSecret(value))
        error(path, QStringLiteral("looks like a literal secret; ") + kSecretsAdvice);
    else
        error(path, QStringLiteral("not a credential reference (expected keychain:NAME, env:VAR or passthrough); ") +
                        kSecretsAdvice);
}

void ConfigReader::readModels(const QJsonObject &root, Config &config) {
    const QString path = QStringLiteral("models");
    QJsonObject models;
    if (!section(root, path, models))
        return;
    for (auto it = models.begin(); it != models.end(); ++it) {
        if (isCommentKey(it.key()))
            continue;
        const QString key = it.key();
        const QString p = keyPath(path, key);
        m_modelKeys.insert(key);
        ModelConfig model;
        const qsizetype slash = key.indexOf(QLatin1Char('/'));
        model.provider = key.left(slash);
        model.id = slash < 0 ? QString() : key.mid(slash + 1);
        if (slash <= 0 || model.id.isEmpty())
            error(p, QStringLiteral("model keys are \"provider/id\""));
        else if (!m_providerIds.contains(model.provider))
            error(p, QStringLiteral("unknown provider %1").arg(quoted(model.provider)));
        QJsonObject o;
        if (!object(it.value(), p, o))
            continue;
        checkKeys(o, p,
                  {QStringLiteral("kind"), QStringLiteral("input"), QStringLiteral("reasoning"), QStringLiteral("cost"),
                   QStringLiteral("tier")});
        if (string(o, p, QStringLiteral("kind"), model.kind) && !kKinds.contains(model.kind))
            error(keyPath(p, QStringLiteral("kind")),
                  QStringLiteral("unknown kind %1 (expected chat or embedding)").arg(quoted(model.kind)));
        if (stringList(o, p, QStringLiteral("input"), model.input)) {
            const QString inputPath = keyPath(p, QStringLiteral("input"));
            if (model.input.isEmpty())
                error(inputPath, QStringLiteral("must name at least one input (text, image)"));
            for (qsizetype i = 0; i < model.input.size(); ++i) {
                if (!kInputs.contains(model.input.at(i)))
                    error(indexPath(inputPath, i),
                          QStringLiteral("unknown input %1 (expected text or image)").arg(quoted(model.input.at(i))));
                else if (model.input.indexOf(model.input.at(i)) != i)
                    error(indexPath(inputPath, i), QStringLiteral("duplicate input %1").arg(quoted(model.input.at(i))));
            }
        }
        boolean(o, p, QStringLiteral("reasoning"), model.reasoning);
        if (o.contains(QStringLiteral("cost"))) {
            const QString costPath = keyPath(p, QStringLiteral("cost"));
            QJsonObject cost;
            if (object(o.value(QStringLiteral("cost")), costPath, cost)) {
                checkKeys(cost, costPath, {QStringLiteral("input"), QStringLiteral("output")});
                const QString nonNegative = QStringLiteral("must be 0 or more (price per million tokens)");
                number(cost, costPath, QStringLiteral("input"), model.costInput, 0, nonNegative);
                number(cost, costPath, QStringLiteral("output"), model.costOutput, 0, nonNegative);
            }
        }
        string(o, p, QStringLiteral("tier"), model.tier);
        config.models.insert(key, model);
    }
}

void ConfigReader::readRoutes(const QJsonObject &root, Config &config) {
    const QString path = QStringLiteral("routes");
    QJsonObject routes;
    if (!section(root, path, routes))
        return;
    for (auto it = routes.begin(); it != routes.end(); ++it) {
        if (isCommentKey(it.key()))
            continue;
        const QString name = it.key();
        const QString p = keyPath(path, name);
        if (name.trimmed().isEmpty())
            error(p, QStringLiteral("route names must not be empty"));
        else if (name.contains(QLatin1Char('/')))
            error(p, QStringLiteral("route names must not contain \"/\" (that form selects one model directly)"));
        QJsonObject o;
        if (!object(it.value(), p, o))
            continue;
        checkKeys(
            o, p,
            {QStringLiteral("candidates"), QStringLiteral("aliases"), QStringLiteral("maxFallbackCostMultiplier")});
        RouteConfig route;
        route.name = name;
        const QString candidatesPath = keyPath(p, QStringLiteral("candidates"));
        if (!o.contains(QStringLiteral("candidates"))) {
            error(candidatesPath, QStringLiteral("missing (required)"));
        } else if (stringList(o, p, QStringLiteral("candidates"), route.candidates)) {
            if (route.candidates.isEmpty())
                error(candidatesPath, QStringLiteral("must list at least one model"));
            for (qsizetype i = 0; i < route.candidates.size(); ++i) {
                const QString &candidate = route.candidates.at(i);
                if (!m_modelKeys.contains(candidate))
                    error(indexPath(candidatesPath, i), QStringLiteral("unknown model %1").arg(quoted(candidate)));
                else if (route.candidates.indexOf(candidate) != i)
                    error(indexPath(candidatesPath, i),
                          QStringLiteral("duplicate candidate %1").arg(quoted(candidate)));
            }
        }
        if (stringList(o, p, QStringLiteral("aliases"), route.aliases)) {
            const QString aliasesPath = keyPath(p, QStringLiteral("aliases"));
            for (qsizetype i = 0; i < route.aliases.size(); ++i) {
                const QString &alias = route.aliases.at(i);
                const util::GlobPattern glob(alias);
                if (!glob.isValid())
                    error(indexPath(aliasesPath, i),
                          QStringLiteral("expected a glob pattern such as \"claude-*\" or \"claude-[34]*\": %1")
                              .arg(glob.errorString()));
            }
        }
        double multiplier = 0;
        if (number(o, p, QStringLiteral("maxFallbackCostMultiplier"), multiplier, 1,
                   QStringLiteral("must be 1 or more (a multiple of the first eligible candidate's price)")))
            route.maxFallbackCostMultiplier = multiplier;
        config.routes.insert(name, route);
    }
}

void ConfigReader::readTenants(const QJsonObject &root, Config &config) {
    const QString path = QStringLiteral("tenants");
    QJsonObject tenants;
    if (!section(root, path, tenants))
        return;
    static const QRegularExpression hashPattern(QStringLiteral("^sha256:[0-9a-fA-F]{64}$"));
    QHash<QString, QString> keyOwners; // hash -> tenant
    for (auto it = tenants.begin(); it != tenants.end(); ++it) {
        if (isCommentKey(it.key()))
            continue;
        const QString name = it.key();
        const QString p = keyPath(path, name);
        if (name.trimmed().isEmpty())
            error(p, QStringLiteral("tenant names must not be empty"));
        QJsonObject o;
        if (!object(it.value(), p, o))
            continue;
        checkKeys(o, p,
                  {QStringLiteral("keys"), QStringLiteral("providers"), QStringLiteral("regions"),
                   QStringLiteral("admin"), QStringLiteral("budget")});
        TenantConfig tenant;
        tenant.name = name;
        const QString keysPath = keyPath(p, QStringLiteral("keys"));
        if (!o.contains(QStringLiteral("keys"))) {
            error(keysPath,
                  QStringLiteral("missing (required): create a key with `switchman key create --tenant %1`").arg(name));
        } else if (stringList(o, p, QStringLiteral("keys"), tenant.keyHashes)) {
            if (tenant.keyHashes.isEmpty())
                error(keysPath, QStringLiteral("must list at least one key hash"));
            for (qsizetype i = 0; i < tenant.keyHashes.size(); ++i) {
                QString &hash = tenant.keyHashes[i];
                if (!hashPattern.match(hash).hasMatch()) {
                    // Never echo the value: it may be the key itself.
                    error(indexPath(keysPath, i),
                          QStringLiteral("expected \"sha256:\" followed by 64 hex digits (the hash of a key, never the "
                                         "key itself; `switchman key create --tenant NAME` makes one)"));
                    continue;
                }
                hash = hash.toLower(); // compare hashes case-insensitively
                const QString owner = keyOwners.value(hash);
                if (!owner.isNull())
                    error(indexPath(keysPath, i),
                          QStringLiteral("the same key is already listed for tenant %1").arg(quoted(owner)));
                else
                    keyOwners.insert(hash, name);
            }
        }
        if (stringList(o, p, QStringLiteral("providers"), tenant.providers)) {
            for (qsizetype i = 0; i < tenant.providers.size(); ++i) {
                if (!m_providerIds.contains(tenant.providers.at(i)))
                    error(indexPath(keyPath(p, QStringLiteral("providers")), i),
                          QStringLiteral("unknown provider %1").arg(quoted(tenant.providers.at(i))));
            }
        }
        stringList(o, p, QStringLiteral("regions"), tenant.regions);
        boolean(o, p, QStringLiteral("admin"), tenant.admin);
        readBudget(o, p, tenant);
        config.tenants.insert(name, tenant);
    }
}

void ConfigReader::readBudget(const QJsonObject &tenant, const QString &path, TenantConfig &out) {
    if (!tenant.contains(QStringLiteral("budget")))
        return;
    const QString p = keyPath(path, QStringLiteral("budget"));
    QJsonObject o;
    if (!object(tenant.value(QStringLiteral("budget")), p, o))
        return;
    checkKeys(o, p, {QStringLiteral("usd"), QStringLiteral("period")});
    BudgetConfig budget;
    if (!o.contains(QStringLiteral("usd")))
        error(keyPath(p, QStringLiteral("usd")), QStringLiteral("missing (required): the spend limit in US dollars"));
    else if (!number(o, p, QStringLiteral("usd"), budget.usd, 0,
                     QStringLiteral("must be 0 or more (US dollars per period)")))
        return;
    if (string(o, p, QStringLiteral("period"), budget.period) &&
        !QStringList{QStringLiteral("day"), QStringLiteral("week"), QStringLiteral("month")}.contains(budget.period))
        error(keyPath(p, QStringLiteral("period")),
              QStringLiteral("expected \"day\", \"week\" or \"month\", got %1").arg(quoted(budget.period)));
    out.budget = budget;
}

void ConfigReader::readUsage(const QJsonObject &root, Config &config) {
    const QString p = QStringLiteral("usage");
    QJsonObject o;
    if (!section(root, p, o))
        return;
    checkKeys(o, p, {QStringLiteral("retentionDays")});
    intField(o, p, QStringLiteral("retentionDays"), config.usage.retentionDays, 1,
             QStringLiteral("must be at least 1 (days of usage rows kept)"));
}

void ConfigReader::readFailover(const QJsonObject &root, Config &config) {
    const QString p = QStringLiteral("failover");
    QJsonObject o;
    if (!section(root, p, o))
        return;
    checkKeys(o, p,
              {QStringLiteral("enabled"), QStringLiteral("deadlineMs"), QStringLiteral("maxRetryDelayMs"),
               QStringLiteral("keepaliveMs"), QStringLiteral("rateLimitParkMs"), QStringLiteral("exhaustedResetMs"),
               QStringLiteral("upstreamIdleTimeoutMs")});
    FailoverConfig &f = config.failover;
    boolean(o, p, QStringLiteral("enabled"), f.enabled);
    const QString positive = QStringLiteral("must be greater than 0 (milliseconds)");
    intField(o, p, QStringLiteral("deadlineMs"), f.deadlineMs, 1, positive);
    intField(o, p, QStringLiteral("maxRetryDelayMs"), f.maxRetryDelayMs, 0, QStringLiteral("must be 0 or more"));
    intField(o, p, QStringLiteral("keepaliveMs"), f.keepaliveMs, 1, positive);
    const qint64 week = 7LL * 24 * 3600 * 1000;
    const QString atLeastSecond = QStringLiteral("must be at least 1000 (one second)");
    integer(o, p, QStringLiteral("rateLimitParkMs"), f.rateLimitParkMs, 1000, week, atLeastSecond);
    integer(o, p, QStringLiteral("exhaustedResetMs"), f.exhaustedResetMs, 1000, week, atLeastSecond);
    intField(o, p, QStringLiteral("upstreamIdleTimeoutMs"), f.upstreamIdleTimeoutMs, 1, positive);
}

void ConfigReader::readLimits(const QJsonObject &root, Config &config) {
    const QString p = QStringLiteral("limits");
    QJsonObject o;
    if (!section(root, p, o))
        return;
    checkKeys(o, p,
              {QStringLiteral("maxBodyBytes"), QStringLiteral("maxHeaderBytes"), QStringLiteral("headerTimeoutMs"),
               QStringLiteral("idleTimeoutMs"), QStringLiteral("maxConnections"), QStringLiteral("maxHoldBytes"),
               QStringLiteral("maxResponseBytes")});
    LimitsConfig &l = config.limits;
    const QString positive = QStringLiteral("must be greater than 0");
    integer(o, p, QStringLiteral("maxBodyBytes"), l.maxBodyBytes, 1, qint64(1) << 53, positive);
    intField(o, p, QStringLiteral("maxHeaderBytes"), l.maxHeaderBytes, 1, positive);
    intField(o, p, QStringLiteral("headerTimeoutMs"), l.headerTimeoutMs, 1, positive);
    intField(o, p, QStringLiteral("idleTimeoutMs"), l.idleTimeoutMs, 1, positive);
    intField(o, p, QStringLiteral("maxConnections"), l.maxConnections, 1, positive);
    integer(o, p, QStringLiteral("maxHoldBytes"), l.maxHoldBytes, 1, qint64(1) << 53, positive);
    integer(o, p, QStringLiteral("maxResponseBytes"), l.maxResponseBytes, 1, qint64(1) << 53, positive);
}

void ConfigReader::readMarks(const QJsonObject &root, Config &config) {
    const QString p = QStringLiteral("marks");
    QJsonObject o;
    if (!section(root, p, o))
        return;
    checkKeys(o, p, {QStringLiteral("store"), QStringLiteral("url"), QStringLiteral("prefix"), QStringLiteral("password")});
    MarksConfig &m = config.marks;
    string(o, p, QStringLiteral("store"), m.store);
    string(o, p, QStringLiteral("url"), m.url);
    string(o, p, QStringLiteral("prefix"), m.prefix);
    string(o, p, QStringLiteral("password"), m.password);
    if (m.store != QLatin1String("memory") && m.store != QLatin1String("redis")) {
        error(p + QStringLiteral(".store"), QStringLiteral("expected \"memory\" or \"redis\", got %1").arg(quoted(m.store)));
        return;
    }
    if (m.prefix.isEmpty() || m.prefix.contains(QLatin1Char('*')) || m.prefix.contains(QLatin1Char(':')))
        error(p + QStringLiteral(".prefix"), QStringLiteral("must be a non-empty name without '*' or ':'"));
    if (!m.password.isEmpty() && !m.password.startsWith(QLatin1String("keychain:")) &&
        !m.password.startsWith(QLatin1String("env:")))
        error(p + QStringLiteral(".password"),
              QStringLiteral("must be a reference (keychain:NAME or env:VAR); a password is never written inline"));
    if (m.store == QLatin1String("redis")) {
        QString why;
        if (m.url.isEmpty())
            error(p + QStringLiteral(".url"), QStringLiteral("required when store is \"redis\" (redis://HOST:PORT/DB)"));
        else if (!redis::RedisEndpoint::parse(m.url, &why))
            error(p + QStringLiteral(".url"), why);
        else if (!redis::RedisEndpoint::parse(m.url, &why)->password.isEmpty())
            error(p + QStringLiteral(".url"),
                  QStringLiteral("holds a password; put it in the keychain and name it in marks.password"));
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

QJsonArray toArray(const QStringList &list) {
    return QJsonArray::fromStringList(list);
}

} // namespace

QString ValidationError::toString() const {
    return path.isEmpty() ? reason : path + QStringLiteral(": ") + reason;
}

std::optional<ListenAddress> parseListenAddress(const QString &text) {
    static const QRegularExpression bracketed(QStringLiteral("^\\[([0-9A-Fa-f:.]+)\\]:([0-9]{1,5})$"));
    static const QRegularExpression plain(QStringLiteral("^([^:\\[\\]\\s]+):([0-9]{1,5})$"));
    static const QRegularExpression hostname(
        QStringLiteral("^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$"));
    QRegularExpressionMatch match = bracketed.match(text);
    const bool ipv6 = match.hasMatch();
    if (!ipv6)
        match = plain.match(text);
    if (!match.hasMatch())
        return std::nullopt;
    const QString host = match.captured(1);
    const uint port = match.captured(2).toUInt();
    if (port > 65535)
        return std::nullopt;
    QHostAddress address;
    const bool isAddress = address.setAddress(host);
    if (ipv6 ? (!isAddress || address.protocol() != QAbstractSocket::IPv6Protocol)
             : (!isAddress && !hostname.match(host).hasMatch()))
        return std::nullopt;
    return ListenAddress{host, quint16(port)};
}

bool isLoopbackHost(const QString &host) {
    if (host.compare(QLatin1String("localhost"), Qt::CaseInsensitive) == 0)
        return true;
    const QHostAddress address(host);
    return !address.isNull() && address.isLoopback();
}

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
    Config config;
    ConfigReader reader;
    reader.read(document.object(), config);
    result.errors = reader.errors();
    if (result.errors.isEmpty())
        result.config = config;
    return result;
}

LoadResult load(const QString &path) {
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
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        result.errors.append({QString(), QStringLiteral("cannot read: %1").arg(file.errorString())});
        return result;
    }
    const QByteArray data = file.readAll();
    if (file.error() != QFileDevice::NoError) {
        result.errors.append({QString(), QStringLiteral("cannot read: %1").arg(file.errorString())});
        return result;
    }
    ParseResult parsed = parse(data);
    result.status = parsed.ok() ? LoadStatus::Ok : LoadStatus::Invalid;
    result.config = std::move(parsed.config);
    result.errors = std::move(parsed.errors);
    return result;
}

QList<ValidationError> validate(const Config &config) {
    return parse(QJsonDocument(toJson(config)).toJson(QJsonDocument::Compact)).errors;
}

QJsonObject toJson(const Config &config) {
    QJsonObject root;
    root.insert(QStringLiteral("listen"), config.listen);

    const ProviderConfig defaultProvider;
    QJsonObject providers;
    for (const ProviderConfig &p : config.providers) {
        QJsonObject o;
        o.insert(QStringLiteral("api"), p.api);
        o.insert(QStringLiteral("baseUrl"), p.baseUrl);
        o.insert(QStringLiteral("credentials"), toArray(p.credentials));
        if (!p.region.isEmpty())
            o.insert(QStringLiteral("region"), p.region);
        if (p.maxRetries != defaultProvider.maxRetries)
            o.insert(QStringLiteral("maxRetries"), p.maxRetries);
        if (p.retriesBeforeFailover != defaultProvider.retriesBeforeFailover)
            o.insert(QStringLiteral("retriesBeforeFailover"), p.retriesBeforeFailover);
        if (p.exhaustedResetMs != defaultProvider.exhaustedResetMs)
            o.insert(QStringLiteral("exhaustedResetMs"), p.exhaustedResetMs);
        if (p.demo)
            o.insert(QStringLiteral("demo"), true);
        if (!p.caFile.isEmpty())
            o.insert(QStringLiteral("caFile"), p.caFile);
        providers.insert(p.id, o);
    }
    root.insert(QStringLiteral("providers"), providers);

    const ModelConfig defaultModel;
    QJsonObject models;
    for (auto it = config.models.begin(); it != config.models.end(); ++it) {
        const ModelConfig &m = it.value();
        QJsonObject o;
        if (m.kind != defaultModel.kind)
            o.insert(QStringLiteral("kind"), m.kind);
        if (m.input != defaultModel.input)
            o.insert(QStringLiteral("input"), toArray(m.input));
        if (m.reasoning)
            o.insert(QStringLiteral("reasoning"), true);
        if (m.costInput != 0 || m.costOutput != 0)
            o.insert(QStringLiteral("cost"),
                     QJsonObject{{QStringLiteral("input"), m.costInput}, {QStringLiteral("output"), m.costOutput}});
        if (!m.tier.isEmpty())
            o.insert(QStringLiteral("tier"), m.tier);
        // The map key wins over the struct's fields: it is what routes refer to.
        models.insert(it.key(), o);
    }
    root.insert(QStringLiteral("models"), models);

    QJsonObject routes;
    for (auto it = config.routes.begin(); it != config.routes.end(); ++it) {
        const RouteConfig &r = it.value();
        QJsonObject o;
        o.insert(QStringLiteral("candidates"), toArray(r.candidates));
        if (!r.aliases.isEmpty())
            o.insert(QStringLiteral("aliases"), toArray(r.aliases));
        if (r.maxFallbackCostMultiplier)
            o.insert(QStringLiteral("maxFallbackCostMultiplier"), *r.maxFallbackCostMultiplier);
        routes.insert(it.key(), o);
    }
    root.insert(QStringLiteral("routes"), routes);

    if (!config.tenants.isEmpty()) {
        QJsonObject tenants;
        for (auto it = config.tenants.begin(); it != config.tenants.end(); ++it) {
            const TenantConfig &t = it.value();
            QJsonObject o;
            o.insert(QStringLiteral("keys"), toArray(t.keyHashes));
            if (!t.providers.isEmpty())
                o.insert(QStringLiteral("providers"), toArray(t.providers));
            if (!t.regions.isEmpty())
                o.insert(QStringLiteral("regions"), toArray(t.regions));
            if (t.admin)
                o.insert(QStringLiteral("admin"), true);
            if (t.budget)
                o.insert(QStringLiteral("budget"), QJsonObject{{QStringLiteral("usd"), t.budget->usd},
                                                               {QStringLiteral("period"), t.budget->period}});
            tenants.insert(it.key(), o);
        }
        root.insert(QStringLiteral("tenants"), tenants);
    }

    const FailoverConfig defaultFailover;
    QJsonObject failover;
    failover.insert(QStringLiteral("enabled"), config.failover.enabled);
    failover.insert(QStringLiteral("deadlineMs"), config.failover.deadlineMs);
    if (config.failover.maxRetryDelayMs != defaultFailover.maxRetryDelayMs)
        failover.insert(QStringLiteral("maxRetryDelayMs"), config.failover.maxRetryDelayMs);
    if (config.failover.keepaliveMs != defaultFailover.keepaliveMs)
        failover.insert(QStringLiteral("keepaliveMs"), config.failover.keepaliveMs);
    if (config.failover.rateLimitParkMs != defaultFailover.rateLimitParkMs)
        failover.insert(QStringLiteral("rateLimitParkMs"), config.failover.rateLimitParkMs);
    if (config.failover.exhaustedResetMs != defaultFailover.exhaustedResetMs)
        failover.insert(QStringLiteral("exhaustedResetMs"), config.failover.exhaustedResetMs);
    if (config.failover.upstreamIdleTimeoutMs != defaultFailover.upstreamIdleTimeoutMs)
        failover.insert(QStringLiteral("upstreamIdleTimeoutMs"), config.failover.upstreamIdleTimeoutMs);
    root.insert(QStringLiteral("failover"), failover);

    const LimitsConfig defaultLimits;
    QJsonObject limits;
    if (config.limits.maxBodyBytes != defaultLimits.maxBodyBytes)
        limits.insert(QStringLiteral("maxBodyBytes"), config.limits.maxBodyBytes);
    if (config.limits.maxHeaderBytes != defaultLimits.maxHeaderBytes)
        limits.insert(QStringLiteral("maxHeaderBytes"), config.limits.maxHeaderBytes);
    if (config.limits.headerTimeoutMs != defaultLimits.headerTimeoutMs)
        limits.insert(QStringLiteral("headerTimeoutMs"), config.limits.headerTimeoutMs);
    if (config.limits.idleTimeoutMs != defaultLimits.idleTimeoutMs)
        limits.insert(QStringLiteral("idleTimeoutMs"), config.limits.idleTimeoutMs);
    if (config.limits.maxConnections != defaultLimits.maxConnections)
        limits.insert(QStringLiteral("maxConnections"), config.limits.maxConnections);
    if (config.limits.maxHoldBytes != defaultLimits.maxHoldBytes)
        limits.insert(QStringLiteral("maxHoldBytes"), config.limits.maxHoldBytes);
    if (config.limits.maxResponseBytes != defaultLimits.maxResponseBytes)
        limits.insert(QStringLiteral("maxResponseBytes"), config.limits.maxResponseBytes);
    if (!limits.isEmpty())
        root.insert(QStringLiteral("limits"), limits);

    if (config.marks != MarksConfig()) {
        QJsonObject marks{{QStringLiteral("store"), config.marks.store}};
        if (!config.marks.url.isEmpty())
            marks.insert(QStringLiteral("url"), config.marks.url);
        if (config.marks.prefix != MarksConfig().prefix)
            marks.insert(QStringLiteral("prefix"), config.marks.prefix);
        if (!config.marks.password.isEmpty())
            marks.insert(QStringLiteral("password"), config.marks.password);
        root.insert(QStringLiteral("marks"), marks);
    }
    if (config.usage != UsageConfig())
        root.insert(QStringLiteral("usage"),
                    QJsonObject{{QStringLiteral("retentionDays"), config.usage.retentionDays}});
    return root;
}

bool save(const QString &path, const Config &config, QString *error, QString *note) {
    const auto fail = [error](const QString &message) {
        if (error)
            *error = message;
        return false;
    };
    const QByteArray json = QJsonDocument(toJson(config)).toJson(QJsonDocument::Indented);
    // Never write a file that would not load again.
    const ParseResult check = parse(json);
    if (!check.ok()) {
        QStringList lines;
        for (const ValidationError &e : check.errors)
            lines.append(e.toString());
        return fail(QStringLiteral("configuration is not valid:\n") + lines.join(QLatin1Char('\n')));
    }
    // A symbolic link is resolved, never replaced by a file (dotfile managers link config.json
    // into a repository), and the caller is told which file was written.
    QString target = path;
    const QFileInfo info(path);
    if (info.isSymLink()) {
        target = info.canonicalFilePath();
        if (target.isEmpty())
            return fail(QStringLiteral("%1 is a symbolic link to %2, which does not exist; fix the link or pass the "
                                       "real path with --config")
                            .arg(path, info.symLinkTarget()));
        if (note)
            *note = QStringLiteral("%1 is a symbolic link: wrote its target %2").arg(path, target);
    } else if (note) {
        note->clear();
    }
    QString why;
    const QString directory = QFileInfo(target).absolutePath();
    if (!makePrivateDirectory(directory, &why))
        return fail(why);
    // Tenant key hashes and credential references: owner only for a new file. An existing file
    // keeps the mode its owner chose, unless anyone on the machine could read it.
    constexpr QFileDevice::Permissions kOwnerOnly =
        QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ReadUser | QFileDevice::WriteUser;
    constexpr QFileDevice::Permissions kOther =
        QFileDevice::ReadOther | QFileDevice::WriteOther | QFileDevice::ExeOther;
    const bool exists = QFileInfo::exists(target);
    const QFileDevice::Permissions mode = exists ? QFile::permissions(target) & ~kOther : kOwnerOnly;
    QSaveFile file(target);
    if (!file.open(QIODevice::WriteOnly))
        return fail(QStringLiteral("cannot write %1: %2").arg(target, file.errorString()));
    // Before the first byte: QSaveFile creates a new file with the umask's mode (often 0644).
    if (!file.setPermissions(mode)) {
        file.cancelWriting();
        return fail(QStringLiteral("cannot set the permissions of %1: %2").arg(target, file.errorString()));
    }
    if (file.write(json) != json.size()) {
        const QString reason = file.errorString();
        file.cancelWriting();
        return fail(QStringLiteral("cannot write %1: %2").arg(target, reason));
    }
    if (!file.commit())
        return fail(QStringLiteral("cannot write %1: %2").arg(target, file.errorString()));
    return true;
}

bool makePrivateDirectory(const QString &directory, QString *error) {
    const QString absolute = QDir::cleanPath(QDir(directory).absolutePath());
    QStringList missing;
    for (QString at = absolute; !QFileInfo::exists(at); at = QFileInfo(at).absolutePath()) {
        missing.prepend(at);
        if (QFileInfo(at).absolutePath() == at)
            break; // the root itself is missing: mkdir reports it below
    }
    for (const QString &dir : std::as_const(missing)) {
        if (!QDir().mkdir(dir, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner |
                                   QFileDevice::ReadUser | QFileDevice::WriteUser | QFileDevice::ExeUser) &&
            !QFileInfo(dir).isDir()) {
            if (error)
                *error = QStringLiteral("cannot create directory %1").arg(dir);
            return false;
        }
    }
    if (!QFileInfo(absolute).isDir()) {
        if (error)
            *error = QStringLiteral("cannot create directory %1: a file of that name is in the way").arg(absolute);
        return false;
    }
    return true;
}

QString defaultConfigPath() {
    // Independent of whatever application name the caller set: the file's
    // place is part of the product contract.
    const QString configRoot = QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation);
    return configRoot + QStringLiteral("/switchman/config.json");
}

Config demoConfig() {
    Config config;
    config.listen = QStringLiteral("127.0.0.1:4141");

    const auto provider = [](const QString &id, const QString &api) {
        ProviderConfig p;
        p.id = id;
        p.api = api;
        p.baseUrl = QStringLiteral("http://127.0.0.1:0"); // replaced by the simulated upstream's URL at start
        p.demo = true;                                    // credentials stay empty: no auth header
        return p;
    };
    config.providers.insert(QStringLiteral("sim-anthropic"),
                            provider(QStringLiteral("sim-anthropic"), QStringLiteral("anthropic-messages")));
    config.providers.insert(QStringLiteral("sim-openai"),
                            provider(QStringLiteral("sim-openai"), QStringLiteral("openai-completions")));
    // One simulated provider per upstream API, so --demo reaches every adapter.
    config.providers.insert(QStringLiteral("sim-responses"),
                            provider(QStringLiteral("sim-responses"), QStringLiteral("openai-responses")));
    config.providers.insert(QStringLiteral("sim-google"),
                            provider(QStringLiteral("sim-google"), QStringLiteral("google-generative-ai")));

    const auto model = [](const QString &providerId, const QString &id, double costInput, double costOutput) {
        ModelConfig m;
        m.provider = providerId;
        m.id = id;
        m.input = {QStringLiteral("text"), QStringLiteral("image")};
        m.reasoning = true;
        m.costInput = costInput;
        m.costOutput = costOutput;
        return m;
    };
    const ModelConfig claude = model(QStringLiteral("sim-anthropic"), QStringLiteral("claude-sim"), 3, 15);
    const ModelConfig gpt = model(QStringLiteral("sim-openai"), QStringLiteral("gpt-sim"), 1.25, 10);
    config.models.insert(claude.key(), claude);
    config.models.insert(gpt.key(), gpt);
    const ModelConfig responses = model(QStringLiteral("sim-responses"), QStringLiteral("gpt-responses-sim"), 1.25, 10);
    const ModelConfig gemini = model(QStringLiteral("sim-google"), QStringLiteral("gemini-sim"), 1.25, 10);
    config.models.insert(responses.key(), responses);
    config.models.insert(gemini.key(), gemini);

    RouteConfig route;
    route.name = QStringLiteral("demo");
    route.candidates = {claude.key(), gpt.key()};
    route.aliases = {QStringLiteral("claude-*"), QStringLiteral("gpt-*")};
    config.routes.insert(route.name, route);
    return config;
}

} // namespace sw::config
