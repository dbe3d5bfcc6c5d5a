// The socket transport's HTTP/1.1 response parser: head, chunked and length
// framing, trailers, close-delimited bodies, in arbitrary chunks.
#include "core/upstream/http1_response_parser.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const QByteArray input = sw::fuzz::bytes(data, size);
    sw::upstream::Http1ResponseParser parser(!input.isEmpty() && (input.at(0) & 0x80));
    sw::fuzz::feedInChunks(input, [&](QByteArrayView chunk) {
        if (parser.state() != sw::upstream::Http1ResponseParser::State::Error)
            parser.feed(chunk);
    });
    parser.finishOnClose();
    return 0;
}
