#include "ui/config/config_editor.h"

#include "core/config/config_edit.h"
#include "core/config/config_reader.h"
#include "core/config/config_writer.h"
#include "ui/config/general_page.h"
#include "ui/config/models_page.h"
#include "ui/config/new_key_dialog.h"
#include "ui/config/providers_page.h"
#include "ui/config/routes_page.h"
#include "ui/config/tenants_page.h"
#include "ui/shared/engine_commands.h"
#include "ui/shared/state_palette.h"

#include <QFile>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QLockFile>
#include <QPushButton>
#include <QTabWidget>
#include <QVBoxLayout>

namespace sw::ui {

ConfigEditor::ConfigEditor(EngineCommands *commands, credentials::SecretStore *secrets, QWidget *parent)
    : QWidget(parent), m_commands(commands) {
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
    m_dialogs.askText = [this](const QString &title, const QString &label, const QString &initial) {
        return askText(title, label, initial);
    };
    m_dialogs.askSecret = [this](const QString &title, const QString &label) { return askSecret(title, label); };
    m_dialogs.showNewKey = [this](const QString &tenant, const QString &key) { showNewKey(tenant, key); };

    auto *layout = new QVBoxLayout(this);
    m_tabs = new QTabWidget(this);
    addPage(new ProvidersPage(m_working, m_dialogs, commands, secrets, m_tabs), tr("Providers"));
    addPage(new ModelsPage(m_working, m_dialogs, m_tabs), tr("Models"));
    addPage(new RoutesPage(m_working, m_dialogs, m_tabs), tr("Routes"));
    addPage(new TenantsPage(m_working, m_dialogs, m_tabs), tr("Tenants"));
    m_general = new GeneralPage(m_working, m_dialogs, m_tabs);
    addPage(m_general, tr("Listener and failover"));
    // A page shows what other pages changed meanwhile (a route's model picker lists the models).
    connect(m_tabs, &QTabWidget::currentChanged, this, [this](int index) {
        if (index >= 0 && index < m_pages.size())
            m_pages.at(index)->load();
    });
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
    loadPages();
    revalidate();
}

void ConfigEditor::addPage(ConfigPage *page, const QString &title) {
    m_pages.append(page);
    m_tabs->addTab(page, title);
    connect(page, &ConfigPage::edited, this, &ConfigEditor::edited);
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

void ConfigEditor::setListening(const QString &address) {
    if (address == m_listening)
        return;
    m_listening = address;
    revalidate();
}

void ConfigEditor::setListenGiven(const QString &listen) {
    m_listenGiven = listen;
    m_general->setListenGiven(listen);
    if (!listen.isEmpty()) {
        // What the engine runs says it already; a configuration handed over before this was set does not.
        m_running.listen = listen;
        m_loaded.listen = listen;
        m_working.listen = listen;
        loadPages();
    }
    revalidate();
}

void ConfigEditor::setRunningConfig(const config::Config &incoming, quint64 generation) {
    if (generation == m_generation)
        return;
    m_generation = generation;
    config::Config config = incoming;
    if (!m_listenGiven.isEmpty())
        config.listen = m_listenGiven;
    m_running = config;
    if (!m_refused.isEmpty()) { // the engine took a configuration since the refusal: most likely the file's, fixed
        m_refused.clear();
        m_dirty = m_working != m_running;
        revalidate();
    }
    if (m_dirty)
        return; // never throw away the user's edits; Revert picks the new one up
    m_working = config;
    m_loaded = config;
    loadPages();
    revalidate();
}

void ConfigEditor::loadPages() {
    for (ConfigPage *page : std::as_const(m_pages))
        page->load();
}

void ConfigEditor::edited() {
    m_dirty = m_working != m_running || !m_refused.isEmpty();
    revalidate();
}

QStringList ConfigEditor::problems() const {
    QStringList out;
    for (int i = 0; i < m_problems->count(); ++i)
        out << m_problems->item(i)->text();
    return out;
}

QList<config::ValidationError> ConfigEditor::validationErrors() const {
    QList<config::ValidationError> errors = config::validate(m_working);
    if (m_listening.isEmpty() || m_listening == m_working.listen)
        return errors;
    // A `listen` edited here (or in the file) takes effect at the next start; until then the gateway
    // listens where it does, and a configuration without tenants on a listener the network reaches,
    // or with a provider at its address, is refused there as a reload would be.
    config::Config judged = m_working;
    judged.listen = m_listening;
    for (config::ValidationError e : config::validate(judged))
        if (!errors.contains(e)) {
            e.reason = tr("until the next start the gateway listens on %1: %2").arg(m_listening, e.reason);
            errors << e;
        }
    return errors;
}

void ConfigEditor::revalidate() {
    const auto errors = validationErrors();
    m_problems->clear();
    for (const auto &e : errors)
        m_problems->addItem(new QListWidgetItem(StatePalette::dot(HealthState::Error, 10), e.toString()));
    m_problems->setVisible(!errors.isEmpty());
    QString state;
    if (!m_refused.isEmpty()) // said first: what the file holds and what runs now differ
        state = tr("Saved to %1 but not applied: %2. The file holds these changes; the gateway still runs the "
                   "configuration it had (Revert shows it again, and Save then writes it back)")
                    .arg(m_path, m_refused);
    else if (!errors.isEmpty())
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
    const auto errors = validationErrors();
    if (!errors.isEmpty()) {
        revalidate();
        m_state->setText((errors.size() == 1 ? tr("Not saved: 1 problem to fix first")
                                             : tr("Not saved: %1 problems to fix first").arg(errors.size())));
        return false;
    }
    config::Config result = m_working;
    if (!m_path.isEmpty()) {
        QString why;
        std::optional<config::Config> written = writeEdits(&why);
        if (!written) {
            m_state->setText(tr("Not saved: %1").arg(why));
            return false;
        }
        result = std::move(*written);
        Q_EMIT saved(m_path);
    }
    // What the file now says, which may hold more than the edits (a key added to it meanwhile); the
    // listener given on the command line stays what the engine runs and this window judges.
    if (!m_listenGiven.isEmpty())
        result.listen = m_listenGiven;
    if (m_commands)
        m_commands->applyConfig(result, this,
                                [this, previous = m_running, generation = m_generation](const QString &refusal) {
                                    if (refusal.isEmpty() || generation != m_generation)
                                        return; // applied, or the engine has run another configuration since
                                    // The gateway runs what it ran before: that is what the window shows as running and
                                    // what Revert goes back to, and the edits stay unapplied.
                                    m_running = previous;
                                    if (!m_path.isEmpty())
                                        m_refused = refusal;
                                    m_dirty = m_working != m_running || !m_refused.isEmpty();
                                    revalidate();
                                    if (m_path.isEmpty())
                                        m_state->setText(tr("Not applied: %1").arg(refusal));
                                });
    m_refused.clear();
    const bool more = result != m_working;
    m_running = result;
    m_working = result;
    m_loaded = result;
    m_dirty = false;
    if (more)
        loadPages();
    revalidate();
    m_state->setText(m_path.isEmpty() ? tr("Applied. In-flight requests finish on the configuration they started with.")
                                      : tr("Saved to %1 and applied. In-flight requests finish on the configuration "
                                           "they started with.")
                                            .arg(m_path));
    Q_EMIT applied();
    return true;
}

std::optional<config::Config> ConfigEditor::writeEdits(QString *why) {
    // The same lock as `switchman key create`: neither writes back a file that misses the other's change.
    const std::unique_ptr<QLockFile> lock = config::lockConfigFile(m_path, why);
    if (!lock)
        return std::nullopt;
    QFile file(m_path);
    if (!file.exists()) { // nothing to keep: the whole configuration
        if (!config::save(m_path, m_working, why))
            return std::nullopt;
        return m_working;
    }
    if (!file.open(QIODevice::ReadOnly)) {
        *why = tr("cannot read %1: %2").arg(m_path, file.errorString());
        return std::nullopt;
    }
    QString error;
    const QByteArray edited =
        config::withChanges(file.readAll(), config::toJson(m_loaded), config::toJson(m_working), &error);
    file.close();
    if (edited.isEmpty()) {
        *why = tr("%1 is %2 now; fix it in an editor, or move it away to write these settings anew").arg(m_path, error);
        return std::nullopt;
    }
    // Never write a file that would not load again: the file may have changed since it was loaded.
    config::ParseResult check = config::parse(edited);
    if (!check.ok()) {
        QStringList problems;
        for (const auto &e : std::as_const(check.errors))
            problems << e.toString();
        *why = tr("%1 with these changes would not be valid: %2").arg(m_path, problems.join(QStringLiteral("; ")));
        return std::nullopt;
    }
    if (!config::writeConfigFile(m_path, edited, config::WriteMode::Replace, why))
        return std::nullopt;
    return std::move(*check.config);
}

void ConfigEditor::revert() {
    m_working = m_running;
    if (m_refused.isEmpty())
        m_loaded = m_running;
    m_dirty = !m_refused.isEmpty(); // the file still holds the refused configuration: Save writes this one back
    loadPages();
    revalidate();
}

} // namespace sw::ui
