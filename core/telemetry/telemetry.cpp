#include "core/telemetry/telemetry.h"

#include "core/telemetry/stderr_sink.h"

#include "core/util/redaction.h"
#include "core/wire/json_writer.h"

#include <QDateTime>
#include <QJsonDocument>
#include <QMetaMethod>

#include <cstring>
#include <utility>

namespace sw::telemetry {

QString outcomeName(AttemptOutcome o) {
    switch (o) {
    case AttemptOutcome::Committed:
        return QStringLiteral("committed");
    case AttemptOutcome::Failed:
        return QStringLiteral("failed");
    case AttemptOutcome::Skipped:
        return QStringLiteral("skipped");
    case AttemptOutcome::Aborted:
        return QStringLiteral("aborted");
    case AttemptOutcome::Refused:
        return QStringLiteral("refused");
    }
    return QStringLiteral("failed");
}

void Telemetry::Histogram::observe(double v) {
    if (counts.size() != bounds.size() + 1)
        counts = QList<qint64>(bounds.size() + 1, 0);
    int i = 0;
    while (i < bounds.size() && v > bounds[i])
        ++i;
    ++counts[i];
    sum += v;
    ++count;
}

Telemetry::Telemetry(QObject *parent) : QObject(parent) {
    const QList<double> bounds{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
    m_requestSeconds.bounds = bounds;
    m_ttftSeconds.bounds = bounds;
    qRegisterMetaType<AttemptRecord>();
    qRegisterMetaType<UsageRow>();
    qRegisterMetaType<LogRecord>();
}

void Telemetry::recordAttempt(const AttemptRecord &record) {
    m_attempts.push_front(record);
    if (m_attempts.size() > kAttemptCapacity)
        m_attempts.pop_back();
    // An answer broken off after commit gets a second row for the same attempt; the attempt was
    // counted once already, as committed (its failure moves switchman_candidate_failures_total).
    // A refused request made no attempt: it is counted by its status instead.
    if (record.outcome == AttemptOutcome::Refused)
        countRefusal(record.status);
    else if (record.logOutcome != QLatin1String("after_commit"))
        ++m_attemptsByOutcome[record.provider + QChar(0x1f) + outcomeName(record.outcome)];
    if (!record.requestedModel.isEmpty()) {
        if (m_routes.size() >= 4096)
            m_oldRoutes = std::exchange(m_routes, {});
        m_routes.insert(record.requestId, record.requestedModel);
    }
    Q_EMIT attemptRecorded(record);
}

void Telemetry::recordUsage(const UsageRow &row) {
    m_usage.push_back(row);
    if (m_usage.size() > kUsageCapacity)
        m_usage.pop_front();
    Q_EMIT usageRecorded(row);
}

void Telemetry::countFailure(const QString &provider, const QString &failureKind) {
    ++m_failures[provider + QChar(0x1f) + failureKind];
}

bool Telemetry::admitRefusalRecord(const QString &tenant, qint64 nowMs) {
    RefusalWindow &w = m_refusalWindows[tenant];
    if (w.recorded == 0 || nowMs - w.startMs >= kRefusalWindowMs || nowMs < w.startMs)
        w = {nowMs, 0, false};
    if (w.recorded < kRefusalRecordsPerWindow) {
        ++w.recorded;
        return true;
    }
    if (!std::exchange(w.toldHeldBack, true))
        log(QStringLiteral("warn"), QStringLiteral("refused requests not recorded"),
            {{QStringLiteral("tenant"), tenant},
             {QStringLiteral("limit"), QStringLiteral("%1 a tenant in %2 s; the rest are counted in "
                                                      "switchman_refused_requests_total")
                                           .arg(kRefusalRecordsPerWindow)
                                           .arg(kRefusalWindowMs / 1000)}});
    return false;
}

void Telemetry::requestFinished(qint64 durationMs) {
    --m_inFlight;
    m_requestSeconds.observe(double(durationMs) / 1000.0);
}

void Telemetry::observeTtft(qint64 ms) {
    m_ttftSeconds.observe(double(ms) / 1000.0);
}

namespace {

QString isoUtcMs(qint64 atMs) {
    return QDateTime::fromMSecsSinceEpoch(atMs, Qt::UTC).toString(Qt::ISODateWithMs);
}

// The line goes to a terminal or a log viewer: DEL, the C1 controls (U+009B starts an escape
// sequence in some terminals, as ESC does) and the invisible format characters that reorder or
// hide text (bidi embeddings, overrides and isolates, zero-width characters, BOM) are written
// as \\u escapes, as JSON writes C0 controls. The same JSON value either way; only bytes inside
// strings can be these, so the line stays valid. Upstream error text and client names reach here.
QByteArray terminalSafe(QByteArray line) {
    QByteArray out;
    qsizetype copied = 0;
    auto escape = [&](qsizetype at, qsizetype length, uint codePoint) {
        out.append(line.constData() + copied, at - copied);
        out.append(QStringLiteral("\\u%1").arg(codePoint, 4, 16, QLatin1Char('0')).toLatin1());
        copied = at + length;
    };
    const auto *b = reinterpret_cast<const uchar *>(line.constData());
    for (qsizetype i = 0; i < line.size(); ++i) {
        if (b[i] == 0x7f) {
            escape(i, 1, 0x7f);
        } else if (b[i] == 0xc2 && i + 1 < line.size() && b[i + 1] >= 0x80 && b[i + 1] <= 0x9f) {
            escape(i, 2, b[i + 1]);
        } else if ((b[i] == 0xe2 || b[i] == 0xef) && i + 2 < line.size()) {
            const uint cp = ((b[i] & 0x0fu) << 12) | ((b[i + 1] & 0x3fu) << 6) | (b[i + 2] & 0x3fu);
            if ((cp >= 0x200b && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x2069) ||
                cp == 0xfeff)
                escape(i, 3, cp);
        }
    }
    if (copied == 0)
        return line;
    out.append(line.constData() + copied, line.size() - copied);
    return out;
}

} // namespace

QJsonObject LogRecord::toJson() const {
    QJsonObject o = fields;
    for (const auto &[name, value] : gathered)
        o.insert(name, QJsonValue::fromVariant(value));
    o.insert(QLatin1String("ts"), isoUtcMs(atMs));
    o.insert(QLatin1String("level"), level);
    o.insert(QLatin1String("msg"), message);
    return o;
}

QByteArray LogRecord::toJsonLine() const {
    wire::JsonWriter w;
    w.beginObject().field("ts", isoUtcMs(atMs)).field("level", level).field("msg", message);
    const auto reserved = [](const auto &name) {
        return name == QLatin1String("ts") || name == QLatin1String("level") || name == QLatin1String("msg");
    };
    const auto gatheredHas = [this](QStringView name) {
        for (const auto &field : gathered)
            if (name == field.first)
                return true;
        return false;
    };
    for (auto it = fields.begin(); it != fields.end(); ++it) {
        if (!reserved(it.key()) && !gatheredHas(it.key()))
            w.key(it.key()).value(it.value());
    }
    for (qsizetype i = 0; i < gathered.size(); ++i) {
        const QLatin1String name = gathered[i].first;
        bool replacedLater = false;
        for (qsizetype j = i + 1; j < gathered.size() && !replacedLater; ++j)
            replacedLater = gathered[j].first == name;
        if (!reserved(name) && !replacedLater)
            w.key(name).value(QJsonValue::fromVariant(gathered[i].second));
    }
    w.endObject().appendRaw("\n");
    return terminalSafe(w.take());
}

namespace {

void writeQtMessageAsJsonLine(QtMsgType type, const QMessageLogContext &context, const QString &message) {
    // A message raised while this one is written (by the JSON code itself) is dropped, not
    // written in Qt's plain form nor recursed into.
    static thread_local bool writing = false;
    if (writing)
        return;
    writing = true;
    QString level;
    switch (type) {
    case QtDebugMsg:
        level = QStringLiteral("debug");
        break;
    case QtInfoMsg:
        level = QStringLiteral("info");
        break;
    case QtWarningMsg:
        level = QStringLiteral("warn");
        break;
    case QtCriticalMsg:
    case QtFatalMsg: // Qt aborts after the handler returns
        level = QStringLiteral("error");
        break;
    }
    QJsonObject fields{{QStringLiteral("source"), QStringLiteral("qt")}};
    if (context.category && std::strcmp(context.category, "default") != 0)
        fields.insert(QStringLiteral("category"), QString::fromLatin1(context.category));
    // A debug category prints what it sees (request headers among it).
    const QByteArray line =
        LogRecord{QDateTime::currentMSecsSinceEpoch(), level, util::redactSecrets(message), std::move(fields), {}}
            .toJsonLine();
    StderrSink::instance().write(line);
    if (type == QtFatalMsg) // Qt aborts when this returns: the line goes first, if its reader reads
        StderrSink::instance().flush(StderrSink::kFlushOnExitMs);
    writing = false;
}

} // namespace

void logQtMessagesAsJsonLines() {
    qInstallMessageHandler(writeQtMessageAsJsonLine);
}

void Telemetry::log(const QString &level, const QString &message, QJsonObject fields) {
    emitLog(LogRecord{QDateTime::currentMSecsSinceEpoch(), level, message, std::move(fields), {}});
}

void Telemetry::log(const QString &level, const QString &message, util::LogFields fields) {
    emitLog(LogRecord{QDateTime::currentMSecsSinceEpoch(), level, message, {}, std::move(fields)});
}

void Telemetry::emitLog(LogRecord record) {
    if (m_stderrLog) {
        StderrSink::instance().write(record.toJsonLine()); // never waits for the log's reader
    }
    static const QMetaMethod logLineSignal = QMetaMethod::fromSignal(&Telemetry::logLine);
    if (isSignalConnected(logLineSignal))
        Q_EMIT logLine(record.toJson());
    Q_EMIT logged(record);
}

QList<AttemptRecord> Telemetry::attempts(int limit) const {
    QList<AttemptRecord> out;
    for (const auto &a : m_attempts) {
        if (limit >= 0 && out.size() >= limit)
            break;
        out.append(a);
    }
    return out;
}

QString Telemetry::routeOf(const QString &requestId) const {
    const QString id = requestId.section(QLatin1Char(':'), 0, 0);
    const auto it = m_routes.constFind(id);
    return it != m_routes.cend() ? *it : m_oldRoutes.value(id);
}

QList<UsageRow> Telemetry::usage() const {
    return QList<UsageRow>(m_usage.begin(), m_usage.end());
}

namespace {
QString escapeLabel(const QString &v) {
    QString out = v;
    out.replace(QLatin1Char('\\'), QLatin1String("\\\\")).replace(QLatin1Char('"'), QLatin1String("\\\""));
    out.replace(QLatin1Char('\n'), QLatin1String("\\n"));
    return out;
}
} // namespace

QString Telemetry::metricsText(const QHash<QString, int> &marks) const {
    QString out;
    auto pairs = [](const QHash<QString, qint64> &h) {
        QList<std::pair<QString, qint64>> v(h.keyValueBegin(), h.keyValueEnd());
        std::sort(v.begin(), v.end());
        return v;
    };
    out += QLatin1String(
        "# HELP switchman_candidate_failures_total Failed candidate attempts by provider and failure kind.\n"
        "# TYPE switchman_candidate_failures_total counter\n");
    for (const auto &[key, n] : pairs(m_failures)) {
        const auto parts = key.split(QChar(0x1f));
        out += QStringLiteral("switchman_candidate_failures_total{provider=\"%1\",failure=\"%2\"} %3\n")
                   .arg(escapeLabel(parts.value(0)), escapeLabel(parts.value(1)))
                   .arg(n);
    }
    out += QLatin1String("# HELP switchman_attempts_total Attempts by provider and outcome.\n"
                         "# TYPE switchman_attempts_total counter\n");
    for (const auto &[key, n] : pairs(m_attemptsByOutcome)) {
        const auto parts = key.split(QChar(0x1f));
        out += QStringLiteral("switchman_attempts_total{provider=\"%1\",outcome=\"%2\"} %3\n")
                   .arg(escapeLabel(parts.value(0)), escapeLabel(parts.value(1)))
                   .arg(n);
    }
    out += QLatin1String(
        "# HELP switchman_refused_requests_total Requests the gateway answered with its own error "
        "before any upstream attempt, by status (401: no or unknown gateway key, on any route; the listener's own "
        "refusals too: 503 past limits.maxConnections or out of file descriptors, 400, 408, 413, "
        "431 of a request it could not take, 403 for a foreign Host or Origin).\n"
        "# TYPE switchman_refused_requests_total counter\n");
    QList<int> refusedStatuses = m_refusedByStatus.keys();
    std::sort(refusedStatuses.begin(), refusedStatuses.end());
    for (const int status : refusedStatuses)
        out += QStringLiteral("switchman_refused_requests_total{status=\"%1\"} %2\n")
                   .arg(status)
                   .arg(m_refusedByStatus.value(status));
    out += QLatin1String("# HELP switchman_marks Active provider-down marks by tenant hash and kind.\n"
                         "# TYPE switchman_marks gauge\n");
    QStringList markKeys = marks.keys();
    std::sort(markKeys.begin(), markKeys.end());
    for (const QString &key : markKeys) {
        const auto parts = key.split(QChar(0x1f));
        out += QStringLiteral("switchman_marks{tenant_hash=\"%1\",kind=\"%2\"} %3\n")
                   .arg(escapeLabel(parts.value(0)), escapeLabel(parts.value(1)))
                   .arg(marks.value(key));
    }
    out += QStringLiteral("# HELP switchman_requests_in_flight Chat requests being served.\n"
                          "# TYPE switchman_requests_in_flight gauge\nswitchman_requests_in_flight %1\n")
               .arg(m_inFlight);
    auto histogram = [&out](const char *name, const char *help, const Histogram &h) {
        out += QStringLiteral("# HELP %1 %2\n# TYPE %1 histogram\n").arg(QLatin1String(name), QLatin1String(help));
        qint64 cumulative = 0;
        for (int i = 0; i < h.bounds.size(); ++i) {
            cumulative += h.counts.value(i);
            out +=
                QStringLiteral("%1_bucket{le=\"%2\"} %3\n").arg(QLatin1String(name)).arg(h.bounds[i]).arg(cumulative);
        }
        out += QStringLiteral("%1_bucket{le=\"+Inf\"} %2\n%1_sum %3\n%1_count %2\n")
                   .arg(QLatin1String(name))
                   .arg(h.count)
                   .arg(h.sum);
    };
    histogram("switchman_request_duration_seconds", "Chat request duration.", m_requestSeconds);
    histogram("switchman_ttft_seconds",
              "Time to first token of committed streamed answers (a JSON answer has no first token the client sees).",
              m_ttftSeconds);
    return out;
}

} // namespace sw::telemetry
