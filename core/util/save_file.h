#pragma once
// Finishing a QSaveFile so that the file it replaces is either all of the new bytes or left as
// it was: every write checked, the data on the disk, and only then the rename.

#include <QByteArray>
#include <QSaveFile>
#include <QString>

namespace sw::util {

// Writes `bytes` into `file` (a QSaveFile opened WriteOnly | Unbuffered, nothing written yet)
// and commits it. Unbuffered, so each write reaches write(2) at once and a failed one reports
// the system's reason: through Qt's buffer a partial write shows as "Unknown error" (a buffered
// file is still checked, flushed, before the commit). On any failure (disk full, quota, file size limit, I/O error) the
// temporary file is discarded, the target is untouched, and false comes back with the system's reason in *reason (when
// non-null).
bool writeAndCommit(QSaveFile &file, const QByteArray &bytes, QString *reason = nullptr);

} // namespace sw::util
