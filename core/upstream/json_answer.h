#pragma once
// An upstream that ignores `stream: true` (some OpenAI-compatible servers, caching proxies) and
// answers 200 with its API's whole JSON answer: the answer as the SSE events that API's stream
// would have carried, so the same stream decoder reads it (and a same-API streaming client is
// relayed frames of its own format).

#include "core/upstream/sse_reader.h"
#include "core/wire/api.h"

#include <QByteArray>
#include <QList>
#include <optional>

namespace sw::upstream {

// The events of `body`, in the order `api`'s stream sends them: a Chat chat.completion as one
// chunk (`delta` for `message`), a usage chunk and [DONE]; an Anthropic message as message_start,
// each block's start, deltas and stop, message_delta and message_stop; a Responses response as
// response.created, each item's added, deltas and done events, and response.completed (or
// .incomplete); a Gemini GenerateContentResponse (or an array of them) as one chunk each.
// nullopt when `body` is not a finished answer of `api`: an error object, another shape, a
// Responses response that failed or is still in progress. That body is the upstream's error.
std::optional<QList<SseEvent>> eventsOfJsonAnswer(wire::Api api, const QByteArray &body);

// As above, but an answer that lists more than `maxBlocks` content blocks (Anthropic content[],
// Chat tool_calls, Responses output items and message parts, Gemini functionCall parts) makes no
// event: nullopt with `*blocks` set to the count (> maxBlocks), checked before any event is built.
// `*blocks` is 0 for a body that is not JSON. Both overloads refuse an answer of more values
// (keys included) than rj::ParsedJson::maxValuesFor its size, the bound of a request body, before
// any tree of it is built: nullopt with `*tooManyValues` set.
std::optional<QList<SseEvent>> eventsOfJsonAnswer(wire::Api api, const QByteArray &body, qsizetype maxBlocks,
                                                  qsizetype *blocks, bool *tooManyValues = nullptr);

} // namespace sw::upstream
