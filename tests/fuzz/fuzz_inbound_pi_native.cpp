// The inbound request decoder of one client format on arbitrary bodies.
#include "core/formats/inbound_codec.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sw::model::GatewayError error;
    sw::formats::codecFor(sw::wire::Api::Pi).decode(sw::fuzz::bytes(data, size), &error);
    return 0;
}
