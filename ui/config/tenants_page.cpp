#include "ui/config/tenants_page.h"

#include "core/credentials/gateway_key.h"

#include <QCheckBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>

namespace sw::ui {

TenantsPage::TenantsPage(config::Config &working, const ConfigDialogs &dialogs, QWidget *parent)
    : MapPage(working, dialogs, &config::Config::tenants,
              {QStringLiteral("tenant"), tr("Add tenant"), tr("Tenant name:")}, parent) {
    QWidget *host = formHost();
    m_providers = new QLineEdit(host);
    m_providers->setObjectName(QStringLiteral("tenantProviders"));
    m_providers->setPlaceholderText(tr("all providers"));
    m_regions = new QLineEdit(host);
    m_regions->setObjectName(QStringLiteral("tenantRegions"));
    m_regions->setPlaceholderText(tr("all regions"));
    m_admin = new QCheckBox(tr("may use /admin and /metrics"), host);
    m_admin->setObjectName(QStringLiteral("tenantAdmin"));
    m_keys = new QLabel(host);
    auto *createKey = new QPushButton(tr("Create key…"), host);
    createKey->setObjectName(QStringLiteral("createKey"));
    auto *keys = new QHBoxLayout;
    keys->addWidget(m_keys, 1);
    keys->addWidget(createKey);
    QFormLayout *f = form();
    f->addRow(tr("Providers"), m_providers);
    f->addRow(tr("Regions"), m_regions);
    f->addRow(tr("Admin"), m_admin);
    f->addRow(tr("Keys"), keys);
    f->addRow(QString(),
              hintLabel(tr("With no tenants every caller is tenant \"local\" and only loopback is allowed."), host));

    connect(m_providers, &QLineEdit::textEdited, this,
            [this](const QString &t) { edit([&](auto &x) { x.providers = splitList(t); }); });
    connect(m_regions, &QLineEdit::textEdited, this,
            [this](const QString &t) { edit([&](auto &x) { x.regions = splitList(t); }); });
    connect(m_admin, &QCheckBox::toggled, this, [this](bool on) { edit([&](auto &x) { x.admin = on; }); });
    connect(createKey, &QPushButton::clicked, this, &TenantsPage::createKey);
}

config::TenantConfig TenantsPage::named(config::TenantConfig item, const QString &name) const {
    item.name = name;
    return item;
}

config::TenantConfig TenantsPage::copied(config::TenantConfig item) const {
    // A key belongs to one tenant: the copy gets its own.
    item.keyHashes.clear();
    return item;
}

void TenantsPage::added(const QString &) {
    // The first tenant gets admin, as `switchman key create` gives it: with tenants, the admin API takes
    // only an admin tenant's key, and a first tenant saved without it left nobody who could reload or
    // read /metrics (probe K1 5). The box stays free to clear.
    if (items().size() == 1)
        edit([](auto &t) { t.admin = true; });
    createKey(); // a tenant without a key cannot call: offer the first one at once
}

void TenantsPage::loadItem(const config::TenantConfig &t, bool exists) {
    m_providers->setText(joinList(t.providers));
    m_regions->setText(joinList(t.regions));
    m_admin->setChecked(t.admin);
    m_keys->setText(!exists ? QString()
                    : t.keyHashes.isEmpty()
                        ? tr("no key yet: this tenant cannot call")
                        : (t.keyHashes.size() == 1 ? tr("1 key, stored as a hash")
                                                   : tr("%1 keys, stored as hashes").arg(t.keyHashes.size())));
}

void TenantsPage::createKey() {
    const QString name = current();
    if (!items().contains(name))
        return;
    const QString key = credentials::newGatewayKey();
    edit([&](auto &t) { t.keyHashes << credentials::gatewayKeyHash(key); });
    showForm();
    m_dialogs.showNewKey(name, key);
}

} // namespace sw::ui
