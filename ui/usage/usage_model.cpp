#include "ui/usage/usage_model.h"
#include "ui/shared/plain_tip.h"

#include <QLocale>

namespace sw::ui {

UsageModel::UsageModel(const QString &keyTitle, QObject *parent) : QAbstractTableModel(parent), m_keyTitle(keyTitle) {}

int UsageModel::rowCount(const QModelIndex &parent) const {
    return parent.isValid() ? 0 : int(m_keys.size());
}

int UsageModel::columnCount(const QModelIndex &parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant UsageModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal)
        return {};
    if (role == Qt::TextAlignmentRole)
        return QVariant::fromValue(Qt::AlignVCenter | (section == Name ? Qt::AlignLeft : Qt::AlignRight));
    if (role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Name:
        return m_keyTitle;
    case Attempts:
        return tr("Attempts");
    case Input:
        return tr("Input tokens");
    case Output:
        return tr("Output tokens");
    case CacheRead:
        return tr("Cache read");
    case CacheWrite:
        return tr("Cache write");
    case Cost:
        return tr("Cost (USD)");
    }
    return {};
}

QVariant UsageModel::data(const QModelIndex &index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const QString &key = m_keys.at(index.row());
    const auto t = m_totals.value(key);
    if (role == Qt::TextAlignmentRole)
        return QVariant::fromValue(Qt::AlignVCenter | (index.column() == Name ? Qt::AlignLeft : Qt::AlignRight));
    if (role == Qt::UserRole) { // raw numbers, for sorting and tests
        switch (index.column()) {
        case Name:
            return key;
        case Attempts:
            return t.attempts;
        case Input:
            return t.input;
        case Output:
            return t.output;
        case CacheRead:
            return t.cacheRead;
        case CacheWrite:
            return t.cacheWrite;
        case Cost:
            return t.cost;
        }
    }
    if (role != Qt::DisplayRole)
        return {};
    const QLocale locale;
    switch (index.column()) {
    case Name:
        return peerText(key);
    case Attempts:
        return locale.toString(t.attempts);
    case Input:
        return locale.toString(t.input);
    case Output:
        return locale.toString(t.output);
    case CacheRead:
        return locale.toString(t.cacheRead);
    case CacheWrite:
        return locale.toString(t.cacheWrite);
    case Cost:
        return QStringLiteral("$%1").arg(t.cost, 0, 'f', t.cost < 1 ? 4 : 2);
    }
    return {};
}

void UsageModel::setKeyTitle(const QString &title) {
    if (title == m_keyTitle)
        return;
    m_keyTitle = title;
    Q_EMIT headerDataChanged(Qt::Horizontal, Name, Name);
}

void UsageModel::setTotals(const QMap<QString, snapshot::UsageTotals> &totals) {
    // Keys only grow in practice (totals are cumulative): insert new ones in place.
    bool subset = true;
    for (const QString &k : std::as_const(m_keys))
        subset = subset && totals.contains(k);
    if (!subset) {
        beginResetModel();
        m_totals = totals;
        m_keys = totals.keys();
        endResetModel();
        return;
    }
    m_totals = totals;
    for (auto it = totals.keyBegin(); it != totals.keyEnd(); ++it) {
        const auto pos = std::lower_bound(m_keys.begin(), m_keys.end(), *it);
        if (pos != m_keys.end() && *pos == *it)
            continue;
        const int row = int(pos - m_keys.begin());
        beginInsertRows({}, row, row);
        m_keys.insert(row, *it);
        endInsertRows();
    }
    if (!m_keys.isEmpty())
        Q_EMIT dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
}

snapshot::UsageTotals UsageModel::total() const {
    snapshot::UsageTotals sum;
    for (const auto &t : m_totals) {
        sum.attempts += t.attempts;
        sum.input += t.input;
        sum.output += t.output;
        sum.cacheRead += t.cacheRead;
        sum.cacheWrite += t.cacheWrite;
        sum.cost += t.cost;
    }
    return sum;
}

} // namespace sw::ui
