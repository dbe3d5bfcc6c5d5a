#include "core/util/save_file.h"

#include <cerrno>
#include <cstring>

#ifdef Q_OS_UNIX
#include <unistd.h>
#endif

namespace sw::util {

bool writeAndCommit(QSaveFile &file, const QByteArray &bytes, QString *reason) {
    const auto fail = [&file, reason](const QString &why) {
        if (reason)
            *reason = why;
        file.cancelWriting(); // commit() or the destructor then removes the temporary file
        return false;
    };
    // A short write (the disk filled up part way) is followed by one for the rest, which then
    // fails with the system's reason.
    for (qint64 written = 0; written < bytes.size();) {
        const qint64 n = file.write(bytes.constData() + written, bytes.size() - written);
        if (n <= 0)
            return fail(file.errorString());
        written += n;
    }
    // A buffered QSaveFile reaches write(2) for a file under 16 KiB only when flushed, and Qt
    // 6.4's commit() does not notice a write that fails then (disk full): it would rename the
    // empty or partial temporary file over the target.
    if (!file.flush() || file.error() != QFileDevice::NoError)
        return fail(file.errorString());
#ifdef Q_OS_UNIX
    // commit() syncs before its rename too, but ignores the result; some file systems (NFS,
    // quotas, delayed allocation) report a full disk or an I/O error only here.
    if (::fsync(file.handle()) != 0)
        return fail(QString::fromLocal8Bit(std::strerror(errno)));
#endif
    if (!file.commit()) {
        if (reason)
            *reason = file.errorString();
        return false;
    }
    return true;
}

} // namespace sw::util
