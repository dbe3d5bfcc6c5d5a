#include "core/redis/redis_endpoint.h"

#include <QUrl>

namespace sw::redis {

QString RedisEndpoint::display() const {
    return QStringLiteral("%1://%2:%3/%4")
        .arg(tls ? QStringLiteral("rediss") : QStringLiteral("redis"), host)
        .arg(port)
        .arg(db);
}

std::optional<RedisEndpoint> RedisEndpoint::parse(const QString &text, QString *error) {
    const QUrl url(text, QUrl::StrictMode);
    auto fail = [&](const QString &why) -> std::optional<RedisEndpoint> {
        if (error)
            *error = why;
        return std::nullopt;
    };
    if (!url.isValid())
        return fail(QStringLiteral("\"%1\" is not a URL").arg(text));
    RedisEndpoint e;
    if (url.scheme() == QLatin1String("rediss"))
        e.tls = true;
    else if (url.scheme() != QLatin1String("redis"))
        return fail(QStringLiteral("scheme must be redis:// or rediss://"));
    if (url.host().isEmpty())
        return fail(QStringLiteral("no host in \"%1\"").arg(text));
    e.host = url.host();
    const int port = url.port(6379);
    if (port <= 0 || port > 65535)
        return fail(QStringLiteral("bad port in \"%1\"").arg(text));
    e.port = quint16(port);
    const QString path = url.path();
    if (!path.isEmpty() && path != QLatin1String("/")) {
        bool ok = false;
        e.db = path.mid(1).toInt(&ok);
        if (!ok || e.db < 0)
            return fail(QStringLiteral("the path of \"%1\" must be a database number").arg(text));
    }
    if (url.hasQuery() || url.hasFragment())
        return fail(QStringLiteral("\"%1\" has a query or fragment; Redis URLs take none").arg(text));
    e.username = url.userName();
    e.password = url.password().toUtf8();
    return e;
}

} // namespace sw::redis
