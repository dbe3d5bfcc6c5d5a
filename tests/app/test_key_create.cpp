// `switchman key create --tenant NAME` as a user runs it: a new key printed
// once, only its hash stored, the file saved atomically and still valid, and
// nothing printed or written when the configuration cannot be used.
#include "config/config_loader.h"

#include <QCryptographicHash>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

namespace {
struct Run {
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
};

Run run(const QStringList &args)
{
    QProcess p;
    p.start(QStringLiteral(SWITCHMAN_BIN), args);
    Run r;
    if (!p.waitForFinished(20000)) {
        p.kill();
        p.waitForFinished();
        return r;
    }
    r.exitCode = p.exitCode();
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

QString hashOf(const QByteArray &key)
{
    return QStringLiteral("sha256:") + QString::fromLatin1(QCryptographicHash::hash(key, QCryptographicHash::Sha256).toHex());
}
} // namespace

class TestKeyCreate : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void createsTenantAndPrintsKeyOnce()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("sub/config.json"));
        const Run first = run({QStringLiteral("key"), QStringLiteral("create"), QStringLiteral("--tenant"),
                               QStringLiteral("alice"), QStringLiteral("--config"), path});
        QCOMPARE(first.exitCode, 0);
        const QByteArray key = first.out.trimmed();
        QVERIFY2(key.startsWith("sm-") && key.size() >= 3 + 43, key.constData()); // 32 random bytes, base64url
        QCOMPARE(first.out.count('\n'), 1);                                        // the key and nothing else
        QVERIFY(!first.err.contains(key));
        const QByteArray file = readAll(path);
        QVERIFY(!file.contains(key));
        const auto loaded = sw::config::load(path);
        QVERIFY(loaded.ok());
        const auto alice = loaded.config->tenants.value(QStringLiteral("alice"));
        QCOMPARE(alice.keyHashes, QStringList{hashOf(key)});
        QVERIFY(alice.admin); // the first tenant keeps the admin API the owner had
        QVERIFY(first.err.contains("shown once"));

        const Run second = run({QStringLiteral("key"), QStringLiteral("create"), QStringLiteral("--tenant"),
                                QStringLiteral("bob"), QStringLiteral("--config"), path});
        QCOMPARE(second.exitCode, 0);
        const QByteArray key2 = second.out.trimmed();
        QVERIFY(key2 != key);
        const auto again = sw::config::load(path);
        QVERIFY(again.ok());
        QCOMPARE(again.config->tenants.value(QStringLiteral("alice")).keyHashes, QStringList{hashOf(key)});
        QCOMPARE(again.config->tenants.value(QStringLiteral("bob")).keyHashes, QStringList{hashOf(key2)});
        QVERIFY(!again.config->tenants.value(QStringLiteral("bob")).admin);
    }

    void addsAKeyAndKeepsTheRestOfTheFile()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.json"));
        sw::config::Config config;
        sw::config::ProviderConfig p;
        p.id = QStringLiteral("openai");
        p.api = QStringLiteral("openai-completions");
        p.baseUrl = QStringLiteral("https://api.openai.com/v1");
        p.credentials = {QStringLiteral("env:OPENAI_API_KEY")};
        config.providers.insert(p.id, p);
        sw::config::TenantConfig alice;
        alice.name = QStringLiteral("alice");
        alice.keyHashes = {hashOf("old-key")};
        alice.providers = {QStringLiteral("openai")};
        config.tenants.insert(alice.name, alice);
        QVERIFY(sw::config::save(path, config));
        const Run r = run({QStringLiteral("key"), QStringLiteral("create"), QStringLiteral("--tenant"),
                           QStringLiteral("alice"), QStringLiteral("--config"), path});
        QCOMPARE(r.exitCode, 0);
        const auto loaded = sw::config::load(path);
        QVERIFY(loaded.ok());
        auto expected = config;
        expected.tenants[QStringLiteral("alice")].keyHashes.append(hashOf(r.out.trimmed()));
        QCOMPARE(*loaded.config, expected);
    }

    void unusableConfigIsLeftAloneAndNoKeyPrinted()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.json"));
        const QByteArray broken = "{\"providers\": {\"x\": 1}";
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(broken);
        f.close();
        const Run r = run({QStringLiteral("key"), QStringLiteral("create"), QStringLiteral("--tenant"),
                           QStringLiteral("alice"), QStringLiteral("--config"), path});
        QCOMPARE(r.exitCode, 1);
        QCOMPARE(r.out, QByteArray());
        QCOMPARE(readAll(path), broken);
    }
};

QTEST_GUILESS_MAIN(TestKeyCreate)
#include "test_key_create.moc"
