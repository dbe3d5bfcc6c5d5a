#pragma once
// Every empty view teaches (docs/gui.md): shows a short message and the one thing
// to do next instead of an empty table.

#include <QStackedWidget>

class QLabel;

namespace sw::ui {

class EmptyStateStack final : public QStackedWidget {
    Q_OBJECT
public:
    EmptyStateStack(QWidget *content, const QString &title, const QString &hint, QWidget *parent = nullptr);
    void setEmpty(bool empty);
    bool isShowingEmpty() const { return currentIndex() == 0; }
    void setHint(const QString &hint);

private:
    QLabel *m_hint = nullptr;
};

} // namespace sw::ui
