#include "server/chat_request.h"

#include "failover/candidate_policy.h"
#include "credentials/park_policy.h"
#include "failover/failure_response.h"
#include "failover/provider_down_marks.h"
#include "failover/retry_policy.h"
#include "server/http_exchange.h"
#include "server/idempotency_store.h"
#include "telemetry/telemetry.h"
#include "util/clock.h"
#include "util/redaction.h"

#include <QDateTime>
#include <QJsonObject>
#include <QJsonArray>
#include <QJsonDocument>


namespace sw::server {

using failover::FailureKind;
using model::ErrorCategory;
using model::GatewayError;

namespace {
constexpr qint64 kMaxErrorBody = 64 * 1024;
// Backpressure: stop reading the upstream while the client has more than this unsent.
constexpr qint64 kMaxClientQueue = 1024 * 1024;

// Frames that cannot change what the client sees, so they are never kept for replay
// before commit: keepalive pings and empty deltas (a flood of them once took RSS to 1 GiB).
bool isNoiseFrame(const upstream::SseEvent &r, const QList<model::StreamEvent> &events)
{
    if (r.event == "ping" || (r.data.size() < 128 && r.data.contains("\"ping\"")))
        return true;
    if (!events.isEmpty())
        return false; // decided by the hold, per event
    // A frame that decoded to nothing may still carry content a decoder defers (a second
    // tool call's deltas while the first is open), so only a provably empty delta is
    // noise: a delta holding no more than its type or role and empty strings (Anthropic
    // content_block_delta, Responses *.delta, Chat choices), with no finish reason or usage.
    // Anything else is held, and counted against maxHoldBytes.
    if (r.data.size() > 1024 || !r.data.contains("\"delta\""))
        return false;
    const auto emptyDelta = [](const QJsonValue &d) {
        if (d.isNull() || (d.isString() && d.toString().isEmpty()))
            return true;
        if (!d.isObject())
            return false;
        const QJsonObject o = d.toObject();
        for (auto it = o.begin(); it != o.end(); ++it) {
            if (it.key() == QLatin1String("type") || it.key() == QLatin1String("role"))
                continue;
            if (!it.value().isNull() && !(it.value().isString() && it.value().toString().isEmpty()))
                return false;
        }
        return true;
    };
    const QJsonObject frame = QJsonDocument::fromJson(r.data).object();
    if (frame.contains(QStringLiteral("usage")) && !frame.value(QStringLiteral("usage")).isNull())
        return false;
    if (!frame.contains(QStringLiteral("choices")))
        return frame.contains(QStringLiteral("delta")) && emptyDelta(frame.value(QStringLiteral("delta")));
    const QJsonArray choices = frame.value(QStringLiteral("choices")).toArray();
    for (const QJsonValue &c : choices) {
        const QJsonObject choice = c.toObject();
        if (!choice.value(QStringLiteral("finish_reason")).isNull() || !emptyDelta(choice.value(QStringLiteral("delta"))))
            return false;
    }
    return !choices.isEmpty();
}

QByteArray sseFrame(const upstream::SseEvent &e)
{
    QByteArray out;
    if (!e.event.isEmpty())
        out += "event: " + e.event + '\n';
    for (const QByteArray &line : e.data.split('\n'))
        out += "data: " + line + '\n';
    out += '\n';
    return out;
}

bool is2xx(int status)
{
    return status >= 200 && status < 300;
}
} // namespace

ChatRequest::ChatRequest(EngineContext &ctx, formats::InboundFormat format, InboundRequest &&request,
                         HttpExchange *exchange, QString tenant, QString requestId, QObject *parent)
    : QObject(parent), m_ctx(ctx), m_config(ctx.config), m_format(format), m_codec(formats::codecFor(format)),
      m_request(std::move(request)), m_exchange(exchange), m_tenant(std::move(tenant)), m_requestId(std::move(requestId))
{
    if (m_exchange) {
        m_exchange->setParent(this);
        connect(m_exchange, &HttpExchange::clientGone, this, &ChatRequest::onClientGone);
        connect(m_exchange, &HttpExchange::drained, this, &ChatRequest::onClientDrained);
    }
}

ChatRequest::~ChatRequest()
{
    if (m_call)
        m_call->abort();
    m_budget.reset();
    m_ctx.pools->release(m_lease);
    for (auto id : {m_deadlineTimer, m_keepaliveTimer, m_retryTimer, m_idleTimer})
        if (id)
            m_ctx.clock->cancel(id);
}

void ChatRequest::start()
{
    m_startMs = m_ctx.clock->nowMs();
    m_ctx.telemetry->requestStarted();
    GatewayError error;
    auto parsed = m_codec.decode(m_request.body, &error);
    if (!parsed) {
        respondError(error);
        return finish();
    }
    m_parsed = std::move(*parsed);
    m_encodeInfo.model = m_parsed.model;
    m_encodeInfo.createdSecs = QDateTime::currentSecsSinceEpoch();
    m_encodeInfo.includeUsage = m_parsed.includeUsage;
    m_encodeInfo.responseId = m_requestId;

    auto resolution = failover::CandidateResolver::resolve(*m_config, m_parsed.model);
    if (!resolution || resolution->chain.isEmpty()) {
        respondError(GatewayError::make(404, ErrorCategory::NotFound,
                                        QStringLiteral("model \"%1\" is not a route, alias, provider/model selector "
                                                       "or configured model")
                                            .arg(m_parsed.model)));
        return finish();
    }
    m_resolution = std::move(*resolution);

    if (m_ctx.idempotency) {
        const QByteArray key = m_request.header("idempotency-key");
        if (!key.isEmpty()) {
            const auto hit = m_ctx.idempotency->begin(m_tenant, key, m_request.body);
            if (hit.state == IdempotencyStore::State::InFlight) {
                respondError(GatewayError::make(409, ErrorCategory::Conflict,
                                                QStringLiteral("a request with this Idempotency-Key is in flight")));
                return finish();
            }
            if (hit.state == IdempotencyStore::State::Completed) {
                if (m_exchange) {
                    auto headers = hit.headers;
                    headers.emplace_back("x-switchman-idempotent-replay", "true");
                    m_exchange->respond(hit.status, headers, hit.body);
                }
                return finish();
            }
            m_idempotencyKey = key;
        }
    }

    if (m_config->failover.enabled) {
        m_deadlineAtMs = m_startMs + m_config->failover.deadlineMs;
        m_deadlineTimer = m_ctx.clock->schedule(m_config->failover.deadlineMs, [this]() {
            m_deadlineTimer = 0;
            onDeadline();
        });
    }
    nextCandidate();
}

// ---------------------------------------------------------------- the loop

std::optional<QString> ChatRequest::ineligibleReason(const failover::Candidate &c) const
{
    return failover::CandidatePolicy::ineligibleReason(*m_config, m_tenant, m_resolution, c);
}

std::optional<QString> ChatRequest::precheckRejection(const failover::Candidate &c) const
{
    // record: chatRouteRejection and the Responses file-reference check.
    if (c.model.kind == QLatin1String("embedding"))
        return QStringLiteral("%1 is an embedding model and cannot answer chat requests").arg(c.name());
    bool hasImage = false;
    bool hasFileId = false;
    for (const auto &m : m_parsed.context.messages)
        for (const auto &b : m.content)
            if (b.type == model::BlockType::Image) {
                hasImage = true;
                if (b.url.startsWith(QLatin1String("file-")))
                    hasFileId = true;
            }
    if (hasImage && !c.model.input.contains(QLatin1String("image")))
        return QStringLiteral("%1 does not accept image input").arg(c.name());
    if (hasFileId && m_format == formats::InboundFormat::OpenAIResponses && c.provider.api != QLatin1String("openai-responses"))
        return QStringLiteral("%1 cannot read OpenAI file references").arg(c.name());
    if (!upstream::adapterFor(c.provider.api))
        return QStringLiteral("%1 uses an unsupported upstream API \"%2\"").arg(c.name(), c.provider.api);
    if (auto why = upstream::adapterFor(c.provider.api)->incompatibility(m_parsed, m_format)) // translation
        return QStringLiteral("%1 cannot serve this request: %2").arg(c.name(), *why);
    return std::nullopt;
}

failover::CandidateResolver::State ChatRequest::resolverState() const
{
    failover::CandidateResolver::State state;
    // failover.enabled false: a plain relay, marks are neither set nor consulted.
    if (m_config->failover.enabled)
        state.isMarked = [this](const failover::Candidate &c) { return m_ctx.marks->isDown(m_tenant, c.ref()); };
    state.hasCredential = [this](const failover::Candidate &c) {
        return m_ctx.pools->hasUsable(c.provider.id, c.provider.credentials, !callerAuth().isEmpty());
    };
    state.ineligible = [this](const failover::Candidate &c) { return ineligibleReason(c); };
    return state;
}

bool ChatRequest::hasFollower() const
{
    if (!m_config->failover.enabled || m_resolution.direct || m_clientGone)
        return false;
    return failover::CandidateResolver::next(m_resolution, m_tried, resolverState()).has_value();
}

QByteArray ChatRequest::callerAuth() const
{
    QByteArray auth = m_request.header("x-api-key");
    if (auth.isEmpty()) {
        auth = m_request.header("authorization");
        if (auth.startsWith("Bearer ") || auth.startsWith("bearer "))
            auth = auth.mid(7);
    }
    // A caller that names its tenant with x-switchman-key sends its own provider key in the auth header.
    return m_request.header("x-switchman-key").isEmpty() && !m_config->tenants.isEmpty() ? QByteArray() : auth;
}

void ChatRequest::recordSkips(const QList<failover::Skip> &skipped)
{
    for (const auto &s : skipped) {
        if (m_tried.contains(s.candidate.ref().key()))
            continue;
        m_tried.insert(s.candidate.ref().key());
        ++m_attemptNo;
        m_candidate = s.candidate;
        if (failover::CandidatePolicy::isCostCeiling(s.reason))
            m_overCostCeiling = true;
        // issue 13: a candidate passed over for want of a credential is visible, never a silent reroute.
        const QString failure =
            s.noCredential ? failover::failureKindName(FailureKind::CredentialExhausted) : QString();
        if (s.noCredential && !m_noCredential)
            m_noCredential = QStringLiteral("no usable credential for %1: %2").arg(s.candidate.name(), s.reason);
        m_status = 0;
        m_attemptStartMs = 0;
        m_ttftMs.reset();
        recordAttempt(telemetry::AttemptOutcome::Skipped, failure, QStringLiteral("skipped"), s.reason);
        logSkip(s.reason, failure);
    }
}

void ChatRequest::nextCandidate()
{
    if (m_phase == Phase::Finished)
        return;
    if (m_clientGone)
        return finish();
    QList<failover::Skip> skipped;
    auto candidate = failover::CandidateResolver::next(m_resolution, m_tried, resolverState(), &skipped);
    recordSkips(skipped);
    if (!candidate) {
        // The last real upstream failure wins over our own "no credential".
        if (m_lastFailure)
            return finishWithFailure(withCostCeilingNote(clientErrorFor(*m_lastFailure)), true);
        if (m_stopError)
            return finishWithFailure(*m_stopError, false);
        if (m_noCredential)
            return finishWithFailure(GatewayError::make(502, ErrorCategory::ServerError, *m_noCredential), false);
        QString why = QStringLiteral("no eligible candidate for \"%1\"").arg(m_parsed.model);
        if (m_resolution.maxCostMultiplier)
            why += QStringLiteral(" (route cost ceiling %1x)").arg(*m_resolution.maxCostMultiplier);
        return finishWithFailure(GatewayError::make(403, ErrorCategory::Permission, why), false);
    }
    if (m_deadlinePassed && m_attemptNo > 0)
        return finishWithFailure(m_lastFailure ? clientErrorFor(*m_lastFailure)
                                               : GatewayError::make(504, ErrorCategory::Timeout,
                                                                    QStringLiteral("request deadline passed")),
                                 false);
    beginAttempt(*candidate);
}

void ChatRequest::beginAttempt(const failover::Candidate &candidate)
{
    m_tried.insert(candidate.ref().key());
    ++m_attemptNo;
    m_candidate = candidate;
    m_retries = 0;
    m_usageRows = 0;
    m_credentialIndex = 0;
    retireBudget();
    if (auto rejection = precheckRejection(candidate)) {
        if (m_attemptNo == 1 || m_resolution.chain.size() == 1) {
            // The first candidate fails as it would without failover.
            recordAttempt(telemetry::AttemptOutcome::Failed, {}, QStringLiteral("exhausted"), *rejection);
            respondError(GatewayError::make(400, ErrorCategory::InvalidRequest, *rejection));
            return finish();
        }
        recordAttempt(telemetry::AttemptOutcome::Skipped, {}, QStringLiteral("skipped"), *rejection);
        logSkip(*rejection);
        return nextCandidate();
    }
    m_adapter = upstream::adapterFor(candidate.provider.api);
    m_attemptStartMs = m_ctx.clock->nowMs();
    acquireCredential(0);
}

void ChatRequest::acquireCredential(int startIndex)
{
    m_phase = Phase::Setup;
    const auto &p = m_candidate->provider;
    m_ctx.pools->acquire(p.id, p.credentials, callerAuth(), startIndex, this,
                         [this](const credentials::AcquireResult &r) { onCredential(r); });
}

void ChatRequest::onCredential(const credentials::AcquireResult &r)
{
    if (m_phase != Phase::Setup)
        return; // the setup was cut by the deadline or the client left
    if (r.kind != credentials::AcquireResult::Kind::Ok) {
        failover::UpstreamFailure f;
        f.kind = r.kind == credentials::AcquireResult::Kind::NoCredential ? FailureKind::CredentialExhausted
                                                                           : FailureKind::SetupError;
        f.message = r.error;
        m_phase = Phase::Waiting;
        return afterFailure(f);
    }
    m_lease = r.lease;
    m_credentialIndex = r.lease.index;
    m_target.provider = m_candidate->provider.id;
    m_target.modelId = m_candidate->model.id;
    m_target.api = m_candidate->provider.api;
    m_target.baseUrl = m_candidate->provider.baseUrl;
    m_target.credential = r.secret;
    m_target.passthroughAuth = r.passthrough;
    launchUpstream();
}

void ChatRequest::launchUpstream()
{
    if (m_clientGone)
        return finish();
    upstream::HeaderList forward;
    for (const auto &h : m_request.headers) {
        const QByteArray name = h.first.toLower();
        if (name == "anthropic-beta" || name == "anthropic-version" || name == "openai-beta")
            forward.append(h);
    }
    const upstream::HttpRequest req = m_adapter->buildRequest(m_parsed, m_format, m_target, forward);

    // Fresh per-try state.
    m_hold = failover::CommitHold();
    m_sse = upstream::SseReader();
    m_decoder = m_adapter->makeDecoder(m_target);
    m_accumulator = model::EventAccumulator();
    m_attemptUsage = {};
    m_errorBody.clear();
    m_status = 0;
    m_headerRetryAfter.reset();
    m_errorHeaders.clear();
    m_ttftMs.reset();
    m_heldRaw.clear();
    m_terminalSeen = false;
    m_location.clear();
    m_heldRawBytes = 0;
    m_bodyBytes = 0;
    m_readPaused = false;
    m_idleFired = false;
    m_streamEnded = false;
    m_rawPassthrough = m_parsed.stream && formats::sameApiName(m_format) == m_target.api;
    // pi answers name the API that produced them, so the client's next turn keeps its signatures.
    m_encodeInfo.upstreamApi = m_target.api;
    m_encodeInfo.upstreamProvider = m_target.provider;

    if (m_parsed.stream)
        ensureStreamHeaders(); // record RD-3: early headers once the first upstream call starts

    if (!m_budget) {
        // Armed once per attempt, just before its first upstream call; it covers the
        // attempt's provider retries and credential rotations too.
        m_follower = hasFollower();
        std::optional<qint64> budgetEnd;
        if (m_follower) {
            const qint64 now = m_ctx.clock->nowMs();
            budgetEnd = now + std::max<qint64>(0, (m_deadlineAtMs - now) / 2);
        }
        m_budget = std::make_unique<failover::AttemptBudget>(*m_ctx.clock, budgetEnd, [this]() { onBudgetExpired(); });
    }
    m_phase = Phase::Upstream;
    m_tryStartMs = m_ctx.clock->nowMs();
    m_lastByteMs = m_tryStartMs;
    armIdleTimer(m_config->failover.upstreamIdleTimeoutMs);
    m_call = m_ctx.transport->start(req, this);
    connect(m_call, &upstream::UpstreamCall::responseStarted, this, &ChatRequest::onResponseStarted);
    connect(m_call, &upstream::UpstreamCall::bodyData, this, &ChatRequest::onBodyData);
    connect(m_call, &upstream::UpstreamCall::finished, this, &ChatRequest::onFinished);
}

void ChatRequest::retireBudget()
{
    // Disarm now, destroy later: this may run inside the budget's own expiry callback.
    if (m_budget) {
        m_budget->settle();
        m_retiredBudget = std::move(m_budget);
    }
}

void ChatRequest::onBudgetExpired()
{
    if (m_call) {
        m_call->abort(); // onFinished(Aborted) sees timedOut()
    } else if (m_retryTimer) {
        // Expired while waiting to retry the same provider.
        m_ctx.clock->cancel(m_retryTimer);
        m_retryTimer = 0;
        failover::FailureInput in;
        in.message = QStringLiteral("attempt budget expired during provider retries");
        attemptFailed(in, false);
    }
}

void ChatRequest::armIdleTimer(qint64 delayMs)
{
    if (m_idleTimer)
        m_ctx.clock->cancel(m_idleTimer);
    m_idleTimer = 0;
    if (m_config->failover.upstreamIdleTimeoutMs <= 0)
        return;
    m_idleTimer = m_ctx.clock->schedule(std::max<qint64>(1, delayMs), [this]() {
        m_idleTimer = 0;
        onIdleTimer();
    });
}

void ChatRequest::onIdleTimer()
{
    // One timer per try, re-armed for the remainder on fire: no cancel/schedule per chunk.
    if (m_phase != Phase::Upstream || !m_call)
        return;
    const qint64 silent = m_ctx.clock->nowMs() - m_lastByteMs;
    const qint64 limit = m_config->failover.upstreamIdleTimeoutMs;
    if (silent < limit)
        return armIdleTimer(limit - silent);
    m_idleFired = true;
    m_call->abort(); // onFinished(Aborted) sees m_idleFired
}

// ---------------------------------------------------------------- upstream events

void ChatRequest::onResponseStarted(int status, const upstream::HeaderList &headers)
{
    m_status = status;
    m_lastByteMs = m_ctx.clock->nowMs();
    if (status >= 300 && status < 400)
        m_location = upstream::headerValue(headers, "location");
    if (!is2xx(status))
        m_errorHeaders = headers;
    if (!is2xx(status))
        m_headerRetryAfter =
            failover::FailureClassifier::retryAfterFromHeaders(headers, QDateTime::currentMSecsSinceEpoch());
}

void ChatRequest::onBodyData(const QByteArray &chunk)
{
    if (m_phase != Phase::Upstream)
        return;
    m_lastByteMs = m_ctx.clock->nowMs();
    if (!is2xx(m_status)) {
        if (m_errorBody.size() < kMaxErrorBody)
            m_errorBody += chunk.left(kMaxErrorBody - m_errorBody.size());
        return;
    }
    m_bodyBytes += chunk.size();
    if (!m_parsed.stream && m_bodyBytes > m_config->limits.maxResponseBytes) {
        // The whole answer is kept until done: bounded by configuration, not by the peer.
        settleAttempt();
        m_phase = Phase::Waiting;
        failover::FailureInput in;
        in.message = QStringLiteral("the upstream answer of %1 exceeds limits.maxResponseBytes (%2 bytes)")
                         .arg(m_candidate->name())
                         .arg(m_config->limits.maxResponseBytes);
        return stopWithUpstreamError(in);
    }
    const QList<upstream::SseEvent> sse = m_sse.feed(chunk);
    for (const auto &e : sse) {
        if (m_phase != Phase::Upstream)
            return;
        const QList<upstream::SseEvent> one{e};
        handleEvents(m_decoder->feed(e), &one);
    }
    if (m_phase == Phase::Upstream && m_sse.overflowed()) {
        // One SSE event over the reader's bound: a hostile or broken upstream. The reader
        // keeps nothing more; the attempt ends as a connection-level failure (transport).
        if (m_call) {
            auto *call = m_call.data();
            m_call = nullptr;
            call->disconnect(this);
            call->abort();
            call->deleteLater();
        }
        upstream::TransportResult tooLarge;
        tooLarge.error = upstream::TransportError::TooLarge;
        tooLarge.message = QStringLiteral("one upstream SSE event over 8 MiB");
        onFinished(tooLarge);
    }
}

void ChatRequest::onFinished(const upstream::TransportResult &result)
{
    if (m_phase != Phase::Upstream)
        return;
    m_call = nullptr;
    if (m_idleTimer) {
        m_ctx.clock->cancel(m_idleTimer);
        m_idleTimer = 0;
    }
    if (result.error != upstream::TransportError::None) {
        const QString transportText = result.message.isEmpty()
                                          ? QString::fromLatin1(upstream::transportErrorName(result.error))
                                          : result.message;
        model::StreamEvent cut;
        cut.type = model::EventType::Error;
        cut.reason = model::StopReason::Error;
        if (m_idleFired) {
            // issue 10 item 11: a silent upstream ends as server_error (next candidate, or the
            // client's error), never an endless keepalive.
            cut.errorMessage = QStringLiteral("no byte from the upstream for %1 ms (failover.upstreamIdleTimeoutMs)")
                                   .arg(m_config->failover.upstreamIdleTimeoutMs);
            cut.errorStatus = 504;
            if (m_committed)
                return handleEvents({cut}, nullptr);
            failover::FailureInput in;
            in.message = cut.errorMessage;
            in.status = 504; // a gateway timeout: server_error by the table
            return attemptFailed(in, false);
        }
        if (m_budget && m_budget->timedOut()) {
            failover::FailureInput in;
            in.message = QStringLiteral("attempt budget expired before the first token");
            return attemptFailed(in, false);
        }
        if (m_committed) {
            // A committed stream broke: final; the client gets this format's error in band.
            cut.errorMessage = QStringLiteral("upstream connection lost: %1").arg(transportText);
            return handleEvents({cut}, nullptr);
        }
        failover::FailureInput in;
        // Our own aborts never get here (settle disconnects first; budget and idle are
        // handled above), so even an "Aborted" is the peer's doing: a transport failure.
        in.transportError = result.error == upstream::TransportError::Aborted ? upstream::TransportError::Other
                                                                               : result.error;
        in.message = transportText;
        return attemptFailed(in, false);
    }
    if (m_status >= 300 && m_status < 400) {
        failover::FailureInput in;
        in.status = m_status;
        in.message = QStringLiteral("upstream %1 answered HTTP %2, a redirect to %3; Switchman does not follow "
                                    "redirects: check the provider's baseUrl")
                         .arg(m_candidate->name())
                         .arg(m_status)
                         .arg(m_location.isEmpty() ? QStringLiteral("(no Location)")
                                                   : redacted(QString::fromUtf8(m_location.left(512))));
        return attemptFailed(in, true);
    }
    if (!is2xx(m_status)) {
        const auto info = m_adapter->parseError(m_status, m_errorBody);
        m_upstreamError = GatewayError::make(m_status, {}, {}); // translation: code/param reach the client
        m_upstreamError.upstreamApi = m_target.api;
        m_upstreamError.code = info.errorType;
        m_upstreamError.providerType = info.providerType;
        m_upstreamError.param = info.param;
        failover::FailureInput in;
        in.status = m_status;
        in.message = redacted(info.message);
        in.classificationMessage = info.errorType.isEmpty() ? QString() : info.errorType + QStringLiteral(": ") + info.message;
        in.retryAfterMs = m_headerRetryAfter;
        return attemptFailed(in, true);
    }
    for (const auto &e : m_sse.finish()) {
        if (m_phase != Phase::Upstream)
            return;
        const QList<upstream::SseEvent> one{e};
        handleEvents(m_decoder->feed(e), &one);
    }
    if (m_phase == Phase::Upstream) {
        m_streamEnded = true; // an error the decoder makes now means the socket closed early
        handleEvents(m_decoder->finish(), nullptr);
    }
}

void ChatRequest::handleEvents(const QList<model::StreamEvent> &events, const QList<upstream::SseEvent> *raw)
{
    // Held frame, when this call holds one: taken back out below if nothing in it was kept.
    qsizetype provisional = -1;
    qint64 frameBytes = 0;
    if (raw)
        for (const auto &r : *raw)
            frameBytes += r.event.size() + r.data.size();
    if (m_rawPassthrough && raw) {
        // Same API: the client gets the upstream's own frames, including those that
        // carry no canonical event (message_delta, the usage chunk).
        for (const auto &r : *raw) {
            // Raw frames skip the encoder, so they take the redaction here (an upstream
            // error event may quote the key it rejected).
            if (m_hold.committed()) {
                if (m_exchange)
                    m_exchange->write(util::redactSecrets(sseFrame(r), m_target.credential));
            } else if (m_parsed.stream && !isNoiseFrame(r, events)) {
                provisional = m_heldRaw.size();
                m_heldRaw.append(sseFrame(r));
                m_heldRawBytes += m_heldRaw.last().size();
            }
        }
    }
    bool keptAny = false;
    for (const auto &e : events) {
        if (m_phase != Phase::Upstream)
            return;
        if (m_budget)
            m_budget->observe(e);
        if (!e.usage.isZero()) {
            // Usage arrives in parts (Anthropic: input on start, output at the end).
            m_attemptUsage.input = std::max(m_attemptUsage.input, e.usage.input);
            m_attemptUsage.output = std::max(m_attemptUsage.output, e.usage.output);
            m_attemptUsage.cacheRead = std::max(m_attemptUsage.cacheRead, e.usage.cacheRead);
            m_attemptUsage.cacheWrite = std::max(m_attemptUsage.cacheWrite, e.usage.cacheWrite);
        }
        if (!m_ttftMs && e.isMeaningful())
            m_ttftMs = m_ctx.clock->nowMs() - m_attemptStartMs;

        if (!m_parsed.stream) {
            // Non-streaming: the client sees nothing until the drain ends, so any
            // failure before done fails over, whatever partial content is held.
            if (e.type == model::EventType::Error) {
                failover::FailureInput in;
                in.message = redacted(e.errorMessage);
                in.classificationMessage = e.errorType.isEmpty() ? QString() : e.errorType + QStringLiteral(": ") + e.errorMessage;
                in.status = e.errorStatus;
                if (m_streamEnded)
                    in.transportError = upstream::TransportError::Other; // the body ended early: a socket close
                return attemptFailed(in, false);
            }
            m_accumulator.add(e);
            if (e.type == model::EventType::Done)
                return succeed();
            continue;
        }

        // Canonical holds pay for their frame once; raw holds are counted as frames above.
        const auto step = m_hold.feed(e, m_rawPassthrough || keptAny ? 0 : frameBytes);
        keptAny |= m_hold.lastHeld();
        if (step.justFailed) {
            failover::FailureInput in;
            in.message = redacted(e.errorMessage);
            in.classificationMessage = e.errorType.isEmpty() ? QString() : e.errorType + QStringLiteral(": ") + e.errorMessage;
            in.status = e.errorStatus;
            if (m_streamEnded && !raw)
                in.transportError = upstream::TransportError::Other; // the body ended early: a socket close
            return attemptFailed(in, false);
        }
        if (step.justCommitted)
            commit(step.release);
        else if (m_committed && !m_rawPassthrough)
            deliver(e);
        else if (m_committed && e.type == model::EventType::Error && !raw)
            // Passthrough, and the break is ours to tell (reset, early end, silence): the
            // format's own error, never a made-up message_stop or [DONE].
            writeStreamError(GatewayError::make(e.errorStatus.value_or(502),
                                                GatewayError::categoryForStatus(e.errorStatus.value_or(502)),
                                                redacted(e.errorMessage)));
        if (m_committed && (e.type == model::EventType::Done || e.type == model::EventType::Error)) {
            m_terminalSeen = true;
            if (e.type == model::EventType::Error) {
                recordUsage(true);
                if (m_exchange)
                    m_exchange->endStream();
                return finish();
            }
            return succeed();
        }
    }
    if (m_phase != Phase::Upstream || !m_parsed.stream)
        return;
    if (m_hold.committed())
        return applyBackpressure();
    if (provisional >= 0 && !keptAny && !events.isEmpty()) {
        // Every event of the frame was noise (empty deltas): the frame goes too.
        m_heldRawBytes -= m_heldRaw.at(provisional).size();
        m_heldRaw.removeAt(provisional);
    }
    if (m_hold.heldBytes() + m_heldRawBytes > m_config->limits.maxHoldBytes) {
        // Nothing meaningful after this much: not an answer the client will get soon.
        failover::FailureInput in;
        in.status = 502; // server_error by the table: the next candidate may answer
        in.message = QStringLiteral("%1 bytes held before the first token, over limits.maxHoldBytes")
                         .arg(m_hold.heldBytes() + m_heldRawBytes);
        attemptFailed(in, false);
    }
}

void ChatRequest::applyBackpressure()
{
    // A slow client slows the upstream, not our memory: stop reading past 1 MiB queued.
    if (!m_readPaused && m_call && m_exchange && m_exchange->pendingBytes() > kMaxClientQueue) {
        m_readPaused = true;
        m_call->setReadPaused(true);
    }
}

void ChatRequest::onClientDrained()
{
    if (m_readPaused && m_call && m_exchange && m_exchange->pendingBytes() <= kMaxClientQueue / 2) {
        m_readPaused = false;
        m_call->setReadPaused(false);
    }
}

QString ChatRequest::redacted(QString text) const
{
    // Some providers quote the key they rejected; it must not reach the client, a log or the GUI.
    return util::redactSecrets(text, m_target.credential);
}

void ChatRequest::writeStreamError(const GatewayError &error)
{
    if (!m_exchange)
        return;
    if (!m_encoder)
        m_encoder = m_codec.makeStreamEncoder(m_encodeInfo);
    m_exchange->write(m_encoder->encodeError(error));
}

void ChatRequest::commit(const QList<model::StreamEvent> &released)
{
    m_committed = true;
    if (m_keepaliveTimer) {
        m_ctx.clock->cancel(m_keepaliveTimer);
        m_keepaliveTimer = 0;
    }
    if (m_ttftMs)
        m_ctx.telemetry->observeTtft(*m_ttftMs);
    recordAttempt(telemetry::AttemptOutcome::Committed, {}, {}, {});
    if (!m_exchange)
        return;
    m_exchange->write(QStringLiteral(": switchman candidate=%1 attempt=%2\n\n")
                          .arg(m_candidate->name())
                          .arg(m_attemptNo)
                          .toUtf8());
    if (m_rawPassthrough) {
        for (const auto &frame : std::as_const(m_heldRaw))
            m_exchange->write(util::redactSecrets(frame, m_target.credential));
        m_heldRaw.clear();
        m_heldRawBytes = 0;
        return;
    }
    m_encoder = m_codec.makeStreamEncoder(m_encodeInfo);
    for (const auto &e : released)
        deliver(e);
}

void ChatRequest::deliver(const model::StreamEvent &event)
{
    if (!m_encoder || !m_exchange)
        return;
    if (event.type == model::EventType::Error) {
        m_exchange->write(m_encoder->encodeError(
            GatewayError::make(event.errorStatus.value_or(502),
                               GatewayError::categoryForStatus(event.errorStatus.value_or(502)),
                               redacted(event.errorMessage))));
        return;
    }
    m_exchange->write(m_encoder->encode(event));
}

void ChatRequest::succeed()
{
    retireBudget();
    if (!m_parsed.stream) {
        recordAttempt(telemetry::AttemptOutcome::Committed, {}, {}, {});
        model::AssistantMessage message = m_accumulator.message();
        message.model = m_parsed.model;
        message.provider = m_target.provider;
        message.api = m_target.api;
        const QByteArray body = m_codec.encodeResponse(message, m_encodeInfo);
        auto headers = baseHeaders();
        headers.emplace_back("Content-Type", "application/json");
        headers.emplace_back("x-switchman-candidate", m_candidate->name().toUtf8());
        headers.emplace_back("x-switchman-attempts", QByteArray::number(m_attemptNo));
        if (!m_fallbackFrom.isEmpty()) {
            headers.emplace_back("x-switchman-fallback-from", m_fallbackFrom.toUtf8());
            headers.emplace_back("x-switchman-fallback-reason", m_fallbackReason.toUtf8());
        }
        if (m_exchange)
            m_exchange->respond(200, headers, body);
        if (m_ctx.idempotency && !m_idempotencyKey.isEmpty())
            m_ctx.idempotency->complete(m_tenant, m_idempotencyKey, 200, headers, body);
    } else if (m_exchange) {
        m_exchange->endStream();
    }
    recordUsage(true);
    finish();
}

// ---------------------------------------------------------------- failures

void ChatRequest::settleAttempt()
{
    if (m_idleTimer) {
        m_ctx.clock->cancel(m_idleTimer);
        m_idleTimer = 0;
    }
    if (m_call) {
        auto *call = m_call.data();
        m_call = nullptr;
        call->disconnect(this);
        call->abort();
        call->deleteLater();
    }
    m_ctx.pools->release(m_lease);
    m_lease = {};
}

void ChatRequest::attemptFailed(failover::FailureInput input, bool fromHeaders)
{
    const bool budgetTimedOut = m_budget && m_budget->timedOut();
    settleAttempt();
    m_phase = Phase::Waiting;
    if (!fromHeaders)
        input.retryAfterMs.reset(); // record: headers only for a thrown error; in-band errors carry text only
    if (m_clientGone)
        return finish();
    std::optional<failover::UpstreamFailure> failure;
    if (budgetTimedOut) {
        failover::UpstreamFailure f; // record: a budget timeout is always server_error
        f.kind = FailureKind::ServerError;
        f.message = input.message;
        failure = f;
    } else {
        failure = failover::FailureClassifier::classify(input);
    }
    if (!failure)
        return stopWithUpstreamError(input);

    // refreshGatewayApiKeyAfterAuthError: rotate to the pool's next credential within the attempt.
    // A caller's own (passthrough) key is that caller's business: it never exhausts the pool for others.
    if (failure->kind == FailureKind::CredentialExhausted && m_credentialIndex >= 0 && !m_target.passthroughAuth &&
        !m_candidate->provider.credentials.isEmpty()) {
        // The pools judge: a 401 is rejected until the key changes; anything else is parked for
        // Retry-After, the provider's reset hint, or the configured default for its reason.
        credentials::CredentialFailure cf;
        cf.status = input.status;
        cf.message = input.message; // already redacted: kept as the credential's last error
        cf.classification = input.classificationMessage;
        cf.usageLimit = input.usageLimit;
        cf.retryAfterMs = input.retryAfterMs; // headers only: attemptFailed drops in-band values
        if (fromHeaders)
            cf.headers = m_errorHeaders;
        m_ctx.pools->recordFailure({m_candidate->provider.id, m_credentialIndex}, cf,
                                   credentials::parkDefaultsFor(*m_config, m_candidate->provider));
        if (m_ctx.pools->hasUsable(m_candidate->provider.id, m_candidate->provider.credentials,
                                   !callerAuth().isEmpty())) {
            m_ctx.telemetry->log(QStringLiteral("info"), QStringLiteral("credential rotated"),
                                 {{QStringLiteral("requestId"), m_requestId},
                                  {QStringLiteral("tenant"), m_tenant},
                                  {QStringLiteral("provider"), m_candidate->provider.id},
                                  {QStringLiteral("credentialIndex"), m_credentialIndex}});
            recordUsage(false);
            return acquireCredential(m_credentialIndex + 1);
        }
    }
    if (!budgetTimedOut && tryInAttemptRetry(*failure))
        return;
    m_budgetFailure = budgetTimedOut;
    afterFailure(*failure);
}

bool ChatRequest::tryInAttemptRetry(const failover::UpstreamFailure &failure)
{
    // SPEC 3: with a follower, fail over at once (unless the provider asks for its own
    // retries first); without one, retry the same candidate with backoff.
    failover::RetryInput in;
    in.failure = failure;
    in.hasFollower = hasFollower();
    in.retriesSoFar = m_retries;
    in.retriesBeforeFailover = m_candidate->provider.retriesBeforeFailover;
    in.maxRetries = m_candidate->provider.maxRetries;
    in.maxRetryDelayMs = m_config->failover.maxRetryDelayMs;
    in.nowMs = m_ctx.clock->nowMs();
    if (m_deadlineAtMs)
        in.deadlineAtMs = m_deadlineAtMs;
    const auto next = failover::RetryPolicy::nextDelay(in, failover::RetryPolicy::systemRandom());
    if (!next)
        return false;
    const qint64 delay = *next;
    ++m_retries;
    recordUsage(false);
    m_ctx.telemetry->log(QStringLiteral("info"), QStringLiteral("provider retry"),
                         {{QStringLiteral("requestId"), m_requestId},
                          {QStringLiteral("tenant"), m_tenant},
                          {QStringLiteral("candidate"), m_candidate->name()},
                          {QStringLiteral("failure"), failover::failureKindName(failure.kind)},
                          {QStringLiteral("retry"), m_retries},
                          {QStringLiteral("delayMs"), delay}});
    m_retryTimer = m_ctx.clock->schedule(delay, [this]() {
        m_retryTimer = 0;
        if (m_clientGone)
            return finish();
        acquireCredential(m_credentialIndex >= 0 ? m_credentialIndex : 0);
    });
    return true;
}

void ChatRequest::afterFailure(const failover::UpstreamFailure &failure)
{
    retireBudget(); // the attempt is over: disarm
    m_lastFailure = failure;
    m_lastFailureWho = m_candidate->name();
    ++m_failedAttempts;
    if (m_config->failover.enabled) {
        const qint64 ttl = m_ctx.marks->mark(m_tenant, m_candidate->ref(), failure, m_tryStartMs);
        if (ttl > 0 && m_ctx.marksChanged)
            m_ctx.marksChanged();
    }
    m_ctx.telemetry->countFailure(m_candidate->provider.id, failover::failureKindName(failure.kind));
    recordUsage(false);
    if (m_fallbackFrom.isEmpty()) {
        m_fallbackFrom = m_candidate->name();
        m_fallbackReason = failover::failureKindName(failure.kind);
    }
    const bool follower = !m_deadlinePassed && hasFollower();
    QString logOutcome = m_budgetFailure ? QStringLiteral("budget")
                         : m_deadlinePassed ? QStringLiteral("deadline")
                         : follower ? QStringLiteral("retrying")
                                    : QStringLiteral("exhausted");
    QString next;
    if (follower)
        if (auto n = failover::CandidateResolver::next(m_resolution, m_tried, resolverState()))
            next = n->name();
    recordAttempt(telemetry::AttemptOutcome::Failed, failover::failureKindName(failure.kind), logOutcome,
                  failure.message);
    logFailure(failure, logOutcome, next);
    m_budgetFailure = false;
    if (follower)
        return nextCandidate();
    if (!m_deadlinePassed && m_config->failover.enabled && !m_resolution.direct && !m_clientGone) {
        // No follower: candidates passed over for want of a credential still leave their row.
        QList<failover::Skip> skipped;
        failover::CandidateResolver::next(m_resolution, m_tried, resolverState(), &skipped);
        QList<failover::Skip> noCredential;
        for (const auto &sk : skipped)
            if (sk.noCredential)
                noCredential.append(sk);
        recordSkips(noCredential);
    }
    finishWithFailure(withCostCeilingNote(clientErrorFor(failure)), true);
}

void ChatRequest::stopWithUpstreamError(const failover::FailureInput &input)
{
    // Not a failover failure (400, 422, a deterministic in-band error): the client gets it as is.
    // A redirect is not an answer the client can use: 502, the message names it.
    const int status = input.status && *input.status >= 400 ? *input.status : 502;
    recordAttempt(telemetry::AttemptOutcome::Failed, {}, QStringLiteral("stop"), input.message);
    recordUsage(false);
    GatewayError e = GatewayError::make(status, GatewayError::categoryForStatus(status), input.message);
    finishWithFailure(e, false);
}

GatewayError ChatRequest::clientErrorFor(const failover::UpstreamFailure &f) const
{
    // Skipped candidates may follow the failure: name the one that failed.
    const QString who = !m_lastFailureWho.isEmpty() ? m_lastFailureWho : m_candidate ? m_candidate->name() : QString();
    return failover::FailureResponse::forFailure(f, who);
}

GatewayError ChatRequest::withCostCeilingNote(GatewayError error) const
{
    // seed 003: when the ceiling is why nothing is left, the client is told so, naming it.
    bool ceiling = m_overCostCeiling;
    for (const auto &c : m_resolution.chain)
        if (!ceiling && !m_tried.contains(c.ref().key()))
            if (const auto why = ineligibleReason(c); why && failover::CandidatePolicy::isCostCeiling(*why))
                ceiling = true;
    if (ceiling && m_resolution.maxCostMultiplier)
        error.message += QStringLiteral("; no fallback left: the other candidates are priced over the route's cost "
                                        "ceiling (maxFallbackCostMultiplier %1)")
                             .arg(*m_resolution.maxCostMultiplier);
    return error;
}

void ChatRequest::finishWithFailure(const GatewayError &errorIn, bool markedRetryAfter)
{
    GatewayError error = errorIn;
    if (!m_upstreamError.upstreamApi.isEmpty() && error.status == m_upstreamError.status) {
        error.upstreamApi = m_upstreamError.upstreamApi;
        error.code = m_upstreamError.code;
        error.providerType = m_upstreamError.providerType;
        error.param = m_upstreamError.param;
    }
    if (markedRetryAfter && m_config->failover.enabled) {
        // Every candidate marked: tell the client when the first one comes back.
        QList<qint64> remaining;
        for (const auto &c : m_resolution.chain)
            remaining.append(m_ctx.marks->remainingMs(m_tenant, c.ref()));
        if (const auto retryAfter = failover::FailureResponse::retryAfterWhenAllMarked(remaining))
            error.retryAfterMs = *retryAfter;
    }
    if (m_exchange && m_exchange->headersSent()) {
        // Headers are out: the format's in-band error, never a fake [DONE] / message_stop.
        writeStreamError(error);
        m_exchange->endStream();
    } else {
        respondError(error);
    }
    finish();
}

void ChatRequest::onDeadline()
{
    m_deadlinePassed = true;
    if (m_phase == Phase::Setup) {
        // record: a setup still running at the deadline is aborted: setup_error,
        // outcome deadline, no mark, and the request ends.
        m_phase = Phase::Waiting;
        failover::UpstreamFailure f;
        f.kind = FailureKind::SetupError;
        f.message = QStringLiteral("credential setup still running at the request deadline");
        m_lastFailure = f;
        m_ctx.telemetry->countFailure(m_candidate->provider.id, failover::failureKindName(f.kind));
        recordAttempt(telemetry::AttemptOutcome::Failed, failover::failureKindName(f.kind), QStringLiteral("deadline"),
                      f.message);
        logFailure(f, QStringLiteral("deadline"), {});
        settleAttempt();
        finishWithFailure(GatewayError::make(502, ErrorCategory::ServerError, f.message), false);
    } else if (m_phase == Phase::Waiting && m_retryTimer) {
        // A provider retry waiting for its backoff never starts after the deadline.
        m_ctx.clock->cancel(m_retryTimer);
        m_retryTimer = 0;
        if (m_lastFailure)
            afterFailure(*m_lastFailure);
    }
}

void ChatRequest::onClientGone()
{
    if (m_phase == Phase::Finished)
        return;
    m_clientGone = true;
    // record: a request abort stops the loop: no follower, upstream aborted, 499 in the log.
    if (m_candidate && !m_committed) {
        recordAttempt(telemetry::AttemptOutcome::Aborted, {}, QStringLiteral("aborted"),
                      QStringLiteral("client closed the request (499)"));
    }
    const bool answering = m_committed;
    m_ctx.telemetry->log(QStringLiteral("info"), QStringLiteral("client closed request"),
                         {{QStringLiteral("requestId"), m_requestId},
                          {QStringLiteral("tenant"), m_tenant},
                          {QStringLiteral("status"), 499}});
    settleAttempt();
    recordUsage(answering); // the attempt that answered keeps the plain request id
    finish();
}

// ---------------------------------------------------------------- output

upstream::HeaderList ChatRequest::baseHeaders() const
{
    return {{"x-switchman-request-id", m_requestId.toUtf8()}, {"x-litellm-model-id", m_parsed.model.toUtf8()}};
}

void ChatRequest::ensureStreamHeaders()
{
    if (!m_exchange || m_exchange->headersSent())
        return;
    auto headers = baseHeaders();
    headers.emplace_back("Content-Type", "text/event-stream; charset=utf-8");
    headers.emplace_back("Cache-Control", "no-cache");
    headers.emplace_back("Connection", "keep-alive");
    m_exchange->beginStream(200, headers);
    const qint64 every = m_config->failover.keepaliveMs;
    if (every > 0)
        m_keepaliveTimer = m_ctx.clock->schedule(every, [this]() { writeKeepalive(); });
}

void ChatRequest::writeKeepalive()
{
    m_keepaliveTimer = 0;
    if (m_committed || m_phase == Phase::Finished || !m_exchange)
        return;
    m_exchange->write(QByteArrayLiteral(": keepalive\n\n"));
    m_keepaliveTimer = m_ctx.clock->schedule(m_config->failover.keepaliveMs, [this]() { writeKeepalive(); });
}

void ChatRequest::respondError(const GatewayError &error)
{
    if (!m_exchange)
        return;
    auto headers = baseHeaders();
    headers.emplace_back("Content-Type", "application/json");
    if (error.retryAfterMs && *error.retryAfterMs > 0)
        headers.emplace_back("Retry-After", QByteArray::number((*error.retryAfterMs + 999) / 1000));
    if (m_attemptNo > 0)
        headers.emplace_back("x-switchman-attempts", QByteArray::number(m_attemptNo));
    m_exchange->respond(error.status, headers, m_codec.encodeError(error));
}

void ChatRequest::recordAttempt(telemetry::AttemptOutcome outcome, const QString &failure, const QString &logOutcome,
                                const QString &message)
{
    telemetry::AttemptRecord r;
    r.requestId = m_requestId;
    r.attempt = m_attemptNo;
    r.tenant = m_tenant;
    r.requestedModel = m_parsed.model;
    if (m_candidate) {
        r.candidate = m_candidate->name();
        r.provider = m_candidate->provider.id;
    }
    r.outcome = outcome;
    r.failure = failure;
    r.status = m_status;
    r.elapsedMs = m_attemptStartMs ? m_ctx.clock->nowMs() - m_attemptStartMs : 0;
    r.ttftMs = m_ttftMs;
    r.startedAtEpochMs = QDateTime::currentMSecsSinceEpoch() - r.elapsedMs;
    r.format = formats::formatName(m_format);
    r.logOutcome = logOutcome;
    r.message = util::redactedAndTruncated(message, 300, m_target.credential);
    m_ctx.telemetry->recordAttempt(r);
}

void ChatRequest::recordUsage(bool answered)
{
    // RD-5: one row per attempt with nonzero usage; REQ:aN for attempts that did not answer.
    if (m_attemptUsage.isZero() || !m_candidate)
        return;
    telemetry::UsageRow row;
    // The answer keeps the plain id; a failed try is REQ:aN, and a further try of the same
    // attempt (provider retry, rotated credential) REQ:aN.K, so no two rows share an id.
    QString id = QStringLiteral("%1:a%2").arg(m_requestId).arg(m_attemptNo);
    if (m_usageRows > 0)
        id += QStringLiteral(".%1").arg(m_usageRows + 1);
    row.requestId = answered ? m_requestId : id;
    ++m_usageRows;
    row.tenant = m_tenant;
    row.candidate = m_candidate->name();
    row.provider = m_candidate->provider.id;
    row.input = m_attemptUsage.input;
    row.output = m_attemptUsage.output;
    row.cacheRead = m_attemptUsage.cacheRead;
    row.cacheWrite = m_attemptUsage.cacheWrite;
    row.cost = (double(m_attemptUsage.input + m_attemptUsage.cacheRead + m_attemptUsage.cacheWrite) *
                    m_candidate->model.costInput +
                double(m_attemptUsage.output) * m_candidate->model.costOutput) /
               1e6;
    row.outcome = answered ? QStringLiteral("ok") : QStringLiteral("error");
    row.atEpochMs = QDateTime::currentMSecsSinceEpoch();
    m_ctx.telemetry->recordUsage(row);
    m_attemptUsage = {};
}

QJsonObject ChatRequest::attemptLogFields(const QString &logOutcome) const
{
    // record: the auth-gateway request log's keys plus the attempt's.
    return {{QStringLiteral("requestId"), m_requestId},
            {QStringLiteral("format"), formats::formatName(m_format)},
            {QStringLiteral("model"), m_parsed.model},
            {QStringLiteral("tenant"), m_tenant},
            {QStringLiteral("resolvedProvider"), m_candidate->provider.id},
            {QStringLiteral("resolvedModel"), m_candidate->model.id},
            {QStringLiteral("peer"), m_request.peer.toString()},
            {QStringLiteral("attempt"), m_attemptNo},
            {QStringLiteral("outcome"), logOutcome}};
}

void ChatRequest::logFailure(const failover::UpstreamFailure &f, const QString &logOutcome, const QString &next)
{
    QJsonObject o = attemptLogFields(logOutcome);
    o.insert(QStringLiteral("failure"), failover::failureKindName(f.kind));
    o.insert(QStringLiteral("elapsedMs"), m_ctx.clock->nowMs() - m_attemptStartMs);
    o.insert(QStringLiteral("error"), util::redactedAndTruncated(f.message, 300, m_target.credential));
    if (f.status)
        o.insert(QStringLiteral("status"), *f.status);
    if (f.retryAfterMs)
        o.insert(QStringLiteral("retryAfterMs"), *f.retryAfterMs);
    if (!next.isEmpty())
        o.insert(QStringLiteral("next"), next);
    m_ctx.telemetry->log(QStringLiteral("warn"), QStringLiteral("candidate failover"), o);
}

void ChatRequest::logSkip(const QString &reason, const QString &failure)
{
    QJsonObject o = attemptLogFields(QStringLiteral("skipped"));
    o.insert(QStringLiteral("reason"), reason);
    if (!failure.isEmpty())
        o.insert(QStringLiteral("failure"), failure);
    m_ctx.telemetry->log(QStringLiteral("warn"), QStringLiteral("candidate failover"), o);
}

void ChatRequest::finish()
{
    if (m_phase == Phase::Finished)
        return;
    m_phase = Phase::Finished;
    settleAttempt();
    retireBudget();
    for (auto *id : {&m_deadlineTimer, &m_keepaliveTimer, &m_retryTimer, &m_idleTimer}) {
        if (*id)
            m_ctx.clock->cancel(*id);
        *id = 0;
    }
    if (m_ctx.idempotency && !m_idempotencyKey.isEmpty())
        m_ctx.idempotency->abandon(m_tenant, m_idempotencyKey); // no-op once completed
    m_ctx.telemetry->requestFinished(m_ctx.clock->nowMs() - m_startMs);
    Q_EMIT done();
    deleteLater();
}

} // namespace sw::server
