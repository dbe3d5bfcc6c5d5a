#pragma once
// Where a Redis server is, parsed from a `redis://` or `rediss://` URL:
// redis://[[user]:password@]host[:port][/db]. A password in the URL is accepted
// for completeness, but the configuration takes it as a reference instead.

#include <QString>
#include <optional>

namespace sw::redis {

struct RedisEndpoint {
    QString host = QStringLiteral("127.0.0.1");
    quint16 port = 6379;
    int db = 0;
    bool tls = false;
    QString username;
    QByteArray password;     // secret: never logged
    QString caFile;          // rediss://: a PEM bundle trusted besides the system store (marks.caFile)
    QString display() const; // "redis://host:port/db", no credentials

    // nullopt with *error set when the URL is not a usable Redis URL.
    static std::optional<RedisEndpoint> parse(const QString &url, QString *error);
};

} // namespace sw::redis
