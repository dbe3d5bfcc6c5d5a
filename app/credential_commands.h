#pragma once
// The credential and key commands: `key create --tenant NAME`,
// `credential set NAME`, `credential list`. They never print a secret except
// the new gateway key, once, on stdout.

#include <QString>
#include <QTextStream>

namespace sw::app {

// Adds a new key's hash to tenant NAME of the configuration at `configPath`
// (creating the file and the tenant as needed), saves atomically, then prints
// the key and how a running instance takes it. The file is edited as text under
// config::lockConfigFile: concurrent runs each keep the others' keys, and the
// rest of the file (comments, unknown fields, layout) stays as it was. Exit code:
// 0, 1 on failure, 2 unreadable file, 64 a tenant name that would be a comment
// (nothing printed, nothing saved on failure).
int keyCreate(const QString &configPath, bool explicitPath, const QString &tenant, QTextStream &out, QTextStream &err);
// Reads a secret from stdin (no echo on a terminal) into the keychain as NAME.
int credentialSet(const QString &name, QTextStream &out, QTextStream &err);
// What a running instance this command could not tell does with the new secret.
void credentialSetUnreached(QTextStream &err);
// Every credential reference of the configuration and where it lives; never values.
int credentialList(const QString &configPath, bool explicitPath, QTextStream &out, QTextStream &err);

} // namespace sw::app
