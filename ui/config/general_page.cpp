#include "ui/config/general_page.h"

#include <QCheckBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>

namespace sw::ui {

GeneralPage::GeneralPage(config::Config &working, const ConfigDialogs &dialogs, QWidget *parent)
    : ConfigPage(working, dialogs, parent) {
    QFormLayout *form = topAlignedForm(this);
    m_listen = new QLineEdit(this);
    m_listen->setObjectName(QStringLiteral("listen"));
    m_failoverEnabled = new QCheckBox(tr("Fail over to the next candidate before the first byte"), this);
    m_failoverEnabled->setObjectName(QStringLiteral("failoverEnabled"));
    m_deadline = millisecondsSpin(this, 3'600'000);
    m_deadline->setObjectName(QStringLiteral("deadline"));
    m_maxRetryDelay = millisecondsSpin(this, 600'000);
    m_keepalive = millisecondsSpin(this, 600'000);
    form->addRow(tr("Listen on"), m_listen);
    form->addRow(tr("Failover"), m_failoverEnabled);
    form->addRow(tr("Request deadline"), m_deadline);
    form->addRow(tr("Longest in-attempt retry wait"), m_maxRetryDelay);
    form->addRow(tr("Keepalive comment every"), m_keepalive);
    m_listenHint = hintLabel(tr("A new listen address takes effect at the next start."), this);
    m_listenHint->setObjectName(QStringLiteral("listenHint"));
    form->addRow(QString(), m_listenHint);

    connect(m_listen, &QLineEdit::textEdited, this, [this](const QString &t) {
        m_working.listen = t.trimmed();
        changed();
    });
    connect(m_failoverEnabled, &QCheckBox::toggled, this, [this](bool on) {
        if (m_loading)
            return;
        m_working.failover.enabled = on;
        changed();
    });
    const std::pair<QSpinBox *, int config::FailoverConfig::*> spins[] = {
        {m_deadline, &config::FailoverConfig::deadlineMs},
        {m_maxRetryDelay, &config::FailoverConfig::maxRetryDelayMs},
        {m_keepalive, &config::FailoverConfig::keepaliveMs}};
    for (const auto &[spin, field] : spins) {
        connect(spin, &QSpinBox::valueChanged, this, [this, field = field](int v) {
            if (m_loading)
                return;
            m_working.failover.*field = v;
            changed();
        });
    }
}

void GeneralPage::setListenGiven(const QString &listen) {
    m_listen->setReadOnly(!listen.isEmpty());
    m_listenHint->setText(listen.isEmpty()
                              ? tr("A new listen address takes effect at the next start.")
                              : tr("Started with --listen %1: the command line sets the listener, not the file. "
                                   "The file's listen is used by a start without --listen.")
                                    .arg(listen));
}

void GeneralPage::load() {
    const LoadingScope loading(m_loading);
    m_listen->setText(m_working.listen);
    m_failoverEnabled->setChecked(m_working.failover.enabled);
    m_deadline->setValue(m_working.failover.deadlineMs);
    m_maxRetryDelay->setValue(m_working.failover.maxRetryDelayMs);
    m_keepalive->setValue(m_working.failover.keepaliveMs);
}

} // namespace sw::ui
