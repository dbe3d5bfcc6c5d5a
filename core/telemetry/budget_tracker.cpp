#include "core/telemetry/budget_tracker.h"

#include "core/util/clock.h"

#include <QDateTime>

namespace sw::telemetry {

CalendarPeriod calendarPeriod(const QString &kind, qint64 epochMs) {
    const QDate today = QDateTime::fromMSecsSinceEpoch(epochMs).date();
    QDate first = today;
    QDate next = today.addDays(1);
    if (kind == QLatin1String("week")) {
        first = today.addDays(1 - today.dayOfWeek()); // ISO weeks start on Monday
        next = first.addDays(7);
    } else if (kind == QLatin1String("month")) {
        first = QDate(today.year(), today.month(), 1);
        next = first.addMonths(1);
    }
    // startOfDay: local midnight, or the first valid moment of a day that skips midnight (DST).
    return {first.startOfDay().toMSecsSinceEpoch(), next.startOfDay().toMSecsSinceEpoch()};
}

QString budgetDescription(const BudgetState &s) {
    const QString per = s.period == QLatin1String("day")    ? QStringLiteral("per day")
                        : s.period == QLatin1String("week") ? QStringLiteral("per week")
                                                            : QStringLiteral("per month");
    return QStringLiteral("$%1 %2").arg(s.usd, 0, 'f', 2).arg(per);
}

BudgetTracker::BudgetTracker(util::Clock &clock, Store store, QObject *parent)
    : QObject(parent), m_clock(clock), m_store(std::move(store)) {
    qRegisterMetaType<BudgetState>();
}

void BudgetTracker::configure(const QMap<QString, config::TenantConfig> &tenants) {
    QHash<QString, BudgetState> next;
    const qint64 now = m_clock.epochMs();
    for (const auto &t : tenants) {
        if (!t.budget)
            continue;
        BudgetState s;
        s.tenant = t.name;
        s.usd = t.budget->usd;
        s.period = t.budget->period;
        const CalendarPeriod p = calendarPeriod(s.period, now);
        s.periodStartMs = p.startMs;
        s.periodEndMs = p.endMs;
        const auto old = m_states.constFind(t.name);
        if (old != m_states.cend() && old->period == s.period && old->periodStartMs == s.periodStartMs)
            s.spent = old->spent;
        else if (m_store.spentSince)
            s.spent = m_store.spentSince(t.name, s.periodStartMs, s.periodEndMs);
        next.insert(t.name, s);
    }
    m_states = std::move(next);
    for (auto it = m_states.begin(); it != m_states.end(); ++it)
        checkThresholds(*it);
}

BudgetState *BudgetTracker::current(const QString &tenant) {
    const auto it = m_states.find(tenant);
    if (it == m_states.end())
        return nullptr;
    const qint64 now = m_clock.epochMs();
    if (now >= it->periodEndMs || now < it->periodStartMs) {
        // Another period: what the ledger holds for it. Usually nothing (a new period), but a clock
        // stepped back into a period already spent in must not find it at $0.
        const CalendarPeriod p = calendarPeriod(it->period, now);
        it->periodStartMs = p.startMs;
        it->periodEndMs = p.endMs;
        it->spent = m_store.spentSince ? m_store.spentSince(tenant, p.startMs, p.endMs) : 0;
    }
    return &*it;
}

void BudgetTracker::add(const QString &tenant, double cost) {
    BudgetState *s = current(tenant);
    if (!s || !(cost > 0))
        return;
    s->spent += cost;
    checkThresholds(*s);
}

void BudgetTracker::checkThresholds(BudgetState &s) {
    if (s.usd > 0 && s.spent >= kWarnFraction * s.usd && m_warnedPeriod.value(s.tenant, -1) != s.periodStartMs) {
        m_warnedPeriod.insert(s.tenant, s.periodStartMs);
        const bool given = m_store.noticeGiven && m_store.noticeGiven(s.tenant, s.periodStartMs);
        if (!given) {
            if (m_store.rememberNotice)
                m_store.rememberNotice(s.tenant, s.periodStartMs);
            Q_EMIT warning(s);
        }
    }
    if (s.reached() && m_reachedPeriod.value(s.tenant, -1) != s.periodStartMs) {
        m_reachedPeriod.insert(s.tenant, s.periodStartMs);
        Q_EMIT reached(s);
    }
}

std::optional<BudgetTracker::Refusal> BudgetTracker::refusal(const QString &tenant) {
    BudgetState *s = current(tenant);
    if (!s || !s->reached())
        return std::nullopt;
    const qint64 now = m_clock.epochMs();
    const QString resets = QDateTime::fromMSecsSinceEpoch(s->periodEndMs).toString(QStringLiteral("yyyy-MM-dd HH:mm"));
    Refusal r;
    r.retryAfterS = std::max<qint64>(1, (s->periodEndMs - now + 999) / 1000);
    r.message = QStringLiteral("tenant \"%1\" has reached its Switchman budget of %2 ($%3 spent this %4); requests "
                               "are refused until the %4 resets at %5 local time")
                    .arg(s->tenant, budgetDescription(*s))
                    .arg(s->spent, 0, 'f', 2)
                    .arg(s->period, resets);
    return r;
}

std::optional<QString> BudgetTracker::unavailable(const QString &tenant) const {
    if (!m_states.contains(tenant) || !m_store.available || m_store.available())
        return std::nullopt;
    return QStringLiteral("usage ledger unavailable: spend budgets cannot be enforced (tenant \"%1\" has a budget of "
                          "%2); see the Switchman log")
        .arg(tenant, budgetDescription(m_states.value(tenant)));
}

QList<BudgetState> BudgetTracker::states() {
    QStringList names = m_states.keys();
    names.sort();
    QList<BudgetState> out;
    for (const QString &n : names)
        out.append(*current(n));
    return out;
}

} // namespace sw::telemetry
