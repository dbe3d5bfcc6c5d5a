#pragma once
// One upstream try of the failover loop (failover::AttemptRunner): the credential
// (setup), the HTTP call, its head and body, the SSE reader and the API's decoder,
// error bodies, and redaction of everything the try reports. The loop decides
// what any of it means; this class only reports it, by AttemptId.

#include "core/failover/attempt_loop.h"
#include "core/upstream/server_traits.h"
#include "core/upstream/transport.h"
#include "core/upstream/upstream_adapter.h"

#include <QObject>
#include <QPointer>
#include <map>
#include <memory>

namespace sw::credentials {
class CredentialPools;
}
namespace sw::util {
class ByteBudget;
}

namespace sw::upstream {

struct UpstreamAttemptSetup {
    credentials::CredentialPools *pools = nullptr;
    Transport *transport = nullptr;
    std::shared_ptr<const config::Config> config; // park defaults, limits.maxResponseBytes
    const model::ChatRequest *request = nullptr;  // sourceApi: the API the client spoke
    HeaderList forwardHeaders;                    // anthropic-beta, anthropic-version, OpenAI-Beta
    QByteArray callerAuth;                        // the caller's own provider key, when it may send one
    // The caller gave one key, meant for one provider: it goes to the base URL of the chain's first
    // passthrough provider the tenant may use, and to no other (SPEC 4: a credential never goes to
    // another provider's base URL). A passthrough provider elsewhere in the chain has no key for this
    // request (probe J3 1: a failover sent an Anthropic login token to a second host).
    QString callerAuthProvider;
    QString callerAuthBaseUrl;
    // A tenant with a budget: the most output tokens a client's maximum may ask of any try, since its
    // reservation counted no more (server::ChatAdmission::kMaxReservedOutputTokens).
    std::optional<int> outputCap;
    // Via, on every request sent upstream: the client's and this engine's entry after it, by
    // which a request that comes back to this gateway is known (server::HopMarker).
    QByteArray via;
    QString tenant; // whose request (CredentialFailure::tenant)
    // limits.maxBodyBytesInFlight, shared with the listener's request bodies: a non-streaming
    // answer takes its bytes as they are read and holds them until the request is done.
    std::shared_ptr<util::ByteBudget> bytesInFlight;
    // What servers said of themselves (ServerTraits), the engine's, shared by every request.
    std::shared_ptr<ServerTraits> traits;
};

class UpstreamAttempts final : public QObject, public failover::AttemptRunner {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(UpstreamAttempts)
public:
    explicit UpstreamAttempts(UpstreamAttemptSetup setup, QObject *parent = nullptr);
    ~UpstreamAttempts() override;
    void setLoop(failover::AttemptLoop *loop) { m_loop = loop; }

    void start(const failover::TryStart &start) override;
    void launch(failover::AttemptId id) override;
    void abort(failover::AttemptId id) override;
    void setReadPaused(failover::AttemptId id, bool paused) override;
    void endErrorBody(failover::AttemptId id) override;
    bool endAnswered(failover::AttemptId id) override;
    bool hasUnreadBytes(failover::AttemptId id) const override;
    bool hasUsableCredential(const failover::Candidate &candidate) const override;
    QString whyNoCredential(const failover::Candidate &candidate) const override;
    std::optional<failover::CredentialWait> credentialWait(const failover::Candidate &candidate) const override;
    std::optional<int> rotateCredential(failover::AttemptId id, const failover::TryFailure &failure) override;
    bool endsCarryWholeToolCalls() const override { return true; } // every decoder ends calls whole
    model::Usage reportedUsage(failover::AttemptId id) const override;

private:
    struct Try;
    Try *current(failover::AttemptId id, quint64 generation);
    // The caller's own key when this candidate is the one provider it goes to, else empty.
    const QByteArray &callerAuthFor(const failover::Candidate &candidate) const;
    void onResponseStarted(Try &t, int status, const HeaderList &headers);
    void onBodyData(Try &t, const QByteArray &chunk);
    void onFinished(Try &t, const TransportResult &result);
    // Ends a stream at a limit of the gateway's (`why` says which): an error answer before the commit
    // (`busy`: a 503 the client may retry shortly), the client format's in-band error after it.
    void endStream(Try &t, const QString &why, bool busy = false);
    // A 2xx JSON body where a stream was asked for, read whole: decoded as the stream it stands
    // for when it is the API's answer (json_answer.h), else reported as the upstream's error.
    void finishJsonAnswer(Try &t);
    void restartAnswer(Try &t); // nothing of an answer read yet: no body kept, no bytes held
    void endOfBody(failover::AttemptId id, quint64 generation); // the decoder's finish(), after the last event
    void reportErrorAnswer(Try &t);             // a 3xx, 4xx or 5xx head and its body so far, as the try's failure
    bool keepAnswerBytes(Try &t, qint64 bytes); // false: the try ended over a byte limit
    void feedSse(Try &t, const QList<SseEvent> &events);
    // Charges what the SSE reader holds of an event still arriving to limits.maxBodyBytesInFlight, or
    // gives back what it no longer holds; false (nothing taken) when its growth does not fit.
    bool holdUnfinishedEvent(Try &t);
    void dropSseReader(Try &t);                     // a fresh reader, and what the last one held given back
    QString bytesInFlightSpent(const Try &t) const; // a stream's refusal when the shared budget is spent
    static bool grewEnough(Try &t, qsizetype size);
    QString redacted(const Try &t, const QString &text) const;
    // An error answer's words as its failure is judged (FailureInput::classificationMessage).
    QString ownWords(const Try &t, const UpstreamErrorInfo &info) const;
    QString redirectTarget(const Try &t) const; // a 3xx Location without query, fragment or user info
    // An in-band error's message and type, which both reach the client, redacted.
    void redactEvents(const Try &t, QList<model::StreamEvent> &events) const;

    UpstreamAttemptSetup m_setup;
    failover::AttemptLoop *m_loop = nullptr;
    std::map<failover::AttemptId, std::unique_ptr<Try>> m_tries;
    qint64 m_answerBytesTaken = 0; // from bytesInFlight, given back when this request is done
};

} // namespace sw::upstream
