#include "core/upstream/proxy_settings.h"

#include <QHostAddress>
#include <QRegularExpression>

namespace sw::upstream {

QString ProxyServer::name() const {
    const QString shown = host.contains(QLatin1Char(':')) ? QLatin1Char('[') + host + QLatin1Char(']') : host;
    return QStringLiteral("proxy %1:%2").arg(shown).arg(port);
}

std::optional<ProxyServer> parseProxyUrl(const QString &text, QString *error) {
    auto fail = [error](const QString &why) -> std::optional<ProxyServer> {
        if (error)
            *error = why;
        return std::nullopt;
    };
    QString spec = text.trimmed();
    // curl and Python read a bare HOST:PORT as an http:// proxy.
    if (!spec.contains(QLatin1String("://")))
        spec.prepend(QLatin1String("http://"));
    const QUrl url(spec, QUrl::TolerantMode);
    const QString scheme = url.scheme().toLower();
    if (scheme == QLatin1String("https"))
        return fail(QStringLiteral("a TLS connection to the proxy (https://) is not supported: give its http:// "
                                   "address (https providers still go through it encrypted, with CONNECT)"));
    if (scheme != QLatin1String("http"))
        return fail(QStringLiteral("only an http:// proxy is supported (http://HOST:PORT), not %1://").arg(scheme));
    if (!url.isValid() || url.host().isEmpty())
        // Not echoed: the URL may hold a password.
        return fail(QStringLiteral("expected a proxy URL such as http://proxy.example.com:3128"));
    if (url.port() == 0)
        return fail(QStringLiteral("port 0 names no proxy"));
    ProxyServer proxy;
    proxy.host = url.host();
    proxy.port = quint16(url.port(80));
    const QString user = url.userName(QUrl::FullyDecoded);
    if (!user.isEmpty() || !url.password().isEmpty())
        proxy.authorization =
            "Basic " + (user + QLatin1Char(':') + url.password(QUrl::FullyDecoded)).toUtf8().toBase64();
    return proxy;
}

QString proxyRefusalHint(int status, bool sentCredentials) {
    if (status != 407)
        return QString();
    return sentCredentials ? QStringLiteral(" (it refused the user and password of the proxy URL)")
                           : QStringLiteral(" (it wants a user and password: give them in the proxy URL, "
                                            "http://USER:PASSWORD@HOST:PORT)");
}

ProxySettings ProxySettings::fromEnvironment() {
    return fromEnvironment([](const char *name) { return qgetenv(name); });
}

ProxySettings ProxySettings::fromEnvironment(const Environment &env) {
    ProxySettings s;
    // The lower-case name first, as curl and Python read them; an empty value counts as unset.
    struct Variable {
        const char *name = nullptr;
        QByteArray value;
    };
    auto pick = [&env](const char *lower, const char *upper) {
        if (QByteArray v = env(lower).trimmed(); !v.isEmpty())
            return Variable{lower, v};
        return Variable{upper, env(upper).trimmed()};
    };
    const Variable all = pick("all_proxy", "ALL_PROXY");
    auto read = [&](Variable own, const QString &urls) -> std::optional<ProxyServer> {
        if (own.value.isEmpty())
            own = all;
        if (own.value.isEmpty())
            return std::nullopt;
        QString why;
        auto proxy = parseProxyUrl(QString::fromLocal8Bit(own.value), &why);
        if (!proxy)
            s.m_problems.append(
                QStringLiteral("%1: %2; %3 providers go direct").arg(QLatin1String(own.name), why, urls));
        return proxy;
    };
    s.m_https = read(pick("https_proxy", "HTTPS_PROXY"), QStringLiteral("https://"));
    s.m_http = read(pick("http_proxy", "HTTP_PROXY"), QStringLiteral("http://"));

    static const QRegularExpression separators(QStringLiteral("[,\\s]+"));
    const QString noProxy = QString::fromLocal8Bit(pick("no_proxy", "NO_PROXY").value);
    for (QString entry : noProxy.split(separators, Qt::SkipEmptyParts)) {
        entry = entry.toLower();
        if (entry == QLatin1String("*")) {
            s.m_bypassAll = true;
            continue;
        }
        Bypass b;
        QString host = entry;
        if (entry.startsWith(QLatin1Char('['))) { // [IPv6] or [IPv6]:PORT
            const qsizetype close = entry.indexOf(QLatin1Char(']'));
            if (close < 0)
                continue;
            host = entry.mid(1, close - 1);
            if (entry.mid(close + 1).startsWith(QLatin1Char(':')))
                b.port = entry.mid(close + 2).toInt();
        } else if (entry.count(QLatin1Char(':')) == 1) { // NAME:PORT or IPv4:PORT
            const qsizetype colon = entry.indexOf(QLatin1Char(':'));
            host = entry.left(colon);
            b.port = entry.mid(colon + 1).toInt();
        }
        if (host.contains(QLatin1Char('/')) || !QHostAddress(host).isNull()) {
            b.address = host;
        } else {
            while (host.startsWith(QLatin1Char('*')) || host.startsWith(QLatin1Char('.')))
                host.remove(0, 1);
            while (host.endsWith(QLatin1Char('.')))
                host.chop(1);
            if (host.isEmpty())
                continue;
            b.suffix = host;
        }
        s.m_bypass.append(b);
    }
    return s;
}

bool ProxySettings::bypassed(const QString &hostIn, int port) const {
    QString host = hostIn.toLower();
    while (host.endsWith(QLatin1Char('.')))
        host.chop(1);
    const QHostAddress address(host);
    if (host == QLatin1String("localhost") || host.endsWith(QLatin1String(".localhost")) ||
        (!address.isNull() && address.isLoopback()))
        return true;
    if (m_bypassAll)
        return true;
    for (const Bypass &b : m_bypass) {
        if (b.port >= 0 && b.port != port)
            continue;
        if (!b.suffix.isEmpty()) {
            if (host == b.suffix ||
                (host.endsWith(b.suffix) && host.at(host.size() - b.suffix.size() - 1) == QLatin1Char('.')))
                return true;
            continue;
        }
        if (address.isNull())
            continue;
        if (b.address.contains(QLatin1Char('/'))) {
            const auto subnet = QHostAddress::parseSubnet(b.address);
            if (subnet.second >= 0 && address.isInSubnet(subnet))
                return true;
        } else if (address.isEqual(QHostAddress(b.address), QHostAddress::TolerantConversion)) {
            return true;
        }
    }
    return false;
}

std::optional<ProxyServer> ProxySettings::proxyFor(const QUrl &url) const {
    const bool tls = url.scheme().compare(QLatin1String("https"), Qt::CaseInsensitive) == 0;
    const auto &proxy = tls ? m_https : m_http;
    if (!proxy || bypassed(url.host(), url.port(tls ? 443 : 80)))
        return std::nullopt;
    return proxy;
}

} // namespace sw::upstream
