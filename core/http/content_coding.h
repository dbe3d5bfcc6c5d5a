#pragma once
// Content codings (RFC 9110 8.4) on a body the gateway must read whole and small: an upstream's
// error answer. Every upstream request says Accept-Encoding: identity, yet some servers and
// proxies compress their error pages anyway; read raw, the compressed bytes reached the client
// as its error message and hid the words the failover reads (a spent credit balance).

#include <QByteArray>
#include <QByteArrayView>
#include <optional>

namespace sw::http {

// `body` decoded from `coding` (a Content-Encoding value: gzip, x-gzip, deflate; identity or
// empty as it is), at most `maxBytes` of it; nullopt for a coding it does not decode (br, zstd,
// several) or bytes that are not what the coding says.
std::optional<QByteArray> decodeContent(const QByteArray &body, QByteArrayView coding, qsizetype maxBytes);

} // namespace sw::http
