#include "ui/demo/demo_banner.h"

#include "ui/shared/engine_commands.h"
#include "ui/shared/state_palette.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace sw::ui {

DemoBanner::DemoBanner(EngineCommands *commands, QWidget *parent) : QFrame(parent), m_commands(commands) {
    setObjectName(QStringLiteral("demoBanner"));
    setFrameShape(QFrame::StyledPanel);
    setAutoFillBackground(true);
    setBackgroundRole(QPalette::ToolTipBase);
    setForegroundRole(QPalette::ToolTipText);
    auto *col = new QVBoxLayout(this);
    col->setContentsMargins(10, 4, 10, 4);
    col->setSpacing(2);
    auto *row = new QHBoxLayout;
    auto *title = new QLabel(tr("<b>Demo mode</b> — take a simulated provider down:"), this);
    m_provider = new QComboBox(this);
    m_provider->setObjectName(QStringLiteral("demoProvider"));
    m_fault = new QComboBox(this);
    m_fault->setObjectName(QStringLiteral("demoFault"));
    m_provider->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_fault->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_fault->addItem(tr("refuse connections"), Refuse);
    m_fault->addItem(tr("503 Service Unavailable"), Status503);
    m_fault->addItem(tr("429 with Retry-After 45 s"), RateLimited429);
    m_fault->addItem(tr("stall (no answer)"), Stall);
    m_down = new QPushButton(tr("Take down"), this);
    m_down->setObjectName(QStringLiteral("demoTakeDown"));
    m_back = new QPushButton(tr("Bring back"), this);
    m_back->setObjectName(QStringLiteral("demoBringBack"));
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("demoStatus"));
    m_status->setWordWrap(true);
    row->addWidget(title);
    row->addWidget(m_provider);
    row->addWidget(m_fault);
    row->addWidget(m_down);
    row->addWidget(m_back);
    row->addSpacing(12);
    row->addWidget(m_status, 1);
    col->addLayout(row);
    m_try = new QLabel(this);
    m_try->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_try->setWordWrap(true);
    m_try->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    col->addWidget(m_try);
    connect(m_down, &QPushButton::clicked, this,
            [this]() { takeDown(m_provider->currentText(), FaultChoice(m_fault->currentData().toInt())); });
    connect(m_back, &QPushButton::clicked, this, [this]() { bringBack(m_provider->currentText()); });
    connect(m_provider, &QComboBox::currentIndexChanged, this, &DemoBanner::refreshStatus);
    refreshStatus();
}

void DemoBanner::setProviders(const QStringList &providers) {
    QStringList shown;
    for (int i = 0; i < m_provider->count(); ++i)
        shown << m_provider->itemText(i);
    if (shown == providers)
        return;
    m_provider->clear();
    m_provider->addItems(providers);
    refreshStatus();
}

void DemoBanner::setBaseUrl(const QString &baseUrl) {
    m_try->setText(tr("Try: curl -s %1/v1/chat/completions -H 'content-type: application/json' -d "
                      "'{\"model\":\"demo\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}'")
                       .arg(baseUrl));
}

void DemoBanner::takeDown(const QString &provider, FaultChoice choice) {
    if (provider.isEmpty())
        return;
    demo::Fault f;
    QString words;
    switch (choice) {
    case Refuse:
        f.kind = demo::Fault::Refuse;
        words = tr("refusing connections");
        break;
    case Status503:
        f.kind = demo::Fault::Status;
        f.status = 503;
        words = tr("answering 503");
        break;
    case RateLimited429:
        f.kind = demo::Fault::Status;
        f.status = 429;
        f.retryAfter = "45";
        words = tr("answering 429, Retry-After 45 s");
        break;
    case Stall:
        f.kind = demo::Fault::StallBeforeHeaders;
        words = tr("stalling");
        break;
    }
    m_commands->setDemoFault(provider, f);
    m_outages.insert(provider, words);
    refreshStatus();
}

void DemoBanner::bringBack(const QString &provider) {
    m_commands->setDemoFault(provider, demo::Fault{});
    m_outages.remove(provider);
    refreshStatus();
}

void DemoBanner::refreshStatus() {
    QStringList parts;
    for (auto it = m_outages.cbegin(); it != m_outages.cend(); ++it)
        parts << QStringLiteral("<span style='color:%1'>\u2716</span> <b>%2</b> down (%3)")
                     .arg(StatePalette::color(HealthState::Error).name(), it.key().toHtmlEscaped(), it.value());
    parts.sort();
    m_status->setText(parts.isEmpty() ? tr("<span style='color:%1'>\u25CF</span> all simulated providers up")
                                            .arg(StatePalette::color(HealthState::Healthy).name())
                                      : parts.join(QStringLiteral(" &nbsp; ")));
    m_back->setEnabled(m_outages.contains(m_provider->currentText()));
}

} // namespace sw::ui
