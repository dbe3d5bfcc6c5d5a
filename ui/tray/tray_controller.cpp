#include "ui/tray/tray_controller.h"

#include "ui/shared/ui_resources.h"

#include <QApplication>
#include <QClipboard>
#include <QMenu>
#include <QSystemTrayIcon>

namespace sw::ui {

TrayController::TrayController(QObject *parent) : QObject(parent) {
    m_menu = new QMenu;
    m_menu->setObjectName(QStringLiteral("trayMenu"));
    auto *open = m_menu->addAction(tr("Open dashboard"));
    m_menu->setDefaultAction(open);
    m_pause = m_menu->addAction(tr("Pause proxy"));
    m_clear = m_menu->addAction(tr("Clear all marks"));
    auto *copy = m_menu->addAction(tr("Copy base URL"));
    m_menu->addSeparator();
    auto *quit = m_menu->addAction(tr("Quit Switchman"));
    connect(open, &QAction::triggered, this, &TrayController::openDashboardRequested);
    connect(m_pause, &QAction::triggered, this, [this]() { Q_EMIT pauseToggled(!m_paused); });
    connect(m_clear, &QAction::triggered, this, &TrayController::clearAllMarksRequested);
    connect(copy, &QAction::triggered, this, [this]() { QApplication::clipboard()->setText(m_baseUrl); });
    connect(quit, &QAction::triggered, this, &TrayController::quitRequested);

    m_icon = new QSystemTrayIcon(QIcon(iconPath(HealthState::Healthy)), this);
    m_icon->setContextMenu(m_menu);
    connect(m_icon, &QSystemTrayIcon::activated, this, [this](QSystemTrayIcon::ActivationReason reason) {
        if (reason == QSystemTrayIcon::Trigger || reason == QSystemTrayIcon::DoubleClick)
            Q_EMIT openDashboardRequested();
    });
    setState(HealthState::Healthy, 0, false, {});
}

TrayController::~TrayController() {
    delete m_menu; // a QMenu cannot have a QObject (non-widget) parent
}

QString TrayController::iconPath(HealthState state) {
    ensureUiResources();
    switch (state) {
    case HealthState::Healthy:
        return QStringLiteral(":/icons/tray-healthy.svg");
    case HealthState::Marks:
    case HealthState::Degraded: // the amber dot: something is out of use; the tooltip says what
        return QStringLiteral(":/icons/tray-marks.svg");
    case HealthState::Paused:
        return QStringLiteral(":/icons/tray-paused.svg");
    case HealthState::Error:
        return QStringLiteral(":/icons/tray-error.svg");
    }
    return {};
}

bool TrayController::available() {
    return QSystemTrayIcon::isSystemTrayAvailable();
}

void TrayController::show() {
    if (available())
        m_icon->show();
}

void TrayController::setState(HealthState state, int marks, bool paused, const QString &baseUrl,
                              const QString &detail) {
    const bool iconChanged = state != m_state;
    m_state = state;
    m_paused = paused;
    m_baseUrl = baseUrl;
    m_pause->setText(paused ? tr("Resume proxy") : tr("Pause proxy"));
    m_clear->setText(marks > 0 ? tr("Clear all marks (%1)").arg(marks) : tr("Clear all marks"));
    m_clear->setEnabled(marks > 0);
    if (iconChanged || m_icon->icon().isNull())
        m_icon->setIcon(QIcon(iconPath(state)));
    QString tip = tr("Switchman — %1").arg(StatePalette::word(state));
    if (state == HealthState::Marks)
        tip += (marks == 1 ? tr(": 1 mark") : tr(": %1 marks").arg(marks));
    if (!detail.isEmpty())
        tip += QStringLiteral(" (%1)").arg(detail);
    m_tipBase = tip;
    updateToolTip();
}

void TrayController::setKeysParked(int count) {
    if (count == m_keysParked)
        return;
    m_keysParked = count;
    updateToolTip();
}

void TrayController::updateToolTip() {
    QString tip = m_tipBase;
    if (m_keysParked > 0)
        tip += QLatin1Char('\n') +
               (m_keysParked == 1 ? tr("1 key out of use") : tr("%1 keys out of use").arg(m_keysParked));
    if (!m_baseUrl.isEmpty())
        tip += QLatin1Char('\n') + m_baseUrl;
    m_icon->setToolTip(tip);
}

QString TrayController::toolTip() const {
    return m_icon->toolTip();
}

bool TrayController::notifyKeptRunningOnce() {
    if (m_notified)
        return false;
    m_notified = true;
    m_icon->showMessage(tr("Switchman is still running"),
                        tr("The proxy keeps serving %1. Open the dashboard or quit from the tray icon.").arg(m_baseUrl),
                        QSystemTrayIcon::Information, 5000);
    return true;
}

void TrayController::notifyBudget(const QString &title, const QString &text) {
    m_lastBudgetNotice = text;
    if (m_icon->isVisible())
        m_icon->showMessage(title, text, QSystemTrayIcon::Warning, 10000);
}

} // namespace sw::ui
