#pragma once
// The four state colours, defined once (docs/gui.md): everything else follows the
// system palette. A state is always told three ways: colour, icon and word.

#include <QColor>
#include <QIcon>
#include <QString>

namespace sw::ui {

// Degraded: no mark, but a key is out of use (parked, rejected, missing or unavailable), so its
// provider's requests go to the pool's next key or the next candidate; amber, as marks are.
enum class HealthState { Healthy, Marks, Paused, Error, Degraded };

class StatePalette final {
public:
    static QColor color(HealthState state);
    static QString word(HealthState state);  // "Healthy", "Marks present", "Paused", "Requests failing", "Degraded"
    static QString glyph(HealthState state); // a text symbol that reads without colour
    static QIcon dot(HealthState state, int size = 12); // filled circle (or pause bars) in the state colour
    // Colour of an outcome or failure kind word in the tables ("committed" -> healthy, "failed" -> error, ...).
    static QColor outcomeColor(const QString &outcome);
};

} // namespace sw::ui
