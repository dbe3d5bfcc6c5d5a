#pragma once
// JSON vocabulary every API shares: compact serialisation, data: URIs, text of a content value.

#include <QByteArray>
#include <QJsonObject>
#include <QJsonValue>
#include <QString>

namespace sw::wire {

QByteArray compactJson(const QJsonObject &object);

// "data:image/png;base64,AAAA" -> mime + base64 payload. False for anything else.
bool splitDataUri(const QString &uri, QString *mimeType, QByteArray *base64);
QString makeDataUri(const QString &mimeType, const QByteArray &base64);

// Text of a JSON value that may be a string or an array of {type:"text", text} parts.
QString textOfContent(const QJsonValue &content);

} // namespace sw::wire
