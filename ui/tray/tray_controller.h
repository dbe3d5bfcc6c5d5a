#pragma once
// The tray icon (docs/gui.md): one monochrome glyph plus a state dot —
// healthy (no dot), marks present (amber), paused (grey), error (red) — a
// tooltip that says the same in words with the URL, and the menu Open dashboard
// / Pause-Resume / Clear all marks / Copy base URL / Quit.

#include "ui/shared/state_palette.h"

#include <QObject>

class QAction;
class QMenu;
class QSystemTrayIcon;

namespace sw::ui {

class TrayController final : public QObject {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(TrayController)
public:
    explicit TrayController(QObject *parent = nullptr);
    ~TrayController() override;

    static QString iconPath(HealthState state); // ":/icons/tray-….svg"
    static bool available();                    // a system tray exists

    void show();
    void setState(HealthState state, int marks, bool paused, const QString &baseUrl, const QString &detail = {});
    HealthState state() const { return m_state; }
    // The tooltip adds "1 key out of use" while a provider key is out of use.
    void setKeysParked(int count);
    QString toolTip() const;
    QMenu *menu() const { return m_menu; }
    QSystemTrayIcon *icon() const { return m_icon; }
    // "Switchman keeps running in the tray" — shown the first time only. Returns whether it showed it now.
    bool notifyKeptRunningOnce();
    // A tenant reached 80 % of its budget (the engine sends each notice once per period). Shown as a
    // tray message when the icon is up; the text is kept for the tooltip-less case and for tests.
    void notifyBudget(const QString &title, const QString &text);
    QString lastBudgetNotice() const { return m_lastBudgetNotice; }

Q_SIGNALS:
    void openDashboardRequested();
    void pauseToggled(bool paused); // the new state asked for
    void clearAllMarksRequested();
    void quitRequested();

private:
    QSystemTrayIcon *m_icon = nullptr;
    QMenu *m_menu = nullptr;
    QAction *m_pause = nullptr;
    QAction *m_clear = nullptr;
    HealthState m_state = HealthState::Healthy;
    bool m_paused = false;
    bool m_notified = false;
    QString m_baseUrl;
    QString m_tipBase; // the state line, before the keys and the URL
    int m_keysParked = 0;
    QString m_lastBudgetNotice;
    void updateToolTip();
};

} // namespace sw::ui
