// The configuration reader on arbitrary text: every error collected, never a crash.
#include "core/config/config_reader.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sw::config::parse(sw::fuzz::bytes(data, size));
    return 0;
}
