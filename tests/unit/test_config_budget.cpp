// The configuration keys of spend limits and usage retention: tenants.NAME.budget {usd, period} and
// usage.retentionDays — read, refused with the exact path, and written back by
// save() so a GUI edit never drops a budget.

#include "core/config/config_loader.h"

#include <QTemporaryDir>
#include <QTest>

using namespace sw::config;

namespace {

QByteArray withTenant(const QByteArray &tenantExtra, const QByteArray &rootExtra = {}) {
    return "{\"listen\":\"127.0.0.1:4141\","
           "\"providers\":{\"pa\":{\"api\":\"anthropic-messages\",\"baseUrl\":\"https://api.example.test\","
           "\"credentials\":[]}},"
           "\"models\":{\"pa/m\":{}},"
           "\"tenants\":{\"team-a\":{\"keys\":[\"sha256:" +
           QByteArray(64, 'a') + "\"]" + tenantExtra + "}}" + rootExtra + "}";
}

QStringList errorsOf(const QByteArray &json) {
    QStringList out;
    for (const auto &e : parse(json).errors)
        out << e.toString();
    return out;
}

} // namespace

class TestConfigBudget : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void readsBudgetAndRetention() {
        const auto r =
            parse(withTenant(",\"budget\":{\"usd\":20,\"period\":\"week\"}", ",\"usage\":{\"retentionDays\":30}"));
        QVERIFY2(r.ok(), qPrintable(errorsOf(withTenant("")).join(QLatin1Char('\n'))));
        const TenantConfig &t = r.config->tenants.value(QStringLiteral("team-a"));
        QVERIFY(t.budget);
        QCOMPARE(t.budget->usd, 20.0);
        QCOMPARE(t.budget->period, QStringLiteral("week"));
        QCOMPARE(r.config->usage.retentionDays, 30);
    }

    void defaults() {
        const auto r = parse(withTenant(",\"budget\":{\"usd\":5}"));
        QVERIFY(r.ok());
        QCOMPARE(r.config->tenants.value(QStringLiteral("team-a")).budget->period, QStringLiteral("month"));
        QCOMPARE(r.config->usage.retentionDays, 400);
        QVERIFY(!parse(withTenant("")).config->tenants.value(QStringLiteral("team-a")).budget);
    }

    void refusesWithTheExactPath() {
        QCOMPARE(
            errorsOf(withTenant(",\"budget\":{\"usd\":20,\"period\":\"fortnight\"}")),
            QStringList{QStringLiteral("tenants.team-a.budget.period: expected \"day\", \"week\" or \"month\", got "
                                       "\"fortnight\"")});
        QCOMPARE(errorsOf(withTenant(",\"budget\":{\"usd\":-1}")),
                 QStringList{QStringLiteral("tenants.team-a.budget.usd: must be 0 or more (US dollars per period)")});
        QCOMPARE(errorsOf(withTenant(",\"budget\":{\"period\":\"day\"}")),
                 QStringList{
                     QStringLiteral("tenants.team-a.budget.usd: missing (required): the spend limit in US dollars")});
        QCOMPARE(errorsOf(withTenant(",\"budget\":{\"usd\":1,\"eur\":1}")).size(), 1);
        QCOMPARE(errorsOf(withTenant("", ",\"usage\":{\"retentionDays\":0}")),
                 QStringList{QStringLiteral("usage.retentionDays: must be at least 1 (days of usage rows kept)")});
        QVERIFY(errorsOf(withTenant("", ",\"usage\":{\"keepForever\":true}"))
                    .first()
                    .startsWith(QStringLiteral("usage.keepForever: unknown key")));
    }

    // A prune that deletes this period's rows resets the budget at the next restart.
    void retentionShorterThanABudgetPeriodIsRefused() {
        QCOMPARE(
            errorsOf(withTenant(",\"budget\":{\"usd\":20,\"period\":\"month\"}", ",\"usage\":{\"retentionDays\":1}")),
            QStringList{QStringLiteral("usage.retentionDays: 1 is shorter than tenant \"team-a\"'s budget "
                                       "period (month): the prune would delete this period's spend; must be at "
                                       "least 32 days")});
        QCOMPARE(
            errorsOf(withTenant(",\"budget\":{\"usd\":20,\"period\":\"week\"}", ",\"usage\":{\"retentionDays\":7}"))
                .size(),
            1);
        QVERIFY(
            parse(withTenant(",\"budget\":{\"usd\":20,\"period\":\"day\"}", ",\"usage\":{\"retentionDays\":2}")).ok());
        QVERIFY(parse(withTenant("", ",\"usage\":{\"retentionDays\":1}")).ok()); // no budget: any retention
    }

    void saveWritesThemBack() {
        auto r =
            parse(withTenant(",\"budget\":{\"usd\":12.5,\"period\":\"day\"}", ",\"usage\":{\"retentionDays\":90}"));
        QVERIFY(r.ok());
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.json"));
        QString error;
        QVERIFY2(save(path, *r.config, &error), qPrintable(error));
        const auto again = load(path);
        QVERIFY(again.ok());
        QCOMPARE(*again.config, *r.config);
        // Defaults stay out of the file.
        auto plain = parse(withTenant(""));
        QVERIFY(!toJson(*plain.config).contains(QStringLiteral("usage")));
    }
};

QTEST_GUILESS_MAIN(TestConfigBudget)
#include "test_config_budget.moc"
