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

} // namespace sw::wire
