#include "ui/attempts/attempts_view.h"

#include "ui/attempts/attempts_filter_model.h"
#include "ui/attempts/attempts_model.h"
#include "ui/attempts/request_story.h"
#include "ui/shared/empty_state_stack.h"
#include "ui/shared/plain_tip.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QTextBrowser>
#include <QTimer>
#include <QVBoxLayout>

namespace sw::ui {

AttemptsView::AttemptsView(AttemptsModel *model, QWidget *parent)
    : QWidget(parent), m_model(model), m_filter(new AttemptsFilterModel(this)) {
    m_filter->setSourceModel(model);
    auto *layout = new QVBoxLayout(this);
    auto *bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("<b>Attempts</b> — newest first"), this), 1);
    m_requestFilter = new QLabel(this);
    m_requestFilter->hide();
    m_showAll = new QPushButton(tr("Show all requests"), this);
    m_showAll->hide();
    bar->addWidget(m_requestFilter);
    bar->addWidget(m_showAll);
    bar->addWidget(new QLabel(tr("Tenant:"), this));
    m_tenant = new QComboBox(this);
    m_tenant->setObjectName(QStringLiteral("tenantFilter"));
    m_tenant->addItem(tr("All tenants"), QString());
    bar->addWidget(m_tenant);
    bar->addWidget(new QLabel(tr("Outcome:"), this));
    m_outcome = new QComboBox(this);
    m_outcome->setObjectName(QStringLiteral("outcomeFilter"));
    m_outcome->addItem(tr("All outcomes"), QString());
    for (const char *o : {"committed", "failed", "skipped", "aborted", "refused"})
        m_outcome->addItem(QString::fromLatin1(o), QString::fromLatin1(o));
    bar->addWidget(m_outcome);
    layout->addLayout(bar);

    auto *split = new QSplitter(Qt::Vertical, this);
    m_table = new QTableView(split);
    m_table->setObjectName(QStringLiteral("attemptsTable"));
    m_table->setModel(m_filter);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setAlternatingRowColors(true);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
    m_table->horizontalHeader()->setStretchLastSection(true);
    const int w = m_table->fontMetrics().horizontalAdvance(QLatin1Char('0'));
    const QList<int> widths{9, 15, 7, 12, 3, 22, 11, 12, 5, 8, 7};
    for (int c = 0; c < widths.size(); ++c)
        m_table->setColumnWidth(c, widths[c] * w + 12);
    m_detail = new QTextBrowser(split);
    m_detail->setObjectName(QStringLiteral("attemptDetail"));
    m_detail->setOpenLinks(false);
    m_detail->setFrameShape(QFrame::NoFrame);
    m_detail->viewport()->setAutoFillBackground(false); // reads as a label on the window's background
    m_detail->setWordWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
    m_detail->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_detail->document()->setDocumentMargin(8);
    m_detail->setPlainText(tr("Select an attempt to see its whole request: every candidate tried, in order."));
    split->addWidget(m_table);
    split->addWidget(m_detail);
    split->setStretchFactor(0, 4);
    split->setStretchFactor(1, 1);

    m_stack = new EmptyStateStack(split, tr("No attempts yet"), QString(), this);
    layout->addWidget(m_stack, 1);
    setBaseUrl(QStringLiteral("http://127.0.0.1:4141"));

    connect(m_tenant, &QComboBox::currentIndexChanged, this,
            [this]() { m_filter->setTenant(m_tenant->currentData().toString()); });
    connect(m_outcome, &QComboBox::currentIndexChanged, this,
            [this]() { m_filter->setOutcome(m_outcome->currentData().toString()); });
    connect(model, &AttemptsModel::tenantsChanged, this, [this](const QStringList &tenants) {
        for (const QString &t : tenants)
            if (m_tenant->findData(t) < 0)
                m_tenant->addItem(t, t);
    });
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex &i) {
        m_shownRequest = i.isValid() ? i.data(AttemptsModel::RequestIdRole).toString() : QString();
        updateDetail();
    });
    connect(m_showAll, &QPushButton::clicked, this, [this]() {
        m_filter->setRequestId({});
        m_requestFilter->hide();
        m_showAll->hide();
    });
    connect(model, &QAbstractItemModel::rowsInserted, this, [this]() {
        refreshEmpty();
        if (!m_shownRequest.isEmpty())
            updateDetail(); // a later attempt of the shown request may just have arrived
    });
    // Relative times ("12 s ago") are computed when painted: repaint, don't re-query the model.
    auto *repaint = new QTimer(this);
    repaint->setInterval(1000);
    connect(repaint, &QTimer::timeout, m_table->viewport(), qOverload<>(&QWidget::update));
    repaint->start();
    refreshEmpty();
}

void AttemptsView::setBaseUrl(const QString &baseUrl) {
    m_stack->setHint(tr("Every try of every candidate shows here, live. Point a client at %1/v1 (OpenAI) or %1 "
                        "(Anthropic) and send a request.")
                         .arg(baseUrl));
}

void AttemptsView::refreshEmpty() {
    m_stack->setEmpty(m_model->rowCount() == 0);
}

void AttemptsView::showRequest(const QString &requestId) {
    m_filter->setRequestId(requestId);
    m_requestFilter->setText(tr("Request %1").arg(peerText(requestId)));
    m_requestFilter->show();
    m_showAll->show();
    m_shownRequest = requestId;
    updateDetail();
}

void AttemptsView::updateDetail() {
    if (m_shownRequest.isEmpty())
        return;
    const auto attempts = m_model->attemptsOf(m_shownRequest);
    if (attempts.isEmpty())
        return;
    QString html = QStringLiteral("<b>%1</b> &nbsp; %2<br>")
                       .arg(peerText(m_shownRequest).toHtmlEscaped(), RequestStory::line(attempts).toHtmlEscaped());
    html += QStringLiteral("<span style='white-space:pre-wrap'>");
    for (const QString &s : RequestStory::steps(attempts))
        html += s.toHtmlEscaped() + QStringLiteral("<br>");
    html += QStringLiteral("</span>");
    m_detail->setHtml(html);
}

} // namespace sw::ui
