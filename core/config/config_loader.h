#pragma once
// Reading, validating and atomically writing the configuration file of SPEC
// section 4. Every problem is reported with the JSON path it concerns so a
// user (or the GUI) can point at the exact field; all problems are collected,
// not just the first.

#include "config/config.h"

#include <QByteArray>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <optional>

namespace sw::config {

// One problem in a configuration. path is a dotted JSON path such as
// `routes.sonnet.candidates[1]`; object keys that contain anything besides
// letters, digits, '_', '-' and '/' are quoted: `models["zai/glm-4.6"].cost`.
// An empty path means the document as a whole (unreadable file, bad JSON).
struct ValidationError {
    QString path;
    QString reason;

    // `routes.sonnet.candidates[1]: unknown model "zai/glm-4"`, or just the
    // reason when the path is empty.
    QString toString() const;
    bool operator==(const ValidationError &) const = default;
};

struct ParseResult {
    std::optional<Config> config; // set only when errors is empty
    QList<ValidationError> errors;

    bool ok() const { return errors.isEmpty(); }
};

enum class LoadStatus {
    Ok,
    Unreadable, // missing or unreadable file: check-config exits 2
    Invalid,    // bad JSON or failed validation: check-config exits 1
};

struct LoadResult {
    LoadStatus status = LoadStatus::Unreadable;
    std::optional<Config> config; // set only when status is Ok
    QList<ValidationError> errors;

    bool ok() const { return status == LoadStatus::Ok; }
};

struct ListenAddress {
    QString host; // without brackets for IPv6
    quint16 port = 0;
};

// "HOST:PORT" or "[IPv6]:PORT"; port 0 (any free port) is allowed.
std::optional<ListenAddress> parseListenAddress(const QString &text);
// True for 127.0.0.0/8, ::1 and "localhost".
bool isLoopbackHost(const QString &host);

// Parses and validates the JSON text of a configuration file.
ParseResult parse(const QByteArray &json);
// Reads and parses a file. Bad JSON errors carry the line and column.
LoadResult load(const QString &path);
// Validation of an in-memory configuration (e.g. after a --listen override or a
// GUI edit): the same rules as parse().
QList<ValidationError> validate(const Config &config);

// The configuration as the JSON object parse() reads; fields at their default
// value are left out so a saved file stays as short as a hand-written one.
QJsonObject toJson(const Config &config);

// Validates, then writes atomically with QSaveFile (the target is either the
// old or the new complete file, never a partial one), creating the directory.
// On failure returns false and sets *error (when error is non-null).
// Permissions: a new file is 0600 and directories it creates are 0700; an
// existing file keeps its mode minus any access for others. A symbolic link is
// resolved and its target written (the link stays); *note (when non-null) then
// says so, and is cleared otherwise. A dangling link is refused.
bool save(const QString &path, const Config &config, QString *error = nullptr, QString *note = nullptr);

// Creates `directory` and any missing parents with mode 0700 (existing ones are
// left as they are). False with *error when it cannot.
bool makePrivateDirectory(const QString &directory, QString *error = nullptr);

// QStandardPaths::AppConfigLocation for the application name "switchman",
// plus "/config.json" (normally ~/.config/switchman/config.json).
QString defaultConfigPath();

// The built-in configuration of --demo: two simulated providers
// (sim-anthropic with api anthropic-messages, sim-openai with
// openai-completions), flagged demo with a placeholder loopback baseUrl that
// the engine replaces with the real URL of the simulated upstream at start.
// Their credentials lists are empty, which means "send no auth header".
// Route "demo" = [sim-anthropic/claude-sim, sim-openai/gpt-sim], aliases
// claude-* and gpt-*; listen 127.0.0.1:4141; no tenants.
Config demoConfig();

} // namespace sw::config
