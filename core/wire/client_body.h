#pragma once
// A decoded request's body as the client sent it: parsed once at decode, then read by the
// upstream adapters (same-API passthrough) and the capability checks.

#include "core/model/chat_request.h"
#include "core/wire/rapid_json.h"

#include <QByteArrayView>
#include <QJsonObject>
#include <memory>

namespace sw::wire {

// The body parsed as QJsonDocument::fromJson would read it (rj::ParsedJson's contract), or
// nullptr when Qt would refuse the text, or when it holds more values than
// rj::ParsedJson::maxValuesFor its size (then *tooManyValues is set).
std::shared_ptr<const rj::ParsedJson> parseClientBody(QByteArrayView body, bool *tooManyValues = nullptr);

// The request's body object; nullptr for a request built in code, or a body that was no object.
inline const rj::Value *clientBody(const model::ChatRequest &request) {
    return request.json ? request.json->object() : nullptr;
}

// The same object in Qt's JSON, for the rare same-API path that writes the body whole.
inline QJsonObject clientBodyQt(const model::ChatRequest &request) {
    return rj::toQtObject(clientBody(request));
}

} // namespace sw::wire
