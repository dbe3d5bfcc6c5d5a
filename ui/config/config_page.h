#pragma once
// One tab of the configuration editor. Every page edits the same working copy
// (owned by ConfigEditor) and says so with edited(); the editor then validates
// the whole copy and decides whether there is anything to save.

#include "core/config/config.h"

#include <QString>
#include <QStringList>
#include <QWidget>
#include <functional>

class QFormLayout;
class QLabel;
class QSpinBox;

namespace sw::ui {

// The questions a page may ask the user. ConfigEditor answers them with modal
// dialogs; tests answer them directly.
struct ConfigDialogs {
    std::function<QString(const QString &title, const QString &label, const QString &initial)> askText;
    std::function<QString(const QString &title, const QString &label)> askSecret;
    std::function<void(const QString &tenant, const QString &key)> showNewKey;
};

class ConfigPage : public QWidget {
    Q_OBJECT
public:
    ConfigPage(config::Config &working, const ConfigDialogs &dialogs, QWidget *parent = nullptr);

    // The working copy changed as a whole (revert, a new running configuration,
    // another page): show it again, keeping the selection where it still exists.
    virtual void load() = 0;

Q_SIGNALS:
    // A widget changed the working copy.
    void edited();

protected:
    // Widgets report their changes through here, and not while load() fills them.
    void changed() {
        if (!m_loading)
            Q_EMIT edited();
    }

    config::Config &m_working;
    const ConfigDialogs &m_dialogs;
    bool m_loading = false;
};

// While alive, widget signals are load() filling widgets, not user edits.
class LoadingScope final {
public:
    explicit LoadingScope(bool &loading) : m_loading(loading), m_was(loading) { m_loading = true; }
    ~LoadingScope() { m_loading = m_was; }
    LoadingScope(const LoadingScope &) = delete;
    LoadingScope &operator=(const LoadingScope &) = delete;

private:
    bool &m_loading;
    bool m_was;
};

// Fields at the top, growing only where text grows (URLs, lists), extra space below.
QFormLayout *topAlignedForm(QWidget *host);
// A quiet sentence under a form that explains a rule.
QLabel *hintLabel(const QString &text, QWidget *parent);
// A spin box of milliseconds up to `max`.
QSpinBox *millisecondsSpin(QWidget *parent, int max);
// "a, b, c" -> {a, b, c}, blanks dropped.
QStringList splitList(const QString &text);
QString joinList(const QStringList &list);

} // namespace sw::ui
