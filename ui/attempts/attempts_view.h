#pragma once
// Attempts screen: the live table, filters by tenant and outcome, and the
// selected request told as one story in a detail pane.

#include <QWidget>

class QTableView;
class QComboBox;
class QLabel;
class QTextBrowser;
class QTimer;
class QPushButton;

namespace sw::ui {

class AttemptsModel;
class AttemptsFilterModel;
class EmptyStateStack;

class AttemptsView final : public QWidget {
    Q_OBJECT
public:
    explicit AttemptsView(AttemptsModel *model, QWidget *parent = nullptr);
    void setBaseUrl(const QString &baseUrl);
    AttemptsFilterModel *filterModel() const { return m_filter; }
    // Shows one request's attempts (from the dashboard's story lines).
    void showRequest(const QString &requestId);

private:
    void updateDetail();
    void refreshEmpty();

    AttemptsModel *m_model;
    AttemptsFilterModel *m_filter;
    QTableView *m_table = nullptr;
    QComboBox *m_tenant = nullptr;
    QComboBox *m_outcome = nullptr;
    // Not a QLabel: a word-wrapped label is as wide as its longest word, and an upstream error holding a
    // 300-character token (a URL, a base64 blob) made the whole window 2742 px wide until restart. This
    // wraps anywhere inside such a token and scrolls when the story is long.
    QTextBrowser *m_detail = nullptr;
    QLabel *m_requestFilter = nullptr;
    QPushButton *m_showAll = nullptr;
    EmptyStateStack *m_stack = nullptr;
    QString m_shownRequest;
};

} // namespace sw::ui
