#pragma once
// The two upstream decoders every adapter has, driven the same way for each API.

#include "core/upstream/sse_reader.h"
#include "core/upstream/upstream_adapter.h"
#include "fuzz_common.h"

namespace sw::fuzz {

// The adapter's stream decoder on an arbitrary SSE body in arbitrary chunks.
inline int streamDecoder(const QString &api, const uint8_t *data, size_t size) {
    const auto *adapter = upstream::adapterFor(api);
    upstream::Target target;
    target.provider = QStringLiteral("fuzz");
    target.modelId = QStringLiteral("fuzz-model");
    target.api = adapter->api();
    // Both ways a decoder runs: keeping the native answer, and not.
    auto decoder = adapter->makeDecoder(target, size % 2 ? upstream::NativeBody::Skip : upstream::NativeBody::Keep);
    upstream::SseReader reader;
    feedInChunks(bytes(data, size), [&](QByteArrayView chunk) {
        for (const auto &event : reader.feed(chunk))
            decoder->feed(event);
    });
    for (const auto &event : reader.finish())
        decoder->feed(event);
    decoder->finish();
    return 0;
}

// The adapter's JSON (error) body decoder; the first byte picks the status.
inline int jsonDecoder(const QString &api, const uint8_t *data, size_t size) {
    const QByteArray input = bytes(data, size);
    const int status = input.isEmpty() ? 500 : 400 + static_cast<unsigned char>(input.at(0)) % 200;
    upstream::adapterFor(api)->parseError(status, input);
    return 0;
}

} // namespace sw::fuzz
