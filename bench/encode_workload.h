#pragma once
// The answer the encode benchmark encodes (bench_encode): a typical translated answer,
// as canonical events and as the accumulated message, and the per-call CPU of turning it
// into one client format's JSON answer and SSE stream.

#include "bench/cpu_timing.h"
#include "core/formats/inbound_codec.h"
#include "core/model/event_accumulator.h"

#include <QJsonObject>

#include <functional>

namespace sw::bench {

// Thinking (2 deltas), text (40 deltas of a few words, ~560 characters) and, with
// `withTool`, one tool call streamed in 3 deltas; usage at start and done.
inline QList<model::StreamEvent> typicalStream(bool withTool) {
    using namespace sw::model;
    QList<StreamEvent> s;
    auto event = [](EventType type, int index = -1, const QString &delta = {}) {
        StreamEvent e;
        e.type = type;
        e.contentIndex = index;
        e.delta = delta;
        return e;
    };
    StreamEvent start = event(EventType::Start);
    start.usage.input = 1200;
    start.usage.cacheRead = 4096;
    s << start;
    StreamEvent ts = event(EventType::ThinkingStart, 0);
    ts.block.type = BlockType::Thinking;
    s << ts << event(EventType::ThinkingDelta, 0, QStringLiteral("The user wants the weather; "))
      << event(EventType::ThinkingDelta, 0, QStringLiteral("a lookup answers it."));
    StreamEvent te = event(EventType::ThinkingEnd, 0);
    te.block.type = BlockType::Thinking;
    te.block.text = QStringLiteral("The user wants the weather; a lookup answers it.");
    te.block.signature = QStringLiteral("EqQBCkgIARABGAIiQL8sig");
    s << te << event(EventType::TextStart, 1);
    QString text;
    for (int i = 0; i < 40; ++i) {
        const QString delta = QStringLiteral("word %1 and ").arg(i);
        text += delta;
        s << event(EventType::TextDelta, 1, delta);
    }
    StreamEvent textEnd = event(EventType::TextEnd, 1);
    textEnd.block.text = text;
    s << textEnd;
    if (withTool) {
        StreamEvent call = event(EventType::ToolCallStart, 2);
        call.block.type = BlockType::ToolCall;
        call.block.toolCallId = QStringLiteral("call_0a1b2c");
        call.block.toolName = QStringLiteral("get_weather");
        s << call << event(EventType::ToolCallDelta, 2, QStringLiteral("{\"location\":"))
          << event(EventType::ToolCallDelta, 2, QStringLiteral("\"Paris\",\"unit\":"))
          << event(EventType::ToolCallDelta, 2, QStringLiteral("\"celsius\"}"));
        StreamEvent callEnd = call;
        callEnd.type = EventType::ToolCallEnd;
        callEnd.block.argumentsJson = QStringLiteral("{\"location\":\"Paris\",\"unit\":\"celsius\"}");
        callEnd.block.arguments =
            QJsonObject{{QStringLiteral("location"), QStringLiteral("Paris")}, {QStringLiteral("unit"), "celsius"}};
        s << callEnd;
    }
    StreamEvent done = event(EventType::Done);
    done.reason = withTool ? StopReason::ToolUse : StopReason::Stop;
    done.usage = start.usage;
    done.usage.output = 180;
    s << done;
    return s;
}

// What the gateway passes an encoder: the client's model, an id, and an upstream of
// another API (the translated path: no native answer to pass through).
inline formats::EncodeInfo typicalInfo() {
    formats::EncodeInfo info;
    info.responseId = QStringLiteral("req_7f3a9c2e1b");
    info.model = QStringLiteral("claude-sonnet");
    info.createdSecs = 1764400000;
    info.includeUsage = true;
    info.upstreamApi = QStringLiteral("google-generative-ai");
    info.upstreamProvider = QStringLiteral("google");
    return info;
}

struct EncodeFigures {
    double answerUs = 0; // encodeResponse of the accumulated message
    double streamUs = 0; // a fresh stream encoder over every event
    qsizetype answerBytes = 0;
    qsizetype streamBytes = 0;
};

inline EncodeFigures measureEncode(const formats::InboundCodec &codec, const QList<model::StreamEvent> &events, int n) {
    const formats::EncodeInfo info = typicalInfo();
    model::EventAccumulator acc;
    acc.addAll(events);
    const model::AssistantMessage message = acc.message();
    EncodeFigures f;
    f.answerBytes = codec.encodeResponse(message, info).size();
    f.answerUs = perCallUs(n, [&] { (void)codec.encodeResponse(message, info); });
    f.streamUs = perCallUs(n, [&] {
        auto encoder = codec.makeStreamEncoder(info);
        qsizetype bytes = 0;
        for (const model::StreamEvent &e : events)
            bytes += encoder->encode(e).size();
        f.streamBytes = bytes;
    });
    return f;
}

// One answer of `mb` MB of text in 4 KB deltas (words, with a non-ASCII letter and a quote now
// and then, as a long code or prose answer has), then TextEnd with the whole text and Done.
inline QList<model::StreamEvent> longTextStream(int mb) {
    using namespace sw::model;
    QList<StreamEvent> s;
    StreamEvent start;
    start.type = EventType::Start;
    s << start;
    StreamEvent ts;
    ts.type = EventType::TextStart;
    ts.contentIndex = 0;
    s << ts;
    QString chunk;
    while (chunk.size() < 4096)
        chunk += QStringLiteral("let caf\u00e9 = \"x\"; // line\n");
    chunk.truncate(4096);
    QString text;
    const qsizetype total = qsizetype(mb) * 1024 * 1024;
    while (text.size() < total) {
        StreamEvent d;
        d.type = EventType::TextDelta;
        d.contentIndex = 0;
        d.delta = chunk;
        text += chunk;
        s << d;
    }
    StreamEvent end;
    end.type = EventType::TextEnd;
    end.contentIndex = 0;
    end.block.type = BlockType::Text;
    end.block.text = text;
    s << end;
    StreamEvent done;
    done.type = EventType::Done;
    done.reason = StopReason::Stop;
    done.usage.input = 100;
    done.usage.output = total / 4;
    s << done;
    return s;
}

struct ClosingFigures {
    double streamMs = 0;  // every event
    double closingMs = 0; // the last two (TextEnd, Done)
    qsizetype closingBytes = 0;
};

inline ClosingFigures measureClosing(const formats::InboundCodec &codec, const QList<model::StreamEvent> &events) {
    ClosingFigures f;
    auto encoder = codec.makeStreamEncoder(typicalInfo());
    const qint64 start = threadCpuNs();
    for (qsizetype i = 0; i + 2 < events.size(); ++i)
        (void)encoder->encode(events[i]);
    const qint64 closing = threadCpuNs();
    for (qsizetype i = events.size() - 2; i < events.size(); ++i)
        f.closingBytes += encoder->encode(events[i]).size();
    const qint64 end = threadCpuNs();
    f.streamMs = double(end - start) / 1e6;
    f.closingMs = double(end - closing) / 1e6;
    return f;
}

} // namespace sw::bench
