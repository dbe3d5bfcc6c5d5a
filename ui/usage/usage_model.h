#pragma once
// Tokens and cost per tenant, provider or model, every attempt counted:
// totals come from the engine's usage ledger, one row per key, sorted by name.

#include "core/snapshot/engine_snapshot.h"

#include <QAbstractTableModel>

namespace sw::ui {

class UsageModel final : public QAbstractTableModel {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(UsageModel)
public:
    enum Column { Name, Attempts, Input, Output, CacheRead, CacheWrite, Cost, ColumnCount };

    explicit UsageModel(const QString &keyTitle, QObject *parent = nullptr);

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    void setTotals(const QMap<QString, snapshot::UsageTotals> &totals);
    void setKeyTitle(const QString &title); // the first column's header: Tenant, Provider, Model
    snapshot::UsageTotals total() const;    // all rows together

private:
    QString m_keyTitle;
    QList<QString> m_keys; // sorted
    QMap<QString, snapshot::UsageTotals> m_totals;
};

} // namespace sw::ui
