#include "ui/config/routes_page.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>

namespace sw::ui {

RoutesPage::RoutesPage(config::Config &working, const ConfigDialogs &dialogs, QWidget *parent)
    : MapPage(working, dialogs, &config::Config::routes,
              {QStringLiteral("route"), tr("Add route"), tr("Route name clients send as model:")}, parent) {
    QWidget *host = formHost();
    m_candidates = new QListWidget(host);
    m_candidates->setObjectName(QStringLiteral("routeCandidates"));
    m_candidates->setDragDropMode(QAbstractItemView::InternalMove);
    auto *up = new QPushButton(tr("Up"), host);
    up->setObjectName(QStringLiteral("candidateUp"));
    auto *down = new QPushButton(tr("Down"), host);
    down->setObjectName(QStringLiteral("candidateDown"));
    auto *drop = new QPushButton(tr("Remove"), host);
    drop->setObjectName(QStringLiteral("candidateRemove"));
    m_picker = new QComboBox(host);
    m_picker->setObjectName(QStringLiteral("candidatePicker"));
    auto *append = new QPushButton(tr("Add"), host);
    append->setObjectName(QStringLiteral("candidateAdd"));
    auto *order = new QHBoxLayout;
    order->addWidget(up);
    order->addWidget(down);
    order->addWidget(drop);
    order->addSpacing(12);
    order->addWidget(m_picker, 1);
    order->addWidget(append);
    m_aliases = new QLineEdit(host);
    m_aliases->setObjectName(QStringLiteral("routeAliases"));
    m_aliases->setPlaceholderText(tr("claude-sonnet-*, sonnet-latest"));
    m_ceiling = new QDoubleSpinBox(host);
    m_ceiling->setObjectName(QStringLiteral("routeCeiling"));
    m_ceiling->setRange(0, 1000);
    m_ceiling->setDecimals(1);
    m_ceiling->setSuffix(QStringLiteral(" \u00D7"));
    m_ceiling->setSpecialValueText(tr("no ceiling"));
    QFormLayout *f = form();
    f->addRow(tr("Candidates, in order"), m_candidates);
    f->addRow(QString(), order);
    f->addRow(tr("Aliases (globs)"), m_aliases);
    f->addRow(tr("Cost ceiling"), m_ceiling);
    f->addRow(QString(),
              hintLabel(tr("A follower priced over the ceiling × the first eligible candidate is skipped."), host));

    // A drag reorders the list widget itself: the route takes its new order.
    connect(m_candidates->model(), &QAbstractItemModel::rowsMoved, this, [this]() {
        edit([this](auto &r) {
            r.candidates.clear();
            for (int i = 0; i < m_candidates->count(); ++i)
                r.candidates << m_candidates->item(i)->text();
        });
    });
    connect(up, &QPushButton::clicked, this, [this]() { moveCandidate(-1); });
    connect(down, &QPushButton::clicked, this, [this]() { moveCandidate(+1); });
    connect(drop, &QPushButton::clicked, this, [this]() {
        const int row = m_candidates->currentRow() >= 0 ? m_candidates->currentRow() : m_candidates->count() - 1;
        if (row < 0)
            return;
        edit([&](auto &r) { r.candidates.removeAt(row); });
        showForm();
    });
    connect(append, &QPushButton::clicked, this, [this]() {
        const QString model = m_picker->currentText();
        if (model.isEmpty())
            return;
        edit([&](auto &r) { r.candidates << model; });
        showForm();
    });
    connect(m_aliases, &QLineEdit::textEdited, this,
            [this](const QString &t) { edit([&](auto &r) { r.aliases = splitList(t); }); });
    connect(m_ceiling, &QDoubleSpinBox::valueChanged, this, [this](double v) {
        edit([&](auto &r) { r.maxFallbackCostMultiplier = v > 0 ? std::optional<double>(v) : std::nullopt; });
    });
}

config::RouteConfig RoutesPage::named(config::RouteConfig item, const QString &name) const {
    item.name = name;
    return item;
}

void RoutesPage::moveCandidate(int delta) {
    const int row = m_candidates->currentRow();
    const int to = row + delta;
    if (row < 0 || to < 0 || to >= m_candidates->count())
        return;
    edit([&](auto &r) { r.candidates.move(row, to); });
    showForm();
    m_candidates->setCurrentRow(to);
}

void RoutesPage::loadItem(const config::RouteConfig &r, bool) {
    const int row = m_candidates->currentRow();
    m_candidates->clear();
    m_candidates->addItems(r.candidates);
    m_candidates->setCurrentRow(std::min(row, m_candidates->count() - 1));
    // Only models not in the route yet: a candidate appears once.
    m_picker->clear();
    for (const QString &key : m_working.models.keys())
        if (!r.candidates.contains(key))
            m_picker->addItem(key);
    m_aliases->setText(joinList(r.aliases));
    m_ceiling->setValue(r.maxFallbackCostMultiplier.value_or(0));
}

} // namespace sw::ui
