#pragma once
// The two-second answer (docs/gui.md): is anything down, for whom, until when, and
// did my last request get through? Marks now on the left; failures of the last
// 30 minutes and the last requests, each told as one line, on the right.

#include "core/snapshot/engine_snapshot.h"

#include <QWidget>

class QLabel;
class QListWidget;
class QVBoxLayout;

namespace sw::ui {

class AttemptsModel;
class MarksModel;
class CredentialsModel;
class EngineCommands;
class MarkCard;
class FailureSparkline;

class DashboardView final : public QWidget {
    Q_OBJECT
public:
    // `credentials` may be null: no cards for parked keys then.
    DashboardView(AttemptsModel *attempts, MarksModel *marks, EngineCommands *commands, QWidget *parent = nullptr,
                  CredentialsModel *credentials = nullptr);
    void applySnapshot(const snapshot::EngineSnapshot &snapshot);
    QListWidget *lastRequests() const { return m_requests; }

Q_SIGNALS:
    void requestActivated(const QString &requestId);

protected:
    void showEvent(QShowEvent *event) override;

private:
    void refreshMarks();
    void refreshKeys();
    void refreshRequests();

    AttemptsModel *m_attempts;
    MarksModel *m_marks;
    EngineCommands *m_commands;
    QVBoxLayout *m_cards = nullptr;
    QList<MarkCard *> m_cardWidgets;
    CredentialsModel *m_credentials = nullptr;
    QList<MarkCard *> m_keyCards; // one per parked or rejected key, after the marks
    QLabel *m_noMarks = nullptr;
    FailureSparkline *m_sparkline = nullptr;
    QLabel *m_failures = nullptr;
    QListWidget *m_requests = nullptr;
    QLabel *m_noRequests = nullptr;
    QStringList m_shownStories;
    bool m_requestsDirty = true;
};

} // namespace sw::ui
