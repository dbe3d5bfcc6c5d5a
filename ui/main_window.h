#pragma once
#include <QMainWindow>

namespace sw::ui {

// The admin window. A minimal shell for now; the full GUI is issue 6.
class MainWindow final : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(const QString &baseUrl, QWidget *parent = nullptr);
};

} // namespace sw::ui
