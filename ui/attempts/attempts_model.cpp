#include "ui/attempts/attempts_model.h"
#include "ui/shared/plain_tip.h"

#include "ui/shared/state_palette.h"
#include "ui/shared/time_text.h"

#include <QDateTime>

namespace sw::ui {

AttemptsModel::AttemptsModel(int capacity, QObject *parent)
    : QAbstractTableModel(parent), m_capacity(std::max(1, capacity)),
      m_now([]() { return QDateTime::currentMSecsSinceEpoch(); }) {}

int AttemptsModel::rowCount(const QModelIndex &parent) const {
    return parent.isValid() ? 0 : int(m_rows.size());
}

int AttemptsModel::columnCount(const QModelIndex &parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant AttemptsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal)
        return {};
    if (role == Qt::TextAlignmentRole) {
        const bool numeric = section == Attempt || section == Status || section == Elapsed || section == Ttft;
        return QVariant::fromValue(Qt::AlignVCenter | (numeric ? Qt::AlignRight : Qt::AlignLeft));
    }
    if (role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Time:
        return tr("Time");
    case Request:
        return tr("Request");
    case Tenant:
        return tr("Tenant");
    case Model:
        return tr("Requested");
    case Attempt:
        return tr("#");
    case Candidate:
        return tr("Candidate");
    case Outcome:
        return tr("Outcome");
    case Failure:
        return tr("Failure");
    case Status:
        return tr("Status");
    case Elapsed:
        return tr("Elapsed");
    case Ttft:
        return tr("TTFT");
    }
    return {};
}

QVariant AttemptsModel::data(const QModelIndex &index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const auto &a = m_rows[size_t(index.row())];
    const QString outcome = telemetry::outcomeName(a.outcome);
    switch (role) {
    case RequestIdRole:
        return a.requestId;
    case TenantRole:
        return a.tenant;
    case OutcomeRole:
        return outcome;
    case FailureRole:
        return a.failure;
    case Qt::TextAlignmentRole: {
        const int c = index.column();
        const bool numeric = c == Attempt || c == Status || c == Elapsed || c == Ttft;
        return QVariant::fromValue(Qt::AlignVCenter | (numeric ? Qt::AlignRight : Qt::AlignLeft));
    }
    case Qt::ForegroundRole:
        if (index.column() == Outcome)
            return StatePalette::outcomeColor(outcome);
        return {};
    case Qt::DecorationRole:
        if (index.column() == Outcome) {
            const HealthState s =
                a.outcome == telemetry::AttemptOutcome::Committed ? HealthState::Healthy
                : a.outcome == telemetry::AttemptOutcome::Failed  ? HealthState::Error
                : a.outcome == telemetry::AttemptOutcome::Skipped || a.outcome == telemetry::AttemptOutcome::Refused
                    ? HealthState::Marks
                    : HealthState::Paused;
            return StatePalette::dot(s, 10);
        }
        return {};
    case Qt::ToolTipRole:
        if (index.column() == Time)
            return TimeText::absolute(a.startedAtEpochMs);
        if (!a.message.isEmpty())
            return plainTip(a.message);
        return {};
    case Qt::DisplayRole:
        switch (index.column()) {
        case Time:
            return TimeText::ago(a.startedAtEpochMs, m_now());
        case Request:
            return peerText(a.requestId);
        case Tenant:
            return a.tenant;
        case Model:
            return peerText(a.requestedModel);
        case Attempt:
            return a.attempt;
        case Candidate:
            return peerText(a.candidate);
        case Outcome:
            return outcome;
        case Failure:
            return a.failure.isEmpty() ? QString() : a.failure;
        case Status:
            return a.status > 0 ? QVariant(a.status) : QVariant(QString());
        case Elapsed:
            return TimeText::duration(a.elapsedMs);
        case Ttft:
            return a.ttftMs ? TimeText::duration(*a.ttftMs) : QString();
        }
        return {};
    }
    return {};
}

void AttemptsModel::append(const QList<telemetry::AttemptRecord> &batch) {
    if (batch.isEmpty())
        return;
    const int n = int(std::min<qsizetype>(batch.size(), m_capacity));
    const int overflow = int(m_rows.size()) + n - m_capacity;
    if (overflow > 0) {
        const int first = int(m_rows.size()) - overflow;
        beginRemoveRows({}, first, int(m_rows.size()) - 1);
        m_rows.erase(m_rows.end() - overflow, m_rows.end());
        endRemoveRows();
    }
    beginInsertRows({}, 0, n - 1);
    // batch is oldest first; the newest goes on top.
    for (qsizetype i = batch.size() - n; i < batch.size(); ++i)
        m_rows.push_front(batch.at(i));
    endInsertRows();

    bool grew = false;
    for (const auto &a : batch)
        if (!a.tenant.isEmpty() && !m_tenants.contains(a.tenant)) {
            m_tenants.append(a.tenant);
            grew = true;
        }
    if (grew) {
        m_tenants.sort();
        Q_EMIT tenantsChanged(m_tenants);
    }
}

QList<telemetry::AttemptRecord> AttemptsModel::attemptsOf(const QString &requestId) const {
    QList<telemetry::AttemptRecord> out;
    for (const auto &a : m_rows)
        if (a.requestId == requestId)
            out.append(a);
    std::sort(out.begin(), out.end(), [](const auto &x, const auto &y) { return x.attempt < y.attempt; });
    return out;
}

} // namespace sw::ui
