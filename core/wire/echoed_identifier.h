#pragma once
// SPEC 10 bounds every identifier the gateway echoes: at most 256 bytes, no control character.
// One rule for what a client names (formats::identifierProblem) and for what an upstream names
// its model, its answer and its tool calls with, which a same-API stream relays as it is (and a
// client's next turn sends back up).

#include "core/wire/rapid_json.h"

#include <string_view>

namespace sw::wire {

inline constexpr size_t kMaxEchoedIdentifierBytes = 256;

// Whether `utf8` may be echoed: at most kMaxEchoedIdentifierBytes, and no C0 control, DEL, C1
// control (U+0080..U+009F) or line or paragraph separator (U+2028, U+2029), any of which could
// end a line where the identifier is shown or logged; nor an invisible format character (zero
// width U+200B..U+200F, bidi embeddings, overrides and isolates U+202A..U+202E, U+2066..U+2069,
// the BOM U+FEFF), with which a name shown in the admin window or a log reads as another.
inline bool isEchoableIdentifier(std::string_view utf8) {
    if (utf8.size() > kMaxEchoedIdentifierBytes)
        return false;
    const auto *p = reinterpret_cast<const unsigned char *>(utf8.data());
    const size_t n = utf8.size();
    for (size_t i = 0; i < n; ++i) {
        const unsigned char c = p[i];
        if (c >= 0x20 && c < 0x7f)
            continue; // printable ASCII: nearly every byte of every name
        if (c < 0x80)
            return false; // C0 or DEL
        if (c == 0xc2 && i + 1 < n && p[i + 1] <= 0x9f)
            return false; // C1: U+0080..U+009F
        if (c == 0xe2 && i + 2 < n) {
            const unsigned char b = p[i + 1], t = p[i + 2];
            if (b == 0x80 && ((t >= 0x8b && t <= 0x8f) || (t >= 0xa8 && t <= 0xae)))
                return false; // U+200B..U+200F, U+2028..U+202E
            if (b == 0x81 && t >= 0xa6 && t <= 0xa9)
                return false; // U+2066..U+2069
        }
        if (c == 0xef && i + 2 < n && p[i + 1] == 0xbb && p[i + 2] == 0xbf)
            return false; // U+FEFF
    }
    return true;
}

// The members `keys` of `object`, when present as strings, may be echoed: views of the parsed
// text, nothing copied. Anything else there (absent, null, not an object) is the decoder's to judge.
template <std::size_t... N> inline bool membersAreEchoable(const rj::Value *object, const char (&...keys)[N]) {
    return (isEchoableIdentifier(rj::bytes(rj::member(object, keys))) && ...);
}

// The model and id members of `object` (a Chat chunk, Anthropic's message, a Responses response),
// when present as strings, may be echoed.
inline bool namesAreEchoable(const rj::Value *object) {
    return membersAreEchoable(object, "model", "id");
}

} // namespace sw::wire
