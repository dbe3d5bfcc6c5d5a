#include "ui/shared/time_text.h"

#include <QDateTime>
#include <QObject>

namespace sw::ui {

QString TimeText::ago(qint64 thenWallMs, qint64 nowWallMs) {
    const qint64 s = std::max<qint64>(0, (nowWallMs - thenWallMs) / 1000);
    if (s < 2)
        return QObject::tr("just now");
    if (s < 60)
        return QObject::tr("%1 s ago").arg(s);
    if (s < 3600)
        return QObject::tr("%1 min ago").arg(s / 60);
    return QObject::tr("%1 h ago").arg(s / 3600);
}

QString TimeText::countdown(qint64 remainingMs) {
    const qint64 s = std::max<qint64>(0, (remainingMs + 999) / 1000);
    // A mark lasts minutes; a key parked by a spend or usage limit, hours or days: "5874:12" read as
    // a time of day (probe AB4 F2). Past an hour, the words `switchman status` gives.
    if (s >= 3600)
        return QObject::tr("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1:%2").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
}

QString TimeText::absolute(qint64 wallMs) {
    return QDateTime::fromMSecsSinceEpoch(wallMs).toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"));
}

QString TimeText::duration(qint64 ms) {
    if (ms < 1000)
        return QObject::tr("%1 ms").arg(ms);
    if (ms < 60'000)
        return QObject::tr("%1 s").arg(double(ms) / 1000.0, 0, 'f', 1);
    return QObject::tr("%1 min").arg(ms / 60'000);
}

} // namespace sw::ui
