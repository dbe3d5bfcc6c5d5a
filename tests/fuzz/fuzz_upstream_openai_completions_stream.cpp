// The openai-completions adapter's stream decoder on arbitrary SSE bodies.
#include "fuzz_common.h"
#include "upstream/sse_reader.h"
#include "upstream/upstream_adapter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const auto *adapter = sw::upstream::adapterFor(QStringLiteral("openai-completions"));
    sw::upstream::Target target;
    target.provider = QStringLiteral("fuzz");
    target.modelId = QStringLiteral("fuzz-model");
    target.api = adapter->api();
    auto decoder = adapter->makeDecoder(target);
    sw::upstream::SseReader reader;
    sw::fuzz::feedInChunks(sw::fuzz::bytes(data, size), [&](QByteArrayView chunk) {
        for (const auto &event : reader.feed(chunk))
            decoder->feed(event);
    });
    for (const auto &event : reader.finish())
        decoder->feed(event);
    decoder->finish();
    return 0;
}
