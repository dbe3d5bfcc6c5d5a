#include "ui/status/status_line.h"

#include "ui/shared/engine_commands.h"

#include <QApplication>
#include <QClipboard>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QStyle>
#include <QTimer>
#include <QToolButton>

namespace sw::ui {

StatusLine::StatusLine(EngineCommands *commands, QWidget *parent) : QFrame(parent), m_commands(commands) {
    setObjectName(QStringLiteral("statusLine"));
    setFrameShape(QFrame::NoFrame);
    setAutoFillBackground(true);
    setBackgroundRole(QPalette::AlternateBase);
    auto *row = new QHBoxLayout(this);
    row->setContentsMargins(10, 6, 10, 6);
    m_stateIcon = new QLabel(this);
    m_stateWord = new QLabel(this);
    m_stateWord->setObjectName(QStringLiteral("stateWord"));
    QFont bold = m_stateWord->font();
    bold.setBold(true);
    m_stateWord->setFont(bold);
    m_url = new QLabel(this);
    m_url->setObjectName(QStringLiteral("baseUrl"));
    m_url->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_copy = new QToolButton(this);
    m_copy->setObjectName(QStringLiteral("copyUrl"));
    m_copy->setText(tr("Copy"));
    m_copy->setToolTip(tr("Copy the base URL for your client's settings"));
    m_rate = new QLabel(this);
    m_rate->setObjectName(QStringLiteral("rate"));
    m_streams = new QLabel(this);
    m_streams->setObjectName(QStringLiteral("streams"));
    m_keys = new QLabel(this);
    m_keys->setObjectName(QStringLiteral("keysParked"));
    m_keys->setToolTip(tr("Provider keys out of use for now: see Marks → Credentials"));
    m_keys->hide();
    m_store = new QLabel(this);
    m_store->setObjectName(QStringLiteral("marksStore"));
    m_store->hide();
    m_pause = new QToolButton(this);
    m_pause->setObjectName(QStringLiteral("pauseButton"));
    m_pause->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    row->addWidget(m_stateIcon);
    row->addWidget(m_stateWord);
    row->addSpacing(8);
    row->addWidget(m_keys);
    row->addWidget(m_store);
    row->addSpacing(8);
    row->addWidget(new QLabel(tr("Serving on"), this));
    row->addWidget(m_url);
    row->addWidget(m_copy);
    row->addStretch(1);
    row->addWidget(m_rate);
    row->addSpacing(16);
    row->addWidget(m_streams);
    row->addSpacing(16);
    row->addWidget(m_pause);
    connect(m_copy, &QToolButton::clicked, this, [this]() {
        QApplication::clipboard()->setText(m_baseUrl);
        m_copy->setText(tr("Copied"));
        QTimer::singleShot(1500, m_copy, [this]() { m_copy->setText(tr("Copy")); });
    });
    connect(m_pause, &QToolButton::clicked, this, [this]() { m_commands->setPaused(!m_paused); });
    connect(commands, &EngineCommands::pausedRequested, this, &StatusLine::setPaused);
    setState(HealthState::Healthy, {});
    setPaused(false);
}

void StatusLine::setPaused(bool paused) {
    m_paused = paused;
    m_pause->setText(paused ? tr("Resume") : tr("Pause"));
    m_pause->setIcon(style()->standardIcon(paused ? QStyle::SP_MediaPlay : QStyle::SP_MediaPause));
    m_pause->setToolTip(paused ? tr("Resume: forward requests again")
                               : tr("Pause: answer every request with 503 until resumed"));
}

void StatusLine::setState(HealthState state, const QString &detail) {
    m_stateIcon->setPixmap(StatePalette::dot(state, 14).pixmap(14, 14));
    m_stateWord->setText(StatePalette::word(state));
    m_stateWord->setToolTip(detail);
    QPalette p = m_stateWord->palette();
    p.setColor(QPalette::WindowText,
               state == HealthState::Healthy ? palette().color(QPalette::WindowText) : StatePalette::color(state));
    m_stateWord->setPalette(p);
}

void StatusLine::setKeysParked(int count) {
    m_keys->setText(count == 1 ? tr("· 1 key out of use") : tr("· %1 keys out of use").arg(count));
    QPalette p = m_keys->palette();
    p.setColor(QPalette::WindowText, StatePalette::color(HealthState::Marks));
    m_keys->setPalette(p);
    m_keys->setVisible(count > 0);
}

void StatusLine::applySnapshot(const snapshot::EngineSnapshot &s) {
    m_baseUrl = s.baseUrl;
    m_url->setText(QStringLiteral("<b>%1</b>").arg(s.baseUrl.toHtmlEscaped()));
    const QLocale locale;
    m_rate->setText(tr("%1 req/min").arg(locale.toString(s.requestsPerMinute)));
    m_streams->setText((s.openStreams == 1 ? tr("1 open stream") : tr("%1 open streams").arg(s.openStreams)));
    setPaused(s.paused);
    // Only a shared store has something to say: where marks go, or that they stay local.
    m_store->setVisible(s.marksStoreShared);
    // Down, the description says why: "local only (Redis unreachable)" or "(Redis not answering)".
    m_store->setText(s.marksStoreUp ? tr("· marks shared") : tr("· marks: %1").arg(s.marksStore));
    m_store->setToolTip(s.marksStore);
    QPalette p = m_store->palette();
    p.setColor(QPalette::WindowText,
               s.marksStoreUp ? palette().color(QPalette::WindowText) : StatePalette::color(HealthState::Marks));
    m_store->setPalette(p);
}

} // namespace sw::ui
