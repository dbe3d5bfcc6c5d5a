#include "ui/log/log_view.h"

#include "ui/log/log_filter_model.h"
#include "ui/log/log_model.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QTableView>
#include <QVBoxLayout>

namespace sw::ui {

LogView::LogView(LogModel *model, QWidget *parent)
    : QWidget(parent), m_model(model), m_filter(new LogFilterModel(this)) {
    m_filter->setSourceModel(model);
    auto *layout = new QVBoxLayout(this);
    auto *bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("<b>Log</b> — newest first"), this), 1);
    bar->addWidget(new QLabel(tr("Level:"), this));
    m_level = new QComboBox(this);
    m_level->setObjectName(QStringLiteral("levelFilter"));
    m_level->addItem(tr("info and above"), 0);
    m_level->addItem(tr("warn and above"), 1);
    m_level->addItem(tr("errors only"), 2);
    bar->addWidget(m_level);
    m_search = new QLineEdit(this);
    m_search->setObjectName(QStringLiteral("logSearch"));
    m_search->setPlaceholderText(tr("Search (request id, provider, text)…"));
    m_search->setClearButtonEnabled(true);
    m_search->setMinimumWidth(260);
    bar->addWidget(m_search);
    layout->addLayout(bar);
    m_table = new QTableView(this);
    m_table->setObjectName(QStringLiteral("logTable"));
    m_table->setModel(m_filter);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
    m_table->setAlternatingRowColors(true);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setWordWrap(false);
    m_table->horizontalHeader()->setStretchLastSection(true);
    const int w = m_table->fontMetrics().horizontalAdvance(QLatin1Char('0'));
    m_table->setColumnWidth(LogModel::Time, 14 * w);
    m_table->setColumnWidth(LogModel::Level, 8 * w);
    m_table->setColumnWidth(LogModel::Message, 22 * w);
    layout->addWidget(m_table, 1);
    connect(m_level, &QComboBox::currentIndexChanged, this,
            [this]() { m_filter->setMinimumLevel(m_level->currentData().toInt()); });
    connect(m_search, &QLineEdit::textChanged, m_filter, &LogFilterModel::setSearchText);
}

} // namespace sw::ui
