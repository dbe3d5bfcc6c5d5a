// `switchman key create --tenant NAME` as a user runs it: a new key printed
// once, only its hash stored, the file saved atomically and still valid, and
// nothing printed or written when the configuration cannot be used; the file
// and its directory readable by the owner only, a symlinked path resolved.
#include "core/config/config_loader.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <sys/stat.h>

namespace {
struct Run {
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
};

Run run(const QStringList &args) {
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

QByteArray readAll(const QString &path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

int modeOf(const QString &path) {
    struct stat st {};
    if (::stat(QFile::encodeName(path).constData(), &st) != 0)
        return -1;
    return int(st.st_mode & 07777);
}

QString hashOf(const QByteArray &key) {
    return QStringLiteral("sha256:") +
           QString::fromLatin1(QCryptographicHash::hash(key, QCryptographicHash::Sha256).toHex());
}
} // namespace

class TestKeyCreate : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void createsTenantAndPrintsKeyOnce() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("sub/config.json"));
        const Run first = run({QStringLiteral("key"), QStringLiteral("create"), QStringLiteral("--tenant"),
                               QStringLiteral("alice"), QStringLiteral("--config"), path});
        QCOMPARE(first.exitCode, 0);
        const QByteArray key = first.out.trimmed();
        QVERIFY2(key.startsWith("sm-") && key.size() >= 3 + 43, key.constData()); // 32 random bytes, base64url
        QCOMPARE(first.out.count('\n'), 1);                                       // the key and nothing else
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

    void addsAKeyAndKeepsTheRestOfTheFile() {
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

    void unusableConfigIsLeftAloneAndNoKeyPrinted() {
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

    // Owner only: the file holds tenant key hashes and credential references.
    void newConfigIsOwnerOnlyInAnOwnerOnlyDirectory() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("a/b/config.json"));
        const Run r = run({QStringLiteral("key"), QStringLiteral("create"), QStringLiteral("--tenant"),
                           QStringLiteral("alice"), QStringLiteral("--config"), path});
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(modeOf(path), 0600);
        QCOMPARE(modeOf(dir.filePath(QStringLiteral("a/b"))), 0700);
        QCOMPARE(modeOf(dir.filePath(QStringLiteral("a"))), 0700);
        QVERIFY(!r.err.contains("symbolic link"));
    }

    void existingModesAreKeptUnlessWorldReadable_data() {
        QTest::addColumn<int>("before");
        QTest::addColumn<int>("after");
        QTest::addRow("0644 tightened") << 0644 << 0640;
        QTest::addRow("0666 tightened") << 0666 << 0660;
        QTest::addRow("0640 kept") << 0640 << 0640;
        QTest::addRow("0600 kept") << 0600 << 0600;
    }
    void existingModesAreKeptUnlessWorldReadable() {
        QFETCH(int, before);
        QFETCH(int, after);
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.json"));
        QVERIFY(sw::config::save(path, sw::config::Config{}));
        QVERIFY(::chmod(QFile::encodeName(path).constData(), mode_t(before)) == 0);
        const Run r = run({QStringLiteral("key"), QStringLiteral("create"), QStringLiteral("--tenant"),
                           QStringLiteral("alice"), QStringLiteral("--config"), path});
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(modeOf(path), after);
    }

    // Resolved and reported (not refused): dotfile managers link config.json into a repository.
    void symlinkedConfigWritesItsTargetAndSaysSo() {
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkdir(QStringLiteral("dotfiles")));
        const QString target = dir.filePath(QStringLiteral("dotfiles/switchman.json"));
        QVERIFY(sw::config::save(target, sw::config::Config{}));
        const QString link = dir.filePath(QStringLiteral("config.json"));
        QVERIFY(QFile::link(target, link));
        const Run r = run({QStringLiteral("key"), QStringLiteral("create"), QStringLiteral("--tenant"),
                           QStringLiteral("alice"), QStringLiteral("--config"), link});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(QFileInfo(link).isSymLink()); // the link stays a link
        QVERIFY2(r.err.contains("symbolic link") && r.err.contains(QFileInfo(target).canonicalFilePath().toUtf8()),
                 r.err.constData());
        const auto loaded = sw::config::load(target);
        QVERIFY(loaded.ok());
        QCOMPARE(loaded.config->tenants.value(QStringLiteral("alice")).keyHashes, QStringList{hashOf(r.out.trimmed())});
        QCOMPARE(modeOf(target), 0600);
    }

    void danglingSymlinkIsRefused() {
        QTemporaryDir dir;
        const QString link = dir.filePath(QStringLiteral("config.json"));
        QVERIFY(QFile::link(dir.filePath(QStringLiteral("elsewhere/missing.json")), link));
        QString error;
        QVERIFY(!sw::config::save(link, sw::config::Config{}, &error));
        QVERIFY2(error.contains(QStringLiteral("symbolic link")), qPrintable(error));
        QVERIFY(!QFileInfo::exists(dir.filePath(QStringLiteral("elsewhere"))));
    }
};

QTEST_GUILESS_MAIN(TestKeyCreate)
#include "test_key_create.moc"
