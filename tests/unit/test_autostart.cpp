// The XDG autostart entry behind the admin window's "start at login" toggle,
// in a temporary XDG_CONFIG_HOME.

#include "core/desktop/autostart.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <sys/resource.h>

using sw::desktop::Autostart;

class TestAutostart final : public QObject {
    Q_OBJECT

private slots:
    void init();
    void cleanup();
    void entryLivesInXdgConfigHome();
    void offWhenThereIsNoEntry();
    void enableWritesAnEntryThatStartsTheProgram();
    void enableTwiceAndDisableTwice();
    void entrySwitchedOffInsideCountsAsOff();
    void programPathIsQuotedForExec();
    void entryPassesDesktopFileValidate();
    void unwritableDirectoryIsAnError();
    void aWriteThatFailsKeepsTheEntryThatWasThere();

private:
    std::unique_ptr<QTemporaryDir> m_home;
    QByteArray m_oldXdg;
};

namespace {

QByteArray readFile(const QString &path) {
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

bool writeFile(const QString &path, const QByteArray &data) {
    QFile file(path);
    return file.open(QIODevice::WriteOnly) && file.write(data) == data.size();
}

} // namespace

void TestAutostart::init() {
    m_home = std::make_unique<QTemporaryDir>();
    QVERIFY(m_home->isValid());
    m_oldXdg = qgetenv("XDG_CONFIG_HOME");
    qputenv("XDG_CONFIG_HOME", QFile::encodeName(m_home->path()));
}

void TestAutostart::cleanup() {
    if (m_oldXdg.isNull())
        qunsetenv("XDG_CONFIG_HOME");
    else
        qputenv("XDG_CONFIG_HOME", m_oldXdg);
    m_home.reset();
}

void TestAutostart::entryLivesInXdgConfigHome() {
    QCOMPARE(Autostart::entryPath(),
             m_home->path() + QStringLiteral("/autostart/io.github.switchman.Switchman.desktop"));
}

void TestAutostart::offWhenThereIsNoEntry() {
    QVERIFY(!Autostart(QStringLiteral("/usr/bin/switchman")).isEnabled());
}

void TestAutostart::enableWritesAnEntryThatStartsTheProgram() {
    Autostart autostart(QStringLiteral("/usr/bin/switchman"));
    QString error;
    QVERIFY2(autostart.setEnabled(true, &error), qPrintable(error));
    QVERIFY(autostart.isEnabled());
    const QByteArray text = readFile(Autostart::entryPath());
    QVERIFY(text.startsWith("[Desktop Entry]\n"));
    QVERIFY(text.contains("\nExec=/usr/bin/switchman\n"));
    QVERIFY(text.contains("\nType=Application\n"));
    QVERIFY(text.contains("\nIcon=io.github.switchman.Switchman\n"));
    // A fresh object (the next start of the GUI) sees the same state.
    QVERIFY(Autostart(QStringLiteral("/elsewhere/switchman")).isEnabled());

    QVERIFY2(autostart.setEnabled(false, &error), qPrintable(error));
    QVERIFY(!autostart.isEnabled());
    QVERIFY(!QFileInfo::exists(Autostart::entryPath()));
}

void TestAutostart::enableTwiceAndDisableTwice() {
    Autostart autostart(QStringLiteral("/usr/bin/switchman"));
    QVERIFY(autostart.setEnabled(true));
    QVERIFY(autostart.setEnabled(true));
    QVERIFY(autostart.isEnabled());
    QVERIFY(autostart.setEnabled(false));
    QVERIFY(autostart.setEnabled(false));
    QVERIFY(!autostart.isEnabled());
}

void TestAutostart::entrySwitchedOffInsideCountsAsOff() {
    Autostart autostart(QStringLiteral("/usr/bin/switchman"));
    QVERIFY(autostart.setEnabled(true));
    QByteArray text = readFile(Autostart::entryPath());
    QVERIFY(writeFile(Autostart::entryPath(), text + "Hidden=true\n"));
    QVERIFY(!autostart.isEnabled());
    text.replace("X-GNOME-Autostart-enabled=true", "X-GNOME-Autostart-enabled=false");
    QVERIFY(writeFile(Autostart::entryPath(), text));
    QVERIFY(!autostart.isEnabled());
    // Turning it on again replaces what a settings tool left.
    QVERIFY(autostart.setEnabled(true));
    QVERIFY(autostart.isEnabled());
    const QByteArray rewritten = readFile(Autostart::entryPath());
    QVERIFY(!rewritten.contains("X-GNOME-Autostart-enabled=false"));
    QVERIFY(!rewritten.contains("Hidden="));
}

void TestAutostart::programPathIsQuotedForExec() {
    const QByteArray text = Autostart(QStringLiteral("/opt/My Apps/switch$man")).entryText();
    QVERIFY2(text.contains("\nExec=\"/opt/My Apps/switch\\$man\"\n"), text.constData());
    QVERIFY(Autostart(QStringLiteral("/opt/100%/switchman")).entryText().contains("\nExec=/opt/100%%/switchman\n"));
}

void TestAutostart::entryPassesDesktopFileValidate() {
    const QString validator = QStandardPaths::findExecutable(QStringLiteral("desktop-file-validate"));
    if (validator.isEmpty())
        QSKIP("desktop-file-validate is not installed (Debian: desktop-file-utils, scripts/deps.sh)");
    Autostart autostart(QStringLiteral("/opt/My Apps/switchman"));
    QVERIFY(autostart.setEnabled(true));
    QProcess process;
    process.setProcessChannelMode(QProcess::MergedChannels);
    process.start(validator, {Autostart::entryPath()});
    QVERIFY(process.waitForFinished(20000));
    const QByteArray output = process.readAll();
    QVERIFY2(process.exitCode() == 0 && output.isEmpty(), output.constData());
}

void TestAutostart::unwritableDirectoryIsAnError() {
    // A regular file where the autostart directory should be: fails even for root.
    QVERIFY(writeFile(m_home->filePath(QStringLiteral("autostart")), "not a directory"));
    Autostart autostart(QStringLiteral("/usr/bin/switchman"));
    QString error;
    QVERIFY(!autostart.setEnabled(true, &error));
    QVERIFY2(error.contains(QStringLiteral("autostart")), qPrintable(error));
    QVERIFY(!autostart.isEnabled());
}

void TestAutostart::aWriteThatFailsKeepsTheEntryThatWasThere() {
    // The disk fills up while the entry is written: the toggle once said "on" and left an empty
    // file in place of the entry (so the session started nothing). RLIMIT_FSIZE fails the write
    // the same way without root.
    Autostart autostart(QStringLiteral("/usr/bin/switchman"));
    QVERIFY(autostart.setEnabled(true));
    const QByteArray before = readFile(Autostart::entryPath()) + "Hidden=true\n"; // a settings tool's "off"
    QVERIFY(writeFile(Autostart::entryPath(), before));

    struct rlimit old {};
    QCOMPARE(getrlimit(RLIMIT_FSIZE, &old), 0);
    const auto oldHandler = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limited = old;
    limited.rlim_cur = 16; // far below the entry's size
    QCOMPARE(setrlimit(RLIMIT_FSIZE, &limited), 0);
    QString error;
    const bool enabled = autostart.setEnabled(true, &error);
    setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, oldHandler);

    QVERIFY(!enabled);
    QVERIFY2(error.contains(Autostart::entryPath()) && error.contains(QStringLiteral("too large"), Qt::CaseInsensitive),
             qPrintable(error));
    QCOMPARE(readFile(Autostart::entryPath()), before);
    QCOMPARE(QDir(QFileInfo(Autostart::entryPath()).absolutePath()).entryList(QDir::Files | QDir::Hidden),
             QStringList{QFileInfo(Autostart::entryPath()).fileName()});
    QVERIFY(!autostart.isEnabled());
}

QTEST_GUILESS_MAIN(TestAutostart)
#include "test_autostart.moc"
