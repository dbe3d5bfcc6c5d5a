#pragma once
// Turns a request to a simulated provider into that API's answer bytes: the
// request is decoded (with the inbound codec when linked, else a small built-in
// reader), the demo brain replies, and the events are encoded in the API's
// stream format (codec stream encoder when linked; built-in otherwise and
// always for google-generative-ai, which has no inbound codec).

#include "demo/fake_upstream.h"
#include "model/chat.h"

#include <QByteArray>
#include <QList>

namespace sw::demo {

struct DemoReply {
    bool stream = true;
    QList<QByteArray> frames;   // complete SSE frames, in order (stream)
    int firstContentFrame = -1; // index of the frame carrying the first meaningful delta
    QByteArray json;            // full answer (non-stream)
};

// True when the inbound codecs are linked into this binary.
bool demoCodecsAvailable();

DemoReply buildDemoReply(DemoApi api, const RecordedRequest &request, const QString &label);
// The same, from already decoded input (used by the built-in encoders' tests).
DemoReply encodeDemoReply(DemoApi api, const QList<model::StreamEvent> &events, bool stream, const QString &modelName);

// The API's in-band stream error event (a complete SSE frame).
QByteArray demoInBandError(DemoApi api, const QString &message);
// The API's JSON error body for an HTTP error status.
QByteArray demoErrorBody(DemoApi api, int status);

} // namespace sw::demo
