#pragma once
// Marks screen: the table with a live countdown, clear one (Delete), clear a
// tenant's, clear all (asks once). Every clear goes to the engine; the rows go
// at once.

#include <QWidget>

class QTableView;
class QComboBox;
class QPushButton;
class QTimer;

namespace sw::ui {

class MarksModel;
class EngineCommands;
class EmptyStateStack;

class MarksView final : public QWidget {
    Q_OBJECT
public:
    MarksView(MarksModel *model, EngineCommands *commands, QWidget *parent = nullptr);

    // Bulk clears ask once; tests (and the tray, which already says what it does) may skip it.
    void setConfirmBulkClear(bool confirm) { m_confirmBulk = confirm; }
    QTableView *table() const { return m_table; }

public Q_SLOTS:
    void clearSelected();
    void clearTenant(const QString &tenant);
    void clearAll();

private:
    void refresh();
    bool confirm(const QString &text);

    MarksModel *m_model;
    EngineCommands *m_commands;
    QTableView *m_table = nullptr;
    QComboBox *m_tenant = nullptr;
    QPushButton *m_clearSelected = nullptr;
    QPushButton *m_clearTenant = nullptr;
    QPushButton *m_clearAll = nullptr;
    EmptyStateStack *m_stack = nullptr;
    bool m_confirmBulk = true;
};

} // namespace sw::ui
