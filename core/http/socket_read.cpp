#include "core/http/socket_read.h"

#include <QIODevice>
#include <QtCore/private/qiodevice_p.h>

#include <cstring>

namespace sw::http {

namespace {

QIODevicePrivate *privateOf(const QIODevice *device) {
    return static_cast<QIODevicePrivate *>(QObjectPrivate::get(const_cast<QIODevice *>(device)));
}

} // namespace

bool useSmallReadChunks(QIODevice *device) {
    if (!device)
        return false;
    QIODevicePrivate *d = privateOf(device);
    if (d->readBuffers.isEmpty())
        return false;
    for (QRingBuffer &buffer : d->readBuffers)
        buffer.setChunkSize(kReadChunkBytes);
    return true;
}

bool replaceUnreadPrefix(QIODevice *device, qint64 length, QByteArrayView with) {
    if (!device || length < 0)
        return false;
    QIODevicePrivate *d = privateOf(device);
    if (d->transactionStarted || d->readBuffers.isEmpty() || d->buffer.size() < length)
        return false;
    d->buffer.free(length);
    if (!with.isEmpty())
        std::memcpy(d->buffer.reserveFront(with.size()), with.data(), size_t(with.size()));
    return true;
}

qint64 bufferedBytes(const QIODevice *device) {
    if (!device)
        return -1;
    const QIODevicePrivate *d = privateOf(device);
    if (d->readBuffers.isEmpty())
        return -1;
    return d->buffer.size();
}

int readChunkSize(const QIODevice *device) {
    if (!device)
        return -1;
    const QIODevicePrivate *d = privateOf(device);
    if (d->readBuffers.isEmpty())
        return -1;
    return d->readBuffers.at(d->currentReadChannel < d->readBuffers.size() ? d->currentReadChannel : 0).chunkSize();
}

} // namespace sw::http
