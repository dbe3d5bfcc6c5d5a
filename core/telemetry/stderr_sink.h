#pragma once
// The headless log's way to stderr, off the threads that serve requests.
//
// A write to stderr blocks while its reader does not read (a paused `| less`, a stuck log shipper):
// written on the engine thread, 64 KiB of unread log froze every request and /healthz (probe V2
// F3). Lines go to a bounded queue instead, and one thread of the sink's own writes them. Past the
// bound, lines are dropped and counted; when the reader catches up, a line says how many were lost.
// A reader that is gone (EPIPE; SIGPIPE is ignored by main) costs the lines, not the process.

#include <QByteArray>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>

namespace sw::telemetry {

class StderrSink {
public:
    // What may wait for the reader, besides the batch being written (at most as much again); past it
    // a line is dropped.
    static constexpr qsizetype kMaxQueuedBytes = 1 << 20;

    // The process's sink, writing to file descriptor 2. Its thread starts with the first line.
    static StderrSink &instance();

    explicit StderrSink(int fd);
    ~StderrSink(); // writes what is queued, then ends its thread (never for instance(): see there)
    StderrSink(const StderrSink &) = delete;
    StderrSink &operator=(const StderrSink &) = delete;

    // Never waits for the reader.
    void write(QByteArray line);
    // Waits until every queued line is written or `timeoutMs` passed; true when written.
    bool flush(int timeoutMs);
    quint64 dropped() const;

    static constexpr int kFlushOnExitMs = 1000;

private:
    void run();
    static void writeAll(int fd, const QByteArray &bytes);

    const int m_fd;
    mutable std::mutex m_mutex;
    std::condition_variable m_wake;    // a line queued, or stop
    std::condition_variable m_drained; // the queue empty and nothing being written
    std::deque<QByteArray> m_queue;
    qsizetype m_queuedBytes = 0;
    quint64 m_dropped = 0;       // over the process's life
    quint64 m_droppedUnsaid = 0; // not yet reported in a line
    bool m_writing = false;
    bool m_stop = false;
    std::thread m_thread;
};

} // namespace sw::telemetry
