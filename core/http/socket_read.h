#pragma once
// How much memory a socket keeps for reading while nothing is waiting to be read.
//
// Qt reads what the kernel holds into a ring buffer whose chunks are at least 16 KiB, and keeps
// the last chunk for the socket's whole life so the next read can reuse it. A gateway holding a
// thousand open streams keeps two such chunks per stream (client side and upstream side) while
// it holds no unread byte at all. useSmallReadChunks() lowers that block to kReadChunkBytes: a
// read that brings more gets a block of exactly its size, freed once it has been read, and
// what stays between reads is at most kReadChunkBytes.
//
// Qt's read path is otherwise unchanged (this is the ring buffer's block size, not the device's
// buffering mode). A block size of 0 would keep nothing, but Qt 6.4's QIODevice::readLine()
// grows its result by the block size and never ends with 0. Call it once the socket is open
// (after setSocketDescriptor() or connectToHost()); it lasts for the socket's life, including
// reuse from a pool.

#include <QByteArrayView>

class QIODevice;

namespace sw::http {

inline constexpr int kReadChunkBytes = 1024;

// Returns false (and changes nothing) when the device has no read buffer yet (not open).
bool useSmallReadChunks(QIODevice *device);

// Replaces the first `length` unread bytes of the device's read buffer with `with`, for a reader
// that has not looked at them yet. False (and nothing changed) when a read transaction is open
// (its reader has seen part of the buffer) or fewer than `length` bytes are buffered.
bool replaceUnreadPrefix(QIODevice *device, qint64 length, QByteArrayView with);

// The bytes in the device's read buffer, those a read transaction has read included (a peer's bytes
// the process holds), or -1 when it has none.
qint64 bufferedBytes(const QIODevice *device);

// The ring-buffer block size of the device's current read channel (16384 by default in Qt 6.4),
// or -1 when it has none.
int readChunkSize(const QIODevice *device);

} // namespace sw::http
