#pragma once
// The configuration screen: a shell of one page per tab (providers, models,
// routes, tenants, listener and failover) over one working copy, the problems
// list and Save/Revert. Every change is validated at once with the same rules
// as the file (config::validate). Save changes in the file only what was
// edited here (config::withChanges, under the file's lock), so comments, layout
// and edits made in the file meanwhile (a `switchman key create`) stay; it
// writes atomically and applies the file's new content to the engine, which
// keeps in-flight requests on the configuration they started with.

#include "core/config/config.h"
#include "core/config/json_path_reader.h"
#include "ui/config/config_page.h"

#include <QList>
#include <QWidget>
#include <functional>
#include <optional>

class QLabel;
class QListWidget;
class QPushButton;
class QTabWidget;

namespace sw::credentials {
class SecretStore;
}

namespace sw::ui {

class EngineCommands;
class GeneralPage;

class ConfigEditor final : public QWidget {
    Q_OBJECT
public:
    ConfigEditor(EngineCommands *commands, credentials::SecretStore *secrets, QWidget *parent = nullptr);

    // Empty path: nothing to save to (--demo); the button then only applies.
    void setConfigPath(const QString &path);
    QString configPath() const { return m_path; }
    // The listener in effect (HOST:PORT): it does not move until a restart, so every edit is judged
    // at it too, as the engine judges what it applies.
    void setListening(const QString &address);
    // Started with --listen: what the engine runs and the window edits keeps that address, whatever
    // the file's `listen` says.
    void setListenGiven(const QString &listen);
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
    void addPage(ConfigPage *page, const QString &title);
    void loadPages(); // working copy -> every page
    void edited();    // a page changed the working copy
    void revalidate();
    QList<config::ValidationError> validationErrors() const; // m_working's, at its listen and at the listener
    // Writes the edits into the file; what it then holds, or nothing with *why.
    std::optional<config::Config> writeEdits(QString *why);

    config::Config m_working;
    config::Config m_running;
    config::Config m_loaded; // what m_working started from: Save writes the difference
    ConfigDialogs m_dialogs; // forwards to the seams above, whatever they are set to later
    EngineCommands *m_commands;
    QString m_path;
    QString m_listening;
    QString m_listenGiven;
    GeneralPage *m_general = nullptr;
    quint64 m_generation = 0;
    bool m_dirty = false;
    // Why the engine refused what Save last wrote: the file holds it, the gateway runs m_running, and
    // the editor stays dirty until a Save is applied (after Revert, that Save writes m_running back).
    QString m_refused;

    QTabWidget *m_tabs = nullptr;
    QList<ConfigPage *> m_pages;
    QListWidget *m_problems = nullptr;
    QLabel *m_state = nullptr;
    QPushButton *m_save = nullptr;
    QPushButton *m_revert = nullptr;
};

} // namespace sw::ui
