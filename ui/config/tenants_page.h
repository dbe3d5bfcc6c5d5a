#pragma once
// Tenants: who may call the gateway, with which providers and regions, and
// whether /admin and /metrics are open to them. "Create key…" makes a gateway
// key, shows it once, and keeps only its hash.

#include "ui/config/list_form_page.h"

class QCheckBox;
class QLabel;
class QLineEdit;

namespace sw::ui {

class TenantsPage final : public MapPage<config::TenantConfig> {
public:
    TenantsPage(config::Config &working, const ConfigDialogs &dialogs, QWidget *parent = nullptr);

private:
    config::TenantConfig named(config::TenantConfig item, const QString &name) const override;
    config::TenantConfig copied(config::TenantConfig item) const override;
    void loadItem(const config::TenantConfig &t, bool exists) override;
    void added(const QString &name) override;
    void createKey();

    QLineEdit *m_providers = nullptr;
    QLineEdit *m_regions = nullptr;
    QCheckBox *m_admin = nullptr;
    QLabel *m_keys = nullptr;
};

} // namespace sw::ui
