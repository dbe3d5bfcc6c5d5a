#include "ui/config/list_form_page.h"

#include <QFormLayout>
#include <QHBoxLayout>
#include <QListWidget>
#include <QPushButton>
#include <QSplitter>
#include <QVBoxLayout>

namespace sw::ui {

ListFormPage::ListFormPage(config::Config &working, const ConfigDialogs &dialogs, const Texts &texts, QWidget *parent)
    : ConfigPage(working, dialogs, parent), m_texts(texts) {
    auto *split = new QSplitter(this);
    auto *left = new QWidget(split);
    auto *l = new QVBoxLayout(left);
    l->setContentsMargins(0, 0, 0, 0);
    m_list = new QListWidget(left);
    m_list->setObjectName(texts.key + QStringLiteral("List"));
    l->addWidget(m_list, 1);
    auto *add = new QPushButton(tr("Add…"), left);
    add->setObjectName(texts.key + QStringLiteral("Add"));
    m_duplicate = new QPushButton(tr("Duplicate…"), left);
    m_duplicate->setObjectName(texts.key + QStringLiteral("Duplicate"));
    m_duplicate->setToolTip(tr("A new entry with the selected one's settings"));
    m_remove = new QPushButton(tr("Remove"), left);
    m_remove->setObjectName(texts.key + QStringLiteral("Remove"));
    auto *buttons = new QHBoxLayout;
    buttons->addWidget(add);
    buttons->addWidget(m_duplicate);
    buttons->addWidget(m_remove);
    l->addLayout(buttons);
    m_formHost = new QWidget(split);
    m_formHost->setObjectName(texts.key + QStringLiteral("Form"));
    m_form = topAlignedForm(m_formHost);
    split->addWidget(left);
    split->addWidget(m_formHost);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 3);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(split);

    connect(m_list, &QListWidget::currentRowChanged, this, &ListFormPage::showForm);
    connect(add, &QPushButton::clicked, this, [this]() { addItem(QString()); });
    connect(m_duplicate, &QPushButton::clicked, this, [this]() { addItem(current()); });
    connect(m_remove, &QPushButton::clicked, this, &ListFormPage::removeItem);
}

QString ListFormPage::current() const {
    const QListWidgetItem *item = m_list->currentItem();
    return item ? item->text() : QString();
}

void ListFormPage::select(const QString &name) {
    const auto found = m_list->findItems(name, Qt::MatchExactly);
    m_list->setCurrentRow(found.isEmpty() ? (m_list->count() > 0 ? 0 : -1) : m_list->row(found.first()));
}

void ListFormPage::load() {
    {
        const LoadingScope loading(m_loading);
        const QString keep = current();
        m_list->clear();
        m_list->addItems(names());
        select(keep);
    }
    showForm();
}

void ListFormPage::showForm() {
    const QString name = current();
    const bool exists = contains(name);
    m_formHost->setEnabled(exists);
    m_duplicate->setEnabled(exists);
    m_remove->setEnabled(exists);
    const LoadingScope loading(m_loading);
    loadForm(exists ? name : QString());
}

void ListFormPage::addItem(const QString &from) {
    const QString title = from.isEmpty() ? m_texts.addTitle : tr("Duplicate %1").arg(from);
    const QString name =
        m_dialogs.askText(title, m_texts.nameLabel, from.isEmpty() ? QString() : from + QStringLiteral("-copy"));
    if (!acceptsName(name) || contains(name))
        return;
    if (from.isEmpty())
        insertNew(name);
    else
        insertCopy(from, name);
    load();
    select(name);
    changed();
    added(name);
}

void ListFormPage::removeItem() {
    const QString name = current();
    if (!contains(name))
        return;
    const int row = m_list->currentRow();
    remove(name);
    load();
    // The neighbour takes the selection, as in any list.
    m_list->setCurrentRow(std::min(row, m_list->count() - 1));
    changed();
}

} // namespace sw::ui
