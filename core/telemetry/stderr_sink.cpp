#include "core/telemetry/stderr_sink.h"

#include <QDateTime>

#include <cerrno>
#include <chrono>
#include <unistd.h>
#include <utility>

namespace sw::telemetry {

StderrSink &StderrSink::instance() {
    // Never destroyed: lines logged while static objects are torn down still have somewhere to go,
    // and a writer stalled on its reader never holds up the process's exit (main flushes first).
    static StderrSink *sink = new StderrSink(STDERR_FILENO);
    return *sink;
}

StderrSink::StderrSink(int fd) : m_fd(fd) {}

StderrSink::~StderrSink() {
    // Only a sink of a test's is ever destroyed (instance() never is), over a descriptor whose reader
    // reads or is gone: its thread writes what is queued, then ends.
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_wake.notify_all();
    if (m_thread.joinable())
        m_thread.join();
}

void StderrSink::write(QByteArray line) {
    {
        std::lock_guard lock(m_mutex);
        if (m_queuedBytes + line.size() > kMaxQueuedBytes) {
            ++m_dropped;
            ++m_droppedUnsaid;
            return;
        }
        m_queuedBytes += line.size();
        m_queue.push_back(std::move(line));
        if (!m_thread.joinable())
            m_thread = std::thread([this]() { run(); });
    }
    m_wake.notify_one();
}

bool StderrSink::flush(int timeoutMs) {
    std::unique_lock lock(m_mutex);
    return m_drained.wait_for(lock, std::chrono::milliseconds(timeoutMs),
                              [this]() { return m_queue.empty() && !m_writing; });
}

quint64 StderrSink::dropped() const {
    std::lock_guard lock(m_mutex);
    return m_dropped;
}

void StderrSink::run() {
    std::unique_lock lock(m_mutex);
    for (;;) {
        m_wake.wait(lock, [this]() { return m_stop || !m_queue.empty(); });
        if (m_queue.empty() && m_stop)
            return;
        std::deque<QByteArray> batch;
        batch.swap(m_queue);
        m_queuedBytes = 0;
        const quint64 dropped = std::exchange(m_droppedUnsaid, 0);
        m_writing = true;
        lock.unlock();
        if (dropped > 0) {
            // Written by hand, not through Telemetry: no line of the sink's own goes back into it.
            const QByteArray note =
                "{\"ts\":\"" + QDateTime::currentDateTimeUtc().toString(Qt::ISODateWithMs).toLatin1() +
                "\",\"level\":\"warn\",\"msg\":\"log lines dropped: the reader of stderr fell behind\",\"dropped\":" +
                QByteArray::number(dropped) + "}\n";
            writeAll(m_fd, note);
        }
        for (const QByteArray &line : batch)
            writeAll(m_fd, line);
        lock.lock();
        m_writing = false;
        if (m_queue.empty())
            m_drained.notify_all();
    }
}

void StderrSink::writeAll(int fd, const QByteArray &bytes) {
    qsizetype at = 0;
    while (at < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.constData() + at, size_t(bytes.size() - at));
        if (n > 0)
            at += n;
        else if (n < 0 && errno == EINTR)
            continue;
        else
            return; // EPIPE (the reader is gone), a closed descriptor: the line is lost, not the process
    }
}

} // namespace sw::telemetry
