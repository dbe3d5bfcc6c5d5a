#pragma once
#include "config/config.h"

#include <functional>
#include <memory>

namespace sw::util { class Clock; }
namespace sw::upstream { class Transport; }
namespace sw::failover { class ProviderDownMarks; }
namespace sw::credentials { class CredentialPools; }
namespace sw::telemetry { class Telemetry; }

namespace sw::server {

class IdempotencyStore;

// What every request handler on the engine thread shares. Owned by Engine.
struct EngineContext {
    std::shared_ptr<const config::Config> config; // replaced on reload; requests keep their own copy
    util::Clock *clock = nullptr;
    upstream::Transport *transport = nullptr;
    failover::ProviderDownMarks *marks = nullptr;
    credentials::CredentialPools *pools = nullptr;
    telemetry::Telemetry *telemetry = nullptr;
    IdempotencyStore *idempotency = nullptr;
    std::function<void()> marksChanged; // tell observers (admin feed, GUI) marks changed
};

} // namespace sw::server
