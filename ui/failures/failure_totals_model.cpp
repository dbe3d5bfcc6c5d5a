#include "ui/failures/failure_totals_model.h"

#include "ui/shared/state_palette.h"

#include <QLocale>

namespace sw::ui {

FailureTotalsModel::FailureTotalsModel(QObject *parent) : QAbstractTableModel(parent) {}

int FailureTotalsModel::rowCount(const QModelIndex &parent) const {
    return parent.isValid() ? 0 : int(m_keys.size());
}

int FailureTotalsModel::columnCount(const QModelIndex &parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant FailureTotalsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal)
        return {};
    if (role == Qt::TextAlignmentRole)
        return QVariant::fromValue(Qt::AlignVCenter | (section == Count ? Qt::AlignRight : Qt::AlignLeft));
    if (role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Provider:
        return tr("Provider");
    case Failure:
        return tr("Failure kind");
    case Count:
        return tr("Total");
    }
    return {};
}

QVariant FailureTotalsModel::data(const QModelIndex &index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const QString &key = m_keys.at(index.row());
    const auto parts = key.split(QChar(0x1f));
    if (role == Qt::TextAlignmentRole)
        return QVariant::fromValue(Qt::AlignVCenter | (index.column() == Count ? Qt::AlignRight : Qt::AlignLeft));
    if (role == Qt::DecorationRole && index.column() == Failure)
        return StatePalette::dot(HealthState::Error, 10);
    if (role == Qt::UserRole && index.column() == Count)
        return m_totals.value(key);
    if (role != Qt::DisplayRole)
        return {};
    switch (index.column()) {
    case Provider:
        return parts.value(0);
    case Failure:
        return parts.value(1);
    case Count:
        return QLocale().toString(m_totals.value(key));
    }
    return {};
}

void FailureTotalsModel::setTotals(const QHash<QString, qint64> &totals) {
    bool subset = true;
    for (const QString &k : std::as_const(m_keys))
        subset = subset && totals.contains(k);
    if (!subset) {
        beginResetModel();
        m_totals = totals;
        m_keys = totals.keys();
        std::sort(m_keys.begin(), m_keys.end());
        endResetModel();
        return;
    }
    m_totals = totals;
    QStringList incoming = totals.keys();
    std::sort(incoming.begin(), incoming.end());
    for (const QString &k : std::as_const(incoming)) {
        const auto pos = std::lower_bound(m_keys.begin(), m_keys.end(), k);
        if (pos != m_keys.end() && *pos == k)
            continue;
        const int row = int(pos - m_keys.begin());
        beginInsertRows({}, row, row);
        m_keys.insert(row, k);
        endInsertRows();
    }
    if (!m_keys.isEmpty())
        Q_EMIT dataChanged(index(0, Count), index(rowCount() - 1, Count));
}

qint64 FailureTotalsModel::count(const QString &provider, const QString &failure) const {
    return m_totals.value(provider + QChar(0x1f) + failure);
}

qint64 FailureTotalsModel::total() const {
    qint64 n = 0;
    for (qint64 v : m_totals)
        n += v;
    return n;
}

} // namespace sw::ui
