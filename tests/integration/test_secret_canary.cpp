// No secret anywhere: a unique fake key is planted as an
// env: credential, a keychain credential, a passthrough caller key and a
// gateway key; every error path is driven; then the logs, the attempts, the
// usage ledger, /metrics, the admin API, every response and the saved config
// are searched for it. Upstream error bodies that quote the key are included
// (some providers do).
#include "core/config/config_loader.h"
#include "core/telemetry/telemetry.h"
#include "fake_clock.h"
#include "gateway_fixture.h"

#include <QCryptographicHash>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using namespace sw;
using namespace sw::test;

namespace {
demo::Fault statusQuoting(int code, const QByteArray &key) {
    demo::Fault f;
    f.kind = demo::Fault::Status;
    f.status = code;
    f.body = R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key )" + key +
             R"("},"error_openai":{"message":"Incorrect API key provided: )" + key + R"("}})";
    return f;
}

// Each string in `value` that is JSON itself (a call's arguments), as the client that parses it reads it.
void appendInnerJson(QByteArray &out, const QJsonValue &value) {
    if (value.isString()) {
        const QJsonDocument inner = QJsonDocument::fromJson(value.toString().toUtf8());
        if (inner.isObject()) {
            out += QJsonDocument(inner.object()).toJson(QJsonDocument::Compact) + '\n';
            appendInnerJson(out, inner.object());
        }
    } else if (value.isArray()) {
        for (const QJsonValue &item : value.toArray())
            appendInnerJson(out, item);
    } else if (value.isObject()) {
        for (const QJsonValue &member : value.toObject())
            appendInnerJson(out, member);
    }
}

// An answer as a client's JSON parser reads it: each data line's JSON (or the body's), written again
// without escapes, so that a key the upstream wrote escaped ("\u002B") shows as the key.
QByteArray asAClientReadsIt(const QByteArray &body) {
    QByteArray out;
    for (QByteArray line : body.split('\n')) {
        line = line.trimmed();
        if (line.startsWith("data: "))
            line = line.mid(6);
        const QJsonDocument doc = QJsonDocument::fromJson(line);
        if (doc.isObject()) {
            out += QJsonDocument(doc.object()).toJson(QJsonDocument::Compact) + '\n';
            appendInnerJson(out, doc.object());
        }
    }
    return out;
}

// `text` with each of `which` written as a JSON \uXXXX escape (every character when `which` is empty).
QByteArray jsonEscaped(const QByteArray &text, const QByteArray &which = {}) {
    QByteArray out;
    for (const char c : text)
        out += which.isEmpty() || which.contains(c) ? "\\u" + QByteArray::number(uchar(c), 16).rightJustified(4, '0')
                                                    : QByteArray(1, c);
    return out;
}
} // namespace

class TestSecretCanary : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void plantedKeyAppearsNowhere() {
        const QByteArray canary = "sk-canary-" + QByteArray::number(QRandomGenerator::system()->generate64(), 16);
        const QByteArray envKey = canary + "-env";
        const QByteArray keychainKey = canary + "-keychain";
        const QByteArray callerKey = canary + "-caller";
        const QByteArray gatewayKey = canary + "-gateway";
        qputenv("SW_CANARY_ENV", envKey);

        FakeClock clock;
        GatewayFixture gw;
        gw.clock = &clock;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("env:SW_CANARY_ENV")};
        gw.config.providers[QStringLiteral("pb")].credentials = {QStringLiteral("keychain:canary")};
        gw.config.providers[QStringLiteral("pc")].credentials = {QStringLiteral("passthrough")};
        gw.secrets.secrets.insert(QStringLiteral("canary"), keychainKey);
        config::TenantConfig alice;
        alice.name = QStringLiteral("alice");
        alice.admin = true;
        alice.keyHashes = {
            QStringLiteral("sha256:") +
            QString::fromLatin1(QCryptographicHash::hash(gatewayKey, QCryptographicHash::Sha256).toHex())};
        gw.config.tenants.insert(alice.name, alice);
        config::RouteConfig all;
        all.name = QStringLiteral("all");
        all.candidates = {QStringLiteral("pc/claude-c"), QStringLiteral("pa/claude-a"), QStringLiteral("pb/gpt-b")};
        gw.config.routes.insert(all.name, all);
        gw.start();
        QSignalSpy logs(gw.engine().telemetry(), &telemetry::Telemetry::logLine);

        QList<HttpResult> responses;
        const QList<QPair<QByteArray, QByteArray>> asAlice{{"authorization", "Bearer " + gatewayKey}};
        const QList<QPair<QByteArray, QByteArray>> passthrough{{"x-switchman-key", gatewayKey},
                                                               {"x-api-key", callerKey}};
        auto messages = [&](const QString &model, bool stream, const QList<QPair<QByteArray, QByteArray>> &h) {
            responses << gw.post(QStringLiteral("/v1/messages"),
                                 GatewayFixture::anthropicBody(model, QStringLiteral("hello"), stream), h);
        };
        auto chat = [&](const QString &model, bool stream, const QList<QPair<QByteArray, QByteArray>> &h) {
            responses << gw.post(QStringLiteral("/v1/chat/completions"),
                                 GatewayFixture::openaiBody(model, QStringLiteral("hello"), stream), h);
        };

        // Upstream 401s that quote the key they got, on every provider, then 5xx, then success.
        gw.anthropicC.pushFault(statusQuoting(401, callerKey));
        gw.anthropicA.pushFault(statusQuoting(401, envKey));
        gw.openaiB.pushFault(statusQuoting(401, keychainKey));
        messages(QStringLiteral("all"), false, passthrough);
        clock.advance(3600 * 1000 + 1); // exhausted credentials and marks expire
        gw.anthropicC.pushFault(statusQuoting(503, callerKey));
        gw.anthropicA.pushFault(statusQuoting(503, envKey));
        gw.openaiB.pushFault(statusQuoting(503, keychainKey));
        chat(QStringLiteral("all"), true, passthrough);
        messages(QStringLiteral("pb/gpt-b"), true, asAlice);
        gw.anthropicA.pushFault(statusQuoting(429, envKey));
        chat(QStringLiteral("pa/claude-a"), false, asAlice);
        // In-band stream error after content, and a plain success with usage.
        messages(QStringLiteral("pc/claude-c"), false, passthrough);
        demo::Fault inBand;
        inBand.kind = demo::Fault::InBandErrorAfterContent;
        gw.anthropicC.pushFault(inBand);
        chat(QStringLiteral("pc/claude-c"), true, passthrough);
        // Tenant 401s: a wrong key that looks like the canary, and the caller key as gateway key.
        messages(QStringLiteral("all"), false, {{"authorization", "Bearer " + canary + "-wrong"}});
        chat(QStringLiteral("all"), false, {{"x-api-key", callerKey}});
        // Bad requests carrying the key in the body and in odd headers.
        responses << gw.postRaw(QStringLiteral("/v1/messages"), "{\"model\": \"" + canary + "\", broken", asAlice);
        responses << gw.postRaw(QStringLiteral("/v1/chat/completions"), "[\"" + gatewayKey + "\"]", asAlice);
        responses << gw.post(QStringLiteral("/v1/messages/count_tokens"),
                             GatewayFixture::anthropicBody(QStringLiteral("all"), QString::fromLatin1(canary), false),
                             asAlice);
        // Admin and metrics, with and without the key.
        auto getAs = [&](const QString &path, const QByteArray &key) {
            QNetworkRequest req(QUrl(gw.baseUrl() + path));
            if (!key.isEmpty())
                req.setRawHeader("authorization", "Bearer " + key);
            return gw.wait(gw.nam.get(req));
        };
        for (const QString &path : {QStringLiteral("/admin/marks"), QStringLiteral("/admin/attempts?limit=500"),
                                    QStringLiteral("/admin/usage"), QStringLiteral("/metrics"),
                                    QStringLiteral("/v1/models"), QStringLiteral("/admin/nope")}) {
            responses << getAs(path, gatewayKey);
            responses << getAs(path, canary + "-not-a-key");
        }
        const HttpResult usage = getAs(QStringLiteral("/admin/usage"), gatewayKey);
        QCOMPARE(usage.status, 200);
        QVERIFY2(!usage.json().value(QStringLiteral("rows")).toArray().isEmpty(), "the ledger has rows to search");
        const HttpResult attempts = getAs(QStringLiteral("/admin/attempts?limit=500"), gatewayKey);
        QVERIFY(attempts.json().value(QStringLiteral("attempts")).toArray().size() >= 8);

        // Search everything a user, a log collector or a support bundle could see.
        QByteArray haystack;
        for (const auto &r : responses) {
            haystack += r.body;
            for (const auto &h : r.headers)
                haystack += h.first + ": " + h.second + '\n';
        }
        for (const auto &args : logs)
            haystack += QJsonDocument(args.at(0).toJsonObject()).toJson(QJsonDocument::Compact) + '\n';
        for (const auto &a : gw.engine().telemetry()->attempts(-1))
            haystack += (a.requestId + a.tenant + a.requestedModel + a.candidate + a.failure + a.message).toUtf8();
        for (const auto &u : gw.engine().telemetry()->usage())
            haystack += (u.requestId + u.tenant + u.candidate + u.provider + u.outcome).toUtf8();
        for (const auto &m : gw.engine().marks())
            haystack += (m.tenant + m.provider + m.baseUrl + m.model + m.lastError).toUtf8();
        QTemporaryDir dir;
        const QString saved = dir.filePath(QStringLiteral("config.json"));
        QString error;
        QVERIFY2(config::save(saved, *gw.engine().config(), &error), qPrintable(error));
        QFile file(saved);
        QVERIFY(file.open(QIODevice::ReadOnly));
        haystack += file.readAll();

        QVERIFY(haystack.size() > 10000); // we really did collect something
        QVERIFY(logs.size() > 5);
        // Sanity: the upstreams did receive the planted keys, so the search is meaningful.
        QCOMPARE(gw.anthropicA.requests().first().header("x-api-key"), envKey);
        QCOMPARE(gw.anthropicC.requests().first().header("x-api-key"), callerKey);
        QCOMPARE(gw.openaiB.requests().first().header("authorization"), "Bearer " + keychainKey);
        const qsizetype at = haystack.indexOf(canary);
        QVERIFY2(at < 0, haystack.mid(std::max<qsizetype>(0, at - 200), 400).constData());
    }

    void anAnswerThatQuotesItsKeyInAnotherFormShowsItToNoClient() {
        // Probe Q3 F3: the key in base64, upper case or hex in one delta. A same-API stream's frames
        // lost every form (util::redactSecrets), but a JSON answer and another API's stream showed
        // them all (the decoded events were scrubbed of the key as sent alone).
        const QByteArray key = "canary-" + QByteArray::number(QRandomGenerator::system()->generate64(), 16);
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pb")].credentials = {QStringLiteral("keychain:canary")};
        gw.secrets.secrets.insert(QStringLiteral("canary"), key);
        const QList<QByteArray> forms{key.toBase64(), key.toUpper(), key.toHex(), key.toHex().toUpper()};
        const QByteArray text = "b64 " + forms[0] + " up " + forms[1] + " hex " + forms[2] + " HEX " + forms[3];
        const QJsonObject chunk{
            {QStringLiteral("id"), QStringLiteral("chatcmpl-1")},
            {QStringLiteral("object"), "chat.completion.chunk"},
            {QStringLiteral("choices"),
             QJsonArray{QJsonObject{
                 {QStringLiteral("index"), 0},
                 {QStringLiteral("delta"), QJsonObject{{QStringLiteral("role"), "assistant"},
                                                       {QStringLiteral("content"), QString::fromLatin1(text)}}},
                 {QStringLiteral("finish_reason"), "stop"}}}}};
        gw.openaiB.setRawReply("data: " + QJsonDocument(chunk).toJson(QJsonDocument::Compact) + "\n\ndata: [DONE]\n\n");
        gw.start();
        for (const bool stream : {false, true})
            for (const QString &route : {QStringLiteral("/v1/chat/completions"), QStringLiteral("/v1/messages")}) {
                const auto r = gw.post(
                    route, route.endsWith(QLatin1String("messages"))
                               ? GatewayFixture::anthropicBody(QStringLiteral("pb/gpt-b"), QStringLiteral("x"), stream)
                               : GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("x"), stream));
                QCOMPARE(r.status, 200);
                QVERIFY2(r.body.contains("b64 [redacted] up [redacted] hex [redacted] HEX [redacted]"),
                         r.body.constData());
                for (const QByteArray &form : forms)
                    QVERIFY2(!r.body.contains(form), r.body.constData());
            }
    }

    void anAnswerThatQuotesItsKeyShowsItToNoClient() {
        // An upstream wrote the key it was sent into its answer's text and a tool call's arguments.
        // A same-API stream's frames were redacted, but a JSON answer and another API's stream
        // are re-encoded from the decoded text, which was not (probe X). Nor were the answer's id,
        // a call's id, name and signature (probe P2 1).
        const QByteArray key = "canary-" + QByteArray::number(QRandomGenerator::system()->generate64(), 16);
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pb")].credentials = {QStringLiteral("keychain:canary")};
        gw.secrets.secrets.insert(QStringLiteral("canary"), key);
        const QByteArray content = "my key is " + key + ", ";
        const QByteArray arguments =
            QJsonDocument(QJsonObject{{QStringLiteral("k"), QString::fromLatin1(key)}}).toJson(QJsonDocument::Compact);
        const auto chunk = [&key](const QJsonObject &delta, const QJsonValue &finish) {
            const QJsonObject c{
                {QStringLiteral("id"), QStringLiteral("chatcmpl-") + QString::fromLatin1(key)},
                {QStringLiteral("object"), "chat.completion.chunk"},
                {QStringLiteral("choices"), QJsonArray{QJsonObject{{QStringLiteral("index"), 0},
                                                                   {QStringLiteral("delta"), delta},
                                                                   {QStringLiteral("finish_reason"), finish}}}}};
            return "data: " + QJsonDocument(c).toJson(QJsonDocument::Compact) + "\n\n";
        };
        const QJsonObject call{
            {QStringLiteral("index"), 0},
            {QStringLiteral("id"), QStringLiteral("call_") + QString::fromLatin1(key)},
            {QStringLiteral("type"), "function"},
            {QStringLiteral("extra_content"),
             QJsonObject{{QStringLiteral("google"), QJsonObject{{QStringLiteral("thought_signature"),
                                                                 QStringLiteral("sig-") + QString::fromLatin1(key)}}}}},
            {QStringLiteral("function"),
             QJsonObject{{QStringLiteral("name"), QStringLiteral("f_") + QString::fromLatin1(key)},
                         {QStringLiteral("arguments"), QString::fromLatin1(arguments)}}}};
        gw.openaiB.setRawReply(
            chunk({{QStringLiteral("role"), "assistant"}, {QStringLiteral("content"), QString::fromLatin1(content)}},
                  QJsonValue()) +
            chunk({{QStringLiteral("tool_calls"), QJsonArray{call}}}, QJsonValue()) +
            chunk({}, QStringLiteral("tool_calls")) + "data: [DONE]\n\n");
        gw.start();
        QList<HttpResult> answers;
        for (const bool stream : {false, true}) {
            answers << gw.post(QStringLiteral("/v1/chat/completions"),
                               GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("x"), stream));
            answers << gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("pb/gpt-b"), QStringLiteral("x"), stream));
            answers << gw.post(QStringLiteral("/v1/responses"), QJsonObject{{QStringLiteral("model"), "pb/gpt-b"},
                                                                            {QStringLiteral("input"), "x"},
                                                                            {QStringLiteral("stream"), stream}});
        }
        QCOMPARE(gw.openaiB.requests().first().header("authorization"), "Bearer " + key);
        for (const HttpResult &r : answers) {
            QCOMPARE(r.status, 200);
            QVERIFY2(r.body.contains("my key is [redacted]"), r.body.constData());
            QVERIFY2(!r.body.contains(key), r.body.constData());
        }

        // Split across two deltas: a JSON answer is written from the block's whole text, which
        // the decoder's end of the block carries, so the key goes there too.
        gw.openaiB.setRawReply(
            chunk({{QStringLiteral("role"), "assistant"},
                   {QStringLiteral("content"), QStringLiteral("split: ") + QString::fromLatin1(key.left(9))}},
                  QJsonValue()) +
            chunk({{QStringLiteral("content"), QString::fromLatin1(key.mid(9)) + QStringLiteral(" end")}},
                  QJsonValue()) +
            chunk({}, QStringLiteral("stop")) + "data: [DONE]\n\n");
        const auto whole =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("pb/gpt-b"), QStringLiteral("x"), false));
        QCOMPARE(whole.status, 200);
        QVERIFY2(whole.body.contains("split: [redacted] end"), whole.body.constData());
    }

    // The same for a JSON answer to a client of the upstream's own API, which is written from the
    // upstream's whole answer (every field it defines) rather than from the decoded blocks: the
    // key in Anthropic's text, thinking and tool input, and in a Responses answer's output items,
    // reached the client as sent (probe A3 1).
    void aSameApiJsonAnswerThatQuotesItsKeyShowsItToNoClient() {
        const QByteArray key = "canary-" + QByteArray::number(QRandomGenerator::system()->generate64(), 16);
        const QString k = QString::fromLatin1(key);
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:canary")};
        gw.config.providers[QStringLiteral("pd")].credentials = {QStringLiteral("keychain:canary")};
        gw.secrets.secrets.insert(QStringLiteral("canary"), key);
        const auto sse = [](const char *event, const QJsonObject &data) {
            return QByteArray("event: ") + event + "\ndata: " + QJsonDocument(data).toJson(QJsonDocument::Compact) +
                   "\n\n";
        };
        const auto delta = [&sse](int index, const QJsonObject &d) {
            return sse("content_block_delta", {{"type", "content_block_delta"}, {"index", index}, {"delta", d}});
        };
        const auto start = [&sse](int index, const QJsonObject &block) {
            return sse("content_block_start",
                       {{"type", "content_block_start"}, {"index", index}, {"content_block", block}});
        };
        const auto stop = [&sse](int index) {
            return sse("content_block_stop", {{"type", "content_block_stop"}, {"index", index}});
        };
        gw.anthropicA.setRawReply(
            sse("message_start",
                {{"type", "message_start"},
                 {"message", QJsonObject{{"id", "msg_1"},
                                         {"type", "message"},
                                         {"role", "assistant"},
                                         {"model", "claude-a"},
                                         {"content", QJsonArray{}},
                                         {"stop_reason", QJsonValue()},
                                         {"usage", QJsonObject{{"input_tokens", 3}, {"output_tokens", 1}}}}}}) +
            start(0, {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}) +
            delta(0, {{"type", "thinking_delta"}, {"thinking", "thinking of " + k}}) +
            delta(0, {{"type", "signature_delta"}, {"signature", "sig"}}) + stop(0) +
            start(1, {{"type", "text"}, {"text", ""}}) +
            delta(1, {{"type", "text_delta"}, {"text", "my key is " + k}}) + stop(1) +
            start(2, {{"type", "tool_use"}, {"id", "toolu_1"}, {"name", "f"}, {"input", QJsonObject{}}}) +
            delta(2, {{"type", "input_json_delta"}, {"partial_json", "{\"k\":\"" + k + "\"}"}}) + stop(2) +
            sse("message_delta", {{"type", "message_delta"},
                                  {"delta", QJsonObject{{"stop_reason", "tool_use"}}},
                                  {"usage", QJsonObject{{"output_tokens", 9}}}}) +
            sse("message_stop", {{"type", "message_stop"}}));
        const QJsonObject item{
            {"id", "msg_r"},
            {"type", "message"},
            {"role", "assistant"},
            {"status", "completed"},
            {"content", QJsonArray{QJsonObject{
                            {"type", "output_text"}, {"text", "my key is " + k}, {"annotations", QJsonArray{}}}}}};
        const QJsonObject call{{"id", "fc_1"},          {"type", "function_call"},
                               {"status", "completed"}, {"call_id", "call_1"},
                               {"name", "f"},           {"arguments", "{\"k\":\"" + k + "\"}"}};
        const QJsonObject response{
            {"id", "resp_1"},
            {"object", "response"},
            {"status", "completed"},
            {"model", "resp-d"},
            {"output", QJsonArray{item, call}},
            {"usage", QJsonObject{{"input_tokens", 3}, {"output_tokens", 9}, {"total_tokens", 12}}}};
        gw.responsesD.setRawReply(
            sse("response.created", {{"type", "response.created"},
                                     {"response", QJsonObject{{"id", "resp_1"}, {"status", "in_progress"}}}}) +
            sse("response.output_text.delta", {{"type", "response.output_text.delta"},
                                               {"output_index", 0},
                                               {"content_index", 0},
                                               {"delta", "my key is " + k}}) +
            sse("response.completed", {{"type", "response.completed"}, {"response", response}}));
        gw.start();
        const HttpResult messages =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), false));
        const HttpResult responses = gw.post(QStringLiteral("/v1/responses"),
                                             QJsonObject{{"model", "pd/resp-d"}, {"input", "x"}, {"stream", false}});
        QCOMPARE(gw.anthropicA.requests().size(), 1);
        QCOMPARE(gw.responsesD.requests().size(), 1);
        for (const HttpResult &r : {messages, responses}) {
            QVERIFY2(r.status == 200, r.body.constData());
            QVERIFY2(r.body.contains("my key is [redacted]"), r.body.constData());
            QVERIFY2(!r.body.contains(key), r.body.constData());
        }
        QVERIFY2(messages.body.contains("thinking of [redacted]"), messages.body.constData());
        QCOMPARE(messages.json().value("content").toArray().at(2).toObject().value("input").toObject().value("k"),
                 QJsonValue("[redacted]"));
    }

    void aKeyAnUpstreamEscapesOrPutsInItsUsageShowsItToNoClient() {
        // Probe AB2 F2: a same-API client got, unredacted, the key an upstream wrote (a) in a Chat
        // answer's usage object, which a JSON answer carries as the upstream's text, and (b) with a
        // JSON escape ("\u002B", as .NET writes "+") in a streamed frame relayed as it came: in a
        // field no delta holds, in Anthropic's message_start, and in an error after the answer began.
        const QByteArray key = "canary+" + QByteArray::number(QRandomGenerator::system()->generate64(), 16) + "/x";
        const QByteArray plus = jsonEscaped(key, "+");
        GatewayFixture gw;
        for (const char *provider : {"pa", "pb"})
            gw.config.providers[QLatin1String(provider)].credentials = {QStringLiteral("keychain:canary")};
        gw.secrets.secrets.insert(QStringLiteral("canary"), key);
        const QByteArray chunkHead = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-b\",";
        const QByteArray hi = chunkHead + "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":"
                                          "\"hi\"}}]}\n\n";
        const QByteArray stop = chunkHead + "\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
        const QByteArray usage = chunkHead +
                                 "\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,"
                                 "\"total_tokens\":2,\"debug\":\"key " +
                                 key + "\"}}\n\n";
        const QByteArray fingerprint = QByteArray(hi).replace(
            "\"model\":\"gpt-b\",", "\"model\":\"gpt-b\",\"system_fingerprint\":\"" + plus + "\",");
        const QByteArray error =
            "data: {\"error\":{\"message\":\"upstream token " + plus + " rejected\",\"type\":\"server_error\"}}\n\n";
        // Arguments are JSON in a string: the key escaped in them is escaped twice in the frame.
        const QByteArray arguments = "{\"k\":\"" + plus + "\"}";
        const QByteArray call =
            hi + chunkHead +
            "\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\","
            "\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":" +
            QJsonDocument(QJsonArray{QString::fromLatin1(arguments)}).toJson(QJsonDocument::Compact).mid(1).chopped(1) +
            "}}]}}]}\n\n";
        const QByteArray toolStop = QByteArray(stop).replace("\"stop\"}", "\"tool_calls\"}");
        const auto sse = [](const char *event, const QByteArray &data) {
            return QByteArray("event: ") + event + "\ndata: " + data + "\n\n";
        };
        const QByteArray messages =
            sse("message_start", "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\","
                                 "\"role\":\"assistant\",\"model\":\"claude-a\",\"content\":[],\"x_debug\":\"" +
                                     jsonEscaped(key) + "\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}") +
            sse("content_block_start",
                "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}") +
            sse("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
                                       "\"text_delta\",\"text\":\"hi\"}}") +
            sse("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}") +
            sse("message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
                                 "\"usage\":{\"output_tokens\":2}}") +
            sse("message_stop", "{\"type\":\"message_stop\"}");
        gw.anthropicA.setRawReply(messages);
        gw.start();
        struct Case {
            const char *what;
            QByteArray reply;
            bool stream;
        };
        for (const Case &c : {Case{"usage, JSON", hi + stop + usage + "data: [DONE]\n\n", false},
                              Case{"usage, stream", hi + stop + usage + "data: [DONE]\n\n", true},
                              Case{"escaped field, JSON", fingerprint + stop + "data: [DONE]\n\n", false},
                              Case{"escaped field, stream", fingerprint + stop + "data: [DONE]\n\n", true},
                              Case{"escaped error after the start", hi + error, true},
                              Case{"escaped call arguments, JSON", call + toolStop + "data: [DONE]\n\n", false},
                              Case{"escaped call arguments, stream", call + toolStop + "data: [DONE]\n\n", true}}) {
            gw.openaiB.setRawReply(c.reply);
            const HttpResult r =
                gw.post(QStringLiteral("/v1/chat/completions"),
                        GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("x"), c.stream));
            const QByteArray seen = asAClientReadsIt(r.body);
            QVERIFY2(seen.contains("hi"), c.what);
            QVERIFY2(!seen.contains(key), qPrintable(QLatin1String(c.what) + u' ' + QString::fromUtf8(seen)));
        }
        // A client of another API gets the arguments parsed (a JSON answer) or as the upstream's
        // text (a stream).
        for (const bool stream : {false, true}) {
            const HttpResult r =
                gw.post(QStringLiteral("/v1/messages"),
                        GatewayFixture::anthropicBody(QStringLiteral("pb/gpt-b"), QStringLiteral("x"), stream));
            QVERIFY2(r.body.contains("tool_use"), r.body.constData());
            QVERIFY2(!asAClientReadsIt(r.body).contains(key), r.body.constData());
        }
        const HttpResult m =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("x"), true));
        QCOMPARE(gw.anthropicA.requests().first().header("x-api-key"), key);
        QVERIFY2(asAClientReadsIt(m.body).contains("\"x_debug\":\"[redacted]\""), m.body.constData());
        QVERIFY2(!asAClientReadsIt(m.body).contains(key), m.body.constData());
    }

    void aKeyStreamedAFewCharactersADeltaShowsItToNoClient() {
        // Probe Q3 F3: an upstream that streams back the key it was sent three characters a delta, as
        // a model writes tokens. Each frame was scrubbed alone, and every client joined the key from
        // the pieces: a same-API stream (the upstream's own frames) and a converted one alike.
        const QByteArray key = "canary-" + QByteArray::number(QRandomGenerator::system()->generate64(), 16);
        const QString k = QString::fromLatin1(key);
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].credentials = {QStringLiteral("keychain:canary")};
        gw.config.providers[QStringLiteral("pb")].credentials = {QStringLiteral("keychain:canary")};
        gw.secrets.secrets.insert(QStringLiteral("canary"), key);
        QStringList pieces{QStringLiteral("my key is ")};
        for (qsizetype i = 0; i < k.size(); i += 3)
            pieces << k.mid(i, 3);
        pieces << QStringLiteral(", keep it");
        const auto frame = [](const char *event, const QJsonObject &data) {
            return (event ? QByteArray("event: ") + event + "\n" : QByteArray()) +
                   "data: " + QJsonDocument(data).toJson(QJsonDocument::Compact) + "\n\n";
        };
        QByteArray chat;
        for (const QString &piece : std::as_const(pieces))
            chat += frame(nullptr, {{"id", "chatcmpl-1"},
                                    {"object", "chat.completion.chunk"},
                                    {"choices", QJsonArray{QJsonObject{{"index", 0},
                                                                       {"delta", QJsonObject{{"content", piece}}},
                                                                       {"finish_reason", QJsonValue()}}}}});
        chat += frame(nullptr,
                      {{"id", "chatcmpl-1"},
                       {"object", "chat.completion.chunk"},
                       {"choices",
                        QJsonArray{QJsonObject{{"index", 0}, {"delta", QJsonObject{}}, {"finish_reason", "stop"}}}}}) +
                "data: [DONE]\n\n";
        gw.openaiB.setRawReply(chat);
        QByteArray anthropic =
            frame("message_start",
                  {{"type", "message_start"},
                   {"message", QJsonObject{{"id", "msg_1"},
                                           {"type", "message"},
                                           {"role", "assistant"},
                                           {"model", "claude-a"},
                                           {"content", QJsonArray{}},
                                           {"stop_reason", QJsonValue()},
                                           {"usage", QJsonObject{{"input_tokens", 3}, {"output_tokens", 1}}}}}}) +
            frame("content_block_start", {{"type", "content_block_start"},
                                          {"index", 0},
                                          {"content_block", QJsonObject{{"type", "text"}, {"text", ""}}}});
        for (const QString &piece : std::as_const(pieces))
            anthropic +=
                frame("content_block_delta", {{"type", "content_block_delta"},
                                              {"index", 0},
                                              {"delta", QJsonObject{{"type", "text_delta"}, {"text", piece}}}});
        anthropic += frame("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}}) +
                     frame("message_delta", {{"type", "message_delta"},
                                             {"delta", QJsonObject{{"stop_reason", "end_turn"}}},
                                             {"usage", QJsonObject{{"output_tokens", 9}}}}) +
                     frame("message_stop", {{"type", "message_stop"}});
        gw.anthropicA.setRawReply(anthropic);
        gw.start();
        // The text a client puts together from its stream's deltas, whatever its format.
        const auto joined = [](const QByteArray &body) {
            QString text;
            for (const QByteArray &line : body.split('\n')) {
                if (!line.startsWith("data: "))
                    continue;
                const QJsonObject o = QJsonDocument::fromJson(line.mid(6)).object();
                const QString type = o.value("type").toString();
                if (o.contains("choices"))
                    text += o.value("choices")
                                .toArray()
                                .at(0)
                                .toObject()
                                .value("delta")
                                .toObject()
                                .value("content")
                                .toString();
                else if (o.value("delta").isObject())
                    text += o.value("delta").toObject().value("text").toString();
                else if (type == QLatin1String("response.output_text.delta") || type == QLatin1String("text_delta"))
                    text += o.value("delta").toString();
            }
            return text;
        };
        for (const QString &model : {QStringLiteral("pb/gpt-b"), QStringLiteral("pa/claude-a")})
            for (const QString &route : {QStringLiteral("/v1/chat/completions"), QStringLiteral("/v1/messages"),
                                         QStringLiteral("/v1/responses"), QStringLiteral("/v1/pi/stream")}) {
                const QJsonObject body =
                    route.endsWith(QLatin1String("messages")) ? GatewayFixture::anthropicBody(model, "x", true)
                    : route.endsWith(QLatin1String("chat/completions")) ? GatewayFixture::openaiBody(model, "x", true)
                    : route.endsWith(QLatin1String("responses"))
                        ? QJsonObject{{"model", model}, {"input", "x"}, {"stream", true}}
                        : QJsonObject{
                              {"model", model},
                              {"stream", true},
                              {"context",
                               QJsonObject{{"messages", QJsonArray{QJsonObject{
                                                            {"role", "user"}, {"content", "x"}, {"timestamp", 0}}}}}}};
                const HttpResult r = gw.post(route, body);
                const QString label = model + QStringLiteral(" ") + route + QStringLiteral(": ");
                QVERIFY2(r.status == 200, qPrintable(label + QString::fromUtf8(r.body)));
                const QString text = joined(r.body);
                // At most the key's first three characters, which every key of a provider shares.
                QVERIFY2(text == QStringLiteral("my key is can[redacted], keep it"),
                         qPrintable(label + text + QStringLiteral("\n") + QString::fromUtf8(r.body)));
                QVERIFY2(!r.body.contains(key), qPrintable(label + QString::fromUtf8(r.body)));
            }
    }
};

QTEST_GUILESS_MAIN(TestSecretCanary)
#include "test_secret_canary.moc"
