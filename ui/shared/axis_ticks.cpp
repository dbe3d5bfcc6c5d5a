#include "ui/shared/axis_ticks.h"

#include <QValueAxis>
#include <algorithm>
#include <cmath>

namespace sw::ui {

AxisTicks axisTicks(double peak, int maxSteps, bool whole) {
    maxSteps = std::max(maxSteps, 1);
    if (!(peak > 0)) // nothing to show (or NaN): one step up to 1
        return {1, 2, whole ? 0 : 2};
    const double raw = peak / maxSteps;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    const double norm = raw / magnitude;
    double step = (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * magnitude;
    if (whole)
        step = std::max(1.0, std::round(step));
    // A step above the peak, so the highest bar never touches the top line.
    const int steps = int(std::floor(peak / step + 1e-9)) + 1;
    const int decimals = whole ? 0 : std::max(0, int(-std::floor(std::log10(step) + 1e-9)));
    return {steps * step, steps + 1, decimals};
}

QStringList axisLabels(const QValueAxis *axis) {
    QStringList out;
    if (!axis)
        return out;
    const QByteArray format = axis->labelFormat().toLatin1();
    const int n = axis->tickCount();
    for (int i = 0; i < n; ++i) {
        const double value = axis->min() + (axis->max() - axis->min()) * i / std::max(1, n - 1);
        out << QString::asprintf(format.constData(), value);
    }
    return out;
}

} // namespace sw::ui
