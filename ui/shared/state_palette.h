#pragma once
// The four state colours, defined once (docs/gui.md): everything else follows the
// system palette. A state is always told three ways: colour, icon and word.

#include <QColor>
#include <QIcon>
#include <QString>

namespace sw::ui {

enum class HealthState { Healthy, Marks, Paused, Error };

class StatePalette final {
public:
    static QColor color(HealthState state);
    static QString word(HealthState state);             // "Healthy", "Marks present", "Paused", "Requests failing"
    static QString glyph(HealthState state);            // a text symbol that reads without colour
    static QIcon dot(HealthState state, int size = 12); // filled circle (or pause bars) in the state colour
    // Colour of an outcome or failure kind word in the tables ("committed" -> healthy, "failed" -> error, ...).
    static QColor outcomeColor(const QString &outcome);
};

} // namespace sw::ui
