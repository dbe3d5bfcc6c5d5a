// What follows a failed try, as one pure function: the order the record checks causes in.
#include "core/failover/failure_decision.h"

#include <QTest>

using namespace sw::failover;
using Action = FailureDecision::Action;
using Mend = FailureDecision::Mend;

namespace {
TryFailure answered(int status, const QString &message) {
    TryFailure f;
    f.fromHeaders = true;
    f.input.status = status;
    f.input.message = message;
    return f;
}
const QString kSignature = QStringLiteral("messages.1.content.0: Invalid `signature` in `thinking` block");
const QString kReasoningBack =
    QStringLiteral("Missing `reasoning_content` field in the assistant message at message index 2");
const QString kOutputCap =
    QStringLiteral("max_tokens: 64000 > 8192, which is the maximum allowed number of output tokens");

MendState sent(std::optional<int> cap) {
    MendState m;
    m.outputCapSent = cap;
    return m;
}
} // namespace

class TestFailureDecision : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void aLimitOfTheGatewaysOwnStopsWhateverItsStatus() {
        TryFailure f = answered(503, QStringLiteral("the gateway holds 64 MiB of answers in flight"));
        f.stop = true;
        const auto d = FailureDecision::decide(f, false, {});
        QCOMPARE(d.action, Action::Stop);
    }

    void aRefusedSignatureIsMendedOnceThenTheRefusalStops() {
        const TryFailure f = answered(400, kSignature);
        auto d = FailureDecision::decide(f, false, {});
        QCOMPARE(d.action, Action::Mend);
        QCOMPARE(d.mend, Mend::WithoutReplayedReasoning);
        QCOMPARE(d.mendWhy, QStringLiteral("replayed reasoning refused"));
        MendState once;
        once.withoutReplayedReasoning = true;
        d = FailureDecision::decide(f, false, once);
        QCOMPARE(d.action, Action::Stop); // a 400 the mend did not cure is the client's to read
    }

    void reasoningAskedBackIsSentOnce() {
        const TryFailure f = answered(400, kReasoningBack);
        auto d = FailureDecision::decide(f, false, {});
        QCOMPARE(d.action, Action::Mend);
        QCOMPARE(d.mend, Mend::WithReasoningBack);
        MendState once;
        once.withReasoningBack = true;
        QCOMPARE(FailureDecision::decide(f, false, once).action, Action::Stop);
    }

    void aRefusedReasoningSummaryIsLeftOutOnce() {
        const TryFailure f = answered(400, QStringLiteral("Your organization must be verified to generate reasoning "
                                                          "summaries. Please go to: https://platform.openai.com/"));
        auto d = FailureDecision::decide(f, false, {});
        QCOMPARE(d.action, Action::Mend);
        QCOMPARE(d.mend, Mend::WithoutReasoningSummary);
        MendState once;
        once.withoutReasoningSummary = true;
        QCOMPARE(FailureDecision::decide(f, false, once).action, Action::Stop);
        // Other words about the summary, and only a 400's.
        QCOMPARE(FailureDecision::decide(answered(400, QStringLiteral("Unsupported value: 'reasoning.summary' does "
                                                                      "not support 'auto' with this model.")),
                                         false, {})
                     .mend,
                 Mend::WithoutReasoningSummary);
        QVERIFY(FailureDecision::decide(answered(500, QStringLiteral("reasoning summary failed")), false, {}).mend ==
                Mend::None);
    }

    void refusedToolCallIdsGoAsNineAlphanumericsOnce() {
        const TryFailure f = answered(
            400, QStringLiteral("Tool call id was toolu_01AAA but must be a-z, A-Z, 0-9, with a length of 9."));
        auto d = FailureDecision::decide(f, false, {});
        QCOMPARE(d.action, Action::Mend);
        QCOMPARE(d.mend, Mend::WithNineCharToolIds);
        QCOMPARE(d.mendWhy, QStringLiteral("tool call ids refused"));
        MendState once;
        once.withNineCharToolIds = true;
        QCOMPARE(FailureDecision::decide(f, false, once).action, Action::Stop);
        // The gateway's own cut is no refusal, whatever the words.
        QVERIFY(FailureDecision::decide(f, true, {}).mend == Mend::None);
    }

    void anOutputCapIsLoweredOnlyBelowWhatWasAskedFor() {
        const TryFailure f = answered(400, kOutputCap);
        auto d = FailureDecision::decide(f, false, sent(64000));
        QCOMPARE(d.action, Action::Mend);
        QCOMPARE(d.mend, Mend::OutputCap);
        QCOMPARE(d.outputCap, std::optional<int>(8192));
        // No cap sent counts as more than any maximum.
        QCOMPARE(FailureDecision::decide(f, false, sent(std::nullopt)).mend, Mend::OutputCap);
        // Asking for less already: the maximum is no cure, the refusal stops.
        QCOMPARE(FailureDecision::decide(f, false, sent(4096)).action, Action::Stop);
        MendState lowered = sent(64000);
        lowered.outputCap = 8192;
        QCOMPARE(FailureDecision::decide(f, false, lowered).action, Action::Stop);
    }

    void aBudgetCutIsAServerErrorNeverMendedNorRetried() {
        // Whatever the words, a try the budget cut is the gateway's own server_error: it fails over.
        for (const auto &f :
             {answered(400, kSignature), answered(429, QStringLiteral("You exceeded your current quota"))}) {
            const auto d = FailureDecision::decide(f, true, sent(64000));
            QCOMPARE(d.action, Action::FailOver);
            QCOMPARE(d.failure.kind, FailureKind::ServerError);
            QCOMPARE(d.cause, QStringLiteral("budget"));
            QVERIFY(!d.mayRetry);
            QVERIFY(!d.mayRotate);
        }
        TryFailure own = answered(503, QStringLiteral("over our own limit"));
        own.stop = true;
        QCOMPARE(FailureDecision::decide(own, true, {}).action, Action::FailOver);
    }

    void aLimitOfTheGatewaysOwnIsNeverMended() {
        // Words that would be mended from the upstream are the gateway's own here: they stop.
        TryFailure f = answered(400, kSignature);
        f.stop = true;
        QCOMPARE(FailureDecision::decide(f, false, {}).action, Action::Stop);
    }

    void theCallersOwnRefusedKeyStopsEvenWhenTheBudgetCutIt() {
        // The budget's server_error comes first, the caller's refused key after it: still the
        // caller's to renew, never a failover that hides it.
        TryFailure refused = answered(401, QStringLiteral("invalid x-api-key"));
        refused.callersCredential = true;
        QCOMPARE(FailureDecision::decide(refused, true, {}).action, Action::Stop);
    }

    void theCallersOwnRefusedKeyStopsButItsUsageLimitFailsOver() {
        TryFailure refused = answered(401, QStringLiteral("invalid x-api-key"));
        refused.callersCredential = true;
        QCOMPARE(FailureDecision::decide(refused, false, {}).action, Action::Stop);
        refused.callersCredential = false; // the pool's key: another may serve
        auto d = FailureDecision::decide(refused, false, {});
        QCOMPARE(d.action, Action::FailOver);
        QCOMPARE(d.failure.kind, FailureKind::CredentialExhausted);
        QVERIFY(d.mayRotate);

        TryFailure spent = answered(429, QStringLiteral("You exceeded your current quota, please check your plan"));
        spent.callersCredential = true;
        d = FailureDecision::decide(spent, false, {});
        QCOMPARE(d.action, Action::FailOver);
        QCOMPARE(d.failure.kind, FailureKind::CredentialExhausted);
    }

    void aKeyThatCannotReachTheModelMayRotate() {
        TryFailure f = answered(403, QStringLiteral("Project `proj_x` does not have access to model `gpt-5`"));
        f.input.modelOutOfReach = true;
        const auto d = FailureDecision::decide(f, false, {});
        QCOMPARE(d.action, Action::FailOver);
        QCOMPARE(d.failure.kind, FailureKind::NotServed);
        QVERIFY(d.mayRotate);
    }

    void anOverloadMayBeRetriedUnlessItsShapeWouldComeAgain() {
        TryFailure f = answered(503, QStringLiteral("overloaded"));
        f.input.retryAfterMs = 7000;
        auto d = FailureDecision::decide(f, false, {});
        QCOMPARE(d.action, Action::FailOver);
        QCOMPARE(d.failure.kind, FailureKind::ServerError);
        QCOMPARE(d.failure.retryAfterMs, std::optional<qint64>(7000));
        QVERIFY(d.mayRetry);
        QVERIFY(!d.mayRotate);
        QVERIFY(d.cause.isEmpty());
        f.noRetry = true;
        d = FailureDecision::decide(f, false, {});
        QCOMPARE(d.action, Action::FailOver);
        QVERIFY(!d.mayRetry);
    }

    void theStatedDelayIsTheHeadersElseTheBodysElseTheWords() {
        TryFailure f = answered(429, QStringLiteral("rate limited, try again in 20s"));
        QCOMPARE(FailureDecision::decide(f, false, {}).failure.retryAfterMs, std::optional<qint64>(20000));
        f.input.statedRetryAfterMs = 45000; // Google's RetryInfo
        QCOMPARE(FailureDecision::decide(f, false, {}).failure.retryAfterMs, std::optional<qint64>(45000));
        f.input.retryAfterMs = 3000; // a Retry-After header
        QCOMPARE(FailureDecision::decide(f, false, {}).failure.retryAfterMs, std::optional<qint64>(3000));
    }
};

QTEST_GUILESS_MAIN(TestFailureDecision)
#include "test_failure_decision.moc"
