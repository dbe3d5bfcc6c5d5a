#include "core/wire/client_body.h"

#include <algorithm>

namespace sw::wire {

std::shared_ptr<const rj::ParsedJson> parseClientBody(QByteArrayView body, bool *tooManyValues) {
    // Kept as long as the request: chunks sized to the body, not 64 KiB each (a 10 KB body
    // would hold 68 KiB), and not smaller than the buffer inside the object.
    const size_t chunk = std::clamp<size_t>(size_t(body.size()), 4096, rj::ParsedJson::kDefaultChunkBytes);
    auto parsed = std::make_shared<rj::ParsedJson>(chunk);
    if (!parsed->parse(body)) {
        if (tooManyValues)
            *tooManyValues = parsed->tooManyValues();
        return nullptr;
    }
    return parsed;
}

} // namespace sw::wire
