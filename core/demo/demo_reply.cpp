#include "demo/demo_reply.h"

#include "demo/demo_brain.h"
#include "formats/inbound_codec.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>


namespace sw::demo {

namespace {

using model::EventType;
using model::StreamEvent;

QByteArray compact(const QJsonObject &o) {
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

QByteArray frame(const QByteArray &eventName, const QJsonObject &data) {
    QByteArray f;
    if (!eventName.isEmpty())
        f += "event: " + eventName + '\n';
    f += "data: " + compact(data) + "\n\n";
    return f;
}

std::optional<formats::InboundFormat> formatOf(DemoApi api) {
    switch (api) {
    case DemoApi::AnthropicMessages:
        return formats::InboundFormat::AnthropicMessages;
    case DemoApi::OpenAICompletions:
        return formats::InboundFormat::OpenAIChat;
    default:
        return std::nullopt; // no codec yet: the built-in encoder below answers
    }
}

const formats::InboundCodec *codecFor(DemoApi api) {
    if (!demoCodecsAvailable())
        return nullptr;
    const auto f = formatOf(api);
    return f ? &formats::codecFor(*f) : nullptr;
}

// ---- built-in request reading: just what the demo brain looks at ----------

QString joinText(const QJsonValue &content) {
    if (content.isString())
        return content.toString();
    QStringList parts;
    for (const auto &v : content.toArray()) {
        const QJsonObject o = v.toObject();
        if (o.contains(QLatin1String("text")))
            parts << o.value(QLatin1String("text")).toString();
        else if (o.value(QLatin1String("type")).toString() == QLatin1String("tool_result"))
            parts << joinText(o.value(QLatin1String("content")));
    }
    return parts.join(QLatin1Char('\n'));
}

model::Message message(model::Role role, const QString &text) {
    model::Message m;
    m.role = role;
    m.content << model::ContentBlock::makeText(text);
    return m;
}

model::Tool tool(const QJsonObject &o, const char *schemaKey) {
    return model::Tool{o.value(QLatin1String("name")).toString(), o.value(QLatin1String("description")).toString(),
                       o.value(QLatin1String(schemaKey)).toObject()};
}

struct DemoInput {
    model::Context context;
    model::Options options;
    bool stream = false;
    QString model;
};

DemoInput readBuiltin(DemoApi api, const RecordedRequest &request) {
    DemoInput in;
    const QJsonObject body = QJsonDocument::fromJson(request.body).object();
    in.stream = body.value(QLatin1String("stream")).toBool(false);
    in.model = body.value(QLatin1String("model")).toString();
    auto &ctx = in.context;
    switch (api) {
    case DemoApi::AnthropicMessages: {
        ctx.systemPrompt = joinText(body.value(QLatin1String("system")));
        for (const auto &v : body.value(QLatin1String("messages")).toArray()) {
            const QJsonObject m = v.toObject();
            const QJsonValue content = m.value(QLatin1String("content"));
            bool isToolResult = false;
            for (const auto &b : content.toArray())
                isToolResult |= b.toObject().value(QLatin1String("type")).toString() == QLatin1String("tool_result");
            const bool user = m.value(QLatin1String("role")).toString() == QLatin1String("user");
            ctx.messages << message(isToolResult ? model::Role::ToolResult
                                                 : (user ? model::Role::User : model::Role::Assistant),
                                    joinText(content));
        }
        for (const auto &t : body.value(QLatin1String("tools")).toArray())
            ctx.tools << tool(t.toObject(), "input_schema");
        const QJsonObject thinking = body.value(QLatin1String("thinking")).toObject();
        if (thinking.value(QLatin1String("type")).toString() == QLatin1String("enabled"))
            in.options.thinkingBudget = thinking.value(QLatin1String("budget_tokens")).toInt(1024);
        const QJsonObject choice = body.value(QLatin1String("tool_choice")).toObject();
        const QString type = choice.value(QLatin1String("type")).toString();
        in.options.toolChoice = type == QLatin1String("any")    ? QStringLiteral("required")
                                : type == QLatin1String("tool") ? choice.value(QLatin1String("name")).toString()
                                                                : type;
        break;
    }
    case DemoApi::OpenAICompletions: {
        for (const auto &v : body.value(QLatin1String("messages")).toArray()) {
            const QJsonObject m = v.toObject();
            const QString role = m.value(QLatin1String("role")).toString();
            const QString text = joinText(m.value(QLatin1String("content")));
            if (role == QLatin1String("system") || role == QLatin1String("developer"))
                ctx.systemPrompt += text;
            else
                ctx.messages << message(role == QLatin1String("user")   ? model::Role::User
                                        : role == QLatin1String("tool") ? model::Role::ToolResult
                                                                        : model::Role::Assistant,
                                        text);
        }
        for (const auto &t : body.value(QLatin1String("tools")).toArray())
            ctx.tools << tool(t.toObject().value(QLatin1String("function")).toObject(), "parameters");
        in.options.reasoning = body.value(QLatin1String("reasoning_effort")).toString();
        const QJsonValue choice = body.value(QLatin1String("tool_choice"));
        in.options.toolChoice =
            choice.isString()
                ? choice.toString()
                : choice.toObject().value(QLatin1String("function")).toObject().value(QLatin1String("name")).toString();
        break;
    }
    case DemoApi::OpenAIResponses: {
        ctx.systemPrompt = body.value(QLatin1String("instructions")).toString();
        const QJsonValue input = body.value(QLatin1String("input"));
        if (input.isString())
            ctx.messages << message(model::Role::User, input.toString());
        for (const auto &v : input.toArray()) {
            const QJsonObject item = v.toObject();
            const QString type = item.value(QLatin1String("type")).toString();
            if (type == QLatin1String("function_call_output"))
                ctx.messages << message(model::Role::ToolResult, item.value(QLatin1String("output")).toString());
            else if (type == QLatin1String("function_call"))
                ctx.messages << message(model::Role::Assistant, {});
            else
                ctx.messages << message(item.value(QLatin1String("role")).toString() == QLatin1String("assistant")
                                            ? model::Role::Assistant
                                            : model::Role::User,
                                        joinText(item.value(QLatin1String("content"))));
        }
        for (const auto &t : body.value(QLatin1String("tools")).toArray())
            ctx.tools << tool(t.toObject(), "parameters");
        in.options.reasoning =
            body.value(QLatin1String("reasoning")).toObject().value(QLatin1String("effort")).toString();
        const QJsonValue choice = body.value(QLatin1String("tool_choice"));
        in.options.toolChoice =
            choice.isString() ? choice.toString() : choice.toObject().value(QLatin1String("name")).toString();
        break;
    }
    case DemoApi::GoogleGenerativeAI: {
        in.stream = request.path.contains(":streamGenerateContent");
        const int from = request.path.indexOf("/models/") + 8;
        const int to = request.path.indexOf(':', from);
        if (from >= 8 && to > from)
            in.model = QString::fromUtf8(request.path.mid(from, to - from));
        ctx.systemPrompt =
            joinText(body.value(QLatin1String("systemInstruction")).toObject().value(QLatin1String("parts")));
        for (const auto &v : body.value(QLatin1String("contents")).toArray()) {
            const QJsonObject c = v.toObject();
            const QJsonArray parts = c.value(QLatin1String("parts")).toArray();
            bool isResult = false;
            QString resultText;
            for (const auto &p : parts) {
                const QJsonObject fr = p.toObject().value(QLatin1String("functionResponse")).toObject();
                if (!fr.isEmpty()) {
                    isResult = true;
                    const QJsonValue r = fr.value(QLatin1String("response"));
                    resultText = r.toObject().contains(QLatin1String("output"))
                                     ? r.toObject().value(QLatin1String("output")).toString()
                                     : QString::fromUtf8(compact(r.toObject()));
                }
            }
            const bool user = c.value(QLatin1String("role")).toString() != QLatin1String("model");
            ctx.messages << message(isResult ? model::Role::ToolResult
                                    : user   ? model::Role::User
                                             : model::Role::Assistant,
                                    isResult ? resultText : joinText(parts));
        }
        for (const auto &t : body.value(QLatin1String("tools")).toArray())
            for (const auto &d : t.toObject().value(QLatin1String("functionDeclarations")).toArray())
                ctx.tools << tool(d.toObject(), "parameters");
        const QJsonObject thinking =
            body.value(QLatin1String("generationConfig")).toObject().value(QLatin1String("thinkingConfig")).toObject();
        if (thinking.contains(QLatin1String("thinkingBudget")))
            in.options.thinkingBudget = thinking.value(QLatin1String("thinkingBudget")).toInt();
        break;
    }
    case DemoApi::Unknown:
        break;
    }
    return in;
}

// ---- built-in stream encoders ---------------------------------------------

const char *anthropicStop(model::StopReason r) {
    return r == model::StopReason::ToolUse ? "tool_use" : r == model::StopReason::Length ? "max_tokens" : "end_turn";
}

const char *openaiFinish(model::StopReason r) {
    return r == model::StopReason::ToolUse ? "tool_calls" : r == model::StopReason::Length ? "length" : "stop";
}

QList<QByteArray> encodeAnthropic(const QList<StreamEvent> &events, const QString &modelName) {
    QList<QByteArray> out;
    qint64 input = 0;
    for (const auto &e : events)
        if (e.type == EventType::Done)
            input = e.usage.input;
    for (const auto &e : events) {
        auto block = [&](const QByteArray &type, QJsonObject o) {
            o.insert(QLatin1String("type"), QString::fromLatin1(type));
            o.insert(QLatin1String("index"), e.contentIndex);
            return o;
        };
        switch (e.type) {
        case EventType::Start:
            out << frame(
                "message_start",
                {{"type", "message_start"},
                 {"message", QJsonObject{{"id", "msg_demo"},
                                         {"type", "message"},
                                         {"role", "assistant"},
                                         {"model", modelName},
                                         {"content", QJsonArray{}},
                                         {"stop_reason", QJsonValue()},
                                         {"usage", QJsonObject{{"input_tokens", input}, {"output_tokens", 1}}}}}});
            break;
        case EventType::TextStart:
            out << frame(
                "content_block_start",
                block("content_block_start", {{"content_block", QJsonObject{{"type", "text"}, {"text", ""}}}}));
            break;
        case EventType::ThinkingStart:
            out << frame(
                "content_block_start",
                block("content_block_start", {{"content_block", QJsonObject{{"type", "thinking"}, {"thinking", ""}}}}));
            break;
        case EventType::ToolCallStart:
            out << frame("content_block_start",
                         block("content_block_start", {{"content_block", QJsonObject{{"type", "tool_use"},
                                                                                     {"id", e.block.toolCallId},
                                                                                     {"name", e.block.toolName},
                                                                                     {"input", QJsonObject{}}}}}));
            break;
        case EventType::TextDelta:
            out << frame(
                "content_block_delta",
                block("content_block_delta", {{"delta", QJsonObject{{"type", "text_delta"}, {"text", e.delta}}}}));
            break;
        case EventType::ThinkingDelta:
            out << frame("content_block_delta",
                         block("content_block_delta",
                               {{"delta", QJsonObject{{"type", "thinking_delta"}, {"thinking", e.delta}}}}));
            break;
        case EventType::ToolCallDelta:
            out << frame("content_block_delta",
                         block("content_block_delta",
                               {{"delta", QJsonObject{{"type", "input_json_delta"}, {"partial_json", e.delta}}}}));
            break;
        case EventType::ThinkingEnd:
            if (!e.block.signature.isEmpty())
                out << frame("content_block_delta",
                             block("content_block_delta", {{"delta", QJsonObject{{"type", "signature_delta"},
                                                                                 {"signature", e.block.signature}}}}));
            Q_FALLTHROUGH();
        case EventType::TextEnd:
        case EventType::ToolCallEnd:
            out << frame("content_block_stop", block("content_block_stop", {}));
            break;
        case EventType::Done:
            out << frame("message_delta", {{"type", "message_delta"},
                                           {"delta", QJsonObject{{"stop_reason", anthropicStop(e.reason)},
                                                                 {"stop_sequence", QJsonValue()}}},
                                           {"usage", QJsonObject{{"output_tokens", e.usage.output}}}});
            out << frame("message_stop", {{"type", "message_stop"}});
            break;
        default:
            break;
        }
    }
    return out;
}

QList<QByteArray> encodeOpenAIChat(const QList<StreamEvent> &events, const QString &modelName) {
    QList<QByteArray> out;
    auto chunk = [&](const QJsonObject &delta, const QJsonValue &finish) {
        return frame({},
                     {{"id", "chatcmpl-demo"},
                      {"object", "chat.completion.chunk"},
                      {"created", 0},
                      {"model", modelName},
                      {"choices", QJsonArray{QJsonObject{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}});
    };
    for (const auto &e : events) {
        switch (e.type) {
        case EventType::Start:
            out << chunk({{"role", "assistant"}, {"content", ""}}, QJsonValue());
            break;
        case EventType::TextDelta:
            out << chunk({{"content", e.delta}}, QJsonValue());
            break;
        case EventType::ThinkingDelta:
            out << chunk({{"reasoning_content", e.delta}}, QJsonValue());
            break;
        case EventType::ToolCallStart:
            out << chunk(
                {{"tool_calls",
                  QJsonArray{QJsonObject{{"index", 0},
                                         {"id", e.block.toolCallId},
                                         {"type", "function"},
                                         {"function", QJsonObject{{"name", e.block.toolName}, {"arguments", ""}}}}}}},
                QJsonValue());
            break;
        case EventType::ToolCallDelta:
            out << chunk({{"tool_calls",
                           QJsonArray{QJsonObject{{"index", 0}, {"function", QJsonObject{{"arguments", e.delta}}}}}}},
                         QJsonValue());
            break;
        case EventType::Done:
            out << chunk({}, QString::fromLatin1(openaiFinish(e.reason)));
            out << frame({}, {{"id", "chatcmpl-demo"},
                              {"object", "chat.completion.chunk"},
                              {"created", 0},
                              {"model", modelName},
                              {"choices", QJsonArray{}},
                              {"usage", QJsonObject{{"prompt_tokens", e.usage.input},
                                                    {"completion_tokens", e.usage.output},
                                                    {"total_tokens", e.usage.input + e.usage.output}}}});
            out << QByteArray("data: [DONE]\n\n");
            break;
        default:
            break;
        }
    }
    return out;
}

QList<QByteArray> encodeResponses(const QList<StreamEvent> &events, const QString &modelName) {
    QList<QByteArray> out;
    int seq = 0;
    QJsonArray output;
    auto ev = [&](const char *type, QJsonObject o) {
        o.insert(QLatin1String("type"), QLatin1String(type));
        o.insert(QLatin1String("sequence_number"), seq++);
        out << frame(type, o);
    };
    auto response = [&](const char *status, const model::Usage *usage) {
        QJsonObject r{
            {"id", "resp_demo"}, {"object", "response"}, {"model", modelName}, {"status", status}, {"output", output}};
        if (usage)
            r.insert(QLatin1String("usage"), QJsonObject{{"input_tokens", usage->input},
                                                         {"output_tokens", usage->output},
                                                         {"total_tokens", usage->input + usage->output}});
        return r;
    };
    for (const auto &e : events) {
        const int oi = e.contentIndex;
        const QString itemId = QStringLiteral("item_%1").arg(oi);
        switch (e.type) {
        case EventType::Start:
            ev("response.created", {{"response", response("in_progress", nullptr)}});
            ev("response.in_progress", {{"response", response("in_progress", nullptr)}});
            break;
        case EventType::TextStart:
            ev("response.output_item.added", {{"output_index", oi},
                                              {"item", QJsonObject{{"type", "message"},
                                                                   {"id", itemId},
                                                                   {"role", "assistant"},
                                                                   {"status", "in_progress"},
                                                                   {"content", QJsonArray{}}}}});
            ev("response.content_part.added", {{"item_id", itemId},
                                               {"output_index", oi},
                                               {"content_index", 0},
                                               {"part", QJsonObject{{"type", "output_text"}, {"text", ""}}}});
            break;
        case EventType::TextDelta:
            ev("response.output_text.delta",
               {{"item_id", itemId}, {"output_index", oi}, {"content_index", 0}, {"delta", e.delta}});
            break;
        case EventType::TextEnd: {
            const QJsonObject part{{"type", "output_text"}, {"text", e.block.text}, {"annotations", QJsonArray{}}};
            ev("response.output_text.done",
               {{"item_id", itemId}, {"output_index", oi}, {"content_index", 0}, {"text", e.block.text}});
            ev("response.content_part.done",
               {{"item_id", itemId}, {"output_index", oi}, {"content_index", 0}, {"part", part}});
            const QJsonObject item{{"type", "message"},
                                   {"id", itemId},
                                   {"role", "assistant"},
                                   {"status", "completed"},
                                   {"content", QJsonArray{part}}};
            output.append(item);
            ev("response.output_item.done", {{"output_index", oi}, {"item", item}});
            break;
        }
        case EventType::ThinkingStart:
            ev("response.output_item.added",
               {{"output_index", oi},
                {"item", QJsonObject{{"type", "reasoning"}, {"id", itemId}, {"summary", QJsonArray{}}}}});
            break;
        case EventType::ThinkingDelta:
            ev("response.reasoning_summary_text.delta",
               {{"item_id", itemId}, {"output_index", oi}, {"summary_index", 0}, {"delta", e.delta}});
            break;
        case EventType::ThinkingEnd: {
            const QJsonObject item{
                {"type", "reasoning"},
                {"id", itemId},
                {"encrypted_content", e.block.signature},
                {"summary", QJsonArray{QJsonObject{{"type", "summary_text"}, {"text", e.block.text}}}}};
            output.append(item);
            ev("response.output_item.done", {{"output_index", oi}, {"item", item}});
            break;
        }
        case EventType::ToolCallStart:
            ev("response.output_item.added", {{"output_index", oi},
                                              {"item", QJsonObject{{"type", "function_call"},
                                                                   {"id", itemId},
                                                                   {"call_id", e.block.toolCallId},
                                                                   {"name", e.block.toolName},
                                                                   {"arguments", ""},
                                                                   {"status", "in_progress"}}}});
            break;
        case EventType::ToolCallDelta:
            ev("response.function_call_arguments.delta",
               {{"item_id", itemId}, {"output_index", oi}, {"delta", e.delta}});
            break;
        case EventType::ToolCallEnd: {
            ev("response.function_call_arguments.done",
               {{"item_id", itemId}, {"output_index", oi}, {"arguments", e.block.argumentsJson}});
            const QJsonObject item{{"type", "function_call"},
                                   {"id", itemId},
                                   {"call_id", e.block.toolCallId},
                                   {"name", e.block.toolName},
                                   {"arguments", e.block.argumentsJson},
                                   {"status", "completed"}};
            output.append(item);
            ev("response.output_item.done", {{"output_index", oi}, {"item", item}});
            break;
        }
        case EventType::Done:
            ev("response.completed",
               {{"response", response(e.reason == model::StopReason::Length ? "incomplete" : "completed", &e.usage)}});
            break;
        default:
            break;
        }
    }
    return out;
}

QList<QByteArray> encodeGoogle(const QList<StreamEvent> &events) {
    QList<QByteArray> out;
    auto chunk = [&](const QJsonArray &parts) {
        return frame(
            {}, {{"candidates", QJsonArray{QJsonObject{{"content", QJsonObject{{"role", "model"}, {"parts", parts}}},
                                                       {"index", 0}}}}});
    };
    for (const auto &e : events) {
        switch (e.type) {
        case EventType::TextDelta:
            out << chunk({QJsonObject{{"text", e.delta}}});
            break;
        case EventType::ThinkingDelta:
            out << chunk({QJsonObject{{"text", e.delta}, {"thought", true}}});
            break;
        case EventType::ToolCallEnd:
            out << chunk(
                {QJsonObject{{"functionCall", QJsonObject{{"name", e.block.toolName}, {"args", e.block.arguments}}}}});
            break;
        case EventType::Done:
            out << frame(
                {}, {{"candidates",
                      QJsonArray{QJsonObject{
                          {"content", QJsonObject{{"role", "model"}, {"parts", QJsonArray{QJsonObject{{"text", ""}}}}}},
                          {"finishReason", e.reason == model::StopReason::Length ? "MAX_TOKENS" : "STOP"},
                          {"index", 0}}}},
                     {"usageMetadata", QJsonObject{{"promptTokenCount", e.usage.input},
                                                   {"candidatesTokenCount", e.usage.output},
                                                   {"totalTokenCount", e.usage.input + e.usage.output}}}});
            break;
        default:
            break;
        }
    }
    return out;
}

QByteArray googleJson(const model::AssistantMessage &m) {
    QJsonArray parts;
    for (const auto &b : m.content) {
        if (b.type == model::BlockType::Text)
            parts.append(QJsonObject{{"text", b.text}});
        else if (b.type == model::BlockType::Thinking)
            parts.append(QJsonObject{{"text", b.text}, {"thought", true}});
        else if (b.type == model::BlockType::ToolCall)
            parts.append(QJsonObject{{"functionCall", QJsonObject{{"name", b.toolName}, {"args", b.arguments}}}});
    }
    return compact(
        {{"candidates",
          QJsonArray{QJsonObject{{"content", QJsonObject{{"role", "model"}, {"parts", parts}}},
                                 {"finishReason", m.stopReason == model::StopReason::Length ? "MAX_TOKENS" : "STOP"}}}},
         {"usageMetadata", QJsonObject{{"promptTokenCount", m.usage.input},
                                       {"candidatesTokenCount", m.usage.output},
                                       {"totalTokenCount", m.usage.totalTokens()}}}});
}

QByteArray anthropicJson(const model::AssistantMessage &m, const QString &modelName) {
    QJsonArray content;
    for (const auto &b : m.content) {
        if (b.type == model::BlockType::Text)
            content.append(QJsonObject{{"type", "text"}, {"text", b.text}});
        else if (b.type == model::BlockType::Thinking)
            content.append(QJsonObject{{"type", "thinking"}, {"thinking", b.text}, {"signature", b.signature}});
        else if (b.type == model::BlockType::ToolCall)
            content.append(
                QJsonObject{{"type", "tool_use"}, {"id", b.toolCallId}, {"name", b.toolName}, {"input", b.arguments}});
    }
    return compact({{"id", "msg_demo"},
                    {"type", "message"},
                    {"role", "assistant"},
                    {"model", modelName},
                    {"content", content},
                    {"stop_reason", anthropicStop(m.stopReason)},
                    {"stop_sequence", QJsonValue()},
                    {"usage", QJsonObject{{"input_tokens", m.usage.input}, {"output_tokens", m.usage.output}}}});
}

QByteArray openaiChatJson(const model::AssistantMessage &m, const QString &modelName) {
    QString text;
    QString reasoning;
    QJsonArray toolCalls;
    for (const auto &b : m.content) {
        if (b.type == model::BlockType::Text)
            text += b.text;
        else if (b.type == model::BlockType::Thinking)
            reasoning += b.text;
        else if (b.type == model::BlockType::ToolCall)
            toolCalls.append(
                QJsonObject{{"id", b.toolCallId},
                            {"type", "function"},
                            {"function", QJsonObject{{"name", b.toolName}, {"arguments", b.argumentsJson}}}});
    }
    QJsonObject message{{"role", "assistant"}, {"content", text.isEmpty() ? QJsonValue() : QJsonValue(text)}};
    if (!reasoning.isEmpty())
        message.insert(QLatin1String("reasoning_content"), reasoning);
    if (!toolCalls.isEmpty())
        message.insert(QLatin1String("tool_calls"), toolCalls);
    return compact(
        {{"id", "chatcmpl-demo"},
         {"object", "chat.completion"},
         {"created", 0},
         {"model", modelName},
         {"choices",
          QJsonArray{QJsonObject{{"index", 0}, {"message", message}, {"finish_reason", openaiFinish(m.stopReason)}}}},
         {"usage", QJsonObject{{"prompt_tokens", m.usage.input},
                               {"completion_tokens", m.usage.output},
                               {"total_tokens", m.usage.input + m.usage.output}}}});
}

int firstMeaningful(const QList<StreamEvent> &events) {
    for (int i = 0; i < events.size(); ++i)
        if (events[i].isMeaningful())
            return i;
    return -1;
}

} // namespace

bool demoCodecsAvailable() {
    return true;
}

DemoReply encodeDemoReply(DemoApi api, const QList<StreamEvent> &events, bool stream, const QString &modelName) {
    DemoReply reply;
    reply.stream = stream;
    const QString model = modelName.isEmpty() ? QStringLiteral("demo-model") : modelName;
    const formats::InboundCodec *codec = codecFor(api);
    if (!stream) {
        const model::AssistantMessage message = assembleMessage(events);
        if (codec) {
            formats::EncodeInfo info{QStringLiteral("demo-response"), model, 0, true};
            reply.json = codec->encodeResponse(message, info);
        } else if (api == DemoApi::GoogleGenerativeAI) {
            reply.json = googleJson(message);
        } else if (api == DemoApi::AnthropicMessages || api == DemoApi::OpenAICompletions) {
            reply.json =
                api == DemoApi::AnthropicMessages ? anthropicJson(message, model) : openaiChatJson(message, model);
        } else {
            // No built-in non-streaming Responses body: the gateway always streams
            // upstream. Send the stream instead so a caller still sees the reply.
            reply.stream = true;
        }
        if (!reply.stream)
            return reply;
    }
    const int meaningful = firstMeaningful(events);
    if (codec) {
        formats::EncodeInfo info{QStringLiteral("demo-response"), model, 0, true};
        auto encoder = codec->makeStreamEncoder(info);
        for (int i = 0; i < events.size(); ++i) {
            const QByteArray bytes = encoder->encode(events[i]);
            if (i == meaningful)
                reply.firstContentFrame = int(reply.frames.size());
            if (!bytes.isEmpty())
                reply.frames << bytes;
        }
        return reply;
    }
    // Built-in: encode the prefix up to the first meaningful event separately to find its frame.
    auto encodeAll = [&](const QList<StreamEvent> &part) {
        switch (api) {
        case DemoApi::AnthropicMessages:
            return encodeAnthropic(part, model);
        case DemoApi::OpenAIResponses:
            return encodeResponses(part, model);
        case DemoApi::GoogleGenerativeAI:
            return encodeGoogle(part);
        default:
            return encodeOpenAIChat(part, model);
        }
    };
    reply.frames = encodeAll(events);
    if (meaningful >= 0 && api != DemoApi::OpenAIResponses)
        reply.firstContentFrame = int(encodeAll(events.mid(0, meaningful + 1)).size()) - 1;
    else if (meaningful >= 0) // responses numbers its events: count frames, not re-encode
        for (int i = 0; i < reply.frames.size(); ++i)
            if (reply.frames[i].contains(".delta")) {
                reply.firstContentFrame = i;
                break;
            }
    return reply;
}

DemoReply buildDemoReply(DemoApi api, const RecordedRequest &request, const QString &label) {
    DemoInput in;
    if (const formats::InboundCodec *codec = codecFor(api)) {
        model::GatewayError error;
        if (auto parsed = codec->decode(request.body, &error)) {
            in.context = parsed->context;
            in.options = parsed->options;
            in.stream = parsed->stream;
            in.model = parsed->model;
        } else {
            in = readBuiltin(api, request);
        }
    } else {
        in = readBuiltin(api, request);
    }
    return encodeDemoReply(api, replyFor(in.context, in.options, label), in.stream, in.model);
}

QByteArray demoInBandError(DemoApi api, const QString &message) {
    switch (api) {
    case DemoApi::AnthropicMessages:
        return frame("error",
                     {{"type", "error"}, {"error", QJsonObject{{"type", "overloaded_error"}, {"message", message}}}});
    case DemoApi::OpenAIResponses:
        return frame("error",
                     {{"type", "error"}, {"code", "server_error"}, {"message", message}, {"sequence_number", 0}});
    case DemoApi::GoogleGenerativeAI:
        return frame({}, {{"error", QJsonObject{{"code", 503}, {"message", message}, {"status", "UNAVAILABLE"}}}});
    default:
        return frame({}, {{"error", QJsonObject{{"message", message},
                                                {"type", "server_error"},
                                                {"param", QJsonValue()},
                                                {"code", QJsonValue()}}}});
    }
}

QByteArray demoErrorBody(DemoApi api, int status) {
    const QString message = QStringLiteral("demo upstream answered %1").arg(status);
    switch (api) {
    case DemoApi::AnthropicMessages: {
        const char *type = status == 400                    ? "invalid_request_error"
                           : status == 401                  ? "authentication_error"
                           : status == 403                  ? "permission_error"
                           : status == 404                  ? "not_found_error"
                           : status == 429                  ? "rate_limit_error"
                           : status == 529 || status == 503 ? "overloaded_error"
                                                            : "api_error";
        return compact({{"type", "error"}, {"error", QJsonObject{{"type", type}, {"message", message}}}});
    }
    case DemoApi::GoogleGenerativeAI: {
        const char *s = status == 429   ? "RESOURCE_EXHAUSTED"
                        : status == 400 ? "INVALID_ARGUMENT"
                        : status == 404 ? "NOT_FOUND"
                        : status == 503 ? "UNAVAILABLE"
                        : status == 401 ? "UNAUTHENTICATED"
                                        : "INTERNAL";
        return compact({{"error", QJsonObject{{"code", status}, {"message", message}, {"status", s}}}});
    }
    default: {
        const char *type = status == 429   ? "rate_limit_exceeded"
                           : status >= 500 ? "server_error"
                                           : "invalid_request_error";
        return compact(
            {{"error",
              QJsonObject{{"message", message}, {"type", type}, {"param", QJsonValue()}, {"code", QJsonValue()}}}});
    }
    }
}

} // namespace sw::demo
