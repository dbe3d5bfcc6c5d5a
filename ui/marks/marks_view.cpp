#include "marks/marks_view.h"

#include "marks/marks_model.h"
#include "shared/empty_state_stack.h"
#include "shared/engine_commands.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QShortcut>
#include <QTableView>
#include <QVBoxLayout>

namespace sw::ui {

MarksView::MarksView(MarksModel *model, EngineCommands *commands, QWidget *parent)
    : QWidget(parent), m_model(model), m_commands(commands) {
    auto *layout = new QVBoxLayout(this);
    auto *bar = new QHBoxLayout;
    auto *title = new QLabel(
        tr("<b>Provider-down marks</b> — candidates each tenant skips until the mark expires. Select one and press "
           "Delete to retry it now."),
        this);
    title->setWordWrap(true); // the stacked pages share one minimum width: never let a sentence set it
    bar->addWidget(title, 1);
    m_clearSelected = new QPushButton(tr("Clear selected"), this);
    m_clearSelected->setObjectName(QStringLiteral("clearSelected"));
    m_clearSelected->setToolTip(tr("Clear the selected marks (Delete)"));
    m_tenant = new QComboBox(this);
    m_tenant->setObjectName(QStringLiteral("tenantCombo"));
    m_clearTenant = new QPushButton(tr("Clear tenant"), this);
    m_clearTenant->setObjectName(QStringLiteral("clearTenant"));
    m_clearAll = new QPushButton(tr("Clear all…"), this);
    m_clearAll->setObjectName(QStringLiteral("clearAll"));
    bar->addWidget(m_clearSelected);
    bar->addSpacing(12);
    bar->addWidget(m_tenant);
    bar->addWidget(m_clearTenant);
    bar->addSpacing(12);
    bar->addWidget(m_clearAll);
    layout->addLayout(bar);

    m_table = new QTableView(this);
    m_table->setObjectName(QStringLiteral("marksTable"));
    m_table->setModel(model);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setAlternatingRowColors(true);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 8);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(MarksModel::LastError, QHeaderView::Stretch);
    m_stack = new EmptyStateStack(m_table, tr("No marks — every candidate is healthy"),
                                  tr("When an upstream fails, the tenant's mark shows here with its countdown and "
                                     "requests skip that candidate until it expires. Clear a mark to retry it now."),
                                  this);
    layout->addWidget(m_stack, 1);

    auto *del = new QShortcut(QKeySequence::Delete, m_table, nullptr, nullptr, Qt::WidgetWithChildrenShortcut);
    connect(del, &QShortcut::activated, this, &MarksView::clearSelected);
    auto *backspace =
        new QShortcut(QKeySequence(Qt::Key_Backspace), m_table, nullptr, nullptr, Qt::WidgetWithChildrenShortcut);
    connect(backspace, &QShortcut::activated, this, &MarksView::clearSelected);
    connect(m_clearSelected, &QPushButton::clicked, this, &MarksView::clearSelected);
    connect(m_clearTenant, &QPushButton::clicked, this, [this]() { clearTenant(m_tenant->currentText()); });
    connect(m_clearAll, &QPushButton::clicked, this, &MarksView::clearAll);
    // Any clear (from here, the dashboard or the tray) takes the rows away at once.
    connect(commands, &EngineCommands::marksClearRequested, model, &MarksModel::removeMatching);
    connect(model, &MarksModel::countChanged, this, &MarksView::refresh);
    connect(model, &QAbstractItemModel::modelReset, this, &MarksView::refresh);
    connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, &MarksView::refresh);
    refresh();
}

void MarksView::refresh() {
    const bool empty = m_model->rowCount() == 0;
    m_stack->setEmpty(empty);
    const QStringList tenants = m_model->tenants();
    const QString current = m_tenant->currentText();
    QStringList shown;
    for (int i = 0; i < m_tenant->count(); ++i)
        shown << m_tenant->itemText(i);
    if (shown != tenants) {
        m_tenant->clear();
        m_tenant->addItems(tenants);
        const int i = tenants.indexOf(current);
        m_tenant->setCurrentIndex(i >= 0 ? i : 0);
    }
    m_clearSelected->setEnabled(m_table->selectionModel()->hasSelection());
    m_tenant->setEnabled(!empty);
    m_clearTenant->setEnabled(!empty);
    m_clearAll->setEnabled(!empty);
}

bool MarksView::confirm(const QString &text) {
    if (!m_confirmBulk)
        return true;
    return QMessageBox::question(this, tr("Clear marks"), text, QMessageBox::Yes | QMessageBox::Cancel,
                                 QMessageBox::Cancel) == QMessageBox::Yes;
}

void MarksView::clearSelected() {
    QList<failover::MarkFilter> filters;
    for (const QModelIndex &i : m_table->selectionModel()->selectedRows())
        filters << m_model->filterFor(i.row());
    for (const auto &f : filters) // routine: one click, no confirmation
        m_commands->clearMarks(f);
}

void MarksView::clearTenant(const QString &tenant) {
    if (tenant.isEmpty())
        return;
    if (!confirm(
            tr("Clear every mark of tenant %1? Its requests will try those candidates again at once.").arg(tenant)))
        return;
    failover::MarkFilter f;
    f.tenant = tenant;
    m_commands->clearMarks(f);
}

void MarksView::clearAll() {
    if (m_model->rowCount() == 0)
        return;
    if (!confirm((m_model->rowCount() == 1
                      ? tr("Clear the mark? Its tenant will try that candidate again at once.")
                      : tr("Clear all %1 marks? Every tenant will try those candidates again at once.")
                            .arg(m_model->rowCount()))))
        return;
    m_commands->clearMarks({});
}

} // namespace sw::ui
