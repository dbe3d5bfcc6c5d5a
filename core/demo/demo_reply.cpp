#include "core/demo/demo_reply.h"

#include "core/demo/demo_brain.h"
#include "core/formats/inbound_codec.h"
#include "core/upstream/google_adapter.h"
#include "core/wire/json.h"
#include "core/wire/sse.h"

namespace sw::demo {

namespace {

using model::EventType;
using model::StreamEvent;
using upstream::GoogleAdapter;

// The codec of the same API; nullptr for Google, which has no inbound format.
const formats::InboundCodec *codecFor(wire::Api api) {
    for (auto f : {wire::Api::OpenAICompletions, wire::Api::AnthropicMessages, wire::Api::OpenAIResponses})
        if (f == api)
            return &formats::codecFor(f);
    return nullptr;
}

formats::EncodeInfo encodeInfo(const QString &model) {
    formats::EncodeInfo info;
    info.responseId = QStringLiteral("demo-response");
    info.model = model;
    info.includeUsage = true; // the gateway always asks for usage
    return info;
}

int firstMeaningful(const QList<StreamEvent> &events) {
    for (int i = 0; i < events.size(); ++i)
        if (events[i].isMeaningful())
            return i;
    return -1;
}

} // namespace

DemoReply encodeDemoReply(wire::Api api, const QList<StreamEvent> &events, bool stream, const QString &modelName) {
    DemoReply reply;
    reply.stream = stream;
    const QString model = modelName.isEmpty() ? QStringLiteral("demo-model") : modelName;
    const formats::InboundCodec *codec = codecFor(api);
    if (!stream) {
        const model::AssistantMessage message = assembleMessage(events);
        reply.json = codec ? codec->encodeResponse(message, encodeInfo(model)) : GoogleAdapter::encodeResponse(message);
        return reply;
    }
    const int meaningful = firstMeaningful(events);
    if (!codec) {
        for (int i = 0; i < events.size(); ++i) {
            const QList<QByteArray> frames = GoogleAdapter::encodeStream({events[i]});
            if (i == meaningful && !frames.isEmpty())
                reply.firstContentFrame = int(reply.frames.size());
            reply.frames << frames;
        }
        reply.inBandErrorAfterContent = demoInBandError(api, QStringLiteral("Overloaded"));
        return reply;
    }
    auto encoder = codec->makeStreamEncoder(encodeInfo(model));
    auto cut = codec->makeStreamEncoder(encodeInfo(model)); // replays up to the first content, then fails
    for (int i = 0; i < events.size(); ++i) {
        const QByteArray bytes = encoder->encode(events[i]);
        if (i <= meaningful)
            cut->encode(events[i]);
        if (i == meaningful)
            reply.firstContentFrame = int(reply.frames.size());
        if (!bytes.isEmpty())
            reply.frames << bytes;
    }
    reply.inBandErrorAfterContent = cut->encodeError(
        model::GatewayError::make(529, model::ErrorCategory::Overloaded, QStringLiteral("Overloaded")));
    return reply;
}

DemoReply buildDemoReply(wire::Api api, const RecordedRequest &request, const QString &label) {
    model::ChatRequest in;
    if (const formats::InboundCodec *codec = codecFor(api)) {
        model::GatewayError error;
        auto parsed = codec->decode(request.body, &error);
        if (!parsed) {
            // A real provider refuses a body it cannot read: so does the fake, which
            // makes a malformed converted request visible in tests.
            DemoReply reply;
            reply.status = error.status;
            reply.stream = false;
            reply.json = codec->encodeError(error);
            return reply;
        }
        in = std::move(*parsed);
    } else {
        in = GoogleAdapter::decodeBody(request.body);
        in.stream = request.path.contains(":streamGenerateContent");
        const qsizetype from = request.path.indexOf("/models/") + 8;
        const qsizetype to = request.path.indexOf(':', from);
        if (from >= 8 && to > from)
            in.model = QString::fromUtf8(request.path.mid(from, to - from));
    }
    return encodeDemoReply(api, replyFor(in.context, in.options, label), in.stream, in.model);
}

QByteArray demoInBandError(wire::Api api, const QString &message) {
    const auto error = model::GatewayError::make(529, model::ErrorCategory::Overloaded, message);
    const formats::InboundCodec *codec = codecFor(api);
    if (!codec)
        return wire::sseFrame(GoogleAdapter::errorJson(503, message));
    auto encoder = codec->makeStreamEncoder(encodeInfo(QStringLiteral("demo-model")));
    StreamEvent start;
    start.type = EventType::Start;
    encoder->encode(start); // the stream is already open: no second response.created / message_start
    return encoder->encodeError(error);
}

QByteArray demoErrorBody(wire::Api api, int status) {
    const QString message = QStringLiteral("demo upstream answered %1").arg(status);
    const formats::InboundCodec *codec = codecFor(api);
    if (!codec)
        return wire::compactJson(GoogleAdapter::errorJson(status, message));
    return codec->encodeError(
        model::GatewayError::make(status, model::GatewayError::categoryForStatus(status), message));
}

} // namespace sw::demo
