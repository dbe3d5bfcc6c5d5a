#include "ui/marks/marks_model.h"
#include "ui/shared/plain_tip.h"

#include "ui/shared/state_palette.h"
#include "ui/shared/time_text.h"

#include <QDateTime>
#include <QSet>

namespace sw::ui {

MarksModel::MarksModel(QObject *parent)
    : QAbstractTableModel(parent), m_now([]() { return QDateTime::currentMSecsSinceEpoch(); }) {}

int MarksModel::rowCount(const QModelIndex &parent) const {
    return parent.isValid() ? 0 : int(m_rows.size());
}

int MarksModel::columnCount(const QModelIndex &parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant MarksModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal)
        return {};
    if (role == Qt::TextAlignmentRole) {
        const bool numeric = section == Strikes || section == Expires || section == RetryAfter;
        return QVariant::fromValue(Qt::AlignVCenter | (numeric ? Qt::AlignRight : Qt::AlignLeft));
    }
    if (role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Tenant:
        return tr("Tenant");
    case Provider:
        return tr("Provider");
    case Scope:
        return tr("Scope");
    case Kind:
        return tr("Kind");
    case Strikes:
        return tr("Strikes");
    case Expires:
        return tr("Expires in");
    case RetryAfter:
        return tr("Retry-After");
    case SetBy:
        return tr("Set by");
    case LastError:
        return tr("Last error");
    }
    return {};
}

qint64 MarksModel::remainingMs(int row) const {
    return std::max<qint64>(0, m_rows.at(row).expiresAtWallMs - m_now());
}

QVariant MarksModel::data(const QModelIndex &index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Row &r = m_rows.at(index.row());
    const auto &m = r.info;
    switch (role) {
    case RemainingMsRole:
        return remainingMs(index.row());
    case TtlMsRole:
        return m.ttlMs;
    case TenantRole:
        return m.tenant;
    case Qt::TextAlignmentRole: {
        const int c = index.column();
        const bool numeric = c == Strikes || c == Expires || c == RetryAfter;
        return QVariant::fromValue(Qt::AlignVCenter | (numeric ? Qt::AlignRight : Qt::AlignLeft));
    }
    case Qt::DecorationRole:
        if (index.column() == Kind)
            return StatePalette::dot(HealthState::Marks, 10);
        return {};
    case Qt::ToolTipRole:
        switch (index.column()) {
        case Expires:
            return tr("Until %1 (TTL %2 s)").arg(TimeText::absolute(r.expiresAtWallMs)).arg(m.ttlMs / 1000);
        case Scope: // the whole scope: the column is elided when it is long
            return plainTip(m.model.isEmpty() ? m.baseUrl : m.model + QStringLiteral(" at ") + m.baseUrl);
        case LastError:
            return plainTip(m.lastError);
        default:
            return {};
        }
    case Qt::DisplayRole:
        switch (index.column()) {
        case Tenant:
            return m.tenant;
        case Provider:
            return m.provider;
        case Scope:
            return peerText(m.model.isEmpty() ? tr("every model at %1").arg(m.baseUrl) : m.model);
        case Kind:
            return failover::failureKindName(m.kind);
        case Strikes:
            return m.strikes;
        case Expires:
            return TimeText::countdown(remainingMs(index.row()));
        case RetryAfter:
            return m.retryAfterMs ? tr("%1 s").arg((*m.retryAfterMs + 999) / 1000) : QString();
        case SetBy:
            // Shared marks name the replica that saw the failure; empty = this one.
            return m.setBy.isEmpty() ? tr("this replica") : m.setBy;
        case LastError:
            return peerText(m.lastError);
        }
        return {};
    }
    return {};
}

QString MarksModel::keyOf(const failover::MarkInfo &m) {
    return m.tenant + QChar(0) + m.provider + QChar(0) + m.baseUrl + QChar(0) + m.model;
}

void MarksModel::removeRows(const std::function<bool(const Row &)> &predicate) {
    // Bottom up, so each removal is one merged range and indexes stay valid.
    for (int i = int(m_rows.size()) - 1; i >= 0;) {
        if (!predicate(m_rows.at(i))) {
            --i;
            continue;
        }
        int first = i;
        while (first > 0 && predicate(m_rows.at(first - 1)))
            --first;
        beginRemoveRows({}, first, i);
        m_rows.remove(first, i - first + 1);
        endRemoveRows();
        i = first - 1;
    }
}

void MarksModel::applySnapshot(const QList<snapshot::MarkRow> &marks, qint64 snapshotWallMs) {
    const int before = rowCount();
    // Requests answered by the engine no longer need shielding.
    m_pendingClears.removeIf([snapshotWallMs](const PendingClear &p) { return p.requestedAtWallMs <= snapshotWallMs; });
    QHash<QString, Row> incoming;
    QStringList order;
    for (const auto &mr : marks) {
        if (mr.remainingMs <= 0)
            continue;
        bool shielded = false;
        for (const auto &p : std::as_const(m_pendingClears))
            shielded = shielded || p.filter.matches(mr.info);
        if (shielded)
            continue;
        const QString key = keyOf(mr.info);
        incoming.insert(key, Row{mr.info, snapshotWallMs + mr.remainingMs});
        order << key;
    }
    removeRows([&incoming](const Row &r) { return !incoming.contains(keyOf(r.info)); });
    QSet<QString> present;
    for (int i = 0; i < m_rows.size(); ++i) {
        const QString key = keyOf(m_rows[i].info);
        present.insert(key);
        m_rows[i] = incoming.value(key);
    }
    if (!m_rows.isEmpty())
        Q_EMIT dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
    QList<Row> added;
    for (const QString &key : std::as_const(order))
        if (!present.contains(key))
            added.append(incoming.value(key));
    if (!added.isEmpty()) {
        beginInsertRows({}, rowCount(), rowCount() + int(added.size()) - 1);
        m_rows += added;
        endInsertRows();
    }
    if (rowCount() != before)
        Q_EMIT countChanged(rowCount());
}

void MarksModel::tick() {
    const int before = rowCount();
    const qint64 now = m_now();
    removeRows([now](const Row &r) { return r.expiresAtWallMs <= now; });
    if (!m_rows.isEmpty())
        Q_EMIT dataChanged(index(0, Expires), index(rowCount() - 1, Expires), {Qt::DisplayRole, RemainingMsRole});
    if (rowCount() != before)
        Q_EMIT countChanged(rowCount());
}

void MarksModel::removeMatching(const failover::MarkFilter &filter) {
    m_pendingClears.append(PendingClear{filter, m_now()});
    const int before = rowCount();
    removeRows([&filter](const Row &r) { return filter.matches(r.info); });
    if (rowCount() != before)
        Q_EMIT countChanged(rowCount());
}

failover::MarkFilter MarksModel::filterFor(int row) const {
    const auto &m = m_rows.at(row).info;
    failover::MarkFilter f;
    f.tenant = m.tenant;
    f.provider = m.provider;
    f.baseUrl = m.baseUrl;
    f.model = m.model;
    f.exactModel = true; // clearing a transport mark leaves that base URL's model marks alone
    return f;
}

QStringList MarksModel::tenants() const {
    QStringList out;
    for (const auto &r : m_rows)
        if (!out.contains(r.info.tenant))
            out << r.info.tenant;
    out.sort();
    return out;
}

} // namespace sw::ui
