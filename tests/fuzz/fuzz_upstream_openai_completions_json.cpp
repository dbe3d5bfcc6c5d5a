// The openai-completions adapter's JSON (error) response decoder on arbitrary bodies and statuses.
#include "fuzz_common.h"
#include "upstream/upstream_adapter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const QByteArray input = sw::fuzz::bytes(data, size);
    const int status = input.isEmpty() ? 500 : 400 + static_cast<unsigned char>(input.at(0)) % 200;
    sw::upstream::adapterFor(QStringLiteral("openai-completions"))->parseError(status, input);
    return 0;
}
