#include "usage/usage_view.h"

#include "shared/empty_state_stack.h"
#include "usage/usage_model.h"

#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QTableView>
#include <QVBoxLayout>

namespace sw::ui {

namespace {
QTableView *makeTable(QAbstractItemModel *model, const QString &name, QWidget *parent) {
    auto *t = new QTableView(parent);
    t->setObjectName(name);
    t->setModel(model);
    t->verticalHeader()->hide();
    t->setAlternatingRowColors(true);
    t->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    return t;
}
} // namespace

UsageView::UsageView(QWidget *parent)
    : QWidget(parent), m_byTenant(new UsageModel(tr("Tenant"), this)),
      m_byProvider(new UsageModel(tr("Provider"), this)) {
    auto *content = new QWidget(this);
    auto *layout = new QVBoxLayout(content);
    layout->setContentsMargins(0, 0, 0, 0);
    m_total = new QLabel(content);
    m_total->setObjectName(QStringLiteral("usageTotal"));
    layout->addWidget(m_total);
    layout->addWidget(new QLabel(tr("<b>Per tenant</b>"), content));
    layout->addWidget(makeTable(m_byTenant, QStringLiteral("usageByTenant"), content), 1);
    layout->addWidget(new QLabel(tr("<b>Per provider</b>"), content));
    layout->addWidget(makeTable(m_byProvider, QStringLiteral("usageByProvider"), content), 1);
    layout->addWidget(new QLabel(tr("Costs use the per-million-token prices in the configuration's models. Attempts "
                                    "that failed after streaming count too."),
                                 content));
    auto *outer = new QVBoxLayout(this);
    m_stack = new EmptyStateStack(content, tr("No usage yet"),
                                  tr("Token counts and cost appear here per tenant and per provider once an upstream "
                                     "reports usage. Set model prices under Configuration → Models."),
                                  this);
    outer->addWidget(m_stack);
}

void UsageView::applySnapshot(const snapshot::EngineSnapshot &s) {
    m_byTenant->setTotals(s.usageByTenant);
    m_byProvider->setTotals(s.usageByProvider);
    const auto t = m_byTenant->total();
    const QLocale locale;
    m_total->setText(tr("<b>All tenants:</b> %1 attempts · %2 input · %3 output tokens · <b>$%4</b>")
                         .arg(locale.toString(t.attempts), locale.toString(t.input), locale.toString(t.output))
                         .arg(t.cost, 0, 'f', 4));
    m_stack->setEmpty(s.usageByTenant.isEmpty());
}

} // namespace sw::ui
