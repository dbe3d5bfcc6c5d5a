#include "ui/dashboard/dashboard_view.h"
#include "ui/shared/plain_tip.h"

#include "ui/attempts/attempts_model.h"
#include "ui/attempts/request_story.h"
#include "ui/dashboard/failure_sparkline.h"
#include "ui/dashboard/mark_card.h"
#include "ui/marks/credentials_model.h"
#include "ui/marks/marks_model.h"
#include "ui/shared/engine_commands.h"
#include "ui/shared/state_palette.h"
#include "ui/shared/time_text.h"

#include <QDateTime>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QScrollArea>
#include <QVBoxLayout>

namespace sw::ui {

namespace {
constexpr int kLastRequests = 12;
constexpr qint64 kMinuteMs = 60'000;

QLabel *heading(const QString &text, QWidget *parent) {
    auto *l = new QLabel(text, parent);
    QFont f = l->font();
    f.setBold(true);
    l->setFont(f);
    return l;
}
} // namespace

DashboardView::DashboardView(AttemptsModel *attempts, MarksModel *marks, EngineCommands *commands, QWidget *parent,
                             CredentialsModel *credentials)
    : QWidget(parent), m_attempts(attempts), m_marks(marks), m_commands(commands), m_credentials(credentials) {
    auto *row = new QHBoxLayout(this);
    auto *left = new QVBoxLayout;
    left->addWidget(heading(tr("Marks now"), this));
    auto *scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto *cardsHost = new QWidget(scroll);
    m_cards = new QVBoxLayout(cardsHost);
    m_cards->setContentsMargins(0, 0, 0, 0);
    m_noMarks = new QLabel(tr("No marks — every candidate is healthy.\nWhen an upstream fails, its mark shows here "
                              "with a countdown; requests skip it until then."),
                           cardsHost);
    m_noMarks->setObjectName(QStringLiteral("noMarks"));
    m_noMarks->setWordWrap(true);
    m_noMarks->setForegroundRole(QPalette::PlaceholderText);
    m_cards->addWidget(m_noMarks);
    m_cards->addStretch(1);
    scroll->setWidget(cardsHost);
    left->addWidget(scroll, 1);
    row->addLayout(left, 1);

    auto *right = new QVBoxLayout;
    right->addWidget(heading(tr("Failures (30 min)"), this));
    m_sparkline = new FailureSparkline(this);
    m_sparkline->setObjectName(QStringLiteral("failureSparkline"));
    right->addWidget(m_sparkline);
    m_failures = new QLabel(this);
    m_failures->setObjectName(QStringLiteral("dashboardFailures"));
    m_failures->setTextFormat(Qt::RichText);
    m_failures->setWordWrap(true);
    right->addWidget(m_failures);
    right->addSpacing(12);
    right->addWidget(heading(tr("Last requests"), this));
    m_requests = new QListWidget(this);
    m_requests->setObjectName(QStringLiteral("lastRequests"));
    m_requests->setFrameShape(QFrame::NoFrame);
    m_requests->setIconSize(QSize(10, 10));
    m_requests->setToolTip(tr("Double-click a request to see its attempts"));
    right->addWidget(m_requests, 1);
    m_noRequests = new QLabel(tr("No requests yet — point a client at the URL above."), this);
    m_noRequests->setForegroundRole(QPalette::PlaceholderText);
    m_noRequests->setWordWrap(true);
    right->addWidget(m_noRequests);
    row->addLayout(right, 1);

    connect(m_requests, &QListWidget::itemActivated, this,
            [this](QListWidgetItem *item) { Q_EMIT requestActivated(item->data(Qt::UserRole).toString()); });
    connect(marks, &MarksModel::countChanged, this, &DashboardView::refreshMarks);
    connect(marks, &QAbstractItemModel::dataChanged, this, &DashboardView::refreshMarks);
    connect(attempts, &QAbstractItemModel::rowsInserted, this, &DashboardView::refreshRequests);
    if (credentials) {
        connect(credentials, &CredentialsModel::parkedCountChanged, this, &DashboardView::refreshKeys);
        connect(credentials, &QAbstractItemModel::dataChanged, this, &DashboardView::refreshKeys);
        connect(credentials, &QAbstractItemModel::modelReset, this, &DashboardView::refreshKeys);
    }
    refreshMarks();
    refreshKeys();
    refreshRequests();
}

void DashboardView::refreshMarks() {
    const int n = m_marks->rowCount();
    while (m_cardWidgets.size() > n)
        delete m_cardWidgets.takeLast();
    while (m_cardWidgets.size() < n) {
        auto *card = new MarkCard(m_cards->parentWidget());
        const int index = int(m_cardWidgets.size());
        connect(card, &MarkCard::clearClicked, this, [this, index]() {
            if (index < m_marks->rowCount())
                m_commands->clearMarks(m_marks->filterFor(index));
        });
        m_cards->insertWidget(m_cards->count() - 1, card);
        m_cardWidgets.append(card);
    }
    for (int i = 0; i < n; ++i) {
        const auto &m = m_marks->markAt(i);
        const QString kind = failover::failureKindName(m.kind);
        m_cardWidgets[i]->set(
            peerText(m.tenant),
            QStringLiteral(" · %1 · %2")
                .arg(peerText(m.provider), m.model.isEmpty() ? tr("all models") : peerText(m.model)),
            (m.strikes == 1 ? tr("%1 · 1 strike").arg(kind) : tr("%1 · %2 strikes").arg(kind).arg(m.strikes)),
            m_marks->remainingMs(i), m.ttlMs);
    }
    m_noMarks->setVisible(n == 0 && m_keyCards.isEmpty());
}

void DashboardView::refreshKeys() {
    if (!m_credentials)
        return;
    const QList<int> rows = m_credentials->parkedRows();
    while (m_keyCards.size() > rows.size())
        delete m_keyCards.takeLast();
    while (m_keyCards.size() < rows.size()) {
        auto *card = new MarkCard(m_cards->parentWidget());
        card->setObjectName(QStringLiteral("keyCard"));
        card->setClearToolTip(tr("Retry now: put this key back in use"));
        const int index = int(m_keyCards.size());
        connect(card, &MarkCard::clearClicked, this, [this, index]() {
            const QList<int> parked = m_credentials->parkedRows();
            if (index < parked.size())
                m_commands->retryCredentials(m_credentials->filterFor(parked.at(index)));
        });
        m_cards->insertWidget(m_cards->count() - 1, card); // after the mark cards, before the stretch
        m_keyCards.append(card);
    }
    for (int i = 0; i < rows.size(); ++i) {
        const auto &c = m_credentials->at(rows[i]);
        const credentials::CredentialHealth state = m_credentials->stateAt(rows[i]);
        const bool rejected = state == credentials::CredentialHealth::Rejected;
        const bool missing = state == credentials::CredentialHealth::Missing;
        const bool unavailable = state == credentials::CredentialHealth::Unavailable;
        // No timer: a full red bar until a secret comes (or the keychain can be read).
        const bool waitsForAKey = rejected || missing || unavailable;
        QString why = credentials::parkReasonName(c.reason).replace(QLatin1Char('_'), QLatin1Char(' '));
        if (c.status)
            why += QStringLiteral(" · %1").arg(c.status);
        MarkCard *card = m_keyCards[i];
        card->set(peerText(c.provider), tr(" · key %1 · %2").arg(c.position + 1).arg(peerText(c.ref)),
                  missing       ? tr("missing · no secret to send")
                  : unavailable ? tr("keychain unavailable: %1").arg(peerText(c.lastError))
                  : rejected    ? tr("rejected · %1").arg(why)
                                : tr("parked · %1").arg(why),
                  waitsForAKey ? 1 : m_credentials->remainingMs(rows[i]), waitsForAKey ? 1 : c.parkedForMs);
        card->setState(waitsForAKey);
        card->setExpiresText(missing       ? tr("until it is set")
                             : unavailable ? tr("until the keychain answers")
                             : rejected
                                 ? tr("until the key changes")
                                 : tr("back in %1").arg(TimeText::countdown(m_credentials->remainingMs(rows[i]))));
        card->setToolTip(plainTip(c.lastError));
    }
    m_noMarks->setVisible(m_marks->rowCount() == 0 && m_keyCards.isEmpty());
}

void DashboardView::showEvent(QShowEvent *event) {
    QWidget::showEvent(event);
    if (m_requestsDirty)
        refreshRequests();
}

void DashboardView::refreshRequests() {
    // Hidden: remember to do it when shown (keeps the GUI thread idle under load).
    m_requestsDirty = true;
    if (!isVisible())
        return;
    m_requestsDirty = false;
    // The newest requests, each told once. Their attempts sit near the top of the
    // buffer (newest first): one pass over a bounded window, not a scan per request.
    QStringList ids;
    QHash<QString, QList<telemetry::AttemptRecord>> byId;
    const int window = std::min(m_attempts->rowCount(), kLastRequests * 16);
    for (int r = 0; r < window; ++r) {
        const auto &a = m_attempts->at(r);
        if (!byId.contains(a.requestId)) {
            if (ids.size() == kLastRequests)
                continue;
            ids << a.requestId;
        }
        byId[a.requestId].append(a);
    }
    QStringList stories;
    for (const QString &id : std::as_const(ids))
        stories << id + RequestStory::line(byId.value(id));
    if (stories == m_shownStories)
        return;
    m_shownStories = stories;
    m_requests->clear();
    for (const QString &id : std::as_const(ids)) {
        const auto &attempts = byId[id];
        const bool ok = RequestStory::answered(attempts);
        // The gateway's own refusal (a budget, an unknown model) is no outage: amber, not red.
        const bool refused = !attempts.isEmpty() && attempts.last().outcome == telemetry::AttemptOutcome::Refused;
        const HealthState state = ok ? HealthState::Healthy : refused ? HealthState::Marks : HealthState::Error;
        auto *item = new QListWidgetItem(StatePalette::dot(state, 10), RequestStory::line(attempts), m_requests);
        item->setData(Qt::UserRole, id);
        item->setToolTip(RequestStory::steps(attempts).join(QLatin1Char('\n')));
    }
    m_noRequests->setVisible(ids.isEmpty());
    m_requests->setVisible(!ids.isEmpty());
}

void DashboardView::applySnapshot(const snapshot::EngineSnapshot &s) {
    // Failures of the last 30 minutes by kind, with a text sparkline per minute.
    const qint64 current = s.wallMs - s.wallMs % kMinuteMs;
    QHash<QString, qint64> byKind;
    QList<qint64> perMinute(30, 0);
    for (const auto &m : s.failuresByMinute) {
        const qint64 ago = (current - m.minuteEpochMs) / kMinuteMs;
        if (ago < 0 || ago >= 30)
            continue;
        for (auto it = m.counts.begin(); it != m.counts.end(); ++it) {
            byKind[it.key().section(QChar(0x1f), 1)] += it.value();
            perMinute[29 - int(ago)] += it.value();
        }
    }
    m_sparkline->setCounts(perMinute);
    if (byKind.isEmpty()) {
        m_failures->setText(tr("No candidate failures in the last 30 minutes."));
        return;
    }
    QStringList kinds = byKind.keys();
    kinds.sort();
    QString html;
    for (const QString &k : kinds)
        html += QStringLiteral("<span style='color:%1'>\u25A0</span> %2 &nbsp;<b>%3</b><br>")
                    .arg(StatePalette::color(HealthState::Error).name(), k.toHtmlEscaped())
                    .arg(byKind.value(k));
    m_failures->setText(html);
}

} // namespace sw::ui
