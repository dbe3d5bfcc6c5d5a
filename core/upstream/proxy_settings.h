#pragma once
// Which forward proxy, if any, a provider's base URL is reached through. On many corporate networks
// the only way out is an explicit HTTP proxy, named in the environment that curl, the Python and
// Node SDKs, Claude Code and Codex CLI all read: the gateway reads the same variables, once at
// start, and a provider's own `proxy` key (providers.NAME.proxy) overrides them (probe AC1 F1).
//
// The environment, as curl and Python read it:
// - https_proxy (then HTTPS_PROXY) for an https:// URL, http_proxy (then HTTP_PROXY) for an http://
//   one, all_proxy (then ALL_PROXY) for either when its own is unset or empty;
// - no_proxy (then NO_PROXY): entries separated by commas or white space; `*` alone sends every URL
//   direct; a host name matches itself and every name under it (`example.com` and `.example.com`
//   both match api.example.com); an IP address matches itself, `10.0.0.0/8` a subnet, `[::1]` an
//   IPv6 address; `:PORT` after an entry limits it to that port;
// - a loopback host (localhost, *.localhost, 127.0.0.0/8, ::1) is never sent through an
//   environment proxy: it is this machine. Only a provider's own `proxy` key can send it there.
//
// A proxy is an http:// URL, `http://[USER:PASSWORD@]HOST[:PORT]` (a bare HOST:PORT is read as
// http://; the port defaults to 80, as Python and Go do). https:// URLs go through it with CONNECT;
// http:// URLs are sent to it in absolute form. Its user and password go as Proxy-Authorization:
// Basic, and are never shown: a proxy is named by its host and port alone.

#include <QByteArray>
#include <QHash>
#include <QString>
#include <QStringList>
#include <QUrl>

#include <functional>
#include <optional>

namespace sw::upstream {

struct ProxyServer {
    QString host; // a name or an address literal, without brackets
    quint16 port = 0;
    QByteArray authorization; // the Proxy-Authorization value ("Basic …"); empty: none

    // "proxy HOST:PORT": what a message names it by (never its credentials).
    QString name() const;
    bool operator==(const ProxyServer &) const = default;
};

// `text` read as a proxy URL, or nullopt with `error` set to why not (never echoing a password).
std::optional<ProxyServer> parseProxyUrl(const QString &text, QString *error = nullptr);

// What follows a proxy's refusal (its status `status`) in a message: how to give it credentials
// for a 407, or nothing.
QString proxyRefusalHint(int status, bool sentCredentials);

// The value of providers.NAME.proxy that sends the provider direct, whatever the environment says.
inline constexpr QLatin1StringView kNoProxy{"none"};

class ProxySettings {
public:
    // Reads a variable; an unset one is empty.
    using Environment = std::function<QByteArray(const char *name)>;
    // The process's environment.
    static ProxySettings fromEnvironment();
    static ProxySettings fromEnvironment(const Environment &env);

    // The proxy for `url` by the environment's variables; nullopt: direct.
    std::optional<ProxyServer> proxyFor(const QUrl &url) const;
    // Whether no_proxy (or the loopback rule) sends `host` on `port` direct.
    bool bypassed(const QString &host, int port) const;

    // Variables whose value could not be read (a scheme other than http://, no host): said once at
    // start, and those URLs go direct.
    const QStringList &problems() const { return m_problems; }
    bool any() const { return m_http || m_https; }

private:
    struct Bypass {
        QString suffix;  // a host name, lower case, without a leading dot; empty with an address
        QString address; // an address literal or subnet ("10.0.0.0/8"); empty with a name
        int port = -1;   // -1: every port
    };
    std::optional<ProxyServer> m_http;
    std::optional<ProxyServer> m_https;
    QList<Bypass> m_bypass;
    bool m_bypassAll = false;
    QStringList m_problems;
};

} // namespace sw::upstream
