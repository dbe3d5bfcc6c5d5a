#pragma once
// A request's attempts told as one line (docs/gui.md): "demo → sim-openai/gpt-sim on
// attempt 2, sim-anthropic 503".

#include "core/telemetry/engine_events.h"

#include <QList>
#include <QString>

namespace sw::ui {

class RequestStory final {
public:
    // attempts: one request's attempts, any order.
    static QString line(QList<telemetry::AttemptRecord> attempts);
    static bool answered(const QList<telemetry::AttemptRecord> &attempts);
    // One line per attempt, for the detail pane.
    static QStringList steps(QList<telemetry::AttemptRecord> attempts);
};

} // namespace sw::ui
