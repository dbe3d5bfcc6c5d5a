#pragma once
// Log lines at or above a level that contain the search text (case-insensitive).

#include <QSortFilterProxyModel>

namespace sw::ui {

class LogFilterModel final : public QSortFilterProxyModel {
    Q_OBJECT
public:
    using QSortFilterProxyModel::QSortFilterProxyModel;
    void setMinimumLevel(int rank); // 0 info, 1 warn, 2 error
    void setSearchText(const QString &text);

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex &sourceParent) const override;

private:
    int m_minimumLevel = 0;
    QString m_search;
};

} // namespace sw::ui
