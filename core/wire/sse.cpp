#include "core/wire/sse.h"

#include "core/wire/json.h"

namespace sw::wire {

QByteArray sseFrame(const QJsonObject &object, QByteArrayView eventName) {
    // Compact JSON holds no raw line break, so it is always one data: line.
    return sseFrameOfText(compactJson(object), eventName);
}

QByteArray sseFrameOfText(QByteArrayView data, QByteArrayView eventName) {
    QByteArray out;
    out.reserve(data.size() + eventName.size() + 16);
    if (!eventName.isEmpty()) {
        out += "event: ";
        out += eventName;
        out += '\n';
    }
    qsizetype start = 0;
    for (;;) {
        qsizetype end = start;
        while (end < data.size() && data[end] != '\n' && data[end] != '\r')
            ++end;
        out += "data: ";
        out += data.sliced(start, end - start);
        out += '\n';
        if (end >= data.size())
            break;
        // "\r\n" is one line break, as the reader sees it.
        start = end + ((data[end] == '\r' && end + 1 < data.size() && data[end + 1] == '\n') ? 2 : 1);
    }
    out += '\n';
    return out;
}

} // namespace sw::wire
