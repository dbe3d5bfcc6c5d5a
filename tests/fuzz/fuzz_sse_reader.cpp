// The upstream SSE reader on arbitrary bytes in arbitrary chunks.
#include "core/upstream/sse_reader.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sw::upstream::SseReader reader;
    sw::fuzz::feedInChunks(sw::fuzz::bytes(data, size), [&](QByteArrayView chunk) { reader.feed(chunk); });
    reader.finish();
    return 0;
}
