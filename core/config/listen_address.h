#pragma once
// The address the gateway listens on: "HOST:PORT" or "[IPv6]:PORT", and the
// rule that only a loopback listener may run without tenants (with no tenant
// every caller is trusted, so nobody beyond this machine may reach it).

#include <QString>
#include <optional>

namespace sw::config {

struct ListenAddress {
    QString host; // without brackets for IPv6
    quint16 port = 0;
};

// "HOST:PORT" or "[IPv6]:PORT"; port 0 (any free port) is allowed.
std::optional<ListenAddress> parseListenAddress(const QString &text);
// True for 127.0.0.0/8, ::1 and "localhost".
bool isLoopbackHost(const QString &host);
// What is wrong with listening on `text` when the configuration has (or has no)
// tenant; nullopt when nothing is.
std::optional<QString> listenAddressProblem(const QString &text, bool anyTenant);

} // namespace sw::config
