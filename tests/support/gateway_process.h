#pragma once
// The built switchman binary run headless as a long-lived gateway, on a test's own configuration
// and data directories. Header-only: SWITCHMAN_BIN is defined for the tests/app targets alone.

#include "signal_wait.h"

#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

namespace sw::test {

// Headless (no display), no admin key, configuration and data under `home`; Qt's logging rules only
// when given.
inline QProcessEnvironment gatewayEnvironment(const QTemporaryDir &home, const QString &qtLoggingRules = {}) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove(QStringLiteral("QT_LOGGING_RULES"));
    if (!qtLoggingRules.isEmpty())
        env.insert(QStringLiteral("QT_LOGGING_RULES"), qtLoggingRules);
    env.remove(QStringLiteral("DISPLAY"));
    env.remove(QStringLiteral("WAYLAND_DISPLAY"));
    env.remove(QStringLiteral("QT_QPA_PLATFORM"));
    env.remove(QStringLiteral("SWITCHMAN_ADMIN_KEY"));
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), home.filePath(QStringLiteral("config")));
    env.insert(QStringLiteral("XDG_DATA_HOME"), home.filePath(QStringLiteral("data")));
    return env;
}

// Starts `switchman --headless --config configPath` and returns its base URL (from the banner's first
// line), or empty when it did not come up.
inline QString startGateway(QProcess &process, const QString &configPath, const QProcessEnvironment &env) {
    process.setProcessEnvironment(env);
    process.start(QStringLiteral(SWITCHMAN_BIN),
                  {QStringLiteral("--headless"), QStringLiteral("--config"), configPath});
    QString banner;
    waitUntil(
        [&]() {
            banner += QString::fromUtf8(process.readAllStandardOutput());
            return banner.contains(QLatin1Char('\n')) || process.state() == QProcess::NotRunning;
        },
        20000);
    const auto m = QRegularExpression(QStringLiteral("listening on (http://\\S+)")).match(banner);
    return m.hasMatch() ? m.captured(1) : QString();
}

} // namespace sw::test
