#pragma once
// Streams a raw-socket upstream sends, and what each client route's stream looks like: shared by
// the tests that script an upstream's bytes (test_stream_bounds, test_upstream_bytes).

#include "hostile_upstream.h"

#include <QByteArray>
#include <QJsonObject>
#include <QString>

namespace sw::test {

// An event-stream answer's head, with Connection: close.
extern const QByteArray kSseHead;

// One Chat chunk of choice 0 with this delta (JSON) and finish_reason (JSON).
QByteArray chatChunk(const QByteArray &delta, const QByteArray &finish = "null");

// Answers every request with `sse` after kSseHead, then closes.
void answerWith(HostileUpstream &up, const QByteArray &sse);

// A streamed request of one user word to `model` in the format of client route `route`
// (/v1/chat/completions, /v1/messages, /v1/responses or /v1/pi/stream).
QJsonObject streamedRouteBody(const QString &route, const QString &model);

// What a successful end of `route`'s stream looks like.
QByteArray successMark(const QString &route);

// QTest data: one row a client route, column "route".
void everyClientRoute();

} // namespace sw::test
