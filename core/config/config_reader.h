#pragma once
// Reading and validating a configuration file: JSON text -> config::Config.
// Every problem is reported with the JSON path it concerns, so a user (or the
// GUI) can point at the exact field; all problems are collected, not just the
// first. The file format is described in docs/architecture.md, "Configuration".

#include "core/config/config.h"
#include "core/config/json_path_reader.h"

#include <QByteArray>
#include <QList>
#include <QString>
#include <optional>

namespace sw::config {

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

// Parses and validates the JSON text of a configuration file.
ParseResult parse(const QByteArray &json);
// Reads and parses a file. Bad JSON errors carry the line and column. A `listenOverride` (--listen)
// is read in place of the file's `listen`, so the rules that depend on the address (a provider at
// the gateway's own address) judge the address the gateway will have.
// The most a configuration file may hold: a few hundred routes and models fit in a hundredth of it.
inline constexpr qint64 kMaxConfigBytes = 16 * 1024 * 1024;
LoadResult load(const QString &path, const QString &listenOverride = {});
// Validation of an in-memory configuration (e.g. after a --listen override or a
// GUI edit): the configuration is written as JSON and read back, so the rules
// are exactly those of parse().
QList<ValidationError> validate(const Config &config);
// The one rule of validate() that depends on where the gateway listens, judged at `listening`
// (HOST:PORT, the listener in effect) instead of the configuration's own `listen`: a provider at
// the gateway's own address.
QList<ValidationError> providersAtListener(const Config &config, const QString &listening);

// The file read when no --config is given: $XDG_CONFIG_HOME/switchman/config.json
// (normally ~/.config/switchman/config.json), whatever the application name.
QString defaultConfigPath();

} // namespace sw::config
