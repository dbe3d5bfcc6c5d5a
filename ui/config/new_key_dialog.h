#pragma once
// Shows a newly created tenant key once, with a copy button: it is never
// stored or shown again (only its hash goes into the configuration).

#include <QDialog>

namespace sw::ui {

class NewKeyDialog final : public QDialog {
    Q_OBJECT
public:
    NewKeyDialog(const QString &tenant, const QString &key, QWidget *parent = nullptr);
};

} // namespace sw::ui
