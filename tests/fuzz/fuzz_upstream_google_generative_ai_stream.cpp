// The google-generative-ai adapter's stream decoder on arbitrary SSE bodies.
#include "fuzz_upstream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    return sw::fuzz::streamDecoder(QStringLiteral("google-generative-ai"), data, size);
}
