#pragma once
// The admin window (docs/gui.md): status line, optional demo banner, a
// sidebar of seven views (Ctrl+1…7) and the tray. It only reads engine
// snapshots and sends commands through EngineCommands; it never touches an
// engine object: those live on the engine thread (docs/gui.md, "Threads").

#include "core/snapshot/engine_snapshot.h"
#include "ui/shared/state_palette.h"

#include <QMainWindow>
#include <QSet>

class QLabel;
class QListWidget;
class QStackedWidget;
class QTimer;

namespace sw {
class EngineHost;
}
namespace sw::credentials {
class SecretStore;
}

namespace sw::ui {

class AttemptsModel;
class AttemptsView;
class ConfigEditor;
class DashboardView;
class DemoBanner;
class EngineCommands;
class FailuresView;
class LogModel;
class LogView;
class MarksModel;
class MarksView;
class CredentialsModel;
class StatusLine;
class TrayController;
class UsageView;

class MainWindow final : public QMainWindow {
    Q_OBJECT
public:
    enum View { Dashboard, Attempts, Marks, Failures, Usage, Configuration, Log, ViewCount };

    struct Options {
        bool demo = false;
        QString configPath;                          // where Save writes; empty in --demo
        QString listenGiven;                         // --listen: the listener, whatever the file says
        bool tray = true;                            // use the system tray when one exists
        credentials::SecretStore *secrets = nullptr; // "Set key…"; default: the OS keychain
    };

    // host may be null (no engine: commands go nowhere), e.g. in widget tests.
    MainWindow(EngineHost *host, const Options &options, QWidget *parent = nullptr);
    ~MainWindow() override;

    void showView(View view);
    View currentView() const;
    HealthState state() const { return m_state; }

    EngineCommands *commands() const { return m_commands; }
    AttemptsModel *attemptsModel() const { return m_attempts; }
    MarksModel *marksModel() const { return m_marks; }
    CredentialsModel *credentialsModel() const { return m_credentials; }
    StatusLine *statusLine() const { return m_status; }
    LogModel *logModel() const { return m_log; }
    MarksView *marksView() const { return m_marksView; }
    ConfigEditor *configEditor() const { return m_configEditor; }
    TrayController *tray() const { return m_tray; }
    DemoBanner *demoBanner() const { return m_demoBanner; }
    QWidget *viewWidget(View view) const;
    UsageView *usageView() const { return m_usageView; }
    // The budget notice across the top of the window (empty when none or dismissed).
    QString budgetNotice() const;

public Q_SLOTS:
    void applySnapshot(const sw::snapshot::EngineSnapshot &snapshot);
    // The lines the start logged before the first snapshot's publisher listened (Engine::takeEarlyLog).
    void showStartLog(const QList<QJsonObject> &linesOldestFirst);

protected:
    void closeEvent(QCloseEvent *event) override;

private:
    void updateState();
    struct DegradedProviders {
        QStringList keyOut; // a key parked, rejected or unreadable after it was tried
        QStringList noKey;  // a provider a route names with no key left to send (every one missing or out)
    };
    DegradedProviders degradedProviders() const;
    void updateBadge();
    void showBudgetWarning(const telemetry::BudgetState &state);

    EngineCommands *m_commands;
    AttemptsModel *m_attempts;
    MarksModel *m_marks;
    CredentialsModel *m_credentials;
    LogModel *m_log;
    StatusLine *m_status = nullptr;
    DemoBanner *m_demoBanner = nullptr;
    QWidget *m_budgetBanner = nullptr;
    QLabel *m_budgetText = nullptr;
    QListWidget *m_sidebar = nullptr;
    QStackedWidget *m_pages = nullptr;
    DashboardView *m_dashboard = nullptr;
    AttemptsView *m_attemptsView = nullptr;
    MarksView *m_marksView = nullptr;
    FailuresView *m_failuresView = nullptr;
    UsageView *m_usageView = nullptr;
    ConfigEditor *m_configEditor = nullptr;
    LogView *m_logView = nullptr;
    TrayController *m_tray = nullptr;
    QTimer *m_second = nullptr;
    std::unique_ptr<credentials::SecretStore> m_ownedSecrets;
    HealthState m_state = HealthState::Healthy;
    bool m_paused = false;
    qint64 m_lastUnansweredWallMs = 0;
    qint64 m_lastSnapshotWallMs = 0;
    QString m_lastUnansweredReason;
    QString m_baseUrl;
    QSet<QString> m_routedProviders; // named by a route of the running configuration (none known: all count)
    bool m_useTray = true;
};

} // namespace sw::ui
