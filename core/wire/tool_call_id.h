#pragma once
// Tool call ids as each API accepts them (formats/translation_rules.md, "Tool call ids"). The id
// a model gave a call pairs it with its result in every later turn, so a mapping must give the
// same id for the same input, on the request going up and on the answer coming down alike.

#include "core/wire/rapid_json.h"

#include <QHash>
#include <QSet>
#include <QString>

#include <string_view>

namespace sw::wire {

// Messages accepts tool_use ids matching ^[a-zA-Z0-9_-]{1,64}$.
inline constexpr qsizetype kAnthropicMaxToolIdLength = 64;
// OpenAI refuses a longer Chat tool_calls id (40) or Responses call_id (64).
inline constexpr qsizetype kChatMaxToolIdLength = 40;
inline constexpr qsizetype kResponsesMaxCallIdLength = 64;

// Mistral's API (mistral_common's validator) and Mistral's chat templates take only ids of exactly
// nine characters of [a-zA-Z0-9] (wire::NineCharToolIds).
inline constexpr qsizetype kNineCharToolIdLength = 9;

// pi keeps a Responses function call's id as "call_id|item_id", the item id being the call's
// output item ("fc_…"): the call id is the part before the bar. Any other id, one with a bar
// included ("call_1|a" from another server), is its own call id.
QString callIdOf(const QString &toolCallId);

// Gemini's signature on a Chat tool call, where Google's OpenAI-compatible endpoint puts it (and the
// gateway's Chat answers): the call's `extra_content.google.thought_signature`; "" when it has none.
QString googleCallSignature(const rj::Value *call);

// A tool call id as an API with a length limit accepts it: pi's form becomes its call id; an
// id still over `maxLength` keeps its start and ends in a hash of the whole id, so the call and
// its result still pair and two long ids that share a prefix stay apart. Shorter ids pass
// unchanged.
QString boundedToolCallId(const QString &id, qsizetype maxLength);

// True when `id` is nine characters of [a-zA-Z0-9].
bool isNineCharToolId(QStringView id);
bool isNineCharToolId(std::string_view id); // UTF-8
// Nine characters of [a-zA-Z0-9] made from a hash of `id` (SHA-256, read as base 62): the same for
// the same id, in every request. `attempt` > 0 gives another, for an id whose first is taken.
QString nineCharToolId(const QString &id, int attempt = 0);

// An id as Messages accepts it: every other character becomes "_", a longer id is bounded as
// above, and an empty one gets a fixed name. A valid id passes unchanged. Applied wherever an
// Anthropic client or upstream gets an id another API made.
QString anthropicToolId(const QString &id);
// True when `id` (UTF-8) is one Messages accepts as it is: what anthropicToolId leaves unchanged.
bool isAnthropicToolId(std::string_view id);

// An id as a Chat or Responses client gets it in an answer: unchanged within the API's limit,
// else bounded as boundedToolCallId does. The client sends it back as it got it, and a
// same-API request goes up as the client wrote it: an id over the limit would be refused by
// the next server of that API (a turn another API answered, with its longer ids).
QString clientToolCallId(const QString &id, qsizetype maxLength);

// `id`, or when `taken` has it the first of "<id>_2", "<id>_3", … that it has not, kept within
// `maxLength`. One scheme for both directions: an Anthropic client is never given an id its
// conversation already holds (a Chat server that names every turn's call "call_0"), and a
// history that holds repeats anyway is made unique the same way on its way to Messages.
// `nextSuffix` remembers where each search stopped, so that it goes on from there: the caller keeps
// one per `taken` set, which only grows, and N repeats of ids cost N steps, not N² (a history of
// thousands of "call_0" calls, or an answer of thousands of calls under one id, froze the engine
// thread for seconds). It is required: the callers that left it out were quadratic again.
QString uniqueToolId(const QString &id, const QSet<QString> &taken, qsizetype maxLength,
                     QHash<QString, int> &nextSuffix);
// How many ids uniqueToolId has looked up in a `taken` set on this thread so far: what renaming
// costs, as a test counts it.
qint64 uniqueToolIdLookups();

// An id for a call its upstream named by none (Gemini; an OpenAI-compatible server that sends
// `"id": ""` or no id, a Responses-compatible one with `"call_id": ""`): "call_" and 24 hex
// digits, unique per call and valid in every API. Every client is told it, and a call and its
// result pair by it in every later turn, whichever API answers.
QString madeUpToolCallId();

// The same form for a call a client's history names by none (Chat's legacy `function_call`, a
// call of such a server the client kept as it came), made from the call's place in the history
// (its message's index and its own): every turn of the conversation names it alike, so a
// provider's prompt cache still matches the turns before.
QString historyToolCallId(qsizetype messageIndex, qsizetype callIndex);

} // namespace sw::wire
