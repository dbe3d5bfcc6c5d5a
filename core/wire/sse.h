#pragma once
// Server-sent event framing as every streaming API uses it.

#include <QByteArray>
#include <QByteArrayView>
#include <QJsonObject>

namespace sw::wire {

// One SSE frame: "data: <json>\n\n", or "event: <name>\ndata: <json>\n\n" when name is given.
QByteArray sseFrame(const QJsonObject &object, QByteArrayView eventName = {});

} // namespace sw::wire
