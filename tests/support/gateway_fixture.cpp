#include "gateway_fixture.h"

#include <QEventLoop>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTimer>

namespace sw::test {

QByteArray HttpResult::header(QByteArrayView name) const {
    for (const auto &h : headers)
        if (h.first.compare(name, Qt::CaseInsensitive) == 0)
            return h.second;
    return {};
}

QJsonObject HttpResult::json() const {
    return QJsonDocument::fromJson(body).object();
}

void ScriptedSecretStore::read(const QString &name, QObject *context,
                               std::function<void(const credentials::SecretResult &)> done) {
    ++reads;
    if (mode == Mode::Hang)
        return m_held.append({name, context, std::move(done)});
    answer(name, context, std::move(done));
}

void ScriptedSecretStore::answer(const QString &name, QObject *context,
                                 std::function<void(const credentials::SecretResult &)> done) {
    credentials::SecretResult r;
    if (mode == Mode::Fail) {
        r.error = QStringLiteral("the OS keychain (Secret Service) is not available");
    } else if (secrets.contains(name)) {
        r.ok = true;
        r.secret = secrets.value(name);
    } else {
        r.notFound = true;
        r.error = QStringLiteral("no such keychain entry");
    }
    QTimer::singleShot(0, context, [r, done]() { done(r); });
}

void ScriptedSecretStore::answerHeld() {
    const QList<Held> held = std::exchange(m_held, {});
    for (const Held &h : held)
        if (h.context)
            answer(h.name, h.context, h.done);
}

void ScriptedSecretStore::write(const QString &name, const QByteArray &secret, QObject *context,
                                std::function<void(const credentials::SecretResult &)> done) {
    secrets.insert(name, secret);
    credentials::SecretResult r;
    r.ok = true;
    QTimer::singleShot(0, context, [r, done]() { done(r); });
}

GatewayFixture::GatewayFixture() {
    for (auto *f : {&anthropicA, &openaiB, &anthropicC, &responsesD, &googleE})
        f->listen();
    responsesD.setLabel(QStringLiteral("pd/resp-d"));
    googleE.setLabel(QStringLiteral("pe/gemini-e"));
    anthropicA.setLabel(QStringLiteral("pa/claude-a"));
    openaiB.setLabel(QStringLiteral("pb/gpt-b"));
    anthropicC.setLabel(QStringLiteral("pc/claude-c"));

    auto provider = [](const QString &id, const QString &api, const QString &url) {
        config::ProviderConfig p;
        p.id = id;
        p.api = api;
        p.baseUrl = url;
        p.maxRetries = 0;
        return p;
    };
    config.listen = QStringLiteral("127.0.0.1:0");
    config.providers.insert(QStringLiteral("pa"),
                            provider(QStringLiteral("pa"), QStringLiteral("anthropic-messages"), anthropicA.baseUrl()));
    config.providers.insert(QStringLiteral("pb"), provider(QStringLiteral("pb"), QStringLiteral("openai-completions"),
                                                           openaiB.baseUrl() + QStringLiteral("/v1")));
    config.providers.insert(QStringLiteral("pc"),
                            provider(QStringLiteral("pc"), QStringLiteral("anthropic-messages"), anthropicC.baseUrl()));
    config.providers.insert(QStringLiteral("pd"), provider(QStringLiteral("pd"), QStringLiteral("openai-responses"),
                                                           responsesD.baseUrl() + QStringLiteral("/v1")));
    config.providers.insert(QStringLiteral("pe"), provider(QStringLiteral("pe"), QStringLiteral("google-generative-ai"),
                                                           googleE.baseUrl() + QStringLiteral("/v1beta")));
    auto model = [](const QString &provider, const QString &id) {
        config::ModelConfig m;
        m.provider = provider;
        m.id = id;
        m.input = {QStringLiteral("text"), QStringLiteral("image")};
        m.costInput = 1;
        m.costOutput = 2;
        return m;
    };
    for (const auto &m :
         {model(QStringLiteral("pa"), QStringLiteral("claude-a")), model(QStringLiteral("pb"), QStringLiteral("gpt-b")),
          model(QStringLiteral("pc"), QStringLiteral("claude-c")),
          model(QStringLiteral("pd"), QStringLiteral("resp-d")),
          model(QStringLiteral("pe"), QStringLiteral("gemini-e"))})
        config.models.insert(m.key(), m);
    config::RouteConfig route;
    route.name = QStringLiteral("chain");
    route.candidates = {QStringLiteral("pa/claude-a"), QStringLiteral("pb/gpt-b")};
    config.routes.insert(route.name, route);
    config.failover.deadlineMs = 4000; // budgets of 2 s: short enough for tests
}

GatewayFixture::~GatewayFixture() {
    m_engine.reset();
}

void GatewayFixture::start() {
    Engine::Options o;
    o.config = config;
    o.secrets = &secrets;
    o.clock = clock;
    o.transport = transport;
    o.configPath = configPath;
    o.listenGiven = listenGiven;
    o.usageLedgerPath = usageLedgerPath;
    o.usageLedgerMaxPages = usageLedgerMaxPages;
    m_engine = std::make_unique<Engine>(std::move(o));
    QString error;
    if (!m_engine->start(&error))
        qFatal("engine did not start: %s", qPrintable(error));
}

QNetworkReply *GatewayFixture::postAsync(const QString &path, const QJsonObject &body,
                                         const QList<QPair<QByteArray, QByteArray>> &headers) {
    QNetworkRequest req(QUrl(baseUrl() + path));
    req.setHeader(QNetworkRequest::ContentTypeHeader, QByteArrayLiteral("application/json"));
    for (const auto &h : headers)
        req.setRawHeader(h.first, h.second);
    return nam.post(req, QJsonDocument(body).toJson(QJsonDocument::Compact));
}

HttpResult GatewayFixture::wait(QNetworkReply *reply, int timeoutMs) {
    HttpResult r;
    if (!reply->isFinished()) {
        QEventLoop loop;
        QTimer timer;
        timer.setSingleShot(true);
        QObject::connect(&timer, &QTimer::timeout, &loop, &QEventLoop::quit);
        QObject::connect(reply, &QNetworkReply::finished, &loop, &QEventLoop::quit);
        timer.start(timeoutMs);
        loop.exec();
        r.timedOut = !reply->isFinished();
    }
    r.status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    r.headers = reply->rawHeaderPairs();
    r.body = reply->readAll();
    if (r.timedOut)
        reply->abort();
    reply->deleteLater();
    return r;
}

HttpResult GatewayFixture::post(const QString &path, const QJsonObject &body,
                                const QList<QPair<QByteArray, QByteArray>> &headers, int timeoutMs) {
    return wait(postAsync(path, body, headers), timeoutMs);
}

HttpResult GatewayFixture::postRaw(const QString &path, const QByteArray &body,
                                   const QList<QPair<QByteArray, QByteArray>> &headers, int timeoutMs) {
    QNetworkRequest req(QUrl(baseUrl() + path));
    req.setHeader(QNetworkRequest::ContentTypeHeader, QByteArrayLiteral("application/json"));
    for (const auto &h : headers)
        req.setRawHeader(h.first, h.second);
    return wait(nam.post(req, body), timeoutMs);
}

HttpResult GatewayFixture::get(const QString &path, int timeoutMs,
                               const QList<QPair<QByteArray, QByteArray>> &headers) {
    QNetworkRequest request(QUrl(baseUrl() + path));
    for (const auto &h : headers)
        request.setRawHeader(h.first, h.second);
    return wait(nam.get(request), timeoutMs);
}

HttpResult GatewayFixture::del(const QString &path, int timeoutMs) {
    return wait(nam.deleteResource(QNetworkRequest(QUrl(baseUrl() + path))), timeoutMs);
}

QJsonObject GatewayFixture::anthropicBody(const QString &model, const QString &text, bool stream) {
    return {{QStringLiteral("model"), model},
            {QStringLiteral("max_tokens"), 256},
            {QStringLiteral("stream"), stream},
            {QStringLiteral("messages"), QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                                                {QStringLiteral("content"), text}}}}};
}

QJsonObject GatewayFixture::openaiBody(const QString &model, const QString &text, bool stream) {
    QJsonObject o{{QStringLiteral("model"), model},
                  {QStringLiteral("stream"), stream},
                  {QStringLiteral("messages"), QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                                                      {QStringLiteral("content"), text}}}}};
    if (stream)
        o.insert(QStringLiteral("stream_options"), QJsonObject{{QStringLiteral("include_usage"), true}});
    return o;
}

namespace {
QList<QJsonObject> dataObjects(const QByteArray &sse) {
    QList<QJsonObject> out;
    for (const QByteArray &line : sse.split('\n')) {
        if (!line.startsWith("data:"))
            continue;
        const QByteArray data = line.mid(5).trimmed();
        if (data == "[DONE]")
            continue;
        const auto doc = QJsonDocument::fromJson(data);
        if (doc.isObject())
            out.append(doc.object());
    }
    return out;
}
} // namespace

QString anthropicStreamText(const QByteArray &sse) {
    QString text;
    for (const auto &o : dataObjects(sse))
        if (o.value(QStringLiteral("type")).toString() == QLatin1String("content_block_delta"))
            text += o.value(QStringLiteral("delta")).toObject().value(QStringLiteral("text")).toString();
    return text;
}

QString openaiStreamText(const QByteArray &sse) {
    QString text;
    for (const auto &o : dataObjects(sse))
        for (const auto &c : o.value(QStringLiteral("choices")).toArray())
            text += c.toObject().value(QStringLiteral("delta")).toObject().value(QStringLiteral("content")).toString();
    return text;
}

QString anthropicMessageText(const QJsonObject &message) {
    QString text;
    for (const auto &b : message.value(QStringLiteral("content")).toArray())
        if (b.toObject().value(QStringLiteral("type")).toString() == QLatin1String("text"))
            text += b.toObject().value(QStringLiteral("text")).toString();
    return text;
}

QString openaiMessageText(const QJsonObject &completion) {
    return completion.value(QStringLiteral("choices"))
        .toArray()
        .at(0)
        .toObject()
        .value(QStringLiteral("message"))
        .toObject()
        .value(QStringLiteral("content"))
        .toString();
}

} // namespace sw::test
