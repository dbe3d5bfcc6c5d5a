// The first start without a configuration file: the starter file is written,
// loaded, and the user is told the next step.

#include "app/first_run.h"
#include "core/config/starter_config.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

using sw::app::FirstRun;

class TestFirstRun final : public QObject {
    Q_OBJECT

private slots:
    void writesStarterAndSaysWhatNext();
    void existingFileIsNeverReplaced();
    void unwritablePathStartsEmptyAndSaysWhy();
};

void TestFirstRun::writesStarterAndSaysWhatNext() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("switchman/config.json"));
    const FirstRun first = sw::app::firstRun(path);
    QVERIFY(first.wrote);
    QVERIFY(QFile::exists(path));
    // Owner only, like every configuration the gateway writes: it may hold keys.
    QCOMPARE(QFile::permissions(path) & ~(QFileDevice::ReadUser | QFileDevice::WriteUser),
             QFileDevice::ReadOwner | QFileDevice::WriteOwner);
    QCOMPARE(QFile::permissions(dir.filePath(QStringLiteral("switchman"))) &
                 ~(QFileDevice::ReadUser | QFileDevice::WriteUser | QFileDevice::ExeUser),
             QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
    QVERIFY(first.config.routes.contains(QStringLiteral("claude")));
    QVERIFY(first.config.providers.contains(QStringLiteral("anthropic")));
    QVERIFY2(first.message.contains(QStringLiteral("wrote a starter configuration to ") + path),
             qPrintable(first.message));
    QVERIFY(first.message.contains(QStringLiteral("switchman credential set anthropic")));
    QVERIFY(first.message.contains(QStringLiteral("switchman check-config ") + path));
    QVERIFY(first.message.contains(QStringLiteral("switchman --demo")));
    QVERIFY(first.message.contains(QStringLiteral("ANTHROPIC_BASE_URL=http://127.0.0.1:4141")));
    QVERIFY(first.message.endsWith(QLatin1Char('\n')));
}

void TestFirstRun::existingFileIsNeverReplaced() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("config.json"));
    {
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("{}");
    }
    const FirstRun first = sw::app::firstRun(path);
    QVERIFY(!first.wrote);
    QVERIFY(first.config.routes.isEmpty());
    QVERIFY(first.message.contains(QStringLiteral("already exists")));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(file.readAll(), QByteArray("{}"));
}

void TestFirstRun::unwritablePathStartsEmptyAndSaysWhy() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    {
        QFile blocker(dir.filePath(QStringLiteral("switchman")));
        QVERIFY(blocker.open(QIODevice::WriteOnly));
    }
    const FirstRun first = sw::app::firstRun(dir.filePath(QStringLiteral("switchman/config.json")));
    QVERIFY(!first.wrote);
    QVERIFY(first.config.providers.isEmpty());
    QVERIFY2(first.message.contains(QStringLiteral("could not be written")), qPrintable(first.message));
    QVERIFY(first.message.contains(QStringLiteral("--demo")));
}

QTEST_GUILESS_MAIN(TestFirstRun)
#include "test_first_run.moc"
