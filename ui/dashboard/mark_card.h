#pragma once
// One mark on the dashboard: who and what, kind and strikes, a bar draining
// towards expiry, and a one-click clear.

#include <QFrame>

class QLabel;
class QProgressBar;
class QToolButton;

namespace sw::ui {
class ElidedLabel;
}

namespace sw::ui {

class MarkCard final : public QFrame {
    Q_OBJECT
public:
    explicit MarkCard(QWidget *parent = nullptr);
    // Plain text: the lead in bold (the tenant, or the key's provider), then the rest of the title, elided in
    // the middle when the card is narrower than it, so the countdown and the clear button always show.
    void set(const QString &lead, const QString &title, const QString &subtitle, qint64 remainingMs, qint64 ttlMs);
    // A parked credential's card says "back in …" or "until the key changes" instead of "expires in".
    void setExpiresText(const QString &text);
    void setClearToolTip(const QString &text);
    void setState(bool error); // red for a rejected key, amber otherwise

Q_SIGNALS:
    void clearClicked();

private:
    ElidedLabel *m_lead = nullptr;
    ElidedLabel *m_title = nullptr;
    ElidedLabel *m_subtitle = nullptr;
    QProgressBar *m_bar = nullptr;
    QLabel *m_expires = nullptr;
    QLabel *m_icon = nullptr;
    QToolButton *m_clear = nullptr;
};

} // namespace sw::ui
