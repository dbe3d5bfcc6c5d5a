#include "core/util/duration.h"

#include <QRegularExpression>

namespace sw::util {

std::optional<qint64> parseGoDuration(const QString &text) {
    static const QRegularExpression part(QStringLiteral("(\\d+(?:\\.\\d+)?)(ms|h|m|s)"));
    static const QRegularExpression whole(QStringLiteral("^(?:\\d+(?:\\.\\d+)?(?:ms|h|m|s))+$"));
    if (!whole.match(text).hasMatch())
        return std::nullopt;
    double ms = 0;
    for (auto it = part.globalMatch(text); it.hasNext();) {
        const auto m = it.next();
        const double v = m.captured(1).toDouble();
        const QString unit = m.captured(2);
        ms += unit == QLatin1String("ms")  ? v
              : unit == QLatin1String("s") ? v * 1000
              : unit == QLatin1String("m") ? v * 60000
                                           : v * 3600000;
    }
    return qint64(ms);
}

} // namespace sw::util
