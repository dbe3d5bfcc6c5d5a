#pragma once
// JSON vocabulary every API shares: compact serialisation, data: URIs (the text of a content
// value, read from a parsed body, is rj::textOfContent).

#include <QByteArray>
#include <QJsonObject>
#include <QJsonValue>
#include <QString>

namespace sw::wire {

// Compact, as Qt writes it, except that a lone surrogate is U+FFFD (JsonWriter::setWellFormedText).
QByteArray compactJson(const QJsonObject &object);

// A media type as the APIs spell it: lower case (clients write "image/PNG"), and "image/jpg"
// or "image/pjpeg" as "image/jpeg". Anthropic takes exactly image/jpeg, image/png, image/gif
// and image/webp and refuses any other spelling with a 400.
QString normalizedMediaType(const QString &mediaType);
// The image type `base64`'s first bytes say (PNG, JPEG, GIF, WebP) when `declared` is an image
// type and the bytes are one of those four; otherwise `declared`. OpenAI reads the bytes and takes a
// JPEG sent as image/png; Messages refuses it ("the image appears to be a image/jpeg image") with a
// 400 that would end the chain on every later turn that carries the image.
QString sniffedImageType(const QString &declared, const QByteArray &base64);

// "data:image/png;base64,AAAA" -> mime (normalizedMediaType) + base64 payload. False for
// anything else.
bool splitDataUri(const QString &uri, QString *mimeType, QByteArray *base64);
QString makeDataUri(const QString &mimeType, const QByteArray &base64);

} // namespace sw::wire
