#pragma once
// Live table of attempts: a bounded ring buffer, newest first, fed in
// batches from engine snapshots. One batch = at most one rowsRemoved (the
// oldest fall off the bottom) and one rowsInserted (the new ones on top).

#include "core/telemetry/engine_events.h"

#include <QAbstractTableModel>
#include <deque>
#include <functional>

namespace sw::ui {

class AttemptsModel final : public QAbstractTableModel {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(AttemptsModel)
public:
    enum Column {
        Time,
        Request,
        Tenant,
        Model,
        Attempt,
        Candidate,
        Outcome,
        Failure,
        Status,
        Elapsed,
        Ttft,
        ColumnCount
    };
    enum Role { RequestIdRole = Qt::UserRole + 1, TenantRole, OutcomeRole, FailureRole };

    explicit AttemptsModel(int capacity = 5000, QObject *parent = nullptr);

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    // Adds a batch (oldest first, as snapshots carry them).
    void append(const QList<telemetry::AttemptRecord> &batch);
    const telemetry::AttemptRecord &at(int row) const { return m_rows[size_t(row)]; }
    // Every attempt of one request still in the buffer, attempt 1 first.
    QList<telemetry::AttemptRecord> attemptsOf(const QString &requestId) const;
    QStringList tenants() const { return m_tenants; }
    int capacity() const { return m_capacity; }
    // "12 s ago" is computed when painted; tests pin "now".
    void setWallClock(std::function<qint64()> nowWallMs) { m_now = std::move(nowWallMs); }

Q_SIGNALS:
    void tenantsChanged(const QStringList &tenants);

private:
    int m_capacity;
    std::deque<telemetry::AttemptRecord> m_rows; // front = newest
    QStringList m_tenants;
    std::function<qint64()> m_now;
};

} // namespace sw::ui
