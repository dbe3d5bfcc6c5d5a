#include "ui/usage/usage_view.h"

#include "core/util/save_file.h"
#include "ui/shared/axis_ticks.h"
#include "ui/shared/empty_state_stack.h"
#include "ui/shared/engine_commands.h"
#include "ui/shared/plain_tip.h"
#include "ui/usage/usage_model.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QDateTime>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QMessageBox>
#include <QPushButton>
#include <QSaveFile>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>
#include <QValueAxis>

namespace sw::ui {

namespace {
constexpr int kRefreshAfterUsageMs = 2000; // new usage: ask again at most this often

QString money(double usd) {
    return QStringLiteral("$%1").arg(usd, 0, 'f', usd < 1 ? 4 : 2);
}
} // namespace

QDate UsageView::firstDay(Range range, const QDate &today) {
    switch (range) {
    case Day:
        return today;
    case Week:
        return today.addDays(-6);
    case Month:
        return today.addDays(-29);
    }
    return today;
}

UsageView::UsageView(EngineCommands *commands, QWidget *parent)
    : QWidget(parent), m_commands(commands), m_table(new UsageModel(tr("Tenant"), this)) {
    auto *content = new QWidget(this);
    auto *layout = new QVBoxLayout(content);
    layout->setContentsMargins(0, 0, 0, 0);

    auto *controls = new QHBoxLayout;
    m_range = new QComboBox(content);
    m_range->setObjectName(QStringLiteral("usageRange"));
    m_range->addItems({tr("Day (today)"), tr("Week (last 7 days)"), tr("Month (last 30 days)")});
    m_range->setCurrentIndex(Week); // yesterday's spend is on the first screen after a restart
    m_per = new QComboBox(content);
    m_per->setObjectName(QStringLiteral("usagePer"));
    m_per->addItems({tr("per tenant"), tr("per provider"), tr("per model")});
    m_export = new QPushButton(tr("Export CSV…"), content);
    m_export->setObjectName(QStringLiteral("usageExport"));
    m_export->setToolTip(tr("Save the table as shown, as comma-separated values"));
    controls->addWidget(m_range);
    controls->addWidget(m_per);
    controls->addStretch(1);
    controls->addWidget(m_export);
    layout->addLayout(controls);

    m_total = new QLabel(content);
    m_total->setObjectName(QStringLiteral("usageTotal"));
    m_total->setWordWrap(true); // the stacked pages share one minimum width: never let a sentence set it
    layout->addWidget(m_total);
    m_budgets = new QLabel(content);
    m_budgets->setObjectName(QStringLiteral("usageBudgets"));
    m_budgets->setTextFormat(Qt::RichText);
    m_budgets->setWordWrap(true); // fifteen budgeted tenants made the window 5380 px wide
    m_budgets->hide();
    layout->addWidget(m_budgets);

    m_chart = new QChart;
    m_chart->setTitle(tr("Cost per day (USD)"));
    m_chart->legend()->hide();
    m_chart->setMargins(QMargins(4, 4, 4, 4));
    const bool dark = palette().color(QPalette::Window).lightness() < 128;
    m_chart->setTheme(dark ? QChart::ChartThemeDark : QChart::ChartThemeLight);
    m_chart->setBackgroundVisible(false);
    m_chart->setTitleBrush(palette().brush(QPalette::WindowText));
    auto *series = new QBarSeries;
    m_costSet = new QBarSet(tr("Cost"));
    m_costSet->setColor(palette().color(QPalette::Highlight));
    series->append(m_costSet);
    series->setBarWidth(0.7);
    m_chart->addSeries(series);
    m_dayAxis = new QBarCategoryAxis;
    m_dayAxis->setLabelsColor(palette().color(QPalette::WindowText));
    m_costAxis = new QValueAxis;
    m_costAxis->setLabelFormat(QStringLiteral("$%.2f"));
    m_costAxis->setLabelsColor(palette().color(QPalette::WindowText));
    m_chart->addAxis(m_dayAxis, Qt::AlignBottom);
    m_chart->addAxis(m_costAxis, Qt::AlignLeft);
    series->attachAxis(m_dayAxis);
    series->attachAxis(m_costAxis);
    m_chartView = new QChartView(m_chart, content);
    m_chartView->setObjectName(QStringLiteral("usageChart"));
    m_chartView->setRenderHint(QPainter::Antialiasing);
    m_chartView->setMinimumHeight(220);
    layout->addWidget(m_chartView, 3);

    auto *table = new QTableView(content);
    table->setObjectName(QStringLiteral("usageTable"));
    table->setModel(m_table);
    table->verticalHeader()->hide();
    table->setAlternatingRowColors(true);
    table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    layout->addWidget(table, 2);
    auto *note = new QLabel(tr("Costs use the per-million-token prices in the configuration's models. Attempts that "
                               "failed after streaming count too. Kept across restarts in the usage ledger."),
                            content);
    note->setWordWrap(true);
    layout->addWidget(note);

    auto *outer = new QVBoxLayout(this);
    m_stack = new EmptyStateStack(content, tr("No usage yet"),
                                  tr("Token counts and cost appear here per day, tenant, provider and model once an "
                                     "upstream reports usage. Set model prices under Configuration → Models."),
                                  this);
    outer->addWidget(m_stack);
    m_stack->setEmpty(true);

    m_refreshSoon = new QTimer(this);
    m_refreshSoon->setSingleShot(true);
    m_refreshSoon->setInterval(kRefreshAfterUsageMs);
    connect(m_refreshSoon, &QTimer::timeout, this, &UsageView::refresh);
    connect(m_range, &QComboBox::currentIndexChanged, this, &UsageView::refresh);
    connect(m_per, &QComboBox::currentIndexChanged, this, &UsageView::refresh);
    connect(m_export, &QPushButton::clicked, this, [this]() {
        const QString name = QStringLiteral("switchman-usage-%1.csv").arg(QDate::currentDate().toString(Qt::ISODate));
        const QString path =
            QFileDialog::getSaveFileName(this, tr("Export usage as CSV"), name, tr("CSV files (*.csv)"));
        if (path.isEmpty())
            return;
        QString error;
        if (!exportCsv(path, &error))
            QMessageBox::warning(this, tr("Export CSV"), error);
    });
}

void UsageView::setRange(Range range) {
    m_range->setCurrentIndex(range); // refreshes when it changes
}

void UsageView::setPer(Per per) {
    m_per->setCurrentIndex(per);
}

void UsageView::showEvent(QShowEvent *event) {
    QWidget::showEvent(event);
    refresh();
}

void UsageView::refresh() {
    m_refreshSoon->stop();
    if (!m_commands)
        return;
    const quint64 generation = ++m_generation;
    const QDate today = QDate::currentDate();
    const Range range = Range(m_range->currentIndex());
    telemetry::UsageQuery q;
    q.sinceMs = firstDay(range, today).startOfDay().toMSecsSinceEpoch();
    m_days.clear();
    for (QDate d = firstDay(range, today); d <= today; d = d.addDays(1))
        m_days << d.toString(Qt::ISODate);
    static const telemetry::UsageGrouping per[] = {telemetry::UsageGrouping::Tenant, telemetry::UsageGrouping::Provider,
                                                   telemetry::UsageGrouping::Model};
    q.groupBy = per[std::clamp(m_per->currentIndex(), 0, 2)];
    m_commands->queryUsage(q, this, [this, generation](const telemetry::UsageReport &r) {
        if (generation == m_generation)
            applyTable(r);
    });
    q.groupBy = telemetry::UsageGrouping::Day;
    m_commands->queryUsage(q, this, [this, generation](const telemetry::UsageReport &r) {
        if (generation == m_generation)
            applyDaily(r);
    });
}

void UsageView::applyTable(const telemetry::UsageReport &report) {
    m_tableReport = report;
    static const char *titles[] = {QT_TR_NOOP("Tenant"), QT_TR_NOOP("Provider"), QT_TR_NOOP("Model")};
    m_table->setKeyTitle(tr(titles[std::clamp(m_per->currentIndex(), 0, 2)]));
    QMap<QString, snapshot::UsageTotals> totals;
    // Past the ledger's bound on groups (a client can name any number of models), the rest are one row.
    for (const auto &g : report.groups)
        totals.insert(g.otherGroups > 0 ? tr("(%n other(s))", nullptr, int(std::min<qint64>(g.otherGroups, 1000000000)))
                      : g.key.isEmpty() ? tr("(none)")
                                        : g.key,
                      snapshot::UsageTotals{g.attempts, g.input, g.output, g.cacheRead, g.cacheWrite, g.cost});
    m_table->setTotals(totals);
    const QLocale locale;
    const auto &t = report.totals;
    m_total->setText(tr("<b>%1:</b> %2 attempts · %3 input · %4 output tokens · %5 cache read · <b>%6</b>%7")
                         .arg(m_range->currentText(), locale.toString(t.attempts), locale.toString(t.input),
                              locale.toString(t.output), locale.toString(t.cacheRead), money(t.cost),
                              report.error.isEmpty() ? QString()
                                                     : QStringLiteral(" <span style='color:#b35c00'>(%1)</span>")
                                                           .arg(peerText(report.error).toHtmlEscaped())));
    m_stack->setEmpty(t.attempts == 0 && m_budgets->isHidden());
    ++m_answers;
}

void UsageView::applyDaily(const telemetry::UsageReport &report) {
    m_dailyReport = report;
    QHash<QString, double> byDay;
    for (const auto &g : report.groups)
        byDay.insert(g.key, g.cost);
    m_costSet->remove(0, m_costSet->count());
    QStringList labels;
    double peak = 0;
    for (const QString &day : std::as_const(m_days)) {
        const double cost = byDay.value(day);
        m_costSet->append(cost);
        peak = std::max(peak, cost);
        labels << QDate::fromString(day, Qt::ISODate)
                      .toString(m_days.size() > 10 ? QStringLiteral("d") : QStringLiteral("ddd d MMM"));
    }
    m_dayAxis->clear();
    m_dayAxis->append(labels);
    const AxisTicks ticks = axisTicks(peak);
    m_costAxis->setRange(0, ticks.max);
    m_costAxis->setTickCount(ticks.tickCount);
    // Cents at least once under a dollar a step: "$0.10", not "$0.1".
    m_costAxis->setLabelFormat(QStringLiteral("$%.%1f").arg(ticks.decimals == 0 ? 0 : std::max(2, ticks.decimals)));
    ++m_answers;
}

QStringList UsageView::chartDays() const {
    return m_days;
}

QStringList UsageView::costAxisLabels() const {
    return axisLabels(m_costAxis);
}

QList<double> UsageView::chartCosts() const {
    QList<double> out;
    for (int i = 0; i < m_costSet->count(); ++i)
        out << m_costSet->at(i);
    return out;
}

void UsageView::updateBudgets(const QList<telemetry::BudgetState> &budgets) {
    if (budgets.isEmpty()) {
        m_budgets->hide();
        return;
    }
    QStringList lines;
    for (const auto &b : budgets) {
        const int percent = b.usd > 0 ? int(std::lround(100.0 * b.spent / b.usd)) : 100;
        const QString color = b.reached()     ? QStringLiteral("#c0392b")
                              : percent >= 80 ? QStringLiteral("#b35c00")
                                              : QString();
        QString line = tr("<b>%1</b>: $%2 of %3 (%4 %)")
                           .arg(peerText(b.tenant).toHtmlEscaped())
                           .arg(b.spent, 0, 'f', 2)
                           .arg(telemetry::budgetDescription(b))
                           .arg(percent);
        if (b.reached())
            line += tr(" — requests refused until %1")
                        .arg(QDateTime::fromMSecsSinceEpoch(b.periodEndMs).toString(QStringLiteral("ddd d MMM HH:mm")));
        lines << (color.isEmpty() ? line : QStringLiteral("<span style='color:%1'>%2</span>").arg(color, line));
    }
    m_budgets->setText(tr("Budgets: ") + lines.join(QStringLiteral(" · ")));
    m_budgets->show();
    m_stack->setEmpty(false); // the budgets are worth seeing before any usage (as applyTable decides too)
}

void UsageView::applySnapshot(const snapshot::EngineSnapshot &s) {
    updateBudgets(s.budgets);
    qint64 attempts = 0;
    for (const auto &t : s.usageByTenant)
        attempts += t.attempts;
    // New usage since the last look: ask the ledger again, at most every couple of seconds (hidden too:
    // the sidebar's empty state and the first look after a restart need the answer).
    if (attempts != m_seenAttempts) {
        const bool first = m_seenAttempts < 0;
        m_seenAttempts = attempts;
        if (first)
            refresh();
        else if (!m_refreshSoon->isActive())
            m_refreshSoon->start();
    }
}

bool UsageView::exportCsv(const QString &path, QString *error) const {
    QSaveFile file(path);
    // A failed write (disk full) is reported, never an empty or partial file in place of the old one.
    QString reason;
    if (!file.open(QIODevice::WriteOnly | QIODevice::Unbuffered))
        reason = file.errorString();
    else if (util::writeAndCommit(file, m_tableReport.toCsv().toUtf8(), &reason))
        return true;
    if (error)
        *error = tr("Cannot write %1: %2").arg(path, reason);
    return false;
}

} // namespace sw::ui
