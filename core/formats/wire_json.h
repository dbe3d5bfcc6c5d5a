#pragma once

#include "formats/inbound_codec.h"
// Small JSON helpers shared by the wire codecs and upstream adapters.

#include <QByteArray>
#include <QJsonObject>
#include <QJsonValue>
#include <QString>
#include <optional>

namespace sw::formats {

QByteArray compactJson(const QJsonObject &object);
// One SSE frame: "data: <json>\n\n", or "event: <name>\ndata: <json>\n\n" when name is given.
QByteArray sseFrame(const QJsonObject &object, QByteArrayView eventName = {});

// "data:image/png;base64,AAAA" -> mime + base64 payload. False for anything else.
bool splitDataUri(const QString &uri, QString *mimeType, QByteArray *base64);
QString makeDataUri(const QString &mimeType, const QByteArray &base64);

// Text of a JSON value that may be a string or an array of {type:"text", text} parts.
QString textOfContent(const QJsonValue &content);

// The longest identifier (model name, Idempotency-Key, ...) the gateway accepts from a client.
inline constexpr int kMaxIdentifierBytes = 256;
// Why `value` cannot be an identifier the gateway stores or echoes (over kMaxIdentifierBytes
// in UTF-8, or a control character), or nullopt when it can. The reason never quotes the value.
std::optional<QString> identifierProblem(const QString &value);

// The start every inbound decode shares: the body must be a JSON object. On
// failure fills *error with a 400 naming what is wrong and returns nullopt.
// Model names ("model", pi's "modelId" and "model.id") must pass identifierProblem().
// With requireModel, "model" must also be a non-empty string (copied to .model).
std::optional<ParsedRequest> beginDecode(const QByteArray &body, model::GatewayError *error, bool requireModel = true);
// Sets *error to a 400 invalid-request error with `message`; returns false so a
// validating helper can `return rejectRequest(...)`.
bool rejectRequest(model::GatewayError *error, const QString &message);
// The same, for a decode that gives up: returns nullopt.
std::optional<ParsedRequest> rejected(model::GatewayError *error, const QString &message);

} // namespace sw::formats
