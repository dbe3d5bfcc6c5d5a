#include "ui/config/providers_page.h"

#include "core/credentials/secret_store.h"
#include "core/wire/api.h"
#include "ui/shared/engine_commands.h"
#include "ui/shared/state_palette.h"

#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>

namespace sw::ui {

ProvidersPage::ProvidersPage(config::Config &working, const ConfigDialogs &dialogs, EngineCommands *commands,
                             credentials::SecretStore *secrets, QWidget *parent)
    : MapPage(working, dialogs, &config::Config::providers,
              {QStringLiteral("provider"), tr("Add provider"), tr("Provider id (letters, digits, -):")}, parent),
      m_commands(commands), m_secrets(secrets) {
    QWidget *host = formHost();
    m_api = new QComboBox(host);
    m_api->setObjectName(QStringLiteral("providerApi"));
    m_api->addItems(wire::upstreamApiNames());
    m_url = new QLineEdit(host);
    m_url->setObjectName(QStringLiteral("providerUrl"));
    m_region = new QLineEdit(host);
    m_region->setObjectName(QStringLiteral("providerRegion"));
    m_maxRetries = new QSpinBox(host);
    m_maxRetries->setRange(0, 10);
    m_retriesFirst = new QSpinBox(host);
    m_retriesFirst->setRange(0, 10);
    m_credentials = new QListWidget(host);
    m_credentials->setObjectName(QStringLiteral("providerCredentials"));
    m_credentials->setMaximumHeight(90);
    auto *setKey = new QPushButton(tr("Set key…"), host);
    setKey->setObjectName(QStringLiteral("setKey"));
    setKey->setToolTip(tr("Store an API key in the OS keychain and use it as keychain:NAME"));
    auto *addRef = new QPushButton(tr("Add reference…"), host);
    addRef->setToolTip(tr("env:VAR, keychain:NAME or passthrough"));
    auto *removeRef = new QPushButton(tr("Remove"), host);
    auto *credButtons = new QHBoxLayout;
    credButtons->addWidget(setKey);
    credButtons->addWidget(addRef);
    credButtons->addWidget(removeRef);
    credButtons->addStretch(1);
    m_keyStatus = new QLabel(host);
    m_keyStatus->setWordWrap(true);
    QFormLayout *f = form();
    f->addRow(tr("API"), m_api);
    f->addRow(tr("Base URL"), m_url);
    f->addRow(tr("Region"), m_region);
    f->addRow(tr("Retries (no follower)"), m_maxRetries);
    f->addRow(tr("Retries before failover"), m_retriesFirst);
    f->addRow(tr("Credential pool"), m_credentials);
    f->addRow(QString(), credButtons);
    f->addRow(QString(), m_keyStatus);
    f->addRow(QString(),
              hintLabel(tr("Secrets never go into the file: a pool lists references, tried in order."), host));

    connect(m_api, &QComboBox::currentTextChanged, this,
            [this](const QString &t) { edit([&](auto &p) { p.api = t; }); });
    connect(m_url, &QLineEdit::textEdited, this,
            [this](const QString &t) { edit([&](auto &p) { p.baseUrl = t.trimmed(); }); });
    connect(m_region, &QLineEdit::textEdited, this,
            [this](const QString &t) { edit([&](auto &p) { p.region = t.trimmed(); }); });
    connect(m_maxRetries, &QSpinBox::valueChanged, this, [this](int v) { edit([&](auto &p) { p.maxRetries = v; }); });
    connect(m_retriesFirst, &QSpinBox::valueChanged, this,
            [this](int v) { edit([&](auto &p) { p.retriesBeforeFailover = v; }); });
    connect(setKey, &QPushButton::clicked, this, &ProvidersPage::setKey);
    connect(addRef, &QPushButton::clicked, this, [this]() {
        const QString ref =
            m_dialogs.askText(tr("Add credential"), tr("Reference (env:VAR, keychain:NAME or passthrough):"), {});
        if (!ref.isEmpty())
            edit([&](auto &p) { p.credentials << ref; });
        showForm();
    });
    connect(removeRef, &QPushButton::clicked, this, [this]() {
        const int row = m_credentials->currentRow();
        if (row >= 0)
            edit([&](auto &p) { p.credentials.removeAt(row); });
        showForm();
    });
}

config::ProviderConfig ProvidersPage::named(config::ProviderConfig item, const QString &name) const {
    item.id = name;
    return item;
}

config::ProviderConfig ProvidersPage::fresh() const {
    config::ProviderConfig p;
    p.api = wire::apiName(wire::Api::OpenAICompletions);
    p.baseUrl = QStringLiteral("https://");
    return p;
}

void ProvidersPage::loadItem(const config::ProviderConfig &p, bool exists) {
    m_api->setCurrentText(p.api);
    m_url->setText(p.baseUrl);
    m_url->setReadOnly(p.demo);
    m_url->setToolTip(p.demo ? tr("A simulated provider: its loopback URL is set at start") : QString());
    m_region->setText(p.region);
    m_maxRetries->setValue(p.maxRetries);
    m_retriesFirst->setValue(p.retriesBeforeFailover);
    m_credentials->clear();
    m_credentials->addItems(p.credentials);
    if (p.credentials.isEmpty() && exists)
        (new QListWidgetItem(tr("(none: requests carry no auth header)"), m_credentials))->setFlags(Qt::NoItemFlags);
}

void ProvidersPage::setKey() {
    const QString id = current();
    if (id.isEmpty() || !m_secrets)
        return;
    const QString name = m_dialogs.askText(tr("Set key for %1").arg(id), tr("Keychain entry name:"), id);
    if (name.isEmpty())
        return;
    const QString secret =
        m_dialogs.askSecret(tr("Set key for %1").arg(id), tr("API key (stored in the OS keychain only):"));
    if (secret.isEmpty())
        return;
    m_keyStatus->setText(tr("Saving to the keychain…"));
    m_secrets->write(name, secret.toUtf8(), this, [this, id, name](const credentials::SecretResult &result) {
        if (!result.ok) {
            m_keyStatus->setText(
                tr("<span style='color:%1'>\u2716</span> Not stored: %2")
                    .arg(StatePalette::color(HealthState::Error).name(), result.error.toHtmlEscaped()));
            return;
        }
        const QString ref = QStringLiteral("keychain:") + name;
        if (m_commands)
            m_commands->credentialChanged(ref); // a key parked or rejected under this name is tried again at once
        // The provider that asked, even if the selection moved while the keychain answered.
        if (items().contains(id) && !items()[id].credentials.contains(ref)) {
            items()[id].credentials << ref;
            changed();
        }
        showForm();
        m_keyStatus->setText(tr("<span style='color:%1'>\u2713</span> Stored in the keychain as %2")
                                 .arg(StatePalette::color(HealthState::Healthy).name(), ref));
    });
}

} // namespace sw::ui
