#include "core/wire/image_size.h"

#include <QByteArrayView>

namespace sw::wire {

namespace {

bool isBase64Char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

// Bytes [offset, offset + count) of the data `base64` encodes, decoded from the characters that
// hold them alone (every 4 characters are 3 bytes); fewer when the data ends first, none when the
// text there is not base64.
QByteArray bytesAt(const QByteArray &base64, qint64 offset, qint64 count) {
    const qint64 first = offset / 3 * 4;
    const qint64 end = qMin<qint64>((offset + count + 2) / 3 * 4, base64.size());
    if (first >= end)
        return {};
    const QByteArray chars = base64.sliced(first, end - first);
    for (const char c : chars)
        if (!isBase64Char(c) && c != '=')
            return {};
    const auto decoded = QByteArray::fromBase64Encoding(chars, QByteArray::AbortOnBase64DecodingErrors);
    return decoded ? decoded.decoded.mid(offset % 3, count) : QByteArray();
}

quint8 u8(const QByteArray &b, qsizetype at) {
    return quint8(b[at]);
}
qint64 be16(const QByteArray &b, qsizetype at) {
    return u8(b, at) << 8 | u8(b, at + 1);
}
qint64 be32(const QByteArray &b, qsizetype at) {
    return qint64(be16(b, at)) << 16 | be16(b, at + 2);
}
qint64 le16(const QByteArray &b, qsizetype at) {
    return u8(b, at) | u8(b, at + 1) << 8;
}
qint64 le24(const QByteArray &b, qsizetype at) {
    return le16(b, at) | qint64(u8(b, at + 2)) << 16;
}

bool startsWith(const QByteArray &b, const char *magic, qsizetype at = 0) {
    return b.mid(at).startsWith(QByteArrayView(magic));
}

// A JPEG's markers from the one after SOI, each skipped by its length, to the first frame header
// (SOF0–SOF15 but DHT C4, JPG C8 and DAC CC), which holds the height, then the width.
std::optional<ImageSize> jpegSize(const QByteArray &base64) {
    qint64 at = 2;
    for (int i = 0; i < kMaxJpegMarkers; ++i) {
        // the marker, its length, the sample precision, the height and the width
        const QByteArray m = bytesAt(base64, at, 9);
        if (m.size() < 2 || u8(m, 0) != 0xff)
            return std::nullopt;
        const quint8 code = u8(m, 1);
        if (code == 0xff) { // a fill byte before the marker
            at += 1;
            continue;
        }
        if (code == 0x01 || (code >= 0xd0 && code <= 0xd8)) { // TEM, RSTn, SOI: no length
            at += 2;
            continue;
        }
        if (code == 0xd9 || code == 0xda || m.size() < 4) // the image or its scan begins with no frame header
            return std::nullopt;
        if (code >= 0xc0 && code <= 0xcf && code != 0xc4 && code != 0xc8 && code != 0xcc)
            return m.size() < 9 ? std::nullopt : std::optional(ImageSize{be16(m, 7), be16(m, 5)});
        const qint64 length = be16(m, 2);
        if (length < 2)
            return std::nullopt;
        at += 2 + length;
    }
    return std::nullopt;
}

} // namespace

std::optional<ImageSize> imageSize(const QByteArray &base64) {
    // Text broken into lines (MIME's 76 characters) shows a break in its first line's length: the
    // offsets past it are unknown.
    for (const char c : base64.left(80))
        if (!isBase64Char(c) && c != '=')
            return std::nullopt;
    // 30 bytes hold every header below but a JPEG's.
    const QByteArray head = bytesAt(base64, 0, 30);
    if (startsWith(head, "\x89PNG\r\n\x1a\n") && startsWith(head, "IHDR", 12) && head.size() >= 24)
        return ImageSize{be32(head, 16), be32(head, 20)};
    if ((startsWith(head, "GIF87a") || startsWith(head, "GIF89a")) && head.size() >= 10)
        return ImageSize{le16(head, 6), le16(head, 8)};
    if (startsWith(head, "\xff\xd8\xff"))
        return jpegSize(base64);
    if (!startsWith(head, "RIFF") || !startsWith(head, "WEBP", 8) || head.size() < 30)
        return std::nullopt;
    if (startsWith(head, "VP8X", 12)) // the canvas, each side less one
        return ImageSize{le24(head, 24) + 1, le24(head, 27) + 1};
    if (startsWith(head, "VP8L", 12) && u8(head, 20) == 0x2f) // 14 bits each, less one
        return ImageSize{1 + (u8(head, 21) | (u8(head, 22) & 0x3f) << 8),
                         1 + (u8(head, 22) >> 6 | u8(head, 23) << 2 | (u8(head, 24) & 0x0f) << 10)};
    if (startsWith(head, "VP8 ", 12) && startsWith(head, "\x9d\x01\x2a", 23)) // a key frame's 14-bit sides
        return ImageSize{le16(head, 26) & 0x3fff, le16(head, 28) & 0x3fff};
    return std::nullopt;
}

} // namespace sw::wire
