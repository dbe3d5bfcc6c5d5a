#include "ui/shared/sidebar_delegate.h"

#include "ui/shared/state_palette.h"

#include <QPainter>

namespace sw::ui {

void SidebarDelegate::paint(QPainter *painter, const QStyleOptionViewItem &option, const QModelIndex &index) const {
    QStyledItemDelegate::paint(painter, option, index);
    const int count = index.data(BadgeRole).toInt();
    if (count <= 0)
        return;
    const QString text = QString::number(count);
    QFont f = option.font;
    f.setBold(true);
    const QFontMetrics fm(f);
    const int h = fm.height() + 2;
    const int w = std::max(h, fm.horizontalAdvance(text) + 10);
    const QRect badge(option.rect.right() - w - 8, option.rect.center().y() - h / 2, w, h);
    painter->save();
    painter->setRenderHint(QPainter::Antialiasing);
    painter->setPen(Qt::NoPen);
    painter->setBrush(StatePalette::color(HealthState::Marks));
    painter->drawRoundedRect(badge, h / 2.0, h / 2.0);
    painter->setPen(Qt::white);
    painter->setFont(f);
    painter->drawText(badge, Qt::AlignCenter, text);
    painter->restore();
}

QSize SidebarDelegate::sizeHint(const QStyleOptionViewItem &option, const QModelIndex &index) const {
    QSize s = QStyledItemDelegate::sizeHint(option, index);
    s.setHeight(std::max(s.height(), option.fontMetrics.height() + 14));
    s.setWidth(s.width() + 40);
    return s;
}

} // namespace sw::ui
