#pragma once
// A chart's value axis from 0 on round steps (1, 2 or 5 times a power of ten), with as many
// decimals as a step needs: a day of $0.006 read "$0.00, $0.00, $0.01, $0.01" on ticks at 0.0014
// apart, and 31 failures "0, 7, 14, 22, 29" (probe AB4 F4).

#include <QStringList>

class QValueAxis;

namespace sw::ui {

struct AxisTicks {
    double max = 1;    // the top of the axis, a whole number of steps above the peak
    int tickCount = 2; // 0, step, ..., max
    int decimals = 0;  // what a label needs to tell its step from the next
};

// `peak` the highest value shown; at most `maxSteps` steps; `whole` for counts (a step of at least 1).
AxisTicks axisTicks(double peak, int maxSteps = 5, bool whole = false);
// The labels `axis` draws at its ticks, bottom first (its printf label format at each tick's value).
QStringList axisLabels(const QValueAxis *axis);

} // namespace sw::ui
