#pragma once
// Attempts filtered by tenant and outcome; an empty filter matches any.

#include <QSortFilterProxyModel>

namespace sw::ui {

class AttemptsFilterModel final : public QSortFilterProxyModel {
    Q_OBJECT
public:
    using QSortFilterProxyModel::QSortFilterProxyModel;
    void setTenant(const QString &tenant);
    void setOutcome(const QString &outcome); // committed | failed | skipped | aborted
    void setRequestId(const QString &requestId);

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex &sourceParent) const override;

private:
    QString m_tenant;
    QString m_outcome;
    QString m_requestId;
};

} // namespace sw::ui
