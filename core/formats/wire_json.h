#pragma once
// Small JSON helpers shared by the wire codecs and upstream adapters.

#include <QByteArray>
#include <QJsonObject>
#include <QJsonValue>
#include <QString>

namespace sw::formats {

QByteArray compactJson(const QJsonObject &object);
// One SSE frame: "data: <json>\n\n", or "event: <name>\ndata: <json>\n\n" when name is given.
QByteArray sseFrame(const QJsonObject &object, QByteArrayView eventName = {});

// "data:image/png;base64,AAAA" -> mime + base64 payload. False for anything else.
bool splitDataUri(const QString &uri, QString *mimeType, QByteArray *base64);
QString makeDataUri(const QString &mimeType, const QByteArray &base64);

// Text of a JSON value that may be a string or an array of {type:"text", text} parts.
QString textOfContent(const QJsonValue &content);

} // namespace sw::formats
