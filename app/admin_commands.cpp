#include "app/admin_commands.h"

#include "core/config/config_loader.h"
#include "core/telemetry/usage_database.h"
#include "core/telemetry/usage_report.h"

#include <QDateTime>

#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QRegularExpression>
#include <QTimer>
#include <QUrlQuery>

namespace sw::app {

namespace {
constexpr int kAdminTimeoutMs = 5000;

struct AdminReply {
    bool reached = false; // an HTTP answer came back (any status)
    int status = 0;
    QByteArray body;
    QString error; // why not reached, in words
};

AdminReply call(const AdminTarget &target, const QByteArray &method, const QString &path, const QUrlQuery &query = {},
                int timeoutMs = kAdminTimeoutMs) {
    QUrl url(target.baseUrl + path);
    url.setQuery(query);
    QNetworkRequest request(url);
    request.setTransferTimeout(timeoutMs);
    if (!target.key.isEmpty())
        request.setRawHeader("x-switchman-key", target.key);
    QNetworkAccessManager nam;
    QNetworkReply *reply = nam.sendCustomRequest(request, method);
    QEventLoop loop;
    QObject::connect(reply, &QNetworkReply::finished, &loop, &QEventLoop::quit);
    QTimer::singleShot(timeoutMs + 500, &loop, &QEventLoop::quit);
    if (!reply->isFinished())
        loop.exec();
    AdminReply out;
    if (!reply->isFinished()) {
        reply->abort();
        out.error = QStringLiteral("no answer within %1 s").arg(timeoutMs / 1000);
    } else {
        const QVariant status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute);
        out.reached = status.isValid();
        out.status = status.toInt();
        out.body = reply->readAll();
        if (!out.reached)
            out.error = reply->errorString();
    }
    reply->deleteLater();
    return out;
}

// Says why a call failed, in words that name the way out. Returns the exit code.
int explain(const AdminTarget &target, const AdminReply &reply, QTextStream &err) {
    if (!reply.reached) {
        err << "switchman: no Switchman answers at " << target.baseUrl << " (" << reply.error
            << ").\nStart it with `switchman --headless`, or name its address with --listen HOST:PORT or --config "
               "FILE.\n";
        return 1;
    }
    if (reply.status == 401 || reply.status == 403) {
        err << "switchman: the admin API at " << target.baseUrl << " wants an admin tenant's key"
            << (target.key.isEmpty() ? ": set SWITCHMAN_ADMIN_KEY to one." : ": SWITCHMAN_ADMIN_KEY is not one.")
            << '\n';
        return 1;
    }
    const QString message = QJsonDocument::fromJson(reply.body)
                                .object()
                                .value(QStringLiteral("error"))
                                .toObject()
                                .value(QStringLiteral("message"))
                                .toString();
    err << "switchman: " << target.baseUrl << " answered " << reply.status
        << (message.isEmpty() ? QString() : QStringLiteral(": ") + printableText(message)) << '\n';
    return 1;
}

QJsonObject jsonOf(const AdminReply &reply) {
    return QJsonDocument::fromJson(reply.body).object();
}

// Columns padded to their widest cell; the last column is left ragged. Every cell is printable
// text: an upstream's error message once cleared the operator's screen and drew a fake
// "healthy" status over the real one.
void printTable(QTextStream &out, const QStringList &header, const QList<QStringList> &given) {
    QList<QStringList> rows;
    for (const auto &row : given) {
        QStringList printable;
        for (const QString &cell : row)
            printable << printableText(cell);
        rows << printable;
    }
    QList<int> widths;
    for (const QString &h : header)
        widths << int(h.size());
    for (const auto &row : std::as_const(rows))
        for (int i = 0; i < row.size() && i < widths.size(); ++i)
            widths[i] = std::max(widths[i], int(row[i].size()));
    auto line = [&](const QStringList &cells) {
        QString text;
        for (int i = 0; i < cells.size(); ++i)
            text += i + 1 < cells.size() ? cells[i].leftJustified(widths[i] + 2) : cells[i];
        while (text.endsWith(QLatin1Char(' ')))
            text.chop(1);
        out << "  " << text << '\n';
    };
    line(header);
    for (const auto &row : std::as_const(rows))
        line(row);
}

// The report's text as printableText() shows it: rows and groups come from the instance's
// answer or the ledger file, and their names from clients and the configuration.
void makePrintable(telemetry::UsageReport &report) {
    for (telemetry::UsageRow &row : report.rows)
        for (QString *field : {&row.requestId, &row.tenant, &row.route, &row.candidate, &row.provider, &row.outcome})
            *field = printableText(*field);
    for (telemetry::UsageTotals &group : report.groups)
        group.key = printableText(group.key);
    report.error = printableText(report.error);
}

QString orDash(const QJsonValue &v) {
    if (v.isNull() || v.isUndefined())
        return QStringLiteral("-");
    if (v.isDouble())
        return QString::number(v.toInteger());
    const QString s = v.toString();
    return s.isEmpty() ? QStringLiteral("-") : s;
}
} // namespace

int usageCommand(const AdminTarget &target, const UsageArguments &args, QTextStream &out, QTextStream &err) {
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    telemetry::UsageQuery q;
    q.sinceMs = args.since.isEmpty() ? 0 : telemetry::parseTimeBound(args.since, now).value_or(0);
    q.untilMs = args.until.isEmpty() ? 0 : telemetry::parseTimeBound(args.until, now).value_or(0);
    q.tenant = args.tenant;
    q.groupBy = telemetry::groupingFromName(args.by).value_or(telemetry::UsageGrouping::None);
    telemetry::UsageReport report;
    bool fromInstance = false;
    if (!target.baseUrl.isEmpty()) {
        // Bounds go as epoch milliseconds: "7d" means the same on both sides of the call.
        QUrlQuery query;
        if (q.sinceMs)
            query.addQueryItem(QStringLiteral("since"), QString::number(q.sinceMs));
        if (q.untilMs)
            query.addQueryItem(QStringLiteral("until"), QString::number(q.untilMs));
        if (!q.tenant.isEmpty())
            query.addQueryItem(QStringLiteral("tenant"), q.tenant);
        if (!args.by.isEmpty())
            query.addQueryItem(QStringLiteral("groupBy"), args.by);
        const AdminReply reply = call(target, "GET", QStringLiteral("/admin/usage"), query);
        if (reply.reached && reply.status != 200)
            return explain(target, reply, err);
        if (reply.reached) {
            report = telemetry::UsageReport::fromJson(jsonOf(reply));
            fromInstance = true;
        }
    }
    if (!fromInstance) {
        telemetry::UsageDatabase db;
        QString error;
        if (!db.open(args.ledgerPath, telemetry::UsageDatabase::Mode::ReadOnly, &error)) {
            err << "switchman: no Switchman answers"
                << (target.baseUrl.isEmpty() ? QString() : QStringLiteral(" at ") + target.baseUrl)
                << " and the usage ledger cannot be read: " << error << '\n';
            return 1;
        }
        report = db.query(q);
        // On stderr: the CSV on stdout stays a clean file.
        err << "switchman: no Switchman answers"
            << (target.baseUrl.isEmpty() ? QString() : QStringLiteral(" at ") + target.baseUrl) << "; read "
            << args.ledgerPath << '\n';
    }
    makePrintable(report);
    if (report.unreadable) {
        // A corrupt ledger (its first page whole, others not) answers its sums with an error: its
        // figures are not what was spent, and "$0.0000" with exit 0 told a script nothing was (probe R4 F2).
        err << "switchman: the usage ledger cannot be read: " << report.error << '\n';
        return 1;
    }
    if (!report.error.isEmpty())
        err << "switchman: " << report.error << '\n';
    out << (args.csv ? report.toCsv() : report.toText());
    return 0;
}

QString printableText(const QString &text) {
    QString out;
    qsizetype copied = 0;
    for (qsizetype i = 0; i < text.size(); ++i) {
        const char16_t c = text.at(i).unicode();
        const bool control = c < 0x20 || (c >= 0x7f && c <= 0x9f);
        const bool invisible =
            (c >= 0x200b && c <= 0x200f) || (c >= 0x2028 && c <= 0x202e) || (c >= 0x2060 && c <= 0x2069) || c == 0xfeff;
        if (!control && !invisible)
            continue;
        out += QStringView(text).mid(copied, i - copied);
        out += c < 0x80 ? QStringLiteral("\\x%1").arg(uint(c), 2, 16, QLatin1Char('0'))
                        : QStringLiteral("\\u%1").arg(uint(c), 4, 16, QLatin1Char('0'));
        copied = i + 1;
    }
    if (copied == 0)
        return text;
    out += QStringView(text).mid(copied);
    return out;
}

QString remainingText(qint64 ms) {
    const qint64 s = (std::max<qint64>(0, ms) + 999) / 1000;
    if (s < 60)
        return QStringLiteral("%1 s").arg(s);
    if (s < 3600)
        return QStringLiteral("%1 min %2 s").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60, 2, 10, QLatin1Char('0'));
}

QString adminBaseUrl(const QString &listen) {
    const auto address = config::parseListenAddress(listen);
    if (!address)
        return {};
    QString host = address->host;
    if (host == QLatin1String("0.0.0.0") || host.isEmpty())
        host = QStringLiteral("127.0.0.1"); // listening everywhere includes loopback
    else if (host == QLatin1String("::"))
        host = QStringLiteral("::1");
    if (host.contains(QLatin1Char(':')))
        host = QLatin1Char('[') + host + QLatin1Char(']');
    return QStringLiteral("http://%1:%2").arg(host).arg(address->port);
}

namespace {
// The `listen` of a configuration file that does not load: the member as written in a JSON object, or
// in text that is no JSON (a reload refused for a syntax error) the first `"listen": "…"` in it.
std::optional<QString> listenAsWritten(const QString &path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return std::nullopt;
    const QByteArray text = file.read(config::kMaxConfigBytes);
    const QJsonDocument doc = QJsonDocument::fromJson(text);
    if (doc.isObject()) {
        const QJsonValue listen = doc.object().value(QLatin1String("listen"));
        return listen.isString() ? std::optional<QString>(listen.toString()) : std::nullopt;
    }
    static const QRegularExpression kListen(QStringLiteral(R"re("listen"\s*:\s*"([^"\\]{1,256})")re"));
    const QRegularExpressionMatch m = kListen.match(QString::fromUtf8(text));
    return m.hasMatch() ? std::optional<QString>(m.captured(1)) : std::nullopt;
}
} // namespace

AdminTarget adminTarget(const QString &configPath, bool explicitPath, const QString &listenOverride, QTextStream &err,
                        int *exitCode) {
    AdminTarget target;
    QString listen = listenOverride;
    if (listen.isEmpty()) {
        config::Config cfg; // no file at the default path: the default listen address
        if (explicitPath || QFileInfo::exists(configPath)) {
            const config::LoadResult loaded = config::load(configPath);
            if (loaded.status == config::LoadStatus::Invalid) {
                // Only the address is wanted. A file that does not load is what a refused reload leaves
                // running beside it, and `status` is how one learns why (probe L3 M1): its `listen` is
                // asked, as written, or the default one.
                cfg.listen = listenAsWritten(configPath).value_or(cfg.listen);
                err << "switchman: configuration " << configPath << " does not load (" << loaded.errors.size()
                    << (loaded.errors.size() == 1 ? " error" : " errors") << ", `switchman check-config " << configPath
                    << "` lists them); asking the Switchman at " << cfg.listen << '\n';
            } else if (!loaded.ok()) {
                err << "switchman: cannot use configuration " << configPath << ":\n";
                for (const auto &e : loaded.errors)
                    err << "  " << e.toString() << '\n';
                *exitCode = loaded.status == config::LoadStatus::Unreadable ? 2 : 1;
                return target;
            } else {
                cfg = *loaded.config;
            }
        }
        listen = cfg.listen;
    }
    target.baseUrl = adminBaseUrl(listen);
    if (target.baseUrl.isEmpty()) {
        err << "switchman: listen address \"" << listen << "\" is not HOST:PORT\n";
        *exitCode = 1;
        return target;
    }
    target.key = qgetenv("SWITCHMAN_ADMIN_KEY");
    return target;
}

namespace {
// When a credential with no countdown comes back, as the window's Credentials table says it.
QString untilText(const QString &state) {
    if (state == QLatin1String("rejected"))
        return QStringLiteral("until the key changes");
    if (state == QLatin1String("missing"))
        return QStringLiteral("until it is set");
    if (state == QLatin1String("unavailable"))
        return QStringLiteral("until the keychain answers");
    return QStringLiteral("-");
}
} // namespace

int statusCommand(const AdminTarget &target, QTextStream &out, QTextStream &err) {
    const AdminReply marksReply = call(target, "GET", QStringLiteral("/admin/marks"));
    if (!marksReply.reached || marksReply.status != 200)
        return explain(target, marksReply, err);
    const AdminReply credsReply = call(target, "GET", QStringLiteral("/admin/credentials"));
    if (!credsReply.reached || credsReply.status != 200)
        return explain(target, credsReply, err);
    const QJsonArray marks = jsonOf(marksReply).value(QStringLiteral("marks")).toArray();
    const QJsonArray creds = jsonOf(credsReply).value(QStringLiteral("credentials")).toArray();
    int parked = 0;
    int rejected = 0;
    int missing = 0;
    int unavailable = 0;
    for (const auto &v : creds) {
        const QString state = v.toObject().value(QStringLiteral("state")).toString();
        parked += state == QLatin1String("parked");
        rejected += state == QLatin1String("rejected");
        missing += state == QLatin1String("missing");
        unavailable += state == QLatin1String("unavailable");
    }
    // As the window's status line says it: parked, rejected, missing and unavailable keys are all out of use.
    const int outOfUse = parked + rejected + missing + unavailable;
    // The configuration in force and the usage ledger, as /healthz says them (the reasons come with
    // an admin key). An older instance says neither: nothing is added.
    const AdminReply healthReply = call(target, "GET", QStringLiteral("/healthz"));
    const QJsonObject health = healthReply.reached ? jsonOf(healthReply) : QJsonObject();
    const QString configState = health.value(QStringLiteral("config")).toString();
    const QString usageState = health.value(QStringLiteral("usage")).toString();
    const bool configRefused = !configState.isEmpty() && configState != QLatin1String("ok");
    const bool usageTrouble =
        !usageState.isEmpty() && usageState != QLatin1String("ok") && usageState != QLatin1String("memory");
    // Replicas that stopped sharing marks (Redis unreachable or not answering): each routes by its own
    // marks alone. /healthz said it; the summary said "healthy" (probe J4 9).
    const QString marksStore = health.value(QStringLiteral("marks")).toString();
    const bool marksLocal = marksStore.startsWith(QLatin1String("local only"));

    QStringList summary;
    if (configRefused)
        summary << QStringLiteral("configuration %1").arg(printableText(configState));
    if (usageTrouble)
        summary << QStringLiteral("usage ledger %1").arg(printableText(usageState));
    if (marksLocal)
        summary << QStringLiteral("marks %1").arg(printableText(marksStore));
    if (!marks.isEmpty())
        summary << (marks.size() == 1 ? QStringLiteral("1 mark") : QStringLiteral("%1 marks").arg(marks.size()));
    if (outOfUse > 0)
        summary << (outOfUse == 1 ? QStringLiteral("1 key out of use")
                                  : QStringLiteral("%1 keys out of use").arg(outOfUse));
    out << "Switchman at " << target.baseUrl << ": running, "
        << (summary.isEmpty() ? QStringLiteral("healthy") : summary.join(QStringLiteral(", "))) << "\n\n";
    if (configRefused) {
        out << "Configuration: " << printableText(configState) << ": "
            << printableText(health.value(QStringLiteral("configError"))
                                 .toString(QStringLiteral("the file was changed and could not be applied; the "
                                                          "configuration loaded before is running")))
            << "\n  Fix the file, then reload (SIGHUP, or POST /admin/reload).\n\n";
    }
    if (usageTrouble) {
        const QString why = health.value(QStringLiteral("usageError")).toString();
        out << "Usage ledger: " << printableText(usageState)
            << (why.isEmpty() ? QString() : QStringLiteral(": ") + printableText(why)) << "\n\n";
    }

    if (marksLocal)
        out << "Marks store: " << printableText(marksStore)
            << "\n  Marks are not shared with the other replicas until Redis answers again; each routes by its "
               "own.\n\n";
    out << "Marks" << (marks.isEmpty() ? QStringLiteral(": none, every candidate is healthy") : QString()) << '\n';
    if (!marks.isEmpty()) {
        QList<QStringList> rows;
        for (const auto &v : marks) {
            const QJsonObject m = v.toObject();
            const QString model = m.value(QStringLiteral("model")).toString();
            rows << QStringList{m.value(QStringLiteral("tenant")).toString(),
                                m.value(QStringLiteral("provider")).toString(),
                                model.isEmpty()
                                    ? QStringLiteral("every model at ") + m.value(QStringLiteral("baseUrl")).toString()
                                    : model,
                                m.value(QStringLiteral("kind")).toString(),
                                QString::number(m.value(QStringLiteral("strikes")).toInt()),
                                remainingText(m.value(QStringLiteral("remainingMs")).toInteger()),
                                orDash(m.value(QStringLiteral("lastError")))};
        }
        printTable(out,
                   {QStringLiteral("TENANT"), QStringLiteral("PROVIDER"), QStringLiteral("SCOPE"),
                    QStringLiteral("KIND"), QStringLiteral("STRIKES"), QStringLiteral("EXPIRES IN"),
                    QStringLiteral("LAST ERROR")},
                   rows);
    }
    out << '\n' << "Credentials" << (creds.isEmpty() ? QStringLiteral(": none configured") : QString()) << '\n';
    if (!creds.isEmpty()) {
        QList<QStringList> rows;
        for (const auto &v : creds) {
            const QJsonObject c = v.toObject();
            const QJsonValue remaining = c.value(QStringLiteral("remainingMs"));
            const QString state = c.value(QStringLiteral("state")).toString();
            // An unreadable keychain is no provider's doing: said in words, with the store's error.
            const QString lastError =
                state == QLatin1String("unavailable")
                    ? QStringLiteral("keychain unavailable: ") + orDash(c.value(QStringLiteral("lastError")))
                    : orDash(c.value(QStringLiteral("lastError")));
            rows << QStringList{c.value(QStringLiteral("provider")).toString(),
                                QString::number(c.value(QStringLiteral("position")).toInt()),
                                c.value(QStringLiteral("ref")).toString(),
                                state,
                                orDash(c.value(QStringLiteral("reason"))),
                                orDash(c.value(QStringLiteral("status"))),
                                remaining.isNull() ? untilText(state) : remainingText(remaining.toInteger()),
                                QString::number(c.value(QStringLiteral("leases")).toInt()),
                                lastError};
        }
        printTable(out,
                   {QStringLiteral("PROVIDER"), QStringLiteral("#"), QStringLiteral("REF"), QStringLiteral("STATE"),
                    QStringLiteral("REASON"), QStringLiteral("STATUS"), QStringLiteral("BACK IN"),
                    QStringLiteral("LEASES"), QStringLiteral("LAST ERROR")},
                   rows);
        if (parked + rejected > 0)
            out << "\nPut them back in use now: switchman credential retry [PROVIDER]\n";
        if (missing > 0)
            out << "\nA missing key has no secret: switchman credential set NAME (keychain), or set its variable "
                   "(env:) and restart\n";
        if (unavailable > 0)
            out << "\nAn unavailable key's keychain could not be read (no Secret Service, or locked): unlock it; "
                   "each request reads it again\n";
    }
    out.flush();
    return 0;
}

int marksClearCommand(const AdminTarget &target, const QString &tenant, const QString &provider, QTextStream &out,
                      QTextStream &err) {
    QUrlQuery query;
    if (!tenant.isEmpty())
        query.addQueryItem(QStringLiteral("tenant"), tenant);
    if (!provider.isEmpty())
        query.addQueryItem(QStringLiteral("provider"), provider);
    const AdminReply reply = call(target, "DELETE", QStringLiteral("/admin/marks"), query);
    if (!reply.reached || reply.status != 200)
        return explain(target, reply, err);
    const int n = jsonOf(reply).value(QStringLiteral("cleared")).toInt();
    out << "cleared " << (n == 1 ? QStringLiteral("1 mark") : QStringLiteral("%1 marks").arg(n));
    if (!tenant.isEmpty() || !provider.isEmpty()) {
        QStringList which;
        if (!tenant.isEmpty())
            which << QStringLiteral("tenant ") + tenant;
        if (!provider.isEmpty())
            which << QStringLiteral("provider ") + provider;
        out << " (" << which.join(QStringLiteral(", ")) << ')';
    }
    out << '\n' << Qt::flush;
    return 0;
}

int credentialRetryCommand(const AdminTarget &target, const QString &provider, QTextStream &out, QTextStream &err) {
    QUrlQuery query;
    if (!provider.isEmpty())
        query.addQueryItem(QStringLiteral("provider"), provider);
    const AdminReply reply = call(target, "DELETE", QStringLiteral("/admin/credentials"), query);
    if (!reply.reached || reply.status != 200)
        return explain(target, reply, err);
    const int n = jsonOf(reply).value(QStringLiteral("cleared")).toInt();
    if (n == 0)
        out << "no parked or rejected credential"
            << (provider.isEmpty() ? QString() : QStringLiteral(" of ") + provider) << "; nothing to retry\n";
    else
        out << (n == 1 ? QStringLiteral("1 credential") : QStringLiteral("%1 credentials").arg(n))
            << " back in use: the next request tries " << (n == 1 ? "it" : "them") << " again\n";
    out.flush();
    return 0;
}

bool notifyCredentialChanged(const AdminTarget &target, const QString &ref, int *cleared) {
    QUrlQuery query;
    query.addQueryItem(QStringLiteral("ref"), ref);
    const AdminReply reply = call(target, "DELETE", QStringLiteral("/admin/credentials"), query, 2000);
    if (!reply.reached || reply.status != 200)
        return false;
    if (cleared)
        *cleared = jsonOf(reply).value(QStringLiteral("cleared")).toInt();
    return true;
}

} // namespace sw::app
