#pragma once
// Go-style durations, as OpenAI sends its rate-limit resets ("6m0s", "1.5s", "120ms", "1h2m").

#include <QString>
#include <optional>

namespace sw::util {

// Milliseconds, or nullopt for anything that is not a run of <number><ms|h|m|s> parts.
std::optional<qint64> parseGoDuration(const QString &text);

} // namespace sw::util
