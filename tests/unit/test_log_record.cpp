// The structured log line: gathered on the request path as names and values, turned into
// JSON only for whoever reads it, with the same content either way.
#include "core/telemetry/telemetry.h"

#include <QJsonDocument>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTest>

using namespace sw;
using telemetry::LogRecord;
using telemetry::Telemetry;

namespace {

LogRecord failoverLine() {
    LogRecord r;
    r.atMs = 1764583200123; // 2025-12-01T10:00:00.123Z
    r.level = QStringLiteral("warn");
    r.message = QStringLiteral("candidate failover");
    r.fields = QJsonObject{{QStringLiteral("tenant"), QStringLiteral("base-tenant")}, {QStringLiteral("keep"), 7}};
    r.gathered = {{QLatin1String("requestId"), QStringLiteral("r-1")},
                  {QLatin1String("tenant"), QStringLiteral("alice")}, // replaces the ready-made one
                  {QLatin1String("attempt"), 2},
                  {QLatin1String("elapsedMs"), qint64(1234567890123)},
                  {QLatin1String("error"), QStringLiteral("upstream said \"no\"\n\u00e9")},
                  {QLatin1String("status"), 503},
                  {QLatin1String("msg"), QStringLiteral("a field may not replace the message")},
                  {QLatin1String("attempt"), 3}}; // the later of two wins, as in a JSON object
    return r;
}

} // namespace

class TestLogRecord : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void jsonHasEveryFieldWithItsType() {
        const QJsonObject o = failoverLine().toJson();
        QCOMPARE(o.value(QStringLiteral("ts")).toString(), QStringLiteral("2025-12-01T10:00:00.123Z"));
        QCOMPARE(o.value(QStringLiteral("level")).toString(), QStringLiteral("warn"));
        QCOMPARE(o.value(QStringLiteral("msg")).toString(), QStringLiteral("candidate failover"));
        QCOMPARE(o.value(QStringLiteral("tenant")).toString(), QStringLiteral("alice"));
        QCOMPARE(o.value(QStringLiteral("keep")).toInt(), 7);
        QCOMPARE(o.value(QStringLiteral("attempt")).toInt(), 3);
        QVERIFY(o.value(QStringLiteral("elapsedMs")).isDouble());
        QCOMPARE(o.value(QStringLiteral("elapsedMs")).toInteger(), qint64(1234567890123));
        QCOMPARE(o.value(QStringLiteral("status")).toInt(), 503);
        QCOMPARE(o.value(QStringLiteral("error")).toString(), QStringLiteral("upstream said \"no\"\n\u00e9"));
        QCOMPARE(o.size(), 10); // ts, level, msg, keep, and six gathered names
    }

    void stderrLineIsTheSameObjectOnOneLine() {
        const LogRecord r = failoverLine();
        const QByteArray line = r.toJsonLine();
        QVERIFY(line.endsWith('\n'));
        QCOMPARE(line.count('\n'), 1); // the newline in the error text is escaped
        QVERIFY2(line.startsWith(R"({"ts":"2025-12-01T10:00:00.123Z","level":"warn","msg":"candidate failover",)"),
                 line.constData());
        QJsonParseError pe;
        const QJsonDocument doc = QJsonDocument::fromJson(line, &pe);
        QCOMPARE(pe.error, QJsonParseError::NoError);
        QCOMPARE(doc.object(), r.toJson());
        // Each name once: a repeated or replaced name would be a duplicate key to a reader.
        for (const char *name : {"\"attempt\"", "\"tenant\"", "\"msg\"", "\"ts\""})
            QCOMPARE(line.count(name), 1);
    }

    // Text an upstream or a client chose (an error message, a model name) cannot drive the
    // terminal the log is read on, nor hide or reorder what the line says: DEL, C1 controls and
    // invisible format characters are escaped like C0 controls, and the value reads the same.
    void stderrLineEscapesWhatATerminalWouldAct() {
        LogRecord r = failoverLine();
        const QString hostile =
            QStringLiteral("a\u009b31mred\u007f \u202Egpj.exe\u2066x\u2069\u200b\ufeff \u00e9\u20ac\u2014ok");
        r.gathered.append({QLatin1String("upstreamError"), hostile});
        const QByteArray line = r.toJsonLine();
        for (const char *raw :
             {"\xc2\x9b", "\x7f", "\xe2\x80\xae", "\xe2\x81\xa6", "\xe2\x81\xa9", "\xe2\x80\x8b", "\xef\xbb\xbf"})
            QVERIFY2(!line.contains(raw), line.constData());
        QVERIFY2(line.contains("\\u009b31mred\\u007f \\u202egpj"), line.constData());
        QVERIFY(line.contains("\xc3\xa9\xe2\x82\xac\xe2\x80\x94ok")); // ordinary letters and dashes stay as they are
        QJsonParseError pe;
        const QJsonDocument doc = QJsonDocument::fromJson(line, &pe);
        QCOMPARE(pe.error, QJsonParseError::NoError);
        QCOMPARE(doc.object().value(QStringLiteral("upstreamError")).toString(), hostile);
    }

    void recordsAndJsonLinesAgree() {
        Telemetry t;
        QSignalSpy records(&t, &Telemetry::logged);
        t.log(QStringLiteral("info"), QStringLiteral("first"), util::LogFields{{QLatin1String("n"), 1}});
        QCOMPARE(records.size(), 1);
        const auto first = records.at(0).at(0).value<LogRecord>();
        QCOMPARE(first.message, QStringLiteral("first"));
        QVERIFY(first.atMs > 0);

        QSignalSpy lines(&t, &Telemetry::logLine);
        t.log(QStringLiteral("warn"), QStringLiteral("second"),
              QJsonObject{{QStringLiteral("k"), QStringLiteral("v")}});
        QCOMPARE(records.size(), 2);
        QCOMPARE(lines.size(), 1);
        const QJsonObject line = lines.at(0).at(0).toJsonObject();
        QCOMPARE(line, records.at(1).at(0).value<LogRecord>().toJson());
        QCOMPARE(line.value(QStringLiteral("k")).toString(), QStringLiteral("v"));
        QVERIFY(QRegularExpression(QStringLiteral(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$)"))
                    .match(line.value(QStringLiteral("ts")).toString())
                    .hasMatch());
    }
};

QTEST_GUILESS_MAIN(TestLogRecord)
#include "test_log_record.moc"
