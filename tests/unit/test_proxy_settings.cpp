// ProxySettings: which proxy the environment's variables send a provider's URL through, as curl and
// Python read them (probe AC1 F1), and proxy URLs as the config's providers.NAME.proxy gives them.

#include "core/upstream/proxy_settings.h"

#include <QHash>
#include <QtTest>

using namespace sw::upstream;

namespace {

ProxySettings settings(const QHash<QByteArray, QByteArray> &vars) {
    return ProxySettings::fromEnvironment([vars](const char *name) { return vars.value(name); });
}

// "proxy HOST:PORT", or "direct".
QString route(const ProxySettings &s, const char *url) {
    const auto proxy = s.proxyFor(QUrl(QString::fromLatin1(url)));
    return proxy ? proxy->name() : QStringLiteral("direct");
}

} // namespace

class TestProxySettings : public QObject {
    Q_OBJECT
private slots:
    void eachSchemeTakesItsOwnVariableThenAllProxy();
    void lowerCaseComesFirstAndEmptyIsUnset();
    void noProxyMatchesSuffixesPortsAddressesAndStar();
    void loopbackIsNeverSentThroughTheEnvironmentsProxy();
    void aProxyUrlGivesBasicCredentialsThatItsNameNeverShows();
    void anUnusableVariableIsSaidAndItsUrlsGoDirect();
};

void TestProxySettings::eachSchemeTakesItsOwnVariableThenAllProxy() {
    const auto s = settings({{"https_proxy", "http://tls.corp:3128"},
                             {"http_proxy", "plain.corp:8080"},
                             {"all_proxy", "http://all.corp:1"}});
    QCOMPARE(route(s, "https://api.openai.com/v1"), QStringLiteral("proxy tls.corp:3128"));
    QCOMPARE(route(s, "http://ollama.lan:11434/v1"), QStringLiteral("proxy plain.corp:8080"));
    const auto allOnly = settings({{"ALL_PROXY", "http://all.corp"}});
    QCOMPARE(route(allOnly, "https://api.openai.com/v1"), QStringLiteral("proxy all.corp:80"));
    QCOMPARE(route(allOnly, "http://ollama.lan:11434/v1"), QStringLiteral("proxy all.corp:80"));
    const auto httpsOnly = settings({{"HTTPS_PROXY", "http://tls.corp:3128"}});
    QCOMPARE(route(httpsOnly, "http://ollama.lan:11434/v1"), QStringLiteral("direct"));
    QCOMPARE(route(settings({}), "https://api.openai.com/v1"), QStringLiteral("direct"));
    QVERIFY(!settings({}).any());
}

void TestProxySettings::lowerCaseComesFirstAndEmptyIsUnset() {
    const auto s = settings({{"https_proxy", "http://lower:1"}, {"HTTPS_PROXY", "http://upper:2"}});
    QCOMPARE(route(s, "https://a.example"), QStringLiteral("proxy lower:1"));
    const auto blank = settings({{"https_proxy", "  "}, {"HTTPS_PROXY", "http://upper:2"}});
    QCOMPARE(route(blank, "https://a.example"), QStringLiteral("proxy upper:2"));
    const auto noProxy = settings({{"https_proxy", "http://p:1"}, {"no_proxy", "a.example"}, {"NO_PROXY", "*"}});
    QCOMPARE(route(noProxy, "https://a.example"), QStringLiteral("direct"));
    QCOMPARE(route(noProxy, "https://b.example"), QStringLiteral("proxy p:1"));
}

void TestProxySettings::noProxyMatchesSuffixesPortsAddressesAndStar() {
    const auto s = settings({{"HTTPS_PROXY", "http://p:3128"},
                             {"HTTP_PROXY", "http://p:3128"},
                             {"NO_PROXY", "corp.example, .internal.test\tgateway.lan:8443,10.0.0.0/8,192.168.1.7,"
                                          "[fd00::1],*.wild.test"}});
    QCOMPARE(route(s, "https://corp.example/v1"), QStringLiteral("direct"));
    QCOMPARE(route(s, "https://api.corp.example/v1"), QStringLiteral("direct"));
    QCOMPARE(route(s, "https://notcorp.example/v1"), QStringLiteral("proxy p:3128")); // a suffix of labels only
    QCOMPARE(route(s, "https://internal.test/v1"), QStringLiteral("direct"));
    QCOMPARE(route(s, "https://llm.internal.test/v1"), QStringLiteral("direct"));
    QCOMPARE(route(s, "https://gateway.lan:8443/v1"), QStringLiteral("direct"));
    QCOMPARE(route(s, "https://gateway.lan/v1"), QStringLiteral("proxy p:3128")); // another port
    QCOMPARE(route(s, "http://10.1.2.3:8000/v1"), QStringLiteral("direct"));
    QCOMPARE(route(s, "http://11.1.2.3:8000/v1"), QStringLiteral("proxy p:3128"));
    QCOMPARE(route(s, "http://192.168.1.7/v1"), QStringLiteral("direct"));
    QCOMPARE(route(s, "http://192.168.1.8/v1"), QStringLiteral("proxy p:3128"));
    QCOMPARE(route(s, "http://[fd00::1]:8000/v1"), QStringLiteral("direct"));
    QCOMPARE(route(s, "https://a.wild.test/v1"), QStringLiteral("direct"));
    QCOMPARE(route(s, "https://API.CORP.EXAMPLE./v1"), QStringLiteral("direct")); // case and the root's dot
    const auto all = settings({{"https_proxy", "http://p:3128"}, {"no_proxy", "*"}});
    QCOMPARE(route(all, "https://api.openai.com"), QStringLiteral("direct"));
}

void TestProxySettings::loopbackIsNeverSentThroughTheEnvironmentsProxy() {
    // The user's other tools reach the gateway itself on loopback; a provider on loopback (Ollama,
    // LM Studio) is this machine, whatever NO_PROXY forgot.
    const auto s = settings({{"http_proxy", "http://p:3128"}, {"https_proxy", "http://p:3128"}});
    for (const char *url : {"http://localhost:11434/v1", "http://127.0.0.1:4141", "http://127.8.0.1",
                            "http://[::1]:8000", "https://ollama.localhost/v1"})
        QCOMPARE(route(s, url), QStringLiteral("direct"));
    QCOMPARE(route(s, "http://ollama.lan:11434/v1"), QStringLiteral("proxy p:3128"));
}

void TestProxySettings::aProxyUrlGivesBasicCredentialsThatItsNameNeverShows() {
    const auto proxy = parseProxyUrl(QStringLiteral("http://alice:s%40cret@proxy.corp:3128"));
    QVERIFY(proxy);
    QCOMPARE(proxy->authorization, QByteArray("Basic ") + QByteArray("alice:s@cret").toBase64());
    QCOMPARE(proxy->name(), QStringLiteral("proxy proxy.corp:3128"));
    const auto v6 = parseProxyUrl(QStringLiteral("http://[fd00::3]:3128"));
    QVERIFY(v6);
    QCOMPARE(v6->name(), QStringLiteral("proxy [fd00::3]:3128"));
    QVERIFY(v6->authorization.isEmpty());
    QString why;
    QVERIFY(!parseProxyUrl(QStringLiteral("socks5://p:1080"), &why));
    QVERIFY2(why.contains(QLatin1String("only an http:// proxy")), qPrintable(why));
    QVERIFY(!parseProxyUrl(QStringLiteral("https://alice:secret@p:443"), &why));
    QVERIFY2(why.contains(QLatin1String("https://")) && !why.contains(QLatin1String("secret")), qPrintable(why));
    QVERIFY(!parseProxyUrl(QStringLiteral("http://p:0"), &why));
}

void TestProxySettings::anUnusableVariableIsSaidAndItsUrlsGoDirect() {
    const auto s = settings({{"HTTPS_PROXY", "socks5h://alice:secret@p:1080"}, {"http_proxy", "http://p:3128"}});
    QCOMPARE(route(s, "https://api.openai.com"), QStringLiteral("direct"));
    QCOMPARE(route(s, "http://ollama.lan"), QStringLiteral("proxy p:3128"));
    QCOMPARE(s.problems().size(), 1);
    QVERIFY2(s.problems().front().startsWith(QLatin1String("HTTPS_PROXY: ")), qPrintable(s.problems().front()));
    QVERIFY2(!s.problems().front().contains(QLatin1String("secret")), qPrintable(s.problems().front()));
}

QTEST_GUILESS_MAIN(TestProxySettings)
#include "test_proxy_settings.moc"
