#include "ui/dashboard/failure_sparkline.h"

#include "ui/shared/state_palette.h"

#include <QPainter>

namespace sw::ui {

FailureSparkline::FailureSparkline(QWidget *parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void FailureSparkline::setCounts(const QList<qint64> &perMinute) {
    if (perMinute == m_counts)
        return;
    m_counts = perMinute;
    qint64 total = 0;
    for (qint64 n : perMinute)
        total += n;
    setToolTip(tr("%1 candidate failures in the last %2 minutes; the right-most bar is this minute")
                   .arg(total)
                   .arg(perMinute.size()));
    update();
}

void FailureSparkline::paintEvent(QPaintEvent *) {
    QPainter p(this);
    const int n = int(m_counts.size());
    if (n == 0)
        return;
    const qint64 peak = std::max<qint64>(1, *std::max_element(m_counts.begin(), m_counts.end()));
    const qreal slot = qreal(width()) / n;
    const qreal bar = std::max<qreal>(1.0, slot - 2);
    const int base = height() - 2;
    p.setPen(QPen(palette().color(QPalette::Mid), 1));
    p.drawLine(0, base, width(), base);
    p.setPen(Qt::NoPen);
    p.setBrush(StatePalette::color(HealthState::Error));
    for (int i = 0; i < n; ++i) {
        if (m_counts[i] == 0)
            continue;
        const qreal h = std::max<qreal>(3.0, qreal(base - 2) * qreal(m_counts[i]) / qreal(peak));
        p.drawRect(QRectF(i * slot + 1, base - h, bar, h));
    }
}

} // namespace sw::ui
