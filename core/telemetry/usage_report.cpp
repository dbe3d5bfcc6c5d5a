#include "core/telemetry/usage_report.h"

#include <QDateTime>
#include <QJsonArray>
#include <QRegularExpression>
#include <QTimeZone>

namespace sw::telemetry {

QString groupingName(UsageGrouping g) {
    switch (g) {
    case UsageGrouping::None:
        return {};
    case UsageGrouping::Day:
        return QStringLiteral("day");
    case UsageGrouping::Provider:
        return QStringLiteral("provider");
    case UsageGrouping::Model:
        return QStringLiteral("model");
    case UsageGrouping::Tenant:
        return QStringLiteral("tenant");
    }
    return {};
}

std::optional<UsageGrouping> groupingFromName(const QString &name) {
    for (UsageGrouping g : {UsageGrouping::None, UsageGrouping::Day, UsageGrouping::Provider, UsageGrouping::Model,
                            UsageGrouping::Tenant})
        if (groupingName(g) == name)
            return g;
    return std::nullopt;
}

QString modelOfCandidate(const QString &candidate) {
    const qsizetype slash = candidate.indexOf(QLatin1Char('/'));
    return slash < 0 ? candidate : candidate.mid(slash + 1);
}

namespace {

QJsonObject totalsJson(const UsageTotals &t) {
    return {{QStringLiteral("attempts"), double(t.attempts)},     {QStringLiteral("input"), double(t.input)},
            {QStringLiteral("output"), double(t.output)},         {QStringLiteral("cacheRead"), double(t.cacheRead)},
            {QStringLiteral("cacheWrite"), double(t.cacheWrite)}, {QStringLiteral("cost"), t.cost}};
}

// Local time, as a spreadsheet takes it (the CSV).
QString localTime(qint64 epochMs) {
    return QDateTime::fromMSecsSinceEpoch(epochMs).toString(Qt::ISODate);
}

// Local time with its offset from UTC ("2026-12-05T19:13:28+05:30"), for the JSON: read right on any
// machine and by any parser (without it, a consumer elsewhere or JavaScript's Date read it in its
// own zone, an offset off the log's UTC: probe I3 5).
QString localTimeWithOffset(qint64 epochMs) {
    const QDateTime local = QDateTime::fromMSecsSinceEpoch(epochMs);
    return local.toOffsetFromUtc(local.offsetFromUtc()).toString(Qt::ISODate);
}

// A text field (numbers are written as numbers, not through here). One that a spreadsheet would
// read as a formula (=, +, -, @, a tab or a carriage return first: a model id or route a tenant
// chose, "=HYPERLINK(…)") starts with an apostrophe, which Excel and LibreOffice show as text.
QString csvField(const QString &field) {
    static const QString formulaStarts = QStringLiteral("=+-@\t\r");
    const QString v = !field.isEmpty() && formulaStarts.contains(field.front()) ? QLatin1Char('\'') + field : field;
    if (!v.contains(QLatin1Char(',')) && !v.contains(QLatin1Char('"')) && !v.contains(QLatin1Char('\n')) &&
        !v.contains(QLatin1Char('\r')))
        return v;
    QString q = v;
    q.replace(QLatin1Char('"'), QLatin1String("\"\""));
    return QLatin1Char('"') + q + QLatin1Char('"');
}

// Six decimals: a cent is far above it, and a cheap model's single request still shows.
QString costText(double cost) {
    return QString::number(cost, 'f', 6);
}

} // namespace

QJsonObject UsageReport::toJson() const {
    QJsonArray arr;
    if (groupBy == UsageGrouping::None) {
        for (const UsageRow &u : rows)
            arr.append(QJsonObject{{QStringLiteral("requestId"), u.requestId},
                                   {QStringLiteral("tenant"), u.tenant},
                                   {QStringLiteral("route"), u.route},
                                   {QStringLiteral("candidate"), u.candidate},
                                   {QStringLiteral("provider"), u.provider},
                                   {QStringLiteral("model"), modelOfCandidate(u.candidate)},
                                   {QStringLiteral("input"), double(u.input)},
                                   {QStringLiteral("output"), double(u.output)},
                                   {QStringLiteral("cacheRead"), double(u.cacheRead)},
                                   {QStringLiteral("cacheWrite"), double(u.cacheWrite)},
                                   {QStringLiteral("cost"), u.cost},
                                   {QStringLiteral("outcome"), u.outcome},
                                   {QStringLiteral("atMs"), double(u.atEpochMs)},
                                   {QStringLiteral("at"), localTimeWithOffset(u.atEpochMs)}});
    } else {
        const QString keyName = groupingName(groupBy);
        for (const UsageTotals &g : groups) {
            QJsonObject o = totalsJson(g);
            o.insert(keyName, g.key);
            if (g.otherGroups > 0)
                o.insert(QStringLiteral("otherGroups"), double(g.otherGroups));
            arr.append(o);
        }
    }
    QJsonObject out{{QStringLiteral("rows"), arr}, {QStringLiteral("totals"), totalsJson(totals)}};
    if (groupBy != UsageGrouping::None)
        out.insert(QStringLiteral("groupBy"), groupingName(groupBy));
    if (!error.isEmpty())
        out.insert(QStringLiteral("error"), error);
    if (unreadable)
        out.insert(QStringLiteral("unreadable"), true);
    return out;
}

UsageReport UsageReport::fromJson(const QJsonObject &json) {
    auto totalsOf = [](const QJsonObject &o) {
        UsageTotals t;
        t.attempts = o.value(QStringLiteral("attempts")).toInteger();
        t.input = o.value(QStringLiteral("input")).toInteger();
        t.output = o.value(QStringLiteral("output")).toInteger();
        t.cacheRead = o.value(QStringLiteral("cacheRead")).toInteger();
        t.cacheWrite = o.value(QStringLiteral("cacheWrite")).toInteger();
        t.cost = o.value(QStringLiteral("cost")).toDouble();
        return t;
    };
    UsageReport r;
    r.groupBy = groupingFromName(json.value(QStringLiteral("groupBy")).toString()).value_or(UsageGrouping::None);
    r.totals = totalsOf(json.value(QStringLiteral("totals")).toObject());
    r.error = json.value(QStringLiteral("error")).toString();
    r.unreadable = json.value(QStringLiteral("unreadable")).toBool();
    const QString keyName = groupingName(r.groupBy);
    for (const QJsonValue &v : json.value(QStringLiteral("rows")).toArray()) {
        const QJsonObject o = v.toObject();
        if (r.groupBy != UsageGrouping::None) {
            UsageTotals t = totalsOf(o);
            t.key = o.value(keyName).toString();
            t.otherGroups = o.value(QStringLiteral("otherGroups")).toInteger();
            r.groups.append(t);
            continue;
        }
        UsageRow u;
        u.requestId = o.value(QStringLiteral("requestId")).toString();
        u.tenant = o.value(QStringLiteral("tenant")).toString();
        u.route = o.value(QStringLiteral("route")).toString();
        u.candidate = o.value(QStringLiteral("candidate")).toString();
        u.provider = o.value(QStringLiteral("provider")).toString();
        u.input = o.value(QStringLiteral("input")).toInteger();
        u.output = o.value(QStringLiteral("output")).toInteger();
        u.cacheRead = o.value(QStringLiteral("cacheRead")).toInteger();
        u.cacheWrite = o.value(QStringLiteral("cacheWrite")).toInteger();
        u.cost = o.value(QStringLiteral("cost")).toDouble();
        u.outcome = o.value(QStringLiteral("outcome")).toString();
        u.atEpochMs = o.value(QStringLiteral("atMs")).toInteger();
        r.rows.append(u);
    }
    return r;
}

QString UsageReport::toCsv() const {
    QString out;
    if (groupBy == UsageGrouping::None) {
        out += QStringLiteral(
            "at,requestId,tenant,route,provider,model,input,output,cacheRead,cacheWrite,cost,outcome\r\n");
        for (const UsageRow &u : rows)
            out += QStringList{csvField(localTime(u.atEpochMs)),
                               csvField(u.requestId),
                               csvField(u.tenant),
                               csvField(u.route),
                               csvField(u.provider),
                               csvField(modelOfCandidate(u.candidate)),
                               QString::number(u.input),
                               QString::number(u.output),
                               QString::number(u.cacheRead),
                               QString::number(u.cacheWrite),
                               costText(u.cost),
                               csvField(u.outcome)}
                       .join(QLatin1Char(',')) +
                   QStringLiteral("\r\n");
        return out;
    }
    out += groupingName(groupBy) + QStringLiteral(",attempts,input,output,cacheRead,cacheWrite,cost\r\n");
    for (const UsageTotals &g : groups)
        out += QStringList{csvField(g.key),           QString::number(g.attempts),  QString::number(g.input),
                           QString::number(g.output), QString::number(g.cacheRead), QString::number(g.cacheWrite),
                           costText(g.cost)}
                   .join(QLatin1Char(',')) +
               QStringLiteral("\r\n");
    return out;
}

QString UsageReport::toText() const {
    QList<QStringList> table;
    if (groupBy == UsageGrouping::None) {
        table.append({QStringLiteral("AT"), QStringLiteral("TENANT"), QStringLiteral("PROVIDER"),
                      QStringLiteral("MODEL"), QStringLiteral("INPUT"), QStringLiteral("OUTPUT"),
                      QStringLiteral("COST (USD)"), QStringLiteral("OUTCOME")});
        for (const UsageRow &u : rows)
            table.append({QDateTime::fromMSecsSinceEpoch(u.atEpochMs).toString(QStringLiteral("yyyy-MM-dd HH:mm:ss")),
                          u.tenant, u.provider, modelOfCandidate(u.candidate), QString::number(u.input),
                          QString::number(u.output), QString::number(u.cost, 'f', 4), u.outcome});
    } else {
        table.append({groupingName(groupBy).toUpper(), QStringLiteral("ATTEMPTS"), QStringLiteral("INPUT"),
                      QStringLiteral("OUTPUT"), QStringLiteral("CACHE READ"), QStringLiteral("CACHE WRITE"),
                      QStringLiteral("COST (USD)")});
        for (const UsageTotals &g : groups)
            table.append({g.key, QString::number(g.attempts), QString::number(g.input), QString::number(g.output),
                          QString::number(g.cacheRead), QString::number(g.cacheWrite),
                          QString::number(g.cost, 'f', 4)});
    }
    QList<qsizetype> widths(table.first().size(), 0);
    for (const QStringList &line : table)
        for (qsizetype i = 0; i < line.size(); ++i)
            widths[i] = std::max(widths[i], line.at(i).size());
    QString out;
    for (const QStringList &line : table) {
        QStringList cells;
        for (qsizetype i = 0; i < line.size(); ++i)
            cells << (i + 1 == line.size() ? line.at(i) : line.at(i).leftJustified(widths[i]));
        out += cells.join(QStringLiteral("  ")) + QLatin1Char('\n');
    }
    out += QStringLiteral("Total: %1 attempts, %2 input, %3 output tokens, $%4\n")
               .arg(totals.attempts)
               .arg(totals.input)
               .arg(totals.output)
               .arg(totals.cost, 0, 'f', 4);
    return out;
}

std::optional<qint64> parseTimeBound(const QString &text, qint64 nowEpochMs) {
    const QString t = text.trimmed();
    if (t.isEmpty())
        return std::nullopt;
    static const QRegularExpression relative(QStringLiteral("^(\\d{1,6})([dhm])$"));
    if (const auto m = relative.match(t); m.hasMatch()) {
        const qint64 n = m.captured(1).toLongLong();
        const QChar unit = m.captured(2).at(0);
        const qint64 unitMs = unit == QLatin1Char('d') ? 86'400'000 : unit == QLatin1Char('h') ? 3'600'000 : 60'000;
        return nowEpochMs - n * unitMs;
    }
    static const QRegularExpression digits(QStringLiteral("^\\d{10,16}$"));
    if (digits.match(t).hasMatch())
        return t.toLongLong();
    const QDate date = QDate::fromString(t, Qt::ISODate);
    if (date.isValid() && t.size() == 10)
        return date.startOfDay().toMSecsSinceEpoch(); // local midnight
    const QDateTime dt = QDateTime::fromString(t, Qt::ISODateWithMs);
    if (dt.isValid())
        return dt.toMSecsSinceEpoch(); // without an offset: local time
    return std::nullopt;
}

} // namespace sw::telemetry
