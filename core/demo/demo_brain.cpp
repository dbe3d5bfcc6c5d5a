#include "core/demo/demo_brain.h"

#include <QJsonArray>
#include <QJsonDocument>

namespace sw::demo {

namespace {

using model::ContentBlock;
using model::EventType;
using model::StreamEvent;

QString textOf(const model::Message &m) {
    QStringList parts;
    for (const auto &b : m.content)
        if (b.type == model::BlockType::Text)
            parts << b.text;
    return parts.join(QLatin1Char('\n'));
}

qint64 contextChars(const model::Context &context) {
    qint64 n = context.systemPrompt.size();
    for (const auto &m : context.messages)
        for (const auto &b : m.content)
            n += b.text.size() + b.argumentsJson.size() + b.data.size();
    for (const auto &t : context.tools)
        n += t.name.size() + t.description.size() + QJsonDocument(t.parameters).toJson(QJsonDocument::Compact).size();
    return n;
}

qint64 wordCount(const QString &s) {
    return s.split(QLatin1Char(' '), Qt::SkipEmptyParts).size();
}

// Splits text into about `parts` pieces at word boundaries, keeping every character.
QStringList splitIntoDeltas(const QString &text, int parts) {
    const QStringList words = text.split(QLatin1Char(' '));
    QStringList out;
    const int perPart = std::max<int>(1, int((words.size() + parts - 1) / parts));
    for (int i = 0; i < words.size(); i += perPart) {
        QString piece = words.mid(i, perPart).join(QLatin1Char(' '));
        if (i + perPart < words.size())
            piece += QLatin1Char(' ');
        out << piece;
    }
    return out;
}

StreamEvent event(EventType type, int index) {
    StreamEvent e;
    e.type = type;
    e.contentIndex = index;
    return e;
}

const model::Tool *chosenTool(const model::Context &context, const model::Options &options) {
    if (context.tools.isEmpty() || context.messages.isEmpty() || options.toolChoice == QLatin1String("none"))
        return nullptr;
    const model::Message &last = context.messages.last();
    if (last.role != model::Role::User)
        return nullptr;
    for (const auto &t : context.tools)
        if (!options.toolChoice.isEmpty() && t.name == options.toolChoice)
            return &t;
    if (options.toolChoice == QLatin1String("required") ||
        textOf(last).contains(QLatin1String("tool"), Qt::CaseInsensitive))
        return &context.tools.first();
    return nullptr;
}

} // namespace

QList<StreamEvent> replyFor(const model::Context &context, const model::Options &options, const QString &label) {
    QList<StreamEvent> events;
    events << event(EventType::Start, -1);
    qint64 outputWords = 0;
    StreamEvent done = event(EventType::Done, -1);
    done.reason = model::StopReason::Stop;

    auto emitTextBlock = [&](EventType startType, const QString &text, const QString &signature) {
        const int index = int(std::count_if(events.begin(), events.end(), [](const StreamEvent &e) {
            return e.type == EventType::TextStart || e.type == EventType::ThinkingStart ||
                   e.type == EventType::ToolCallStart;
        }));
        const bool thinking = startType == EventType::ThinkingStart;
        StreamEvent start = event(startType, index);
        start.block.type = thinking ? model::BlockType::Thinking : model::BlockType::Text;
        events << start;
        for (const QString &piece : splitIntoDeltas(text, 4)) {
            StreamEvent d = event(thinking ? EventType::ThinkingDelta : EventType::TextDelta, index);
            d.delta = piece;
            events << d;
        }
        StreamEvent end = event(thinking ? EventType::ThinkingEnd : EventType::TextEnd, index);
        end.block = start.block;
        end.block.text = text;
        end.block.signature = signature;
        events << end;
        outputWords += wordCount(text);
    };

    const model::Message *last = context.messages.isEmpty() ? nullptr : &context.messages.last();
    if (const model::Tool *tool = chosenTool(context, options)) {
        QJsonObject args;
        const QJsonObject props = tool->parameters.value(QLatin1String("properties")).toObject();
        for (const auto &req : tool->parameters.value(QLatin1String("required")).toArray()) {
            const QString name = req.toString();
            if (props.value(name).toObject().value(QLatin1String("type")).toString() == QLatin1String("string"))
                args.insert(name, QStringLiteral("demo"));
        }
        const QString json = QString::fromUtf8(QJsonDocument(args).toJson(QJsonDocument::Compact));
        StreamEvent start = event(EventType::ToolCallStart, 0);
        start.block.type = model::BlockType::ToolCall;
        start.block.toolCallId = QStringLiteral("call_demo_") + tool->name;
        start.block.toolName = tool->name;
        events << start;
        StreamEvent d = event(EventType::ToolCallDelta, 0);
        d.delta = json;
        events << d;
        StreamEvent end = event(EventType::ToolCallEnd, 0);
        end.block = start.block;
        end.block.arguments = args;
        end.block.argumentsJson = json;
        events << end;
        outputWords += std::max<qint64>(1, args.size());
        done.reason = model::StopReason::ToolUse;
    } else if (last && last->role == model::Role::ToolResult) {
        emitTextBlock(EventType::TextStart, QStringLiteral("Tool result received: ") + textOf(*last), {});
    } else {
        if ((!options.reasoning.isEmpty() && options.reasoning != QLatin1String("none")) || options.thinkingBudget)
            emitTextBlock(EventType::ThinkingStart, QStringLiteral("Thinking about the request."),
                          QStringLiteral("sig-demo-") + label);
        QString userText;
        QStringList files; // the documents the turn attached, as the upstream received them
        for (auto it = context.messages.crbegin(); it != context.messages.crend(); ++it)
            if (it->role == model::Role::User) {
                userText = textOf(*it);
                for (const ContentBlock &b : it->content)
                    if (b.type == model::BlockType::Document)
                        files << QStringLiteral("%1 (%2)").arg(b.title.isEmpty() ? QStringLiteral("untitled") : b.title,
                                                               b.isTextDocument() ? QStringLiteral("text")
                                                                                  : b.mimeType);
                break;
            }
        QString reply = QStringLiteral("Hello from %1. You said: %2").arg(label, userText);
        if (!files.isEmpty())
            reply += QStringLiteral(" [files: %1]").arg(files.join(QStringLiteral(", ")));
        emitTextBlock(EventType::TextStart, reply, {});
    }

    done.usage.input = std::max<qint64>(1, contextChars(context) / 4);
    done.usage.output = std::max<qint64>(1, outputWords);
    events.first().usage.input = done.usage.input; // input is known up front, as providers report it
    events << done;
    return events;
}

model::AssistantMessage assembleMessage(const QList<StreamEvent> &events) {
    model::AssistantMessage m;
    for (const auto &e : events) {
        switch (e.type) {
        case EventType::TextEnd:
        case EventType::ThinkingEnd:
        case EventType::ToolCallEnd:
        case EventType::Image:
            m.content << e.block;
            break;
        case EventType::Done:
            m.usage = e.usage;
            m.stopReason = e.reason;
            break;
        case EventType::Error:
            m.stopReason = e.reason;
            m.errorMessage = e.errorMessage;
            m.errorStatus = e.errorStatus;
            m.usage = e.usage;
            break;
        default:
            break;
        }
    }
    return m;
}

} // namespace sw::demo
