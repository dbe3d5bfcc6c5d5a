#include "core/http/socket_write.h"

#include <QSslSocket>
#include <QTcpSocket>

#include <algorithm>
#include <cerrno>
#include <sys/socket.h>
#include <sys/types.h>
#include <utility>

namespace sw::http {

namespace {
bool sendsDirectly(QAbstractSocket *socket) {
    // Qt's buffer must be empty, or bytes sent now would overtake the ones it still holds; a TLS
    // socket's bytes must go through its encryption.
    return socket->bytesToWrite() == 0 && socket->state() == QAbstractSocket::ConnectedState &&
           socket->socketType() == QAbstractSocket::TcpSocket && socket->socketDescriptor() != -1 &&
           !qobject_cast<QSslSocket *>(socket);
}

struct BatchState {
    int depth = 0;
    std::vector<BatchedWriter *> writers;
    std::vector<BatchedWriter *> *flushing = nullptr; // the writers the closing batch is flushing
};
thread_local BatchState t_batch;

// From this size a write is handed to Qt's buffer whole, which keeps it by reference (Qt shares a
// QByteArray of 4 KiB or more), rather than copying the part the kernel did not take.
constexpr qsizetype kByReferenceBytes = 256 * 1024;
} // namespace

qint64 writeThrough(QAbstractSocket *socket, const char *data, qsizetype size, bool flushQueued) {
    if (!socket || size <= 0)
        return 0;
    qsizetype sent = 0;
    const bool direct = sendsDirectly(socket);
    if (direct) {
        const auto fd = int(socket->socketDescriptor());
        for (;;) {
            // MSG_NOSIGNAL: a peer that left answers EPIPE instead of killing the process.
            const ssize_t n = ::send(fd, data, size_t(size), MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n < 0 && errno == EINTR)
                continue;
            // A short count means the send buffer is full now: the rest waits in Qt's buffer
            // for the socket to become writable. An error (EPIPE, ECONNRESET) leaves every byte
            // to Qt's write, whose own send meets it and reports it the way it always has.
            sent = n > 0 ? qsizetype(n) : 0;
            break;
        }
    }
    if (sent < size) {
        socket->write(data + sent, size - sent);
        // After a direct attempt the kernel is full (or the connection broken): another try now would only
        // fail again, so the socket's notifier sends the rest when the kernel has room.
        if (flushQueued && !direct)
            socket->flush();
    }
    return sent;
}

qint64 writeThrough(QAbstractSocket *socket, const QByteArray &bytes, bool flushQueued) {
    if (!socket || bytes.isEmpty())
        return 0;
    const bool direct = sendsDirectly(socket);
    // A large write (an answer of many MB) goes to Qt's buffer whole, which keeps it by reference:
    // sent directly, the part the kernel did not take would be copied there (a second copy of a
    // 60 MB answer for a slow client). Qt sends it when the socket is writable, on this loop turn's
    // poll, without calling back into the writer from inside this call.
    if (!direct || bytes.size() >= kByReferenceBytes) {
        socket->write(bytes); // Qt keeps one of 4 KiB or more by reference instead of copying it
        if (flushQueued && !direct)
            socket->flush();
        return 0;
    }
    return writeThrough(socket, bytes.constData(), bytes.size(), flushQueued);
}

BatchedWriter::~BatchedWriter() {
    WriteBatch::forget(this);
}

WriteBatch::WriteBatch() {
    ++t_batch.depth;
}

WriteBatch::~WriteBatch() {
    if (--t_batch.depth > 0)
        return;
    // Taken out first: a writer that writes while it flushes is outside any batch and sends at once.
    std::vector<BatchedWriter *> writers;
    writers.swap(t_batch.writers);
    // A writer destroyed by what another one's flush set off (a slot run from a socket error,
    // say) must drop out of this list too, not only out of the next batch's.
    std::vector<BatchedWriter *> *const outer = std::exchange(t_batch.flushing, &writers);
    for (std::size_t i = 0; i < writers.size(); ++i) {
        if (BatchedWriter *w = writers[i]) {
            writers[i] = nullptr;
            w->flushBatch();
        }
    }
    t_batch.flushing = outer;
}

bool WriteBatch::open() {
    return t_batch.depth > 0;
}

void WriteBatch::enlist(BatchedWriter *writer) {
    t_batch.writers.push_back(writer);
}

void WriteBatch::forget(BatchedWriter *writer) {
    std::replace(t_batch.writers.begin(), t_batch.writers.end(), writer, static_cast<BatchedWriter *>(nullptr));
    if (t_batch.flushing)
        std::replace(t_batch.flushing->begin(), t_batch.flushing->end(), writer, static_cast<BatchedWriter *>(nullptr));
}

} // namespace sw::http
