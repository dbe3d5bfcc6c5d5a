// `switchman credential set` / `credential list` as a user runs them: with a
// Secret Service (scripts/test runs this inside scripts/with-keyring) and with
// none, where the CLI says so, names env: references, and exits non-zero.
#include "core/config/config_loader.h"
#include "core/credentials/keychain_store.h"
#include "signal_wait.h"

#include <QProcess>
#include <QRandomGenerator>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

namespace {
struct Run {
    int exitCode = -1;
    QString out;
    QString err;
};

Run run(const QStringList &args, const QByteArray &stdinBytes, const QProcessEnvironment &env) {
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(SWITCHMAN_BIN), args);
    p.waitForStarted();
    p.write(stdinBytes);
    p.closeWriteChannel();
    Run r;
    if (!p.waitForFinished(40000)) {
        p.kill();
        p.waitForFinished();
        r.err = QStringLiteral("timed out");
        return r;
    }
    r.exitCode = p.exitCode();
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

QProcessEnvironment noSecretService() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("DBUS_SESSION_BUS_ADDRESS"), QStringLiteral("unix:path=/nonexistent/switchman-test-bus"));
    return env;
}

QString writeConfig(const QTemporaryDir &dir, const QStringList &credentials) {
    sw::config::Config config;
    sw::config::ProviderConfig p;
    p.id = QStringLiteral("anthropic");
    p.api = QStringLiteral("anthropic-messages");
    p.baseUrl = QStringLiteral("https://api.anthropic.com");
    p.credentials = credentials;
    config.providers.insert(p.id, p);
    const QString path = dir.filePath(QStringLiteral("config.json"));
    return sw::config::save(path, config) ? path : QString();
}
} // namespace

class TestKeychainCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void setThenListWithASecretService() {
        if (qgetenv("SWITCHMAN_IN_KEYRING_SESSION") != "1")
            QSKIP("needs a Secret Service: scripts/test runs this under scripts/with-keyring");
        const QString name = QStringLiteral("cli-test-%1").arg(QRandomGenerator::system()->generate64(), 0, 16);
        const QByteArray secret = "sk-cli-" + QByteArray::number(QRandomGenerator::system()->generate64(), 16);
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("SW_CLI_SET"), QStringLiteral("value"));
        env.remove(QStringLiteral("SW_CLI_UNSET"));
        env.insert(QStringLiteral("SW_CLI_BLANK"), QStringLiteral(" \t\r ")); // no key, as the gateway reads it
        const Run set = run({QStringLiteral("credential"), QStringLiteral("set"), name}, secret + "\n", env);
        QVERIFY2(set.exitCode == 0, qPrintable(set.err));
        QVERIFY(set.out.contains(QStringLiteral("stored keychain:") + name));
        QVERIFY(!set.out.contains(QString::fromLatin1(secret)) && !set.err.contains(QString::fromLatin1(secret)));

        // Stored exactly (trailing newline dropped), readable by the engine's store.
        sw::credentials::KeychainStore store;
        sw::credentials::SecretResult read;
        bool done = false;
        QObject context;
        store.read(name, &context, [&](const sw::credentials::SecretResult &r) {
            read = r;
            done = true;
        });
        QVERIFY(sw::test::waitUntil([&done]() { return done; }, 20000));
        QVERIFY2(read.ok, qPrintable(read.error));
        QCOMPARE(read.secret, secret);

        QTemporaryDir dir;
        const QString config =
            writeConfig(dir, {QStringLiteral("keychain:") + name, QStringLiteral("keychain:cli-test-absent"),
                              QStringLiteral("env:SW_CLI_SET"), QStringLiteral("env:SW_CLI_UNSET"),
                              QStringLiteral("env:SW_CLI_BLANK"), QStringLiteral("passthrough")});
        QVERIFY(!config.isEmpty());
        const Run list =
            run({QStringLiteral("credential"), QStringLiteral("list"), QStringLiteral("--config"), config}, {}, env);
        QVERIFY2(list.exitCode == 0, qPrintable(list.err));
        QVERIFY2(list.out.contains(QStringLiteral("keychain:%1\tkeychain: present").arg(name)), qPrintable(list.out));
        QVERIFY(list.out.contains(QStringLiteral("keychain:cli-test-absent\tkeychain: MISSING")));
        QVERIFY(list.out.contains(QStringLiteral("env:SW_CLI_SET\tenvironment: set")));
        QVERIFY(list.out.contains(QStringLiteral("env:SW_CLI_UNSET\tenvironment: unset")));
        QVERIFY2(list.out.contains(QStringLiteral("env:SW_CLI_BLANK\tenvironment: unset")), qPrintable(list.out));
        QVERIFY(list.out.contains(QStringLiteral("passthrough\tthe caller's own key")));
        QVERIFY(!list.out.contains(QString::fromLatin1(secret)) && !list.out.contains(QStringLiteral("value")));
    }

    void withoutASecretServiceTheCliSaysSoAndFails() {
        const Run set = run({QStringLiteral("credential"), QStringLiteral("set"), QStringLiteral("cli-test-x")},
                            "sk-not-stored\n", noSecretService());
        QCOMPARE(set.exitCode, 1);
        QVERIFY2(set.err.contains(QStringLiteral("Secret Service")) && set.err.contains(QStringLiteral("env:")) &&
                     set.err.contains(QStringLiteral("Nothing was stored")),
                 qPrintable(set.err));
        QVERIFY(!set.err.contains(QStringLiteral("sk-not-stored")));

        QTemporaryDir dir;
        const QString config = writeConfig(dir, {QStringLiteral("keychain:main"), QStringLiteral("env:HOME")});
        const Run list = run({QStringLiteral("credential"), QStringLiteral("list"), QStringLiteral("--config"), config},
                             {}, noSecretService());
        QCOMPARE(list.exitCode, 1);
        QVERIFY2(list.out.contains(QStringLiteral("keychain:main\tkeychain: unavailable")), qPrintable(list.out));
        QVERIFY(list.out.contains(QStringLiteral("env:HOME\tenvironment: set"))); // env: references keep working
        QVERIFY(list.err.contains(QStringLiteral("env:VAR")));
    }

    // `credential list` said a key stored before the lock was MISSING ("switchman credential set") and
    // exited 0 (probe AA4 F2): it says the keychain is locked, and fails.
    void aLockedKeyringIsReportedAndNothingStored() {
        // A private session of its own (locking the shared one would break other tests):
        // an unlocked keyring is created, a key stored, its login collection locked, then the CLI run.
        if (QStandardPaths::findExecutable(QStringLiteral("dbus-run-session")).isEmpty() ||
            QStandardPaths::findExecutable(QStringLiteral("gnome-keyring-daemon")).isEmpty())
            QSKIP("needs dbus-run-session and gnome-keyring-daemon");
        QTemporaryDir home;
        QTemporaryDir configDir;
        const QString config = writeConfig(configDir, {QStringLiteral("keychain:locked-stored")});
        QVERIFY(!config.isEmpty());
        const QString script = QStringLiteral(
            "set -e\n"
            "export XDG_DATA_HOME=\"$1\" XDG_RUNTIME_DIR=\"$1/run\"\n" // never the outer session's daemon
            "mkdir -p -m 700 \"$XDG_RUNTIME_DIR\"\n"
            "eval \"$(echo -n pw | gnome-keyring-daemon --unlock --components=secrets)\"\n"
            "for i in $(seq 50); do dbus-send --session --print-reply --dest=org.freedesktop.DBus "
            "/org/freedesktop/DBus "
            "org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets | grep -q 'boolean true' && break; sleep "
            "0.1; done\n"
            "echo sk-stored-before | \"$2\" credential set locked-stored >/dev/null\n"
            "dbus-send --session --print-reply --dest=org.freedesktop.secrets /org/freedesktop/secrets "
            "org.freedesktop.Secret.Service.Lock array:objpath:/org/freedesktop/secrets/collection/login >/dev/null\n"
            "set +e\n"
            "echo sk-locked-out | \"$2\" credential set locked-test 2>&1\n"
            "echo \"exit=$?\"\n"
            "\"$2\" credential list --config \"$3\" 2>&1\n"
            "echo \"list exit=$?\"\n");
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("DISPLAY")); // no prompter can ask the user
        env.remove(QStringLiteral("WAYLAND_DISPLAY"));
        p.setProcessEnvironment(env);
        p.start(QStringLiteral("dbus-run-session"),
                {QStringLiteral("--"), QStringLiteral("bash"), QStringLiteral("-c"), script, QStringLiteral("locked"),
                 home.path(), QStringLiteral(SWITCHMAN_BIN), config});
        QVERIFY(p.waitForFinished(60000));
        const QString out = QString::fromUtf8(p.readAllStandardOutput());
        QVERIFY2(out.contains(QStringLiteral("exit=1")), qPrintable(out));
        QVERIFY2(out.contains(QStringLiteral("locked")) && out.contains(QStringLiteral("env:VAR")) &&
                     out.contains(QStringLiteral("Nothing was stored")),
                 qPrintable(out));
        QVERIFY(!out.contains(QStringLiteral("sk-locked-out")));
        QVERIFY2(out.contains(QStringLiteral("keychain:locked-stored\tkeychain: unavailable (locked)")) &&
                     out.contains(QStringLiteral("the OS keychain is locked")) &&
                     out.contains(QStringLiteral("list exit=1")) && !out.contains(QStringLiteral("MISSING")),
                 qPrintable(out));
    }

    void emptyInputStoresNothing() {
        const Run set = run({QStringLiteral("credential"), QStringLiteral("set"), QStringLiteral("cli-test-empty")},
                            "\n", noSecretService());
        QCOMPARE(set.exitCode, 1);
        QVERIFY(set.err.contains(QStringLiteral("nothing stored")));
    }

    void badNameIsAUsageError() {
        const Run set =
            run({QStringLiteral("credential"), QStringLiteral("set"), QStringLiteral("bad name/with slash")}, "x\n",
                noSecretService());
        QCOMPARE(set.exitCode, 64);
    }
};

QTEST_GUILESS_MAIN(TestKeychainCli)
#include "test_keychain_cli.moc"
