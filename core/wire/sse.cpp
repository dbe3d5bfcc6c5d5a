#include "core/wire/sse.h"

#include "core/wire/json.h"

namespace sw::wire {

QByteArray sseFrame(const QJsonObject &object, QByteArrayView eventName) {
    QByteArray out;
    if (!eventName.isEmpty()) {
        out += "event: ";
        out += eventName;
        out += '\n';
    }
    out += "data: ";
    out += compactJson(object);
    out += "\n\n";
    return out;
}

QByteArray sseFrameOfText(QByteArrayView data, QByteArrayView eventName) {
    QByteArray out;
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
