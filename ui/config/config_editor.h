#pragma once
// Configuration screen (SPEC 4 and 6): providers (with "Set key…" into the
// keychain), models, routes (reorder candidates, aliases, cost ceiling),
// tenants (create key, shown once), listen address and failover settings.
// Edits go to a working copy validated with config::validate on every change;
// Save writes the file atomically (config::save) and applies it to the engine,
// which keeps in-flight requests on the configuration they started with.

#include "config/config.h"

#include <QWidget>
#include <functional>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QSpinBox;
class QTabWidget;

namespace sw::credentials {
class SecretStore;
}

namespace sw::ui {

class EngineCommands;

class ConfigEditor final : public QWidget {
    Q_OBJECT
public:
    ConfigEditor(EngineCommands *commands, credentials::SecretStore *secrets, QWidget *parent = nullptr);

    // Empty path: nothing to save to (--demo); the button then only applies.
    void setConfigPath(const QString &path);
    QString configPath() const { return m_path; }
    // The running configuration; replaces the working copy unless it has unsaved edits.
    void setRunningConfig(const config::Config &config, quint64 generation);
    const config::Config &workingConfig() const { return m_working; }
    bool isDirty() const { return m_dirty; }
    QStringList problems() const; // current validation messages

    // Validates, saves atomically (when there is a path) and applies. False, with the
    // reasons shown, when the configuration is invalid or cannot be written.
    bool saveAndApply();
    void revert();

    // Dialog seams (tests answer them without a modal loop).
    std::function<QString(const QString &title, const QString &label, const QString &initial)> askText;
    std::function<QString(const QString &title, const QString &label)> askSecret;
    std::function<void(const QString &tenant, const QString &key)> showNewKey;

Q_SIGNALS:
    void saved(const QString &path);
    void applied();

private:
    QWidget *buildGeneralTab();
    QWidget *buildProvidersTab();
    QWidget *buildModelsTab();
    QWidget *buildRoutesTab();
    QWidget *buildTenantsTab();
    void loadForms();    // working copy -> every list and form
    void loadProvider(); // selected provider -> form
    void loadModel();
    void loadRoute();
    void loadTenant();
    void edited(); // a form changed the working copy
    void revalidate();
    void setKey();
    void createKey();
    static void fillList(QListWidget *list, const QStringList &names);
    QString selected(QListWidget *list) const;

    EngineCommands *m_commands;
    credentials::SecretStore *m_secrets;
    QString m_path;
    config::Config m_working;
    config::Config m_running;
    quint64 m_generation = 0;
    bool m_dirty = false;
    bool m_loading = false;

    QTabWidget *m_tabs = nullptr;
    QListWidget *m_problems = nullptr;
    QLabel *m_state = nullptr;
    QPushButton *m_save = nullptr;
    QPushButton *m_revert = nullptr;
    // General
    QLineEdit *m_listen = nullptr;
    QCheckBox *m_failoverEnabled = nullptr;
    QSpinBox *m_deadline = nullptr;
    QSpinBox *m_maxRetryDelay = nullptr;
    QSpinBox *m_keepalive = nullptr;
    // Providers
    QListWidget *m_providers = nullptr;
    QWidget *m_providerForm = nullptr;
    QComboBox *m_providerApi = nullptr;
    QLineEdit *m_providerUrl = nullptr;
    QLineEdit *m_providerRegion = nullptr;
    QSpinBox *m_providerMaxRetries = nullptr;
    QSpinBox *m_providerRetriesFirst = nullptr;
    QListWidget *m_providerCredentials = nullptr;
    QLabel *m_keyStatus = nullptr;
    // Models
    QListWidget *m_models = nullptr;
    QWidget *m_modelForm = nullptr;
    QComboBox *m_modelKind = nullptr;
    QCheckBox *m_modelText = nullptr;
    QCheckBox *m_modelImage = nullptr;
    QCheckBox *m_modelReasoning = nullptr;
    QDoubleSpinBox *m_modelCostIn = nullptr;
    QDoubleSpinBox *m_modelCostOut = nullptr;
    QLineEdit *m_modelTier = nullptr;
    // Routes
    QListWidget *m_routes = nullptr;
    QWidget *m_routeForm = nullptr;
    QListWidget *m_routeCandidates = nullptr;
    QComboBox *m_routePicker = nullptr;
    QLineEdit *m_routeAliases = nullptr;
    QDoubleSpinBox *m_routeCeiling = nullptr;
    // Tenants
    QListWidget *m_tenants = nullptr;
    QWidget *m_tenantForm = nullptr;
    QLineEdit *m_tenantProviders = nullptr;
    QLineEdit *m_tenantRegions = nullptr;
    QCheckBox *m_tenantAdmin = nullptr;
    QLabel *m_tenantKeys = nullptr;
};

} // namespace sw::ui
