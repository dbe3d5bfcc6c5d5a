// The inbound format registry: one shared, stateless codec per client route API.
#include "core/formats/anthropic_messages_codec.h"
#include "core/formats/inbound_codec.h"
#include "core/formats/openai_chat_codec.h"
#include "core/formats/openai_responses_codec.h"
#include "core/formats/pi_native_codec.h"

#include <QtGlobal>

namespace sw::formats {

const InboundCodec &codecFor(wire::Api api) {
    static const OpenAIChatCodec openAIChat;
    static const AnthropicMessagesCodec anthropicMessages;
    static const OpenAIResponsesCodec openAIResponses;
    static const PiNativeCodec piNative;
    switch (api) {
    case wire::Api::OpenAICompletions:
        return openAIChat;
    case wire::Api::AnthropicMessages:
        return anthropicMessages;
    case wire::Api::OpenAIResponses:
        return openAIResponses;
    case wire::Api::Pi:
        return piNative;
    case wire::Api::Google:
        break;
    }
    qFatal("formats::codecFor: no client route speaks %s", qPrintable(QString(wire::apiName(api))));
}

QString formatName(wire::Api api) {
    // The Chat route keeps its own name in telemetry; the others are their API's name.
    if (api == wire::Api::OpenAICompletions)
        return QStringLiteral("openai-chat");
    return wire::apiName(api);
}

} // namespace sw::formats
