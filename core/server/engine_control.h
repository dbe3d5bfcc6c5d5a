#pragma once
// What the server layer (the router and the admin API) may ask of the engine
// that owns it. Engine implements it; core/server never includes engine.h, so
// the engine creates and wires the server's parts and the server depends on
// nothing above it.

#include "core/config/config.h"
#include "core/credentials/credential_pools.h"
#include "core/failover/provider_down_marks.h"

#include <QList>
#include <QObject>
#include <QString>
#include <functional>
#include <memory>

namespace sw::util {
class Clock;
}
namespace sw::telemetry {
class Telemetry;
struct UsageQuery;
struct UsageReport;
} // namespace sw::telemetry

namespace sw::server {

class EngineControl {
public:
    virtual ~EngineControl() = default;

    virtual util::Clock &clock() const = 0;
    // The configuration in force now (replaced by each reload); null when there is none to tell.
    // The admin API re-checks who holds its open event feeds against it (Engine::config()).
    virtual std::shared_ptr<const config::Config> config() const { return nullptr; }
    virtual telemetry::Telemetry *telemetry() const = 0;

    // Provider-down marks: the active ones; clearing those that match (returns how many).
    virtual QList<failover::MarkInfo> marks() const = 0;
    virtual int clearMarks(const failover::MarkFilter &filter) = 0;
    // Where marks live ("memory", "shared via redis://…", "local only (Redis unreachable)" or
    // "(Redis not answering)") and whether that store is up (Redis answered).
    virtual QString marksStoreDescription() const = 0;
    virtual bool marksStoreUp() const = 0;

    // Every configured credential's state, never a secret; clearing parked ones that match.
    virtual QList<credentials::CredentialStatus> credentialStates() const = 0;
    virtual int clearCredentials(const credentials::CredentialFilter &filter) = 0;

    // Re-reads the configuration file; false with a reason, the running configuration unchanged.
    virtual bool reload(QString *error) = 0;
    // The settings of the configuration in force that wait for the next start ("marks"):
    // what runs is still what the process started with.
    virtual QStringList waitingForRestart() const { return {}; }

    // What /healthz says beside liveness: a state word and, when something is wrong, why.
    struct HealthNote {
        QString state;
        QString error;
    };
    // The configuration in force: "ok", or "reload refused" (the file was changed and could not be
    // applied: what runs is the configuration loaded before) until a reload succeeds.
    virtual HealthNote configHealth() const { return {QStringLiteral("ok"), {}}; }
    // The usage ledger: telemetry::UsageLedger::health().
    virtual HealthNote usageHealth() const { return {QStringLiteral("memory"), {}}; }
    // A paused gateway refuses new chat requests (503) until resumed.
    virtual bool paused() const = 0;
    // Usage from the ledger; `done` runs on `context`'s thread once every row recorded so far is in.
    virtual void queryUsage(const telemetry::UsageQuery &query, QObject *context,
                            std::function<void(const telemetry::UsageReport &)> done) = 0;
};

} // namespace sw::server
