#pragma once
// "Start Switchman when I log in": an XDG autostart entry,
// $XDG_CONFIG_HOME/autostart/io.github.switchman.Switchman.desktop
// (normally ~/.config/autostart/...). The admin window's toggle calls
// isEnabled() and setEnabled(); nothing here needs a GUI.

#include <QString>

namespace sw::desktop {

// The reverse-DNS application id: the installed .desktop file, the AppStream
// component and the icon all carry this name.
inline constexpr char kAppId[] = "io.github.switchman.Switchman";

class Autostart {
public:
    // `program` is what the entry starts; empty means the running executable
    // (QCoreApplication::applicationFilePath()), or "switchman" from PATH when
    // there is no application object.
    explicit Autostart(QString program = QString());

    // The entry's path under the user's autostart directory.
    static QString entryPath();

    // True when the entry exists and is not switched off inside (Hidden=true or
    // X-GNOME-Autostart-enabled=false, as desktop settings tools write it).
    bool isEnabled() const;

    // Writes (atomically) or removes the entry. Returns false and sets *error
    // (when non-null) if the file cannot be written or removed.
    bool setEnabled(bool enabled, QString *error = nullptr);

    // The entry's text for this program.
    QByteArray entryText() const;

private:
    QString m_program;
};

} // namespace sw::desktop
