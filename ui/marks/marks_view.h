#pragma once
// Marks screen: the table with a live countdown, clear one (Delete), clear a
// tenant's, clear all (asks once). Every clear goes to the engine; the rows go
// at once. Below it the second table, "Credentials": every configured
// key with its state, reason and countdown, and "Retry now".

#include <QWidget>

class QTableView;
class QComboBox;
class QPushButton;
class QLabel;
class QTimer;

namespace sw::ui {

class MarksModel;
class CredentialsModel;
class EngineCommands;
class EmptyStateStack;

class MarksView final : public QWidget {
    Q_OBJECT
public:
    // `credentials` may be null: the second table is then left out.
    MarksView(MarksModel *model, EngineCommands *commands, QWidget *parent = nullptr,
              CredentialsModel *credentials = nullptr);

    // Bulk clears ask once; tests (and the tray, which already says what it does) may skip it.
    void setConfirmBulkClear(bool confirm) { m_confirmBulk = confirm; }
    QTableView *table() const { return m_table; }
    QTableView *credentialsTable() const { return m_credTable; }
    // Where marks live: with Redis, a line names the store and the "Set by" column shows.
    void setStore(const QString &description, bool shared, bool up);
    QLabel *storeLabel() const { return m_store; }

public Q_SLOTS:
    void clearSelected();
    void clearTenant(const QString &tenant);
    void clearAll();
    // Selected credentials leave parking now; with none selected, every parked one does.
    void retrySelectedCredentials();

private:
    void refresh();
    void refreshCredentials();
    void fitScope(); // Scope as wide as its text, up to a cap
    bool confirm(const QString &text);

    MarksModel *m_model;
    EngineCommands *m_commands;
    QTableView *m_table = nullptr;
    QComboBox *m_tenant = nullptr;
    QPushButton *m_clearSelected = nullptr;
    QPushButton *m_clearTenant = nullptr;
    QPushButton *m_clearAll = nullptr;
    EmptyStateStack *m_stack = nullptr;
    CredentialsModel *m_credentials = nullptr;
    QTableView *m_credTable = nullptr;
    QPushButton *m_retry = nullptr;
    QLabel *m_credSummary = nullptr;
    QLabel *m_store = nullptr;
    bool m_confirmBulk = true;
};

} // namespace sw::ui
