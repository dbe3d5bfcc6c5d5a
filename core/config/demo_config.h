#pragma once
// The built-in configuration of --demo.

#include "core/config/config.h"

namespace sw::config {

// One simulated provider per upstream API (sim-anthropic anthropic-messages,
// sim-openai openai-completions, sim-responses openai-responses, sim-google
// google-generative-ai), flagged demo with a placeholder loopback baseUrl that
// the engine replaces with the real URL of the simulated upstream at start.
// Their credentials lists are empty, which means "send no auth header".
// Route "demo" = [sim-anthropic/claude-sim, sim-openai/gpt-sim], aliases
// claude-* and gpt-*; listen 127.0.0.1:4141; no tenants.
Config demoConfig();

} // namespace sw::config
