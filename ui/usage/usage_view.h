#pragma once
// Usage screen: tokens and cost from the usage ledger over the last
// day, week or month (calendar days in local time, today included), per tenant,
// provider or model; a bar chart of cost per day; each budget's spend in its
// period; "Export CSV…" of the table as shown. Asks the engine through
// EngineCommands (the ledger answers on its own thread) and refreshes when
// snapshots show new usage.

#include "core/snapshot/engine_snapshot.h"
#include "core/telemetry/usage_report.h"

#include <QWidget>

class QBarCategoryAxis;
class QBarSet;
class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QPushButton;
class QTimer;
class QValueAxis;

namespace sw::ui {

class EngineCommands;
class EmptyStateStack;
class UsageModel;

class UsageView final : public QWidget {
    Q_OBJECT
public:
    enum Range { Day, Week, Month };
    enum Per { PerTenant, PerProvider, PerModel };

    explicit UsageView(EngineCommands *commands, QWidget *parent = nullptr);
    void applySnapshot(const snapshot::EngineSnapshot &snapshot);

    void setRange(Range range);
    void setPer(Per per);
    // Asks the ledger again now (also on show, on a range or grouping change, and after new usage).
    void refresh();
    // Writes the table as shown; false with *error when the file cannot be written.
    bool exportCsv(const QString &path, QString *error = nullptr) const;

    UsageModel *table() const { return m_table; }
    const telemetry::UsageReport &tableReport() const { return m_tableReport; }
    const telemetry::UsageReport &dailyReport() const { return m_dailyReport; }
    QStringList chartDays() const;                // the bar categories, oldest first
    QList<double> chartCosts() const;             // cost per bar
    QStringList costAxisLabels() const;           // the cost axis's tick labels, bottom first
    quint64 answers() const { return m_answers; } // ledger answers applied (tests wait on it)

    // The window's first day, local midnight; the range ends now.
    static QDate firstDay(Range range, const QDate &today);

protected:
    void showEvent(QShowEvent *event) override;

private:
    void applyTable(const telemetry::UsageReport &report);
    void applyDaily(const telemetry::UsageReport &report);
    void updateBudgets(const QList<telemetry::BudgetState> &budgets);

    EngineCommands *m_commands;
    UsageModel *m_table;
    QComboBox *m_range = nullptr;
    QComboBox *m_per = nullptr;
    QPushButton *m_export = nullptr;
    QLabel *m_total = nullptr;
    QLabel *m_budgets = nullptr;
    QChart *m_chart = nullptr;
    QChartView *m_chartView = nullptr;
    QBarSet *m_costSet = nullptr;
    QBarCategoryAxis *m_dayAxis = nullptr;
    QValueAxis *m_costAxis = nullptr;
    EmptyStateStack *m_stack = nullptr;
    QTimer *m_refreshSoon = nullptr;
    telemetry::UsageReport m_tableReport;
    telemetry::UsageReport m_dailyReport;
    QStringList m_days;
    qint64 m_seenAttempts = -1; // usage rows the snapshots have counted
    quint64 m_generation = 0;   // answers to an older question are dropped
    quint64 m_answers = 0;
};

} // namespace sw::ui
