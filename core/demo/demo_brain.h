#pragma once
// The demo brain: a deterministic "model" behind the simulated providers, so
// --demo, tests and benchmarks get replies that exercise text, thinking and
// tool calls without any real provider.

#include "core/model/chat.h"

#include <QList>
#include <QString>

namespace sw::demo {

// The full canonical event stream for one reply: Start first, Done (with usage) last.
//  - tools present and (last user text contains "tool" or toolChoice is "required"
//    or names a tool): one call to the first (or the named) tool, arguments from the
//    schema's required string properties ("demo"), stop reason toolUse;
//  - last message a tool result: text "Tool result received: <result text>";
//  - otherwise: a thinking block first when reasoning or a thinking budget was
//    asked for, then "Hello from <label>. You said: <last user text>" in ~4 deltas.
// Usage: input = all characters of the context / 4 (>= 1), output = words emitted (>= 1).
QList<model::StreamEvent> replyFor(const model::Context &context, const model::Options &options, const QString &label);

// The message those events build (for non-streaming answers).
model::AssistantMessage assembleMessage(const QList<model::StreamEvent> &events);

} // namespace sw::demo
