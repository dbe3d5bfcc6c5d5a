// core/wire/rapid_json against Qt's JSON on arbitrary text: the same texts accepted, and
// every value read, converted and written the same way (rapid_json_check.h). The stream
// decoders and the request decoders rely on it to read what Qt's parser read; any difference
// aborts.
#include "fuzz_common.h"
#include "rapid_json_check.h"

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const QByteArray input = sw::fuzz::bytes(data, size);
    if (const char *what = sw::rjcheck::difference(input)) {
        std::fprintf(stderr, "rapid_json differs from Qt (%s) on: %s\n", what, input.toPercentEncoding().constData());
        std::abort();
    }
    return 0;
}
