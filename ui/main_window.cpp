#include "ui/main_window.h"

#include "core/credentials/keychain_store.h"
#include "ui/attempts/attempts_model.h"
#include "ui/attempts/attempts_view.h"
#include "ui/config/config_editor.h"
#include "ui/dashboard/dashboard_view.h"
#include "ui/demo/demo_banner.h"
#include "ui/failures/failures_view.h"
#include "ui/log/log_model.h"
#include "ui/log/log_view.h"
#include "ui/marks/credentials_model.h"
#include "ui/marks/marks_model.h"
#include "ui/marks/marks_view.h"
#include "ui/shared/engine_commands.h"
#include "ui/shared/sidebar_delegate.h"
#include "ui/shared/ui_resources.h"
#include "ui/status/status_line.h"
#include "ui/tray/tray_controller.h"
#include "ui/usage/usage_view.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDateTime>
#include <QFile>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QShortcut>
#include <QStackedWidget>
#include <QSystemTrayIcon>
#include <QTimer>
#include <QVBoxLayout>

namespace sw::ui {

namespace {
constexpr qint64 kErrorWindowMs = 60'000; // "requests failing" while one went unanswered in the last minute
}

MainWindow::MainWindow(EngineHost *host, const Options &options, QWidget *parent)
    : QMainWindow(parent), m_commands(new EngineCommands(host, this)), m_attempts(new AttemptsModel(5000, this)),
      m_marks(new MarksModel(this)), m_credentials(new CredentialsModel(this)), m_log(new LogModel(5000, this)),
      m_useTray(options.tray) {
    ensureUiResources();
    setWindowTitle(options.demo ? tr("Switchman (demo)") : tr("Switchman"));
    const QString appIcon = QFile::exists(QStringLiteral(":/icons/switchman.svg"))
                                ? QStringLiteral(":/icons/switchman.svg")
                                : TrayController::iconPath(HealthState::Healthy);
    setWindowIcon(QIcon(appIcon));

    credentials::SecretStore *secrets = options.secrets;
    if (!secrets) {
        m_ownedSecrets = std::make_unique<credentials::KeychainStore>();
        secrets = m_ownedSecrets.get();
    }

    auto *central = new QWidget(this);
    auto *column = new QVBoxLayout(central);
    column->setContentsMargins(0, 0, 0, 0);
    column->setSpacing(0);
    m_status = new StatusLine(m_commands, central);
    column->addWidget(m_status);
    if (options.demo) {
        m_demoBanner = new DemoBanner(m_commands, central);
        column->addWidget(m_demoBanner);
    }
    // A tenant at 80 % of its budget: said here until dismissed, and once in the tray.
    m_budgetBanner = new QWidget(central);
    m_budgetBanner->setObjectName(QStringLiteral("budgetBanner"));
    m_budgetBanner->setAutoFillBackground(true);
    QPalette warm = m_budgetBanner->palette();
    warm.setColor(QPalette::Window, QColor(0xfd, 0xf0, 0xd5));
    warm.setColor(QPalette::WindowText, QColor(0x5c, 0x3b, 0x00));
    m_budgetBanner->setPalette(warm);
    auto *bannerRow = new QHBoxLayout(m_budgetBanner);
    bannerRow->setContentsMargins(10, 4, 6, 4);
    m_budgetText = new QLabel(m_budgetBanner);
    m_budgetText->setWordWrap(true);
    bannerRow->addWidget(m_budgetText, 1);
    auto *usageLink = new QPushButton(tr("Open Usage"), m_budgetBanner);
    auto *dismiss = new QPushButton(tr("Dismiss"), m_budgetBanner);
    bannerRow->addWidget(usageLink);
    bannerRow->addWidget(dismiss);
    connect(usageLink, &QPushButton::clicked, this, [this]() { showView(Usage); });
    connect(dismiss, &QPushButton::clicked, m_budgetBanner, &QWidget::hide);
    m_budgetBanner->hide();
    column->addWidget(m_budgetBanner);

    auto *row = new QHBoxLayout;
    row->setContentsMargins(0, 0, 0, 0);
    row->setSpacing(0);
    m_sidebar = new QListWidget(central);
    m_sidebar->setObjectName(QStringLiteral("sidebar"));
    m_sidebar->setItemDelegate(new SidebarDelegate(m_sidebar));
    m_sidebar->setFrameShape(QFrame::NoFrame);
    m_sidebar->setBackgroundRole(QPalette::Window);
    m_sidebar->setAutoFillBackground(true);
    const QStringList names{tr("Dashboard"), tr("Attempts"),      tr("Marks"), tr("Failures"),
                            tr("Usage"),     tr("Configuration"), tr("Log")};
    for (int i = 0; i < names.size(); ++i) {
        auto *item = new QListWidgetItem(names[i], m_sidebar);
        item->setToolTip(tr("%1 (Ctrl+%2)").arg(names[i]).arg(i + 1));
    }
    m_sidebar->setFixedWidth(m_sidebar->sizeHintForColumn(0) + 24);
    row->addWidget(m_sidebar);

    m_pages = new QStackedWidget(central);
    m_dashboard = new DashboardView(m_attempts, m_marks, m_commands, m_pages, m_credentials);
    m_attemptsView = new AttemptsView(m_attempts, m_pages);
    m_marksView = new MarksView(m_marks, m_commands, m_pages, m_credentials);
    m_failuresView = new FailuresView(m_pages);
    m_usageView = new UsageView(m_commands, m_pages);
    m_configEditor = new ConfigEditor(m_commands, secrets, m_pages);
    m_configEditor->setConfigPath(options.demo ? QString() : options.configPath);
    m_configEditor->setListenGiven(options.listenGiven);
    m_logView = new LogView(m_log, m_pages);
    for (QWidget *w : std::initializer_list<QWidget *>{m_dashboard, m_attemptsView, m_marksView, m_failuresView,
                                                       m_usageView, m_configEditor, m_logView}) {
        w->layout()->setContentsMargins(12, 10, 12, 10);
        m_pages->addWidget(w);
    }
    row->addWidget(m_pages, 1);
    column->addLayout(row, 1);
    setCentralWidget(central);

    connect(m_sidebar, &QListWidget::currentRowChanged, m_pages, &QStackedWidget::setCurrentIndex);
    for (int i = 0; i < ViewCount; ++i) {
        auto *shortcut = new QShortcut(QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + i)), this);
        connect(shortcut, &QShortcut::activated, this, [this, i]() { showView(View(i)); });
    }
    connect(m_dashboard, &DashboardView::requestActivated, this, [this](const QString &id) {
        m_attemptsView->showRequest(id);
        showView(Attempts);
    });
    connect(m_marks, &MarksModel::countChanged, this, [this]() {
        updateBadge();
        updateState(); // the tray answers a clear at once, before the engine's next snapshot
    });
    connect(m_credentials, &CredentialsModel::parkedCountChanged, this, [this]() {
        updateBadge();
        updateState();
    });
    connect(m_commands, &EngineCommands::pausedRequested, this, [this](bool paused) {
        m_paused = paused;
        updateState();
    });

    // Countdowns and "12 s ago" move every second on the GUI's own clock.
    m_second = new QTimer(this);
    m_second->setInterval(1000);
    connect(m_second, &QTimer::timeout, m_marks, &MarksModel::tick);
    connect(m_second, &QTimer::timeout, m_credentials, &CredentialsModel::tick);
    connect(m_second, &QTimer::timeout, this, &MainWindow::updateState);
    m_second->start();

    m_tray = new TrayController(this);
    connect(m_tray, &TrayController::openDashboardRequested, this, [this]() {
        showNormal();
        raise();
        activateWindow();
        showView(Dashboard);
    });
    connect(m_tray, &TrayController::pauseToggled, m_commands, &EngineCommands::setPaused);
    connect(m_tray, &TrayController::clearAllMarksRequested, this, [this]() {
        showNormal(); // the one confirmation needs a visible parent
        m_marksView->clearAll();
    });
    connect(m_tray, &TrayController::quitRequested, qApp, &QCoreApplication::quit);
    if (m_useTray && TrayController::available()) {
        m_tray->show();
        QApplication::setQuitOnLastWindowClosed(false); // dialogs closing must not end the tray's process
    }

    m_sidebar->setCurrentRow(Dashboard);
    resize(1180, 720);
    updateBadge();
    updateState();
}

MainWindow::~MainWindow() = default;

QWidget *MainWindow::viewWidget(View view) const {
    return m_pages->widget(view);
}

void MainWindow::showView(View view) {
    m_sidebar->setCurrentRow(view);
}

MainWindow::View MainWindow::currentView() const {
    return View(m_pages->currentIndex());
}

void MainWindow::applySnapshot(const snapshot::EngineSnapshot &s) {
    m_baseUrl = s.baseUrl;
    m_paused = s.paused;
    m_lastUnansweredWallMs = s.lastUnansweredWallMs;
    m_lastUnansweredReason = s.lastUnansweredReason;
    m_lastSnapshotWallMs = s.wallMs;
    m_attempts->append(s.newAttempts);
    m_marks->applySnapshot(s.marks, s.wallMs);
    m_marksView->setStore(s.marksStore, s.marksStoreShared, s.marksStoreUp);
    if (s.config) {
        m_routedProviders.clear();
        for (const auto &route : s.config->routes)
            for (const QString &candidate : route.candidates)
                m_routedProviders.insert(candidate.section(QLatin1Char('/'), 0, 0));
    }
    m_credentials->applySnapshot(s.credentials, s.wallMs);
    m_log->append(s.newLogLines);
    m_status->applySnapshot(s);
    m_dashboard->applySnapshot(s);
    m_failuresView->applySnapshot(s);
    m_usageView->applySnapshot(s);
    for (const auto &warning : s.newBudgetWarnings)
        showBudgetWarning(warning);
    m_attemptsView->setBaseUrl(s.baseUrl);
    m_configEditor->setListening(s.baseUrl.section(QStringLiteral("://"), 1));
    if (s.config)
        m_configEditor->setRunningConfig(*s.config, s.configGeneration);
    if (m_demoBanner) {
        m_demoBanner->setProviders(s.demoProviders);
        m_demoBanner->setBaseUrl(s.baseUrl);
    }
    updateState();
}

void MainWindow::showStartLog(const QList<QJsonObject> &linesOldestFirst) {
    m_log->append(linesOldestFirst);
}

void MainWindow::showBudgetWarning(const telemetry::BudgetState &b) {
    const int percent = b.usd > 0 ? int(100.0 * b.spent / b.usd) : 100;
    const QString text = tr("Tenant %1 has spent $%2 of its budget of %3 (%4 %). At 100 % its requests get 429 until "
                            "the %5 resets.")
                             .arg(b.tenant)
                             .arg(b.spent, 0, 'f', 2)
                             .arg(telemetry::budgetDescription(b))
                             .arg(percent)
                             .arg(b.period);
    m_budgetText->setText(QStringLiteral("<b>%1</b> %2").arg(tr("Budget:"), text.toHtmlEscaped()));
    m_budgetBanner->show();
    m_tray->notifyBudget(tr("Switchman: %1 at %2 % of its budget").arg(b.tenant).arg(percent), text);
}

QString MainWindow::budgetNotice() const {
    return m_budgetBanner->isVisible() || !m_budgetBanner->isHidden() ? m_budgetText->text() : QString();
}

void MainWindow::updateBadge() {
    auto *item = m_sidebar->item(Marks);
    const int n = m_marks->rowCount();
    const int keys = m_credentials->parkedCount();
    item->setData(SidebarDelegate::BadgeRole, n + keys); // the Marks screen shows both tables
    QString tip = n > 0 ? tr("Marks: %1 active").arg(n) : tr("Marks");
    if (keys > 0)
        tip += keys == 1 ? tr(", 1 key out of use") : tr(", %1 keys out of use").arg(keys);
    item->setToolTip(tip + tr(" (Ctrl+3)"));
}

MainWindow::DegradedProviders MainWindow::degradedProviders() const {
    // By provider, in the order the credentials come: whether a key was taken out of use and
    // whether one is left to send.
    QStringList providers;
    QSet<QString> takenOut, usable;
    for (int row = 0; row < m_credentials->rowCount(); ++row) {
        const QString &p = m_credentials->at(row).provider;
        if (!providers.contains(p))
            providers << p;
        switch (m_credentials->stateAt(row)) {
        case credentials::CredentialHealth::Ok:
            usable << p;
            break;
        case credentials::CredentialHealth::Parked:
        case credentials::CredentialHealth::Rejected:
        case credentials::CredentialHealth::Unavailable:
            takenOut << p;
            break;
        case credentials::CredentialHealth::Missing:
            // An unset env: reference is skipped by every request, by design: the starter config puts
            // one before each keychain key. It says nothing about the provider while a key follows.
            break;
        }
    }
    DegradedProviders out;
    for (const QString &p : std::as_const(providers)) {
        if (takenOut.contains(p))
            out.keyOut << p;
        else if (!usable.contains(p) && (m_routedProviders.isEmpty() || m_routedProviders.contains(p)))
            out.noKey << p; // a provider no route names sends nothing elsewhere
    }
    return out;
}

void MainWindow::updateState() {
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    const int marks = m_marks->rowCount();
    QString detail;
    HealthState state = HealthState::Healthy;
    if (m_paused) {
        state = HealthState::Paused;
        detail = tr("requests are answered 503 until resumed");
    } else if (m_lastUnansweredWallMs > 0 && now - m_lastUnansweredWallMs < kErrorWindowMs) {
        state = HealthState::Error;
        detail = tr("a request got no answer from any candidate (%1)").arg(m_lastUnansweredReason);
    } else if (marks > 0) {
        state = HealthState::Marks;
        detail = (marks == 1 ? tr("1 candidate marked down") : tr("%1 candidates marked down").arg(marks));
    } else if (const DegradedProviders out = degradedProviders(); !out.keyOut.isEmpty() || !out.noKey.isEmpty()) {
        // Nothing reroutes silently: a parked key sends its provider's requests to the pool's next
        // key or the next candidate, for days after a spend limit, while the word said "Healthy"
        // (probe AB4 F2); a provider with no key to send is passed over by every route that names it.
        state = HealthState::Degraded;
        QStringList parts;
        if (!out.keyOut.isEmpty())
            parts << tr("a key of %1 is out of use: requests go to the pool's next key or the next candidate")
                         .arg(out.keyOut.join(QStringLiteral(", ")));
        if (!out.noKey.isEmpty())
            parts << tr("%1 has no usable key: requests go to the next candidate")
                         .arg(out.noKey.join(QStringLiteral(", ")));
        detail = parts.join(QStringLiteral("; "));
    }
    m_state = state;
    m_status->setState(state, detail);
    m_tray->setState(state, marks, m_paused, m_baseUrl, detail);
    const int keys = m_credentials->parkedCount();
    m_status->setKeysParked(keys);
    m_tray->setKeysParked(keys);
}

void MainWindow::closeEvent(QCloseEvent *event) {
    if (m_useTray && TrayController::available() && m_tray->icon()->isVisible()) {
        // The proxy keeps running in the tray; say so the first time.
        hide();
        m_tray->notifyKeptRunningOnce();
        event->ignore();
        return;
    }
    event->accept();
    QCoreApplication::quit(); // no tray: closing the window ends Switchman, as any window would
}

} // namespace sw::ui
