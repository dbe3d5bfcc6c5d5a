#pragma once
// Turns a request to a simulated provider into that API's answer bytes: the
// request is decoded with the inbound codec of the same API (Google: the Google
// adapter's reader), the demo brain replies, and the events are encoded with that
// codec's stream encoder or encodeResponse (Google: the adapter's writer). The
// fake thus speaks exactly the wire format the gateway's own codecs define.

#include "core/demo/fake_upstream.h"
#include "core/model/chat.h"

#include <QByteArray>
#include <QList>

namespace sw::demo {

struct DemoReply {
    int status = 200; // 400 when the request body did not decode (json then holds the API's error)
    bool stream = true;
    QList<QByteArray> frames;   // complete SSE frames, in order (stream)
    int firstContentFrame = -1; // index of the frame carrying the first meaningful delta
    QByteArray json;            // full answer (non-stream) or the error body
    // Stream: the API's in-band error as it follows frames[0..firstContentFrame] from
    // the same encoder (Responses numbers its events: the count continues).
    QByteArray inBandErrorAfterContent;
};

DemoReply buildDemoReply(wire::Api api, const RecordedRequest &request, const QString &label);
// The same, from already decoded input.
DemoReply encodeDemoReply(wire::Api api, const QList<model::StreamEvent> &events, bool stream,
                          const QString &modelName);

// The API's in-band stream error event (complete SSE frames).
QByteArray demoInBandError(wire::Api api, const QString &message);
// The API's JSON error body for an HTTP error status.
QByteArray demoErrorBody(wire::Api api, int status);

} // namespace sw::demo
