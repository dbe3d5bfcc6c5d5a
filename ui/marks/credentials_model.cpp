#include "ui/marks/credentials_model.h"
#include "ui/shared/plain_tip.h"

#include "ui/shared/state_palette.h"
#include "ui/shared/time_text.h"

#include <QDateTime>

namespace sw::ui {

using credentials::CredentialHealth;

namespace {
bool sameRows(const QList<credentials::CredentialStatus> &a, const QList<credentials::CredentialStatus> &b) {
    if (a.size() != b.size())
        return false;
    for (qsizetype i = 0; i < a.size(); ++i)
        if (a[i].provider != b[i].provider || a[i].position != b[i].position || a[i].ref != b[i].ref)
            return false;
    return true;
}
} // namespace

CredentialsModel::CredentialsModel(QObject *parent)
    : QAbstractTableModel(parent), m_now([]() { return QDateTime::currentMSecsSinceEpoch(); }) {}

int CredentialsModel::rowCount(const QModelIndex &parent) const {
    return parent.isValid() ? 0 : int(m_rows.size());
}

int CredentialsModel::columnCount(const QModelIndex &parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant CredentialsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal)
        return {};
    if (role == Qt::TextAlignmentRole) {
        const bool numeric = section == Position || section == Status || section == BackIn || section == Leases;
        return QVariant::fromValue(Qt::AlignVCenter | (numeric ? Qt::AlignRight : Qt::AlignLeft));
    }
    if (role == Qt::ToolTipRole && section == Reference)
        return tr("The reference as configured: the secret itself is never shown");
    if (role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Provider:
        return tr("Provider");
    case Position:
        return tr("#");
    case Reference:
        return tr("Credential");
    case State:
        return tr("State");
    case Reason:
        return tr("Reason");
    case Status:
        return tr("Status");
    case BackIn:
        return tr("Back in");
    case Leases:
        return tr("In use");
    case LastError:
        return tr("Last error");
    }
    return {};
}

qint64 CredentialsModel::remainingMs(int row) const {
    const Row &r = m_rows.at(row);
    if (r.status.state != CredentialHealth::Parked)
        return 0;
    return std::max<qint64>(0, r.untilWallMs - m_now());
}

CredentialHealth CredentialsModel::stateAt(int row) const {
    const Row &r = m_rows.at(row);
    if (r.status.state == CredentialHealth::Parked && r.untilWallMs <= m_now())
        return CredentialHealth::Ok; // its time ran out between snapshots
    return r.status.state;
}

QVariant CredentialsModel::data(const QModelIndex &index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const int row = index.row();
    const auto &c = m_rows.at(row).status;
    const CredentialHealth state = stateAt(row);
    const bool out = state != CredentialHealth::Ok;
    switch (role) {
    case StateRole:
        return int(state);
    case RemainingMsRole:
        return remainingMs(row);
    case Qt::TextAlignmentRole: {
        const int col = index.column();
        const bool numeric = col == Position || col == Status || col == BackIn || col == Leases;
        return QVariant::fromValue(Qt::AlignVCenter | (numeric ? Qt::AlignRight : Qt::AlignLeft));
    }
    case Qt::DecorationRole:
        if (index.column() == State)
            return StatePalette::dot(state == CredentialHealth::Rejected || state == CredentialHealth::Missing ||
                                             state == CredentialHealth::Unavailable
                                         ? HealthState::Error
                                     : out ? HealthState::Marks
                                           : HealthState::Healthy,
                                     10);
        return {};
    case Qt::ToolTipRole:
        switch (index.column()) {
        case State:
            return state == CredentialHealth::Rejected
                       ? tr("The provider refused this key (401). It stays out until its secret changes: store the "
                            "right one with Set key… or `switchman credential set`, or press Retry now.")
                   : state == CredentialHealth::Missing
                       ? tr("No secret to send: set the environment variable, or store the key with Set key… or "
                            "`switchman credential set`. Requests use the pool's next key or the next candidate.")
                   : state == CredentialHealth::Parked
                       ? tr("Out of use until %1; requests use the pool's next key or the next candidate.")
                             .arg(TimeText::absolute(m_rows.at(row).untilWallMs))
                   : state == CredentialHealth::Unavailable
                       ? tr("Keychain unavailable: %1. The key could not be read (no Secret Service, or the keychain "
                            "is locked); requests use the pool's next key or the next candidate, and read it again "
                            "until the keychain answers.")
                             .arg(peerText(c.lastError))
                       : tr("In use");
        case LastError:
            return out ? plainTip(c.lastError) : QString();
        default:
            return {};
        }
    case Qt::DisplayRole:
        switch (index.column()) {
        case Provider:
            return c.provider;
        case Position:
            return c.position + 1;
        case Reference:
            return c.ref;
        case State:
            return credentials::credentialHealthName(state);
        case Reason:
            return out ? credentials::parkReasonName(c.reason).replace(QLatin1Char('_'), QLatin1Char(' ')) : QString();
        case Status:
            return out && c.status ? QString::number(c.status) : QString();
        case BackIn:
            return state == CredentialHealth::Parked        ? TimeText::countdown(remainingMs(row))
                   : state == CredentialHealth::Rejected    ? tr("when the key changes")
                   : state == CredentialHealth::Missing     ? tr("when it is set")
                   : state == CredentialHealth::Unavailable ? tr("when the keychain answers")
                                                            : QString();
        case Leases:
            return c.leases;
        case LastError:
            return out ? peerText(c.lastError) : QString();
        }
        return {};
    }
    return {};
}

void CredentialsModel::applySnapshot(const QList<credentials::CredentialStatus> &rows, qint64 snapshotWallMs) {
    m_pending.removeIf([snapshotWallMs](const PendingRetry &p) { return p.requestedAtWallMs <= snapshotWallMs; });
    QList<Row> incoming;
    incoming.reserve(rows.size());
    for (const auto &c : rows) {
        Row r{c, snapshotWallMs + c.remainingMs.value_or(0)};
        for (const auto &p : std::as_const(m_pending))
            if (p.filter.matches(c.provider, c.ref))
                r.status.state = CredentialHealth::Ok; // asked to retry; the engine's answer is on its way
        incoming << r;
    }
    QList<credentials::CredentialStatus> before;
    for (const auto &r : std::as_const(m_rows))
        before << r.status;
    if (sameRows(before, rows)) {
        m_rows = incoming; // in place: the selection survives
        if (!m_rows.isEmpty())
            Q_EMIT dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
    } else {
        beginResetModel();
        m_rows = incoming;
        endResetModel();
    }
    emitIfCountChanged();
}

void CredentialsModel::tick() {
    if (!m_rows.isEmpty())
        Q_EMIT dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1), {Qt::DisplayRole, StateRole});
    emitIfCountChanged();
}

void CredentialsModel::markRetried(const credentials::CredentialFilter &filter) {
    m_pending.append(PendingRetry{filter, m_now()});
    for (int i = 0; i < m_rows.size(); ++i) {
        auto &c = m_rows[i].status;
        if (filter.matches(c.provider, c.ref) && c.state != CredentialHealth::Ok) {
            c.state = CredentialHealth::Ok;
            Q_EMIT dataChanged(index(i, 0), index(i, ColumnCount - 1));
        }
    }
    emitIfCountChanged();
}

int CredentialsModel::parkedCount() const {
    return int(parkedRows().size());
}

QList<int> CredentialsModel::parkedRows() const {
    QList<int> out;
    for (int i = 0; i < m_rows.size(); ++i)
        if (stateAt(i) != CredentialHealth::Ok)
            out << i;
    return out;
}

credentials::CredentialFilter CredentialsModel::filterFor(int row) const {
    credentials::CredentialFilter f;
    f.provider = m_rows.at(row).status.provider;
    f.ref = m_rows.at(row).status.ref;
    return f;
}

void CredentialsModel::emitIfCountChanged() {
    const int n = parkedCount();
    if (n != m_lastParked) {
        m_lastParked = n;
        Q_EMIT parkedCountChanged(n);
    }
}

} // namespace sw::ui
