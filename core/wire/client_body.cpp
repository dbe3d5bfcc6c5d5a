#include "core/wire/client_body.h"

namespace sw::wire {

std::shared_ptr<const rj::ParsedJson> parseClientBody(QByteArrayView body) {
    auto parsed = std::make_shared<rj::ParsedJson>();
    if (!parsed->parse(body))
        return nullptr;
    return parsed;
}

} // namespace sw::wire
