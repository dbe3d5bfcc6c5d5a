// KeychainStore against a real Secret Service (run by scripts/test inside
// scripts/with-keyring: a private D-Bus session with an unlocked gnome-keyring),
// and against none at all (a child process whose session bus points nowhere),
// where the error must say so plainly and name the env: way out.
#include "core/credentials/keychain_store.h"
#include "signal_wait.h"

#include <QCoreApplication>
#include <QProcess>
#include <QRandomGenerator>
#include <QTest>

#include <cstdio>

using namespace sw;
using namespace sw::credentials;
using namespace sw::test;

namespace {
SecretResult readNow(KeychainStore &store, const QString &name) {
    SecretResult out;
    bool done = false;
    QObject context;
    store.read(name, &context, [&](const SecretResult &r) {
        out = r;
        done = true;
    });
    if (!waitUntil([&done]() { return done; }, 20000))
        out.error = QStringLiteral("timed out");
    return out;
}

SecretResult writeNow(KeychainStore &store, const QString &name, const QByteArray &secret) {
    SecretResult out;
    bool done = false;
    QObject context;
    store.write(name, secret, &context, [&](const SecretResult &r) {
        out = r;
        done = true;
    });
    if (!waitUntil([&done]() { return done; }, 20000))
        out.error = QStringLiteral("timed out");
    return out;
}

bool inKeyringSession() {
    return qgetenv("SWITCHMAN_IN_KEYRING_SESSION") == "1";
}
} // namespace

class TestKeychainStore : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void writeThenReadRoundTrip() {
        KeychainStore store;
        const QString name = QStringLiteral("switchman-test-%1").arg(QRandomGenerator::system()->generate64(), 0, 16);
        const QByteArray secret = "sk-roundtrip-" + QByteArray::number(QRandomGenerator::system()->generate64(), 16);
        const SecretResult written = writeNow(store, name, secret);
        if (!written.ok && !inKeyringSession())
            QSKIP(qPrintable(QStringLiteral("no Secret Service here (%1); scripts/test runs this under "
                                            "scripts/with-keyring")
                                 .arg(written.error)));
        QVERIFY2(written.ok, qPrintable(written.error));
        const SecretResult read = readNow(store, name);
        QVERIFY2(read.ok, qPrintable(read.error));
        QCOMPARE(read.secret, secret);
        // Overwrite: the newest value wins.
        QVERIFY(writeNow(store, name, secret + "-2").ok);
        QCOMPARE(readNow(store, name).secret, secret + "-2");
    }

    void missingEntryIsNotFoundNotAnOutage() {
        KeychainStore store;
        const SecretResult r = readNow(
            store,
            QStringLiteral("switchman-test-never-written-%1").arg(QRandomGenerator::system()->generate64(), 0, 16));
        if (!r.ok && !r.notFound && !inKeyringSession())
            QSKIP("no Secret Service here; scripts/test runs this under scripts/with-keyring");
        QVERIFY(!r.ok);
        QVERIFY2(r.notFound, qPrintable(r.error));
    }

    void noSecretServiceGivesThePlainMessage() {
        QProcess child;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("DBUS_SESSION_BUS_ADDRESS"),
                   QStringLiteral("unix:path=/nonexistent/switchman-test-bus"));
        child.setProcessEnvironment(env);
        child.start(QCoreApplication::applicationFilePath(), {QStringLiteral("--child-read-write")});
        QVERIFY(child.waitForFinished(30000));
        const QString out = QString::fromUtf8(child.readAllStandardOutput());
        QCOMPARE(child.exitCode(), 0);
        // Both the read and the write fail, not found is not claimed, and the message names the way out.
        QVERIFY2(out.contains(QStringLiteral("read ok=0 notFound=0")), qPrintable(out));
        QVERIFY2(out.contains(QStringLiteral("write ok=0")), qPrintable(out));
        QVERIFY2(out.contains(QStringLiteral("Secret Service")) && out.contains(QStringLiteral("env:")),
                 qPrintable(out));
    }
};

int main(int argc, char **argv) {
    QCoreApplication app(argc, argv);
    if (argc >= 2 && qstrcmp(argv[1], "--child-read-write") == 0) {
        KeychainStore store;
        const SecretResult r = readNow(store, QStringLiteral("switchman-test-anything"));
        std::printf("read ok=%d notFound=%d error=%s\n", int(r.ok), int(r.notFound), qPrintable(r.error));
        const SecretResult w = writeNow(store, QStringLiteral("switchman-test-anything"), "x");
        std::printf("write ok=%d error=%s\n", int(w.ok), qPrintable(w.error));
        return 0;
    }
    TestKeychainStore test;
    return QTest::qExec(&test, argc, argv);
}

#include "test_keychain_store.moc"
