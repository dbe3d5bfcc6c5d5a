#pragma once
// Changing a configuration file's text the way its owner would by hand: the one
// value that changes is inserted where it belongs, and everything else (comments
// as "_" keys, fields this version does not know, order, indentation) stays as
// written. save() writes a Config instead, which has no place for any of that.
// And the lock that makes such edits of one file take turns.

#include <QByteArray>
#include <QString>
#include <memory>

class QLockFile;

namespace sw::config {

// `json` (the text of a JSON object, e.g. a configuration file as read) with
// `keyHash` appended to tenants.TENANT.keys, creating the tenant (with
// "admin": true when `admin`) and the tenants section as needed. When the text
// is laid out in a way this edit does not follow (a repeated key, an escaped
// name), the result is the document as read with that change, re-indented: no
// field is lost, but the order becomes Qt's.
QByteArray withTenantKey(const QByteArray &json, const QString &tenant, const QString &keyHash, bool admin);

// Makes the edits of one configuration file take turns: concurrent
// `switchman key create`s each read the file while holding this, so none
// writes back a copy that misses another's key. The lock is FILE.lock next to
// the file (its target when FILE is a symbolic link), in a private directory
// created as needed; it is released when the returned object is destroyed.
// A lock left by a process that died is taken over at once; one a live process
// holds is waited for (an edit takes milliseconds), then the error names that
// process. nullptr with *error when the lock cannot be had.
std::unique_ptr<QLockFile> lockConfigFile(const QString &path, QString *error);

} // namespace sw::config
