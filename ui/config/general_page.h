#pragma once
// Listener and failover: the listen address and the failover switches that hold
// for every route.

#include "ui/config/config_page.h"

class QCheckBox;
class QLineEdit;
class QSpinBox;

namespace sw::ui {

class GeneralPage final : public ConfigPage {
    Q_OBJECT
public:
    GeneralPage(config::Config &working, const ConfigDialogs &dialogs, QWidget *parent = nullptr);

    void load() override;

private:
    QLineEdit *m_listen = nullptr;
    QCheckBox *m_failoverEnabled = nullptr;
    QSpinBox *m_deadline = nullptr;
    QSpinBox *m_maxRetryDelay = nullptr;
    QSpinBox *m_keepalive = nullptr;
};

} // namespace sw::ui
