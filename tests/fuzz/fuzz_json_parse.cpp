// core/wire/json_parse against QJsonDocument::fromJson on arbitrary text: the same document
// (members, order, integer or double), or the same error, offset and message. A client's
// request body goes through parseJson; any difference from Qt's parser aborts.
#include "fuzz_common.h"
#include "json_parse_check.h"

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const QByteArray input = sw::fuzz::bytes(data, size);
    if (const char *what = sw::jsoncheck::difference(input); *what) {
        std::fprintf(stderr, "parseJson differs from Qt (%s) on: %s\n", what, input.toPercentEncoding().constData());
        std::abort();
    }
    return 0;
}
