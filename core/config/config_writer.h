#pragma once
// Writing a configuration: config::Config -> JSON, and files written so that a
// failure at any point leaves what was there before (never half a file).

#include "core/config/config.h"

#include <QByteArray>
#include <QJsonObject>
#include <QString>

namespace sw::config {

// The configuration as the JSON object parse() reads; fields at their default
// value are left out so a saved file stays as short as a hand-written one.
QJsonObject toJson(const Config &config);

// Validates, then writes atomically (the target is either the old or the new
// complete file, never a partial one), creating the directory.
// On failure returns false and sets *error (when error is non-null).
// Permissions: a new file is 0600 and directories it creates are 0700; an
// existing file keeps its mode minus any access for others, and its owner and
// group (root writing the service user's file gives it back to that user; where
// the owner cannot be kept, nothing is written). A symbolic link is
// resolved and its target written (the link stays); *note (when non-null) then
// says so, and is cleared otherwise. A dangling link is refused.
bool save(const QString &path, const Config &config, QString *error = nullptr, QString *note = nullptr);

enum class WriteMode {
    Replace,   // atomically, through a temporary file renamed over the target
    CreateOnly // only when nothing is at the path yet; a file that appears meanwhile is kept
};

// Writes `bytes` as a configuration file: owner-only, in a private directory
// created as needed, following a symbolic link as save() describes. Nothing is
// left behind on failure. save() and the starter file both write through here.
bool writeConfigFile(const QString &path, const QByteArray &bytes, WriteMode mode, QString *error = nullptr,
                     QString *note = nullptr);

// Creates `directory` and any missing parents with mode 0700 (existing ones are
// left as they are). False with *error when it cannot.
bool makePrivateDirectory(const QString &directory, QString *error = nullptr);

} // namespace sw::config
