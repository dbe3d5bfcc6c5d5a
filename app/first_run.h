#pragma once
// The very first start: no configuration file at the default path (and no
// --config or --demo). Switchman writes the commented starter configuration
// there and tells the user the next step instead of starting silently empty.

#include "core/config/config.h"

#include <QString>

namespace sw::app {

struct FirstRun {
    config::Config config; // the starter configuration, or an empty one when it could not be written
    bool wrote = false;    // the starter file now exists at the path
    QString message;       // what to tell the user (several lines, ends with '\n')
};

// Writes the starter configuration to `path` (which must not exist yet), loads
// it back, and says what to do next. Never fails: when the file cannot be
// written the gateway starts with an empty configuration and the message says why.
FirstRun firstRun(const QString &path);

} // namespace sw::app
