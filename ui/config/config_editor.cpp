#include "config/config_editor.h"

#include "config/config_loader.h"
#include "config/new_key_dialog.h"
#include "credentials/gateway_key.h"
#include "credentials/credential_store.h"
#include "shared/engine_commands.h"
#include "shared/state_palette.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QVBoxLayout>

namespace sw::ui {

namespace {
QStringList splitList(const QString &text) {
    QStringList out;
    for (const QString &part : text.split(QLatin1Char(','), Qt::SkipEmptyParts))
        if (!part.trimmed().isEmpty())
            out << part.trimmed();
    return out;
}

QSpinBox *msSpin(QWidget *parent, int max) {
    auto *s = new QSpinBox(parent);
    s->setRange(0, max);
    s->setSingleStep(1000);
    s->setSuffix(QObject::tr(" ms"));
    s->setAlignment(Qt::AlignRight);
    return s;
}

// Fields at the top, growing only where text grows (URLs, lists), extra space below.
QFormLayout *topAlignedForm(QWidget *host) {
    auto *outer = new QVBoxLayout(host);
    auto *form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::ExpandingFieldsGrow);
    outer->addLayout(form);
    outer->addStretch(1);
    return form;
}

// A list of names with Add / Remove under it, and a form beside it.
QWidget *masterDetail(QListWidget *list, QPushButton *add, QPushButton *remove, QWidget *form, QWidget *parent) {
    auto *split = new QSplitter(parent);
    auto *left = new QWidget(split);
    auto *l = new QVBoxLayout(left);
    l->setContentsMargins(0, 0, 0, 0);
    l->addWidget(list, 1);
    auto *buttons = new QHBoxLayout;
    buttons->addWidget(add);
    buttons->addWidget(remove);
    l->addLayout(buttons);
    split->addWidget(left);
    split->addWidget(form);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 3);
    return split;
}
} // namespace

ConfigEditor::ConfigEditor(EngineCommands *commands, credentials::SecretStore *secrets, QWidget *parent)
    : QWidget(parent), m_commands(commands), m_secrets(secrets) {
    askText = [this](const QString &title, const QString &label, const QString &initial) {
        bool ok = false;
        const QString v = QInputDialog::getText(this, title, label, QLineEdit::Normal, initial, &ok);
        return ok ? v.trimmed() : QString();
    };
    askSecret = [this](const QString &title, const QString &label) {
        bool ok = false;
        const QString v = QInputDialog::getText(this, title, label, QLineEdit::Password, {}, &ok);
        return ok ? v : QString();
    };
    showNewKey = [this](const QString &tenant, const QString &key) { NewKeyDialog(tenant, key, this).exec(); };

    auto *layout = new QVBoxLayout(this);
    m_tabs = new QTabWidget(this);
    m_tabs->addTab(buildProvidersTab(), tr("Providers"));
    m_tabs->addTab(buildModelsTab(), tr("Models"));
    m_tabs->addTab(buildRoutesTab(), tr("Routes"));
    m_tabs->addTab(buildTenantsTab(), tr("Tenants"));
    m_tabs->addTab(buildGeneralTab(), tr("Listener and failover"));
    layout->addWidget(m_tabs, 1);

    m_problems = new QListWidget(this);
    m_problems->setObjectName(QStringLiteral("validationList"));
    m_problems->setMaximumHeight(110);
    layout->addWidget(m_problems);
    auto *bar = new QHBoxLayout;
    m_state = new QLabel(this);
    m_state->setObjectName(QStringLiteral("configState"));
    m_state->setWordWrap(true);
    bar->addWidget(m_state, 1);
    m_revert = new QPushButton(tr("Revert"), this);
    m_revert->setObjectName(QStringLiteral("revertButton"));
    m_save = new QPushButton(tr("Save and apply"), this);
    m_save->setObjectName(QStringLiteral("saveButton"));
    m_save->setDefault(true);
    bar->addWidget(m_revert);
    bar->addWidget(m_save);
    layout->addLayout(bar);
    connect(m_save, &QPushButton::clicked, this, &ConfigEditor::saveAndApply);
    connect(m_revert, &QPushButton::clicked, this, &ConfigEditor::revert);
    loadForms();
    revalidate();
}

void ConfigEditor::setConfigPath(const QString &path) {
    m_path = path;
    m_save->setText(path.isEmpty() ? tr("Apply") : tr("Save and apply"));
    m_save->setToolTip(path.isEmpty() ? tr("Demo mode: changes apply to the running gateway and are not saved")
                                      : tr("Write %1 atomically and apply it; requests in flight finish "
                                           "on the configuration they started with")
                                            .arg(path));
    revalidate();
}

void ConfigEditor::setRunningConfig(const config::Config &config, quint64 generation) {
    if (generation == m_generation)
        return;
    m_generation = generation;
    m_running = config;
    if (m_dirty)
        return; // never throw away the user's edits; Revert picks the new one up
    m_working = config;
    loadForms();
    revalidate();
}

QString ConfigEditor::selected(QListWidget *list) const {
    auto *item = list->currentItem();
    return item ? item->text() : QString();
}

void ConfigEditor::fillList(QListWidget *list, const QStringList &names) {
    const QString current = list->currentItem() ? list->currentItem()->text() : QString();
    list->clear();
    list->addItems(names);
    const auto found = list->findItems(current, Qt::MatchExactly);
    list->setCurrentRow(found.isEmpty() ? (names.isEmpty() ? -1 : 0) : list->row(found.first()));
}

// ---- tabs -------------------------------------------------------------------

QWidget *ConfigEditor::buildGeneralTab() {
    auto *w = new QWidget(this);
    auto *form = topAlignedForm(w);
    m_listen = new QLineEdit(w);
    m_listen->setObjectName(QStringLiteral("listen"));
    m_failoverEnabled = new QCheckBox(tr("Fail over to the next candidate before the first byte"), w);
    m_deadline = msSpin(w, 3'600'000);
    m_maxRetryDelay = msSpin(w, 600'000);
    m_keepalive = msSpin(w, 600'000);
    form->addRow(tr("Listen on"), m_listen);
    form->addRow(tr("Failover"), m_failoverEnabled);
    form->addRow(tr("Request deadline"), m_deadline);
    form->addRow(tr("Longest in-attempt retry wait"), m_maxRetryDelay);
    form->addRow(tr("Keepalive comment every"), m_keepalive);
    auto *note = new QLabel(tr("A new listen address takes effect at the next start."), w);
    note->setForegroundRole(QPalette::PlaceholderText);
    form->addRow(QString(), note);
    connect(m_listen, &QLineEdit::textEdited, this, [this](const QString &t) {
        m_working.listen = t.trimmed();
        edited();
    });
    connect(m_failoverEnabled, &QCheckBox::toggled, this, [this](bool on) {
        if (m_loading)
            return;
        m_working.failover.enabled = on;
        edited();
    });
    const std::pair<QSpinBox *, int config::FailoverConfig::*> spins[] = {
        {m_deadline, &config::FailoverConfig::deadlineMs},
        {m_maxRetryDelay, &config::FailoverConfig::maxRetryDelayMs},
        {m_keepalive, &config::FailoverConfig::keepaliveMs}};
    for (const auto &binding : spins) {
        const auto field = binding.second;
        connect(binding.first, &QSpinBox::valueChanged, this, [this, field](int v) {
            if (m_loading)
                return;
            m_working.failover.*field = v;
            edited();
        });
    }
    return w;
}

QWidget *ConfigEditor::buildProvidersTab() {
    m_providers = new QListWidget(this);
    m_providers->setObjectName(QStringLiteral("providerList"));
    auto *add = new QPushButton(tr("Add…"), this);
    auto *remove = new QPushButton(tr("Remove"), this);
    m_providerForm = new QWidget(this);
    auto *form = topAlignedForm(m_providerForm);
    m_providerApi = new QComboBox(m_providerForm);
    m_providerApi->addItems({QStringLiteral("anthropic-messages"), QStringLiteral("openai-completions"),
                             QStringLiteral("openai-responses"), QStringLiteral("google-generative-ai")});
    m_providerUrl = new QLineEdit(m_providerForm);
    m_providerUrl->setObjectName(QStringLiteral("providerUrl"));
    m_providerRegion = new QLineEdit(m_providerForm);
    m_providerMaxRetries = new QSpinBox(m_providerForm);
    m_providerMaxRetries->setRange(0, 10);
    m_providerRetriesFirst = new QSpinBox(m_providerForm);
    m_providerRetriesFirst->setRange(0, 10);
    m_providerCredentials = new QListWidget(m_providerForm);
    m_providerCredentials->setObjectName(QStringLiteral("providerCredentials"));
    m_providerCredentials->setMaximumHeight(90);
    auto *credButtons = new QHBoxLayout;
    auto *setKey = new QPushButton(tr("Set key…"), m_providerForm);
    setKey->setObjectName(QStringLiteral("setKey"));
    setKey->setToolTip(tr("Store an API key in the OS keychain and use it as keychain:NAME"));
    auto *addRef = new QPushButton(tr("Add reference…"), m_providerForm);
    addRef->setToolTip(tr("env:VAR, keychain:NAME or passthrough"));
    auto *removeRef = new QPushButton(tr("Remove"), m_providerForm);
    credButtons->addWidget(setKey);
    credButtons->addWidget(addRef);
    credButtons->addWidget(removeRef);
    credButtons->addStretch(1);
    m_keyStatus = new QLabel(m_providerForm);
    m_keyStatus->setWordWrap(true);
    form->addRow(tr("API"), m_providerApi);
    form->addRow(tr("Base URL"), m_providerUrl);
    form->addRow(tr("Region"), m_providerRegion);
    form->addRow(tr("Retries (no follower)"), m_providerMaxRetries);
    form->addRow(tr("Retries before failover"), m_providerRetriesFirst);
    form->addRow(tr("Credential pool"), m_providerCredentials);
    form->addRow(QString(), credButtons);
    form->addRow(QString(), m_keyStatus);
    auto *note =
        new QLabel(tr("Secrets never go into the file: a pool lists references, tried in order."), m_providerForm);
    note->setForegroundRole(QPalette::PlaceholderText);
    form->addRow(QString(), note);

    connect(m_providers, &QListWidget::currentRowChanged, this, &ConfigEditor::loadProvider);
    auto withProvider = [this](const std::function<void(config::ProviderConfig &)> &fn) {
        if (m_loading)
            return;
        const QString id = selected(m_providers);
        if (!m_working.providers.contains(id))
            return;
        fn(m_working.providers[id]);
        edited();
    };
    connect(m_providerApi, &QComboBox::currentTextChanged, this,
            [withProvider](const QString &t) { withProvider([&](auto &p) { p.api = t; }); });
    connect(m_providerUrl, &QLineEdit::textEdited, this,
            [withProvider](const QString &t) { withProvider([&](auto &p) { p.baseUrl = t.trimmed(); }); });
    connect(m_providerRegion, &QLineEdit::textEdited, this,
            [withProvider](const QString &t) { withProvider([&](auto &p) { p.region = t.trimmed(); }); });
    connect(m_providerMaxRetries, &QSpinBox::valueChanged, this,
            [withProvider](int v) { withProvider([&](auto &p) { p.maxRetries = v; }); });
    connect(m_providerRetriesFirst, &QSpinBox::valueChanged, this,
            [withProvider](int v) { withProvider([&](auto &p) { p.retriesBeforeFailover = v; }); });
    connect(setKey, &QPushButton::clicked, this, &ConfigEditor::setKey);
    connect(addRef, &QPushButton::clicked, this, [this, withProvider]() {
        const QString ref = askText(tr("Add credential"), tr("Reference (env:VAR, keychain:NAME or passthrough):"), {});
        if (!ref.isEmpty())
            withProvider([&](auto &p) { p.credentials << ref; });
        loadProvider();
    });
    connect(removeRef, &QPushButton::clicked, this, [this, withProvider]() {
        const int row = m_providerCredentials->currentRow();
        if (row >= 0)
            withProvider([&](auto &p) { p.credentials.removeAt(row); });
        loadProvider();
    });
    connect(add, &QPushButton::clicked, this, [this]() {
        const QString id = askText(tr("Add provider"), tr("Provider id (letters, digits, -):"), {});
        if (id.isEmpty() || m_working.providers.contains(id))
            return;
        config::ProviderConfig p;
        p.id = id;
        p.api = QStringLiteral("openai-completions");
        p.baseUrl = QStringLiteral("https://");
        m_working.providers.insert(id, p);
        fillList(m_providers, m_working.providers.keys());
        m_providers->setCurrentRow(int(m_working.providers.keys().indexOf(id)));
        edited();
    });
    connect(remove, &QPushButton::clicked, this, [this]() {
        m_working.providers.remove(selected(m_providers));
        fillList(m_providers, m_working.providers.keys());
        edited();
    });
    return masterDetail(m_providers, add, remove, m_providerForm, this);
}

QWidget *ConfigEditor::buildModelsTab() {
    m_models = new QListWidget(this);
    m_models->setObjectName(QStringLiteral("modelList"));
    auto *add = new QPushButton(tr("Add…"), this);
    auto *remove = new QPushButton(tr("Remove"), this);
    m_modelForm = new QWidget(this);
    auto *form = topAlignedForm(m_modelForm);
    m_modelKind = new QComboBox(m_modelForm);
    m_modelKind->addItems({QStringLiteral("chat"), QStringLiteral("embedding")});
    auto *inputs = new QHBoxLayout;
    m_modelText = new QCheckBox(tr("text"), m_modelForm);
    m_modelImage = new QCheckBox(tr("image"), m_modelForm);
    inputs->addWidget(m_modelText);
    inputs->addWidget(m_modelImage);
    inputs->addStretch(1);
    m_modelReasoning = new QCheckBox(tr("reasoning"), m_modelForm);
    m_modelCostIn = new QDoubleSpinBox(m_modelForm);
    m_modelCostOut = new QDoubleSpinBox(m_modelForm);
    for (auto *s : {m_modelCostIn, m_modelCostOut}) {
        s->setRange(0, 10000);
        s->setDecimals(3);
        s->setPrefix(QStringLiteral("$"));
        s->setSuffix(tr(" / M tokens"));
        s->setAlignment(Qt::AlignRight);
    }
    m_modelTier = new QLineEdit(m_modelForm);
    form->addRow(tr("Kind"), m_modelKind);
    form->addRow(tr("Input"), inputs);
    form->addRow(QString(), m_modelReasoning);
    form->addRow(tr("Input price"), m_modelCostIn);
    form->addRow(tr("Output price"), m_modelCostOut);
    form->addRow(tr("Tier"), m_modelTier);

    connect(m_models, &QListWidget::currentRowChanged, this, &ConfigEditor::loadModel);
    auto withModel = [this](const std::function<void(config::ModelConfig &)> &fn) {
        if (m_loading)
            return;
        const QString key = selected(m_models);
        if (!m_working.models.contains(key))
            return;
        fn(m_working.models[key]);
        edited();
    };
    connect(m_modelKind, &QComboBox::currentTextChanged, this,
            [withModel](const QString &t) { withModel([&](auto &m) { m.kind = t; }); });
    auto inputsChanged = [this, withModel]() {
        withModel([this](auto &m) {
            m.input.clear();
            if (m_modelText->isChecked())
                m.input << QStringLiteral("text");
            if (m_modelImage->isChecked())
                m.input << QStringLiteral("image");
        });
    };
    connect(m_modelText, &QCheckBox::toggled, this, inputsChanged);
    connect(m_modelImage, &QCheckBox::toggled, this, inputsChanged);
    connect(m_modelReasoning, &QCheckBox::toggled, this,
            [withModel](bool on) { withModel([&](auto &m) { m.reasoning = on; }); });
    connect(m_modelCostIn, &QDoubleSpinBox::valueChanged, this,
            [withModel](double v) { withModel([&](auto &m) { m.costInput = v; }); });
    connect(m_modelCostOut, &QDoubleSpinBox::valueChanged, this,
            [withModel](double v) { withModel([&](auto &m) { m.costOutput = v; }); });
    connect(m_modelTier, &QLineEdit::textEdited, this,
            [withModel](const QString &t) { withModel([&](auto &m) { m.tier = t.trimmed(); }); });
    connect(add, &QPushButton::clicked, this, [this]() {
        const QString key = askText(tr("Add model"), tr("Model as provider/id:"), {});
        const qsizetype slash = key.indexOf(QLatin1Char('/'));
        if (slash <= 0 || m_working.models.contains(key))
            return;
        config::ModelConfig m;
        m.provider = key.left(slash);
        m.id = key.mid(slash + 1);
        m_working.models.insert(key, m);
        fillList(m_models, m_working.models.keys());
        m_models->setCurrentRow(int(m_working.models.keys().indexOf(key)));
        edited();
    });
    connect(remove, &QPushButton::clicked, this, [this]() {
        m_working.models.remove(selected(m_models));
        fillList(m_models, m_working.models.keys());
        edited();
    });
    return masterDetail(m_models, add, remove, m_modelForm, this);
}

QWidget *ConfigEditor::buildRoutesTab() {
    m_routes = new QListWidget(this);
    m_routes->setObjectName(QStringLiteral("routeList"));
    auto *add = new QPushButton(tr("Add…"), this);
    auto *remove = new QPushButton(tr("Remove"), this);
    m_routeForm = new QWidget(this);
    auto *form = topAlignedForm(m_routeForm);
    m_routeCandidates = new QListWidget(m_routeForm);
    m_routeCandidates->setObjectName(QStringLiteral("routeCandidates"));
    m_routeCandidates->setDragDropMode(QAbstractItemView::InternalMove);
    auto *order = new QHBoxLayout;
    auto *up = new QPushButton(tr("Up"), m_routeForm);
    up->setObjectName(QStringLiteral("candidateUp"));
    auto *down = new QPushButton(tr("Down"), m_routeForm);
    down->setObjectName(QStringLiteral("candidateDown"));
    auto *drop = new QPushButton(tr("Remove"), m_routeForm);
    drop->setObjectName(QStringLiteral("candidateRemove"));
    m_routePicker = new QComboBox(m_routeForm);
    m_routePicker->setObjectName(QStringLiteral("candidatePicker"));
    auto *append = new QPushButton(tr("Add"), m_routeForm);
    append->setObjectName(QStringLiteral("candidateAdd"));
    order->addWidget(up);
    order->addWidget(down);
    order->addWidget(drop);
    order->addSpacing(12);
    order->addWidget(m_routePicker, 1);
    order->addWidget(append);
    m_routeAliases = new QLineEdit(m_routeForm);
    m_routeAliases->setObjectName(QStringLiteral("routeAliases"));
    m_routeAliases->setPlaceholderText(tr("claude-sonnet-*, sonnet-latest"));
    m_routeCeiling = new QDoubleSpinBox(m_routeForm);
    m_routeCeiling->setObjectName(QStringLiteral("routeCeiling"));
    m_routeCeiling->setRange(0, 1000);
    m_routeCeiling->setDecimals(1);
    m_routeCeiling->setSuffix(QStringLiteral(" \u00D7"));
    m_routeCeiling->setSpecialValueText(tr("no ceiling"));
    form->addRow(tr("Candidates, in order"), m_routeCandidates);
    form->addRow(QString(), order);
    form->addRow(tr("Aliases (globs)"), m_routeAliases);
    form->addRow(tr("Cost ceiling"), m_routeCeiling);
    auto *note =
        new QLabel(tr("A follower priced over the ceiling × the first eligible candidate is skipped."), m_routeForm);
    note->setForegroundRole(QPalette::PlaceholderText);
    form->addRow(QString(), note);

    connect(m_routes, &QListWidget::currentRowChanged, this, &ConfigEditor::loadRoute);
    auto withRoute = [this](const std::function<void(config::RouteConfig &)> &fn) {
        if (m_loading)
            return;
        const QString name = selected(m_routes);
        if (!m_working.routes.contains(name))
            return;
        fn(m_working.routes[name]);
        edited();
    };
    auto candidatesFromList = [this, withRoute]() {
        withRoute([this](auto &r) {
            r.candidates.clear();
            for (int i = 0; i < m_routeCandidates->count(); ++i)
                r.candidates << m_routeCandidates->item(i)->text();
        });
    };
    connect(m_routeCandidates->model(), &QAbstractItemModel::rowsMoved, this, candidatesFromList);
    auto move = [this, withRoute](int delta) {
        const int row = m_routeCandidates->currentRow();
        const int to = row + delta;
        if (row < 0 || to < 0 || to >= m_routeCandidates->count())
            return;
        withRoute([&](auto &r) { r.candidates.move(row, to); });
        loadRoute();
        m_routeCandidates->setCurrentRow(to);
    };
    connect(up, &QPushButton::clicked, this, [move]() { move(-1); });
    connect(down, &QPushButton::clicked, this, [move]() { move(+1); });
    connect(drop, &QPushButton::clicked, this, [this, withRoute]() {
        const int row =
            m_routeCandidates->currentRow() >= 0 ? m_routeCandidates->currentRow() : m_routeCandidates->count() - 1;
        if (row < 0)
            return;
        withRoute([&](auto &r) { r.candidates.removeAt(row); });
        loadRoute();
    });
    connect(append, &QPushButton::clicked, this, [this, withRoute]() {
        const QString model = m_routePicker->currentText();
        if (model.isEmpty())
            return;
        withRoute([&](auto &r) { r.candidates << model; });
        loadRoute();
    });
    connect(m_routeAliases, &QLineEdit::textEdited, this,
            [withRoute](const QString &t) { withRoute([&](auto &r) { r.aliases = splitList(t); }); });
    connect(m_routeCeiling, &QDoubleSpinBox::valueChanged, this, [withRoute](double v) {
        withRoute([&](auto &r) { r.maxFallbackCostMultiplier = v > 0 ? std::optional<double>(v) : std::nullopt; });
    });
    connect(add, &QPushButton::clicked, this, [this]() {
        const QString name = askText(tr("Add route"), tr("Route name clients send as model:"), {});
        if (name.isEmpty() || m_working.routes.contains(name))
            return;
        config::RouteConfig r;
        r.name = name;
        m_working.routes.insert(name, r);
        fillList(m_routes, m_working.routes.keys());
        m_routes->setCurrentRow(int(m_working.routes.keys().indexOf(name)));
        edited();
    });
    connect(remove, &QPushButton::clicked, this, [this]() {
        m_working.routes.remove(selected(m_routes));
        fillList(m_routes, m_working.routes.keys());
        edited();
    });
    return masterDetail(m_routes, add, remove, m_routeForm, this);
}

QWidget *ConfigEditor::buildTenantsTab() {
    m_tenants = new QListWidget(this);
    m_tenants->setObjectName(QStringLiteral("tenantList"));
    auto *add = new QPushButton(tr("Add…"), this);
    auto *remove = new QPushButton(tr("Remove"), this);
    m_tenantForm = new QWidget(this);
    auto *form = topAlignedForm(m_tenantForm);
    m_tenantProviders = new QLineEdit(m_tenantForm);
    m_tenantProviders->setPlaceholderText(tr("all providers"));
    m_tenantRegions = new QLineEdit(m_tenantForm);
    m_tenantRegions->setPlaceholderText(tr("all regions"));
    m_tenantAdmin = new QCheckBox(tr("may use /admin and /metrics"), m_tenantForm);
    m_tenantKeys = new QLabel(m_tenantForm);
    auto *createKey = new QPushButton(tr("Create key…"), m_tenantForm);
    createKey->setObjectName(QStringLiteral("createKey"));
    auto *keys = new QHBoxLayout;
    keys->addWidget(m_tenantKeys, 1);
    keys->addWidget(createKey);
    form->addRow(tr("Providers"), m_tenantProviders);
    form->addRow(tr("Regions"), m_tenantRegions);
    form->addRow(tr("Admin"), m_tenantAdmin);
    form->addRow(tr("Keys"), keys);
    auto *note =
        new QLabel(tr("With no tenants every caller is tenant \"local\" and only loopback is allowed."), m_tenantForm);
    note->setForegroundRole(QPalette::PlaceholderText);
    form->addRow(QString(), note);

    connect(m_tenants, &QListWidget::currentRowChanged, this, &ConfigEditor::loadTenant);
    auto withTenant = [this](const std::function<void(config::TenantConfig &)> &fn) {
        if (m_loading)
            return;
        const QString name = selected(m_tenants);
        if (!m_working.tenants.contains(name))
            return;
        fn(m_working.tenants[name]);
        edited();
    };
    connect(m_tenantProviders, &QLineEdit::textEdited, this,
            [withTenant](const QString &t) { withTenant([&](auto &x) { x.providers = splitList(t); }); });
    connect(m_tenantRegions, &QLineEdit::textEdited, this,
            [withTenant](const QString &t) { withTenant([&](auto &x) { x.regions = splitList(t); }); });
    connect(m_tenantAdmin, &QCheckBox::toggled, this,
            [withTenant](bool on) { withTenant([&](auto &x) { x.admin = on; }); });
    connect(createKey, &QPushButton::clicked, this, &ConfigEditor::createKey);
    connect(add, &QPushButton::clicked, this, [this]() {
        const QString name = askText(tr("Add tenant"), tr("Tenant name:"), {});
        if (name.isEmpty() || m_working.tenants.contains(name))
            return;
        config::TenantConfig t;
        t.name = name;
        m_working.tenants.insert(name, t);
        fillList(m_tenants, m_working.tenants.keys());
        m_tenants->setCurrentRow(int(m_working.tenants.keys().indexOf(name)));
        edited();
        this->createKey(); // a tenant without a key cannot call: offer the first one at once
    });
    connect(remove, &QPushButton::clicked, this, [this]() {
        m_working.tenants.remove(selected(m_tenants));
        fillList(m_tenants, m_working.tenants.keys());
        edited();
    });
    return masterDetail(m_tenants, add, remove, m_tenantForm, this);
}

// ---- working copy -> forms ------------------------------------------------------

void ConfigEditor::loadForms() {
    m_loading = true;
    m_listen->setText(m_working.listen);
    m_failoverEnabled->setChecked(m_working.failover.enabled);
    m_deadline->setValue(m_working.failover.deadlineMs);
    m_maxRetryDelay->setValue(m_working.failover.maxRetryDelayMs);
    m_keepalive->setValue(m_working.failover.keepaliveMs);
    fillList(m_providers, m_working.providers.keys());
    fillList(m_models, m_working.models.keys());
    fillList(m_routes, m_working.routes.keys());
    fillList(m_tenants, m_working.tenants.keys());
    m_loading = false;
    loadProvider();
    loadModel();
    loadRoute();
    loadTenant();
}

void ConfigEditor::loadProvider() {
    const QString id = selected(m_providers);
    m_providerForm->setEnabled(m_working.providers.contains(id));
    const config::ProviderConfig p = m_working.providers.value(id);
    m_loading = true;
    m_providerApi->setCurrentText(p.api);
    m_providerUrl->setText(p.baseUrl);
    m_providerUrl->setReadOnly(p.demo);
    m_providerUrl->setToolTip(p.demo ? tr("A simulated provider: its loopback URL is set at start") : QString());
    m_providerRegion->setText(p.region);
    m_providerMaxRetries->setValue(p.maxRetries);
    m_providerRetriesFirst->setValue(p.retriesBeforeFailover);
    m_providerCredentials->clear();
    m_providerCredentials->addItems(p.credentials);
    if (p.credentials.isEmpty() && !id.isEmpty())
        (new QListWidgetItem(tr("(none: requests carry no auth header)"), m_providerCredentials))
            ->setFlags(Qt::NoItemFlags);
    m_loading = false;
}

void ConfigEditor::loadModel() {
    const QString key = selected(m_models);
    m_modelForm->setEnabled(m_working.models.contains(key));
    const config::ModelConfig m = m_working.models.value(key);
    m_loading = true;
    m_modelKind->setCurrentText(m.kind);
    m_modelText->setChecked(m.input.contains(QStringLiteral("text")));
    m_modelImage->setChecked(m.input.contains(QStringLiteral("image")));
    m_modelReasoning->setChecked(m.reasoning);
    m_modelCostIn->setValue(m.costInput);
    m_modelCostOut->setValue(m.costOutput);
    m_modelTier->setText(m.tier);
    m_loading = false;
}

void ConfigEditor::loadRoute() {
    const QString name = selected(m_routes);
    m_routeForm->setEnabled(m_working.routes.contains(name));
    const config::RouteConfig r = m_working.routes.value(name);
    m_loading = true;
    const int row = m_routeCandidates->currentRow();
    m_routeCandidates->clear();
    m_routeCandidates->addItems(r.candidates);
    m_routeCandidates->setCurrentRow(std::min(row, m_routeCandidates->count() - 1));
    m_routePicker->clear();
    for (const QString &key : m_working.models.keys())
        if (!r.candidates.contains(key))
            m_routePicker->addItem(key);
    m_routeAliases->setText(r.aliases.join(QStringLiteral(", ")));
    m_routeCeiling->setValue(r.maxFallbackCostMultiplier.value_or(0));
    m_loading = false;
}

void ConfigEditor::loadTenant() {
    const QString name = selected(m_tenants);
    m_tenantForm->setEnabled(m_working.tenants.contains(name));
    const config::TenantConfig t = m_working.tenants.value(name);
    m_loading = true;
    m_tenantProviders->setText(t.providers.join(QStringLiteral(", ")));
    m_tenantRegions->setText(t.regions.join(QStringLiteral(", ")));
    m_tenantAdmin->setChecked(t.admin);
    m_tenantKeys->setText(t.keyHashes.isEmpty()
                              ? tr("no key yet: this tenant cannot call")
                              : (t.keyHashes.size() == 1 ? tr("1 key, stored as a hash")
                                                         : tr("%1 keys, stored as hashes").arg(t.keyHashes.size())));
    m_loading = false;
}

// ---- edits, validation, save --------------------------------------------------------

void ConfigEditor::edited() {
    if (m_loading)
        return;
    m_dirty = m_working != m_running;
    revalidate();
}

QStringList ConfigEditor::problems() const {
    QStringList out;
    for (int i = 0; i < m_problems->count(); ++i)
        out << m_problems->item(i)->text();
    return out;
}

void ConfigEditor::revalidate() {
    const auto errors = config::validate(m_working);
    m_problems->clear();
    for (const auto &e : errors)
        m_problems->addItem(new QListWidgetItem(StatePalette::dot(HealthState::Error, 10), e.toString()));
    m_problems->setVisible(!errors.isEmpty());
    QString state;
    if (!errors.isEmpty())
        state = (errors.size() == 1 ? tr("1 problem to fix before saving")
                                    : tr("%1 problems to fix before saving").arg(errors.size()));
    else if (m_dirty)
        state = m_path.isEmpty() ? tr("Unsaved changes (demo: applied to the running gateway only)")
                                 : tr("Unsaved changes to %1").arg(m_path);
    else
        state = m_path.isEmpty() ? tr("Running configuration (demo; not saved to a file)")
                                 : tr("Running configuration from %1").arg(m_path);
    m_state->setText(state);
    m_save->setEnabled(m_dirty);
    m_revert->setEnabled(m_dirty);
}

bool ConfigEditor::saveAndApply() {
    const auto errors = config::validate(m_working);
    if (!errors.isEmpty()) {
        revalidate();
        m_state->setText((errors.size() == 1 ? tr("Not saved: 1 problem to fix first")
                                             : tr("Not saved: %1 problems to fix first").arg(errors.size())));
        return false;
    }
    if (!m_path.isEmpty()) {
        QString why;
        if (!config::save(m_path, m_working, &why)) {
            m_state->setText(tr("Not saved: %1").arg(why));
            return false;
        }
        Q_EMIT saved(m_path);
    }
    if (m_commands)
        m_commands->applyConfig(m_working);
    m_running = m_working;
    m_dirty = false;
    revalidate();
    m_state->setText(m_path.isEmpty() ? tr("Applied. In-flight requests finish on the configuration they started with.")
                                      : tr("Saved to %1 and applied. In-flight requests finish on the configuration "
                                           "they started with.")
                                            .arg(m_path));
    Q_EMIT applied();
    return true;
}

void ConfigEditor::revert() {
    m_working = m_running;
    m_dirty = false;
    loadForms();
    revalidate();
}

void ConfigEditor::setKey() {
    const QString id = selected(m_providers);
    if (id.isEmpty() || !m_secrets)
        return;
    const QString name = askText(tr("Set key for %1").arg(id), tr("Keychain entry name:"), id);
    if (name.isEmpty())
        return;
    const QString secret = askSecret(tr("Set key for %1").arg(id), tr("API key (stored in the OS keychain only):"));
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
        if (m_working.providers.contains(id) && !m_working.providers[id].credentials.contains(ref)) {
            m_working.providers[id].credentials << ref;
            edited();
        }
        loadProvider();
        m_keyStatus->setText(tr("<span style='color:%1'>\u2713</span> Stored in the keychain as %2")
                                 .arg(StatePalette::color(HealthState::Healthy).name(), ref));
    });
}

void ConfigEditor::createKey() {
    const QString name = selected(m_tenants);
    if (!m_working.tenants.contains(name))
        return;
    const QString key = credentials::newGatewayKey();
    m_working.tenants[name].keyHashes << credentials::gatewayKeyHash(key);
    edited();
    loadTenant();
    showNewKey(name, key);
}

} // namespace sw::ui
