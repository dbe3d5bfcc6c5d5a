#include "unprivileged_run.h"

#include <QCoreApplication>
#include <QDir>
#include <QProcess>
#include <QRegularExpression>

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

namespace sw::test {

namespace {
constexpr char kChildVariable[] = "SWITCHMAN_TEST_UNPRIVILEGED";
constexpr int kCannotDrop = 125; // the child could not become `nobody`
} // namespace

UnprivilegedRun runAsUnprivilegedUser() {
    UnprivilegedRun run;
    if (::geteuid() != 0)
        return run; // modes hold for this process: the test runs here
    if (qEnvironmentVariableIsSet(kChildVariable)) {
        run.skipReason = QStringLiteral("still root in the child meant to run as nobody");
        return run;
    }
    const passwd *nobody = ::getpwnam("nobody");
    if (!nobody) {
        run.skipReason = QStringLiteral("runs as root, and there is no user 'nobody' to run it as");
        return run;
    }
    const uid_t uid = nobody->pw_uid;
    const gid_t gid = nobody->pw_gid;
    QString function = QString::fromLatin1(QTest::currentTestFunction());
    if (const char *tag = QTest::currentDataTag())
        function += QLatin1Char(':') + QString::fromLatin1(tag);
    QProcess child;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QString::fromLatin1(kChildVariable), QStringLiteral("1"));
    env.insert(QStringLiteral("TMPDIR"), QStringLiteral("/tmp")); // root's own temporary folder may be closed to it
    env.insert(QStringLiteral("HOME"), QStringLiteral("/tmp"));
    env.remove(QStringLiteral("XDG_RUNTIME_DIR"));
    child.setProcessEnvironment(env);
    child.setWorkingDirectory(QStringLiteral("/tmp"));
    child.setProcessChannelMode(QProcess::MergedChannels);
    child.setChildProcessModifier([uid, gid]() {
        // Between fork and exec: async-signal-safe calls only.
        if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0)
            ::_exit(kCannotDrop);
    });
    child.start(QCoreApplication::applicationFilePath(), {function});
    if (!child.waitForStarted(20000)) {
        run.skipReason = QStringLiteral("runs as root, and this test binary cannot be started as nobody (%1)")
                             .arg(child.errorString());
        return run;
    }
    if (!child.waitForFinished(240000)) {
        child.kill();
        child.waitForFinished();
    }
    run.output = QString::fromLocal8Bit(child.readAll());
    if (child.exitStatus() == QProcess::NormalExit && child.exitCode() == kCannotDrop) {
        run.skipReason = QStringLiteral("runs as root, and cannot run the test as nobody");
        return run;
    }
    const QRegularExpressionMatch skipped =
        QRegularExpression(QStringLiteral("^SKIP\\s*:\\s*\\S+::%1\\(.*$")
                               .arg(QRegularExpression::escape(QString::fromLatin1(QTest::currentTestFunction()))),
                           QRegularExpression::MultilineOption)
            .match(run.output);
    if (skipped.hasMatch()) {
        run.skipReason = QStringLiteral("as nobody: ") + skipped.captured(0);
        return run;
    }
    run.ranInChild = true;
    run.passed = child.exitStatus() == QProcess::NormalExit && child.exitCode() == 0 &&
                 run.output.contains(QStringLiteral("Totals: "));
    run.output = QStringLiteral("as nobody:\n") + run.output;
    return run;
}

} // namespace sw::test
