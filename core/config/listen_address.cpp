#include "core/config/listen_address.h"

#include "core/config/json_path_reader.h"

#include <QHostAddress>
#include <QRegularExpression>

namespace sw::config {

std::optional<ListenAddress> parseListenAddress(const QString &text) {
    static const QRegularExpression bracketed(QStringLiteral("^\\[([0-9A-Fa-f:.]+)\\]:([0-9]{1,5})$"));
    static const QRegularExpression plain(QStringLiteral("^([^:\\[\\]\\s]+):([0-9]{1,5})$"));
    static const QRegularExpression hostname(
        QStringLiteral("^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$"));
    QRegularExpressionMatch match = bracketed.match(text);
    const bool ipv6 = match.hasMatch();
    if (!ipv6)
        match = plain.match(text);
    if (!match.hasMatch())
        return std::nullopt;
    const QString host = match.captured(1);
    const uint port = match.captured(2).toUInt();
    if (port > 65535)
        return std::nullopt;
    QHostAddress address;
    const bool isAddress = address.setAddress(host);
    if (ipv6 ? (!isAddress || address.protocol() != QAbstractSocket::IPv6Protocol)
             : (!isAddress && !hostname.match(host).hasMatch()))
        return std::nullopt;
    return ListenAddress{host, quint16(port)};
}

bool isLoopbackHost(const QString &host) {
    if (host.compare(QLatin1String("localhost"), Qt::CaseInsensitive) == 0)
        return true;
    const QHostAddress address(host);
    return !address.isNull() && address.isLoopback();
}

std::optional<QString> listenAddressProblem(const QString &text, bool anyTenant) {
    const auto address = parseListenAddress(text);
    if (!address)
        return QStringLiteral("expected HOST:PORT (e.g. 127.0.0.1:4141, [::1]:4141), got %1").arg(quoted(text));
    if (!isLoopbackHost(address->host) && !anyTenant)
        return QStringLiteral("%1 is not a loopback address: listening beyond this machine needs at least one tenant "
                              "with a key")
            .arg(quoted(address->host));
    return std::nullopt;
}

} // namespace sw::config
