#pragma once
// Writes that bypass Qt's socket write buffer when the kernel can take the bytes at once.
//
// QAbstractSocket copies every write smaller than 4 KiB into a 32 KiB chunk of its write buffer
// and keeps that chunk for the socket's life, and it sends the bytes only on the event loop's
// next turn (or on flush()). A gateway that holds a thousand streams holds a thousand such
// chunks on each side. writeThrough() sends directly on a plain, connected TCP socket whose
// Qt buffer is empty; only what the kernel does not take (its send buffer is full) goes to
// Qt's buffer, behind which every later write queues, so the byte order on the wire is the
// order of the calls. A send error leaves the bytes to Qt's write, whose own attempt meets the
// same error and reports it as before (errorOccurred, disconnected). A TLS socket, or one not
// connected yet, is written through Qt as always.
//
// WriteBatch gathers what a writer produces inside one scope (e.g. every SSE frame decoded
// from one upstream read) into a single send when the outermost scope ends, rather than one
// system call per frame; nothing waits for the event loop.

#include <QByteArray>

#include <vector>

class QAbstractSocket;

namespace sw::http {

// Returns how many bytes the kernel took directly (the rest went to the socket's own buffer).
// `flushQueued`: bytes that went to Qt's buffer because the socket cannot be written directly (TLS)
// are flushed now rather than on the event loop's next turn.
qint64 writeThrough(QAbstractSocket *socket, const char *data, qsizetype size, bool flushQueued = false);
qint64 writeThrough(QAbstractSocket *socket, const QByteArray &bytes, bool flushQueued = false);

// Something that holds bytes back while a WriteBatch is open and sends them when it closes.
class BatchedWriter {
public:
    virtual void flushBatch() = 0;

protected:
    ~BatchedWriter(); // leaves the open batch, if any: its bytes are gone with it
};

// A scope on the current thread in which writers hold their bytes; the outermost scope's end
// flushes every writer that enlisted, in the order they enlisted. Scopes nest.
class WriteBatch {
public:
    WriteBatch();
    ~WriteBatch();
    WriteBatch(const WriteBatch &) = delete;
    WriteBatch &operator=(const WriteBatch &) = delete;

    static bool open();
    // Called by a writer the first time it holds bytes in the open batch.
    static void enlist(BatchedWriter *writer);
    static void forget(BatchedWriter *writer);
};

} // namespace sw::http
