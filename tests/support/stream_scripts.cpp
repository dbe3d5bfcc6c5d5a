#include "stream_scripts.h"

#include "gateway_fixture.h"

#include <QJsonArray>
#include <QTcpSocket>
#include <QTest>

namespace sw::test {

const QByteArray kSseHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";

QByteArray chatChunk(const QByteArray &delta, const QByteArray &finish) {
    return "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{"
           "\"index\":0,\"delta\":" +
           delta + ",\"finish_reason\":" + finish + "}]}\n\n";
}

void answerWith(HostileUpstream &up, const QByteArray &sse) {
    up.setScript([&up, sse](QTcpSocket *socket, const QByteArray &) {
        up.flood(socket, kSseHead, HostileUpstream::repeat(sse, 1), [socket]() { socket->disconnectFromHost(); });
    });
}

QJsonObject streamedRouteBody(const QString &route, const QString &model) {
    const QString text = QStringLiteral("hello");
    if (route == QLatin1String("/v1/messages"))
        return GatewayFixture::anthropicBody(model, text, true);
    if (route == QLatin1String("/v1/chat/completions"))
        return GatewayFixture::openaiBody(model, text, true);
    if (route == QLatin1String("/v1/responses"))
        return {{QStringLiteral("model"), model}, {QStringLiteral("input"), text}, {QStringLiteral("stream"), true}};
    return {{QStringLiteral("model"), model},
            {QStringLiteral("stream"), true},
            {QStringLiteral("context"),
             QJsonObject{
                 {QStringLiteral("messages"), QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                                                     {QStringLiteral("content"), text},
                                                                     {QStringLiteral("timestamp"), 0}}}}}}};
}

QByteArray successMark(const QString &route) {
    if (route == QLatin1String("/v1/messages"))
        return "event: message_stop";
    if (route == QLatin1String("/v1/chat/completions"))
        return "data: [DONE]";
    if (route == QLatin1String("/v1/responses"))
        return "response.completed";
    return "\"type\":\"done\"";
}

void everyClientRoute() {
    QTest::addColumn<QString>("route");
    QTest::newRow("chat") << QStringLiteral("/v1/chat/completions");
    QTest::newRow("messages") << QStringLiteral("/v1/messages");
    QTest::newRow("responses") << QStringLiteral("/v1/responses");
    QTest::newRow("pi") << QStringLiteral("/v1/pi/stream");
}

} // namespace sw::test
