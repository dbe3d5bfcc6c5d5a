#pragma once
// Provider-down marks per tenant. Snapshots carry each mark's
// remaining TTL at the snapshot's wall time; between snapshots the model counts
// down on its own clock (injected, so tests run on a fake one) and drops marks
// that ran out. Rows are updated in place so the selection survives updates.

#include "core/failover/provider_down_marks.h"
#include "core/snapshot/engine_snapshot.h"

#include <QAbstractTableModel>
#include <functional>

namespace sw::ui {

class MarksModel final : public QAbstractTableModel {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(MarksModel)
public:
    enum Column { Tenant, Provider, Scope, Kind, Strikes, Expires, RetryAfter, SetBy, LastError, ColumnCount };
    enum Role { RemainingMsRole = Qt::UserRole + 1, TtlMsRole, TenantRole };

    explicit MarksModel(QObject *parent = nullptr);

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    void setWallClock(std::function<qint64()> nowWallMs) { m_now = std::move(nowWallMs); }
    // Replaces the set of marks with a snapshot's, in place.
    void applySnapshot(const QList<snapshot::MarkRow> &marks, qint64 snapshotWallMs);
    // Once a second: the countdown column changes, marks that ran out go.
    void tick();
    // A clear the user asked for: the rows go at once; snapshots taken before
    // the request do not bring them back.
    void removeMatching(const failover::MarkFilter &filter);

    qint64 remainingMs(int row) const;
    const failover::MarkInfo &markAt(int row) const { return m_rows.at(row).info; }
    // The filter that clears exactly this mark in the engine.
    failover::MarkFilter filterFor(int row) const;
    QStringList tenants() const;

Q_SIGNALS:
    void countChanged(int count);

private:
    struct Row {
        failover::MarkInfo info;
        qint64 expiresAtWallMs = 0; // snapshot wall time + remaining
    };
    struct PendingClear {
        failover::MarkFilter filter;
        qint64 requestedAtWallMs = 0;
    };
    static QString keyOf(const failover::MarkInfo &m);
    void removeRows(const std::function<bool(const Row &)> &predicate);

    QList<Row> m_rows;
    QList<PendingClear> m_pendingClears;
    std::function<qint64()> m_now;
};

} // namespace sw::ui
