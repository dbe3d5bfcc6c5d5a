#pragma once
// The GUI's only way to change the engine: every command is a queued call run
// on the engine thread, which alone owns engine objects (docs/gui.md, "Threads").
// Never blocks the GUI thread.

#include "core/config/config.h"
#include "core/credentials/credential_pools.h"
#include "core/demo/fake_upstream.h"
#include "core/failover/provider_down_marks.h"
#include "core/telemetry/usage_report.h"

#include <QObject>

namespace sw {
class EngineHost;
}

namespace sw::ui {

class EngineCommands final : public QObject {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(EngineCommands)
public:
    explicit EngineCommands(EngineHost *host, QObject *parent = nullptr);

    void clearMarks(const failover::MarkFilter &filter);
    void setPaused(bool paused);
    // The engine checks it against the listener in effect, as it checks a reload; `done` runs on the
    // GUI thread while `receiver` lives, with the engine's reason to refuse it ("" once applied).
    void applyConfig(const config::Config &config, QObject *receiver = nullptr,
                     std::function<void(const QString &refusal)> done = {});
    // "Retry now": the matching credentials leave parking (and their keychain secret is read again).
    void retryCredentials(const credentials::CredentialFilter &filter);
    // A new secret was stored for `ref` (Set key…): the engine drops its state and cached secret.
    void credentialChanged(const QString &ref);
    // --demo: fault for every request to a simulated provider; Fault{} brings it back.
    void setDemoFault(const QString &provider, const demo::Fault &fault);
    // The usage ledger, asked on its own thread; `done` runs on the GUI thread while `receiver` lives.
    void queryUsage(const telemetry::UsageQuery &query, QObject *receiver,
                    std::function<void(const telemetry::UsageReport &)> done);

Q_SIGNALS:
    // Emitted on the GUI thread right away, so views that show the state can
    // update before the next snapshot arrives (the snapshot then confirms it).
    void marksClearRequested(const sw::failover::MarkFilter &filter);
    void pausedRequested(bool paused);
    void credentialsRetryRequested(const sw::credentials::CredentialFilter &filter);

private:
    EngineHost *m_host = nullptr;
};

} // namespace sw::ui
