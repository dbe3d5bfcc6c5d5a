// The CPU of the answer encoders on the translated path (the upstream speaks another API,
// so the client's JSON answer or SSE stream is written from canonical events): one
// typical answer (thinking, ~560 characters of text in 40 deltas, optionally a tool
// call) in each client format. Thread CPU time, so a busy machine changes it less than
// wall time.
//
// --large-mb N adds the end of one long answer (N MB of text in 4 KB deltas): the CPU of the
// events that close it (TextEnd and Done), which repeat the whole text in the formats whose
// closing events do (Responses, pi), per MB. The engine thread writes them between two other
// requests' frames.
//
//   bench_encode [--iterations 20000] [--large-mb 8]

#include "bench/encode_workload.h"
#include "core/wire/api.h"

#include <QCommandLineParser>
#include <QCoreApplication>

#include <cstdio>

int main(int argc, char **argv) {
    QCoreApplication app(argc, argv);
    QCommandLineParser parser;
    parser.addHelpOption();
    parser.addOption({QStringLiteral("iterations"), QStringLiteral("Calls per figure (default 20000)."),
                      QStringLiteral("n"), QStringLiteral("20000")});
    parser.addOption({QStringLiteral("large-mb"), QStringLiteral("MB of text in the long answer (default 8)."),
                      QStringLiteral("mb"), QStringLiteral("8")});
    parser.process(app);
    const int n = std::max(100, parser.value(QStringLiteral("iterations")).toInt());
    const int largeMb = std::max(1, parser.value(QStringLiteral("large-mb")).toInt());

    using sw::wire::Api;
    for (const bool withTool : {false, true}) {
        const QList<sw::model::StreamEvent> events = sw::bench::typicalStream(withTool);
        std::printf("%s (%lld events)\n", withTool ? "thinking + text + tool call" : "thinking + text",
                    static_cast<long long>(events.size()));
        for (const Api api : {Api::OpenAICompletions, Api::AnthropicMessages, Api::OpenAIResponses, Api::Pi}) {
            const auto f = sw::bench::measureEncode(sw::formats::codecFor(api), events, n);
            std::printf("  %-20s answer %6.2f us (%5lld bytes)   stream %7.2f us (%6lld bytes)\n",
                        qPrintable(sw::formats::formatName(api)), f.answerUs, static_cast<long long>(f.answerBytes),
                        f.streamUs, static_cast<long long>(f.streamBytes));
        }
    }
    const QList<sw::model::StreamEvent> large = sw::bench::longTextStream(largeMb);
    std::printf("one answer of %d MB of text (%lld events): its closing events\n", largeMb,
                static_cast<long long>(large.size()));
    for (const Api api : {Api::OpenAICompletions, Api::AnthropicMessages, Api::OpenAIResponses, Api::Pi}) {
        const auto f = sw::bench::measureClosing(sw::formats::codecFor(api), large);
        std::printf("  %-20s whole stream %8.1f ms   closing events %7.2f ms (%6.2f ms per MB, %5.1f MB written)\n",
                    qPrintable(sw::formats::formatName(api)), f.streamMs, f.closingMs, f.closingMs / largeMb,
                    double(f.closingBytes) / (1024 * 1024));
    }
    // A client's tool schema of many properties: its decode into the canonical request (the
    // schema goes into Qt's JSON tree) with the names in order and in reverse. Once the reverse
    // cost the square of the count (probe T3 F1); the ratio says whether it still does, and five
    // times the properties should cost about five times the time.
    for (const int properties : {8000, 40000}) {
        double us[2] = {};
        bool decoded = true;
        QString why;
        for (const bool reverse : {false, true}) {
            QByteArray schema = "{";
            for (int i = 0; i < properties; ++i) {
                const int k = reverse ? properties - i : i + 1;
                schema += (i ? ",\"p" : "\"p") + QByteArray::number(100000 + k) + "\":{\"type\":\"string\"}";
            }
            schema += "}";
            const QByteArray body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                                    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":"
                                    "{\"type\":\"object\",\"properties\":" +
                                    schema + "}}}]}";
            const auto &codec = sw::formats::codecFor(Api::OpenAICompletions);
            us[reverse] = sw::bench::perCallUs(3, [&]() {
                sw::model::GatewayError error;
                if (!codec.decode(body, &error)) {
                    decoded = false;
                    why = error.message;
                }
            });
        }
        std::printf("a Chat request whose tool schema has %d properties: decode %8.1f ms in order, %8.1f ms "
                    "reversed (%.2fx)%s\n",
                    properties, us[0] / 1000, us[1] / 1000, us[1] / us[0],
                    decoded ? "" : qPrintable(QStringLiteral(" REFUSED: ") + why));
    }
    return 0;
}
