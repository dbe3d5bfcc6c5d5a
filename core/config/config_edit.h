#pragma once
// Changing a configuration file's text the way its owner would by hand: the
// values that change are written where they belong, and everything else
// (comments as "_" keys, fields save() would leave out, order, indentation, and
// whatever else changed in the file meanwhile) stays as written. save() writes
// a Config instead, which has no place for any of that. `switchman key create`
// edits through withTenantKey, the admin window's Save through withChanges.
// And the lock that makes such edits of one file take turns.

#include <QByteArray>
#include <QJsonObject>
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

// `json` (the text of a JSON object: a configuration file as read now) with
// the changes that turn `before` into `after` (the configuration as the editor
// loaded it and as it is to be saved, both config::toJson), and nothing else.
// Objects are compared member by member; an array or a scalar that differs is
// replaced whole; a member gone from `after` is removed (with its comma); one
// new in `after` is added at the end of its object, indented as its siblings;
// an object the file lacks, or holds as something else, is written whole. So a
// change made in the file since `before` was read stays, unless `after` changes
// the same value: then `after` wins. When the text cannot be edited in place
// (a repeated key, an escaped key name on the way), the result is the document
// as read with the same changes, re-indented: no field is lost, but the order
// becomes Qt's. *inPlace (when non-null) says which. Empty, with *error, when
// `json` is not a JSON object.
QByteArray withChanges(const QByteArray &json, const QJsonObject &before, const QJsonObject &after,
                       QString *error = nullptr, bool *inPlace = nullptr);

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
