#include "ui/log/log_filter_model.h"

#include "ui/log/log_model.h"

namespace sw::ui {

void LogFilterModel::setMinimumLevel(int rank) {
    if (rank == m_minimumLevel)
        return;
    m_minimumLevel = rank;
    invalidateFilter();
}

void LogFilterModel::setSearchText(const QString &text) {
    if (text == m_search)
        return;
    m_search = text;
    invalidateFilter();
}

bool LogFilterModel::filterAcceptsRow(int sourceRow, const QModelIndex &sourceParent) const {
    const QModelIndex i = sourceModel()->index(sourceRow, 0, sourceParent);
    if (i.data(LogModel::LevelRankRole).toInt() < m_minimumLevel)
        return false;
    return m_search.isEmpty() || i.data(LogModel::SearchTextRole).toString().contains(m_search, Qt::CaseInsensitive);
}

} // namespace sw::ui
