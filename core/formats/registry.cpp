// The inbound format registry: one shared, stateless codec per format.
#include "formats/anthropic_messages_codec.h"
#include "formats/inbound_codec.h"
#include "formats/openai_chat_codec.h"
#include "formats/openai_responses_codec.h"
#include "formats/pi_native_codec.h"

#include <QtGlobal>

namespace sw::formats {

const InboundCodec &codecFor(InboundFormat f) {
    static const OpenAIChatCodec openAIChat;
    static const AnthropicMessagesCodec anthropicMessages;
    static const OpenAIResponsesCodec openAIResponses;
    static const PiNativeCodec piNative;
    switch (f) {
    case InboundFormat::OpenAIChat:
        return openAIChat;
    case InboundFormat::AnthropicMessages:
        return anthropicMessages;
    case InboundFormat::OpenAIResponses:
        return openAIResponses;
    case InboundFormat::PiNative:
        return piNative;
    }
    qFatal("formats::codecFor: no codec registered for format %s", qPrintable(formatName(f)));
}

QString sameApiName(InboundFormat f) {
    switch (f) {
    case InboundFormat::OpenAIChat:
        return QStringLiteral("openai-completions");
    case InboundFormat::AnthropicMessages:
        return QStringLiteral("anthropic-messages");
    case InboundFormat::OpenAIResponses:
        return QStringLiteral("openai-responses");
    case InboundFormat::PiNative:
        break;
    }
    return {};
}

QString formatName(InboundFormat f) {
    switch (f) {
    case InboundFormat::OpenAIChat:
        return QStringLiteral("openai-chat");
    case InboundFormat::AnthropicMessages:
        return QStringLiteral("anthropic-messages");
    case InboundFormat::OpenAIResponses:
        return QStringLiteral("openai-responses");
    case InboundFormat::PiNative:
        return QStringLiteral("pi");
    }
    return {};
}

} // namespace sw::formats

namespace sw::formats {

QStringList ParsedRequest::customToolNames() const {
    QStringList names;
    for (const model::Tool &t : context.tools)
        if (t.custom)
            names << t.name;
    return names;
}

} // namespace sw::formats
