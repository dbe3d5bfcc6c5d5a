// What an upstream's stream says, whatever its bytes: a character split across two events, a
// stream cut inside its last event. Real gateway, real sockets, a raw-socket upstream.
#include "gateway_fixture.h"
#include "hostile_upstream.h"
#include "stream_scripts.h"

#include "core/failover/provider_down_marks.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTcpSocket>
#include <QtTest>

using namespace sw::test;

namespace {

// A Responses answer "Hi there" whose response.completed the connection cuts in the middle.
QByteArray responsesCutInItsLastEvent() {
    const QByteArray item = "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"status\":\"completed\","
                            "\"content\":[{\"type\":\"output_text\",\"text\":\"Hi there\",\"annotations\":[]}]}";
    return "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{"
           "\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"m\",\"output\":[]}}\n\n"
           "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":1,"
           "\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"status\":"
           "\"in_progress\",\"content\":[]}}\n\n"
           "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":2,"
           "\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi there\"}\n\n"
           "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":3,"
           "\"output_index\":0,\"item\":" +
           item +
           "}\n\n"
           "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":4,\"response\":{"
           "\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"compl";
}

// An Anthropic answer "Hi there" with one more frame between its blocks that no JSON parser
// takes (a number past any double): a content_block_start by its event line alone.
QByteArray anthropicWithAnUnreadableBlockStart() {
    return "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":"
           "\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"stop_reason\":null,"
           "\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"
           "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
           "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
           "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
           "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi there\"}}\n\n"
           "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
           "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"n\":1e400,"
           "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
           "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
           "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
           "\"usage\":{\"output_tokens\":2}}\n\n"
           "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
}

} // namespace

class TestUpstreamBytes : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // A llama.cpp-style server splits one character's bytes across two deltas ("世界": the second
    // character's first byte ends one delta, its other two begin the next). Each delta is then not
    // UTF-8 on its own: the JSON parser refused the frame and the gateway dropped both deltas whole,
    // valid words and all, with no error (probe H2 1). Read as every SDK reads it (U+FFFD for the
    // bytes that are not UTF-8), the client gets every word around them, and valid UTF-8.
    void aCharacterSplitAcrossTwoDeltasLosesNoWords_data() { everyClientRoute(); }
    void aCharacterSplitAcrossTwoDeltasLosesNoWords() {
        QFETCH(QString, route);
        HostileUpstream up;
        QVERIFY(up.listen());
        answerWith(up, chatChunk("{\"role\":\"assistant\",\"content\":\"\"}") +
                           chatChunk("{\"content\":\"The answer: \xE4\xB8\x96\xE7\"}") +
                           chatChunk("{\"content\":\"\x95\x8C is correct, \"}") +
                           chatChunk("{\"content\":\"and more.\"}") + chatChunk("{}", "\"stop\"") + "data: [DONE]\n\n");
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pb")].baseUrl = up.baseUrl() + QStringLiteral("/v1");
        gw.start();
        const auto r = gw.post(route, streamedRouteBody(route, QStringLiteral("pb/gpt-b")));
        QCOMPARE(r.status, 200);
        QVERIFY2(r.body.contains("The answer: \xE4\xB8\x96"), r.body.constData());
        QVERIFY2(r.body.contains(" is correct, "), r.body.constData());
        QVERIFY2(r.body.contains("and more."), r.body.constData());
        QVERIFY2(r.body.contains(successMark(route)), r.body.right(400).constData());
        QVERIFY2(QString::fromUtf8(r.body).toUtf8() == r.body, "the client got bytes that are not UTF-8");
    }

    // A Chat upstream that answers JSON (not the stream asked for) with one byte that is not UTF-8:
    // Qt's parser refused the whole answer, and the client was told the upstream's media type was
    // wrong (probe HV 2). Read as a stream's bytes are, the client gets its words.
    void aJsonAnswerWithAByteThatIsNotUtf8IsStillTheAnswer() {
        HostileUpstream up;
        QVERIFY(up.listen());
        const QByteArray body = "{\"id\":\"c1\",\"object\":\"chat.completion\",\"created\":1,\"model\":\"m\","
                                "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":"
                                "\"The answer: \xE4\xB8\x96\xE7 is correct.\"},\"finish_reason\":\"stop\"}],"
                                "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":5,\"total_tokens\":8}}";
        up.setScript([&up, body](QTcpSocket *socket, const QByteArray &) {
            up.flood(socket,
                     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                         QByteArray::number(body.size()) + "\r\nConnection: close\r\n\r\n",
                     HostileUpstream::repeat(body, 1), [socket]() { socket->disconnectFromHost(); });
        });
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pb")].baseUrl = up.baseUrl() + QStringLiteral("/v1");
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/messages"),
                               GatewayFixture::anthropicBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), false));
        QCOMPARE(r.status, 200);
        const QString text = r.json()
                                 .value(QStringLiteral("content"))
                                 .toArray()
                                 .first()
                                 .toObject()
                                 .value(QStringLiteral("text"))
                                 .toString();
        QCOMPARE(text, QStringLiteral("The answer: \u4E16\uFFFD is correct."));
    }

    // The connection closes inside the event that ends the answer (response.completed, message_delta).
    // The cut frame is unreadable; acted on by its event line alone it completed the answer (no id,
    // status or usage) and the client got a success (probe H2 2). It says nothing now: the stream
    // ended before completion, and the client gets its format's error, never the success mark.
    void aStreamCutInsideItsLastEventIsNoSuccess_data() {
        QTest::addColumn<QString>("route");
        for (const char *route : {"/v1/chat/completions", "/v1/messages", "/v1/responses", "/v1/pi/stream"}) {
            QTest::addRow("%s", route) << QString::fromLatin1(route);
        }
    }
    void aStreamCutInsideItsLastEventIsNoSuccess() {
        QFETCH(QString, route);
        HostileUpstream up;
        QVERIFY(up.listen());
        answerWith(up, responsesCutInItsLastEvent());
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pd")].baseUrl = up.baseUrl() + QStringLiteral("/v1");
        gw.start();
        const auto r = gw.post(route, streamedRouteBody(route, QStringLiteral("pd/resp-d")));
        QCOMPARE(r.status, 200); // committed with "Hi there"
        QVERIFY2(r.body.contains("Hi there"), r.body.constData());
        QVERIFY2(!r.body.contains(successMark(route)), r.body.right(600).constData());
        QVERIFY2(r.body.contains("before completion"), r.body.right(600).constData());
    }

    // Codex CLI knows a full context window only by the code of a `response.failed`
    // (`context_length_exceeded`): it compacts the conversation. The code of an error the upstream
    // sent in-band was lost, and the client read "invalid_request", which Codex retries with the same
    // prompt (probe J2 1). An error body always kept it; an in-band error does now too.
    void anInBandErrorKeepsTheUpstreamsCode_data() {
        QTest::addColumn<QString>("route");
        QTest::addColumn<QString>("model");
        QTest::addColumn<QByteArray>("sse");
        QTest::addColumn<QByteArray>("code");
        QTest::newRow("responses, passthrough")
            << QStringLiteral("/v1/responses") << QStringLiteral("pd/resp-d")
            << QByteArray("event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,"
                          "\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\","
                          "\"model\":\"m\",\"output\":[]}}\n\n"
                          "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":1,"
                          "\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"failed\","
                          "\"model\":\"m\",\"output\":[],\"error\":{\"code\":\"context_length_exceeded\","
                          "\"message\":\"Your input exceeds the context window of this model.\"}}}\n\n")
            << QByteArray("context_length_exceeded");
        QTest::newRow("responses, a prompt refused")
            << QStringLiteral("/v1/responses") << QStringLiteral("pd/resp-d")
            << QByteArray("event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":0,"
                          "\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"failed\","
                          "\"model\":\"m\",\"output\":[],\"error\":{\"code\":\"invalid_prompt\","
                          "\"message\":\"Invalid prompt: your prompt was flagged.\"}}}\n\n")
            << QByteArray("invalid_prompt");
        QTest::newRow("chat, an error frame")
            << QStringLiteral("/v1/chat/completions") << QStringLiteral("pb/gpt-b")
            << QByteArray("data: {\"error\":{\"message\":\"Your input exceeds the context window of this model.\","
                          "\"type\":\"invalid_request_error\",\"param\":\"messages\","
                          "\"code\":\"context_length_exceeded\"}}\n\n")
            << QByteArray("context_length_exceeded");
    }
    void anInBandErrorKeepsTheUpstreamsCode() {
        QFETCH(QString, route);
        QFETCH(QString, model);
        QFETCH(QByteArray, sse);
        QFETCH(QByteArray, code);
        HostileUpstream up;
        QVERIFY(up.listen());
        answerWith(up, sse);
        GatewayFixture gw;
        const QString provider = model.section(QLatin1Char('/'), 0, 0);
        gw.config.providers[provider].baseUrl = up.baseUrl() + QStringLiteral("/v1");
        gw.start();
        const auto r = gw.post(route, streamedRouteBody(route, model));
        QVERIFY2(r.body.contains("\"code\":\"" + code + "\""), r.body.constData());
        QVERIFY2(!r.body.contains("\"code\":\"invalid_request\""), r.body.constData());
    }

    // An answer with nothing in it (a 200 event stream of no byte, a 204) came over a working
    // connection from a server that answers: it marked the whole base URL down as "transport", so
    // the healthy models beside it on that server (OpenRouter, vLLM, Ollama) were passed over for
    // 20 s, and the client read "unreachable" (probe J2 2). It is this model's failure now.
    void anEmptyAnswerMarksItsModelNotTheHost() {
        HostileUpstream up;
        QVERIFY(up.listen());
        answerWith(up, QByteArray());
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pb")].baseUrl = up.baseUrl() + QStringLiteral("/v1");
        sw::config::RouteConfig route;
        route.name = QStringLiteral("empty-first");
        route.candidates = {QStringLiteral("pb/gpt-b"), QStringLiteral("pa/claude-a")};
        gw.config.routes.insert(route.name, route);
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/chat/completions"),
                               GatewayFixture::openaiBody(QStringLiteral("empty-first"), QStringLiteral("hi"), false));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
        const auto marks = gw.engine().marks();
        QCOMPARE(marks.size(), 1);
        QCOMPARE(marks.first().model, QStringLiteral("gpt-b")); // the model, not every model of the host
        QCOMPARE(marks.first().kind, sw::failover::FailureKind::ServerError);
        QVERIFY2(marks.first().lastError.contains(QLatin1String("with an empty body")),
                 qPrintable(marks.first().lastError));
    }

    // A whole JSON answer typed as an event stream holds no event: it was reported as "an empty
    // body", which sent its operator looking for a server that answers nothing (probe M2 4).
    void bytesThatHoldNoEventAreNotAnEmptyBody() {
        HostileUpstream up;
        QVERIFY(up.listen());
        answerWith(up, QByteArray(R"({"id":"c1","object":"chat.completion","choices":[{"index":0,"message":)"
                                  R"({"role":"assistant","content":"hi"},"finish_reason":"stop"}]})"));
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pb")].baseUrl = up.baseUrl() + QStringLiteral("/v1");
        gw.config.providers[QStringLiteral("pb")].maxRetries = 0;
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/chat/completions"),
                               GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), false));
        QCOMPARE(r.status, 502);
        QVERIFY2(r.body.contains("bytes that hold no event: not an event stream"), r.body.constData());
        QVERIFY2(!r.body.contains("empty body"), r.body.constData());
    }

    // An event stream of nothing but [DONE] (a proxy that lost the answer) was committed as an empty
    // `stop` answer: the client's agent ended its turn on nothing and the follower was never asked
    // (probe JV L1). It is this model's bad answer, as an empty body is. A reasoned empty answer
    // (finish_reason "stop", no text) is still the model's answer.
    void aStreamOfOnlyDoneIsNoAnswer() {
        for (const bool streamed : {true, false}) {
            HostileUpstream up;
            QVERIFY(up.listen());
            answerWith(up, QByteArray("data: [DONE]\n\n"));
            GatewayFixture gw;
            gw.config.providers[QStringLiteral("pb")].baseUrl = up.baseUrl() + QStringLiteral("/v1");
            sw::config::RouteConfig route;
            route.name = QStringLiteral("done-first");
            route.candidates = {QStringLiteral("pb/gpt-b"), QStringLiteral("pa/claude-a")};
            gw.config.routes.insert(route.name, route);
            gw.start();
            const auto r =
                gw.post(QStringLiteral("/v1/messages"),
                        GatewayFixture::anthropicBody(QStringLiteral("done-first"), QStringLiteral("hi"), streamed));
            QCOMPARE(r.status, 200);
            if (streamed)
                QVERIFY2(r.body.contains("candidate=pa/claude-a"), r.body.constData());
            else
                QCOMPARE(r.header("x-switchman-candidate"), QByteArray("pa/claude-a"));
            const auto marks = gw.engine().marks();
            QCOMPARE(marks.size(), 1);
            QCOMPARE(marks.first().model, QStringLiteral("gpt-b"));
            QCOMPARE(marks.first().kind, sw::failover::FailureKind::ServerError);
            QVERIFY2(marks.first().lastError.contains(QLatin1String("[DONE] and no answer")),
                     qPrintable(marks.first().lastError));
        }
        HostileUpstream up;
        QVERIFY(up.listen());
        answerWith(up, chatChunk("{\"role\":\"assistant\",\"content\":\"\"}", "\"stop\"") + "data: [DONE]\n\n");
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pb")].baseUrl = up.baseUrl() + QStringLiteral("/v1");
        gw.start();
        const auto r = gw.post(QStringLiteral("/v1/chat/completions"),
                               GatewayFixture::openaiBody(QStringLiteral("pb/gpt-b"), QStringLiteral("hi"), false));
        QCOMPARE(r.status, 200);
        QVERIFY(gw.engine().marks().isEmpty());
    }

    // A frame no parser takes, between an Anthropic answer's blocks, was acted on by its event line
    // (content_block_start): a Messages client's JSON answer got a content block of nothing, `{}`,
    // without a type (probe H2 2). It adds nothing now: the answer is its one text block.
    void anUnreadableFrameAddsNoBlockOfNothing() {
        HostileUpstream up;
        QVERIFY(up.listen());
        answerWith(up, anthropicWithAnUnreadableBlockStart());
        GatewayFixture gw;
        gw.config.providers[QStringLiteral("pa")].baseUrl = up.baseUrl();
        gw.start();
        const auto r =
            gw.post(QStringLiteral("/v1/messages"),
                    GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("hi"), false));
        QCOMPARE(r.status, 200);
        const QJsonArray content = QJsonDocument::fromJson(r.body).object().value(QStringLiteral("content")).toArray();
        QCOMPARE(content.size(), 1);
        QCOMPARE(content.first().toObject().value(QStringLiteral("text")).toString(), QStringLiteral("Hi there"));
    }
};

QTEST_GUILESS_MAIN(TestUpstreamBytes)
#include "test_upstream_bytes.moc"
