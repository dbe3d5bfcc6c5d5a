// `switchman key create --tenant NAME` as a user runs it: a new key printed
// once, only its hash stored, the file saved atomically and still valid, and
// nothing printed or written when the configuration cannot be used; the file
// and its directory readable by the owner only, a symlinked path resolved;
// concurrent runs all keep their keys, the rest of a hand-written file stays as
// written, and a running gateway takes the key with the reload the command names.
#include "core/config/config_loader.h"
#include "core/server/gateway_auth.h"
#include "gateway_fixture.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLockFile>
#include <QProcess>
#include <QRegularExpression>
#include <QSysInfo>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <functional>
#include <grp.h>
#include <memory>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {
struct Run {
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
};

// `inChild` runs in the child between fork and exec (async-signal-safe calls only).
Run run(const QStringList &args, const std::function<void()> &inChild = {}) {
    QProcess p;
    if (inChild)
        p.setChildProcessModifier(inChild);
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

QStringList keyCreateArgs(const QString &tenant, const QString &path) {
    return {QStringLiteral("key"),      QStringLiteral("create"),
            QStringLiteral("--tenant"), tenant,
            QStringLiteral("--config"), path};
}

bool writeFile(const QString &path, const QByteArray &bytes) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
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

    // Eight at once, for three tenants: each run re-reads the file under the lock, so every
    // printed key is in it and names its tenant, and only the first tenant made is admin.
    // Without the lock, runs that read the file together each wrote back their own key only.
    void concurrentRunsKeepEveryKey() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.json"));
        constexpr int kRuns = 8;
        std::vector<std::unique_ptr<QProcess>> processes;
        for (int i = 0; i < kRuns; ++i) {
            processes.push_back(std::make_unique<QProcess>());
            processes.back()->start(QStringLiteral(SWITCHMAN_BIN),
                                    keyCreateArgs(QStringLiteral("team%1").arg(i % 3), path));
        }
        QList<QPair<QString, QByteArray>> printed; // tenant, key
        for (int i = 0; i < kRuns; ++i) {
            QProcess &p = *processes[i];
            QVERIFY(p.waitForFinished(30000));
            QCOMPARE(p.exitCode(), 0);
            printed.append({QStringLiteral("team%1").arg(i % 3), p.readAllStandardOutput().trimmed()});
        }
        const auto loaded = sw::config::load(path);
        QVERIFY(loaded.ok());
        qsizetype stored = 0;
        int admins = 0;
        for (const auto &tenant : loaded.config->tenants) {
            stored += tenant.keyHashes.size();
            admins += tenant.admin;
        }
        QCOMPARE(stored, kRuns);
        QCOMPARE(admins, 1);
        const sw::server::GatewayAuth auth(loaded.config->tenants);
        for (const auto &[tenant, key] : printed) {
            const auto caller = auth.callerForKey(key);
            QVERIFY2(caller, key.constData());
            QCOMPARE(caller->tenant, tenant);
        }
        QVERIFY(!QFileInfo::exists(path + QStringLiteral(".lock"))); // released, not left behind
        QCOMPARE(modeOf(path), 0600);
    }

    // A lock file left by a run that died (killed, crashed) does not block the next one.
    void aLockLeftByARunThatDiedIsTakenOver() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.json"));
        QProcess died;
        died.start(QStringLiteral(SWITCHMAN_BIN), {QStringLiteral("--version")});
        QVERIFY(died.waitForStarted());
        const qint64 pid = died.processId();
        QVERIFY(died.waitForFinished());
        // What QLockFile writes: the holder's pid, program name and host.
        QVERIFY(writeFile(path + QStringLiteral(".lock"),
                          QByteArray::number(pid) + "\nswitchman\n" + QSysInfo::machineHostName().toUtf8() + "\n"));
        const Run r = run(keyCreateArgs(QStringLiteral("alice"), path));
        QCOMPARE(r.exitCode, 0);
        const auto loaded = sw::config::load(path);
        QVERIFY(loaded.ok());
        QCOMPARE(loaded.config->tenants.value(QStringLiteral("alice")).keyHashes, QStringList{hashOf(r.out.trimmed())});
    }

    // A key create changes the tenant's key list and nothing else: the comments ("_" keys) at
    // every level, the order and the layout of a hand-written file stay byte for byte. Writing
    // the file from the parsed configuration dropped every comment and sorted the keys.
    void aHandWrittenFileKeepsItsCommentsAndLayout() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.json"));
        const QByteArray oldHash = hashOf("sm-old-test-key").toUtf8();
        const QByteArray before = "{\n"
                                  "  \"_comment\": \"The team gateway; ask Ana before changing routes.\",\n"
                                  "  \"listen\": \"127.0.0.1:4141\",\n"
                                  "  \"providers\": {\n"
                                  "    \"openai\": {\n"
                                  "      \"_comment\": \"the shared account\",\n"
                                  "      \"api\": \"openai-completions\",\n"
                                  "      \"baseUrl\": \"https://api.openai.com/v1\",\n"
                                  "      \"credentials\": [\"env:OPENAI_API_KEY\"]\n"
                                  "    }\n"
                                  "  },\n"
                                  "  \"models\": { \"openai/gpt-5\": {} },\n"
                                  "  \"routes\": { \"gpt\": { \"candidates\": [\"openai/gpt-5\"] } },\n"
                                  "  \"tenants\": {\n"
                                  "    \"_comment\": \"one tenant per team\",\n"
                                  "    \"platform\": {\n"
                                  "      \"_owner\": \"ana\",\n"
                                  "      \"keys\": [\n"
                                  "        \"" +
                                  oldHash +
                                  "\"\n"
                                  "      ],\n"
                                  "      \"admin\": true\n"
                                  "    }\n"
                                  "  },\n"
                                  "  \"failover\": { \"enabled\": true, \"deadlineMs\": 120000 }\n"
                                  "}\n";
        QVERIFY(writeFile(path, before));
        const Run added = run(keyCreateArgs(QStringLiteral("platform"), path));
        QCOMPARE(added.exitCode, 0);
        const QByteArray newHash = hashOf(added.out.trimmed()).toUtf8();
        QByteArray expected = before;
        expected.replace("\"" + oldHash + "\"\n", "\"" + oldHash + "\",\n        \"" + newHash + "\"\n");
        QCOMPARE(readAll(path), expected);

        const Run created = run(keyCreateArgs(QStringLiteral("data"), path));
        QCOMPARE(created.exitCode, 0);
        const QByteArray dataHash = hashOf(created.out.trimmed()).toUtf8();
        expected.replace("      \"admin\": true\n    }\n",
                         "      \"admin\": true\n    },\n    \"data\": {\"keys\": [\"" + dataHash + "\"]}\n");
        QCOMPARE(readAll(path), expected);
        QVERIFY(sw::config::load(path).ok());
    }

    // The starter file has no tenants section: the first key adds one at the end, after the
    // comments, which all stay.
    void theFirstKeyAddsATenantsSectionAndKeepsTheComments() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.json"));
        const QByteArray before = "{\n  \"_comment\": [\"written by hand\"],\n  \"listen\": \"127.0.0.1:4141\"\n}\n";
        QVERIFY(writeFile(path, before));
        const Run r = run(keyCreateArgs(QStringLiteral("me"), path));
        QCOMPARE(r.exitCode, 0);
        const QByteArray hash = hashOf(r.out.trimmed()).toUtf8();
        QCOMPARE(readAll(path), "{\n  \"_comment\": [\"written by hand\"],\n  \"listen\": \"127.0.0.1:4141\",\n"
                                "  \"tenants\": {\"me\": {\"keys\": [\"" +
                                    hash + "\"], \"admin\": true}}\n}\n");
    }

    // A name that starts with '_' would be a comment: its key would never work.
    void aTenantNameThatWouldBeACommentIsRefused() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.json"));
        const Run r = run(keyCreateArgs(QStringLiteral("_team"), path));
        QCOMPARE(r.exitCode, 64);
        QCOMPARE(r.out, QByteArray());
        QVERIFY2(r.err.contains("cannot start with '_'"), r.err.constData());
        QVERIFY(!QFileInfo::exists(path));
    }

    // Nothing watches the file, so the command says how a running gateway takes the key, and
    // doing what it says works: before the reload the key is refused, after it accepted.
    void aRunningGatewayTakesTheKeyWithTheReloadTheCommandNames() {
        using namespace sw;
        QTemporaryDir dir;
        const QByteArray ownerKey = "sm-owner-test-key-0000000000000000000";
        test::GatewayFixture gw;
        config::TenantConfig owner;
        owner.name = QStringLiteral("owner");
        owner.keyHashes = {hashOf(ownerKey)};
        owner.admin = true;
        gw.config.tenants.insert(owner.name, owner);
        gw.configPath = dir.filePath(QStringLiteral("config.json"));
        gw.start();
        config::Config onDisk = gw.config;
        onDisk.listen = QStringLiteral("127.0.0.1:%1").arg(gw.engine().port());
        QVERIFY(config::save(gw.configPath, onDisk));

        const Run r = run(keyCreateArgs(QStringLiteral("alice"), gw.configPath));
        QCOMPARE(r.exitCode, 0);
        const QByteArray key = r.out.trimmed();
        const QString said = QString::fromUtf8(r.err);
        const QString command =
            QStringLiteral("curl -X POST -H \"x-switchman-key: $SWITCHMAN_ADMIN_KEY\" %1/admin/reload")
                .arg(gw.baseUrl());
        QVERIFY2(said.contains(command), qPrintable(said));
        QVERIFY2(said.contains(QStringLiteral("admin tenant's key in SWITCHMAN_ADMIN_KEY")), qPrintable(said));

        const auto body = test::GatewayFixture::anthropicBody(QStringLiteral("chain"), QStringLiteral("x"), false);
        const QList<QPair<QByteArray, QByteArray>> asAlice{{"x-api-key", key}};
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body, asAlice).status, 401);
        QCOMPARE(gw.postRaw(QStringLiteral("/admin/reload"), QByteArray(), {{"x-switchman-key", ownerKey}}).status,
                 200);
        QCOMPARE(gw.post(QStringLiteral("/v1/messages"), body, asAlice).status, 200);
    }

    // The first tenant: the running gateway has none yet, so its admin API needs no key.
    void theFirstKeyNamesAReloadWithoutAKey() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.json"));
        QVERIFY(writeFile(path, R"({"listen": "127.0.0.1:4242"})"));
        const Run r = run(keyCreateArgs(QStringLiteral("me"), path));
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.err.contains("\n  curl -X POST http://127.0.0.1:4242/admin/reload\n"), r.err.constData());
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

    // A tenant written by hand without keys: the error says to run `switchman key create --tenant alice`,
    // and that command refused with the same error, since it loaded the file it was to mend (probe K1 4).
    // It mends it now; a file still invalid after the edit is left alone as before.
    void aTenantWithoutKeysIsMendedByTheCommandItsErrorNames() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.json"));
        const QByteArray handWritten = "{\n  \"tenants\": {\"alice\": {\"admin\": true}}\n}\n";
        QVERIFY(writeFile(path, handWritten));
        QVERIFY(!sw::config::load(path).ok());
        const Run r = run(keyCreateArgs(QStringLiteral("alice"), path));
        QCOMPARE(r.exitCode, 0);
        const QByteArray key = r.out.trimmed();
        QVERIFY(!key.isEmpty());
        const sw::config::LoadResult mended = sw::config::load(path);
        QVERIFY(mended.ok());
        QCOMPARE(mended.config->tenants.value(QStringLiteral("alice")).keyHashes, QStringList{hashOf(key)});
        QVERIFY(mended.config->tenants.value(QStringLiteral("alice")).admin);
        QVERIFY2(r.err.contains("added a key to tenant alice"), r.err.constData());
    }

    // Probe JV L5: with two tenants written without keys, each run refused for the other's missing key,
    // so neither could ever be mended. Each run mends its own tenant and names the ones left.
    void twoTenantsWithoutKeysAreMendedOneRunAtATime() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.json"));
        QVERIFY(writeFile(path, "{\n  \"tenants\": {\"alice\": {\"admin\": true}, \"bob\": {}}\n}\n"));
        const Run first = run(keyCreateArgs(QStringLiteral("alice"), path));
        QCOMPARE(first.exitCode, 0);
        QVERIFY(!first.out.trimmed().isEmpty());
        QVERIFY2(first.err.contains("still without one:\n  tenants.bob.keys: missing"), first.err.constData());
        QVERIFY(!sw::config::load(path).ok()); // bob still has none
        const Run second = run(keyCreateArgs(QStringLiteral("bob"), path));
        QCOMPARE(second.exitCode, 0);
        QVERIFY2(!second.err.contains("still without one"), second.err.constData());
        const sw::config::LoadResult mended = sw::config::load(path);
        QVERIFY(mended.ok());
        QCOMPARE(mended.config->tenants.value(QStringLiteral("alice")).keyHashes,
                 QStringList{hashOf(first.out.trimmed())});
        QCOMPARE(mended.config->tenants.value(QStringLiteral("bob")).keyHashes,
                 QStringList{hashOf(second.out.trimmed())});
        QVERIFY(mended.config->tenants.value(QStringLiteral("alice")).admin);
        // Another problem than a missing key still saves nothing.
        QVERIFY(writeFile(path, "{\"tenants\": {\"alice\": {}, \"bob\": {\"admin\": 3}}}\n"));
        const Run refused = run(keyCreateArgs(QStringLiteral("alice"), path));
        QCOMPARE(refused.exitCode, 1);
        QCOMPARE(refused.out, QByteArray());
    }

    void aFullDiskKeepsTheOldFileAndPrintsNoKey() {
        // A disk that fills up while the file is written: the command once renamed the empty
        // temporary file over the configuration (every provider, route and tenant gone), printed
        // a key that was never stored and exited 0. RLIMIT_FSIZE fails the write the same way
        // without root: the file may not grow past the old one's size.
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.json"));
        QVERIFY(sw::config::save(path, sw::config::demoConfig()));
        const QByteArray before = readAll(path);
        QVERIFY(before.size() < 16384); // under QSaveFile's buffer, where the failure went unnoticed
        const rlim_t limit = rlim_t(before.size());
        const Run r = run(keyCreateArgs(QStringLiteral("dora"), path), [limit] {
            ::signal(SIGXFSZ, SIG_IGN); // a write past the limit fails with EFBIG instead of killing
            const struct rlimit small { limit, limit };
            ::setrlimit(RLIMIT_FSIZE, &small);
        });
        QCOMPARE(r.exitCode, 1);
        QCOMPARE(r.out, QByteArray()); // no key shown "once" that was never stored
        QVERIFY2(r.err.contains("nothing saved") && r.err.contains(path.toUtf8()) && r.err.contains("too large"),
                 r.err.constData());
        QVERIFY2(!r.err.contains("created tenant"), r.err.constData());
        QCOMPARE(readAll(path), before);
        QVERIFY(sw::config::load(path).ok());
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden), QStringList{QStringLiteral("config.json")});

        // With room again the same command stores the key.
        const Run again = run(keyCreateArgs(QStringLiteral("dora"), path));
        QCOMPARE(again.exitCode, 0);
        const auto loaded = sw::config::load(path);
        QVERIFY(loaded.ok());
        QCOMPARE(loaded.config->tenants.value(QStringLiteral("dora")).keyHashes,
                 QStringList{hashOf(again.out.trimmed())});
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

    // `sudo switchman key create` on the service user's file (a "Permission denied" first, or a
    // file in /etc): the new file was root's, the running gateway could not reload it, the printed
    // key never worked and the service did not start again. The file keeps its owner and group.
    void aRootRunKeepsTheFilesOwnerAndGroup() {
        if (::geteuid() != 0)
            QSKIP("gives the file another owner first, which only root can");
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.json"));
        QVERIFY(sw::config::save(path, sw::config::Config{}));
        const uid_t serviceUser = 65534; // nobody
        const gid_t serviceGroup = 65534;
        QVERIFY(::chown(QFile::encodeName(path).constData(), serviceUser, serviceGroup) == 0);
        const Run r = run(keyCreateArgs(QStringLiteral("erin"), path));
        QCOMPARE(r.exitCode, 0);
        struct stat st {};
        QVERIFY(::stat(QFile::encodeName(path).constData(), &st) == 0);
        QCOMPARE(st.st_uid, serviceUser);
        QCOMPARE(st.st_gid, serviceGroup);
        QCOMPARE(modeOf(path), 0600);
        const auto loaded = sw::config::load(path);
        QVERIFY(loaded.ok());
        QCOMPARE(loaded.config->tenants.value(QStringLiteral("erin")).keyHashes, QStringList{hashOf(r.out.trimmed())});
    }

    // Someone who may write the file but not give a file away (not root, not its owner: a group
    // that may write it) would leave a file its owner can no longer read: nothing is written, no key
    // is printed, and the message says whose file it is.
    void aFileThatCannotBeGivenBackToItsOwnerIsNotWritten() {
        if (::geteuid() != 0)
            QSKIP("needs a file of another user that this one may write, which only root can set up");
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.json"));
        QVERIFY(sw::config::save(path, sw::config::Config{}));
        const uid_t owner = 65533;  // some other user
        const gid_t shared = 65534; // a group the writer is in
        const uid_t writer = 65534; // nobody
        QVERIFY(::chown(QFile::encodeName(path).constData(), owner, shared) == 0);
        QVERIFY(::chmod(QFile::encodeName(path).constData(), 0660) == 0);
        QVERIFY(::chmod(QFile::encodeName(dir.path()).constData(), 0777) == 0); // the writer may add files
        const QByteArray before = readAll(path);
        const Run r = run(keyCreateArgs(QStringLiteral("erin"), path), [writer, shared]() {
            if (::setgroups(0, nullptr) != 0 || ::setgid(shared) != 0 || ::setuid(writer) != 0)
                ::_exit(125);
        });
        QVERIFY2(r.exitCode != 0 && r.exitCode != 125, r.err.constData());
        QVERIFY(r.out.isEmpty()); // no key that would never work
        QVERIFY2(r.err.contains("could not be given back") && r.err.contains("65533") && r.err.contains("sudo -u"),
                 r.err.constData());
        struct stat st {};
        QVERIFY(::stat(QFile::encodeName(path).constData(), &st) == 0);
        QCOMPARE(st.st_uid, owner);
        QCOMPARE(readAll(path), before);
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden), QStringList{QStringLiteral("config.json")});
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
