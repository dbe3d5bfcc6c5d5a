#pragma once
// Helpers for the wire-format tests: test data files, SSE transcripts, event builders.

#include "core/model/chat.h"
#include "core/upstream/sse_reader.h"
#include "core/upstream/upstream_adapter.h"

#include <QByteArray>
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

// Splits an LF-framed SSE transcript into events (test data only; the product uses SseReader).
QList<upstream::SseEvent> splitSse(const QByteArray &text);

// Feeds every event of the transcript, then finish().
QList<model::StreamEvent> decodeTranscript(upstream::StreamDecoder &decoder, const QByteArray &sse);

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
