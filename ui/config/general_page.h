#pragma once
// Listener and failover: the listen address and the failover switches that hold
// for every route.

#include "ui/config/config_page.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace sw::ui {

class GeneralPage final : public ConfigPage {
    Q_OBJECT
public:
    GeneralPage(config::Config &working, const ConfigDialogs &dialogs, QWidget *parent = nullptr);

    void load() override;
    // Started with --listen: the command line decides the listener, at this start and the next,
    // whatever the file says; the field shows it and cannot change it.
    void setListenGiven(const QString &listen);

private:
    QLineEdit *m_listen = nullptr;
    QLabel *m_listenHint = nullptr;
    QCheckBox *m_failoverEnabled = nullptr;
    QSpinBox *m_deadline = nullptr;
    QSpinBox *m_maxRetryDelay = nullptr;
    QSpinBox *m_keepalive = nullptr;
};

} // namespace sw::ui
