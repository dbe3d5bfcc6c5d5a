#pragma once
// The configuration Switchman writes on its very first start, when there is no
// file at config::defaultConfigPath() yet. It explains itself with "_comment"
// keys (the loader skips every key that starts with '_'), refers to keys that
// are not stored yet (keychain:anthropic, keychain:openai), and routes Claude
// Code's and Codex's model names through a failover chain.

#include <QByteArray>
#include <QString>

namespace sw::config {

// The starter file's JSON text. It loads with config::parse() without errors.
QByteArray starterConfigJson();

// Writes starterConfigJson() to `path`, creating the directory. Never replaces
// an existing file: returns false (and sets *error) when `path` exists or
// cannot be written; nothing is left behind on failure.
bool writeStarterConfig(const QString &path, QString *error = nullptr);

// What to do after the starter file was written to `path`: store a key, point a
// client at the gateway, edit and check the file, or try --demo. Printed by a
// headless first start; the admin window shows the same text.
QString starterNextSteps(const QString &path);

} // namespace sw::config
