#include "ui/shared/engine_commands.h"

#include "core/engine_host.h"
#include "core/telemetry/telemetry.h"

#include <QCoreApplication>
#include <QPointer>

namespace sw::ui {

EngineCommands::EngineCommands(EngineHost *host, QObject *parent) : QObject(parent), m_host(host) {}

void EngineCommands::clearMarks(const failover::MarkFilter &filter) {
    Q_EMIT marksClearRequested(filter);
    if (m_host)
        m_host->post([filter](Engine &engine) { engine.clearMarks(filter); });
}

void EngineCommands::setPaused(bool paused) {
    Q_EMIT pausedRequested(paused);
    if (m_host)
        m_host->post([paused](Engine &engine) { engine.setPaused(paused); });
}

void EngineCommands::applyConfig(const config::Config &config, QObject *receiver,
                                 std::function<void(const QString &refusal)> done) {
    if (!m_host)
        return;
    QPointer<QObject> target(receiver);
    m_host->post([config, target, done = std::move(done)](Engine &engine) {
        QString refusal;
        if (!engine.applyConfig(config, &refusal))
            engine.telemetry()->log(QStringLiteral("warn"), QStringLiteral("configuration from the window refused"),
                                    {{QStringLiteral("reason"), refusal}});
        if (!done)
            return;
        // Checked on the GUI thread, as queryUsage's answer is: a window closed meanwhile is not called.
        QMetaObject::invokeMethod(QCoreApplication::instance(), [target, done, refusal]() {
            if (target)
                done(refusal);
        });
    });
}

void EngineCommands::retryCredentials(const credentials::CredentialFilter &filter) {
    Q_EMIT credentialsRetryRequested(filter);
    if (m_host)
        m_host->post([filter](Engine &engine) { engine.clearCredentials(filter); });
}

void EngineCommands::credentialChanged(const QString &ref) {
    credentials::CredentialFilter filter;
    filter.ref = ref;
    Q_EMIT credentialsRetryRequested(filter);
    if (m_host)
        m_host->post([ref](Engine &engine) { engine.credentialChanged(ref); });
}

void EngineCommands::queryUsage(const telemetry::UsageQuery &query, QObject *receiver,
                                std::function<void(const telemetry::UsageReport &)> done) {
    if (!m_host)
        return;
    // The answer is posted to the application object, which outlives every view, and the receiver
    // is checked there, on the GUI thread: a view closed meanwhile is never called.
    QPointer<QObject> target(receiver);
    m_host->post([query, target, done = std::move(done)](Engine &engine) {
        engine.queryUsage(query, QCoreApplication::instance(), [target, done](const telemetry::UsageReport &report) {
            if (target)
                done(report);
        });
    });
}

void EngineCommands::setDemoFault(const QString &provider, const demo::Fault &fault) {
    if (m_host)
        m_host->post([provider, fault](Engine &engine) {
            if (auto *upstream = engine.demoUpstream(provider))
                upstream->setFault(fault);
        });
}

} // namespace sw::ui
