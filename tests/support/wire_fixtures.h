#pragma once
// Helpers for the wire-format tests: test data files, SSE transcripts, event builders.

#include "core/model/chat.h"
#include "core/upstream/sse_reader.h"
#include "core/upstream/upstream_adapter.h"

#include <QByteArray>
#include <QJsonArray>
#include <QString>

namespace sw::test {

QByteArray readFileBytes(const QString &path); // empty when missing

// `request` as if the client had spoken `api`: what an adapter's same-API passthrough keys on.
inline model::ChatRequest spokenIn(model::ChatRequest request, wire::Api api) {
    request.sourceApi = api;
    return request;
}
#ifdef SWITCHMAN_TEST_DATA // defined for test executables only
inline QByteArray readTestData(const QString &name) {
    return readFileBytes(QStringLiteral(SWITCHMAN_TEST_DATA "/") + name);
}
#endif

// A numbered word of a long run ("u000042"), by which a merged turn shows which part sits where.
QString runWord(const char *prefix, int i);
// `users` user turns, then `answers` assistant turns, each one numbered word (runWord "u" and "a").
void appendRoleRuns(model::ChatRequest &request, int users, int answers);
// Where the texts of `parts` ({"text": …} each) stop being runWord(prefix, 0, 1, …): empty when none does.
QString runOutOfPlace(const QJsonArray &parts, const char *prefix);

// An Anthropic client's structured output and strict tool, as its zodOutputFormat writes one: `note`
// is optional (not in required) unless `noteRequired`, which Messages takes and OpenAI's strict mode refuses.
QByteArray anthropicStrictSchemas(bool noteRequired);

// Splits an LF-framed SSE transcript into events (test data only; the product uses SseReader).
QList<upstream::SseEvent> splitSse(const QByteArray &text);

// Feeds every event of the transcript, then finish().
QList<model::StreamEvent> decodeTranscript(upstream::StreamDecoder &decoder, const QByteArray &sse);

// What the last event of `sse` made when fed after the others: its events, and whether the
// decoder refused it whole (lastWasUnreadable: a same-API stream does not relay it).
struct LastFrame {
    QList<model::StreamEvent> events;
    bool unreadable = false;
};
LastFrame feedLastFrame(upstream::StreamDecoder &decoder, const QByteArray &sse);

// Tool call names and ids no upstream may give (SPEC 10, probe T3), as JSON string contents:
// an ANSI escape, NUL and BEL, CR LF, U+202E (escaped and as UTF-8), an invisible U+2066, 300 bytes.
QList<QByteArray> unechoableToolCallNames();
// What the decoders say of a frame that names a tool call with one of them: no name in it.
inline constexpr const char *kUnechoableToolCallMessage =
    "the upstream gave a tool call a name or id over 256 bytes or with a control character";
// Empty when `f` is what a decoder makes of such a frame: the frame not relayed (when
// `relayable`, a same-API stream would relay it otherwise), nothing of it read first, and one
// Error of a 502 invalid_response with kUnechoableToolCallMessage, so the next candidate answers.
// Otherwise what differs.
QString unechoableToolCallProblem(const LastFrame &f, bool relayable = true);

// Compares SSE output frame by frame: exact framing and event names, JSON payloads
// compared as JSON (key order is not significant to any client). Empty when equal.
QString sseDifference(const QByteArray &actual, const QByteArray &expected);

// Thinking (signature "sig-abc"), text "Checking now.", tool call get_weather{"location":"Paris"},
// done with toolUse; usage input 472, cacheRead 2048, output 89. The golden encoder outputs
// tests/data/*_stream_golden.sse are this stream.
QList<model::StreamEvent> sampleAssistantStream();
// The same answer with its tool call named `toolCallId`; *callBlock (when given) is the call as it ended.
QList<model::StreamEvent> sampleAssistantStream(const QString &toolCallId, model::ContentBlock *callBlock);

model::StreamEvent makeEvent(model::EventType type, int contentIndex = -1, const QString &delta = {});

} // namespace sw::test
