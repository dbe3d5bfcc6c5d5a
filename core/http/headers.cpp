#include "core/http/headers.h"

namespace sw::http {

QByteArray headerValue(const HeaderList &headers, QByteArrayView name) {
    for (const auto &h : headers)
        if (sameName(h.first, name))
            return h.second;
    return {};
}

bool isToken(QByteArrayView text) {
    static constexpr QByteArrayView tchar("!#$%&'*+-.^_`|~");
    if (text.isEmpty())
        return false;
    for (const char c : text) {
        const bool alnum = (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
        if (!alnum && !tchar.contains(c))
            return false;
    }
    return true;
}

} // namespace sw::http
