#include "core/config/config_edit.h"

#include "core/config/config_writer.h"

#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLockFile>

namespace sw::config {

namespace {

bool isSpace(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Positions in JSON text: where values start and end. Nothing is decoded, so a
// key is found by its exact spelling; the caller checks the outcome by parsing.
class Scanner {
public:
    explicit Scanner(const QByteArray &text) : m_s(text) {}

    qsizetype skipSpace(qsizetype i) const {
        while (i < m_s.size() && isSpace(m_s.at(i)))
            ++i;
        return i;
    }

    // `i` at the first character of a value: the position just after it.
    qsizetype skipValue(qsizetype i) const {
        if (i >= m_s.size())
            return m_s.size();
        const char c = m_s.at(i);
        if (c == '"')
            return skipString(i);
        if (c == '{' || c == '[') {
            int depth = 0;
            while (i < m_s.size()) {
                const char d = m_s.at(i);
                if (d == '"') {
                    i = skipString(i);
                    continue;
                }
                if (d == '{' || d == '[')
                    ++depth;
                else if ((d == '}' || d == ']') && --depth == 0)
                    return i + 1;
                ++i;
            }
            return i;
        }
        while (i < m_s.size() && !isSpace(m_s.at(i)) && m_s.at(i) != ',' && m_s.at(i) != '}' && m_s.at(i) != ']')
            ++i;
        return i;
    }

    // `open` at the '{' of an object: where the value of the member spelt `key` (quotes
    // included) starts, or -1. *close is the position of the object's '}', or -1 when
    // `open` is not an object.
    qsizetype member(qsizetype open, QByteArrayView key, qsizetype *close) const {
        *close = -1;
        if (open < 0 || open >= m_s.size() || m_s.at(open) != '{')
            return -1;
        qsizetype found = -1;
        qsizetype i = skipSpace(open + 1);
        while (i < m_s.size() && m_s.at(i) == '"') {
            const qsizetype keyEnd = skipString(i);
            const qsizetype value = skipSpace(skipSpace(keyEnd) + 1); // past the ':'
            if (QByteArrayView(m_s).sliced(i, keyEnd - i) == key)
                found = value;
            i = skipSpace(skipValue(value));
            if (i < m_s.size() && m_s.at(i) == ',')
                i = skipSpace(i + 1);
        }
        if (i >= m_s.size() || m_s.at(i) != '}')
            return -1;
        *close = i;
        return found;
    }

private:
    qsizetype skipString(qsizetype i) const {
        for (++i; i < m_s.size(); ++i) {
            if (m_s.at(i) == '\\')
                ++i;
            else if (m_s.at(i) == '"')
                return i + 1;
        }
        return m_s.size();
    }

    const QByteArray &m_s;
};

// `text` with `item` as the last entry of the object or array that opens at `open`
// and closes at `close`: after a comma and a space, or, when the entries are one a
// line, on a line of its own indented as the last one.
QByteArray appended(QByteArray text, qsizetype open, qsizetype close, const QByteArray &item) {
    qsizetype end = close; // just after the last entry
    while (end > open + 1 && isSpace(text.at(end - 1)))
        --end;
    if (end == open + 1)
        return text.insert(open + 1, item);
    const qsizetype newline = text.indexOf('\n', open);
    if (newline < 0 || newline > close)
        return text.insert(end, ", " + item);
    const qsizetype lineStart = text.lastIndexOf('\n', end - 1) + 1;
    qsizetype indentEnd = lineStart;
    while (text.at(indentEnd) == ' ' || text.at(indentEnd) == '\t')
        ++indentEnd;
    return text.insert(end, ",\n" + text.mid(lineStart, indentEnd - lineStart) + item);
}

QByteArray jsonString(const QString &text) {
    return QJsonDocument(QJsonArray{text}).toJson(QJsonDocument::Compact).chopped(1).sliced(1);
}

// The change made in the text; empty when the text is not laid out as expected.
QByteArray splice(const QByteArray &text, const QString &tenant, const QString &keyHash, bool admin) {
    const Scanner scan(text);
    const QByteArray hash = jsonString(keyHash);
    const QByteArray name = jsonString(tenant);
    const QByteArray entry = "{\"keys\": [" + hash + "]" + (admin ? ", \"admin\": true}" : "}");
    qsizetype rootClose = -1;
    const qsizetype root = scan.skipSpace(0);
    const qsizetype tenants = scan.member(root, "\"tenants\"", &rootClose);
    if (rootClose < 0)
        return {};
    if (tenants < 0)
        return appended(text, root, rootClose, "\"tenants\": {" + name + ": " + entry + "}");
    qsizetype tenantsClose = -1;
    const qsizetype found = scan.member(tenants, name, &tenantsClose);
    if (tenantsClose < 0)
        return {};
    if (found < 0)
        return appended(text, tenants, tenantsClose, name + ": " + entry);
    qsizetype foundClose = -1;
    const qsizetype keys = scan.member(found, "\"keys\"", &foundClose);
    if (foundClose < 0)
        return {};
    if (keys < 0)
        return appended(text, found, foundClose, "\"keys\": [" + hash + "]");
    if (text.at(keys) != '[')
        return {};
    return appended(text, keys, scan.skipValue(keys) - 1, hash);
}

} // namespace

QByteArray withTenantKey(const QByteArray &json, const QString &tenant, const QString &keyHash, bool admin) {
    // What the file must mean afterwards: the document as read, with the one change.
    QJsonObject root = QJsonDocument::fromJson(json).object();
    QJsonObject tenants = root.value(QStringLiteral("tenants")).toObject();
    const bool created = !tenants.contains(tenant);
    QJsonObject entry = tenants.value(tenant).toObject();
    if (admin && created)
        entry.insert(QStringLiteral("admin"), true);
    QJsonArray keys = entry.value(QStringLiteral("keys")).toArray();
    keys.append(keyHash);
    entry.insert(QStringLiteral("keys"), keys);
    tenants.insert(tenant, entry);
    root.insert(QStringLiteral("tenants"), tenants);
    const QJsonDocument expected(root);

    // The same change made in the text, kept only when it means exactly that.
    const QByteArray edited = splice(json, tenant, keyHash, admin && created);
    if (!edited.isEmpty() && QJsonDocument::fromJson(edited) == expected)
        return edited;
    return expected.toJson(QJsonDocument::Indented);
}

std::unique_ptr<QLockFile> lockConfigFile(const QString &path, QString *error) {
    // An edit holds the lock for milliseconds. QLockFile takes over the lock of a process that is gone
    // at once; where its native lock is missing (some network file systems), one older than this.
    constexpr int kStaleLockMs = 10000;
    // Longer than kStaleLockMs, so such a lock is taken over before the wait ends.
    constexpr int kLockWaitMs = 15000;
    // Next to the file written, so every path to one file (a symbolic link, its target) shares one lock.
    const QFileInfo info(path);
    const QString target = info.isSymLink() && !info.canonicalFilePath().isEmpty() ? info.canonicalFilePath() : path;
    QString why;
    if (!makePrivateDirectory(QFileInfo(target).absolutePath(), &why)) {
        if (error)
            *error = why;
        return nullptr;
    }
    auto lock = std::make_unique<QLockFile>(target + QStringLiteral(".lock"));
    lock->setStaleLockTime(kStaleLockMs);
    if (lock->tryLock(kLockWaitMs))
        return lock;
    qint64 pid = 0;
    QString host;
    QString app;
    if (!error)
        return nullptr;
    if (lock->error() == QLockFile::LockFailedError && lock->getLockInfo(&pid, &host, &app))
        *error = QStringLiteral("%1 is locked by process %2 (%3) through %4; try again, or delete that file if no "
                                "such process runs")
                     .arg(path)
                     .arg(pid)
                     .arg(app, lock->fileName());
    else
        *error = QStringLiteral("cannot create the lock file %1").arg(lock->fileName());
    return nullptr;
}

} // namespace sw::config
