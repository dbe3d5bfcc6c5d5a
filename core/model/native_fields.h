#pragma once
// Members of StreamEvent::native / AssistantMessage::native that the upstream decoders and the
// client codecs agree on beyond the API's own answer fields.

namespace sw::model {

// A Chat Completions upstream's usage object (with its *_details) as compact JSON text, in
// the member order and escapes Qt writes (rj::appendCompact): written as it is into a
// same-API answer by OpenAIChatCodec. Kept as text because building a QJsonObject of it for
// every answer cost more than the rest of the answer's encoding. Only a usage object whose
// text comes out byte for byte as JsonWriter writes it (integers, names in ASCII) is kept so;
// any other stays an object under "usage".
inline constexpr const char *kNativeUsageJson = "usage_json";

} // namespace sw::model
