#include "core/failover/attempt_loop.h"

#include "core/failover/attempt_budget.h"
#include "core/failover/candidate_policy.h"
#include "core/failover/failure_decision.h"
#include "core/failover/failure_response.h"
#include "core/failover/provider_down_marks.h"
#include "core/failover/retry_policy.h"
#include "core/util/redaction.h"

namespace sw::failover {

using model::ErrorCategory;
using model::GatewayError;

// One attempt: one candidate, with its in-attempt tries (provider retries, rotated credentials).
struct AttemptLoop::Attempt {
    AttemptId id = 0;
    int no = 0;
    Candidate candidate;
    Phase phase = Phase::Setup;
    TryReady ready;
    int retries = 0;
    int usageRows = 0; // usage rows this attempt wrote: each id must be unique
    qint64 startMs = 0;
    quint64 marksSeq = 0;       // ProviderDownMarks::sequence() when it began: which strikes it knew
    qint64 tryStartMs = 0;      // this try's launch (an answer lifts only marks older than it)
    qint64 lastByteMs = 0;      // the upstream's last byte, for the idle timeout
    qint64 unreadGraceFor = -1; // the lastByteMs whose silence was given kUnreadGraceMs more (onIdle)
    int status = 0;
    std::optional<qint64> ttftMs;
    std::unique_ptr<AttemptBudget> budget;     // armed once, before the first launch; covers every try
                                               // (armBudget), settled when the attempt ends (endAttempt)
    bool budgetIsTheClients = false;           // it ends before the configured deadline's would (ownDeadlineMs)
    bool budgetForTheLastResort = false;       // it ends at the deadline, where a held-down follower is asked
    bool lastResort = false;                   // the held-down follower, asked at the deadline
    util::Clock::TimerId budgetGraceTimer = 0; // the budget ran out with bytes unread: a moment to read them
    CommitHold hold;
    QList<QByteArray> heldRaw; // passthrough frames held with the hold's events
    qint64 heldRawBytes = 0;
    qint64 keptByDecoderBytes = 0; // frames the decoder keeps part of, held outside the hold (TryFrame::keptByDecoder)
    model::EventAccumulator accumulator;
    model::Usage usage;
    qint64 deltaChars = 0; // what the answer said so far (text, thinking, tool arguments), for an estimate
    util::Clock::TimerId idleTimer = 0;
    util::Clock::TimerId retryTimer = 0;
    util::Clock::TimerId errorBodyTimer = 0; // an error head's body: kErrorBodyWindowMs to end
    std::optional<UpstreamFailure> pending;  // the failure a backoff waits to retry
    bool readPaused = false;
    qint64 pausedAtMs = 0; // readPaused since: the silence from then on is the client's
    MendState mended;      // what its upstream refused of the request, and what the request is sent as since

    // The budget ran out, and no meaningful event read in its grace lifted it (onBudgetExpired):
    // the try was cut by the gateway.
    bool budgetTimedOut() const { return budget && budget->timedOut() && !ttftMs; }
};

namespace {
// Backpressure: stop reading the upstream while the client has more than this unsent.
constexpr qint64 kMaxClientQueue = 1024 * 1024;

// Usage arrives in parts (Anthropic: input on start, output at the end; Gemini: cumulative on every
// chunk). A count beyond model::kMaxReportedTokens is the upstream's nonsense and counts as unknown.
// The input is not one figure but a split: the plain input excludes what was read from or written
// to the cache. The figures of one report go together: Gemini tells promptTokenCount on every
// chunk and cachedContentTokenCount on the last only, an OpenAI-compatible server with usage on
// every chunk (vLLM) cached_tokens in the last, so the early reports' input is the whole prompt.
// The most of each figure billed the cached tokens twice, once at the input price (probe R4 F3).
// A report that carries a cache split gives the whole split; one without keeps the split said
// before (a partial report after the last one); with none ever said the input is the most said.
// The output only grows.
void takeUsage(model::Usage &into, const model::Usage &reported) {
    if (reported.isZero())
        return;
    const model::Usage u = reported.sane();
    if (u.cacheRead != 0 || u.cacheWrite != 0) {
        into.input = u.input;
        into.cacheRead = u.cacheRead;
        into.cacheWrite = u.cacheWrite;
    } else if (into.cacheRead == 0 && into.cacheWrite == 0) {
        into.input = std::max(into.input, u.input);
    }
    into.output = std::max(into.output, u.output);
}

// Whether the upstream said anything of what the request's input cost (plain, cached or written
// to the cache): only when it said nothing is the input estimated.
bool inputReported(const model::Usage &u) {
    return u.input != 0 || u.cacheRead != 0 || u.cacheWrite != 0;
}

// What an Error event says, as the classifier reads it. An untyped error the decoder made at end
// of body is an early close, and one the loop made for a broken connection is that connection's
// error: both transport. An answer that ended with no byte in it came over a working connection: a
// bad answer of this model (502). An error the upstream sent in-band (typed) is classified as what
// it says.
FailureInput failureInputOf(const model::StreamEvent &e, const TryFrame &frame) {
    FailureInput input;
    input.message = e.errorMessage;
    input.classificationMessage =
        e.errorType.isEmpty() ? QString() : e.errorType + QStringLiteral(": ") + e.errorMessage;
    input.status = e.errorStatus;
    input.statedRetryAfterMs = e.errorRetryAfterMs;
    input.quotaOfOneModel = e.errorQuotaOfOneModel;
    if (frame.broken)
        input.transportError = *frame.broken;
    else if (frame.afterEnd && e.errorType.isEmpty() && frame.emptyBody)
        input.status = 502;
    else if (frame.afterEnd && e.errorType.isEmpty())
        input.transportError = upstream::TransportError::Other;
    return input;
}

// The code an upstream gave its in-band error (a Responses `response.failed`, a Chat `error`
// frame, an Anthropic `error` event), kept as an error body's is (UpstreamAttempts: upstreamError):
// the client's error carries it in its own format. Codex reads a full context window only from
// `context_length_exceeded` (probe J2 1); it got "invalid_request" and resent the same prompt.
std::optional<model::GatewayError> inBandUpstreamError(const model::StreamEvent &e, const Candidate &c,
                                                       const TryFrame &frame) {
    if (e.errorType.isEmpty() || !e.errorStatus || frame.broken)
        return std::nullopt;
    model::GatewayError error = model::GatewayError::make(*e.errorStatus, {}, {});
    error.upstreamApi = c.provider.api;
    error.code = e.errorType; // redacted with the message (UpstreamAttempts::redactEvents)
    // Its in-band "should_retry": false, as the x-should-retry header of an error head is read: a
    // Switchman further on that already walked its chain is not asked to walk it again.
    if (e.errorFinal)
        error.shouldRetry = false;
    return error;
}

// A try's Error event, as the failure the loop decides on.
TryFailure failureOfEvent(const model::StreamEvent &e, const Candidate &c, const TryFrame &frame) {
    TryFailure f;
    f.input = failureInputOf(e, frame);
    f.upstreamError = inBandUpstreamError(e, c, frame);
    return f;
}
} // namespace

AttemptLoop::AttemptLoop(Deps deps, LoopSettings settings, Resolution resolution, const model::ChatRequest &parsed,
                         std::function<void()> onFinished)
    : m_deps(std::move(deps)), m_clock(*m_deps.clock), m_settings(std::move(settings)),
      m_resolution(std::move(resolution)), m_parsed(parsed), m_onFinished(std::move(onFinished)) {
    if (!m_deps.random)
        m_deps.random = RetryPolicy::systemRandom();
}

AttemptLoop::~AttemptLoop() {
    for (auto &[id, a] : m_attempts) {
        if (a->phase != Phase::Done && m_deps.runner)
            m_deps.runner->abort(id);
        for (auto timer : {a->idleTimer, a->retryTimer, a->errorBodyTimer, a->budgetGraceTimer})
            if (timer)
                m_clock.cancel(timer);
    }
    for (auto timer : {m_deadlineTimer, m_keepaliveTimer})
        if (timer)
            m_clock.cancel(timer);
}

AttemptLoop::Attempt *AttemptLoop::live(AttemptId id) {
    if (m_finished)
        return nullptr;
    const auto it = m_attempts.find(id);
    return it == m_attempts.end() || it->second->phase == Phase::Done ? nullptr : it->second.get();
}

void AttemptLoop::start() {
    m_startMs = m_clock.nowMs();
    if (m_settings.failoverEnabled) {
        // record Bounds: one deadline for the whole request, every attempt inside it.
        m_deadlineAtMs = m_startMs + m_settings.deadlineMs;
        m_deadlineTimer = m_clock.schedule(m_settings.deadlineMs, [this]() {
            m_deadlineTimer = 0;
            onDeadline();
        });
    }
    nextCandidate();
}

// ---------------------------------------------------------------- choosing a candidate

std::optional<QString> AttemptLoop::ineligibleReason(const Candidate &c) const {
    static const config::Config kNoPolicy;
    return CandidatePolicy::ineligibleReason(m_deps.config ? *m_deps.config : kNoPolicy, m_settings.tenant,
                                             m_resolution, c);
}

CandidateResolver::State AttemptLoop::resolverState() const {
    CandidateResolver::State state;
    // failover.enabled false: a plain relay, marks are neither set nor consulted.
    if (m_settings.failoverEnabled)
        state.isMarked = [this](const Candidate &c) { return m_deps.marks->isDown(m_settings.tenant, c.ref()); };
    state.hasCredential = [this](const Candidate &c) { return m_deps.runner->hasUsableCredential(c); };
    state.whyNoCredential = [this](const Candidate &c) { return m_deps.runner->whyNoCredential(c); };
    state.ineligible = [this](const Candidate &c) { return ineligibleReason(c); };
    state.precheck = [this](const Candidate &c) { return CandidatePolicy::precheckRejection(c, m_parsed); };
    state.cannotTake = [this](const Candidate &c) { return CandidatePolicy::incompatibility(c, m_parsed); };
    return state;
}

std::optional<Candidate> AttemptLoop::follower() const {
    if (!m_settings.failoverEnabled || m_resolution.direct || m_clientGone)
        return std::nullopt;
    // A follower is one that could serve this request: one this request's content cannot go to is
    // none (State::cannotTake, and State::precheck once one was tried), so a slow first candidate
    // is not cut by a budget for a fallback that cannot answer.
    return CandidateResolver::next(m_resolution, m_tried, resolverState());
}

bool AttemptLoop::hasLiveFollower() const {
    // A follower the gateway holds down (its mark: asked only because no unmarked one is left)
    // is one the loop would still ask, but not one to cut a working candidate for or to skip its
    // retries for: probe Q2 F2, where a slow fallback was cut at half the deadline and marked,
    // and the client got the error of the primary the mark had set aside, every other request.
    const std::optional<Candidate> next = follower();
    return next && !m_deps.marks->isDown(m_settings.tenant, next->ref());
}

void AttemptLoop::recordSkips(const QList<Skip> &skipped) {
    for (const auto &s : skipped) {
        if (s.marked) {
            recordMarkSkip(s.candidate);
            continue;
        }
        if (m_tried.contains(s.candidate))
            continue;
        if (s.cannotTake) {
            recordCannotTake(s.candidate, s.reason);
            continue;
        }
        m_tried.insert(s.candidate);
        ++m_attemptNo;
        if (CandidatePolicy::isCostCeiling(s.reason))
            m_overCostCeiling = true;
        // A candidate passed over for want of a credential gets its own row: the reroute is visible, never silent.
        const QString failure = s.noCredential ? failureKindName(FailureKind::CredentialExhausted) : QString();
        if (s.noCredential && !m_noCredential)
            m_noCredential = QStringLiteral("no usable credential for %1: %2").arg(s.candidate.name(), s.reason);
        if (s.noCredential)
            noteCredentialWait(s.candidate);
        if (s.noCredential && m_fallbackFrom.isEmpty()) {
            // The answer's headers name it too, as for a candidate that was tried and failed.
            m_fallbackFrom = s.candidate.name();
            m_fallbackReason = failure;
        }
        AttemptReport r;
        r.attemptNo = m_attemptNo;
        r.candidate = s.candidate;
        r.outcome = AttemptOutcome::Skipped;
        r.failure = failure;
        r.logOutcome = QStringLiteral("skipped");
        r.message = s.reason;
        m_deps.observer->attemptRecorded(r);
        util::LogFields extra{{QLatin1String("reason"), s.reason}};
        if (!failure.isEmpty())
            extra.append({QLatin1String("failure"), failure});
        m_deps.observer->attemptLogged(r, extra);
    }
}

void AttemptLoop::recordCannotTake(const Candidate &c, const QString &why) {
    m_tried.insert(c);
    AttemptReport r;
    r.attemptNo = ++m_attemptNo;
    r.candidate = c;
    r.message = why;
    r.outcome = AttemptOutcome::Skipped;
    r.logOutcome = QStringLiteral("skipped");
    m_deps.observer->attemptRecorded(r);
    m_deps.observer->attemptLogged(r, {{QLatin1String("reason"), why}});
    if (!m_incompatible) { // when nothing else is left to answer, the client reads why
        m_incompatible = why;
        m_incompatibleWho = c.name();
    }
}

void AttemptLoop::recordMarkSkip(const Candidate &c) {
    // A candidate passed over for its provider-down mark gets its own row, log line and the answer's
    // fallback headers, as one passed over for want of a credential does: for the whole of a mark's
    // TTL, requests were answered by a fallback that looked like the route's first choice. It is not
    // tried, so it stays in the chain: asked when no unmarked candidate is left.
    if (m_tried.contains(c) || m_markSkipped.contains(c))
        return;
    m_markSkipped.insert(c);
    ++m_attemptNo;
    const qint64 leftMs = m_deps.marks->remainingMs(m_settings.tenant, c.ref());
    const std::optional<MarkInfo> mark = m_deps.marks->covering(m_settings.tenant, c.ref());
    const QString failure = failureKindName(mark ? mark->kind : FailureKind::ServerError);
    if (m_markedFrom.isEmpty()) {
        m_markedFrom = c.name();
        m_markedReason = failure; // what the request that set the mark said: dashboards count one thing
        m_markedFirst = m_fallbackFrom.isEmpty();
    }
    const QString reason =
        QStringLiteral("marked down (%1), %2 s left").arg(failure).arg((std::max<qint64>(leftMs, 0) + 999) / 1000);
    AttemptReport r;
    r.attemptNo = m_attemptNo;
    r.candidate = c;
    r.outcome = AttemptOutcome::Skipped;
    r.failure = failure;
    r.logOutcome = QStringLiteral("skipped");
    r.message = reason;
    m_deps.observer->attemptRecorded(r);
    m_deps.observer->attemptLogged(r, {{QLatin1String("reason"), reason},
                                       {QLatin1String("failure"), failure},
                                       {QLatin1String("markRemainingMs"), leftMs}});
}

void AttemptLoop::noteCredentialWait(const Candidate &candidate) {
    const auto wait = m_deps.runner->credentialWait(candidate);
    if (!wait)
        m_credentialRefused = true;
    else if (!m_credentialWait || wait->remainingMs < m_credentialWait->remainingMs)
        m_credentialWait = wait;
}

void AttemptLoop::nextCandidate() {
    if (m_finished)
        return;
    if (m_clientGone)
        return finish();
    // Once: the held-down follower a budget cut at the deadline leaves to ask (armBudget).
    const bool lastResort = std::exchange(m_lastResortDue, false);
    QList<Skip> skipped;
    const CandidateResolver::Pick pick = CandidateResolver::pick(m_resolution, m_tried, resolverState(), &skipped);
    const std::optional<Candidate> &candidate = pick.candidate;
    recordSkips(skipped);
    if (!candidate) {
        // The last real upstream failure wins over our own "incompatible" or "no credential".
        if (m_lastFailure)
            return finishWithFailure(withNoFallbackNote(clientErrorFor(*m_lastFailure)), true);
        if (m_incompatible)
            return finishWithFailure(GatewayError::make(400, ErrorCategory::InvalidRequest, *m_incompatible), false);
        if (m_noCredential && m_credentialWait && !m_credentialRefused)
            return finishWithFailure(FailureResponse::forCredentialWait(*m_noCredential, *m_credentialWait), false);
        if (m_noCredential)
            return finishWithFailure(FailureResponse::forNoCredential(*m_noCredential), false);
        QString why = QStringLiteral("no eligible candidate for \"%1\"").arg(m_settings.requestedModel);
        for (const auto &c : m_resolution.chain)
            if (const auto reason = ineligibleReason(c); reason && CandidatePolicy::isUnpriced(*reason)) {
                // The budget is why: say so, and what lets the model be used.
                why += QStringLiteral(" (%1; only a model with a price can be charged to a budget)").arg(*reason);
                break;
            }
        if (m_resolution.maxCostMultiplier)
            why += QStringLiteral(" (route cost ceiling %1x)").arg(*m_resolution.maxCostMultiplier);
        return finishWithFailure(GatewayError::make(403, ErrorCategory::Permission, why), false);
    }
    if (m_deadlinePassed && m_attemptNo > 0 && !lastResort)
        return finishWithFailure(
            m_lastFailure ? clientErrorFor(*m_lastFailure)
                          : GatewayError::make(504, ErrorCategory::Timeout, QStringLiteral("request deadline passed")),
            false);
    if (pick.rejection)
        return rejectRequest(*candidate, *pick.rejection);
    beginAttempt(*candidate, lastResort);
}

void AttemptLoop::rejectRequest(const Candidate &candidate, const QString &why) {
    // The chain's first candidate refuses the request's content (CandidateResolver::Pick::rejection):
    // it fails as it would without failover.
    m_tried.insert(candidate);
    AttemptReport r;
    r.attemptNo = ++m_attemptNo;
    r.candidate = candidate;
    r.message = why;
    r.outcome = AttemptOutcome::Failed;
    r.logOutcome = QStringLiteral("exhausted");
    m_deps.observer->attemptRecorded(r);
    m_deps.client->fail(GatewayError::make(400, ErrorCategory::InvalidRequest, why), m_attemptNo);
    finish();
}

void AttemptLoop::beginAttempt(const Candidate &candidate, bool lastResort) {
    m_tried.insert(candidate);
    ++m_attemptNo;
    auto attempt = std::make_unique<Attempt>();
    attempt->id = m_nextId++;
    attempt->lastResort = lastResort;
    attempt->no = m_attemptNo;
    attempt->candidate = candidate;
    attempt->startMs = m_clock.nowMs();
    attempt->marksSeq = m_deps.marks->sequence();
    // What the try asks for: the client's max, or the model's configured maxTokens when lower.
    attempt->mended.outputCapSent = m_parsed.options.maxTokens;
    if (const std::optional<int> configured = candidate.model.maxTokens;
        configured && (!attempt->mended.outputCapSent || *configured < *attempt->mended.outputCapSent))
        attempt->mended.outputCapSent = configured;
    Attempt &a = *attempt;
    m_attempts.emplace(a.id, std::move(attempt));
    startTry(a, false);
}

void AttemptLoop::startTry(Attempt &a, bool nextCredential) {
    // A try after one that cost may cost as much again: the budget is asked first (Deps::admitAnotherTry).
    if (std::exchange(m_triedAtCost, false) && m_deps.admitAnotherTry)
        if (const auto refused = m_deps.admitAnotherTry()) {
            a.phase = Phase::Done;                      // never started: nothing to settle
            m_deps.client->fail(*refused, m_attemptNo); // the budget's words, not the last upstream's
            return finish();
        }
    a.phase = Phase::Setup;
    ++m_upstreamTries;
    TryStart s;
    s.id = a.id;
    s.attemptNo = a.no;
    s.candidate = a.candidate;
    s.nextCredential = nextCredential;
    s.withoutReplayedReasoning = a.mended.withoutReplayedReasoning;
    s.withReasoningBack = a.mended.withReasoningBack;
    s.withoutReasoningSummary = a.mended.withoutReasoningSummary;
    s.withNineCharToolIds = a.mended.withNineCharToolIds;
    s.withoutStreaming = a.mended.withoutStreaming;
    s.outputCap = a.mended.outputCap;
    m_deps.runner->start(s); // may answer at once
}

// ---------------------------------------------------------------- runner events

void AttemptLoop::onSetupFailed(AttemptId id, FailureKind kind, const QString &message) {
    Attempt *a = live(id);
    if (!a || a->phase != Phase::Setup)
        return; // the setup was cut by the deadline or the client left
    UpstreamFailure f;
    f.kind = kind;
    f.message = message;
    afterFailure(*a, f);
}

void AttemptLoop::onSetupDone(AttemptId id, const TryReady &ready) {
    Attempt *a = live(id);
    if (!a || a->phase != Phase::Setup)
        return;
    if (m_clientGone)
        return finish();
    a->ready = ready;
    a->hold = CommitHold();
    a->heldRaw.clear();
    a->heldRawBytes = 0;
    a->keptByDecoderBytes = 0;
    a->accumulator = model::EventAccumulator();
    a->accumulator.setKeepsToolDeltas(!m_deps.runner->endsCarryWholeToolCalls());
    a->usage = {};
    a->status = 0;
    a->ttftMs.reset();
    a->readPaused = false;
    m_deps.client->upstreamChosen(ready.upstreamApi, ready.upstreamProvider);
    if (m_settings.stream && !m_deps.client->streamOpen()) {
        // Headers go out once the first upstream call starts, then keepalives
        // until commit so the client's own idle timeout never fires while we fail over.
        m_deps.client->openStream();
        if (m_settings.keepaliveMs > 0 && !m_keepaliveTimer)
            m_keepaliveTimer = m_clock.schedule(m_settings.keepaliveMs, [this]() { writeKeepalive(); });
    }
    armBudget(*a);
    a->phase = Phase::Upstream;
    a->tryStartMs = m_clock.nowMs();
    a->lastByteMs = a->tryStartMs;
    armIdle(*a, m_settings.upstreamIdleTimeoutMs);
    m_deps.runner->launch(a->id);
}

void AttemptLoop::armBudget(Attempt &a) {
    // record Bounds > Attempt budget: armed once per attempt, just before its first upstream call,
    // only with a follower; half the time left. It covers the attempt's retries and rotated keys
    // too; only a meaningful event or Done lifts it (AttemptBudget::observe), and the attempt's
    // end settles it (endAttempt).
    if (a.budget)
        return;
    std::optional<qint64> budgetEnd;
    if (a.lastResort) {
        // Asked past the deadline, with nothing after it to make room for.
    } else if (hasLiveFollower()) {
        const qint64 now = m_clock.nowMs();
        budgetEnd = now + std::max<qint64>(0, (m_deadlineAtMs - now) / 2);
        if (m_settings.ownDeadlineMs > m_settings.deadlineMs)
            a.budgetIsTheClients =
                *budgetEnd < now + std::max<qint64>(0, (m_startMs + m_settings.ownDeadlineMs - now) / 2);
    } else if (m_deadlineAtMs && follower()) {
        // A held-down follower only: the attempt has the whole time left, not half (hasLiveFollower),
        // and is cut at the deadline, where that follower is asked as the last resort. Without a
        // budget a stall held the request to the idle limit (300 s by default, past the 120 s
        // deadline), and the follower was never asked (probe U1 F1).
        budgetEnd = m_deadlineAtMs;
        a.budgetForTheLastResort = true;
    }
    const AttemptId id = a.id;
    a.budget = std::make_unique<AttemptBudget>(m_clock, budgetEnd, [this, id]() { onBudgetExpired(id); });
}

void AttemptLoop::endAttempt(Attempt &a) {
    if (a.budget)
        a.budget->settle();
    for (util::Clock::TimerId *timer : {&a.retryTimer, &a.budgetGraceTimer})
        if (*timer) {
            m_clock.cancel(*timer);
            *timer = 0;
        }
    a.phase = Phase::Done;
}

void AttemptLoop::onResponseHead(AttemptId id, int status, bool errorAnswer) {
    Attempt *a = live(id);
    if (!a || a->phase != Phase::Upstream)
        return;
    a->status = status;
    a->lastByteMs = m_clock.nowMs();
    if (!errorAnswer)
        return;
    // An error answer: its body gets kErrorBodyWindowMs, however it trickles, then the failure is
    // reported from what arrived (AttemptRunner::endErrorBody).
    a->errorBodyTimer = m_clock.schedule(kErrorBodyWindowMs, [this, id]() {
        if (Attempt *t = live(id); t && t->phase == Phase::Upstream) {
            t->errorBodyTimer = 0;
            m_deps.runner->endErrorBody(id);
        }
    });
}

void AttemptLoop::onActivity(AttemptId id) {
    if (Attempt *a = live(id); a && a->phase == Phase::Upstream)
        a->lastByteMs = m_clock.nowMs();
}

void AttemptLoop::onFrame(AttemptId id, const TryFrame &frame) {
    if (Attempt *a = live(id); a && a->phase == Phase::Upstream)
        handleEvents(*a, frame);
}

void AttemptLoop::onTransportError(AttemptId id, upstream::TransportError error, const QString &message,
                                   qint64 answerChars) {
    Attempt *a = live(id);
    if (!a || a->phase != Phase::Upstream)
        return;
    const QString text = message.isEmpty() ? QString::fromLatin1(upstream::transportErrorName(error)) : message;
    if (m_committed == id) {
        // A committed stream broke: final; the client gets this format's error in band.
        model::StreamEvent cut;
        cut.type = model::EventType::Error;
        cut.reason = model::StopReason::Error;
        cut.errorMessage = QStringLiteral("upstream connection lost: %1").arg(text);
        // What the upstream reported before the reset (a usage chunk, message_delta, Gemini's
        // usageMetadata): billed and told as a clean early end's (the decoder's own Error) is.
        cut.usage = m_deps.runner->reportedUsage(id);
        TryFrame f;
        f.events = {cut};
        f.broken = error;
        return handleEvents(*a, f);
    }
    TryFailure f;
    // Our own aborts never get here (budget, idle and the client are decided by the loop,
    // which aborts the try first), so even an "Aborted" is the peer's doing: transport.
    f.input.transportError = error == upstream::TransportError::Aborted ? upstream::TransportError::Other : error;
    f.input.message = text;
    if (a->status >= 400) {
        // The upstream answered with an error status before its body broke: that status is its
        // answer (the classifier's status rows), the broken body only how it ended.
        f.input.status = a->status;
        f.input.message = QStringLiteral("HTTP %1, then %2").arg(a->status).arg(text);
    }
    if (error == upstream::TransportError::Local)
        f.noRetry = true; // out of descriptors: a retry a moment later finds none either
    if (error == upstream::TransportError::Tls)
        // A certificate the gateway does not trust (or a name it does not match) is refused the same
        // on every try: the lone candidate's two retries only added 1.6 s before the same 502 (probe T2).
        f.noRetry = true;
    if (answerChars > 0) {
        // A JSON answer broken in its body had said something, read whole or not at all: not asked
        // of the same candidate again (it would bill the generation twice), and billed by its
        // estimate as a stream cut after its content is (probe Q1 M1: three tries, no row).
        f.noRetry = true;
        a->deltaChars += answerChars;
    }
    attemptFailed(*a, f);
}

void AttemptLoop::onFailure(AttemptId id, const TryFailure &failure) {
    if (Attempt *a = live(id); a && a->phase == Phase::Upstream)
        attemptFailed(*a, failure);
}

// ---------------------------------------------------------------- the commit point

void AttemptLoop::handleEvents(Attempt &a, const TryFrame &frame) {
    if (!m_settings.stream)
        return drain(a, frame);
    if (m_committed != a.id)
        return holdUntilCommit(a, frame);
    // Same API: the client gets the upstream's own frames, including those that carry no
    // canonical event (message_delta, the usage chunk).
    if (a.ready.passthrough && frame.raw) {
        m_deps.client->streamFrame(*frame.raw);
        if (m_finished)
            return; // the write found the client gone: the request ended with it
    }
    relayCommitted(a, frame, 0);
}

void AttemptLoop::account(Attempt &a, const model::StreamEvent &e) {
    if (a.budget)
        a.budget->observe(e);
    // Every decoder's counts pass here (or through settle()) on their way to the ledger and the budget.
    takeUsage(a.usage, e.usage);
    if (e.isMeaningful()) {
        a.deltaChars += e.delta.size();
        if (!a.ttftMs)
            a.ttftMs = m_clock.nowMs() - a.startMs;
    }
}

void AttemptLoop::drain(Attempt &a, const TryFrame &frame) {
    // Non-streaming: the client sees nothing until the drain ends, so any failure before done
    // fails over, whatever partial content is held.
    for (const auto &e : frame.events) {
        account(a, e);
        if (e.type == model::EventType::Error)
            return attemptFailed(a, failureOfEvent(e, a.candidate, frame));
        a.accumulator.add(e);
        if (e.type == model::EventType::Done)
            return succeed(a);
    }
}

void AttemptLoop::holdUntilCommit(Attempt &a, const TryFrame &frame) {
    // Passthrough: the upstream's own frame is held with its events, taken back out below if
    // nothing in it was kept.
    qsizetype provisional = -1;
    if (a.ready.passthrough && frame.raw && !(frame.isNoise && frame.isNoise())) {
        provisional = a.heldRaw.size();
        a.heldRaw.append(*frame.raw);
        a.heldRawBytes += frame.raw->size() + TryFrame::kHeldFrameOverhead;
    }
    bool keptAny = false;
    for (qsizetype i = 0; i < frame.events.size(); ++i) {
        const model::StreamEvent &e = frame.events.at(i);
        account(a, e);
        // Canonical holds pay for their frame once; raw holds are counted as frames above.
        const auto step = a.hold.feed(e, a.ready.passthrough || keptAny ? 0 : frame.frameBytes);
        keptAny |= a.hold.lastHeld();
        if (step.justFailed)
            // An error the decoder reports at the end but the upstream sent in-band (Responses'
            // error event, held for a response.failed that never came) keeps its type.
            return attemptFailed(a, failureOfEvent(e, a.candidate, frame));
        if (step.justCommitted) {
            commit(a, step.release); // the held frames, this one's raw among them, go out
            if (!endedCommitted(a, e, frame))
                relayCommitted(a, frame, i + 1);
            return;
        }
    }
    if (provisional >= 0 && !keptAny && !frame.events.isEmpty()) {
        // Every event of the frame was noise (empty deltas): the frame goes too.
        a.heldRawBytes -= a.heldRaw.at(provisional).size() + TryFrame::kHeldFrameOverhead;
        a.heldRaw.removeAt(provisional);
    }
    // A same-API client's raw frame already counts what the decoder kept of it.
    if (frame.keptByDecoder && provisional < 0)
        a.keptByDecoderBytes += frame.frameBytes;
    if (const qint64 held = a.hold.heldBytes() + a.heldRawBytes + a.keptByDecoderBytes;
        held > m_settings.maxHoldBytes) {
        // Nothing meaningful after this much: not an answer the client will get soon.
        TryFailure f;
        f.input.status = 502; // server_error by the table: the next candidate may answer
        f.input.message = QStringLiteral("%1 bytes held before the first token, over limits.maxHoldBytes").arg(held);
        attemptFailed(a, f);
    }
}

void AttemptLoop::relayCommitted(Attempt &a, const TryFrame &frame, qsizetype from) {
    for (qsizetype i = from; i < frame.events.size(); ++i) {
        const model::StreamEvent &e = frame.events.at(i);
        account(a, e);
        if (!a.ready.passthrough)
            m_deps.client->streamEvent(e);
        else if (e.type == model::EventType::Error && (!frame.raw || frame.rawHidesError))
            // Passthrough, and the break is ours to tell (reset, early end, silence, a Chat chunk
            // whose finish_reason is "error"): the format's own error, never a made-up
            // message_stop or [DONE].
            m_deps.client->streamError(GatewayError::make(e.errorStatus.value_or(502),
                                                          GatewayError::categoryForStatus(e.errorStatus.value_or(502)),
                                                          e.errorMessage));
        if (endedCommitted(a, e, frame))
            return; // answered, cut, or the write found the client gone (the request ended with it)
    }
    applyBackpressure(a);
}

bool AttemptLoop::endedCommitted(Attempt &a, const model::StreamEvent &e, const TryFrame &frame) {
    if (m_finished)
        return true;
    if (e.type == model::EventType::Done) {
        succeed(a);
        return true;
    }
    if (e.type != model::EventType::Error)
        return false;
    // Broken after commit: final. The client's stream ends with its format's error, the answer so
    // far is billed as cut, and the provider gets a failed row.
    settle(a);
    recordUsage(a, true, UsageReport::End::Cut);
    reportCutAfterCommit(a, e, frame);
    m_deps.client->endStream(StreamEnd::Broken);
    finish();
    return true;
}

AnswerInfo AttemptLoop::answerInfo(const Attempt &a) const {
    AnswerInfo info;
    info.candidate = a.candidate.name();
    info.attempts = a.no;
    info.fallbackFrom = m_fallbackFrom;
    info.fallbackReason = m_fallbackReason;
    // A candidate passed over for its mark: the answer fell back from it, unless it answers itself
    // (asked last, when nothing unmarked could).
    if (!m_markedFrom.isEmpty() && m_markedFrom != info.candidate && (m_markedFirst || m_fallbackFrom.isEmpty())) {
        info.fallbackFrom = m_markedFrom;
        info.fallbackReason = m_markedReason;
    }
    info.upstreamApi = a.ready.upstreamApi;
    info.upstreamProvider = a.ready.upstreamProvider;
    info.costInput = a.candidate.model.costInput;
    info.costOutput = a.candidate.model.costOutput;
    info.costCacheRead = a.candidate.model.cacheReadPrice();
    info.costCacheWrite = a.candidate.model.cacheWritePrice();
    info.dropped = a.ready.dropped;
    return info;
}

void AttemptLoop::commit(Attempt &a, const QList<model::StreamEvent> &released) {
    // record Commit point: this attempt is final from here on. (A hedged second try would be
    // aborted and billed here.)
    m_committed = a.id;
    m_clientWritesSeen = m_deps.client->writes(); // the keepalives go on only in the answer's silences
    // The report is taken now and told once the first content is out: the bookkeeping adds nothing
    // to the client's wait for its first token.
    AttemptReport report = reportOf(a, AttemptOutcome::Committed, {}, {}, {});
    report.dropped = a.ready.dropped;
    m_deps.client->commitStream(answerInfo(a), a.ready.passthrough);
    noteDropped(a);
    if (a.ready.passthrough) {
        for (const auto &frame : std::as_const(a.heldRaw))
            m_deps.client->streamFrame(frame);
        a.heldRaw.clear();
        a.heldRawBytes = 0;
    } else {
        for (const auto &e : released)
            m_deps.client->streamEvent(e);
    }
    // The first content is out of the hold: the client gets it before the gateway reads on through
    // the rest of the upstream's read (the frames after it still leave together).
    m_deps.client->sendNow();
    if (report.ttftMs)
        m_deps.observer->ttftObserved(*report.ttftMs);
    m_deps.observer->attemptRecorded(report);
    // What the answer costs if the process dies before its usage row: the input (the upstream's
    // count so far, else the request's estimate) and the content held until commit.
    // The upstream's counts so far, also those no event carried yet (Gemini's usageMetadata of the
    // first chunk): one call at commit, nothing a chunk.
    takeUsage(a.usage, m_deps.runner->reportedUsage(a.id));
    UsageReport open;
    open.rowId = m_settings.requestId;
    open.candidate = a.candidate;
    open.usage = a.usage;
    if (!inputReported(open.usage))
        open.usage.input = m_settings.inputTokensEstimate;
    open.usage.output = std::max(open.usage.output, (a.deltaChars + 3) / 4);
    open.answered = true;
    open.end = UsageReport::End::Cut;
    m_deps.observer->answerOpened(open);
    liftDisprovedMarks(a);
}

void AttemptLoop::noteDropped(const Attempt &a) {
    // What the answering request went without is in the log whether the answer streamed or not
    // (its row carries it too: AttemptReport::dropped).
    if (!a.ready.dropped.isEmpty())
        m_deps.observer->note(QStringLiteral("converted without"),
                              {{QStringLiteral("candidate"), a.candidate.name()},
                               {QStringLiteral("fields"), a.ready.dropped.join(QLatin1Char(','))}});
}

void AttemptLoop::liftDisprovedMarks(const Attempt &a) {
    // The candidate answers a try started after its mark's last strike (a lone candidate, or every
    // one marked, is tried while marked): it is back, and a route's first choice should not wait out
    // the rest of a TTL that grew through the outage.
    if (m_settings.failoverEnabled && a.tryStartMs)
        if (const int lifted = m_deps.marks->answered(m_settings.tenant, a.candidate.ref(), a.tryStartMs))
            m_deps.observer->marksLifted(a.candidate, lifted); // the feed and the log say so (probe I3 3)
}

void AttemptLoop::applyBackpressure(Attempt &a) {
    // A slow client slows the upstream, not our memory: stop reading past 1 MiB queued.
    if (!a.readPaused && m_deps.client->pendingBytes() > kMaxClientQueue) {
        a.readPaused = true;
        a.pausedAtMs = m_clock.nowMs();
        m_deps.runner->setReadPaused(a.id, true);
    }
}

void AttemptLoop::onClientDrained() {
    Attempt *a = live(m_committed);
    if (a && a->readPaused)
        a->pausedAtMs = m_clock.nowMs(); // the client took bytes: slow, not stalled
    if (a && a->readPaused && m_deps.client->pendingBytes() <= kMaxClientQueue / 2) {
        a->readPaused = false;
        // The upstream was not read while paused: its idle clock starts again now.
        a->lastByteMs = std::max(a->lastByteMs, m_clock.nowMs());
        m_deps.runner->setReadPaused(a->id, false);
    }
}

void AttemptLoop::succeed(Attempt &a) {
    if (!m_settings.stream) {
        // Recorded once the answer is written (its figures as of now): no bookkeeping before the client's bytes.
        AttemptReport report = reportOf(a, AttemptOutcome::Committed, {}, {}, {});
        report.dropped = a.ready.dropped;
        m_deps.client->answer(a.accumulator.message(), answerInfo(a));
        noteDropped(a);
        m_deps.observer->attemptRecorded(report);
    } else {
        m_deps.client->endStream(StreamEnd::Answered);
    }
    // The client has its answer before the upstream call is let go (abort may read on briefly).
    settle(a);
    recordUsage(a, true);
    liftDisprovedMarks(a);
    finish();
}

// ---------------------------------------------------------------- failures

void AttemptLoop::settle(Attempt &a) {
    for (util::Clock::TimerId *timer : {&a.idleTimer, &a.errorBodyTimer})
        if (*timer) {
            m_clock.cancel(*timer);
            *timer = 0;
        }
    // However the try ends (answered, reset, aborted by the loop for the client, the idle timeout
    // or the budget), what its upstream reported so far is its usage, whether or not an event
    // carried it: a reset bills as a clean early end does, never only the estimate. A try not in
    // flight (setup, backoff) has been billed already.
    if (a.phase == Phase::Upstream)
        takeUsage(a.usage, m_deps.runner->reportedUsage(a.id));
    m_deps.runner->abort(a.id);
}

void AttemptLoop::attemptFailed(Attempt &a, const TryFailure &failure) {
    // What follows is decided from the facts alone (FailureDecision::decide), then carried out.
    const FailureDecision d = FailureDecision::decide(failure, a.budgetTimedOut(), a.mended);
    settle(a);
    a.phase = Phase::Backoff;
    if (m_clientGone)
        return finish();
    if (d.action == FailureDecision::Action::Mend)
        return retryMended(a, d, failure.input);
    // Translation: the API's code/param reach the client; those of the failure the client will hear,
    // not of a later one that says less (a 429 over a token limit after a 429 rate limit).
    if (failure.upstreamError && (d.action == FailureDecision::Action::Stop || !saysLessThanTheLastFailure(d.failure)))
        m_upstreamError = failure.upstreamError;
    if (d.action == FailureDecision::Action::Stop)
        return stopWithUpstreamError(a, failure.input);
    if (d.mayRotate && rotateCredential(a, failure, d.failure))
        return startTry(a, true);
    // An upstream that said its failure is final (x-should-retry: false, carried on its error) is
    // not asked again; the follower still is: its upstream is another.
    if (d.mayRetry &&
        tryInAttemptRetry(a, d.failure, failure.upstreamError && failure.upstreamError->shouldRetry == false))
        return;
    // A host that answered in a form the gateway does not read answers the same to the SDK's own
    // retries, each one generated and billed (probe T2 F3); a certificate refused is refused again.
    m_lastFailureSameAgain = failure.noRetry && (failure.input.transportError == upstream::TransportError::Protocol ||
                                                 failure.input.transportError == upstream::TransportError::Tls);
    afterFailure(a, d.failure, d.cause);
}

void AttemptLoop::retryMended(Attempt &a, const FailureDecision &d, const FailureInput &input) {
    // The same candidate once more, the request mended. Not an outage: no mark, no failure
    // counted; the refused try's usage is its own row.
    QJsonObject fields{{QStringLiteral("candidate"), a.candidate.name()},
                       {QStringLiteral("message"), input.message.left(300)}};
    switch (d.mend) {
    case FailureDecision::Mend::WithoutReplayedReasoning:
        a.mended.withoutReplayedReasoning = true;
        break;
    case FailureDecision::Mend::WithReasoningBack:
        a.mended.withReasoningBack = true;
        break;
    case FailureDecision::Mend::WithoutReasoningSummary:
        a.mended.withoutReasoningSummary = true;
        break;
    case FailureDecision::Mend::WithNineCharToolIds:
        a.mended.withNineCharToolIds = true;
        break;
    case FailureDecision::Mend::WithoutStreaming:
        a.mended.withoutStreaming = true;
        break;
    case FailureDecision::Mend::OutputCap:
        a.mended.outputCap = d.outputCap;
        fields.insert(QStringLiteral("maxTokens"), d.outputCap.value_or(0));
        break;
    case FailureDecision::Mend::None:
        break;
    }
    m_deps.observer->note(d.mendWhy, fields);
    recordUsage(a, false);
    startTry(a, false);
}

bool AttemptLoop::rotateCredential(Attempt &a, const TryFailure &failure, const UpstreamFailure &classified) {
    const auto left = m_deps.runner->rotateCredential(a.id, failure);
    if (!left)
        return false;
    // Why the key was left, in the line that says so: a 403 for one model sends that model's
    // requests to the next key for minutes, and this line was all that said it (probe K4 4).
    QJsonObject fields{{QStringLiteral("provider"), a.candidate.provider.id},
                       {QStringLiteral("model"), a.candidate.model.id},
                       {QStringLiteral("credentialIndex"), *left},
                       {QStringLiteral("failure"), failureKindName(classified.kind)},
                       {QStringLiteral("reason"), failure.input.modelOutOfReach
                                                      ? QStringLiteral("the key cannot reach this model")
                                                      : util::redactedAndTruncated(failure.input.message, 300, {})}};
    if (failure.input.status)
        fields.insert(QStringLiteral("status"), *failure.input.status);
    m_deps.observer->note(QStringLiteral("credential rotated"), fields);
    recordUsage(a, false);
    return true;
}

bool AttemptLoop::tryInAttemptRetry(Attempt &a, const UpstreamFailure &failure, bool upstreamSaidFinal) {
    // With a follower, fail over at once (unless the provider asks for its own
    // retries first); without one, retry the same candidate with backoff.
    RetryInput in;
    in.failure = failure;
    in.hasFollower = hasLiveFollower();
    in.retriesSoFar = a.retries;
    in.retriesBeforeFailover = a.candidate.provider.retriesBeforeFailover;
    in.maxRetries = a.candidate.provider.maxRetries;
    in.maxRetryDelayMs = m_settings.maxRetryDelayMs;
    in.nowMs = m_clock.nowMs();
    if (m_deadlineAtMs)
        in.deadlineAtMs = m_deadlineAtMs;
    if (a.budget)
        in.budgetEndsAtMs = a.budget->endsAtMs();
    in.afterContent = a.ttftMs.has_value(); // set by the try's first meaningful event
    in.upstreamSaidFinal = upstreamSaidFinal;
    const auto next = RetryPolicy::nextDelay(in, m_deps.random);
    if (!next)
        return false;
    ++a.retries;
    recordUsage(a, false);
    m_deps.observer->note(QStringLiteral("provider retry"), {{QStringLiteral("candidate"), a.candidate.name()},
                                                             {QStringLiteral("failure"), failureKindName(failure.kind)},
                                                             {QStringLiteral("retry"), a.retries},
                                                             {QStringLiteral("delayMs"), *next}});
    a.pending = failure;
    const AttemptId id = a.id;
    a.retryTimer = m_clock.schedule(*next, [this, id]() {
        Attempt *t = live(id);
        if (!t)
            return;
        t->retryTimer = 0;
        t->pending.reset();
        if (m_clientGone)
            return finish();
        startTry(*t, false);
    });
    return true;
}

bool AttemptLoop::saysLessThanTheLastFailure(const UpstreamFailure &failure) const {
    // A provider that does not hold the conversation the request names (another provider of its API
    // made it) says nothing of the one that does: when that one failed first (down, overloaded), the
    // client hears its failure, which it retries, not that the conversation does not exist (probe X3 F1).
    if (!m_lastFailure || m_lastFailure->kind == FailureKind::NotServed || failure.kind != FailureKind::NotServed)
        return false;
    // Nor does one that finds the request too large for it (its 413, a per-minute token limit, the
    // credit left), after one that is down or busy for a while: that one may take the request once
    // it is back (an app's own retry finds it), and the 413 is kept from no one who can act on it.
    // Not after a key that is refused or spent for long: the 413 says what can be done now, a
    // smaller request, where the key's error says only that an operator must act.
    if (failure.status == 413 || failure.status == 429 || failure.status == 402) {
        switch (m_lastFailure->kind) {
        case FailureKind::Transport:
        case FailureKind::ServerError:
        case FailureKind::RateLimited:
            return true;
        case FailureKind::CredentialExhausted:
            return m_lastFailureWait && m_lastFailureWait->cause != CredentialWait::Cause::Refusal &&
                   m_lastFailureWait->remainingMs <= FailureResponse::kShortWaitMs;
        default:
            return false;
        }
    }
    FailureInput in;
    in.status = failure.status;
    in.message = failure.message;
    return FailureClassifier::lacksTheConversation(in);
}

void AttemptLoop::afterFailure(Attempt &a, const UpstreamFailure &failure, const QString &cause) {
    // Cut by a budget the client's own wait made shorter than the gateway's: no evidence against
    // the provider (probe S2 F2), so no mark and no failure counted; the next candidate still answers.
    const bool onTheClientsClock = a.budgetIsTheClients && a.budgetTimedOut();
    endAttempt(a);
    if (!saysLessThanTheLastFailure(failure)) {
        m_lastFailure = failure;
        m_lastFailureWho = a.candidate.name();
        m_lastFailureAnswering = a.status >= 200 && a.status < 300;
        // A usage limit on the provider's only key (recorded by rotateCredential): the client hears
        // when it is back, as a 429, rather than a 502 that sends users looking for a broken key.
        m_lastFailureWait = failure.kind == FailureKind::CredentialExhausted
                                ? m_deps.runner->credentialWait(a.candidate)
                                : std::nullopt;
    }
    // A model the configuration does not list (a direct `provider/<any id>`) is in no chain, so its
    // own mark is read by no request; and its names are the client's to choose: a client inventing
    // them filled the tenant's table, evicted its real marks and fed every admin subscriber the table
    // per request (probe L2). Its host's transport mark still counts for the listed models there.
    const bool markable = failure.kind == FailureKind::Transport || !m_resolution.direct || !m_deps.config ||
                          m_deps.config->models.contains(a.candidate.name());
    if (m_settings.failoverEnabled && markable && !onTheClientsClock) {
        // The attempt's start decides whether this failure is a new strike (SPEC 5): an attempt
        // begun before the mark was set adds none, so six requests in flight when a provider
        // stalls add one strike, however many in-attempt retries each of them made meanwhile.
        const qint64 ttl = m_deps.marks->mark(m_settings.tenant, a.candidate.ref(), failure,
                                              a.startMs ? std::optional<qint64>(a.startMs) : std::nullopt,
                                              a.startMs ? std::optional<quint64>(a.marksSeq) : std::nullopt);
        if (ttl > 0)
            m_deps.observer->marked(a.candidate, ttl);
    }
    if (!onTheClientsClock)
        m_deps.observer->failureCounted(a.candidate, failure.kind);
    recordUsage(a, false);
    if (m_fallbackFrom.isEmpty()) {
        m_fallbackFrom = a.candidate.name();
        m_fallbackReason = failureKindName(failure.kind);
    }
    const bool deadlineStops = m_deadlinePassed && !m_lastResortDue;
    const std::optional<Candidate> next = deadlineStops ? std::nullopt : follower();
    const QString logOutcome = !cause.isEmpty() ? cause
                               : deadlineStops  ? QStringLiteral("deadline")
                               : next           ? QStringLiteral("retrying")
                                                : QStringLiteral("exhausted");
    m_deps.observer->attemptRecorded(
        reportOf(a, AttemptOutcome::Failed, failureKindName(failure.kind), logOutcome, failure.message));
    logFailure(a, failure, logOutcome, next ? next->name() : QString());
    if (next)
        return nextCandidate();
    if (!m_deadlinePassed && m_settings.failoverEnabled && !m_resolution.direct && !m_clientGone) {
        // No follower: candidates passed over for want of a credential still leave their row.
        QList<Skip> skipped;
        CandidateResolver::next(m_resolution, m_tried, resolverState(), &skipped);
        QList<Skip> noCredential;
        for (const auto &sk : skipped)
            if (sk.noCredential)
                noCredential.append(sk);
        recordSkips(noCredential);
    }
    // The failure the client hears: this one, unless it says less than the one before (saysLessThanTheLastFailure).
    finishWithFailure(withNoFallbackNote(clientErrorFor(m_lastFailure.value_or(failure))), true);
}

void AttemptLoop::reportCutAfterCommit(const Attempt &a, const model::StreamEvent &error, const TryFrame &frame) {
    // The committed attempt is final: no failover and no mark. Its row said committed, though, and
    // a provider that breaks streams half-way was invisible: it gets a failed row of its own and
    // moves the failure counter, classified as a failure before commit would be.
    const auto classified = FailureClassifier::classify(failureInputOf(error, frame));
    if (!classified) {
        // Not a failover failure before commit either (an in-band 4xx, a deterministic error):
        // the row says what broke the answer, and no counter blames the provider.
        m_deps.observer->attemptRecorded(
            reportOf(a, AttemptOutcome::Failed, {}, QStringLiteral("after_commit"), error.errorMessage));
        return;
    }
    m_deps.observer->failureCounted(a.candidate, classified->kind);
    m_deps.observer->attemptRecorded(reportOf(a, AttemptOutcome::Failed, failureKindName(classified->kind),
                                              QStringLiteral("after_commit"), classified->message));
    logFailure(a, *classified, QStringLiteral("after_commit"), {});
}

void AttemptLoop::stopWithUpstreamError(Attempt &a, const FailureInput &input) {
    // Not a failover failure (400, 422, a deterministic in-band error): the client gets it as is.
    // A redirect is not an answer the client can use: 502, the message names it.
    endAttempt(a);
    // A loop of gateways, reported as a 508 or in band by a Switchman further on: a 508 that says
    // which provider leads round it, and the SDK's own retry of a 5xx would go round again.
    const bool loop = FailureClassifier::reportsALoop(input);
    const int status = loop ? 508 : input.status && *input.status >= 400 ? *input.status : 502;
    const QString message =
        loop ? QStringLiteral("upstream %1 reported 508 Loop Detected: the request went round a loop of gateways and "
                              "is not retried; check providers.%2.baseUrl (%3)")
                   .arg(a.candidate.name(), a.candidate.provider.id, input.message.left(2048))
             : input.message;
    const AttemptReport stopped = reportOf(a, AttemptOutcome::Failed, {}, QStringLiteral("stop"), message);
    m_deps.observer->attemptRecorded(stopped);
    // Its log line too, as every failed attempt has: a provider that begins refusing requests (400s)
    // is seen in the log, not only in /admin/attempts (probe I1 1: 347 stops, none logged).
    util::LogFields fields;
    fields.reserve(3);
    fields.append({QLatin1String("elapsedMs"), m_clock.nowMs() - a.startMs});
    fields.append({QLatin1String("error"), util::redactedAndTruncated(message, 300, {})});
    fields.append({QLatin1String("status"), status});
    m_deps.observer->attemptLogged(stopped, fields);
    recordUsage(a, false);
    GatewayError error = GatewayError::make(status, GatewayError::categoryForStatus(status), message);
    error.retryAfterMs = input.statedDelayMs(); // the answer's own, or the gateway's (a full budget)
    // A stop with no error status of the upstream's own (a redirect, a deterministic finish reason, a
    // limit of the gateway's) is the gateway's 502 and as final: the SDKs retry a 502 twice, asking
    // again what the loop decided not to ask again (probe S1 F1).
    if (loop || !(input.status && *input.status >= 400))
        error.shouldRetry = false;
    finishWithFailure(error, false);
}

// ---------------------------------------------------------------- timers

void AttemptLoop::armIdle(Attempt &a, qint64 delayMs) {
    if (a.idleTimer)
        m_clock.cancel(a.idleTimer);
    a.idleTimer = 0;
    if (m_settings.upstreamIdleTimeoutMs <= 0)
        return;
    const AttemptId id = a.id;
    a.idleTimer = m_clock.schedule(std::max<qint64>(1, delayMs), [this, id]() {
        if (Attempt *t = live(id)) {
            t->idleTimer = 0;
            onIdle(id);
        }
    });
}

void AttemptLoop::onIdle(AttemptId id) {
    // One timer per try, re-armed for the remainder on fire: no cancel/schedule per chunk.
    Attempt *a = live(id);
    if (!a || a->phase != Phase::Upstream)
        return;
    const qint64 limit = m_settings.upstreamIdleTimeoutMs;
    if (a->readPaused) {
        // Not read because the client takes nothing: the upstream is not silent, the client is.
        const qint64 stalled = m_clock.nowMs() - a->pausedAtMs;
        if (stalled < limit)
            return armIdle(*a, limit - stalled);
        return endStalledClient(*a);
    }
    const qint64 silent = m_clock.nowMs() - a->lastByteMs;
    if (silent < limit)
        return armIdle(*a, limit - silent);
    // Bytes that wait unread are no silence: the loop itself was held while they came (a paused
    // process, a busy thread), and its timers ran before its reads on resume. Healthy streams were
    // cut and their provider marked (probe V2 F5). They get a moment to be read, once per silence:
    // an upstream whose waiting bytes were pings alone is cut at its end.
    if (a->unreadGraceFor != a->lastByteMs && m_deps.runner->hasUnreadBytes(id)) {
        a->unreadGraceFor = a->lastByteMs;
        return armIdle(*a, std::min(limit, kUnreadGraceMs));
    }
    // Silent after its finish reason, the body never ended: that is the answer, as a break there is
    // (the review of P1 1: a non-streaming client's finished answer was failed over and billed twice).
    if (m_deps.runner->endAnswered(id))
        return;
    // A silent upstream ends as server_error (next candidate, or the
    // client's error), never an endless keepalive.
    m_deps.runner->abort(id);
    const QString message =
        QStringLiteral("nothing but pings or silence from the upstream for %1 ms (failover.upstreamIdleTimeoutMs)")
            .arg(limit);
    if (m_committed == id) {
        model::StreamEvent cut;
        cut.type = model::EventType::Error;
        cut.reason = model::StopReason::Error;
        cut.errorMessage = message;
        cut.errorStatus = 504;
        cut.usage = m_deps.runner->reportedUsage(id);
        TryFrame f;
        f.events = {cut};
        return handleEvents(*a, f);
    }
    TryFailure f;
    f.input.message = message;
    f.input.status = 504; // a gateway timeout: server_error by the table
    attemptFailed(*a, f);
}

void AttemptLoop::endStalledClient(Attempt &a) {
    // A client that took no byte of its answer for the whole idle limit holds an upstream
    // connection and 1 MiB for nothing. The answer ends; it is not the provider's failure: no
    // failed row of the provider's, no counter, no mark.
    const qint64 stalledMs = m_clock.nowMs() - a.pausedAtMs;
    // The answer's committed row alone told the window and the events feed it was whole (probe V3 2):
    // a second row says the client left it unread, as one for a client that closed its socket does.
    m_deps.observer->attemptRecorded(
        reportOf(a, AttemptOutcome::Aborted, {}, QStringLiteral("after_commit"),
                 QStringLiteral("the client read nothing of its answer for %1 ms: cut").arg(stalledMs)));
    settle(a);
    recordUsage(a, true, UsageReport::End::ClientGone);
    m_deps.observer->note(QStringLiteral("client stalled"), {{QStringLiteral("candidate"), a.candidate.name()},
                                                             {QStringLiteral("stalledMs"), stalledMs}});
    m_deps.client->streamError(GatewayError::make(
        408, GatewayError::categoryForStatus(408),
        QStringLiteral("the client read nothing of its answer for %1 ms (failover.upstreamIdleTimeoutMs)")
            .arg(stalledMs)));
    m_deps.client->endStream(StreamEnd::Broken);
    finish();
}

void AttemptLoop::onBudgetExpired(AttemptId id) {
    Attempt *a = live(id);
    if (!a)
        return;
    // Bytes waiting unread when the budget ends may hold a first token that came in time: the loop
    // was held past the end (a paused process, a busy thread) and runs its timers before its reads
    // on resume. Such a candidate was cut and marked, its answer thrown away, and the fallback
    // answered (probe AB1 F1; the idle timer's case is probe V2 F5). They are read first: a
    // meaningful event among them lifts the budget, as one in time does, and the attempt goes on.
    if (a->phase == Phase::Upstream && m_deps.runner->hasUnreadBytes(id)) {
        a->budgetGraceTimer = m_clock.schedule(kBudgetUnreadGraceMs, [this, id]() {
            Attempt *t = live(id);
            if (!t)
                return;
            t->budgetGraceTimer = 0;
            if (!t->ttftMs)
                cutAtBudget(*t);
        });
        return;
    }
    cutAtBudget(*a);
}

void AttemptLoop::cutAtBudget(Attempt &a) {
    TryFailure f;
    if (a.phase == Phase::Backoff && a.retryTimer) { // the backoff ends with the attempt (endAttempt)
        f.input.message = QStringLiteral("attempt budget expired during provider retries");
    } else if (a.phase == Phase::Setup) {
        f.input.message = QStringLiteral("attempt budget expired during credential setup");
    } else if (a.phase == Phase::Upstream) {
        f.input.message = QStringLiteral("attempt budget expired before the first token");
    } else {
        return;
    }
    if (a.budgetIsTheClients)
        f.input.message += QStringLiteral(" (brought inside the client's own wait, X-Stainless-Timeout: not marked)");
    if (a.budgetForTheLastResort) {
        f.input.message.replace(QLatin1String("attempt budget expired"), QLatin1String("request deadline reached"));
        m_lastResortDue = true; // the held-down follower is asked, though the deadline has passed
    }
    attemptFailed(a, f); // settles the try; the budget's timeout makes it server_error
}

void AttemptLoop::onDeadline() {
    m_deadlinePassed = true;
    for (auto &[id, attempt] : m_attempts) {
        Attempt &a = *attempt;
        if (m_finished)
            return;
        if (a.phase == Phase::Setup && !a.lastResort) {
            // A setup still running at the deadline is aborted: setup_error (never a mark),
            // outcome deadline, and the request ends with it, as any failure at the deadline.
            settle(a);
            UpstreamFailure f;
            f.kind = FailureKind::SetupError;
            f.message = QStringLiteral("credential setup still running at the request deadline");
            return afterFailure(a, f);
        }
        if (a.phase == Phase::Backoff && a.retryTimer) {
            // A provider retry waiting for its backoff never starts after the deadline.
            const UpstreamFailure f = a.pending ? *a.pending : m_lastFailure.value_or(UpstreamFailure{});
            return afterFailure(a, f);
        }
    }
}

void AttemptLoop::writeKeepalive() {
    m_keepaliveTimer = 0;
    if (m_finished)
        return;
    if (m_committed) {
        // A committed answer goes quiet while its upstream thinks, searches or sends only what this
        // format does not carry (pings of another API, reasoning the client asked not to see): the
        // client, and a proxy before it that cuts an idle connection (nginx after 60 s), heard
        // nothing for minutes (probe W2 F1). A keepalive once a whole period passed with no write
        // (so at most two periods of silence), never to a client that is not reading. The sink
        // counts its writes: no clock call, nothing done a frame.
        const quint64 writes = m_deps.client->writes();
        if (writes != m_clientWritesSeen || m_deps.client->pendingBytes() > 0) {
            m_clientWritesSeen = writes;
            m_keepaliveTimer = m_clock.schedule(m_settings.keepaliveMs, [this]() { writeKeepalive(); });
            return;
        }
    }
    m_deps.client->keepalive();
    m_clientWritesSeen = m_deps.client->writes();
    m_keepaliveTimer = m_clock.schedule(m_settings.keepaliveMs, [this]() { writeKeepalive(); });
}

void AttemptLoop::onClientGone() {
    if (m_finished)
        return;
    m_clientGone = true;
    // A client that leaves stops the loop: no follower, the upstream aborted, 499 in the log.
    // The answer the client left has a second row, as a cut after commit has: its committed row alone
    // told the window and the events feed nothing of it (probe R1 4).
    for (auto &[id, a] : m_attempts)
        if (a->phase != Phase::Done)
            m_deps.observer->attemptRecorded(
                id == m_committed ? reportOf(*a, AttemptOutcome::Aborted, {}, QStringLiteral("after_commit"),
                                             QStringLiteral("client closed the request (499) during the answer"))
                                  : reportOf(*a, AttemptOutcome::Aborted, {}, QStringLiteral("aborted"),
                                             QStringLiteral("client closed the request (499)")));
    m_deps.observer->note(QStringLiteral("client closed request"), {{QStringLiteral("status"), 499}});
    for (auto &[id, a] : m_attempts) {
        if (a->phase == Phase::Done)
            continue;
        settle(*a);
        // The attempt that answered keeps the plain request id.
        recordUsage(*a, id == m_committed, UsageReport::End::ClientGone);
    }
    finish();
}

void AttemptLoop::onShutdown(const GatewayError &error) {
    if (m_finished)
        return;
    for (auto &[id, a] : m_attempts) {
        if (a->phase == Phase::Done)
            continue;
        // The committed answer's row said committed: a second row says it was cut (as a break
        // after commit has, counted once); a try still before commit is aborted.
        const bool answering = id == m_committed;
        m_deps.observer->attemptRecorded(
            reportOf(*a, answering ? AttemptOutcome::Failed : AttemptOutcome::Aborted, {},
                     answering ? QStringLiteral("after_commit") : QStringLiteral("aborted"), error.message));
        settle(*a);
        recordUsage(*a, answering, answering ? UsageReport::End::Cut : UsageReport::End::Whole);
    }
    m_deps.observer->note(QStringLiteral("request ended at shutdown"),
                          {{QStringLiteral("status"), error.status}, {QStringLiteral("committed"), m_committed != 0}});
    m_deps.client->fail(error, m_attemptNo);
    finish();
}

// ---------------------------------------------------------------- the end

GatewayError AttemptLoop::clientErrorFor(const UpstreamFailure &f) const {
    // Skipped candidates may follow the failure: name the one that failed.
    if (f.kind == FailureKind::CredentialExhausted && m_lastFailureWait)
        return FailureResponse::forCredentialWait(QStringLiteral("upstream %1: %2").arg(m_lastFailureWho, f.message),
                                                  *m_lastFailureWait);
    return FailureResponse::forFailure(f, m_lastFailureWho, m_lastFailureAnswering);
}

GatewayError AttemptLoop::withNoFallbackNote(GatewayError error) const {
    // When the cost ceiling is why nothing is left, the client is told so, naming it.
    bool ceiling = m_overCostCeiling;
    for (const auto &c : m_resolution.chain)
        if (!ceiling && !m_tried.contains(c))
            if (const auto why = ineligibleReason(c); why && CandidatePolicy::isCostCeiling(*why))
                ceiling = true;
    if (ceiling && m_resolution.maxCostMultiplier)
        error.message += QStringLiteral("; no fallback left: the other candidates are priced over the route's cost "
                                        "ceiling (maxFallbackCostMultiplier %1)")
                             .arg(*m_resolution.maxCostMultiplier);
    // Fallbacks that could not take this request (a field or an input their API cannot carry) are
    // named too: the client sees why the outage was not hidden, and what to change to let them.
    std::optional<QString> cannotTake;
    if (m_incompatible)
        cannotTake = QStringLiteral("%1: %2").arg(m_incompatibleWho, *m_incompatible);
    for (const auto &c : m_resolution.chain) {
        if (cannotTake)
            break;
        if (!m_tried.contains(c) && !ineligibleReason(c))
            if (auto why = CandidatePolicy::precheckRejection(c, m_parsed);
                why || (why = CandidatePolicy::incompatibility(c, m_parsed)))
                cannotTake = QStringLiteral("%1: %2").arg(c.name(), *why);
    }
    if (cannotTake)
        error.message += QStringLiteral("; no fallback could take this request (%1)").arg(*cannotTake);
    return error;
}

void AttemptLoop::finishWithFailure(const GatewayError &errorIn, bool markedRetryAfter) {
    if (m_finished)
        return;
    GatewayError error = errorIn;
    // The upstream's own code and param, in the client's format; not over a code the gateway chose for
    // what the failure means (insufficient_quota for a spent quota the upstream sent as its 429
    // rate_limit_error, which Codex retries where it should stop: probe K4 2).
    if (m_upstreamError && !m_upstreamError->upstreamApi.isEmpty() && error.status == m_upstreamError->status &&
        error.code.isEmpty()) {
        error.upstreamApi = m_upstreamError->upstreamApi;
        error.code = m_upstreamError->code;
        error.providerType = m_upstreamError->providerType;
        error.param = m_upstreamError->param;
    }
    // The upstream said its failure is final, and the client hears that failure: its SDK is told so
    // too, as it would have been asking that upstream itself, not left to retry twice after sleeping
    // the Retry-After (probe AB1 F2).
    if (m_upstreamError && m_upstreamError->shouldRetry == false && error.status == m_upstreamError->status)
        error.shouldRetry = false;
    if (markedRetryAfter && m_settings.failoverEnabled && m_resolution.chain.size() > 1) {
        // Every candidate marked: tell the client when the first one comes back. A lone candidate
        // ignores its mark, so the upstream's own Retry-After stays: a retry then is served.
        // A candidate this request can never use (the tenant's policy, no usable credential, a field
        // it cannot carry) has no mark and says nothing of when to come back (probe Q2 F1).
        QList<qint64> remaining;
        for (const auto &c : m_resolution.chain)
            if (!ineligibleReason(c) && m_deps.runner->hasUsableCredential(c) &&
                !CandidatePolicy::incompatibility(c, m_parsed))
                remaining.append(m_deps.marks->remainingMs(m_settings.tenant, c.ref()));
        if (const auto retryAfter = FailureResponse::retryAfterWhenAllMarked(remaining))
            error.retryAfterMs = *retryAfter;
    }
    // The chain was walked and retried here already: an SDK's own retries (two, after sleeping the
    // Retry-After above, which they take uncapped) would walk it again as the marks run out, adding
    // a strike each time, and the app would hear of the outage a minute late (probe M1 1).
    // Retry-After stays, for an app that schedules its own retry.
    if (markedRetryAfter && m_upstreamTries > 1 && !error.shouldRetry)
        error.shouldRetry = false;
    if (m_lastFailureSameAgain && m_tried.size() == 1)
        error.shouldRetry = false;
    m_deps.client->fail(error, m_attemptNo);
    finish();
}

void AttemptLoop::finish() {
    if (m_finished)
        return;
    for (auto &[id, a] : m_attempts) {
        if (a->phase != Phase::Done)
            settle(*a);
        endAttempt(*a);
    }
    m_finished = true;
    for (auto *timer : {&m_deadlineTimer, &m_keepaliveTimer}) {
        if (*timer)
            m_clock.cancel(*timer);
        *timer = 0;
    }
    if (m_onFinished)
        m_onFinished();
}

// ---------------------------------------------------------------- accounting

AttemptReport AttemptLoop::reportOf(const Attempt &a, AttemptOutcome outcome, const QString &failure,
                                    const QString &logOutcome, const QString &message) const {
    AttemptReport r;
    r.attemptNo = a.no;
    r.candidate = a.candidate;
    r.outcome = outcome;
    r.failure = failure;
    r.logOutcome = logOutcome;
    r.message = message;
    r.status = a.status;
    r.elapsedMs = a.startMs ? m_clock.nowMs() - a.startMs : 0;
    r.ttftMs = a.ttftMs;
    return r;
}

void AttemptLoop::logFailure(const Attempt &a, const UpstreamFailure &f, const QString &logOutcome,
                             const QString &next) {
    util::LogFields o;
    o.reserve(6);
    o.append({QLatin1String("failure"), failureKindName(f.kind)});
    o.append({QLatin1String("elapsedMs"), m_clock.nowMs() - a.startMs});
    o.append({QLatin1String("error"), util::redactedAndTruncated(f.message, 300, {})});
    if (f.status)
        o.append({QLatin1String("status"), *f.status});
    if (f.retryAfterMs)
        o.append({QLatin1String("retryAfterMs"), *f.retryAfterMs});
    if (!next.isEmpty())
        o.append({QLatin1String("next"), next});
    m_deps.observer->attemptLogged(reportOf(a, AttemptOutcome::Failed, failureKindName(f.kind), logOutcome, f.message),
                                   o);
}

void AttemptLoop::recordUsage(Attempt &a, bool answered, UsageReport::End end) {
    // One usage row per try with nonzero usage. The answer keeps the plain id; a failed try
    // is REQ:aN, and a further try of the same attempt (provider retry, rotated credential)
    // REQ:aN.K, so no two rows share an id and no try's cost is lost or counted twice.
    // So is a whole answer whose upstream reported no usage (a server that sends none, or only
    // counts no upstream could mean, read as 0): a served answer is never free of its tenant's
    // budget, nor missing from the ledger.
    if ((!answered || end != UsageReport::End::Whole || a.usage.isZero()) && a.deltaChars > 0) {
        // An answer broken off before its upstream said what it cost (OpenAI and Responses report
        // usage only at the end, Anthropic's start says one output token; what an upstream did
        // report, Gemini's running count included, settle() took in): it was still produced, and
        // the provider bills it, whether the client got it (cut, aborted) or the next candidate
        // answered (a try cut before a non-streaming client saw anything). Four characters a
        // token, as the stop-sequence cut and count_tokens estimate, only for a figure the
        // upstream never gave (the output it counted so far wins when higher; a reported input,
        // plain or cached, is never estimated). Unbilled, an aborted stream was a way around a
        // tenant's budget.
        a.usage.output = std::max(a.usage.output, (a.deltaChars + 3) / 4);
        if (!inputReported(a.usage))
            a.usage.input = m_settings.inputTokensEstimate;
    }
    a.deltaChars = 0; // the next try of this attempt says its own
    if (a.usage.isZero()) {
        if (answered && m_committed == a.id)
            m_deps.observer->answerUnbilled(); // its open row goes all the same
        return;
    }
    QString id = QStringLiteral("%1:a%2").arg(m_settings.requestId).arg(a.no);
    if (a.usageRows > 0)
        id += QStringLiteral(".%1").arg(a.usageRows + 1);
    ++a.usageRows;
    UsageReport u;
    u.rowId = answered ? m_settings.requestId : id;
    u.candidate = a.candidate;
    u.usage = a.usage;
    u.answered = answered;
    u.end = end;
    m_triedAtCost = m_triedAtCost || !answered;
    m_deps.observer->usageRecorded(u);
    a.usage = {};
}

} // namespace sw::failover
