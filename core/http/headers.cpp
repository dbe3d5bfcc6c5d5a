#include "core/http/headers.h"

#include <array>
#include <string_view>

namespace sw::http {

QByteArray headerValue(const HeaderList &headers, QByteArrayView name) {
    for (const auto &h : headers)
        if (sameName(h.first, name))
            return h.second;
    return {};
}

namespace {
// RFC 9110 tchar: ALPHA, DIGIT and "!#$%&'*+-.^_`|~", as a table: every header name of every
// request is checked (a search of the punctuation per character cost ~240 instructions for
// one name of an SDK's head).
constexpr std::array<bool, 256> kTchar = [] {
    std::array<bool, 256> t{};
    for (int c = '0'; c <= '9'; ++c)
        t[size_t(c)] = true;
    for (int c = 'A'; c <= 'Z'; ++c)
        t[size_t(c)] = t[size_t(c - 'A' + 'a')] = true;
    for (const char c : std::string_view("!#$%&'*+-.^_`|~"))
        t[static_cast<unsigned char>(c)] = true;
    return t;
}();
} // namespace

bool isToken(QByteArrayView text) {
    if (text.isEmpty())
        return false;
    for (const char c : text)
        if (!kTchar[static_cast<unsigned char>(c)])
            return false;
    return true;
}

} // namespace sw::http
