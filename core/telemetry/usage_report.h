#pragma once
// A question to the usage ledger and its answer, as plain values: the admin API,
// the command line (`switchman usage`) and the Usage screen ask the same way and
// print the same JSON and CSV.

#include "core/telemetry/engine_events.h"

#include <QJsonObject>
#include <QList>
#include <QMetaType>
#include <QString>
#include <optional>

namespace sw::telemetry {

enum class UsageGrouping { None, Day, Provider, Model, Tenant };
QString groupingName(UsageGrouping g); // "", day, provider, model, tenant
std::optional<UsageGrouping> groupingFromName(const QString &name);

struct UsageQuery {
    qint64 sinceMs = 0; // epoch ms, inclusive; 0 = from the start
    qint64 untilMs = 0; // epoch ms, exclusive; 0 = until now
    QString tenant;     // empty = every tenant
    UsageGrouping groupBy = UsageGrouping::None;
    int limit = 10000; // ungrouped rows: the newest `limit`, oldest first
    // Grouped by model, provider or tenant: the `maxGroups` groups that cost most (then the most
    // attempts), and the rest folded into one last row, key "(other)". A client can name any
    // number of models (a direct selector provider/<anything>): 100 000 of them made a 28.8 MB
    // answer. Days are not bounded (a window holds as many as it spans).
    int maxGroups = kDefaultMaxGroups;
    static constexpr int kDefaultMaxGroups = 100;
    static constexpr int kMaxMaxGroups = 10000; // what /admin/usage?limit= may ask for
    static constexpr int kMaxRows = 10000;      // ungrouped: the most rows one answer holds
};

// An Idempotency-Key answer kept in the ledger file (server::IdempotencyStore): across a
// restart, and for the replicas sharing the file, a retry within 24 h is answered from it.
struct ReplayRow {
    QString tenant;
    QByteArray key;           // as the store holds it (owned by the caller's provider key)
    QByteArray requestDigest; // the route and body that took the key
    int status = 0;
    QByteArray headers; // the store's own encoding
    QByteArray body;
    qint64 atEpochMs = 0;
    bool dropped = false; // a key the store let go: its row is deleted
};

// A tenant's spend over [sinceEpochMs, untilEpochMs): what a budget asks the ledger.
struct SpendWindow {
    QString tenant;
    qint64 sinceEpochMs = 0;
    qint64 untilEpochMs = 0; // exclusive; 0 = no end
};

struct UsageTotals {
    QString key; // the group (a local date yyyy-MM-dd, a provider, model or tenant); empty for totals
    qint64 attempts = 0;
    qint64 input = 0;
    qint64 output = 0;
    qint64 cacheRead = 0;
    qint64 cacheWrite = 0;
    double cost = 0;
    qint64 otherGroups = 0; // > 0: the "(other)" row, folding this many groups past UsageQuery::maxGroups
};

struct UsageReport {
    UsageGrouping groupBy = UsageGrouping::None;
    QList<UsageRow> rows;      // groupBy None
    QList<UsageTotals> groups; // otherwise, ordered by key; an "(other)" row (otherGroups > 0) last
    UsageTotals totals;
    QString error; // the ledger could not answer (the rows may be partial)
    // The ledger could not be read (a corrupt page, an I/O error): the figures are not what was
    // spent, and `switchman usage` fails rather than print them.
    bool unreadable = false;

    // {"rows": [...], "totals": {...}}: ungrouped rows keep the /admin/usage row shape
    // (requestId, tenant, candidate, input, output, cost, outcome, plus the rest).
    QJsonObject toJson() const;
    static UsageReport fromJson(const QJsonObject &json); // what toJson() wrote
    // Header line, then one line per row or group; RFC 4180 quoting.
    QString toCsv() const;
    // Aligned columns for a terminal, with a totals line.
    QString toText() const;
};

// "7d", "24h", "30m" (before `nowEpochMs`), "2026-01-05" (local midnight), an ISO date-time, or
// epoch milliseconds. nullopt when it is none of these.
std::optional<qint64> parseTimeBound(const QString &text, qint64 nowEpochMs);

// The model part of a candidate "provider/model".
QString modelOfCandidate(const QString &candidate);

} // namespace sw::telemetry

Q_DECLARE_METATYPE(sw::telemetry::UsageReport)
