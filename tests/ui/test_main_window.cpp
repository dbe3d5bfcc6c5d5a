// The window shell and the tray: Ctrl+1…7, the Marks badge, empty views that
// teach, the state told by colour + icon + word in the status line and the
// tray, and closing into the tray (or quitting when there is none). Long and hostile peer text (a 200-char model
// id, a 300-char token in an upstream error, fifteen budgets, a right-to-left override) keeps every countdown in
// view, never widens the window, and is shown as the characters it is. With SWITCHMAN_SCREENSHOT_DIR set, those
// windows are saved as PNGs there, to look at.

#include "telemetry_fixtures.h"
#include "ui/attempts/attempts_model.h"
#include "ui/dashboard/mark_card.h"
#include "ui/failures/failures_view.h"
#include "ui/log/log_model.h"
#include "ui/main_window.h"
#include "ui/marks/marks_model.h"
#include "ui/shared/elided_label.h"
#include "ui/shared/empty_state_stack.h"
#include "ui/shared/sidebar_delegate.h"
#include "ui/tray/tray_controller.h"

#include <QDateTime>
#include <QDir>
#include <QHeaderView>
#include <QJsonObject>
#include <QLabel>
#include <QListWidget>
#include <QMenu>
#include <QScrollArea>
#include <QScrollBar>
#include <QSystemTrayIcon>
#include <QTableView>
#include <QTest>
#include <QTextBrowser>
#include <QToolButton>

using namespace sw;
using namespace sw::ui;

namespace {
snapshot::EngineSnapshot baseSnapshot() {
    snapshot::EngineSnapshot s;
    s.sequence = 1;
    s.wallMs = QDateTime::currentMSecsSinceEpoch();
    s.baseUrl = QStringLiteral("http://127.0.0.1:4141");
    s.requestsPerMinute = 42;
    s.openStreams = 3;
    return s;
}

snapshot::MarkRow oneMark() {
    snapshot::MarkRow r;
    r.info.tenant = QStringLiteral("alice");
    r.info.provider = QStringLiteral("anthropic");
    r.info.baseUrl = QStringLiteral("https://api.anthropic.com");
    r.info.model = QStringLiteral("claude-sonnet-4-5");
    r.info.kind = failover::FailureKind::ServerError;
    r.info.strikes = 3;
    r.info.ttlMs = 80'000;
    r.remainingMs = 38'000;
    return r;
}

snapshot::MarkRow markOn(const QString &tenant, const QString &model, const QString &lastError = {}) {
    snapshot::MarkRow r = oneMark();
    r.info.tenant = tenant;
    r.info.provider = QStringLiteral("fireworks");
    r.info.baseUrl = QStringLiteral("https://api.fireworks.ai/inference");
    r.info.model = model;
    r.info.lastError = lastError;
    return r;
}

// A realistic long id (71 characters) and a 200-character one.
const QString kFireworksId = QStringLiteral("accounts/fireworks/models/qwen3-coder-480b-a35b-instruct-2507-fp8-turbo");
QString longId() {
    return QStringLiteral("accounts/acme/models/") + QString(179, QLatin1Char('x'));
}

telemetry::AttemptRecord attempt(const QString &id, int n, telemetry::AttemptOutcome outcome, const QString &message) {
    telemetry::AttemptRecord a;
    a.requestId = id;
    a.attempt = n;
    a.tenant = QStringLiteral("alice");
    a.requestedModel = QStringLiteral("rg");
    a.provider = n == 1 ? QStringLiteral("bad") : QStringLiteral("p2");
    a.candidate = a.provider + QStringLiteral("/m");
    a.outcome = outcome;
    if (outcome == telemetry::AttemptOutcome::Failed) {
        a.failure = QStringLiteral("server_error");
        a.status = 503;
    }
    a.elapsedMs = 12;
    a.startedAtEpochMs = QDateTime::currentMSecsSinceEpoch();
    a.message = message;
    return a;
}

// Lets every pending layout request run (nested layouts post new ones as they settle).
void settle() {
    for (int i = 0; i < 5; ++i) {
        QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
        QCoreApplication::processEvents();
    }
}

// r lies wholly inside the visible part of viewport.
bool inView(QWidget *w, QWidget *viewport) {
    const QRect r(w->mapTo(viewport, QPoint(0, 0)), w->size());
    return viewport->rect().contains(r);
}

void shoot(QWidget &w, const char *name) {
    const QString dir = qEnvironmentVariable("SWITCHMAN_SCREENSHOT_DIR");
    if (dir.isEmpty())
        return;
    QDir().mkpath(dir);
    QVERIFY(w.grab().save(QDir(dir).filePath(QString::fromLatin1(name) + QStringLiteral(".png"))));
}

MainWindow::Options noTray() {
    MainWindow::Options o;
    o.tray = false;
    return o;
}
} // namespace

class TestMainWindow : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void ctrlDigitsReachEveryView() {
        MainWindow window(nullptr, noTray());
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        window.activateWindow(); // window shortcuts need the active window (no window manager under bare Xvfb)
        QVERIFY(QTest::qWaitForWindowActive(&window));
        for (int i = MainWindow::ViewCount - 1; i >= 0; --i) {
            QTest::keyClick(&window, Qt::Key(Qt::Key_1 + i), Qt::ControlModifier);
            QCOMPARE(int(window.currentView()), i);
        }
    }

    void emptyViewsTeach() {
        MainWindow window(nullptr, noTray());
        window.applySnapshot(baseSnapshot());
        auto *marks = window.viewWidget(MainWindow::Marks)->findChild<EmptyStateStack *>();
        QVERIFY(marks && marks->isShowingEmpty());
        auto *title = marks->findChild<QLabel *>(QStringLiteral("emptyTitle"));
        QCOMPARE(title->text(), QStringLiteral("No marks — every candidate is healthy"));
        auto *attempts = window.viewWidget(MainWindow::Attempts)->findChild<EmptyStateStack *>();
        QVERIFY(attempts->isShowingEmpty());
        auto hint = attempts->findChildren<QLabel *>();
        bool teachesUrl = false;
        for (auto *l : hint)
            teachesUrl = teachesUrl || l->text().contains(QStringLiteral("http://127.0.0.1:4141/v1"));
        QVERIFY(teachesUrl);
    }

    void stateIsToldByWordIconAndColourEverywhere() {
        MainWindow window(nullptr, noTray());
        auto s = baseSnapshot();
        window.applySnapshot(s);
        QCOMPARE(window.state(), HealthState::Healthy);
        QCOMPARE(window.tray()->state(), HealthState::Healthy);
        auto *word = window.findChild<QLabel *>(QStringLiteral("stateWord"));
        QCOMPARE(word->text(), QStringLiteral("Healthy"));
        QCOMPARE(window.findChild<QLabel *>(QStringLiteral("rate"))->text(), QStringLiteral("42 req/min"));
        QCOMPARE(window.findChild<QLabel *>(QStringLiteral("streams"))->text(), QStringLiteral("3 open streams"));

        s.marks = {oneMark()};
        window.applySnapshot(s);
        QCOMPARE(window.state(), HealthState::Marks);
        QCOMPARE(word->text(), QStringLiteral("Marks present"));
        QCOMPARE(window.tray()->state(), HealthState::Marks);
        QVERIFY(window.tray()->toolTip().contains(QStringLiteral("1 mark")));
        QVERIFY(window.tray()->toolTip().contains(QStringLiteral("http://127.0.0.1:4141")));
        auto *sidebar = window.findChild<QListWidget *>(QStringLiteral("sidebar"));
        QCOMPARE(sidebar->item(MainWindow::Marks)->data(SidebarDelegate::BadgeRole).toInt(), 1);

        s.lastUnansweredWallMs = s.wallMs;
        s.lastUnansweredReason = QStringLiteral("server_error");
        window.applySnapshot(s);
        QCOMPARE(window.state(), HealthState::Error);
        QCOMPARE(word->text(), QStringLiteral("Requests failing"));

        s.paused = true;
        window.applySnapshot(s);
        QCOMPARE(window.state(), HealthState::Paused);
        QCOMPARE(window.tray()->state(), HealthState::Paused);
        QVERIFY(window.tray()->menu()->actions().at(1)->text().startsWith(QStringLiteral("Resume")));

        s.paused = false;
        s.lastUnansweredWallMs = 0;
        s.marks.clear();
        window.applySnapshot(s);
        QCOMPARE(window.state(), HealthState::Healthy);
        QCOMPARE(sidebar->item(MainWindow::Marks)->data(SidebarDelegate::BadgeRole).toInt(), 0);
    }

    void aLongModelIdKeepsEveryCountdownAndClearButtonInView() {
        MainWindow window(nullptr, noTray());
        window.resize(1180, 720);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto s = baseSnapshot();
        s.marks = {markOn(QStringLiteral("alice"), kFireworksId), markOn(QStringLiteral("bob"), longId()), oneMark()};
        window.applySnapshot(s);
        window.showView(MainWindow::Dashboard);
        settle();
        auto *scroll = window.viewWidget(MainWindow::Dashboard)->findChild<QScrollArea *>();
        QVERIFY(scroll);
        const auto cards = window.viewWidget(MainWindow::Dashboard)->findChildren<MarkCard *>();
        QCOMPARE(cards.size(), 3);
        QVERIFY(!scroll->horizontalScrollBar()->isVisible());
        for (MarkCard *card : cards) {
            auto *expires = card->findChild<QLabel *>(QStringLiteral("markCardExpires"));
            auto *clear = card->findChild<QToolButton *>();
            QVERIFY2(expires->text().startsWith(QStringLiteral("expires in ")), qPrintable(expires->text()));
            QVERIFY2(inView(expires, scroll->viewport()), qPrintable(expires->text()));
            QVERIFY(inView(clear, scroll->viewport()));
        }
        // The long id is cut in the middle (its two ends tell it apart) and whole in the tooltip.
        auto *title = cards.at(0)->findChild<ElidedLabel *>(QStringLiteral("markCardTitle"));
        QVERIFY(title->text().contains(kFireworksId));
        // A short tenant name is never cut to make room.
        QCOMPARE(cards.at(1)->findChild<ElidedLabel *>(QStringLiteral("markCardLead"))->shownText(),
                 QStringLiteral("bob"));
        auto *longTitle = cards.at(1)->findChild<ElidedLabel *>(QStringLiteral("markCardTitle"));
        QVERIFY2(longTitle->shownText().contains(QChar(0x2026)), qPrintable(longTitle->shownText()));
        QVERIFY(longTitle->shownText().endsWith(QStringLiteral("xxx")));
        QVERIFY(longTitle->toolTip().contains(longId()));
        QVERIFY(window.width() <= 1180);
        shoot(window, "dashboard_long_model");
    }

    void aLongScopeKeepsTheMarksColumnsInView() {
        MainWindow window(nullptr, noTray());
        window.resize(1180, 720);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto s = baseSnapshot();
        s.marks = {markOn(QStringLiteral("alice"), longId(), QStringLiteral("HTTP 503: upstream overloaded")),
                   oneMark()};
        window.applySnapshot(s);
        window.showView(MainWindow::Marks);
        settle();
        auto *table = window.viewWidget(MainWindow::Marks)->findChild<QTableView *>(QStringLiteral("marksTable"));
        QVERIFY(table);
        for (int c : {int(MarksModel::Tenant), int(MarksModel::Provider), int(MarksModel::Scope), int(MarksModel::Kind),
                      int(MarksModel::Strikes), int(MarksModel::Expires), int(MarksModel::RetryAfter)}) {
            const int right = table->columnViewportPosition(c) + table->columnWidth(c);
            QVERIFY2(
                table->columnViewportPosition(c) >= 0 && right <= table->viewport()->width(),
                qPrintable(
                    QStringLiteral("column %1 ends at %2 of %3").arg(c).arg(right).arg(table->viewport()->width())));
        }
        // The last error still has room, and the whole scope is in the tooltip.
        QVERIFY(table->columnWidth(MarksModel::LastError) >= 100);
        QVERIFY(table->model()->index(0, MarksModel::Scope).data(Qt::ToolTipRole).toString().contains(longId()));
        shoot(window, "marks_long_scope");
    }

    void theWindowNeverGrowsWiderThanItWasMade() {
        MainWindow window(nullptr, noTray());
        window.resize(1180, 720);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto s = baseSnapshot();
        // A team of fifteen, each with a weekly budget.
        for (int i = 1; i <= 15; ++i) {
            telemetry::BudgetState b;
            b.tenant = QStringLiteral("team-member-%1").arg(i, 2, 10, QLatin1Char('0'));
            b.usd = 25;
            b.period = QStringLiteral("week");
            b.spent = i == 3 ? 25 : 1.5 * i;
            b.periodEndMs = s.wallMs + 3 * 86'400'000LL;
            s.budgets << b;
        }
        // An upstream 503 whose message holds a 300-character unbroken token (a URL, a base64 blob).
        const QString token = QStringLiteral("https://status.example.com/") + QString(273, QLatin1Char('Q'));
        s.newAttempts = {attempt(QStringLiteral("req_long"), 1, telemetry::AttemptOutcome::Failed,
                                 QStringLiteral("service unavailable, see ") + token),
                         attempt(QStringLiteral("req_long"), 2, telemetry::AttemptOutcome::Committed, {}),
                         attempt(QStringLiteral("req_short"), 1, telemetry::AttemptOutcome::Committed, {})};
        window.applySnapshot(s);

        window.showView(MainWindow::Usage);
        settle();
        QVERIFY2(window.width() <= 1180, qPrintable(QString::number(window.width())));
        QVERIFY2(window.minimumSizeHint().width() <= 1180,
                 qPrintable(QString::number(window.minimumSizeHint().width())));
        auto *budgets = window.viewWidget(MainWindow::Usage)->findChild<QLabel *>(QStringLiteral("usageBudgets"));
        QVERIFY(budgets->text().contains(QStringLiteral("team-member-15")));
        QVERIFY(budgets->isVisible());
        QVERIFY(inView(budgets, window.centralWidget()));
        shoot(window, "usage_15_budgets");

        window.showView(MainWindow::Attempts);
        auto *table = window.viewWidget(MainWindow::Attempts)->findChild<QTableView *>(QStringLiteral("attemptsTable"));
        int row = -1;
        for (int r = 0; r < table->model()->rowCount(); ++r)
            if (table->model()->index(r, AttemptsModel::Status).data().toInt() == 503)
                row = r;
        QVERIFY(row >= 0);
        table->selectRow(row);
        settle();
        auto *detail =
            window.viewWidget(MainWindow::Attempts)->findChild<QTextBrowser *>(QStringLiteral("attemptDetail"));
        QVERIFY(detail);
        QVERIFY2(detail->toPlainText().contains(token), qPrintable(detail->toPlainText()));
        QVERIFY2(window.width() <= 1180, qPrintable(QString::number(window.width())));
        QVERIFY2(window.minimumSizeHint().width() <= 1180,
                 qPrintable(QString::number(window.minimumSizeHint().width())));
        // The token wraps inside the pane: nothing to scroll sideways, the story fits its width.
        QVERIFY(detail->document()->idealWidth() <= detail->viewport()->width() + 1);
        shoot(window, "attempts_long_token");

        window.showView(MainWindow::Dashboard);
        settle();
        QVERIFY(window.width() <= 1180);
    }

    void bidiControlsFromPeersAreShownNotApplied() {
        MainWindow window(nullptr, noTray());
        window.resize(1180, 720);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto s = baseSnapshot();
        const QString rlo = QStringLiteral("upstream says: \u202Egnp.exe\u202C and \u2067isolated\u2069 \u200F");
        s.marks = {markOn(QStringLiteral("alice"), QStringLiteral("m\u202Eodel"), rlo)};
        auto failed = attempt(QStringLiteral("req_rlo"), 1, telemetry::AttemptOutcome::Failed, rlo);
        failed.requestedModel = QStringLiteral("gpt\u202E5-tpg");
        s.newAttempts = {failed};
        window.applySnapshot(s);
        auto hasBidi = [](const QString &t) {
            for (QChar c : t)
                if ((c.unicode() >= 0x202a && c.unicode() <= 0x202e) ||
                    (c.unicode() >= 0x2066 && c.unicode() <= 0x2069) || c.unicode() == 0x200e ||
                    c.unicode() == 0x200f || c.unicode() == 0x061c)
                    return true;
            return false;
        };
        // Every cell and tooltip of Attempts and Marks.
        for (QAbstractItemModel *m : {static_cast<QAbstractItemModel *>(window.attemptsModel()),
                                      static_cast<QAbstractItemModel *>(window.marksModel())})
            for (int r = 0; r < m->rowCount(); ++r)
                for (int c = 0; c < m->columnCount(); ++c)
                    for (int role : {int(Qt::DisplayRole), int(Qt::ToolTipRole)})
                        QVERIFY2(!hasBidi(m->index(r, c).data(role).toString()),
                                 qPrintable(m->index(r, c).data(role).toString()));
        const QString lastError = window.marksModel()->index(0, MarksModel::LastError).data().toString();
        QVERIFY2(lastError.contains(QStringLiteral("\\u202egnp.exe\\u202c")), qPrintable(lastError));
        // The attempt's story and the dashboard's card.
        window.showView(MainWindow::Attempts);
        auto *table = window.viewWidget(MainWindow::Attempts)->findChild<QTableView *>(QStringLiteral("attemptsTable"));
        table->selectRow(0);
        auto *detail =
            window.viewWidget(MainWindow::Attempts)->findChild<QTextBrowser *>(QStringLiteral("attemptDetail"));
        QVERIFY(detail);
        QVERIFY2(!hasBidi(detail->toPlainText()), qPrintable(detail->toPlainText()));
        QVERIFY2(detail->toPlainText().contains(QStringLiteral("\\u202egnp.exe")), qPrintable(detail->toPlainText()));
        settle();
        shoot(window, "attempts_rlo");
        window.showView(MainWindow::Dashboard);
        for (const QLabel *l : window.viewWidget(MainWindow::Dashboard)->findChildren<QLabel *>())
            QVERIFY2(!hasBidi(l->text()) && !hasBidi(l->toolTip()), qPrintable(l->text()));
    }

    void aRefusedRequestReadsAsTheGatewaysOwnAnswer() {
        // A budget 429 or an unknown model's 404 asked no upstream: "did my last request get
        // through?" is answered in Last requests and Attempts, as the gateway's refusal, and the
        // header stays Healthy (a tenant's limit is no outage).
        MainWindow window(nullptr, noTray());
        window.resize(1180, 720);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto s = baseSnapshot();
        auto ok = attempt(QStringLiteral("req_ok"), 2, telemetry::AttemptOutcome::Committed, {});
        const auto refused = test::refusedRecord(
            QStringLiteral("req_budget"), QStringLiteral("tenant alice has spent $25.00 of its $25.00 weekly budget"));
        s.newAttempts = {ok, refused};
        window.applySnapshot(s);
        window.showView(MainWindow::Dashboard);
        settle();
        const QString requests = [&] {
            QString all;
            for (const QLabel *l : window.viewWidget(MainWindow::Dashboard)->findChildren<QLabel *>())
                all += l->text() + QLatin1Char('\n');
            for (const QListWidget *l : window.viewWidget(MainWindow::Dashboard)->findChildren<QListWidget *>())
                for (int i = 0; i < l->count(); ++i)
                    all += l->item(i)->text() + QLatin1Char('\n');
            return all;
        }();
        QVERIFY2(requests.contains(QStringLiteral("sonnet refused by the gateway: budget (HTTP 429)")),
                 qPrintable(requests));
        shoot(window, "dashboard_refused");
        window.showView(MainWindow::Attempts);
        auto *table = window.viewWidget(MainWindow::Attempts)->findChild<QTableView *>(QStringLiteral("attemptsTable"));
        QVERIFY(table);
        table->selectRow(0);
        settle();
        shoot(window, "attempts_refused");
    }

    // Probe I3 1 and 2: a request answered by a fallback because the route's first choice was marked
    // read "Attempt 1: p2/m — committed", as a healthy first choice does, and a field the answer's
    // request went without was nowhere in the window. The detail names both.
    void theDetailNamesTheMarkPassedOverAndWhatTheRequestWentWithout() {
        MainWindow window(nullptr, noTray());
        window.resize(1180, 720);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto s = baseSnapshot();
        auto skipped = attempt(QStringLiteral("req_marked"), 1, telemetry::AttemptOutcome::Skipped,
                               QStringLiteral("marked down (server_error), 14 s left"));
        skipped.failure = QStringLiteral("server_error");
        skipped.elapsedMs = 0;
        auto answered = attempt(QStringLiteral("req_marked"), 2, telemetry::AttemptOutcome::Committed, {});
        answered.dropped = {QStringLiteral("frequency_penalty"), QStringLiteral("presence_penalty")};
        s.newAttempts = {skipped, answered};
        window.applySnapshot(s);
        window.showView(MainWindow::Attempts);
        auto *table = window.viewWidget(MainWindow::Attempts)->findChild<QTableView *>(QStringLiteral("attemptsTable"));
        QVERIFY(table);
        table->selectRow(0);
        settle();
        auto *detail =
            window.viewWidget(MainWindow::Attempts)->findChild<QTextBrowser *>(QStringLiteral("attemptDetail"));
        QVERIFY(detail);
        const QString story = detail->toPlainText();
        QVERIFY2(story.contains(QStringLiteral("Attempt 1: bad/m — skipped (server_error) after 0 ms: marked down "
                                               "(server_error), 14 s left")),
                 qPrintable(story));
        QVERIFY2(story.contains(QStringLiteral("Attempt 2: p2/m — committed after 12 ms; sent without "
                                               "frequency_penalty, presence_penalty")),
                 qPrintable(story));
        shoot(window, "attempts_marked_and_dropped");
        // The dashboard's line says the marked candidate was passed over, not that it failed (probe K1 11).
        window.showView(MainWindow::Dashboard);
        settle();
        QString lines;
        for (const QListWidget *l : window.viewWidget(MainWindow::Dashboard)->findChildren<QListWidget *>())
            for (int i = 0; i < l->count(); ++i)
                lines += l->item(i)->text() + QLatin1Char('\n');
        QVERIFY2(lines.contains(QStringLiteral("on attempt 2, bad skipped (server_error)")), qPrintable(lines));
        shoot(window, "dashboard_marked_skip");
    }

    // Probe AB4 F3: the lines the start logged before the window's publisher listened are in the Log view.
    void theStartsLogLinesAreInTheLogView() {
        MainWindow window(nullptr, noTray());
        window.showStartLog({QJsonObject{
            {QStringLiteral("ts"), QStringLiteral("2026-12-07T10:00:00.000Z")},
            {QStringLiteral("level"), QStringLiteral("warn")},
            {QStringLiteral("msg"), QStringLiteral("usage: 1 answers cut by a crash billed by estimate")}}});
        window.applySnapshot(baseSnapshot());
        QCOMPARE(window.logModel()->rowCount(), 1);
        bool shown = false;
        for (int c = 0; c < window.logModel()->columnCount(); ++c)
            shown |= window.logModel()->index(0, c).data().toString().contains(QStringLiteral("cut by a crash"));
        QVERIFY(shown);
    }

    // Probe AB4 F4: 31 failures in a minute read "0, 7, 14, 22, 29, 37" on ticks 7.4 apart, and the
    // bar of 31 stood above "29". The count axis steps by round numbers.
    void theFailuresAxisStepsByRoundNumbers() {
        FailuresView view;
        auto s = baseSnapshot();
        const qint64 minute = s.wallMs - s.wallMs % 60'000;
        const auto labelsFor = [&](qint64 n) {
            s.failuresByMinute = {{minute, {{QStringLiteral("p1") + QChar(0x1f) + QStringLiteral("server_error"), n}}}};
            s.failureTotals = {{QStringLiteral("p1") + QChar(0x1f) + QStringLiteral("server_error"), n}};
            view.applySnapshot(s);
            return view.countAxisLabels();
        };
        QCOMPARE(labelsFor(31), (QStringList{QStringLiteral("0"), QStringLiteral("10"), QStringLiteral("20"),
                                             QStringLiteral("30"), QStringLiteral("40")}));
        QCOMPARE(labelsFor(3), (QStringList{QStringLiteral("0"), QStringLiteral("1"), QStringLiteral("2"),
                                            QStringLiteral("3"), QStringLiteral("4")}));
        QCOMPARE(labelsFor(46), (QStringList{QStringLiteral("0"), QStringLiteral("10"), QStringLiteral("20"),
                                             QStringLiteral("30"), QStringLiteral("40"), QStringLiteral("50")}));
    }

    // The starter configuration gives each provider an env: reference before its keychain key, on
    // purpose: an unset variable is skipped. With the key in the keychain the window read "Degraded"
    // for good, amber in the tray too, and said requests went elsewhere while none did.
    void anUnsetEnvKeyBeforeAWorkingOneIsNotDegraded() {
        MainWindow window(nullptr, noTray());
        window.resize(1180, 720);
        window.show();
        auto s = baseSnapshot();
        auto running = std::make_shared<config::Config>();
        config::RouteConfig claude;
        claude.name = QStringLiteral("claude");
        claude.candidates = {QStringLiteral("anthropic/claude-sonnet-4-5"), QStringLiteral("openai/gpt-5")};
        running->routes.insert(claude.name, claude);
        s.config = running;
        s.configGeneration = 1;
        const auto key = [](const QString &provider, int position, const QString &ref,
                            credentials::CredentialHealth state) {
            credentials::CredentialStatus c;
            c.provider = provider;
            c.position = position;
            c.ref = ref;
            c.state = state;
            if (state == credentials::CredentialHealth::Missing)
                c.lastError = QStringLiteral("the environment variable %1 is not set").arg(ref.mid(4));
            return c;
        };
        using credentials::CredentialHealth;
        s.credentials = {
            key(QStringLiteral("anthropic"), 0, QStringLiteral("env:ANTHROPIC_API_KEY"), CredentialHealth::Missing),
            key(QStringLiteral("anthropic"), 1, QStringLiteral("keychain:anthropic"), CredentialHealth::Ok),
            key(QStringLiteral("openai"), 0, QStringLiteral("env:OPENAI_API_KEY"), CredentialHealth::Missing),
            key(QStringLiteral("openai"), 1, QStringLiteral("keychain:openai"), CredentialHealth::Ok),
            // A provider no route names, with no key at all: nothing is sent elsewhere because of it.
            key(QStringLiteral("spare"), 0, QStringLiteral("env:SPARE_API_KEY"), CredentialHealth::Missing)};
        window.applySnapshot(s);
        auto *word = window.findChild<QLabel *>(QStringLiteral("stateWord"));
        QCOMPARE(window.state(), HealthState::Healthy);
        QCOMPARE(window.tray()->state(), HealthState::Healthy);
        QCOMPARE(word->text(), QStringLiteral("Healthy"));
        QVERIFY2(!window.tray()->toolTip().contains(QStringLiteral("Degraded")), qPrintable(window.tray()->toolTip()));
        settle();
        shoot(window, "dashboard-starter-pool-healthy");

        // The keychain key parked: the provider's requests now go elsewhere, and the window says so.
        s.credentials[1].state = CredentialHealth::Parked;
        s.credentials[1].reason = credentials::ParkReason::RateLimit;
        s.credentials[1].status = 429;
        s.credentials[1].remainingMs = 45'000;
        s.credentials[1].parkedForMs = 45'000;
        window.applySnapshot(s);
        QCOMPARE(window.state(), HealthState::Degraded);
        QCOMPARE(window.tray()->state(), HealthState::Degraded);
        QCOMPARE(word->text(), QStringLiteral("Degraded"));
        QVERIFY2(window.tray()->toolTip().contains(QStringLiteral("Degraded (a key of anthropic is out of use")),
                 qPrintable(window.tray()->toolTip()));
        settle();
        shoot(window, "dashboard-starter-pool-key-parked");

        // A routed provider with no key left to send is passed over by every request: Degraded too.
        s.credentials[1].state = CredentialHealth::Ok;
        s.credentials[3] =
            key(QStringLiteral("openai"), 1, QStringLiteral("keychain:openai"), CredentialHealth::Missing);
        window.applySnapshot(s);
        QCOMPARE(window.state(), HealthState::Degraded);
        QVERIFY2(window.tray()->toolTip().contains(QStringLiteral("openai has no usable key")),
                 qPrintable(window.tray()->toolTip()));
        QVERIFY2(!window.tray()->toolTip().contains(QStringLiteral("anthropic")), qPrintable(window.tray()->toolTip()));
    }

    void trayMenuHasTheFiveActionsAndEveryStateHasAnIcon() {
        TrayController tray;
        QStringList texts;
        for (auto *a : tray.menu()->actions())
            if (!a->isSeparator())
                texts << a->text();
        QCOMPARE(texts, (QStringList{QStringLiteral("Open dashboard"), QStringLiteral("Pause proxy"),
                                     QStringLiteral("Clear all marks"), QStringLiteral("Copy base URL"),
                                     QStringLiteral("Quit Switchman")}));
        for (HealthState s : {HealthState::Healthy, HealthState::Marks, HealthState::Paused, HealthState::Error}) {
            const QIcon icon(TrayController::iconPath(s));
            QVERIFY2(!icon.pixmap(32, 32).isNull(), qPrintable(TrayController::iconPath(s)));
        }
        // The four icons differ (the state dot), so the state is visible at a glance.
        const QImage healthy = QIcon(TrayController::iconPath(HealthState::Healthy)).pixmap(32, 32).toImage();
        const QImage marks = QIcon(TrayController::iconPath(HealthState::Marks)).pixmap(32, 32).toImage();
        QVERIFY(healthy != marks);
    }

    void closingWithoutATrayQuits() {
        MainWindow window(nullptr, noTray());
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(window.close()); // accepted: the window really closes (and the application quits)
        QVERIFY(!window.isVisible());
    }

    void closingKeepsRunningInTheTray() {
        // scripts/test-tray sets SWITCHMAN_REQUIRE_TRAY: there a missing tray host is a
        // failure, not a skip, so the tray path cannot pass by never running.
        const bool required = qEnvironmentVariableIsSet("SWITCHMAN_REQUIRE_TRAY");
        if (required) // the tray host may still be claiming the tray selection
            QTRY_VERIFY_WITH_TIMEOUT(QSystemTrayIcon::isSystemTrayAvailable(), 10000);
        if (!QSystemTrayIcon::isSystemTrayAvailable())
            QSKIP("no system tray here (needs a tray host such as trayer under Xvfb: scripts/test-tray)");
        MainWindow::Options options;
        options.tray = true;
        MainWindow window(nullptr, options);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(window.tray()->icon()->isVisible());
        QVERIFY(!window.close()); // ignored: hidden, still running
        QVERIFY(!window.isVisible());
        QVERIFY(!window.tray()->notifyKeptRunningOnce());  // the notification was shown already, once
        window.tray()->menu()->actions().at(0)->trigger(); // Open dashboard
        QVERIFY(window.isVisible());
    }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
