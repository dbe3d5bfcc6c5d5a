#include "ui/shared/state_palette.h"

#include <QObject>
#include <QPainter>
#include <QPixmap>

namespace sw::ui {

QColor StatePalette::color(HealthState state) {
    switch (state) {
    case HealthState::Healthy:
        return QColor(0x2e, 0x9d, 0x4f); // green
    case HealthState::Marks:
    case HealthState::Degraded:
        return QColor(0xe0, 0x8e, 0x0b); // amber
    case HealthState::Paused:
        return QColor(0x8a, 0x8f, 0x98); // grey
    case HealthState::Error:
        return QColor(0xd0, 0x38, 0x2b); // red
    }
    return {};
}

QString StatePalette::word(HealthState state) {
    switch (state) {
    case HealthState::Healthy:
        return QObject::tr("Healthy");
    case HealthState::Marks:
        return QObject::tr("Marks present");
    case HealthState::Paused:
        return QObject::tr("Paused");
    case HealthState::Error:
        return QObject::tr("Requests failing");
    case HealthState::Degraded:
        return QObject::tr("Degraded");
    }
    return {};
}

QString StatePalette::glyph(HealthState state) {
    switch (state) {
    case HealthState::Healthy:
        return QStringLiteral("\u25CF"); // ●
    case HealthState::Marks:
        return QStringLiteral("\u25B2"); // ▲
    case HealthState::Paused:
        return QStringLiteral("\u23F8"); // ⏸
    case HealthState::Error:
        return QStringLiteral("\u2716"); // ✖
    case HealthState::Degraded:
        return QStringLiteral("\u25C6"); // ◆
    }
    return {};
}

QIcon StatePalette::dot(HealthState state, int size) {
    const qreal dpr = 2.0;
    QPixmap pm(QSize(size, size) * dpr);
    pm.setDevicePixelRatio(dpr);
    pm.fill(Qt::transparent);
    QPainter p(&pm);
    p.setRenderHint(QPainter::Antialiasing);
    p.setPen(Qt::NoPen);
    p.setBrush(color(state));
    const QRectF r(1, 1, size - 2, size - 2);
    switch (state) {
    case HealthState::Paused: {
        const qreal w = r.width() / 3.2;
        p.drawRoundedRect(QRectF(r.left() + w * 0.4, r.top(), w, r.height()), 1, 1);
        p.drawRoundedRect(QRectF(r.right() - w * 1.4, r.top(), w, r.height()), 1, 1);
        break;
    }
    case HealthState::Marks: {
        QPolygonF tri{QPointF(r.center().x(), r.top()), r.bottomRight(), r.bottomLeft()};
        p.drawPolygon(tri);
        break;
    }
    case HealthState::Error: {
        p.drawEllipse(r);
        p.setPen(QPen(Qt::white, 1.6));
        const qreal m = size * 0.32;
        p.drawLine(QPointF(m, m), QPointF(size - m, size - m));
        p.drawLine(QPointF(size - m, m), QPointF(m, size - m));
        break;
    }
    case HealthState::Degraded: {
        QPolygonF diamond{QPointF(r.center().x(), r.top()), QPointF(r.right(), r.center().y()),
                          QPointF(r.center().x(), r.bottom()), QPointF(r.left(), r.center().y())};
        p.drawPolygon(diamond);
        break;
    }
    case HealthState::Healthy:
        p.drawEllipse(r);
        break;
    }
    p.end();
    return QIcon(pm);
}

QColor StatePalette::outcomeColor(const QString &outcome) {
    if (outcome == QLatin1String("committed"))
        return color(HealthState::Healthy);
    if (outcome == QLatin1String("failed"))
        return color(HealthState::Error);
    if (outcome == QLatin1String("skipped"))
        return color(HealthState::Marks);
    if (outcome == QLatin1String("aborted"))
        return color(HealthState::Paused);
    if (outcome == QLatin1String("refused")) // the gateway's own answer (a budget, an unknown model)
        return color(HealthState::Marks);
    return {};
}

} // namespace sw::ui
