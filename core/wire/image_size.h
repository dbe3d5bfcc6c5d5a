#pragma once
// The pixel size an image states in its header, read from the base64 text a request carries:
// Messages refuses an image by its size (a side over 8000 px) with a 400 no failover gets past,
// and OpenAI and Gemini take it and scale it down (UpstreamAdapter::incompatibility).

#include <QByteArray>
#include <QtGlobal>

#include <optional>

namespace sw::wire {

struct ImageSize {
    qint64 width = 0;
    qint64 height = 0;
};

// How far into a JPEG its frame header (SOFn) is looked for: the markers before it (EXIF, ICC
// profiles, thumbnails) are skipped by their lengths, never read, and at most this many are.
constexpr int kMaxJpegMarkers = 64;

// The width and height `base64` states: a PNG's IHDR, a JPEG's frame header (SOF0–SOF15), a GIF's
// logical screen, a WebP's VP8, VP8L or VP8X header. Only the few bytes each needs are decoded
// (the image itself never is). Nothing for another format, a header cut short, or base64 text
// broken into lines (its byte offsets cannot be found without decoding all that comes before).
std::optional<ImageSize> imageSize(const QByteArray &base64);

} // namespace sw::wire
