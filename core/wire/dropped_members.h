#pragma once
// What of a client's request a converted request goes without, by name: the members of its body
// that no mapping reads and that are not a documented drop (formats/translation_rules.md, "The rule").
// A converted answer says them (x-switchman-dropped, the stream's first comment, the log), so no
// field that changes what the model does is dropped in silence.

#include "core/wire/api.h"
#include "core/wire/rapid_json.h"

#include <QStringList>

namespace sw::wire {

// At most this many names, each at most kMaxDroppedName characters of [A-Za-z0-9_.[]-].
inline constexpr int kMaxDropped = 16;
inline constexpr int kMaxDroppedName = 64;

// Top-level members, and members of a tool definition ("tools[].input_examples"), of `body` as
// `inbound` defines it, that a request converted to `target` does not carry. Empty for the same API
// (passthrough carries every member) and for pi's own body.
QStringList droppedMembers(const rj::Value *body, Api inbound, Api target);

} // namespace sw::wire
