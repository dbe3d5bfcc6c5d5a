#pragma once
// Candidate failures by provider and kind since start: the same counter as
// /metrics switchman_candidate_failures_total{provider,failure}.

#include <QAbstractTableModel>
#include <QHash>

namespace sw::ui {

class FailureTotalsModel final : public QAbstractTableModel {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(FailureTotalsModel)
public:
    enum Column { Provider, Failure, Count, ColumnCount };

    explicit FailureTotalsModel(QObject *parent = nullptr);

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    // "provider\x1ffailure" -> count, as the snapshot carries it.
    void setTotals(const QHash<QString, qint64> &totals);
    qint64 count(const QString &provider, const QString &failure) const;
    qint64 total() const;

private:
    QList<QString> m_keys; // sorted
    QHash<QString, qint64> m_totals;
};

} // namespace sw::ui
