// Chaos soak (issue 15): a benchmark, not a test. An in-process gateway on its
// own engine thread, in front of four scripted fake upstreams (one per upstream
// API) that switch at random every few seconds among ok, 503, 429 with
// Retry-After, reset, stall before headers, stall after 200 and content then
// reset; `--clients` concurrent clients on all four inbound routes, streaming
// and not; 5 % of streaming requests are aborted by their client mid-stream.
//
// It checks, and prints:
//  - every request ended: none outlived the failover deadline (plus a grace);
//  - none was answered twice (bytes after a complete answer) or by two
//    candidates (two upstream labels in one answer);
//  - a client saw an error only when every candidate had failed, or after
//    commit (the request's attempt rows say which), or at the deadline;
//  - attempt rows, log lines, usage rows and /metrics counters agree;
//  - RSS and open file descriptors after the warm-up stay within 10 % (median of
//    the first two minutes after warm-up against the last two);
//  - requests per second, p50 / p99 latency.
// The process holds the clients and the fakes too: RSS and fds are the whole
// process's, which is why the fakes' request logs are cleared as it runs.
//
// The attempt rows also reach this (GUI) thread through a SnapshotPublisher on the
// engine thread, the window's path: every row must arrive there too.
//
//   soak [--minutes 10] [--clients 200] [--seed N] [--deadline-ms 20000] [--warmup-s S]
// Exit status 1 when a check failed.

#include "core/config/config.h"
#include "core/demo/fake_upstream.h"
#include "core/engine_host.h"
#include "core/snapshot/snapshot_publisher.h"
#include "core/telemetry/telemetry.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QHash>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QSet>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTimer>
#include <QUrl>

#include <algorithm>
#include <cstdio>
#include <deque>
#ifdef SWITCHMAN_MIMALLOC
#include <mimalloc.h>
#else
#include <malloc.h>
#endif
#include <memory>
#include <vector>

using namespace sw;

namespace {

const char *const kRoutes[] = {"/v1/messages", "/v1/chat/completions", "/v1/responses", "/v1/pi/stream"};
// What ends a successful stream of each route, and what marks an error in it.
const char *const kStreamDone[] = {"event: message_stop", "data: [DONE]", "event: response.completed",
                                   "\"type\":\"done\""};
const char *const kStreamError[] = {"event: error", "\"error\":", "event: response.failed", "\"type\":\"error\""};
const char *const kLabels[] = {"SOAKUP-A", "SOAKUP-B", "SOAKUP-C", "SOAKUP-D"};

QByteArray requestBody(int route, bool stream) {
    const QByteArray s = stream ? "true" : "false";
    switch (route) {
    case 0:
        return R"({"model":"soak","max_tokens":64,"stream":)" + s +
               R"(,"messages":[{"role":"user","content":"soak"}]})";
    case 1:
        return R"({"model":"soak","stream":)" + s + R"(,"messages":[{"role":"user","content":"soak"}])" +
               (stream ? R"(,"stream_options":{"include_usage":true}})" : "}");
    case 2:
        return R"({"model":"soak","input":"soak","stream":)" + s + "}";
    default:
        return R"({"model":"soak","stream":)" + s +
               R"(,"context":{"messages":[{"role":"user","content":"soak","timestamp":0}]}})";
    }
}

// The seven upstream behaviours, ok weighted up so a good share of requests can succeed.
struct Mode {
    const char *name;
    demo::Fault fault;
    int weight;
};
std::vector<Mode> modes() {
    using demo::Fault;
    auto f = [](Fault::Kind k, int status = 0, QByteArray retryAfter = {}) {
        Fault x;
        x.kind = k;
        x.status = status;
        x.retryAfter = std::move(retryAfter);
        x.chunkDelayMs = 15; // streams last a little, so aborts and resets land mid-stream
        return x;
    };
    return {{"ok", f(Fault::None), 4},
            {"503", f(Fault::Status, 503), 1},
            {"429+Retry-After", f(Fault::Status, 429, "2"), 1},
            {"reset", f(Fault::Reset), 1},
            {"stall-before-headers", f(Fault::StallBeforeHeaders), 1},
            {"stall-after-200", f(Fault::StallAfter200), 1},
            {"content-then-reset", f(Fault::ResetAfterContent), 1}};
}

double percentileMs(std::vector<qint32> v, double p) {
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5))];
}

double rssMiB() {
    QFile f(QStringLiteral("/proc/self/status"));
    if (!f.open(QIODevice::ReadOnly))
        return -1;
    for (const QByteArray &line : f.readAll().split('\n'))
        if (line.startsWith("VmRSS:"))
            return line.mid(6).trimmed().split(' ').value(0).toDouble() / 1024.0;
    return -1;
}

// What the allocator holds: with glibc, bytes handed out and not had back (flat while RSS grows
// means the heap is fragmenting, growing with it means something is being kept); with mimalloc
// (the product's allocator), the memory it has committed from the system.
double heapInUseMiB() {
#ifdef SWITCHMAN_MIMALLOC
    size_t elapsedMs = 0, userMs = 0, systemMs = 0, rss = 0, peakRss = 0, committed = 0, peakCommitted = 0, faults = 0;
    mi_process_info(&elapsedMs, &userMs, &systemMs, &rss, &peakRss, &committed, &peakCommitted, &faults);
    return double(committed) / (1024.0 * 1024.0);
#else
    const struct mallinfo2 mi = mallinfo2();
    return double(mi.uordblks + mi.hblkhd) / (1024.0 * 1024.0);
#endif
}

int openFds() {
    return int(QDir(QStringLiteral("/proc/self/fd")).entryList(QDir::NoDotAndDotDot | QDir::AllEntries).size());
}

double median(std::vector<double> v) {
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// What the soak learns from the engine's telemetry (queued to the main thread).
struct AttemptRow {
    telemetry::AttemptOutcome outcome;
    QString candidate;
    QString logOutcome;
    qint64 seenMs;
};

struct Tally {
    qint64 started = 0, ok = 0, clientErrors = 0, aborted = 0;
    qint64 outlived = 0, answeredTwice = 0, twoCandidates = 0;
    qint64 errAllFailed = 0, errAfterCommit = 0, errDeadline = 0, errUnexplained = 0;
    qint64 attempts = 0, failedAttempts = 0, skippedAttempts = 0, committedAttempts = 0, abortedAttempts = 0;
    qint64 refusedRequests = 0; // answered by the gateway itself: a record, not an attempt
    // The second row of an attempt whose answer broke off after commit: /metrics counts the
    // attempt once, as committed (its failure is in switchman_candidate_failures_total).
    qint64 afterCommitRows = 0;
    qint64 failoverLogLines = 0, usageRows = 0, usageOk = 0, usageError = 0;
    QHash<QString, qint64> attemptsByOutcome;
    QStringList unexplained; // a few request ids, for the report
};

class Soak;

// One client: one request per connection (Connection: close), then the next.
class Client final : public QObject {
public:
    Client(Soak *soak, int index);
    void start();

private:
    void onReadyRead();
    void parseBody();
    void complete(bool framed);
    void endRequest();
    void fail();

    Soak *m_soak;
    QTcpSocket *m_socket = nullptr;
    QTimer m_watchdog;
    QTimer m_grace;
    QElapsedTimer m_clock;
    int m_route = 0;
    bool m_stream = false;
    bool m_abort = false;
    QByteArray m_in;
    QByteArray m_body;
    bool m_headDone = false, m_done = false, m_chunked = false;
    qint64 m_contentLength = -1;
    int m_status = 0;
    QString m_requestId;
};

class Soak final : public QObject {
public:
    struct Options {
        int minutes = 10;
        int clients = 200;
        quint32 seed = 1;
        int deadlineMs = 20000;
        int warmupS = -1; // -1: a third of the run, at least 60 s (see main)
    };
    explicit Soak(const Options &o) : m_o(o), m_rng(o.seed), m_modes(modes()) {}

    int run();
    QRandomGenerator &rng() { return m_rng; }
    quint16 port() const { return m_port; }
    int deadlineMs() const { return m_o.deadlineMs; }
    bool launching() const { return m_launching; }
    Tally &tally() { return m_t; }
    void recordLatency(qint64 ms) {
        if (m_measuring)
            m_latencies.push_back(qint32(ms));
    }
    void clientError(const QString &requestId) { m_pendingErrors.push_back({m_clock.elapsed(), requestId}); }
    int inFlight = 0;

private:
    void onAttempt(const telemetry::AttemptRecord &r);
    void switchMode(int upstream);
    void sample();
    void sweep(bool all);
    QByteArray httpGet(const QByteArray &path);

    Options m_o;
    QRandomGenerator m_rng;
    std::vector<Mode> m_modes;
    std::vector<std::unique_ptr<demo::FakeUpstream>> m_up;
    std::vector<QHash<QString, qint64>> m_modeSwitches;
    QHash<QString, std::vector<AttemptRow>> m_rows;
    std::deque<std::pair<qint64, QString>> m_pendingErrors;
    std::vector<qint32> m_latencies;
    std::vector<std::pair<double, double>> m_samples; // rss MiB, fds, after warm-up
    std::vector<qint64> m_sampleAtMs;
    QElapsedTimer m_clock;
    quint16 m_port = 0;
    qint64 m_snapshots = 0, m_snapshotAttempts = 0, m_snapshotBytes = 0;
    bool m_launching = true;
    bool m_measuring = false;
    qint64 m_measureStartMs = 0, m_measureEndMs = 0, m_measuredOk = 0;
    Tally m_t;
};

Client::Client(Soak *soak, int index) : QObject(soak), m_soak(soak) {
    Q_UNUSED(index);
    m_watchdog.setSingleShot(true);
    m_grace.setSingleShot(true);
    // The failover deadline bounds every request; 5 s of grace for the last bytes.
    connect(&m_watchdog, &QTimer::timeout, this, [this]() {
        ++m_soak->tally().outlived;
        std::printf("OUTLIVED: %s %s request %s after %lld ms\n", kRoutes[m_route], m_stream ? "stream" : "json",
                    qPrintable(m_requestId), qint64(m_clock.elapsed()));
        endRequest();
    });
    connect(&m_grace, &QTimer::timeout, this, [this]() { endRequest(); });
}

void Client::start() {
    if (!m_soak->launching())
        return;
    QRandomGenerator &rng = m_soak->rng();
    m_route = int(rng.bounded(4));
    m_stream = rng.bounded(2) == 1;
    m_abort = m_stream && rng.bounded(100) < 5;
    m_in.clear();
    m_body.clear();
    m_headDone = m_done = m_chunked = false;
    m_contentLength = -1;
    m_status = 0;
    m_requestId.clear();
    ++m_soak->tally().started;
    ++m_soak->inFlight;
    m_clock.start();
    m_watchdog.start(m_soak->deadlineMs() + 5000);
    m_socket = new QTcpSocket(this);
    connect(m_socket, &QTcpSocket::readyRead, this, &Client::onReadyRead);
    connect(m_socket, &QTcpSocket::disconnected, this, [this]() {
        if (!m_done)
            complete(false);
        else
            endRequest();
    });
    connect(m_socket, &QTcpSocket::errorOccurred, this, [this](QAbstractSocket::SocketError e) {
        if (e != QAbstractSocket::RemoteHostClosedError && !m_done)
            complete(false);
    });
    const QByteArray body = requestBody(m_route, m_stream);
    const QByteArray port = QByteArray::number(m_soak->port());
    m_socket->connectToHost(QStringLiteral("127.0.0.1"), m_soak->port());
    m_socket->write("POST " + QByteArray(kRoutes[m_route]) + " HTTP/1.1\r\nHost: 127.0.0.1:" + port +
                    "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                    QByteArray::number(body.size()) + "\r\n\r\n" + body);
}

void Client::onReadyRead() {
    const QByteArray fresh = m_socket->readAll();
    if (m_done) {
        if (!fresh.isEmpty()) {
            ++m_soak->tally().answeredTwice;
            std::printf("ANSWERED TWICE: request %s: %s\n", qPrintable(m_requestId), fresh.left(120).constData());
            endRequest();
        }
        return;
    }
    m_in += fresh;
    if (!m_headDone) {
        const qsizetype end = m_in.indexOf("\r\n\r\n");
        if (end < 0)
            return;
        const QByteArray head = m_in.left(end);
        m_status = head.mid(9, 3).toInt();
        for (const QByteArray &line : head.split('\n')) {
            const QByteArray l = line.trimmed();
            const QByteArray lower = l.toLower();
            if (lower.startsWith("transfer-encoding:") && lower.contains("chunked"))
                m_chunked = true;
            else if (lower.startsWith("content-length:"))
                m_contentLength = l.mid(15).trimmed().toLongLong();
            else if (lower.startsWith("x-switchman-request-id:"))
                m_requestId = QString::fromLatin1(l.mid(23).trimmed());
        }
        m_in.remove(0, end + 4);
        m_headDone = true;
    }
    parseBody();
}

void Client::parseBody() {
    if (m_chunked) {
        for (;;) {
            const qsizetype eol = m_in.indexOf("\r\n");
            if (eol < 0)
                break;
            bool ok = false;
            const qint64 size = m_in.left(eol).split(';').value(0).trimmed().toLongLong(&ok, 16);
            if (!ok)
                return complete(false);
            if (size == 0) {
                if (m_in.size() < eol + 4)
                    break;
                m_in.remove(0, eol + 4);
                return complete(true);
            }
            if (m_in.size() < eol + 2 + size + 2)
                break;
            m_body += m_in.mid(eol + 2, size);
            m_in.remove(0, eol + 2 + size + 2);
        }
    } else {
        m_body += m_in;
        m_in.clear();
        if (m_contentLength >= 0 && m_body.size() >= m_contentLength) {
            const QByteArray extra = m_body.mid(m_contentLength);
            m_body.truncate(m_contentLength);
            m_in = extra;
            return complete(true);
        }
    }
    if (m_abort && m_status == 200 && !m_body.isEmpty()) {
        ++m_soak->tally().aborted;
        m_done = true;
        m_socket->abort(); // mid-stream: the gateway must end the upstream leg and count it
        endRequest();
    }
}

// framed: the answer ended by its own framing (else: the connection ended first).
void Client::complete(bool framed) {
    if (m_done)
        return;
    m_done = true;
    Tally &t = m_soak->tally();
    int labels = 0;
    for (const char *label : kLabels)
        labels += m_body.contains(label) ? 1 : 0;
    if (labels > 1) {
        ++t.twoCandidates;
        std::printf("TWO CANDIDATES: request %s\n", qPrintable(m_requestId));
    }
    bool good = framed && m_status == 200;
    if (good && m_stream)
        good = m_body.contains(kStreamDone[m_route]) && !m_body.contains(kStreamError[m_route]);
    if (good) {
        ++t.ok;
        m_soak->recordLatency(m_clock.elapsed());
    } else {
        ++t.clientErrors;
        m_soak->clientError(m_requestId);
    }
    if (!m_in.isEmpty()) {
        ++t.answeredTwice;
        std::printf("ANSWERED TWICE: request %s: %s\n", qPrintable(m_requestId), m_in.left(120).constData());
    }
    if (framed && m_socket->state() == QAbstractSocket::ConnectedState)
        m_grace.start(200); // a second answer would arrive now
    else
        endRequest();
}

void Client::endRequest() {
    if (!m_socket)
        return;
    m_watchdog.stop();
    m_grace.stop();
    m_socket->disconnect(this);
    m_socket->abort();
    m_socket->deleteLater();
    m_socket = nullptr;
    --m_soak->inFlight;
    QTimer::singleShot(0, this, &Client::start);
}

void Soak::onAttempt(const telemetry::AttemptRecord &r) {
    if (r.outcome == telemetry::AttemptOutcome::Refused) {
        ++m_t.refusedRequests; // no upstream was tried: not in switchman_attempts_total either
        return;
    }
    ++m_t.attempts;
    switch (r.outcome) {
    case telemetry::AttemptOutcome::Committed:
        ++m_t.committedAttempts;
        break;
    case telemetry::AttemptOutcome::Failed:
        ++m_t.failedAttempts;
        break;
    case telemetry::AttemptOutcome::Skipped:
        ++m_t.skippedAttempts;
        break;
    case telemetry::AttemptOutcome::Aborted:
        ++m_t.abortedAttempts;
        break;
    case telemetry::AttemptOutcome::Refused:
        break; // counted above
    }
    if (r.logOutcome == QLatin1String("after_commit"))
        ++m_t.afterCommitRows;
    else
        ++m_t.attemptsByOutcome[telemetry::outcomeName(r.outcome)];
    m_rows[r.requestId].push_back({r.outcome, r.candidate, r.logOutcome, m_clock.elapsed()});
}

void Soak::switchMode(int upstream) {
    int total = 0;
    for (const Mode &m : m_modes)
        total += m.weight;
    int pick = int(m_rng.bounded(total));
    const Mode *mode = &m_modes.front();
    for (const Mode &m : m_modes) {
        if (pick < m.weight) {
            mode = &m;
            break;
        }
        pick -= m.weight;
    }
    m_up[size_t(upstream)]->setFault(mode->fault);
    m_up[size_t(upstream)]->clearRequests(); // the fake's log would grow for the whole run
    ++m_modeSwitches[size_t(upstream)][QString::fromLatin1(mode->name)];
    QTimer::singleShot(2000 + int(m_rng.bounded(4000)), this, [this, upstream]() { switchMode(upstream); });
}

// Classifies client errors once their attempt rows are in (5 s later), and drops
// old rows so bookkeeping does not grow with the run.
void Soak::sweep(bool all) {
    const qint64 now = m_clock.elapsed();
    while (!m_pendingErrors.empty() && (all || now - m_pendingErrors.front().first > 5000)) {
        const QString id = m_pendingErrors.front().second;
        m_pendingErrors.pop_front();
        const std::vector<AttemptRow> rows = m_rows.value(id);
        bool committed = false, deadline = false;
        QSet<QString> failed;
        for (const AttemptRow &r : rows) {
            committed = committed || r.outcome == telemetry::AttemptOutcome::Committed;
            deadline = deadline || r.logOutcome == QLatin1String("deadline") || r.logOutcome == QLatin1String("budget");
            if (r.outcome == telemetry::AttemptOutcome::Failed || r.outcome == telemetry::AttemptOutcome::Skipped)
                failed.insert(r.candidate);
        }
        if (committed) {
            ++m_t.errAfterCommit;
        } else if (failed.size() == 4) {
            ++m_t.errAllFailed;
        } else if (deadline) {
            ++m_t.errDeadline;
        } else {
            ++m_t.errUnexplained;
            if (m_t.unexplained.size() < 10) {
                QStringList what;
                for (const AttemptRow &r : rows)
                    what << r.candidate + QLatin1Char(':') + telemetry::outcomeName(r.outcome) + QLatin1Char('/') +
                                r.logOutcome;
                m_t.unexplained << (id.isEmpty() ? QStringLiteral("(no request id)") : id) + QStringLiteral(" [") +
                                       what.join(QLatin1Char(' ')) + QLatin1Char(']');
            }
        }
    }
    for (auto it = m_rows.begin(); it != m_rows.end();) {
        if (all || now - it->back().seenMs > 60000)
            it = m_rows.erase(it);
        else
            ++it;
    }
}

void Soak::sample() {
    if (!m_measuring)
        return;
    m_samples.push_back({rssMiB(), double(openFds())});
    m_sampleAtMs.push_back(m_clock.elapsed());
}

QByteArray Soak::httpGet(const QByteArray &path) {
    QTcpSocket s;
    s.connectToHost(QStringLiteral("127.0.0.1"), m_port);
    if (!s.waitForConnected(5000))
        return {};
    s.write("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + QByteArray::number(m_port) +
            "\r\nConnection: close\r\n\r\n");
    QByteArray all;
    while (s.waitForReadyRead(5000))
        all += s.readAll();
    all += s.readAll();
    const qsizetype end = all.indexOf("\r\n\r\n");
    QByteArray body = end >= 0 ? all.mid(end + 4) : QByteArray();
    if (all.left(end).toLower().contains("transfer-encoding: chunked")) {
        QByteArray out;
        for (qsizetype at = 0;;) {
            const qsizetype eol = body.indexOf("\r\n", at);
            if (eol < 0)
                break;
            const qint64 n = body.mid(at, eol - at).toLongLong(nullptr, 16);
            if (n <= 0)
                break;
            out += body.mid(eol + 2, n);
            at = eol + 2 + n + 2;
        }
        body = out;
    }
    return body;
}

int Soak::run() {
    m_clock.start();
    m_up.resize(4);
    m_modeSwitches.resize(4);
    const QStringList apis = {QStringLiteral("anthropic-messages"), QStringLiteral("openai-completions"),
                              QStringLiteral("openai-responses"), QStringLiteral("google-generative-ai")};
    const QStringList suffix = {QString(), QStringLiteral("/v1"), QStringLiteral("/v1"), QStringLiteral("/v1beta")};
    config::Config c;
    c.listen = QStringLiteral("127.0.0.1:0");
    config::RouteConfig route;
    route.name = QStringLiteral("soak");
    for (int i = 0; i < 4; ++i) {
        m_up[size_t(i)] = std::make_unique<demo::FakeUpstream>();
        m_up[size_t(i)]->setLabel(QString::fromLatin1(kLabels[i]));
        if (!m_up[size_t(i)]->listen()) {
            std::fprintf(stderr, "soak: a fake upstream could not listen\n");
            return 2;
        }
        config::ProviderConfig p;
        p.id = QStringLiteral("p%1").arg(i);
        p.api = apis[i];
        p.baseUrl = m_up[size_t(i)]->baseUrl() + suffix[i];
        p.maxRetries = 0;
        c.providers.insert(p.id, p);
        config::ModelConfig m;
        m.provider = p.id;
        m.id = QStringLiteral("m%1").arg(i);
        m.costInput = 1;
        m.costOutput = 2;
        c.models.insert(m.key(), m);
        route.candidates << m.key();
    }
    c.routes.insert(route.name, route);
    c.failover.deadlineMs = m_o.deadlineMs;
    // A stalled upstream ends the attempt after this much silence (the default, 5 min, is
    // longer than a soak's patience); the deadline still bounds the request as a whole.
    c.failover.upstreamIdleTimeoutMs = 5000;
    c.failover.keepaliveMs = 2000;
    c.limits.maxConnections = 4096;

    EngineHost host;
    Engine::Options eo;
    eo.config = c;
    // A ledger file, as the app keeps one: the usage rows the soak counts are the ones on disk.
    QTemporaryDir ledgerDir;
    eo.usageLedgerPath = ledgerDir.filePath(QStringLiteral("usage.sqlite"));
    QString error;
    if (!host.start(eo, {}, &error)) {
        std::fprintf(stderr, "soak: engine did not start: %s\n", qPrintable(error));
        return 2;
    }
    m_port = quint16(QUrl(host.baseUrl()).port());
    host.runBlocking([this](Engine &e) {
        auto *t = e.telemetry();
        connect(
            t, &telemetry::Telemetry::attemptRecorded, this,
            [this](const telemetry::AttemptRecord &r) { onAttempt(r); }, Qt::QueuedConnection);
        connect(
            t, &telemetry::Telemetry::usageRecorded, this,
            [this](const telemetry::UsageRow &r) {
                ++m_t.usageRows;
                ++(r.outcome == QLatin1String("ok") ? m_t.usageOk : m_t.usageError);
            },
            Qt::QueuedConnection);
        // The GUI's path: a SnapshotPublisher on the engine thread, snapshots queued to this
        // (the "GUI") thread and read there, as the window models do.
        auto *publisher = new snapshot::SnapshotPublisher(e, 250);
        connect(
            publisher, &snapshot::SnapshotPublisher::snapshotReady, this,
            [this](const snapshot::EngineSnapshot &s) {
                ++m_snapshots;
                m_snapshotAttempts += s.newAttempts.size() + s.droppedAttempts;
                for (const auto &a : s.newAttempts)
                    m_snapshotBytes += a.requestId.size() + a.candidate.size() + a.message.size();
                m_snapshotBytes += s.marks.size() + s.failureTotals.size() + s.newLogLines.size();
            },
            Qt::QueuedConnection);
        connect(
            t, &telemetry::Telemetry::logLine, this,
            [this](const QJsonObject &line) {
                if (line.value(QStringLiteral("msg")).toString() == QLatin1String("candidate failover"))
                    ++m_t.failoverLogLines;
            },
            Qt::QueuedConnection);
    });

    const qint64 runMs = qint64(m_o.minutes) * 60000;
    const qint64 warmupMs = m_o.warmupS >= 0 ? std::min<qint64>(qint64(m_o.warmupS) * 1000, runMs / 2)
                                             : std::max<qint64>(std::min<qint64>(60000, runMs / 5), runMs / 3);
    std::printf("soak: %d clients, %d min (warm-up %lld s), deadline %d ms, seed %u, gateway %s\n", m_o.clients,
                m_o.minutes, warmupMs / 1000, m_o.deadlineMs, m_o.seed, qPrintable(host.baseUrl()));
    std::fflush(stdout);
    for (int i = 0; i < 4; ++i)
        switchMode(i);
    m_latencies.reserve(size_t(runMs / 1000) * 400);
    for (int i = 0; i < m_o.clients; ++i)
        QTimer::singleShot(i * 5, this, [this, i]() { (new Client(this, i))->start(); });

    QTimer sampler;
    connect(&sampler, &QTimer::timeout, this, [this]() {
        sample();
        sweep(false);
    });
    sampler.start(5000);
    QTimer progress;
    connect(&progress, &QTimer::timeout, this, [this]() {
        std::printf("  %4lld s: %lld started, %lld ok, %lld errors, %lld aborted, in flight %d, RSS %.1f MiB (heap in "
                    "use %.1f), fds %d\n",
                    qint64(m_clock.elapsed() / 1000), m_t.started, m_t.ok, m_t.clientErrors, m_t.aborted, inFlight,
                    rssMiB(), heapInUseMiB(), openFds());
        std::fflush(stdout);
    });
    progress.start(60000);
    QTimer::singleShot(int(warmupMs), this, [this]() {
        m_measuring = true;
        m_measureStartMs = m_clock.elapsed();
        m_measuredOk = m_t.ok;
        sample();
    });
    QEventLoop loop;
    QTimer::singleShot(int(runMs), this, [&]() {
        m_launching = false;
        m_measuring = false;
        m_measureEndMs = m_clock.elapsed();
        m_measuredOk = m_t.ok - m_measuredOk;
        // Let every request still running end by itself (the deadline bounds them), then
        // let the engine's queued telemetry arrive.
        auto *drain = new QTimer(this);
        QElapsedTimer waited;
        waited.start();
        connect(drain, &QTimer::timeout, this, [&, drain, waited]() {
            if (inFlight == 0 || waited.elapsed() > m_o.deadlineMs + 10000) {
                drain->stop();
                QTimer::singleShot(3000, &loop, &QEventLoop::quit);
            }
        });
        drain->start(200);
    });
    loop.exec();
    sweep(true);

    // Figures from the gateway itself.
    const QByteArray metrics = httpGet("/metrics");
    QHash<QString, qint64> metricAttempts;
    qint64 metricFailures = 0, metricInFlight = -1;
    static const QRegularExpression attemptsRe(
        QStringLiteral("^switchman_attempts_total\\{[^}]*outcome=\"([a-z]+)\"[^}]*\\} ([0-9]+)"),
        QRegularExpression::MultilineOption);
    for (auto it = attemptsRe.globalMatch(QString::fromUtf8(metrics)); it.hasNext();) {
        const auto m = it.next();
        metricAttempts[m.captured(1)] += m.captured(2).toLongLong();
    }
    static const QRegularExpression failuresRe(
        QStringLiteral("^switchman_candidate_failures_total\\{[^}]*\\} ([0-9]+)"), QRegularExpression::MultilineOption);
    for (auto it = failuresRe.globalMatch(QString::fromUtf8(metrics)); it.hasNext();)
        metricFailures += it.next().captured(1).toLongLong();
    static const QRegularExpression inFlightRe(QStringLiteral("^switchman_requests_in_flight ([0-9-]+)"),
                                               QRegularExpression::MultilineOption);
    if (const auto m = inFlightRe.match(QString::fromUtf8(metrics)); m.hasMatch())
        metricInFlight = m.captured(1).toLongLong();

    // The report.
    int failedChecks = 0;
    auto check = [&failedChecks](bool ok, const char *what, const QString &detail) {
        std::printf("  [%s] %-58s %s\n", ok ? " ok " : "FAIL", what, qPrintable(detail));
        failedChecks += ok ? 0 : 1;
    };
    const Tally &t = m_t;
    const double secs = double(m_measureEndMs - m_measureStartMs) / 1000.0;
    std::printf("\nsoak: %lld requests (%lld ok, %lld client-visible errors, %lld aborted by their client)\n",
                t.started, t.ok, t.clientErrors, t.aborted);
    std::printf("upstream modes chosen:");
    for (int i = 0; i < 4; ++i) {
        std::printf("\n  %s:", kLabels[i]);
        for (auto it = m_modeSwitches[size_t(i)].cbegin(); it != m_modeSwitches[size_t(i)].cend(); ++it)
            std::printf(" %s=%lld", qPrintable(it.key()), it.value());
    }
    std::printf("\nerrors explained: %lld after commit, %lld every candidate failed, %lld at the deadline, %lld not\n",
                t.errAfterCommit, t.errAllFailed, t.errDeadline, t.errUnexplained);
    for (const QString &u : t.unexplained)
        std::printf("  unexplained: %s\n", qPrintable(u));
    std::printf("attempts: %lld rows (committed %lld, failed %lld, skipped %lld, aborted %lld); refused requests %lld; "
                "failover log lines %lld; usage rows %lld (ok %lld, error %lld)\n",
                t.attempts, t.committedAttempts, t.failedAttempts, t.skippedAttempts, t.abortedAttempts,
                t.refusedRequests, t.failoverLogLines, t.usageRows, t.usageOk, t.usageError);
    std::printf("/metrics: attempts");
    qint64 metricAttemptsTotal = 0;
    for (auto it = metricAttempts.cbegin(); it != metricAttempts.cend(); ++it) {
        std::printf(" %s=%lld", qPrintable(it.key()), it.value());
        metricAttemptsTotal += it.value();
    }
    std::printf("; candidate failures %lld; in flight %lld\n", metricFailures, metricInFlight);
    std::printf("GUI snapshots: %lld received on the main thread, carrying %lld attempts\n\nchecks:\n", m_snapshots,
                m_snapshotAttempts);

    check(t.outlived == 0 && inFlight == 0, "every request ended within the deadline (+5 s)",
          QStringLiteral("%1 outlived, %2 still open").arg(t.outlived).arg(inFlight));
    check(t.answeredTwice == 0, "no request answered twice", QString::number(t.answeredTwice));
    check(t.twoCandidates == 0, "no answer from two candidates", QString::number(t.twoCandidates));
    check(t.errUnexplained == 0, "errors only when all failed, after commit, or at deadline",
          QStringLiteral("%1 unexplained of %2").arg(t.errUnexplained).arg(t.clientErrors));
    bool byOutcome = true;
    for (auto it = t.attemptsByOutcome.cbegin(); it != t.attemptsByOutcome.cend(); ++it)
        byOutcome = byOutcome && metricAttempts.value(it.key()) == it.value();
    check(byOutcome && metricAttemptsTotal == t.attempts - t.afterCommitRows,
          "attempt rows == /metrics switchman_attempts_total",
          QStringLiteral("%1 rows less %2 second rows after commit, %3 counted")
              .arg(t.attempts)
              .arg(t.afterCommitRows)
              .arg(metricAttemptsTotal));
    check(t.failoverLogLines == t.failedAttempts + t.skippedAttempts, "failover log lines == failed + skipped attempts",
          QStringLiteral("%1 lines, %2 attempts").arg(t.failoverLogLines).arg(t.failedAttempts + t.skippedAttempts));
    check(metricFailures == t.failedAttempts, "/metrics candidate failures == failed attempts",
          QStringLiteral("%1 counted, %2 rows").arg(metricFailures).arg(t.failedAttempts));
    check(t.usageOk >= t.ok && t.usageRows <= t.attempts, "usage rows: one ok row per answered request at least",
          QStringLiteral("%1 ok rows, %2 ok answers; %3 rows of %4 attempts")
              .arg(t.usageOk)
              .arg(t.ok)
              .arg(t.usageRows)
              .arg(t.attempts));
    check(m_snapshotAttempts == t.attempts, "GUI snapshots carried every attempt row (or counted it dropped)",
          QStringLiteral("%1 of %2").arg(m_snapshotAttempts).arg(t.attempts));
    check(metricInFlight == 0, "/metrics requests in flight back to 0", QString::number(metricInFlight));

    // RSS and fds: the first two minutes after warm-up against the last two.
    std::vector<double> rssA, rssB, fdA, fdB;
    double rssMin = 1e9, rssMax = 0, fdMin = 1e9, fdMax = 0;
    const qint64 window = std::min<qint64>(120000, (m_measureEndMs - m_measureStartMs) / 3);
    for (size_t i = 0; i < m_samples.size(); ++i) {
        const auto [rss, fds] = m_samples[i];
        rssMin = std::min(rssMin, rss);
        rssMax = std::max(rssMax, rss);
        fdMin = std::min(fdMin, fds);
        fdMax = std::max(fdMax, fds);
        if (m_sampleAtMs[i] - m_measureStartMs <= window) {
            rssA.push_back(rss);
            fdA.push_back(fds);
        } else if (m_measureEndMs - m_sampleAtMs[i] <= window) {
            rssB.push_back(rss);
            fdB.push_back(fds);
        }
    }
    const double ra = median(rssA), rb = median(rssB), fa = median(fdA), fb = median(fdB);
    check(ra > 0 && rb <= ra * 1.10, "RSS after warm-up within 10 %",
          QStringLiteral("%1 -> %2 MiB (min %3, max %4)")
              .arg(ra, 0, 'f', 1)
              .arg(rb, 0, 'f', 1)
              .arg(rssMin, 0, 'f', 1)
              .arg(rssMax, 0, 'f', 1));
    check(fa > 0 && fb <= fa * 1.10, "open fds after warm-up within 10 %",
          QStringLiteral("%1 -> %2 (min %3, max %4)").arg(fa).arg(fb).arg(fdMin).arg(fdMax));

    std::vector<qint32> lat = m_latencies;
    std::printf("\nthroughput: %.1f ok req/s over %.0f s measured; latency of ok requests p50 %.0f ms, p99 %.0f ms "
                "(n=%zu)\n",
                secs > 0 ? double(m_measuredOk) / secs : 0.0, secs, percentileMs(lat, 0.5), percentileMs(lat, 0.99),
                lat.size());
    std::printf("soak: %s (%d checks failed)\n", failedChecks ? "FAILED" : "passed", failedChecks);
    std::fflush(stdout);
    host.stop();
    return failedChecks ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
    QCoreApplication app(argc, argv);
    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("Switchman chaos soak (a benchmark): see the header of bench/soak.cpp"));
    parser.addHelpOption();
    parser.addOption({QStringLiteral("minutes"), QStringLiteral("Run time (default 10)."), QStringLiteral("n"),
                      QStringLiteral("10")});
    parser.addOption({QStringLiteral("clients"), QStringLiteral("Concurrent clients (default 200)."),
                      QStringLiteral("n"), QStringLiteral("200")});
    parser.addOption(
        {QStringLiteral("seed"), QStringLiteral("Random seed (default 1)."), QStringLiteral("n"), QStringLiteral("1")});
    parser.addOption({QStringLiteral("deadline-ms"), QStringLiteral("failover.deadlineMs (default 20000)."),
                      QStringLiteral("ms"), QStringLiteral("20000")});
    parser.addOption(
        {QStringLiteral("warmup-s"),
         QStringLiteral("Seconds before RSS/fd baselines and rates are taken (default: a third of the run, "
                        "at least 60 s; heap arenas and bounded buffers fill for minutes)."),
         QStringLiteral("s")});
    parser.process(app);
    Soak::Options o;
    o.minutes = std::max(1, parser.value(QStringLiteral("minutes")).toInt());
    o.clients = std::max(1, parser.value(QStringLiteral("clients")).toInt());
    o.seed = parser.value(QStringLiteral("seed")).toUInt();
    o.deadlineMs = std::max(1000, parser.value(QStringLiteral("deadline-ms")).toInt());
    if (parser.isSet(QStringLiteral("warmup-s")))
        o.warmupS = std::max(0, parser.value(QStringLiteral("warmup-s")).toInt());
    Soak soak(o);
    return soak.run();
}
