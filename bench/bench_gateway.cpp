// Load driver on loopback: the same FakeUpstream measured directly and through
// an in-process Switchman, side by side in one run (SPEC section 11), plus the
// failover figures of issue 4 (refused and 503 first candidates, and a first
// candidate that is already marked) against the healthy gateway path.
//
// It has its own HTTP/1.1 client on QTcpSocket (keep-alive, Content-Length and
// chunked responses) so the numbers do not include QNAM's costs.
//
//   bench_gateway [--n 2000] [--total 20000] [--concurrency 64] [--streams 200] [--transports]

#include "core/config/config.h"
#include "core/demo/fake_upstream.h"
#include "core/engine_host.h"
#include "core/upstream/qt_transport.h"
#include "core/upstream/socket_transport.h"
#include "relay_floor.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>
#include <QUrl>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

#include <time.h>

namespace {

// Header lines added to every request (--sdk-headers): the ones an official SDK sends, so the
// cost of reading a realistic request head shows (the default head is about 140 bytes).
QByteArray g_extraHeaders;

// What the OpenAI Node SDK (v4) sends besides Host, Content-Type, Authorization and
// Content-Length; the values are placeholders of realistic length.
const char *const kSdkHeaders = "Accept: application/json\r\n"
                                "User-Agent: OpenAI/JS 4.104.0\r\n"
                                "X-Stainless-Lang: js\r\n"
                                "X-Stainless-Package-Version: 4.104.0\r\n"
                                "X-Stainless-OS: Linux\r\n"
                                "X-Stainless-Arch: x64\r\n"
                                "X-Stainless-Runtime: node\r\n"
                                "X-Stainless-Runtime-Version: v18.19.0\r\n"
                                "X-Stainless-Retry-Count: 0\r\n"
                                "X-Stainless-Timeout: 600\r\n"
                                "Accept-Encoding: gzip,deflate\r\n"
                                "Connection: keep-alive\r\n";

// One keep-alive HTTP/1.1 connection sending one request at a time.
class BenchConnection final : public QObject {
public:
    struct Timing {
        qint64 firstTokenNs = -1; // first body bytes containing the marker
        qint64 doneNs = 0;
        int status = 0;
        bool ok = false;
        int frames = 0;      // SSE events (data lines) in the body, when counting
        bool sawEnd = false; // the body holds the stream's last event (message_stop)
    };
    using Done = std::function<void(const Timing &)>;

    BenchConnection(const QUrl &base, QObject *parent) : QObject(parent), m_base(base) {
        connect(&m_socket, &QTcpSocket::readyRead, this, &BenchConnection::onReadyRead);
        connect(&m_socket, &QTcpSocket::connected, this, [this] {
            m_socket.setSocketOption(QAbstractSocket::LowDelayOption, 1);
            if (!m_pending.isEmpty())
                m_socket.write(std::exchange(m_pending, {}));
        });
        connect(&m_socket, &QTcpSocket::disconnected, this, [this] { fail(); });
        connect(&m_socket, &QTcpSocket::errorOccurred, this, [this] { fail(); });
    }
    // The socket, a member, is destroyed after this object's other members: its closing signals
    // must not reach a handler that uses them (a crash at the end of a run, seen under callgrind).
    ~BenchConnection() override { m_socket.disconnect(this); }

    void send(const QByteArray &path, const QByteArray &body, const QByteArray &marker, Done done) {
        m_done = std::move(done);
        m_marker = marker;
        m_buffer.clear();
        m_timing = {};
        m_headersDone = false;
        m_chunked = false;
        m_contentLength = -1;
        m_bodyBytes = 0;
        m_body.clear();
        m_clock.start();
        const QByteArray request =
            "POST " + path + " HTTP/1.1\r\nHost: " + m_base.host().toLatin1() + ':' +
            QByteArray::number(m_base.port()) + "\r\nContent-Type: application/json\r\n" + g_extraHeaders +
            "Authorization: Bearer bench\r\nContent-Length: " + QByteArray::number(body.size()) + "\r\n\r\n" + body;
        if (m_socket.state() == QAbstractSocket::ConnectedState) {
            m_socket.write(request);
        } else {
            m_pending = request;
            if (m_socket.state() == QAbstractSocket::UnconnectedState)
                m_socket.connectToHost(m_base.host(), quint16(m_base.port(80)));
        }
    }

private:
    void fail() {
        if (!m_done)
            return;
        m_timing.ok = false;
        m_timing.doneNs = m_clock.nsecsElapsed();
        std::exchange(m_done, nullptr)(m_timing);
    }

    void complete() {
        if (m_countFrames) {
            // One SSE event per data line at a line start; comments (keepalives, the candidate
            // note) are not frames.
            m_timing.frames = int(m_body.count("\ndata:")) + (m_body.startsWith("data:") ? 1 : 0);
            m_timing.sawEnd = m_body.contains("message_stop");
        }
        m_timing.ok = m_timing.status >= 200 && m_timing.status < 300;
        m_timing.doneNs = m_clock.nsecsElapsed();
        if (m_timing.firstTokenNs < 0 && m_marker.isEmpty())
            m_timing.firstTokenNs = m_timing.doneNs;
        if (m_done)
            std::exchange(m_done, nullptr)(m_timing);
    }

    void onReadyRead() {
        m_buffer += m_socket.readAll();
        if (!m_headersDone) {
            const qsizetype end = m_buffer.indexOf("\r\n\r\n");
            if (end < 0)
                return;
            const QByteArray head = m_buffer.left(end).toLower();
            m_timing.status = m_buffer.mid(9, 3).toInt();
            m_chunked = head.contains("transfer-encoding: chunked");
            if (const qsizetype cl = head.indexOf("content-length:"); cl >= 0)
                m_contentLength = head.mid(cl + 15, head.indexOf("\r\n", cl) - cl - 15).trimmed().toLongLong();
            m_buffer.remove(0, end + 4);
            m_headersDone = true;
        }
        if (m_timing.firstTokenNs < 0 && !m_marker.isEmpty() && m_buffer.contains(m_marker))
            m_timing.firstTokenNs = m_clock.nsecsElapsed();
        if (m_chunked) {
            // Walk complete chunks; the body ends with a zero-size chunk.
            for (;;) {
                const qsizetype eol = m_buffer.indexOf("\r\n");
                if (eol < 0)
                    return;
                const qsizetype size = m_buffer.left(eol).toLongLong(nullptr, 16);
                if (size == 0) {
                    if (m_buffer.size() < eol + 4)
                        return;
                    m_buffer.remove(0, eol + 4);
                    complete();
                    return;
                }
                if (m_buffer.size() < eol + 2 + size + 2)
                    return;
                if (m_countFrames)
                    m_body += m_buffer.mid(eol + 2, size);
                m_buffer.remove(0, eol + 2 + size + 2);
            }
        } else if (m_contentLength >= 0 && m_buffer.size() >= m_contentLength) {
            if (m_countFrames)
                m_body = m_buffer.left(m_contentLength);
            m_buffer.remove(0, m_contentLength);
            complete();
        }
    }

    QUrl m_base;
    QTcpSocket m_socket;
    QByteArray m_pending;
    QByteArray m_buffer;
    QByteArray m_marker;
    QElapsedTimer m_clock;
    Timing m_timing;
    Done m_done;
    bool m_headersDone = false;
    bool m_chunked = false;
    qint64 m_contentLength = -1;
    qint64 m_bodyBytes = 0;
    QByteArray m_body; // the de-chunked body, kept only when counting frames
    bool m_countFrames = false;

public:
    void setCountFrames(bool on) { m_countFrames = on; }
};

struct Result {
    QString target;
    QString figure;
    int n = 0;
    int failed = 0;
    double p50us = 0;
    double p99us = 0;
    double reqPerSec = 0;
    double engineCpuUs = -1; // engine thread CPU per request (gateway targets), warmup included
};

// CPU time of the gateway's engine thread, read on that thread; unset for a run without a gateway.
std::function<qint64()> g_engineCpuNs;

double percentile(std::vector<qint64> v, double p) {
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const size_t i = std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5));
    return double(v[i]) / 1000.0;
}

// Runs `total` requests over `concurrency` keep-alive connections; collects
// per-request latency (or time to first token when a marker is given).
Result run(const QString &target, const QString &figure, const QUrl &base, const QByteArray &path,
           const QByteArray &body, int concurrency, int total, const QByteArray &marker, int warmup,
           const std::function<void()> &beforeEach = {}) {
    Result r{target, figure, total, 0, 0, 0, 0, -1};
    std::vector<qint64> samples;
    samples.reserve(size_t(total));
    const bool throughGateway = g_engineCpuNs && target != QLatin1String("direct");
    const qint64 cpuBefore = throughGateway ? g_engineCpuNs() : 0;
    QEventLoop loop;
    QObject owner;
    int started = 0;
    int finished = 0;
    const int all = total + warmup;
    QElapsedTimer wall;
    std::function<void(BenchConnection *)> next = [&](BenchConnection *c) {
        if (started >= all)
            return;
        const int index = started++;
        if (index == warmup)
            wall.start();
        if (beforeEach)
            beforeEach(); // outside the timed window: each request's clock starts in send()
        c->send(path, body, marker, [&, c, index](const BenchConnection::Timing &t) {
            ++finished;
            if (index >= warmup) {
                if (!t.ok)
                    ++r.failed;
                else
                    samples.push_back(marker.isEmpty() ? t.doneNs : t.firstTokenNs);
            }
            if (finished == all)
                loop.quit();
            else
                QTimer::singleShot(0, c, [&, c] { next(c); }); // off the callback stack
        });
    };
    wall.start();
    for (int i = 0; i < concurrency; ++i)
        next(new BenchConnection(base, &owner));
    QTimer::singleShot(120000, &loop, &QEventLoop::quit); // a stuck target must not hang the bench
    loop.exec();
    const double secs = double(wall.nsecsElapsed()) / 1e9;
    if (throughGateway && finished > 0)
        r.engineCpuUs = double(g_engineCpuNs() - cpuBefore) / 1000.0 / finished;
    r.failed += total - std::min(total, finished - std::min(finished, warmup));
    r.p50us = percentile(samples, 0.50);
    r.p99us = percentile(samples, 0.99);
    r.reqPerSec = secs > 0 ? double(samples.size()) / secs : 0;
    return r;
}

struct Options {
    int n = 2000;
    int total = 20000;
    int concurrency = 64;
    int streams = 200;
};

// The mock ignores model names; the gateway routes "gpt-bench" to its OpenAI mock and
// "claude-bench" to its Anthropic mock, so both legs are same-API.
const QByteArray kChatBody = R"({"model":"gpt-bench","stream":false,"messages":[{"role":"user","content":"ping"}]})";
const QByteArray kStreamBody =
    R"({"model":"claude-bench","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"ping"}]})";

// The c=1 figures and the throughput, for one target; alone for a byte relay (--floors): what
// the hop itself costs.
QList<Result> measureFloor(const QString &name, const QUrl &target, const Options &o) {
    QList<Result> out;
    out << run(name, QStringLiteral("latency c=1 (non-stream)"), target, "/v1/chat/completions", kChatBody, 1, o.n, {},
               200);
    out << run(name, QStringLiteral("throughput c=%1 (non-stream)").arg(o.concurrency), target, "/v1/chat/completions",
               kChatBody, o.concurrency, o.total, {}, 500);
    out << run(name, QStringLiteral("TTFT c=1 (stream)"), target, "/v1/messages", kStreamBody, 1, o.n / 2, "text_delta",
               100);
    return out;
}

// The figures of SPEC section 11 that this driver covers, for one target.
QList<Result> measure(const QString &name, const QUrl &target, const Options &o) {
    QList<Result> out = measureFloor(name, target, o);
    out << run(name, QStringLiteral("TTFT c=%1 (stream)").arg(o.streams), target, "/v1/messages", kStreamBody,
               o.streams, o.streams * 5, "text_delta", o.streams);
    return out;
}

// The same figures through the production upstream transport (QNAM pool), to
// see what the gateway's upstream leg costs over a raw keep-alive socket.
Result runTransport(sw::upstream::Transport &transport, const QString &target, const QString &figure, const QUrl &base,
                    const QByteArray &path, const QByteArray &body, int concurrency, int total,
                    const QByteArray &marker, int warmup) {
    Result r{target, figure, total, 0, 0, 0, 0, -1};
    std::vector<qint64> samples;
    QEventLoop loop;
    QObject owner;
    int started = 0;
    int finished = 0;
    const int all = total + warmup;
    QElapsedTimer wall;
    std::function<void()> next = [&] {
        if (started >= all)
            return;
        const int index = started++;
        if (index == warmup)
            wall.start();
        sw::upstream::HttpRequest req;
        req.url = QUrl(base.toString() + QString::fromLatin1(path));
        req.headers = {{"content-type", "application/json"}};
        req.body = body;
        auto clock = std::make_shared<QElapsedTimer>();
        clock->start();
        auto first = std::make_shared<qint64>(-1);
        auto *call = transport.start(req, &owner);
        QObject::connect(call, &sw::upstream::UpstreamCall::bodyData, &owner, [=](const QByteArray &chunk) {
            if (*first < 0 && !marker.isEmpty() && chunk.contains(marker))
                *first = clock->nsecsElapsed();
        });
        QObject::connect(call, &sw::upstream::UpstreamCall::finished, &owner,
                         [&, call, clock, first, index](const sw::upstream::TransportResult &res) {
                             ++finished;
                             if (index >= warmup) {
                                 if (res.error != sw::upstream::TransportError::None)
                                     ++r.failed;
                                 else
                                     samples.push_back(marker.isEmpty() ? clock->nsecsElapsed() : *first);
                             }
                             call->deleteLater();
                             if (finished == all)
                                 loop.quit();
                             else
                                 QTimer::singleShot(0, &owner, next);
                         });
    };
    wall.start();
    for (int i = 0; i < concurrency; ++i)
        next();
    QTimer::singleShot(120000, &loop, &QEventLoop::quit);
    loop.exec();
    const double secs = double(wall.nsecsElapsed()) / 1e9;
    r.p50us = percentile(samples, 0.50);
    r.p99us = percentile(samples, 0.99);
    r.reqPerSec = secs > 0 ? double(samples.size()) / secs : 0;
    return r;
}

QList<Result> measureTransport(sw::upstream::Transport &transport, const QString &name, const QUrl &target,
                               const Options &o) {
    const QByteArray chatBody = R"({"model":"demo","stream":false,"messages":[{"role":"user","content":"ping"}]})";
    const QByteArray streamBody =
        R"({"model":"demo","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"ping"}]})";
    QList<Result> out;
    out << runTransport(transport, name, QStringLiteral("latency c=1 (non-stream)"), target, "/v1/chat/completions",
                        chatBody, 1, o.n, {}, 200);
    out << runTransport(transport, name, QStringLiteral("throughput c=%1 (non-stream)").arg(o.concurrency), target,
                        "/v1/chat/completions", chatBody, o.concurrency, o.total / 4, {}, 200);
    out << runTransport(transport, name, QStringLiteral("TTFT c=%1 (stream)").arg(o.streams), target, "/v1/messages",
                        streamBody, o.streams, o.streams * 5, "text_delta", o.streams);
    return out;
}

void printTable(const QList<Result> &results) {
    std::printf("%-12s %-30s %7s %6s %10s %10s %10s %12s\n", "target", "figure", "n", "fail", "p50 us", "p99 us",
                "req/s", "engine us/req");
    for (const auto &r : results) {
        std::printf("%-12s %-30s %7d %6d %10.1f %10.1f %10.0f", qPrintable(r.target), qPrintable(r.figure), r.n,
                    r.failed, r.p50us, r.p99us, r.reqPerSec);
        if (r.engineCpuUs >= 0)
            std::printf(" %12.1f", r.engineCpuUs);
        std::printf("\n");
    }
    std::fflush(stdout);
}

// An OpenAI chat stream as providers send it: a role chunk, `deltas` content chunks of a token
// each, a finish chunk and a usage chunk, then [DONE] (deltas + 3 JSON events).
constexpr int kTokenDeltas = 200;
QByteArray tokenStream(int deltas) {
    const QByteArray head = R"(data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1764600000,)"
                            R"("model":"gpt-bench","system_fingerprint":"fp_bench","choices":[{"index":0,"delta":)";
    QByteArray s = head + R"({"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]})" + "\n\n";
    static const char *const words[] = {" the", " gateway", " answers", " with", " tokens",
                                        ",",    " one",     " by",      " one",  "."};
    for (int i = 0; i < deltas; ++i)
        s += head + R"({"content":")" + words[i % 10] + R"("},"logprobs":null,"finish_reason":null}]})" + "\n\n";
    s += head + R"({},"logprobs":null,"finish_reason":"stop"}]})" + "\n\n";
    s += R"(data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1764600000,"model":"gpt-bench",)"
         R"("choices":[],"usage":{"prompt_tokens":12,"completion_tokens":)" +
         QByteArray::number(deltas) + R"(,"total_tokens":)" + QByteArray::number(deltas + 12) + "}}\n\n";
    s += "data: [DONE]\n\n";
    return s;
}

// The same answer as an Anthropic Messages stream: message_start, a text block of `deltas`
// one-token deltas, message_delta with the usage, message_stop (deltas + 5 events).
QByteArray anthropicTokenStream(int deltas) {
    QByteArray s = "event: message_start\ndata: "
                   R"({"type":"message_start","message":{"id":"msg_bench","type":"message","role":"assistant",)"
                   R"("model":"claude-bench","content":[],"stop_reason":null,"stop_sequence":null,)"
                   R"("usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,)"
                   R"("output_tokens":1}}})"
                   "\n\n"
                   "event: content_block_start\ndata: "
                   R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})"
                   "\n\n";
    static const char *const words[] = {" the", " gateway", " answers", " with", " tokens",
                                        ",",    " one",     " by",      " one",  "."};
    for (int i = 0; i < deltas; ++i)
        s += QByteArray("event: content_block_delta\ndata: ") +
             R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":")" + words[i % 10] +
             "\"}}\n\n";
    s +=
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
        "event: message_delta\ndata: "
        R"({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":)" +
        QByteArray::number(deltas) +
        "}}\n\n"
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    return s;
}

// The gateway in process, on its own engine thread, in front of the same mock.
sw::config::Config benchConfig(const QUrl &mock, const QUrl &failing, quint16 deadPort) {
    using namespace sw::config;
    Config c;
    c.listen = QStringLiteral("127.0.0.1:0");
    auto provider = [&c](const QString &id, const QString &api, const QString &url) {
        ProviderConfig p;
        p.id = id;
        p.api = api;
        p.baseUrl = url;
        p.maxRetries = 0;
        c.providers.insert(id, p);
        ModelConfig m;
        m.provider = id;
        m.id = QStringLiteral("m");
        c.models.insert(m.key(), m);
    };
    const QString base = mock.toString();
    provider(QStringLiteral("openai"), QStringLiteral("openai-completions"), base + QStringLiteral("/v1"));
    provider(QStringLiteral("anthropic"), QStringLiteral("anthropic-messages"), base);
    provider(QStringLiteral("dead"), QStringLiteral("openai-completions"),
             QStringLiteral("http://127.0.0.1:%1/v1").arg(deadPort));
    provider(QStringLiteral("failing"), QStringLiteral("openai-completions"),
             failing.toString() + QStringLiteral("/v1"));
    auto route = [&c](const QString &name, QStringList candidates) {
        RouteConfig r;
        r.name = name;
        r.candidates = std::move(candidates);
        c.routes.insert(name, r);
    };
    route(QStringLiteral("gpt-bench"), {QStringLiteral("openai/m")});
    route(QStringLiteral("claude-bench"), {QStringLiteral("anthropic/m")});
    route(QStringLiteral("fo-refused"), {QStringLiteral("dead/m"), QStringLiteral("openai/m")});
    route(QStringLiteral("fo-503"), {QStringLiteral("failing/m"), QStringLiteral("openai/m")});
    return c;
}

// Resident memory of a process, from /proc (Linux): VmRSS now.
double rssMiB(qint64 pid) {
    QFile f(QStringLiteral("/proc/%1/status").arg(pid));
    if (!f.open(QIODevice::ReadOnly))
        return -1;
    for (const QByteArray &line : f.readAll().split('\n'))
        if (line.startsWith("VmRSS:"))
            return double(line.mid(6).trimmed().split(' ').value(0).toLongLong()) / 1024.0;
    return -1;
}

void waitMs(int ms) {
    QEventLoop loop;
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    loop.exec();
}

struct StreamsResult {
    double idleRssMiB = -1;
    double peakRssMiB = -1; // highest VmRSS sampled while the streams ran
    int streams = 0;
    int failed = 0;            // not 2xx, or cut before the stream's end
    qint64 expectedFrames = 0; // per stream, as the mock sends them directly
    qint64 framesLost = 0;
    double seconds = 0;
    int peakUpstreams = 0;          // connections the mock held open at once (the streams really overlapped)
    double largePeakRssMiB = -1;    // highest VmRSS sampled while one long conversation went through
    double largeSettledRssMiB = -1; // VmRSS kSettleMs after it was answered
    bool largeOk = false;
};

// A conversation of `turns` turns of 150 characters each: 90 000 of them are about 16 MiB, what a
// coding agent's context reaches in a long session (and half of limits.maxBodyBytes).
QByteArray longConversation(int turns) {
    QByteArray body = R"({"model":"claude-bench","stream":true,"max_tokens":64,"messages":[)";
    const QByteArray text = QByteArray("word ").repeated(30);
    for (int i = 0; i < turns; ++i)
        body += (i ? "," : "") +
                QByteArray(i % 2 ? R"({"role":"assistant","content":")" : R"({"role":"user","content":")") + text +
                R"("})";
    body += R"(,{"role":"user","content":"ping"}]})";
    return body;
}

// `count` streams, all open at once, one per connection; returns each stream's timing.
QList<BenchConnection::Timing> runConcurrentStreams(const QUrl &base, const QByteArray &body, int count) {
    QList<BenchConnection::Timing> out;
    QEventLoop loop;
    QObject owner;
    for (int i = 0; i < count; ++i) {
        auto *c = new BenchConnection(base, &owner);
        c->setCountFrames(true);
        c->send("/v1/messages", body, {}, [&](const BenchConnection::Timing &t) {
            out << t;
            if (out.size() == count)
                loop.quit();
        });
    }
    QTimer::singleShot(180000, &loop, &QEventLoop::quit);
    loop.exec();
    return out;
}

constexpr int kSettleMs = 2500;

// The switchman binary as a separate process in front of the mock: its idle RSS once started, then
// `streams` concurrent streams through it with its peak RSS and the frames each client received
// against what the mock sends for one stream directly.
StreamsResult measureProcess(const QString &binary, const QUrl &mock, int streams,
                             const std::function<void(int)> &setMockPacing, const std::function<int()> &mockOpen) {
    StreamsResult r;
    r.streams = streams;
    QTemporaryDir dir;
    QTcpServer probe;
    probe.listen(QHostAddress::LocalHost, 0);
    const quint16 port = probe.serverPort();
    probe.close();
    const QString config = dir.filePath(QStringLiteral("config.json"));
    QFile f(config);
    if (!f.open(QIODevice::WriteOnly))
        qFatal("cannot write %s", qPrintable(config));
    f.write(QStringLiteral(R"({"listen":"127.0.0.1:%1",
 "providers":{"anthropic":{"api":"anthropic-messages","baseUrl":"%2","credentials":[],"maxRetries":0}},
 "models":{"anthropic/m":{}},
 "routes":{"claude-bench":{"candidates":["anthropic/m"]}}})")
                .arg(port)
                .arg(mock.toString())
                .toUtf8());
    f.close();
    QProcess child;
    auto env = QProcessEnvironment::systemEnvironment();
    // Its own config, data (usage ledger) and runtime directories: nothing of the user's is read or written.
    for (const char *var : {"HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"})
        env.insert(QString::fromLatin1(var), dir.path());
    child.setProcessEnvironment(env);
    child.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    child.setStandardOutputFile(QProcess::nullDevice());
    child.start(binary, {QStringLiteral("--headless"), QStringLiteral("--config"), config});
    if (!child.waitForStarted(10000))
        qFatal("cannot start %s", qPrintable(binary));
    const QUrl base(QStringLiteral("http://127.0.0.1:%1").arg(port));
    bool up = false;
    for (int i = 0; i < 200 && !up; ++i) {
        QTcpSocket s;
        s.connectToHost(QHostAddress::LocalHost, port);
        up = s.waitForConnected(100);
        if (!up)
            waitMs(50);
    }
    if (!up)
        qFatal("%s did not listen on port %d", qPrintable(binary), port);
    waitMs(2000); // settled: start-up allocations done, nothing in flight
    r.idleRssMiB = rssMiB(child.processId());

    const QByteArray body =
        R"({"model":"claude-bench","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"ping"}]})";
    const auto direct = runConcurrentStreams(mock, body, 1);
    r.expectedFrames = direct.value(0).frames;
    // Paced so every stream is open at the same time for a while.
    setMockPacing(250);
    double peak = 0;
    QTimer sampler;
    QObject::connect(&sampler, &QTimer::timeout, [&] {
        peak = std::max(peak, rssMiB(child.processId()));
        r.peakUpstreams = std::max(r.peakUpstreams, mockOpen());
    });
    sampler.start(20);
    QElapsedTimer wall;
    wall.start();
    const auto through = runConcurrentStreams(base, body, streams);
    r.seconds = double(wall.elapsed()) / 1000.0;
    sampler.stop();
    setMockPacing(0);
    r.peakRssMiB = peak;
    for (const auto &t : through) {
        if (!t.ok || !t.sawEnd)
            ++r.failed;
        r.framesLost += std::max<qint64>(0, r.expectedFrames - t.frames);
    }
    r.failed += streams - int(through.size());
    r.framesLost += qint64(streams - through.size()) * r.expectedFrames;

    // Then one long conversation alone: what it costs at its peak, and what the process keeps of it
    // once it is answered and nothing else runs (the engine gives the allocator's free memory back a
    // second after a large request, core/engine.cpp).
    waitMs(2000);
    double largePeak = rssMiB(child.processId());
    QObject::disconnect(&sampler, nullptr, nullptr, nullptr);
    QObject::connect(&sampler, &QTimer::timeout, [&] { largePeak = std::max(largePeak, rssMiB(child.processId())); });
    sampler.start(5);
    const auto large = runConcurrentStreams(base, longConversation(90000), 1);
    sampler.stop();
    r.largeOk = large.size() == 1 && large[0].ok && large[0].sawEnd;
    r.largePeakRssMiB = largePeak;
    waitMs(kSettleMs);
    r.largeSettledRssMiB = rssMiB(child.processId());
    child.terminate();
    if (!child.waitForFinished(5000))
        child.kill();
    child.waitForFinished(2000);
    return r;
}

void printRatios(const QList<Result> &results) {
    auto find = [&](const QString &target, const QString &figure) -> const Result * {
        for (const auto &r : results)
            if (r.target == target && r.figure == figure)
                return &r;
        return nullptr;
    };
    std::printf("\n%-30s %14s %14s %12s\n", "gateway vs direct", "added p50 us", "added p99 us", "throughput");
    for (const auto &r : results) {
        if (r.target != QLatin1String("gateway") && !r.target.endsWith(QLatin1String("relay")))
            continue;
        if (const Result *d = find(QStringLiteral("direct"), r.figure))
            std::printf("%-30s %14.1f %14.1f %11.1f%%\n", qPrintable(r.target + QLatin1Char(' ') + r.figure),
                        r.p50us - d->p50us, r.p99us - d->p99us,
                        d->reqPerSec > 0 ? 100.0 * r.reqPerSec / d->reqPerSec : 0.0);
    }
    const Result *healthy = find(QStringLiteral("gateway"), QStringLiteral("latency c=1 (non-stream)"));
    for (const char *figure : {"failover from refused", "failover from 503", "first candidate marked"}) {
        const Result *f = find(QStringLiteral("failover"), QLatin1String(figure));
        if (f && healthy)
            std::printf("%-30s %14.1f %14.1f   (over the healthy gateway path)\n", figure, f->p50us - healthy->p50us,
                        f->p99us - healthy->p99us);
    }
    std::fflush(stdout);
}

// One line per figure of the benchmark table, for scripts/bench to collect across runs.
void printSummary(const QList<Result> &results) {
    auto find = [&](const QString &target, const QString &figure) -> const Result * {
        for (const auto &r : results)
            if (r.target == target && r.figure.startsWith(figure))
                return &r;
        return nullptr;
    };
    auto added = [&](const char *figure, const char *key, bool ttft,
                     const QString &target = QStringLiteral("gateway")) {
        const Result *g = find(target, QLatin1String(figure));
        const Result *d = find(QStringLiteral("direct"), QLatin1String(figure));
        if (!g || !d)
            return;
        std::printf("summary %s_p50_us %.1f\n", key, g->p50us - d->p50us);
        if (!ttft)
            std::printf("summary %s_p99_us %.1f\n", key, g->p99us - d->p99us);
        if (g->engineCpuUs >= 0)
            std::printf("summary %s_engine_cpu_us %.1f\n", key, g->engineCpuUs);
    };
    added("latency c=1", "added_latency", false);
    added("TTFT c=1", "added_ttft", true);
    const Result *d = find(QStringLiteral("direct"), QStringLiteral("throughput"));
    if (const Result *g = find(QStringLiteral("gateway"), QStringLiteral("throughput")); g && d && d->reqPerSec > 0)
        std::printf("summary throughput_pct_of_direct %.1f\n", 100.0 * g->reqPerSec / d->reqPerSec);
    for (const auto &[target, prefix] :
         {std::pair{"qt relay", "qt_relay_"}, std::pair{"qt-poll relay", "qt_poll_relay_"},
          std::pair{"epoll relay", "epoll_relay_"}}) {
        added("latency c=1", qPrintable(QLatin1String(prefix) + QLatin1String("added_latency")), false,
              QLatin1String(target));
        added("TTFT c=1", qPrintable(QLatin1String(prefix) + QLatin1String("added_ttft")), true, QLatin1String(target));
        if (const Result *g = find(QLatin1String(target), QStringLiteral("throughput")); g && d && d->reqPerSec > 0)
            std::printf("summary %sthroughput_pct_of_direct %.1f\n", prefix, 100.0 * g->reqPerSec / d->reqPerSec);
    }
    const Result *healthy = find(QStringLiteral("gateway"), QStringLiteral("latency c=1"));
    for (const auto &[figure, key] :
         {std::pair{"failover from refused", "failover_refused"}, std::pair{"failover from 503", "failover_503"}})
        if (const Result *f = find(QStringLiteral("failover"), QLatin1String(figure)); f && healthy)
            std::printf("summary %s_over_healthy_p50_us %.1f\n", key, f->p50us - healthy->p50us);
    std::fflush(stdout);
}

} // namespace

int main(int argc, char **argv) {
    QCoreApplication app(argc, argv);
    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("Switchman load driver: direct-to-mock vs through an in-process gateway, same mock, same run"));
    parser.addHelpOption();
    parser.addOption({QStringLiteral("n"), QStringLiteral("Requests for latency (default 2000)."), QStringLiteral("n"),
                      QStringLiteral("2000")});
    parser.addOption({QStringLiteral("total"), QStringLiteral("Requests for throughput (default 20000)."),
                      QStringLiteral("n"), QStringLiteral("20000")});
    parser.addOption({QStringLiteral("concurrency"), QStringLiteral("Connections for throughput (default 64)."),
                      QStringLiteral("n"), QStringLiteral("64")});
    parser.addOption({QStringLiteral("streams"), QStringLiteral("Concurrent streams for TTFT (default 200)."),
                      QStringLiteral("n"), QStringLiteral("200")});
    parser.addOption({QStringLiteral("transports"), QStringLiteral("Also measure the upstream transports alone.")});
    parser.addOption({QStringLiteral("switchman"),
                      QStringLiteral("Also run this switchman binary (--headless) as its own process: idle RSS, then "
                                     "--stream-clients concurrent streams through it (peak RSS, frames lost)."),
                      QStringLiteral("path")});
    parser.addOption({QStringLiteral("stream-clients"),
                      QStringLiteral("Concurrent streams through the switchman process (default 1000)."),
                      QStringLiteral("n"), QStringLiteral("1000")});
    parser.addOption({QStringLiteral("profile"),
                      QStringLiteral("Only send --n requests of one kind through the gateway (for perf/callgrind): "
                                     "chat, stream, tokens (a 200-token answer streamed), fo-refused, fo-503 or "
                                     "qt-relay."),
                      QStringLiteral("kind")});
    parser.addOption({QStringLiteral("client"),
                      QStringLiteral("With --profile tokens: the client's format, openai or anthropic (default: "
                                     "the upstream's, a same-API stream)."),
                      QStringLiteral("api")});
    parser.addOption({QStringLiteral("upstream"),
                      QStringLiteral("With --profile tokens: the upstream's API, openai (Chat chunks, default) or "
                                     "anthropic (Messages events)."),
                      QStringLiteral("api"), QStringLiteral("openai")});
    parser.addOption({QStringLiteral("token-delay-ms"),
                      QStringLiteral("With --profile tokens: the mock's pause between events (default 0: the "
                                     "whole answer in one write)."),
                      QStringLiteral("ms"), QStringLiteral("0")});
    parser.addOption(
        {QStringLiteral("floors"),
         QStringLiteral("Also measure two byte relays to the same mock (Qt sockets on the engine's "
                        "dispatcher, and plain epoll): what the extra hop costs before any gateway work.")});
    parser.addOption({QStringLiteral("sdk-headers"),
                      QStringLiteral("Send the header lines an official SDK sends (about 480 bytes more per "
                                     "request head) on every request.")});
    parser.process(app);
    if (parser.isSet(QStringLiteral("sdk-headers")))
        g_extraHeaders = kSdkHeaders;
    Options o;
    o.n = parser.value(QStringLiteral("n")).toInt();
    o.total = parser.value(QStringLiteral("total")).toInt();
    o.concurrency = parser.value(QStringLiteral("concurrency")).toInt();
    o.streams = parser.value(QStringLiteral("streams")).toInt();

    // The mocks run on their own thread so they do not share an event loop with the driver.
    QThread mockThread;
    mockThread.setObjectName(QStringLiteral("mock"));
    mockThread.start();
    QObject anchor;
    anchor.moveToThread(&mockThread);
    sw::demo::FakeUpstream *mock = nullptr;
    sw::demo::FakeUpstream *failing = nullptr;
    quint16 deadPort = 0;
    QMetaObject::invokeMethod(
        &anchor,
        [&] {
            mock = new sw::demo::FakeUpstream;
            mock->setLabel(QStringLiteral("mock"));
            failing = new sw::demo::FakeUpstream;
            sw::demo::Fault f;
            f.kind = sw::demo::Fault::Status;
            f.status = 503;
            if (!mock->listen() || !failing->listen())
                qFatal("mock upstream could not listen");
            failing->setFault(f);
            QTcpServer probe; // a port nobody listens on: connections are refused
            probe.listen(QHostAddress::LocalHost, 0);
            deadPort = probe.serverPort();
        },
        Qt::BlockingQueuedConnection);
    const QUrl mockUrl(mock->baseUrl());
    std::printf("mock upstream at %s (zero-delay replies)\n", qPrintable(mockUrl.toString()));

    sw::EngineHost gateway;
    sw::Engine::Options eo;
    eo.config = benchConfig(mockUrl, QUrl(failing->baseUrl()), deadPort);
    QString error;
    if (!gateway.start(std::move(eo), QString(), &error))
        qFatal("gateway did not start: %s", qPrintable(error));
    const QUrl gatewayUrl(gateway.baseUrl());
    std::printf("gateway at %s\n", qPrintable(gatewayUrl.toString()));
    // The gateway first, then the mocks on their own thread, then that thread.
    const auto shutdown = [&] {
        gateway.stop();
        QMetaObject::invokeMethod(
            &anchor,
            [&] {
                delete mock;
                delete failing;
            },
            Qt::BlockingQueuedConnection);
        mockThread.quit();
        mockThread.wait();
        return 0;
    };
    g_engineCpuNs = [&gateway] {
        qint64 ns = 0;
        gateway.runBlocking([&ns](sw::Engine &) {
            timespec ts{};
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
            ns = qint64(ts.tv_sec) * 1000000000 + ts.tv_nsec;
        });
        return ns;
    };

    // Upstream connections the mock accepted while the gateway was measured: with
    // keep-alive this stays near the concurrency, never at the request count.
    auto accepted = [&] {
        int n = 0;
        QMetaObject::invokeMethod(
            &anchor, [&] { n = mock->acceptedConnections(); }, Qt::BlockingQueuedConnection);
        return n;
    };
    QList<Result> results;
    if (const QString kind = parser.value(QStringLiteral("profile")); !kind.isEmpty()) {
        // One kind of request only, so a profile of the engine thread is one request's path.
        const QHash<QString, std::pair<QByteArray, QByteArray>> kinds{
            {QStringLiteral("chat"),
             {"/v1/chat/completions",
              R"({"model":"gpt-bench","stream":false,"messages":[{"role":"user","content":"ping"}]})"}},
            {QStringLiteral("stream"),
             {"/v1/messages",
              R"({"model":"claude-bench","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"ping"}]})"}},
            {QStringLiteral("fo-refused"),
             {"/v1/chat/completions",
              R"({"model":"fo-refused","stream":false,"messages":[{"role":"user","content":"ping"}]})"}},
            {QStringLiteral("fo-503"),
             {"/v1/chat/completions",
              R"({"model":"fo-503","stream":false,"messages":[{"role":"user","content":"ping"}]})"}},
        };
        if (kind == QLatin1String("qt-relay")) { // the relay thread's instructions for the chat request
            bench::QtRelay relay(mockUrl);
            results << run(QStringLiteral("qt relay"), QStringLiteral("profile ") + kind, relay.baseUrl(),
                           kinds[QStringLiteral("chat")].first, kinds[QStringLiteral("chat")].second, 1, o.n, {}, 100);
            printTable(results);
            return shutdown();
        }
        if (kind == QLatin1String("tokens")) {
            // A real answer's shape: the mock streams kTokenDeltas content deltas in the
            // upstream's API (--upstream openai: Chat chunks, or anthropic: Messages events), the
            // client streams them back in its own format (--client, the upstream's by default);
            // per request and per upstream event. --token-delay-ms paces the events (one socket
            // write, one read each, as a model streams); without it the mock writes the whole
            // answer at once.
            const int delayMs = parser.value(QStringLiteral("token-delay-ms")).toInt();
            const bool anthropicUpstream = parser.value(QStringLiteral("upstream")) == QLatin1String("anthropic");
            const QByteArray reply = anthropicUpstream ? anthropicTokenStream(kTokenDeltas) : tokenStream(kTokenDeltas);
            const int events = int(reply.count("\n\n")) - (anthropicUpstream ? 0 : 1); // [DONE] is no event
            QMetaObject::invokeMethod(
                &anchor,
                [&] {
                    mock->setRawReply(reply);
                    sw::demo::Fault pacing;
                    pacing.chunkDelayMs = delayMs;
                    mock->setFault(pacing);
                },
                Qt::BlockingQueuedConnection);
            const QString client = parser.isSet(QStringLiteral("client"))
                                       ? parser.value(QStringLiteral("client"))
                                       : (anthropicUpstream ? QStringLiteral("anthropic") : QStringLiteral("openai"));
            const QByteArray model = anthropicUpstream ? "claude-bench" : "gpt-bench";
            const QByteArray path =
                client == QLatin1String("anthropic") ? QByteArray("/v1/messages") : QByteArray("/v1/chat/completions");
            const QByteArray body = R"({"model":")" + model + R"(","stream":true,)" +
                                    (path == "/v1/messages" ? QByteArray(R"("max_tokens":64,)") : QByteArray()) +
                                    R"("messages":[{"role":"user","content":"ping"}]})";
            results << run(QStringLiteral("gateway"), QStringLiteral("profile ") + kind, gatewayUrl, path, body, 1, o.n,
                           {}, 100);
            printTable(results);
            const double perEvent = results.last().engineCpuUs / events;
            std::printf("engine CPU per upstream event: %.2f us (%d events per answer)\n", perEvent, events);
            std::printf("summary tokens_engine_cpu_per_event_us %.2f\n", perEvent);
            return shutdown();
        }
        if (!kinds.contains(kind))
            qFatal("--profile takes chat, stream, tokens, fo-refused, fo-503 or qt-relay");
        std::function<void()> before;
        if (kind.startsWith(QLatin1String("fo-")))
            before = [&gateway] { gateway.runBlocking([](sw::Engine &e) { e.clearMarks({}); }); };
        // One connection unless --concurrency is given (the engine's cost with many sockets open).
        const int c = parser.isSet(QStringLiteral("concurrency")) ? o.concurrency : 1;
        results << run(QStringLiteral("gateway"), QStringLiteral("profile ") + kind, gatewayUrl, kinds[kind].first,
                       kinds[kind].second, c, o.n, {}, 100, before);
        printTable(results);
        return shutdown();
    }
    results = measure(QStringLiteral("direct"), mockUrl, o);
    const int acceptedBefore = accepted();
    results += measure(QStringLiteral("gateway"), gatewayUrl, o);
    const int gatewayConnections = accepted() - acceptedBefore;
    int gatewayRequests = 0;
    for (const auto &r : results)
        if (r.target == QLatin1String("gateway"))
            gatewayRequests += r.n;

    // Failover: each request fails over afresh (marks cleared before it, outside the timed window).
    auto clearMarks = [&gateway] { gateway.runBlocking([](sw::Engine &e) { e.clearMarks({}); }); };
    auto body = [](const char *model) {
        return QByteArray(R"({"model":")") + model +
               R"(","stream":false,"messages":[{"role":"user","content":"ping"}]})";
    };
    const int nf = std::max(100, o.n / 4);
    results << run(QStringLiteral("failover"), QStringLiteral("failover from refused"), gatewayUrl,
                   "/v1/chat/completions", body("fo-refused"), 1, nf, {}, 50, clearMarks);
    results << run(QStringLiteral("failover"), QStringLiteral("failover from 503"), gatewayUrl, "/v1/chat/completions",
                   body("fo-503"), 1, nf, {}, 50, clearMarks);
    results << run(QStringLiteral("failover"), QStringLiteral("first candidate marked"), gatewayUrl,
                   "/v1/chat/completions", body("fo-503"), 1, o.n, {}, 50);

    if (parser.isSet(QStringLiteral("floors"))) {
        const bench::QtRelay qtRelay(mockUrl); // on the engine's dispatcher
        results += measureFloor(QStringLiteral("qt relay"), qtRelay.baseUrl(), o);
        qputenv("SWITCHMAN_ENGINE_DISPATCHER", "unix"); // read when the relay's thread is set up
        const bench::QtRelay pollRelay(mockUrl);
        qunsetenv("SWITCHMAN_ENGINE_DISPATCHER");
        results += measureFloor(QStringLiteral("qt-poll relay"), pollRelay.baseUrl(), o);
        const bench::EpollRelay epollRelay(mockUrl);
        results += measureFloor(QStringLiteral("epoll relay"), epollRelay.baseUrl(), o);
    }
    if (parser.isSet(QStringLiteral("transports"))) {
        sw::upstream::QtTransport qnam;
        results += measureTransport(qnam, QStringLiteral("QtTransport"), mockUrl, o);
        sw::upstream::SocketTransport sockets;
        results += measureTransport(sockets, QStringLiteral("SocketTransp"), mockUrl, o);
    }
    printTable(results);
    printRatios(results);
    std::printf("\nupstream connections opened by the gateway: %d for %d requests\n", gatewayConnections,
                gatewayRequests);
    if (const QString binary = parser.value(QStringLiteral("switchman")); !binary.isEmpty()) {
        gateway.stop(); // the in-process gateway is idle from here; it must not share the mock's time
        const int clients = parser.value(QStringLiteral("stream-clients")).toInt();
        const auto pacing = [&](int delayMs) {
            QMetaObject::invokeMethod(
                &anchor,
                [&] {
                    sw::demo::Fault f;
                    f.chunkDelayMs = delayMs;
                    mock->setFault(f);
                },
                Qt::BlockingQueuedConnection);
        };
        const auto mockOpen = [&] {
            int n = 0;
            QMetaObject::invokeMethod(
                &anchor, [&] { n = mock->openConnections(); }, Qt::BlockingQueuedConnection);
            return n;
        };
        const StreamsResult p = measureProcess(binary, mockUrl, clients, pacing, mockOpen);
        std::printf("\nswitchman process (%s)\n", qPrintable(binary));
        std::printf("%-40s %10.1f MiB\n", "idle RSS", p.idleRssMiB);
        std::printf("%-40s %10.1f MiB  (%d streams in %.1f s, %d open upstream at once)\n",
                    qPrintable(QStringLiteral("peak RSS, %1 concurrent streams").arg(p.streams)), p.peakRssMiB,
                    p.streams, p.seconds, p.peakUpstreams);
        std::printf("%-40s %10lld  (%lld frames per stream expected, %d streams failed or cut)\n", "frames lost",
                    static_cast<long long>(p.framesLost), static_cast<long long>(p.expectedFrames), p.failed);
        std::printf("%-40s %10.1f MiB  (%s)\n", "peak RSS, one 16 MiB conversation", p.largePeakRssMiB,
                    p.largeOk ? "answered" : "NOT answered");
        std::printf("%-40s %10.1f MiB  (%d ms after its answer)\n", "RSS after it, settled", p.largeSettledRssMiB,
                    kSettleMs);
        std::printf("summary idle_rss_mib %.1f\nsummary streams_peak_rss_mib %.1f\nsummary streams_frames_lost %lld\n"
                    "summary streams_failed %d\nsummary streams_overlap %d\n"
                    "summary large_peak_rss_mib %.1f\nsummary large_settled_rss_mib %.1f\nsummary large_failed %d\n",
                    p.idleRssMiB, p.peakRssMiB, static_cast<long long>(p.framesLost), p.failed, p.peakUpstreams,
                    p.largePeakRssMiB, p.largeSettledRssMiB, p.largeOk ? 0 : 1);
    }
    printSummary(results);

    return shutdown();
}
