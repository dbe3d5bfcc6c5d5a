// The classifier table (docs/failover.md, "Which failures fail over") with real providers' messages.
#include "core/credentials/park_policy.h"
#include "core/failover/failure_classifier.h"
#include "core/upstream/sse_reader.h"
#include "core/upstream/upstream_adapter.h"

#include <QFile>

#include <QTest>
#include <QTimeZone>

using namespace sw::failover;

namespace {
std::optional<FailureKind> kindOf(std::optional<int> status, const QString &message,
                                  const QString &classification = {}) {
    FailureInput in;
    in.status = status;
    in.message = message;
    in.classificationMessage = classification;
    const auto f = FailureClassifier::classify(in);
    return f ? std::optional<FailureKind>(f->kind) : std::nullopt;
}
} // namespace

namespace {
QByteArray fixture(const QString &name) {
    QFile f(QStringLiteral(SWITCHMAN_TEST_DATA "/") + name);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// As the loop builds its input from an HTTP error: the adapter's reading of the body.
std::optional<UpstreamFailure> classifyBody(const QString &api, int status, const QByteArray &body) {
    const auto *adapter = sw::upstream::adapterFor(api);
    const auto info = adapter->parseError(status, body);
    FailureInput in;
    in.status = status;
    in.message = info.message;
    in.classificationMessage =
        info.errorType.isEmpty() ? QString() : info.errorType + QStringLiteral(": ") + info.message;
    if (sw::credentials::keyRefusedWith400(info.reason)) // after the words, as UpstreamAttempts::ownWords
        in.classificationMessage = (in.classificationMessage.isEmpty() ? info.message : in.classificationMessage) +
                                   QStringLiteral(" (reason ") + info.reason + QLatin1Char(')');
    return FailureClassifier::classify(in);
}
} // namespace

class TestFailureClassifier : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void realProviderBodies_data() {
        QTest::addColumn<QString>("api");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("kind");
        const QString anthropic = QStringLiteral("anthropic-messages");
        const QString openai = QStringLiteral("openai-completions");
        const QString google = QStringLiteral("google-generative-ai");
        QTest::newRow("anthropic 529 overloaded_error")
            << anthropic << 529 << QStringLiteral("anthropic_529_overloaded.json") << int(FailureKind::ServerError);
        QTest::newRow("anthropic 429 rate_limit_error")
            << anthropic << 429 << QStringLiteral("anthropic_429_rate_limit.json") << int(FailureKind::RateLimited);
        QTest::newRow("openai 429 insufficient_quota")
            << openai << 429 << QStringLiteral("openai_429_insufficient_quota.json")
            << int(FailureKind::CredentialExhausted);
        QTest::newRow("openai 429 rate_limit_exceeded")
            << openai << 429 << QStringLiteral("openai_429_rate_limit_exceeded.json") << int(FailureKind::RateLimited);
        // Its rate-limit text links to the billing page: still a per-minute limit, not a spent quota.
        QTest::newRow("openai 429 requests per minute")
            << openai << 429 << QStringLiteral("openai_429_rate_limit_rpm.json") << int(FailureKind::RateLimited);
        // Google reports a wrong key as a 400: the key is refused, so the pool's next key or the next
        // candidate answers instead of the client reading "API key not valid" as its own.
        QTest::newRow("google 400 API_KEY_INVALID")
            << google << 400 << QStringLiteral("google_400_api_key_invalid.json")
            << int(FailureKind::CredentialExhausted);
        // A deleted Gemini key and a wrong or revoked xAI key, each refused with a 400 in words of its
        // own: the chain stopped there and the key stayed in service (probe AA4 F4).
        QTest::newRow("google 400 API Key not found")
            << google << 400 << QStringLiteral("google_400_api_key_not_found.json")
            << int(FailureKind::CredentialExhausted);
        QTest::newRow("xai 400 Incorrect API key provided")
            << openai << 400 << QStringLiteral("xai_400_incorrect_api_key.json")
            << int(FailureKind::CredentialExhausted);
        QTest::newRow("openai 500 server_error")
            << openai << 500 << QStringLiteral("openai_500_server_error.json") << int(FailureKind::ServerError);
        // An opaque 429 (no rate-limit wording) reads as a usage limit (record F1).
        QTest::newRow("google 429 RESOURCE_EXHAUSTED")
            << google << 429 << QStringLiteral("google_429_resource_exhausted.json")
            << int(FailureKind::CredentialExhausted);
        QTest::newRow("google 503 UNAVAILABLE")
            << google << 503 << QStringLiteral("google_503_unavailable.json") << int(FailureKind::ServerError);
    }
    void realProviderBodies() {
        QFETCH(QString, api);
        QFETCH(int, status);
        QFETCH(QString, file);
        QFETCH(int, kind);
        const QByteArray body = fixture(QStringLiteral("failures/") + file);
        QVERIFY(!body.isEmpty());
        const auto f = classifyBody(api, status, body);
        QVERIFY(f);
        QCOMPARE(int(f->kind), kind);
        QCOMPARE(f->status, status);
    }
    // Words that decide for every tenant (a shared key's fate, a base URL's traits) are masked where the
    // error quotes the request; the provider's own words around them, and a prompt that merely
    // mentions them, still count (probe BV R1: "my credit balance is low" hid Anthropic's real 400).
    void echoedSignalsAreMaskedAndTheProvidersOwnKept() {
        QStringList request{QStringLiteral("API key not valid"), QStringLiteral("limit"),
                            QStringLiteral("my credit balance is low, and the usage limit too"),
                            QStringLiteral("insufficient_quota")};
        const auto strings = [&request]() -> const QStringList & { return request; };

        const QString quoted =
            QStringLiteral("invalid_request_error: API key not valid: Extra inputs are not permitted");
        const QString masked = FailureClassifier::withoutEchoes(quoted, strings);
        QCOMPARE(masked, QStringLiteral("invalid_request_error: \u2026: Extra inputs are not permitted"));
        FailureInput in;
        in.status = 400;
        in.classificationMessage = masked;
        QVERIFY(!FailureClassifier::classify(in)); // the client's own bad request: stop, nothing rotated
        in.classificationMessage = quoted;
        QCOMPARE(FailureClassifier::classify(in)->kind, FailureKind::CredentialExhausted); // what it was before

        // A prompt that mentions the words is no quote: the provider's own message counts whole.
        const QString spent = QStringLiteral("invalid_request_error: Your credit balance is too low to access the "
                                             "Anthropic API. You have reached your usage limit.");
        QCOMPARE(FailureClassifier::withoutEchoes(spent, strings), spent);
        // A quote of the middle or the end of a request string (a provider that quotes the last 60
        // characters of a message) is a quote too (probe EV 2); a prompt that ends with the words, or
        // with "your" and the words, is not (probe EV2 2: Anthropic's real 400 went to the client).
        request << QStringLiteral("some words the provider cut off, and then my credit balance")
                << QStringLiteral("what is my credit balance") << QStringLiteral("show me your credit balance")
                << QString(50, u'x') + QStringLiteral("filler credit balance filler") + QString(50, u'y');
        // 20 characters from the middle of a string (probe EV2 1).
        QCOMPARE(FailureClassifier::withoutEchoes(QStringLiteral("Unknown name \"er credit balance fi\"."), strings),
                 QStringLiteral("Unknown name \"er \u2026 fi\"."));
        QCOMPARE(FailureClassifier::withoutEchoes(
                     QStringLiteral("Unknown name \"and then my credit balance\": Cannot find field."), strings),
                 QStringLiteral("Unknown name \"and then my \u2026\": Cannot find field."));
        QCOMPARE(FailureClassifier::withoutEchoes(spent, strings), spent);
        // A model id quoted back by a 404 is one; a code the provider sets beside it is its own.
        QCOMPARE(
            FailureClassifier::withoutEchoes(QStringLiteral("The model `insufficient_quota` does not exist"), strings),
            QStringLiteral("The model `\u2026` does not exist"));
        // Each match is judged alone: one quoted phrase does not hide another the provider wrote.
        const QString both = QStringLiteral("API key not valid. API_KEY_INVALID");
        QCOMPARE(FailureClassifier::withoutEchoes(both, strings), QStringLiteral("\u2026. API_KEY_INVALID"));

        // The ask for reasoning back teaches a base URL for every tenant: masked alike.
        const QString learn =
            QStringLiteral("Unrecognized request argument supplied: reasoning_content must be passed back");
        FailureInput back;
        back.status = 400;
        request = {QStringLiteral("reasoning_content must be passed back")};
        back.classificationMessage = FailureClassifier::withoutEchoes(learn, strings);
        QVERIFY(!FailureClassifier::asksForReasoningBack(back));
        back.classificationMessage = learn;
        QVERIFY(FailureClassifier::asksForReasoningBack(back));
        // So does the refusal of a reasoning summary.
        const QString summary = QStringLiteral("Invalid value for 'input[0]': no reasoning summary, please");
        request = {QStringLiteral("no reasoning summary, please")};
        back.classificationMessage = FailureClassifier::withoutEchoes(summary, strings);
        QVERIFY(!FailureClassifier::refusesReasoningSummary(back));
        back.classificationMessage = summary;
        QVERIFY(FailureClassifier::refusesReasoningSummary(back));
    }

    // An upstream error that repeats a judged phrase ("usage limit; " 4700 times, 60 KB) was checked
    // match by match against every string of the request: a 4 MB request held the engine, and every
    // tenant, for 18 s (probe AB2 F3). The cost is now about the request's size plus the error's: counted
    // in characters examined, never timed.
    void judgingAnErrorCostsAboutTheRequestsSizeNotItsProduct() {
        const QString flood = QStringLiteral("usage limit; ").repeated(4700);
        QStringList request{QString(1024 * 1024, u'x'),
                            QStringLiteral("what does the usage limit of my plan say? ").repeated(2500)};
        qint64 requestChars = 0;
        for (const QString &s : request)
            requestChars += s.size();
        int asked = 0;
        const auto strings = [&]() -> const QStringList & {
            ++asked;
            return request;
        };
        qint64 before = FailureClassifier::echoCheckSteps();
        const QString judged = FailureClassifier::withoutEchoes(flood, strings);
        QVERIFY2(asked <= 1, qPrintable(QString::number(asked))); // once, not once per match
        QVERIFY2(FailureClassifier::echoCheckSteps() - before < 2 * requestChars,
                 qPrintable(QString::number(FailureClassifier::echoCheckSteps() - before)));
        // A bounded start is judged, and the provider's own words in it still count: the prompt only
        // mentions them.
        QCOMPARE(judged, flood.left(4096));
        QVERIFY(sw::credentials::usageWording(judged));

        // Quoted back whole, they are the request's words, at the same cost.
        request.append(flood);
        asked = 0;
        before = FailureClassifier::echoCheckSteps();
        QVERIFY(!sw::credentials::usageWording(FailureClassifier::withoutEchoes(flood, strings)));
        QVERIFY(asked <= 1);
        QVERIFY(FailureClassifier::echoCheckSteps() - before < 2 * (requestChars + flood.size()));
        request.removeLast();

        // Distinct phrases, each read against the request once: a few of them, the provider's own
        // first, are judged; past those the words are taken for echoes.
        QString distinct;
        for (int n = 1; distinct.size() < 4000; ++n)
            distinct += QStringLiteral("try again in %1 seconds; ").arg(n);
        asked = 0;
        before = FailureClassifier::echoCheckSteps();
        const QString reset = FailureClassifier::withoutEchoes(distinct, strings);
        QVERIFY(asked <= 1);
        QVERIFY2(FailureClassifier::echoCheckSteps() - before < 20 * requestChars,
                 qPrintable(QString::number(FailureClassifier::echoCheckSteps() - before)));
        QVERIFY2(reset.startsWith(QStringLiteral("try again in 1 seconds; try again in 2 seconds")), qPrintable(reset));
        QCOMPARE(sw::credentials::resetHintFromText(reset, 0), std::optional<qint64>(1000));
    }

    void aRefusedSignatureIsRecognisedInEachApisWords_data() {
        QTest::addColumn<QString>("api");
        QTest::addColumn<QString>("file");
        QTest::addColumn<bool>("refused");
        QTest::newRow("anthropic thinking signature")
            << QStringLiteral("anthropic-messages") << QStringLiteral("anthropic_400_invalid_signature.json") << true;
        QTest::newRow("openai encrypted reasoning")
            << QStringLiteral("openai-responses") << QStringLiteral("openai_400_invalid_encrypted_content.json")
            << true;
        QTest::newRow("gemini thought signature")
            << QStringLiteral("google-generative-ai") << QStringLiteral("google_400_corrupted_thought_signature.json")
            << true;
        QTest::newRow("claude on vertex, wrapped")
            << QStringLiteral("google-generative-ai") << QStringLiteral("google_400_vertex_anthropic_signature.json")
            << true;
        QTest::newRow("another 400") << QStringLiteral("anthropic-messages")
                                     << QStringLiteral("anthropic_400_prompt_too_long.json") << false;
    }
    void aRefusedSignatureIsRecognisedInEachApisWords() {
        // The loop retries the same candidate without signed reasoning on these (and only these)
        // 400s; every one of them is otherwise a stop, as any 400 is.
        QFETCH(QString, api);
        QFETCH(QString, file);
        QFETCH(bool, refused);
        const QByteArray body = fixture(QStringLiteral("failures/") + file);
        QVERIFY(!body.isEmpty());
        const auto info = sw::upstream::adapterFor(api)->parseError(400, body);
        FailureInput in;
        in.status = 400;
        in.message = info.message;
        in.classificationMessage =
            info.errorType.isEmpty() ? QString() : info.errorType + QStringLiteral(": ") + info.message;
        QCOMPARE(FailureClassifier::refusesReplayedReasoning(in), refused);
        QVERIFY(!FailureClassifier::classify(in));
        in.status = 500; // the words alone are not enough: a 500 is an outage, failed over
        QVERIFY(!FailureClassifier::refusesReplayedReasoning(in));
    }

    void aToolTurnWithoutItsReasoningIsAskedBack_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<bool>("asked");
        QTest::newRow("deepseek, missing field")
            << QStringLiteral("deepseek_400_missing_reasoning_content.json") << true;
        QTest::newRow("deepseek, pass it back")
            << QStringLiteral("deepseek_400_reasoning_content_passed_back.json") << true;
        // The opposite refusal (Groq, Cerebras) names the field too; sending it again would not help.
        QTest::newRow("groq, field unsupported")
            << QStringLiteral("groq_400_reasoning_content_unsupported.json") << false;
        QTest::newRow("an encrypted item") << QStringLiteral("openai_400_invalid_encrypted_content.json") << false;
    }
    void aToolTurnWithoutItsReasoningIsAskedBack() {
        // The loop sends the same candidate once more with each tool-call turn's reasoning_content on
        // these 400s (and only these); they are otherwise a stop, as any 400 is.
        QFETCH(QString, file);
        QFETCH(bool, asked);
        const QByteArray body = fixture(QStringLiteral("failures/") + file);
        QVERIFY(!body.isEmpty());
        const auto info = sw::upstream::adapterFor(QStringLiteral("openai-completions"))->parseError(400, body);
        FailureInput in;
        in.status = 400;
        in.message = info.message;
        in.classificationMessage =
            info.errorType.isEmpty() ? QString() : info.errorType + QStringLiteral(": ") + info.message;
        QCOMPARE(FailureClassifier::asksForReasoningBack(in), asked);
        QVERIFY(!FailureClassifier::refusesReplayedReasoning(in) || !asked);
        QVERIFY(!FailureClassifier::classify(in));
        in.status = 500;
        QVERIFY(!FailureClassifier::asksForReasoningBack(in));
    }

    void aToolCallIdRefusalIsRecognisedUnlessTheRequestQuotedIt() {
        // Mistral's validator (its API, vLLM's mistral tokenizer mode) and Mistral's chat templates
        // (vLLM, llama.cpp, LM Studio) refuse an id that is not nine characters of [a-zA-Z0-9]: the
        // loop sends the same candidate the ids so, and the base URL is taught it for every tenant.
        const auto refuses = [](std::optional<int> status, const QString &text) {
            FailureInput in;
            in.status = status;
            in.message = text;
            return FailureClassifier::refusesToolCallIds(in);
        };
        const QString mistral =
            QStringLiteral("invalid_function_call: Tool call id was toolu_01AAA but must be a-z, A-Z, 0-9, "
                           "with a length of 9.");
        QVERIFY(refuses(400, mistral));
        QVERIFY(refuses(422, mistral));
        QVERIFY(refuses(400, QStringLiteral("Tool call id was call_61626542 but must be a-z, A-Z, 0-9, with a "
                                            "length of 9")));
        QVERIFY(refuses(400, QStringLiteral("Error in applying chat template from request: Tool call IDs should be "
                                            "alphanumeric strings with length 9!")));
        QVERIFY(refuses(500, QStringLiteral("Jinja Exception: Tool call IDs should be alphanumeric strings with "
                                            "length 9!")));
        QVERIFY(!refuses(401, mistral));
        QVERIFY(!refuses(std::nullopt, mistral));
        QVERIFY(!refuses(400, QStringLiteral("Invalid 'messages[2].tool_call_id': string too long. Expected a "
                                             "string with maximum length 40")));
        FailureInput plain;
        plain.status = 400;
        plain.message = mistral;
        QVERIFY(!FailureClassifier::classify(plain)); // else a stop, as any 400

        // The provider's own sentence quotes the refused id, a request string: still its own words.
        QStringList request{QStringLiteral("toolu_01AAA"), QStringLiteral("read_file")};
        const auto strings = [&request]() -> const QStringList & { return request; };
        QCOMPARE(FailureClassifier::withoutEchoes(mistral, strings), mistral);
        // A prompt that holds the sentence, quoted back in another 400, is the client's words: it
        // teaches the base URL nothing.
        const QString prompt =
            QStringLiteral("why does it say Tool call id was x1 but must be a-z, A-Z, 0-9, with a length of 9?");
        request = {prompt};
        FailureInput echoed;
        echoed.status = 400;
        echoed.classificationMessage = FailureClassifier::withoutEchoes(
            QStringLiteral("Invalid content: '") + prompt + QStringLiteral("' is too long"), strings);
        QVERIFY2(!FailureClassifier::refusesToolCallIds(echoed), qPrintable(echoed.classificationMessage));
        request = {QStringLiteral("why does it say Tool call IDs should be alphanumeric strings with length 9!")};
        echoed.classificationMessage = FailureClassifier::withoutEchoes(
            QStringLiteral("Unknown name \"") + request.first() + QStringLiteral("\""), strings);
        QVERIFY2(!FailureClassifier::refusesToolCallIds(echoed), qPrintable(echoed.classificationMessage));
    }

    void anOutputCapRefusalNamesTheModelsMaximum() {
        // What providers say when the request's max_tokens is more than the model writes: the number
        // that is the most it takes, read from each form (a fallback model with a smaller cap than
        // the client's first choice answers this way).
        const auto most = [](int status, const char *text) {
            FailureInput in;
            in.status = status;
            in.message = QString::fromLatin1(text);
            return FailureClassifier::outputMaximum(in);
        };
        QCOMPARE(most(400, "invalid_request_error: max_tokens: 64000 > 8192, which is the maximum allowed number of "
                           "output tokens for claude-3-5-haiku-20241022"),
                 8192);
        QCOMPARE(most(400, "max_tokens is too large: 100000. This model supports at most 16384 completion tokens, "
                           "whereas you provided 100000."),
                 16384);
        QCOMPARE(most(400, "'max_tokens' or 'max_completion_tokens' is too large: 100000. This model's maximum context "
                           "length is 32768 tokens and your request has 50 input tokens (100000 > 32768 - 50)."),
                 32718);
        QCOMPARE(most(400, "invalid_request_error: input length and `max_tokens` exceed context limit: 197000 + 64000 "
                           "> 200000, decrease input length or `max_tokens` and try again"),
                 3000);
        QCOMPARE(most(400, "`max_tokens` must be less than or equal to `8192`, the maximum value for `max_tokens` is "
                           "less than the `context_window` for this model"),
                 8192);
        QCOMPARE(most(400, "Invalid 'max_output_tokens': integer above maximum value. Expected a value <= 128000, but "
                           "got 200000 instead."),
                 128000);
        QCOMPARE(most(400, "Invalid max_tokens value, the valid range of max_tokens is [1, 8192]"), 8192);
        QCOMPARE(most(400,
                      "Unable to submit request because it has a maxOutputTokens value of 100000 but the "
                      "supported range is from 1 (inclusive) to 65537 (exclusive). Update the value and try again."),
                 65536);
        QCOMPARE(most(422, "max_tokens: 9000 > 4096, which is the maximum"), 4096);
        // Not an output cap, no number, or not a refusal of the request: nothing.
        QVERIFY(!most(400, "invalid_request_error: prompt is too long: 210000 tokens > 200000 maximum"));
        QVERIFY(!most(400, "max_tokens is too large"));
        QVERIFY(!most(500, "max_tokens: 64000 > 8192, which is the maximum allowed"));
        QVERIFY(!most(400, "input length and `max_tokens` exceed context limit: 250000 + 64000 > 200000"));
    }

    void aRefusedKeyIsToldFromALimitOnIt() {
        // A caller's own (passthrough) key refused is the caller's to renew; a limit on it is not.
        const auto refuses = [](int status, const char *text) {
            FailureInput in;
            in.status = status;
            in.message = QString::fromLatin1(text);
            return FailureClassifier::refusesTheKey(in);
        };
        QVERIFY(refuses(401, "authentication_error: OAuth token has expired."));
        QVERIFY(refuses(403, "permission_error: OAuth token does not meet scope requirement"));
        QVERIFY(!refuses(403, "concurrency limit reached"));
        QVERIFY(!refuses(403, "You have reached your usage limit"));
        QVERIFY(!refuses(402, "Insufficient credits"));
        QVERIFY(!refuses(429, "rate_limit_error: Number of requests has exceeded your rate limit"));
        QVERIFY(!refuses(400, "invalid_request_error: credit balance is too low"));
        QVERIFY(refuses(400, "INVALID_ARGUMENT: API key not valid. Please pass a valid API key."));
        QVERIFY(refuses(400, "INVALID_ARGUMENT: API key expired. Please renew the API key."));
        QVERIFY(!refuses(400, "INVALID_ARGUMENT: Request contains an invalid argument."));
        QVERIFY(refuses(400, "INVALID_ARGUMENT: API Key not found. Please pass a valid API key."));
        QVERIFY(refuses(400, "Incorrect API key provided: xa***ey. You can obtain an API key from the console."));
        // An ordinary 400 (a bad model, a bad parameter) says nothing against the key.
        QVERIFY(!refuses(400, "Model not found: grok-9. Check the model name and your API key permissions."));
        QVERIFY(!refuses(400, "invalid_request_error: Invalid value for temperature: must be at most 2."));
        QVERIFY(!refuses(400, "INVALID_ARGUMENT: * GenerateContentRequest.model: unexpected model name format"));
    }

    // Google's ErrorInfo reason says what its message may say in words no pattern knows: Gemini's
    // generic "Request contains an invalid argument." with reason API_KEY_INVALID or API_KEY_EXPIRED
    // refuses the key; with another reason, or none, it is the request's own bad argument.
    void googlesErrorInfoReasonDecidesAKeyRefusal() {
        const auto classifyWithReason = [](const QByteArray &reason) {
            return classifyBody(QStringLiteral("google-generative-ai"), 400,
                                "{\"error\":{\"code\":400,\"message\":\"Request contains an invalid argument.\","
                                "\"status\":\"INVALID_ARGUMENT\",\"details\":[{\"@type\":"
                                "\"type.googleapis.com/google.rpc.ErrorInfo\",\"reason\":\"" +
                                    reason + "\",\"domain\":\"googleapis.com\"}]}}");
        };
        for (const char *reason : {"API_KEY_INVALID", "API_KEY_EXPIRED"}) {
            const auto f = classifyWithReason(reason);
            QVERIFY2(f && f->kind == FailureKind::CredentialExhausted, reason);
        }
        QVERIFY(!classifyWithReason("BAD_REQUEST"));
        QVERIFY(!classifyWithReason("The API key is not valid")); // prose is no reason: never read
    }

    // The new words are masked where a 400 quotes them from the request: a tenant's prompt or field
    // name saying "API Key not found" or "Incorrect API key provided" does not set the shared key aside.
    void keyRefusalWordsQuotedFromTheRequestAreMasked() {
        const QStringList request{QStringLiteral("API Key not found"), QStringLiteral("Incorrect API key provided")};
        const auto strings = [&request]() -> const QStringList & { return request; };
        for (const QString &quoted :
             {QStringLiteral("INVALID_ARGUMENT: Invalid JSON payload received. Unknown name \"API Key not found\": "
                             "Cannot find field."),
              QStringLiteral("Unrecognized request argument supplied: Incorrect API key provided")}) {
            FailureInput in;
            in.status = 400;
            in.classificationMessage = quoted;
            QVERIFY2(FailureClassifier::classify(in), qPrintable(quoted)); // the words alone do refuse the key
            in.classificationMessage = FailureClassifier::withoutEchoes(quoted, strings);
            QVERIFY2(!FailureClassifier::classify(in), qPrintable(in.classificationMessage));
        }
    }

    void openaiRateLimitHintFromItsText() {
        const auto f = classifyBody(QStringLiteral("openai-completions"), 429,
                                    fixture(QStringLiteral("failures/openai_429_rate_limit_exceeded.json")));
        QVERIFY(f);
        QCOMPARE(f->retryAfterMs, 2220);
    }
    void responsesFailedStreamIsAServerError() {
        // The in-band shape: error then response.failed, decoded as the loop decodes it.
        const auto *adapter = sw::upstream::adapterFor(QStringLiteral("openai-responses"));
        auto decoder = adapter->makeDecoder({});
        sw::upstream::SseReader sse;
        std::optional<sw::model::StreamEvent> error;
        for (const auto &e : sse.feed(fixture(QStringLiteral("responses_upstream_failed.sse"))))
            for (const auto &ev : decoder->feed(e))
                if (ev.type == sw::model::EventType::Error && !error)
                    error = ev;
        QVERIFY(error);
        FailureInput in;
        in.message = error->errorMessage;
        in.classificationMessage =
            error->errorType.isEmpty() ? QString() : error->errorType + QStringLiteral(": ") + error->errorMessage;
        in.status = error->errorStatus;
        const auto f = FailureClassifier::classify(in);
        QVERIFY(f);
        QCOMPARE(f->kind, FailureKind::ServerError);
    }
    void credentialExhausted() {
        QCOMPARE(kindOf(429, QStringLiteral("usage_limit_reached: The usage limit has been reached")),
                 FailureKind::CredentialExhausted);
        QCOMPARE(kindOf(std::nullopt, QStringLiteral("usage_limit_reached")), FailureKind::CredentialExhausted);
        QCOMPARE(kindOf(429, QStringLiteral("")), FailureKind::CredentialExhausted); // opaque 429
        // Any 402: it went straight to the client, with the key left "ok" and no failover.
        QCOMPARE(kindOf(402, QStringLiteral("Insufficient credits. Add more using https://example.test/credits")),
                 FailureKind::CredentialExhausted);
        QCOMPARE(kindOf(402, QStringLiteral("")), FailureKind::CredentialExhausted);
        // OpenRouter's 402s that refuse this request's size, not the account: a smaller request on the
        // same key is served, so nothing is set aside for everyone (probe G3 1).
        const QString fewer = QStringLiteral("This request requires more credits, or fewer max_tokens. You requested "
                                             "up to 64000 tokens, but can only afford 5000. To increase, visit "
                                             "https://example.test/credits and upgrade to a paid account");
        QCOMPARE(kindOf(402, fewer), FailureKind::NotServed);
        QCOMPARE(kindOf(402, QStringLiteral("Prompt tokens limit exceeded: 10234 > 6964")), FailureKind::NotServed);
        // Quoted from a tenant's prompt, the words decide nothing: a spent key's 402 that quotes "can only
        // afford 7" stays a usage limit (probe GV 3).
        const QStringList prompt{QStringLiteral("please say: can only afford 7 tokens")};
        const auto promptStrings = [&prompt]() -> const QStringList & { return prompt; };
        FailureInput quoting;
        quoting.status = 402;
        quoting.message = QStringLiteral("Insufficient credits for request 'please say: can only afford 7 tokens'");
        quoting.classificationMessage = FailureClassifier::withoutEchoes(quoting.message, promptStrings);
        QCOMPARE(FailureClassifier::classify(quoting)->kind, FailureKind::CredentialExhausted);
        QCOMPARE(FailureClassifier::outputMaximum(quoting), std::optional<int>());
        FailureInput sized;
        sized.status = 402;
        sized.message = fewer;
        QCOMPARE(FailureClassifier::outputMaximum(sized), std::optional<int>(5000));
        // Credit for a dozen tokens is no answer: the next candidate answers (probe GV 2).
        sized.message = QStringLiteral("This request requires more credits, or fewer max_tokens. You requested up to "
                                       "64000 tokens, but can only afford 12.");
        QCOMPARE(FailureClassifier::outputMaximum(sized), std::optional<int>());
        QCOMPARE(FailureClassifier::classify(sized)->kind, FailureKind::NotServed);
        sized.message = QStringLiteral("Prompt tokens limit exceeded: 10234 > 6964");
        QCOMPARE(FailureClassifier::outputMaximum(sized), std::optional<int>()); // the prompt is the problem
        QCOMPARE(kindOf(401, QStringLiteral("invalid x-api-key")), FailureKind::CredentialExhausted);
        QCOMPARE(kindOf(403, QStringLiteral("Your credit balance is too low")), FailureKind::CredentialExhausted);
        QCOMPARE(kindOf(403, QStringLiteral("permission_error: key lacks access")), FailureKind::CredentialExhausted);
    }
    void rateLimited() {
        QCOMPARE(kindOf(403, QStringLiteral("Too many concurrent requests for this account")),
                 FailureKind::RateLimited);
        QCOMPARE(kindOf(429, QStringLiteral("Too many requests")), FailureKind::RateLimited);
    }
    void statusRows() {
        QCOMPARE(kindOf(404, QStringLiteral("model not found")), FailureKind::NotServed);
        QCOMPARE(kindOf(503, QStringLiteral("Service Unavailable")), FailureKind::ServerError);
        QCOMPARE(kindOf(529, QStringLiteral("Overloaded")), FailureKind::ServerError);
        QCOMPARE(kindOf(408, QStringLiteral("Request Timeout")), FailureKind::ServerError);
        QCOMPARE(kindOf(400, QStringLiteral("invalid_request_error")), std::nullopt);
        QCOMPARE(kindOf(422, QStringLiteral("Unprocessable")), std::nullopt);
    }
    void statusLessStreamErrors() {
        QCOMPARE(kindOf(std::nullopt, QStringLiteral("Anthropic stream error (rate_limit_error): Rate limit exceeded")),
                 FailureKind::RateLimited);
        QCOMPARE(kindOf(std::nullopt, QStringLiteral("Anthropic stream error (overloaded_error): Overloaded")),
                 FailureKind::ServerError);
    }
    void typedTransportErrorsAreTransportWhateverTheirText_data() {
        using sw::upstream::TransportError;
        QTest::addColumn<int>("error");
        QTest::addColumn<QString>("message");
        // Qt's own wordings that the old text regex missed, and an empty one.
        QTest::newRow("dns") << int(TransportError::HostNotFound) << QStringLiteral("Host api.example.test not found");
        QTest::newRow("refused") << int(TransportError::Refused) << QStringLiteral("Connection refused");
        QTest::newRow("tls") << int(TransportError::Tls) << QStringLiteral("SSL handshake failed");
        QTest::newRow("reset") << int(TransportError::Reset) << QStringLiteral("Connection reset by peer");
        QTest::newRow("timeout") << int(TransportError::Timeout) << QStringLiteral("Socket operation timed out");
        QTest::newRow("bad response") << int(TransportError::Other) << QStringLiteral("bad HTTP response");
        QTest::newRow("canceled") << int(TransportError::Other) << QStringLiteral("Operation canceled");
        QTest::newRow("no text") << int(TransportError::Other) << QString();
    }
    void typedTransportErrorsAreTransportWhateverTheirText() {
        QFETCH(int, error);
        QFETCH(QString, message);
        FailureInput in;
        in.transportError = sw::upstream::TransportError(error);
        in.message = message;
        const auto f = FailureClassifier::classify(in);
        QVERIFY(f);
        QCOMPARE(f->kind, FailureKind::Transport);
    }
    void anErrorStatusWinsOverItsBrokenBody() {
        // A 503 whose chunked body then broke: the upstream answered, so the model is marked (server
        // error), not the whole base URL. Before any error status, a broken response is transport.
        FailureInput in;
        in.transportError = sw::upstream::TransportError::Other;
        in.message = QStringLiteral("bad HTTP response: malformed chunk size");
        in.status = 503;
        QCOMPARE(FailureClassifier::classify(in)->kind, FailureKind::ServerError);
        in.status = 200;
        QCOMPARE(FailureClassifier::classify(in)->kind, FailureKind::Transport);
        in.status.reset();
        QCOMPARE(FailureClassifier::classify(in)->kind, FailureKind::Transport);
    }
    void inBandTextIsNeverTransport() {
        // A stream error arrived over a working connection: it marks the model, not the host.
        QCOMPARE(kindOf(std::nullopt, QStringLiteral("upstream connection reset")), FailureKind::ServerError);
        // Refusal wording is not a connection failure (a refusal is a Done, decoded upstream of here).
        QCOMPARE(kindOf(std::nullopt, QStringLiteral("The model refused to answer this request")), std::nullopt);
        QCOMPARE(kindOf(std::nullopt, QStringLiteral("fetch failed")), std::nullopt);
    }
    void aLoopOfGatewaysStops() {
        // 508 Loop Detected (a Switchman on the way saw the request come back): a retry or a
        // failover would go round again, so it stops whatever its words say.
        QCOMPARE(kindOf(508, QStringLiteral("loop detected: this request has already passed through this Switchman")),
                 std::nullopt);
        QCOMPARE(kindOf(508, QStringLiteral("Loop Detected")), std::nullopt);
        QCOMPARE(kindOf(508, QString()), std::nullopt);
        // A 508 that is about something else (a shared host's resource limit) fails over like a 503.
        QCOMPARE(kindOf(508, QStringLiteral("508 Resource Limit Is Reached")), FailureKind::ServerError);
        // A Switchman further on that had sent its stream's headers reports the loop in band: its
        // words, with no status or the 500 its error type reads as.
        const QString inBand = QStringLiteral(
            "OpenAI stream error (server_error): upstream peer/m reported 508 Loop Detected: the request went "
            "round a loop of gateways and is not retried; check providers.peer.baseUrl");
        QCOMPARE(kindOf(std::nullopt, inBand), std::nullopt);
        QCOMPARE(kindOf(500, inBand), std::nullopt);
        QCOMPARE(kindOf(500, QStringLiteral("Anthropic stream error (api_error): loop detected: this request has "
                                            "already passed through this Switchman (Via: switchman-abc)")),
                 std::nullopt);
        // Other words about loops are a server's trouble like any other.
        QCOMPARE(kindOf(503, QStringLiteral("infinite loop detected in the tool runner")), FailureKind::ServerError);
    }
    void redirectsStop() {
        QCOMPARE(kindOf(301, QStringLiteral("Moved Permanently")), std::nullopt);
        QCOMPARE(kindOf(307, QStringLiteral("")), std::nullopt);
        QCOMPARE(kindOf(302, QStringLiteral("503 service unavailable")), std::nullopt);
    }
    void hostileRetryAfterIsClamped() {
        using H = sw::upstream::HeaderList;
        const qint64 now = 1'700'000'000'000;
        const qint64 cap = FailureClassifier::kMaxRetryAfterMs;
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(H{{"Retry-After", "1e400"}}, now, 429), std::nullopt); // inf
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(H{{"Retry-After", "nan"}}, now, 429), std::nullopt);
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(H{{"Retry-After", "-5"}}, now, 429), std::nullopt);
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(H{{"Retry-After", "99999999999999999999999"}}, now, 429),
                 cap);
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(H{{"x-ratelimit-reset-ms", QByteArray(400, '9')}}, now, 429),
                 cap);
        // What is no number of seconds says no delay, the default applies: "1e9" set the key aside for
        // the 7-day cap, for every tenant (probe P2).
        for (const char *header : {"Retry-After", "retry-after-ms", "x-ratelimit-reset", "x-ratelimit-reset-ms"})
            for (const char *value : {"1e9", "1e300", "0x10", "inf", "+5", "1.2.3", "."})
                QVERIFY2(!FailureClassifier::retryAfterFromHeaders(H{{header, value}}, now, 429),
                         qPrintable(QStringLiteral("%1: %2").arg(QLatin1String(header), QLatin1String(value))));
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(H{{"Retry-After", " 3.5 "}}, now, 429), 3500);
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(H{{"Retry-After", "120"}}, now, 429), 120000);
        const auto overflow = FailureClassifier::retryHintFromText(
            QStringLiteral("try again in ") + QString(400, QLatin1Char('9')) + QStringLiteral("s"));
        QVERIFY(!overflow || *overflow == cap); // dropped or capped, never a cast of inf
        QCOMPARE(FailureClassifier::retryHintFromText(QStringLiteral("try again in 9999999999999 minutes")), cap);
    }
    void retryableGateStopsDeterministicErrors() {
        // "500" inside "205000" must not become a server_error mark.
        QCOMPARE(kindOf(std::nullopt, QStringLiteral("invalid_request_error: prompt is too long: 205000 tokens")),
                 std::nullopt);
    }
    void classificationMessageWins() {
        QCOMPARE(kindOf(std::nullopt, QStringLiteral("socket hang up"), QStringLiteral("Too many requests")),
                 FailureKind::RateLimited);
    }
    void retryAfterHeaders() {
        const qint64 now = 1'700'000'000'000;
        using H = sw::upstream::HeaderList;
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(H{{"Retry-After", "7"}}, now, 429), 7000);
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(H{{"retry-after-ms", "1500"}}, now, 429), 1500);
        // The finer of the provider's own two wins (the SDKs read retry-after-ms first).
        QCOMPARE(
            FailureClassifier::retryAfterFromHeaders(H{{"retry-after-ms", "1500"}, {"retry-after", "3"}}, now, 429),
            1500);
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(H{{"x-ratelimit-reset", QByteArray::number(now + 9000)}}, now,
                                                          429),
                 9000); // epoch ms
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(
                     H{{"x-ratelimit-reset", QByteArray::number((now + 20000) / 1000)}}, now, 429),
                 20000); // epoch s
        const QByteArray date =
            QDateTime::fromMSecsSinceEpoch(now + 60000, QTimeZone::utc()).toString(Qt::RFC2822Date).toLatin1();
        const auto fromDate = FailureClassifier::retryAfterFromHeaders(H{{"Retry-After", date}}, now, 429);
        QVERIFY(fromDate && *fromDate >= 59000 && *fromDate <= 60000);
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(H{{"content-type", "x"}}, now, 429), std::nullopt);
        // RFC 9110's HTTP-date: the IMF-fixdate with "GMT" (what servers send), and the two
        // obsolete forms a recipient must still read. now + 120 s = Tue, 14 Nov 2023 22:15:20 GMT.
        for (const char *when : {"Tue, 14 Nov 2023 22:15:20 GMT", "Tuesday, 14-Nov-23 22:15:20 GMT",
                                 "Tue Nov 14 22:15:20 2023", "Tue, 14 Nov 2023 23:15:20 +0100"}) {
            const auto ms = FailureClassifier::retryAfterFromHeaders(H{{"Retry-After", when}}, now, 429);
            QVERIFY2(ms && *ms == 120000, when);
        }
        // OpenAI's per-dimension reset durations: the spent dimension's.
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(H{{"x-ratelimit-remaining-requests", "0"},
                                                            {"x-ratelimit-reset-requests", "33s"},
                                                            {"x-ratelimit-remaining-tokens", "90000"},
                                                            {"x-ratelimit-reset-tokens", "6m0s"}},
                                                          now, 429),
                 33000);
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(H{{"x-ratelimit-remaining-requests", "12"},
                                                            {"x-ratelimit-reset-requests", "120ms"},
                                                            {"x-ratelimit-remaining-tokens", "0"},
                                                            {"x-ratelimit-reset-tokens", "1m30.5s"}},
                                                          now, 429),
                 90500);
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(H{{"x-ratelimit-reset-requests", "2s"}}, now, 429), 2000);
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(H{{"x-ratelimit-reset-requests", "soon"}}, now, 429),
                 std::nullopt);
        // OpenAI's 429 "try again in 494 ms", as it sends it: its own word, not when the token
        // bucket is full again (a 61 s wait and a minute's mark, probe W2 F4).
        const H openai429{{"retry-after-ms", "494"},
                          {"retry-after", "1"},
                          {"x-ratelimit-limit-tokens", "30000"},
                          {"x-ratelimit-remaining-tokens", "0"},
                          {"x-ratelimit-reset-tokens", "1m0.052s"},
                          {"x-ratelimit-remaining-requests", "499"},
                          {"x-ratelimit-reset-requests", "120ms"}};
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(openai429, now, 429), 494);
        // The same budgets on a server error, with quota left: they are no wait (a 90 s wait and
        // mark for a one-off 503, probe W2 F3); nor on a 429 with every count above 0.
        const H budgetsLeft{{"x-ratelimit-remaining-requests", "9"},
                            {"x-ratelimit-reset-requests", "90s"},
                            {"x-ratelimit-remaining-tokens", "29000"},
                            {"x-ratelimit-reset-tokens", "3m0s"}};
        for (const int status : {500, 502, 503, 429})
            QVERIFY2(!FailureClassifier::retryAfterFromHeaders(budgetsLeft, now, status),
                     qPrintable(QString::number(status)));
        H spent = budgetsLeft;
        spent[0].second = "0";
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(spent, now, 429), 90000);
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(spent, now, 503), std::nullopt);
        // A server error's own Retry-After stands (RFC 9110 10.2.3).
        QCOMPARE(FailureClassifier::retryAfterFromHeaders(H{{"Retry-After", "30"}}, now, 503), 30000);
    }
    void retryAfterFromTextOnlyForInBandErrors() {
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

    // A provider's 403 (or Google's 400) that refuses what this request carries, with its key in good
    // standing, set the shared key aside for every tenant: xAI's safety check for an hour as "auth" (its
    // text names the "API key ID"), OpenRouter's moderation and Gemini's file refusals for a minute
    // (probe S2 F1). It is this request's refusal: the client's, as a 400 content_filter is.
    void aContentRefusalIsTheRequestsNotTheKeys_data() {
        QTest::addColumn<QString>("api");
        QTest::addColumn<int>("status");
        QTest::addColumn<QByteArray>("body");
        const QString openai = QStringLiteral("openai-completions");
        const QString google = QStringLiteral("google-generative-ai");
        QTest::newRow("xai safety check")
            << openai << 403
            << QByteArray("{\"code\":\"The caller does not have permission to execute the specified operation\","
                          "\"error\":\"Content violates usage guidelines. Team: 0000-test, API key ID: 1111-test, "
                          "Model: grok-4-0709, Failed check: SAFETY_CHECK_TYPE_BIO\"}");
        QTest::newRow("openrouter moderation")
            << openai << 403
            << QByteArray("{\"error\":{\"code\":403,\"message\":\"openai/gpt-4o requires moderation on OpenRouter. "
                          "Your input was flagged for \\\"violence/graphic\\\". No credits were charged.\","
                          "\"metadata\":{\"reasons\":[\"violence/graphic\"]}}}");
        QTest::newRow("gemini file of another project")
            << google << 403
            << QByteArray("{\"error\":{\"code\":403,\"message\":\"You do not have permission to access the File "
                          "8k2lq0x1 or it may not exist.\",\"status\":\"PERMISSION_DENIED\"}}");
        QTest::newRow("gemini file still processing")
            << google << 400
            << QByteArray("{\"error\":{\"code\":400,\"message\":\"The File 4d21d8wxg1pe is not in an ACTIVE state "
                          "and usage is not allowed.\",\"status\":\"FAILED_PRECONDITION\"}}");
    }
    void aContentRefusalIsTheRequestsNotTheKeys() {
        QFETCH(QString, api);
        QFETCH(int, status);
        QFETCH(QByteArray, body);
        const auto info = sw::upstream::adapterFor(api)->parseError(status, body);
        FailureInput in;
        in.status = status;
        in.message = info.message;
        in.classificationMessage =
            info.errorType.isEmpty() ? QString() : info.errorType + QStringLiteral(": ") + info.message;
        QVERIFY2(!FailureClassifier::refusesTheKey(in), qPrintable(in.message));
        QVERIFY2(!FailureClassifier::classify(in), qPrintable(in.message)); // stop: the client reads it
        QVERIFY(FailureClassifier::refusesTheContent(in));
    }
    // The key's and the account's own refusals are unchanged, whatever else their words say.
    void theKeysOwnRefusalsStillRefuseIt() {
        const auto kind = [](int status, const char *text) {
            FailureInput in;
            in.status = status;
            in.message = QString::fromUtf8(text);
            QVERIFY2(FailureClassifier::refusesTheKey(in), text);
            QVERIFY2(!FailureClassifier::refusesTheContent(in), text);
            const auto f = FailureClassifier::classify(in);
            QVERIFY2(f && f->kind == FailureKind::CredentialExhausted, text);
        };
        kind(401, "Incorrect API key provided. Content violates nothing.");
        kind(403, "invalid api key");
        kind(403, "permission_error: Your API key does not have permission to use the specified resource.");
        kind(403, "PERMISSION_DENIED: Permission denied: Consumer 'api_key:AIza' has been suspended.");
        kind(403, "PERMISSION_DENIED: Generative Language API has not been used in project 123 before or it is "
                  "disabled.");
        kind(403, "unsupported_country_region_territory: Country, region, or territory not supported");
        kind(403, "Your organization has been disabled for violating our usage policies.");
        kind(403, "This account was suspended: content violates usage guidelines.");
        kind(400, "INVALID_ARGUMENT: API key not valid. Please pass a valid API key.");
        kind(400, "FAILED_PRECONDITION: User location is not supported for the API use.");
        kind(400, "FAILED_PRECONDITION: Gemini API free tier is not available in your country. Please enable billing.");
        // An account the provider shut, said with a 400 (probe V1 F3: the chain stopped there, the key
        // stayed in service, and every request failed while a fallback was healthy).
        kind(400, "invalid_request_error: This organization has been disabled.");
        kind(400, "organization_restricted: Organization has been restricted. Please reach out to support if you "
                  "believe this was in error.");
        // A limit on one model or feature is no word on the key.
        for (const char *limit : {"invalid_request_error: Your organization is restricted from using this model.",
                                  "invalid_request_error: Your organization's access to this model is restricted."}) {
            FailureInput in;
            in.status = 400;
            in.message = QString::fromUtf8(limit);
            QVERIFY2(!FailureClassifier::refusesTheKey(in), limit);
        }
        // A content refusal's page is a page (a WAF's "your request was flagged"): its row, not this one.
        FailureInput page;
        page.status = 403;
        page.message = QStringLiteral("<html><body>Your request was flagged by our firewall</body></html>");
        QVERIFY(!FailureClassifier::refusesTheContent(page));
        QCOMPARE(FailureClassifier::classify(page)->kind, FailureKind::ServerError);
    }

    // OpenAI refuses to stream o3 or gpt-5 to an organisation not verified, and every upstream request
    // streams: not this request's error, nor an outage; the next candidate may serve it (V1 F4).
    void aModelThatWillNotStreamToTheAccountIsNotServed() {
        FailureInput in;
        in.status = 400;
        in.message = QStringLiteral("Your organization must be verified to stream this model. Please go to: "
                                    "https://platform.openai.com/settings/organization/general and click on Verify "
                                    "Organization.");
        in.classificationMessage = QStringLiteral("unsupported_value: ") + in.message;
        QCOMPARE(FailureClassifier::classify(in)->kind, FailureKind::NotServed);
        // A request's own 400 stays the client's.
        in.message = QStringLiteral("Invalid type for 'temperature': expected a decimal, but got a string instead.");
        in.classificationMessage = QStringLiteral("invalid_type: ") + in.message;
        QVERIFY(!FailureClassifier::classify(in));
    }

    // A provider that does not serve the model says so with a 400 (Groq's retired models, LM Studio
    // with none loaded): the 404's meaning. The route's fallback was never asked (probe X1 F3).
    void aModelTheProviderDoesNotServeIsNotServedAlsoAsA400() {
        FailureInput in;
        in.status = 400;
        in.message = QStringLiteral("The model `llama-3.1-70b-versatile` has been decommissioned and is no longer "
                                    "supported. Please refer to the deprecations page for a recommendation.");
        in.classificationMessage = QStringLiteral("model_decommissioned: ") + in.message;
        auto f = FailureClassifier::classify(in);
        QVERIFY(f);
        QCOMPARE(f->kind, FailureKind::NotServed);
        in.message = QStringLiteral("No models loaded. Please load a model in the developer page or use the "
                                    "`lms load` command.");
        in.classificationMessage = QStringLiteral("invalid_request_error: ") + in.message;
        f = FailureClassifier::classify(in);
        QVERIFY(f);
        QCOMPARE(f->kind, FailureKind::NotServed);
        in.message = QStringLiteral("The model `qwen-9` does not exist or you do not have access to it.");
        in.classificationMessage = QStringLiteral("model_not_found: ") + in.message;
        QCOMPARE(FailureClassifier::classify(in)->kind, FailureKind::NotServed);
        // A request's own 400 about its parameters stays the client's.
        in.message = QStringLiteral("Unsupported value: 'temperature' does not support 0.5 with this model. Only the "
                                    "default (1) value is supported.");
        in.classificationMessage = QStringLiteral("unsupported_value: ") + in.message;
        QVERIFY(!FailureClassifier::classify(in));
        in.message = QStringLiteral("For this model, `functions` is no longer supported; use `tools`.");
        in.classificationMessage = QStringLiteral("invalid_request_error: ") + in.message;
        QVERIFY(!FailureClassifier::classify(in));
        in.message = QStringLiteral("tools[0].parameters: the model property 'x' does not exist in required.");
        in.classificationMessage = in.message;
        QVERIFY(!FailureClassifier::classify(in));
        // A prompt that says the words, quoted back in a 400, is the request's, not the provider's.
        const QStringList strings{QStringLiteral("why are no models loaded in my app? the model has been "
                                                 "decommissioned they say")};
        const QString quoted = QStringLiteral("invalid_request_error: Input 'why are no models loaded in my app? the "
                                              "model has been decommissioned they say' is too long.");
        in.message = quoted;
        in.classificationMessage =
            FailureClassifier::withoutEchoes(quoted, [&]() -> const QStringList & { return strings; });
        QVERIFY2(!FailureClassifier::classify(in), qPrintable(in.classificationMessage));
        // Only a 400: a 500 with the words is a server's error as before.
        in.status = 500;
        in.classificationMessage = QStringLiteral("model_decommissioned: gone");
        QCOMPARE(FailureClassifier::classify(in)->kind, FailureKind::ServerError);
    }

    // A 413 is the request's size for this provider alone (Anthropic's request_too_large, an nginx's
    // stock page in front of a self-hosted server): another candidate may take it (probe Z1 F1).
    void aRequestTooLargeForTheProviderIsNotServed() {
        FailureInput in;
        in.status = 413;
        in.message = QStringLiteral("Request exceeds the maximum allowed number of bytes.");
        in.classificationMessage = QStringLiteral("request_too_large: ") + in.message;
        auto f = FailureClassifier::classify(in);
        QVERIFY(f);
        QCOMPARE(f->kind, FailureKind::NotServed);
        QVERIFY(!f->retryAfterMs);
        in.message = QStringLiteral("413 Request Entity Too Large nginx/1.22.1");
        in.classificationMessage = in.message;
        QCOMPARE(FailureClassifier::classify(in)->kind, FailureKind::NotServed);
        // Other statuses below 500 still stop.
        in.status = 422;
        QVERIFY(!FailureClassifier::classify(in));
    }

    // Conversation state only the provider that made it holds (Responses): another provider of the
    // same API says it is not found. Not the request's error: the one that holds it may be next; a
    // reasoning item by id alone is mended like a foreign signature (probe X3 F1, F2).
    void conversationStateAnotherProviderHoldsIsNotServed() {
        FailureInput in;
        in.status = 400;
        in.message = QStringLiteral("Previous response with id 'resp_68af0c1d' not found.");
        in.classificationMessage = QStringLiteral("previous_response_not_found: ") + in.message;
        QVERIFY(FailureClassifier::lacksTheConversation(in));
        QCOMPARE(FailureClassifier::classify(in)->kind, FailureKind::NotServed);
        in.message = QStringLiteral("Item with id 'rs_68af0c1d5e' not found. Items are not persisted when `store` is "
                                    "set to false. Try again with `store` set to true, or remove this item from your "
                                    "input.");
        in.classificationMessage = QStringLiteral("invalid_request_error: ") + in.message;
        QVERIFY(FailureClassifier::refusesReplayedReasoning(in));
        // An item by reference is also what a client that sent store: false is told: its own error.
        in.message = QStringLiteral("Item with id 'msg_68af0c1d5e' not found. Items are not persisted when `store` "
                                    "is set to false.");
        in.classificationMessage = in.message;
        QVERIFY(!FailureClassifier::refusesReplayedReasoning(in));
        QVERIFY(!FailureClassifier::classify(in));
        // A 400 about the request's own fields stays the client's.
        in.message = QStringLiteral("Invalid 'input[2].id': string too long.");
        in.classificationMessage = in.message;
        QVERIFY(!FailureClassifier::classify(in));
    }

    // Gemini's 429 for a quota of one model (QuotaFailure's quotaId "…PerModel…", or the model among
    // its dimensions) limits that model, not the key, whatever its quota words (probe V1 F5).
    void aQuotaOfOneModelIsThatModelsRateLimit() {
        FailureInput in;
        in.status = 429;
        in.message = QStringLiteral("You exceeded your current quota, please check your plan and billing details.");
        in.classificationMessage = QStringLiteral("RESOURCE_EXHAUSTED: ") + in.message;
        in.statedRetryAfterMs = 20000;
        QCOMPARE(FailureClassifier::classify(in)->kind, FailureKind::CredentialExhausted);
        in.quotaOfOneModel = true;
        const auto f = FailureClassifier::classify(in);
        QCOMPARE(f->kind, FailureKind::RateLimited);
        QCOMPARE(f->retryAfterMs, std::optional<qint64>(20000));
        // Only a 429 says the quota is used up.
        in.status = 403;
        QCOMPARE(FailureClassifier::classify(in)->kind, FailureKind::CredentialExhausted);
    }

    // One request larger than a per-minute token limit marked the model rate_limited for the tenant,
    // steering its other clients off a healthy provider (probe S2 F4). The quota is untouched: the
    // request's own size, another candidate (a larger limit) may take it, nothing is marked.
    void aRequestTooLargeForTheRateLimitIsNotARateLimit() {
        const auto classified = [](const char *text, bool untouched) {
            FailureInput in;
            in.status = 429;
            in.message = QString::fromUtf8(text);
            in.quotaUntouched = untouched;
            return FailureClassifier::classify(in);
        };
        const char *openai = "rate_limit_exceeded: Request too large for gpt-4o in organization org-x on tokens per "
                             "min (TPM): Limit 30000, Requested 43090. The input or output tokens must be reduced in "
                             "order to run successfully. Visit https://platform.openai.com/account/rate-limits to "
                             "learn more.";
        const char *anthropic =
            "rate_limit_error: This request would exceed the rate limit for your organization (0000) of 30,000 input "
            "tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the "
            "response headers for current usage. Please reduce the prompt length or the maximum tokens requested, "
            "or try again later.";
        QCOMPARE(classified(openai, false)->kind, FailureKind::NotServed); // it says so
        QCOMPARE(classified(openai, true)->kind, FailureKind::NotServed);
        QCOMPARE(classified(anthropic, true)->kind, FailureKind::NotServed);
        // Anthropic's words are those of any token limit: without the headers it is one.
        QCOMPARE(classified(anthropic, false)->kind, FailureKind::RateLimited);
        // A limit reached is a limit, whatever the headers.
        const char *reached = "rate_limit_exceeded: Rate limit reached for gpt-4o in organization org-x on tokens per "
                              "min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s.";
        QCOMPARE(classified(reached, false)->kind, FailureKind::RateLimited);
        QCOMPARE(classified(reached, true)->kind, FailureKind::RateLimited);
        QCOMPARE(classified("Too many concurrent requests", true)->kind, FailureKind::RateLimited);

        using sw::upstream::HeaderList;
        QVERIFY(FailureClassifier::quotaUntouched(HeaderList{{"x-ratelimit-limit-tokens", "30000"},
                                                             {"x-ratelimit-remaining-tokens", "30000"},
                                                             {"x-ratelimit-limit-requests", "500"},
                                                             {"x-ratelimit-remaining-requests", "499"}}));
        QVERIFY(FailureClassifier::quotaUntouched(HeaderList{{"anthropic-ratelimit-input-tokens-limit", "30000"},
                                                             {"Anthropic-Ratelimit-Input-Tokens-Remaining", "30000"}}));
        QVERIFY(!FailureClassifier::quotaUntouched(
            HeaderList{{"x-ratelimit-limit-tokens", "30000"}, {"x-ratelimit-remaining-tokens", "1000"}}));
        QVERIFY(!FailureClassifier::quotaUntouched(HeaderList{{"x-ratelimit-limit-tokens", "30000"},
                                                              {"x-ratelimit-remaining-tokens", "30000"},
                                                              {"x-ratelimit-limit-requests", "500"},
                                                              {"x-ratelimit-remaining-requests", "0"}}));
        QVERIFY(!FailureClassifier::quotaUntouched(
            HeaderList{{"x-ratelimit-limit-requests", "500"}, {"x-ratelimit-remaining-requests", "500"}}));
        QVERIFY(!FailureClassifier::quotaUntouched(HeaderList{}));
    }

    void aForbiddenModelIsNotServedNotTheKey() {
        const QString openai = QStringLiteral("Project `proj_x1` does not have access to model `gpt-4.1`");
        QVERIFY(FailureClassifier::namesTheModel(403, openai, QStringLiteral("gpt-4.1")));
        QVERIFY(FailureClassifier::namesTheModel(403, QStringLiteral("no access to model gpt-4.1."),
                                                 QStringLiteral("gpt-4.1")));
        QVERIFY(FailureClassifier::namesTheModel(403, QStringLiteral("models/gemini-x is not allowed"),
                                                 QStringLiteral("gemini-x")));
        // Only the model as a word of its own, and only a 403.
        QVERIFY(!FailureClassifier::namesTheModel(403, openai, QStringLiteral("gpt-4")));
        QVERIFY(!FailureClassifier::namesTheModel(403, openai, QStringLiteral("x1")));
        QVERIFY(!FailureClassifier::namesTheModel(403, QStringLiteral("no access to gpt-4.1.5"),
                                                  QStringLiteral("gpt-4.1")));
        QVERIFY(!FailureClassifier::namesTheModel(400, openai, QStringLiteral("gpt-4.1")));
        QVERIFY(!FailureClassifier::namesTheModel(429, openai, QStringLiteral("gpt-4.1")));
        QVERIFY(!FailureClassifier::namesTheModel(403, QStringLiteral("Sorry, you have been blocked"),
                                                  QStringLiteral("gpt-4.1")));
        // Pages and echoes that hold the model without a word on it (probe DV R3): Google's HTML 403
        // quotes the URL, which names a Gemini model; a WAF echoes the request body.
        QVERIFY(!FailureClassifier::namesTheModel(
            403,
            QStringLiteral("<!DOCTYPE html><html><p>Your client does not have permission to get URL "
                           "/v1beta/models/gemini-x:streamGenerateContent from this server.</p></html>"),
            QStringLiteral("gemini-x")));
        QVERIFY(!FailureClassifier::namesTheModel(
            403, QStringLiteral("Access denied. Request: {\"model\":\"gpt-4.1\",\"messages\":[]}"),
            QStringLiteral("gpt-4.1")));
        QVERIFY(!FailureClassifier::namesTheModel(403, QStringLiteral("gpt-4.1 is a fine model"),
                                                  QStringLiteral("gpt-4.1")));

        FailureInput in;
        in.status = 403;
        in.message = openai;
        QCOMPARE(FailureClassifier::classify(in)->kind, FailureKind::CredentialExhausted); // the key, without a model
        QVERIFY(FailureClassifier::refusesTheKey(in));
        in.modelOutOfReach = true;
        QCOMPARE(FailureClassifier::classify(in)->kind, FailureKind::NotServed);
        QVERIFY(!FailureClassifier::refusesTheKey(in)); // a caller's own key is not refused either
        in.message = QStringLiteral("too many concurrent requests for model gpt-4.1");
        QCOMPARE(FailureClassifier::classify(in)->kind, FailureKind::RateLimited);
    }

    // LiteLLM's virtual key limited to some models answers a model outside its list with a 401
    // (key_model_access_denied, team_model_access_denied). One tenant's request for such a model
    // rejected the shared key for every tenant and model, until its secret changed (probe AB2 F1).
    void aModelRefusedWithA401IsTheModelsNotTheKeys() {
        const auto litellm = [](const QString &model) {
            return QStringLiteral("key not allowed to access model. This key can only access models=[allowed]. "
                                  "Tried to access ") +
                   model;
        };
        QVERIFY(FailureClassifier::namesTheModel(401, litellm(QStringLiteral("gpt-5")), QStringLiteral("gpt-5")));
        QVERIFY(FailureClassifier::namesTheModel(
            401, QStringLiteral("team not allowed to access model. Tried to access gpt-5"), QStringLiteral("gpt-5")));
        QVERIFY(FailureClassifier::namesTheModel(401, QStringLiteral("Unauthorized: this key may not use model gpt-5"),
                                                 QStringLiteral("gpt-5")));
        // A 401 that says the key itself is wrong stays the key's, model named or not.
        QVERIFY(!FailureClassifier::namesTheModel(
            401, QStringLiteral("Incorrect API key provided. You do not have access to model gpt-5."),
            QStringLiteral("gpt-5")));
        QVERIFY(!FailureClassifier::namesTheModel(
            401, QStringLiteral("Authentication Error - Expired Key. Tried to access gpt-5"), QStringLiteral("gpt-5")));
        // A model id a tenant chose is no word on the key.
        QVERIFY(FailureClassifier::namesTheModel(401, litellm(QStringLiteral("invalid-api-key")),
                                                 QStringLiteral("invalid-api-key")));

        FailureInput in;
        in.status = 401;
        in.message = litellm(QStringLiteral("gpt-5"));
        in.modelOutOfReach = FailureClassifier::namesTheModel(401, in.message, QStringLiteral("gpt-5"));
        QCOMPARE(FailureClassifier::classify(in)->kind, FailureKind::NotServed);
        QVERIFY(!FailureClassifier::refusesTheKey(in));
        in.modelOutOfReach = FailureClassifier::namesTheModel(401, in.message, QStringLiteral("gpt-4o"));
        QCOMPARE(FailureClassifier::classify(in)->kind, FailureKind::CredentialExhausted); // not the model asked for

        // A one-character model id is a word of its own in many a sentence: it counts where a model's
        // name stands. LiteLLM's 403 builds parked the key for an hour for everyone when it went unread.
        QVERIFY(FailureClassifier::namesTheModel(403, litellm(QStringLiteral("x")), QStringLiteral("x")));
        QVERIFY(FailureClassifier::namesTheModel(401, litellm(QStringLiteral("x")), QStringLiteral("x")));
        QVERIFY(FailureClassifier::namesTheModel(403, QStringLiteral("no access to model `x`"), QStringLiteral("x")));
        QVERIFY(FailureClassifier::namesTheModel(403, QStringLiteral("models/x is not allowed"), QStringLiteral("x")));
        QVERIFY(!FailureClassifier::namesTheModel(
            403, QStringLiteral("Your API key does not have permission: x marks it"), QStringLiteral("x")));
        QVERIFY(!FailureClassifier::namesTheModel(403, QStringLiteral("You do not have access to a model of this kind"),
                                                  QStringLiteral("a")));
    }
};

QTEST_GUILESS_MAIN(TestFailureClassifier)
#include "test_failure_classifier.moc"
