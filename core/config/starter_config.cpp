#include "core/config/starter_config.h"

#include "core/config/config_writer.h"

namespace sw::config {

QByteArray starterConfigJson() {
    // Hand-written rather than generated from a Config: toJson() has no place
    // for the comments, and the order here is the order a reader needs.
    return QByteArrayLiteral(R"json({
  "_comment": [
    "Switchman configuration, written on first start. Keys that start with '_' are comments.",
    "Secrets never go in this file. Store a provider key in the OS keychain with",
    "  switchman credential set anthropic      (paste the key, then Enter)",
    "and refer to it as \"keychain:anthropic\"; or name an environment variable as \"env:VAR\".",
    "Check your edits with: switchman check-config ~/.config/switchman/config.json",
    "Without any key, try the simulated providers: switchman --demo"
  ],
  "listen": "127.0.0.1:4141",
  "providers": {
    "_comment": "One entry per upstream endpoint. api is anthropic-messages, openai-completions, openai-responses or google-generative-ai. Credentials are tried in order: an environment variable that is not set is skipped, so the keychain is only read when it is needed.",
    "anthropic": {
      "api": "anthropic-messages",
      "baseUrl": "https://api.anthropic.com",
      "credentials": ["env:ANTHROPIC_API_KEY", "keychain:anthropic"]
    },
    "openai": {
      "api": "openai-completions",
      "baseUrl": "https://api.openai.com/v1",
      "credentials": ["env:OPENAI_API_KEY", "keychain:openai"]
    }
  },
  "models": {
    "_comment": "provider/model-id as the provider names it. cost is per million tokens (used by the Usage view).",
    "anthropic/claude-sonnet-4-5": { "input": ["text", "image"], "reasoning": true, "cost": { "input": 3, "output": 15 } },
    "openai/gpt-5": { "input": ["text", "image"], "reasoning": true, "cost": { "input": 1.25, "output": 10 } }
  },
  "routes": {
    "_comment": "Clients send a route name, or a name that matches one of its aliases, as the model; candidates are tried in order and the next one takes over when one is down. A client may also send provider/model-id to reach exactly one model.",
    "claude": {
      "candidates": ["anthropic/claude-sonnet-4-5", "openai/gpt-5"],
      "aliases": ["claude-*"]
    },
    "gpt": {
      "candidates": ["openai/gpt-5", "anthropic/claude-sonnet-4-5"],
      "aliases": ["gpt-*", "o3*", "o4*", "codex-*"]
    }
  },
  "_tenants": "With no tenants every local caller is allowed and no gateway key is needed. To require keys, run: switchman key create --tenant NAME",
  "failover": { "enabled": true, "deadlineMs": 120000 }
}
)json");
}

QString starterNextSteps(const QString &path) {
    return QStringLiteral(
               "Next steps:\n"
               "  1. Store a provider key in the OS keychain (paste it, then press Enter):\n"
               "       switchman credential set anthropic\n"
               "       switchman credential set openai\n"
               "     or export ANTHROPIC_API_KEY / OPENAI_API_KEY before starting Switchman.\n"
               "  2. Point a client at the gateway (the URL printed below; normally http://127.0.0.1:4141):\n"
               "       ANTHROPIC_BASE_URL=http://127.0.0.1:4141 claude\n"
               "  3. Edit %1 to change providers, models and routes\n"
               "     (keys that start with '_' are comments), then check it with\n"
               "       switchman check-config %1\n"
               "  No key yet? Try the simulated providers: switchman --demo\n")
        .arg(path);
}

bool writeStarterConfig(const QString &path, QString *error) {
    // CreateOnly: a file that appeared meanwhile (another instance, the user) is kept. Owner only,
    // like every configuration the gateway writes.
    return writeConfigFile(path, starterConfigJson(), WriteMode::CreateOnly, error);
}

} // namespace sw::config
