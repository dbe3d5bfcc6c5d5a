#include "main_window.h"

#include <QLabel>

namespace sw::ui {

MainWindow::MainWindow(const QString &baseUrl, QWidget *parent) : QMainWindow(parent)
{
    setWindowTitle(tr("Switchman"));
    auto *label = new QLabel(tr("Serving on %1").arg(baseUrl), this);
    label->setMargin(24);
    setCentralWidget(label);
    resize(900, 560);
}

} // namespace sw::ui
