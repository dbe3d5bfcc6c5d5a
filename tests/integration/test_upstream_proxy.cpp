// Providers behind a forward proxy (probe AC1 F1): on a corporate network the only way out is an HTTP
// proxy named in HTTPS_PROXY / HTTP_PROXY, and the provider's name may not even resolve inside it.
// A small proxy in the test answers CONNECT and absolute-form requests (it "resolves" every name to
// 127.0.0.1): an https:// provider is reached through a tunnel with TLS verified by the provider's
// name, an http:// one by absolute-form requests with the proxy's credentials, NO_PROXY and a
// provider's own `proxy` setting go direct, and a proxy that refuses is named as the failure.
#include "call_recorder.h"
#include "core/demo/fake_upstream.h"
#include "core/upstream/proxy_settings.h"
#include "core/upstream/socket_transport.h"
#include "gateway_fixture.h"
#include "tls_front.h"

#include <QHash>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTest>

#include <memory>

using namespace sw;
using namespace sw::test;

namespace {

// An HTTP forward proxy: CONNECT host:port opens a tunnel to 127.0.0.1:port; an absolute-form
// request goes on to 127.0.0.1:port in origin form. Each connection serves one request.
class FakeProxy {
public:
    QStringList lines;                // the request lines it was sent
    QList<QByteArray> authorizations; // their Proxy-Authorization values ("" when none)
    int refuseWith = 0;               // answer every request with this status instead
    QByteArray refuseReason = "Proxy Authentication Required";

    bool listen() {
        QObject::connect(&m_server, &QTcpServer::newConnection, &m_server, [this] {
            while (QTcpSocket *client = m_server.nextPendingConnection())
                serve(client);
        });
        return m_server.listen(QHostAddress::LocalHost);
    }
    quint16 port() const { return m_server.serverPort(); }
    void close() { m_server.close(); } // connections to its port are refused
    QByteArray url(const QByteArray &userInfo = {}) const {
        return "http://" + (userInfo.isEmpty() ? QByteArray() : userInfo + '@') +
               "127.0.0.1:" + QByteArray::number(port());
    }

private:
    void serve(QTcpSocket *client) {
        auto head = std::make_shared<QByteArray>();
        QObject::connect(client, &QTcpSocket::readyRead, client, [this, client, head] {
            if (head->endsWith("\n\n")) // tunnelling or forwarding already: the pipe below reads
                return;
            *head += client->readAll();
            const qsizetype end = head->indexOf("\r\n\r\n");
            if (end < 0)
                return;
            const QByteArray rest = head->mid(end + 4);
            const QList<QByteArray> fields = head->left(end).split('\n');
            *head = "\n\n";
            const QList<QByteArray> line = fields.front().trimmed().split(' ');
            lines.append(QString::fromLatin1(fields.front().trimmed()));
            QByteArray auth;
            QByteArray forwarded;
            for (qsizetype i = 1; i < fields.size(); ++i) {
                const QByteArray f = fields[i].trimmed();
                if (f.toLower().startsWith("proxy-authorization:"))
                    auth = f.mid(20).trimmed();
                else
                    forwarded += f + "\r\n";
            }
            authorizations.append(auth);
            if (refuseWith) {
                client->write("HTTP/1.1 " + QByteArray::number(refuseWith) + ' ' + refuseReason +
                              "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                client->disconnectFromHost();
                return;
            }
            const bool tunnel = line.value(0) == "CONNECT";
            const QByteArray target = line.value(1);
            const QByteArray authority = tunnel ? target : target.mid(7, target.indexOf('/', 7) - 7);
            const QByteArray path = tunnel ? QByteArray() : target.mid(target.indexOf('/', 7));
            auto *up = new QTcpSocket(client);
            QObject::connect(up, &QTcpSocket::readyRead, client, [up, client] { client->write(up->readAll()); });
            QObject::connect(client, &QTcpSocket::readyRead, up, [up, client] { up->write(client->readAll()); });
            QObject::connect(up, &QTcpSocket::disconnected, client, [client] { client->disconnectFromHost(); });
            QObject::connect(up, &QTcpSocket::connected, client, [=] {
                if (tunnel)
                    client->write("HTTP/1.1 200 Connection established\r\n\r\n");
                else
                    up->write(line.value(0) + ' ' + path + ' ' + line.value(2) + "\r\n" + forwarded + "\r\n" + rest);
            });
            up->connectToHost(QHostAddress::LocalHost, authority.mid(authority.lastIndexOf(':') + 1).toUShort());
        });
    }

    QTcpServer m_server;
};

upstream::HttpRequest post(const QString &base, const QString &trust = {}) {
    upstream::HttpRequest r;
    r.url = QUrl(base + QStringLiteral("/v1/messages"));
    r.trust = trust;
    r.headers = {{"content-type", "application/json"}};
    r.body = "{\"model\":\"claude-a\",\"max_tokens\":16,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    return r;
}

upstream::ProxySettings environment(const QHash<QByteArray, QByteArray> &vars) {
    return upstream::ProxySettings::fromEnvironment([vars](const char *name) { return vars.value(name); });
}

} // namespace

class TestUpstreamProxy : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void anHttpProviderIsAskedThroughTheProxyInAbsoluteForm();
    void anHttpsProviderIsReachedThroughAConnectTunnel();
    void noProxyAndAProvidersOwnSettingGoDirect();
    void aProxyNamedForALoopbackProviderIsUsed();
    void aRefusingProxyIsTheProxysFailure();
    void aProvidersProxyKeyReachesTheGatewaysTransport();
};

void TestUpstreamProxy::anHttpProviderIsAskedThroughTheProxyInAbsoluteForm() {
    demo::FakeUpstream fake;
    QVERIFY(fake.listen());
    FakeProxy proxy;
    QVERIFY(proxy.listen());
    upstream::SocketTransport transport;
    // The provider's name resolves nowhere here: only the proxy knows it.
    transport.setResolver([](const QString &) { return QList<QHostAddress>(); });
    transport.setProxyEnvironment(environment({{"HTTP_PROXY", proxy.url("alice:pw")}}));
    CallRecorder ok(transport.start(post(QStringLiteral("http://api.corp.test:%1").arg(fake.port())), this));
    QVERIFY(ok.waitFinished(10000));
    QVERIFY2(ok.error() == upstream::TransportError::None, qPrintable(ok.result->message));
    QCOMPARE(ok.status, 200);
    QCOMPARE(proxy.lines,
             QStringList{QStringLiteral("POST http://api.corp.test:%1/v1/messages HTTP/1.1").arg(fake.port())});
    QCOMPARE(proxy.authorizations, QList<QByteArray>{"Basic " + QByteArray("alice:pw").toBase64()});
    QCOMPARE(fake.requests().size(), 1);
    QCOMPARE(fake.requests().front().path, QByteArray("/v1/messages"));
    QCOMPARE(fake.requests().front().header("host"), QByteArray("api.corp.test:") + QByteArray::number(fake.port()));
}

void TestUpstreamProxy::anHttpsProviderIsReachedThroughAConnectTunnel() {
    demo::FakeUpstream fake;
    QVERIFY(fake.listen());
    TlsFront front(fake.port(), QStringLiteral("provider.test"));
    QVERIFY(front.ok());
    const int port = QUrl(front.baseUrl()).port();
    FakeProxy proxy;
    QVERIFY(proxy.listen());
    upstream::SocketTransport transport;
    transport.setResolver([](const QString &) { return QList<QHostAddress>(); });
    transport.setExtraCaCertificates({{front.caFile(), QSslCertificate::fromPath(front.caFile())}});
    transport.setProxyEnvironment(
        environment({{"https_proxy", proxy.url("alice:pw")}, {"NO_PROXY", "localhost,127.0.0.1"}}));
    CallRecorder ok(transport.start(post(QStringLiteral("https://provider.test:%1").arg(port), front.caFile()), this));
    QVERIFY(ok.waitFinished(10000));
    QVERIFY2(ok.error() == upstream::TransportError::None, qPrintable(ok.result->message));
    QCOMPARE(ok.status, 200);
    QCOMPARE(proxy.lines, QStringList{QStringLiteral("CONNECT provider.test:%1 HTTP/1.1").arg(port)});
    QCOMPARE(proxy.authorizations, QList<QByteArray>{"Basic " + QByteArray("alice:pw").toBase64()});
    QCOMPARE(fake.requests().size(), 1);
    // The certificate is still checked against the provider's name through the tunnel.
    CallRecorder other(transport.start(post(QStringLiteral("https://other.test:%1").arg(port), front.caFile()), this));
    QVERIFY(other.waitFinished(10000));
    QCOMPARE(other.error(), upstream::TransportError::Tls);
    QCOMPARE(fake.requests().size(), 1);
}

void TestUpstreamProxy::noProxyAndAProvidersOwnSettingGoDirect() {
    demo::FakeUpstream fake;
    QVERIFY(fake.listen());
    FakeProxy proxy;
    QVERIFY(proxy.listen());
    upstream::SocketTransport transport;
    transport.setResolver([](const QString &) { return QList<QHostAddress>{QHostAddress(QHostAddress::LocalHost)}; });
    transport.setProxyEnvironment(environment({{"http_proxy", proxy.url()}, {"no_proxy", "lan.test"}}));
    CallRecorder direct(transport.start(post(QStringLiteral("http://ollama.lan.test:%1").arg(fake.port())), this));
    QVERIFY(direct.waitFinished(10000));
    QCOMPARE(direct.status, 200);
    QVERIFY(proxy.lines.isEmpty());
    // providers.NAME.proxy "none": direct, whatever the environment says.
    const QString other = QStringLiteral("http://vllm.corp.test:%1").arg(fake.port());
    transport.setProxies({{upstream::hostKeyOf(QUrl(other)), QStringLiteral("none")}});
    CallRecorder own(transport.start(post(other), this));
    QVERIFY(own.waitFinished(10000));
    QCOMPARE(own.status, 200);
    QVERIFY(proxy.lines.isEmpty());
    QCOMPARE(fake.requests().size(), 2);
    // Without the setting, the environment's proxy again.
    transport.setProxies({});
    CallRecorder proxied(transport.start(post(other), this));
    QVERIFY(proxied.waitFinished(10000));
    QCOMPARE(proxied.status, 200);
    QCOMPARE(proxy.lines.size(), 1);
}

void TestUpstreamProxy::aProxyNamedForALoopbackProviderIsUsed() {
    // The environment never sends loopback through its proxy; a provider's own setting names it.
    demo::FakeUpstream fake;
    QVERIFY(fake.listen());
    FakeProxy proxy;
    QVERIFY(proxy.listen());
    upstream::SocketTransport transport;
    transport.setProxyEnvironment(environment({{"http_proxy", proxy.url()}}));
    const QString base = QStringLiteral("http://127.0.0.1:%1").arg(fake.port());
    CallRecorder direct(transport.start(post(base), this));
    QVERIFY(direct.waitFinished(10000));
    QCOMPARE(direct.status, 200);
    QVERIFY(proxy.lines.isEmpty());
    transport.setProxies({{upstream::hostKeyOf(QUrl(base)), QString::fromLatin1(proxy.url())}});
    CallRecorder named(transport.start(post(base), this));
    QVERIFY(named.waitFinished(10000));
    QCOMPARE(named.status, 200);
    QCOMPARE(proxy.lines, QStringList{QStringLiteral("POST %1/v1/messages HTTP/1.1").arg(base)});
}

void TestUpstreamProxy::aRefusingProxyIsTheProxysFailure() {
    demo::FakeUpstream fake;
    QVERIFY(fake.listen());
    FakeProxy proxy;
    QVERIFY(proxy.listen());
    proxy.refuseWith = 407;
    const QString name = QStringLiteral("proxy 127.0.0.1:%1").arg(proxy.port());
    upstream::SocketTransport transport;
    transport.setResolver([](const QString &) { return QList<QHostAddress>(); });
    transport.setProxyEnvironment(environment({{"ALL_PROXY", proxy.url("alice:hunter2")}}));
    for (const QString &base : {QStringLiteral("https://api.corp.test"), QStringLiteral("http://api.corp.test:8080")}) {
        CallRecorder refused(transport.start(post(base), this));
        QVERIFY(refused.waitFinished(10000));
        QCOMPARE(refused.error(), upstream::TransportError::Refused);
        const QString message = refused.result->message;
        QVERIFY2(message.contains(name) && message.contains(QLatin1String("407")) &&
                     message.contains(QLatin1String("refused the user and password")),
                 qPrintable(message));
        QVERIFY2(!message.contains(QLatin1String("hunter2")) && !message.contains(QLatin1String("alice")),
                 qPrintable(message));
        QCOMPARE(refused.startedCount, 0); // the proxy's 407 is no answer of the provider's
    }
    QCOMPARE(proxy.lines.size(), 2);
    QVERIFY(fake.requests().isEmpty());
    // The proxy's reason phrase reaches the client's error and the log: a short, printable one.
    proxy.refuseWith = 403;
    proxy.refuseReason = "Forbidden " + QByteArray(400, 'x') + "\x01\x1b[2J";
    CallRecorder talkative(transport.start(post(QStringLiteral("https://api.corp.test")), this));
    QVERIFY(talkative.waitFinished(10000));
    const QString said = talkative.result->message;
    QVERIFY2(said.contains(QLatin1String("with 403 Forbidden xxx")), qPrintable(said));
    QVERIFY2(!said.contains(QString(65, QLatin1Char('x'))) && !said.contains(QChar(0x1b)), qPrintable(said));
    // Nothing listens at the proxy's address: its failure, by its name, not the provider's.
    proxy.close();
    CallRecorder nobody(transport.start(post(QStringLiteral("https://api.corp.test")), this));
    QVERIFY(nobody.waitFinished(10000));
    QCOMPARE(nobody.error(), upstream::TransportError::Refused);
    QVERIFY2(nobody.result->message.startsWith(name + QStringLiteral(": ")), qPrintable(nobody.result->message));
}

void TestUpstreamProxy::aProvidersProxyKeyReachesTheGatewaysTransport() {
    // providers.NAME.proxy, end to end: the engine hands it to its transport at start.
    FakeProxy proxy;
    QVERIFY(proxy.listen());
    GatewayFixture gw;
    gw.config.providers[QStringLiteral("pa")].proxy = QString::fromLatin1(proxy.url());
    gw.start();
    const HttpResult r =
        gw.post(QStringLiteral("/v1/messages"),
                GatewayFixture::anthropicBody(QStringLiteral("pa/claude-a"), QStringLiteral("hi"), false));
    QCOMPARE(r.status, 200);
    QCOMPARE(proxy.lines.size(), 1);
    QVERIFY2(proxy.lines.front().startsWith(QStringLiteral("POST http://127.0.0.1:%1/").arg(gw.anthropicA.port())),
             qPrintable(proxy.lines.front()));
    QCOMPARE(gw.anthropicA.requests().size(), 1);
}

QTEST_GUILESS_MAIN(TestUpstreamProxy)
#include "test_upstream_proxy.moc"
