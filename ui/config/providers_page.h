#pragma once
// Providers: the upstream endpoints, each with its API, base URL, retries and
// credential pool. "Set key…" stores a secret in the OS keychain and adds its
// keychain:NAME reference; the secret itself never enters the configuration.

#include "ui/config/list_form_page.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QSpinBox;

namespace sw::credentials {
class SecretStore;
}

namespace sw::ui {

class EngineCommands;

class ProvidersPage final : public MapPage<config::ProviderConfig> {
public:
    ProvidersPage(config::Config &working, const ConfigDialogs &dialogs, EngineCommands *commands,
                  credentials::SecretStore *secrets, QWidget *parent = nullptr);

private:
    config::ProviderConfig named(config::ProviderConfig item, const QString &name) const override;
    config::ProviderConfig fresh() const override;
    void loadItem(const config::ProviderConfig &p, bool exists) override;
    void setKey();

    EngineCommands *m_commands;
    credentials::SecretStore *m_secrets;
    QComboBox *m_api = nullptr;
    QLineEdit *m_url = nullptr;
    QLineEdit *m_region = nullptr;
    QSpinBox *m_maxRetries = nullptr;
    QSpinBox *m_retriesFirst = nullptr;
    QListWidget *m_credentials = nullptr;
    QLabel *m_keyStatus = nullptr;
};

} // namespace sw::ui
