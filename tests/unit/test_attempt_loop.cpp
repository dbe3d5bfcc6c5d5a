// The failover loop (failover::AttemptLoop) driven through its seams: a scripted
// runner stands for the upstream, a recording observer for telemetry and a
// recording sink for the client, all on a FakeClock. No sockets, no sleeps: the
// budget, deadline, keepalive, idle and backoff timers move only when the test
// advances the clock.
#include "core/failover/attempt_loop.h"
#include "core/failover/provider_down_marks.h"
#include "core/wire/client_body.h"
#include "fake_clock.h"

#include <QJsonObject>
#include <QSet>
#include <QTest>

using namespace sw;
using namespace sw::failover;
using model::EventType;
using model::StreamEvent;

namespace {

Candidate candidate(const QString &provider, const QString &api = QStringLiteral("anthropic-messages")) {
    Candidate c;
    c.provider.id = provider;
    c.provider.api = api;
    c.provider.baseUrl = QStringLiteral("http://%1.test").arg(provider);
    c.provider.maxRetries = 0;
    c.provider.retriesBeforeFailover = 0;
    c.model.provider = provider;
    c.model.id = QStringLiteral("m-") + provider;
    c.model.costInput = 1;
    c.model.costOutput = 2;
    return c;
}

StreamEvent ev(EventType t, const QString &delta = {}) {
    StreamEvent e;
    e.type = t;
    e.delta = delta;
    e.contentIndex = 0;
    return e;
}

class ScriptedRunner final : public AttemptRunner {
public:
    AttemptLoop *loop = nullptr;
    QList<TryStart> starts;
    QList<AttemptId> launches;
    QList<AttemptId> aborts;
    QSet<QString> noCredential;           // providers without a usable credential
    QHash<QString, CredentialWait> waits; // of those, the ones whose keys are only set aside for a while
    QSet<QString> setupHangs;             // providers whose setup never answers
    QSet<QString> setupFails;             // providers whose setup fails (store error)
    int credentialsLeft = 0;              // rotations the pool still allows
    QList<QPair<AttemptId, bool>> paused;

    void start(const TryStart &s) override {
        starts.append(s);
        if (setupHangs.contains(s.candidate.provider.id))
            return;
        if (setupFails.contains(s.candidate.provider.id))
            return loop->onSetupFailed(s.id, FailureKind::SetupError, QStringLiteral("keychain locked"));
        TryReady ready;
        ready.upstreamApi = s.candidate.provider.api;
        ready.upstreamProvider = s.candidate.provider.id;
        ready.passthrough = passthrough;
        loop->onSetupDone(s.id, ready);
    }
    void launch(AttemptId id) override { launches.append(id); }
    void abort(AttemptId id) override { aborts.append(id); }
    void setReadPaused(AttemptId id, bool p) override { paused.append({id, p}); }
    // As UpstreamAttempts does: the call is dropped and the head's status is the try's failure.
    QList<AttemptId> errorBodyEnds;
    int errorStatus = 503;
    void endErrorBody(AttemptId id) override {
        errorBodyEnds.append(id);
        TryFailure f;
        f.fromHeaders = true;
        f.input.status = errorStatus;
        f.input.message = QStringLiteral("(the body so far)");
        loop->onFailure(id, f);
    }
    bool hasUsableCredential(const Candidate &c) const override { return !noCredential.contains(c.provider.id); }
    std::optional<CredentialWait> credentialWait(const Candidate &c) const override {
        if (!waits.contains(c.provider.id))
            return std::nullopt;
        return waits.value(c.provider.id);
    }
    std::optional<int> rotateCredential(AttemptId, const TryFailure &) override {
        if (credentialsLeft <= 0)
            return std::nullopt;
        --credentialsLeft;
        return 0;
    }
    AttemptId lastId() const { return starts.last().id; }
    QString lastProvider() const { return starts.last().candidate.provider.id; }
    bool passthrough = false;
    QHash<AttemptId, model::Usage> reported; // what each try's decoder has read of the upstream's usage
    model::Usage reportedUsage(AttemptId id) const override { return reported.value(id); }
    bool unread = false; // the try's connection holds bytes not yet read
    bool hasUnreadBytes(AttemptId) const override { return unread; }
};

class Recorder final : public AttemptObserver {
public:
    QList<AttemptReport> rows;
    QList<QPair<AttemptReport, util::LogFields>> lines;
    QList<UsageReport> usage;
    QList<UsageReport> opened; // answerOpened: what a crash would bill
    QStringList notes;
    QList<QPair<QString, FailureKind>> failures;
    int marksTold = 0;
    QList<qint64> ttfts;
    void attemptRecorded(const AttemptReport &r) override { rows.append(r); }
    void attemptLogged(const AttemptReport &r, const util::LogFields &extra) override { lines.append({r, extra}); }
    void usageRecorded(const UsageReport &u) override { usage.append(u); }
    void answerOpened(const UsageReport &u) override { opened.append(u); }
    void note(const QString &m, const QJsonObject &) override { notes.append(m); }
    void failureCounted(const Candidate &c, FailureKind k) override { failures.append({c.provider.id, k}); }
    void marked(const Candidate &, qint64) override { ++marksTold; }
    void ttftObserved(qint64 ms) override { ttfts.append(ms); }
};

class Sink final : public ClientSink {
public:
    bool open = false;
    int keepalives = 0;
    QList<AnswerInfo> commits;
    QList<StreamEvent> events;
    QList<QByteArray> frames;
    QList<model::GatewayError> inBand;
    bool ended = false;
    std::optional<StreamEnd> endedAs; // how endStream() was told the stream ended
    std::optional<AnswerInfo> answered;
    QString answerText;
    std::optional<model::GatewayError> failed;
    qint64 pending = 0;
    QList<qsizetype> sentNowAfter; // how many events and frames had been written at each sendNow()

    void openStream() override { open = true; }
    void sendNow() override { sentNowAfter.append(events.size() + frames.size()); }
    void upstreamChosen(const QString &, const QString &) override {}
    bool streamOpen() const override { return open; }
    void keepalive() override { ++keepalives; }
    quint64 writes() const override { return quint64(keepalives + events.size() + frames.size() + inBand.size()); }
    void commitStream(const AnswerInfo &info, bool) override { commits.append(info); }
    void streamEvent(const StreamEvent &e) override { events.append(e); }
    std::function<void()> afterFrame; // what writing a frame sets off (the client found gone)
    void streamFrame(const QByteArray &f) override {
        frames.append(f);
        if (afterFrame)
            afterFrame();
    }
    void streamError(const model::GatewayError &e) override { inBand.append(e); }
    void endStream(StreamEnd end) override {
        ended = true;
        endedAs = end;
    }
    void answer(model::AssistantMessage m, const AnswerInfo &info) override {
        answered = info;
        for (const auto &b : m.content)
            answerText += b.text;
    }
    void fail(const model::GatewayError &e, int) override {
        failed = e;
        if (open) {
            inBand.append(e);
            ended = true;
        }
    }
    qint64 pendingBytes() const override { return pending; }
};

// One request's loop with its fakes.
struct Harness {
    test::FakeClock clock;
    ProviderDownMarks marks{clock};
    ScriptedRunner runner;
    Recorder seen;
    Sink client;
    model::ChatRequest parsed;
    LoopSettings settings;
    Resolution resolution;
    std::unique_ptr<AttemptLoop> loop;
    bool done = false;

    Harness(QList<Candidate> chain, bool stream, bool direct = false) {
        parsed.model = QStringLiteral("route");
        parsed.stream = stream;
        model::Message m;
        m.role = model::Role::User;
        model::ContentBlock b;
        b.type = model::BlockType::Text;
        b.text = QStringLiteral("hi");
        m.content.append(b);
        parsed.context.messages.append(m);
        settings.tenant = QStringLiteral("t");
        settings.requestId = QStringLiteral("REQ");
        settings.requestedModel = parsed.model;
        settings.stream = stream;
        settings.deadlineMs = 60000;
        settings.keepaliveMs = 15000;
        settings.upstreamIdleTimeoutMs = 300000;
        resolution.requested = parsed.model;
        resolution.chain = std::move(chain);
        resolution.direct = direct;
    }
    void start() {
        AttemptLoop::Deps deps;
        deps.clock = &clock;
        deps.marks = &marks;
        deps.runner = &runner;
        deps.observer = &seen;
        deps.client = &client;
        deps.random = [](qint64) { return qint64(0); };
        loop = std::make_unique<AttemptLoop>(deps, settings, resolution, parsed, [this]() { done = true; });
        runner.loop = loop.get();
        loop->start();
    }
    AttemptId id() const { return runner.lastId(); }
    void frame(QList<StreamEvent> events, bool afterEnd = false) {
        TryFrame f;
        f.events = std::move(events);
        f.afterEnd = afterEnd;
        f.frameBytes = 32;
        loop->onFrame(id(), f);
    }
    void answer(const QString &text = QStringLiteral("Hello")) {
        loop->onResponseHead(id(), 200, false);
        frame({ev(EventType::Start), ev(EventType::TextStart)});
        frame({ev(EventType::TextDelta, text)});
        StreamEvent d = ev(EventType::Done);
        d.usage.input = 10;
        d.usage.output = 5;
        frame({ev(EventType::TextEnd), d});
    }
    void httpError(int status, const QString &message = QStringLiteral("upstream says no")) {
        loop->onResponseHead(id(), status, status < 200 || status >= 300);
        TryFailure f;
        f.fromHeaders = true;
        f.input.status = status;
        f.input.message = message;
        loop->onFailure(id(), f);
    }
    QStringList outcomes() const {
        QStringList out;
        for (const auto &r : seen.rows)
            out << QStringLiteral("%1:%2").arg(r.candidate ? r.candidate->provider.id : QString(),
                                               r.logOutcome.isEmpty() ? QStringLiteral("committed") : r.logOutcome);
        return out;
    }
};

enum class Shape { Transport, Status, InBand };

} // namespace

class TestAttemptLoop : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // The usage an upstream reported before its try ended abnormally (Gemini's running
    // usageMetadata, Anthropic's message_delta, a Chat usage chunk before [DONE]) lived only in the
    // decoder: a reset, the client leaving, the idle timeout or a shutdown billed the 4-chars
    // estimate instead (73x less for a Gemini answer cut by a reset, its thinking and cached input
    // never billed; probe H1 1). Whatever ends the try, what the upstream said is billed, and
    // the estimate only stands in for what it never said.
    void reportedUsageIsBilledHoweverTheTryEnds_data() {
        QTest::addColumn<QString>("end");
        QTest::addColumn<bool>("stream");
        QTest::addColumn<qint64>("input");
        QTest::addColumn<qint64>("expectedInput");
        QTest::newRow("reset after commit") << "reset" << true << qint64(500) << qint64(500);
        QTest::newRow("client gone") << "gone" << true << qint64(500) << qint64(500);
        QTest::newRow("idle timeout") << "idle" << true << qint64(500) << qint64(500);
        QTest::newRow("shutdown") << "shutdown" << true << qint64(500) << qint64(500);
        QTest::newRow("reset before a JSON answer") << "reset" << false << qint64(500) << qint64(500);
        // Every input token read from the cache: the input was reported, none estimated on top.
        QTest::newRow("all input cached") << "reset" << true << qint64(0) << qint64(0);
    }
    void reportedUsageIsBilledHoweverTheTryEnds() {
        QFETCH(QString, end);
        QFETCH(bool, stream);
        QFETCH(qint64, input);
        QFETCH(qint64, expectedInput);
        Harness h({candidate("pa")}, stream);
        h.settings.inputTokensEstimate = 71;
        h.settings.upstreamIdleTimeoutMs = 1000;
        h.start();
        h.loop->onResponseHead(h.id(), 200, false);
        h.frame({ev(EventType::Start), ev(EventType::TextStart), ev(EventType::TextDelta, QStringLiteral("Hello"))});
        QCOMPARE(h.client.commits.size(), stream ? 1 : 0);
        model::Usage reported;
        reported.input = input;
        reported.cacheRead = 2500;
        reported.output = 462; // 450 of them thinking: never text the estimate could count
        h.runner.reported[h.id()] = reported;
        if (end == QLatin1String("reset"))
            h.loop->onTransportError(h.id(), upstream::TransportError::Reset, QStringLiteral("reset"));
        else if (end == QLatin1String("gone"))
            h.loop->onClientGone();
        else if (end == QLatin1String("idle"))
            h.clock.advance(1001);
        else
            h.loop->onShutdown(
                model::GatewayError::make(503, model::ErrorCategory::ServerError, QStringLiteral("shutting down")));
        QVERIFY(h.done);
        QCOMPARE(h.seen.usage.size(), 1);
        const model::Usage billed = h.seen.usage[0].usage;
        QCOMPARE(billed.input, expectedInput);
        QCOMPARE(billed.cacheRead, qint64(2500));
        QCOMPARE(billed.output, qint64(462));
        if (stream && end != QLatin1String("gone") && end != QLatin1String("shutdown")) {
            // The client's in-band error says it too (pi's error message carries the usage so far).
            QCOMPARE(h.client.events.last().type, EventType::Error);
            QCOMPARE(h.client.events.last().usage.cacheRead, qint64(2500));
        }
    }

    // The loop was held (a paused process, a busy thread) while a healthy upstream went on sending:
    // on resume its idle timer ran before its reads, and the stream was cut and the provider marked
    // (probe V2 F5). Bytes waiting unread are no silence: a moment more to read them, once.
    void bytesWaitingUnreadAreNoSilence() {
        Harness h({candidate("pa"), candidate("pb")}, true);
        h.settings.upstreamIdleTimeoutMs = 3000;
        h.start();
        h.loop->onResponseHead(h.id(), 200, false);
        h.frame({ev(EventType::Start), ev(EventType::TextStart), ev(EventType::TextDelta, QStringLiteral("Hello"))});
        h.runner.unread = true;
        h.clock.advance(3000); // the loop ran again only now, with the upstream's bytes waiting
        QVERIFY(!h.done);
        QVERIFY(h.runner.aborts.isEmpty());
        // Read: the stream goes on.
        h.runner.unread = false;
        h.loop->onActivity(h.id());
        h.frame({ev(EventType::TextDelta, QStringLiteral(" world"))});
        h.clock.advance(2999);
        QVERIFY(!h.done);
        QVERIFY(h.marks.active().isEmpty());
        // What waits is pings alone, on and on: one grace, then the silence ends the try.
        h.runner.unread = true;
        h.clock.advance(1);
        QVERIFY(!h.done);
        h.clock.advance(AttemptLoop::kUnreadGraceMs);
        QVERIFY(h.done);
        QVERIFY(h.runner.aborts.contains(h.id()));
        QCOMPARE(h.client.events.last().type, EventType::Error);
    }

    // The open row (what a kill -9 mid-stream bills at the next start) took the input from the
    // events alone: Gemini's, read with its first chunk, was replaced by the request's estimate.
    void theOpenRowCarriesTheInputReportedByCommit() {
        Harness h({candidate("pa")}, true);
        h.settings.inputTokensEstimate = 71;
        h.start();
        h.loop->onResponseHead(h.id(), 200, false);
        model::Usage reported;
        reported.input = 500;
        reported.cacheRead = 2500;
        h.runner.reported[h.id()] = reported;
        h.frame({ev(EventType::Start), ev(EventType::TextStart), ev(EventType::TextDelta, QStringLiteral("Hello"))});
        QCOMPARE(h.seen.opened.size(), 1);
        QCOMPARE(h.seen.opened[0].usage.input, qint64(500));
        QCOMPARE(h.seen.opened[0].usage.cacheRead, qint64(2500));
    }

    // Probe R4 F3: Gemini sends usageMetadata on every chunk, cachedContentTokenCount only on the
    // last (an OpenAI-compatible server with usage on every chunk, cached_tokens in the last one,
    // alike). The decoder's early report is the whole prompt as input; the most of each figure
    // billed input 100000 + cacheRead 90000 for a 100000-token prompt, the cached tokens once more at
    // the input price. The report with the cache split gives the split whole.
    void cachedTokensAreBilledOnce_data() {
        QTest::addColumn<bool>("stream");
        QTest::addColumn<bool>("afterSplit"); // a report without the split comes after it
        QTest::newRow("stream") << true << false;
        QTest::newRow("json") << false << false;
        QTest::newRow("a report without the split after it") << true << true;
    }
    void cachedTokensAreBilledOnce() {
        QFETCH(bool, stream);
        QFETCH(bool, afterSplit);
        Harness h({candidate("pa")}, stream);
        h.start();
        h.loop->onResponseHead(h.id(), 200, false);
        StreamEvent start = ev(EventType::Start);
        start.usage.input = 100000; // promptTokenCount, no cachedContentTokenCount yet
        h.frame({start, ev(EventType::TextStart), ev(EventType::TextDelta, QStringLiteral("Hello"))});
        model::Usage last;
        last.input = 10000; // 100000 - 90000 cached
        last.cacheRead = 90000;
        last.output = 500;
        h.runner.reported[h.id()] = last;
        if (afterSplit) { // what the try's end reads last says only the prompt: the split said stands
            model::Usage promptOnly;
            promptOnly.input = 100000;
            promptOnly.output = 500;
            h.runner.reported[h.id()] = promptOnly;
        }
        StreamEvent done = ev(EventType::Done);
        done.usage = last;
        h.frame({ev(EventType::TextEnd), done});
        QVERIFY(h.done);
        QCOMPARE(h.seen.usage.size(), 1);
        const model::Usage billed = h.seen.usage[0].usage;
        QCOMPARE(billed.input, qint64(10000));
        QCOMPARE(billed.cacheRead, qint64(90000));
        QCOMPARE(billed.output, qint64(500));
    }

    void firstCandidateAnswers_data() {
        QTest::addColumn<bool>("stream");
        QTest::newRow("stream") << true;
        QTest::newRow("json") << false;
    }
    void firstCandidateAnswers() {
        QFETCH(bool, stream);
        Harness h({candidate("pa"), candidate("pb")}, stream);
        h.start();
        QCOMPARE(h.runner.launches.size(), 1);
        QCOMPARE(h.client.open, stream); // early headers only for a stream
        h.answer();
        QVERIFY(h.done);
        QCOMPARE(h.outcomes(), QStringList{"pa:committed"});
        QCOMPARE(h.seen.usage.size(), 1);
        QCOMPARE(h.seen.usage[0].rowId, QStringLiteral("REQ"));
        QVERIFY(h.seen.usage[0].answered);
        if (stream) {
            QCOMPARE(h.client.commits.size(), 1);
            QVERIFY(h.client.ended);
            QVERIFY(h.client.endedAs == StreamEnd::Answered);
            QCOMPARE(h.client.events.first().type, EventType::Start); // the held events replayed in order
        } else {
            QVERIFY(h.client.answered);
            QCOMPARE(h.client.answerText, QStringLiteral("Hello"));
        }
        QVERIFY(h.marks.active().isEmpty());
        QCOMPARE(h.clock.pendingTimers(), 0); // deadline, keepalive, idle, budget all disarmed
    }

    // Which failures fail over (docs/failover.md), every row, stream and JSON, with and without a follower.
    void classifierTable_data() {
        QTest::addColumn<int>("shape");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("kind"); // empty: stop
        QTest::addColumn<int>("clientStatus");
        QTest::addColumn<bool>("marks");
        const struct {
            const char *name;
            Shape shape;
            int status;
            const char *text;
            const char *kind;
            int clientStatus;
            bool marks;
        } rows[] = {
            {"dns", Shape::Transport, 0, "Host api.example not found", "transport", 502, true},
            {"usage limit text", Shape::Status, 429, "You have reached your usage limit", "credential_exhausted", 0,
             false},
            {"401", Shape::Status, 401, "invalid x-api-key", "credential_exhausted", 0, false},
            {"403", Shape::Status, 403, "forbidden", "credential_exhausted", 0, false},
            {"403 concurrency cap", Shape::Status, 403, "too many concurrent requests", "rate_limited", 429, true},
            {"429", Shape::Status, 429, "rate_limit_error: slow down", "rate_limited", 429, true},
            {"404", Shape::Status, 404, "model not found", "not_served", 0, false},
            // The 404's meaning said with a 400 (probe X1 F3), and conversation state another provider holds (X3 F1).
            // Alone, the client hears the 400 it was.
            {"400 model retired", Shape::Status, 400, "model_decommissioned: The model `m` has been decommissioned",
             "not_served", 400, false},
            {"400 conversation elsewhere", Shape::Status, 400,
             "previous_response_not_found: Previous response with id 'resp_1' not found.", "not_served", 400, false},
            {"3xx", Shape::Status, 302, "redirect", "", 502, false},
            {"400", Shape::Status, 400, "max_tokens: too large", "", 400, false},
            {"422", Shape::Status, 422, "unprocessable", "", 422, false},
            {"408", Shape::Status, 408, "request timeout", "server_error", 0, true},
            {"503", Shape::Status, 503, "overloaded", "server_error", 503, true},
            {"529", Shape::Status, 529, "overloaded_error: Overloaded", "server_error", 0, true},
            {"in-band rate limit", Shape::InBand, 0, "rate limit exceeded", "rate_limited", 0, true},
            {"in-band overloaded", Shape::InBand, 0, "Overloaded", "server_error", 0, true},
            {"in-band not retryable", Shape::InBand, 0, "prompt is too long", "", 0, false},
        };
        for (const auto &r : rows)
            QTest::newRow(r.name) << int(r.shape) << r.status << QString::fromLatin1(r.text)
                                  << QString::fromLatin1(r.kind) << r.clientStatus << r.marks;
    }
    void classifierTable() {
        QFETCH(int, shape);
        QFETCH(int, status);
        QFETCH(QString, text);
        QFETCH(QString, kind);
        QFETCH(int, clientStatus);
        QFETCH(bool, marks);
        for (const bool stream : {true, false}) {
            for (const bool follower : {true, false}) {
                const QString where = QStringLiteral("stream=%1 follower=%2").arg(stream).arg(follower);
                QList<Candidate> chain{candidate("pa")};
                if (follower)
                    chain.append(candidate("pb"));
                Harness h(chain, stream);
                h.start();
                if (Shape(shape) == Shape::Transport) {
                    h.loop->onTransportError(h.id(), upstream::TransportError::HostNotFound, text);
                } else if (Shape(shape) == Shape::Status) {
                    h.httpError(status, text);
                } else {
                    h.loop->onResponseHead(h.id(), 200, false);
                    StreamEvent e = ev(EventType::Error);
                    e.errorMessage = text;
                    h.frame({ev(EventType::Start), e});
                }
                const bool failsOver = !kind.isEmpty();
                QVERIFY2(h.marks.active().isEmpty() != marks, qPrintable(where));
                if (failsOver && follower) {
                    QVERIFY2(!h.done, qPrintable(where));
                    QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb"));
                    QCOMPARE(h.seen.rows.first().failure, kind);
                    QCOMPARE(h.seen.rows.first().logOutcome, QStringLiteral("retrying"));
                    h.answer();
                    QVERIFY2(h.done && !h.client.failed, qPrintable(where));
                } else {
                    // No follower, or a stop: the client gets the error, in band once headers are out.
                    QVERIFY2(h.done, qPrintable(where));
                    QVERIFY2(h.client.failed, qPrintable(where));
                    QCOMPARE(h.runner.starts.size(), 1);
                    if (clientStatus)
                        QCOMPARE(h.client.failed->status, clientStatus);
                    QCOMPARE(h.seen.rows.first().logOutcome,
                             failsOver ? QStringLiteral("exhausted") : QStringLiteral("stop"));
                    QCOMPARE(h.client.inBand.isEmpty(), !stream);
                }
            }
        }
    }

    // A conversation started on pa (previous_response_id) while pa is down: pb, which never saw it,
    // says "not found". The client hears pa's outage, which it retries, not that its conversation
    // is gone (probe X3 F1).
    void aConversationHeldElsewhereLeavesTheOutageToTheClient() {
        for (const bool stream : {true, false}) {
            Harness h({candidate("pa"), candidate("pb")}, stream);
            h.start();
            h.httpError(503, QStringLiteral("overloaded"));
            QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb"));
            h.httpError(400,
                        QStringLiteral("previous_response_not_found: Previous response with id 'resp_1' not found."));
            QVERIFY(h.done);
            QVERIFY(h.client.failed);
            QCOMPARE(h.client.failed->status, 503);
            QVERIFY2(h.client.failed->message.contains(QStringLiteral("pa")), qPrintable(h.client.failed->message));
            // Any other refusal from pb is its own to tell.
            Harness other({candidate("pa"), candidate("pb")}, stream);
            other.start();
            other.httpError(503, QStringLiteral("overloaded"));
            other.httpError(404, QStringLiteral("model not found"));
            QVERIFY(other.client.failed);
            QCOMPARE(other.client.failed->status, 404);
        }
    }

    void refusalIsAnAnswerNotAnOutage() {
        // A refusal is Done with its stop reason: it commits, no mark, no failover.
        Harness h({candidate("pa"), candidate("pb")}, true);
        h.start();
        StreamEvent d = ev(EventType::Done);
        d.reason = model::StopReason::Refusal;
        h.frame({ev(EventType::Start), d});
        QVERIFY(h.done);
        QCOMPARE(h.runner.starts.size(), 1);
        QCOMPARE(h.outcomes(), QStringList{"pa:committed"});
        QCOMPARE(h.client.events.last().reason, model::StopReason::Refusal);
        QVERIFY(h.marks.active().isEmpty());
    }

    void cutAfterCommitWritesTheFormatsErrorOnPassthrough() {
        // A same-API stream cut after content gets the format's error, never a made-up end.
        Harness h({candidate("pa"), candidate("pb")}, true);
        h.runner.passthrough = true;
        h.start();
        TryFrame f;
        f.events = {ev(EventType::Start), ev(EventType::TextStart), ev(EventType::TextDelta, QStringLiteral("Hel"))};
        f.raw = QByteArray("event: content_block_delta\ndata: {}\n\n");
        h.loop->onFrame(h.id(), f);
        QCOMPARE(h.client.frames.size(), 1);
        h.loop->onTransportError(h.id(), upstream::TransportError::Reset, QStringLiteral("reset"));
        QVERIFY(h.done);
        QCOMPARE(h.client.inBand.size(), 1);
        QVERIFY(h.client.inBand[0].message.contains(QStringLiteral("reset")));
        QVERIFY(h.client.ended);
        QVERIFY(h.client.endedAs == StreamEnd::Broken); // never a whole answer to keep or replay
        QCOMPARE(h.runner.starts.size(), 1);            // committed: final
        QVERIFY(h.marks.active().isEmpty());
    }

    void redirectStopsWithA502() {
        Harness h({candidate("pa"), candidate("pb")}, false);
        h.start();
        h.httpError(301, QStringLiteral("upstream pa answered HTTP 301, a redirect"));
        QCOMPARE(h.client.failed->status, 502);
        QCOMPARE(h.runner.starts.size(), 1);
        QVERIFY(h.marks.active().isEmpty());
    }

    void parallelFailureOnOneBlipAddsNoStrike() {
        // The loop hands the mark its attempt's start, so an attempt begun before
        // another request's strike adds none (one blip, one strike, 20 s).
        Harness a({candidate("pa"), candidate("pb")}, false);
        a.start();
        a.clock.advance(10);
        a.marks.mark(QStringLiteral("t"), candidate("pa").ref(),
                     UpstreamFailure{FailureKind::ServerError, 503, std::nullopt, QStringLiteral("blip")},
                     a.clock.nowMs() - 5); // a parallel request's strike, after our try started
        a.httpError(503);
        QCOMPARE(a.marks.active().first().strikes, 1);
        QCOMPARE(a.marks.active().first().ttlMs, ProviderDownMarks::kServerErrorBaseMs);
        // A try launched after the mark does add one.
        a.answer();
        Harness b({candidate("pa"), candidate("pb")}, false);
        b.clock.advance(10);
        b.marks.mark(QStringLiteral("t"), candidate("pa").ref(),
                     UpstreamFailure{FailureKind::ServerError, 503, std::nullopt, QStringLiteral("blip")},
                     b.clock.nowMs() - 5);
        b.clock.advance(30000); // expired: pa is tried first again
        b.start();
        QCOMPARE(b.runner.lastProvider(), QStringLiteral("pa"));
        b.clock.advance(10);
        b.httpError(503);
        QCOMPARE(b.marks.active().first().strikes, 2);
    }

    void retriesOfAnAttemptBegunBeforeTheMarkAddNoStrike() {
        // A lone candidate retries within its attempt. Another request's strike lands between
        // this attempt's start and its last retry: the attempt began before the mark, so its
        // failure is the same blip (SPEC 5), not a second strike that would double the TTL.
        Harness h({candidate("pa")}, false);
        h.settings.deadlineMs = 60000;
        h.resolution.chain[0].provider.maxRetries = 2;
        h.start();
        h.clock.advance(10);
        h.httpError(503, QStringLiteral("busy"));
        h.clock.advance(500); // the backoff: the retry starts now
        QCOMPARE(h.runner.starts.size(), 2);
        h.marks.mark(QStringLiteral("t"), candidate("pa").ref(),
                     UpstreamFailure{FailureKind::ServerError, 503, std::nullopt, QStringLiteral("blip")},
                     h.clock.nowMs() - 600); // a parallel request begun before ours
        h.clock.advance(10);
        h.httpError(503, QStringLiteral("busy"));
        h.clock.advance(1000);
        QCOMPARE(h.runner.starts.size(), 3);
        h.clock.advance(10);
        h.httpError(503, QStringLiteral("still busy"));
        QVERIFY(h.done);
        QCOMPARE(h.marks.active().first().strikes, 1);
        QCOMPARE(h.marks.active().first().ttlMs, ProviderDownMarks::kServerErrorBaseMs);
    }

    void disabledFailoverIsAPlainRelay() {
        // No marks set or consulted, no follower, no deadline.
        Harness h({candidate("pa"), candidate("pb")}, false);
        h.settings.failoverEnabled = false;
        h.marks.mark(QStringLiteral("t"), candidate("pa").ref(),
                     UpstreamFailure{FailureKind::ServerError, 503, std::nullopt, QStringLiteral("old")});
        h.start();
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pa")); // its mark is not consulted
        h.httpError(503);
        QVERIFY(h.done);
        QCOMPARE(h.client.failed->status, 503);
        QCOMPARE(h.marks.active().first().strikes, 1); // not struck again
        QCOMPARE(h.runner.starts.size(), 1);
    }

    void aRefusedCertificateIsNotTriedAgain() {
        // Probe T2: a certificate the gateway does not trust is refused on every try. A lone
        // candidate's retries only delayed the same 502, and the SDKs' own retries repeated it.
        Harness h({candidate("pa")}, false);
        h.resolution.chain[0].provider.maxRetries = 2;
        h.start();
        h.loop->onTransportError(h.id(), upstream::TransportError::Tls,
                                 QStringLiteral("tls handshake failed: the certificate is self-signed"));
        QVERIFY(h.done);
        QCOMPARE(h.runner.starts.size(), 1);
        QVERIFY(h.seen.notes.isEmpty()); // no "provider retry"
        QCOMPARE(h.client.failed->status, 502);
        QCOMPARE(h.client.failed->shouldRetry, std::optional<bool>(false));
        // A reset is still retried (control).
        Harness r({candidate("pa")}, false);
        r.resolution.chain[0].provider.maxRetries = 2;
        r.start();
        r.loop->onTransportError(r.id(), upstream::TransportError::Reset, QStringLiteral("reset"));
        QVERIFY(!r.done);
        QCOMPARE(r.seen.notes, QStringList{"provider retry"});
        // On a chain, the next candidate is asked at once.
        Harness c({candidate("pa"), candidate("pb")}, false);
        c.resolution.chain[0].provider.maxRetries = 2;
        c.start();
        c.loop->onTransportError(c.id(), upstream::TransportError::Tls, QStringLiteral("tls handshake failed"));
        QCOMPARE(c.runner.lastProvider(), QStringLiteral("pb"));
    }

    void credentialLessFollowerIsNoFollower() {
        // Pb has no credential: pa keeps its own retries and the client gets
        // pa's real failure, with pb's skipped row.
        Harness h({candidate("pa"), candidate("pb")}, false);
        h.resolution.chain[0].provider.maxRetries = 1;
        h.runner.noCredential.insert(QStringLiteral("pb"));
        h.start();
        h.httpError(503);
        QVERIFY(!h.done); // a retry of pa, as without a follower
        QCOMPARE(h.seen.notes, QStringList{"provider retry"});
        h.clock.advance(1000);
        QCOMPARE(h.runner.starts.size(), 2);
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pa"));
        h.httpError(503, QStringLiteral("still overloaded"));
        QVERIFY(h.done);
        QCOMPARE(h.client.failed->status, 503);
        QVERIFY(h.client.failed->message.contains(QStringLiteral("still overloaded")));
        QCOMPARE(h.outcomes(), (QStringList{"pa:exhausted", "pb:skipped"}));
        QCOMPARE(h.seen.rows[1].failure, QStringLiteral("credential_exhausted"));
    }

    void usageRowIdsAreUniqueAndTheAnswerKeepsThePlainId() {
        // Usage rows of failed tries and retries keep distinct ids.
        Harness h({candidate("pa"), candidate("pb")}, false);
        h.resolution.chain[0].provider.retriesBeforeFailover = 1;
        h.start();
        auto failWithUsage = [&h]() {
            StreamEvent s = ev(EventType::Start);
            s.usage.input = 7;
            StreamEvent e = ev(EventType::Error);
            e.errorMessage = QStringLiteral("Overloaded");
            h.frame({s, e});
        };
        failWithUsage();
        h.clock.advance(1000); // pa's own retry
        QCOMPARE(h.runner.starts.size(), 2);
        failWithUsage();
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb"));
        h.answer();
        QStringList ids;
        for (const auto &u : h.seen.usage)
            ids << u.rowId;
        QCOMPARE(ids, (QStringList{"REQ:a1", "REQ:a1.2", "REQ"}));
    }

    void clientAbortAfterCommitBillsThePlainId() {
        Harness h({candidate("pa"), candidate("pb")}, true);
        h.start();
        StreamEvent s = ev(EventType::Start);
        s.usage.input = 9;
        h.frame({s, ev(EventType::TextStart), ev(EventType::TextDelta, QStringLiteral("Hi"))});
        h.loop->onClientGone();
        QVERIFY(h.done);
        QCOMPARE(h.seen.usage.size(), 1);
        QCOMPARE(h.seen.usage[0].rowId, QStringLiteral("REQ"));
        QVERIFY(h.runner.aborts.contains(h.id()));
        // The answer's row, and a second that says the client left it (probe R1 4: the window and the
        // events feed showed a plain committed 200), counted once (Telemetry::recordAttempt).
        QCOMPARE(h.outcomes(), (QStringList{"pa:committed", "pa:after_commit"}));
        QCOMPARE(h.seen.rows.last().outcome, AttemptOutcome::Aborted);
        QVERIFY(h.seen.rows.last().message.contains(QStringLiteral("client closed")));
    }

    void clientAbortWhileHeldStartsNoFollower() {
        Harness h({candidate("pa"), candidate("pb")}, true);
        h.start();
        h.frame({ev(EventType::Start)});
        h.loop->onClientGone();
        QVERIFY(h.done);
        QCOMPARE(h.runner.starts.size(), 1);
        QCOMPARE(h.outcomes(), QStringList{"pa:aborted"});
        QVERIFY(h.seen.notes.contains(QStringLiteral("client closed request")));
        QVERIFY(!h.client.failed); // nobody to tell
        QCOMPARE(h.clock.pendingTimers(), 0);
    }

    void silentOnlyCandidateEndsAtTheIdleTimeout_data() {
        QTest::addColumn<bool>("answered200");
        QTest::newRow("200 then silence") << true;
        QTest::newRow("no answer") << false;
    }
    void silentOnlyCandidateEndsAtTheIdleTimeout() {
        // Keepalives every 15 s until the idle timeout, then the error, then nothing.
        QFETCH(bool, answered200);
        Harness h({candidate("pa")}, true);
        h.settings.deadlineMs = 4000; // shorter than the idle timeout: it must not matter
        h.start();
        if (answered200)
            h.loop->onResponseHead(h.id(), 200, false);
        h.clock.advance(299999);
        QVERIFY(!h.done);
        QCOMPARE(h.client.keepalives, 19);
        h.clock.advance(1);
        QVERIFY(h.done);
        QCOMPARE(h.client.failed->status, 504);
        QCOMPARE(h.seen.rows.first().failure, QStringLiteral("server_error"));
        QVERIFY(h.runner.aborts.contains(h.id()));
        h.clock.advance(60000);
        QCOMPARE(h.client.keepalives, 19);
        QCOMPARE(h.clock.pendingTimers(), 0);
    }

    // After commit a client that takes nothing pauses the upstream (1 MiB queued). The idle
    // clock kept counting the upstream's silence it had caused: after the limit the provider got
    // the blame (a failed row, the failure counter). Now the time paused is the client's, and
    // a client stalled for the whole limit ends its own answer with no failure of the provider's.
    void aClientThatReadsNothingIsNotTheUpstreamsSilence() {
        Harness h({candidate("pa")}, true);
        h.settings.upstreamIdleTimeoutMs = 10000;
        h.start();
        h.loop->onResponseHead(h.id(), 200, false);
        h.frame({ev(EventType::Start), ev(EventType::TextStart), ev(EventType::TextDelta, QStringLiteral("a"))});
        QCOMPARE(h.client.commits.size(), 1);
        // Slow for a while, then reading again: the upstream gets a whole window after the resume.
        h.clock.advance(4000);
        h.client.pending = 2 * 1024 * 1024;
        h.frame({ev(EventType::TextDelta, QStringLiteral("b"))});
        QCOMPARE(h.runner.paused.size(), 1);
        h.clock.advance(9000); // 13 s since the upstream's last byte
        QVERIFY(!h.done);
        h.client.pending = 0;
        h.loop->onClientDrained();
        QCOMPARE(h.runner.paused.last().second, false);
        h.clock.advance(9999);
        QVERIFY(!h.done);
        h.frame({ev(EventType::TextDelta, QStringLiteral("c"))});
        h.loop->onActivity(h.id());
        // Stalled for good: after the whole limit the answer ends, and the provider is not blamed.
        h.client.pending = 2 * 1024 * 1024;
        h.frame({ev(EventType::TextDelta, QStringLiteral("d"))});
        h.clock.advance(9999);
        QVERIFY(!h.done);
        h.clock.advance(1);
        QVERIFY(h.done);
        QVERIFY(h.client.ended);
        QVERIFY(h.client.endedAs == StreamEnd::Broken); // a stalled client got no whole answer
        QCOMPARE(h.client.inBand.size(), 1);
        QCOMPARE(h.client.inBand.first().status, 408);
        QVERIFY(h.runner.aborts.contains(h.id()));
        QVERIFY(h.seen.failures.isEmpty());
        // Its committed row, then one that says the client left it unread (probe V3 2): no failure.
        QCOMPARE(h.seen.rows.size(), 2);
        QCOMPARE(h.seen.rows[0].outcome, AttemptOutcome::Committed);
        QCOMPARE(h.seen.rows[1].outcome, AttemptOutcome::Aborted);
        QVERIFY2(h.seen.rows[1].message.contains(QStringLiteral("read nothing")), qPrintable(h.seen.rows[1].message));
        QVERIFY(h.seen.notes.contains(QStringLiteral("client stalled")));
        QCOMPARE(h.clock.pendingTimers(), 0);
    }

    // A client that reads, slowly, is not stalled: each drain (bytes taken) restarts its clock
    // even while the queue stays over the resume mark.
    void aSlowButReadingClientIsNeverCut() {
        Harness h({candidate("pa")}, true);
        h.settings.upstreamIdleTimeoutMs = 10000;
        h.start();
        h.loop->onResponseHead(h.id(), 200, false);
        h.frame({ev(EventType::Start), ev(EventType::TextStart), ev(EventType::TextDelta, QStringLiteral("a"))});
        h.client.pending = 2 * 1024 * 1024;
        h.frame({ev(EventType::TextDelta, QStringLiteral("b"))});
        QCOMPARE(h.runner.paused.size(), 1);
        for (int i = 0; i < 10; ++i) {
            h.clock.advance(5000);
            h.client.pending -= 100 * 1024; // still over 512 KiB: not resumed
            h.loop->onClientDrained();
        }
        QVERIFY(!h.done); // 50 s paused, never 10 s without progress
        QCOMPARE(h.runner.paused.size(), 1);
    }

    // An error after commit that would not fail over before commit either (an in-band 4xx) is
    // not the provider's failure: its row says what broke the answer, no counter moves.
    void anUnclassifiedErrorAfterCommitCountsNoFailure() {
        Harness h({candidate("pa")}, true);
        h.start();
        h.loop->onResponseHead(h.id(), 200, false);
        h.frame({ev(EventType::Start), ev(EventType::TextStart), ev(EventType::TextDelta, QStringLiteral("a"))});
        StreamEvent e = ev(EventType::Error);
        e.errorMessage = QStringLiteral("invalid_request_error: the tool schema is not valid");
        e.errorType = QStringLiteral("invalid_request_error");
        e.errorStatus = 400;
        h.frame({e});
        QVERIFY(h.done);
        QVERIFY(h.seen.failures.isEmpty());
        QCOMPARE(h.seen.rows.last().outcome, AttemptOutcome::Failed);
        QCOMPARE(h.seen.rows.last().logOutcome, QStringLiteral("after_commit"));
        QVERIFY(h.seen.rows.last().failure.isEmpty());
        // A cut is the provider's: counted.
        Harness cut({candidate("pa")}, true);
        cut.start();
        cut.loop->onResponseHead(cut.id(), 200, false);
        cut.frame({ev(EventType::Start), ev(EventType::TextStart), ev(EventType::TextDelta, QStringLiteral("a"))});
        cut.loop->onTransportError(cut.id(), upstream::TransportError::Reset, QStringLiteral("reset"));
        QCOMPARE(cut.seen.failures.size(), 1);
        QCOMPARE(cut.seen.failures.first().second, FailureKind::Transport);
    }

    void silentFirstCandidateFailsOverAtTheIdleTimeout() {
        Harness h({candidate("pa"), candidate("pb")}, false);
        h.settings.deadlineMs = 10 * 60 * 1000; // budget: half of it, past the idle timeout
        h.settings.upstreamIdleTimeoutMs = 1000;
        h.start();
        h.clock.advance(1000);
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb"));
        h.answer();
        QVERIFY(h.client.answered);
        QCOMPARE(h.client.answered->fallbackReason, QStringLiteral("server_error"));
    }

    void aSlowButTalkingStreamIsNeverCut() {
        Harness h({candidate("pa")}, true);
        h.settings.upstreamIdleTimeoutMs = 1000;
        h.settings.deadlineMs = 4000;
        h.start();
        h.frame({ev(EventType::Start), ev(EventType::TextStart), ev(EventType::TextDelta, QStringLiteral("a"))});
        for (int i = 0; i < 60; ++i) {
            h.clock.advance(900);
            h.loop->onActivity(h.id());
            h.frame({ev(EventType::TextDelta, QStringLiteral("b"))});
        }
        QVERIFY(!h.done); // 54 s, past the deadline: a committed answer is never cut for time
        h.frame({ev(EventType::TextEnd), ev(EventType::Done)});
        QVERIFY(h.done);
        QVERIFY(h.client.inBand.isEmpty());
    }

    void budgetFiresAtHalfTheDeadlineOnTheClock() {
        Harness h({candidate("pa"), candidate("pb")}, true);
        h.settings.deadlineMs = 20000;
        h.start();
        h.frame({ev(EventType::Start)}); // not meaningful: the budget stays armed
        h.clock.advance(9999);
        QCOMPARE(h.runner.starts.size(), 1);
        h.clock.advance(1);
        QVERIFY(h.runner.aborts.contains(h.runner.starts.first().id));
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb"));
        QCOMPARE(h.seen.rows.first().logOutcome, QStringLiteral("budget"));
        QCOMPARE(h.seen.rows.first().failure, QStringLiteral("server_error"));
        // The follower's own budget: none, it has no follower. It answers at 19 s.
        h.clock.advance(9000);
        h.answer();
        QVERIFY(h.done && h.client.commits.size() == 1);
    }

    // The loop was held across the attempt budget's end (a paused process, a busy thread) while the
    // candidate's first token arrived in time: on resume the budget ran before the read, and the
    // candidate that had answered was cut and marked, and the fallback answered (probe AB1 F1). What
    // waits unread is read first: a first token among it lifts the budget.
    void aFirstTokenWaitingUnreadAtTheBudgetsEndIsRead_data() {
        QTest::addColumn<bool>("stream");
        QTest::newRow("stream") << true;
        QTest::newRow("json") << false;
    }
    void aFirstTokenWaitingUnreadAtTheBudgetsEndIsRead() {
        QFETCH(bool, stream);
        Harness h({candidate("pa"), candidate("pb")}, stream);
        h.settings.deadlineMs = 20000;
        h.start();
        h.loop->onResponseHead(h.id(), 200, false);
        h.runner.unread = true;
        h.clock.advance(10000); // the budget's end, the loop running again only now
        QCOMPARE(h.runner.starts.size(), 1);
        QVERIFY(h.runner.aborts.isEmpty());
        h.runner.unread = false;
        h.frame({ev(EventType::Start), ev(EventType::TextStart), ev(EventType::TextDelta, QStringLiteral("Hello"))});
        h.clock.advance(AttemptLoop::kBudgetUnreadGraceMs);
        QCOMPARE(h.runner.starts.size(), 1);
        QVERIFY(h.runner.aborts.isEmpty());
        h.frame({ev(EventType::TextEnd), ev(EventType::Done)});
        QVERIFY(h.done);
        QCOMPARE(h.outcomes(), QStringList{"pa:committed"});
        QCOMPARE(stream ? h.client.commits.first().candidate : h.client.answered->candidate, candidate("pa").name());
        QVERIFY(h.marks.active().isEmpty());
        QVERIFY(h.seen.failures.isEmpty());
    }

    // What waited unread held no first token (pings, a role chunk): the budget cuts the try at the
    // grace's end, as it would have at its own.
    void noFirstTokenWaitingUnreadAtTheBudgetsEndIsCutAfterTheGrace() {
        Harness h({candidate("pa"), candidate("pb")}, true);
        h.settings.deadlineMs = 20000;
        h.start();
        const AttemptId first = h.id();
        h.loop->onResponseHead(first, 200, false);
        h.runner.unread = true;
        h.clock.advance(10000);
        h.frame({ev(EventType::Start)}); // not meaningful
        h.clock.advance(AttemptLoop::kBudgetUnreadGraceMs - 1);
        QCOMPARE(h.runner.starts.size(), 1);
        h.clock.advance(1);
        QVERIFY(h.runner.aborts.contains(first));
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb"));
        QCOMPARE(h.seen.rows.first().logOutcome, QStringLiteral("budget"));
        QCOMPARE(h.seen.rows.first().failure, QStringLiteral("server_error"));
        h.answer();
        QVERIFY(h.done);
        QCOMPARE(h.clock.pendingTimers(), 0);
    }

    void stallAfter200HitsBudget() {
        // Moved from the real-clock integration test: a 200 and then nothing, with a follower.
        Harness h({candidate("pa"), candidate("pb")}, false);
        h.settings.deadlineMs = 1200;
        h.start();
        h.loop->onResponseHead(h.id(), 200, false);
        h.clock.advance(600);
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb"));
        h.answer();
        QCOMPARE(h.client.answered->candidate, candidate("pb").name());
        QCOMPARE(h.client.answered->fallbackReason, QStringLiteral("server_error"));
        QCOMPARE(h.marks.active().first().kind, FailureKind::ServerError);
    }

    void providerRetryingA503IsCutByBudget() {
        // Moved from the real-clock integration test: budget 1.2 s; retries back off 0.5 s, 1 s, ...
        Harness h({candidate("pa"), candidate("pb")}, false);
        h.settings.deadlineMs = 2400;
        h.resolution.chain[0].provider.retriesBeforeFailover = 5;
        h.start();
        h.httpError(503);
        h.clock.advance(500);
        QCOMPARE(h.runner.starts.size(), 2); // it did retry pa first
        h.httpError(503);
        h.clock.advance(700); // 1.2 s: the budget, inside the 1 s backoff
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb"));
        QCOMPARE(h.seen.failures.size(), 1); // one server_error for pa, not one per try
        QCOMPARE(h.seen.failures[0].second, FailureKind::ServerError);
        h.answer();
        QCOMPARE(h.client.answered->candidate, candidate("pb").name());
    }

    void meaningfulEventLiftsTheBudget() {
        Harness h({candidate("pa"), candidate("pb")}, true);
        h.settings.deadlineMs = 20000;
        h.start();
        h.frame({ev(EventType::Start), ev(EventType::TextStart), ev(EventType::TextDelta, QStringLiteral("x"))});
        h.clock.advance(15000);
        QCOMPARE(h.runner.starts.size(), 1);
        QVERIFY(!h.done);
    }

    void anInBandErrorReportedAtTheEndIsNotACut_data() {
        QTest::addColumn<bool>("stream");
        QTest::newRow("stream") << true;
        QTest::newRow("json") << false;
    }
    void anInBandErrorReportedAtTheEndIsNotACut() {
        // Responses sends `error` and then (usually) response.failed; its decoder holds the error
        // for it and, when the body ends first, reports it with the end. That error is the
        // upstream's own (server_error: this model), not the connection cutting the body short
        // (transport: the whole host), which an untyped error at the end still is.
        QFETCH(bool, stream);
        for (const bool typed : {true, false}) {
            Harness h({candidate("pa"), candidate("pb")}, stream);
            h.start();
            h.loop->onResponseHead(h.id(), 200, false);
            StreamEvent e = ev(EventType::Error);
            e.errorMessage =
                typed ? QStringLiteral("OpenAI Responses stream error (server_error): The server had an error")
                      : QStringLiteral("stream ended before completion");
            if (typed) {
                e.errorType = QStringLiteral("server_error");
                e.errorStatus = 500;
            }
            h.frame({ev(EventType::Start), e}, true);
            QCOMPARE(h.seen.rows.first().failure, typed ? QStringLiteral("server_error") : QStringLiteral("transport"));
            QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb"));
        }
    }

    void anErrorBodyThatNeverEndsIsCutAfterItsWindow() {
        // A 503 head, then a body that trickles without end: the status already decides the
        // failover, so the follower starts kErrorBodyWindowMs after the head, not at the idle
        // timeout or the attempt budget.
        Harness h({candidate("pa"), candidate("pb")}, true);
        h.start();
        const AttemptId first = h.id();
        h.loop->onResponseHead(first, 503, true);
        for (int i = 0; i < 9; ++i) { // a byte every 111 ms: never idle
            h.clock.advance(111);
            h.loop->onActivity(first);
        }
        QVERIFY(h.runner.errorBodyEnds.isEmpty());
        h.clock.advance(AttemptLoop::kErrorBodyWindowMs - 9 * 111);
        QCOMPARE(h.runner.errorBodyEnds, QList<AttemptId>{first});
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb"));
        // A body that ends in time cancels the window; a 2xx head never opens one.
        h.answer();
        h.clock.advance(5000);
        QCOMPARE(h.runner.errorBodyEnds.size(), 1);
        QVERIFY(h.done);
        QCOMPARE(h.outcomes(), (QStringList{"pa:retrying", "pb:committed"}));
    }

    // A 503 whose upstream said x-should-retry: false (a gateway or proxy that already retried): the
    // lone candidate was asked twice more, each Retry-After slept, and the client's SDK was left to
    // retry it again (probe AB1 F2). It is asked once and the client is told the failure is final; a
    // follower is still asked, at once, past the provider's retriesBeforeFailover.
    void anUpstreamsFinalFailureIsNotRetried_data() {
        QTest::addColumn<bool>("follower");
        QTest::newRow("lone") << false;
        QTest::newRow("with a follower") << true;
    }
    void anUpstreamsFinalFailureIsNotRetried() {
        QFETCH(bool, follower);
        QList<Candidate> chain{candidate("pa")};
        if (follower)
            chain.append(candidate("pb"));
        Harness h(chain, false);
        h.resolution.chain[0].provider.maxRetries = 2;
        h.resolution.chain[0].provider.retriesBeforeFailover = 2;
        h.start();
        h.loop->onResponseHead(h.id(), 503, true);
        TryFailure f;
        f.fromHeaders = true;
        f.input.status = 503;
        f.input.message = QStringLiteral("upstream overloaded, retries exhausted");
        f.input.retryAfterMs = 3000;
        model::GatewayError said = model::GatewayError::make(503, model::ErrorCategory::Overloaded, {});
        said.upstreamApi = QStringLiteral("openai-completions");
        said.code = QStringLiteral("server_error");
        said.shouldRetry = false;
        f.upstreamError = said;
        h.loop->onFailure(h.id(), f);
        h.clock.advance(10000);
        QVERIFY(h.seen.notes.filter(QStringLiteral("provider retry")).isEmpty());
        if (follower) {
            QCOMPARE(h.runner.starts.size(), 2);
            QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb"));
            return;
        }
        QCOMPARE(h.runner.starts.size(), 1);
        QVERIFY(h.done);
        QCOMPARE(h.client.failed->status, 503);
        QCOMPARE(h.client.failed->retryAfterMs, std::optional<qint64>(3000));
        QCOMPARE(h.client.failed->shouldRetry, std::optional<bool>(false));
    }

    // A Switchman further on (a team gateway) opens its stream before its own upstreams answer, so its
    // final failure comes in band, with "should_retry": false in place of the header. Retried, its
    // whole failing walk ran three times: 16 upstream calls for 4 (probe AB1 F2).
    void anUpstreamsFinalFailureInBandIsNotRetried() {
        for (const bool saidFinal : {true, false}) {
            Harness h({candidate("pa")}, true);
            h.resolution.chain[0].provider.maxRetries = 2;
            h.start();
            // Each try the team gateway answers the same way.
            for (qsizetype answered = 0; answered < h.runner.starts.size() && !h.done; ++answered) {
                h.loop->onResponseHead(h.id(), 200, false);
                StreamEvent e = ev(EventType::Error);
                e.errorMessage = QStringLiteral("OpenAI stream error (server_error): every candidate is down");
                e.errorType = QStringLiteral("server_error");
                e.errorStatus = 503;
                e.errorFinal = saidFinal;
                h.frame({ev(EventType::Start), e});
                h.clock.advance(10000);
            }
            QCOMPARE(h.runner.starts.size(), saidFinal ? 1 : 3);
            QVERIFY(h.done);
            if (saidFinal) // and the client in front is told so in turn
                QCOMPARE(h.client.failed->shouldRetry, std::optional<bool>(false));
        }
    }

    void budgetCutsTheProviderRetryBackoff() {
        Harness h({candidate("pa"), candidate("pb")}, false);
        h.settings.deadlineMs = 20000;
        h.resolution.chain[0].provider.retriesBeforeFailover = 3;
        h.start();
        TryFailure f;
        f.fromHeaders = true;
        f.input.status = 503;
        f.input.message = QStringLiteral("overloaded");
        f.input.retryAfterMs = 9000; // waits past the budget
        h.loop->onResponseHead(h.id(), 503, true);
        h.loop->onFailure(h.id(), f);
        QCOMPARE(h.runner.starts.size(), 1);
        h.clock.advance(10000);
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb"));
        QCOMPARE(h.seen.rows.first().logOutcome, QStringLiteral("budget"));
    }

    // A relayed frame whose write finds the client gone ends the request there: nothing of the
    // frame's events is written after it, and the aborted try is not paused or resumed.
    void aWriteThatFindsTheClientGoneEndsTheRelayThere() {
        Harness h({candidate("pa"), candidate("pb")}, true);
        h.runner.passthrough = true;
        h.start();
        h.loop->onResponseHead(h.id(), 200, false);
        TryFrame first;
        first.events = {ev(EventType::Start), ev(EventType::TextStart), ev(EventType::TextDelta, QStringLiteral("Hi"))};
        first.raw = QByteArray("data: hi\n\n");
        h.loop->onFrame(h.id(), first);
        QCOMPARE(h.client.commits.size(), 1);
        h.client.afterFrame = [&h]() { h.loop->onClientGone(); };
        h.client.pending = 4 * 1024 * 1024; // a full queue: backpressure would pause the try
        TryFrame broken;
        StreamEvent error = ev(EventType::Error);
        error.errorMessage = QStringLiteral("finish_reason error");
        broken.events = {error};
        broken.raw = QByteArray("data: {\"choices\":[{\"finish_reason\":\"error\"}]}\n\n");
        broken.rawHidesError = true; // the gateway's error would follow the frame
        h.loop->onFrame(h.id(), broken);
        QVERIFY(h.done);
        QVERIFY(h.client.inBand.isEmpty()); // no write to a client that is gone
        QVERIFY(h.runner.paused.isEmpty());
        for (const auto &row : h.seen.rows) // the client left: no row blames the provider for a cut
            QVERIFY(row.logOutcome != QStringLiteral("after_commit") || row.outcome == AttemptOutcome::Aborted);
        TryFrame later; // a frame with no events after the end is ignored
        later.raw = QByteArray("data: more\n\n");
        h.loop->onFrame(h.id(), later);
        QCOMPARE(h.client.frames.size(), 2);
    }

    void deadlineDuringSetupOnTheClock() {
        Harness h({candidate("pa"), candidate("pb")}, false);
        h.settings.deadlineMs = 5000;
        h.runner.setupHangs.insert(QStringLiteral("pa"));
        h.start();
        h.clock.advance(5000);
        QVERIFY(h.done);
        QCOMPARE(h.client.failed->status, 502);
        // Told as any failure at the deadline: the candidate that could not be set up, and why.
        QCOMPARE(h.client.failed->message,
                 QStringLiteral("could not set up pa/m-pa: credential setup still running at the request deadline"));
        QCOMPARE(h.seen.rows.size(), 1);
        QCOMPARE(h.seen.rows.first().failure, QStringLiteral("setup_error"));
        QCOMPARE(h.seen.rows.first().logOutcome, QStringLiteral("deadline"));
        QVERIFY(h.marks.active().isEmpty());
        QCOMPARE(h.runner.starts.size(), 1);
    }

    void noProviderRetryStartsAtOrAfterTheDeadline() {
        Harness h({candidate("pa")}, false);
        h.settings.deadlineMs = 60000;
        h.resolution.chain[0].provider.maxRetries = 2;
        h.start();
        h.clock.advance(59000);
        h.httpError(503, QStringLiteral("busy"));
        QVERIFY(!h.done); // a 500 ms backoff still starts before the deadline
        h.clock.advance(500);
        QCOMPARE(h.runner.starts.size(), 2);
        h.clock.advance(300);
        h.httpError(503, QStringLiteral("busy again")); // 1 s of backoff would end past it
        QVERIFY(h.done);
        QCOMPARE(h.client.failed->status, 503);
        QVERIFY(h.client.failed->message.contains(QStringLiteral("busy again")));
        QCOMPARE(h.runner.starts.size(), 2);
    }

    void keepaliveCadenceWhileHeldAndInTheAnswersSilences() {
        Harness h({candidate("pa")}, true);
        h.start();
        h.clock.advance(44999);
        QCOMPARE(h.client.keepalives, 2);
        h.clock.advance(1);
        QCOMPARE(h.client.keepalives, 3);
        h.frame({ev(EventType::Start), ev(EventType::TextStart), ev(EventType::TextDelta, QStringLiteral("x"))});
        // Committed: an answer that keeps writing gets none between its frames.
        for (int i = 0; i < 6; ++i) {
            h.clock.advance(10000);
            h.loop->onActivity(h.id());
            h.frame({ev(EventType::TextDelta, QStringLiteral("y"))});
        }
        QCOMPARE(h.client.keepalives, 3);
        // An upstream that only pings, or thinks where the client does not see it (events that write
        // nothing), for 75 s: the client hears a keepalive once a whole 15 s passed without a write
        // (probe W2 F1).
        for (int i = 0; i < 15; ++i) {
            h.clock.advance(5000);
            h.loop->onActivity(h.id());
            if (i % 3 == 0)
                h.loop->onFrame(h.id(), TryFrame{}); // a frame the client's format does not carry
        }
        QCOMPARE(h.client.keepalives, 7);
        // None to a client that is not reading what it was sent.
        h.client.pending = 4096;
        h.clock.advance(45000);
        QCOMPARE(h.client.keepalives, 7);
        h.client.pending = 0;
        h.clock.advance(15000);
        QCOMPARE(h.client.keepalives, 8);
    }

    void theFirstContentIsSentAtOnce_data() {
        QTest::addColumn<bool>("passthrough");
        QTest::newRow("through the encoder") << false;
        QTest::newRow("passthrough frames") << true;
    }
    void theFirstContentIsSentAtOnce() {
        // Once, at commit, after the held start and the first delta are written: later frames of
        // the same upstream read wait for its end, as before.
        QFETCH(bool, passthrough);
        Harness h({candidate("pa")}, true);
        h.runner.passthrough = passthrough;
        h.start();
        const auto feed = [&h](QList<StreamEvent> events, const QByteArray &raw) {
            TryFrame f;
            f.events = std::move(events);
            f.frameBytes = 32;
            f.raw = raw;
            h.loop->onFrame(h.id(), f);
        };
        feed({ev(EventType::Start), ev(EventType::TextStart)}, "event: a\ndata: {}\n\n");
        QVERIFY(h.client.sentNowAfter.isEmpty()); // held: nothing to send
        feed({ev(EventType::TextDelta, QStringLiteral("Hel")), ev(EventType::TextDelta, QStringLiteral("lo"))},
             "event: b\ndata: {}\n\n");
        // Encoder: start, text start, "Hel" (then "lo"); passthrough: the two frames.
        QCOMPARE(h.client.sentNowAfter, QList<qsizetype>{passthrough ? 2 : 3});
        StreamEvent d = ev(EventType::Done);
        feed({ev(EventType::TextEnd), d}, "event: c\ndata: {}\n\n");
        QVERIFY(h.done);
        QCOMPARE(h.client.sentNowAfter.size(), 1);
    }

    void aJsonAnswerIsNeverSentEarly() {
        Harness h({candidate("pa")}, false);
        h.start();
        h.answer();
        QVERIFY(h.client.answered);
        QVERIFY(h.client.sentNowAfter.isEmpty());
    }

    void jsonRequestsGetNoKeepalive() {
        Harness h({candidate("pa")}, false);
        h.start();
        h.clock.advance(60000);
        QCOMPARE(h.client.keepalives, 0);
        QVERIFY(!h.client.open);
    }

    void rotationTriesTheNextCredentialWithinTheAttempt() {
        Harness h({candidate("pa"), candidate("pb")}, false);
        h.runner.credentialsLeft = 1;
        h.start();
        h.httpError(401, QStringLiteral("invalid x-api-key"));
        QCOMPARE(h.runner.starts.size(), 2);
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pa"));
        QVERIFY(h.runner.starts.last().nextCredential);
        QCOMPARE(h.runner.starts.last().id, h.runner.starts.first().id); // the same attempt
        QVERIFY(h.seen.notes.contains(QStringLiteral("credential rotated")));
        h.httpError(401, QStringLiteral("invalid x-api-key"));
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb")); // the pool is spent: fail over
        h.answer();
        QCOMPARE(h.client.answered->attempts, 2);
        QCOMPARE(h.client.answered->fallbackReason, QStringLiteral("credential_exhausted"));
    }

    void aHistoryRefusalRetriesTheSameCandidateWithTheHistoryMendedOnce_data() {
        QTest::addColumn<QString>("refusal");
        QTest::addColumn<bool>("reasoningBack"); // the mend: reasoning_content back, or no signed reasoning
        QTest::addColumn<QString>("note");
        // A turn answered by another provider of the same API after a failover carries that
        // provider's signature; the primary refuses it with a 400 that would end every later
        // request of the conversation: the same candidate again, without signed reasoning.
        QTest::newRow("signature refused") << QStringLiteral("invalid_request_error: messages.1.content.0: Invalid "
                                                             "`signature` in `thinking` block")
                                           << false << QStringLiteral("replayed reasoning refused");
        // DeepSeek's thinking mode refuses a tool-call turn without its reasoning_content, which the
        // gateway sends to no Chat server unasked (most refuse the field): the same candidate again,
        // with it.
        QTest::newRow("reasoning asked back") << QStringLiteral("invalid_request_error: Missing `reasoning_content` "
                                                                "field in the assistant message at message index 1")
                                              << true << QStringLiteral("reasoning asked back");
    }
    void aHistoryRefusalRetriesTheSameCandidateWithTheHistoryMendedOnce() {
        // Once only: a second refusal reaches the client. Not an outage: no mark, no failure counted.
        QFETCH(QString, refusal);
        QFETCH(bool, reasoningBack);
        QFETCH(QString, note);
        const auto mended = [reasoningBack](const TryStart &s) {
            return reasoningBack ? s.withReasoningBack : s.withoutReplayedReasoning;
        };
        Harness h({candidate("pa"), candidate("pb")}, true);
        h.start();
        QVERIFY(!mended(h.runner.starts.last()));
        h.httpError(400, refusal);
        QCOMPARE(h.runner.starts.size(), 2);
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pa"));
        QCOMPARE(h.runner.starts.last().id, h.runner.starts.first().id); // the same attempt
        QVERIFY(mended(h.runner.starts.last()));
        QCOMPARE(h.runner.starts.last().withReasoningBack, reasoningBack); // only the mend asked for
        QCOMPARE(h.runner.starts.last().withoutReplayedReasoning, !reasoningBack);
        QVERIFY(h.seen.notes.contains(note));
        h.answer();
        QCOMPARE(h.client.commits.size(), 1);
        QCOMPARE(h.client.commits.first().attempts, 1);
        QVERIFY(h.marks.active().isEmpty());
        QVERIFY(h.seen.failures.isEmpty());

        Harness twice({candidate("pa"), candidate("pb")}, false);
        twice.start();
        twice.httpError(400, refusal);
        twice.httpError(400, refusal);
        QCOMPARE(twice.runner.starts.size(), 2); // no third try, no failover on a 400
        QVERIFY(twice.client.failed);
        QCOMPARE(twice.client.failed->status, 400);
        QVERIFY(twice.marks.active().isEmpty());
    }

    void anyOtherHistoryRefusalStops() {
        // Any other 400 stops as before.
        Harness other({candidate("pa"), candidate("pb")}, false);
        other.start();
        other.httpError(400, QStringLiteral("invalid_request_error: prompt is too long"));
        QCOMPARE(other.runner.starts.size(), 1);
        QCOMPARE(other.client.failed->status, 400);
    }

    void aRefusedOutputCapRetriesTheSameCandidateWithItsMaximumOnce() {
        // A fallback model that writes fewer tokens than the client asked of the first refuses the
        // request with a 400 naming its maximum: the same candidate once more with that maximum,
        // rather than a 400 that ends the chain. No mark, no failure counted; a second refusal
        // reaches the client.
        const QString refusal = QStringLiteral("invalid_request_error: max_tokens: 64000 > 8192, which is the maximum "
                                               "allowed number of output tokens for claude-3-5-haiku-20241022");
        Harness h({candidate("pa"), candidate("pb")}, true);
        h.parsed.options.maxTokens = 64000;
        h.start();
        QVERIFY(!h.runner.starts.last().outputCap);
        h.httpError(400, refusal);
        QCOMPARE(h.runner.starts.size(), 2);
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pa"));
        QCOMPARE(h.runner.starts.last().id, h.runner.starts.first().id); // the same attempt
        QCOMPARE(h.runner.starts.last().outputCap, 8192);
        QVERIFY(h.seen.notes.contains(QStringLiteral("output cap lowered")));
        h.answer();
        QCOMPARE(h.client.commits.size(), 1);
        QVERIFY(h.marks.active().isEmpty());
        QVERIFY(h.seen.failures.isEmpty());

        Harness twice({candidate("pa"), candidate("pb")}, false);
        twice.parsed.options.maxTokens = 64000;
        twice.start();
        twice.httpError(400, refusal);
        twice.httpError(400, refusal);
        QCOMPARE(twice.runner.starts.size(), 2); // no third try, no failover on a 400
        QCOMPARE(twice.client.failed->status, 400);

        // A maximum no lower than what went (the model's configured maxTokens already under it):
        // the same request would be refused the same way, so the 400 stops as any other.
        Candidate capped = candidate("pa");
        capped.model.maxTokens = 4096;
        Harness same({capped, candidate("pb")}, false);
        same.parsed.options.maxTokens = 64000;
        same.start();
        same.httpError(400, refusal);
        QCOMPARE(same.runner.starts.size(), 1);
        QCOMPARE(same.client.failed->status, 400);
    }

    void singleCandidateIgnoresItsMark() {
        // A direct selector or a one-candidate route is tried even when marked: deferring it
        // would give the same answer later. Fails if the loop consulted the mark to skip it.
        Harness h({candidate("pa")}, false, true);
        h.marks.mark(QStringLiteral("t"), candidate("pa").ref(),
                     UpstreamFailure{FailureKind::ServerError, 503, std::nullopt, QStringLiteral("old")});
        h.start();
        QCOMPARE(h.runner.starts.size(), 1);
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pa"));
        h.answer();
        QVERIFY(h.client.answered);
    }

    void markedCandidateIsDeferredBehindAnUnmarkedOne() {
        Harness h({candidate("pa"), candidate("pb")}, false);
        h.resolution.chain[1].provider.maxRetries = 0; // no retries of its own before the marked one
        h.marks.mark(QStringLiteral("t"), candidate("pa").ref(),
                     UpstreamFailure{FailureKind::ServerError, 503, std::nullopt, QStringLiteral("old")});
        h.start();
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb"));
        h.httpError(503);
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pa")); // marked, but all that is left
        h.httpError(503);
        QVERIFY(h.client.failed->retryAfterMs); // every candidate marked: Retry-After
    }

    void aMarkedFollowerArmsNoBudget() {
        // Probe Q2 F2: pa is down and marked, pb (asked first) is healthy but slow. pa still
        // follows pb as the last resort, but it is no follower to cut pb for: pb is not cut at half
        // the deadline, not marked, and answers; pa is never asked.
        Harness h({candidate("pa"), candidate("pb")}, false);
        h.settings.deadlineMs = 20000;
        h.marks.mark(QStringLiteral("t"), candidate("pa").ref(),
                     UpstreamFailure{FailureKind::ServerError, 503, std::nullopt, QStringLiteral("old")});
        h.start();
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb"));
        h.frame({ev(EventType::Start)});
        h.clock.advance(15000); // past the 10 s a budget would have given
        QCOMPARE(h.runner.starts.size(), 1);
        QVERIFY(h.runner.aborts.isEmpty());
        h.answer();
        QVERIFY(h.done);
        QCOMPARE(h.client.answered->candidate, candidate("pb").name());
        QCOMPARE(h.marks.active().size(), 1); // pa's alone
        QCOMPARE(h.marks.active().first().provider, QStringLiteral("pa"));
    }

    void aStallBeforeAMarkedFollowerIsCutAtTheDeadlineAndTheFollowerAsked() {
        // Probe U1 F1: with the only follower held down, a stalled pb armed no budget and held the
        // request to the idle limit, past the deadline, so the follower was never asked. pb now has
        // the whole deadline (not half: the test above), is cut there and marked, and pa is asked as
        // the last resort, once.
        Harness h({candidate("pa"), candidate("pb"), candidate("pc")}, false);
        h.settings.deadlineMs = 10000; // inside the marks' 20 s
        h.settings.upstreamIdleTimeoutMs = 300000;
        for (const char *down : {"pa", "pc"})
            h.marks.mark(QStringLiteral("t"), candidate(down).ref(),
                         UpstreamFailure{FailureKind::ServerError, 503, std::nullopt, QStringLiteral("old")});
        h.start();
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb"));
        h.frame({ev(EventType::Start)}); // a head and a start, then silence
        h.clock.advance(9999);
        QCOMPARE(h.runner.starts.size(), 1);
        h.clock.advance(1);
        QCOMPARE(h.runner.starts.size(), 2);
        QVERIFY(!h.runner.aborts.isEmpty());
        QVERIFY2(!h.done, h.client.failed ? qPrintable(h.client.failed->message) : "answered");
        const QString lastResort = h.runner.lastProvider();
        QVERIFY2(lastResort == QStringLiteral("pa") || lastResort == QStringLiteral("pc"), qPrintable(lastResort));
        bool pbMarked = false;
        for (const auto &m : h.marks.active())
            pbMarked |= m.provider == QStringLiteral("pb");
        QVERIFY(pbMarked);      // the stall, by the gateway's own deadline
        h.clock.advance(60000); // the last resort is not cut (past the deadline, nothing after it)
        QCOMPARE(h.runner.starts.size(), 2);
        h.answer();
        QVERIFY(h.done);
        QCOMPARE(h.client.answered->candidate, candidate(lastResort).name());
    }

    void aMarkedFollowerLeavesTheAttemptItsRetries() {
        // Probe Q2 F2 (c): pb's one-off 503 is retried as without a follower (maxRetries), not
        // failed over to the marked pa, whose error the client would get.
        Harness h({candidate("pa"), candidate("pb")}, false);
        h.resolution.chain[1].provider.maxRetries = 1;
        h.marks.mark(QStringLiteral("t"), candidate("pa").ref(),
                     UpstreamFailure{FailureKind::ServerError, 503, std::nullopt, QStringLiteral("old")});
        h.start();
        h.httpError(503);
        QVERIFY(!h.done);
        QCOMPARE(h.seen.notes, QStringList{"provider retry"});
        h.clock.advance(1000);
        QCOMPARE(h.runner.starts.size(), 2);
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb"));
        h.answer();
        QCOMPARE(h.client.answered->candidate, candidate("pb").name());
        // An unmarked follower still takes over at once (control).
        Harness c({candidate("pa"), candidate("pb")}, false);
        c.start();
        c.httpError(503);
        QCOMPARE(c.runner.lastProvider(), QStringLiteral("pb"));
    }

    void aLoneCandidates503KeepsItsRetryAfter() {
        // Probe Q2 F4: a 503's own Retry-After reached the client as a 429's did not: an SDK then
        // retried at once into the window the provider asked to be left alone for.
        Harness h({candidate("pa")}, false, true);
        h.settings.maxRetryDelayMs = 5000;
        h.start();
        TryFailure f;
        f.fromHeaders = true;
        f.input.status = 503;
        f.input.message = QStringLiteral("down for maintenance");
        f.input.retryAfterMs = 30000; // past maxRetryDelayMs: no retry here
        h.loop->onResponseHead(h.id(), 503, true);
        h.loop->onFailure(h.id(), f);
        QVERIFY(h.done);
        QCOMPARE(h.client.failed->status, 503);
        QCOMPARE(h.client.failed->retryAfterMs, std::optional<qint64>(30000));
    }

    void retryAfterWeighsOnlyTheCandidatesTheRequestCanUse() {
        // Probe Q2 F1: every candidate the tenant can use is marked, and the route also lists one it
        // never can (here: no credential). That one has no mark and said there was no Retry-After.
        Harness h({candidate("pa"), candidate("pb"), candidate("pc")}, false);
        h.runner.noCredential.insert(QStringLiteral("pc"));
        for (const char *p : {"pa", "pb"})
            h.marks.mark(QStringLiteral("t"), candidate(p).ref(),
                         UpstreamFailure{FailureKind::ServerError, 503, std::nullopt, QStringLiteral("old")});
        h.clock.advance(3000);
        h.marks.mark(QStringLiteral("t"), candidate("pb").ref(),
                     UpstreamFailure{FailureKind::ServerError, 503, std::nullopt, QStringLiteral("older")});
        h.resolution.chain[0].provider.maxRetries = 0;
        h.resolution.chain[1].provider.maxRetries = 0;
        h.start();
        h.httpError(503);
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb"));
        h.httpError(503);
        QVERIFY(h.done);
        QVERIFY(h.client.failed->retryAfterMs);
        QVERIFY(*h.client.failed->retryAfterMs > 0);
    }

    void setupFailureFailsOverWithoutAMark() {
        Harness h({candidate("pa"), candidate("pb")}, false);
        h.runner.setupFails.insert(QStringLiteral("pa"));
        h.start();
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb"));
        QCOMPARE(h.seen.rows.first().failure, QStringLiteral("setup_error"));
        QVERIFY(h.marks.active().isEmpty());
    }

    void holdOverItsByteLimitFailsOverAsServerError() {
        Harness h({candidate("pa"), candidate("pb")}, true);
        h.settings.maxHoldBytes = 100;
        h.start();
        for (int i = 0; i < 4; ++i)
            h.frame({ev(EventType::TextStart)});
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb"));
        QCOMPARE(h.seen.rows.first().failure, QStringLiteral("server_error"));
    }

    void tinyRawFramesAreHeldAtWhatTheyCost() {
        // Probe Q3 F1: a same-API upstream sending `data: ` frames (no event, never a token) before
        // any content. Each held frame is a buffer of its own; counted by its 8 bytes alone, the 8 MiB
        // bound let 57 MiB a request be held. With each frame's keeping cost, the bound is met at
        // about as many bytes of memory as it names.
        Harness h({candidate("pa"), candidate("pb")}, true);
        h.runner.passthrough = true;
        h.settings.maxHoldBytes = 100 * TryFrame::kHeldFrameOverhead;
        h.start();
        h.frame({ev(EventType::Start)});
        int sent = 0;
        while (h.runner.lastProvider() == QStringLiteral("pa") && sent < 1000) {
            TryFrame f;
            f.raw = QByteArray("data: \n\n");
            h.loop->onFrame(h.id(), f);
            ++sent;
        }
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb"));
        QVERIFY2(sent <= 100, qPrintable(QString::number(sent))); // 800 when the bytes alone counted
        QVERIFY(h.seen.rows.first().message.contains(QStringLiteral("maxHoldBytes")));
    }

    void framesTheDecoderKeepsAreHeld_data() {
        QTest::addColumn<bool>("passthrough");
        QTest::newRow("canonical") << false;
        QTest::newRow("passthrough") << true;
    }
    void framesTheDecoderKeepsAreHeld() {
        // Probe X2 F4: signature deltas decode to no event, and a Chat client's stream holds no raw
        // frame of them, but the decoder keeps them for their block's End. They count against the
        // hold's bound all the same; a same-API client's raw frame counts them once, not twice.
        QFETCH(bool, passthrough);
        Harness h({candidate("pa"), candidate("pb")}, true);
        h.runner.passthrough = passthrough;
        h.settings.maxHoldBytes = 10 * 1000 + 10 * TryFrame::kHeldFrameOverhead;
        h.start();
        h.frame({ev(EventType::Start)});
        int sent = 0;
        while (h.runner.lastProvider() == QStringLiteral("pa") && sent < 100) {
            TryFrame f;
            f.keptByDecoder = true;
            f.frameBytes = 1000;
            if (passthrough)
                f.raw = QByteArray(1000 - TryFrame::kHeldFrameOverhead, 's');
            h.loop->onFrame(h.id(), f);
            ++sent;
        }
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb"));
        QCOMPARE(sent, 11);
        QVERIFY(h.seen.rows.first().message.contains(QStringLiteral("over limits.maxHoldBytes")));
    }

    void earlyEndOfBodyIsTransport() {
        // The decoder's "ended before completion" at end of body: the connection closed early.
        Harness h({candidate("pa"), candidate("pb")}, false);
        h.start();
        StreamEvent e = ev(EventType::Error);
        e.errorMessage = QStringLiteral("stream ended before completion");
        h.frame({ev(EventType::Start)});
        h.frame({e}, true);
        QCOMPARE(h.seen.rows.first().failure, QStringLiteral("transport"));
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pb"));
    }

    void backpressurePausesTheCommittedTry() {
        Harness h({candidate("pa")}, true);
        h.start();
        h.client.pending = 2 * 1024 * 1024;
        h.frame({ev(EventType::Start), ev(EventType::TextStart), ev(EventType::TextDelta, QStringLiteral("x"))});
        QCOMPARE(h.runner.paused.size(), 1);
        QVERIFY(h.runner.paused[0].second);
        h.client.pending = 0;
        h.loop->onClientDrained();
        QCOMPARE(h.runner.paused.size(), 2);
        QVERIFY(!h.runner.paused[1].second);
    }

    void incompatibleCandidateIsSkippedLikeAPrecheck() {
        // previous_response_id on /v1/responses: a chat-completions upstream is
        // skipped (a row with the reason), the Responses one answers.
        Harness h({candidate("pb", QStringLiteral("openai-completions")),
                   candidate("pd", QStringLiteral("openai-responses"))},
                  false);
        h.parsed.sourceApi = wire::Api::OpenAIResponses;
        h.parsed.json = wire::parseClientBody(R"({"previous_response_id":"resp_earlier"})");
        h.start();
        QCOMPARE(h.runner.starts.size(), 1);
        QCOMPARE(h.runner.lastProvider(), QStringLiteral("pd"));
        QCOMPARE(h.outcomes().first(), QStringLiteral("pb:skipped"));
        QVERIFY(h.seen.rows.first().message.contains(QStringLiteral("previous_response_id")));
        h.answer();
        QVERIFY(h.client.answered);
    }

    void aFollowerThatCannotServeTheRequestArmsNoBudget() {
        // SPEC 5: the budget only when a follower exists. One this request's content would skip
        // (a field its API cannot carry) is none: the slow first candidate is not cut at half the
        // deadline, not marked, and answers.
        Harness h({candidate("pd", QStringLiteral("openai-responses")),
                   candidate("pb", QStringLiteral("openai-completions"))},
                  true);
        h.settings.deadlineMs = 30000;
        h.parsed.sourceApi = wire::Api::OpenAIResponses;
        h.parsed.json = wire::parseClientBody(R"({"previous_response_id":"resp_earlier"})");
        h.start();
        h.frame({ev(EventType::Start)});
        h.clock.advance(20000); // past the 15 s a budget would have given
        QCOMPARE(h.runner.starts.size(), 1);
        QVERIFY(h.runner.aborts.isEmpty());
        QVERIFY(h.marks.active().isEmpty());
        h.frame({ev(EventType::TextStart), ev(EventType::TextDelta, QStringLiteral("late but whole")),
                 ev(EventType::TextEnd), ev(EventType::Done)});
        QVERIFY(h.done);
        QCOMPARE(h.client.commits.size(), 1);
        QVERIFY(h.client.inBand.isEmpty());
    }

    void anOutageNoFallbackCouldTakeSaysWhy() {
        // The only candidate that can carry previous_response_id is down: the client gets its
        // 503, and the words say why no fallback hid it (it said nothing of the second candidate).
        Harness h({candidate("pd", QStringLiteral("openai-responses")),
                   candidate("pb", QStringLiteral("openai-completions"))},
                  true);
        h.parsed.sourceApi = wire::Api::OpenAIResponses;
        h.parsed.json = wire::parseClientBody(R"({"previous_response_id":"resp_earlier"})");
        h.start();
        h.httpError(503, QStringLiteral("overloaded"));
        QVERIFY(h.done);
        QCOMPARE(h.runner.starts.size(), 1);
        QCOMPARE(h.client.failed->status, 503);
        QVERIFY2(h.client.failed->message.contains(QStringLiteral("no fallback could take this request (pb/")) &&
                     h.client.failed->message.contains(QStringLiteral("previous_response_id")),
                 qPrintable(h.client.failed->message));
    }

    void noCompatibleCandidateLeftIsA400NamingTheField() {
        Harness h({candidate("pb", QStringLiteral("openai-completions"))}, false);
        h.parsed.sourceApi = wire::Api::OpenAIResponses;
        h.parsed.json = wire::parseClientBody(R"({"previous_response_id":"resp_earlier"})");
        h.start();
        QVERIFY(h.done);
        QVERIFY(h.runner.starts.isEmpty());
        QCOMPARE(h.client.failed->status, 400);
        QVERIFY(h.client.failed->message.contains(QStringLiteral("previous_response_id")));
    }

    void attemptsAreKeptByIdSoALateCallbackIsIgnored() {
        // A try the loop gave up on (budget) may still report; it is not heard.
        Harness h({candidate("pa"), candidate("pb")}, true);
        h.settings.deadlineMs = 20000;
        h.start();
        const AttemptId first = h.id();
        h.clock.advance(10000);
        QVERIFY(h.id() != first);
        TryFrame late;
        late.events = {ev(EventType::Start), ev(EventType::TextStart),
                       ev(EventType::TextDelta, QStringLiteral("late"))};
        h.loop->onFrame(first, late);
        QVERIFY(h.client.commits.isEmpty());
        h.answer();
        QCOMPARE(h.client.commits.size(), 1);
        QCOMPARE(h.client.commits[0].candidate, candidate("pb").name());
    }
};

QTEST_GUILESS_MAIN(TestAttemptLoop)
#include "test_attempt_loop.moc"
