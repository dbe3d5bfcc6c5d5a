#pragma once
// Log screen: the structured log, filterable by level and searchable.

#include <QWidget>

class QComboBox;
class QLineEdit;
class QTableView;
class QCheckBox;

namespace sw::ui {

class LogModel;
class LogFilterModel;

class LogView final : public QWidget {
    Q_OBJECT
public:
    explicit LogView(LogModel *model, QWidget *parent = nullptr);
    LogFilterModel *filterModel() const { return m_filter; }

private:
    LogModel *m_model;
    LogFilterModel *m_filter;
    QComboBox *m_level = nullptr;
    QLineEdit *m_search = nullptr;
    QTableView *m_table = nullptr;
};

} // namespace sw::ui
