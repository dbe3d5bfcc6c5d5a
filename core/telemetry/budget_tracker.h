#pragma once
// Spend budgets per tenant: `tenants.NAME.budget {usd, period}` over
// calendar periods in local time (a day from midnight, a week from Monday, a
// month from the 1st). Counts each usage row's cost as it is recorded, so the
// gate never waits for the ledger; at start (for a budget a reload adds, and
// when the clock enters another period, forward or back) it reads the period's
// spend so far from the ledger. Wall time comes from the
// injected clock: tests move across period boundaries without sleeping.

#include "core/config/config.h"

#include <QHash>
#include <QMetaType>
#include <QObject>
#include <functional>
#include <optional>

namespace sw::util {
class Clock;
}

namespace sw::telemetry {

struct CalendarPeriod {
    qint64 startMs = 0; // inclusive, epoch ms
    qint64 endMs = 0;   // exclusive: the next period's start
};
// The period of kind "day" | "week" | "month" that holds `epochMs`, in local time.
CalendarPeriod calendarPeriod(const QString &kind, qint64 epochMs);

struct BudgetState {
    QString tenant;
    double usd = 0;
    QString period; // day | week | month
    double spent = 0;
    qint64 periodStartMs = 0;
    qint64 periodEndMs = 0;
    bool reached() const { return spent >= usd; }
};

class BudgetTracker final : public QObject {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(BudgetTracker)
public:
    static constexpr double kWarnFraction = 0.8;

    // Where spend and the notices given live (the ledger); empty functions = nothing remembered.
    struct Store {
        // Cost in [sinceEpochMs, untilEpochMs): a row stamped past the period's end is not this period's.
        std::function<double(const QString &tenant, qint64 sinceEpochMs, qint64 untilEpochMs)> spentSince;
        std::function<bool(const QString &tenant, qint64 periodStartMs)> noticeGiven;
        std::function<void(const QString &tenant, qint64 periodStartMs)> rememberNotice;
        // False when the ledger could not be read at start: spend is unknown, budgets cannot be enforced.
        std::function<bool()> available;
    };

    BudgetTracker(util::Clock &clock, Store store, QObject *parent = nullptr);

    // The tenants' budgets; a tenant whose budget and period are unchanged keeps its count.
    void configure(const QMap<QString, config::TenantConfig> &tenants);
    // A usage row's cost (every attempt that reported usage, answered or not).
    void add(const QString &tenant, double cost);

    struct Refusal {
        QString message;        // names the budget and the period
        qint64 retryAfterS = 0; // until the period resets
    };
    // Set when the tenant has reached its budget in the current period.
    std::optional<Refusal> refusal(const QString &tenant);
    // Set when the tenant has a budget and the ledger holding its spend could not be read: the
    // request is refused (503) rather than served on a budget counted from $0.
    std::optional<QString> unavailable(const QString &tenant) const;
    QList<BudgetState> states(); // by tenant name

Q_SIGNALS:
    // Once per tenant and period (remembered across restarts): spend reached 80 % of the budget.
    void warning(const sw::telemetry::BudgetState &state);
    // Once per tenant and period while the process runs: the budget is reached, requests are refused.
    void reached(const sw::telemetry::BudgetState &state);

private:
    BudgetState *current(const QString &tenant); // rolled over to the period holding now; null = no budget
    void checkThresholds(BudgetState &s);

    util::Clock &m_clock;
    Store m_store;
    QHash<QString, BudgetState> m_states;
    QHash<QString, qint64> m_warnedPeriod;  // tenant -> period start the 80 % notice was given for
    QHash<QString, qint64> m_reachedPeriod; // tenant -> period start the "reached" line was said for
};

// "day", "week", "month" as a sentence says it: "per day", ...; and the reset moment in local time.
QString budgetDescription(const BudgetState &s);

} // namespace sw::telemetry

Q_DECLARE_METATYPE(sw::telemetry::BudgetState)
