// What a same-API JSON splice would save on the request path (docs/performance.md):
// the CPU the gateway spends today to turn the bench's OpenAI Chat request into the
// upstream's request (decode into the canonical model, then encode again), and to turn
// the upstream's streamed answer into the client's JSON answer (SSE, decoder,
// accumulator, encoder), against a splice that only rewrites the "model" value of the
// bytes as they are. Thread CPU time, so a busy machine changes it less than wall time.
//
//   bench_splice [--iterations 20000]

#include "core/demo/demo_reply.h"
#include "core/demo/fake_upstream.h"
#include "core/formats/inbound_codec.h"
#include "core/model/event_accumulator.h"
#include "core/upstream/sse_reader.h"
#include "core/upstream/upstream_adapter.h"
#include "core/wire/api.h"

#include <QCommandLineParser>
#include <QCoreApplication>

#include <cstdio>
#include <functional>
#include <time.h>

namespace {

qint64 threadCpuNs() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return qint64(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Mean CPU microseconds of one call, over `n` calls after a warm-up.
double perCallUs(int n, const std::function<void()> &fn) {
    for (int i = 0; i < n / 10 + 1; ++i)
        fn();
    const qint64 start = threadCpuNs();
    for (int i = 0; i < n; ++i)
        fn();
    return double(threadCpuNs() - start) / 1000.0 / n;
}

// The splice: the bytes of the body with the first top-level "model" string value replaced.
// (A real one must also skip "model" keys nested in messages or tools: a small JSON scanner
// that tracks depth and strings. This one is the lower bound of its cost.)
QByteArray spliceModel(const QByteArray &body, QByteArrayView model) {
    const qsizetype key = body.indexOf("\"model\"");
    if (key < 0)
        return body;
    const qsizetype open = body.indexOf('"', body.indexOf(':', key + 7) + 1);
    qsizetype close = open + 1;
    while (close < body.size() && body[close] != '"')
        close += body[close] == '\\' ? 2 : 1;
    QByteArray out;
    out.reserve(body.size() + model.size());
    out.append(body.constData(), open + 1).append(model).append(body.constData() + close, body.size() - close);
    return out;
}

} // namespace

int main(int argc, char **argv) {
    QCoreApplication app(argc, argv);
    QCommandLineParser parser;
    parser.addHelpOption();
    parser.addOption({QStringLiteral("iterations"), QStringLiteral("Calls per figure (default 20000)."),
                      QStringLiteral("n"), QStringLiteral("20000")});
    parser.process(app);
    const int n = std::max(100, parser.value(QStringLiteral("iterations")).toInt());

    const QByteArray body = R"({"model":"gpt-bench","stream":false,"messages":[{"role":"user","content":"ping"}]})";
    const auto &codec = sw::formats::codecFor(sw::wire::Api::OpenAICompletions);
    const sw::upstream::UpstreamAdapter *adapter = sw::upstream::adapterFor(QStringLiteral("openai-completions"));
    sw::upstream::Target target;
    target.provider = QStringLiteral("openai");
    target.modelId = QStringLiteral("m");
    target.api = QStringLiteral("openai-completions");
    target.baseUrl = QStringLiteral("http://127.0.0.1:1/v1");

    // Request: decode + build (today) against a splice.
    sw::model::GatewayError error;
    auto parsed = codec.decode(body, &error);
    if (!parsed)
        qFatal("the bench body does not decode");
    const double decodeUs = perCallUs(n, [&] { (void)codec.decode(body, &error); });
    const double buildUs = perCallUs(n, [&] { (void)adapter->buildRequest(*parsed, target, {}); });
    const double spliceUs = perCallUs(n, [&] { (void)spliceModel(body, "m"); });

    // Answer: the mock's streamed Chat answer (what the gateway asks an OpenAI upstream for)
    // through SSE reader, decoder and accumulator, then the client's JSON; against a splice of
    // the "model" in a whole JSON answer of the same content.
    sw::demo::RecordedRequest recorded;
    recorded.method = "POST";
    recorded.path = "/v1/chat/completions";
    recorded.body = R"({"model":"m","stream":true,"messages":[{"role":"user","content":"ping"}]})";
    const sw::demo::DemoReply streamed =
        sw::demo::buildDemoReply(sw::wire::Api::OpenAICompletions, recorded, QStringLiteral("mock"));
    QByteArray sse;
    for (const QByteArray &frame : streamed.frames)
        sse += frame;
    sw::formats::EncodeInfo info;
    info.model = QStringLiteral("gpt-bench");
    info.responseId = QStringLiteral("req_bench");
    QByteArray answer;
    const double answerUs = perCallUs(n, [&] {
        sw::upstream::SseReader reader;
        auto decoder = adapter->makeDecoder(target);
        sw::model::EventAccumulator acc;
        for (const auto &e : reader.feed(sse))
            acc.addAll(decoder->feed(e));
        for (const auto &e : reader.finish())
            acc.addAll(decoder->feed(e));
        acc.addAll(decoder->finish());
        answer = codec.encodeResponse(acc.message(), info);
    });
    const double answerSpliceUs = perCallUs(n, [&] { (void)spliceModel(answer, "gpt-bench"); });

    std::printf("request  (%lld bytes): decode %.2f us + build upstream body %.2f us = %.2f us; splice %.2f us\n",
                static_cast<long long>(body.size()), decodeUs, buildUs, decodeUs + buildUs, spliceUs);
    std::printf(
        "answer   (%lld SSE bytes in %lld frames -> %lld JSON bytes): %.2f us; splice of a JSON answer %.2f us\n",
        static_cast<long long>(sse.size()), static_cast<long long>(streamed.frames.size()),
        static_cast<long long>(answer.size()), answerUs, answerSpliceUs);
    std::printf("a same-API splice would save about %.1f us of engine CPU per non-stream request\n",
                decodeUs + buildUs - spliceUs + answerUs - answerSpliceUs);
    return 0;
}
