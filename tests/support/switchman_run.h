#pragma once
// The built switchman binary run as a user would, with the event loop turning
// meanwhile (so an engine in the test process keeps answering it). Header-only:
// SWITCHMAN_BIN is defined for the tests/app targets alone.

#include "core/demo/fake_upstream.h"
#include "gateway_fixture.h"
#include "signal_wait.h"

#include <QProcess>
#include <QTemporaryDir>

namespace sw::test {

struct SwitchmanRun {
    int exitCode = -1;
    QString out;
    QString err;
};

// No display, no user configuration (a private XDG_CONFIG_HOME), the admin key only when given.
inline SwitchmanRun runSwitchman(const QStringList &args, const QByteArray &adminKey = {},
                                 const QByteArray &stdinData = {}) {
    static QTemporaryDir home;
    QProcess process;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove(QStringLiteral("DISPLAY"));
    env.remove(QStringLiteral("WAYLAND_DISPLAY"));
    env.remove(QStringLiteral("QT_QPA_PLATFORM"));
    env.remove(QStringLiteral("SWITCHMAN_ADMIN_KEY"));
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), home.path());
    if (!adminKey.isEmpty())
        env.insert(QStringLiteral("SWITCHMAN_ADMIN_KEY"), QString::fromLatin1(adminKey));
    process.setProcessEnvironment(env);
    process.start(QStringLiteral(SWITCHMAN_BIN), args);
    if (!stdinData.isEmpty()) {
        process.write(stdinData);
        process.closeWriteChannel();
    }
    SwitchmanRun run;
    if (!waitUntil([&process]() { return process.state() == QProcess::NotRunning; }, 20000)) {
        process.kill();
        process.waitForFinished();
        run.err = QStringLiteral("timed out");
        return run;
    }
    run.exitCode = process.exitCode();
    run.out = QString::fromUtf8(process.readAllStandardOutput());
    run.err = QString::fromUtf8(process.readAllStandardError());
    return run;
}

inline QString listenOf(GatewayFixture &gw) {
    return QStringLiteral("127.0.0.1:%1").arg(gw.engine().port());
}

inline demo::Fault statusFault(int code) {
    demo::Fault f;
    f.kind = demo::Fault::Status;
    f.status = code;
    return f;
}

} // namespace sw::test
