#include "core/http/content_coding.h"

#include <zlib.h>

namespace sw::http {

namespace {

// One inflate pass: windowBits 15 + 32 reads a gzip or a zlib stream, -15 a raw deflate one
// (servers have sent both for "deflate"). Output stops at maxBytes: an error page that inflates
// to more is read only as far as classifying it needs.
std::optional<QByteArray> inflateWith(const QByteArray &body, int windowBits, qsizetype maxBytes) {
    z_stream z{};
    if (inflateInit2(&z, windowBits) != Z_OK)
        return std::nullopt;
    QByteArray out(qMin<qsizetype>(maxBytes, qMax<qsizetype>(4 * body.size(), 1024)), Qt::Uninitialized);
    z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(body.constData()));
    z.avail_in = uInt(body.size());
    qsizetype produced = 0;
    int rc = Z_OK;
    while (rc == Z_OK && produced < maxBytes) {
        if (produced == out.size())
            out.resize(qMin(maxBytes, out.size() * 2));
        z.next_out = reinterpret_cast<Bytef *>(out.data() + produced);
        z.avail_out = uInt(out.size() - produced);
        rc = inflate(&z, Z_NO_FLUSH);
        produced = out.size() - qsizetype(z.avail_out);
        if (rc == Z_BUF_ERROR && z.avail_in == 0)
            break; // the input ended early: what came out is still the page's start
    }
    inflateEnd(&z);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
        return std::nullopt;
    if (produced == 0 && !body.isEmpty())
        return std::nullopt;
    out.truncate(produced);
    return out;
}

} // namespace

std::optional<QByteArray> decodeContent(const QByteArray &body, QByteArrayView coding, qsizetype maxBytes) {
    const QByteArray name = coding.toByteArray().trimmed().toLower();
    if (name.isEmpty() || name == "identity")
        return body.left(maxBytes);
    if (name == "gzip" || name == "x-gzip")
        return inflateWith(body, 15 + 32, maxBytes);
    if (name == "deflate") {
        if (auto zlibStream = inflateWith(body, 15 + 32, maxBytes))
            return zlibStream;
        return inflateWith(body, -15, maxBytes);
    }
    return std::nullopt;
}

} // namespace sw::http
