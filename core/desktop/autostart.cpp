#include "core/desktop/autostart.h"

#include "core/util/save_file.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>
#include <QStandardPaths>

namespace sw::desktop {

namespace {

// Desktop Entry Exec quoting: reserved characters need the argument quoted,
// and inside quotes ", `, $ and \ are escaped with a backslash.
QString quoteExecArgument(const QString &argument) {
    static const QString reserved = QStringLiteral(" \t\n\"'\\><~|&;$*?#()`");
    bool needsQuotes = argument.isEmpty();
    for (const QChar c : argument)
        needsQuotes = needsQuotes || reserved.contains(c);
    QString escaped = argument;
    escaped.replace(QLatin1Char('%'), QStringLiteral("%%")); // field codes
    if (!needsQuotes)
        return escaped;
    QString quoted;
    for (const QChar c : escaped) {
        if (c == QLatin1Char('"') || c == QLatin1Char('`') || c == QLatin1Char('$') || c == QLatin1Char('\\'))
            quoted += QLatin1Char('\\');
        quoted += c;
    }
    return QLatin1Char('"') + quoted + QLatin1Char('"');
}

} // namespace

Autostart::Autostart(QString program) : m_program(std::move(program)) {
    if (m_program.isEmpty() && QCoreApplication::instance())
        m_program = QCoreApplication::applicationFilePath();
    if (m_program.isEmpty())
        m_program = QStringLiteral("switchman");
}

QString Autostart::entryPath() {
    return QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation) + QStringLiteral("/autostart/") +
           QLatin1String(kAppId) + QStringLiteral(".desktop");
}

bool Autostart::isEnabled() const {
    QFile file(entryPath());
    if (!file.open(QIODevice::ReadOnly | QIODevice::Text))
        return false;
    bool inMainGroup = false;
    while (!file.atEnd()) {
        const QString line = QString::fromUtf8(file.readLine()).trimmed();
        if (line.startsWith(QLatin1Char('['))) {
            inMainGroup = line == QLatin1String("[Desktop Entry]");
            continue;
        }
        if (!inMainGroup)
            continue;
        const qsizetype equals = line.indexOf(QLatin1Char('='));
        if (equals < 0)
            continue;
        const QString key = line.left(equals).trimmed();
        const QString value = line.mid(equals + 1).trimmed();
        if (key == QLatin1String("Hidden") && value == QLatin1String("true"))
            return false;
        if (key == QLatin1String("X-GNOME-Autostart-enabled") && value == QLatin1String("false"))
            return false;
    }
    return true;
}

QByteArray Autostart::entryText() const {
    const QString text = QStringLiteral("[Desktop Entry]\n"
                                        "Type=Application\n"
                                        "Name=Switchman\n"
                                        "Comment=LLM gateway: fail over between providers (tray)\n"
                                        "Exec=%1\n"
                                        "Icon=%2\n"
                                        "Terminal=false\n"
                                        "X-GNOME-Autostart-enabled=true\n")
                             .arg(quoteExecArgument(m_program), QLatin1String(kAppId));
    return text.toUtf8();
}

bool Autostart::setEnabled(bool enabled, QString *error) {
    const auto fail = [error](const QString &message) {
        if (error)
            *error = message;
        return false;
    };
    const QString path = entryPath();
    if (!enabled) {
        if (QFileInfo::exists(path) && !QFile::remove(path))
            return fail(QStringLiteral("cannot remove %1").arg(path));
        return true;
    }
    const QString directory = QFileInfo(path).absolutePath();
    if (!QDir().mkpath(directory))
        return fail(QStringLiteral("cannot create directory %1").arg(directory));
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Unbuffered))
        return fail(QStringLiteral("cannot write %1: %2").arg(path, file.errorString()));
    // A failed write (disk full) keeps the entry that was there instead of an empty one.
    QString reason;
    if (!util::writeAndCommit(file, entryText(), &reason))
        return fail(QStringLiteral("cannot write %1: %2").arg(path, reason));
    return true;
}

} // namespace sw::desktop
