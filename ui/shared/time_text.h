#pragma once
// Times as the brief wants them: relative in the cell, absolute in the tooltip.

#include <QString>

namespace sw::ui {

class TimeText final {
public:
    static QString ago(qint64 thenWallMs, qint64 nowWallMs); // "just now", "12 s ago", "3 min ago", "2 h ago"
    // "0:38", "4:05" (rounded up: 0:01 until it is gone); from an hour on "97 h 54 min", as the CLI says.
    static QString countdown(qint64 remainingMs);
    static QString absolute(qint64 wallMs); // local "2026-11-29 20:31:07"
    static QString duration(qint64 ms);     // "850 ms", "12.4 s", "2 min"
};

} // namespace sw::ui
