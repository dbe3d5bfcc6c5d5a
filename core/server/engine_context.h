#pragma once
#include "core/config/config.h"
#include "core/formats/inbound_codec.h"
#include "core/http/headers.h"
#include "core/server/hop_marker.h"

#include <functional>
#include <memory>

class QObject;

namespace sw::util {
class Clock;
}
namespace sw::upstream {
class Transport;
}
namespace sw::failover {
class AttemptLoop;
class AttemptRunner;
class ProviderDownMarks;
} // namespace sw::failover
namespace sw::credentials {
class CredentialPools;
}
namespace sw::telemetry {
class BudgetTracker;
class Telemetry;
} // namespace sw::telemetry

namespace sw::server {

class IdempotencyStore;

// What the upstream side of one chat request needs to know of it.
struct AttemptRunnerSetup {
    std::shared_ptr<const config::Config> config; // the configuration the request started with
    const model::ChatRequest *request = nullptr;  // outlives the runner; sourceApi is the client's API
    http::HeaderList forwardHeaders;              // anthropic-beta, anthropic-version, OpenAI-Beta
    QByteArray callerAuth;                        // the caller's own provider key, when it may send one
    // The one provider the caller's own key goes to, and its base URL: the chain's first passthrough
    // provider (UpstreamAttemptSetup::callerAuthProvider).
    QString callerAuthProvider;
    QString callerAuthBaseUrl;
    std::optional<int> outputCap; // a tenant with a budget: UpstreamAttemptSetup::outputCap
    QByteArray via;               // sent upstream as Via: the client's, then this engine's entry (HopMarker)
    QString tenant;               // whose request: a shared key's last error names its words to that tenant alone
};

// The upstream side of one request's failover loop. The loop is made after the runner (it needs
// it), so `attach` hands the runner the loop it reports to.
struct AttemptRunnerHandle {
    failover::AttemptRunner *runner = nullptr; // a child of the QObject passed to the factory
    std::function<void(failover::AttemptLoop *loop)> attach;
};

// Made by whoever owns the transport and the credential pools (Engine), so the server layer knows
// the upstream side only as failover::AttemptRunner.
using AttemptRunnerFactory = std::function<AttemptRunnerHandle(AttemptRunnerSetup setup, QObject *parent)>;

// What every request handler on the engine thread shares. Owned by Engine.
struct EngineContext {
    std::shared_ptr<const config::Config> config; // replaced on reload; requests keep their own copy
    util::Clock *clock = nullptr;
    failover::ProviderDownMarks *marks = nullptr;
    telemetry::Telemetry *telemetry = nullptr;
    IdempotencyStore *idempotency = nullptr;
    telemetry::BudgetTracker *budgets = nullptr; // null: no budgets (tests that build a context by hand)
    AttemptRunnerFactory makeAttemptRunner;
    std::function<void()> marksChanged; // tell observers (admin feed, GUI) marks changed
    HopMarker hops;                     // this engine's Via entry, made once at its start
};

} // namespace sw::server
