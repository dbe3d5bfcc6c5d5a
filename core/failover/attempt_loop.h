#pragma once
// The failover loop (docs/failover.md) as one state machine: try candidates in
// route order, hold each attempt's events until its first meaningful one, fail
// over only before that point, and give the client exactly one answer or error.
//
// Inputs are typed events (the runner's setup done or failed, response head,
// decoded frames, transport error, failure; and the loop's own timers: budget,
// deadline, idle, retry backoff, keepalive; and the client leaving). Outputs go
// through three narrow seams: AttemptRunner (one upstream try), AttemptObserver
// (rows, log lines, counters, marks told) and ClientSink (what the client sees).
// Every timer runs on the injected util::Clock, so tests/unit/test_attempt_loop.cpp
// drives the whole loop with a scripted runner on a FakeClock.
//
// Attempts are kept by AttemptId, not as one "current attempt": a later hedged
// follower (two tries in flight, commit whichever commits first) needs no new state.

#include "core/failover/candidate_resolver.h"
#include "core/failover/commit_hold.h"
#include "core/failover/failure_classifier.h"
#include "core/failover/failure_decision.h"
#include "core/model/chat_request.h"
#include "core/model/event_accumulator.h"
#include "core/model/gateway_error.h"
#include "core/util/clock.h"
#include "core/util/log_fields.h"

#include <QJsonObject>
#include <functional>
#include <map>
#include <memory>

namespace sw::failover {

class AttemptBudget;
class ProviderDownMarks;

using AttemptId = quint64;

// One try of one candidate, as the runner is asked to start it.
struct TryStart {
    AttemptId id = 0;
    int attemptNo = 0; // the attempt's number in the request (1-based; skipped candidates count)
    Candidate candidate;
    bool nextCredential = false; // a rotation: the pool's credential after the one last used
    // The upstream refused a signature in the history (another provider's): this try sends the
    // earlier turns without their signed reasoning.
    bool withoutReplayedReasoning = false;
    // The upstream (a Chat server in DeepSeek's thinking mode) refused the request because an
    // assistant turn with tool calls went without its reasoning_content: this try sends it back.
    bool withReasoningBack = false;
    // The upstream (OpenAI, an organisation not verified) refused the reasoning summary: this try
    // asks for none.
    bool withoutReasoningSummary = false;
    // The upstream (a Mistral chat template) refused a tool call id that is not nine characters of
    // [a-zA-Z0-9]: this try sends each id by such an alias.
    bool withNineCharToolIds = false;
    // The upstream (OpenAI, an organisation not verified) refused to stream the model: this try asks
    // for the answer whole (upstream::Target::noStream).
    bool withoutStreaming = false;
    // The upstream refused the request's output cap and named its maximum: this try asks for no
    // more (upstream::Target::maxOutputTokens).
    std::optional<int> outputCap;
};

// What setup (credential) produced, once it is done.
struct TryReady {
    bool passthrough = false; // same API and streaming: the client gets the upstream's own frames
    QString upstreamApi;      // the API that will answer (the encoder names it)
    QString upstreamProvider;
    // Members of the client's body a converted request goes without (wire::droppedMembers): the
    // answer names them, so none is dropped in silence.
    QStringList dropped;
};

// One decoded upstream frame. `raw` is the frame as the client would get it on the
// passthrough path (already redacted), absent otherwise and for the decoder's end events.
struct TryFrame {
    QList<model::StreamEvent> events;
    std::optional<QByteArray> raw;
    // The raw frame is no error in the client's format though the decoder failed the stream on it
    // (StreamDecoder::lastFailedOnAPlainFrame): after it, the client gets the gateway's error.
    bool rawHidesError = false;
    // A ping or provably empty delta, never kept for replay. Asked only while the attempt is
    // held: deciding it may parse the frame, which a committed stream must not pay for.
    std::function<bool()> isNoise;
    qint64 frameBytes = 0; // what the frame costs to keep
    // The decoder kept part of the frame without an event for it (StreamDecoder::lastWasKept): held
    // before the commit as the hold's events are, though the loop holds nothing of it.
    bool keptByDecoder = false;
    // What keeping one raw frame costs beyond its bytes: its buffer's header and allocation, its list
    // slot. Counted with the bytes, so that a flood of tiny frames (`data: ` alone, `{}`) is bounded in
    // memory by limits.maxHoldBytes as large ones are (probe Q3 F1: 57 MiB held under an 8 MiB bound).
    static constexpr qint64 kHeldFrameOverhead = 64;
    bool afterEnd = false; // made by the decoder at end of body: an Error then is an early close
    // ...of a 2xx answer whose body held no byte (Content-Length: 0, a 204): the server answered,
    // with nothing: this model's failure, not a broken connection to the host (probe J2 2).
    bool emptyBody = false;
    std::optional<upstream::TransportError> broken; // made by the loop for a connection that broke
};

class AttemptRunner {
public:
    virtual ~AttemptRunner() = default;
    // Starts setup (credential) for one try; answers with AttemptLoop::onSetupDone/onSetupFailed,
    // possibly before returning.
    virtual void start(const TryStart &start) = 0;
    // After onSetupDone: launches the upstream call. Events follow on the loop's on*() inputs.
    virtual void launch(AttemptId id) = 0;
    // Ends the try at once; nothing more is reported for `id`. Idempotent.
    virtual void abort(AttemptId id) = 0;
    virtual void setReadPaused(AttemptId id, bool paused) = 0;
    // An error answer (not 2xx) whose body has not ended kErrorBodyWindowMs after its head: stop
    // reading it and report the failure now (onFailure) from the head and the body so far.
    virtual void endErrorBody(AttemptId id) = 0;
    // A 2xx stream that said its answer is complete (a finish reason) and then fell silent instead
    // of ending its body: end the try there, as a clean end of the body ends it (its events reach
    // the loop before this returns), and return true. False, doing nothing, for any other try.
    virtual bool endAnswered(AttemptId id) {
        Q_UNUSED(id);
        return false;
    }
    // Bytes of try `id`'s answer wait unread (UpstreamCall::hasUnreadBytes).
    virtual bool hasUnreadBytes(AttemptId id) const {
        Q_UNUSED(id);
        return false;
    }
    // Could a try of this candidate find a credential now? (a candidate without one is no follower)
    virtual bool hasUsableCredential(const Candidate &candidate) const = 0;
    // Why it finds none, for the client's error (the key refused, set aside, or never set); empty
    // when it cannot say (the resolver then names the provider alone).
    virtual QString whyNoCredential(const Candidate &) const { return {}; }
    virtual std::optional<CredentialWait> credentialWait(const Candidate &candidate) const = 0;
    // credential_exhausted: park or reject the credential `id` used; true when the pool has
    // another usable one to rotate to (never for a caller's own passthrough key).
    // Returns the index of the credential left behind, or nullopt when there is none to rotate to.
    virtual std::optional<int> rotateCredential(AttemptId id, const TryFailure &failure) = 0;
    // Whether every tool call's End event carries its whole argument text, parsed (the upstream
    // decoders' CanonicalStreamBuilder): then a non-streaming answer keeps that text once, not
    // also from the deltas (model::EventAccumulator::setKeepsToolDeltas).
    virtual bool endsCarryWholeToolCalls() const { return false; }
    // The usage the upstream has reported so far on try `id`'s stream (its decoder's running
    // count, also what no event carried yet); empty before its body. Asked when a try ends however
    // it ends, so a reset, an abort or the gateway's own cut bills what the upstream said.
    virtual model::Usage reportedUsage(AttemptId id) const {
        Q_UNUSED(id);
        return {};
    }
};

enum class AttemptOutcome { Committed, Failed, Skipped, Aborted };

// One attempt row / log line's facts; the observer adds the request's own (id, tenant, format…).
struct AttemptReport {
    int attemptNo = 0;
    std::optional<Candidate> candidate;
    AttemptOutcome outcome = AttemptOutcome::Committed;
    QString failure;    // failure kind name, empty when none
    QString logOutcome; // committed (empty), retrying, exhausted, budget, deadline, stop, skipped, aborted,
                        // after_commit (a committed answer broken off)
    QString message;
    int status = 0;
    qint64 elapsedMs = 0;
    std::optional<qint64> ttftMs;
    QStringList dropped; // the committed attempt's TryReady::dropped: what its request went without
};

struct UsageReport {
    QString rowId; // REQ for the answer, REQ:aN, REQ:aN.K for other tries: never repeated
    Candidate candidate;
    model::Usage usage;
    bool answered = false;
    // How the try ended: whole (the answer, complete), cut after its content had started (the
    // upstream broke off, or the gateway ended it), or with the client gone (it closed the
    // request, or read nothing for the idle limit). A failed try before commit is neither.
    enum class End { Whole, Cut, ClientGone };
    End end = End::Whole;
};

class AttemptObserver {
public:
    virtual ~AttemptObserver() = default;
    virtual void attemptRecorded(const AttemptReport &report) = 0;
    // The "candidate failover" line of a failed or skipped attempt; `extra` holds its own keys.
    virtual void attemptLogged(const AttemptReport &report, const util::LogFields &extra) = 0;
    virtual void usageRecorded(const UsageReport &usage) = 0;
    // The answer committed (a streamed one is final from here): its usage so far, the input
    // estimated when the upstream has not said it (Anthropic's start does). Not a usage row: the
    // ledger keeps it open until the answer's own row (rowId, answered) or answerUnbilled() ends
    // it, and bills it only if the process dies first.
    virtual void answerOpened(const UsageReport &) {}
    // The committed answer ended with nothing to bill (no usage row follows).
    virtual void answerUnbilled() {}
    virtual void note(const QString &message, const QJsonObject &fields) = 0; // an info log line
    virtual void failureCounted(const Candidate &candidate, FailureKind kind) = 0;
    virtual void marked(const Candidate &candidate, qint64 ttlMs) = 0;
    // An answer lifted `count` marks covering the candidate (ProviderDownMarks::answered).
    virtual void marksLifted(const Candidate &candidate, int count) {
        Q_UNUSED(candidate);
        Q_UNUSED(count);
    }
    virtual void ttftObserved(qint64 ms) = 0;
};

// The one answer or error the client gets, in its format.
struct AnswerInfo {
    QString candidate;
    int attempts = 0;
    QString fallbackFrom;
    QString fallbackReason;
    QString upstreamApi;
    QString upstreamProvider;
    double costInput = 0; // the answering model's prices per million tokens (models.*.cost)
    double costOutput = 0;
    double costCacheRead = 0;
    double costCacheWrite = 0;
    QStringList dropped; // TryReady::dropped of the answering attempt
};

// How a committed stream ended: with the whole answer (its done event written), or broken by an
// error after commit (the format's in-band error is the stream's last event).
enum class StreamEnd { Answered, Broken };

class ClientSink {
public:
    virtual ~ClientSink() = default;
    virtual void openStream() = 0; // early SSE headers (idempotent)
    // The API and provider about to answer: an encoder made before commit (an error) names them.
    virtual void upstreamChosen(const QString &api, const QString &provider) = 0;
    virtual bool streamOpen() const = 0; // headers are out: errors go in band
    virtual void keepalive() = 0;
    // Commit of a streamed attempt: the candidate comment, and the encoder unless passthrough.
    virtual void commitStream(const AnswerInfo &info, bool passthrough) = 0;
    // What the stream has been written so far leaves now, not with the rest of the upstream's
    // read: called once, when the first content is written (time to first token). A sink that
    // holds nothing back has nothing to do.
    virtual void sendNow() {}
    virtual void streamEvent(const model::StreamEvent &event) = 0;  // through the encoder
    virtual void streamFrame(const QByteArray &frame) = 0;          // passthrough, already redacted
    virtual void streamError(const model::GatewayError &error) = 0; // the format's in-band error
    virtual void endStream(StreamEnd end) = 0;
    virtual void answer(model::AssistantMessage message, const AnswerInfo &info) = 0; // JSON 200
    virtual void fail(const model::GatewayError &error, int attempts) = 0;            // whole error, or in band + end
    virtual qint64 pendingBytes() const = 0;
    virtual quint64 writes() const = 0; // writes of any bytes so far (keepalives go in a committed answer's silences)
};

struct LoopSettings {
    QString tenant;
    QString requestId;
    QString requestedModel;
    bool stream = false;
    bool failoverEnabled = true;
    qint64 deadlineMs = 0;
    // The configured deadline, when the client's own wait (X-Stainless-Timeout) brought deadlineMs
    // inside it; 0 otherwise. A budget that fires only on the client's clock fails over and marks
    // nothing: a client that waits 3 s must not take a provider that answers in 2 s from its tenant.
    qint64 ownDeadlineMs = 0;
    qint64 keepaliveMs = 0;
    qint64 upstreamIdleTimeoutMs = 0;
    qint64 maxRetryDelayMs = 10000;
    qint64 maxHoldBytes = CommitHold::kDefaultMaxBytes;
    qint64 inputTokensEstimate = 0; // the client's body at four bytes a token: an unreported input's estimate
};

class AttemptLoop {
public:
    // An error answer's body must end this long after its head. The status already decides
    // the failover; the body only refines the kind (insufficient_quota, context length), and an
    // upstream that trickles it, or sends one without end, must not hold the request meanwhile.
    static constexpr qint64 kErrorBodyWindowMs = 1000;
    // A silent try whose connection holds unread bytes gets this long more to read them (onIdle).
    static constexpr qint64 kUnreadGraceMs = 1000;
    // One whose budget ends with bytes unread (onBudgetExpired) gets this long: enough for the loop,
    // running again, to read them, and well inside the 250 ms a budget brought inside the client's
    // own wait keeps for the follower.
    static constexpr qint64 kBudgetUnreadGraceMs = 100;

    struct Deps {
        util::Clock *clock = nullptr;
        ProviderDownMarks *marks = nullptr;
        AttemptRunner *runner = nullptr;
        AttemptObserver *observer = nullptr;
        ClientSink *client = nullptr;
        std::shared_ptr<const config::Config> config; // tenant policy and cost ceiling
        std::function<qint64(qint64)> random;         // retry jitter; RetryPolicy::systemRandom() when empty
        // Asked before a try that follows one that cost (a usage row of a failed try): the tenant's
        // budget holds the request's estimate again (ChatRequest, BudgetTracker::renew). An error ends
        // the request with it, untried. Empty: every try goes.
        std::function<std::optional<model::GatewayError>()> admitAnotherTry;
    };

    AttemptLoop(Deps deps, LoopSettings settings, Resolution resolution, const model::ChatRequest &parsed,
                std::function<void()> onFinished);
    ~AttemptLoop();
    Q_DISABLE_COPY_MOVE(AttemptLoop)

    void start(); // arms the deadline, begins with the first candidate
    bool finished() const { return m_finished; }

    // Inputs from the runner, by try.
    void onSetupDone(AttemptId id, const TryReady &ready);
    void onSetupFailed(AttemptId id, FailureKind kind, const QString &message);
    // `errorAnswer`: the body is an error to classify, not an answer (any non-2xx; a 2xx that is not
    // an event stream): it gets kErrorBodyWindowMs, then AttemptRunner::endErrorBody.
    void onResponseHead(AttemptId id, int status, bool errorAnswer);
    void onActivity(AttemptId id); // any upstream byte: the idle timeout counts from the last
    void onFrame(AttemptId id, const TryFrame &frame);
    // `answerChars`: what a 2xx JSON answer (a server that ignores stream: true) had said when its
    // body broke, read from its bytes: the try said something, as a stream cut after content did.
    void onTransportError(AttemptId id, upstream::TransportError error, const QString &message, qint64 answerChars = 0);
    void onFailure(AttemptId id, const TryFailure &failure);
    // Whether this attempt's answer is the client's (committed): its failures are then cut, not failed over.
    bool isCommitted(AttemptId id) const { return id != 0 && m_committed == id; }
    // Inputs from the client.
    void onClientGone();
    void onClientDrained();
    // The gateway is shutting down and the request's grace is over (Engine::requestShutdown): it
    // ends now with `error`, in band once the stream is open, else whole. The answer is billed as
    // cut; it is not the provider's failure (no counter, no mark).
    void onShutdown(const model::GatewayError &error);

private:
    struct Attempt;
    enum class Phase { Setup, Upstream, Backoff, Done };

    Attempt *live(AttemptId id);
    void nextCandidate();
    void recordSkips(const QList<Skip> &skipped);
    void recordMarkSkip(const Candidate &candidate);
    void recordCannotTake(const Candidate &candidate, const QString &why);
    void noteDropped(const Attempt &a);
    void rejectRequest(const Candidate &candidate, const QString &why);
    void beginAttempt(const Candidate &candidate, bool lastResort = false);
    void startTry(Attempt &a, bool nextCredential);
    CandidateResolver::State resolverState() const;
    std::optional<Candidate> follower() const; // the candidate failover would ask next, if any
    // A follower that is not marked down: what the attempt budget and the in-attempt retries
    // weigh (a marked one is still asked after, as the last resort it is).
    bool hasLiveFollower() const;
    std::optional<QString> ineligibleReason(const Candidate &c) const;

    // The attempt budget: armed before the attempt's first launch, settled at its end, along with
    // a provider retry's backoff (the attempt is Done from then on).
    void armBudget(Attempt &a);
    void endAttempt(Attempt &a);

    // A try's decoded frame, by where the answer stands: the non-streaming drain, held until the
    // commit point, or relayed to the client after it. Each event is accounted first (account).
    void handleEvents(Attempt &a, const TryFrame &frame);
    void account(Attempt &a, const model::StreamEvent &e);
    void drain(Attempt &a, const TryFrame &frame);
    void holdUntilCommit(Attempt &a, const TryFrame &frame);
    void relayCommitted(Attempt &a, const TryFrame &frame, qsizetype from);
    // After a committed event: whether the request ended (Done answered, an Error cut it, or it
    // had ended already).
    bool endedCommitted(Attempt &a, const model::StreamEvent &e, const TryFrame &frame);
    void commit(Attempt &a, const QList<model::StreamEvent> &released);
    void liftDisprovedMarks(const Attempt &a);
    void succeed(Attempt &a);
    void applyBackpressure(Attempt &a);

    // A try failed: FailureDecision::decide says what follows, and these carry it out.
    void attemptFailed(Attempt &a, const TryFailure &failure);
    void retryMended(Attempt &a, const FailureDecision &d, const FailureInput &input);
    bool rotateCredential(Attempt &a, const TryFailure &failure, const UpstreamFailure &classified);
    bool tryInAttemptRetry(Attempt &a, const UpstreamFailure &failure, bool upstreamSaidFinal);
    void afterFailure(Attempt &a, const UpstreamFailure &failure, const QString &cause = {});
    // The failure the client would hear tells less than the one it already holds (the .cpp says when).
    bool saysLessThanTheLastFailure(const UpstreamFailure &failure) const;
    void reportCutAfterCommit(const Attempt &a, const model::StreamEvent &error, const TryFrame &frame);
    void endStalledClient(Attempt &a);
    void stopWithUpstreamError(Attempt &a, const FailureInput &input);
    void settle(Attempt &a);
    void armIdle(Attempt &a, qint64 delayMs);
    void onIdle(AttemptId id);
    void onBudgetExpired(AttemptId id);
    void cutAtBudget(Attempt &a);
    void onDeadline();
    void writeKeepalive();

    model::GatewayError clientErrorFor(const UpstreamFailure &failure) const;
    model::GatewayError withNoFallbackNote(model::GatewayError error) const;
    void finishWithFailure(const model::GatewayError &error, bool markedRetryAfter);
    void finish();

    AttemptReport reportOf(const Attempt &a, AttemptOutcome outcome, const QString &failure, const QString &logOutcome,
                           const QString &message) const;
    void logFailure(const Attempt &a, const UpstreamFailure &failure, const QString &logOutcome, const QString &next);
    void recordUsage(Attempt &a, bool answered, UsageReport::End end = UsageReport::End::Whole);
    AnswerInfo answerInfo(const Attempt &a) const;

    Deps m_deps;
    util::Clock &m_clock;
    LoopSettings m_settings;
    Resolution m_resolution;
    const model::ChatRequest &m_parsed;
    std::function<void()> m_onFinished;

    // Every attempt of the request, by id; kept (settled) to the end so a callback of a
    // timer that belongs to one never outlives it.
    std::map<AttemptId, std::unique_ptr<Attempt>> m_attempts;
    AttemptId m_nextId = 1;
    AttemptId m_committed = 0;
    TriedCandidates m_tried;
    int m_attemptNo = 0;
    int m_upstreamTries = 0; // every call started: candidates, in-attempt retries, other keys

    qint64 m_startMs = 0;
    qint64 m_deadlineAtMs = 0;
    util::Clock::TimerId m_deadlineTimer = 0;
    util::Clock::TimerId m_keepaliveTimer = 0;
    quint64 m_clientWritesSeen = 0; // the sink's writes at the last keepalive check (after commit)
    bool m_deadlinePassed = false;
    bool m_lastResortDue = false; // a budget cut at the deadline: its held-down follower is still asked (armBudget)
    bool m_clientGone = false;
    bool m_finished = false;
    bool m_triedAtCost = false; // a failed try recorded a usage row since the budget was last asked
    bool m_overCostCeiling = false;

    std::optional<UpstreamFailure> m_lastFailure;
    QString m_lastFailureWho;
    bool m_lastFailureAnswering = false; // the failed attempt had a 2xx head (FailureResponse::forFailure)
    bool m_lastFailureSameAgain = false; // its host answered in a form not read: asked again, the same
    std::optional<QString> m_noCredential;
    // Candidates out for want of a credential: the soonest of their keys back, when every one of them
    // only waits out a limit (the client then gets 429 and Retry-After, not 502).
    std::optional<CredentialWait> m_credentialWait;
    bool m_credentialRefused = false;
    std::optional<CredentialWait> m_lastFailureWait; // the failed candidate's, for a credential_exhausted failure
    void noteCredentialWait(const Candidate &candidate);
    std::optional<QString> m_incompatible; // the first candidate that could not serve the request, and why
    QString m_incompatibleWho;
    std::optional<model::GatewayError> m_upstreamError;
    QString m_fallbackFrom;
    QString m_fallbackReason;
    // The first candidate passed over for its mark (Skip::marked), and the mark's kind. Kept apart
    // from m_fallbackFrom: a marked candidate stays in the chain, and when it answers after all
    // (no other could) the answer fell back from what failed, not from it.
    TriedCandidates m_markSkipped; // each one's row is written once, however often it is passed over
    QString m_markedFrom;
    QString m_markedReason;
    bool m_markedFirst = false; // passed over before any other fallback: the answer names it first
};

} // namespace sw::failover
