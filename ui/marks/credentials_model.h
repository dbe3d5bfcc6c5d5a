#pragma once
// Credential health: every configured credential with its state,
// reason and a countdown for a parked one. Like the marks, a snapshot carries
// each remaining time at its wall time and the model counts down on its own
// (injected) clock between snapshots; a parked key whose time ran out reads ok.

#include "core/credentials/credential_pools.h"

#include <QAbstractTableModel>
#include <functional>

namespace sw::ui {

class CredentialsModel final : public QAbstractTableModel {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(CredentialsModel)
public:
    enum Column { Provider, Position, Reference, State, Reason, Status, BackIn, Leases, LastError, ColumnCount };
    enum Role { StateRole = Qt::UserRole + 1, RemainingMsRole };

    explicit CredentialsModel(QObject *parent = nullptr);

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    void setWallClock(std::function<qint64()> nowWallMs) { m_now = std::move(nowWallMs); }
    void applySnapshot(const QList<credentials::CredentialStatus> &rows, qint64 snapshotWallMs);
    void tick(); // once a second: countdowns move, parking that ran out ends
    // "Retry now" was asked for: the matching rows read ok at once; snapshots taken before the
    // request do not bring the old state back.
    void markRetried(const credentials::CredentialFilter &filter);

    credentials::CredentialHealth stateAt(int row) const;
    const credentials::CredentialStatus &at(int row) const { return m_rows.at(row).status; }
    qint64 remainingMs(int row) const; // parked: time left; otherwise 0
    int parkedCount() const;           // parked or rejected now
    QList<int> parkedRows() const;
    credentials::CredentialFilter filterFor(int row) const;

Q_SIGNALS:
    void parkedCountChanged(int count);

private:
    struct Row {
        credentials::CredentialStatus status;
        qint64 untilWallMs = 0; // parked: snapshot wall time + remaining
    };
    struct PendingRetry {
        credentials::CredentialFilter filter;
        qint64 requestedAtWallMs = 0;
    };
    void emitIfCountChanged();

    QList<Row> m_rows;
    QList<PendingRetry> m_pending;
    std::function<qint64()> m_now;
    int m_lastParked = 0;
};

} // namespace sw::ui
