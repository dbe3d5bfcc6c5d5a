#include "ui/failures/failures_view.h"

#include "ui/failures/failure_totals_model.h"
#include "ui/shared/axis_ticks.h"
#include "ui/shared/empty_state_stack.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QDateTime>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QStackedBarSeries>
#include <QTableView>
#include <QVBoxLayout>
#include <QValueAxis>

namespace sw::ui {

namespace {
constexpr qint64 kMinuteMs = 60'000;
constexpr int kMinutes = 30;

bool sameMinutes(const QList<snapshot::FailureMinute> &a, const QList<snapshot::FailureMinute> &b) {
    if (a.size() != b.size())
        return false;
    for (qsizetype i = 0; i < a.size(); ++i)
        if (a[i].minuteEpochMs != b[i].minuteEpochMs || a[i].counts != b[i].counts)
            return false;
    return true;
}
} // namespace

FailuresView::FailuresView(QWidget *parent) : QWidget(parent), m_totals(new FailureTotalsModel(this)) {
    auto *content = new QWidget(this);
    auto *layout = new QVBoxLayout(content);
    layout->setContentsMargins(0, 0, 0, 0);
    m_chart = new QChart;
    m_chart->setTitle(tr("Candidate failures per minute, last 30 minutes"));
    m_chart->legend()->setAlignment(Qt::AlignRight);
    m_chart->setBackgroundVisible(false);
    m_chart->setMargins(QMargins(4, 4, 4, 4));
    const bool dark = palette().color(QPalette::Window).lightness() < 128;
    m_chart->setTheme(dark ? QChart::ChartThemeDark : QChart::ChartThemeLight);
    m_chart->setBackgroundVisible(false);
    m_chart->setTitleBrush(palette().brush(QPalette::WindowText));
    m_chart->legend()->setLabelColor(palette().color(QPalette::WindowText));
    m_chartView = new QChartView(m_chart, content);
    m_chartView->setObjectName(QStringLiteral("failuresChart"));
    m_chartView->setRenderHint(QPainter::Antialiasing);
    m_chartView->setMinimumHeight(260);
    layout->addWidget(m_chartView, 3);

    layout->addWidget(new QLabel(tr("<b>Totals since start</b> — the same counter as <code>/metrics</code> "
                                    "switchman_candidate_failures_total"),
                                 content));
    m_table = new QTableView(content);
    m_table->setObjectName(QStringLiteral("failureTotals"));
    m_table->setModel(m_totals);
    m_table->verticalHeader()->hide();
    m_table->setAlternatingRowColors(true);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    layout->addWidget(m_table, 2);

    auto *outer = new QVBoxLayout(this);
    m_stack = new EmptyStateStack(content, tr("No failures — every attempt so far was answered"),
                                  tr("When a candidate fails (refused, 5xx, 429, stalled), it is counted here by "
                                     "provider and kind, per minute."),
                                  this);
    outer->addWidget(m_stack);
}

void FailuresView::applySnapshot(const snapshot::EngineSnapshot &s) {
    m_totals->setTotals(s.failureTotals);
    m_stack->setEmpty(s.failureTotals.isEmpty());
    const qint64 minute = s.wallMs - s.wallMs % kMinuteMs;
    if (minute != m_shownMinute || !sameMinutes(s.failuresByMinute, m_shownMinutes))
        rebuildChart(s.failuresByMinute, s.wallMs);
}

void FailuresView::rebuildChart(const QList<snapshot::FailureMinute> &minutes, qint64 nowWallMs) {
    m_shownMinutes = minutes;
    const qint64 current = nowWallMs - nowWallMs % kMinuteMs;
    m_shownMinute = current;
    m_chart->removeAllSeries();
    for (auto *axis : m_chart->axes())
        m_chart->removeAxis(axis);

    QStringList keys;
    for (const auto &m : minutes)
        for (auto it = m.counts.keyBegin(); it != m.counts.keyEnd(); ++it)
            if (!keys.contains(*it))
                keys << *it;
    keys.sort();
    QStringList categories;
    for (int i = kMinutes - 1; i >= 0; --i)
        categories << QDateTime::fromMSecsSinceEpoch(current - i * kMinuteMs).toString(QStringLiteral("HH:mm"));

    auto *series = new QStackedBarSeries;
    series->setBarWidth(0.8);
    qint64 peak = 1;
    QList<qint64> stack(kMinutes, 0);
    for (const QString &key : std::as_const(keys)) {
        const auto parts = key.split(QChar(0x1f));
        auto *set = new QBarSet(QStringLiteral("%1 · %2").arg(parts.value(0), parts.value(1)));
        for (int i = 0; i < kMinutes; ++i) {
            const qint64 at = current - qint64(kMinutes - 1 - i) * kMinuteMs;
            qint64 n = 0;
            for (const auto &m : minutes)
                if (m.minuteEpochMs == at)
                    n = m.counts.value(key);
            set->append(double(n));
            stack[i] += n;
            peak = std::max(peak, stack[i]);
        }
        series->append(set);
    }
    m_chart->addSeries(series);
    auto *x = new QBarCategoryAxis;
    x->append(categories);
    x->setLabelsAngle(-90);
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.8);
    x->setLabelsFont(small);
    x->setLabelsColor(palette().color(QPalette::WindowText));
    auto *y = new QValueAxis;
    const AxisTicks ticks = axisTicks(double(peak), 5, true);
    y->setRange(0, ticks.max);
    y->setLabelFormat(QStringLiteral("%.0f"));
    y->setTickCount(ticks.tickCount);
    y->setLabelsColor(palette().color(QPalette::WindowText));
    m_chart->addAxis(x, Qt::AlignBottom);
    m_chart->addAxis(y, Qt::AlignLeft);
    series->attachAxis(x);
    series->attachAxis(y);
    m_chart->legend()->setVisible(!keys.isEmpty());
}

QStringList FailuresView::countAxisLabels() const {
    for (auto *axis : m_chart->axes(Qt::Vertical))
        if (auto *y = qobject_cast<QValueAxis *>(axis))
            return axisLabels(y);
    return {};
}

QStringList FailuresView::seriesNames() const {
    QStringList out;
    for (auto *s : m_chart->series())
        if (auto *stacked = qobject_cast<QStackedBarSeries *>(s))
            for (auto *set : stacked->barSets())
                out << set->label();
    return out;
}

} // namespace sw::ui
