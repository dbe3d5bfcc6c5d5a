#pragma once
// JSON vocabulary every API shares: compact serialisation, data: URIs (the text of a content
// value, read from a parsed body, is rj::textOfContent).

#include <QByteArray>
#include <QJsonObject>
#include <QJsonValue>
#include <QString>

namespace sw::wire {

QByteArray compactJson(const QJsonObject &object);

// "data:image/png;base64,AAAA" -> mime + base64 payload. False for anything else.
bool splitDataUri(const QString &uri, QString *mimeType, QByteArray *base64);
QString makeDataUri(const QString &mimeType, const QByteArray &base64);

} // namespace sw::wire
