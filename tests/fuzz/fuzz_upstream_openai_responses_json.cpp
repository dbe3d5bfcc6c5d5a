// The openai-responses adapter's JSON (error) body decoder on arbitrary bodies and statuses.
#include "fuzz_upstream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    return sw::fuzz::jsonDecoder(QStringLiteral("openai-responses"), data, size);
}
