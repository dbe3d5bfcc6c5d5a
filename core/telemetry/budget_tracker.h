#pragma once
// Spend budgets per tenant: `tenants.NAME.budget {usd, period}` over
// calendar periods in local time (a day from midnight, a week from Monday, a
// month from the 1st). Counts each usage row's cost as it is recorded, so the
// gate never waits for the ledger; at start (for a budget a reload adds, and
// when the clock enters another period, forward or back) it reads the period's
// spend so far from the ledger.
//
// Two things the row count alone misses:
//  - Requests in flight. Each admitted request reserves an estimate of its cost
//    until it ends; a request is refused (InFlight, a short Retry-After) when
//    the tenant's requests in flight would carry spend past the budget, so a
//    burst of parallel requests cannot overshoot by more than one request.
//  - Other processes. Replicas share one ledger file: every kLedgerReadMs the
//    period's spend is read again off the request path (Store::readSpend) and
//    this process's rows counted since that read was asked are added to it.
// Wall time comes from the injected clock: tests move across period boundaries
// and through ledger reads without sleeping.

#include "core/config/config.h"
#include "core/telemetry/usage_report.h"

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
    double reserved = 0; // held by this process's requests in flight (their estimates, less what they spent)
    qint64 periodStartMs = 0;
    qint64 periodEndMs = 0;
    bool reached() const { return spent >= usd; }
};

class BudgetTracker final : public QObject {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(BudgetTracker)
public:
    static constexpr double kWarnFraction = 0.8;
    // How often the shared ledger is read again: what other replicas spent shows within this plus
    // their ledger's own batching (UsageLedger::kFlushMs).
    static constexpr qint64 kLedgerReadMs = 1000;
    // The Retry-After of an InFlight refusal: requests in flight end in seconds, not at the period's end.
    static constexpr qint64 kInFlightRetryAfterS = 2;

    // Where spend and the notices given live (the ledger); empty functions = nothing remembered.
    struct Store {
        // Cost in [sinceEpochMs, untilEpochMs): a row stamped past the period's end is not this period's.
        // nullopt: the ledger could not be read; the tenant's spend is unknown (unavailable()) until a
        // readSpend answer tells it.
        std::function<std::optional<double>(const QString &tenant, qint64 sinceEpochMs, qint64 untilEpochMs)>
            spentSince;
        std::function<bool(const QString &tenant, qint64 periodStartMs)> noticeGiven;
        std::function<void(const QString &tenant, qint64 periodStartMs)> rememberNotice;
        // False when the ledger could not be read at start: spend is unknown, budgets cannot be enforced.
        std::function<bool()> available;
        // Off the request path: each window's spend as the ledger holds it now, rows other processes
        // wrote included, and every row this process handed the ledger before the call. `done` runs
        // later on the tracker's thread, with nullopt when there is nothing new (no other process
        // wrote since the last read) or the ledger could not be read. Empty: spend is this
        // process's own (a ledger in memory, which no other process shares).
        using SpendAnswer = std::function<void(std::optional<QList<double>> spent)>;
        std::function<void(const QList<SpendWindow> &windows, SpendAnswer done)> readSpend;
    };

    BudgetTracker(util::Clock &clock, Store store, QObject *parent = nullptr);
    ~BudgetTracker() override;

    // The tenants' budgets; a tenant whose budget and period are unchanged keeps its count.
    void configure(const QMap<QString, config::TenantConfig> &tenants);
    // A usage row's cost (every attempt that reported usage, answered or not).
    void add(const QString &tenant, double cost);

    struct Refusal {
        enum class Kind {
            Reached,  // spend reached the budget: until the period resets
            InFlight, // requests in flight would reach it: until they end
        };
        Kind kind = Kind::Reached;
        QString message;        // names the budget and the period
        qint64 retryAfterS = 0; // until the period resets (Reached), kInFlightRetryAfterS (InFlight)
    };
    // Set when the tenant has reached its budget in the current period.
    std::optional<Refusal> refusal(const QString &tenant);

    // A request admitted against a budget: what it may still cost is held until release().
    using ReservationId = quint64; // 0: none held (no budget, or refused)
    // Admits a request of `tenant` that may cost up to `estimateUsd`, or refuses it: Reached at the
    // budget; InFlight when requests of the tenant already hold reservations and spend, those
    // and this estimate would pass the budget. A request with none in flight beside it is judged on
    // spend alone (as refusal()), so an estimate larger than what is left never shuts a tenant out
    // before its budget is reached: the overshoot is at most that one request.
    std::optional<Refusal> reserve(const QString &tenant, double estimateUsd, ReservationId *id);
    // A usage row of the request holding `id` was counted as spend: its reservation shrinks by it.
    void consume(ReservationId id, double cost);
    // The request holding `id` tries again after a try that cost (a failover, a retry): the try ahead
    // may cost its estimate once more, so the reservation grows back to `estimateUsd`, by reserve()'s
    // rule: Reached at the budget; InFlight when other requests of the tenant are in flight and spend,
    // what they all hold and the top-up would pass the budget. Refused, the request ends there, so a
    // burst of failovers cannot pass the budget by more than one request's estimate (probe K3 2).
    std::optional<Refusal> renew(ReservationId id, double estimateUsd);
    // The request ended (answered, failed, its client gone): what it still held is let go.
    void release(ReservationId id);
    // Set when the tenant has a budget and the ledger holding its spend could not be read (not at
    // all, or its period's spend failed to read: a corrupt page): the request is refused (503)
    // rather than served on a budget counted from $0.
    std::optional<QString> unavailable(const QString &tenant) const;
    QList<BudgetState> states(); // by tenant name

Q_SIGNALS:
    // Once per tenant and period (remembered across restarts): spend reached 80 % of the budget.
    void warning(const sw::telemetry::BudgetState &state);
    // Once per tenant and period while the process runs: the budget is reached, requests are refused.
    void reached(const sw::telemetry::BudgetState &state);

private:
    struct Account {
        BudgetState state;
        // This process's spend counted since the last ledger read was asked for: not in its answer.
        double unread = 0;
        // Bumped when spend is read afresh (start, reload, another period): a ledger read asked for
        // before that answers for an older count and is dropped.
        quint64 generation = 0;
        // The period's spend could not be read (Store::spentSince said nullopt): state.spent is only
        // this process's since, and the budget is not enforced on it until a ledger read answers.
        bool unknown = false;
    };
    struct Held {
        double usd = 0;
        int requests = 0;
    };
    struct Reservation {
        QString tenant;
        double usd = 0;
    };

    Account *current(const QString &tenant); // rolled over to the period holding now; null = no budget
    static Refusal inFlightRefusal(const BudgetState &s, const Held &held, double estimate, bool anotherTry);
    void readAfresh(Account &a);
    void checkThresholds(BudgetState &s);
    void scheduleLedgerRead();
    void readLedger();

    util::Clock &m_clock;
    Store m_store;
    QHash<QString, Account> m_states;
    QHash<QString, Held> m_held; // tenant -> what its requests in flight hold
    QHash<ReservationId, Reservation> m_reservations;
    ReservationId m_lastReservation = 0;
    quint64 m_lastGeneration = 0;
    quint64 m_readTimer = 0;
    bool m_reading = false;                 // a ledger read is out; the next is scheduled when it answers
    QHash<QString, qint64> m_warnedPeriod;  // tenant -> period start the 80 % notice was given for
    QHash<QString, qint64> m_reachedPeriod; // tenant -> period start the "reached" line was said for
};

// "day", "week", "month" as a sentence says it: "per day", ...; and the reset moment in local time.
QString budgetDescription(const BudgetState &s);

} // namespace sw::telemetry

Q_DECLARE_METATYPE(sw::telemetry::BudgetState)
