#include "ui/shared/empty_state_stack.h"

#include <QLabel>
#include <QVBoxLayout>

namespace sw::ui {

EmptyStateStack::EmptyStateStack(QWidget *content, const QString &title, const QString &hint, QWidget *parent)
    : QStackedWidget(parent) {
    auto *empty = new QWidget(this);
    auto *layout = new QVBoxLayout(empty);
    layout->addStretch(2);
    auto *titleLabel = new QLabel(title, empty);
    titleLabel->setObjectName(QStringLiteral("emptyTitle"));
    titleLabel->setAlignment(Qt::AlignCenter);
    QFont f = titleLabel->font();
    f.setPointSizeF(f.pointSizeF() * 1.25);
    titleLabel->setFont(f);
    m_hint = new QLabel(hint, empty);
    m_hint->setAlignment(Qt::AlignCenter);
    m_hint->setWordWrap(true);
    m_hint->setForegroundRole(QPalette::PlaceholderText);
    m_hint->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(titleLabel);
    layout->addWidget(m_hint);
    layout->addStretch(3);
    addWidget(empty);
    addWidget(content);
    setCurrentIndex(0);
}

void EmptyStateStack::setEmpty(bool empty) {
    setCurrentIndex(empty ? 0 : 1);
}

void EmptyStateStack::setHint(const QString &hint) {
    m_hint->setText(hint);
}

} // namespace sw::ui
