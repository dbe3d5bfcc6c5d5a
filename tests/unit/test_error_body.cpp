// wire::parseErrorBody reads an upstream's error body through RapidJSON (rj::ParsedJson) and must
// read it exactly as Qt's JSON did before: a differential check against a reading through
// QJsonDocument (the code it replaced, kept here as the oracle), over hand-made bodies of every
// shape the function knows, hostile ones, and every JSON file of the upstream fuzz corpora and
// the test fixtures, for each API.

#include "core/wire/error_body.h"

#include <QDirIterator>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

using namespace sw;

namespace {

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

// The reading before RapidJSON, through QJsonDocument.
wire::ErrorBody oracle(wire::Api api, const QByteArray &body) {
    wire::ErrorBody info;
    const QJsonDocument doc = QJsonDocument::fromJson(body);
    const QJsonObject top = doc.isArray() ? doc.array().at(0).toObject() : doc.object();
    if (api == wire::Api::AnthropicMessages) {
        const QJsonObject o = doc.object();
        const QJsonValue err = o.value(L("error"));
        if (err.isObject()) {
            info.errorType = err.toObject().value(L("type")).toString();
            info.message = err.toObject().value(L("message")).toString();
        } else if (err.isString()) {
            info.message = err.toString();
        } else if (o.value(L("message")).isString()) {
            info.message = o.value(L("message")).toString();
        }
    } else if (api == wire::Api::Google) {
        const QJsonObject err = top.value(L("error")).toObject();
        info.message = err.value(L("message")).toString();
        info.errorType = err.value(L("status")).toString();
    } else {
        const QJsonValue err = top.value(L("error"));
        if (err.isObject()) {
            const QJsonObject e = err.toObject();
            info.message = e.value(L("message")).toString();
            const QJsonValue code = e.value(L("code"));
            info.errorType = code.isString() ? code.toString() : e.value(L("type")).toString();
            if (code.isString())
                info.providerType = e.value(L("type")).toString();
            info.param = e.value(L("param")).toString();
        } else if (err.isString()) {
            info.message = err.toString();
        } else if (top.value(L("message")).isString()) {
            info.message = top.value(L("message")).toString();
        } else if (top.value(L("detail")).isString()) {
            info.message = top.value(L("detail")).toString();
        }
    }
    if (info.message.isEmpty())
        info.message = QString::fromUtf8(body.left(2000)).trimmed();
    return info;
}

QList<QByteArray> handMade() {
    QList<QByteArray> bodies = {
        R"({"error":{"message":"Overloaded","type":"server_error","param":null,"code":null}})",
        R"({"error":{"message":"quota","type":"insufficient_quota","param":"model","code":"insufficient_quota"}})",
        R"({"error":{"message":"m","type":"t","code":429}})",
        R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})",
        R"({"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}})",
        R"([{"error":{"code":429,"message":"Resource exhausted","status":"RESOURCE_EXHAUSTED"}}])",
        R"([{"error":{"message":"in a list","type":"rate_limit_error"}}])",
        R"([])",
        R"([1,2])",
        R"(["x"])",
        R"({"error":"model not found"})",
        R"({"message":"plain message"})",
        R"({"detail":"Not Found"})",
        R"({"detail":[{"loc":["body"],"msg":"field required"}]})",
        R"({"error":{"message":123,"type":["a"],"code":{"x":1}}})",
        R"({"error":null,"message":null,"detail":5})",
        R"({"error":{"message":"dup","message":"last wins"}})",
        R"({"error":{"message":"caf\u00e9 \ud83d\ude00 \"quoted\" \\ back"}})",
        R"({"error":{"message":"nul\u0000inside"}})",
        R"( {"error":{"message":"spaces around"}} )",
        "\xef\xbb\xbf{\"error\":{\"message\":\"after a byte order mark\"}}",
        "{\"error\":{\"message\":\"raw \x01 control\"}}",
        "{\"error\":{\"message\":\"bad utf8 \xff\xfe\"}}",
        R"({"error":{"message":"truncated")",
        "<html><body>502 Bad Gateway</body></html>",
        "upstream connect error or disconnect/reset before headers",
        "",
        "   ",
        "null",
        "\"just a string\"",
        "42",
        R"({"error":{"message":"num","code":1e400}})",
        R"({"error":{"message":"deep","x":)" + QByteArray(2000, '[') + QByteArray(2000, ']') + "}}",
    };
    bodies.append(QByteArray(5000, 'x')); // unparseable and longer than the 2000 kept
    return bodies;
}

QList<QByteArray> corpusFiles() {
    QList<QByteArray> bodies;
    for (const QString &root :
         {QStringLiteral(SWITCHMAN_TEST_DATA), QStringLiteral(SWITCHMAN_TEST_DATA "/../fuzz/corpus")}) {
        QDirIterator it(root, QDir::Files, QDirIterator::Subdirectories);
        while (it.hasNext()) {
            const QString path = it.next();
            if (!path.endsWith(QLatin1String(".json")) && !path.contains(QLatin1String("_json/")))
                continue;
            QFile f(path);
            if (f.open(QIODevice::ReadOnly) && f.size() < 1024 * 1024)
                bodies.append(f.readAll());
        }
    }
    return bodies;
}

} // namespace

class TestErrorBody : public QObject {
    Q_OBJECT

private slots:
    void readsAsQtsJsonDid() {
        QList<QByteArray> bodies = handMade();
        const QList<QByteArray> files = corpusFiles();
        QVERIFY2(files.size() > 50, "the corpora were not found");
        bodies += files;
        int compared = 0;
        for (const wire::Api api : {wire::Api::OpenAICompletions, wire::Api::OpenAIResponses, wire::Api::Pi,
                                    wire::Api::AnthropicMessages, wire::Api::Google}) {
            for (const QByteArray &body : std::as_const(bodies)) {
                const wire::ErrorBody got = wire::parseErrorBody(api, body);
                const wire::ErrorBody want = oracle(api, body);
                const QByteArray what = QByteArray(wire::apiName(api).data()) + ": " + body.left(120);
                QVERIFY2(got.message == want.message, what.constData());
                QVERIFY2(got.errorType == want.errorType, what.constData());
                QVERIFY2(got.providerType == want.providerType, what.constData());
                QVERIFY2(got.param == want.param, what.constData());
                ++compared;
            }
        }
        qInfo("compared %d readings (%lld corpus files)", compared, qint64(files.size()));
    }

    void readsEachShape() {
        const auto openai = wire::parseErrorBody(
            wire::Api::OpenAICompletions,
            R"({"error":{"message":"quota","type":"insufficient_quota","param":"model","code":"insufficient_quota"}})");
        QCOMPARE(openai.message, QStringLiteral("quota"));
        QCOMPARE(openai.errorType, QStringLiteral("insufficient_quota"));
        QCOMPARE(openai.providerType, QStringLiteral("insufficient_quota"));
        QCOMPARE(openai.param, QStringLiteral("model"));
        const auto google = wire::parseErrorBody(
            wire::Api::Google,
            R"([{"error":{"code":429,"message":"Resource exhausted","status":"RESOURCE_EXHAUSTED"}}])");
        QCOMPARE(google.errorType, QStringLiteral("RESOURCE_EXHAUSTED"));
        QCOMPARE(google.message, QStringLiteral("Resource exhausted"));
        QVERIFY(!google.retryAfterMs);
        // Gemini's per-minute limit: its delay is in RetryInfo, not in the words.
        const auto perMinute = wire::parseErrorBody(
            wire::Api::Google,
            R"({"error":{"code":429,"message":"You exceeded your current quota","status":"RESOURCE_EXHAUSTED",)"
            R"("details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[]},)"
            R"({"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"47s"}]}})");
        QCOMPARE(perMinute.retryAfterMs, std::optional<qint64>(47000));
        QVERIFY(!perMinute.quotaOfOneModel); // no violation names a model's quota
        // A quota of one model: by its id, or by the model among its dimensions; a project's is not.
        const auto quota = [](const char *violation) {
            return wire::parseErrorBody(
                wire::Api::Google,
                QByteArray(R"({"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":)"
                           R"("type.googleapis.com/google.rpc.QuotaFailure","violations":[)") +
                    violation + "]}]}}");
        };
        QVERIFY(quota(R"({"quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"})").quotaOfOneModel);
        QVERIFY(
            quota(R"({"quotaId":"X"},{"quotaId":"Y","quotaDimensions":{"model":"gemini-2.5-pro"}})").quotaOfOneModel);
        QVERIFY(!quota(R"({"quotaId":"GenerateRequestsPerDayPerProject","quotaDimensions":{"location":"global"}})")
                     .quotaOfOneModel);
        QVERIFY(!quota(R"("PerModel")").quotaOfOneModel);
        for (const char *delay : {"\"0.5s\"", "\"-3s\"", "\"47\"", "\"s\"", "47"}) {
            const auto odd = wire::parseErrorBody(
                wire::Api::Google,
                QByteArray(
                    R"({"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":)") +
                    delay + "}]}}");
            QCOMPARE(odd.retryAfterMs, QByteArray(delay) == "\"0.5s\"" ? std::optional<qint64>(500) : std::nullopt);
        }
        // Google's ErrorInfo reason, when it is an identifier; prose in its place is not read.
        const auto reason = [](const char *details) {
            return wire::parseErrorBody(
                       wire::Api::Google,
                       QByteArray(R"({"error":{"code":400,"message":"m","status":"INVALID_ARGUMENT","details":[)") +
                           details + "]}}")
                .reason;
        };
        QCOMPARE(reason(R"({"@type":"type.googleapis.com/google.rpc.LocalizedMessage","message":"m"},)"
                        R"({"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"})"),
                 QStringLiteral("API_KEY_INVALID"));
        QCOMPARE(reason(R"({"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API key not valid"})"),
                 QString());
        QCOMPARE(reason(R"({"@type":"type.googleapis.com/google.rpc.DebugInfo","reason":"API_KEY_INVALID"})"),
                 QString());
        QCOMPARE(reason(R"({"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":7})"), QString());
        QVERIFY(wire::parseErrorBody(wire::Api::OpenAICompletions,
                                     R"({"error":{"message":"m","details":[{"reason":"API_KEY_INVALID"}]}})")
                    .reason.isEmpty());
        const auto html = wire::parseErrorBody(wire::Api::AnthropicMessages, "  <html>502</html> ");
        QCOMPARE(html.message, QStringLiteral("<html>502</html>"));
        QVERIFY(html.errorType.isEmpty());
    }

    // A body read with a 2xx (where a stream was asked for) is classified by its error type.
    void aBodysErrorTypeStandsForAStatus() {
        const auto status = [](wire::Api api, const char *body) {
            return wire::statusForErrorBody(api, wire::parseErrorBody(api, body));
        };
        QCOMPARE(status(wire::Api::AnthropicMessages, R"({"type":"error","error":{"type":"rate_limit_error"}})"),
                 std::optional<int>(429));
        QCOMPARE(status(wire::Api::Google, R"({"error":{"code":0,"status":"UNAVAILABLE","message":"x"}})"),
                 std::optional<int>(503));
        QCOMPARE(
            status(wire::Api::OpenAIResponses, R"({"error":{"type":"server_error","code":"rate_limit_exceeded"}})"),
            std::optional<int>(429));
        QCOMPARE(status(wire::Api::AnthropicMessages, "<html>Sign in</html>"), std::nullopt);
        QCOMPARE(status(wire::Api::OpenAICompletions,
                        R"({"error":{"type":"invalid_request_error","code":"unsupported_value"}})"),
                 std::optional<int>(400));
    }

    // An OpenAI-shaped error whose code the table does not list is still the request's error when
    // its type says so: OpenAI's 400 codes are mostly specific strings, Gemini's status comes as the
    // code behind a proxy, and LiteLLM puts the status there as a string. Read for its code alone,
    // such an error sent in band (another Switchman, a gateway that opens its stream early) reached
    // the client as 502 server_error, and was retried or failed over when its words sounded
    // transient (probe AB1 F3).
    void anUnlistedOpenAICodeFallsBackToItsStatusOrType_data() {
        QTest::addColumn<QJsonObject>("error");
        QTest::addColumn<std::optional<int>>("expected");
        const auto error = [](const QJsonValue &code, const QString &type) {
            return QJsonObject{{L("message"), QStringLiteral("m")}, {L("type"), type}, {L("code"), code}};
        };
        const QString request = QStringLiteral("invalid_request_error");
        QTest::newRow("unsupported_value")
            << error(QStringLiteral("unsupported_value"), request) << std::optional<int>(400);
        QTest::newRow("Gemini INVALID_ARGUMENT")
            << error(QStringLiteral("INVALID_ARGUMENT"), request) << std::optional<int>(400);
        QTest::newRow("a status as a string")
            << error(QStringLiteral("422"), QStringLiteral("BadRequestError")) << std::optional<int>(422);
        QTest::newRow("a status as a string, over the type")
            << error(QStringLiteral("404"), request) << std::optional<int>(404);
        // What the table lists still decides first.
        QTest::newRow("a listed code") << error(QStringLiteral("rate_limit_exceeded"), request)
                                       << std::optional<int>(429);
        QTest::newRow("a number") << error(413, request) << std::optional<int>(413);
        QTest::newRow("no code") << error(QJsonValue(), request) << std::optional<int>(400);
        // A string that is no status, with an unknown type: still nothing.
        QTest::newRow("200 as a string") << error(QStringLiteral("200"), QStringLiteral("tokens"))
                                         << std::optional<int>();
        QTest::newRow("unknown both") << error(QStringLiteral("unsupported_value"), QStringLiteral("tokens"))
                                      << std::optional<int>();
    }
    void anUnlistedOpenAICodeFallsBackToItsStatusOrType() {
        QFETCH(QJsonObject, error);
        QFETCH(std::optional<int>, expected);
        QCOMPARE(wire::statusForOpenAIError(error), expected);
    }
};

QTEST_GUILESS_MAIN(TestErrorBody)
#include "test_error_body.moc"
