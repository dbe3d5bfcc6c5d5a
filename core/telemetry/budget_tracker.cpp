#include "core/telemetry/budget_tracker.h"

#include "core/util/clock.h"

#include <QDateTime>

#include <cmath>

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

BudgetTracker::~BudgetTracker() {
    m_clock.cancel(m_readTimer);
}

void BudgetTracker::configure(const QMap<QString, config::TenantConfig> &tenants) {
    QHash<QString, Account> next;
    const qint64 now = m_clock.epochMs();
    for (const auto &t : tenants) {
        if (!t.budget)
            continue;
        Account a;
        BudgetState &s = a.state;
        s.tenant = t.name;
        s.usd = t.budget->usd;
        s.period = t.budget->period;
        const CalendarPeriod p = calendarPeriod(s.period, now);
        s.periodStartMs = p.startMs;
        s.periodEndMs = p.endMs;
        const auto old = m_states.constFind(t.name);
        if (old != m_states.cend() && old->state.period == s.period && old->state.periodStartMs == s.periodStartMs) {
            s.spent = old->state.spent;
            a.unread = old->unread;
            a.generation = old->generation;
            a.unknown = old->unknown;
        } else {
            readAfresh(a);
        }
        next.insert(t.name, a);
    }
    m_states = std::move(next);
    for (auto it = m_states.begin(); it != m_states.end(); ++it)
        checkThresholds(it->state);
    scheduleLedgerRead();
}

void BudgetTracker::readAfresh(Account &a) {
    BudgetState &s = a.state;
    const std::optional<double> spent =
        m_store.spentSince ? m_store.spentSince(s.tenant, s.periodStartMs, s.periodEndMs) : std::optional<double>(0);
    s.spent = spent.value_or(0);
    a.unknown = !spent;
    a.unread = 0;
    a.generation = ++m_lastGeneration;
}

BudgetTracker::Account *BudgetTracker::current(const QString &tenant) {
    const auto it = m_states.find(tenant);
    if (it == m_states.end())
        return nullptr;
    const qint64 now = m_clock.epochMs();
    BudgetState &s = it->state;
    if (now >= s.periodEndMs || now < s.periodStartMs) {
        // Another period: what the ledger holds for it. Usually nothing (a new period), but a clock
        // stepped back into a period already spent in must not find it at $0.
        const CalendarPeriod p = calendarPeriod(s.period, now);
        s.periodStartMs = p.startMs;
        s.periodEndMs = p.endMs;
        readAfresh(*it);
    }
    return &*it;
}

void BudgetTracker::add(const QString &tenant, double cost) {
    Account *a = current(tenant);
    if (!a || !(cost > 0))
        return;
    a->state.spent += cost;
    a->unread += cost;
    checkThresholds(a->state);
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
    Account *a = current(tenant);
    if (!a || !a->state.reached())
        return std::nullopt;
    const BudgetState &s = a->state;
    const qint64 now = m_clock.epochMs();
    const QString resets = QDateTime::fromMSecsSinceEpoch(s.periodEndMs).toString(QStringLiteral("yyyy-MM-dd HH:mm"));
    Refusal r;
    r.retryAfterS = std::max<qint64>(1, (s.periodEndMs - now + 999) / 1000);
    r.message = QStringLiteral("tenant \"%1\" has reached its Switchman budget of %2 ($%3 spent this %4); requests "
                               "are refused until the %4 resets at %5 local time")
                    .arg(s.tenant, budgetDescription(s))
                    .arg(s.spent, 0, 'f', 2)
                    .arg(s.period, resets);
    return r;
}

std::optional<BudgetTracker::Refusal> BudgetTracker::reserve(const QString &tenant, double estimateUsd,
                                                             ReservationId *id) {
    *id = 0;
    if (auto r = refusal(tenant))
        return r;
    Account *a = current(tenant);
    if (!a)
        return std::nullopt;
    const double estimate = std::isfinite(estimateUsd) && estimateUsd > 0 ? estimateUsd : 0;
    const Held held = m_held.value(tenant);
    const BudgetState &s = a->state;
    if (held.usd > 0 && s.spent + held.usd + estimate > s.usd)
        return inFlightRefusal(s, held, estimate, false);
    *id = ++m_lastReservation;
    m_reservations.insert(*id, {tenant, estimate});
    Held &h = m_held[tenant];
    h.usd += estimate;
    ++h.requests;
    return std::nullopt;
}

void BudgetTracker::consume(ReservationId id, double cost) {
    const auto it = m_reservations.find(id);
    if (it == m_reservations.end() || !(cost > 0))
        return;
    const double less = std::min(it->usd, cost);
    it->usd -= less;
    Held &h = m_held[it->tenant];
    h.usd = std::max(0.0, h.usd - less);
}

std::optional<BudgetTracker::Refusal> BudgetTracker::renew(ReservationId id, double estimateUsd) {
    const auto it = m_reservations.find(id);
    if (it == m_reservations.end())
        return std::nullopt;
    if (auto r = refusal(it->tenant))
        return r;
    Account *a = current(it->tenant);
    const double estimate = std::isfinite(estimateUsd) && estimateUsd > 0 ? estimateUsd : 0;
    const double topUp = estimate - it->usd;
    if (!a || !(topUp > 0))
        return std::nullopt;
    Held &held = m_held[it->tenant];
    const BudgetState &s = a->state;
    // Judged as reserve() judges a request: alone in flight, on spend alone (refusal() above).
    if (held.requests > 1 && s.spent + held.usd + topUp > s.usd) {
        Held others = held;
        others.usd = std::max(0.0, held.usd - it->usd);
        --others.requests;
        return inFlightRefusal(s, others, estimate, true);
    }
    it->usd += topUp;
    held.usd += topUp;
    return std::nullopt;
}

BudgetTracker::Refusal BudgetTracker::inFlightRefusal(const BudgetState &s, const Held &held, double estimate,
                                                      bool anotherTry) {
    Refusal r;
    r.kind = Refusal::Kind::InFlight;
    r.retryAfterS = kInFlightRetryAfterS;
    r.message = QStringLiteral("tenant \"%1\" has %2 in flight that may cost up to $%3 more; with $%4 spent "
                               "this %5, %6 (up to $%7) could pass its Switchman budget of %8; retry when they "
                               "have finished")
                    .arg(s.tenant)
                    .arg(held.requests == 1 ? QStringLiteral("1 other request")
                                            : QStringLiteral("%1 other requests").arg(held.requests))
                    .arg(held.usd, 0, 'f', 2)
                    .arg(s.spent, 0, 'f', 2)
                    .arg(s.period)
                    .arg(anotherTry ? QStringLiteral("another try of this one after a failed try that cost")
                                    : QStringLiteral("this one"))
                    .arg(estimate, 0, 'f', 2)
                    .arg(budgetDescription(s));
    return r;
}

void BudgetTracker::release(ReservationId id) {
    const auto it = m_reservations.find(id);
    if (it == m_reservations.end())
        return;
    const auto held = m_held.find(it->tenant);
    if (held != m_held.end() && --held->requests <= 0)
        m_held.erase(held); // none in flight: nothing held, whatever the sums' rounding left
    else if (held != m_held.end())
        held->usd = std::max(0.0, held->usd - it->usd);
    m_reservations.erase(it);
}

void BudgetTracker::scheduleLedgerRead() {
    if (m_readTimer || m_reading || !m_store.readSpend || m_states.isEmpty())
        return;
    m_readTimer = m_clock.schedule(kLedgerReadMs, [this]() {
        m_readTimer = 0;
        readLedger();
    });
}

void BudgetTracker::readLedger() {
    struct Asked {
        QString tenant;
        quint64 generation = 0;
        double unread = 0;
    };
    QList<SpendWindow> windows;
    QList<Asked> asked;
    const QStringList tenants = m_states.keys();
    for (const QString &t : tenants) {
        Account *a = current(t);
        windows.append({t, a->state.periodStartMs, a->state.periodEndMs});
        asked.append({t, a->generation, a->unread});
    }
    if (windows.isEmpty())
        return;
    m_reading = true;
    m_store.readSpend(windows, [this, asked](std::optional<QList<double>> spent) {
        m_reading = false;
        for (qsizetype i = 0; spent && i < asked.size() && i < spent->size(); ++i) {
            const auto it = m_states.find(asked[i].tenant);
            if (it == m_states.end() || it->generation != asked[i].generation)
                continue; // read afresh since: this answer is for an older count
            // The rows counted before the read was asked are in its answer; the ones since are not.
            it->unread -= asked[i].unread;
            // Spend in a period only grows: an answer that finds less (a row pruned, a stepped wall
            // clock stamping rows outside the period) lowers nothing this process counted.
            it->state.spent = std::max(it->state.spent, spent->at(i) + it->unread);
            it->unknown = false; // read whole at last: the budget holds again
            checkThresholds(it->state);
        }
        scheduleLedgerRead();
    });
}

std::optional<QString> BudgetTracker::unavailable(const QString &tenant) const {
    const auto it = m_states.constFind(tenant);
    if (it == m_states.cend())
        return std::nullopt;
    if (!it->unknown && (!m_store.available || m_store.available()))
        return std::nullopt;
    return QStringLiteral("usage ledger unavailable: spend budgets cannot be enforced (tenant \"%1\" has a budget of "
                          "%2); see the Switchman log")
        .arg(tenant, budgetDescription(m_states.value(tenant).state));
}

QList<BudgetState> BudgetTracker::states() {
    QStringList names = m_states.keys();
    names.sort();
    QList<BudgetState> out;
    for (const QString &n : names) {
        BudgetState s = current(n)->state;
        s.reserved = m_held.value(n).usd;
        out.append(s);
    }
    return out;
}

} // namespace sw::telemetry
