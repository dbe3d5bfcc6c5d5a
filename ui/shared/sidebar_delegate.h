#pragma once
// Sidebar rows with an optional count badge (Marks while any exist).

#include <QStyledItemDelegate>

namespace sw::ui {

class SidebarDelegate final : public QStyledItemDelegate {
    Q_OBJECT
public:
    static constexpr int BadgeRole = Qt::UserRole + 1; // int; 0 = no badge
    using QStyledItemDelegate::QStyledItemDelegate;
    void paint(QPainter *painter, const QStyleOptionViewItem &option, const QModelIndex &index) const override;
    QSize sizeHint(const QStyleOptionViewItem &option, const QModelIndex &index) const override;
};

} // namespace sw::ui
