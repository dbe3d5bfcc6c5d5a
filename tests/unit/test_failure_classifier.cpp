// record F1 test cycle: the classifier table with the record's messages.
#include "failover/failure_classifier.h"

#include <QTest>
#include <QTimeZone>

using namespace sw::failover;

namespace {
std::optional<FailureKind> kindOf(std::optional<int> status, const QString &message, const QString &classification = {})
{
    FailureInput in;
    in.status = status;
    in.message = message;
    in.classificationMessage = classification;
    const auto f = FailureClassifier::classify(in);
    return f ? std::optional<FailureKind>(f->kind) : std::nullopt;
}
} // namespace

class TestFailureClassifier : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void credentialExhausted()
    {
        QCOMPARE(kindOf(429, QStringLiteral("usage_limit_reached: The usage limit has been reached")),
                 FailureKind::CredentialExhausted);
        QCOMPARE(kindOf(std::nullopt, QStringLiteral("usage_limit_reached")), FailureKind::CredentialExhausted);
        QCOMPARE(kindOf(429, QStringLiteral("")), FailureKind::CredentialExhausted); // opaque 429
        QCOMPARE(kindOf(401, QStringLiteral("invalid x-api-key")), FailureKind::CredentialExhausted);
        QCOMPARE(kindOf(403, QStringLiteral("Your credit balance is too low")), FailureKind::CredentialExhausted);
        QCOMPARE(kindOf(403, QStringLiteral("permission_error: key lacks access")), FailureKind::CredentialExhausted);
    }
    void rateLimited()
    {
        QCOMPARE(kindOf(403, QStringLiteral("Too many concurrent requests for this account")), FailureKind::RateLimited);
        QCOMPARE(kindOf(429, QStringLiteral("Too many requests")), FailureKind::RateLimited);
    }
    void statusRows()
    {
        QCOMPARE(kindOf(404, QStringLiteral("model not found")), FailureKind::NotServed);
        QCOMPARE(kindOf(503, QStringLiteral("Service Unavailable")), FailureKind::ServerError);
        QCOMPARE(kindOf(529, QStringLiteral("Overloaded")), FailureKind::ServerError);
        QCOMPARE(kindOf(408, QStringLiteral("Request Timeout")), FailureKind::ServerError);
        QCOMPARE(kindOf(400, QStringLiteral("invalid_request_error")), std::nullopt);
        QCOMPARE(kindOf(422, QStringLiteral("Unprocessable")), std::nullopt);
    }
    void statusLessStreamErrors()
    {
        QCOMPARE(kindOf(std::nullopt, QStringLiteral("Anthropic stream error (rate_limit_error): Rate limit exceeded")),
                 FailureKind::RateLimited);
        QCOMPARE(kindOf(std::nullopt, QStringLiteral("Anthropic stream error (overloaded_error): Overloaded")),
                 FailureKind::ServerError);
    }
    void statusLessTransport()
    {
        QCOMPARE(kindOf(std::nullopt, QStringLiteral("fetch failed")), FailureKind::Transport);
        QCOMPARE(kindOf(std::nullopt, QStringLiteral("connection refused")), FailureKind::Transport);
        QCOMPARE(kindOf(std::nullopt, QStringLiteral("tls handshake failed")), FailureKind::Transport);
    }
    void retryableGateStopsDeterministicErrors()
    {
        // "500" inside "205000" must not become a server_error mark.
        QCOMPARE(kindOf(std::nullopt, QStringLiteral("invalid_request_error: prompt is too long: 205000 tokens")),
                 std::nullopt);
    }
    void classificationMessageWins()
    {
        QCOMPARE(kindOf(std::nullopt, QStringLiteral("socket hang up"), QStringLiteral("Too many requests")),
                 FailureKind::RateLimited);
    }
    void retryAfterHeaders()
    {
        const qint64 now = 1'700'000'000'000;
        using H = sw::upstream::HeaderList;
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(H{{"Retry-After", "7"}}, now), 7000);
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(H{{"retry-after-ms", "1500"}}, now), 1500);
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(H{{"retry-after-ms", "1500"}, {"retry-after", "3"}}, now),
                 3000); // largest wins
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(H{{"x-ratelimit-reset", QByteArray::number(now + 9000)}}, now),
                 9000); // epoch ms
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(
                     H{{"x-ratelimit-reset", QByteArray::number((now + 20000) / 1000)}}, now),
                 20000); // epoch s
        const QByteArray date = QDateTime::fromMSecsSinceEpoch(now + 60000, QTimeZone::utc())
                                    .toString(Qt::RFC2822Date)
                                    .toLatin1();
        const auto fromDate = FailureClassifier::retryAfterFromHeaders(H{{"Retry-After", date}}, now);
        QVERIFY(fromDate && *fromDate >= 59000 && *fromDate <= 60000);
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(H{{"content-type", "x"}}, now), std::nullopt);
    }
    void retryAfterFromTextOnlyForInBandErrors()
    {
        FailureInput in;
        in.message = QStringLiteral("Rate limit exceeded, please try again in 20s");
        auto f = FailureClassifier::classify(in);
        QVERIFY(f);
        QCOMPARE(f->retryAfterMs, 20000);
        in.retryAfterMs = 5000; // headers win when present
        QCOMPARE(FailureClassifier::classify(in)->retryAfterMs, 5000);
        QCOMPARE(FailureClassifier::retryHintFromText(QStringLiteral("retry after 250ms")), 250);
        QCOMPARE(FailureClassifier::retryHintFromText(QStringLiteral("nothing here")), std::nullopt);
    }
};

QTEST_GUILESS_MAIN(TestFailureClassifier)
#include "test_failure_classifier.moc"
