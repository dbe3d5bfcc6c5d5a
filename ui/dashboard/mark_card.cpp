#include "ui/dashboard/mark_card.h"

#include "ui/shared/elided_label.h"
#include "ui/shared/state_palette.h"
#include "ui/shared/time_text.h"

#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QToolButton>

namespace sw::ui {

MarkCard::MarkCard(QWidget *parent) : QFrame(parent) {
    setFrameShape(QFrame::StyledPanel);
    auto *grid = new QGridLayout(this);
    grid->setContentsMargins(8, 6, 8, 6);
    grid->setVerticalSpacing(2);
    auto *icon = m_icon = new QLabel(this);
    icon->setPixmap(StatePalette::dot(HealthState::Marks, 12).pixmap(12, 12));
    m_lead = new ElidedLabel(Qt::ElideRight, this);
    m_lead->setObjectName(QStringLiteral("markCardLead"));
    QFont bold = m_lead->font();
    bold.setBold(true);
    m_lead->setFont(bold);
    m_title = new ElidedLabel(Qt::ElideMiddle, this);
    m_title->setObjectName(QStringLiteral("markCardTitle"));
    auto *titleRow = new QHBoxLayout;
    titleRow->setSpacing(0);
    titleRow->addWidget(m_lead);
    titleRow->addWidget(m_title, 1);
    m_subtitle = new ElidedLabel(Qt::ElideRight, this);
    m_subtitle->setForegroundRole(QPalette::PlaceholderText);
    m_bar = new QProgressBar(this);
    m_bar->setTextVisible(false);
    m_bar->setMaximumHeight(8);
    m_bar->setRange(0, 1000);
    QPalette p = m_bar->palette();
    p.setColor(QPalette::Highlight, StatePalette::color(HealthState::Marks));
    m_bar->setPalette(p);
    m_expires = new QLabel(this);
    m_expires->setObjectName(QStringLiteral("markCardExpires"));
    auto *clear = m_clear = new QToolButton(this);
    clear->setText(QStringLiteral("\u2715"));
    clear->setToolTip(tr("Clear this mark: the candidate is tried again at once"));
    clear->setAutoRaise(true);
    grid->addWidget(icon, 0, 0);
    grid->addLayout(titleRow, 0, 1, 1, 2);
    grid->addWidget(clear, 0, 3, Qt::AlignRight);
    grid->addWidget(m_subtitle, 1, 1, 1, 3);
    grid->addWidget(m_bar, 2, 1, 1, 1);
    grid->addWidget(m_expires, 2, 2, 1, 2, Qt::AlignRight);
    grid->setColumnStretch(1, 1);
    connect(clear, &QToolButton::clicked, this, &MarkCard::clearClicked);
}

void MarkCard::set(const QString &lead, const QString &title, const QString &subtitle, qint64 remainingMs,
                   qint64 ttlMs) {
    m_lead->setFullText(lead);
    m_title->setFullText(title);
    m_subtitle->setFullText(subtitle);
    m_bar->setValue(ttlMs > 0 ? int(std::clamp<qint64>(remainingMs * 1000 / ttlMs, 0, 1000)) : 0);
    m_expires->setText(tr("expires in %1").arg(TimeText::countdown(remainingMs)));
}

void MarkCard::setExpiresText(const QString &text) {
    m_expires->setText(text);
}

void MarkCard::setClearToolTip(const QString &text) {
    m_clear->setToolTip(text);
}

void MarkCard::setState(bool error) {
    const HealthState state = error ? HealthState::Error : HealthState::Marks;
    m_icon->setPixmap(StatePalette::dot(state, 12).pixmap(12, 12));
    QPalette p = m_bar->palette();
    p.setColor(QPalette::Highlight, StatePalette::color(state));
    m_bar->setPalette(p);
}

} // namespace sw::ui
