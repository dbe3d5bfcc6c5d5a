#pragma once
// The real engine on 127.0.0.1:0 in front of scripted fake upstreams, and a
// small blocking HTTP client for tests (QNetworkAccessManager on the same loop).

#include "core/config/config.h"
#include "core/credentials/secret_store.h"
#include "core/demo/fake_upstream.h"
#include "core/engine.h"

#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QPointer>
#include <functional>
#include <memory>

namespace sw::test {

struct HttpResult {
    int status = 0;
    QList<QPair<QByteArray, QByteArray>> headers;
    QByteArray body;
    bool timedOut = false;
    QByteArray header(QByteArrayView name) const;
    QJsonObject json() const;
};

// A secret store the test scripts: answers from a map, fails, or never answers.
class ScriptedSecretStore final : public credentials::SecretStore {
public:
    enum class Mode { Answer, Fail, Hang };
    Mode mode = Mode::Answer;
    QHash<QString, QByteArray> secrets;
    int reads = 0;
    // Hang keeps the reads unanswered; answerHeld() answers them then (Fail: failed, else from `secrets`).
    void answerHeld();
    void read(const QString &name, QObject *context,
              std::function<void(const credentials::SecretResult &)> done) override;
    void write(const QString &name, const QByteArray &secret, QObject *context,
               std::function<void(const credentials::SecretResult &)> done) override;

private:
    void answer(const QString &name, QObject *context, std::function<void(const credentials::SecretResult &)> done);
    struct Held {
        QString name;
        QPointer<QObject> context;
        std::function<void(const credentials::SecretResult &)> done;
    };
    QList<Held> m_held;
};

class GatewayFixture {
public:
    GatewayFixture();
    ~GatewayFixture();

    demo::FakeUpstream anthropicA; // provider "pa", api anthropic-messages
    demo::FakeUpstream openaiB;    // provider "pb", api openai-completions
    demo::FakeUpstream anthropicC; // provider "pc", api anthropic-messages
    demo::FakeUpstream responsesD; // provider "pd", api openai-responses (model pd/resp-d)
    demo::FakeUpstream googleE;    // provider "pe", api google-generative-ai (model pe/gemini-e)
    config::Config config;         // route "chain" = [pa/claude-a, pb/gpt-b]; edit before start()
    ScriptedSecretStore secrets;
    util::Clock *clock = nullptr;             // default: the system clock; set before start()
    upstream::Transport *transport = nullptr; // default: the engine's; set before start()
    QString configPath;                       // for /admin/reload; set before start()
    QString listenGiven;                      // as --listen at start (Engine::Options::listenGiven)
    QString usageLedgerPath;                  // the usage ledger's file; empty = in memory; set before start()
    qint64 usageLedgerMaxPages = 0;           // > 0: the ledger file cannot grow past it (a full disk)

    void start();
    Engine &engine() { return *m_engine; }
    QString baseUrl() const { return m_engine->baseUrl(); }

    HttpResult post(const QString &path, const QJsonObject &body,
                    const QList<QPair<QByteArray, QByteArray>> &headers = {}, int timeoutMs = 15000);
    HttpResult postRaw(const QString &path, const QByteArray &body,
                       const QList<QPair<QByteArray, QByteArray>> &headers = {}, int timeoutMs = 15000);
    HttpResult get(const QString &path, int timeoutMs = 15000,
                   const QList<QPair<QByteArray, QByteArray>> &headers = {});
    HttpResult del(const QString &path, int timeoutMs = 15000);
    QNetworkReply *postAsync(const QString &path, const QJsonObject &body,
                             const QList<QPair<QByteArray, QByteArray>> &headers = {});
    HttpResult wait(QNetworkReply *reply, int timeoutMs = 15000);

    static QJsonObject anthropicBody(const QString &model, const QString &text, bool stream);
    static QJsonObject openaiBody(const QString &model, const QString &text, bool stream);

    QNetworkAccessManager nam;

private:
    std::unique_ptr<Engine> m_engine;
};

// The text an SSE body carries, per format (concatenated deltas).
QString anthropicStreamText(const QByteArray &sse);
QString openaiStreamText(const QByteArray &sse);
QString anthropicMessageText(const QJsonObject &message);
QString openaiMessageText(const QJsonObject &completion);

} // namespace sw::test
