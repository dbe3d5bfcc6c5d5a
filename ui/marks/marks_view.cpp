#include "ui/marks/marks_view.h"

#include "ui/marks/credentials_model.h"
#include "ui/marks/marks_model.h"
#include "ui/shared/empty_state_stack.h"
#include "ui/shared/engine_commands.h"
#include "ui/shared/state_palette.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QShortcut>
#include <QSplitter>
#include <QStyledItemDelegate>
#include <QTableView>
#include <QVBoxLayout>

namespace sw::ui {

namespace {
// The Scope column's cap, in average characters: room for "every model at https://api.anthropic.com"; a
// longer scope (a 200-character model id) is elided in the middle, whole in its tooltip.
constexpr int kScopeChars = 44;

class MiddleElideDelegate final : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;

protected:
    void initStyleOption(QStyleOptionViewItem *option, const QModelIndex &index) const override {
        QStyledItemDelegate::initStyleOption(option, index);
        option->textElideMode = Qt::ElideMiddle;             // an id's two ends tell it apart
        option->features &= ~QStyleOptionViewItem::WrapText; // one line: a wrapped id ends in "…" after its first '/'
    }
};
} // namespace

MarksView::MarksView(MarksModel *model, EngineCommands *commands, QWidget *parent, CredentialsModel *credentials)
    : QWidget(parent), m_model(model), m_commands(commands), m_credentials(credentials) {
    auto *layout = new QVBoxLayout(this);
    auto *marksPane = new QWidget(this);
    auto *marksColumn = new QVBoxLayout(marksPane);
    marksColumn->setContentsMargins(0, 0, 0, 0);
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
    marksColumn->addLayout(bar);
    m_store = new QLabel(this);
    m_store->setObjectName(QStringLiteral("marksStore"));
    m_store->setWordWrap(true);
    m_store->hide();
    marksColumn->addWidget(m_store);

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
    // Scope is as wide as its longest text up to a cap (then elided; the user may drag it wider): one long
    // model id must not push Kind, Strikes, Expires in and Retry-After out of view.
    m_table->horizontalHeader()->setSectionResizeMode(MarksModel::Scope, QHeaderView::Interactive);
    m_table->setItemDelegateForColumn(MarksModel::Scope, new MiddleElideDelegate(m_table));
    m_table->setColumnHidden(MarksModel::SetBy, true); // only marks shared by replicas have another author
    m_stack = new EmptyStateStack(m_table, tr("No marks — every candidate is healthy"),
                                  tr("When an upstream fails, the tenant's mark shows here with its countdown and "
                                     "requests skip that candidate until it expires. Clear a mark to retry it now."),
                                  this);
    marksColumn->addWidget(m_stack, 1);
    if (!credentials) {
        layout->addWidget(marksPane, 1);
    } else {
        auto *split = new QSplitter(Qt::Vertical, this);
        split->setChildrenCollapsible(false);
        split->addWidget(marksPane);
        auto *credPane = new QWidget(split);
        auto *credColumn = new QVBoxLayout(credPane);
        credColumn->setContentsMargins(0, 8, 0, 0);
        auto *credBar = new QHBoxLayout;
        auto *credTitle = new QLabel(tr("<b>Credentials</b> — each provider key and whether requests may use it. A "
                                        "parked key waits out its provider's limit; a rejected one (401) waits for a "
                                        "new secret."),
                                     credPane);
        credTitle->setWordWrap(true);
        credBar->addWidget(credTitle, 1);
        m_credSummary = new QLabel(credPane);
        m_credSummary->setObjectName(QStringLiteral("credentialsSummary"));
        credBar->addWidget(m_credSummary);
        credBar->addSpacing(12);
        m_retry = new QPushButton(tr("Retry now"), credPane);
        m_retry->setObjectName(QStringLiteral("retryCredentials"));
        credBar->addWidget(m_retry);
        credColumn->addLayout(credBar);
        m_credTable = new QTableView(credPane);
        m_credTable->setObjectName(QStringLiteral("credentialsTable"));
        m_credTable->setModel(credentials);
        m_credTable->setSelectionBehavior(QAbstractItemView::SelectRows);
        m_credTable->setAlternatingRowColors(true);
        m_credTable->verticalHeader()->hide();
        m_credTable->verticalHeader()->setDefaultSectionSize(m_credTable->fontMetrics().height() + 8);
        m_credTable->horizontalHeader()->setStretchLastSection(true);
        m_credTable->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
        m_credTable->horizontalHeader()->setSectionResizeMode(CredentialsModel::LastError, QHeaderView::Stretch);
        credColumn->addWidget(m_credTable, 1);
        split->addWidget(credPane);
        split->setStretchFactor(0, 3);
        split->setStretchFactor(1, 2);
        layout->addWidget(split, 1);
        connect(m_retry, &QPushButton::clicked, this, &MarksView::retrySelectedCredentials);
        connect(commands, &EngineCommands::credentialsRetryRequested, credentials, &CredentialsModel::markRetried);
        connect(credentials, &CredentialsModel::parkedCountChanged, this, &MarksView::refreshCredentials);
        connect(credentials, &QAbstractItemModel::modelReset, this, &MarksView::refreshCredentials);
        connect(credentials, &QAbstractItemModel::dataChanged, this, &MarksView::refreshCredentials);
        connect(m_credTable->selectionModel(), &QItemSelectionModel::selectionChanged, this,
                &MarksView::refreshCredentials);
        refreshCredentials();
    }

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
    connect(model, &MarksModel::countChanged, this, &MarksView::fitScope);
    connect(model, &QAbstractItemModel::modelReset, this, &MarksView::fitScope);
    connect(model, &QAbstractItemModel::modelReset, this, &MarksView::refresh);
    connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, &MarksView::refresh);
    refresh();
    fitScope();
}

void MarksView::fitScope() {
    const int cap = m_table->fontMetrics().averageCharWidth() * kScopeChars;
    int wanted = m_table->horizontalHeader()->sectionSizeHint(MarksModel::Scope);
    for (int r = 0; r < m_model->rowCount(); ++r)
        wanted = std::max(wanted, m_table->sizeHintForIndex(m_model->index(r, MarksModel::Scope)).width());
    m_table->setColumnWidth(MarksModel::Scope, std::min(wanted, cap));
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

void MarksView::refreshCredentials() {
    if (!m_credentials)
        return;
    const int parked = m_credentials->parkedCount();
    const bool selected = m_credTable->selectionModel()->hasSelection();
    m_credSummary->setText(parked == 0   ? tr("every key in use")
                           : parked == 1 ? tr("1 key out of use")
                                         : tr("%1 keys out of use").arg(parked));
    m_retry->setText(selected ? tr("Retry selected now") : tr("Retry now"));
    m_retry->setToolTip(selected ? tr("Put the selected keys back in use; the next request tries them")
                                 : tr("Put every parked or rejected key back in use; the next request tries them"));
    m_retry->setEnabled(parked > 0);
}

void MarksView::retrySelectedCredentials() {
    if (!m_credentials)
        return;
    QList<int> rows;
    for (const QModelIndex &i : m_credTable->selectionModel()->selectedRows())
        rows << i.row();
    if (rows.isEmpty())
        rows = m_credentials->parkedRows();
    QList<credentials::CredentialFilter> filters;
    for (int row : std::as_const(rows))
        if (m_credentials->stateAt(row) != credentials::CredentialHealth::Ok)
            filters << m_credentials->filterFor(row);
    for (const auto &f : filters) // routine: one click, no confirmation
        m_commands->retryCredentials(f);
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

void MarksView::setStore(const QString &description, bool shared, bool up) {
    m_table->setColumnHidden(MarksModel::SetBy, !shared);
    m_store->setVisible(shared);
    if (!shared)
        return;
    m_store->setText(up ? tr("Marks are %1.").arg(description.toHtmlEscaped())
                        : tr("<b>Marks: %1</b> — each replica keeps the marks it learns and shares them again "
                             "when Redis is back.")
                              .arg(description.toHtmlEscaped()));
    QPalette p = m_store->palette();
    p.setColor(QPalette::WindowText,
               up ? palette().color(QPalette::WindowText) : StatePalette::color(HealthState::Marks));
    m_store->setPalette(p);
}

} // namespace sw::ui
