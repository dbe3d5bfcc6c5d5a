#include "ui/attempts/attempts_filter_model.h"

#include "ui/attempts/attempts_model.h"

namespace sw::ui {

void AttemptsFilterModel::setTenant(const QString &tenant) {
    if (tenant == m_tenant)
        return;
    m_tenant = tenant;
    invalidateFilter();
}

void AttemptsFilterModel::setOutcome(const QString &outcome) {
    if (outcome == m_outcome)
        return;
    m_outcome = outcome;
    invalidateFilter();
}

void AttemptsFilterModel::setRequestId(const QString &requestId) {
    if (requestId == m_requestId)
        return;
    m_requestId = requestId;
    invalidateFilter();
}

bool AttemptsFilterModel::filterAcceptsRow(int sourceRow, const QModelIndex &sourceParent) const {
    const QModelIndex i = sourceModel()->index(sourceRow, 0, sourceParent);
    if (!m_tenant.isEmpty() && i.data(AttemptsModel::TenantRole).toString() != m_tenant)
        return false;
    if (!m_outcome.isEmpty() && i.data(AttemptsModel::OutcomeRole).toString() != m_outcome)
        return false;
    if (!m_requestId.isEmpty() && i.data(AttemptsModel::RequestIdRole).toString() != m_requestId)
        return false;
    return true;
}

} // namespace sw::ui
