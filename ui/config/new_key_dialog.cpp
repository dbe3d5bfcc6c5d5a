#include "ui/config/new_key_dialog.h"

#include <QApplication>
#include <QClipboard>
#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace sw::ui {

NewKeyDialog::NewKeyDialog(const QString &tenant, const QString &key, QWidget *parent) : QDialog(parent) {
    setWindowTitle(tr("New key for %1").arg(tenant));
    auto *layout = new QVBoxLayout(this);
    auto *text = new QLabel(tr("This is the only time the key is shown. Copy it into the client's settings "
                               "(Authorization: Bearer … or x-api-key). Switchman keeps only its hash; the key "
                               "works once the configuration is saved."),
                            this);
    text->setWordWrap(true);
    layout->addWidget(text);
    auto *row = new QHBoxLayout;
    auto *field = new QLineEdit(key, this);
    field->setObjectName(QStringLiteral("newKey"));
    field->setReadOnly(true);
    field->setMinimumWidth(field->fontMetrics().horizontalAdvance(key) + 24);
    auto *copy = new QPushButton(tr("Copy"), this);
    copy->setObjectName(QStringLiteral("copyKey"));
    row->addWidget(field, 1);
    row->addWidget(copy);
    layout->addLayout(row);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    layout->addWidget(buttons);
    connect(copy, &QPushButton::clicked, this, [copy, key]() {
        QApplication::clipboard()->setText(key);
        copy->setText(tr("Copied"));
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::accept);
}

} // namespace sw::ui
