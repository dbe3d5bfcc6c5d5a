#pragma once
// Failures screen: candidate failures per minute over the last 30 minutes,
// stacked by provider × kind (Qt Charts), and the totals since start, which
// are the /metrics counter switchman_candidate_failures_total.

#include "core/snapshot/engine_snapshot.h"

#include <QWidget>

class QChart;
class QChartView;
class QTableView;

namespace sw::ui {

class FailureTotalsModel;
class EmptyStateStack;

class FailuresView final : public QWidget {
    Q_OBJECT
public:
    explicit FailuresView(QWidget *parent = nullptr);
    void applySnapshot(const snapshot::EngineSnapshot &snapshot);
    FailureTotalsModel *totals() const { return m_totals; }
    // Series names currently charted ("provider · kind"), for tests.
    QStringList seriesNames() const;
    QStringList countAxisLabels() const; // the count axis's tick labels, bottom first

private:
    void rebuildChart(const QList<snapshot::FailureMinute> &minutes, qint64 nowWallMs);

    FailureTotalsModel *m_totals;
    QChart *m_chart = nullptr;
    QChartView *m_chartView = nullptr;
    QTableView *m_table = nullptr;
    EmptyStateStack *m_stack = nullptr;
    QList<snapshot::FailureMinute> m_shownMinutes;
    qint64 m_shownMinute = 0;
};

} // namespace sw::ui
