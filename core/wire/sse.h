#pragma once
// Server-sent event framing as every streaming API uses it.

#include <QByteArray>
#include <QByteArrayView>
#include <QJsonObject>

namespace sw::wire {

// One SSE frame: "data: <json>\n\n", or "event: <name>\ndata: <json>\n\n" when name is given.
QByteArray sseFrame(const QJsonObject &object, QByteArrayView eventName = {});
// The same frame for text already serialised. Each line of `data` becomes its own "data:" line, so
// no byte of it can end the frame early or start another event (the reader joins them with "\n").
QByteArray sseFrameOfText(QByteArrayView data, QByteArrayView eventName = {});

} // namespace sw::wire
